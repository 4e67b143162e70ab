// The exact decomposition of one training step of the transformer proxy (suites/train).
//
// Conventions the proxy and the step predictor share (docs/train-suite.md):
// - ComputeOp::kernel is the kernel that runs, as the kernel registry
//   (kernels/registry.hpp) names it: gemm, attention_forward, layernorm_backward,
//   bias_gelu_forward, embedding_backward, stream_add, stream_triad (SGD), adamw_update.
//   Kernels the registry does not have are the proxy's own (suites/train/ops.hpp):
//   split_heads, merge_heads, cross_entropy_max, cross_entropy_sum,
//   cross_entropy_backward, fill (zeroing the gradients).
// - ComputeOp::family is the registry's family of that kernel (gemm, attention,
//   normalization, activation, embedding, stream, optimizer): the key of the compute
//   model's operator models. The proxy's own kernels take the family of the measured
//   kernels closest to them: the head permutes and fill are pure data movement (stream),
//   the cross-entropy passes are row-wise softmax reductions (normalization).
// - ComputeOp::shape is "key=value,..." with the registry's parameter names in its
//   order; a GEMM that accumulates into its output (weight gradients over micro-batches)
//   adds ",beta=1", and its bytes count the read of C (gemm_bytes(beta_nonzero)).
// - A CommOp of a phase is issued right after the compute op its `after` names; a
//   collective that serves an op is named after it ("layer3.attn_out.tp_allreduce"
//   follows "layer3.attn_out"), ZeRO-3's gathers after their unit
//   ("layer3.params.allgather", before layer3's first op).
//
// The FLOP and byte formulas are kernels/counts.hpp's (plain arithmetic, no Kokkos): the
// functions the kernels and the proxy count with; tests/train checks what the proxy
// executes against this plan.
#include "models/train_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"
#include "kernels/counts.hpp"

namespace sextant::model {

namespace {

// The counts are kernels/counts.hpp's, the same functions the kernels use.
using kernels::StreamOp;
constexpr double index_bytes = 4;  // token indices are int32, as the registry's embedding

// ---- shapes -----------------------------------------------------------------------------

std::string kv(std::initializer_list<std::pair<const char*, long long>> dims) {
  std::string out;
  for (const auto& [k, v] : dims) {
    if (!out.empty()) out += ',';
    out += k;
    out += '=';
    out += std::to_string(v);
  }
  return out;
}

// The sizes one stage of one tensor-parallel rank works with.
struct Dims {
  long long b, S, H, T;   // micro-batch, sequence, hidden, tokens per micro-batch
  long long Tl;           // tokens of the norms and residual adds per rank: T / tp with sp, else T
  bool sp;                // sequence parallelism (TrainConfig::sp)
  long long Hl, Al, D;    // hidden, heads per tp rank, head dimension
  long long Fl;           // MLP width per tp rank (4 H / tp)
  long long V, Vl, Vrows; // vocabulary, its shard, rows of the local embedding table
  long long tp, dp;
  double s;               // bytes per scalar
  const char* gemm;       // the GEMM kernel of the dense path
  Recompute recompute;
  long long E, El, k, C, ep;  // MoE: experts, the rank's share, choices per token, rows per expert; ranks
};

Dims dims_of(const TrainConfig& c) {
  Dims d{};
  d.b = c.micro_batch;
  d.S = c.seq;
  d.H = c.hidden;
  d.T = d.b * d.S;
  d.sp = c.sp;
  d.Tl = c.sp ? d.T / c.tp : d.T;
  d.tp = c.tp;
  d.dp = c.dp;
  d.Hl = c.hidden / c.tp;
  d.Al = c.heads / c.tp;
  d.D = c.hidden / c.heads;
  d.Fl = 4LL * c.hidden / c.tp;
  d.V = c.vocab;
  d.Vl = c.vocab / c.tp;
  // Vocabulary-parallel embedding: tokens of other shards look up one extra zero row.
  d.Vrows = d.Vl + (c.tp > 1 ? 1 : 0);
  d.s = c.dtype == "float64" ? 8 : 4;
  d.gemm = c.dense == DensePath::vendor ? "vendor_gemm" : "gemm";
  d.recompute = c.recompute;
  d.E = c.experts;
  d.ep = c.ep;
  d.El = c.experts / c.ep;
  d.k = c.top_k;
  d.C = c.experts > 0 ? c.expert_capacity() : 0;
  return d;
}

// Builds one phase's op lists with the naming conventions above; operands as
// (tensor, elements), the tensor names the proxy's buffers (Operand in the header).
using Tensors = std::initializer_list<std::pair<std::string, double>>;

class PhaseBuilder {
 public:
  PhaseBuilder(Phase& phase, const Dims& d) : p_(phase), d_(d) {}

  void op(std::string name, const std::string& kernel, std::string shape, double flops, double bytes, Tensors operands) {
    ComputeOp o{std::move(name), std::string(kernels::family_of(kernel)), std::move(shape), flops, bytes, kernel, {}};
    for (const auto& [tensor, elements] : operands) o.operands.push_back({tensor, elements * d_.s});
    p_.compute.push_back(std::move(o));
  }
  // C[M,N] (+)= op(A) op(B): forward (no transposes), input gradient (B transposed) or
  // weight gradient (A transposed, accumulated over micro-batches).
  void gemm(const std::string& name, long long M, long long N, long long K, bool ta, bool tb, bool accumulate,
            const std::string& a, const std::string& b, const std::string& c) {
    std::string shape = kv({{"M", M}, {"N", N}, {"K", K}, {"ta", ta}, {"tb", tb}});
    if (accumulate) shape += ",beta=1";
    op(name, d_.gemm, shape, kernels::gemm_flops(M, N, K), kernels::gemm_bytes(M, N, K, d_.s, 1, accumulate),
       {{a, double(M) * K}, {b, double(K) * N}, {c, double(M) * N}});
  }
  // c = a + b on n elements (c may be a).
  void add(const std::string& name, long long n, const std::string& c, const std::string& a, const std::string& b) {
    const double e = double(n);
    if (c == a)
      op(name, "stream_add", kv({{"n", n}}), kernels::stream_flops(StreamOp::add, n), kernels::stream_bytes(StreamOp::add, n, d_.s),
         {{a, e}, {b, e}});
    else
      op(name, "stream_add", kv({{"n", n}}), kernels::stream_flops(StreamOp::add, n), kernels::stream_bytes(StreamOp::add, n, d_.s),
         {{a, e}, {b, e}, {c, e}});
  }
  // y = layernorm(x) with its row statistics (forward); dx and the gamma/beta gradients
  // into the scratch that an add then accumulates into dgb (backward).
  void layernorm_forward(const std::string& name, const std::string& x, const std::string& gamma,
                         const std::string& beta, const std::string& y, const std::string& stats) {
    const double T = double(d_.Tl), H = double(d_.H);
    op(name, "layernorm_forward", kv({{"rows", d_.Tl}, {"cols", d_.H}}), kernels::layernorm_forward_flops(d_.Tl, d_.H),
       kernels::layernorm_forward_bytes(d_.Tl, d_.H, d_.s),
       {{x, T * H}, {gamma, H}, {beta, H}, {y, T * H}, {stats + ".mean#", T}, {stats + ".rstd#", T}});
  }
  void layernorm_backward(const std::string& name, const std::string& dy, const std::string& x, const std::string& gamma,
                          const std::string& stats, const std::string& dx) {
    const double T = double(d_.Tl), H = double(d_.H);
    op(name, "layernorm_backward", kv({{"rows", d_.Tl}, {"cols", d_.H}}), kernels::layernorm_backward_flops(d_.Tl, d_.H),
       kernels::layernorm_backward_bytes(d_.Tl, d_.H, d_.s),
       {{dy, T * H}, {x, T * H}, {gamma, H}, {stats + ".mean#", T}, {stats + ".rstd#", T}, {dx, T * H}, {"ws.ln_scratch", 2 * H}});
  }
  // Between [tokens, groups * heads * dim] and groups x [batch * heads, seq, dim].
  void heads(const std::string& name, const char* family, long long groups, const std::string& from, const std::string& to) {
    const double e = double(d_.T) * groups * d_.Hl;
    op(name, family, kv({{"batch", d_.b}, {"seq", d_.S}, {"groups", groups}, {"heads", d_.Al}, {"dim", d_.D}}), 0,
       kernels::heads_permute_bytes(e, d_.s), {{from, e}, {to, e}});
  }
  // A layer norm's gamma and beta gradients (one adjacent buffer in the proxy) += the
  // scratch its backward wrote.
  void norm_grad_add(const std::string& name, const std::string& norm) {
    const double H = double(d_.H);
    op(name, "stream_add", kv({{"n", 2 * d_.H}}), kernels::stream_flops(StreamOp::add, 2 * d_.H),
       kernels::stream_bytes(StreamOp::add, 2 * d_.H, d_.s), {{norm + ".gamma", H}, {norm + ".beta", H}, {"ws.ln_scratch", 2 * H}});
  }
  // Allreduce of a tensor-parallel partial sum (Megatron's g forward, f backward; the
  // cross-entropy's statistics).
  void tp_allreduce(const std::string& after, double elements) {
    if (d_.tp == 1) return;
    comm({after + ".tp_allreduce", Traffic::tp, "allreduce", elements * d_.s, int(d_.tp)});
  }
  // A partial sum [T, H] over tp: allreduced, or with sequence parallelism
  // reduce-scattered into each rank's T / tp tokens (the collective's size unit: a
  // rank's block).
  void tp_sum(const std::string& after) {
    if (!d_.sp) return tp_allreduce(after, double(d_.T) * d_.H);
    comm({after + ".tp_reduce_scatter", Traffic::tp, "reduce_scatter", double(d_.Tl) * d_.H * d_.s, int(d_.tp)});
  }
  // Sequence parallelism: every rank's T / tp tokens [T / tp, H] gathered into [T, H].
  void tp_gather(const std::string& name) {
    if (!d_.sp) return;
    comm({name + ".tp_allgather", Traffic::tp, "allgather", double(d_.Tl) * d_.H * d_.s, int(d_.tp)});
  }
  // ZeRO-3: the unit's parameters gathered over dp before its ops (block: this rank's
  // share, the allgather's size unit).
  void gather_params(const std::string& unit, double block_elements) {
    if (block_elements <= 0) return;
    comm({unit + ".params.allgather", Traffic::dp, "allgather", block_elements * d_.s, int(d_.dp)});
  }
  void comm(CommOp op) {
    op.after = p_.compute.empty() ? "" : p_.compute.back().name;
    op.back_to_back = !p_.comm.empty() && p_.comm.back().after == op.after;
    p_.comm.push_back(std::move(op));
  }

