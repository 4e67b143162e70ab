#pragma once
// What a blocking collective costs beyond its own time inside a step: its ranks arrive
// at different times, because the same work takes each a different time (a shared
// host's neighbours, cache and memory contention, the scheduler). Each waits for the
// last; the step is paid at the slowest rank's pace. The train suite measures it (every
// rank runs the same block of work of T seconds, then they synchronise; each rank's time
// over its own typical one, the excess of the largest over their mean, as a share of T,
// the typical block's (the median over blocks, as a step's time is its median), at
// several T: a rank persistently slower than the rest is in the kernels' times, the
// slowest rank's, where the sweep measures them before a configuration), and the step
// predictor adds excess(T) x T to each blocking collective, T the compute since the
// group's previous synchronisation. A group of another size than the one measured
// scales by the expected maximum of that many standard normal samples, the spread being
// the same per rank.
//
// And what a message in flight costs the compute it overlaps: the host's share of
// moving it (its protocol stack, and on the namespace network the delay line's wake-ups
// on the rank's CPU) interrupts whatever kernel runs there. The train suite measures it
// per message size (two ranks compute the same blocks of kernels, with messages
// exchanged between them and without; the kernels' extra time per message sent or
// received), and the step predictor charges it to the compute of each pipeline stage
// that sends during it, or receives while it computes (a message the stage waits for
// arrives in idle time).
#include <optional>
#include <string>
#include <vector>

#include "core/h5.hpp"

namespace sextant::model {

struct SyncModel {
  int ranks = 0;                   // the ranks that measured it
  std::vector<double> interval_s;  // ascending work per block, seconds
  std::vector<double> excess;      // (max over ranks - mean) / mean, per interval
  std::vector<double> message_bytes;     // ascending; empty where no message size was measured
  std::vector<double> message_overhead;  // seconds of compute per message sent or received, as measured

  // The wait of one synchronisation after `interval` seconds of work, for `ranks` ranks
  // (0 for fewer than 2); linear in log interval between the measured ones, the nearest
  // share outside them.
  double wait(double interval, int group_ranks) const;
  // The compute one message of `bytes` sent or received costs (>= 0): linear between the
  // measured sizes, the nearest one's outside them; 0 where none was measured.
  double overhead(double bytes) const;

  // From a results file's /sync (nullopt when it has none).
  static std::optional<SyncModel> fit_results(const std::string& results_path);
  // The model file's /sync part; values checked.
  static SyncModel read(const h5::Group& root);
  void write_into(h5::Group& root) const;
};

// The expected maximum of n standard normal samples (0 for n < 2; 1/sqrt(pi) for 2).
double expected_normal_maximum(int n);

}  // namespace sextant::model
