#include "core/h5.hpp"

#include <filesystem>
#include <fstream>

namespace sextant::h5 {
namespace {

// HDF5 prints its error stack to stderr by default; we turn it into exceptions.
//
// And no library shutdown at exit: HDF5's atexit handler closes what is still open and
// flushes it, which after a failed write (a full disk) crashed in the library; writers
// close their files explicitly (File::close) and report what failed.
void silence_hdf5_once() {
  static const bool done = [] {
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

// The innermost description on HDF5's error stack ("unable to open file", ...).
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        auto& s = *static_cast<std::string*>(out);
        if (s.empty() && e->desc && *e->desc) s = e->desc;
        return 0;
      },
      &reason);
  H5Eclear2(H5E_DEFAULT);
  // A failed system call's description spans lines ("file write failed: time = ...,
  // errno = 28, error message = 'No space left on device', ..."): keep its message.
  const std::string marker = "error message = '";
  if (auto at = reason.find(marker); at != std::string::npos) {
    const auto from = at + marker.size(), to = reason.find('\'', from);
    if (to != std::string::npos) reason = reason.substr(0, reason.find(':')) + ": " + reason.substr(from, to - from);
  }
  return reason.empty() ? "HDF5 call failed" : reason;
}

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw Error(where + ": " + what + " (" + hdf5_reason() + ")");
}

hid_t check(hid_t id, const std::string& where, const std::string& what) {
  if (id < 0) fail(where, what);
  return id;
}

void check(herr_t status, const std::string& where, const std::string& what, int) {
  if (status < 0) fail(where, what);
}

std::string join(const std::string& path, const std::string& child) {
  if (child.empty()) return path;
  if (child.front() == '/') return child;  // absolute, e.g. group("/")
  return path == "/" ? "/" + child : path + "/" + child;
}

Handle string_type() {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.id(), H5T_VARIABLE);
  H5Tset_cset(t.id(), H5T_CSET_UTF8);
  return t;
}

