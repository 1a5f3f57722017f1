// collc bench: time collc's emitted collectives against the MPI library's
// own, side by side in one run (bench/coll_bench under mpirun), and report
// per message size the median and spread of both, their ratio, the cost
// model's prediction and the achieved bandwidth against the seed's bound.
//
// Per collective and rank count the schedule is the library's cheapest
// under the model at each size (what `using auto` would pick), among those
// coll_bench links; the output names it. With --same-algorithm the MPI
// library is forced to its own algorithm with the same steps and messages
// (Open MPI's coll_tuned dynamic rules), where it has one, so that the ratio
// separates the implementation from the choice of algorithm.

#include "harness/BenchRun.h"
#include "tools/Commands.h"
#include "tools/Svg.h"

#include "alltoallv/Patterns.h"
#include "cost/Cost.h"
#include "library/Library.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

using namespace collc;
using namespace collc::tools;
using namespace collc::tools::bench;
namespace cl = llvm::cl;

namespace {

cl::SubCommand benchCommand("bench",
                            "Time emitted collectives against the MPI "
                            "library's own, with the model's prediction");
cl::opt<std::string> benchCollective(
    "collective", cl::Required,
    cl::desc("Collective(s), comma-separated: broadcast, reduce, allreduce, "
             "allgather, reduce_scatter, scatter, gather, scan, exscan, "
             "alltoall, alltoallv, or 'all'"),
    cl::value_desc("NAME"), cl::sub(benchCommand), cl::cat(category()));
cl::opt<std::string> benchRanks("ranks",
                                cl::desc("Rank count(s), comma-separated "
                                         "(default 2)"),
                                cl::value_desc("N"), cl::init("2"),
                                cl::sub(benchCommand), cl::cat(category()));
cl::opt<std::string> benchBytes(
    "bytes",
    cl::desc("Message sizes m in bytes (Table 4.1's m), comma-separated, "
             "multiples of 8 (default 8 B to 16 MiB in powers of 4)"),
    cl::value_desc("B,..."), cl::sub(benchCommand), cl::cat(category()));
enum class Format { Text, Json };
cl::opt<Format>
    benchFormat("format", cl::desc("Output format"),
                cl::values(clEnumValN(Format::Text, "text", "tables"),
                           clEnumValN(Format::Json, "json",
                                      "a list of rows with the medians")),
                cl::init(Format::Text), cl::sub(benchCommand),
                cl::cat(category()));
cl::opt<std::string> benchCsv("csv", cl::desc("Also write every row as CSV"),
                              cl::value_desc("FILE"), cl::sub(benchCommand),
                              cl::cat(category()));
cl::opt<std::string> benchSvg("svg",
                              cl::desc("Plot ours/MPI against size (one "
                                       "collective)"),
                              cl::value_desc("FILE"), cl::sub(benchCommand),
                              cl::cat(category()));
cl::opt<std::string> benchSvgDir("svg-dir",
                                 cl::desc("Write DIR/COLLECTIVE.svg for "
                                          "each collective"),
                                 cl::value_desc("DIR"), cl::sub(benchCommand),
                                 cl::cat(category()));
cl::opt<int> benchIterations(
    "iterations",
    cl::desc("Timed calls per size and variant (default: by size, 5..200)"),
    cl::value_desc("K"), cl::init(0), cl::sub(benchCommand),
    cl::cat(category()));
cl::opt<std::string> benchModel(
    "model",
    cl::desc("Cost model for the choices and predictions: FILE or FILE:NAME "
             "(e.g. from collc calibrate), or one per rank count, "
             "N=FILE[:NAME],..."),
    cl::value_desc("[N=]FILE[:NAME],..."), cl::sub(benchCommand),
    cl::cat(category()));
cl::opt<bool> benchSameAlgorithm(
    "same-algorithm",
    cl::desc("Force the MPI library to its algorithm with the chosen "
             "schedule's steps and messages (Open MPI's coll_tuned), where it "
             "has one"),
    cl::sub(benchCommand), cl::cat(category()));

cl::opt<bool> benchCheckChoice(
    "check-choice",
    cl::desc("Also time every other candidate schedule and print, per size, "
             "whether the chosen one is within 5% of the fastest measured "
             "(each over MPI's median in its own launch)"),
    cl::sub(benchCommand), cl::cat(category()));

const char *const allCollectives[] = {
    "broadcast",      "reduce",   "allreduce", "allgather",
    "reduce_scatter", "scatter",  "gather",    "scan",
    "exscan",         "alltoall", "alltoallv"};
/// An irregular all-to-all of coll_bench for p ranks: its pattern is built
/// for one P (compiler/alltoallv), so it fits only that P, and it is priced
/// by the paper's flat model (Theorem 2 for A4) with m = L_max / P, which
/// for the regular counts coll_bench runs is the bytes per pair.
std::optional<Candidate> alltoallvCandidate(SpecCache &specs,
                                            const std::string &name,
                                            const std::string &spec, int p) {
  const CollectiveDef *def = specs.findCollective(spec, name);
  if (!def || def->collective.kind != ir::CollectiveKind::Alltoallv ||
      def->topology.numRanks() != p)
    return std::nullopt;
  std::optional<alltoallv::Algorithm> algorithm = alltoallv::parseAlgorithm(
      def->algorithm.empty() ? "four_stage" : def->algorithm);
  if (!algorithm)
    return std::nullopt;
  alltoallv::ModelCost model = alltoallv::modelCost(*algorithm, p);
  Candidate c;
  c.name = name;
  c.spec = spec;
  c.cost.p = p;
  c.cost.startups = model.startups;
  c.cost.words = model.traffic;
  c.cost.valid = true;
  c.costSource = std::string(model.source) + ", m = L_max / P";
  return c;
}

/// The seed's bound on the t_w coefficient, or the schedule's own.
void boundOf(const Candidate &c, Row &row) {
  if (c.bound) {
    row.boundWords = c.bound->words.toDouble();
    row.boundSource = c.bound->source;
  } else {
    row.boundWords = c.cost.words.toDouble();
    row.boundSource = "the schedule's own t_w term";
  }
}
/// --collective's names; false after printing the one it does not know.
bool parseCollectives(BenchOptions &o, llvm::raw_ostream &errs) {
  if (benchCollective == "all") {
    o.collectives.assign(std::begin(allCollectives), std::end(allCollectives));
  } else {
    llvm::SmallVector<llvm::StringRef, 8> parts;
    llvm::StringRef(benchCollective).split(parts, ',', -1, false);
    for (llvm::StringRef part : parts) {
      if (std::find(std::begin(allCollectives), std::end(allCollectives),
                    part.trim()) == std::end(allCollectives)) {
        errs << "collc: error: unknown collective '" << part.trim()
             << "'; expected one of broadcast, reduce, allreduce, allgather, "
                "reduce_scatter, scatter, gather, scan, exscan, alltoall, "
                "alltoallv "
                "or all\n";
        return false;
      }
      o.collectives.push_back(part.trim().str());
    }
  }
  return true;
}
/// --ranks' rank counts; false after printing what is wrong with them.
bool parseRanks(BenchOptions &o, llvm::raw_ostream &errs) {
  std::optional<std::vector<long long>> ranksList = parseList(benchRanks);
  if (!ranksList) {
    errs << "collc: error: --ranks needs positive integers, got '" << benchRanks
         << "'\n";
    return false;
  }
  if (llvm::any_of(*ranksList,
                   [](long long ranks) { return ranks < 2 || ranks > 1024; })) {
    errs << "collc: error: --ranks must be in 2..1024\n";
    return false;
  }
  o.ranks = *ranksList;
  return true;
}
/// --bytes' sizes, or the default range; false after printing what is
/// wrong with them.
bool parseSizes(BenchOptions &o, llvm::raw_ostream &errs) {
  o.sizes = powersOfFour(16 << 20);
  if (!benchBytes.empty()) {
    std::optional<std::vector<long long>> parsed = parseList(benchBytes);
    if (!parsed || llvm::any_of(*parsed, [](long long b) { return b % 8; })) {
      errs << "collc: error: --bytes needs positive multiples of 8, "
              "comma-separated, got '"
           << benchBytes << "'\n";
      return false;
    }
    o.sizes = *parsed;
  }
  return true;
}
/// --model's models, for every rank count and for one; false after
/// printing why one does not load.
bool parseModels(BenchOptions &o, llvm::raw_ostream &errs) {
  llvm::SmallVector<llvm::StringRef, 4> parts;
  llvm::StringRef(benchModel).split(parts, ',', -1, false);
  for (llvm::StringRef part : parts) {
    auto [head, rest] = part.split('=');
    int ranks = 0;
    const bool perRanks = !rest.empty() && !head.getAsInteger(10, ranks);
    if (perRanks && (ranks < 2 || ranks > 1024 || o.rankModels.count(ranks))) {
      errs << "collc: error: --model " << part
           << ": the rank count must be in 2..1024, once\n";
      return false;
    }
    llvm::Expected<CostModel> m = loadModel(perRanks ? rest : part);
    if (!m) {
      errs << "collc: error: " << llvm::toString(m.takeError()) << "\n";
      return false;
    }
    if (perRanks) {
      o.rankModels[ranks] = *m;
    } else {
      o.baseModel = *m;
      o.modelMeasured = true;
    }
  }
  return true;
}
/// The options, or nothing after printing what is wrong with them.
std::optional<BenchOptions> parseOptions(llvm::raw_ostream &errs) {
  BenchOptions o;
  if (!parseCollectives(o, errs) || !parseRanks(o, errs) ||
      !parseSizes(o, errs))
    return std::nullopt;
  if (benchIterations < 0) {
    errs << "collc: error: --iterations must be positive\n";
    return std::nullopt;
  }
  if (!benchSvg.empty() && o.collectives.size() != 1) {
    errs << "collc: error: --svg plots one collective; use --svg-dir\n";
    return std::nullopt;
  }
  if (!parseModels(o, errs))
    return std::nullopt;
  o.sameAlgorithm = benchSameAlgorithm;
  o.checkChoice = benchCheckChoice;
  o.iterations = benchIterations;
  o.text = benchFormat == Format::Text;
  o.csv = benchCsv;
  o.svg = benchSvg;
  o.svgDir = benchSvgDir;
  for (const auto &entry : o.rankModels)
    if (!llvm::is_contained(o.ranks, entry.first))
      errs << "collc: warning: --model gives a model for " << entry.first
           << " ranks, and --ranks does not run " << entry.first << "\n";
  return o;
}
/// What coll_bench runs (`coll_bench --list`); false after printing why
/// it cannot say.
bool listAvailable(BenchProgram &program, llvm::raw_ostream &errs) {
  llvm::Expected<Launch> listed = launch(1, {"--list"});
  if (!listed) {
    errs << "collc: error: " << llvm::toString(listed.takeError()) << "\n";
    return false;
  }
  if (listed->exitCode != 0) {
    errs << "collc: error: " << listed->commandLine << " failed:\n"
         << listed->err;
    return false;
  }
  llvm::SmallVector<llvm::StringRef, 32> lines;
  llvm::StringRef(listed->out).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 4> f;
    line.split(f, '\t');
    if (f.size() == 5 && f[0] == "schedule" && f[2] != "-")
      program.available[f[1].str()].push_back(
          {f[2].str(), f[3].str(), f[4] == "-" ? "" : f[4].str()});
    if (f[0] != "ranges")
      continue;
    for (llvm::StringRef field : llvm::drop_begin(f)) {
      std::optional<ir::ParamRange> r = parseNamedRange(field);
      if (!r) {
        errs << "collc: error: coll_bench --list: '" << field
             << "' is not a range NAME=LO..HI\n";
        return false;
      }
      program.ranges.push_back(std::move(*r));
    }
  }
  return true;
}
/// The cheapest candidate under `model` at each size, grouped by
/// candidate in the order first chosen; ties keep the library order.
std::vector<Group> chooseBySize(const std::vector<Candidate> &candidates,
                                const std::vector<long long> &sizes,
                                const CostModel &model) {
  std::vector<Group> groups;
  for (long long bytes : sizes) {
    const Candidate *best = nullptr;
    double bestSeconds = 0;
    for (const Candidate &c : candidates) {
      double t =
          c.cost.line(model.machine)
              .seconds(model.segments(), static_cast<double>(bytes), model.to);
      if (!best || t < bestSeconds * (1 - 1e-12)) {
        best = &c;
        bestSeconds = t;
      }
    }
    auto g =
        llvm::find_if(groups, [&](const Group &x) { return x.first == best; });
    if (g == groups.end())
      groups.push_back({best, {bytes}});
    else
      g->second.push_back(bytes);
  }
  return groups;
}
/// coll_bench's arguments to time `candidate` at `sizes`.
std::vector<std::string> benchArgs(const std::string &collective,
                                   const Candidate &candidate,
                                   const std::vector<long long> &sizes,
                                   int iterations) {
  std::string bytesArg;
  for (long long b : sizes)
    bytesArg += (bytesArg.empty() ? "" : ",") + std::to_string(b);
  std::vector<std::string> args = {
      "--collective",
      collective,
      "--schedule",
      candidate.name,
      "--root",
      std::to_string(candidate.schedule ? candidate.schedule->collective.root
                                        : 0),
      "--bytes",
      bytesArg};
  if (iterations > 0) {
    args.push_back("--iterations");
    args.push_back(std::to_string(iterations));
  }
  return args;
}
/// The row of one `size` line of coll_bench (its fields `f`), with the
/// model's prediction and the bound beside the times.
Row timedRow(llvm::ArrayRef<llvm::StringRef> f, const std::string &collective,
             int p, const CostModel &model, const Candidate &candidate,
             bool oversubscribed, bool forced) {
  Row row;
  row.collective = collective;
  row.schedule = candidate.name;
  row.ranks = p;
  f[1].getAsInteger(10, row.bytes);
  f[2].getAsInteger(10, row.iterations);
  const std::vector<double> oursUs = parseSamples(f[3]),
                            mpiUs = parseSamples(f[4]);
  row.ours = summarize(oursUs);
  row.mpi = summarize(mpiUs);
  row.paired = pairedRatio(oursUs, mpiUs);
  row.predictedUs =
      candidate.cost.line(model.machine)
          .seconds(model.segments(), static_cast<double>(row.bytes), model.to) *
      1e6;
  boundOf(candidate, row);
  row.oversubscribed = oversubscribed;
  if (forced)
    row.mpiAlgorithm =
        llvm::StringRef(candidate.mpiAlgorithm).split('=').second.str();
  return row;
}
/// A row per `size` line of coll_bench's output into `into`; whether it
/// reported checked calls, without which its times prove nothing.
bool rowsOf(const Launch &run, const std::string &collective, int p,
            const CostModel &model, const Candidate &candidate, bool forced,
            std::vector<Row> &into) {
  llvm::SmallVector<llvm::StringRef, 32> lines;
  llvm::StringRef(run.out).split(lines, '\n', -1, false);
  bool checked = false;
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 6> f;
    line.split(f, '\t');
    if (f.size() == 2 && f[0] == "checked")
      checked = true;
    if (f.size() != 5 || f[0] != "size")
      continue;
    into.push_back(timedRow(f, collective, p, model, candidate,
                            run.oversubscribed, forced));
  }
  return checked;
}
} // namespace

