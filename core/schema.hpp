#pragma once
// The two versioned file kinds of sextant (docs/file-formats.md): the results file
// a run writes and the model file a fit writes. Both carry /meta with the schema
// name, its version and the provenance of what produced them.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/h5.hpp"

namespace sextant {

struct Schema {
  const char* name;
  int version;
  std::vector<std::string> required_groups;  // beside /meta
};

inline const Schema results_schema{"sextant.results", 1, {}};
inline const Schema model_schema{"sextant.model", 1, {}};

// Where and how something was produced; every field becomes a /meta attribute.
struct Provenance {
  std::map<std::string, std::string> fields;       // host, cpu_model, mpi_library, ...
  std::map<std::string, std::string> environment;  // behaviour-changing variables
  long long ranks = 1;
};

// Names every reader may rely on (docs/file-formats.md lists them with meaning).
const std::vector<std::string>& provenance_field_names();

// Writes /meta: schema, schema_version, every provenance field, ranks, and
// /meta/environment with one attribute per variable.
void write_meta(h5::Group& root, const Schema& schema, const Provenance& provenance);
Provenance read_provenance(const h5::Group& meta);

// How a communication benchmark's size counts its data: the whole vector (a rank's
// buffer), or each rank's block (algbw bytes = size x ranks), so that models rescale
// sizes to another rank count. Stored as the attribute `size_unit`.
enum class SizeUnit { vector, per_rank_block };
const char* to_string(SizeUnit unit);
// The object's `size_unit` attribute (absent: vector, as files before it was stored);
// a value of neither name is an Error naming the object and the value.
SizeUnit read_size_unit(const h5::Object& object);

// Name of the group holding one communicator size: "p4" for 4 ranks.
std::string rank_group(long long ranks);

// Visits every <top>/<level>/<benchmark>/<dtype>/p<ranks> group (results and model
// files lay out communication data this way), in name order.
struct RankGroup {
  const h5::Group& group;
  const std::string &level, &benchmark, &dtype;
};
void for_each_rank_group(const h5::Group& root, const std::string& top,
                         const std::function<void(const RankGroup&)>& visit);

// Values read from a file, checked where they are read: a check that fails throws
// Error naming the object and what is wrong with the value (a damaged or hand-edited
// file is one line, never a NaN or a negative time printed later).
void require_value(bool ok, const h5::Object& object, const std::string& what);
std::string format_value(double x);  // as such a message shows a number ("%g")

// Opens a file and checks that it is of this schema and version, with the required
// objects. Every failure says which file and what is wrong, on one line.
h5::File open_checked(const std::string& path, const Schema& schema,
                      h5::File::Mode mode = h5::File::Mode::read);

}  // namespace sextant
