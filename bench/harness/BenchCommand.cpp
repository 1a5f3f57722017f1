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

#include "harness/BenchSupport.h"
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

/// A library schedule coll_bench can run, priced for one rank count.
struct Candidate {
  std::string name, spec;
  const ir::Schedule *schedule = nullptr; // none for an alltoallv
  cost::ScheduleCost cost;
  std::optional<cost::LowerBound> bound;
  std::string costSource; // where the cost comes from, if not simulation
  // Open MPI's like algorithm as PARAMETER=VALUE (coll_bench --list), or
  // empty where it has none.
  std::string mpiAlgorithm;
};

struct Row {
  std::string collective, schedule;
  int ranks = 0;
  long long bytes = 0;
  int iterations = 0;
  Stats ours, mpi;
  double predictedUs = 0;
  double boundWords = 0; // the seed's t_w coefficient in units of m
  std::string boundSource;
  bool oversubscribed = false;
  std::string mpiAlgorithm = "default"; // what MPI ran: its default, or the
                                        // forced VALUE
  PairedRatio paired; // the per-call ratios' median and 95% interval
  double ratio() const { return mpi.median > 0 ? ours.median / mpi.median : 0; }
  /// The target at this size: ours/MPI <= 1.0 from 64 KiB, <= 1.05 below.
  static constexpr double smallTarget = 1.05;
  double target() const { return bytes >= 65536 ? 1.0 : smallTarget; }
  /// " ": meets the target (by the ratio of the medians, the issue's
  /// measure); "*": misses it, the per-call ratios' 95% interval lying
  /// above it; "~": misses it, but the interval reaches it, so this run
  /// cannot tell the two apart.
  const char *mark() const {
    if (ratio() <= target())
      return " ";
    return paired.n > 0 && paired.low <= target() ? "~" : "*";
  }
  /// The bound's bytes over the time: what the run achieved of 1/t_w.
  double gbps(double us) const {
    return us > 0 ? boundWords * bytes / (us * 1e-6) / 1e9 : 0;
  }
};

/// Loaded specs, kept alive with their SourceMgr (schedules point into it).
struct SpecCache {
  struct Entry {
    std::unique_ptr<llvm::SourceMgr> sourceMgr;
    std::optional<Program> program;
  };
  std::map<std::string, Entry> entries;

  const ir::Schedule *find(const std::string &path, llvm::StringRef name) {
    Entry &e = load(path);
    return e.program ? e.program->findSchedule(name) : nullptr;
  }

  const CollectiveDef *findCollective(const std::string &path,
                                      llvm::StringRef name) {
    Entry &e = load(path);
    if (e.program)
      for (const CollectiveDef &c : e.program->collectives)
        if (c.name == name)
          return &c;
    return nullptr;
  }

private:
  /// `spec` as coll_bench names it (specs/library/..., bench/...), found in
  /// collc's data directory: the source tree, or share/collc when installed.
  Entry &load(const std::string &spec) {
    auto [it, inserted] = entries.try_emplace(spec);
    Entry &e = it->second;
    if (inserted) {
      llvm::SmallString<256> path(library::dataDirectory("collc"));
      llvm::sys::path::append(path, spec);
      e.sourceMgr = std::make_unique<llvm::SourceMgr>();
      DiagnosticEngine diags(*e.sourceMgr, llvm::errs(), false);
      // Resolved, so the library's compositions are composed.
      llvm::Expected<Program> p = frontendFor(diags).load(path);
      if (p && !diags.hasErrors())
        e.program = std::move(*p);
      else if (!p)
        llvm::errs() << "collc: warning: " << spec
                     << "'s schedules are not timed: "
                     << llvm::toString(p.takeError()) << "\n";
    }
    return e;
  }
};

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