std::vector<Candidate> BenchRun::priceCandidates(const std::string &collective,
                                                 int p,
                                                 const CostModel &model) {
  std::vector<Candidate> candidates;
  auto listed = program.available.find(collective);
  if (listed == program.available.end())
    return candidates;
  for (const auto &[name, spec, mpiAlgorithm] : listed->second) {
    // A per-size alltoallv collective; a `schedule x : alltoallv` (the
    // library's alltoallv_direct) is priced as any schedule below.
    if (collective == "alltoallv")
      if (std::optional<Candidate> c =
              alltoallvCandidate(specs, name, spec, p)) {
        c->mpiAlgorithm = mpiAlgorithm;
        candidates.push_back(std::move(*c));
        continue;
      }
    const ir::Schedule *s = specs.find(spec, name);
    if (!s)
      continue;
    // The member coll_bench runs: within the ranges it was compiled for.
    llvm::Expected<std::vector<int64_t>> params =
        cost::paramsForRanks(*s, p, std::nullopt, program.ranges);
    if (!params) {
      llvm::consumeError(params.takeError());
      continue;
    }
    if (s->collective.root >= p)
      continue;
    llvm::Expected<cost::ScheduleCost> c =
        cost::costOf(*s, *params, model.ports);
    if (!c) {
      llvm::consumeError(c.takeError());
      continue;
    }
    candidates.push_back(
        {name, spec, s, *c,
         cost::lowerBound(c->collective, s->topology.kind, p, model.ports), "",
         mpiAlgorithm});
  }
  return candidates;
}

