#pragma once
// Thin RAII layer over the HDF5 C API. Every failure becomes sextant::Error with
// the file, the object path and HDF5's own innermost reason, so a user reading it
// knows which file and dataset are at fault.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace sextant::h5 {

// Owns one hid_t and closes it with the matching H5*close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  // Closes now and returns HDF5's status (the destructor cannot report a failed close).
  herr_t close() {
    const herr_t status = id_ >= 0 && close_ ? close_(id_) : 0;
    id_ = H5I_INVALID_HID;
    return status;
  }
  hid_t id() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }

 private:
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

class Group;

// An object that carries attributes (a group or a dataset). Attribute reads throw
// with the attribute's full path when it is missing or has the wrong type.
class Object {
 public:
  Object(Handle h, std::string file, std::string path)
      : handle_(std::move(h)), file_(std::move(file)), path_(std::move(path)) {}
  hid_t id() const { return handle_.id(); }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  // "file.h5:/group/object" — how errors name an object.
  std::string where(const std::string& child = "") const;

  bool has_attr(const std::string& name) const;
  void set_attr(const std::string& name, const std::string& value);
  void set_attr(const std::string& name, const char* value) { set_attr(name, std::string(value)); }
  void set_attr(const std::string& name, double value);
  void set_attr(const std::string& name, std::int64_t value);
  void set_attr(const std::string& name, int value) { set_attr(name, std::int64_t{value}); }
  void set_attr(const std::string& name, const std::vector<double>& value);
  std::string attr_string(const std::string& name) const;
  double attr_double(const std::string& name) const;
  std::int64_t attr_int(const std::string& name) const;
  std::vector<double> attr_doubles(const std::string& name) const;
  std::vector<std::string> attr_names() const;

 protected:
  Handle handle_;
  std::string file_, path_;
};

class Dataset : public Object {
 public:
  using Object::Object;
  std::vector<hsize_t> shape() const;
  std::vector<double> read_doubles() const;         // any numeric type, converted
  // Floating-point data only: times and rates stored as integers were written by
  // something else than sextant, in a unit that can only be guessed.
  std::vector<double> read_floats() const;
  std::vector<std::int64_t> read_ints() const;      // any integer type, converted
  std::vector<std::string> read_strings() const;
};

class Group : public Object {
 public:
  using Object::Object;
  bool has(const std::string& name) const;  // a direct child of this group
  Group group(const std::string& name) const;          // open; throws naming it if missing
  Group create_group(const std::string& name);          // open if it exists
  Dataset dataset(const std::string& name) const;      // open; throws naming it if missing
  std::vector<std::string> children() const;           // names, in creation/alpha order
  // Copies the object at `name` (below this group), attributes and all, to
  // `destination_name` below `destination`, creating missing intermediate groups.
  void copy(const std::string& name, Group& destination, const std::string& destination_name) const;

  // Datasets, written whole. dims empty = 1-D of data.size(); else row-major shape.
  Dataset write(const std::string& name, const std::vector<double>& data,
                std::vector<hsize_t> dims = {});
  Dataset write(const std::string& name, const std::vector<std::int64_t>& data,
                std::vector<hsize_t> dims = {});
  Dataset write(const std::string& name, const std::vector<std::string>& data);
};

class File : public Group {
 public:
  enum class Mode { read, read_write, create_truncate };
  File(const std::string& path, Mode mode);
  void flush();
  // Flushes and closes, throwing (naming the file and the reason, e.g. "No space left
  // on device") where that fails: what a writer calls before publishing the file. The
  // File is unusable afterwards.
  void close();
  // The open file was given another name (rename(2), link(2)): errors name it so.
  void renamed(const std::string& path) { file_ = path; }
  static bool is_hdf5(const std::string& path);

 private:
  Handle file_handle_;  // HDF5 keeps the file open until the root group is closed too
};

}  // namespace sextant::h5