/// One SVG per collective: ours/MPI against size, both axes logarithmic (a
/// ratio of 2 is as far above 1 as 1/2 is below), a line per rank count,
/// with the 1.0 and 1.1 targets marked and each point's 95% interval.
std::string svgPlot(llvm::StringRef collective, llvm::ArrayRef<Row> rows) {
  const double width = 640, height = 400, left = 60, right = 110, top = 40,
               bottom = 50;
  std::map<int, std::vector<const Row *>> series;
  long long minBytes = 0, maxBytes = 0;
  double minRatio = 0.5, maxRatio = 2;
  for (const Row &r : rows) {
    if (r.collective != collective)
      continue;
    series[r.ranks].push_back(&r);
    minBytes = minBytes ? std::min(minBytes, r.bytes) : r.bytes;
    maxBytes = std::max(maxBytes, r.bytes);
    if (r.ratio() > 0) {
      minRatio = std::min(minRatio, r.ratio());
      maxRatio = std::max(maxRatio, r.ratio());
    }
    if (r.paired.n > 0 && r.paired.low > 0) {
      minRatio = std::min(minRatio, r.paired.low);
      maxRatio = std::max(maxRatio, r.paired.high);
    }
  }
  const double ly0 = std::floor(std::log2(minRatio)),
               ly1 = std::ceil(std::log2(maxRatio));
  double lx0 = std::log2(static_cast<double>(std::max(1ll, minBytes)));
  double lx1 = std::log2(static_cast<double>(std::max(minBytes + 1, maxBytes)));
  if (lx1 <= lx0)
    lx1 = lx0 + 1;
  auto x = [&](long long b) {
    return left + (std::log2(static_cast<double>(b)) - lx0) / (lx1 - lx0) *
                      (width - left - right);
  };
  auto y = [&](double ratio) {
    return top + (ly1 - std::log2(std::max(ratio, minRatio))) / (ly1 - ly0) *
                     (height - top - bottom);
  };
  const double bottomRatio = std::exp2(ly0), topRatio = std::exp2(ly1);
  svg::Writer w(width, height);
  w.text(left, 22,
         collective.str() +
             ": collc time / MPI time (median; whiskers: 95% interval)",
         "font-size=\"15\"");
  // Axes, grid and labels.
  w.line(left, y(bottomRatio), width - right, y(bottomRatio),
         "stroke=\"black\"");
  w.line(left, y(bottomRatio), left, y(topRatio), "stroke=\"black\"");
  for (double e = ly0; e <= ly1; ++e)
    w.text(left - 6, y(std::exp2(e)) + 4, strf("%g", std::exp2(e)),
           "text-anchor=\"end\"");
  for (long long b = 1; b <= maxBytes; b *= 4)
    if (b >= minBytes) {
      w.line(x(b), y(bottomRatio), x(b), y(topRatio), "stroke=\"#ddd\"");
      w.text(x(b), y(bottomRatio) + 16, formatBytes(b),
             "text-anchor=\"middle\" font-size=\"10\"");
    }
  w.text((left + width - right) / 2, height - 8, "message size m (log scale)",
         "text-anchor=\"middle\"");
  w.line(left, y(1.0), width - right, y(1.0), "stroke=\"#090\"");
  w.line(left, y(Row::smallTarget), width - right, y(Row::smallTarget),
         "stroke=\"#090\" stroke-dasharray=\"4 3\"");
  const char *colors[] = {"#1f77b4", "#d62728", "#ff7f0e", "#9467bd",
                          "#8c564b"};
  size_t i = 0;
  for (const auto &[ranks, points] : series) {
    const std::string color = colors[i % 5];
    std::vector<std::pair<double, double>> line;
    for (const Row *r : points)
      line.emplace_back(x(r->bytes), y(r->ratio()));
    w.polyline(line,
               "fill=\"none\" stroke-width=\"2\" stroke=\"" + color + "\"");
    // The per-call ratios' 95% interval, a whisker per point.
    for (const Row *r : points)
      if (r->paired.n > 0 && r->paired.low > 0)
        w.line(x(r->bytes), y(r->paired.low), x(r->bytes), y(r->paired.high),
               "stroke=\"" + color + "\" stroke-opacity=\"0.5\"");
    for (const Row *r : points)
      w.circle(x(r->bytes), y(r->ratio()), 3, "fill=\"" + color + "\"",
               strf("%s, %d ranks: %.2f", formatBytes(r->bytes).c_str(), ranks,
                    r->ratio()));
    w.text(width - right + 8, top + 16 + 18.0 * i,
           strf("%d ranks%s", ranks,
                points.front()->oversubscribed ? " (oversub.)" : ""),
           "fill=\"" + color + "\"");
    ++i;
  }
  w.text(width - right + 8, top + 16 + 18.0 * i,
         strf("1.0, %.2f: targets", Row::smallTarget),
         "fill=\"#090\" font-size=\"10\"");
  return w.finish();
}

