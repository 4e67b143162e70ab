#pragma once
// The results file of one run (schema sextant.results, docs/file-formats.md).
// Only rank 0 writes. It is created with /meta at the start of the run and every
// benchmark is appended and flushed when it finishes, so a crash loses at most
// the benchmark in flight. /meta's `complete` is "no" until the run ends and calls
// mark_complete(): a file from an interrupted run says so, and `fit` warns.
#include <string>

#include "core/h5.hpp"
#include "core/schema.hpp"

namespace sextant {

class ResultsFile {
 public:
  ResultsFile(const std::string& path, const Provenance& provenance);  // creates
  explicit ResultsFile(const std::string& path);  // opens an existing one to append (schema checked)
  const std::string& path() const { return path_; }
  h5::Group root() { return file_.group("/"); }
  // Opens (creating as needed) a group path like "comm/world/allreduce/float32".
  h5::Group group(const std::string& path);
  void flush() { file_.flush(); }
  void mark_complete();  // the run measured everything it set out to

 private:
  std::string path_;
  h5::File file_;
};

// results/<host>-<UTC timestamp>.h5 style name, UTC "YYYYmmddTHHMMSSZ".
std::string default_results_name(const std::string& host);

}  // namespace sextant
