#pragma once
// Errors are exceptions with a message a user can act on (it names the file,
// object, option or value at fault); the CLI boundary turns them into exit codes.
#include <stdexcept>
#include <string>

namespace sextant {

// A runtime failure: bad file, failed measurement, wrong result. Exit status 1.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The command line is wrong: unknown option, malformed value. Exit status 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// An error every MPI rank raised alike and one rank already reported: the others end
// with its exit status and say nothing (one message per error, not one per rank).
struct ReportedElsewhere {
  int exit_code;
};

}  // namespace sextant
