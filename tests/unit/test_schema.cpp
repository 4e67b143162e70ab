// Tests of /meta writing and checking (core/schema.hpp).
#include "core/schema.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace {

namespace h5 = sextant::h5;
using Mode = h5::File::Mode;

std::string tmp_path(const std::string& name) { return std::string(SEXTANT_TEST_TMPDIR) + "/schema_" + name; }

sextant::Provenance sample_provenance() {
  sextant::Provenance p;
  p.fields = {{"host", "node017"}, {"cpu_model", "AMD EPYC 7763"}, {"mpi_library", "Open MPI"},
              {"command_line", "sextant run --comm"}};
  p.environment = {{"OMP_NUM_THREADS", "4"}, {"UCX_TLS", "rc,sm"}};
  p.ranks = 128;
  return p;
}

// Writes a file with /meta for `schema`, then lets `tweak` spoil it.
std::string make_file(const std::string& name, const sextant::Schema& schema,
                      const std::function<void(h5::File&)>& tweak = {}) {
  auto path = tmp_path(name);
  h5::File f(path, Mode::create_truncate);
  sextant::write_meta(f, schema, sample_provenance());
  if (tweak) tweak(f);
  return path;
}

// open_checked must fail with a one-line message naming the file and every fragment.
void expect_rejected(const std::string& path, const sextant::Schema& schema,
                     const std::vector<std::string>& fragments) {
  try {
    sextant::open_checked(path, schema);
    ADD_FAILURE() << path << " was accepted";
  } catch (const sextant::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

TEST(Schema, MetaRoundTrip) {
  auto path = make_file("roundtrip.h5", sextant::results_schema);
  h5::File f = sextant::open_checked(path, sextant::results_schema);
  h5::Group meta = f.group("meta");
  EXPECT_EQ(meta.attr_string("schema"), "sextant.results");
  EXPECT_EQ(meta.attr_int("schema_version"), 1);
  EXPECT_EQ(meta.attr_int("ranks"), 128);

  auto p = sextant::read_provenance(meta);
  auto expected = sample_provenance();
  EXPECT_EQ(p.fields, expected.fields);  // schema and schema_version are not provenance
  EXPECT_EQ(p.environment, expected.environment);
  EXPECT_EQ(p.ranks, expected.ranks);
}

TEST(Schema, EmptyProvenanceRoundTrips) {
  auto path = tmp_path("empty.h5");
  {
    h5::File f(path, Mode::create_truncate);
    sextant::write_meta(f, sextant::model_schema, sextant::Provenance{});
  }
  h5::File f = sextant::open_checked(path, sextant::model_schema);
  auto p = sextant::read_provenance(f.group("meta"));
  EXPECT_TRUE(p.fields.empty());
  EXPECT_TRUE(p.environment.empty());
  EXPECT_EQ(p.ranks, 1);
}

TEST(Schema, OpenCheckedAcceptsBothKindsAndReadWrite) {
  auto results = make_file("results_ok.h5", sextant::results_schema);
  auto model = make_file("model_ok.h5", sextant::model_schema);
  EXPECT_NO_THROW(sextant::open_checked(results, sextant::results_schema));
  EXPECT_NO_THROW(sextant::open_checked(model, sextant::model_schema));
  h5::File f = sextant::open_checked(model, sextant::model_schema, Mode::read_write);
  f.set_attr("appended", 1.0);
  EXPECT_EQ(f.attr_double("appended"), 1.0);
}

TEST(Schema, RejectsFileWithoutMeta) {
  auto path = tmp_path("nometa.h5");
  {
    h5::File f(path, Mode::create_truncate);
    f.create_group("comm");
  }
  expect_rejected(path, sextant::results_schema, {"sextant.results", "/meta"});
}

TEST(Schema, RejectsTheOtherSchema) {
  auto model = make_file("is_model.h5", sextant::model_schema);
  expect_rejected(model, sextant::results_schema, {"'sextant.model'", "'sextant.results'"});
  auto results = make_file("is_results.h5", sextant::results_schema);
  expect_rejected(results, sextant::model_schema, {"'sextant.results'", "'sextant.model'"});
}

TEST(Schema, RejectsUnsupportedVersionNamingBoth) {
  auto path = make_file("v999.h5", sextant::results_schema,
                        [](h5::File& f) { f.group("meta").set_attr("schema_version", std::int64_t{999}); });
  expect_rejected(path, sextant::results_schema, {"999", "version 1"});
}

TEST(Schema, RejectsMissingSchemaAttributes) {
  auto no_name = make_file("noschema.h5", sextant::results_schema,
                           [](h5::File& f) { H5Adelete(f.group("meta").id(), "schema"); });
  expect_rejected(no_name, sextant::results_schema, {"schema"});
  auto no_version = make_file("noversion.h5", sextant::results_schema,
                              [](h5::File& f) { H5Adelete(f.group("meta").id(), "schema_version"); });
  expect_rejected(no_version, sextant::results_schema, {"schema_version"});
}

TEST(Schema, RejectsMistypedSchemaVersion) {
  auto path = make_file("strversion.h5", sextant::results_schema,
                        [](h5::File& f) { f.group("meta").set_attr("schema_version", "1"); });
  expect_rejected(path, sextant::results_schema, {"schema_version"});
}

TEST(Schema, RejectsMissingRequiredGroup) {
  sextant::Schema needs_comm{"sextant.results", 1, {"comm"}};
  auto path = make_file("nogroup.h5", sextant::results_schema);
  expect_rejected(path, needs_comm, {"/comm"});
  auto ok = make_file("withgroup.h5", sextant::results_schema, [](h5::File& f) { f.create_group("comm"); });
  EXPECT_NO_THROW(sextant::open_checked(ok, needs_comm));
}

TEST(Schema, MissingOrForeignFilesAreRejected) {
  expect_rejected(tmp_path("absent.h5"), sextant::results_schema, {"no such file"});
}

}  // namespace
