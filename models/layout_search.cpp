#include "models/layout_search.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace sextant::model {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int k = 1; k <= n; ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}

}  // namespace

LayoutSearch search_layouts(const TrainConfig& base, int ranks, const CommModel& comm, const ComputeModel& compute,
                            const LevelMap& levels, double memory_limit_bytes, int ranks_per_node, const SyncModel* sync) {
  if (ranks < 1) throw UsageError("--search " + std::to_string(ranks) + ": must be >= 1 ranks");
  LayoutSearch out;
  CacheWalkMemo walks;
  for (int tp : divisors(ranks))
    for (int pp : divisors(ranks / tp)) {
      const int dp = ranks / tp / pp;
      if (base.global_batch % dp != 0) continue;
      // The experts spread over dp, or every rank holding all of them.
      std::vector<int> eps{1};
      if (base.experts > 0 && dp > 1) eps.push_back(dp);
      for (int micro_batch : divisors(base.global_batch / dp))
        for (Schedule schedule : {Schedule::one_f_one_b, Schedule::gpipe})
          for (bool sp : {false, true})
            for (int ep : eps) {
              if (pp == 1 && schedule == Schedule::gpipe) continue;  // one stage: no schedule to choose
              if (sp && tp == 1) continue;                           // no tokens to split
              TrainConfig c = base;
              c.dp = dp, c.tp = tp, c.pp = pp, c.micro_batch = micro_batch, c.schedule = schedule, c.sp = sp;
              c.ep = ep;
              ++out.candidates;
              try {
                c.validate();
              } catch (const UsageError&) {
                continue;  // a layout this model cannot take
              }
              const StepPlan plan = plan_step(c);
              std::vector<std::string> notes;
              const LevelMap placed = ranks_per_node > 0 ? placed_levels(c, ranks_per_node, comm, &notes) : levels;
              RankedLayout r{c, placed, predict_step(plan, comm, compute, placed, sync, &walks), 0};
              r.prediction.notes.insert(r.prediction.notes.end(), notes.begin(), notes.end());
              for (int s = 0; s < c.pp; ++s) r.memory_bytes = std::max(r.memory_bytes, step_working_set_bytes(plan, s));
              if (memory_limit_bytes > 0 && r.memory_bytes > memory_limit_bytes) {
                ++out.over_memory;
                continue;
              }
              out.layouts.push_back(std::move(r));
            }
    }
  std::stable_sort(out.layouts.begin(), out.layouts.end(), [](const RankedLayout& a, const RankedLayout& b) {
    if (a.prediction.total != b.prediction.total) return a.prediction.total < b.prediction.total;
    return a.memory_bytes < b.memory_bytes;
  });
  return out;
}

}  // namespace sextant::model
