#pragma once
// The run's results for tools that do not read HDF5 (`sextant run --json FILE`, `--csv
// PREFIX`): the statistics of the results file, with the same provenance. Only rank 0
// writes. One JSON document holds them; the CSV tables are flat views of it (a row per
// size, kernel case, sweep point or configuration; nested objects' scalars as
// "outer.inner" columns; per-step series and samples left to the JSON and HDF5 files).
// Every file is written when the run starts (an unwritable path is an error before
// anything is measured) and rewritten whole, through a private temporary and a rename,
// after every benchmark: a reader finds the last complete version, and the JSON's
// "complete" is false until the run ends (docs/file-formats.md).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/schema.hpp"

namespace sextant {

class JsonResults {
 public:
  // json_path or csv_prefix may be empty (that output is not written).
  JsonResults(std::string json_path, std::string csv_prefix, const Provenance& provenance, const std::string& suite);
  // Adds one item to a list section ("comm", "train", ...) and rewrites.
  void append(const std::string& section, nlohmann::json item);
  // Sets a section to a value and rewrites.
  void set(const std::string& section, nlohmann::json value);
  void mark_complete();

  // The CSV tables a suite's run writes ("comm", "compute", "sweep", "train"), and the
  // file of one: PREFIX.<table>.csv.
  static std::vector<std::string> csv_tables(const std::string& suite);
  static std::string csv_path(const std::string& prefix, const std::string& table);

 private:
  void write() const;
  std::string json_path_, csv_prefix_, suite_;
  nlohmann::json doc_;
};

}  // namespace sextant
