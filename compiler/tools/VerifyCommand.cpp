// collc verify FILE...: prove the schedules in them.

#include "tools/Commands.h"

#include "pipeline/Pipeline.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "verify/Verifier.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

using namespace collc;
using namespace collc::tools;
namespace cl = llvm::cl;

namespace {

cl::SubCommand verifyCommand(
    "verify", "Prove schedules: causality, contention, congestion, matching "
              "and correctness; print a counterexample when one fails");
cl::list<std::string> verifyFiles(cl::Positional, cl::OneOrMore,
                                  cl::desc("<file.coll>..."),
                                  cl::sub(verifyCommand),
                                  cl::cat(category()));
cl::list<std::string> verifySchedules(
    "schedule",
    cl::desc("Verify only these schedules (names separated by commas)"),
    cl::value_desc("NAME,..."), cl::CommaSeparated, cl::sub(verifyCommand),
    cl::cat(category()));
cl::opt<int64_t> verifyP("p", cl::desc("Verify for exactly N ranks"),
                         cl::value_desc("N"), cl::init(0),
                         cl::sub(verifyCommand), cl::cat(category()));
cl::opt<std::string> verifyRange("range",
                                 cl::desc("Verify for every number of ranks "
                                          "in LO..HI"),
                                 cl::value_desc("LO..HI"),
                                 cl::sub(verifyCommand),
                                 cl::cat(category()));
cl::list<std::string> verifyParams(
    "param",
    cl::desc("Range of a schedule parameter, e.g. d=1..16 (an error for a "
             "selected schedule without it)"),
    cl::value_desc("NAME=LO..HI"), cl::sub(verifyCommand), cl::cat(category()));
cl::opt<std::string> verifyOnly(
    "properties",
    cl::desc("Comma-separated subset of causality, contention, congestion, "
             "matching, correctness"),
    cl::sub(verifyCommand), cl::cat(category()));
cl::opt<Format> verifyFormat(
    "format", cl::desc("Output format"),
    formatValues("readable report", "one JSON document"),
    cl::init(Format::Text), cl::sub(verifyCommand), cl::cat(category()));
cl::opt<std::string> verifyProvedQueries(
    "proved-queries",
    cl::desc("Keep the queries Z3 proved in FILE between runs: read before "
             "proving, written back after, so an unchanged schedule is "
             "proved again at once"),
    cl::value_desc("FILE"), cl::sub(verifyCommand), cl::cat(category()));
cl::opt<double> verifyTimeout("timeout", cl::desc(timeoutHelp),
                              cl::value_desc("SECONDS"), cl::init(60),
                              cl::sub(verifyCommand), cl::cat(category()));
cl::opt<bool> verifyAllPort("all-port",
                            cl::desc("All-port model: one message per "
                                     "channel instead of per rank"),
                            cl::sub(verifyCommand), cl::cat(category()));
cl::opt<int64_t> verifyMaxSim("simulate-up-to",
                              cl::desc("Largest number of ranks simulated "
                                       "(default 4096)"),
                              cl::init(4096), cl::sub(verifyCommand),
                              cl::cat(category()));
cl::opt<std::string> verifyDraw(
    "draw",
    cl::desc("Draw the first counterexample as an SVG figure: its failing "
             "step, the channel or rank at fault in red"),
    cl::value_desc("OUT.svg"), cl::sub(verifyCommand), cl::cat(category()));
cl::opt<bool> verifyVerbose("verbose", cl::desc("Print every solver query"),
                            cl::sub(verifyCommand), cl::cat(category()));
cl::opt<bool> verifyDumpSmt(
    "dump-smt",
    cl::desc("Print every solver query as --verbose does, and before it the "
             "query itself in SMT-LIB, to study a slow one with z3 alone"),
    cl::sub(verifyCommand), cl::cat(category()));
cl::opt<unsigned> verifyJobs(
    "jobs",
    cl::desc("Prove up to N schedules at once, on N threads (default 1; 0: "
             "one per core). The output is in the files' order either way"),
    cl::value_desc("N"), cl::init(1), cl::sub(verifyCommand),
    cl::cat(category()));
cl::alias verifyJobsShort("j", cl::desc("Alias for --jobs"),
                          cl::aliasopt(verifyJobs));

/// The options every schedule is verified under, from the command line;
/// nothing, with the error reported, when one is malformed.
std::optional<verify::VerifyOptions> optionsFromFlags(DiagnosticEngine &diags) {
  verify::VerifyOptions options;
  if (verifyP.getNumOccurrences()) {
    if (verifyP < 1) {
      diags.error("--p needs a positive number of ranks");
      return std::nullopt;
    }
    options.p = verifyP;
  }
  if (!verifyRange.empty()) {
    options.ranks = parseRange(verifyRange);
    if (!options.ranks) {
      diags.error("--range needs LO..HI, got '" + verifyRange + "'");
      return std::nullopt;
    }
  }
  llvm::Expected<std::vector<verify::ParamRange>> params =
      parseParamOptions(verifyParams);
  if (!params) {
    diags.error(llvm::toString(params.takeError()));
    return std::nullopt;
  }
  options.params = std::move(*params);
  std::optional<double> timeout = timeoutOption(verifyTimeout, diags);
  if (!timeout)
    return std::nullopt;
  if (!verifyOnly.empty()) {
    llvm::SmallVector<llvm::StringRef, 5> names;
    llvm::StringRef(verifyOnly).split(names, ',');
    for (llvm::StringRef name : names) {
      std::optional<verify::Property> found;
      for (auto p : {verify::Property::Causality, verify::Property::Contention,
                     verify::Property::Congestion, verify::Property::Matching,
                     verify::Property::Correctness})
        if (name.trim() == verify::propertyName(p))
          found = p;
      if (!found) {
        diags.error("unknown property '" + name + "'");
        return std::nullopt;
      }
      options.only.push_back(*found);
    }
  }
  options.ports = verifyAllPort ? PortModel::All : PortModel::Single;
  options.timeoutSeconds = *timeout;
  options.maxSimulatedRanks = verifyMaxSim;
  if (verifyVerbose || verifyDumpSmt)
    options.verbose = &llvm::errs();
  options.dumpSmt = verifyDumpSmt;
  return options;
}

/// Draws the first counterexample of `report` that can be drawn into
/// --draw's file; `counterexamples` records that one was found. Whether
/// one was drawn; a counterexample too large to draw is said so once.
bool drawCounterexampleOf(const ir::Schedule &schedule,
                          const verify::ScheduleReport &report, PortModel ports,
                          DiagnosticEngine &diags, bool &counterexamples,
                          bool &written) {
  for (const verify::PropertyResult &r : report.properties) {
    if (!r.counterexample)
      continue;
    counterexamples = true;
    llvm::Expected<std::string> svg = drawCounterexample(
        schedule, *r.counterexample, verify::propertyName(r.property), ports);
    if (!svg) {
      diags.warning(schedule.loc, "cannot draw the counterexample of '" +
                                      schedule.name +
                                      "': " + llvm::toString(svg.takeError()));
      return false;
    }
    written = writeFile(verifyDraw, *svg, diags);
    return true;
  }
  return false;
}

/// The selected schedules of every file, proved on up to --jobs threads
/// (each prover has its own Z3 context), their reports taken in the files'
/// order as they come in.
class Proofs {
public:
  struct Job {
    const ir::Schedule *schedule;
    verify::VerifyOptions options;
    std::string log; // --verbose's lines, when jobs run at once
    std::optional<llvm::Expected<verify::ScheduleReport>> report;
  };

