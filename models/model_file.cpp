#include "models/model_file.hpp"

#include "core/error.hpp"
#include "core/replace_file.hpp"

namespace sextant::model {

namespace {
// A results file's /meta, with the completion record checked: fit and merge act on it.
Provenance read_results_meta(const h5::File& f, const std::string& results_path) {
  Provenance p = read_provenance(f.group("meta"));
  if (auto c = p.fields.find("complete"); c != p.fields.end() && c->second != "yes" && c->second != "no")
    throw Error(results_path + ": /meta: complete '" + c->second + "' (yes or no)");
  return p;
}
}  // namespace

void check_results_file(const std::string& results_path) {
  bool has_comm = false, has_compute = false;
  {
    h5::File f = open_checked(results_path, results_schema);
    read_results_meta(f, results_path);
    has_comm = f.has("comm");
    has_compute = f.has("compute");
  }
  if (has_comm) read_comm_results(results_path);
  if (has_compute) read_compute_results(results_path);
  SyncModel::fit_results(results_path);
}

ModelFile fit_model_file(const std::string& results_path, const ModelParts& parts) {
  ModelFile m;
  m.source_file = results_path;
  bool has_comm = false, has_compute = false;
  {
    h5::File f = open_checked(results_path, results_schema);
    m.source = read_results_meta(f, results_path);
    has_comm = parts.comm && f.has("comm");
    has_compute = parts.compute && f.has("compute");
  }
  if (!has_comm && !has_compute) throw Error(results_path + ": no /comm or /compute results to fit");
  if (has_comm) m.comm = CommModel::fit_results(results_path);
  if (has_compute) m.compute = ComputeModel::fit_results(results_path);
  if (has_comm) m.sync = SyncModel::fit_results(results_path);
  return m;
}

void write_model_file(const std::string& model_path, const Provenance& fit_provenance, const ModelFile& model) {
  FileReplacement replacement(model_path);
  try {
    h5::File file(replacement.path(), h5::File::Mode::create_truncate);
    write_meta(file, model_schema, fit_provenance);
    h5::Group src = file.create_group("source");
    src.set_attr("file", model.source_file);
    for (const auto& [k, v] : model.source.fields) src.set_attr(k, v);
    src.set_attr("ranks", static_cast<std::int64_t>(model.source.ranks));
    h5::Group env = src.create_group("environment");
    for (const auto& [k, v] : model.source.environment) env.set_attr(k, v);
    if (model.comm) model.comm->write_into(file);
    if (model.compute) model.compute->write_into(file);
    if (model.sync) model.sync->write_into(file);
    file.close();
  } catch (const Error& e) {  // the message names the temporary; the user named the model
    throw Error(model_path + ": not written: " + e.what());
  }
  replacement.commit();
}

ModelFile read_model_file(const std::string& model_path) {
  h5::File file = open_checked(model_path, model_schema);
  ModelFile m;
  if (file.has("source")) {
    h5::Group src = file.group("source");
    m.source = read_provenance(src);
    m.source.fields.erase("file");  // the results path, kept apart from its provenance
    if (src.has_attr("file")) m.source_file = src.attr_string("file");
  }
  if (file.has("comm")) m.comm = CommModel::read(file);
  if (file.has("compute")) m.compute = ComputeModel::read(file);
  if (file.has("sync")) m.sync = SyncModel::read(file);
  return m;
}

const CommModel& comm_part(const ModelFile& model, const std::string& model_path) {
  if (!model.comm) throw Error(model_path + ": no communication part (fit a results file of the comm or train suite)");
  return *model.comm;
}

const ComputeModel& compute_part(const ModelFile& model, const std::string& model_path) {
  if (!model.compute) throw Error(model_path + ": no compute part (fit a results file of the compute or train suite)");
  return *model.compute;
}

}  // namespace sextant::model
