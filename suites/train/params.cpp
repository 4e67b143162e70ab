#include "suites/train/params.hpp"

#include <cmath>

namespace sextant::train {

std::vector<ParamSpec> stage_parameter_specs(const model::TrainConfig& c, int layers_first, int layers_count,
                                             bool first_stage, bool last_stage, int ep_rank) {
  const std::int64_t H = c.hidden, F = 4LL * c.hidden, V = c.vocab, S = c.seq;
  // Scaled initialisation (GPT-2): fan-in for every weight, and the projections that add
  // into the residual stream shrunk by sqrt(2 L) so the stream does not grow with depth.
  const double w = 1 / std::sqrt(double(H)), residual = 1 / std::sqrt(2.0 * c.layers);
  std::vector<ParamSpec> p;
  auto add = [&](std::string name, std::int64_t rows, std::int64_t cols, Shard shard, Init init, double sd,
                 int groups = 1) {
    ParamSpec s;
    s.name = std::move(name);
    s.rows = rows;
    s.cols = cols;
    s.shard = shard;
    s.init = init;
    s.stddev = sd;
    s.groups = groups;
    p.push_back(std::move(s));
  };
  if (last_stage) {
    add("head.weight", H, V, Shard::columns, Init::uniform, w);
    add("final.ln.gamma", 1, H, Shard::replicated, Init::ones, 0);
    add("final.ln.beta", 1, H, Shard::replicated, Init::zeros, 0);
  }
  for (int l = layers_first + layers_count - 1; l >= layers_first; --l) {
    const std::string L = "layer" + std::to_string(l) + ".";
    if (c.experts > 0) {
      add(L + "router.weight", H, c.experts, Shard::replicated, Init::uniform, w);
    } else {
      add(L + "fc2.weight", F, H, Shard::rows, Init::uniform, residual / std::sqrt(double(F)));
      add(L + "fc1.bias", 1, F, Shard::columns, Init::zeros, 0);
      add(L + "fc1.weight", H, F, Shard::columns, Init::uniform, w);
    }
    add(L + "ln2.gamma", 1, H, Shard::replicated, Init::ones, 0);
    add(L + "ln2.beta", 1, H, Shard::replicated, Init::zeros, 0);
    add(L + "attn_out.weight", H, H, Shard::rows, Init::uniform, residual * w);
    add(L + "qkv.weight", H, 3 * H, Shard::columns, Init::uniform, w, 3);
    add(L + "ln1.gamma", 1, H, Shard::replicated, Init::ones, 0);
    add(L + "ln1.beta", 1, H, Shard::replicated, Init::zeros, 0);
  }
  if (first_stage) {
    add("embedding.position", S, H, Shard::replicated, Init::uniform, 1.0);
    add("embedding.token", V, H, Shard::rows, Init::uniform, 1.0);
  }
  // The rank's experts last (models/train_plan.cpp's stage_parameters says why); the
  // experts are not split over tp (TrainConfig::validate).
  const int local = c.experts / c.ep;
  for (int l = layers_first + layers_count - 1; l >= layers_first; --l)
    for (int j = local - 1; j >= 0; --j) {
      const std::string L = "layer" + std::to_string(l) + ".";
      const std::string mine = L + "expert" + std::to_string(j) + ".";
      const std::string model = L + "expert" + std::to_string(ep_rank * local + j) + ".";
      auto add_expert = [&](const char* what, std::int64_t rows, std::int64_t cols, Init init, double sd) {
        add(mine + what, rows, cols, Shard::replicated, init, sd);
        p.back().stream = model + what;
      };
      add_expert("fc2.weight", F, H, Init::uniform, residual / std::sqrt(double(F)));
      add_expert("fc1.bias", 1, F, Init::zeros, 0);
      add_expert("fc1.weight", H, F, Init::uniform, w);
    }
  return p;
}

FlatLayout flat_layout(std::vector<ParamSpec> specs, int tp, double bucket_bytes, int scalar_bytes, int pad_to,
                       bool by_unit, bool own_experts) {
  FlatLayout f;
  f.specs = std::move(specs);
  std::size_t synced = f.specs.size();  // the specs in buckets; the rest are the rank's own
  if (own_experts)
    while (synced > 0 && model::expert_parameter(f.specs[synced - 1].name)) --synced;
  Bucket current;
  std::int64_t used = 0;  // unpadded elements in the current bucket
  auto close = [&] {
    current.elements = (used + pad_to - 1) / pad_to * pad_to;
    f.total = current.offset + current.elements;
    f.buckets.push_back(current);
  };
  for (std::size_t i = 0; i < synced; ++i) {
    const std::int64_t n = f.specs[i].local_size(tp);
    const bool full = by_unit ? i > 0 && model::param_unit(f.specs[i - 1].name) != model::param_unit(f.specs[i].name)
                              : double(used + n) * scalar_bytes > bucket_bytes;
    if (used > 0 && full) {
      close();
      current = Bucket{};
      current.offset = f.total;
      used = 0;
    }
    if (used == 0) current.first_param = int(i);
    f.offsets.push_back(current.offset + used);
    current.last_param = int(i);
    used += n;
    f.parameters += n;
  }
  if (used > 0) close();
  for (std::size_t i = synced; i < f.specs.size(); ++i) {
    const std::int64_t n = f.specs[i].local_size(tp);
    f.offsets.push_back(f.total);
    f.total += n;
    f.parameters += n;
  }
  return f;
}

}  // namespace sextant::train
