#include "core/replace_file.hpp"

#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <vector>

#include "core/error.hpp"

namespace sextant {
namespace {

// fsync(2) of a path: 0, or the errno of what failed.
int sync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return errno;
  const int rc = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return rc;
}

// Renames temp to target only if target does not exist (errno EEXIST if it does).
// renameat2's RENAME_NOREPLACE where the filesystem has it, else link(2) and unlink,
// which every POSIX filesystem has and which fails just as atomically on a taken name.
int rename_no_replace(const std::string& temp, const std::string& target) {
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (::link(temp.c_str(), target.c_str()) != 0) return -1;
  ::unlink(temp.c_str());
  return 0;
}

}  // namespace

FileReplacement::FileReplacement(std::string target) : target_(std::move(target)) {
  namespace fs = std::filesystem;
  const fs::path t(target_);
  if (t.filename().empty()) throw Error(target_ + ": not a file name");
  std::string leaf = ".";  // hidden, beside the target
  leaf += t.filename().string();
  leaf += ".XXXXXX";
  const std::string pattern = (t.parent_path() / leaf).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw Error(target_ + ": cannot create a file beside it (" + std::strerror(errno) + ")");
  ::close(fd);
  ::chmod(name.data(), 0644);  // mkstemp makes 0600; results and models are for sharing
  temp_ = name.data();
}

FileReplacement::~FileReplacement() {
  if (!committed_) ::unlink(temp_.c_str());
}

void FileReplacement::commit() { put(true); }

void FileReplacement::commit_new() { put(false); }

void FileReplacement::put(bool over_existing) {
  if (const int err = sync_path(temp_, O_RDONLY))  // ENOSPC, EIO: the data did not reach the disk
    throw Error(target_ + ": the new file could not be written to disk (" + std::strerror(err) + ")");
  const int rc = over_existing ? ::rename(temp_.c_str(), target_.c_str()) : rename_no_replace(temp_, target_);
  if (rc != 0) {
    if (!over_existing && errno == EEXIST) throw TargetExists(target_ + ": exists");
    throw Error(target_ + ": cannot put the new file in place (" + std::strerror(errno) + ")");
  }
  committed_ = true;
  const std::string dir = std::filesystem::path(target_).parent_path().string();
  sync_path(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY);  // the new name itself; best effort
}

void replace_file_contents(const std::string& path, const std::string& text) {
  FileReplacement file(path);
  std::ofstream out(file.path(), std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw Error(path + ": cannot write (" + std::strerror(errno) + ")");
  file.commit();
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

}  // namespace sextant
