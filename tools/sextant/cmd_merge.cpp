// sextant merge A.h5 B.h5 ... -o OUT.h5: one results file from the results files of
// several jobs (say one per node count), for `sextant fit`. Every
// /comm/<level>/<benchmark>/<dtype>/p<ranks> group is copied as it is; the same
// group in two inputs is an error. /sources/<i> keeps each input's /meta, so each
// job's provenance (its Slurm job id among it) survives the merge.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/schema.hpp"
#include "suites/common/runtime.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {
namespace {

// "/comm/world/allreduce/float32/p2" for every measured communicator size in a file.
std::vector<std::string> comm_groups(const h5::File& file) {
  std::vector<std::string> out;
  for_each_rank_group(file, "comm", [&](const RankGroup& g) { out.push_back(g.group.path()); });
  return out;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec);
}

void merge(const std::vector<std::string>& inputs, const std::string& output, const Context& ctx) {
  for (const auto& in : inputs)
    if (same_file(in, output)) throw UsageError("-o " + output + ": is also an input; write the merge to a new file");

  std::vector<h5::File> files;
  std::map<std::string, std::string> owner;  // group -> the input it came from
  std::vector<std::vector<std::string>> groups;
  long long max_ranks = 1;
  bool oversubscribed = false;
  for (const auto& in : inputs) {
    files.push_back(open_checked(in, results_schema));
    const h5::File& f = files.back();
    auto found = comm_groups(f);
    if (found.empty()) throw Error(in + ": no /comm/<level>/<benchmark>/<dtype>/p<ranks> group to merge");
    for (const auto& g : found) {
      auto [at, fresh] = owner.emplace(g, in);
      if (!fresh)
        throw Error("merge: " + g + " is in both " + at->second + " and " + in +
                    " (each communicator size may come from one input only)");
    }
    groups.push_back(std::move(found));
    h5::Group meta = f.group("meta");
    if (meta.has_attr("ranks")) max_ranks = std::max<long long>(max_ranks, meta.attr_int("ranks"));
    if (meta.has_attr("oversubscribed") && meta.attr_string("oversubscribed") == "yes") oversubscribed = true;
  }

  const std::string tmp = output + ".tmp";
  try {
    {
      h5::File out(tmp, h5::File::Mode::create_truncate);
      Provenance p = local_provenance(ctx.argc, ctx.argv);
      p.ranks = max_ranks;  // the largest run merged; each group's own size is its `ranks`
      p.fields["oversubscribed"] = oversubscribed ? "yes" : "no";
      write_meta(out, results_schema, p);
      h5::Group meta = out.group("meta");
      meta.set_attr("suite", "comm");
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
      out.flush();
    }
    std::filesystem::rename(tmp, output);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::cerr << "sextant: wrote " << output << " (" << owner.size() << " groups from " << inputs.size()
            << " files)\n";
}

}  // namespace

void register_merge(CLI::App& app, Context& ctx) {
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("merge", "Combine results files of several runs into one results file");
  cmd->add_option("inputs", *inputs, "results files (sextant.results) to combine")->required();
  cmd->add_option("-o,--output", *output, "merged results file (written to OUTPUT.tmp, then renamed)")->required();
  cmd->callback([&ctx, inputs, output] { merge(*inputs, *output, ctx); });
}

}  // namespace sextant::cli
