#pragma once
// JSON forms of the model's answers, for every JSON document and binding sextant has
// (the run's --json results, predict --json, the Python module): one spelling of each
// field, here. nlohmann's
// convention: `nlohmann::json j = config;`. Header-only; only its includers need
// nlohmann_json.
#include <nlohmann/json.hpp>

#include "models/comm_model.hpp"
#include "models/layout_search.hpp"
#include "models/step_predictor.hpp"
#include "models/train_plan.hpp"

namespace sextant::model {

inline const char* schedule_name(Schedule s) { return s == Schedule::gpipe ? "gpipe" : "1f1b"; }

// A communication prediction: the time, its interval, the view and the terms.
inline void to_json(nlohmann::json& j, const Prediction& p) {
  j = nlohmann::json{{"seconds", p.seconds}, {"interval_seconds", {p.lo, p.hi}}, {"busbw_Bps", p.busbw},
                     {"view", to_string(p.view)},
                     {"terms_seconds", {{"alpha", p.alpha_part}, {"beta", p.beta_part}, {"gamma", p.gamma_part}}},
                     {"extrapolated_bytes", p.extrapolated_bytes}, {"extrapolated_ranks", p.extrapolated_ranks}};
  if (!p.note.empty()) j["note"] = p.note;
  if (p.view == View::algorithm && p.algorithm_fit) {
    j["algorithm"] = p.algorithm;
    j["calibration"] = p.calibration;
    j["fitted_ranks"] = p.algorithm_fit->ranks;
  } else if (p.from) {
    j["fitted_ranks"] = p.from->ranks;
    j["segment"] = p.segment;
    j["bridged"] = p.bridged;
  }
}

inline void to_json(nlohmann::json& j, const TrainConfig& c) {
  j = nlohmann::json{{"layers", c.layers}, {"hidden", c.hidden}, {"heads", c.heads}, {"seq", c.seq},
                     {"vocab", c.vocab}, {"micro_batch", c.micro_batch}, {"global_batch", c.global_batch},
                     {"micro_batches", c.micro_batches()}, {"dp", c.dp}, {"tp", c.tp}, {"pp", c.pp},
                     {"schedule", schedule_name(c.schedule)},
                     {"optimizer", c.optimizer == Optimizer::sgd ? "sgd" : "adamw"}, {"zero", c.zero},
                     {"overlap", c.overlap_dp}, {"sp", c.sp}, {"staleness", c.staleness},
                     {"compress", to_string(c.compress)}, {"experts", c.experts}, {"top_k", c.top_k},
                     {"capacity", c.capacity}, {"ep", c.ep}, {"bucket_bytes", c.bucket_bytes}, {"dtype", c.dtype},
                     {"master", c.master_dtype()},
                     {"dense", to_string(c.dense)}, {"recompute", to_string(c.recompute)}};
}

inline void to_json(nlohmann::json& j, const StepPrediction& p) {
  j = nlohmann::json{{"step_seconds", p.total}, {"bubble_fraction", p.bubble_fraction},
                     {"critical_stage", p.critical_stage}, {"notes", p.notes}};
  for (const auto& [name, t] : p.breakdown) j["breakdown_seconds"][name] = t;
  // Every stage's times (per micro-batch where StageTimes says so): a pipeline's
  // critical stage is not always the one a reader would guess.
  for (const auto& s : p.stages)
    j["stages"].push_back({{"forward_compute", s.forward_compute}, {"backward_compute", s.backward_compute},
                           {"forward_tp", s.forward_tp}, {"backward_tp", s.backward_tp},
                           {"forward_dp", s.forward_dp}, {"backward_dp", s.backward_dp},
                           {"forward_ep", s.forward_ep}, {"backward_ep", s.backward_ep},
                           {"dp_total", s.dp_total}, {"dp_exposed", s.dp_exposed}, {"optimizer", s.optimizer},
                           {"waits", s.waits}, {"transfers", s.transfers}, {"message_overhead", s.message_overhead}, {"finish", s.finish}});
}

inline void to_json(nlohmann::json& j, const LevelMap& m) {
  j = nlohmann::json{{"tp", m.tp}, {"dp", m.dp}, {"pp", m.pp}};
}

// One layout of a search: its prediction, with its configuration, the levels its
// traffic was costed on and its step working set.
inline void to_json(nlohmann::json& j, const RankedLayout& r) {
  j = r.prediction;
  j.erase("stages");  // thousands of layouts: their totals and breakdowns are what a search compares
  j["config"] = r.config;
  j["levels"] = r.levels;
  j["memory_bytes_per_rank"] = r.memory_bytes;
}

}  // namespace sextant::model
