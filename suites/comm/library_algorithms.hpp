#pragma once
// The MPI library's own collective algorithms, as its MPI_T control variables expose
// them: which algorithms a collective has, which the library is set to use, and
// forcing one for a while. What the library runs is read from it at run time, never
// written into sextant.
//
// MPICH (3.3 and later) has an integer control MPIR_CVAR_<COLLECTIVE>_INTRA_ALGORITHM
// per blocking collective; its values are listed, in order, in the control's
// description ("auto - Internal algorithm selection ...", "ring - Force ring
// algorithm", ...). A library without such controls (or without MPI_T) has none: the
// comm suite then measures only the library's own choice.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sextant::comm {

struct LibraryAlgorithms {
  std::string control;                  // the MPI_T control variable
  std::vector<std::string> algorithms;  // by value; algorithms[0] is the library's own choice ("auto")
  int current = 0;                      // the value set now (0 unless the environment forced one)
  int cvar_index = -1;
};

// The algorithms of the collective an MPI function runs ("MPI_Allreduce"), or nothing
// where the library has no control for it.
std::optional<LibraryAlgorithms> library_algorithms(std::string_view mpi_function);

// The names in an MPICH algorithm control's description, in value order; empty when
// the text is not in that form. MPICH's text runs the items together: each is a name,
// spaces, "- " and its description ("Force ..." or "Internal ..."). A blocking
// collective's names after the first are padded to one column, so a name is as long
// as that column less its padding; a non-blocking one's begin with sched_ or tsp_.
std::vector<std::string> parse_mpich_algorithms(std::string_view description);

// Whether a listed value is a selection of the library's own ("auto", "sched_auto":
// MPICH's choice among its schedule-based algorithms) rather than one algorithm.
bool is_library_selection(std::string_view name);

// The non-blocking form of a blocking collective's MPI function: "MPI_Allreduce" ->
// "MPI_Iallreduce".
std::string nonblocking_function(std::string_view mpi_function);

// Sets a collective's algorithm for this object's lifetime, then puts back what was
// there. Every rank of the communicator must force the same algorithm.
class ForcedAlgorithm {
 public:
  ForcedAlgorithm(const LibraryAlgorithms& control, int value);
  ~ForcedAlgorithm();
  ForcedAlgorithm(const ForcedAlgorithm&) = delete;
  ForcedAlgorithm& operator=(const ForcedAlgorithm&) = delete;

 private:
  int cvar_index_ = -1, previous_ = 0;
};

}  // namespace sextant::comm
