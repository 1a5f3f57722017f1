#pragma once
// The subcommands of collc. Each lives in its own file (XCommand.cpp), with
// its options under its own cl::SubCommand, and registers itself here; the
// driver runs the one the command line selects. Adding a subcommand is
// adding a file.

#include "library/Library.h"
#include "sema/Program.h"
#include "smt/Solver.h"
#include "support/Diagnostics.h"
#include "verify/Verifier.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <string>

namespace collc::tools {

/// Exit codes shared by every subcommand.
enum ExitCode {
  ExitOk = 0,
  ExitCounterexample = 1,
  ExitInputError = 2,
  ExitUnknown = 3,
};

/// The category every collc option belongs to (others are hidden).
llvm::cl::OptionCategory &category();

struct CommandRegistration {
  CommandRegistration(llvm::cl::SubCommand &command, int (*run)(),
                      llvm::StringRef usage);
};

/// "1 file", "3 topologies".
std::string plural(size_t n, llvm::StringRef word);

/// Reads, checks and resolves FILE: its collective declarations become
/// schedules from the algorithm library (library/Library.h), loaded once per
/// SourceMgr from library::defaultDirectory. `choices`, when given, gets
/// what each collective resolved to. Errors are reported through diags.
llvm::Expected<Program> loadResolved(
    llvm::StringRef path, DiagnosticEngine &diags,
    std::vector<std::pair<std::string, std::vector<library::Choice>>>
        *choices = nullptr);

/// The port model a command judges `program`'s schedules under: all-port
/// when asked (--all-port) or when the file's model says so, as its
/// collectives were chosen under it.
inline PortModel portsFor(const Program &program, bool allPortFlag) {
  return allPortFlag ? PortModel::All : program.ports();
}

/// The member of a family that `--param NAME=V` options (all parameters),
/// or else `--p N` (every parameter equal, cost::paramsForRanks) ask for;
/// a family with one member (a resolved collective) needs neither.
llvm::Expected<std::vector<int64_t>>
chooseMember(const ir::Schedule &s, int64_t p,
             llvm::ArrayRef<std::string> params);

/// Writes `text` to `path`; prints why and returns false when it cannot.
bool writeFile(llvm::StringRef path, llvm::StringRef text);

/// `LO..HI` (or a single `V`, meaning V..V), LO <= HI.
std::optional<std::pair<int64_t, int64_t>> parseRange(llvm::StringRef text);

/// `--param NAME=LO..HI` (or NAME=V) as the verifier takes it; prints the
/// error and returns nothing when the text is not of that form.
std::optional<verify::ParamRange> parseParamOption(llvm::StringRef text);

/// The queries a command's schedules have proved, shared between them
/// (smt::ProvedQueries), and kept between runs in the file of
/// `--proved-queries FILE` when one is given: read by open(), written back
/// when the command ends, whichever way it ends.
class ProvedQueriesFile {
public:
  ProvedQueriesFile() = default;
  ProvedQueriesFile(const ProvedQueriesFile &) = delete;
  ProvedQueriesFile &operator=(const ProvedQueriesFile &) = delete;
  /// Reads `path` (empty: nothing is kept); prints why and returns false
  /// when it cannot.
  bool open(llvm::StringRef path);
  /// Writes the file back; a failure is printed as a warning, since the
  /// verdicts stand without it.
  ~ProvedQueriesFile();

  smt::ProvedQueries *queries() { return &proved; }

private:
  smt::ProvedQueries proved;
  std::string path;
};

} // namespace collc::tools
