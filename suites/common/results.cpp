#include "suites/common/results.hpp"

#include <chrono>
#include <ctime>

#include "core/units.hpp"

namespace sextant {

ResultsFile::ResultsFile(const std::string& path, const Provenance& provenance)
    : path_(path), file_(path, h5::File::Mode::create_truncate) {
  write_meta(file_, results_schema, provenance);
  file_.flush();
}

ResultsFile::ResultsFile(const std::string& path)
    : path_(path), file_(open_checked(path, results_schema, h5::File::Mode::read_write)) {}

h5::Group ResultsFile::group(const std::string& path) {
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