std::string csvOf(llvm::ArrayRef<Row> rows) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "collective,ranks,bytes,schedule,iterations,"
        "ours_median_us,ours_min_us,ours_q1_us,ours_q3_us,ours_max_us,"
        "mpi_median_us,mpi_min_us,mpi_q1_us,mpi_q3_us,mpi_max_us,"
        "ratio,predicted_us,bound_tw_m,ours_GBps,mpi_GBps,oversubscribed,"
        "mpi_algorithm,paired_ratio,ratio_ci_low,ratio_ci_high\n";
  for (const Row &r : rows)
    os << strf(
        "%s,%d,%lld,%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
        "%.4f,%.3f,%.4g,%.4f,%.4f,%s,%s,%.4f,%.4f,%.4f\n",
        r.collective.c_str(), r.ranks, r.bytes, r.schedule.c_str(),
        r.iterations, r.ours.median, r.ours.min, r.ours.q1, r.ours.q3,
        r.ours.max, r.mpi.median, r.mpi.min, r.mpi.q1, r.mpi.q3, r.mpi.max,
        r.ratio(), r.predictedUs, r.boundWords, r.gbps(r.ours.median),
        r.gbps(r.mpi.median), r.oversubscribed ? "yes" : "no",
        r.mpiAlgorithm.c_str(), r.paired.median, r.paired.low, r.paired.high);
  return os.str();
}

/// What the command line asks for, checked.
struct BenchOptions {
  std::vector<std::string> collectives;
  std::vector<long long> ranks, sizes;
  // The model for every rank count, and any for one rank count (N=...):
  // what a step costs depends on how many ranks share the machine
  // (`collc calibrate --pattern ring --ranks N`).
  CostModel baseModel = defaultModel();
  bool modelMeasured = false;
  std::map<int, CostModel> rankModels;

  const CostModel &modelFor(int p) const {
    return rankModels.count(p) ? rankModels.at(p) : baseModel;
  }
};

/// The options, or nothing after printing what is wrong with them.
std::optional<BenchOptions> parseOptions(llvm::raw_ostream &errs) {
  BenchOptions o;
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
        return std::nullopt;
      }
      o.collectives.push_back(part.trim().str());
    }
  }
  std::optional<std::vector<long long>> ranksList = parseList(benchRanks);
  if (!ranksList) {
    errs << "collc: error: --ranks needs positive integers, got '" << benchRanks
         << "'\n";
    return std::nullopt;
  }
  if (llvm::any_of(*ranksList,
                   [](long long ranks) { return ranks < 2 || ranks > 1024; })) {
    errs << "collc: error: --ranks must be in 2..1024\n";
    return std::nullopt;
  }
  o.ranks = *ranksList;
  o.sizes = powersOfFour(16 << 20);
  if (!benchBytes.empty()) {
    std::optional<std::vector<long long>> parsed = parseList(benchBytes);
    if (!parsed || llvm::any_of(*parsed, [](long long b) { return b % 8; })) {
      errs << "collc: error: --bytes needs positive multiples of 8, "
              "comma-separated, got '"
           << benchBytes << "'\n";
      return std::nullopt;
    }
    o.sizes = *parsed;
  }
  if (benchIterations < 0) {
    errs << "collc: error: --iterations must be positive\n";
    return std::nullopt;
  }
  if (!benchSvg.empty() && o.collectives.size() != 1) {
    errs << "collc: error: --svg plots one collective; use --svg-dir\n";
    return std::nullopt;
  }
  llvm::SmallVector<llvm::StringRef, 4> parts;
  llvm::StringRef(benchModel).split(parts, ',', -1, false);
  for (llvm::StringRef part : parts) {
    auto [head, rest] = part.split('=');
    int ranks = 0;
    const bool perRanks = !rest.empty() && !head.getAsInteger(10, ranks);
    if (perRanks && (ranks < 2 || ranks > 1024 || o.rankModels.count(ranks))) {
      errs << "collc: error: --model " << part
           << ": the rank count must be in 2..1024, once\n";
      return std::nullopt;
    }
    llvm::Expected<CostModel> m = loadModel(perRanks ? rest : part);
    if (!m) {
      errs << "collc: error: " << llvm::toString(m.takeError()) << "\n";
      return std::nullopt;
    }
    if (perRanks) {
      o.rankModels[ranks] = *m;
    } else {
      o.baseModel = *m;
      o.modelMeasured = true;
    }
  }
  for (const auto &entry : o.rankModels)
    if (!llvm::is_contained(o.ranks, entry.first))
      errs << "collc: warning: --model gives a model for " << entry.first
           << " ranks, and --ranks does not run " << entry.first << "\n";
  return o;
}

