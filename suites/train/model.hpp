#pragma once
// One pipeline stage of the transformer on one tensor-parallel rank: its layers (and the
// embedding on the first stage, the final layernorm, logits and cross-entropy on the
// last), forward and backward of one micro-batch, with Megatron's tensor parallelism.
//
// Model (pre-LN, GPT-2 shaped, T = micro_batch * seq tokens, F = 4 hidden):
//   x0 = token_embedding[tokens] + position_embedding[0..seq)
//   per layer: x1 = x + attn_out(attention(split(ln1(x) Wqkv)))      (no bias: the
//              y  = x1 + gelu(ln2(x1) W1 + b1) W2                     kernels fuse only
//   logits = ln_f(x_L) W_head, loss = mean cross-entropy(logits, next)   GELU's bias)
// Attention is bidirectional (no causal mask): the kernel the compute suite measures has
// none, and the synthetic task (data.hpp) labels each position from its own and earlier
// tokens without feeding the labels in, so nothing leaks. The head is not tied to the
// embedding (tying spans the first and last stage and needs one more allreduce).
//
// Tensor parallelism (Megatron): QKV and fc1 column-parallel (heads and MLP columns
// split), attn_out and fc2 row-parallel, followed by an allreduce of the [T, hidden]
// partial sums in forward ("g"); in backward the input gradients of QKV and fc1 are
// allreduced ("f"). The embedding and the logits are split over the vocabulary: a token
// outside this rank's shard looks up a zero row, an allreduce sums the shards; the
// cross-entropy combines per-shard maxima and sums (suites/train/ops.hpp). Layernorms and
// the position embedding are replicated and see identical inputs, so their gradients
// agree on every tp rank without communication.
//
// Sequence parallelism (TrainConfig::sp): between the tensor-parallel GEMMs each rank
// keeps T / tp of the tokens (a contiguous block of the micro-batch's [T, H] rows: the
// layer norms, residual adds, position embedding and pipeline messages work on it). A
// partial sum is reduce-scattered into the blocks instead of allreduced; a norm's output
// is written into its block of a [T, H] buffer and allgathered in place before the
// column-parallel GEMM reads it, and in backward the gradients the GEMMs take are
// allgathered into a workspace. The norms' and the position embedding's gradients then
// cover this rank's tokens only: the optimizer sums them over tp (optimizer.hpp).
//
// Mixture of experts (TrainConfig::experts): the MLP is E experts behind a router; the
// layer's a2 rows are dispatched to their experts' rows ([E, C, H], zeros where an expert
// has fewer tokens than rows), with ep exchanged with the experts' ranks by an all-to-all
// over the dp group (and regrouped by expert where a rank holds several), run through
// each expert's MLP, sent back, and combined weighted by the router's probabilities
// (models/train_plan.cpp has the op list; suites/train/ops.hpp the routing kernels).
//
// Gradients accumulate over micro-batches: weight-gradient GEMMs with beta = 1, and the
// kernels that overwrite their parameter gradients (layernorm, bias-GELU, embedding)
// write a scratch that stream_add adds in. They become final, in flat-buffer order,
// during the last micro-batch's backward, which reports each to a GradientSink (the DP
// sync, to start reducing buckets early).
#include <cmath>
#include <string>
#include <vector>

#include "kernels/activation.hpp"
#include "kernels/attention.hpp"
#include "kernels/embedding.hpp"
#include "kernels/gemm.hpp"
#ifdef SEXTANT_HAVE_KOKKOS_KERNELS
#include "kernels/vendor_blas.hpp"
#endif
#include "kernels/layernorm.hpp"
#include "kernels/stream.hpp"
#include "suites/common/mpi.hpp"
#include "suites/train/data.hpp"
#include "suites/train/layout.hpp"
#include "suites/train/ops.hpp"
#include "suites/train/params.hpp"
#include "suites/train/recorder.hpp"

