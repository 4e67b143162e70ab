// sextant merge A.h5 B.h5 ... -o OUT.h5: one results file from the results files of
// several jobs (say one per node count, or a comm run and a compute run), for `sextant
// fit`. Every /comm/<level>/<benchmark>/<dtype>/p<ranks> group, the /compute group
// (one run's machine: its threads, ISA and caches belong together) and every
// /train/<configuration> are copied as they are; the same group in two inputs is an
// error, never a silent choice. /sources/<i> keeps each input's /meta, so each job's
// provenance (its Slurm job id among it) survives the merge; inputs measured with
// different MPI libraries or CPUs are merged with a warning naming them.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "core/replace_file.hpp"
#include "core/schema.hpp"
#include "core/units.hpp"
#include "models/model_file.hpp"
#include "suites/common/runtime.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {
namespace {

// The units a merge copies: "/comm/world/allreduce/float32/p2" for every measured
// communicator size, "/compute", "/train/<configuration>" for each configuration and
// "/train_baseline/<baseline>" for each single-rank baseline.
std::vector<std::string> mergeable_groups(const h5::File& file) {
  std::vector<std::string> out;
  for_each_rank_group(file, "comm", [&](const RankGroup& g) { out.push_back(g.group.path()); });
  if (file.has("compute")) out.push_back("/compute");
  if (file.has("train"))
    for (const auto& name : file.group("train").children()) out.push_back("/train/" + name);
  if (file.has("train_baseline"))
    for (const auto& name : file.group("train_baseline").children()) out.push_back("/train_baseline/" + name);
  return out;
}

// The provenance fields that make two runs' numbers different machines' numbers.
constexpr const char* machine_fields[] = {"mpi_library", "mpi_version", "cpu_model"};

void merge(const std::vector<std::string>& inputs, const std::string& output, const Context& ctx) {
  for (const auto& in : inputs)
    if (same_file(in, output)) throw UsageError("-o " + output + ": is also an input; write the merge to a new file");

  std::vector<h5::File> files;
  std::map<std::string, std::string> owner;  // group -> the input it came from
  std::vector<std::vector<std::string>> groups;
  std::map<std::string, std::map<std::string, std::string>> machines;  // field -> value -> first input
  std::set<std::string> suites;
  long long max_ranks = 1;
  bool oversubscribed = false, complete = true;
  for (const auto& in : inputs) {
    model::check_results_file(in);  // a damaged input is refused, not copied into the merge
    files.push_back(open_checked(in, results_schema));
    const h5::File& f = files.back();
    auto found = mergeable_groups(f);
    if (found.empty()) throw Error(in + ": no /comm, /compute or /train measurements to merge");
    for (const auto& g : found) {
      auto [at, fresh] = owner.emplace(g, in);
      if (!fresh)
        throw Error("merge: " + g + " is in both " + at->second + " and " + in +
                    " (each communicator size, the compute measurements and each training configuration "
                    "may come from one input only)");
      suites.insert(g.substr(1, g.find('/', 1) - 1));
    }
    groups.push_back(std::move(found));
    h5::Group meta = f.group("meta");
    for (const char* field : machine_fields)
      if (meta.has_attr(field)) machines[field].emplace(meta.attr_string(field), in);
    if (meta.has_attr("ranks")) max_ranks = std::max<long long>(max_ranks, meta.attr_int("ranks"));
    if (meta.has_attr("oversubscribed") && meta.attr_string("oversubscribed") == "yes") oversubscribed = true;
    if (meta.has_attr("complete") && meta.attr_string("complete") != "yes") complete = false;
  }

  for (const auto& [field, values] : machines)
    if (values.size() > 1) {
      std::string list;
      for (const auto& [value, in] : values) list += (list.empty() ? "" : "; ") + value + " (" + in + ")";
      std::cerr << "sextant merge: WARNING: the inputs differ in " << field << ": " << list
                << " -- a model fitted on the merge mixes them\n";
    }

  // HDF5 crashes when the disk fills in the middle of copying objects: check first that
  // the inputs' size fits (the merged file holds their groups, so it is about as large).
  std::uintmax_t needed = 0;
  for (const auto& in : inputs) needed += std::filesystem::file_size(in);
  const auto dir = std::filesystem::absolute(output).parent_path();
  std::error_code ec;
  const auto space = std::filesystem::space(dir, ec);
  if (!ec && space.available < needed + needed / 8)
    throw Error("merge: " + output + ": needs about " + format_bytes(double(needed)) + ", " +
                format_bytes(double(space.available)) + " free in " + dir.string());
  FileReplacement replacement(output);
  {
    h5::File out(replacement.path(), h5::File::Mode::create_truncate);
    Provenance p = local_provenance(ctx.argc, ctx.argv);
    p.ranks = max_ranks;  // the largest run merged; each group's own size is its `ranks`
    p.fields["oversubscribed"] = oversubscribed ? "yes" : "no";
    write_meta(out, results_schema, p);
    h5::Group meta = out.group("meta");
    std::string suite;
    for (const auto& s : suites) suite += (suite.empty() ? "" : ",") + s;
    meta.set_attr("suite", suite);
    meta.set_attr("complete", complete ? "yes" : "no");
    std::string from;
    for (const auto& in : inputs) from += (from.empty() ? "" : "\n") + in;
    meta.set_attr("merged_from", from);
    h5::Group sources = out.create_group("sources");
    for (std::size_t i = 0; i < files.size(); ++i) {
      std::string name = std::to_string(i);
      files[i].copy("meta", sources, name);
      sources.group(name).set_attr("file", inputs[i]);
      for (const auto& g : groups[i]) files[i].copy(g, out, g);
    }
    out.close();
  }
  replacement.commit();
  std::cerr << "sextant: wrote " << output << " (" << owner.size() << " groups from " << inputs.size()
            << " files)\n";
}

}  // namespace

void register_merge(CLI::App& app, Context& ctx) {
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("merge", "Combine results files of several runs into one results file");
  cmd->add_option("inputs", *inputs, "results files (sextant.results) to combine")->required();
  cmd->add_option("-o,--output", *output, "merged results file (written beside it under a temporary name, then renamed into place)")->required();
  cmd->callback([&ctx, inputs, output] { merge(*inputs, *output, ctx); });
}

}  // namespace sextant::cli
