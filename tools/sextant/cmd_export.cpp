// sextant export FILE --to FORMAT -o OUT: sextant's measurements and models in the
// input formats of neighbouring tools. One descriptor per format: its name, the kind of
// sextant file it reads, what it writes, and the function that writes it.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/replace_file.hpp"
#include "core/schema.hpp"
#include "core/units.hpp"
#include "models/comm_model.hpp"
#include "models/compute_model.hpp"
#include "models/model_file.hpp"
#include "models/step_predictor.hpp"
#include "models/train_plan.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {
namespace {

using Json = nlohmann::json;

// What an export writes: (file name, content) pairs; one with an empty name is the
// output itself, several go into the output directory.
using Files = std::vector<std::pair<std::string, std::string>>;

struct ExportOptions {
  int ranks = 0, ranks_per_node = 0;  // astra-sim: the system to describe
  std::string train;                  // astra-sim: a training step to write as its workload
  double memory_per_rank = 0;         // calculon: mem1 capacity, bytes
};

// Extra-P's JSON input (the "parameters"/"measurements" form of its file-format
// documentation, Extra-P 4.x): parameters p (ranks) and n (bytes in the benchmark's
// size unit); one callpath per benchmark, level and dtype; metric "time" in seconds;
// per measured (p, n) the collective time of every valid repetition (the slowest
// rank's), as the results file's samples hold them, so that Extra-P models over the
// repetitions itself. Sizes stored as not measured are left out, and benchmarks
// without a size (barrier).
Files export_extrap(const std::string& results, const ExportOptions&) {
  h5::File file = open_checked(results, results_schema);
  Json measurements = Json::object();
  std::size_t points = 0;
  for_each_rank_group(file, "comm", [&](const RankGroup& g) {
    const double ranks = static_cast<double>(g.group.attr_int("ranks"));
    const auto bytes = g.group.dataset("bytes").read_doubles();
    if (std::all_of(bytes.begin(), bytes.end(), [](double n) { return n == 0; })) return;  // unsized (barrier)
    const h5::Group samples = g.group.group("samples");
    Json& series = measurements[g.benchmark + " " + g.level + " " + g.dtype]["time"];
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      char name[24];  // room for any size_t: the sample groups are 000, 001, ...
      std::snprintf(name, sizeof name, "%03zu", i);
      const h5::Dataset d = samples.dataset(name);
      const auto shape = d.shape();
      const auto t = d.read_doubles();
      const std::size_t columns = shape.size() == 2 ? shape[1] : 1;
      std::vector<double> values;
      for (std::size_t row = 0; row < t.size() / columns; ++row) {
        double slowest = 0;
        bool valid = true;
        for (std::size_t c = 0; c < columns; ++c) {
          const double v = t[row * columns + c];
          if (std::isnan(v)) valid = false;
          else slowest = std::max(slowest, v);
        }
        if (valid) values.push_back(slowest);
      }
      if (values.empty()) continue;
      series.push_back({{"point", {ranks, bytes[i]}}, {"values", std::move(values)}});
      ++points;
    }
  });
  if (points == 0) throw Error(results + ": no communication measurements to export");
  std::cerr << "sextant export: " << measurements.size() << " callpaths, " << points << " (p, n) points\n";
  return {{"", Json{{"parameters", {"p", "n"}}, {"measurements", std::move(measurements)}}.dump(1) + "\n"}};
}