 private:
  Phase& p_;
  const Dims& d_;
};

// Layer l's input is the slot's x<l>, its output x<l+1> (the stage's own layer index).
std::string slot_x(int local_layer) { return "x" + std::to_string(local_layer) + "#"; }

// Where the forward leaves activation `name` of layer L for the backward: the
// micro-batch's slot, or, where it is recomputed, a workspace every layer and
// micro-batch shares (the proxy's buffers; Recompute in the header).
std::string activation(const Dims& d, const std::string& L, const std::string& name) {
  const bool recomputed = d.recompute == Recompute::full || (d.recompute == Recompute::selective && name == "P");
  return recomputed ? "ws.recompute." + name : L + name + "#";
}

// The attention kernel's forward: P and the output from q, k, v.
void attention_forward(PhaseBuilder& f, const Dims& d, const std::string& name, const std::string& L) {
  const double T = double(d.T);
  f.op(name, "attention_forward", kv({{"BH", d.b * d.Al}, {"L", d.S}, {"D", d.D}}),
       kernels::attention_forward_flops(d.b * d.Al, d.S, d.S, d.D), kernels::attention_forward_bytes(d.b * d.Al, d.S, d.S, d.D, d.s),
       {{activation(d, L, "qkvh"), 3 * T * d.Hl}, {activation(d, L, "P"), double(d.b * d.Al) * d.S * d.S}, {"ws.o", T * d.Hl}});
}

// ---- mixture of experts (TrainConfig::experts) -------------------------------------------
// Expert j of this rank (of E / ep) in layer L: its parameters and activations.
std::string expert(const std::string& L, long long j) { return L + "expert" + std::to_string(j) + "."; }

// The expert rows' tensors: [E, C, H] on the tokens' side, in the order the all-to-all
// moves them; the experts' side reads them grouped by expert ([E / ep][ep][C], regrouped
// where ep > 1 and the rank holds several experts).
bool regrouped(const Dims& d) { return d.ep > 1 && d.El > 1; }

// The all-to-all of the expert rows [E, C, H]: each rank's E / ep experts' block to its
// rank (the benchmark's unit: the bytes to each peer).
void expert_alltoall(PhaseBuilder& b, const Dims& d, const std::string& name) {
  if (d.ep == 1) return;
  b.comm({name + ".ep_alltoall", Traffic::ep, "alltoall", double(d.El * d.C * d.H) * d.s, int(d.ep)});
}
void regroup(PhaseBuilder& b, const Dims& d, const std::string& name, const std::string& from, const std::string& to) {
  if (!regrouped(d)) return;
  const double r = double(d.E * d.C);
  b.op(name, "moe_regroup", kv({{"ranks", d.ep}, {"experts", d.El}, {"rows", d.C}, {"dim", d.H}}), 0,
       kernels::moe_regroup_bytes(r, d.H, d.s), {{from, r * d.H}, {to, r * d.H}});
}

// The MoE MLP's forward: from the norm's output a2 to ws.proj (the residual adds it).
void moe_forward(PhaseBuilder& f, const Dims& d, const std::string& L, const std::string& N) {
  const std::string P = "p:" + L;
  auto act = [&](const std::string& name) { return activation(d, L, name.c_str()); };
  const double T = double(d.T), E = double(d.E), R = double(d.E * d.C), H = double(d.H), F = double(d.Fl);
  const double ints = 4 / d.s;  // an int32 index in scalars (operands count elements of s bytes)
  f.gemm(N + "router", d.T, d.E, d.H, false, false, false, act("a2"), P + "router.weight", act("probs"));
  f.op(N + "router.softmax", "softmax_forward", kv({{"rows", d.T}, {"cols", d.E}}), kernels::softmax_forward_flops(T, E),
       kernels::softmax_forward_bytes(T, E, d.s), {{act("probs"), T * E}});
  f.op(N + "moe.route", "moe_route", kv({{"tokens", d.T}, {"experts", d.E}, {"top_k", d.k}, {"capacity", d.C}}), 0,
       kernels::moe_route_bytes(T, E, d.k, R, d.s),
       {{act("probs"), T * E}, {"ws.moe_choice", T * d.k * ints}, {act("moe.rows"), T * d.k * ints}, {act("moe.tokens"), R * ints}});
  // The rows go straight where they are used next: without ep into the experts' input
  // (kept for backward), with ep through the all-to-all (and the regroup, if any).
  const std::string sent = d.ep > 1 ? "ws.moe_send" : act("moe.x");
  f.op(N + "moe.dispatch", "moe_dispatch", kv({{"rows", d.E * d.C}, {"dim", d.H}}), 0, kernels::moe_dispatch_bytes(R, H, d.s),
       {{act("a2"), R * H}, {act("moe.tokens"), R * ints}, {sent, R * H}});
  expert_alltoall(f, d, N + "moe.dispatch");
  regroup(f, d, N + "moe.regroup", "ws.moe_recv", act("moe.x"));
  const long long rows = d.ep * d.C;  // an expert's rows: C from every rank
  const std::string y = d.ep > 1 ? "ws.moe_y" : act("moe.out");
  for (long long j = 0; j < d.El; ++j) {
    const std::string X = expert(L, j), XN = expert(N, j), XP = "p:" + X;
    auto xact = [&](const char* name) { return activation(d, X, name); };
    f.gemm(XN + "fc1", rows, d.Fl, d.H, false, false, false, act("moe.x"), XP + "fc1.weight", xact("h"));
    f.op(XN + "gelu", "bias_gelu_forward", kv({{"rows", rows}, {"cols", d.Fl}}), kernels::bias_gelu_forward_flops(rows, d.Fl),
         kernels::bias_gelu_forward_bytes(rows, d.Fl, d.s),
         {{xact("h"), double(rows) * F}, {XP + "fc1.bias", F}, {xact("gact"), double(rows) * F}});
    f.gemm(XN + "fc2", rows, d.H, d.Fl, false, false, false, xact("gact"), XP + "fc2.weight", y);
  }
  regroup(f, d, N + "moe.regroup.back", "ws.moe_y", "ws.moe_send");
  expert_alltoall(f, d, N + "moe.combine");
  f.op(N + "moe.combine", "moe_combine", kv({{"tokens", d.T}, {"top_k", d.k}, {"dim", d.H}}), kernels::moe_combine_flops(T, d.k, H),
       kernels::moe_combine_bytes(T, d.k, H, d.s),
       {{act("moe.out"), T * d.k * H}, {act("moe.rows"), T * d.k * ints}, {act("probs"), T * d.k}, {"ws.proj", T * H}});
}

// Its backward: from the gradient at the layer's output (dy) to ws.da, the norm's.
void moe_backward(PhaseBuilder& g, const Dims& d, const std::string& L, const std::string& dy) {
  const std::string P = "p:" + L, G = "g:" + L;
  auto act = [&](const std::string& name) { return activation(d, L, name.c_str()); };
  const double T = double(d.T), E = double(d.E), R = double(d.E * d.C), H = double(d.H), F = double(d.Fl);
  const double ints = 4 / d.s;
  // The output rows' gradient goes where the experts read it, as the forward's rows did.
  const std::string dout = d.ep > 1 ? "ws.moe_send" : "ws.moe_dy";
  g.op(L + "moe.combine.backward", "moe_combine_backward", kv({{"rows", d.E * d.C}, {"dim", d.H}}),
       kernels::moe_combine_backward_flops(R, H), kernels::moe_combine_backward_bytes(R, H, d.s),
       {{dy, R * H}, {act("moe.tokens"), R * ints}, {act("probs"), R}, {dout, R * H}});
  g.op(L + "moe.gate.backward", "moe_gate_backward", kv({{"tokens", d.T}, {"experts", d.E}, {"top_k", d.k}, {"dim", d.H}}),
       kernels::moe_gate_backward_flops(T, d.k, H), kernels::moe_gate_backward_bytes(T, d.k, E, H, d.s),
       {{dy, T * H}, {act("moe.out"), T * d.k * H}, {act("moe.rows"), T * d.k * ints}, {"ws.dprobs", T * E}});
  expert_alltoall(g, d, L + "moe.combine.backward");
  regroup(g, d, L + "moe.regroup.backward", "ws.moe_recv", "ws.moe_dy");
  const long long rows = d.ep * d.C;
  const std::string dx = regrouped(d) ? "ws.moe_y" : d.ep > 1 ? "ws.moe_send" : "ws.moe_dx";
  for (long long j = d.El - 1; j >= 0; --j) {
    const std::string X = expert(L, j), XP = "p:" + X, XG = "g:" + X;
    auto xact = [&](const char* name) { return activation(d, X, name); };
    g.gemm(X + "fc2.wgrad", d.Fl, d.H, rows, true, false, true, xact("gact"), "ws.moe_dy", XG + "fc2.weight");
    g.gemm(X + "fc2.dgrad", rows, d.Fl, d.H, false, true, false, "ws.moe_dy", XP + "fc2.weight", "ws.dg");
    g.op(X + "gelu.backward", "bias_gelu_backward", kv({{"rows", rows}, {"cols", d.Fl}}),
         kernels::bias_gelu_backward_flops(rows, d.Fl), kernels::bias_gelu_backward_bytes(rows, d.Fl, d.s),
         {{"ws.dg", double(rows) * F}, {xact("h"), double(rows) * F}, {XP + "fc1.bias", F}, {"ws.b1_scratch", F}});
    g.add(X + "gelu.grad_add", d.Fl, XG + "fc1.bias", XG + "fc1.bias", "ws.b1_scratch");
    g.gemm(X + "fc1.wgrad", d.H, d.Fl, rows, true, false, true, act("moe.x"), "ws.dg", XG + "fc1.weight");
    g.gemm(X + "fc1.dgrad", rows, d.H, d.Fl, false, true, false, "ws.dg", XP + "fc1.weight", dx);
  }
  regroup(g, d, L + "moe.regroup.back.backward", "ws.moe_y", "ws.moe_send");
  expert_alltoall(g, d, L + "moe.dispatch.backward");
  const std::string dx_rows = d.ep > 1 ? "ws.moe_recv" : "ws.moe_dx";
  g.op(L + "moe.dispatch.backward", "moe_dispatch_backward", kv({{"tokens", d.T}, {"top_k", d.k}, {"dim", d.H}}),
       kernels::moe_dispatch_backward_flops(T, d.k, H), kernels::moe_dispatch_backward_bytes(T, d.k, H, d.s),
       {{dx_rows, T * d.k * H}, {act("moe.rows"), T * d.k * ints}, {"ws.da", T * H}});
  g.op(L + "router.softmax.backward", "softmax_backward", kv({{"rows", d.T}, {"cols", d.E}}),
       kernels::softmax_backward_flops(T, E), kernels::softmax_backward_bytes(T, E, d.s), {{act("probs"), T * E}, {"ws.dprobs", T * E}});
  g.gemm(L + "router.wgrad", d.H, d.E, d.T, true, false, true, act("a2"), "ws.dprobs", G + "router.weight");
  g.gemm(L + "router.dgrad", d.T, d.H, d.E, false, true, true, "ws.dprobs", P + "router.weight", "ws.da");
}

// Layer L's forward from x to y; its ops named N... (L..., or L...recompute. when the
// backward runs it again).
void layer_forward(PhaseBuilder& f, const Dims& d, const std::string& L, const std::string& N, const std::string& x,
                   const std::string& y) {
  const std::string P = "p:" + L;
  const double T = double(d.T);
  auto act = [&](const char* name) { return activation(d, L, name); };
  f.layernorm_forward(N + "ln1", x, P + "ln1.gamma", P + "ln1.beta", act("a1"), L + "ln1");
  f.tp_gather(N + "ln1");
  f.gemm(N + "qkv", d.T, 3 * d.Hl, d.H, false, false, false, act("a1"), P + "qkv.weight", "ws.qkv");
  f.heads(N + "split_heads", "split_heads", 3, "ws.qkv", act("qkvh"));
  attention_forward(f, d, N + "attention", L);
  f.heads(N + "merge_heads", "merge_heads", 1, "ws.o", act("om"));
  f.gemm(N + "attn_out", d.T, d.H, d.Hl, false, false, false, act("om"), P + "attn_out.weight", "ws.proj");
  f.tp_sum(N + "attn_out");
  f.add(N + "residual1", d.Tl * d.H, act("x1"), x, "ws.proj");
  f.layernorm_forward(N + "ln2", act("x1"), P + "ln2.gamma", P + "ln2.beta", act("a2"), L + "ln2");
  f.tp_gather(N + "ln2");
  if (d.E > 0) {
    moe_forward(f, d, L, N);
  } else {
    f.gemm(N + "fc1", d.T, d.Fl, d.H, false, false, false, act("a2"), P + "fc1.weight", act("h"));
    f.op(N + "gelu", "bias_gelu_forward", kv({{"rows", d.T}, {"cols", d.Fl}}), kernels::bias_gelu_forward_flops(d.T, d.Fl),
         kernels::bias_gelu_forward_bytes(d.T, d.Fl, d.s), {{act("h"), T * d.Fl}, {P + "fc1.bias", double(d.Fl)}, {act("gact"), T * d.Fl}});
    f.gemm(N + "fc2", d.T, d.H, d.Fl, false, false, false, act("gact"), P + "fc2.weight", "ws.proj");
    f.tp_sum(N + "fc2");
  }
  f.add(N + "residual2", d.Tl * d.H, y, act("x1"), "ws.proj");
}

// dy: the gradient arriving at the layer's output, dx: the one it sends to its input.
void layer_backward(PhaseBuilder& g, const Dims& d, const std::string& L, int local, const std::string& dy,
                    const std::string& dx) {
  const std::string x = slot_x(local), P = "p:" + L, G = "g:" + L, R = L + "recompute.";
  const double T = double(d.T);
  auto act = [&](const char* name) { return activation(d, L, name); };
  // Full recomputation: the layer's forward again from its input (the output it writes
  // again is a workspace: the next layer's input is still the slot's).
  if (d.recompute == Recompute::full) layer_forward(g, d, L, R, x, "ws.recompute.y");
  // Sequence parallelism: the GEMMs take every rank's tokens of a gradient (gathered
  // into a workspace), the norms and adds this rank's.
  const std::string dy_all = d.sp ? "ws.dy_all" : dy, dx1_all = d.sp ? "ws.dx1_all" : "ws.dx1";
  if (d.E > 0) {
    moe_backward(g, d, L, dy);
  } else {
    g.tp_gather(L + "dy");
    g.gemm(L + "fc2.wgrad", d.Fl, d.H, d.T, true, false, true, act("gact"), dy_all, G + "fc2.weight");
    g.gemm(L + "fc2.dgrad", d.T, d.Fl, d.H, false, true, false, dy_all, P + "fc2.weight", "ws.dg");
    g.op(L + "gelu.backward", "bias_gelu_backward", kv({{"rows", d.T}, {"cols", d.Fl}}),
         kernels::bias_gelu_backward_flops(d.T, d.Fl), kernels::bias_gelu_backward_bytes(d.T, d.Fl, d.s),
         {{"ws.dg", T * d.Fl}, {act("h"), T * d.Fl}, {P + "fc1.bias", double(d.Fl)}, {"ws.b1_scratch", double(d.Fl)}});
    g.add(L + "gelu.grad_add", d.Fl, G + "fc1.bias", G + "fc1.bias", "ws.b1_scratch");
    g.gemm(L + "fc1.wgrad", d.H, d.Fl, d.T, true, false, true, act("a2"), "ws.dg", G + "fc1.weight");
    g.gemm(L + "fc1.dgrad", d.T, d.H, d.Fl, false, true, false, "ws.dg", P + "fc1.weight", "ws.da");
    g.tp_sum(L + "fc1.dgrad");
  }
  g.layernorm_backward(L + "ln2.backward", "ws.da", act("x1"), P + "ln2.gamma", L + "ln2", "ws.dxln");
  g.norm_grad_add(L + "ln2.grad_add", G + "ln2");
  g.add(L + "residual2.backward", d.Tl * d.H, "ws.dx1", dy, "ws.dxln");
  g.tp_gather(L + "residual2.backward");
  g.gemm(L + "attn_out.wgrad", d.Hl, d.H, d.T, true, false, true, act("om"), dx1_all, G + "attn_out.weight");
  g.gemm(L + "attn_out.dgrad", d.T, d.Hl, d.H, false, true, false, dx1_all, P + "attn_out.weight", "ws.dom");
  g.heads(L + "merge_heads.backward", "split_heads", 1, "ws.dom", "ws.do");
  // Selective recomputation: the attention probabilities again, right before their use.
  if (d.recompute == Recompute::selective) attention_forward(g, d, R + "attention", L);
  g.op(L + "attention.backward", "attention_backward", kv({{"BH", d.b * d.Al}, {"L", d.S}, {"D", d.D}}),
       kernels::attention_backward_flops(d.b * d.Al, d.S, d.S, d.D), kernels::attention_backward_bytes(d.b * d.Al, d.S, d.S, d.D, d.s),
       {{act("qkvh"), 3 * T * d.Hl}, {act("P"), double(d.b * d.Al) * d.S * d.S}, {"ws.do", T * d.Hl},
        {"ws.dP", double(d.b * d.Al) * d.S * d.S}, {"ws.dqkvh", 3 * T * d.Hl}});
  g.heads(L + "split_heads.backward", "merge_heads", 3, "ws.dqkvh", "ws.dqkv");
  g.gemm(L + "qkv.wgrad", d.H, 3 * d.Hl, d.T, true, false, true, act("a1"), "ws.dqkv", G + "qkv.weight");
  g.gemm(L + "qkv.dgrad", d.T, d.H, 3 * d.Hl, false, true, false, "ws.dqkv", P + "qkv.weight", "ws.da");
  g.tp_sum(L + "qkv.dgrad");
  g.layernorm_backward(L + "ln1.backward", "ws.da", x, P + "ln1.gamma", L + "ln1", "ws.dxln");
  g.norm_grad_add(L + "ln1.grad_add", G + "ln1");
  g.add(L + "residual1.backward", d.Tl * d.H, dx, "ws.dx1", "ws.dxln");
}

// This stage's parameters on one tp rank, in the order their gradients become final in
// backward (the flat gradient buffer's order, so buckets are contiguous ranges of it).
std::vector<std::pair<std::string, double>> stage_parameters(const Dims& d, int first_layer, int layers, bool first,
                                                             bool last) {
  std::vector<std::pair<std::string, double>> p;
  if (last) {
    p.push_back({"head.weight", double(d.H) * d.Vl});
    p.push_back({"final.ln.gamma", double(d.H)});
    p.push_back({"final.ln.beta", double(d.H)});
  }
  for (int l = first_layer + layers - 1; l >= first_layer; --l) {
    const std::string L = "layer" + std::to_string(l) + ".";
    if (d.E > 0) {
      p.push_back({L + "router.weight", double(d.H) * d.E});
    } else {
      p.push_back({L + "fc2.weight", double(d.Fl) * d.H});
      p.push_back({L + "fc1.bias", double(d.Fl)});
      p.push_back({L + "fc1.weight", double(d.H) * d.Fl});
    }
    p.push_back({L + "ln2.gamma", double(d.H)});
    p.push_back({L + "ln2.beta", double(d.H)});
    p.push_back({L + "attn_out.weight", double(d.Hl) * d.H});
    p.push_back({L + "qkv.weight", double(d.H) * 3 * d.Hl});
    p.push_back({L + "ln1.gamma", double(d.H)});
    p.push_back({L + "ln1.beta", double(d.H)});
  }
  if (first) {
    p.push_back({"embedding.position", double(d.S) * d.H});
    p.push_back({"embedding.token", double(d.Vl) * d.H});
  }
  // The rank's experts last: their gradients are final only when the backward ends (the
  // dp sync's prefix order, GradientSink, does not cover them), and with ep they are the
  // rank's own (no dp sync).
  for (int l = first_layer + layers - 1; l >= first_layer; --l)
    for (long long j = d.El - 1; j >= 0; --j) {
      const std::string X = expert("layer" + std::to_string(l) + ".", j);
      p.push_back({X + "fc2.weight", double(d.Fl) * d.H});
      p.push_back({X + "fc1.bias", double(d.Fl)});
      p.push_back({X + "fc1.weight", double(d.H) * d.Fl});
    }
  return p;
}

// Buckets: consecutive whole parameters up to bucket_bytes (a larger parameter is a
// bucket of its own), or with ZeRO-3 one per parameter unit; sharded (ZeRO), each is
// padded to a multiple of dp elements so that every rank owns an equal block.
struct Bucket {
  std::vector<std::pair<std::string, double>> params;  // name, elements
  double elements = 0;                                 // padded
};
std::vector<Bucket> buckets_of(const std::vector<std::pair<std::string, double>>& params, double bucket_bytes, double s,
                               long long pad_to, bool by_unit) {
  std::vector<Bucket> out;
  double current = 0;
  for (const auto& [name, n] : params) {
    const bool full = by_unit ? !out.empty() && param_unit(out.back().params.back().first) != param_unit(name)
                              : current > 0 && (current + n) * s > bucket_bytes;
    if (out.empty() || full) {
      out.emplace_back();
      current = 0;
    }
    out.back().params.push_back({name, n});
    current += n;
    out.back().elements = current;
  }
  for (auto& b : out) b.elements = double((static_cast<long long>(b.elements) + pad_to - 1) / pad_to * pad_to);
  return out;
}

}  // namespace

bool replicated_over_tp(const std::string& parameter) {
  auto ends_with = [&](const char* tail) { return parameter.ends_with(tail); };
  return ends_with(".gamma") || ends_with(".beta") || parameter == "embedding.position";
}

bool expert_parameter(const std::string& parameter) {
  const auto dot = parameter.find('.');
  return dot != std::string::npos && parameter.compare(dot + 1, 6, "expert") == 0;
}

std::string param_unit(const std::string& parameter) {
  const std::string unit = parameter.substr(0, parameter.find('.'));
  return unit == "head" ? "final" : unit;
}

const char* to_string(Traffic t) {
  switch (t) {
    case Traffic::tp: return "tp";
    case Traffic::dp: return "dp";
    case Traffic::pp: return "pp";
    case Traffic::ep: return "ep";
  }
  return "?";
}

const char* to_string(DensePath p) { return p == DensePath::vendor ? "vendor" : "portable"; }

const char* to_string(Recompute r) {
  return r == Recompute::full ? "full" : r == Recompute::selective ? "selective" : "none";
}

const char* to_string(Compression c) { return c == Compression::bf16 ? "bf16" : "none"; }

DensePath parse_dense_path(const std::string& name) {
  if (name == "portable") return DensePath::portable;
  if (name == "vendor") return DensePath::vendor;
  throw UsageError("dense path '" + name + "': use portable or vendor");
}

int TrainConfig::expert_capacity() const {
  const double tokens = double(micro_batch) * seq;
  const double rows = std::ceil(capacity * top_k * tokens / std::max(1, experts));
  return static_cast<int>(std::clamp(rows, 1.0, tokens));
}

int TrainConfig::micro_batches() const {
  const long long per_step = static_cast<long long>(micro_batch) * dp;
  return per_step > 0 ? static_cast<int>(global_batch / per_step) : 0;
}

namespace {
constexpr TrainConfigKey config_keys[] = {
    {"layers", "transformer layers", false},
    {"hidden", "hidden size", false},
    {"heads", "attention heads", false},
    {"seq", "sequence length", false},
    {"vocab", "vocabulary size", false},
    {"micro_batch", "sequences per micro-batch", false},
    {"global_batch", "sequences per step (micro-batch x micro-batches x dp)", false},
    {"dp", "data-parallel ranks", false},
    {"tp", "tensor-parallel ranks", false},
    {"pp", "pipeline stages", false},
    {"schedule", "pipeline schedule: gpipe | 1f1b", false},
    {"optimizer", "sgd | adamw", false},
    {"zero", "ZeRO stage over dp: 0 | 1 (optimizer state sharded) | 3 (FSDP: parameters too, gathered per layer)",
     false},
    {"zero1", "same as zero=1", true},
    {"overlap", "overlap the dp gradient sync with backward", true},
    {"sp", "sequence parallelism beside tp: norms and residuals on T / tp tokens, reduce-scatter + allgather for "
           "each allreduce", true},
    {"staleness", "stale-synchronous dp: each step applies the gradients of this many steps before, their allreduce "
                  "hidden behind the steps between (0: synchronous)", false},
    {"compress", "dp gradients on the wire: none | bf16 (converted to bfloat16 for their allreduce)", false},
    {"experts", "mixture of experts: every layer's MLP as this many experts behind a router (0: dense MLP)", false},
    {"top_k", "experts each token goes to", false},
    {"capacity", "expert capacity factor: an expert takes at most capacity x top_k x tokens / experts of a "
                 "micro-batch's tokens", false},
    {"ep", "expert-parallel ranks: 1 (every rank holds every expert) or dp (each holds experts / dp, tokens sent "
           "by all-to-all)", false},
    {"bucket_bytes", "dp gradient bucket size in bytes", false},
    {"dtype", "float32 | float64", false},
    {"master", "mixed precision: the optimizer's parameters and moments in float64 beside --dtype float32 (default: "
               "dtype's, no copy)", false},
    {"dense", "GEMMs by: portable (Kokkos kernels) | vendor (BLAS via Kokkos Kernels)", false},
    {"recompute", "activation recomputation: none | selective (attention probabilities) | full (each layer from its input)",
     false},
};
}  // namespace

std::span<const TrainConfigKey> train_config_keys() { return config_keys; }

void set_train_config_key(TrainConfig& c, const std::string& key, const std::string& value) {
  auto number = [&] {
    if (auto v = parse_number(value)) return *v;
    throw UsageError("" + key + "='" + value + "' is not a number");
  };
  auto integer = [&] {
    const double v = number();
    if (v != std::floor(v) || v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      throw UsageError("" + key + "='" + value + "' is not an integer in int's range");
    return static_cast<int>(v);
  };
  if (key == "layers") c.layers = integer();
  else if (key == "hidden") c.hidden = integer();
  else if (key == "heads") c.heads = integer();
  else if (key == "seq") c.seq = integer();
  else if (key == "vocab") c.vocab = integer();
  else if (key == "micro_batch") c.micro_batch = integer();
  else if (key == "global_batch") c.global_batch = integer();
  else if (key == "dp") c.dp = integer();
  else if (key == "tp") c.tp = integer();
  else if (key == "pp") c.pp = integer();
  else if (key == "bucket_bytes") c.bucket_bytes = number();
  else if (key == "zero") c.zero = integer();
  else if (key == "zero1") c.zero = integer() != 0 ? 1 : 0;
  else if (key == "overlap") c.overlap_dp = integer() != 0;
  else if (key == "sp") c.sp = integer() != 0;
  else if (key == "staleness") c.staleness = integer();
  else if (key == "experts") c.experts = integer();
  else if (key == "top_k") c.top_k = integer();
  else if (key == "capacity") c.capacity = number();
  else if (key == "ep") c.ep = integer();
  else if (key == "dtype") c.dtype = value;
  else if (key == "master") c.master = value;
  else if (key == "dense") c.dense = parse_dense_path(value);
  else if (key == "compress") {
    if (value == "none") c.compress = Compression::none;
    else if (value == "bf16") c.compress = Compression::bf16;
    else throw UsageError("compress='" + value + "' (use none or bf16)");
  }
  else if (key == "recompute") {
    if (value == "none") c.recompute = Recompute::none;
    else if (value == "selective") c.recompute = Recompute::selective;
    else if (value == "full") c.recompute = Recompute::full;
    else throw UsageError("recompute='" + value + "' (use none, selective or full)");
  }
  else if (key == "schedule") {
    if (value == "gpipe") c.schedule = Schedule::gpipe;
    else if (value == "1f1b") c.schedule = Schedule::one_f_one_b;
    else throw UsageError("schedule='" + value + "' (use gpipe or 1f1b)");
  } else if (key == "optimizer") {
    if (value == "sgd") c.optimizer = Optimizer::sgd;
    else if (value == "adamw") c.optimizer = Optimizer::adamw;
    else throw UsageError("optimizer='" + value + "' (use sgd or adamw)");
  } else {
    std::string known;
    for (const auto& k : config_keys) known += (known.empty() ? "" : ", ") + std::string(k.name);
    throw UsageError("unknown key '" + key + "' (" + known + ")");
  }
}

TrainConfig parse_train_config(const std::string& text) {
  TrainConfig c;
  for (const auto& item : split_list(text)) {
    auto eq = item.find('=');
    if (eq == std::string::npos) throw UsageError("--train: '" + item + "' is not key=value");
    try {
      set_train_config_key(c, item.substr(0, eq), item.substr(eq + 1));
    } catch (const UsageError& e) {
      throw UsageError(std::string("--train: ") + e.what());
    }
  }
  c.validate();
  return c;
}

void TrainConfig::validate() const {
  auto positive = [](const char* option, long long v) {
    if (v < 1) throw UsageError(std::string(option) + " " + std::to_string(v) + ": must be >= 1");
  };
  positive("--layers", layers);
  positive("--hidden", hidden);
  positive("--heads", heads);
  positive("--seq", seq);
  positive("--vocab", vocab);
  positive("--micro-batch", micro_batch);
  positive("--global-batch", global_batch);
  positive("--dp", dp);
  positive("--tp", tp);
  positive("--pp", pp);
  if (layers > max_train_layers)
    throw UsageError("--layers " + std::to_string(layers) + ": at most " + std::to_string(max_train_layers) +
                     " (the step plan lists every layer's operators; see max_train_layers)");
  if (hidden % heads != 0)
    throw UsageError("--hidden " + std::to_string(hidden) + " is not a multiple of --heads " + std::to_string(heads));
  if (heads % tp != 0)
    throw UsageError("--heads " + std::to_string(heads) + " is not a multiple of --tp " + std::to_string(tp) +
                     " (tensor parallelism splits attention heads)");
  if (vocab % tp != 0)
    throw UsageError("--vocab " + std::to_string(vocab) + " is not a multiple of --tp " + std::to_string(tp) +
                     " (the embedding and the logits are split over the vocabulary)");
  if (layers < pp)
    throw UsageError("--layers " + std::to_string(layers) + " < --pp " + std::to_string(pp) +
                     ": every pipeline stage needs at least one layer");
  if (global_batch % (static_cast<long long>(micro_batch) * dp) != 0)
    throw UsageError("--global-batch " + std::to_string(global_batch) + " is not a multiple of --micro-batch " +
                     std::to_string(micro_batch) + " x --dp " + std::to_string(dp));
  if (dtype != "float32" && dtype != "float64")
    throw UsageError("--dtype '" + dtype + "': use float32 or float64");
  if (master_dtype() != "float32" && master_dtype() != "float64")
    throw UsageError("--master '" + master + "': use float64 beside --dtype float32 (mixed precision)");
  if (dtype == "float64" && master_dtype() == "float32")
    throw UsageError("--master float32 with --dtype float64: the master copy must be at least as wide as the step's "
                     "parameters");
  if (zero != 0 && zero != 1 && zero != 3)
    throw UsageError("--zero " + std::to_string(zero) + ": use 0, 1 or 3 (ZeRO-2's traffic is ZeRO-1's; the proxy "
                     "accumulates unsharded gradients over micro-batches, so 2 would be 1 under another name)");
  if (sp && tp == 1) throw UsageError("--sp: sequence parallelism splits the tokens over tp ranks: needs --tp > 1");
  if (sp && (static_cast<long long>(micro_batch) * seq) % tp != 0)
    throw UsageError("--sp: --micro-batch " + std::to_string(micro_batch) + " x --seq " + std::to_string(seq) +
                     " tokens are not a multiple of --tp " + std::to_string(tp));
  if (sp && zero >= 1 && dp > 1)
    throw UsageError("--sp with --zero " + std::to_string(zero) +
                     ": not offered (ZeRO's sync leaves each rank a block of the gradients, in which the norms' "
                     "gradients differ in count between dp ranks, so one tp allreduce cannot sum them)");
  if (staleness < 0 || staleness > max_train_staleness)
    throw UsageError("--staleness " + std::to_string(staleness) + ": use 0 (synchronous) to " +
                     std::to_string(max_train_staleness) + " (each step of delay keeps another copy of the gradients)");
  if (staleness > 0 && zero != 0)
    throw UsageError("--staleness with --zero " + std::to_string(zero) +
                     ": not offered (ZeRO's update needs this step's reduced gradients block by block)");
  if (staleness > 0 && overlap_dp)
    throw UsageError("--staleness with --overlap: the stale gradients' allreduce already runs behind the next steps");
  if (compress != Compression::none && (zero != 0 || overlap_dp || staleness > 0))
    throw UsageError(std::string("--compress ") + to_string(compress) + " with " +
                     (zero != 0 ? "--zero " + std::to_string(zero) : overlap_dp ? std::string("--overlap") : std::string("--staleness")) +
                     ": not offered (the compressed sync runs in the optimizer step, on a converted copy of the whole "
                     "gradient; that sync reduces the gradients in place, bucket by bucket)");
  if (experts < 0) throw UsageError("--experts " + std::to_string(experts) + ": must be >= 0 (0: a dense MLP)");
  if (experts > 0) {
    if (top_k < 1 || top_k > experts)
      throw UsageError("--top-k " + std::to_string(top_k) + ": use 1 to --experts " + std::to_string(experts));
    if (!(capacity > 0) || !std::isfinite(capacity))
      throw UsageError("--capacity " + std::to_string(capacity) + ": the capacity factor must be > 0");
    if (tp > 1)
      throw UsageError("--experts with --tp " + std::to_string(tp) +
                       ": not offered (the experts are not split over tp ranks; spread them with --ep over dp)");
    if (zero == 3)
      throw UsageError("--experts with --zero 3: not offered (a layer's experts come last in the flat buffer, apart "
                       "from the layer's other parameters, so one gather per layer cannot fetch them)");
  }
  if (ep < 1) throw UsageError("--ep " + std::to_string(ep) + ": must be >= 1");
  if (ep > 1) {
    if (experts == 0) throw UsageError("--ep " + std::to_string(ep) + ": expert parallelism needs --experts");
    if (ep != dp)
      throw UsageError("--ep " + std::to_string(ep) + ": use 1 or --dp " + std::to_string(dp) +
                       " (the experts are spread over the whole dp group)");
    if (experts % ep != 0)
      throw UsageError("--experts " + std::to_string(experts) + " is not a multiple of --ep " + std::to_string(ep));
    if (zero != 0 || staleness > 0 || compress != Compression::none)
      throw UsageError("--ep " + std::to_string(ep) + " with " +
                       (zero != 0 ? "--zero " + std::to_string(zero) : staleness > 0 ? std::string("--staleness") : std::string("--compress")) +
                       ": not offered (these syncs and updates cover the whole flat gradient buffer; with ep the "
                       "rank's experts are its own and must stay out of them)");
  }
  if (!(bucket_bytes > 0)) throw UsageError("--bucket-bytes " + std::to_string(bucket_bytes) + ": must be > 0");
}

StepPlan plan_step(const TrainConfig& config) {
  config.validate();
  const Dims d = dims_of(config);
  StepPlan plan;
  plan.config = config;
  const int pp = config.pp;
  int next_layer = 0;
  for (int s = 0; s < pp; ++s) {
    StagePlan st;
    st.stage = s;
    // Layers split evenly; the first layers % pp stages take one more.
    st.layers_first = next_layer;
    st.layers_count = config.layers / pp + (s < config.layers % pp ? 1 : 0);
    next_layer += st.layers_count;
    const bool first = s == 0, last = s == pp - 1;

    // The parameters, their buckets and, with ZeRO-3, each unit's block: what a rank
    // gathers before the unit's ops.
    auto params = stage_parameters(d, st.layers_first, st.layers_count, first, last);
    const bool sharded = config.zero >= 1 && config.dp > 1, by_unit = sharded && config.zero == 3;
    // With ep the rank's experts are its own: no bucket holds them.
    std::vector<std::pair<std::string, double>> synced, own;
    for (const auto& p : params) (config.ep > 1 && expert_parameter(p.first) ? own : synced).push_back(p);
    const auto buckets = buckets_of(synced, config.bucket_bytes, d.s, sharded ? config.dp : 1, by_unit);
    auto gather = [&](PhaseBuilder& b, const std::string& unit) {
      if (!by_unit) return;
      for (const auto& bucket : buckets)
        if (param_unit(bucket.params.front().first) == unit) b.gather_params(unit, bucket.elements / config.dp);
    };

    // Forward of one micro-batch.
    PhaseBuilder f(st.forward, d);
    const double T = double(d.T), H = double(d.H);
    if (first) {
      gather(f, "embedding");
      f.op("embedding.token", "embedding_forward", kv({{"vocab", d.Vrows}, {"tokens", d.T}, {"dim", d.H}}), 0,
           kernels::embedding_forward_bytes(d.T, d.H, d.s, index_bytes),
           {{"p:embedding.token", double(std::min(d.T, d.Vrows)) * d.H}, {"ws.emb_tok", T * H}});
      f.tp_sum("embedding.token");
      // With sequence parallelism, the positions of this rank's tokens only.
      const double Tl = double(d.Tl);
      f.op("embedding.position", "embedding_forward", kv({{"vocab", d.S}, {"tokens", d.Tl}, {"dim", d.H}}), 0,
           kernels::embedding_forward_bytes(d.Tl, d.H, d.s, index_bytes),
           {{"p:embedding.position", double(std::min(d.S, d.Tl)) * d.H}, {"ws.emb_pos", Tl * H}});
      f.add("embedding.add", d.Tl * d.H, slot_x(0), "ws.emb_tok", "ws.emb_pos");
    }
    for (int l = st.layers_first; l < st.layers_first + st.layers_count; ++l) {
      const std::string L = "layer" + std::to_string(l) + ".";
      gather(f, "layer" + std::to_string(l));
      layer_forward(f, d, L, L, slot_x(l - st.layers_first), slot_x(l - st.layers_first + 1));
    }
    const std::string x_out = slot_x(st.layers_count);
    if (last) {
      gather(f, "final");
      f.layernorm_forward("final.ln", x_out, "p:final.ln.gamma", "p:final.ln.beta", "final.af#", "final.ln");
      f.tp_gather("final.ln");
      f.gemm("final.logits", d.T, d.Vl, d.H, false, false, false, "final.af#", "p:head.weight", "final.logits#");
      f.op("final.ce_max", "cross_entropy_max", kv({{"rows", d.T}, {"cols", d.Vl}}),
           kernels::cross_entropy_max_flops(d.T, d.Vl), kernels::cross_entropy_max_bytes(d.T, d.Vl, d.s),
           {{"final.logits#", T * d.Vl}, {"final.ce_max#", T}});
      f.tp_allreduce("final.ce_max", T);
      f.op("final.ce_sum", "cross_entropy_sum", kv({{"rows", d.T}, {"cols", d.Vl}}),
           kernels::cross_entropy_sum_flops(d.T, d.Vl), kernels::cross_entropy_sum_bytes(d.T, d.Vl, d.s),
           {{"final.logits#", T * d.Vl}, {"final.ce_max#", T}, {"final.ce_stats#", 2 * T}});
      f.tp_allreduce("final.ce_sum", 2.0 * d.T);
    }

    // Backward of one micro-batch, in reverse. The gradient flowing back alternates
    // between two workspaces; the first layer's goes to the embedding's (first stage) or
    // to the slot's buffer sent to the previous stage.
    PhaseBuilder g(st.backward, d);
    if (last) {
      gather(g, "final");
      g.op("final.ce_backward", "cross_entropy_backward", kv({{"rows", d.T}, {"cols", d.Vl}}),
           kernels::cross_entropy_backward_flops(d.T, d.Vl), kernels::cross_entropy_backward_bytes(d.T, d.Vl, d.s),
           {{"final.logits#", T * d.Vl}, {"final.ce_max#", T}, {"final.ce_stats#", 2 * T}});
      g.gemm("final.logits.wgrad", d.H, d.Vl, d.T, true, false, true, "final.af#", "final.logits#", "g:head.weight");
      g.gemm("final.logits.dgrad", d.T, d.H, d.Vl, false, true, false, "final.logits#", "p:head.weight", "ws.da");
      g.tp_sum("final.logits.dgrad");
      g.layernorm_backward("final.ln.backward", "ws.da", x_out, "p:final.ln.gamma", "final.ln", "ws.gA");
      g.norm_grad_add("final.ln.grad_add", "g:final.ln");
    }
    std::string dy = "ws.gA", spare = "ws.gB";
    for (int l = st.layers_first + st.layers_count - 1; l >= st.layers_first; --l) {
      const int local = l - st.layers_first;
      const std::string dx = local > 0 ? spare : (first ? "ws.demb" : "dx_send#");
      gather(g, "layer" + std::to_string(l));  // the embedding's backward reads no parameter
      layer_backward(g, d, "layer" + std::to_string(l) + ".", local, dy, dx);
      spare = dy;
      dy = dx;
    }
    if (first) {
      // Sequence parallelism: the positions from this rank's tokens, the token table from
      // everyone's (gathered).
      g.op("embedding.position.backward", "embedding_backward", kv({{"vocab", d.S}, {"tokens", d.Tl}, {"dim", d.H}}),
           kernels::embedding_backward_flops(d.Tl, d.H), kernels::embedding_backward_bytes(d.S, d.Tl, d.H, d.s, index_bytes),
           {{"ws.demb", double(d.Tl) * H}, {"ws.pos_scratch", double(d.S) * d.H}});
      g.add("embedding.position.grad_add", d.S * d.H, "g:embedding.position", "g:embedding.position", "ws.pos_scratch");
      g.tp_gather("embedding.dy");
      g.op("embedding.token.backward", "embedding_backward", kv({{"vocab", d.Vrows}, {"tokens", d.T}, {"dim", d.H}}),
           kernels::embedding_backward_flops(d.T, d.H), kernels::embedding_backward_bytes(d.Vrows, d.T, d.H, d.s, index_bytes),
           {{d.sp ? "ws.dy_all" : "ws.demb", T * H}, {"ws.tok_scratch", double(d.Vrows) * d.H}});
      g.add("embedding.token.grad_add", d.Vl * d.H, "g:embedding.token", "g:embedding.token", "ws.tok_scratch");
    }

    // Pipeline: activations forward, their gradients backward, [T, H] per micro-batch
    // ([T / tp, H] with sequence parallelism: each tp rank sends its tokens).
    const double act_bytes = double(d.Tl) * d.H * d.s;
    if (!last) st.send_activation = {"stage" + std::to_string(s) + ".send_activation", Traffic::pp, "pingpong", act_bytes, 2};
    if (!first) st.send_gradient = {"stage" + std::to_string(s) + ".send_gradient", Traffic::pp, "pingpong", act_bytes, 2};
    if (!first) st.receive_activation = {{slot_x(0), act_bytes}};
    if (!last) st.receive_gradient = {{"ws.gA", act_bytes}};

    // Gradient sync over dp and the optimizer step.
    for (const auto& p : params) st.parameters += p.second;
    for (const auto& p : synced) st.dp_sync_operands.push_back({"g:" + p.first, p.second * d.s});
    const bool adamw = config.optimizer == Optimizer::adamw;
    // The update of the given parameters' elements (a 1/share of each: ZeRO-1's block).
    // Mixed precision: the gradients widened into the master's type ("ws.master_grads"),
    // the update on the master parameters ("w:"), the result narrowed into the step's.
    const bool mixed = config.mixed();
    const double ms = config.master_dtype() == "float64" ? 8 : 4;  // a master element's bytes
    auto update = [&](PhaseBuilder& o, const std::string& name, double n, const Bucket* only, double share) {
      const auto& which = only ? only->params : params;
      auto operands = [&](const std::vector<std::pair<const char*, double>>& states) {
        std::vector<Operand> out;
        for (const auto& [param, elements] : which)
          for (const auto& [state, bytes] : states) out.push_back({state + param, elements / share * bytes});
        return out;
      };
      const std::string sized = kv({{"n", (long long)n}});
      if (mixed) {
        o.op(name + ".widen", "to_" + config.master_dtype(), sized, 0, kernels::convert_bytes(n, d.s, ms), {});
        st.optimizer.compute.back().operands = operands({{"g:", d.s}});
        st.optimizer.compute.back().operands.push_back({"ws.master_grads", n * ms});
      }
      // The update's own operands, in the order p, g, m, v of each parameter (the master
      // gradients are one workspace).
      std::vector<std::pair<const char*, double>> states{{mixed ? "w:" : "p:", ms}};
      if (!mixed) states.push_back({"g:", ms});
      if (adamw) states.insert(states.end(), {{"m:", ms}, {"v:", ms}});
      if (adamw)
        o.op(name, "adamw_update", sized, kernels::adamw_flops(n), kernels::adamw_bytes(n, ms), {});
      else  // p = p - lr g
        o.op(name, "stream_triad", sized, kernels::stream_flops(StreamOp::triad, n), kernels::stream_bytes(StreamOp::triad, n, ms), {});
      ComputeOp& u = st.optimizer.compute.back();
      u.operands = operands(states);
      if (mixed) {
        u.operands.push_back({"ws.master_grads", n * ms});
        u.dtype = config.master_dtype();
        o.op(name + ".narrow", "to_" + config.dtype, sized, 0, kernels::convert_bytes(n, ms, d.s), {});
        st.optimizer.compute.back().operands = operands({{"w:", ms}, {"p:", d.s}});
      }
    };
    PhaseBuilder o(st.optimizer, d);
    if (config.sp) {  // the replicated parameters' gradients, summed over tp (packed into one message)
      double n = 0;
      std::vector<std::pair<std::string, double>> grads;
      for (const auto& [param, elements] : params)
        if (replicated_over_tp(param)) grads.push_back({"g:" + param, elements}), n += elements;
      auto copy = [&](const std::string& name) {
        o.op(name, "stream_copy", kv({{"n", (long long)n}}), 0, kernels::stream_bytes(StreamOp::copy, n, d.s), {});
        for (const auto& [tensor, elements] : grads) st.optimizer.compute.back().operands.push_back({tensor, elements * d.s});
        st.optimizer.compute.back().operands.push_back({"ws.sp_grads", n * d.s});
      };
      copy("optimizer.sp_grads");  // the pack; the allreduce is named after it
      o.tp_allreduce("optimizer.sp_grads", n);
      copy("optimizer.sp_grads.unpack");
    }
    double flat = 0;  // the gradient buffer: the buckets, padded, and the rank's own experts
    for (const auto& b : buckets) flat += b.elements;
    for (const auto& p : own) flat += p.second;
    const bool compressed = config.compress != Compression::none && config.dp > 1;
    if (compressed) {  // the whole gradient converted, each bucket's allreduce on the copy, converted back
      const std::vector<Operand> grads = st.dp_sync_operands;
      auto convert = [&](const std::string& name, const char* kernel) {
        o.op(name, kernel, kv({{"n", (long long)flat}}), 0, kernels::bfloat16_convert_bytes(flat, d.s), {});
        st.optimizer.compute.back().operands = grads;
        st.optimizer.compute.back().operands.push_back({"ws.grads_bf16", flat * 2});
      };
      convert("optimizer.compress", "to_bfloat16");
      for (std::size_t k = 0; k < buckets.size(); ++k) {
        o.comm({"dp.bucket" + std::to_string(k) + ".allreduce", Traffic::dp, "allreduce", buckets[k].elements * 2.0,
                config.dp});
        st.optimizer.comm.back().back_to_back = k > 0;
        st.optimizer.comm.back().dtype = "bfloat16";
      }
      convert("optimizer.decompress", "from_bfloat16");
      st.dp_sync_operands.clear();
    }
    for (std::size_t k = 0; k < buckets.size(); ++k) {
      const std::string B = "dp.bucket" + std::to_string(k);
      if (config.dp == 1 || compressed) continue;
      if (sharded) {
        const double block = buckets[k].elements / config.dp;
        st.dp_sync.push_back({B + ".reduce_scatter", Traffic::dp, "reduce_scatter", block * d.s, config.dp});
        const std::string U = "optimizer.bucket" + std::to_string(k);
        update(o, U, block, &buckets[k], config.dp);
        // ZeRO-3 keeps the parameters sharded: the next forward gathers them.
        if (!by_unit) o.comm({U + ".allgather", Traffic::dp, "allgather", block * d.s, config.dp});
      } else {
        st.dp_sync.push_back({B + ".allreduce", Traffic::dp, "allreduce", buckets[k].elements * d.s, config.dp});
      }
    }
    // Bucket after bucket: each behind the previous one (with overlap too, the link is
    // still busy with it when the next one's gradients are final).
    for (std::size_t k = 1; k < st.dp_sync.size(); ++k) st.dp_sync[k].back_to_back = true;
    if (!sharded) update(o, "optimizer.update", st.parameters, nullptr, 1);
    if (config.staleness > 0) {
      // The update reads the gradients of `staleness` steps before from their copy; this
      // step's are copied aside, and their allreduce (dp_sync) starts on the copy.
      std::vector<Operand> copies;
      for (const auto& g : st.dp_sync_operands) copies.push_back({"ws.stale." + g.tensor.substr(2), g.bytes});
      for (auto& op : st.optimizer.compute)
        if (op.name.starts_with("optimizer.update"))  // the update, or its widening (mixed precision)
          for (auto& operand : op.operands)
            if (operand.tensor.starts_with("g:")) operand.tensor = "ws.stale." + operand.tensor.substr(2);
      o.op("optimizer.stale_copy", "stream_copy", kv({{"n", (long long)flat}}), 0,
           kernels::stream_bytes(StreamOp::copy, flat, d.s), {});
      st.optimizer.compute.back().operands = st.dp_sync_operands;
      st.optimizer.compute.back().operands.insert(st.optimizer.compute.back().operands.end(), copies.begin(), copies.end());
      st.dp_sync_operands = copies;
    }
    o.op("optimizer.zero_grad", "fill", kv({{"n", (long long)flat}}), 0, kernels::fill_bytes(flat, d.s), {});
    for (const auto& p : params) st.optimizer.compute.back().operands.push_back({"g:" + p.first, p.second * d.s});
    plan.stages.push_back(std::move(st));
  }
  return plan;
}

double step_working_set_bytes(const StepPlan& plan, int stage) {
  const TrainConfig& c = plan.config;
  const StagePlan& st = plan.stages.at(stage);
  const double element = c.dtype == "float64" ? 8 : 4;
  // The proxy's buffers: parameters and gradients whole (ZeRO-3 gathers into the
  // parameters' own place), the optimizer's state sharded with ZeRO: the moments, and
  // with mixed precision the master parameters and gradients, each in the master's type.
  const double master_copies = (c.optimizer == Optimizer::adamw ? 2.0 : 0.0) + (c.mixed() ? 2.0 : 0.0);
  const double state_copies =
      2 + master_copies * (c.master_dtype() == "float64" ? 8 : 4) / element / (c.zero >= 1 ? c.dp : 1);
  double forward_bytes = 0;
  for (const auto& op : st.forward.compute) forward_bytes += op.bytes;
  // GPipe keeps every micro-batch's activations; 1F1B at most one per later stage.
  const int stages = static_cast<int>(plan.stages.size()), micro = c.micro_batches();
  const int in_flight = c.schedule == Schedule::gpipe ? micro : std::min(micro, stages - stage);
  if (c.recompute == Recompute::full) {  // each micro-batch keeps its layers' inputs; one layer's activations are shared
    const double inputs = double(st.layers_count + 1) * c.micro_batch * c.seq * c.hidden * element;
    return st.parameters * element * state_copies + forward_bytes / std::max(1, st.layers_count) + inputs * in_flight;
  }
  return st.parameters * element * state_copies + forward_bytes * in_flight;
}

}  // namespace sextant::model