  Proofs(const Selection &selection, const verify::VerifyOptions &options)
      : options(options), jobsOf(selection.files.size()),
        doneOf(selection.files.size()) {
    for (size_t f = 0; f < selection.files.size(); ++f) {
      const LoadedFile &file = selection.files[f];
      verify::VerifyOptions own = options;
      own.ports = portsFor(file.program, verifyAllPort);
      for (const ir::Schedule &schedule : file.program.schedules)
        if (selection.selects(file, schedule))
          jobsOf[f].push_back({&schedule, own, {}, std::nullopt});
    }
    threads = verifyJobs == 0
                  ? llvm::hardware_concurrency().compute_thread_count()
                  : verifyJobs.getValue();
    if (threads <= 1)
      return;
    pool.emplace(llvm::hardware_concurrency(threads));
    for (size_t f = 0; f < jobsOf.size(); ++f)
      for (Job &job : jobsOf[f])
        doneOf[f].push_back(pool->async([this, &job] { prove(job); }));
  }

  size_t count(size_t file) const { return jobsOf[file].size(); }

  /// File `f`'s `j`-th job, proved, its --verbose lines printed.
  Job &take(size_t f, size_t j) {
    Job &job = jobsOf[f][j];
    // get() throws what the job threw, here and in order, as a serial run
    // would.
    if (pool)
      doneOf[f][j].get();
    else
      prove(job);
    llvm::errs() << job.log;
    return job;
  }

private:
  void prove(Job &job) {
    std::optional<llvm::raw_string_ostream> log;
    if (job.options.verbose && threads > 1) {
      log.emplace(job.log);
      job.options.verbose = &*log;
    }
    job.report.emplace(verify::verifySchedule(*job.schedule, job.options));
    job.options.verbose = options.verbose; // not the stream that ends here
  }

  const verify::VerifyOptions &options;
  unsigned threads = 1;
  std::vector<std::vector<Job>> jobsOf;
  std::optional<llvm::ThreadPool> pool;
  std::vector<std::vector<std::shared_future<void>>> doneOf;
};

/// One `collc verify` run over its selection: each schedule's report and
/// each alltoallv pattern's verdict, printed as they come, the worst verdict
/// kept for the exit code.
class VerifyRun {
public:
  VerifyRun(DiagnosticEngine &diags, JsonDocument &json)
      : diags(diags), json(json) {}