// ASTRA-sim 2.0's analytical network (network.yml: topology, npus_count, bandwidth,
// latency per dimension) and system configuration (system.json), from a model file.
// Each dimension is a switch with the fitted link of its level: latency the ping-pong's
// small-message alpha (ns), bandwidth its large-message 1/beta in astra-network-
// analytical's GB/s (1 GB = 2^30 B). One dimension (world) of --ranks NPUs, or with
// --ranks-per-node and intra and inter fits, two: the NPUs of a node, then the nodes.
// Collective implementations per dimension from the algorithm the model identified for
// the largest fitted size (ring stays ring, recursive doubling/halving and Rabenseifner
// are halvingDoubling, pairwise is direct; ring where nothing was identified); compute
// from the compute part when the model has one (peak-perf: the fp32 ceiling in TFLOP/s,
// local-mem-bw: the slowest memory level's bandwidth in GB/s).
// ASTRA-sim's workload for a --train configuration, in ASTRA-sim's text workload form:
// the layer table that Chakra's text converter (`et_converter --input_type Text`) turns
// into the execution traces ASTRA-sim 2.0 runs. Line 1 the parallelism (DATA: DP only;
// MODEL: TP only; HYBRID_DATA_MODEL: DP across the model-parallel groups of
// model_parallel_NPU_group NPUs), line 2 the number of layers, then a row per layer:
//   name trainable fwd_compute fwd_comm fwd_size ig_compute ig_comm ig_size
//   wg_compute wg_comm wg_size update
// with compute in whole microseconds (the converter's duration_micros) and sizes in
// bytes of the whole buffer. The layers are the step plan's: the embedding, each
// transformer layer, the final norm, head and loss. Per layer and step (all
// micro-batches): the forward ops' cost, the backward ops that read no parameter
// gradient (input gradient) and those that accumulate one (weight gradient), each as the
// step predictor costs it in the step's cache state; forward and input-gradient comm the
// layer's TP allreduces, merged into one of their summed bytes (the format has one
// collective per phase); weight-gradient comm the DP allreduce of the layer's gradients
// (ZeRO-1's reduce-scatter and all-gather written as that allreduce: the same bytes);
// update the optimizer step's cost, shared among the layers by their parameter bytes.
// Pipeline stages have no place in the format: pp must be 1.
std::string astra_sim_workload(const model::ModelFile& file, const std::string& model_path, const std::string& text) {
  auto config = model::parse_train_config(text);
  if (config.pp != 1)
    throw UsageError("--train: pp=" + std::to_string(config.pp) +
                     ": ASTRA-sim's text workload has no pipeline stages; give pp=1");
  if (config.zero == 3 && config.dp > 1)
    throw UsageError("--train: zero=3: the text workload writes a layer's forward and input-gradient communication "
                     "as its TP allreduces; ZeRO-3's parameter all-gathers have no place beside them; give zero=0 or 1");
  const auto& compute = model::compute_part(file, model_path);
  model::choose_dense_path(config, text, compute);
  const auto plan = model::plan_step(config);
  const auto& stage = plan.stages.front();
  const auto seconds = model::stage_op_seconds(plan, 0, compute);
  const double M = config.micro_batches();

  struct Layer {
    std::string name;
    double forward = 0, input_grad = 0, weight_grad = 0, forward_tp = 0, backward_tp = 0, gradient_bytes = 0;
  };
  std::vector<Layer> layers;  // in forward order
  auto layer_of = [&](const std::string& op) -> Layer& {
    const std::string name = op.substr(0, op.find('.'));
    for (auto& l : layers)
      if (l.name == name) return l;
    return layers.emplace_back(Layer{name});
  };
  auto reads_gradient = [](const model::ComputeOp& op) {
    return std::any_of(op.operands.begin(), op.operands.end(), [](const auto& x) { return x.tensor.rfind("g:", 0) == 0; });
  };
  for (const auto& op : stage.forward.compute) layer_of(op.name).forward += M * seconds.at(op.name);
  for (const auto& op : stage.backward.compute)
    (reads_gradient(op) ? layer_of(op.name).weight_grad : layer_of(op.name).input_grad) += M * seconds.at(op.name);
  for (const auto& c : stage.forward.comm) layer_of(c.name).forward_tp += M * c.bytes;
  for (const auto& c : stage.backward.comm) layer_of(c.name).backward_tp += M * c.bytes;
  // A gradient belongs to the layer whose backward op accumulates it ("g:head.weight" to
  // the final layer's logits GEMM, "g:layer3.ln1.gamma" to the op writing "g:layer3.ln1").
  auto owner = [&](const std::string& gradient) -> Layer& {
    for (const auto& op : stage.backward.compute)
      for (const auto& x : op.operands)
        if (gradient == x.tensor || gradient.rfind(x.tensor + ".", 0) == 0) return layer_of(op.name);
    return layer_of(gradient.substr(2));
  };
  double all_gradient_bytes = 0;
  for (const auto& g : stage.dp_sync_operands) {
    owner(g.tensor).gradient_bytes += g.bytes;
    all_gradient_bytes += g.bytes;
  }
  double optimizer = 0;
  for (const auto& op : stage.optimizer.compute) optimizer += seconds.at(op.name);

  const char* parallelism = config.tp > 1 ? (config.dp > 1 ? "HYBRID_DATA_MODEL" : "MODEL") : "DATA";
  std::string out = parallelism;
  if (config.tp > 1 && config.dp > 1) out += " model_parallel_NPU_group: " + std::to_string(config.tp);
  out += "\n" + std::to_string(layers.size()) + "\n";
  double exact = 0, written = 0;
  auto micros = [&](double t) {
    const long long us = std::llround(t * 1e6);
    exact += t * 1e6;
    written += double(us);
    return std::to_string(us);
  };
  auto comm = [](double bytes, const char* type) {
    const long long b = std::llround(bytes);
    return b > 0 ? std::string(type) + " " + std::to_string(b) : std::string("NONE 0");
  };
  for (const auto& l : layers) {
    const bool trainable = l.gradient_bytes > 0;
    out += l.name + (trainable ? " 1 " : " -1 ") + micros(l.forward) + " " + comm(l.forward_tp, "ALLREDUCE") + " " +
           micros(l.input_grad) + " " + comm(l.backward_tp, "ALLREDUCE") + " " + micros(l.weight_grad) + " " +
           comm(config.dp > 1 ? l.gradient_bytes : 0, "ALLREDUCE") + " " +
           micros(all_gradient_bytes > 0 ? optimizer * l.gradient_bytes / all_gradient_bytes : 0) + "\n";
  }
  std::cerr << "sextant export: workload of " << layers.size() << " layers, " << config.ranks() << " NPUs (dp " << config.dp
            << " x tp " << config.tp << "), " << M << " micro-batch(es) per step; compute " << format_seconds(exact * 1e-6)
            << " per step, written in whole microseconds (" << std::fabs(written - exact) / std::max(exact, 1e-300) * 100
            << "% off by rounding)\n";
  return out;
}

