// sextant info: what this machine, MPI and Kokkos are, as the suites will see them.
#include <H5public.h>

#include <iostream>

#include "core/units.hpp"
#include "kernels/registry.hpp"
#include "suites/comm/benchmark.hpp"
#include "suites/comm/library_algorithms.hpp"
#include "suites/common/runtime.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {

void register_info(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("info", "Print MPI, Kokkos, HDF5, compiler and machine facts");
  cmd->callback([&ctx] {
    Runtime rt(ctx.argc, ctx.argv);
    if (!rt.is_root()) return;
    auto lib = mpi_library();
    auto kk = kokkos_info();
    const auto& m = rt.machine();
    unsigned h5maj = 0, h5min = 0, h5rel = 0;
    H5get_libversion(&h5maj, &h5min, &h5rel);
    auto row = [](const std::string& k, const std::string& v) {
      std::cout << k << std::string(k.size() < 18 ? 18 - k.size() : 1, ' ') << v << "\n";
    };
    row("hostname", m.hostname);
    row("cpu_model", m.cpu_model);
    row("cores", std::to_string(rt.node_cpus()) + " usable by this node's ranks (" + std::to_string(m.usable_cpus) +
                     " by rank 0) of " + std::to_string(m.logical_cpus) + " online");
    for (const auto& c : m.caches)
      row("cache_L" + std::to_string(c.level) + (c.type == "Data" ? "d" : c.type == "Instruction" ? "i" : ""),
          format_bytes(static_cast<double>(c.bytes)) + " (shared by " + std::to_string(c.shared_by_cpus) + " cpus)");
    row("cache_source", m.cache_source == "cpuid" ? "cpuid (the OS lists no caches; sharing assumed)"
                                                  : m.cache_source);
    row("mpi_library", lib.name + " " + lib.version + (lib.device.empty() ? "" : " (device " + lib.device + ")"));
    // The library's collective algorithms (MPI_T), with the one it is set to use.
    std::string algorithms;
    for (const auto& b : comm::registry()) {
      if (b.mpi_function.empty()) continue;
      const std::string function = b.nonblocking ? comm::nonblocking_function(b.mpi_function) : std::string(b.mpi_function);
      if (const auto control = comm::library_algorithms(function)) {
        row("mpi_algorithms." + std::string(b.name), [&] {
          std::string list;
          for (const auto& a : control->algorithms) list += (list.empty() ? "" : " ") + a;
          return list + " (set: " + control->algorithms[control->current] + "; " + control->control + ")";
        }());
        algorithms = "listed";
      }
    }
    if (algorithms.empty()) row("mpi_algorithms", "none exposed through MPI_T (run --algorithms measures the library's choice only)");
    row("mpi_ranks", std::to_string(rt.size()) + " on " + std::to_string(rt.nodes()) + " node(s), " +
                         std::to_string(rt.ranks_on_node()) + " on this node" +
                         (rt.oversubscribed() ? " (OVERSUBSCRIBED: timings not meaningful)" : ""));
    row("kokkos_version", kk.version);
    std::string spaces;
    for (const auto& s : kk.enabled_spaces) spaces += (spaces.empty() ? "" : ",") + s;
    row("kokkos_backends", spaces + " (default " + kk.backend + ")");
    row("kokkos_concurrency", std::to_string(kk.concurrency));
    row("device", rt.provenance().fields.at("device"));
    const auto& fields = rt.provenance().fields;
    row("blas", fields.count("blas") ? fields.at("blas") : "none loaded (no vendor path)");
    row("allocator", fields.at("allocator"));
    const auto isa = kernels::compiled_isa();
    row("kernel_isa", std::string(isa.name) + " (" + std::to_string(isa.vector_bytes) + "-byte vectors, " +
                          std::to_string(isa.vector_registers) + " registers)");
    for (kernels::Dtype t : {kernels::Dtype::float64, kernels::Dtype::float32}) {
      const auto b = kernels::gemm_blocks(t);
      row("gemm_blocks_" + std::string(kernels::to_string(t)),
          "MB " + std::to_string(b.mb) + ", NB " + std::to_string(b.nb) + ", KB " + std::to_string(b.kb) + " (" +
              b.source + ")");
    }
    row("hdf5_version", std::to_string(h5maj) + "." + std::to_string(h5min) + "." + std::to_string(h5rel));
    row("compiler", compiler_id());
    row("git_revision", git_revision());
  });
}

}  // namespace sextant::cli
