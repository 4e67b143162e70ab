#include "models/cache_state.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <list>
#include <unordered_map>
#include <tuple>
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

  struct Found {
    double cached = 0, near = 0;  // bytes still cached, and of them still in the private caches
  };
  // What is left of `bytes` of a tensor (at most what its last use touched): the share
  // kept at its depth, and near where all of it lies within the private caches' reach.
  // Other tenants' traffic since the tensor's last use adds to its depth in the shared
  // caches (not in the private ones).
  Found cached(int tensor, double bytes) const {
    double depth = 0;
    for (const auto& e : order_) {  // most recent first
      if (e.tensor == tensor) {
        const double b = std::min(bytes, e.bytes);
        const double near = std::clamp(retention_.near_bytes - depth, 0.0, b);
        const double neighbours = retention_.neighbour_bytes_per_second * (now_ - e.time);
        return {b * retention_.kept_at(depth + neighbours + b / 2), near};
      }
      depth += e.bytes;
      if (depth >= horizon_) break;
    }
    return {};
  }

  // A use that touches part of a tensor (the rows an embedding looks up) moves what the
  // stack holds of it to the front too: one tensor, one place in the stack.
  void touch(int tensor, double bytes) {
    if (auto at = where_.find(tensor); at != where_.end()) {
      total_ -= at->second->bytes;
      at->second->bytes = std::max(bytes, at->second->bytes);
      at->second->time = now_;
      total_ += at->second->bytes;
      order_.splice(order_.begin(), order_, at->second);  // the same node, to the front
    } else {
      order_.push_front({tensor, bytes, now_});
      where_[tensor] = order_.begin();
      total_ += bytes;
    }
    while (!order_.empty() && total_ - order_.back().bytes >= horizon_) {
      total_ -= order_.back().bytes;
      where_.erase(order_.back().tensor);
      order_.pop_back();
    }
  }

  void advance(double seconds) { now_ += seconds; }

 private:
  struct Entry {
    int tensor;
    double bytes;
    double time;  // of the last use
  };
  const CacheRetention& retention_;
  double horizon_, total_ = 0, now_ = 0;
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

// The phase's ops but those of layers [skip_first, skip_last].
PhaseCalls calls_of(const Phase& phase, int slots, Tensors& tensors, int skip_first = -1, int skip_last = -2);

std::vector<Access> accesses_of(const std::vector<Operand>& operands, int slot, Tensors& tensors) {
  std::vector<Access> a;
  for (const auto& o : operands) a.push_back({tensors.id(o.tensor, slot), o.bytes});
  return a;
}

struct Tally {
  double missed = 0, near = 0, bytes = 0;
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

double OperandMisses::far_weight() const {
  if (!(near_repeated > 0)) return 0;  // no private caches known (near_bytes 0): nothing to weigh
  return std::clamp((near_repeated - near_in_step) / near_repeated, 0.0, 1.0);
}

namespace {

// "layer7.fc1" -> 7; -1 for an op outside the layers.
int layer_of(const std::string& name) {
  if (name.rfind("layer", 0) != 0) return -1;
  std::size_t end = 5;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  return end > 5 && end < name.size() && name[end] == '.' ? std::stoi(name.substr(5, end - 5)) : -1;
}

PhaseCalls calls_of(const Phase& phase, int slots, Tensors& tensors, int skip_first, int skip_last) {
  PhaseCalls c;
  for (const auto& op : phase.compute)
    if (const int l = layer_of(op.name); l < skip_first || l > skip_last) c.ops.push_back(&op);
  c.by_slot.resize(slots);
  for (int s = 0; s < slots; ++s)
    for (const ComputeOp* op : c.ops) {
      std::vector<Access> a;
      for (const auto& o : op->operands) a.push_back({tensors.id(o.tensor, s), o.bytes});
      c.by_slot[s].push_back(std::move(a));
    }
  return c;
}

double operand_bytes(const Phase& phase) {
  double b = 0;
  for (const auto& op : phase.compute)
    for (const auto& o : op.operands) b += o.bytes;
  return b;
}

// The hot measurement's shares (missed, near): the op alone, again and again, walked by
// the same rule (memo: by the sizes of its operands, in order, which is all the walk
// sees of them).
std::pair<double, double> repeated_shares(const ComputeOp& op, double seconds, const CacheRetention& retention,
                                          std::map<std::vector<double>, std::pair<double, double>>& memo) {
  std::vector<double> sizes;
  for (const auto& o : op.operands) sizes.push_back(o.bytes);
  std::vector<double> key = sizes;
  key.push_back(seconds);
  if (auto at = memo.find(key); at != memo.end()) return at->second;
  RecencyStack alone(retention);
  for (std::size_t i = 0; i < sizes.size(); ++i) alone.touch(int(i), sizes[i]);
  alone.advance(seconds);
  double missed = 0, near = 0, footprint = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto found = alone.cached(int(i), sizes[i]);
    missed += sizes[i] - found.cached;
    near += found.near;
    footprint += sizes[i];
  }
  return memo[key] = {missed / footprint, near / footprint};
}

}  // namespace

