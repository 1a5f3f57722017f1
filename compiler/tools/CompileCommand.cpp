// collc compile FILE -o DIR [--namespace NS]: verify every schedule of FILE,
// then write DIR/<stem>.h and DIR/<stem>.cpp with one function per schedule
// (and per collective whose `using` names one of them).

#include "tools/Commands.h"

#include "emit/Emitter.h"
#include "pipeline/Pipeline.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "verify/Verifier.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>

using namespace collc;
using namespace collc::tools;
namespace cl = llvm::cl;

namespace {

cl::SubCommand compileCommand(
    "compile", "Verify the schedules of a spec, then emit C++ that runs them "
               "over MPI");
cl::opt<std::string> compileFile(cl::Positional, cl::Required,
                                 cl::desc("<file.coll>"),
                                 cl::sub(compileCommand), cl::cat(category()));
cl::opt<std::string> compileOut("o", cl::Required,
                                cl::desc("Directory for the .h and .cpp"),
                                cl::value_desc("DIR"), cl::sub(compileCommand),
                                cl::cat(category()));
cl::opt<std::string> compileNamespace("namespace",
                                      cl::desc("C++ namespace of the emitted "
                                               "functions"),
                                      cl::value_desc("NS"),
                                      cl::sub(compileCommand),
                                      cl::cat(category()));
cl::list<std::string> compileParams(
    "param",
    cl::desc("Emit for this range of a schedule parameter only, e.g. "
             "d=1..4 (proved over that range, within the declared one; a "
             "family without it keeps its own)"),
    cl::value_desc("NAME=LO..HI"), cl::sub(compileCommand),
    cl::cat(category()));
cl::opt<bool> compileAllPort("all-port",
                             cl::desc("Verify under the all-port model "
                                      "(000 §4.7.2) instead of single-port"),
                             cl::sub(compileCommand), cl::cat(category()));
cl::opt<std::string> compileProvedQueries(
    "proved-queries",
    cl::desc("Keep the queries Z3 proved in FILE between runs: read before "
             "proving, written back after, so an unchanged schedule is "
             "proved again at once"),
    cl::value_desc("FILE"), cl::sub(compileCommand), cl::cat(category()));
cl::opt<Format>
    compileFormat("format", cl::desc("Output format"),
                  formatValues("what was written",
                               "one JSON document: the files written, each "
                               "schedule's verification report, the notes and "
                               "the diagnostics"),
                  cl::init(Format::Text), cl::sub(compileCommand),
                  cl::cat(category()));
cl::opt<double> compileTimeout("timeout", cl::desc(timeoutHelp),
                               cl::value_desc("SECONDS"), cl::init(60),
                               cl::sub(compileCommand), cl::cat(category()));

/// Whether `ns` can name the emitted code's namespace: empty, or
/// identifiers joined by "::" (it becomes C++ source).
bool isCppNamespace(llvm::StringRef ns) {
  if (ns.empty())
    return true;
  return llvm::all_of(llvm::split(ns, "::"), [](llvm::StringRef part) {
    return !part.empty() &&
           (std::isalpha(static_cast<unsigned char>(part[0])) ||
            part[0] == '_') &&
           llvm::all_of(part, [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
           });
  });
}

/// The emitted header and source, written under compileOut.
bool writeEmitted(const emit::EmittedFiles &files, llvm::StringRef header,
                  llvm::StringRef source, DiagnosticEngine &diags) {
  if (std::error_code ec = llvm::sys::fs::create_directories(compileOut)) {
    diags.error(llvm::SMLoc(),
                "cannot create '" + compileOut + "': " + ec.message());
    return false;
  }
  return writeFile(header, files.header, diags) &&
         writeFile(source, files.source, diags);
}

/// The proofs' options from the command line; none after an error.
std::optional<verify::VerifyOptions>
compileOptions(ProvedQueriesFile &provedQueries, DiagnosticEngine &diags) {
  verify::VerifyOptions options;
  std::optional<double> timeout = timeoutOption(compileTimeout, diags);
  if (!timeout)
    return std::nullopt;
  options.timeoutSeconds = *timeout;
  options.nameSenders = true;
  // A --param names one family's parameter; the others keep their own.
  options.paramsWithinDeclared = true;
  if (!provedQueries.open(compileProvedQueries, diags))
    return std::nullopt;
  options.provedQueries = provedQueries.queries();
  if (!isCppNamespace(compileNamespace)) {
    diags.error(llvm::SMLoc(), "--namespace '" + compileNamespace +
                                   "' is not a C++ namespace name");
    return std::nullopt;
  }
  llvm::Expected<std::vector<verify::ParamRange>> params =
      parseParamOptions(compileParams);
  if (!params) {
    diags.error(llvm::toString(params.takeError()));
    return std::nullopt;
  }
  options.params = std::move(*params);
  return options;
}

/// What was written, in the document or as lines for the user.
void reportWritten(const emit::EmittedFiles &files, llvm::StringRef header,
                   llvm::StringRef source, size_t schedules,
                   JsonDocument &json) {
  if (json) {
    json.members["written"] = true;
    json.members["header"] = header.str();
    json.members["source"] = source.str();
    llvm::json::Array notes;
    for (const std::string &note : files.notes)
      notes.push_back(note);
    json.members["notes"] = std::move(notes);
    return;
  }
  for (const std::string &note : files.notes)
    llvm::outs() << "collc: note: " << note << "\n";
  llvm::outs() << "collc: wrote " << header << " and " << source << " ("
               << plural(schedules, "schedule") << ")\n";
}

int runCompile() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), llvm::errs().has_colors());
  JsonDocument json(diags, compileFormat == Format::Json);
  llvm::json::Array &reports = json.list("schedules");
  json.members["written"] = false;
  // Schedules that share parts (compositions) share their slow queries.
  ProvedQueriesFile provedQueries;
  std::optional<verify::VerifyOptions> parsed =
      compileOptions(provedQueries, diags);
  if (!parsed)
    return ExitInputError;
  verify::VerifyOptions options = std::move(*parsed);

  llvm::Expected<Program> program = frontendFor(diags).load(compileFile);
  if (!program) {
    llvm::consumeError(program.takeError());
    return ExitInputError;
  }
  if (diags.hasErrors())
    return ExitInputError;
  options.ports = portsFor(*program, compileAllPort);

  // No code for a schedule or pattern that is not proved: check all, then
  // emit. Every report goes in the document, whichever way the compile ends.
  pipeline::CheckEvents events;
  events.schedule = [&](const ir::Schedule &schedule,
                        const verify::ScheduleReport &report) {
    if (json)
      reports.push_back(reportJson(report));
    else if (report.verdict() != verify::Status::Proved)
      verify::printText(schedule, report, llvm::outs());
  };
  events.pattern = [&](const CollectiveDef &c,
                       const alltoallv::PatternVerdict &verdict) {
    if (json)
      json.list("alltoallv").push_back(patternJson(c, verdict));
    else if (verdict.verdict() != verify::Status::Proved)
      printPattern(c, verdict, llvm::outs());
  };
  events.failure = [&](llvm::Error e, llvm::StringRef name, llvm::SMLoc loc) {
    reportFailure(diags, std::move(e), "verify", name, loc);
  };
  const pipeline::Checked checked = pipeline::check(*program, options, events);
  if (const int exitCode = exitCodeOf(checked.verdict)) {
    if (exitCode == ExitInputError)
      return exitCode;
    diags.error(llvm::SMLoc(), std::string("no code written: ") +
                                   (exitCode == ExitCounterexample
                                        ? "a schedule has a counterexample"
                                        : "a schedule could not be proved"));
    return exitCode;
  }

  emit::EmitOptions emitOptions;
  emitOptions.baseName = llvm::sys::path::stem(compileFile).str();
  emitOptions.ns = compileNamespace;
  emitOptions.specName = llvm::sys::path::filename(compileFile).str();
  emitOptions.sourceMgr = &sourceMgr;
  llvm::Expected<emit::EmittedFiles> files =
      emit::emitCpp(*program, checked.schedules, checked.patterns, emitOptions);
  if (!files) {
    diags.error(llvm::SMLoc(), llvm::toString(files.takeError()));
    return ExitInputError;
  }
  llvm::SmallString<256> header(compileOut), source(compileOut);
  llvm::sys::path::append(header, emitOptions.baseName + ".h");
  llvm::sys::path::append(source, emitOptions.baseName + ".cpp");
  if (!writeEmitted(*files, header, source, diags))
    return ExitInputError;
  reportWritten(*files, header, source, checked.schedules.size(), json);
  return ExitOk;
}

CommandRegistration registration(compileCommand, runCompile,
                                 "collc compile FILE -o DIR   verify, then "
                                 "emit C++ for MPI");

} // namespace
