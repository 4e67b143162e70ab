#include "suites/common/json_results.hpp"

#include "core/replace_file.hpp"

namespace sextant {

JsonResults::JsonResults(std::string path, const Provenance& provenance, const std::string& suite)
    : path_(std::move(path)) {
  nlohmann::json meta = provenance.fields;
  meta["ranks"] = provenance.ranks;
  meta["environment"] = provenance.environment;
  doc_ = {{"schema", "sextant.results.json"}, {"schema_version", 1}, {"suite", suite}, {"complete", false},
          {"meta", std::move(meta)}};
  write();
}

void JsonResults::append(const std::string& section, nlohmann::json item) {
  doc_[section].push_back(std::move(item));
  write();
}

void JsonResults::set(const std::string& section, nlohmann::json value) {
  doc_[section] = std::move(value);
  write();
}

void JsonResults::mark_complete() {
  doc_["complete"] = true;
  write();
}

// NaN (a size that could not be measured) is written as null: JSON has no NaN.
void JsonResults::write() const { replace_file_contents(path_, doc_.dump(1) + "\n"); }

}  // namespace sextant
