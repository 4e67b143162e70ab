#include "core/schema.hpp"

#include <cstdio>

namespace sextant {

const std::vector<std::string>& provenance_field_names() {
  static const std::vector<std::string> names{
      "host",         "cpu_model",   "cores",          "mpi_library", "mpi_version",
      "kokkos_version", "kokkos_backend", "compiler",  "git_revision", "command_line",
      "date_utc",     "rank_placement", "sextant_version"};
  return names;
}

void write_meta(h5::Group& root, const Schema& schema, const Provenance& provenance) {
  h5::Group meta = root.create_group("meta");
  meta.set_attr("schema", schema.name);
  meta.set_attr("schema_version", std::int64_t{schema.version});
  for (const auto& [key, value] : provenance.fields) meta.set_attr(key, value);
  meta.set_attr("ranks", static_cast<std::int64_t>(provenance.ranks));
  h5::Group env = meta.create_group("environment");
  for (const auto& [key, value] : provenance.environment) env.set_attr(key, value);
}

Provenance read_provenance(const h5::Group& meta) {
  Provenance p;
  for (const auto& name : meta.attr_names()) {
    if (name == "schema" || name == "schema_version") continue;
    if (name == "ranks") {
      p.ranks = meta.attr_int(name);
      continue;
    }
    try {
      p.fields[name] = meta.attr_string(name);
    } catch (const Error&) {
      // numeric attributes written by newer versions are kept out of the string map
    }
  }
  if (meta.has("environment")) {
    h5::Group env = meta.group("environment");
    for (const auto& name : env.attr_names()) p.environment[name] = env.attr_string(name);
  }
  return p;
}

void require_value(bool ok, const h5::Object& object, const std::string& what) {
  if (!ok) throw Error(object.where() + ": " + what);
}

const char* to_string(SizeUnit unit) { return unit == SizeUnit::per_rank_block ? "per_rank_block" : "vector"; }

SizeUnit read_size_unit(const h5::Object& object) {
  if (!object.has_attr("size_unit")) return SizeUnit::vector;
  const std::string s = object.attr_string("size_unit");
  for (SizeUnit u : {SizeUnit::vector, SizeUnit::per_rank_block})
    if (s == to_string(u)) return u;
  throw Error(object.where() + ": size_unit '" + s + "' (must be vector or per_rank_block)");
}

std::string format_value(double x) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", x);
  return s;
}

std::string rank_group(long long ranks) {
  std::string name = std::to_string(ranks);
  name.insert(name.begin(), 'p');
  return name;
}

void for_each_rank_group(const h5::Group& root, const std::string& top,
                         const std::function<void(const RankGroup&)>& visit) {
  if (!root.has(top)) return;
  h5::Group t = root.group(top);
  for (const auto& level : t.children()) {
    h5::Group lg = t.group(level);
    for (const auto& bench : lg.children()) {
      h5::Group bg = lg.group(bench);
      for (const auto& dtype : bg.children()) {
        h5::Group dg = bg.group(dtype);
        for (const auto& ranks : dg.children())
          if (ranks.size() > 1 && ranks[0] == 'p') visit({dg.group(ranks), level, bench, dtype});
      }
    }
  }
}

h5::File open_checked(const std::string& path, const Schema& schema, h5::File::Mode mode) {
  h5::File file(path, mode);
  if (!file.has("meta"))
    throw Error(path + ": not a " + schema.name + " file (no /meta group)");
  h5::Group meta = file.group("meta");
  if (!meta.has_attr("schema") || !meta.has_attr("schema_version"))
    throw Error(path + ": not a " + schema.name + " file (/meta lacks schema/schema_version)");
  std::string name = meta.attr_string("schema");
  if (name != schema.name)
    throw Error(path + ": is a '" + name + "' file, expected '" + schema.name + "'");
  auto version = meta.attr_int("schema_version");
  if (version != schema.version)
    throw Error(path + ": " + schema.name + " schema version " + std::to_string(version) +
                " is not supported (this sextant reads version " + std::to_string(schema.version) +
                ")");
  for (const auto& g : schema.required_groups)
    if (!file.has(g)) throw Error(path + ": missing required group /" + g);
  return file;
}

}  // namespace sextant
