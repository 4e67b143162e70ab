#include "suites/common/results.hpp"

#include <chrono>
#include <ctime>
#include <filesystem>

#include "core/error.hpp"
#include "core/units.hpp"

namespace sextant {

ResultsFile::ResultsFile(const std::string& path, const Provenance& provenance)
    : path_(path), file_(path, h5::File::Mode::create_truncate) {
  write_meta(file_, results_schema, provenance);
  file_.group("meta").set_attr("complete", "no");
  file_.flush();
}

void ResultsFile::mark_complete() {
  file_.group("meta").set_attr("complete", "yes");
  file_.flush();
}

ResultsFile::ResultsFile(const std::string& path)
    : path_(path), file_(open_checked(path, results_schema, h5::File::Mode::read_write)) {}

// HDF5 files are not crash-safe: a write that fails for lack of space leaves the
// metadata half-written and the whole file unreadable (a run on a full disk lost every
// benchmark it had measured). So each benchmark's group is opened only while this much
// is free on the file's filesystem; short of it, the run stops with the file intact.
constexpr std::uintmax_t space_reserve = 16u << 20;

h5::Group ResultsFile::group(const std::string& path) {
  std::error_code ec;
  const auto space = std::filesystem::space(std::filesystem::absolute(path_).parent_path(), ec);
  if (!ec && space.available < space_reserve)
    throw Error(path_ + ": only " + format_bytes(double(space.available)) +
                " free on its filesystem: stopping before a write could damage the file (what was measured so far "
                "is in it)");
  h5::Group g = file_.group("/");
  for (const auto& part : split_list(path, '/')) g = g.create_group(part);
  return g;
}

std::string default_results_name(const std::string& host) {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return host + "-" + stamp + ".h5";
}

}  // namespace sextant
