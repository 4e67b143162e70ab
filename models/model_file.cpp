#include "models/model_file.hpp"

#include "core/error.hpp"
#include "core/replace_file.hpp"

namespace sextant::model {

ModelFile fit_model_file(const std::string& results_path, const ModelParts& parts) {
  ModelFile m;
  m.source_file = results_path;
  bool has_comm = false, has_compute = false;
  {
    h5::File f = open_checked(results_path, results_schema);
    m.source = read_provenance(f.group("meta"));
    has_comm = parts.comm && f.has("comm");
    has_compute = parts.compute && f.has("compute");
  }
  if (!has_comm && !has_compute) throw Error(results_path + ": no /comm or /compute results to fit");
  if (has_comm) m.comm = CommModel::fit_results(results_path);
  if (has_compute) m.compute = ComputeModel::fit_results(results_path);
  return m;
}

void write_model_file(const std::string& model_path, const Provenance& fit_provenance, const ModelFile& model) {
  write_model_file(model_path, fit_provenance, model.source, model.source_file, [&](h5::Group& root) {
    if (model.comm) model.comm->write_into(root);
    if (model.compute) model.compute->write_into(root);
  });
}

void write_model_file(const std::string& model_path, const Provenance& fit_provenance, const Provenance& source,
                      const std::string& source_file, const std::function<void(h5::Group&)>& write_parts) {
  FileReplacement replacement(model_path);
  try {
    h5::File file(replacement.path(), h5::File::Mode::create_truncate);
    write_meta(file, model_schema, fit_provenance);
    h5::Group src = file.create_group("source");
    src.set_attr("file", source_file);
    for (const auto& [k, v] : source.fields) src.set_attr(k, v);
    src.set_attr("ranks", static_cast<std::int64_t>(source.ranks));
    h5::Group env = src.create_group("environment");
    for (const auto& [k, v] : source.environment) env.set_attr(k, v);
    write_parts(file);
    file.close();
  } catch (const Error& e) {  // the message names the temporary; the user named the model
    throw Error(model_path + ": not written: " + e.what());
  }
  replacement.commit();
}

}  // namespace sextant::model
