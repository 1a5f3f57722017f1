#pragma once
// The subcommands of collc. Each lives in its own file (XCommand.cpp), with
// its options under its own cl::SubCommand, and registers itself here; the
// driver runs the one the command line selects. Adding a subcommand is
// adding a file.

#include "alltoallv/Emit.h"
#include "cost/Cost.h"
#include "library/Frontend.h"
#include "library/Library.h"
#include "sema/Program.h"
#include "smt/Solver.h"
#include "support/Diagnostics.h"
#include "verify/Verifier.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"

#include <cstddef>
#include <map>
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

/// The exit code of a verdict: a counterexample 1, unknown 3, an error 2.
inline ExitCode exitCodeOf(verify::Status verdict) {
  switch (verdict) {
  case verify::Status::Proved:
    return ExitOk;
  case verify::Status::Counterexample:
    return ExitCounterexample;
  case verify::Status::Unknown:
    return ExitUnknown;
  case verify::Status::Error:
    return ExitInputError;
  }
  return ExitInputError;
}

/// The category every collc option belongs to (others are hidden).
llvm::cl::OptionCategory &category();

struct CommandRegistration {
  CommandRegistration(llvm::cl::SubCommand &command, int (*run)(),
                      llvm::StringRef usage);
};

/// "1 file", "3 topologies".
std::string plural(size_t n, llvm::StringRef word);

/// The front end of a command's files (library/Frontend.h): the library
/// from library::defaultDirectory, reported through `diags`.
library::Frontend frontendFor(DiagnosticEngine &diags);

/// A file as verify, cost and show work on it: loaded and resolved, with
/// what each of its collectives resolved to.
struct LoadedFile {
  std::string path;
  Program program;
  library::Resolutions choices;
};

/// The files of a command and the schedules `--schedule NAME,...` picks
/// among them (all when no name is given).
struct Selection {
  std::vector<LoadedFile> files;
  std::vector<std::string> names;
  /// Some file did not load (its errors are reported).
  bool failed = false;

  /// Whether the names pick `schedule` of `file` (by its own name or its
  /// collective's).
  bool selects(const LoadedFile &file, const ir::Schedule &schedule) const;
  /// Whether the names pick the collective (an alltoallv pattern) `name`.
  bool selects(llvm::StringRef name) const;
};

/// Loads every file first, so that a name none of them has is reported
/// before any work is spent; returns nothing when such a name is given.
std::optional<Selection> loadSelection(llvm::ArrayRef<std::string> files,
                                       llvm::ArrayRef<std::string> names,
                                       DiagnosticEngine &diags);

/// The file's schedules, then, for each alltoallv collective that runs a
/// pattern, the pattern as one schedule (pipeline::patternScheduleOf), kept
/// in `patterns`: what show and draw print.
llvm::Expected<std::vector<const ir::Schedule *>>
schedulesOf(const LoadedFile &file, std::vector<ir::Schedule> &patterns);

/// The port model a command judges `program`'s schedules under: all-port
/// when asked (--all-port) or when the file's model says so, as its
/// collectives were chosen under it.
inline PortModel portsFor(const Program &program, bool allPortFlag) {
  return allPortFlag ? PortModel::All : program.ports();
}

/// The member of a family that `--p N` asks for (the member emitted code
/// runs, cost::paramsForRanks, within the ranges `--param NAME=LO..HI`
/// narrows as compile's does), or else `--param NAME=V` for every
/// parameter; a family with one member (a resolved collective) needs
/// neither.
llvm::Expected<std::vector<int64_t>>
chooseMember(const ir::Schedule &s, int64_t p,
             llvm::ArrayRef<std::string> params);

/// `--p N` and `--param NAME=V|LO..HI` of a command that works on one
/// member of each family (cost, show, draw).
class MemberOptions {
public:
  explicit MemberOptions(llvm::cl::SubCommand &command);
  /// chooseMember by these options.
  llvm::Expected<std::vector<int64_t>> choose(const ir::Schedule &s) const;
  /// Whether a member is asked for at all.
  bool given() const { return ranks > 0 || !params.empty(); }
  /// Whether `error`, choose's, skips a schedule rather than fails the
  /// command: with `--p N` over every schedule of the files (none named),
  /// one with no member of N ranks within the --param ranges
  /// (cost::NoMember). A schedule named on its own is an error.
  bool skips(const llvm::Error &error, const Selection &selection) const {
    return ranks > 0 && selection.names.empty() && error.isA<cost::NoMember>();
  }

private:
  llvm::cl::opt<int64_t> ranks;
  llvm::cl::list<std::string> params;
};

