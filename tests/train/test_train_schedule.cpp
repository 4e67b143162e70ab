// Pipeline schedules: every micro-batch's forward and backward exactly once, in order,
// within the stage's activation slots, and the stages together never deadlock (with
// non-blocking sends, an action waits only for its input from a neighbour).
#include <gtest/gtest.h>

#include <vector>

#include "models/pipeline_schedule.hpp"

using namespace sextant::model;
using Action = PipelineAction;

namespace {

// Runs all stages' lists as the executor does; false if no stage can make progress.
bool completes(Schedule sched, int stages, int M) {
  std::vector<std::vector<Action>> lists;
  for (int s = 0; s < stages; ++s) lists.push_back(schedule_actions(sched, stages, s, M));
  std::vector<std::vector<bool>> fwd(stages, std::vector<bool>(M)), bwd(stages, std::vector<bool>(M));
  std::vector<std::size_t> next(stages, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      if (next[s] == lists[s].size()) continue;
      const Action a = lists[s][next[s]];
      const bool input = a.kind == Action::forward ? (s == 0 || fwd[s - 1][a.micro])
                                                   : (fwd[s][a.micro] && (s == stages - 1 || bwd[s + 1][a.micro]));
      if (!input) continue;
      (a.kind == Action::forward ? fwd : bwd)[s][a.micro] = true;
      ++next[s];
      progress = true;
    }
  }
  for (int s = 0; s < stages; ++s)
    if (next[s] != lists[s].size()) return false;
  return true;
}

}  // namespace

TEST(Schedule, EveryMicroBatchOnceInOrderWithinItsSlots) {
  for (auto sched : {Schedule::gpipe, Schedule::one_f_one_b})
    for (int stages = 1; stages <= 5; ++stages)
      for (int M = 1; M <= 9; ++M)
        for (int s = 0; s < stages; ++s) {
          auto list = schedule_actions(sched, stages, s, M);
          ASSERT_EQ(int(list.size()), 2 * M);
          int f = 0, b = 0, in_flight = 0, most = 0;
          for (const auto& a : list) {
            if (a.kind == Action::forward) {
              EXPECT_EQ(a.micro, f++);
              most = std::max(most, ++in_flight);
            } else {
              EXPECT_EQ(a.micro, b++);
              EXPECT_LT(a.micro, f);  // its forward ran
              --in_flight;
            }
          }
          EXPECT_LE(most, slots_needed(sched, stages, s, M));
          EXPECT_TRUE(completes(sched, stages, M)) << stages << " stages, " << M << " micro-batches";
        }
}

TEST(Schedule, OneFOneBWarmsUpByDistanceToTheLastStage) {
  auto list = schedule_actions(Schedule::one_f_one_b, 4, 1, 8);
  // Stage 1 of 4: 2 warm-up forwards, then F B alternating, then 2 backwards.
  std::vector<Action> want = {{Action::forward, 0}, {Action::forward, 1}, {Action::forward, 2},
                              {Action::backward, 0}, {Action::forward, 3}, {Action::backward, 1}};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(list[i], want[i]) << i;
  EXPECT_EQ(slots_needed(Schedule::one_f_one_b, 4, 1, 8), 3);
  EXPECT_EQ(slots_needed(Schedule::gpipe, 4, 1, 8), 8);
}
