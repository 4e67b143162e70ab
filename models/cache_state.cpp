#include "models/cache_state.hpp"

#include <algorithm>
#include <cmath>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "models/pipeline_schedule.hpp"

namespace sextant::model {
namespace {

// A cache that keeps what was used last, followed tensor by tensor: a tensor's bytes at
// depth d (the distinct bytes touched since its last use) are kept as the host keeps
// data at that reuse distance. Only what lies within the retention's horizon is
// followed: a tensor deeper than that is gone whatever happens next, so a step of a
// model far larger than the caches costs a short walk per use.
class RecencyStack {
 public:
  explicit RecencyStack(const CacheRetention& retention) : retention_(retention), horizon_(retention.horizon()) {}

  // The bytes of `bytes` of a tensor still cached (at most what its last use touched).
  double cached(int tensor, double bytes) const {
    double depth = 0;
    for (const auto& e : order_) {  // most recent first
      if (e.tensor == tensor) {
        const double b = std::min(bytes, e.bytes);
        return b * retention_.kept_at(depth + b / 2);
      }
      depth += e.bytes;
      if (depth >= horizon_) break;
    }
    return 0;
  }

  // A use that touches part of a tensor (the rows an embedding looks up) moves what the
  // stack holds of it to the front too: one tensor, one place in the stack.
  void touch(int tensor, double bytes) {
    if (auto at = where_.find(tensor); at != where_.end()) {
      bytes = std::max(bytes, at->second->bytes);
      total_ -= at->second->bytes;
      order_.erase(at->second);
    }
    order_.push_front({tensor, bytes});
    where_[tensor] = order_.begin();
    total_ += bytes;
    while (!order_.empty() && total_ - order_.back().bytes >= horizon_) {
      total_ -= order_.back().bytes;
      where_.erase(order_.back().tensor);
      order_.pop_back();
    }
  }

 private:
  struct Entry {
    int tensor;
    double bytes;
  };
  const CacheRetention& retention_;
  double horizon_, total_ = 0;
  std::list<Entry> order_;
  std::unordered_map<int, std::list<Entry>::iterator> where_;
};

// Tensor names as small integers; a name ending in '#' is one buffer per activation slot.
class Tensors {
 public:
  int id(const std::string& name, int slot) {
    const std::string key = !name.empty() && name.back() == '#' ? name + std::to_string(slot) : name;
    return ids_.try_emplace(key, static_cast<int>(ids_.size())).first->second;
  }

 private:
  std::unordered_map<std::string, int> ids_;
};

struct Access {
  int tensor;
  double bytes;
};

// What one call of a phase touches, per slot: the phase's ops in order, each with its
// operands as ids.
struct PhaseCalls {
  std::vector<const ComputeOp*> ops;
  std::vector<std::vector<std::vector<Access>>> by_slot;  // [slot][op] -> operands
};

PhaseCalls calls_of(const Phase& phase, int slots, Tensors& tensors) {
  PhaseCalls c;
  for (const auto& op : phase.compute) c.ops.push_back(&op);
  c.by_slot.resize(slots);
  for (int s = 0; s < slots; ++s)
    for (const auto& op : phase.compute) {
      std::vector<Access> a;
      for (const auto& o : op.operands) a.push_back({tensors.id(o.tensor, s), o.bytes});
      c.by_slot[s].push_back(std::move(a));
    }
  return c;
}

std::vector<Access> accesses_of(const std::vector<Operand>& operands, int slot, Tensors& tensors) {
  std::vector<Access> a;
  for (const auto& o : operands) a.push_back({tensors.id(o.tensor, slot), o.bytes});
  return a;
}

struct Tally {
  double missed = 0, bytes = 0;
};

}  // namespace

double CacheRetention::kept_at(double d) const {
  if (distance.empty()) return 0;
  if (d <= distance.front()) return kept.front();
  for (std::size_t i = 1; i < distance.size(); ++i)
    if (d <= distance[i]) {
      const double lo = std::max(distance[i - 1], 1.0), f = std::log(d / lo) / std::log(distance[i] / lo);
      return kept[i - 1] + std::clamp(f, 0.0, 1.0) * (kept[i] - kept[i - 1]);
    }
  return 0;
}

double CacheRetention::horizon() const { return distance.empty() ? 0 : distance.back(); }

double OperandMisses::cold_weight() const {
  if (repeated >= 1) return 1;  // the hot measurement already had every byte from memory
  return std::clamp((in_step - repeated) / (1 - repeated), 0.0, 1.0);
}

std::map<std::string, OperandMisses> operand_misses(const StepPlan& plan, int stage, const CacheRetention& retention) {
  if (retention.distance.size() != retention.kept.size() || retention.distance.empty())
    throw Error("operand_misses: a cache retention needs (distance, kept) points");
  const StagePlan& st = plan.stages.at(stage);
  const int S = static_cast<int>(plan.stages.size()), M = plan.config.micro_batches();
  const int slots = std::max(1, slots_needed(plan.config.schedule, S, stage, M));
  Tensors tensors;
  const PhaseCalls forward = calls_of(st.forward, slots, tensors), backward = calls_of(st.backward, slots, tensors),
                   optimizer = calls_of(st.optimizer, 1, tensors);
  std::vector<std::vector<Access>> received_activation, received_gradient;
  for (int s = 0; s < slots; ++s) {
    received_activation.push_back(accesses_of(st.receive_activation, s, tensors));
    received_gradient.push_back(accesses_of(st.receive_gradient, s, tensors));
  }
  const std::vector<Access> synced = accesses_of(st.dp_sync_operands, 0, tensors);
  const auto actions = schedule_actions(plan.config.schedule, S, stage, M);

  RecencyStack cache(retention);
  std::map<const ComputeOp*, Tally> tally;
  bool counting = false;
  auto touch_all = [&](const std::vector<Access>& accesses) {
    for (const auto& a : accesses) cache.touch(a.tensor, a.bytes);
  };
  auto run = [&](const PhaseCalls& phase, int slot) {
    for (std::size_t i = 0; i < phase.ops.size(); ++i) {
      const auto& operands = phase.by_slot[slot][i];
      if (counting) {
        Tally& t = tally[phase.ops[i]];
        for (const auto& a : operands) {  // all before any is touched: the op reads them together
          t.missed += a.bytes - cache.cached(a.tensor, a.bytes);
          t.bytes += a.bytes;
        }
      }
      touch_all(operands);
    }
  };
  for (int step = 0; step < 2; ++step) {
    counting = step == 1;
    for (const auto& a : actions) {
      const int slot = a.micro % slots;
      if (a.kind == PipelineAction::forward) {
        touch_all(received_activation[slot]);
        run(forward, slot);
      } else {
        touch_all(received_gradient[slot]);
        run(backward, slot);
      }
    }
    touch_all(synced);
    run(optimizer, 0);
  }

  std::map<std::string, OperandMisses> out;
  for (const auto& [op, t] : tally) {
    if (!(t.bytes > 0)) continue;  // an op without operands: no cache state to tell
    OperandMisses m;
    m.in_step = t.missed / t.bytes;
    // The hot measurement: the op alone, again and again, walked by the same rule.
    RecencyStack alone(retention);
    Tensors own;
    const auto operands = accesses_of(op->operands, 0, own);
    for (const auto& a : operands) alone.touch(a.tensor, a.bytes);
    double missed = 0, footprint = 0;
    for (const auto& a : operands) {
      missed += a.bytes - alone.cached(a.tensor, a.bytes);
      footprint += a.bytes;
    }
    m.repeated = missed / footprint;
    out[op->name] = m;
  }
  return out;
}

}  // namespace sextant::model