/// A counterexample of `property` drawn as collc draw draws a schedule
/// (DrawCommand.cpp): the member it holds at, its failing step alone, the
/// channel or rank at fault in red (collc verify --draw). Errors: the
/// member's, and a member of more ranks than a figure shows.
llvm::Expected<std::string>
drawCounterexample(const ir::Schedule &schedule,
                   const verify::Counterexample &failure,
                   llvm::StringRef property, PortModel ports);

/// What a command prints: `--format text` (its own text) or `--format
/// json` (one JsonDocument).
enum class Format { Text, Json };
/// `--format`'s values for one command, what `text` and `json` print.
inline auto formatValues(const char *text, const char *json) {
  return llvm::cl::values(clEnumValN(Format::Text, "text", text),
                          clEnumValN(Format::Json, "json", json));
}

/// The one JSON document a command run with `--format json` prints on
/// stdout, whichever way it ends (an error included): the members the
/// command sets and, under "diagnostics", every diagnostic `diags` printed
/// from the document's creation. Inactive (prints nothing) when `enabled`
/// is false.
class JsonDocument {
public:
  JsonDocument(DiagnosticEngine &diags, bool enabled);
  JsonDocument(const JsonDocument &) = delete;
  JsonDocument &operator=(const JsonDocument &) = delete;
  ~JsonDocument();

  explicit operator bool() const { return enabled; }
  llvm::json::Object members;
  /// An array member filled as the command goes, printed however it ends.
  llvm::json::Array &list(llvm::StringRef key) { return lists[key.str()]; }

private:
  std::map<std::string, llvm::json::Array> lists;
  DiagnosticEngine &diags;
  bool enabled;
};

/// A schedule's verification report as `--format json` prints it (verify,
/// compile): its verdict, each property's, and their counterexamples.
llvm::json::Object reportJson(const verify::ScheduleReport &report);
llvm::json::Value counterexampleJson(const verify::Counterexample &c);

/// An alltoallv collective's checked pattern (pipeline::checkPattern) as
/// verify and compile print it: each stage's contention and matching, the
/// load measured, the cost with that load, the verdict; and as JSON.
void printPattern(const CollectiveDef &c,
                  const alltoallv::PatternVerdict &verdict,
                  llvm::raw_ostream &os);
llvm::json::Object patternJson(const CollectiveDef &c,
                               const alltoallv::PatternVerdict &verdict);

/// `--timeout`'s help, for every command that proves.
extern const char timeoutHelp[];
/// The value of `--timeout` in seconds, where 0 means no limit; reports a
/// negative one and returns nothing.
std::optional<double> timeoutOption(double seconds, DiagnosticEngine &diags);

/// Reports why a command cannot `verb` (verify, price, show) schedule or
/// collective `name`: "cannot VERB 'NAME': why", at the expression an
/// ir::EvalFailure names (with a note at `loc`), else at `loc`.
void reportFailure(DiagnosticEngine &diags, llvm::Error error,
                   llvm::StringRef verb, llvm::StringRef name,
                   llvm::SMLoc loc);

/// Whether every parameter of `s` has one value, so it needs no size.
bool hasFixedSize(const ir::Schedule &s);
/// The options that pick a member of family `s`: "--p N or --param d=V
/// (d in 1..16)".
std::string sizeOptions(const ir::Schedule &s);

/// Writes `text` to `path`; prints why and returns false when it cannot.
bool writeFile(llvm::StringRef path, llvm::StringRef text,
               DiagnosticEngine &diags);

/// `LO..HI` (or a single `V`, meaning V..V), LO <= HI.
std::optional<std::pair<int64_t, int64_t>> parseRange(llvm::StringRef text);

/// `NAME=LO..HI` (or NAME=V, meaning V..V); none where the text is not of
/// that form.
std::optional<ir::ParamRange> parseNamedRange(llvm::StringRef text);

/// The `--param NAME=LO..HI|V` options as ranges, in order (where two name
/// one parameter, the first counts); or the first that is not of that form.
llvm::Expected<std::vector<ir::ParamRange>>
parseParamOptions(llvm::ArrayRef<std::string> texts);

/// The queries a command's schedules have proved, shared between them
/// (smt::ProvedQueries), and kept between runs in the file of
/// `--proved-queries FILE` when one is given: read by open(), written back
/// when the command ends, whichever way it ends.
class ProvedQueriesFile {
public:
  ProvedQueriesFile() = default;
  ProvedQueriesFile(const ProvedQueriesFile &) = delete;
  ProvedQueriesFile &operator=(const ProvedQueriesFile &) = delete;
  /// Reads `path` (empty: nothing is kept); reports why and returns false
  /// when it cannot.
  bool open(llvm::StringRef path, DiagnosticEngine &diags);
  /// Writes the file back; a failure is printed as a warning, since the
  /// verdicts stand without it.
  ~ProvedQueriesFile();

  smt::ProvedQueries *queries() { return &proved; }

private:
  smt::ProvedQueries proved;
  std::string path;
};

} // namespace collc::tools