Handle simple_space(const std::vector<hsize_t>& dims) {
  return Handle(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
}

std::vector<hsize_t> space_dims(hid_t space) {
  int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(rank > 0 ? rank : 0);
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return dims;
}

hsize_t element_count(hid_t space) {
  return static_cast<hsize_t>(H5Sget_simple_extent_npoints(space));
}

bool is_string(hid_t type) { return H5Tget_class(type) == H5T_STRING; }

// Reads variable- or fixed-length strings from an attribute or dataset.
template <class ReadFn>
std::vector<std::string> read_strings_with(hid_t type, hsize_t count, ReadFn read,
                                           const std::string& where) {
  std::vector<std::string> out;
  if (H5Tis_variable_str(type) > 0) {
    std::vector<char*> ptrs(count, nullptr);
    Handle mem = string_type();
    check(read(mem.id(), ptrs.data()), where, "cannot read strings", 0);
    for (char* p : ptrs) {
      out.emplace_back(p ? p : "");
      H5free_memory(p);
    }
  } else {
    std::size_t len = H5Tget_size(type);
    std::vector<char> buf(count * len + 1, '\0');
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.id(), len);
    check(read(mem.id(), buf.data()), where, "cannot read strings", 0);
    for (hsize_t i = 0; i < count; ++i) {
      std::string s(buf.data() + i * len, len);
      s.erase(s.find_last_not_of('\0') + 1);
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace

// --------------------------------------------------------------------------- Object

std::string Object::where(const std::string& child) const { return file_ + ":" + join(path_, child); }

bool Object::has_attr(const std::string& name) const { return H5Aexists(id(), name.c_str()) > 0; }

std::vector<std::string> Object::attr_names() const {
  std::vector<std::string> names;
  H5Aiterate2(
      id(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->emplace_back(name);
        return 0;
      },
      &names);
  return names;
}

namespace {
Handle fresh_attribute(const Object& obj, const std::string& name, hid_t type, hid_t space) {
  if (H5Aexists(obj.id(), name.c_str()) > 0) H5Adelete(obj.id(), name.c_str());
  return Handle(check(H5Acreate2(obj.id(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT),
                      obj.where() + "@" + name, "cannot create attribute"),
                H5Aclose);
}

Handle open_attribute(const Object& obj, const std::string& name) {
  if (H5Aexists(obj.id(), name.c_str()) <= 0)
    throw Error(obj.where() + ": missing attribute '" + name + "'");
  return Handle(check(H5Aopen(obj.id(), name.c_str(), H5P_DEFAULT), obj.where() + "@" + name,
                      "cannot open attribute"),
                H5Aclose);
}
}  // namespace

void Object::set_attr(const std::string& name, const std::string& value) {
  Handle type = string_type();
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a = fresh_attribute(*this, name, type.id(), space.id());
  const char* p = value.c_str();
  check(H5Awrite(a.id(), type.id(), &p), where() + "@" + name, "cannot write attribute", 0);
}

void Object::set_attr(const std::string& name, double value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a = fresh_attribute(*this, name, H5T_NATIVE_DOUBLE, space.id());
  check(H5Awrite(a.id(), H5T_NATIVE_DOUBLE, &value), where() + "@" + name, "cannot write attribute", 0);
}

void Object::set_attr(const std::string& name, std::int64_t value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a = fresh_attribute(*this, name, H5T_NATIVE_INT64, space.id());
  check(H5Awrite(a.id(), H5T_NATIVE_INT64, &value), where() + "@" + name, "cannot write attribute", 0);
}

void Object::set_attr(const std::string& name, const std::vector<double>& value) {
  Handle space = simple_space({value.size()});
  Handle a = fresh_attribute(*this, name, H5T_NATIVE_DOUBLE, space.id());
  if (value.empty()) return;  // an empty list is an attribute of no elements (nothing to write)
  check(H5Awrite(a.id(), H5T_NATIVE_DOUBLE, value.data()), where() + "@" + name,
        "cannot write attribute", 0);
}

std::string Object::attr_string(const std::string& name) const {
  Handle a = open_attribute(*this, name);
  Handle type(H5Aget_type(a.id()), H5Tclose);
  if (!is_string(type.id())) throw Error(where() + ": attribute '" + name + "' is not a string");
  Handle space(H5Aget_space(a.id()), H5Sclose);
  auto v = read_strings_with(
      type.id(), std::max<hsize_t>(1, element_count(space.id())),
      [&](hid_t mem, void* buf) { return H5Aread(a.id(), mem, buf); }, where() + "@" + name);
  return v.empty() ? std::string() : v.front();
}

double Object::attr_double(const std::string& name) const {
  Handle a = open_attribute(*this, name);
  Handle type(H5Aget_type(a.id()), H5Tclose);
  auto cls = H5Tget_class(type.id());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    throw Error(where() + ": attribute '" + name + "' is not a number");
  double v = 0;
  check(H5Aread(a.id(), H5T_NATIVE_DOUBLE, &v), where() + "@" + name, "cannot read attribute", 0);
  return v;
}

std::int64_t Object::attr_int(const std::string& name) const {
  Handle a = open_attribute(*this, name);
  Handle type(H5Aget_type(a.id()), H5Tclose);
  if (H5Tget_class(type.id()) != H5T_INTEGER)
    throw Error(where() + ": attribute '" + name + "' is not an integer");
  std::int64_t v = 0;
  check(H5Aread(a.id(), H5T_NATIVE_INT64, &v), where() + "@" + name, "cannot read attribute", 0);
  return v;
}

std::vector<double> Object::attr_doubles(const std::string& name) const {
  Handle a = open_attribute(*this, name);
  Handle space(H5Aget_space(a.id()), H5Sclose);
  std::vector<double> v(element_count(space.id()));
  if (v.empty()) return v;
  check(H5Aread(a.id(), H5T_NATIVE_DOUBLE, v.data()), where() + "@" + name, "cannot read attribute", 0);
  return v;
}

// --------------------------------------------------------------------------- Dataset

std::vector<hsize_t> Dataset::shape() const {
  Handle space(H5Dget_space(id()), H5Sclose);
  return space_dims(space.id());
}

std::vector<double> Dataset::read_doubles() const {
  Handle type(H5Dget_type(id()), H5Tclose);
  auto cls = H5Tget_class(type.id());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) throw Error(where() + ": dataset is not numeric");
  Handle space(H5Dget_space(id()), H5Sclose);
  std::vector<double> v(element_count(space.id()));
  if (!v.empty())
    check(H5Dread(id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), where(),
          "cannot read dataset", 0);
  return v;
}

std::vector<double> Dataset::read_floats() const {
  Handle type(H5Dget_type(id()), H5Tclose);
  if (H5Tget_class(type.id()) != H5T_FLOAT) throw Error(where() + ": dataset is not floating-point");
  return read_doubles();
}

std::vector<std::int64_t> Dataset::read_ints() const {
  Handle type(H5Dget_type(id()), H5Tclose);
  if (H5Tget_class(type.id()) != H5T_INTEGER) throw Error(where() + ": dataset is not integer");
  Handle space(H5Dget_space(id()), H5Sclose);
  std::vector<std::int64_t> v(element_count(space.id()));
  if (!v.empty())
    check(H5Dread(id(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), where(),
          "cannot read dataset", 0);
  return v;
}

std::vector<std::string> Dataset::read_strings() const {
  Handle type(H5Dget_type(id()), H5Tclose);
  if (!is_string(type.id())) throw Error(where() + ": dataset is not of strings");
  Handle space(H5Dget_space(id()), H5Sclose);
  return read_strings_with(
      type.id(), element_count(space.id()),
      [&](hid_t mem, void* buf) { return H5Dread(id(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf); },
      where());
}

// --------------------------------------------------------------------------- Group

bool Group::has(const std::string& name) const {
  return H5Lexists(id(), name.c_str(), H5P_DEFAULT) > 0;
}

Group Group::group(const std::string& name) const {
  if (!has(name)) throw Error(where(name) + ": missing group");
  Handle g(check(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), where(name), "cannot open group"),
           H5Gclose);
  return Group(std::move(g), file(), join(path(), name));
}

Group Group::create_group(const std::string& name) {
  if (has(name)) return group(name);
  Handle g(check(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), where(name),
                 "cannot create group"),
           H5Gclose);
  return Group(std::move(g), file(), join(path(), name));
}

Dataset Group::dataset(const std::string& name) const {
  if (!has(name)) throw Error(where(name) + ": missing dataset");
  Handle d(check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), where(name), "cannot open dataset"),
           H5Dclose);
  return Dataset(std::move(d), file(), join(path(), name));
}

std::vector<std::string> Group::children() const {
  // By index rather than H5Literate, whose callback type differs between 1.10 and 1.12+.
  H5G_info_t info{};
  check(H5Gget_info(id(), &info), where(), "cannot list group", 0);
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t len = H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) fail(where(), "cannot read a link name");
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(len));
    names.push_back(std::move(name));
  }
  return names;
}

