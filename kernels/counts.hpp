#pragma once
// What each kernel counts: the FLOP and byte formulas of every kernel the models cost,
// as plain constexpr arithmetic with no Kokkos, so that models/ (which links no Kokkos)
// and the kernels use the same functions. Each kernel's header says what its counts
// mean in words; the formulas live here, once. The training proxy's own kernels
// (suites/train/ops.hpp) are counted here too, and family_of names the compute
// model's key for any kernel the proxy runs.
#include <string_view>

namespace sextant::kernels {

// ---- STREAM (stream.hpp): arrays named in the kernel, each moved once, no write-allocate.
enum class StreamOp { copy, scale, add, triad, dot };

inline constexpr double stream_flops(StreamOp op, double n) {
  switch (op) {
    case StreamOp::copy: return 0;
    case StreamOp::scale: return n;
    case StreamOp::add: return n;
    case StreamOp::triad: return 2 * n;
    case StreamOp::dot: return 2 * n;
  }
  return 0;
}
inline constexpr double stream_arrays(StreamOp op) {
  switch (op) {
    case StreamOp::copy:
    case StreamOp::scale:
    case StreamOp::dot: return 2;
    case StreamOp::add:
    case StreamOp::triad: return 3;
  }
  return 0;
}
inline constexpr double stream_bytes(StreamOp op, double n, double scalar_bytes) {
  return stream_arrays(op) * n * scalar_bytes;
}

// ---- GEMM (gemm.hpp): 2 M N K per batch entry; compulsory A, B, C traffic (C read too when beta != 0).
inline constexpr double gemm_flops(double m, double n, double k, double batch = 1) {
  return 2.0 * m * n * k * batch;
}
inline constexpr double gemm_bytes(double m, double n, double k, double scalar_bytes,
                                   double batch = 1, bool beta_nonzero = false) {
  return (m * k + k * n + m * n * (beta_nonzero ? 2 : 1)) * scalar_bytes * batch;
}

// ---- Attention, unfused (attention.hpp): its GEMMs and softmax; the score matrix counted per step that touches it.
inline constexpr double attention_forward_flops(double bh, double lq, double lk, double d) {
  return 4 * bh * lq * lk * d + 5 * bh * lq * lk;
}
// Exponentials: the forward's softmax, 1 per score (the backward reads P, computes none).
inline constexpr double attention_forward_exps(double bh, double lq, double lk) { return bh * lq * lk; }
inline constexpr double attention_backward_flops(double bh, double lq, double lk, double d) {
  return 8 * bh * lq * lk * d + 4 * bh * lq * lk;
}
inline constexpr double attention_forward_bytes(double bh, double lq, double lk, double d, double s) {
  return bh * (2 * lq * d + 2 * lk * d + 4 * lq * lk) * s;
}
inline constexpr double attention_backward_bytes(double bh, double lq, double lk, double d, double s) {
  return bh * (4 * lq * d + 4 * lk * d + 7 * lq * lk) * s;
}

// ---- Row softmax (softmax.hpp): per element 5 forward, 4 backward (exp counted as 1).
inline constexpr double softmax_forward_flops(double rows, double cols) { return 5 * rows * cols; }
inline constexpr double softmax_backward_flops(double rows, double cols) { return 4 * rows * cols; }
inline constexpr double softmax_forward_bytes(double rows, double cols, double s) {
  return 2 * rows * cols * s;
}
inline constexpr double softmax_backward_bytes(double rows, double cols, double s) {
  return 3 * rows * cols * s;
}
// Exponentials (kernels/fast_math.hpp), each one of the FLOPs above: forward 1 per
// element, backward none.
inline constexpr double softmax_forward_exps(double rows, double cols) { return rows * cols; }

// ---- Layer norm (layernorm.hpp): per element 8 forward, 18 backward.
inline constexpr double layernorm_forward_flops(double rows, double cols) { return 8 * rows * cols; }
inline constexpr double layernorm_backward_flops(double rows, double cols) { return 18 * rows * cols; }
inline constexpr double layernorm_forward_bytes(double rows, double cols, double s) {
  return (2 * rows * cols + 2 * cols + 2 * rows) * s;
}
inline constexpr double layernorm_backward_bytes(double rows, double cols, double s) {
  return (3 * rows * cols + 3 * cols + 2 * rows) * s;
}

// ---- bias + GELU and ReLU (activation.hpp): per element, tanh counted as 1.
inline constexpr double bias_gelu_forward_flops(double rows, double cols) { return 10 * rows * cols; }
inline constexpr double bias_gelu_backward_flops(double rows, double cols) { return 22 * rows * cols; }
inline constexpr double bias_gelu_forward_bytes(double rows, double cols, double s) {
  return (2 * rows * cols + cols) * s;
}
inline constexpr double bias_gelu_backward_bytes(double rows, double cols, double s) {
  return (3 * rows * cols + 2 * cols) * s;
}
// Exponentials (the GELU's 2^v), each one of the FLOPs above: 1 per element both ways.
inline constexpr double bias_gelu_forward_exps(double rows, double cols) { return rows * cols; }
inline constexpr double bias_gelu_backward_exps(double rows, double cols) { return rows * cols; }
inline constexpr double relu_forward_flops(double n) { return n; }
inline constexpr double relu_backward_flops(double n) { return n; }
inline constexpr double relu_forward_bytes(double n, double s) { return 2 * n * s; }
inline constexpr double relu_backward_bytes(double n, double s) { return 3 * n * s; }

// ---- Embedding (embedding.hpp): gather 0 FLOPs, scatter-add one add per gradient element.
inline constexpr double embedding_forward_flops(double, double) { return 0; }
inline constexpr double embedding_backward_flops(double tokens, double dim) { return tokens * dim; }
inline constexpr double embedding_forward_bytes(double tokens, double dim, double s, double index_bytes) {
  return 2 * tokens * dim * s + tokens * index_bytes;
}
inline constexpr double embedding_backward_bytes(double vocab, double tokens, double dim, double s,
                                                 double index_bytes) {
  return (vocab * dim + 3 * tokens * dim) * s + tokens * index_bytes;
}

// ---- Sum reduction (reduction.hpp).
inline constexpr double reduce_sum_flops(double n) { return n; }
inline constexpr double reduce_sum_bytes(double n, double s) { return n * s; }

// ---- AdamW (adamw.hpp): 16 FLOPs and 7 array moves per parameter.
inline constexpr double adamw_flops(double n) { return 16 * n; }
inline constexpr double adamw_bytes(double n, double s) { return 7 * n * s; }

// ---- The training proxy's own kernels (suites/train/ops.hpp) ------------------------
// Head permutes: pure data movement, every element read once and written once.
inline constexpr double heads_permute_bytes(double elements, double s) { return 2 * elements * s; }
// Vocabulary-parallel cross-entropy (exp counted as 1): max 1 per element; sum 3 per
// element (subtract, exp, add); backward 5 per element (subtract, exp, multiply,
// subtract, scale) + 4 per row (reciprocal, log, two adds). Bytes (targets int32): max
// rows cols + rows (m written); sum rows cols + 3 rows (m read, s and t written) +
// targets; backward 2 rows cols (z read, dz written) + 3 rows (m, s, t) + targets.
inline constexpr double cross_entropy_max_flops(double r, double c) { return r * c; }
inline constexpr double cross_entropy_max_bytes(double r, double c, double s) { return (r * c + r) * s; }
inline constexpr double cross_entropy_sum_flops(double r, double c) { return 3 * r * c; }
inline constexpr double cross_entropy_sum_bytes(double r, double c, double s) { return (r * c + 3 * r) * s + r * 4; }
inline constexpr double cross_entropy_backward_flops(double r, double c) { return 5 * r * c + 4 * r; }
inline constexpr double cross_entropy_backward_bytes(double r, double c, double s) {
  return (2 * r * c + 3 * r) * s + r * 4;
}
// Mixture of experts (indices int32): t tokens of h features, e experts, k choices per
// token, r = e x capacity expert rows.
// route: top-k of each token's e probabilities, then each expert's rows assigned in
//   token order: probabilities read once, each token's choices and rows written, the
//   rows' tokens written (compares only: no FLOPs).
// dispatch: each expert row copied from its token (or zeroed): r h read and written.
// combine: each token's output the probability-weighted sum of its k rows: 2 k h FLOPs,
//   t k h read, t h written, the choices and their probabilities read.
// combine backward: each expert row the gradient of its token scaled by its probability;
//   gate backward: each choice's probability gradient, a dot of h (the rest zero).
// dispatch backward: each token's gradient the sum of its k rows' gradients.
// regroup: expert rows from [ranks][experts][capacity] to [experts][ranks][capacity].
inline constexpr double moe_route_bytes(double t, double e, double k, double r, double s) {
  return t * e * s + 2 * t * k * 4 + r * 4;
}
inline constexpr double moe_dispatch_bytes(double r, double h, double s) { return 2 * r * h * s + r * 4; }
inline constexpr double moe_combine_flops(double t, double k, double h) { return 2 * t * k * h; }
inline constexpr double moe_combine_bytes(double t, double k, double h, double s) {
  return (t * k * h + t * h + t * k) * s + t * k * 4;
}
inline constexpr double moe_combine_backward_flops(double r, double h) { return r * h; }
inline constexpr double moe_combine_backward_bytes(double r, double h, double s) { return (2 * r * h + r) * s + r * 4; }
inline constexpr double moe_gate_backward_flops(double t, double k, double h) { return 2 * t * k * h; }
inline constexpr double moe_gate_backward_bytes(double t, double k, double e, double h, double s) {
  return (t * h + t * k * h + t * e) * s + t * k * 4;
}
inline constexpr double moe_dispatch_backward_flops(double t, double k, double h) { return t * k * h; }
inline constexpr double moe_dispatch_backward_bytes(double t, double k, double h, double s) {
  return (t * k * h + t * h) * s + t * k * 4;
}
inline constexpr double moe_regroup_bytes(double r, double h, double s) { return 2 * r * h * s; }
// Zeroing the gradients: every element written once.
inline constexpr double fill_bytes(double n, double s) { return n * s; }
// An element type conversion: n elements read at `from` bytes each, written at `to`;
// the rounding is a few integer operations (or one convert instruction), no FLOPs.
// to_float64 / to_float32: mixed precision's widening of the gradients and narrowing of
// the master parameters.
inline constexpr double convert_bytes(double n, double from, double to) { return n * (from + to); }
// to_bfloat16 / from_bfloat16 (the compressed gradient sync): s bytes one way, 2 the other.
inline constexpr double bfloat16_convert_bytes(double n, double s) { return convert_bytes(n, s, 2); }

// The kernel registry's family of a kernel the proxy runs (the compute model's key,
// kernels/descriptors/*.cpp); the proxy's own kernels take the family of the closest
// measured ones: the permutes, the gradient fill, the type conversions and the experts'
// routing move data (stream), the cross-entropy passes are row-wise softmax reductions
// (normalization). "unknown" for anything else.
inline constexpr std::string_view family_of(std::string_view kernel) {
  auto starts = [&](std::string_view p) { return kernel.substr(0, p.size()) == p; };
  if (starts("vendor_gemm")) return "vendor_gemm";
  if (starts("gemm")) return "gemm";
  if (starts("attention_")) return "attention";
  if (starts("layernorm_") || starts("softmax_") || starts("cross_entropy_")) return "normalization";
  if (starts("bias_gelu_") || starts("relu_")) return "activation";
  if (starts("embedding_")) return "embedding";
  if (starts("stream_") || kernel == "split_heads" || kernel == "merge_heads" || kernel == "fill" ||
      kernel == "to_float32" || kernel == "to_float64" || kernel == "to_bfloat16" || kernel == "from_bfloat16" ||
      starts("moe_"))
    return "stream";
  if (kernel == "adamw_update") return "optimizer";
  return "unknown";
}

}  // namespace sextant::kernels