/// A schedule coll_bench links, with Open MPI's like algorithm.
struct Available {
  std::string schedule, spec, mpiAlgorithm;
};
/// Collective -> its schedules, in coll_bench's order.
using AvailableMap = std::map<std::string, std::vector<Available>>;

/// What coll_bench runs (`coll_bench --list`); false after printing why
/// it cannot say.
bool listAvailable(AvailableMap &available, llvm::raw_ostream &errs) {
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
      available[f[1].str()].push_back(
          {f[2].str(), f[3].str(), f[4] == "-" ? "" : f[4].str()});
  }
  return true;
}

/// A candidate and the sizes at which the model chose it.
using Group = std::pair<const Candidate *, std::vector<long long>>;

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

/// One `collc bench`: each collective on each rank count priced, chosen,
/// timed and printed, then the summaries and the files.
class BenchRun {
public:
  BenchRun(const BenchOptions &options, const AvailableMap &available)
      : o(options), available(available) {}

  void printHeader() const;
  /// One collective on p ranks; false after an error that ends the bench.
  bool benchOne(const std::string &collective, int p);
  /// The totals of --check-choice, the ratios per size, the JSON rows.
  void printSummaries() const;
  /// --csv, --svg, --svg-dir; false after an error.
  bool writeFiles() const;
  bool checksumFailed() const { return failedChecksum; }

private:
  /// What launching coll_bench for one collective and rank count showed.
  struct Launched {
    std::string commandLines;
    bool oversubscribed = false;
  };
  /// Every schedule of `collective` with a member of p ranks, priced.
  std::vector<Candidate> priceCandidates(const std::string &collective, int p,
                                         const CostModel &model);
  /// Times `candidate` at `sizes`, a row per size into `into`; false after
  /// an error that ends the bench.
  bool timeCandidate(const std::string &collective, int p,
                     const CostModel &model, const Candidate &candidate,
                     const std::vector<long long> &sizes,
                     std::vector<Row> &into, Launched &launched);
  void printTable(const std::string &collective, int p, const CostModel &model,
                  const std::vector<Candidate> &candidates,
                  const std::vector<Group> &groups, size_t firstRow,
                  const Launched &launched) const;
  /// --check-choice: the chosen schedule against the fastest measured.
  void printChoiceCheck(size_t firstRow, const std::vector<Row> &others);
  void printRatios() const;
  void printJson() const;

  const BenchOptions &o;
  const AvailableMap &available;
  llvm::raw_ostream &os = llvm::outs();
  llvm::raw_ostream &errs = llvm::errs();
  const bool text = benchFormat == Format::Text;
  SpecCache specs;
  std::vector<Row> rows;
  std::vector<std::string> notes;
  int choiceCells = 0, choiceMissed = 0; // --check-choice
  bool failedChecksum = false;
};

