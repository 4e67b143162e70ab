// sextant export FILE --to FORMAT -o OUT: sextant's measurements and models in the
// input formats of neighbouring tools. One descriptor per format: its name, the kind of
// sextant file it reads, what it writes, and the function that writes it.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/replace_file.hpp"
#include "core/schema.hpp"
#include "tools/sextant/cli.hpp"

namespace sextant::cli {
namespace {

using Json = nlohmann::json;

// Extra-P's JSON input (the "parameters"/"measurements" form of its file-format
// documentation, Extra-P 4.x): parameters p (ranks) and n (bytes in the benchmark's
// size unit); one callpath per benchmark, level and dtype; metric "time" in seconds;
// per measured (p, n) the collective time of every valid repetition (the slowest
// rank's), as the results file's samples hold them, so that Extra-P models over the
// repetitions itself. Sizes stored as not measured are left out, and benchmarks
// without a size (barrier).
std::string export_extrap(const std::string& results) {
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
      char name[16];
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
  return Json{{"parameters", {"p", "n"}}, {"measurements", std::move(measurements)}}.dump(1) + "\n";
}

struct Format {
  const char* name;
  const char* reads;   // "results" or "model"
  const char* writes;  // for --help and the docs
  std::string (*write)(const std::string& input);
};

const Format formats[] = {
    {"extrap", "results", "Extra-P JSON input: parameters p and n, every repetition of every benchmark", export_extrap},
};

}  // namespace

void register_export(CLI::App& app, Context&) {
  struct Args {
    std::string input, to, output;
  };
  auto a = std::make_shared<Args>();
  std::string names;
  for (const auto& f : formats)
    names += std::string(names.empty() ? "" : "; ") + f.name + " (from a " + f.reads + " file: " + f.writes + ")";
  auto* cmd = app.add_subcommand("export", "Write sextant's measurements or models in another tool's input format");
  cmd->add_option("file", a->input, "the results or model file to export")->required();
  cmd->add_option("--to", a->to, "format: " + names)->required();
  cmd->add_option("-o,--output", a->output, "output file")->required();
  cmd->callback([a] {
    const Format* format = nullptr;
    for (const auto& f : formats)
      if (a->to == f.name) format = &f;
    if (!format) {
      std::string known;
      for (const auto& f : formats) known += (known.empty() ? "" : ", ") + std::string(f.name);
      throw UsageError("--to '" + a->to + "': unknown format (known: " + known + ")");
    }
    if (same_file(a->input, a->output)) throw UsageError("-o " + a->output + ": is the input file");
    replace_file_contents(a->output, format->write(a->input));
    std::cerr << "sextant: wrote " << a->output << " (" << format->name << ")\n";
  });
}

}  // namespace sextant::cli
