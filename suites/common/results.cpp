#include "suites/common/results.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>

#include "core/error.hpp"
#include "core/replace_file.hpp"
#include "core/units.hpp"

namespace sextant {

namespace {

// HDF5 holds a shared flock(2) on a file it reads and an exclusive one on a file it
// writes: a shared lock that cannot be had means a writer has the file open.
void refuse_if_being_written(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;  // no file (or none this process may read): nothing to protect
  const bool written = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  if (written) throw Error(path + ": another process is writing it (a run given the same -o?); not replaced");
}

h5::File created_in_place(const std::string& path, const Provenance& provenance, bool replace) {
  FileReplacement place(path);
  h5::File file(place.path(), h5::File::Mode::create_truncate);
  write_meta(file, results_schema, provenance);
  file.group("meta").set_attr("complete", "no");
  file.flush();
  if (replace) {
    refuse_if_being_written(path);
    place.commit();
  } else {
    place.commit_new();
  }
  file.renamed(path);
  return file;
}

}  // namespace

ResultsFile::ResultsFile(const std::string& path, const Provenance& provenance, bool replace)
    : path_(path), file_(created_in_place(path, provenance, replace)) {
  remember_identity();
}

ResultsFile::ResultsFile(const std::string& path)
    : path_(path), file_(open_checked(path, results_schema, h5::File::Mode::read_write)) {
  remember_identity();
}

void ResultsFile::remember_identity() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) throw Error(path_ + ": vanished as it was opened");
  device_ = st.st_dev;
  inode_ = st.st_ino;
}

void ResultsFile::mark_complete() {
  file_.group("meta").set_attr("complete", "yes");
  file_.flush();
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0 || st.st_dev != device_ || st.st_ino != inode_)
    throw Error(path_ + ": another process replaced or removed it while this run wrote it: this run's results "
                        "are not there");
}

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
