#pragma once
// The model file (schema sextant.model, docs/file-formats.md): every part fitted from
// one results file, written together. A part is a member of ModelFile, fitted by
// fit_model_file when the results hold its measurements, written by write_model_file
// after the /meta and /source every model file has, and read by read_model_file; a new
// part (a third kind of measurement) plugs in at those four places and nowhere else.
#include <optional>
#include <string>

#include "core/h5.hpp"
#include "core/schema.hpp"
#include "models/comm_model.hpp"
#include "models/compute_model.hpp"
#include "models/sync_model.hpp"

namespace sextant::model {

struct ModelFile {
  Provenance source;        // the results file's /meta
  std::string source_file;  // its path
  std::optional<CommModel> comm;
  std::optional<ComputeModel> compute;
  std::optional<SyncModel> sync;  // the partners' wait inside a step (train suite)
};

struct ModelParts {
  bool comm = true, compute = true;  // fit these where the results file has them
};

// Fits every part asked for that the results file (schema checked) holds measurements
// of; Error when it holds none of them.
ModelFile fit_model_file(const std::string& results_path, const ModelParts& parts = {});

// Reads every measurement of a results file as fit reads it (schema and values checked,
// Error naming file, object and value), fitting nothing: merge checks its inputs so.
void check_results_file(const std::string& results_path);

// Writes the whole file to a temporary name and renames it into place, so a reader
// never sees half a file. fit_provenance: the process that fitted it.
void write_model_file(const std::string& model_path, const Provenance& fit_provenance, const ModelFile& model);

// Reads a model file (schema checked, values checked where read): every part it holds;
// a part it lacks is nullopt. The one way to read a model file.
ModelFile read_model_file(const std::string& model_path);

// The part, or Error naming the file and what would have made the part.
const CommModel& comm_part(const ModelFile& model, const std::string& model_path);
const ComputeModel& compute_part(const ModelFile& model, const std::string& model_path);

}  // namespace sextant::model