// A long step of a large model would cost the walk millions of uses: a stage of many
// layers is walked with its first and last three (the layers between, identical, take
// the shares of the third), and many micro-batches with eight (the missing ones take
// the shares of the middle one), where that cannot change what the walk finds: where
// three layers, or four micro-batches, touch more than the retention's horizon, nothing
// reused across them is kept whether they are walked or not.
std::map<std::string, OperandMisses> operand_misses(const StepPlan& plan, int stage, const CacheRetention& retention,
                                                    CacheWalkMemo* memo, const OpSeconds& seconds) {
  std::unordered_map<const ComputeOp*, double> seconds_of;  // each op once: the layers repeat them
  auto time_of = [&](const ComputeOp& op) {
    if (!seconds || !(retention.neighbour_bytes_per_second > 0)) return 0.0;
    auto [at, fresh] = seconds_of.try_emplace(&op, 0.0);
    if (fresh) at->second = std::max(0.0, seconds(op));
    return at->second;
  };
  if (retention.distance.size() != retention.kept.size() || retention.distance.empty())
    throw Error("operand_misses: a cache retention needs (distance, kept) points");
  const StagePlan& full = plan.stages.at(stage);
  const int S = static_cast<int>(plan.stages.size()), M = plan.config.micro_batches();
  const double horizon = retention.horizon();
  const double per_micro = operand_bytes(full.forward) + operand_bytes(full.backward);
  const double per_layer = per_micro / std::max(1, full.layers_count);
  const int walked = M > 8 && 4 * per_micro >= horizon ? 8 : M;

  // What decides the walk, layer numbers aside: the stage's shape, its place in the
  // schedule, and everything that sizes its operands (the configuration less dp, pp and
  // the micro-batch count, except where ZeRO shards by dp).
  std::string key;
  if (memo) {
    const TrainConfig& c = plan.config;
    for (double v : {double(full.layers_count), double(stage == 0), double(stage == S - 1), double(std::min(S - stage, walked + 1)),
                     double(walked), double(c.schedule == Schedule::gpipe), double(c.tp), double(c.micro_batch), double(c.hidden),
                     double(c.heads), double(c.seq), double(c.vocab), double(c.zero >= 1 ? c.dp : 0), double(c.zero), c.bucket_bytes,
                     double(c.optimizer == Optimizer::adamw), double(c.dense == DensePath::vendor), double(c.dtype == "float64"),
                     double(static_cast<int>(c.recompute)), double(c.sp), double(c.mixed()),
                     double(c.experts), double(c.top_k), c.capacity, double(c.ep)})
      key += std::to_string(v) + ",";
    if (auto at = memo->walks.find(key); at != memo->walks.end()) {
      std::map<std::string, OperandMisses> out;
      for (const auto& [relative, m] : at->second) {
        std::string name = relative;
        if (relative[0] == '@') {  // "@3.fc1": the stage's fourth layer
          const auto dot = relative.find('.');
          name = "layer" + std::to_string(full.layers_first + std::stoi(relative.substr(1, dot - 1))) + relative.substr(dot);
        }
        out[name] = m;
      }
      return out;
    }
  }

  const StagePlan& st = full;
  int dropped_first = -1, dropped_last = -2, representative = -1;
  if (full.layers_count > 6 && 3 * per_layer >= horizon) {
    dropped_first = full.layers_first + 3;
    dropped_last = full.layers_first + full.layers_count - 4;
    representative = full.layers_first + 2;
  }
  const int middle = walked / 2;
  const int slots = std::max(1, slots_needed(plan.config.schedule, S, stage, walked));
  Tensors tensors;
  const PhaseCalls forward = calls_of(st.forward, slots, tensors, dropped_first, dropped_last),
                   backward = calls_of(st.backward, slots, tensors, dropped_first, dropped_last),
                   optimizer = calls_of(st.optimizer, 1, tensors);
  std::vector<std::vector<Access>> received_activation, received_gradient;
  for (int s = 0; s < slots; ++s) {
    received_activation.push_back(accesses_of(st.receive_activation, s, tensors));
    received_gradient.push_back(accesses_of(st.receive_gradient, s, tensors));
  }
  const std::vector<Access> synced = accesses_of(st.dp_sync_operands, 0, tensors);
  const auto actions = schedule_actions(plan.config.schedule, S, stage, walked);

  RecencyStack cache(retention);
  std::map<std::string, Tally> tally, middle_tally;  // by op name: all walked calls, the middle micro-batch's
  bool counting = false;
  auto touch_all = [&](const std::vector<Access>& accesses) {
    for (const auto& a : accesses) cache.touch(a.tensor, a.bytes);
  };
  auto run = [&](const PhaseCalls& phase, int slot, int micro) {
    for (std::size_t i = 0; i < phase.ops.size(); ++i) {
      const auto& operands = phase.by_slot[slot][i];
      if (counting) {
        Tally t;
        for (const auto& a : operands) {  // all before any is touched: the op reads them together
          const auto found = cache.cached(a.tensor, a.bytes);
          t.missed += a.bytes - found.cached;
          t.near += found.near;
          t.bytes += a.bytes;
        }
        Tally& all = tally[phase.ops[i]->name];
        all.missed += t.missed, all.near += t.near, all.bytes += t.bytes;
        if (micro == middle) {
          Tally& mid = middle_tally[phase.ops[i]->name];
          mid.missed += t.missed, mid.near += t.near, mid.bytes += t.bytes;
        }
      }
      touch_all(operands);
      cache.advance(time_of(*phase.ops[i]));
    }
  };
  for (int step = 0; step < 2; ++step) {
    counting = step == 1;
    for (const auto& a : actions) {
      const int slot = a.micro % slots;
      if (a.kind == PipelineAction::forward) {
        touch_all(received_activation[slot]);
        run(forward, slot, a.micro);
      } else {
        touch_all(received_gradient[slot]);
        run(backward, slot, a.micro);
      }
    }
    touch_all(synced);
    run(optimizer, 0, -1);
  }

  std::map<std::string, OperandMisses> out;
  std::map<std::vector<double>, std::pair<double, double>> repeated;  // by operand sizes: the layers repeat them
  auto shares = [&](const std::string& name) {  // (missed, near); missed < 0: no operands
    Tally t = tally.at(name);
    if (walked < M)
      if (auto mid = middle_tally.find(name); mid != middle_tally.end()) {
        t.missed += (M - walked) * mid->second.missed;
        t.near += (M - walked) * mid->second.near;
        t.bytes += (M - walked) * mid->second.bytes;
      }
    return t.bytes > 0 ? std::pair{t.missed / t.bytes, t.near / t.bytes} : std::pair{-1.0, 0.0};
  };
  for (const auto* phase : {&full.forward, &full.backward, &full.optimizer})
    for (const auto& op : phase->compute) {
      std::string walked_name = op.name;
      const int l = layer_of(op.name);
      if (l >= dropped_first && l <= dropped_last)
        walked_name = "layer" + std::to_string(representative) + op.name.substr(op.name.find('.'));
      if (!tally.count(walked_name)) continue;
      OperandMisses m;
      std::tie(m.in_step, m.near_in_step) = shares(walked_name);
      if (m.in_step < 0) continue;  // an op without operands: no cache state to tell
      std::tie(m.repeated, m.near_repeated) = repeated_shares(op, time_of(op), retention, repeated);
      for (const auto& o : op.operands) m.bytes += o.bytes;
      out[op.name] = m;
    }
  if (memo) {
    auto& relative = memo->walks[key];
    for (const auto& [name, m] : out) {
      const int l = layer_of(name);
      relative[l < 0 ? name : "@" + std::to_string(l - full.layers_first) + name.substr(name.find('.'))] = m;
    }
  }
  return out;
}

}  // namespace sextant::model
