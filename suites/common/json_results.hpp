#pragma once
// The run's results as one JSON document (`sextant run --json FILE`), for tools that do
// not read HDF5: the statistics of the results file, with the same provenance. Only
// rank 0 writes. The document is written when the run starts (an unwritable path is an
// error before anything is measured) and rewritten whole, through a private temporary
// and a rename, after every benchmark: a reader finds the last complete version, and
// "complete" is false until the run ends (docs/file-formats.md).
#include <nlohmann/json.hpp>
#include <string>

#include "core/schema.hpp"

namespace sextant {

class JsonResults {
 public:
  JsonResults(std::string path, const Provenance& provenance, const std::string& suite);
  // Adds one item to a list section ("comm", "compute_kernels", "train", ...) and rewrites.
  void append(const std::string& section, nlohmann::json item);
  // Sets a section to a value and rewrites.
  void set(const std::string& section, nlohmann::json value);
  void mark_complete();

 private:
  void write() const;
  std::string path_;
  nlohmann::json doc_;
};

}  // namespace sextant
