// Tests of the RAII HDF5 layer in core/h5.hpp: round trips and error messages.
#include "core/h5.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace {

namespace h5 = sextant::h5;
using Mode = h5::File::Mode;

std::string tmp_path(const std::string& name) { return std::string(SEXTANT_TEST_TMPDIR) + "/h5_" + name; }

// Runs fn, expects sextant::Error, and checks that every fragment is in the message.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "no sextant::Error thrown";
  } catch (const sextant::Error& e) {
    std::string msg = e.what();
    for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

TEST(H5, AttributesOfEveryTypeRoundTrip) {
  const auto path = tmp_path("attrs.h5");
  {
    h5::File f(path, Mode::create_truncate);
    h5::Group g = f.create_group("run");
    g.set_attr("name", std::string("héllo, world"));
    g.set_attr("literal", "c-string");
    g.set_attr("empty", std::string());
    g.set_attr("pi", 3.141592653589793);
    g.set_attr("big", std::int64_t{-9007199254740993});  // not representable as a double
    g.set_attr("small", 7);
    g.set_attr("vec", std::vector<double>{1.5, -2.25, 1e-300});
    g.set_attr("none", std::vector<double>{});  // e.g. the cache sizes of a host that lists none
    f.set_attr("at_root", 1.0);
  }
  h5::File f(path, Mode::read);
  h5::Group g = f.group("run");
  EXPECT_EQ(g.attr_string("name"), "héllo, world");
  EXPECT_EQ(g.attr_string("literal"), "c-string");
  EXPECT_EQ(g.attr_string("empty"), "");
  EXPECT_EQ(g.attr_double("pi"), 3.141592653589793);
  EXPECT_EQ(g.attr_int("big"), -9007199254740993);
  EXPECT_EQ(g.attr_int("small"), 7);
  EXPECT_EQ(g.attr_double("small"), 7.0);  // integers read as numbers too
  EXPECT_EQ(g.attr_doubles("vec"), (std::vector<double>{1.5, -2.25, 1e-300}));
  EXPECT_EQ(g.attr_doubles("pi"), std::vector<double>{3.141592653589793});
  EXPECT_EQ(g.attr_doubles("none"), std::vector<double>{});
  EXPECT_EQ(f.attr_double("at_root"), 1.0);
  EXPECT_TRUE(g.has_attr("pi"));
  EXPECT_FALSE(g.has_attr("nope"));
  EXPECT_EQ(g.attr_names(), (std::vector<std::string>{"big", "empty", "literal", "name", "none", "pi", "small", "vec"}));
}

TEST(H5, OverwritingAnAttributeReplacesValueAndType) {
  const auto path = tmp_path("overwrite.h5");
  {
    h5::File f(path, Mode::create_truncate);
    f.set_attr("x", 1.0);
    f.set_attr("x", 2.0);
    f.set_attr("s", "first");
    f.set_attr("s", std::string("second, and longer"));
    f.set_attr("t", "text");
    f.set_attr("t", std::int64_t{42});  // a different type under the same name
  }
  h5::File f(path, Mode::read_write);
  EXPECT_EQ(f.attr_double("x"), 2.0);
  EXPECT_EQ(f.attr_string("s"), "second, and longer");
  EXPECT_EQ(f.attr_int("t"), 42);
  EXPECT_EQ(f.attr_names().size(), 3u);
}

TEST(H5, DatasetsRoundTrip) {
  const auto path = tmp_path("datasets.h5");
  std::vector<double> big(10000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i % 17) * 0.5;
  {
    h5::File f(path, Mode::create_truncate);
    h5::Group g = f.create_group("a").create_group("b");
    g.write("d1", std::vector<double>{1.0, -2.5, 3e10});
    g.write("d2", std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
    g.write("i", std::vector<std::int64_t>{-1, 0, std::int64_t{1} << 62});
    g.write("s", std::vector<std::string>{"alpha", "", "gamma with spaces"});
    g.write("empty", std::vector<double>{});
    g.write("big", big, {100, 100});
    g.write("d1", std::vector<double>{9.0});  // rewriting replaces the dataset
    EXPECT_THROW(g.write("bad", std::vector<double>{1, 2, 3}, {2, 2}), sextant::Error);
  }
  h5::File f(path, Mode::read);
  h5::Group g = f.group("a").group("b");
  EXPECT_EQ(g.path(), "/a/b");
  EXPECT_EQ(g.dataset("d1").read_doubles(), std::vector<double>{9.0});
  auto d2 = g.dataset("d2");
  EXPECT_EQ(d2.shape(), (std::vector<hsize_t>{2, 3}));
  EXPECT_EQ(d2.read_doubles(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(g.dataset("i").read_ints(), (std::vector<std::int64_t>{-1, 0, std::int64_t{1} << 62}));
  EXPECT_EQ(g.dataset("i").read_doubles(), (std::vector<double>{-1, 0, 0x1p62}));
  EXPECT_EQ(g.dataset("s").read_strings(), (std::vector<std::string>{"alpha", "", "gamma with spaces"}));
  EXPECT_TRUE(g.dataset("empty").read_doubles().empty());
  EXPECT_EQ(g.dataset("big").read_doubles(), big);
  EXPECT_FALSE(g.has("bad"));
  EXPECT_THROW(g.dataset("d1").read_ints(), sextant::Error);     // doubles are not integers
  EXPECT_THROW(g.dataset("s").read_doubles(), sextant::Error);   // strings are not numbers
  EXPECT_THROW(g.dataset("d1").read_strings(), sextant::Error);
}

TEST(H5, LargeDatasetsAreChunkedAndCompressed) {
  const auto path = tmp_path("chunked.h5");
  std::vector<double> big(100000, 0.25), small(4095, 0.25);
  {
    h5::File f(path, Mode::create_truncate);
    f.write("big", big);
    f.write("small", small);
  }
  h5::File f(path, Mode::read);
  auto layout = [&](const std::string& name, int* nfilters) {
    auto d = f.dataset(name);
    hid_t plist = H5Dget_create_plist(d.id());
    H5D_layout_t l = H5Pget_layout(plist);
    *nfilters = H5Pget_nfilters(plist);
    H5Pclose(plist);
    return l;
  };
  int filters = 0;
  EXPECT_EQ(layout("big", &filters), H5D_CHUNKED);
  EXPECT_GE(filters, 1);
  EXPECT_LT(H5Dget_storage_size(f.dataset("big").id()), big.size() * sizeof(double) / 10);
  EXPECT_EQ(f.dataset("big").read_doubles(), big);
  EXPECT_EQ(layout("small", &filters), H5D_CONTIGUOUS);
  EXPECT_EQ(filters, 0);
}

TEST(H5, ChildrenListsGroupsAndDatasetsByName) {
  const auto path = tmp_path("children.h5");
  h5::File f(path, Mode::create_truncate);
  f.create_group("zeta");
  f.write("mid", std::vector<double>{1});
  f.create_group("alpha").create_group("nested");
  EXPECT_EQ(f.children(), (std::vector<std::string>{"alpha", "mid", "zeta"}));
  EXPECT_EQ(f.group("alpha").children(), std::vector<std::string>{"nested"});
  EXPECT_TRUE(f.group("zeta").children().empty());
  // create_group on an existing name opens it.
  f.group("alpha").create_group("nested").set_attr("k", 1.0);
  EXPECT_EQ(f.group("alpha").children().size(), 1u);
  EXPECT_TRUE(f.has("mid"));
  EXPECT_FALSE(f.has("nested"));  // only direct children
}

TEST(H5, MissingObjectsNameFileAndPath) {
  const auto path = tmp_path("missing.h5");
  {
    h5::File f(path, Mode::create_truncate);
    f.create_group("grp").set_attr("text", "not a number");
  }
  h5::File f(path, Mode::read);
  h5::Group g = f.group("grp");
  expect_error([&] { g.attr_double("absent"); }, {path, "/grp", "'absent'"});
  expect_error([&] { g.attr_string("absent"); }, {path, "/grp", "absent"});
  expect_error([&] { g.group("sub"); }, {path, "/grp/sub", "missing group"});
  expect_error([&] { g.dataset("data"); }, {path, "/grp/data", "missing dataset"});
  expect_error([&] { f.group("nope"); }, {path, "/nope"});
  expect_error([&] { g.attr_int("text"); }, {path, "/grp", "'text'", "not an integer"});
  expect_error([&] { g.attr_double("text"); }, {path, "/grp", "'text'"});
}

TEST(H5, OpeningBadFilesSaysWhy) {
  const auto absent = tmp_path("does_not_exist.h5");
  std::filesystem::remove(absent);
  expect_error([&] { (void)h5::File(absent, Mode::read); }, {absent, "no such file"});
  expect_error([&] { (void)h5::File(absent, Mode::read_write); }, {absent, "no such file"});

  const auto text = tmp_path("text.h5");
  std::ofstream(text) << "this is plain text, not HDF5\n";
  expect_error([&] { (void)h5::File(text, Mode::read); }, {text, "not an HDF5 file"});

  expect_error([&] { (void)h5::File(tmp_path("no_such_dir/x.h5"), Mode::create_truncate); }, {"no_such_dir/x.h5"});

  EXPECT_FALSE(h5::File::is_hdf5(absent));
  EXPECT_FALSE(h5::File::is_hdf5(text));
  const auto good = tmp_path("good.h5");
  { h5::File f(good, Mode::create_truncate); }
  EXPECT_TRUE(h5::File::is_hdf5(good));
}

}  // namespace
