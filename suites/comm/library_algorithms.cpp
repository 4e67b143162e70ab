#include "suites/comm/library_algorithms.hpp"

#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

#include "suites/common/mpi.hpp"

namespace sextant::comm {
namespace {

bool name_char(char c) { return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'; }

// One MPI_T session for the process, opened on first use and closed at exit: MPICH
// 4.0 crashes in a handle allocation after its MPI_T was finalised and opened again.
bool mpi_t_open() {
  struct Session {
    bool ok = false;
    Session() {
      int provided = 0;
      ok = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
    }
    ~Session() {
      if (ok) MPI_T_finalize();
    }
  };
  static const Session session;
  return session.ok;
}

int read_int(int cvar_index) {
  MPI_T_cvar_handle handle;
  int count = 0, value = 0;
  if (MPI_T_cvar_handle_alloc(cvar_index, nullptr, &handle, &count) != MPI_SUCCESS) return 0;
  if (count == 1) MPI_T_cvar_read(handle, &value);
  MPI_T_cvar_handle_free(&handle);
  return value;
}

void write_int(int cvar_index, int value) {
  MPI_T_cvar_handle handle;
  int count = 0;
  SEXTANT_MPI_CHECK(MPI_T_cvar_handle_alloc(cvar_index, nullptr, &handle, &count));
  SEXTANT_MPI_CHECK(MPI_T_cvar_write(handle, &value));
  SEXTANT_MPI_CHECK(MPI_T_cvar_handle_free(&handle));
}

}  // namespace

std::vector<std::string> parse_mpich_algorithms(std::string_view d) {
  struct Item {
    std::string_view run;  // the identifier characters before the padding (may begin with text of the item before)
    std::size_t pad = 0;
    bool forces = false;   // described "Force ...", not "Internal ..." (a selection of the library's)
  };
  std::vector<Item> items;
  for (std::size_t at = d.find("- "); at != std::string_view::npos; at = d.find("- ", at + 2)) {
    const std::string_view rest = d.substr(at + 2);
    if (rest.rfind("Force", 0) != 0 && rest.rfind("Internal", 0) != 0) continue;
    std::size_t end = at;
    while (end > 0 && d[end - 1] == ' ') --end;
    std::size_t begin = end;
    while (begin > 0 && name_char(d[begin - 1])) --begin;
    if (end == at || begin == end) return {};  // no padding or no name: not the form expected
    items.push_back({d.substr(begin, end - begin), at - end, rest.rfind("Force", 0) == 0});
  }
  // The first item is the library's own choice, then at least one forced algorithm.
  if (items.size() < 2 || items[0].run.size() < 4 || items[0].run.substr(items[0].run.size() - 4) != "auto") return {};
  std::vector<std::string> names{"auto"};
  // The non-blocking collectives' controls list two kinds, each padded to its own
  // column: the schedule-based ones (sched_auto, the library's selection among them,
  // and sched_...) and the generic-transport ones (tsp_...). There each name is known
  // by its prefix.
  const bool prefixed = std::any_of(items.begin() + 1, items.end(), [](const Item& i) {
    return i.run.find("sched_") != std::string_view::npos || i.run.find("tsp_") != std::string_view::npos;
  });
  if (prefixed) {
    for (std::size_t i = 1; i < items.size(); ++i) {
      const std::size_t sched = items[i].run.rfind("sched_"), tsp = items[i].run.rfind("tsp_");
      const std::size_t at = sched == std::string_view::npos ? tsp
                             : tsp == std::string_view::npos ? sched
                                                             : std::max(sched, tsp);
      if (at == std::string_view::npos) return {};
      names.emplace_back(items[i].run.substr(at));
    }
  } else {
    // One kind, forced algorithms after the library's choice, padded to one column.
    std::size_t column = std::numeric_limits<std::size_t>::max();
    for (std::size_t i = 1; i < items.size(); ++i) {
      if (!items[i].forces) return {};
      column = std::min(column, items[i].run.size() + items[i].pad);
    }
    for (std::size_t i = 1; i < items.size(); ++i) {
      if (column <= items[i].pad) return {};
      const std::size_t length = column - items[i].pad;
      if (length > items[i].run.size()) return {};
      names.emplace_back(items[i].run.substr(items[i].run.size() - length));
    }
  }
  if (std::set<std::string>(names.begin(), names.end()).size() != names.size()) return {};
  return names;
}

bool is_library_selection(std::string_view name) {
  constexpr std::string_view suffix = "auto";
  return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix &&
         (name.size() == suffix.size() || name[name.size() - suffix.size() - 1] == '_');
}

std::string nonblocking_function(std::string_view f) {
  if (f.rfind("MPI_", 0) != 0 || f.size() < 5) return std::string(f);
  return "MPI_I" + std::string(1, static_cast<char>(std::tolower(static_cast<unsigned char>(f[4])))) +
         std::string(f.substr(5));
}

std::optional<LibraryAlgorithms> library_algorithms(std::string_view mpi_function) {
  // MPICH names the control after the MPI function: MPI_Reduce_scatter_block ->
  // MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM.
  if (mpi_function.rfind("MPI_", 0) != 0) return std::nullopt;
  std::string control = "MPIR_CVAR_";
  for (char c : mpi_function.substr(4)) control += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  control += "_INTRA_ALGORITHM";
  if (!mpi_t_open()) return std::nullopt;
  int index = -1;
  if (MPI_T_cvar_get_index(control.c_str(), &index) != MPI_SUCCESS) return std::nullopt;
  char name[256], description[4096];
  int name_len = sizeof name, description_len = sizeof description, verbosity = 0, bind = 0, scope = 0;
  MPI_Datatype type;
  MPI_T_enum enumtype;
  if (MPI_T_cvar_get_info(index, name, &name_len, &verbosity, &type, &enumtype, description, &description_len, &bind,
                          &scope) != MPI_SUCCESS ||
      type != MPI_INT || bind != MPI_T_BIND_NO_OBJECT)
    return std::nullopt;
  LibraryAlgorithms out;
  out.control = control;
  out.cvar_index = index;
  out.algorithms = parse_mpich_algorithms(description);
  if (out.algorithms.empty()) return std::nullopt;
  out.current = read_int(index);
  if (out.current < 0 || out.current >= static_cast<int>(out.algorithms.size())) return std::nullopt;
  return out;
}

ForcedAlgorithm::ForcedAlgorithm(const LibraryAlgorithms& control, int value) : cvar_index_(control.cvar_index) {
  if (!mpi_t_open()) throw Error("MPI_T: cannot open a session to force " + control.control);
  previous_ = read_int(cvar_index_);
  write_int(cvar_index_, value);
}

ForcedAlgorithm::~ForcedAlgorithm() {
  MPI_T_cvar_handle handle;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(cvar_index_, nullptr, &handle, &count) == MPI_SUCCESS) {
    MPI_T_cvar_write(handle, &previous_);
    MPI_T_cvar_handle_free(&handle);
  }
}

}  // namespace sextant::comm
