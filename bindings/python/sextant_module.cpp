// The Python module `sextant`: the C++ model (models/, the sextant::model library) for
// Python, so that Python's numbers are the C++ numbers (there is no second
// implementation of any cost formula). Paths cross the boundary, never HDF5 handles:
// h5py and this module may load different HDF5 libraries. Answers are plain dicts and
// lists, spelled as the JSON documents are (models/json.hpp, docs/file-formats.md).
//
//   import sextant
//   m = sextant.Model("run.model.h5")
//   m.predict_comm("allreduce", 1 << 20, 64)["seconds"]
//   m.predict_operator("gemm", flops=2 * 512**3, bytes=3 * 512**2 * 4, family="gemm")
//   m.predict_step("layers=24,hidden=2048,heads=16,seq=2048,global_batch=512,dp=64,tp=8")
//   m.search_layouts("layers=24,hidden=2048,heads=16,seq=2048,global_batch=512", ranks=512)
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/version.hpp"
#include "models/comm_model.hpp"
#include "models/compute_model.hpp"
#include "models/json.hpp"
#include "models/layout_search.hpp"
#include "models/model_file.hpp"
#include "models/step_predictor.hpp"

namespace py = pybind11;
using Json = nlohmann::json;
using namespace sextant;

namespace {

// JSON to Python through the json module: exact for doubles (shortest round-trip
// representation), and one spelling of every field.
py::object to_python(const Json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

// A configuration as a "key=value,..." string or a dict of the same keys, parsed as
// `sextant predict --train` parses it; without `dense`, on the dense path the model's
// operators were measured on (as the command does).
model::TrainConfig config_of(const py::object& config, const model::ComputeModel& compute) {
  std::string text;
  if (py::isinstance<py::str>(config)) {
    text = config.cast<std::string>();
  } else {
    for (auto item : config.cast<py::dict>()) {
      std::string value = py::str(item.second);
      if (py::isinstance<py::bool_>(item.second)) value = item.second.cast<bool>() ? "1" : "0";
      text += (text.empty() ? "" : ",") + py::str(item.first).cast<std::string>() + "=" + value;
    }
  }
  auto c = model::parse_train_config(text);
  model::choose_dense_path(c, text, compute);
  return c;
}

model::LevelMap levels_of(const py::object& levels) {
  model::LevelMap m;
  if (levels.is_none()) return m;
  auto d = levels.cast<py::dict>();
  if (d.contains("tp")) m.tp = d["tp"].cast<std::string>();
  if (d.contains("dp")) m.dp = d["dp"].cast<std::string>();
  if (d.contains("pp")) m.pp = d["pp"].cast<std::string>();
  m.ep = d.contains("ep") ? d["ep"].cast<std::string>() : m.dp;  // the experts' all-to-alls run on the dp group
  return m;
}

class Model {
 public:
  explicit Model(const std::string& path)
      : path_(path) {
    auto file = model::read_model_file(path);
    comm_ = std::move(file.comm);
    compute_ = std::move(file.compute);
    sync_ = std::move(file.sync);
    if (!comm_ && !compute_) throw Error(path + ": neither a communication nor a compute part");
  }

  py::list fits() const {
    py::list out;
    for (const auto& f : comm().fits) out.append(py::make_tuple(f.level, f.benchmark, f.dtype, f.ranks));
    return out;
  }

  // ranks None: the fitted rank count (the only one, as `sextant predict` requires).
  py::object predict_comm(const std::string& benchmark, double bytes, std::optional<int> ranks,
                          const std::string& level, const std::string& dtype) const {
    int p = ranks.value_or(0);
    if (!ranks) {
      auto fitted = comm().fitted_ranks(benchmark, level, dtype);
      if (fitted.size() > 1) throw UsageError(benchmark + " was fitted at several rank counts: give ranks=");
      p = fitted.empty() ? 2 : fitted.front();
    }
    if (p < 1) throw UsageError("ranks=" + std::to_string(p) + ": must be >= 1");
    const auto prediction = comm().predict(benchmark, bytes, p, level, dtype);
    Json j = prediction;
    j["ranks"] = p;
    return to_python(j);
  }

  py::object predict_operator(const std::string& op, double flops, double bytes, const std::string& dtype,
                              const std::string& family, const std::string& shape) const {
    const auto e = compute().predict(op, dtype, flops, bytes, family, shape);
    return to_python(Json{{"seconds", e.seconds}, {"bound", e.bound}, {"operator_model", e.model},
                          {"calibrated", e.calibrated}});
  }

  // levels: a dict of tp/dp/pp levels, or ranks_per_node to place the layout (as
  // `sextant predict --ranks-per-node`).
  py::object predict_step(const py::object& config, const py::object& levels, int ranks_per_node) const {
    const auto c = config_of(config, compute());
    std::vector<std::string> notes;
    const auto where = ranks_per_node > 0 ? model::placed_levels(c, ranks_per_node, comm(), &notes) : levels_of(levels);
    auto p = model::predict_step(model::plan_step(c), comm(), compute(), where, sync());
    p.notes.insert(p.notes.end(), notes.begin(), notes.end());
    return to_python(Json{{"config", c}, {"levels", where}, {"prediction", p}});
  }

  py::object search_layouts(const py::object& config, int ranks, double memory_limit_bytes, const py::object& levels,
                            int ranks_per_node) const {
    auto c = config_of(config, compute());
    auto found =
        model::search_layouts(c, ranks, comm(), compute(), levels_of(levels), memory_limit_bytes, ranks_per_node, sync());
    return to_python(Json(found.layouts));
  }

  const std::string& path() const { return path_; }
  bool has_comm() const { return comm_.has_value(); }
  bool has_compute() const { return compute_.has_value(); }

 private:
  const model::CommModel& comm() const {
    if (!comm_) throw Error(path_ + ": no communication part");
    return *comm_;
  }
  const model::ComputeModel& compute() const {
    if (!compute_) throw Error(path_ + ": no compute part (fit a results file of the compute or train suite)");
    return *compute_;
  }
  std::string path_;
  std::optional<model::CommModel> comm_;
  std::optional<model::ComputeModel> compute_;
  std::optional<model::SyncModel> sync_;
  const model::SyncModel* sync() const { return sync_ ? &*sync_ : nullptr; }
};

}  // namespace

PYBIND11_MODULE(sextant, m) {
  m.doc() = "sextant's fitted models: communication, operator and training-step predictions (the C++ library)";
  m.attr("__version__") = SEXTANT_VERSION;
  // sextant's errors as Python's: a bad file or value is ValueError, a misuse TypeError
  // is pybind11's own.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const sextant::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  py::class_<Model>(m, "Model", "A model file written by `sextant fit` (read once; pass its path)")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def_property_readonly("path", &Model::path)
      .def_property_readonly("has_comm", &Model::has_comm)
      .def_property_readonly("has_compute", &Model::has_compute)
      .def("fits", &Model::fits, "(level, benchmark, dtype, ranks) of every communication fit")
      .def("predict_comm", &Model::predict_comm, py::arg("benchmark"), py::arg("nbytes"),
           py::arg("ranks") = py::none(), py::arg("level") = "world", py::arg("dtype") = "float32",
           "A collective's or point-to-point time: dict of seconds, interval_seconds, view, terms_seconds, ...")
      .def("predict_operator", &Model::predict_operator, py::arg("op"), py::arg("flops"), py::arg("bytes"),
           py::arg("dtype") = "float32", py::arg("family") = "", py::arg("shape") = "",
           "An operator's time from the compute model: dict of seconds, bound, operator_model, calibrated")
      .def("predict_step", &Model::predict_step, py::arg("config"), py::arg("levels") = py::none(),
           py::arg("ranks_per_node") = 0,
           "A training step: config as 'key=value,...' or a dict; dict of config and prediction")
      .def("search_layouts", &Model::search_layouts, py::arg("config"), py::arg("ranks"),
           py::arg("memory_limit_bytes") = 0.0, py::arg("levels") = py::none(), py::arg("ranks_per_node") = 0,
           "Every layout of the model on `ranks` ranks, fastest first");
}
