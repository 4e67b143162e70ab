#include "suites/common/json_results.hpp"

#include <cmath>
#include <map>
#include <utility>

#include "core/replace_file.hpp"

namespace sextant {
namespace {

using nlohmann::json;
using Row = std::vector<std::pair<std::string, std::string>>;

// A CSV cell: numbers as JSON writes them (shortest round-trip form), text quoted
// where it holds a comma, a quote or a line break, null (not measured) empty.
std::string cell(const json& v) {
  if (v.is_null() || (v.is_number_float() && !std::isfinite(v.get<double>()))) return "";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (!v.is_string()) return v.dump();
  const std::string s = v.get<std::string>();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q(1, '"');
  for (char c : s) {
    q.push_back(c);
    if (c == '"') q.push_back('"');  // a quote inside is doubled
  }
  q.push_back('"');
  return q;
}

// The scalars of an object, and of the objects it holds as "outer.inner"; arrays are
// left out (series and samples: the JSON and HDF5 files keep them).
void flatten(const json& j, const std::string& prefix, Row& out) {
  for (const auto& [k, v] : j.items()) {
    if (v.is_object()) flatten(v, prefix + k + ".", out);
    else if (!v.is_array()) out.emplace_back(prefix + k, cell(v));
  }
}

// Rows of one table: `outer` items (their scalars first), each expanded into the items
// of its list `inner` when given.
std::vector<Row> rows_of(const json& outer, const char* inner) {
  std::vector<Row> rows;
  if (!outer.is_array()) return rows;
  for (const auto& item : outer) {
    Row base;
    flatten(item, "", base);
    if (!inner) {
      rows.push_back(std::move(base));
      continue;
    }
    if (!item.contains(inner)) continue;
    for (const auto& sub : item[inner]) {
      Row r = base;
      flatten(sub, "", r);
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

// Columns in order of first appearance over all rows; a row without one leaves it empty.
std::string to_csv(const std::vector<Row>& rows) {
  std::vector<std::string> columns;
  std::map<std::string, std::size_t> index;
  for (const auto& r : rows)
    for (const auto& [k, v] : r)
      if (index.emplace(k, columns.size()).second) columns.push_back(k);
  if (columns.empty()) return "";
  auto line = [](std::string& out, const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) out.push_back(',');
      out.append(cells[i]);
    }
    out.push_back('\n');
  };
  std::vector<std::string> header;
  for (const auto& c : columns) header.push_back(cell(json(c)));
  std::string out;
  line(out, header);
  for (const auto& r : rows) {
    std::vector<std::string> cells(columns.size());
    for (const auto& [k, v] : r) cells[index[k]] = v;
    line(out, cells);
  }
  return out;
}

std::vector<Row> table_rows(const json& doc, const std::string& table) {
  const json none;
  if (table == "comm") return rows_of(doc.value("comm", none), "sizes");
  if (table == "train") return rows_of(doc.value("train", none), nullptr);
  if (table == "train_baseline") return rows_of(doc.value("train_baseline", none), nullptr);
  const json compute = doc.value("compute", json::object());
  if (table == "compute") return rows_of(compute.value("kernels", none), nullptr);
  if (table == "sweep") return rows_of(compute.value("working_set_sweep", none), "points");
  return {};
}

}  // namespace

std::vector<std::string> JsonResults::csv_tables(const std::string& suite) {
  if (suite == "comm") return {"comm"};
  if (suite == "compute") return {"compute", "sweep"};
  return {"comm", "compute", "sweep", "train", "train_baseline"};
}

std::string JsonResults::csv_path(const std::string& prefix, const std::string& table) {
  return prefix + "." + table + ".csv";
}

JsonResults::JsonResults(std::string json_path, std::string csv_prefix, const Provenance& provenance,
                         const std::string& suite)
    : json_path_(std::move(json_path)), csv_prefix_(std::move(csv_prefix)), suite_(suite) {
  json meta = provenance.fields;
  meta["ranks"] = provenance.ranks;
  meta["environment"] = provenance.environment;
  doc_ = {{"schema", "sextant.results.json"}, {"schema_version", 1}, {"suite", suite}, {"complete", false},
          {"meta", std::move(meta)}};
  write();
}

void JsonResults::append(const std::string& section, json item) {
  doc_[section].push_back(std::move(item));
  write();
}

void JsonResults::set(const std::string& section, json value) {
  doc_[section] = std::move(value);
  write();
}

void JsonResults::mark_complete() {
  doc_["complete"] = true;
  write();
}

// NaN (a size that could not be measured) is written as null: JSON has no NaN.
void JsonResults::write() const {
  if (!json_path_.empty()) replace_file_contents(json_path_, doc_.dump(1) + "\n");
  if (!csv_prefix_.empty())
    for (const auto& table : csv_tables(suite_))
      replace_file_contents(csv_path(csv_prefix_, table), to_csv(table_rows(doc_, table)));
}

}  // namespace sextant