Files export_astra_sim(const std::string& model_path, const ExportOptions& options) {
  ExportOptions o = options;
  if (!o.train.empty()) {  // the workload's NPUs are the network's
    const int ranks = model::parse_train_config(o.train).ranks();
    if (o.ranks > 0 && o.ranks != ranks)
      throw UsageError("--ranks " + std::to_string(o.ranks) + ": the --train layout has " + std::to_string(ranks) +
                       " ranks (dp x tp x pp); give the same or leave --ranks out");
    o.ranks = ranks;
  }
  const auto file = model::read_model_file(model_path);
  const auto& comm = model::comm_part(file, model_path);
  const auto& compute = file.compute;
  struct Dimension {
    std::string level;
    int npus;
    const model::CommFit* link;
  };
  std::vector<Dimension> dims;
  if (o.ranks_per_node > 0) {
    const auto *intra = comm.link("intra"), *inter = comm.link("inter");
    if (!intra || !inter) throw Error(model_path + ": --ranks-per-node needs pingpong fits of the intra and inter levels");
    if (o.ranks <= 0 || o.ranks % o.ranks_per_node != 0)
      throw UsageError("--ranks " + std::to_string(o.ranks) + ": give a multiple of --ranks-per-node " +
                       std::to_string(o.ranks_per_node));
    dims = {{"intra", o.ranks_per_node, intra}, {"inter", o.ranks / o.ranks_per_node, inter}};
  } else {
    const auto* world = comm.link("world");
    if (!world) throw Error(model_path + ": no world pingpong fit to describe the network with");
    const int npus = o.ranks > 0 ? o.ranks : static_cast<int>(file.source.ranks);
    if (npus < 2) throw UsageError("--ranks: give the number of NPUs to describe (at least 2)");
    dims = {{"world", npus, world}};
  }
  auto list = [&](auto value) {
    std::string out = "[ ";
    for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + value(dims[i]);
    return out + " ]";
  };
  auto number = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return std::string(b);
  };
  std::string network = "# ASTRA-sim analytical network from sextant model " + model_path + "\n";
  network += "# per dimension: " + list([](const Dimension& d) { return d.level; }) + "\n";
  network += "topology: " + list([](const Dimension&) { return std::string("Switch"); }) + "\n";
  network += "npus_count: " + list([](const Dimension& d) { return std::to_string(d.npus); }) + "\n";
  network += "bandwidth: " + list([&](const Dimension& d) {
               return number(1.0 / d.link->fit.segments.back().beta / double(1 << 30));
             }) + "  # GB/s (2^30 B)\n";
  network += "latency: " + list([&](const Dimension& d) { return number(d.link->fit.segments.front().alpha * 1e9); }) +
             "  # ns\n";

  // The algorithm the library ran at the largest fitted size of a collective, per level.
  auto implementation = [&](const std::string& benchmark, const std::string& level) -> std::string {
    const model::AlgorithmFit* best = nullptr;
    for (const auto& a : comm.algorithms)
      if (a.benchmark == benchmark && a.level == level && (!best || a.ranks > best->ranks)) best = &a;
    if (!best || best->ranges.empty()) return "ring";
    const std::string& name = best->ranges.back().algorithm;
    if (name == "ring") return "ring";
    if (name == "pairwise") return "direct";
    return "halvingDoubling";
  };
  Json system{{"scheduling-policy", "LIFO"}, {"endpoint-delay", 10}, {"active-chunks-per-dimension", 1},
              {"preferred-dataset-splits", 4}, {"collective-optimization", "localBWAware"}, {"boost-mode", 0}};
  for (const auto& [key, benchmark] : {std::pair{"all-reduce-implementation", "allreduce"},
                                       std::pair{"all-gather-implementation", "allgather"},
                                       std::pair{"reduce-scatter-implementation", "reduce_scatter"},
                                       std::pair{"all-to-all-implementation", "alltoall"}}) {
    Json per_dim = Json::array();
    for (const auto& d : dims) per_dim.push_back(implementation(benchmark, d.level));
    system[key] = per_dim;
  }
  if (compute && compute->ceilings.peak_flops.count("float32") && !compute->ceilings.memory.empty()) {
    system["roofline-enabled"] = 1;
    system["peak-perf"] = compute->ceilings.peak_for("float32") / 1e12;
    system["local-mem-bw"] = compute->ceilings.memory.back().bandwidth / 1e9;
  } else {
    system["roofline-enabled"] = 0;
  }
  Files files{{"network.yml", network}, {"system.json", system.dump(4) + "\n"}};
  if (!o.train.empty()) files.push_back({"workload.txt", astra_sim_workload(file, model_path, o.train)});
  return files;
}