void Group::copy(const std::string& name, Group& destination, const std::string& destination_name) const {
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.id(), 1);
  check(H5Ocopy(id(), name.c_str(), destination.id(), destination_name.c_str(), H5P_DEFAULT, lcpl.id()),
        where(name), "cannot copy to " + destination.where(destination_name), 0);
}

namespace {
template <class T>
Dataset write_numeric(Group& g, const std::string& name, const std::vector<T>& data,
                      std::vector<hsize_t> dims, hid_t file_type, hid_t mem_type) {
  if (dims.empty()) dims = {data.size()};
  hsize_t total = 1;
  for (auto d : dims) total *= d;
  if (total != data.size()) throw Error(g.where(name) + ": shape does not match the data size");
  if (g.has(name)) H5Ldelete(g.id(), name.c_str(), H5P_DEFAULT);
  Handle space = simple_space(dims);
  // Compress larger datasets (samples); chunked storage needs non-zero extents.
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (total >= 4096) {
    std::vector<hsize_t> chunk = dims;
    hsize_t chunk_total = total;
    for (std::size_t i = 0; i < chunk.size() && chunk_total > 65536; ++i) {
      while (chunk[i] > 1 && chunk_total > 65536) {
        chunk_total /= chunk[i];
        chunk[i] = (chunk[i] + 1) / 2;
        chunk_total *= chunk[i];
      }
    }
    H5Pset_chunk(dcpl.id(), static_cast<int>(chunk.size()), chunk.data());
    H5Pset_deflate(dcpl.id(), 4);
  }
  Handle d(check(H5Dcreate2(g.id(), name.c_str(), file_type, space.id(), H5P_DEFAULT, dcpl.id(),
                            H5P_DEFAULT),
                 g.where(name), "cannot create dataset"),
           H5Dclose);
  if (total > 0)
    check(H5Dwrite(d.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), g.where(name),
          "cannot write dataset", 0);
  return Dataset(std::move(d), g.file(), join(g.path(), name));
}
}  // namespace