namespace sextant::train {

struct GradientSink {
  virtual ~GradientSink() = default;
  virtual void ready(int last_param) = 0;  // gradients of parameters [0, last_param] are final
};

// ZeRO-3's parameter units (model::param_unit), gathered right before the stage's ops use
// them and released after (suites/train/dp_sync.hpp).
struct ParamUnits {
  virtual ~ParamUnits() = default;
  virtual void gather(int param) = 0;   // every rank's block of the unit holding `param`
  virtual void release(int param) = 0;  // done with it until its next gather
};

inline std::string kv(std::initializer_list<std::pair<const char*, long long>> dims) {
  std::string out;
  for (const auto& [k, v] : dims) {
    if (!out.empty()) out += ',';
    out += k;
    out += '=';
    out += std::to_string(v);
  }
  return out;
}

template <class S>
class Stage {
 public:
  Stage(const model::TrainConfig& c, const Layout& layout, Recorder& rec, ParamStore<S>& store, int slots,
        int layers_first, int layers_count, WaitMode wait)
      : rec_(rec), store_(store), wait_(wait), dense_(c.dense), recompute_(c.recompute), tp_comm_(layout.tp_comm),
        ep_comm_(layout.dp_comm), tp_(c.tp), ep_(c.ep),
        tp_rank_(layout.tp_rank), first_(layout.first_stage()), last_(layout.last_stage()), sp_(c.sp),
        b_(c.micro_batch), S_(c.seq), H_(c.hidden), T_(b_ * S_), Tl_(sp_ ? T_ / c.tp : T_),
        tok0_(sp_ ? Tl_ * layout.tp_rank : 0), Hl_(c.hidden / c.tp), Al_(c.heads / c.tp), D_(c.hidden / c.heads),
        Fl_(4LL * c.hidden / c.tp), Vl_(c.vocab / c.tp), Vrows_(Vl_ + (c.tp > 1 ? 1 : 0)), BH_(b_ * Al_),
        E_(c.experts), El_(c.experts / c.ep), k_(c.top_k), C_(c.experts > 0 ? c.expert_capacity() : 0),
        scale_(S(1 / std::sqrt(double(D_)))) {
    for (int l = layers_first; l < layers_first + layers_count; ++l) layers_.push_back(bind_layer(l));
    if (first_) {
      i_pos_ = store_.index("embedding.position");
      i_tok_ = store_.index("embedding.token");
      pos_index_ = Tokens("sextant::train::positions", Tl_);
      fill_positions(pos_index_, S_, tok0_);
      emb_tok_ = alloc2<S>("emb_tok", T_, H_);
      emb_pos_ = alloc2<S>("emb_pos", Tl_, H_);
      demb_ = alloc2<S>("demb", Tl_, H_);
      tok_scratch_ = alloc2<S>("tok_scratch", Vrows_, H_);
      pos_scratch_ = alloc2<S>("pos_scratch", S_, H_);
    }
    if (last_) {
      i_head_ = store_.index("head.weight");
      i_lnf_ = store_.index("final.ln.gamma");
    }
    for (int s = 0; s < slots; ++s) slots_.push_back(make_slot());
    qkv_ws_ = alloc2<S>("qkv_ws", T_, 3 * Hl_);
    o_ws_ = V3<S>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "o_ws"), BH_, S_, D_);
    proj_ws_ = alloc2<S>("proj_ws", T_, H_);
    gA_ = alloc2<S>("grad_a", Tl_, H_);
    gB_ = alloc2<S>("grad_b", Tl_, H_);
    da_ = alloc2<S>("da", T_, H_);
    dxln_ = alloc2<S>("dxln", Tl_, H_);
    dx1_ = alloc2<S>("dx1", Tl_, H_);
    if (sp_) {
      dy_all_ = alloc2<S>("dy_all", T_, H_);
      dx1_all_ = alloc2<S>("dx1_all", T_, H_);
    }
    dg_ = alloc2<S>("dg", T_, Fl_);
    dom_ = alloc2<S>("dom", T_, Hl_);
    dqkv_ = alloc2<S>("dqkv", T_, 3 * Hl_);
    do_ = V3<S>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "do"), BH_, S_, D_);
    dP_ = V3<S>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dP"), BH_, S_, S_);
    dqkvh_ = alloc1<S>("dqkvh", 3 * BH_ * S_ * D_);
    ln_scratch_ = alloc1<S>("ln_scratch", 2 * H_);
    b1_scratch_ = alloc1<S>("b1_scratch", Fl_);
    if (E_ > 0) {
      const std::int64_t R = E_ * C_;
      choice_ = Index("moe_choice", T_ * k_);
      dprobs_ = alloc2<S>("dprobs", T_, E_);
      for (V2<S>* w : {&moe_send_, &moe_recv_, &moe_y_, &moe_dy_, &moe_dx_}) *w = alloc2<S>("moe_rows", R, H_);
      moe_dg_ = alloc2<S>("moe_dg", ep_ * C_, Fl_);
    }
  }

  // Token data of the current step: local embedding rows (first stage) and target token
  // ids (last stage), [micro-batches, T] each.
  void set_data(Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> rows,
                Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> targets) {
    rows_ = rows;
    targets_ = targets;
  }
  double loss_scale = 1;  // 1 / tokens of the global batch: the loss is the mean
  ParamUnits* units = nullptr;  // ZeRO-3's gathers; none: the parameters are all here

  V2<S> input(int slot) { return slots_[slot].xs.front(); }     // activation from the previous stage
  V2<S> output(int slot) { return slots_[slot].xs.back(); }     // activation to the next stage
  V2<S> grad_input() { return gA_; }                            // gradient from the next stage
  V2<S> grad_output(int slot) { return slots_[slot].dx_send; }  // gradient to the previous stage
  std::int64_t tokens() const { return Tl_; }  // of the activations a stage sends: its block with sp
  std::int64_t hidden() const { return H_; }

  void forward(int mb, int slot) {
    Slot& sl = slots_[slot];
    if (first_) with_unit(i_pos_, [&] { embedding_forward(mb, sl.xs[0]); });
    for (std::size_t l = 0; l < layers_.size(); ++l)
      with_unit(layers_[l].i_ln1, [&] { layer_forward(layers_[l], sl.acts[l], sl.xs[l], sl.xs[l + 1]); });
    if (last_) with_unit(i_head_, [&] { final_forward(mb, sl); });
  }

  // Returns the summed token loss of the micro-batch on the last stage, else 0.
  double backward(int mb, int slot, GradientSink* sink) {
    Slot& sl = slots_[slot];
    double loss = 0;
    if (last_) with_unit(i_head_, [&] { loss = final_backward(mb, sl, sink); });
    V2<S> dy = gA_, spare = gB_;  // gA_ holds the incoming gradient (received, or from final_backward)
    for (int l = int(layers_.size()) - 1; l >= 0; --l) {
      V2<S> dx = l > 0 ? spare : (first_ ? demb_ : sl.dx_send);
      with_unit(layers_[l].i_ln1, [&] { layer_backward(layers_[l], sl.acts[l], sl.xs[l], dy, dx, sink); });
      spare = dy;
      dy = dx;
    }
    if (first_) embedding_backward(mb, sink);  // reads no parameter: nothing to gather
    return loss;
  }

 private:
  template <class Run>
  void with_unit(int param, Run&& run) {
    if (units) units->gather(param);
    run();
    if (units) units->release(param);
  }

  struct MlpParams {  // the dense MLP, or one expert's
    U2<S> w1, w2, dw1, dw2;
    U1<S> b1, db1;
    int i_w2 = -1, i_b1 = -1, i_w1 = -1;
  };
  struct LayerParams {
    std::string prefix;  // "layer3."
    U2<S> wqkv, wo, dwqkv, dwo;
    U1<S> ln1g, ln1b, ln2g, ln2b, dln1, dln2;  // dln*: gamma and beta gradients, adjacent
    int i_ln2, i_wo, i_wqkv, i_ln1;  // for the sink (ln: the beta's index)
    MlpParams mlp;                   // without experts
    U2<S> wr, dwr;                   // with experts: the router
    int i_router = -1;
    std::vector<MlpParams> experts;  // the rank's
  };
  using Index = Kokkos::View<std::int32_t*, Kokkos::LayoutRight, Mem>;
  struct LayerActs {  // what backward needs from forward, per micro-batch in flight
    V2<S> a1, x1, a2, h, gact, om;  // h, gact: the dense MLP's, or the rank's experts' [E C, F]
    V1<S> mean1, rstd1, mean2, rstd2, qkvh;  // qkvh: q, k, v as 3 x [BH, S, D]
    V3<S> P;
    V2<S> probs, moe_x, moe_out;  // experts: router probabilities [T, E]; the experts' input and output rows [E C, H]
    Index rows, tokens;           // experts: each choice's row [T, k], each row's token [E C]
  };
  struct Slot {
    std::vector<V2<S>> xs;  // xs[l]: input of layer l; xs.back(): the stage's output
    std::vector<LayerActs> acts;
    V2<S> af, logits, ce_stats, dx_send;
    V1<S> meanf, rstdf, ce_max;
  };

  MlpParams bind_mlp(const std::string& prefix) {
    MlpParams m;
    m.i_w2 = store_.index(prefix + "fc2.weight");
    m.i_b1 = store_.index(prefix + "fc1.bias");
    m.i_w1 = store_.index(prefix + "fc1.weight");
    m.w2 = store_.param2(m.i_w2);
    m.dw2 = store_.grad2(m.i_w2);
    m.b1 = store_.param1(m.i_b1);
    m.db1 = store_.grad1(m.i_b1);
    m.w1 = store_.param2(m.i_w1);
    m.dw1 = store_.grad2(m.i_w1);
    return m;
  }

  LayerParams bind_layer(int l) {
    LayerParams p;
    p.prefix = "layer" + std::to_string(l) + ".";
    const int ln2g = store_.index(p.prefix + "ln2.gamma"), ln1g = store_.index(p.prefix + "ln1.gamma");
    p.i_ln2 = store_.index(p.prefix + "ln2.beta");
    p.i_wo = store_.index(p.prefix + "attn_out.weight");
    p.i_wqkv = store_.index(p.prefix + "qkv.weight");
    p.i_ln1 = store_.index(p.prefix + "ln1.beta");
    p.ln2g = store_.param1(ln2g);
    p.ln2b = store_.param1(p.i_ln2);
    p.dln2 = store_.grad1(ln2g, 2);
    p.wo = store_.param2(p.i_wo);
    p.dwo = store_.grad2(p.i_wo);
    p.wqkv = store_.param2(p.i_wqkv);
    p.dwqkv = store_.grad2(p.i_wqkv);
    p.ln1g = store_.param1(ln1g);
    p.ln1b = store_.param1(p.i_ln1);
    p.dln1 = store_.grad1(ln1g, 2);
    if (E_ == 0) {
      p.mlp = bind_mlp(p.prefix);
      return p;
    }
    p.i_router = store_.index(p.prefix + "router.weight");
    p.wr = store_.param2(p.i_router);
    p.dwr = store_.grad2(p.i_router);
    for (std::int64_t j = 0; j < El_; ++j) p.experts.push_back(bind_mlp(expert_prefix(p.prefix, j)));
    return p;
  }
  static std::string expert_prefix(const std::string& layer, std::int64_t j) {
    return layer + "expert" + std::to_string(j) + ".";
  }

  // A micro-batch's buffers. What the backward recomputes lives once, in shared_acts_
  // (models/train_plan.hpp, Recompute): under full recomputation every layer's
  // activations, under selective the attention probabilities.
  Slot make_slot() {
    Slot s;
    for (std::size_t l = 0; l <= layers_.size(); ++l) s.xs.push_back(alloc2<S>("x", Tl_, H_));
    if (recompute_ == model::Recompute::full && shared_acts_.P.data() == nullptr) {
      shared_acts_ = make_acts();
      recompute_y_ = alloc2<S>("recompute_y", Tl_, H_);
    } else if (recompute_ == model::Recompute::selective && shared_acts_.P.data() == nullptr) {
      shared_acts_.P = V3<S>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "P"), BH_, S_, S_);
    }
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      if (recompute_ == model::Recompute::full) {
        s.acts.push_back(shared_acts_);
        continue;
      }
      LayerActs a = make_acts(recompute_ == model::Recompute::selective);
      if (recompute_ == model::Recompute::selective) a.P = shared_acts_.P;
      s.acts.push_back(a);
    }
    if (last_) {
      s.af = alloc2<S>("af", T_, H_);
      s.meanf = alloc1<S>("meanf", Tl_);
      s.rstdf = alloc1<S>("rstdf", Tl_);
      s.logits = alloc2<S>("logits", T_, Vl_);
      s.ce_max = alloc1<S>("ce_max", T_);
      s.ce_stats = alloc2<S>("ce_stats", T_, 2);
    }
    if (!first_) s.dx_send = alloc2<S>("dx_send", Tl_, H_);
    return s;
  }

  LayerActs make_acts(bool without_P = false) {
    LayerActs a;
    a.a1 = alloc2<S>("a1", T_, H_);  // the norms' outputs: every rank's tokens (gathered with sp)
    a.x1 = alloc2<S>("x1", Tl_, H_);
    a.a2 = alloc2<S>("a2", T_, H_);
    const std::int64_t mlp_rows = E_ > 0 ? E_ * C_ : T_;  // the rank's experts: E / ep of them, ep C rows each
    a.h = alloc2<S>("h", mlp_rows, Fl_);
    a.gact = alloc2<S>("gact", mlp_rows, Fl_);
    if (E_ > 0) {
      a.probs = alloc2<S>("probs", T_, E_);
      a.moe_x = alloc2<S>("moe_x", E_ * C_, H_);
      a.moe_out = alloc2<S>("moe_out", E_ * C_, H_);
      a.rows = Index("moe_rows", T_ * k_);
      a.tokens = Index("moe_tokens", E_ * C_);
    }
    a.om = alloc2<S>("om", T_, Hl_);
    a.mean1 = alloc1<S>("mean1", Tl_);
    a.rstd1 = alloc1<S>("rstd1", Tl_);
    a.mean2 = alloc1<S>("mean2", Tl_);
    a.rstd2 = alloc1<S>("rstd2", Tl_);
    a.qkvh = alloc1<S>("qkvh", 3 * BH_ * S_ * D_);
    if (!without_P) a.P = V3<S>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "P"), BH_, S_, S_);
    return a;
  }

  U3<S> head_part(const V1<S>& block, int g) const {  // q, k or v of a 3 x [BH, S, D] block
    return U3<S>(block.data() + std::int64_t(g) * BH_ * S_ * D_, BH_, S_, D_);
  }

  // ---- op helpers: run through the recorder, described in the plan's vocabulary ----------

  template <class Run, class Shape>
  void op(const std::string& prefix, const char* name, const char* kernel, Shape&& shape, double flops,
          double bytes, Run&& run) {
    rec_.compute(run, [&] {
      return model::ComputeOp{prefix + name, std::string(family_of(kernel)), shape(), flops, bytes, kernel, {}};
    });
  }

  // C (+)= op(A) op(B); weight gradients accumulate over micro-batches (beta = 1).
  template <class A, class B, class C>
  void gemm(const std::string& prefix, const char* name, kernels::Trans ta, kernels::Trans tb, A a, B b, C c,
            bool accumulate) {
    const std::int64_t M = c.extent(0), N = c.extent(1);
    const std::int64_t K = ta == kernels::Trans::yes ? a.extent(0) : a.extent(1);
    const bool vendor = dense_ == model::DensePath::vendor;
    op(
        prefix, name, vendor ? "vendor_gemm" : "gemm",
        [&] {
          std::string s = kv({{"M", M}, {"N", N}, {"K", K}, {"ta", ta == kernels::Trans::yes},
                              {"tb", tb == kernels::Trans::yes}});
          return accumulate ? s + ",beta=1" : s;
        },
        kernels::gemm_flops(M, N, K), kernels::gemm_bytes(M, N, K, sizeof(S), 1, accumulate),
        [&] {
          const S beta = accumulate ? S(1) : S(0);
#ifdef SEXTANT_HAVE_KOKKOS_KERNELS
          if (vendor) return kernels::vendor_gemm(exec_, ta, tb, S(1), a, b, beta, c);
#endif
          kernels::gemm(exec_, ta, tb, S(1), a, b, beta, c);
        });
  }

  // c = a + b on n elements (c may alias a).
  void add(const std::string& prefix, const char* name, S* c, const S* a, const S* b, std::int64_t n) {
    op(
        prefix, name, "stream_add", [&] { return kv({{"n", n}}); }, kernels::stream_flops(kernels::StreamOp::add, n),
        kernels::stream_bytes(kernels::StreamOp::add, n, sizeof(S)), [&] {
          kernels::stream_add(exec_, U1<S>(c, n), Kokkos::View<const S*, Mem, Kokkos::MemoryUnmanaged>(a, n),
                              Kokkos::View<const S*, Mem, Kokkos::MemoryUnmanaged>(b, n));
        });
  }

  template <class Run>
  void heads(const std::string& prefix, const char* name, const char* kernel, std::int64_t groups, Run&& run) {
    op(
        prefix, name, kernel,
        [&] { return kv({{"batch", b_}, {"seq", S_}, {"groups", groups}, {"heads", Al_}, {"dim", D_}}); }, 0,
        heads_permute_bytes(double(T_) * groups * Hl_, sizeof(S)), run);
  }

  template <class X, class Y>
  void layernorm_fwd(const std::string& prefix, const char* name, X x, U1<S> g, U1<S> b, Y y, V1<S> mean,
                     V1<S> rstd) {
    op(
        prefix, name, "layernorm_forward", [&] { return kv({{"rows", Tl_}, {"cols", H_}}); },
        kernels::layernorm_forward_flops(Tl_, H_), kernels::layernorm_forward_bytes(Tl_, H_, sizeof(S)),
        [&] { kernels::layernorm_forward(exec_, x, g, b, S(layernorm_eps), y, mean, rstd); });
  }

  // dx from dy; the gamma and beta gradients go to the scratch, then into dgb (adjacent).
  template <class DY, class X, class DX>
  void layernorm_bwd(const std::string& prefix, const char* name, const char* add_name, DY dy, X x, U1<S> g,
                     V1<S> mean, V1<S> rstd, DX dx, U1<S> dgb) {
    U1<S> dgam(ln_scratch_.data(), H_), dbet(ln_scratch_.data() + H_, H_);
    op(
        prefix, name, "layernorm_backward", [&] { return kv({{"rows", Tl_}, {"cols", H_}}); },
        kernels::layernorm_backward_flops(Tl_, H_), kernels::layernorm_backward_bytes(Tl_, H_, sizeof(S)),
        [&] { kernels::layernorm_backward(exec_, dy, x, g, mean, rstd, dx, dgam, dbet); });
    add(prefix, add_name, dgb.data(), dgb.data(), ln_scratch_.data(), 2 * H_);
  }

  // Allreduce over the tensor-parallel group, in place: Megatron's g (forward) and f
  // (backward) operators, and the cross-entropy's statistics.
  void tp_allreduce(S* data, std::int64_t n, const std::string& prefix, const char* after, MPI_Op mpi_op = MPI_SUM) {
    if (tp_ == 1) return;
    rec_.comm(
        CommKind::tp,
        [&] { allreduce(MPI_IN_PLACE, data, int(n), mpi_type<S>(), mpi_op, tp_comm_, wait_); },
        [&] {
          return model::CommOp{prefix + after + ".tp_allreduce", model::Traffic::tp, "allreduce", double(n) * sizeof(S), tp_};
        });
  }

  // A partial sum [T, H] over tp: allreduced, or with sequence parallelism
  // reduce-scattered in place: this rank's block of tokens, summed, in its first rows.
  void tp_sum(V2<S> partial, const std::string& prefix, const char* after) {
    if (!sp_) return tp_allreduce(partial.data(), T_ * H_, prefix, after);
    const std::int64_t n = Tl_ * H_;
    rec_.comm(
        CommKind::tp,
        [&] {
          MPI_Request r;
          SEXTANT_MPI_CHECK(MPI_Ireduce_scatter_block(MPI_IN_PLACE, partial.data(), int(n), mpi_type<S>(), MPI_SUM, tp_comm_, &r));
          wait(r, wait_);
        },
        [&] {
          return model::CommOp{prefix + after + ".tp_reduce_scatter", model::Traffic::tp, "reduce_scatter", double(n) * sizeof(S), tp_};
        });
  }
  // The summed rows tp_sum left (the whole of them without sp).
  U2<S> summed(V2<S> partial) const { return U2<S>(partial.data(), Tl_, H_); }
  // This rank's block of tokens of a [T, H] buffer (the whole of it without sp).
  U2<S> mine(V2<S> all) const { return U2<S>(all.data() + tok0_ * H_, Tl_, H_); }

  // Sequence parallelism: every rank's block into `all` [T, H]; from `block` (this rank's
  // tokens), or in place where the block is already mine(all). Without sp, nothing.
  void tp_gather(const S* block, V2<S> all, const std::string& prefix, const char* name) {
    if (!sp_) return;
    const std::int64_t n = Tl_ * H_;
    rec_.comm(
        CommKind::tp,
        [&] {
          MPI_Request r;
          const bool in_place = block == mine(all).data();
          SEXTANT_MPI_CHECK(MPI_Iallgather(in_place ? MPI_IN_PLACE : block, in_place ? 0 : int(n),
                                           in_place ? MPI_DATATYPE_NULL : mpi_type<S>(), all.data(), int(n), mpi_type<S>(),
                                           tp_comm_, &r));
          wait(r, wait_);
        },
        [&] { return model::CommOp{prefix + name + ".tp_allgather", model::Traffic::tp, "allgather", double(n) * sizeof(S), tp_}; });
  }

  void ready(GradientSink* sink, int param) {
    if (sink) sink->ready(param);
  }

  // ---- forward ----------------------------------------------------------------------------

  void embedding_forward(int mb, V2<S> x0) {
    static const std::string E = "embedding.";
    auto rows = Kokkos::subview(rows_, mb, Kokkos::ALL);
    U2<S> table = store_.param2(i_tok_, Vrows_ - Vl_);  // + the zero row past the end
    op(
        E, "token", "embedding_forward", [&] { return kv({{"vocab", Vrows_}, {"tokens", T_}, {"dim", H_}}); },
        kernels::embedding_forward_flops(T_, H_), kernels::embedding_forward_bytes(T_, H_, sizeof(S), 4),
        [&] { kernels::embedding_forward(exec_, table, rows, emb_tok_); });
    tp_sum(emb_tok_, E, "token");
    op(
        E, "position", "embedding_forward", [&] { return kv({{"vocab", S_}, {"tokens", Tl_}, {"dim", H_}}); },
        kernels::embedding_forward_flops(Tl_, H_), kernels::embedding_forward_bytes(Tl_, H_, sizeof(S), 4),
        [&] { kernels::embedding_forward(exec_, store_.param2(i_pos_), pos_index_, emb_pos_); });
    add(E, "add", x0.data(), emb_tok_.data(), emb_pos_.data(), Tl_ * H_);
  }

  // The layer's forward from x to y, its ops named L... (p.prefix, or p.prefix +
  // "recompute." when the backward runs it again).
  void layer_forward(LayerParams& p, LayerActs& a, V2<S> x, V2<S> y) { layer_forward(p, a, x, y, p.prefix); }
  void layer_forward(LayerParams& p, LayerActs& a, V2<S> x, V2<S> y, const std::string& L) {
    layernorm_fwd(L, "ln1", x, p.ln1g, p.ln1b, mine(a.a1), a.mean1, a.rstd1);
    tp_gather(mine(a.a1).data(), a.a1, L, "ln1");
    gemm(L, "qkv", kernels::Trans::no, kernels::Trans::no, a.a1, p.wqkv, qkv_ws_, false);
    heads(L, "split_heads", "split_heads", 3, [&] { split_heads(exec_, qkv_ws_, a.qkvh.data(), b_, S_, 3, Al_, D_); });
    attention_fwd(L, a);
    heads(L, "merge_heads", "merge_heads", 1, [&] { merge_heads(exec_, o_ws_.data(), a.om, b_, S_, 1, Al_, D_); });
    gemm(L, "attn_out", kernels::Trans::no, kernels::Trans::no, a.om, p.wo, proj_ws_, false);
    tp_sum(proj_ws_, L, "attn_out");
    add(L, "residual1", a.x1.data(), x.data(), proj_ws_.data(), Tl_ * H_);
    layernorm_fwd(L, "ln2", a.x1, p.ln2g, p.ln2b, mine(a.a2), a.mean2, a.rstd2);
    tp_gather(mine(a.a2).data(), a.a2, L, "ln2");
    if (E_ > 0) {
      moe_forward(p, a, L);
    } else {
      gemm(L, "fc1", kernels::Trans::no, kernels::Trans::no, a.a2, p.mlp.w1, a.h, false);
      op(
          L, "gelu", "bias_gelu_forward", [&] { return kv({{"rows", T_}, {"cols", Fl_}}); },
          kernels::bias_gelu_forward_flops(T_, Fl_), kernels::bias_gelu_forward_bytes(T_, Fl_, sizeof(S)),
          [&] { kernels::bias_gelu_forward(exec_, a.h, p.mlp.b1, a.gact); });
      gemm(L, "fc2", kernels::Trans::no, kernels::Trans::no, a.gact, p.mlp.w2, proj_ws_, false);
      tp_sum(proj_ws_, L, "fc2");
    }
    add(L, "residual2", y.data(), a.x1.data(), proj_ws_.data(), Tl_ * H_);
  }

  void final_forward(int mb, Slot& s) {
    static const std::string F = "final.";
    U1<S> g = store_.param1(i_lnf_), b = store_.param1(i_lnf_ + 1);
    layernorm_fwd(F, "ln", s.xs.back(), g, b, mine(s.af), s.meanf, s.rstdf);
    tp_gather(mine(s.af).data(), s.af, F, "ln");
    gemm(F, "logits", kernels::Trans::no, kernels::Trans::no, s.af, store_.param2(i_head_), s.logits, false);
    op(
        F, "ce_max", "cross_entropy_max", [&] { return kv({{"rows", T_}, {"cols", Vl_}}); },
        cross_entropy_max_flops(T_, Vl_), cross_entropy_max_bytes(T_, Vl_, sizeof(S)),
        [&] { cross_entropy_max(exec_, s.logits, s.ce_max); });
    tp_allreduce(s.ce_max.data(), T_, F, "ce_max", MPI_MAX);
    auto targets = Kokkos::subview(targets_, mb, Kokkos::ALL);
    op(
        F, "ce_sum", "cross_entropy_sum", [&] { return kv({{"rows", T_}, {"cols", Vl_}}); },
        cross_entropy_sum_flops(T_, Vl_), cross_entropy_sum_bytes(T_, Vl_, sizeof(S)),
        [&] { cross_entropy_sum(exec_, s.logits, targets, Vl_ * tp_rank_, s.ce_max, s.ce_stats); });
    tp_allreduce(s.ce_stats.data(), 2 * T_, F, "ce_sum");
  }

  // ---- backward ---------------------------------------------------------------------------

  double final_backward(int mb, Slot& s, GradientSink* sink) {
    static const std::string F = "final.";
    auto targets = Kokkos::subview(targets_, mb, Kokkos::ALL);
    double loss = 0;
    op(
        F, "ce_backward", "cross_entropy_backward", [&] { return kv({{"rows", T_}, {"cols", Vl_}}); },
        cross_entropy_backward_flops(T_, Vl_), cross_entropy_backward_bytes(T_, Vl_, sizeof(S)), [&] {
          loss = cross_entropy_backward(exec_, s.logits, targets, Vl_ * tp_rank_, s.ce_max, s.ce_stats,
                                        S(loss_scale));
        });
    // s.logits now holds d loss / d logits.
    gemm(F, "logits.wgrad", kernels::Trans::yes, kernels::Trans::no, s.af, s.logits, store_.grad2(i_head_), true);
    ready(sink, i_head_);
    gemm(F, "logits.dgrad", kernels::Trans::no, kernels::Trans::yes, s.logits, store_.param2(i_head_), da_, false);
    tp_sum(da_, F, "logits.dgrad");
    layernorm_bwd(F, "ln.backward", "ln.grad_add", summed(da_), s.xs.back(), store_.param1(i_lnf_), s.meanf, s.rstdf, gA_,
                  store_.grad1(i_lnf_, 2));
    ready(sink, i_lnf_ + 1);
    return loss;
  }

  // P and the attention output (o_ws_) from the layer's q, k, v.
  void attention_fwd(const std::string& L, LayerActs& a) {
    op(
        L, "attention", "attention_forward", [&] { return kv({{"BH", BH_}, {"L", S_}, {"D", D_}}); },
        kernels::attention_forward_flops(BH_, S_, S_, D_), kernels::attention_forward_bytes(BH_, S_, S_, D_, sizeof(S)),
        [&] {
          kernels::attention_forward(exec_, head_part(a.qkvh, 0), head_part(a.qkvh, 1), head_part(a.qkvh, 2), a.P,
                                     o_ws_, scale_);
        });
  }

  void layer_backward(LayerParams& p, LayerActs& a, V2<S> x, V2<S> dy, V2<S> dx, GradientSink* sink) {
    using kernels::Trans;
    const std::string& L = p.prefix;
    const std::string recomputed = L + "recompute.";
    // What the forward did not keep, again (models/train_plan.hpp, Recompute): the whole
    // layer from its input (its output into a workspace: the next layer's input is the
    // slot's, already used), or below, the attention probabilities.
    if (recompute_ == model::Recompute::full) layer_forward(p, a, x, recompute_y_, recomputed);
    // With sp the GEMMs take every rank's tokens of the gradients (gathered), the norms
    // and adds this rank's.
    const V2<S> dy_all = sp_ ? dy_all_ : dy, dx1_all = sp_ ? dx1_all_ : dx1_;
    if (E_ > 0) {
      moe_backward(p, a, dy, sink);
    } else {
      tp_gather(dy.data(), dy_all, L, "dy");
      mlp_backward(L, p.mlp, a.a2, a.h, a.gact, dy_all, dg_, da_, sink);
      tp_sum(da_, L, "fc1.dgrad");
    }
    layernorm_bwd(L, "ln2.backward", "ln2.grad_add", summed(da_), a.x1, p.ln2g, a.mean2, a.rstd2, dxln_, p.dln2);
    ready(sink, p.i_ln2);
    add(L, "residual2.backward", dx1_.data(), dy.data(), dxln_.data(), Tl_ * H_);
    tp_gather(dx1_.data(), dx1_all, L, "residual2.backward");
    gemm(L, "attn_out.wgrad", Trans::yes, Trans::no, a.om, dx1_all, p.dwo, true);
    ready(sink, p.i_wo);
    gemm(L, "attn_out.dgrad", Trans::no, Trans::yes, dx1_all, p.wo, dom_, false);
    // The gradient of a merge is a split, and of a split a merge.
    heads(L, "merge_heads.backward", "split_heads", 1,
          [&] { split_heads(exec_, dom_, do_.data(), b_, S_, 1, Al_, D_); });
    if (recompute_ == model::Recompute::selective) attention_fwd(recomputed, a);
    op(
        L, "attention.backward", "attention_backward", [&] { return kv({{"BH", BH_}, {"L", S_}, {"D", D_}}); },
        kernels::attention_backward_flops(BH_, S_, S_, D_),
        kernels::attention_backward_bytes(BH_, S_, S_, D_, sizeof(S)), [&] {
          kernels::attention_backward(exec_, head_part(a.qkvh, 0), head_part(a.qkvh, 1), head_part(a.qkvh, 2), a.P,
                                      do_, dP_, head_part(dqkvh_, 0), head_part(dqkvh_, 1), head_part(dqkvh_, 2),
                                      scale_);
        });
    heads(L, "split_heads.backward", "merge_heads", 3,
          [&] { merge_heads(exec_, dqkvh_.data(), dqkv_, b_, S_, 3, Al_, D_); });
    gemm(L, "qkv.wgrad", Trans::yes, Trans::no, a.a1, dqkv_, p.dwqkv, true);
    ready(sink, p.i_wqkv);
    gemm(L, "qkv.dgrad", Trans::no, Trans::yes, dqkv_, p.wqkv, da_, false);
    tp_sum(da_, L, "qkv.dgrad");
    layernorm_bwd(L, "ln1.backward", "ln1.grad_add", summed(da_), x, p.ln1g, a.mean1, a.rstd1, dxln_, p.dln1);
    ready(sink, p.i_ln1);
    add(L, "residual1.backward", dx.data(), dx1_.data(), dxln_.data(), Tl_ * H_);
  }

  // An MLP's backward from the gradient at its output dy to its input's dx, dg its
  // workspace: the dense MLP's (its gradients reported to the sink) or an expert's.
  template <class X, class H, class G, class DY, class DG, class DX>
  void mlp_backward(const std::string& L, MlpParams& m, X x, H h, G gact, DY dy, DG dg, DX dx, GradientSink* sink) {
    using kernels::Trans;
    const std::int64_t rows = dg.extent(0);
    gemm(L, "fc2.wgrad", Trans::yes, Trans::no, gact, dy, m.dw2, true);
    ready(sink, m.i_w2);
    gemm(L, "fc2.dgrad", Trans::no, Trans::yes, dy, m.w2, dg, false);
    op(
        L, "gelu.backward", "bias_gelu_backward", [&] { return kv({{"rows", rows}, {"cols", Fl_}}); },
        kernels::bias_gelu_backward_flops(rows, Fl_), kernels::bias_gelu_backward_bytes(rows, Fl_, sizeof(S)),
        [&] { kernels::bias_gelu_backward(exec_, dg, h, m.b1, dg, b1_scratch_); });  // in place
    add(L, "gelu.grad_add", m.db1.data(), m.db1.data(), b1_scratch_.data(), Fl_);
    ready(sink, m.i_b1);
    gemm(L, "fc1.wgrad", Trans::yes, Trans::no, x, dg, m.dw1, true);
    ready(sink, m.i_w1);
    gemm(L, "fc1.dgrad", Trans::no, Trans::yes, dg, m.w1, dx, false);
  }

  // ---- mixture of experts ------------------------------------------------------------------

  bool regrouped() const { return ep_ > 1 && El_ > 1; }
  // Expert j's rows of a [E C, cols] buffer laid out by expert: ep C each.
  U2<S> expert_rows(const V2<S>& v, std::int64_t j) const {
    const std::int64_t rows = ep_ * C_, cols = v.extent(1);
    return U2<S>(v.data() + j * rows * cols, rows, cols);
  }
  U2<S> expert_rows(S* data, std::int64_t j) const { return U2<S>(data + j * ep_ * C_ * H_, ep_ * C_, H_); }

  // Each rank's E / ep experts' rows to their rank, over the dp group.
  void ep_alltoall(const S* send, S* receive, const std::string& prefix, const char* name) {
    if (ep_ == 1) return;
    const std::int64_t n = El_ * C_ * H_;
    rec_.comm(
        CommKind::ep,
        [&] {
          MPI_Request r;
          SEXTANT_MPI_CHECK(MPI_Ialltoall(send, int(n), mpi_type<S>(), receive, int(n), mpi_type<S>(), ep_comm_, &r));
          wait(r, wait_);
        },
        [&] {
          return model::CommOp{prefix + name + ".ep_alltoall", model::Traffic::ep, "alltoall", double(n) * sizeof(S), ep_};
        });
  }
  // Rows from [A][B][C] blocks to [B][A][C] (by rank to by expert, or back).
  void regroup(const std::string& prefix, const char* name, const S* from, S* to, std::int64_t A, std::int64_t B) {
    if (!regrouped()) return;
    const std::int64_t R = E_ * C_;
    op(
        prefix, name, "moe_regroup", [&] { return kv({{"ranks", ep_}, {"experts", El_}, {"rows", C_}, {"dim", H_}}); }, 0,
        moe_regroup_bytes(R, H_, sizeof(S)), [&] { moe_regroup(exec_, from, to, A, B, C_ * H_); });
  }

  void moe_forward(LayerParams& p, LayerActs& a, const std::string& L) {
    using kernels::Trans;
    const std::int64_t R = E_ * C_;
    gemm(L, "router", Trans::no, Trans::no, a.a2, p.wr, a.probs, false);
    op(
        L, "router.softmax", "softmax_forward", [&] { return kv({{"rows", T_}, {"cols", E_}}); },
        kernels::softmax_forward_flops(T_, E_), kernels::softmax_forward_bytes(T_, E_, sizeof(S)),
        [&] { kernels::softmax_forward(exec_, a.probs, a.probs); });
    op(
        L, "moe.route", "moe_route", [&] { return kv({{"tokens", T_}, {"experts", E_}, {"top_k", k_}, {"capacity", C_}}); },
        0, moe_route_bytes(T_, E_, k_, R, sizeof(S)),
        [&] { moe_route(exec_, a.probs.data(), choice_.data(), a.rows.data(), a.tokens.data(), T_, E_, k_, C_); });
    // The rows go straight where they are used next (models/train_plan.cpp, moe_forward).
    S* sent = ep_ > 1 ? moe_send_.data() : a.moe_x.data();
    op(
        L, "moe.dispatch", "moe_dispatch", [&] { return kv({{"rows", R}, {"dim", H_}}); }, 0,
        moe_dispatch_bytes(R, H_, sizeof(S)), [&] { moe_dispatch(exec_, a.a2.data(), a.tokens.data(), sent, R, H_); });
    ep_alltoall(moe_send_.data(), regrouped() ? moe_recv_.data() : a.moe_x.data(), L, "moe.dispatch");
    regroup(L, "moe.regroup", moe_recv_.data(), a.moe_x.data(), ep_, El_);
    const V2<S> y = ep_ > 1 ? moe_y_ : a.moe_out;
    for (std::int64_t j = 0; j < El_; ++j) {
      const MlpParams& m = p.experts[j];
      const std::string X = expert_prefix(L, j);
      const U2<S> h = expert_rows(a.h, j), gact = expert_rows(a.gact, j);
      gemm(X, "fc1", Trans::no, Trans::no, expert_rows(a.moe_x, j), m.w1, h, false);
      op(
          X, "gelu", "bias_gelu_forward", [&] { return kv({{"rows", ep_ * C_}, {"cols", Fl_}}); },
          kernels::bias_gelu_forward_flops(ep_ * C_, Fl_), kernels::bias_gelu_forward_bytes(ep_ * C_, Fl_, sizeof(S)),
          [&] { kernels::bias_gelu_forward(exec_, h, m.b1, gact); });
      gemm(X, "fc2", Trans::no, Trans::no, gact, m.w2, expert_rows(y, j), false);
    }
    regroup(L, "moe.regroup.back", moe_y_.data(), moe_send_.data(), El_, ep_);
    ep_alltoall(regrouped() ? moe_send_.data() : moe_y_.data(), a.moe_out.data(), L, "moe.combine");
    op(
        L, "moe.combine", "moe_combine", [&] { return kv({{"tokens", T_}, {"top_k", k_}, {"dim", H_}}); },
        moe_combine_flops(T_, k_, H_), moe_combine_bytes(T_, k_, H_, sizeof(S)),
        [&] { moe_combine(exec_, a.moe_out.data(), a.probs.data(), a.rows.data(), proj_ws_.data(), T_, E_, k_, C_, H_); });
  }

  // From the gradient at the layer's output dy to da_ (the norm's), with the router's and
  // the experts' gradients (the router's reported to the sink; the experts' come last in
  // the flat buffer: final when the backward ends).
  void moe_backward(LayerParams& p, LayerActs& a, V2<S> dy, GradientSink* sink) {
    using kernels::Trans;
    const std::string& L = p.prefix;
    const std::int64_t R = E_ * C_;
    S* dout = ep_ > 1 ? moe_send_.data() : moe_dy_.data();
    op(
        L, "moe.combine.backward", "moe_combine_backward", [&] { return kv({{"rows", R}, {"dim", H_}}); },
        moe_combine_backward_flops(R, H_), moe_combine_backward_bytes(R, H_, sizeof(S)),
        [&] { moe_combine_backward(exec_, dy.data(), a.probs.data(), a.tokens.data(), dout, E_, C_, H_); });
    op(
        L, "moe.gate.backward", "moe_gate_backward",
        [&] { return kv({{"tokens", T_}, {"experts", E_}, {"top_k", k_}, {"dim", H_}}); },
        moe_gate_backward_flops(T_, k_, H_), moe_gate_backward_bytes(T_, k_, E_, H_, sizeof(S)), [&] {
          moe_gate_backward(exec_, dy.data(), a.moe_out.data(), a.rows.data(), dprobs_.data(), T_, E_, k_, C_, H_);
        });
    ep_alltoall(moe_send_.data(), regrouped() ? moe_recv_.data() : moe_dy_.data(), L, "moe.combine.backward");
    regroup(L, "moe.regroup.backward", moe_recv_.data(), moe_dy_.data(), ep_, El_);
    S* dx = regrouped() ? moe_y_.data() : ep_ > 1 ? moe_send_.data() : moe_dx_.data();
    for (std::int64_t j = El_ - 1; j >= 0; --j)
      mlp_backward(expert_prefix(L, j), p.experts[j], expert_rows(a.moe_x, j), expert_rows(a.h, j),
                   expert_rows(a.gact, j), expert_rows(moe_dy_, j), moe_dg_, expert_rows(dx, j), nullptr);
    regroup(L, "moe.regroup.back.backward", moe_y_.data(), moe_send_.data(), El_, ep_);
    ep_alltoall(moe_send_.data(), moe_recv_.data(), L, "moe.dispatch.backward");
    const S* drows = ep_ > 1 ? moe_recv_.data() : moe_dx_.data();
    op(
        L, "moe.dispatch.backward", "moe_dispatch_backward", [&] { return kv({{"tokens", T_}, {"top_k", k_}, {"dim", H_}}); },
        moe_dispatch_backward_flops(T_, k_, H_), moe_dispatch_backward_bytes(T_, k_, H_, sizeof(S)),
        [&] { moe_dispatch_backward(exec_, drows, a.rows.data(), da_.data(), T_, k_, H_); });
    op(
        L, "router.softmax.backward", "softmax_backward", [&] { return kv({{"rows", T_}, {"cols", E_}}); },
        kernels::softmax_backward_flops(T_, E_), kernels::softmax_backward_bytes(T_, E_, sizeof(S)),
        [&] { kernels::softmax_backward(exec_, a.probs, dprobs_, dprobs_); });
    gemm(L, "router.wgrad", Trans::yes, Trans::no, a.a2, dprobs_, p.dwr, true);
    ready(sink, p.i_router);
    gemm(L, "router.dgrad", Trans::no, Trans::yes, dprobs_, p.wr, da_, true);
  }

  void embedding_backward(int mb, GradientSink* sink) {
    static const std::string E = "embedding.";
    auto rows = Kokkos::subview(rows_, mb, Kokkos::ALL);
    op(
        E, "position.backward", "embedding_backward", [&] { return kv({{"vocab", S_}, {"tokens", Tl_}, {"dim", H_}}); },
        kernels::embedding_backward_flops(Tl_, H_), kernels::embedding_backward_bytes(S_, Tl_, H_, sizeof(S), 4),
        [&] { kernels::embedding_backward(exec_, demb_, pos_index_, pos_scratch_); });
    add(E, "position.grad_add", store_.grad1(i_pos_).data(), store_.grad1(i_pos_).data(), pos_scratch_.data(),
        S_ * H_);
    ready(sink, i_pos_);
    const V2<S> demb_all = sp_ ? dy_all_ : demb_;  // the token table's gradient takes every rank's tokens
    tp_gather(demb_.data(), demb_all, E, "dy");
    op(
        E, "token.backward", "embedding_backward",
        [&] { return kv({{"vocab", Vrows_}, {"tokens", T_}, {"dim", H_}}); }, kernels::embedding_backward_flops(T_, H_),
        kernels::embedding_backward_bytes(Vrows_, T_, H_, sizeof(S), 4),
        [&] { kernels::embedding_backward(exec_, demb_all, rows, tok_scratch_); });
    // The zero row's gradient (the last row of the scratch) is dropped.
    add(E, "token.grad_add", store_.grad1(i_tok_).data(), store_.grad1(i_tok_).data(), tok_scratch_.data(),
        Vl_ * H_);
    ready(sink, i_tok_);
  }

  static constexpr double layernorm_eps = 1e-5;

  Exec exec_;
  Recorder& rec_;
  ParamStore<S>& store_;
  WaitMode wait_;
  model::DensePath dense_;
  model::Recompute recompute_;
  LayerActs shared_acts_;  // what recomputation overwrites: every layer's and slot's (full), or P alone (selective)
  V2<S> recompute_y_;      // full recomputation's layer output (the next layer's input stays the slot's)
  MPI_Comm tp_comm_, ep_comm_;  // ep_comm_: the dp group
  int tp_, ep_, tp_rank_;
  bool first_, last_, sp_;
  std::int64_t b_, S_, H_, T_, Tl_, tok0_, Hl_, Al_, D_, Fl_, Vl_, Vrows_, BH_;
  std::int64_t E_, El_, k_, C_;  // experts, the rank's, choices per token, rows per expert and micro-batch
  S scale_;
  int i_pos_ = -1, i_tok_ = -1, i_head_ = -1, i_lnf_ = -1;
  std::vector<LayerParams> layers_;
  std::vector<Slot> slots_;
  Tokens pos_index_;
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> rows_, targets_;
  V2<S> emb_tok_, emb_pos_, demb_, tok_scratch_, pos_scratch_;
  V2<S> qkv_ws_, proj_ws_, gA_, gB_, da_, dxln_, dx1_, dg_, dom_, dqkv_;
  V2<S> dy_all_, dx1_all_;  // sp: every rank's tokens of the gradients the GEMMs take
  V3<S> o_ws_, do_, dP_;
  V1<S> dqkvh_, ln_scratch_, b1_scratch_;
  // Experts: each token's choices; the probabilities' gradient; the rows' workspaces.
  Index choice_;
  V2<S> dprobs_, moe_send_, moe_recv_, moe_y_, moe_dy_, moe_dx_, moe_dg_;
};

}  // namespace sextant::train
