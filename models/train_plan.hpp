#pragma once
// What one training step of the transformer proxy does, as data: per pipeline stage,
// the operators of one micro-batch (forward, backward) with their FLOP and byte
// counts, the communication each phase issues, and the optimizer step. The proxy
// (suites/train) executes exactly this decomposition; the step predictor
// (models/step_predictor) costs it with the operator and collective models. Sharing
// one plan keeps the two consistent by construction. No MPI, no Kokkos here.
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace sextant::model {

enum class Schedule { gpipe, one_f_one_b };
enum class Optimizer { sgd, adamw };
// Activation recomputation: what the forward pass keeps for the backward. none: every
// layer's activations, per micro-batch in flight. selective: all but the attention
// probabilities [batch x heads, seq, seq], which the backward recomputes (the attention
// kernel's forward again, Megatron's selective recomputation). full: only each layer's
// input; the backward runs the layer's forward again (its TP allreduces included) right
// before the layer's backward.
enum class Recompute { none, selective, full };
const char* to_string(Recompute);
// Which implementation runs the dense operators (GEMMs): the portable Kokkos kernels,
// or the vendor's BLAS through Kokkos Kernels (what frameworks call). The step plan
// names the kernels of that path, so each is costed by its own operator model.
enum class DensePath { portable, vendor };
const char* to_string(DensePath);
DensePath parse_dense_path(const std::string& name);  // throws UsageError naming the value

// How the dp gradient sync sends the gradients. bf16: each bucket converted to bfloat16
// (core/bfloat16.hpp) before its allreduce, summed in bfloat16, converted back: half the
// bytes of float32 (a quarter of float64) on the wire, at 8 significant bits.
enum class Compression { none, bf16 };
const char* to_string(Compression);

struct TrainConfig {
  // Model
  int layers = 2, hidden = 64, heads = 4, seq = 32, vocab = 256;
  // Batch: global batch = micro_batch * micro_batches * dp
  int micro_batch = 2, global_batch = 8;
  // Parallelism (dp * tp * pp = ranks)
  int dp = 1, tp = 1, pp = 1;
  Schedule schedule = Schedule::one_f_one_b;
  Optimizer optimizer = Optimizer::adamw;
  // ZeRO stage over dp (only with dp > 1). 1: optimizer state sharded: each bucket's
  // gradients reduce-scattered, each rank updates its block, an allgather per bucket
  // gives every rank the updated parameters. 3 (FSDP): parameters sharded too: the
  // buckets are the parameter units (param_unit), each unit's parameters allgathered
  // right before its forward and again before its backward, released after each use,
  // and never gathered after the update. (2 shards the gradients as well: its traffic is
  // 1's, and the proxy accumulates unsharded gradients over micro-batches, so it would
  // be 1 under another name: not offered.)
  int zero = 0;
  DensePath dense = DensePath::portable;  // the proxy defaults to vendor where it has it
  bool overlap_dp = false;      // gradient allreduce per bucket, overlapped with backward
  Recompute recompute = Recompute::none;
  // Sequence parallelism beside tp (Megatron's): the layer norms, residual adds and the
  // position embedding work on T / tp of the micro-batch's tokens per rank; each TP
  // allreduce becomes a reduce-scatter into the rank's tokens, and an allgather of them
  // comes before each column-parallel GEMM (the same bytes moved, the norms' work and
  // the pipeline's messages divided by tp). The norms' and the position embedding's
  // gradients are then partial sums over the tokens: one allreduce over tp per step,
  // before the update. Needs tp > 1.
  bool sp = false;
  // Stale-synchronous data parallelism (the consistency model's bounded staleness, with a
  // fixed delay): step t applies the dp-averaged gradients of step t - staleness, whose
  // allreduce ran behind the steps between (polled after every kernel); this step's
  // gradients are copied aside and their allreduce started right after the update. The
  // first `staleness` steps apply nothing. 0: synchronous. Needs zero = 0 and no overlap
  // (the sync is already off the step).
  int staleness = 0;
  // The dp gradient sync in bfloat16 (Compression): in the optimizer step, like the sp
  // gradients' sum: the whole gradient converted (optimizer.compress), each bucket's
  // allreduce on the converted copy, converted back (optimizer.decompress). Needs zero =
  // 0, no overlap and staleness 0 (their syncs run on the gradients in place).
  Compression compress = Compression::none;
  // Mixture of experts (Switch/GShard): with experts = E > 0 every layer's MLP is E
  // expert MLPs (each hidden -> 4 hidden -> hidden, GELU) behind a router (a [hidden, E]
  // GEMM and a softmax); each token goes to its top_k experts, scaled by the router's
  // probability, and each expert takes at most capacity x top_k x tokens / E of a
  // micro-batch's tokens (first choices first, in token order; the rest pass by on the
  // residual alone). No load-balancing loss: the loss is the cross-entropy, so any layout
  // of one model trains the same curve. Expert parallelism: ep = dp ranks each hold E / ep
  // of the experts; the tokens go to their experts' ranks and back by an all-to-all
  // (dispatch and combine, and both again in backward) over the dp group, and the
  // experts' gradients, complete on their rank, skip the dp sync. ep = 1: every rank
  // holds every expert, synced over dp like the other parameters. Not with tp (the
  // experts are not split over tp ranks).
  int experts = 0, top_k = 1, ep = 1;
  double capacity = 1.25;
  int expert_capacity() const;  // rows per expert and micro-batch: ceil(capacity top_k T / E), at least 1
  double bucket_bytes = 1 << 20;
  std::string dtype = "float32";
  // Mixed precision: the optimizer's copy of the parameters, and its moments, in a wider
  // type than the step computes in ("": dtype's, no copy). With master = float64 beside
  // dtype = float32 the forward, backward and gradient sync run in float32 and each
  // update widens the (summed) gradients to float64, updates the float64 master
  // parameters and narrows them back into the step's float32 ones: the fp32-master
  // scheme of 16-bit training, one width up (the kernels have float32 and float64).
  std::string master;
  const std::string& master_dtype() const { return master.empty() ? dtype : master; }
  bool mixed() const { return master_dtype() != dtype; }
  int micro_batches() const;    // global_batch / (micro_batch * dp); validated by validate()
  int ranks() const { return dp * tp * pp; }
  void validate() const;        // throws sextant::UsageError naming the inconsistent option
};

// The step plan lists every operator of every layer (about 40 per layer: the proxy
// runs them and its traces are matched to them by name), so planning and predicting
// cost time and memory in proportion to the layers, and --search plans every layout.
// The deepest transformers trained have about a hundred layers; 4096 keeps one plan
// near 0.1 s and 50 MB. validate() refuses more, naming this limit.
inline constexpr int max_train_layers = 4096;
// Each step of delay keeps one more copy of the gradients in flight.
inline constexpr int max_train_staleness = 8;

// A configuration as `sextant predict --train` and the Python module take it:
// "layers=24,hidden=2048,...,dp=64,tp=8,pp=1,schedule=1f1b,zero=1,overlap=1" (the keys
// of TrainConfig, spelled as in models/json.hpp); unset keys keep their defaults. Throws
// UsageError naming the key or value; validated.
TrainConfig parse_train_config(const std::string& text);

// The keys of a configuration, one parser for them all: `predict --train key=value,...`
// and the command-line options of the proxy and its checks (--micro-batch for
// micro_batch, suites/train/config_options.hpp) go through set_train_config_key.
struct TrainConfigKey {
  const char* name;  // as in parse_train_config and models/json.hpp
  const char* help;
  bool on_off;       // overlap, zero1: a command-line flag
};
std::span<const TrainConfigKey> train_config_keys();
// Sets one key from its text; throws UsageError naming the key or value. Not validated
// (validate() checks the whole configuration once every key is set).
void set_train_config_key(TrainConfig& config, const std::string& key, const std::string& value);

// A tensor an operator reads or writes, and the bytes of it the operator touches. The
// names are the proxy's buffers (suites/train/model.hpp): "p:layer3.fc1.weight" and
// "g:..." a parameter and its gradient, "m:"/"v:" AdamW's moments, "ws.da" a workspace
// every layer and micro-batch shares, and a name ending in '#' a buffer of the
// micro-batch's activation slot (the cache model appends the slot). Which of them are
// the same memory is what decides the cache state an operator meets in a step
// (models/cache_state.hpp).
struct Operand {
  std::string tensor;
  double bytes = 0;
};

struct ComputeOp {
  ComputeOp(std::string name = {}, std::string family = {}, std::string shape = {}, double flops = 0, double bytes = 0,
            std::string kernel = {}, std::vector<Operand> operands = {}, std::string dtype = {})
      : name(std::move(name)), family(std::move(family)), shape(std::move(shape)), flops(flops), bytes(bytes),
        kernel(std::move(kernel)), operands(std::move(operands)), dtype(std::move(dtype)) {}
  std::string name;     // "layer3.fc1" (stable, for matching measured traces)
  std::string family;   // operator family of the compute model: gemm, layernorm, ...
  std::string shape;    // e.g. "M=64,N=256,K=64"
  double flops, bytes;
  std::string kernel;   // the kernel that runs, as the kernel registry names it
                        // (gemm, layernorm_backward, ...; suites/train's own: split_heads, ...)
  std::vector<Operand> operands;  // each tensor once (the plan's; the proxy's records leave it empty)
  // The element type it runs in, as the compute model's dtype ("float64": a mixed-precision
  // step's master update); "" for the step's own.
  std::string dtype;
};

// The parallelism a message serves: its communicator, and the level that costs it (ep:
// the experts' all-to-alls, on the dp group).
enum class Traffic { tp, dp, pp, ep };
const char* to_string(Traffic traffic);

struct CommOp {
  CommOp(std::string name = {}, Traffic traffic = Traffic::dp, std::string collective = {}, double bytes = 0,
         int ranks = 1, std::string after = {})
      : name(std::move(name)), traffic(traffic), collective(std::move(collective)), bytes(bytes), ranks(ranks),
        after(std::move(after)) {}
  std::string name;        // "layer3.attn_out.tp_allreduce"
  Traffic traffic;
  std::string collective;  // benchmark name of the comm model: allreduce, pingpong, ...
  double bytes;            // in that benchmark's size unit (docs/comm-suite.md)
  int ranks;               // communicator size
  std::string after;       // in a phase: the compute op it is issued right after ("": first)
  // Issued right behind another collective, with no compute between (DP's buckets after
  // the first; a phase's second collective after the same op): it meets the transport
  // as that one left it, and is costed by the back-to-back measurement; others by the
  // isolated one where the model has it (models/collectives.hpp).
  bool back_to_back = false;
  // The element type on the wire, as the comm model's dtype ("bfloat16": the compressed
  // gradient sync); "" for the step's own.
  std::string dtype;
};

// Whether every tp rank holds the whole parameter (the layer norms, the position
// embedding). Under sequence parallelism their gradients are partial sums over the
// ranks' tokens, summed over tp once per step.
bool replicated_over_tp(const std::string& parameter);

// Whether a parameter is one of an MoE layer's experts ("layer3.expert1.fc1.weight": the
// stage's expert 1 of the rank's E / ep; TrainConfig::experts). With ep > 1 they are the
// rank's own and skip the dp sync; they come last in the flat buffer either way.
bool expert_parameter(const std::string& parameter);

// The unit a parameter belongs to for ZeRO-3 (what is gathered and released together,
// FSDP's wrapped module): "layer<l>", "final" (head and final layernorm), "embedding".
std::string param_unit(const std::string& parameter);

// One phase of one micro-batch on one stage: compute, and the communication, each issued
// right after its `after` op (in order).
struct Phase {
  std::vector<ComputeOp> compute;
  std::vector<CommOp> comm;  // blocking; their time adds to the phase
};

struct StagePlan {
  int stage = 0;
  int layers_first = 0, layers_count = 0;
  Phase forward, backward;      // per micro-batch
  CommOp send_activation;       // to the next stage (empty name on the last stage)
  CommOp send_gradient;         // to the previous stage (empty name on the first)
  std::vector<CommOp> dp_sync;  // gradient sync per step (buckets), in backward order
  Phase optimizer;              // per step
  double parameters = 0;        // on this stage and tp rank
  // What the communication touches, for the cache model: the buffer a received
  // activation or gradient lands in, and the gradients the dp sync reduces in place.
  std::vector<Operand> receive_activation, receive_gradient, dp_sync_operands;
};

struct StepPlan {
  TrainConfig config;
  std::vector<StagePlan> stages;  // pp entries
};

StepPlan plan_step(const TrainConfig& config);

// About how many distinct bytes a rank of this stage touches in one step: parameters,
// gradients and optimizer state, plus what the forward passes of the micro-batches in
// flight move (their activations stay for the backward). Between two calls of one
// operator a rank streams about this much through its caches: it says which cache
// state the step's operators meet.
double step_working_set_bytes(const StepPlan& plan, int stage);

}  // namespace sextant::model