// Calculon's system file (the schema of calculon's System, Processor, Memory and
// Network classes: matrix, vector, mem1, mem2, processing_mode, networks), float32,
// from a model file with comm and compute parts. Calculon costs an operation as
// max(FLOPs / (tflops x efficiency(op GFLOP)), bytes / (GBps x efficiency(op MB))) and
// a collective as latency + size x scalar x (1 + offset / p) / (bandwidth x
// efficiency); each curve here is sextant's fitted model read at Calculon's points:
//  - matrix: the fp32 peak ceiling; efficiency = FLOPs / (peak x the GEMM operator
//    model's time) for square GEMMs of 10^3 .. 10^-4 GFLOP (the vendor path's model
//    when the file has one), each the efficiency from that size up, the last from 0.
//  - vector: the same peak; efficiency of the elementwise families' compute term with
//    their fixed cost: 1 / (1 / e_compute + t0 x peak / FLOPs), at the same points.
//  - mem1: capacity --memory-per-rank (sextant does not record it); GBps the last
//    (largest) memory level's ceiling; efficiency from each level's smallest working
//    set: e_memory of the elementwise families x that level's bandwidth / the last's,
//    at most 1 (Calculon's efficiency cannot exceed 1: caches faster than memory are
//    capped there).
//  - mem2 (offload memory): sextant measures none; capacity 0, so Calculon offloads
//    nothing (its bandwidth field repeats mem1's only because the format requires one).
//  - networks: one per fitted level, the innermost first (intra, inter; else world):
//    latency the ping-pong's alpha, bandwidth its 1/beta (GB/s, 10^9 B), efficiency 1
//    (the bandwidth is the achieved one), size the largest rank count fitted there;
//    each collective's scalar with offset -1 reproduces its fitted large-message
//    slope at that rank count (a collective not fitted there: the ring's, said on
//    stderr); processor_usage 0 (not measured: communication is not charged compute).
Files export_calculon(const std::string& model_path, const ExportOptions& o) {
  const auto file = model::read_model_file(model_path);
  const auto& comm = model::comm_part(file, model_path);
  const auto& compute = file.compute;
  if (!compute || !compute->ceilings.peak_flops.count("float32") || compute->ceilings.memory.empty())
    throw Error(model_path + ": calculon needs a compute part with a float32 peak and memory ceilings");
  if (!(o.memory_per_rank > 0))
    throw UsageError("--memory-per-rank SIZE: Calculon's mem1 capacity (sextant does not record it), e.g. 16G");
  const auto& ceil = compute->ceilings;
  const double peak = ceil.peak_for("float32");
  const double dram = ceil.memory.back().bandwidth;
  auto find_model = [&](std::initializer_list<const char*> names) -> const model::OperatorModel* {
    for (const char* n : names)
      if (const auto* m = compute->find(n, "float32")) return m;
    return nullptr;
  };
  const auto* gemm = find_model({"vendor_gemm", "family:vendor_gemm", "gemm", "family:gemm"});
  const auto* elementwise = find_model({"family:activation", "family:normalization", "bias_gelu_forward"});
  if (!gemm || !elementwise)
    throw Error(model_path + ": calculon needs float32 operator models of GEMM and of an elementwise family "
                             "(fit the compute or train suite's results)");
  Json matrix = Json::array(), vector = Json::array();
  for (double gflop : {1e3, 1e2, 1e1, 1.0, 1e-1, 1e-2, 1e-3, 1e-4}) {
    const double flops = gflop * 1e9, n = std::cbrt(flops / 2), bytes = 3 * n * n * 4;
    const double t = gemm->predict(ceil, flops, bytes);
    matrix.push_back({gflop, std::clamp(flops / (peak * t), 1e-6, 1.0)});
    vector.push_back({gflop, std::clamp(1 / (1 / elementwise->e_compute + elementwise->t0 * peak / flops), 1e-6, 1.0)});
  }
  matrix.back()[0] = 0;
  vector.back()[0] = 0;
  Json memory = Json::array();
  for (auto level = ceil.memory.rbegin(); level != ceil.memory.rend(); ++level)
    memory.push_back({level->lo_bytes / 1e6, std::min(1.0, elementwise->e_memory * level->bandwidth / dram)});
  memory.back()[0] = 0;
  Json networks = Json::array();
  std::vector<std::string> levels;
  for (const char* level : {"intra", "inter"})
    if (comm.link(level)) levels.push_back(level);
  if (levels.empty()) levels.push_back("world");
  for (const auto& level : levels) {
    const model::CommFit* link = comm.link(level);
    if (!link) throw Error(model_path + ": no pingpong fit at level " + level + " to describe its network with");
    const double beta_pp = link->fit.segments.back().beta;
    int size = 2;
    for (const auto& f : comm.fits)
      if (f.level == level) size = std::max(size, f.ranks);
    Json ops{{"p2p", {1.0, nullptr}}};
    for (const auto& [key, benchmark, ring] : {std::tuple{"all_reduce", "allreduce", 2.0},
                                               std::tuple{"reduce_scatter", "reduce_scatter", 1.0},
                                               std::tuple{"all_gather", "allgather", 1.0}}) {
      const model::CommFit* best = nullptr;
      for (const auto& f : comm.fits)
        if (f.benchmark == benchmark && f.level == level && f.dtype == "float32" && (!best || f.ranks > best->ranks))
          best = &f;
      double scalar = ring;
      if (best) {
        const double p = best->ranks;
        // Calculon's size is the whole vector; a per-rank block is 1/p of it.
        const double per_total_byte = best->fit.segments.back().beta / (best->size_unit == SizeUnit::per_rank_block ? p : 1.0);
        scalar = per_total_byte / beta_pp / (1 - 1 / p);
      } else {
        std::cerr << "sextant export: no float32 " << benchmark << " fit at level " << level << ": the ring's scalar "
                  << ring << " written\n";
      }
      ops[key] = {scalar, -1};
    }
    networks.push_back({{"bandwidth", 1 / beta_pp / 1e9}, {"efficiency", 1.0}, {"size", size},
                        {"latency", link->fit.segments.front().alpha}, {"ops", ops}, {"must_be_filled", false},
                        {"processor_usage", 0.0}});
  }
  const double gib = o.memory_per_rank / double(1ull << 30);
  Json system{{"matrix", {{"float32", {{"tflops", peak / 1e12}, {"gflops_efficiency", matrix}}}}},
              {"vector", {{"float32", {{"tflops", peak / 1e12}, {"gflops_efficiency", vector}}}}},
              {"mem1", {{"GiB", gib}, {"GBps", dram / 1e9}, {"MB_efficiency", memory}}},
              {"mem2", {{"GiB", 0}, {"GBps", dram / 1e9}, {"MB_efficiency", Json::array({Json::array({0, 1.0})})}}},
              {"processing_mode", "roofline"},
              {"networks", networks}};
  return {{"", system.dump(2) + "\n"}};
}

