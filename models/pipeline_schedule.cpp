#include "models/pipeline_schedule.hpp"

#include <algorithm>

namespace sextant::model {

std::vector<PipelineAction> schedule_actions(Schedule schedule, int stages, int stage, int M) {
  std::vector<PipelineAction> a;
  if (schedule == Schedule::gpipe) {
    for (int m = 0; m < M; ++m) a.push_back({PipelineAction::forward, m});
    for (int m = 0; m < M; ++m) a.push_back({PipelineAction::backward, m});
    return a;
  }
  const int warmup = std::min(stages - stage - 1, M);
  int f = 0, b = 0;
  while (f < warmup) a.push_back({PipelineAction::forward, f++});
  while (f < M) {
    a.push_back({PipelineAction::forward, f++});
    a.push_back({PipelineAction::backward, b++});
  }
  while (b < M) a.push_back({PipelineAction::backward, b++});
  return a;
}

int slots_needed(Schedule schedule, int stages, int stage, int M) {
  return schedule == Schedule::gpipe ? M : std::min(M, stages - stage);
}

}  // namespace sextant::model