  /// The reports of file f's schedules, from `proofs` in their order.
  void reportSchedules(Proofs &proofs, const LoadedFile &file, size_t f) {
    for (size_t j = 0; j < proofs.count(f); ++j) {
      Proofs::Job &job = proofs.take(f, j);
      const ir::Schedule &schedule = *job.schedule;
      llvm::Expected<verify::ScheduleReport> report = std::move(*job.report);
      if (!report) {
        reportFailure(diags, report.takeError(), "verify", schedule.name,
                      schedule.loc);
        worsen(verify::Status::Error);
        continue;
      }
      // A counterexample that cannot be drawn (too many ranks) leaves the
      // verdict and its exit code as they are; the next one is tried.
      bool written = true;
      if (!verifyDraw.empty() && !drawn)
        drawn = drawCounterexampleOf(schedule, *report, job.options.ports,
                                     diags, counterexamples, written);
      if (!written)
        worsen(verify::Status::Error);
      worsen(report->verdict());
      if (verifyFormat == Format::Text)
        printReport(file, schedule, *report);
      else
        jsonSchedules.push_back(reportJson(*report));
    }
  }

  /// An alltoallv collective is a pattern built for its P (compiler/
  /// alltoallv), not a schedule of the file: its stages are checked here.
  void checkPatterns(const Selection &selection, const Program &program,
                     const verify::VerifyOptions &options) {
    for (const CollectiveDef &c : program.collectives) {
      if (!program.runsPattern(c) || !selection.selects(c.name))
        continue;
      llvm::Expected<alltoallv::PatternVerdict> verdict =
          pipeline::checkPattern(c, options);
      if (!verdict) {
        reportFailure(diags, verdict.takeError(), "verify", c.name, c.loc);
        worsen(verify::Status::Error);
        continue;
      }
      worsen(verdict->verdict());
      if (verifyFormat == Format::Json)
        jsonAlltoallv.push_back(patternJson(c, *verdict));
      else
        printPattern(c, *verdict, llvm::outs());
    }
  }

  /// The note on --draw, the document's lists, and the exit code.
  int finish() {
    if (!verifyDraw.empty() && !drawn)
      diags.note(llvm::SMLoc(),
                 (counterexamples ? "nothing drawn: no counterexample could "
                                    "be drawn; '"
                                  : "nothing to draw: no schedule has a "
                                    "counterexample; '") +
                     verifyDraw + "' not written");
    json.members["schedules"] = std::move(jsonSchedules);
    if (!jsonAlltoallv.empty())
      json.members["alltoallv"] = std::move(jsonAlltoallv);
    // A collective that did not resolve is an error of its file, reported
    // where it is declared, though the file's other schedules are proved.
    if (diags.hasErrors())
      worsen(verify::Status::Error);
    return exitCodeOf(worst);
  }

  /// The worst of every verdict, an input error worst of all.
  void worsen(verify::Status s) { worst = verify::worse(worst, s); }

private:
  /// The collectives that resolved to the schedule, then its verdict.
  static void printReport(const LoadedFile &file, const ir::Schedule &schedule,
                          const verify::ScheduleReport &report) {
    for (const auto &[collective, picked] : file.choices)
      for (const library::Choice &c : picked)
        if (c.schedule.name == schedule.name)
          llvm::outs() << "collective " << collective << ": "
                       << library::describe(c) << "\n";
    verify::printText(schedule, report, llvm::outs());
    llvm::outs().flush(); // each verdict as it comes, after its queries
  }

  DiagnosticEngine &diags;
  JsonDocument &json;
  bool drawn = false, counterexamples = false;
  verify::Status worst = verify::Status::Proved;
  llvm::json::Array jsonSchedules, jsonAlltoallv;
};

int runVerify() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), llvm::errs().has_colors());
  JsonDocument json(diags, verifyFormat == Format::Json);
  json.members["schedules"] = llvm::json::Array();
  std::optional<verify::VerifyOptions> parsed = optionsFromFlags(diags);
  if (!parsed)
    return ExitInputError;
  verify::VerifyOptions options = std::move(*parsed);
  // Schedules that share parts (compositions) share their slow queries.
  ProvedQueriesFile provedQueries;
  if (!provedQueries.open(verifyProvedQueries, diags))
    return ExitInputError;
  options.provedQueries = provedQueries.queries();

  VerifyRun run(diags, json);
  std::optional<Selection> selection =
      loadSelection(verifyFiles, verifySchedules, diags);
  if (!selection)
    return ExitInputError;
  if (selection->failed)
    run.worsen(verify::Status::Error);
  Proofs proofs(*selection, options);
  for (size_t f = 0; f < selection->files.size(); ++f) {
    run.reportSchedules(proofs, selection->files[f], f);
    run.checkPatterns(*selection, selection->files[f].program, options);
  }
  return run.finish();
}

CommandRegistration registration(verifyCommand, runVerify,
                                 "collc verify FILE...   prove the schedules "
                                 "in them");

} // namespace