std::optional<Launch> BenchRun::launchCandidate(
    const std::string &collective, int p, const Candidate &candidate,
    const std::vector<long long> &sizes, bool forced) const {
  std::vector<std::string> args =
      benchArgs(collective, candidate, sizes, o.iterations);
  std::vector<std::string> env;
  if (forced)
    env = {"OMPI_MCA_coll_tuned_use_dynamic_rules=1",
           "OMPI_MCA_" + candidate.mpiAlgorithm};
  // The user's own coll_tuned settings (a rules file, say) would take
  // precedence over the forced one: none go with it.
  llvm::Expected<Launch> run =
      launch(p, args, env, forced ? "OMPI_MCA_coll_tuned_" : "");
  if (!run) {
    errs << "collc: error: " << llvm::toString(run.takeError()) << "\n";
    return std::nullopt;
  }
  // Open MPI warns of a value it does not know and runs its default: the
  // run would not time what it says.
  if (forced && llvm::StringRef(run->err).contains(
                    "An invalid value was supplied for an enum variable")) {
    errs << run->err << "collc: error: the MPI library did not take "
         << candidate.mpiAlgorithm << " (" << collective << ", "
         << candidate.name << ")\n";
    return std::nullopt;
  }
  return std::move(*run);
}

bool BenchRun::timeCandidate(const std::string &collective, int p,
                             const CostModel &model, const Candidate &candidate,
                             const std::vector<long long> &sizes,
                             std::vector<Row> &into, Launched &launched) {
  const bool forced = o.sameAlgorithm && !candidate.mpiAlgorithm.empty();
  std::optional<Launch> run =
      launchCandidate(collective, p, candidate, sizes, forced);
  if (!run)
    return false;
  launched.oversubscribed = run->oversubscribed;
  launched.commandLines += "  $ " + run->commandLine + "\n";
  if (run->exitCode != 0) {
    errs << run->err;
    errs << "collc: error: " << collective << " (" << candidate.name << ") on "
         << p << " ranks failed (exit " << run->exitCode << ")"
         << (run->exitCode == 1 ? ": wrong result" : "") << "\n";
    failedChecksum = true;
    return true;
  }
  if (!rowsOf(*run, collective, p, model, candidate, forced, into)) {
    errs << run->err << "collc: error: " << collective << " (" << candidate.name
         << ") on " << p
         << " ranks: the timing program reported no checked calls\n";
    failedChecksum = true;
  }
  return true;
}

