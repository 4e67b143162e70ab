// plan_step against what must hold for any exact decomposition of a training step:
// parameters add up to the model's, GEMM FLOPs are 2 x weights x tokens forward and twice
// that backward, Megatron's two allreduces per layer each way, message and bucket sizes,
// and every op's FLOPs and bytes identical to its kernel's count functions (kernels/*.hpp,
// suites/train/ops.hpp) and to the kernel registry's.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "core/error.hpp"
#include "kernels/activation.hpp"
#include "kernels/adamw.hpp"
#include "kernels/attention.hpp"
#include "kernels/embedding.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/registry.hpp"
#include "kernels/stream.hpp"
#include "models/train_plan.hpp"
#include "suites/train/ops.hpp"

using namespace sextant;
using namespace sextant::model;

namespace {

TrainConfig small(int dp = 1, int tp = 1, int pp = 1) {
  TrainConfig c;
  c.layers = 4;
  c.hidden = 32;
  c.heads = 4;
  c.seq = 16;
  c.vocab = 64;
  c.micro_batch = 2;
  c.global_batch = 8 * dp;
  c.dp = dp;
  c.tp = tp;
  c.pp = pp;
  c.bucket_bytes = 16 * 1024;
  return c;
}

std::map<std::string, long long> parse(const std::string& shape) {
  std::map<std::string, long long> out;
  std::size_t at = 0;
  while (at < shape.size()) {
    auto comma = shape.find(',', at);
    if (comma == std::string::npos) comma = shape.size();
    auto item = shape.substr(at, comma - at);
    auto eq = item.find('=');
    out[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    at = comma + 1;
  }
  return out;
}

// The whole model's parameters: sharded over tp and replicated parts.
double sharded_parameters(const TrainConfig& c) {
  const double H = c.hidden, V = c.vocab;
  return V * H + c.layers * (12 * H * H + 4 * H) + H * V;  // token emb, Wqkv Wo W1 W2 b1, head
}
double replicated_parameters(const TrainConfig& c) {
  const double H = c.hidden;
  return c.seq * H + c.layers * 4 * H + 2 * H;  // position emb, two layernorms per layer, final layernorm
}

std::vector<const ComputeOp*> all_compute(const StepPlan& p) {
  std::vector<const ComputeOp*> out;
  for (const auto& s : p.stages)
    for (const Phase* ph : {&s.forward, &s.backward, &s.optimizer})
      for (const auto& op : ph->compute) out.push_back(&op);
  return out;
}

double sum_flops(const Phase& p, const std::string& family) {
  double f = 0;
  for (const auto& op : p.compute)
    if (op.family == family) f += op.flops;
  return f;
}

}  // namespace

TEST(TrainConfig, ValidatesAndCountsMicroBatches) {
  auto c = small(2, 2, 2);
  EXPECT_EQ(c.micro_batches(), 4);  // 16 / (2 x 2)
  EXPECT_NO_THROW(c.validate());
  auto bad = c;
  bad.heads = 3;
  EXPECT_THROW(bad.validate(), UsageError);  // hidden 32 % 3
  bad = c;
  bad.tp = 8;
  EXPECT_THROW(bad.validate(), UsageError);  // heads 4 % 8
  bad = c;
  bad.global_batch = 6;
  EXPECT_THROW(bad.validate(), UsageError);  // 6 % (2 x 2)
  bad = c;
  bad.pp = 5;
  EXPECT_THROW(bad.validate(), UsageError);  // 4 layers on 5 stages
  bad = c;
  bad.dtype = "float16";
  EXPECT_THROW(bad.validate(), UsageError);
  bad = c;
  bad.vocab = 63;
  EXPECT_THROW(bad.validate(), UsageError);
  for (int staleness : {-1, max_train_staleness + 1}) {
    bad = c;
    bad.staleness = staleness;
    EXPECT_THROW(bad.validate(), UsageError);
  }
  bad = c;
  bad.staleness = 1;
  EXPECT_NO_THROW(bad.validate());
  bad.zero = 1;
  EXPECT_THROW(bad.validate(), UsageError);  // ZeRO updates with this step's blocks
  bad.zero = 0;
  bad.overlap_dp = true;
  EXPECT_THROW(bad.validate(), UsageError);  // already off the step
  // The compressed sync runs in the optimizer step on a converted copy: not with the
  // syncs that reduce the gradients in place, bucket by bucket.
  bad = c;
  bad.compress = Compression::bf16;
  EXPECT_NO_THROW(bad.validate());
  for (auto with : {&TrainConfig::overlap_dp}) {
    auto b = bad;
    b.*with = true;
    EXPECT_THROW(b.validate(), UsageError);
  }
  for (auto with : {&TrainConfig::zero, &TrainConfig::staleness}) {
    auto b = bad;
    b.*with = 1;
    EXPECT_THROW(b.validate(), UsageError);
  }
  EXPECT_THROW(set_train_config_key(bad, "compress", "fp8"), UsageError);
}

// Compressed dp gradients: the optimizer step converts the whole gradient to bfloat16,
// allreduces each bucket of the copy (half float32's bytes, one right behind the other),
// converts back, then updates; no sync is left after the backward.
TEST(TrainPlan, CompressedGradientsAreSummedInBfloat16InTheOptimizerStep) {
  auto c = small(2, 1, 1);
  c.bucket_bytes = 10000;
  const auto plain = plan_step(c);
  c.compress = Compression::bf16;
  const auto compressed = plan_step(c);
  const auto& st = compressed.stages.at(0);
  const auto& sync = plain.stages.at(0);
  EXPECT_TRUE(st.dp_sync.empty());
  EXPECT_TRUE(st.dp_sync_operands.empty());
  ASSERT_GT(sync.dp_sync.size(), 1u);
  ASSERT_EQ(st.optimizer.comm.size(), sync.dp_sync.size());
  for (std::size_t k = 0; k < sync.dp_sync.size(); ++k) {
    const CommOp& op = st.optimizer.comm[k];
    EXPECT_EQ(op.name, sync.dp_sync[k].name);
    EXPECT_EQ(op.collective, "allreduce");
    EXPECT_EQ(op.traffic, Traffic::dp);
    EXPECT_EQ(op.ranks, 2);
    EXPECT_DOUBLE_EQ(op.bytes, sync.dp_sync[k].bytes / 2);  // float32 to bfloat16
    EXPECT_EQ(op.after, "optimizer.compress");
    EXPECT_EQ(op.back_to_back, k > 0);
    EXPECT_EQ(op.dtype, "bfloat16");
  }
  ASSERT_EQ(st.optimizer.compute.size(), 4u);
  const std::string n = "n=" + std::to_string((long long)st.parameters);
  for (int i : {0, 1}) {
    const ComputeOp& op = st.optimizer.compute[i];
    EXPECT_EQ(op.name, i == 0 ? "optimizer.compress" : "optimizer.decompress");
    EXPECT_EQ(op.kernel, i == 0 ? "to_bfloat16" : "from_bfloat16");
    EXPECT_EQ(op.family, "stream");
    EXPECT_EQ(op.shape, n);
    EXPECT_DOUBLE_EQ(op.bytes, (4 + 2) * st.parameters);
    EXPECT_EQ(op.operands.back().tensor, "ws.grads_bf16");
  }
  EXPECT_EQ(st.optimizer.compute[2].name, "optimizer.update");
  EXPECT_EQ(st.optimizer.compute[3].name, "optimizer.zero_grad");
  // One rank: nothing to sum, nothing converted.
  c.dp = 1;
  c.global_batch /= 2;
  EXPECT_EQ(plan_step(c).stages.at(0).optimizer.compute.size(), 2u);
}

// Stale-synchronous dp: the same gradient sync, started on a copy of the gradients made
// after the update, which reads the copy of an earlier step.
TEST(TrainPlan, StaleDataParallelismCopiesTheGradientsAsideAfterTheUpdate) {
  auto c = small(2, 1, 1);
  c.bucket_bytes = 10000;
  const auto synchronous = plan_step(c);
  c.staleness = 1;
  const auto stale = plan_step(c);
  const auto& st = stale.stages.at(0);
  const auto& sync = synchronous.stages.at(0);
  ASSERT_EQ(st.dp_sync.size(), sync.dp_sync.size());
  for (std::size_t k = 0; k < st.dp_sync.size(); ++k) {
    EXPECT_EQ(st.dp_sync[k].name, sync.dp_sync[k].name);
    EXPECT_DOUBLE_EQ(st.dp_sync[k].bytes, sync.dp_sync[k].bytes);
  }
  ASSERT_EQ(st.optimizer.compute.size(), 3u);
  EXPECT_EQ(st.optimizer.compute[0].name, "optimizer.update");
  EXPECT_EQ(st.optimizer.compute[1].name, "optimizer.stale_copy");
  EXPECT_EQ(st.optimizer.compute[1].kernel, "stream_copy");
  EXPECT_EQ(st.optimizer.compute[1].shape, "n=" + std::to_string((long long)st.parameters));
  EXPECT_DOUBLE_EQ(st.optimizer.compute[1].bytes, 2 * 4 * st.parameters);
  EXPECT_EQ(st.optimizer.compute[2].name, "optimizer.zero_grad");
  // The update reads the copies, not this step's gradients; the sync reduces the copies.
  for (const auto& operand : st.optimizer.compute[0].operands) EXPECT_FALSE(operand.tensor.starts_with("g:")) << operand.tensor;
  for (const auto& operand : st.dp_sync_operands) EXPECT_TRUE(operand.tensor.starts_with("ws.stale.")) << operand.tensor;
  // The forward and backward are the synchronous step's.
  EXPECT_EQ(st.forward.compute.size(), sync.forward.compute.size());
  EXPECT_EQ(st.backward.compute.size(), sync.backward.compute.size());
}

// Mixed precision: each update becomes the gradients widened into float64, the update on
// the float64 master parameters and moments (costed in float64), and the master narrowed
// into the step's float32 parameters; with ZeRO-1 per block, the allgather in float32.
TEST(TrainPlan, MixedPrecisionUpdatesAFloat64MasterBetweenAWideningAndANarrowing) {
  for (int zero : {0, 1}) {
    auto c = small(2, 1, 1);
    c.bucket_bytes = 10000;
    c.zero = zero;
    const auto plain = plan_step(c);
    c.master = "float64";
    ASSERT_TRUE(c.mixed());
    const auto mixed = plan_step(c);
    const auto& st = mixed.stages.at(0);
    const auto& was = plain.stages.at(0);
    // The forward, backward and sync are the float32 step's.
    EXPECT_EQ(st.forward.compute.size(), was.forward.compute.size());
    ASSERT_EQ(st.dp_sync.size(), was.dp_sync.size());
    for (std::size_t k = 0; k < st.dp_sync.size(); ++k) EXPECT_DOUBLE_EQ(st.dp_sync[k].bytes, was.dp_sync[k].bytes);
    ASSERT_EQ(st.optimizer.comm.size(), was.optimizer.comm.size());
    for (std::size_t k = 0; k < st.optimizer.comm.size(); ++k)
      EXPECT_DOUBLE_EQ(st.optimizer.comm[k].bytes, was.optimizer.comm[k].bytes);
    // Every update of the float32 plan, three ops here.
    std::size_t at = 0;
    double elements = 0;
    for (const auto& update : was.optimizer.compute) {
      if (update.kernel != "adamw_update") {
        EXPECT_EQ(st.optimizer.compute.at(at++).name, update.name);
        continue;
      }
      const double n = update.bytes / (7 * 4);
      elements += n;
      const ComputeOp& widen = st.optimizer.compute.at(at++);
      const ComputeOp& master = st.optimizer.compute.at(at++);
      const ComputeOp& narrow = st.optimizer.compute.at(at++);
      EXPECT_EQ(widen.name, update.name + ".widen");
      EXPECT_EQ(widen.kernel, "to_float64");
      EXPECT_EQ(widen.family, "stream");
      EXPECT_DOUBLE_EQ(widen.bytes, n * (4 + 8));
      EXPECT_EQ(master.name, update.name);
      EXPECT_EQ(master.kernel, "adamw_update");
      EXPECT_EQ(master.dtype, "float64");
      EXPECT_EQ(master.shape, update.shape);
      EXPECT_DOUBLE_EQ(master.flops, update.flops);
      EXPECT_DOUBLE_EQ(master.bytes, 2 * update.bytes);
      EXPECT_EQ(narrow.name, update.name + ".narrow");
      EXPECT_EQ(narrow.kernel, "to_float32");
      EXPECT_DOUBLE_EQ(narrow.bytes, n * (8 + 4));
      EXPECT_TRUE(widen.dtype.empty() && narrow.dtype.empty());
      // The operands: the widening reads the gradients, the update the master's state,
      // the narrowing writes the step's parameters.
      for (const auto& o : master.operands) EXPECT_FALSE(o.tensor.starts_with("p:") || o.tensor.starts_with("g:")) << o.tensor;
      double master_bytes = 0;
      for (const auto& o : master.operands) master_bytes += o.bytes;
      // Master parameters, gradients, two moments (ZeRO's block holds up to dp - 1 padding elements).
      EXPECT_NEAR(master_bytes, 4 * 8 * n, 3 * 8 * (c.dp - 1));
      EXPECT_TRUE(std::any_of(widen.operands.begin(), widen.operands.end(), [](const Operand& o) { return o.tensor.starts_with("g:"); }));
      EXPECT_TRUE(std::any_of(narrow.operands.begin(), narrow.operands.end(), [](const Operand& o) { return o.tensor.starts_with("p:"); }));
    }
    EXPECT_EQ(at, st.optimizer.compute.size());
    EXPECT_NEAR(elements, zero == 1 ? st.parameters / 2 : st.parameters, double(st.dp_sync.size()));
    // The optimizer's state doubles in bytes and gains a master copy and its gradients.
    EXPECT_GT(step_working_set_bytes(mixed, 0), step_working_set_bytes(plain, 0));
  }
}

TEST(TrainConfig, MixedPrecisionNeedsAWiderMaster) {
  TrainConfig c;
  c.master = "float64";
  EXPECT_NO_THROW(c.validate());
  EXPECT_TRUE(c.mixed());
  c.master = "float32";  // the step's own: no copy
  EXPECT_NO_THROW(c.validate());
  EXPECT_FALSE(c.mixed());
  c.dtype = "float64";
  EXPECT_THROW(c.validate(), UsageError);  // narrower than the step's
  c.master = "float16";
  EXPECT_THROW(c.validate(), UsageError);
  EXPECT_EQ(parse_train_config("master=float64").master_dtype(), "float64");
  EXPECT_THROW(parse_train_config("master=float64,dtype=float64,master=bfloat16"), UsageError);
}

TEST(TrainPlan, LayersSplitOverStagesAndParametersAddUp) {
  for (int tp : {1, 2, 4})
    for (int pp : {1, 2, 3, 4}) {
      auto c = small(1, tp, pp);
      c.layers = 5;
      auto p = plan_step(c);
      ASSERT_EQ(int(p.stages.size()), pp);
      int next = 0;
      double params = 0;
      for (const auto& s : p.stages) {
        EXPECT_EQ(s.layers_first, next);
        EXPECT_GE(s.layers_count, c.layers / pp);
        EXPECT_LE(s.layers_count, c.layers / pp + 1);
        next += s.layers_count;
        params += s.parameters;
      }
      EXPECT_EQ(next, c.layers);
      // Per tp rank: its shard of the split tensors plus all replicated ones.
      EXPECT_DOUBLE_EQ(params, sharded_parameters(c) / tp + replicated_parameters(c)) << "tp " << tp << " pp " << pp;
    }
}

TEST(TrainPlan, GemmFlopsAreTwiceWeightsTimesTokensForwardAndDoubleBackward) {
  for (int tp : {1, 2}) {
    auto c = small(1, tp, 2);
    auto p = plan_step(c);
    const double T = double(c.micro_batch) * c.seq, H = c.hidden, V = c.vocab;
    const double weights = (c.layers * 12 * H * H + H * V) / tp;  // GEMM weights (the embedding is a lookup)
    double fwd = 0, bwd = 0;
    for (const auto& s : p.stages) {
      fwd += sum_flops(s.forward, "gemm");
      bwd += sum_flops(s.backward, "gemm");
    }
    EXPECT_DOUBLE_EQ(fwd, 2 * weights * T);
    EXPECT_DOUBLE_EQ(bwd, 2 * fwd);
    // Attention: QK^T and PV forward, four GEMMs backward (plus the softmax terms).
    double att_f = 0, att_b = 0;
    for (const auto& s : p.stages) {
      att_f += sum_flops(s.forward, "attention");
      att_b += sum_flops(s.backward, "attention");
    }
    const double bh = c.micro_batch * c.heads / tp, L = c.seq, D = H / c.heads;
    EXPECT_DOUBLE_EQ(att_f, c.layers * (4 * bh * L * L * D + 5 * bh * L * L));
    EXPECT_DOUBLE_EQ(att_b, c.layers * (8 * bh * L * L * D + 4 * bh * L * L));
  }
}

TEST(TrainPlan, MegatronAllreducesTwoPerLayerEachWay) {
  for (std::string dtype : {"float32", "float64"}) {
    auto c = small(1, 2, 2);
    c.dtype = dtype;
    const double s = dtype == "float64" ? 8 : 4, act = double(c.micro_batch) * c.seq * c.hidden * s;
    auto p = plan_step(c);
    for (const auto& st : p.stages) {
      for (int l = st.layers_first; l < st.layers_first + st.layers_count; ++l) {
        const std::string L = "layer" + std::to_string(l) + ".";
        std::vector<std::string> fwd, bwd;
        for (const auto& op : st.forward.comm)
          if (op.name.rfind(L, 0) == 0) fwd.push_back(op.name);
        for (const auto& op : st.backward.comm)
          if (op.name.rfind(L, 0) == 0) bwd.push_back(op.name);
        EXPECT_EQ(fwd, (std::vector<std::string>{L + "attn_out.tp_allreduce", L + "fc2.tp_allreduce"}));
        EXPECT_EQ(bwd, (std::vector<std::string>{L + "fc1.dgrad.tp_allreduce", L + "qkv.dgrad.tp_allreduce"}));
      }
      for (const Phase* ph : {&st.forward, &st.backward})
        for (const auto& op : ph->comm) {
          EXPECT_EQ(op.traffic, Traffic::tp);
          EXPECT_EQ(op.collective, "allreduce");
          EXPECT_EQ(op.ranks, 2);
          if (op.name.find(".ce_") == std::string::npos) {
            EXPECT_DOUBLE_EQ(op.bytes, act) << op.name;
          }
        }
    }
    // The vocabulary-parallel ends: embedding (1 forward), cross-entropy (2 forward), logits (1 backward).
    EXPECT_EQ(p.stages.front().forward.comm.front().name, "embedding.token.tp_allreduce");
    EXPECT_EQ(p.stages.back().forward.comm.back().name, "final.ce_sum.tp_allreduce");
    EXPECT_DOUBLE_EQ(p.stages.back().forward.comm.back().bytes, 2.0 * c.micro_batch * c.seq * s);
    EXPECT_EQ(p.stages.back().backward.comm.front().name, "final.logits.dgrad.tp_allreduce");
    // Without tp: no tp communication at all.
    for (const auto& st : plan_step(small(1, 1, 2)).stages) {
      EXPECT_TRUE(st.forward.comm.empty());
      EXPECT_TRUE(st.backward.comm.empty());
    }
  }
}

// A collective that serves an op follows it and is named after it; ZeRO-3's gathers and
// sequence parallelism's gathers of a layer's output gradient come right before their
// unit's first op. `after` says where each is issued, in order.
TEST(TrainPlan, CommOpsFollowTheComputeOpTheyAreNamedAfter) {
  for (int zero : {0, 3, -1}) {  // -1: sequence parallelism
    auto c = small(2, 2, 2);
    c.zero = std::max(zero, 0);
    c.sp = zero < 0;
    auto p = plan_step(c);
    std::size_t gathers = 0;
    for (const auto& st : p.stages)
      for (const Phase* ph : {&st.forward, &st.backward, &st.optimizer}) {
        std::size_t position = 0;  // compute ops issued before the collective
        for (const auto& op : ph->comm) {
          if (!op.after.empty()) {
            while (position < ph->compute.size() && ph->compute[position].name != op.after) ++position;
            ASSERT_LT(position, ph->compute.size()) << op.name << " after " << op.after << ": not in order";
            ++position;
          }
          const std::string base = op.name.substr(0, op.name.rfind('.'));
          const std::string before_unit = op.name.ends_with(".params.allgather") ? ".params.allgather"
                                          : op.name.ends_with(".dy.tp_allgather") ? ".dy.tp_allgather"
                                                                                  : "";
          if (!before_unit.empty()) {
            ++gathers;
            ASSERT_LT(position, ph->compute.size()) << op.name;
            const std::string unit = op.name.substr(0, op.name.size() - before_unit.size());
            EXPECT_EQ(ph->compute[position].name.rfind(unit + ".", 0), 0u) << op.name << " before "
                                                                          << ph->compute[position].name;
          } else {
            EXPECT_EQ(op.after, base) << op.name;
          }
        }
      }
    EXPECT_EQ(gathers > 0, zero != 0);
  }
}

// Sequence parallelism (Megatron's): each [T, H] allreduce over tp becomes a
// reduce-scatter into the ranks' T / tp tokens at the same place, and an allgather of
// the tokens comes before each GEMM that reads every token (after each norm forward; of
// the output gradient and the residual's in backward): per rank the bytes on the wire are
// those of the allreduces. The norms, residual adds and pipeline messages shrink by tp,
// the GEMMs do not; the replicated parameters' gradients are summed over tp once a step.
TEST(TrainPlan, SequenceParallelismTradesEachAllreduceForAReduceScatterAndAnAllgather) {
  const TrainConfig base = small(1, 2, 2);
  TrainConfig c = base;
  c.sp = true;
  const double s = 4, act = double(c.micro_batch) * c.seq * c.hidden * s, block = act / c.tp;
  const auto plain = plan_step(base), p = plan_step(c);
  double allreduced = 0, moved = 0, replicated = 0;
  for (std::size_t k = 0; k < p.stages.size(); ++k) {
    const StagePlan &b = plain.stages[k], &st = p.stages[k];
    std::map<std::string, std::string> reduce_after;  // where the plain plan allreduces a [T, H]
    for (const Phase* ph : {&b.forward, &b.backward})
      for (const auto& op : ph->comm)
        if (op.bytes == act) allreduced += op.bytes, reduce_after[op.after] = op.name;
    std::size_t scattered = 0;
    for (const Phase* ph : {&st.forward, &st.backward})
      for (const auto& op : ph->comm) {
        EXPECT_EQ(op.traffic, Traffic::tp);
        if (op.collective == "allreduce") {  // the cross-entropy's statistics only
          EXPECT_NE(op.name.find(".ce_"), std::string::npos) << op.name;
          continue;
        }
        EXPECT_DOUBLE_EQ(op.bytes, block) << op.name;
        moved += op.bytes * c.tp;
        if (op.collective == "reduce_scatter") {
          ++scattered;
          ASSERT_TRUE(reduce_after.count(op.after)) << op.name << " where the plain plan reduces nothing";
          EXPECT_EQ(op.name.substr(0, op.name.rfind('.')), reduce_after[op.after].substr(0, reduce_after[op.after].rfind('.')));
        } else {
          EXPECT_EQ(op.collective, "allgather") << op.name;
        }
      }
    EXPECT_EQ(scattered, reduce_after.size());
    for (int l = st.layers_first; l < st.layers_first + st.layers_count; ++l) {
      const std::string L = "layer" + std::to_string(l) + ".";
      std::vector<std::string> fwd, bwd;
      for (const auto& op : st.forward.comm)
        if (op.name.starts_with(L)) fwd.push_back(op.name);
      for (const auto& op : st.backward.comm)
        if (op.name.starts_with(L)) bwd.push_back(op.name);
      EXPECT_EQ(fwd, (std::vector<std::string>{L + "ln1.tp_allgather", L + "attn_out.tp_reduce_scatter",
                                                L + "ln2.tp_allgather", L + "fc2.tp_reduce_scatter"}));
      EXPECT_EQ(bwd, (std::vector<std::string>{L + "dy.tp_allgather", L + "fc1.dgrad.tp_reduce_scatter",
                                                L + "residual2.backward.tp_allgather", L + "qkv.dgrad.tp_reduce_scatter"}));
    }
    for (const Phase* ph : {&st.forward, &st.backward}) {
      const Phase& q = ph == &st.forward ? b.forward : b.backward;
      double norms = 0, plain_norms = 0;
      for (const auto& op : ph->compute) norms += op.kernel.starts_with("layernorm_") ? op.flops : 0;
      for (const auto& op : q.compute) plain_norms += op.kernel.starts_with("layernorm_") ? op.flops : 0;
      EXPECT_DOUBLE_EQ(norms, plain_norms / c.tp);
      EXPECT_DOUBLE_EQ(sum_flops(*ph, "gemm") + sum_flops(*ph, "vendor_gemm"),
                       sum_flops(q, "gemm") + sum_flops(q, "vendor_gemm"));
    }
    for (const CommOp* op : {&st.send_activation, &st.send_gradient}) {
      if (!op->name.empty()) {
        EXPECT_DOUBLE_EQ(op->bytes, block) << op->name;
      }
    }
    ASSERT_EQ(st.optimizer.comm.size(), 1u);
    EXPECT_EQ(st.optimizer.comm[0].name, "optimizer.sp_grads.tp_allreduce");
    EXPECT_EQ(st.optimizer.comm[0].after, "optimizer.sp_grads");  // the pack
    replicated += st.optimizer.comm[0].bytes / s;
  }
  EXPECT_DOUBLE_EQ(moved, 2 * allreduced);  // an allreduce moves twice what a reduce-scatter or an allgather does
  EXPECT_DOUBLE_EQ(replicated, replicated_parameters(c));
  EXPECT_LT(step_working_set_bytes(p, 0), step_working_set_bytes(plain, 0));
  EXPECT_TRUE(parse_train_config("tp=2,sp=1").sp);
  EXPECT_THROW(parse_train_config("sp=1"), sextant::UsageError);                           // no tp to split over
  EXPECT_THROW(parse_train_config("tp=2,sp=1,micro_batch=1,seq=15"), sextant::UsageError);  // 15 tokens over 2
  EXPECT_THROW(parse_train_config("dp=2,tp=2,sp=1,zero=1,global_batch=8"), sextant::UsageError);
}

// ZeRO-3: each unit (a layer; the head with the final norm; the embedding) is one bucket,
// gathered before its forward and again before its backward (the embedding's backward
// reads no parameter), its gradients reduce-scattered once, its block updated, and
// nothing gathered after the update.
TEST(TrainPlan, ZeroThreeGathersEachUnitBeforeEachUse) {
  auto c = small(2, 1, 2);
  c.zero = 3;
  const auto p = plan_step(c);
  for (const auto& st : p.stages) {
    const bool first = st.stage == 0, last = st.stage == c.pp - 1;
    const std::size_t units = st.layers_count + first + last;
    ASSERT_EQ(st.dp_sync.size(), units);
    std::map<std::string, double> block;  // unit -> bytes of a rank's block
    double padded = 0;
    for (const auto& op : st.dp_sync) {
      EXPECT_EQ(op.collective, "reduce_scatter");
      padded += op.bytes / 4 * c.dp;
    }
    EXPECT_GE(padded, st.parameters);
    EXPECT_LT(padded, st.parameters + double(c.dp) * units);
    std::size_t forward = 0, backward = 0;
    for (const auto& op : st.forward.comm) {
      EXPECT_EQ(op.collective, "allgather");
      EXPECT_EQ(op.traffic, Traffic::dp);
      block[op.name] = op.bytes;
      ++forward;
    }
    for (const auto& op : st.backward.comm) {
      ASSERT_TRUE(block.count(op.name)) << op.name << " is gathered in backward only";
      EXPECT_DOUBLE_EQ(op.bytes, block[op.name]);
      ++backward;
    }
    EXPECT_EQ(forward, units);
    EXPECT_EQ(backward, units - first);
    EXPECT_TRUE(st.optimizer.comm.empty());
    EXPECT_EQ(st.optimizer.compute.size(), units + 1);  // a block update per unit, then zero_grad
  }
  EXPECT_EQ(parse_train_config("zero1=1").zero, 1);
  EXPECT_EQ(parse_train_config("zero=3,dp=2,global_batch=4").zero, 3);
  EXPECT_THROW(parse_train_config("zero=2"), sextant::UsageError);
}

TEST(TrainPlan, PipelineMessagesAreOneActivation) {
  auto c = small(1, 1, 3);
  c.layers = 3;
  auto p = plan_step(c);
  const double act = double(c.micro_batch) * c.seq * c.hidden * 4;
  for (const auto& st : p.stages) {
    const bool first = st.stage == 0, last = st.stage == 2;
    EXPECT_EQ(st.send_activation.name.empty(), last);
    EXPECT_EQ(st.send_gradient.name.empty(), first);
    for (const CommOp* op : {&st.send_activation, &st.send_gradient}) {
      if (op->name.empty()) continue;
      EXPECT_EQ(op->collective, "pingpong");
      EXPECT_EQ(op->traffic, Traffic::pp);
      EXPECT_DOUBLE_EQ(op->bytes, act);
    }
  }
}

TEST(TrainPlan, DataParallelBucketsCoverTheGradients) {
  for (bool zero1 : {false, true}) {
    auto c = small(3, 1, 2);
    c.zero = zero1 ? 1 : 0;
    c.bucket_bytes = 10000;
    auto p = plan_step(c);
    for (const auto& st : p.stages) {
      ASSERT_FALSE(st.dp_sync.empty());
      double elements = 0;
      for (const auto& op : st.dp_sync) {
        EXPECT_EQ(op.traffic, Traffic::dp);
        EXPECT_EQ(op.ranks, 3);
        EXPECT_EQ(op.collective, zero1 ? "reduce_scatter" : "allreduce");
        elements += zero1 ? op.bytes / 4 * 3 : op.bytes / 4;
      }
      if (!zero1) {
        EXPECT_DOUBLE_EQ(elements, st.parameters);
        ASSERT_EQ(st.optimizer.compute.size(), 2u);
        EXPECT_EQ(st.optimizer.compute[0].kernel, "adamw_update");
        EXPECT_EQ(st.optimizer.compute[0].shape, "n=" + std::to_string((long long)st.parameters));
        EXPECT_TRUE(st.optimizer.comm.empty());
      } else {
        // Padded to a multiple of dp per bucket: at most dp - 1 extra each.
        EXPECT_GE(elements, st.parameters);
        EXPECT_LT(elements, st.parameters + 3.0 * st.dp_sync.size());
        ASSERT_EQ(st.optimizer.comm.size(), st.dp_sync.size());
        ASSERT_EQ(st.optimizer.compute.size(), st.dp_sync.size() + 1);
        for (std::size_t k = 0; k < st.dp_sync.size(); ++k) {
          EXPECT_EQ(st.optimizer.comm[k].collective, "allgather");
          EXPECT_DOUBLE_EQ(st.optimizer.comm[k].bytes, st.dp_sync[k].bytes);  // per-rank blocks
          EXPECT_EQ(st.optimizer.compute[k].shape, "n=" + std::to_string((long long)(st.dp_sync[k].bytes / 4)));
        }
      }
      EXPECT_EQ(st.optimizer.compute.back().name, "optimizer.zero_grad");
    }
    // No dp: no sync.
    for (const auto& st : plan_step(small(1, 1, 2)).stages) EXPECT_TRUE(st.dp_sync.empty());
  }
}

TEST(TrainPlan, BucketsHoldWholeParametersUpToTheBucketSize) {
  auto c = small(2, 1, 1);
  c.bucket_bytes = 5000;  // smaller than a 32 x 96 QKV weight (12 KiB): that one is alone
  auto p = plan_step(c);
  for (const auto& op : p.stages[0].dp_sync)
    if (op.bytes > c.bucket_bytes) {  // a QKV, fc1 or fc2 weight, the head or the token embedding, alone
      EXPECT_TRUE(op.bytes == 32 * 96 * 4 || op.bytes == 32 * 128 * 4 || op.bytes == 64 * 32 * 4) << op.bytes;
    }
}

// The operands the cache model walks (models/cache_state.hpp) name the proxy's buffers:
// every op has some; forward reads every parameter of the stage whole (the token
// embedding: the rows its tokens look up), backward accumulates into every gradient
// whole, each layer's forward writes its slot's output, and backward reads only what a
// forward of the same stage wrote, a workspace or a parameter.
TEST(TrainPlan, OperandsNameEveryParameterAndActivation) {
  TrainConfig sp = small(2, 2, 2);
  sp.sp = true;
  for (auto c : {small(1, 1, 1), small(2, 2, 2), small(2, 4, 1), sp}) {
    const auto plan = plan_step(c);
    const double s = 4;
    for (const auto& st : plan.stages) {
      std::map<std::string, double> read_forward, written_backward;
      std::set<std::string> forward_tensors;
      for (const auto& op : st.forward.compute) {
        ASSERT_FALSE(op.operands.empty()) << op.name;
        for (const auto& o : op.operands) {
          EXPECT_GT(o.bytes, 0) << op.name << " " << o.tensor;
          forward_tensors.insert(o.tensor);
          if (o.tensor.rfind("p:", 0) == 0) read_forward[o.tensor.substr(2)] = std::max(read_forward[o.tensor.substr(2)], o.bytes);
        }
      }
      for (const auto& op : st.backward.compute) {
        ASSERT_FALSE(op.operands.empty()) << op.name;
        for (const auto& o : op.operands) {
          const std::string& t = o.tensor;
          if (t.rfind("g:", 0) == 0) {
            written_backward[t.substr(2)] = std::max(written_backward[t.substr(2)], o.bytes);
          } else if (t.back() == '#' && t != "dx_send#") {
            EXPECT_TRUE(forward_tensors.count(t)) << op.name << " reads " << t << ", which no forward op wrote";
          }
        }
      }
      ASSERT_FALSE(st.optimizer.compute.empty());
      for (const auto& op : st.optimizer.compute) EXPECT_FALSE(op.operands.empty()) << op.name;
      // Every parameter whole in forward (layer-norm betas only in forward), its gradient
      // whole in backward.
      const int tokens = c.micro_batch * c.seq;
      for (const auto& g : st.dp_sync_operands) {
        const std::string param = g.tensor.substr(2);
        const double whole = g.bytes;
        if (param == "embedding.token")
          EXPECT_DOUBLE_EQ(read_forward[param], std::min<double>(tokens, c.vocab / c.tp + (c.tp > 1)) * c.hidden * s) << param;
        else
          EXPECT_DOUBLE_EQ(read_forward[param], whole) << param;
        EXPECT_DOUBLE_EQ(written_backward[param], whole) << param;
      }
      EXPECT_TRUE(forward_tensors.count("x" + std::to_string(st.layers_count) + "#")) << "stage output";
    }
  }
}

// Every op's counts equal its kernel's count functions evaluated at its shape, and for the
// registry's kernels its family and counts equal the registry's.
TEST(TrainPlan, CountsAreTheKernelsOwn) {
  namespace k = sextant::kernels;
  namespace t = sextant::train;
  TrainConfig sp = small(1, 2, 2);
  sp.sp = true;
  TrainConfig moe = small(4, 1, 2);
  moe.experts = 8, moe.top_k = 2, moe.ep = 4;
  for (auto c : {small(1, 1, 1), small(2, 2, 2), small(2, 4, 1), sp, moe}) {
    for (std::string dtype : {"float32", "float64"}) {
      c.dtype = dtype;
      c.zero = c.dp > 1 && c.experts == 0 ? 3 : 0;
      const double s = dtype == "float64" ? 8 : 4;
      const k::Dtype kd = dtype == "float64" ? k::Dtype::float64 : k::Dtype::float32;
      const auto plan = plan_step(c);
      for (const ComputeOp* op : all_compute(plan)) {
        auto d = parse(op->shape);
        double f = -1, b = -1;
        const std::string& kn = op->kernel;
        if (kn == "gemm") {
          f = k::gemm_flops(d["M"], d["N"], d["K"]);
          b = k::gemm_bytes(d["M"], d["N"], d["K"], s, 1, d.count("beta") && d["beta"] != 0);
        } else if (kn == "layernorm_forward") {
          f = k::layernorm_forward_flops(d["rows"], d["cols"]);
          b = k::layernorm_forward_bytes(d["rows"], d["cols"], s);
        } else if (kn == "layernorm_backward") {
          f = k::layernorm_backward_flops(d["rows"], d["cols"]);
          b = k::layernorm_backward_bytes(d["rows"], d["cols"], s);
        } else if (kn == "attention_forward") {
          f = k::attention_forward_flops(d["BH"], d["L"], d["L"], d["D"]);
          b = k::attention_forward_bytes(d["BH"], d["L"], d["L"], d["D"], s);
        } else if (kn == "attention_backward") {
          f = k::attention_backward_flops(d["BH"], d["L"], d["L"], d["D"]);
          b = k::attention_backward_bytes(d["BH"], d["L"], d["L"], d["D"], s);
        } else if (kn == "bias_gelu_forward") {
          f = k::bias_gelu_forward_flops(d["rows"], d["cols"]);
          b = k::bias_gelu_forward_bytes(d["rows"], d["cols"], s);
        } else if (kn == "bias_gelu_backward") {
          f = k::bias_gelu_backward_flops(d["rows"], d["cols"]);
          b = k::bias_gelu_backward_bytes(d["rows"], d["cols"], s);
        } else if (kn == "embedding_forward") {
          f = k::embedding_forward_flops(d["tokens"], d["dim"]);
          b = k::embedding_forward_bytes(d["tokens"], d["dim"], s, 4);
        } else if (kn == "embedding_backward") {
          f = k::embedding_backward_flops(d["tokens"], d["dim"]);
          b = k::embedding_backward_bytes(d["vocab"], d["tokens"], d["dim"], s, 4);
        } else if (kn == "stream_add") {
          f = k::stream_flops(k::StreamOp::add, d["n"]);
          b = k::stream_bytes(k::StreamOp::add, d["n"], s);
        } else if (kn == "stream_copy") {
          f = k::stream_flops(k::StreamOp::copy, d["n"]);
          b = k::stream_bytes(k::StreamOp::copy, d["n"], s);
        } else if (kn == "stream_triad") {
          f = k::stream_flops(k::StreamOp::triad, d["n"]);
          b = k::stream_bytes(k::StreamOp::triad, d["n"], s);
        } else if (kn == "adamw_update") {
          f = k::adamw_flops(d["n"]);
          b = k::adamw_bytes(d["n"], s);
        } else if (kn == "split_heads" || kn == "merge_heads") {
          f = 0;
          b = t::heads_permute_bytes(double(d["batch"]) * d["seq"] * d["groups"] * d["heads"] * d["dim"], s);
        } else if (kn == "cross_entropy_max") {
          f = t::cross_entropy_max_flops(d["rows"], d["cols"]);
          b = t::cross_entropy_max_bytes(d["rows"], d["cols"], s);
        } else if (kn == "cross_entropy_sum") {
          f = t::cross_entropy_sum_flops(d["rows"], d["cols"]);
          b = t::cross_entropy_sum_bytes(d["rows"], d["cols"], s);
        } else if (kn == "cross_entropy_backward") {
          f = t::cross_entropy_backward_flops(d["rows"], d["cols"]);
          b = t::cross_entropy_backward_bytes(d["rows"], d["cols"], s);
        } else if (kn == "softmax_forward") {
          f = k::softmax_forward_flops(d["rows"], d["cols"]);
          b = k::softmax_forward_bytes(d["rows"], d["cols"], s);
        } else if (kn == "softmax_backward") {
          f = k::softmax_backward_flops(d["rows"], d["cols"]);
          b = k::softmax_backward_bytes(d["rows"], d["cols"], s);
        } else if (kn == "moe_route") {
          f = 0;
          b = t::moe_route_bytes(d["tokens"], d["experts"], d["top_k"], double(d["experts"]) * d["capacity"], s);
        } else if (kn == "moe_dispatch") {
          f = 0;
          b = t::moe_dispatch_bytes(d["rows"], d["dim"], s);
        } else if (kn == "moe_combine") {
          f = t::moe_combine_flops(d["tokens"], d["top_k"], d["dim"]);
          b = t::moe_combine_bytes(d["tokens"], d["top_k"], d["dim"], s);
        } else if (kn == "moe_combine_backward") {
          f = t::moe_combine_backward_flops(d["rows"], d["dim"]);
          b = t::moe_combine_backward_bytes(d["rows"], d["dim"], s);
        } else if (kn == "moe_gate_backward") {
          f = t::moe_gate_backward_flops(d["tokens"], d["top_k"], d["dim"]);
          b = t::moe_gate_backward_bytes(d["tokens"], d["top_k"], d["experts"], d["dim"], s);
        } else if (kn == "moe_dispatch_backward") {
          f = t::moe_dispatch_backward_flops(d["tokens"], d["top_k"], d["dim"]);
          b = t::moe_dispatch_backward_bytes(d["tokens"], d["top_k"], d["dim"], s);
        } else if (kn == "moe_regroup") {
          f = 0;
          b = t::moe_regroup_bytes(double(d["ranks"]) * d["experts"] * d["rows"], d["dim"], s);
        } else if (kn == "fill") {
          f = 0;
          b = d["n"] * s;
        } else {
          ADD_FAILURE() << op->name << ": unknown kernel " << kn;
          continue;
        }
        EXPECT_DOUBLE_EQ(op->flops, f) << op->name;
        EXPECT_DOUBLE_EQ(op->bytes, b) << op->name;
        EXPECT_EQ(op->family, t::family_of(kn)) << op->name;

        if (const k::KernelInfo* info = k::find_kernel(kn)) {
          EXPECT_EQ(op->family, info->family) << op->name;
          k::Shape shape;
          for (const auto& p : info->params) {
            ASSERT_TRUE(d.count(p)) << op->name << " lacks the registry parameter " << p;
            shape.dims.push_back({p, d[p]});
          }
          EXPECT_DOUBLE_EQ(op->flops, info->flops(shape, kd)) << op->name;
          // The registry's GEMM does not read C (beta = 0); accumulating ones do.
          const double c_read = kn == "gemm" && d.count("beta") ? double(d["M"]) * d["N"] * s : 0;
          EXPECT_DOUBLE_EQ(op->bytes, info->bytes(shape, kd) + c_read) << op->name;
        }
      }
    }
  }
}

// Recomputation adds to the backward exactly what the forward did not keep: under full,
// each layer's forward ops again (named <layer>.recompute.<op>, TP allreduces included)
// before the layer's backward; under selective, one attention forward per layer right
// before its attention backward. The forward is unchanged, and so is everything else.
TEST(TrainPlan, RecomputationRunsTheForwardAgainInTheBackward) {
  const TrainConfig plain = small(1, 2, 2);
  for (Recompute r : {Recompute::selective, Recompute::full}) {
    TrainConfig c = plain;
    c.recompute = r;
    const auto base = plan_step(plain), p = plan_step(c);
    for (std::size_t s = 0; s < p.stages.size(); ++s) {
      const StagePlan &b = base.stages[s], &st = p.stages[s];
      ASSERT_EQ(st.forward.compute.size(), b.forward.compute.size());
      for (std::size_t i = 0; i < st.forward.compute.size(); ++i)
        EXPECT_EQ(st.forward.compute[i].name, b.forward.compute[i].name);
      double layer_forward_flops = 0, attention_flops = 0, extra_flops = 0;
      std::size_t layer_forward_ops = 0, layer_forward_comm = 0;
      for (const auto& op : b.forward.compute)
        if (op.name.rfind("layer", 0) == 0) {
          layer_forward_flops += op.flops, ++layer_forward_ops;
          if (op.kernel == "attention_forward") attention_flops += op.flops;
        }
      for (const auto& op : b.forward.comm) layer_forward_comm += op.name.rfind("layer", 0) == 0;
      std::size_t recomputed = 0;
      for (const auto& op : st.backward.compute) {
        if (op.name.find(".recompute.") == std::string::npos) continue;
        ++recomputed;
        extra_flops += op.flops;
        if (r == Recompute::selective) {
          EXPECT_EQ(op.kernel, "attention_forward") << op.name;
        }
      }
      if (r == Recompute::full) {
        EXPECT_EQ(recomputed, layer_forward_ops);
        EXPECT_DOUBLE_EQ(extra_flops, layer_forward_flops);
        EXPECT_EQ(st.backward.comm.size(), b.backward.comm.size() + layer_forward_comm);
        // Each layer's recomputation comes right before that layer's first backward op.
        for (std::size_t i = 1; i < st.backward.compute.size(); ++i) {
          const auto& op = st.backward.compute[i];
          if (op.name.size() > 10 && op.name.compare(op.name.size() - 10, 10, ".fc2.wgrad") == 0) {
            EXPECT_EQ(st.backward.compute[i - 1].name,
                      op.name.substr(0, op.name.size() - 9) + "recompute.residual2");
          }
        }
      } else {
        EXPECT_EQ(recomputed, std::size_t(st.layers_count));
        EXPECT_DOUBLE_EQ(extra_flops, attention_flops);
        EXPECT_EQ(st.backward.comm.size(), b.backward.comm.size());
      }
      EXPECT_EQ(st.backward.compute.size(), b.backward.compute.size() + recomputed);
    }
  }
  // Under full recomputation a micro-batch in flight keeps its layers' inputs only.
  TrainConfig full = plain;
  full.recompute = Recompute::full;
  EXPECT_LT(step_working_set_bytes(plan_step(full), 0), step_working_set_bytes(plan_step(plain), 0));
  EXPECT_EQ(parse_train_config("recompute=selective").recompute, Recompute::selective);
  EXPECT_THROW(parse_train_config("recompute=some"), sextant::UsageError);
}

// Mixture of experts: the parameters are the model's (experts spread over ep, the router
// replicated), the experts' GEMMs cost what a dense MLP of their rows would, the four
// all-to-alls per layer (dispatch and combine, each way) carry each rank's rows for
// another's experts, and with ep the experts' gradients stay out of the dp sync.
TEST(TrainPlan, ExpertsSplitOverEpAndTheirTokensMoveByAllToAll) {
  for (int ep : {1, 2, 4})
    for (int top_k : {1, 2}) {
      auto c = small(ep == 1 ? 2 : ep);  // ep is 1 or dp
      c.experts = 8;
      c.top_k = top_k;
      c.ep = ep;
      const auto p = plan_step(c);
      const auto& st = p.stages.at(0);
      const double H = c.hidden, E = c.experts, T = double(c.micro_batch) * c.seq;
      const double C = std::ceil(c.capacity * top_k * T / E);
      EXPECT_EQ(c.expert_capacity(), int(C));
      // Every layer: the router, ln1, ln2, qkv, attn_out, and its E / ep experts.
      const double dense = sharded_parameters(c) - c.layers * (8 * H * H + 4 * H) + replicated_parameters(c);
      const double expert = 8 * H * H + 4 * H;
      EXPECT_DOUBLE_EQ(st.parameters, dense + c.layers * (H * E + E / ep * expert)) << "ep " << ep;
      // The experts' GEMMs: each of the rank's experts on ep C rows, 2 x 8 H^2 FLOPs a row forward.
      double expert_flops = 0;
      for (const auto& op : st.forward.compute)
        if (op.name.find(".expert") != std::string::npos && op.family == "gemm") expert_flops += op.flops;
      EXPECT_DOUBLE_EQ(expert_flops, c.layers * (E / ep) * (ep * C) * 2 * 8 * H * H);
      std::size_t alltoalls = 0;
      for (const Phase* ph : {&st.forward, &st.backward})
        for (const auto& op : ph->comm) {
          if (op.collective != "alltoall") continue;
          ++alltoalls;
          EXPECT_EQ(op.traffic, Traffic::ep);
          EXPECT_EQ(op.ranks, ep);
          EXPECT_DOUBLE_EQ(op.bytes, E / ep * C * H * 4);  // to each peer: its experts' rows
        }
      EXPECT_EQ(alltoalls, ep > 1 ? 4u * c.layers : 0u);
      // The dp sync: everything but the rank's own experts.
      double synced = 0;
      for (const auto& op : st.dp_sync) synced += op.bytes / 4;
      EXPECT_DOUBLE_EQ(synced, ep > 1 ? st.parameters - c.layers * (E / ep) * expert : st.parameters);
      for (const auto& g : st.dp_sync_operands) EXPECT_EQ(ep > 1 && expert_parameter(g.tensor.substr(2)), false) << g.tensor;
    }
}

TEST(TrainConfig, RefusesExpertLayoutsThatDoNotDivide) {
  auto refused = [](std::string text) {
    try {
      parse_train_config(text);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused("experts=6,dp=4,ep=4,global_batch=32").find("not a multiple of --ep"), std::string::npos);
  EXPECT_NE(refused("experts=4,dp=4,ep=2,global_batch=32").find("use 1 or --dp"), std::string::npos);
  EXPECT_NE(refused("dp=2,ep=2").find("needs --experts"), std::string::npos);
  EXPECT_NE(refused("experts=4,top_k=5").find("--top-k 5"), std::string::npos);
  EXPECT_NE(refused("experts=4,tp=2").find("not split over tp"), std::string::npos);
  EXPECT_NE(refused("experts=4,capacity=0").find("capacity"), std::string::npos);
  EXPECT_NE(refused("experts=4,dp=2,ep=2,zero=1").find("not offered"), std::string::npos);
  EXPECT_EQ(refused("experts=4,dp=2,ep=2,top_k=2"), "accepted");
}