Dataset Group::write(const std::string& name, const std::vector<double>& data,
                     std::vector<hsize_t> dims) {
  return write_numeric(*this, name, data, std::move(dims), H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
}

Dataset Group::write(const std::string& name, const std::vector<std::int64_t>& data,
                     std::vector<hsize_t> dims) {
  return write_numeric(*this, name, data, std::move(dims), H5T_STD_I64LE, H5T_NATIVE_INT64);
}

Dataset Group::write(const std::string& name, const std::vector<std::string>& data) {
  if (has(name)) H5Ldelete(id(), name.c_str(), H5P_DEFAULT);
  Handle type = string_type();
  Handle space = simple_space({data.size()});
  Handle d(check(H5Dcreate2(id(), name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT),
                 where(name), "cannot create dataset"),
           H5Dclose);
  std::vector<const char*> ptrs;
  for (const auto& s : data) ptrs.push_back(s.c_str());
  if (!ptrs.empty())
    check(H5Dwrite(d.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), where(name),
          "cannot write dataset", 0);
  return Dataset(std::move(d), file(), join(path(), name));
}

// --------------------------------------------------------------------------- File

bool File::is_hdf5(const std::string& path) {
  silence_hdf5_once();
  htri_t r = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

namespace {
Handle open_file(const std::string& path, File::Mode mode) {
  silence_hdf5_once();
  if (mode == File::Mode::create_truncate) {
    return Handle(check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), path,
                        "cannot create HDF5 file"),
                  H5Fclose);
  }
  if (!std::filesystem::exists(path)) throw Error(path + ": no such file");
  // A pipe would block the open for ever, a directory or device has nothing to read.
  if (!std::filesystem::is_regular_file(path)) throw Error(path + ": not a regular file");
  if (!File::is_hdf5(path)) throw Error(path + ": not an HDF5 file");
  unsigned flags = mode == File::Mode::read ? H5F_ACC_RDONLY : H5F_ACC_RDWR;
  return Handle(check(H5Fopen(path.c_str(), flags, H5P_DEFAULT), path, "cannot open HDF5 file"),
                H5Fclose);
}

Handle root_group(const Handle& file, const std::string& path) {
  return Handle(check(H5Gopen2(file.id(), "/", H5P_DEFAULT), path, "cannot open root group"),
                H5Gclose);
}
}  // namespace

File::File(const std::string& path, Mode mode) : Group(Handle(), path, "/") {
  file_handle_ = open_file(path, mode);
  handle_ = root_group(file_handle_, path);
}

void File::flush() {
  check(H5Fflush(file_handle_.id(), H5F_SCOPE_GLOBAL), file(), "cannot flush", 0);
}

void File::close() {
  flush();
  check(handle_.close(), file(), "cannot close the root group", 0);
  check(file_handle_.close(), file(), "cannot close", 0);
}

}  // namespace sextant::h5