bool BenchRun::benchOne(const std::string &collective, int p) {
  const CostModel &model = o.modelFor(p);
  std::vector<Candidate> candidates = priceCandidates(collective, p, model);
  if (candidates.empty()) {
    auto listed = program.available.find(collective);
    std::string why =
        listed == program.available.end() || listed->second.empty()
            ? "not yet: no emitted " + collective + " in the library to time"
        : collective == "alltoallv"
            ? "no emitted alltoallv for " + std::to_string(p) + " ranks in " +
                  listed->second.front().spec
            : "no library schedule for " + std::to_string(p) +
                  " ranks within the ranges coll_bench was compiled for (" +
                  ir::rangeText(program.ranges) + ")";
    notes.push_back(collective + " on " + std::to_string(p) + " ranks: " + why);
    if (text)
      os << "\n" << collective << " on " << p << " ranks: " << why << "\n";
    return true;
  }
  // Runs are grouped by schedule.
  std::vector<Group> groups = chooseBySize(candidates, o.sizes, model);
  const size_t firstRow = rows.size();
  Launched launched;
  for (const auto &[candidate, groupSizes] : groups)
    if (!timeCandidate(collective, p, model, *candidate, groupSizes, rows,
                       launched))
      return false;
  // --check-choice: every other candidate at every size, so that the
  // model's choice is judged against the fastest measured.
  std::vector<Row> others;
  if (o.checkChoice)
    for (const Candidate &c : candidates)
      if (llvm::none_of(groups, [&](const Group &g) {
            return g.first == &c && g.second.size() == o.sizes.size();
          }))
        if (!timeCandidate(collective, p, model, c, o.sizes, others, launched))
          return false;
  std::sort(rows.begin() + static_cast<ptrdiff_t>(firstRow), rows.end(),
            [](const Row &a, const Row &b) { return a.bytes < b.bytes; });
  if (!text)
    return true;
  printTable(collective, p, model, candidates, groups, firstRow, launched);
  if (o.checkChoice)
    printChoiceCheck(firstRow, others);
  return true;
}
namespace {

int runBench() {
  std::optional<BenchOptions> options = parseOptions(llvm::errs());
  if (!options)
    return ExitInputError;
  BenchProgram program;
  if (!listAvailable(program, llvm::errs()))
    return ExitInputError;
  BenchRun run(*options, program);
  run.printHeader();
  for (const std::string &collective : options->collectives)
    for (long long ranks : options->ranks)
      if (!run.benchOne(collective, static_cast<int>(ranks)))
        return ExitInputError;
  run.printSummaries();
  if (!run.writeFiles())
    return ExitInputError;
  if (run.checksumFailed()) {
    llvm::errs() << "collc: FAIL: a benchmarked result differed from the MPI "
                    "library's (see above)\n";
    return ExitCounterexample;
  }
  return ExitOk;
}

CommandRegistration registration(
    benchCommand, runBench,
    "collc bench --collective NAME --ranks N [--bytes B,...]   time emitted "
    "collectives against MPI's");

} // namespace
