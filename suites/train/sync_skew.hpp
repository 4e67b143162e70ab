#pragma once
// The partners' wait at a synchronisation (models/sync_model.hpp), measured: for each
// interval T every rank runs the same block of work (a triad over arrays that stay in
// its caches, repeated to last about T: arithmetic and cache traffic, as a step's
// operators), then all synchronise; per block, the slowest rank's time against the mean
// of the ranks'. Written to the results' /sync as (T, excess) with excess = (mean over
// blocks of the slowest rank's time - mean of all) / mean of all.
namespace sextant {
class Runtime;
class ResultsFile;
}  // namespace sextant

namespace sextant::train {

// Every rank calls it (collective); rank 0 writes `results` (may be null). quick: fewer blocks.
void measure_sync_skew(const Runtime& rt, ResultsFile* results, bool quick);

}  // namespace sextant::train
