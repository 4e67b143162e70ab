#pragma once
// The partners' wait at a synchronisation (models/sync_model.hpp), measured: for each
// interval T every rank runs the same block of work (a triad over arrays that stay in
// its caches, repeated to last about T: arithmetic and cache traffic, as a step's
// operators), then all synchronise; per block, each rank's time over its own median
// (a rank persistently slower is the kernels' business, not the wait's), the largest of
// these against their mean. Written to the results' /sync as (T, excess) with excess =
// the median over blocks of (largest - mean) / mean.
//
// And the host's share of a message (SyncModel::overhead): ranks in pairs (each with the
// rank half the job away, as pipeline neighbours are) compute the same blocks of that
// work in ~50 us kernels, each block once quiet and once with messages of the size
// exchanged between the pair while it runs (one posted every ~1.25 ms of compute each
// way, received and sent on by a poll after every kernel, as the proxy's pipeline does);
// the kernels' time, not the polls', is compared. Written to /sync as (message_bytes,
// message_overhead_seconds): the median over rounds of the paired ranks' mean extra
// kernel time, per message sent or received.
#include <cstdint>
#include <vector>

namespace sextant {
class Runtime;
class ResultsFile;
}  // namespace sextant

namespace sextant::train {

// The partners' wait measured: per interval of work (ascending), the excess.
struct PartnersWait {
  std::vector<double> interval_s, excess;
};

// Every rank calls it (collective) and gets the same values. `budget`: seconds of work
// per interval, in at least `min_blocks` and at most 400 blocks.
PartnersWait measure_partners_wait(const Runtime& rt, double budget, int min_blocks);

// Every rank calls it (collective): the partners' wait with the suite's budget (quick:
// fewer blocks), printed; rank 0 writes it to `results` (may be null).
void measure_sync_skew(const Runtime& rt, ResultsFile* results, bool quick);

// Collective too; after measure_sync_skew (its /sync group). Nothing where `sizes` is
// empty, with fewer than 2 ranks, or oversubscribed (no timing there means anything).
void measure_message_overhead(const Runtime& rt, ResultsFile* results, std::vector<std::uint64_t> sizes, bool quick);

}  // namespace sextant::train
