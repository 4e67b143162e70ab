#pragma once
// Writing a file so that a reader finds either the previous file or the complete new
// one, never a half-written one, and two writers never share a temporary: the new
// content goes to a temporary file of its own (mkstemp, in the target's directory, so
// that the rename stays on one filesystem), is synced to disk, and is renamed over the
// target only on commit() (or, with commit_new(), put in place only where the name is
// free). Without either (an exception, a failed write) the
// temporary is removed and the target is untouched. A stale temporary of a crashed
// writer has a unique name that no writer or reader opens.
#include <string>

#include "core/error.hpp"

namespace sextant {

// The name a FileReplacement was to create already exists.
class TargetExists : public Error {
 public:
  using Error::Error;
};

class FileReplacement {
 public:
  explicit FileReplacement(std::string target);  // throws Error naming the target
  FileReplacement(const FileReplacement&) = delete;
  FileReplacement& operator=(const FileReplacement&) = delete;
  ~FileReplacement();

  const std::string& path() const { return temp_; }  // write here, then close it
  const std::string& target() const { return target_; }
  void commit();  // fsync, rename over the target; throws Error naming the target
  // fsync, then put in place only if nothing has the target's name (renameat2's
  // RENAME_NOREPLACE, else link(2): either fails on a taken name), so of writers racing
  // for one new name exactly one wins. Throws
  // TargetExists when the name is taken, Error for any other failure.
  void commit_new();

 private:
  void put(bool over_existing);
  std::string target_, temp_;
  bool committed_ = false;
};

// A whole text document (a JSON or CSV output) written through a FileReplacement.
// Throws Error naming the path when it cannot be written.
void replace_file_contents(const std::string& path, const std::string& text);

// Whether a and b name the same existing file (through links, relative paths, ...).
bool same_file(const std::string& a, const std::string& b);

}  // namespace sextant
