#pragma once
// The results file of one run (schema sextant.results, docs/file-formats.md).
// Only rank 0 writes. It is created with /meta at the start of the run and every
// benchmark is appended and flushed when it finishes, so a crash loses at most
// the benchmark in flight. /meta's `complete` is "no" until the run ends and calls
// mark_complete(): a file from an interrupted run says so, and `fit` warns.
//
// Two runs given one -o must not write one file (HDF5 truncates a file on create before
// it finds another writer's lock: the first run's file was left unreadable). So the file
// is made under a temporary name beside the path, its /meta written, and only then put
// in place: without `replace` only where the name is free (TargetExists otherwise; of
// runs racing for one name exactly one wins), with it over any file no other process is
// writing (a reader keeps the file it has open).
#include <sys/types.h>

#include <string>

#include "core/h5.hpp"
#include "core/schema.hpp"

namespace sextant {

class ResultsFile {
 public:
  ResultsFile(const std::string& path, const Provenance& provenance, bool replace);  // creates
  explicit ResultsFile(const std::string& path);  // opens an existing one to append (schema checked)
  const std::string& path() const { return path_; }
  h5::Group root() { return file_.group("/"); }
  // Opens (creating as needed) a group path like "comm/world/allreduce/float32".
  h5::Group group(const std::string& path);
  void flush() { file_.flush(); }
  // The run measured everything it set out to. Throws Error if another process has
  // since replaced or removed the file at path() (what this run wrote is not there).
  void mark_complete();

 private:
  void remember_identity();
  std::string path_;
  h5::File file_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

// results/<host>-<UTC timestamp>.h5 style name, UTC "YYYYmmddTHHMMSSZ".
std::string default_results_name(const std::string& host);

}  // namespace sextant
