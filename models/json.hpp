#pragma once
// JSON forms of the training-step types, for every JSON document sextant writes (the
// run's --json results, predict --json): one spelling of each field, here. nlohmann's
// convention: `nlohmann::json j = config;`. Header-only; only its includers need
// nlohmann_json.
#include <nlohmann/json.hpp>

#include "models/step_predictor.hpp"
#include "models/train_plan.hpp"

namespace sextant::model {

inline const char* schedule_name(Schedule s) { return s == Schedule::gpipe ? "gpipe" : "1f1b"; }

inline void to_json(nlohmann::json& j, const TrainConfig& c) {
  j = nlohmann::json{{"layers", c.layers}, {"hidden", c.hidden}, {"heads", c.heads}, {"seq", c.seq},
                     {"vocab", c.vocab}, {"micro_batch", c.micro_batch}, {"global_batch", c.global_batch},
                     {"micro_batches", c.micro_batches()}, {"dp", c.dp}, {"tp", c.tp}, {"pp", c.pp},
                     {"schedule", schedule_name(c.schedule)},
                     {"optimizer", c.optimizer == Optimizer::sgd ? "sgd" : "adamw"}, {"zero1", c.zero1},
                     {"overlap", c.overlap_dp}, {"bucket_bytes", c.bucket_bytes}, {"dtype", c.dtype},
                     {"dense", to_string(c.dense)}};
}

inline void to_json(nlohmann::json& j, const StepPrediction& p) {
  j = nlohmann::json{{"step_seconds", p.total}, {"bubble_fraction", p.bubble_fraction},
                     {"critical_stage", p.critical_stage}, {"notes", p.notes}};
  for (const auto& [name, t] : p.breakdown) j["breakdown_seconds"][name] = t;
}

}  // namespace sextant::model