struct Format {
  const char* name;
  const char* reads;   // "results" or "model"
  const char* writes;  // for --help and the docs
  Files (*write)(const std::string& input, const ExportOptions& options);
};

const Format formats[] = {
    {"extrap", "results", "Extra-P JSON input: parameters p and n, every repetition of every benchmark", export_extrap},
    {"astra-sim", "model", "a directory with ASTRA-sim 2.0's analytical network.yml and system.json", export_astra_sim},
    {"calculon", "model", "a Calculon system file (JSON), float32, with --memory-per-rank", export_calculon},
};

}  // namespace

void register_export(CLI::App& app, Context&) {
  struct Args {
    std::string input, to, output, memory_text;
    ExportOptions options;
  };
  auto a = std::make_shared<Args>();
  std::string names;
  for (const auto& f : formats)
    names += std::string(names.empty() ? "" : "; ") + f.name + " (from a " + f.reads + " file: " + f.writes + ")";
  auto* cmd = app.add_subcommand("export", "Write sextant's measurements or models in another tool's input format");
  cmd->add_option("file", a->input, "the results or model file to export")->required();
  cmd->add_option("--to", a->to, "format: " + names)->required();
  cmd->add_option("-o,--output", a->output, "output file (a directory for formats of several files)")->required();
  cmd->add_option("--ranks", a->options.ranks, "astra-sim: NPUs to describe (default: the ranks measured)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ranks-per-node", a->options.ranks_per_node,
                  "astra-sim: a second dimension, nodes of this many NPUs (needs intra and inter fits)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--train", a->options.train,
                  "astra-sim: also write workload.txt, ASTRA-sim's text workload of this training step "
                  "(layers=..,hidden=..,dp=..,tp=.., pp=1; as predict --train takes it)");
  cmd->add_option("--memory-per-rank", a->memory_text, "calculon: memory of one rank, e.g. 16G (mem1 capacity)");
  cmd->callback([a] {
    if (!a->memory_text.empty()) {
      a->options.memory_per_rank = static_cast<double>(parse_bytes(a->memory_text));
      if (!(a->options.memory_per_rank > 0)) throw UsageError("--memory-per-rank '" + a->memory_text + "': must be > 0");
    }
    const Format* format = nullptr;
    for (const auto& f : formats)
      if (a->to == f.name) format = &f;
    if (!format) {
      std::string known;
      for (const auto& f : formats) known += (known.empty() ? "" : ", ") + std::string(f.name);
      throw UsageError("--to '" + a->to + "': unknown format (known: " + known + ")");
    }
    if (!a->options.train.empty() && std::string(format->name) != "astra-sim")
      throw UsageError("--train: a workload is written for --to astra-sim only");
    if (same_file(a->input, a->output)) throw UsageError("-o " + a->output + ": is the input file");
    const Files files = format->write(a->input, a->options);
    if (files.size() == 1 && files.front().first.empty()) {
      replace_file_contents(a->output, files.front().second);
    } else {
      std::error_code ec;
      std::filesystem::create_directories(a->output, ec);
      if (ec) throw Error(a->output + ": cannot create the directory (" + ec.message() + ")");
      for (const auto& [name, text] : files) replace_file_contents(a->output + "/" + name, text);
    }
    std::cerr << "sextant: wrote " << a->output << " (" << format->name << ")\n";
  });
}

}  // namespace sextant::cli
