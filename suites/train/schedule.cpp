#include "suites/train/schedule.hpp"

#include <algorithm>

namespace sextant::train {

std::vector<Action> schedule_actions(model::Schedule schedule, int stages, int stage, int M) {
  std::vector<Action> a;
  if (schedule == model::Schedule::gpipe) {
    for (int m = 0; m < M; ++m) a.push_back({Action::forward, m});
    for (int m = 0; m < M; ++m) a.push_back({Action::backward, m});
    return a;
  }
  const int warmup = std::min(stages - stage - 1, M);
  int f = 0, b = 0;
  while (f < warmup) a.push_back({Action::forward, f++});
  while (f < M) {
    a.push_back({Action::forward, f++});
    a.push_back({Action::backward, b++});
  }
  while (b < M) a.push_back({Action::backward, b++});
  return a;
}

int slots_needed(model::Schedule schedule, int stages, int stage, int M) {
  return schedule == model::Schedule::gpipe ? M : std::min(M, stages - stage);
}

}  // namespace sextant::train
