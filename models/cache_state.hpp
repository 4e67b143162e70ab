#pragma once
// The cache state a step's operators meet.
//
// Between two uses of a tensor a rank touches other tensors: the distinct bytes touched
// since its last use are its reuse distance d. What of it is still cached is what the
// host keeps at that distance: kept(d), measured by the compute suite's retention probe
// (write a buffer, stream d other bytes through, read it back, on every rank at once),
// or where no probe was run, ramped down across the boundary between the last cache
// level and memory that the working-set sweep found. Walking one stage's step in the
// order the proxy runs it (the pipeline schedule's actions, each micro-batch in its
// activation slot, the messages received, the gradient sync, the optimizer) gives every
// operator the share of its operand bytes that come from beyond the caches. The walk
// covers two steps and counts the second, which starts from what the first left.
//
// On a host shared with other tenants their traffic through the shared caches evicts
// data too, with time, not with the rank's bytes: the probe also measures what time
// alone takes (the probe left untouched for 1-16 ms: on a 2-vCPU Zen 3 guest 80% kept
// after 1 ms, 29% after 16 ms), as the rate of other data that would evict as much
// (there 2.8 GB/s), and the walk, its clock advanced by each op's hot time, puts a
// tensor last used t ago that many bytes deeper. Without it the medium model's steps
// (~40 ms, tensors reused ~10-20 ms later) were under-predicted by 12-26%.
//
// The train suite measures every kernel of the plan three times: run again and again on
// the same operands (hot: cached as far as the kernel's own footprint allows), after
// streaming 4 x the cores' private caches through (warm: the operands in the shared
// last level, none near the core), and after streaming more than the last-level cache
// through (cold: every operand from memory). The step predictor costs an operator from
// hot toward warm by the share of its operand bytes the step no longer finds near (the
// reuse distance beyond the private caches: on a 2-vCPU Zen 3 guest a GEMM whose
// operands fit its L2 took 1.2-1.4x its hot time inside a step, its warm time within
// 5%), and adds the bytes it misses beyond the hot run's at what a missed byte cost the
// retention probe's read. The cold time is not that: after a flush of 4 x the last level
// a kernel also finds its page tables and its own workspaces (a BLAS's packing buffers)
// evicted, which inside a step stay cached (the large model's GEMMs, their weights from
// memory, took 0.17 of the way from warm to cold); it is the reference only where no
// probe ran: then the weight of the cold time is how far the step's share of missed bytes
// lies from the hot measurement's own share toward all of them.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "models/train_plan.hpp"

namespace sextant::model {

struct OperandMisses {
  double in_step = 0;   // share of the operand bytes from beyond the caches, over the step's calls
  double repeated = 0;  // the same share when the kernel runs back to back (the hot measurement)
  double near_in_step = 0, near_repeated = 0;  // the shares found in the private caches
  double bytes = 0;                             // operand bytes of one call
  // Where the step puts the operator between its hot (0) and cold (1) measurement.
  double cold_weight() const;
  // Where it puts it between hot (0) and warm (1): how far the step's near share lies
  // from the hot measurement's toward none (0 where the private caches' size is unknown).
  double far_weight() const;
};

// What a rank keeps of its data after d distinct bytes of other data: (distance, share
// kept) points, ascending distance, the share non-increasing; linear in log distance
// between points, the first share before the first point and 0 beyond the last.
struct CacheRetention {
  std::vector<double> distance, kept;
  double near_bytes = 0;  // the private caches: reused within this distance, data is near (0: unknown)
  double miss_seconds_per_byte = 0;  // what a byte from beyond the caches costs the probe's read (0: unknown)
  // Other tenants' traffic through the shared caches, as other data streamed per second:
  // a tensor last used t seconds ago lies that much deeper (0: none measured).
  double neighbour_bytes_per_second = 0;
  double kept_at(double distance_bytes) const;
  double horizon() const;  // beyond it nothing is kept
};

// Walks already done, for a caller that predicts many layouts of one model (the layout
// search): stages that the walk cannot tell apart are walked once.
struct CacheWalkMemo {
  std::map<std::string, std::map<std::string, OperandMisses>> walks;  // by stage signature, op names stage-relative
};

// How long an op runs (its hot time): the walk's clock, for the neighbours' traffic.
using OpSeconds = std::function<double(const ComputeOp&)>;

// Every compute op of the stage, by name. Without `seconds` (or without a measured
// neighbours' rate) the walk counts bytes only.
std::map<std::string, OperandMisses> operand_misses(const StepPlan& plan, int stage, const CacheRetention& retention,
                                                    CacheWalkMemo* memo = nullptr, const OpSeconds& seconds = {});

}  // namespace sextant::model