void BenchRun::printHeader() const {
  if (!text)
    return;
  os << "collc bench: collc's emitted collective vs the MPI library's, "
        "same run, interleaved, same buffers, after warm-up;\n"
        "  each sample is the slowest rank's time; every timed call's "
        "result is checksummed against MPI's.\n";
  // "NAME = { ... };", the block without its keyword.
  auto described = [](const CostModel &m) {
    return llvm::StringRef(formatModelBlock(m)).drop_front(6).str();
  };
  for (const auto &[ranks, m] : o.rankModels)
    os << strf("  model for %d ranks: %s\n", ranks, described(m).c_str());
  os << strf("  model%s: %s%s\n", o.rankModels.empty() ? "" : " for the others",
             described(o.baseModel).c_str(),
             o.modelMeasured ? ""
                             : ", not measured: give --model FILE "
                               "from collc calibrate");
  os << "  machine: " << cores() << " cores\n";
  if (benchSameAlgorithm)
    os << "  MPI: forced to its algorithm with the same steps and messages "
          "as the schedule run, where it has one (--same-algorithm)\n";
}

std::vector<Candidate> BenchRun::priceCandidates(const std::string &collective,
                                                 int p,
                                                 const CostModel &model) {
  std::vector<Candidate> candidates;
  auto listed = available.find(collective);
  if (listed == available.end())
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
    llvm::Expected<std::vector<int64_t>> params = cost::paramsForRanks(*s, p);
    if (!params) {
      llvm::consumeError(params.takeError());
      continue;
    }
    bool inRange = true;
    for (size_t i = 0; i < s->params.size(); ++i)
      if (s->params[i].range && ((*params)[i] < s->params[i].range->first ||
                                 (*params)[i] > s->params[i].range->second))
        inRange = false;
    if (!inRange || s->collective.root >= p)
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

bool BenchRun::timeCandidate(const std::string &collective, int p,
                             const CostModel &model, const Candidate &candidate,
                             const std::vector<long long> &sizes,
                             std::vector<Row> &into, Launched &launched) {
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
  if (benchIterations > 0) {
    args.push_back("--iterations");
    args.push_back(std::to_string(benchIterations));
  }
  std::vector<std::string> env;
  const bool forced = benchSameAlgorithm && !candidate.mpiAlgorithm.empty();
  if (forced)
    env = {"OMPI_MCA_coll_tuned_use_dynamic_rules=1",
           "OMPI_MCA_" + candidate.mpiAlgorithm};
  // The user's own coll_tuned settings (a rules file, say) would take
  // precedence over the forced one: none go with it.
  llvm::Expected<Launch> run =
      launch(p, args, env, forced ? "OMPI_MCA_coll_tuned_" : "");
  if (!run) {
    errs << "collc: error: " << llvm::toString(run.takeError()) << "\n";
    return false;
  }
  // Open MPI warns of a value it does not know and runs its default: the
  // run would not time what it says.
  if (forced && llvm::StringRef(run->err).contains(
                    "An invalid value was supplied for an enum variable")) {
    errs << run->err << "collc: error: the MPI library did not take "
         << candidate.mpiAlgorithm << " (" << collective << ", "
         << candidate.name << ")\n";
    return false;
  }
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
  llvm::SmallVector<llvm::StringRef, 32> lines;
  llvm::StringRef(run->out).split(lines, '\n', -1, false);
  bool checked = false;
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 6> f;
    line.split(f, '\t');
    if (f.size() == 2 && f[0] == "checked")
      checked = true;
    if (f.size() != 5 || f[0] != "size")
      continue;
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
    row.predictedUs = candidate.cost.line(model.machine)
                          .seconds(model.segments(),
                                   static_cast<double>(row.bytes), model.to) *
                      1e6;
    boundOf(candidate, row);
    row.oversubscribed = run->oversubscribed;
    if (forced)
      row.mpiAlgorithm =
          llvm::StringRef(candidate.mpiAlgorithm).split('=').second.str();
    into.push_back(row);
  }
  if (!checked) {
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
    auto listed = available.find(collective);
    std::string why =
        listed == available.end() || listed->second.empty()
            ? "not yet: no emitted " + collective + " in the library to time"
        : collective == "alltoallv"
            ? "no emitted alltoallv for " + std::to_string(p) + " ranks in " +
                  listed->second.front().spec
            : "no library schedule for " + std::to_string(p) + " ranks";
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
  if (benchCheckChoice)
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
  if (benchCheckChoice)
    printChoiceCheck(firstRow, others);
  return true;
}

void BenchRun::printTable(const std::string &collective, int p,
                          const CostModel &model,
                          const std::vector<Candidate> &candidates,
                          const std::vector<Group> &groups, size_t firstRow,
                          const Launched &launched) const {
  os << "\n" << collective << " on " << p << " ranks";
  if (o.rankModels.count(p))
    os << ", model " << model.name;
  if (launched.oversubscribed)
    os << " (oversubscribed: " << p << " ranks on " << cores()
       << " cores; the ranks time-share, so the times include "
          "descheduling)";
  os << "\n";
  for (const Candidate &c : candidates) {
    bool used =
        llvm::any_of(groups, [&](const Group &g) { return g.first == &c; });
    os << "  " << (used ? "runs " : "  (priced, not chosen) ") << c.name << " ("
       << c.spec << "): " << c.cost.startups << "·t_s + " << c.cost.words.str()
       << "·m·t_w";
    if (model.machine.cores > 0 && p > model.machine.cores) {
      cost::ScheduleCost::Line l = c.cost.line(model.machine);
      os << "; on " << model.machine.cores << " cores " << l.startups.str()
         << "·t_s + " << l.words.str() << "·m·t_w";
    } else if (model.machine.copies == CopyModel::Receiver) {
      cost::ScheduleCost::Line l = c.cost.line(model.machine);
      os << "; receivers copying " << l.str();
    }
    if (!c.costSource.empty())
      os << " (" << c.costSource << ")";
    if (c.bound)
      os << "; bound " << c.bound->words.str() << "·m·t_w (" << c.bound->source
         << ")";
    if (used && benchSameAlgorithm)
      os << (c.mpiAlgorithm.empty()
                 ? "; MPI runs its default (no like algorithm)"
                 : "; MPI forced to " + c.mpiAlgorithm);
    os << "\n";
  }
  os << launched.commandLines;
  os << strf("  %9s %-19s %5s  %-26s %-26s %8s %-13s %10s %8s %8s %8s\n", "m",
             "schedule", "calls", "collc us: median [min..max]",
             "MPI us: median [min..max]", "ours/MPI", "95% interval",
             "model us", "GB/s ours", "GB/s MPI", "1/t_w");
  for (size_t i = firstRow; i < rows.size(); ++i) {
    const Row &r = rows[i];
    std::string ours = llvm::formatv("{0:f1} [{1:f1}..{2:f1}]", r.ours.median,
                                     r.ours.min, r.ours.max);
    std::string mpi = llvm::formatv("{0:f1} [{1:f1}..{2:f1}]", r.mpi.median,
                                    r.mpi.min, r.mpi.max);
    std::string interval =
        r.paired.n ? std::string(llvm::formatv("[{0:f2}..{1:f2}]", r.paired.low,
                                               r.paired.high))
                   : "-";
    os << strf("  %9s %-19s %5d  %-26s %-26s %7.2f%s %-13s %10.1f %8.3f "
               "%8.3f %8.3f\n",
               formatBytes(r.bytes).c_str(), r.schedule.c_str(), r.iterations,
               ours.c_str(), mpi.c_str(), r.ratio(), r.mark(), interval.c_str(),
               r.predictedUs, r.gbps(r.ours.median), r.gbps(r.mpi.median),
               1e-9 / model.twPerByte);
  }
  os << "  (* misses the target: ours/MPI <= 1.0 from 64 KiB, <= "
     << strf("%.2f", Row::smallTarget)
     << " below, by the ratio of the medians; ~ misses it, but the 95% "
        "interval of the per-call ratios (each call's pair timed in one "
        "iteration) reaches it, so this run cannot tell them apart. "
        "GB/s: the seed's bound, "
     << (rows.size() > firstRow ? rows[firstRow].boundSource : "")
     << ", in bytes per second of the median time; 1/t_w is the "
        "model's link bandwidth)\n";
}

void BenchRun::printChoiceCheck(size_t firstRow,
                                const std::vector<Row> &others) {
  // Each candidate runs in a launch of its own, and one launch's state
  // (placement, memory) moved a schedule's own median by up to 1.4x against
  // another's on 16 cores; MPI's call, timed in the same launch, is the
  // yardstick that cancels it. The two launches of one schedule (where it
  // was chosen, and over every size) still differed by up to 1.24 on 16
  // cores, so every candidate is judged from the launch over every size.
  os << "  choice check: each candidate's median over MPI's, in a launch "
        "of its own over every size: the chosen schedule's against the "
        "fastest candidate's (* over 5% slower)\n";
  os << strf("  %9s %-26s %10s %-26s %10s %8s\n", "m", "chosen", "ours/MPI",
             "fastest", "ours/MPI", "ratio");
  auto relative = [](const Row &row) {
    return row.mpi.median > 0 ? row.ours.median / row.mpi.median
                              : std::numeric_limits<double>::infinity();
  };
  for (size_t i = firstRow; i < rows.size(); ++i) {
    const Row *chosen = &rows[i];
    for (const Row &other : others)
      if (other.bytes == chosen->bytes && other.schedule == chosen->schedule)
        chosen = &other;
    const Row &r = *chosen;
    const Row *fastest = &r;
    for (const Row &other : others)
      if (other.bytes == r.bytes && relative(other) < relative(*fastest))
        fastest = &other;
    // No MPI time to compare by: a miss, not a silent pass.
    double ratio = relative(r) / relative(*fastest);
    if (!std::isfinite(ratio))
      ratio = std::numeric_limits<double>::infinity();
    ++choiceCells;
    choiceMissed += ratio > 1.05;
    os << strf("  %9s %-26s %10.2f %-26s %10.2f %7.2f%s\n",
               formatBytes(r.bytes).c_str(), r.schedule.c_str(), relative(r),
               fastest->schedule.c_str(), relative(*fastest), ratio,
               ratio > 1.05 ? "*" : " ");
  }
}

void BenchRun::printSummaries() const {
  if (text && benchCheckChoice)
    os << strf("\nchoice check: the chosen schedule is within 5%% of the "
               "fastest candidate measured in %d of %d cells\n",
               choiceCells - choiceMissed, choiceCells);
  if (text && !rows.empty())
    printRatios();
  if (benchFormat == Format::Json)
    printJson();
}

void BenchRun::printRatios() const {
  std::vector<std::pair<std::string, int>> columns;
  for (const Row &r : rows)
    if (llvm::find(columns, std::make_pair(r.collective, r.ranks)) ==
        columns.end())
      columns.push_back({r.collective, r.ranks});
  if (columns.size() <= 1)
    return;
  // A line per collective and rank count, a column per size.
  os << "\nours/MPI (median"
     << (benchSameAlgorithm ? ", MPI forced to the like algorithm" : "")
     << "); * misses the target (<= 1.0 from 64 KiB, <= "
     << strf("%.2f", Row::smallTarget)
     << " below), "
        "~ misses it within this run's noise (the per-call ratios' 95% "
        "interval reaches it)\n";
  os << strf("  %-20s", "collective@ranks");
  for (long long bytes : o.sizes)
    os << strf(" %7s", formatBytes(bytes).c_str());
  os << "\n";
  for (const auto &col : columns) {
    os << strf("  %-20s",
               (col.first + "@" + std::to_string(col.second)).c_str());
    for (long long bytes : o.sizes) {
      auto r = llvm::find_if(rows, [&](const Row &x) {
        return x.collective == col.first && x.ranks == col.second &&
               x.bytes == bytes;
      });
      if (r == rows.end())
        os << strf(" %7s", "-");
      else
        os << strf(" %6.2f%s", r->ratio(), r->mark());
    }
    os << "\n";
  }
  // Per rank count: the geometric mean of every cell's ratio (target
  // <= 0.9) and how many cells miss their target.
  std::map<int, std::pair<double, int>> logSum; // ranks -> (sum, cells)
  std::map<int, int> missed;
  for (const Row &r : rows)
    if (r.ratio() > 0) {
      logSum[r.ranks].first += std::log(r.ratio());
      ++logSum[r.ranks].second;
      missed[r.ranks] += r.ratio() > r.target();
    }
  for (const auto &[ranks, sum] : logSum)
    os << strf("  %d ranks: geometric mean %.3f (target <= 0.9), %d of "
               "%d cells miss their target\n",
               ranks, std::exp(sum.first / sum.second), missed.at(ranks),
               sum.second);
  if (benchSameAlgorithm) {
    std::string unforced;
    for (const auto &col : columns)
      if (llvm::any_of(rows, [&](const Row &x) {
            return x.collective == col.first && x.ranks == col.second &&
                   x.mpiAlgorithm == "default";
          }))
        unforced += " " + col.first + "@" + std::to_string(col.second);
    if (!unforced.empty())
      os << "  MPI ran its default at some sizes (no like algorithm):"
         << unforced << "\n";
  }
}

void BenchRun::printJson() const {
  llvm::json::Array out;
  for (const Row &r : rows)
    out.push_back(llvm::json::Object{{"collective", r.collective},
                                     {"ranks", r.ranks},
                                     {"bytes", r.bytes},
                                     {"ours_us", r.ours.median},
                                     {"mpi_us", r.mpi.median},
                                     {"ratio", r.ratio()},
                                     {"predicted_us", r.predictedUs},
                                     {"schedule", r.schedule},
                                     {"iterations", r.iterations},
                                     {"ours_min_us", r.ours.min},
                                     {"ours_max_us", r.ours.max},
                                     {"mpi_min_us", r.mpi.min},
                                     {"mpi_max_us", r.mpi.max},
                                     {"checksum", "ok"},
                                     {"oversubscribed", r.oversubscribed},
                                     {"mpi_algorithm", r.mpiAlgorithm},
                                     {"paired_ratio", r.paired.median},
                                     {"ratio_ci_low", r.paired.low},
                                     {"ratio_ci_high", r.paired.high}});
  os << llvm::formatv("{0:2}\n", llvm::json::Value(std::move(out)));
  for (const std::string &note : notes)
    errs << "collc: note: " << note << "\n";
}

bool BenchRun::writeFiles() const {
  llvm::SourceMgr outputSources;
  DiagnosticEngine diags(outputSources, errs, errs.has_colors());
  if (!benchCsv.empty() && !writeFile(benchCsv, csvOf(rows), diags))
    return false;
  if (!benchSvg.empty() &&
      !writeFile(benchSvg, svgPlot(o.collectives[0], rows), diags))
    return false;
  if (!benchSvgDir.empty()) {
    llvm::sys::fs::create_directories(benchSvgDir);
    for (const std::string &c : o.collectives) {
      if (llvm::none_of(rows, [&](const Row &r) { return r.collective == c; }))
        continue;
      llvm::SmallString<128> path(benchSvgDir.getValue());
      llvm::sys::path::append(path, c + ".svg");
      if (!writeFile(path, svgPlot(c, rows), diags))
        return false;
    }
  }
  return true;
}

int runBench() {
  std::optional<BenchOptions> options = parseOptions(llvm::errs());
  if (!options)
    return ExitInputError;
  AvailableMap available;
  if (!listAvailable(available, llvm::errs()))
    return ExitInputError;
  BenchRun run(*options, available);
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
