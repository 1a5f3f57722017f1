#pragma once
// One `collc bench` run's pieces, shared by BenchCommand.cpp (options,
// pricing, choosing and timing) and BenchReport.cpp (the tables, the
// summaries and the files written).

#include "harness/BenchSupport.h"

#include "cost/Cost.h"
#include "library/Library.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "tools/Commands.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace collc::tools::bench {

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

  // What is timed, printed and written.
  bool sameAlgorithm = false; // --same-algorithm
  bool checkChoice = false;   // --check-choice
  int iterations = 0;         // --iterations; 0: by size
  bool text = true;           // --format text, else json
  std::string csv, svg, svgDir;

  const CostModel &modelFor(int p) const {
    return rankModels.count(p) ? rankModels.at(p) : baseModel;
  }
};

/// A schedule coll_bench links, with Open MPI's like algorithm.
struct Available {
  std::string schedule, spec, mpiAlgorithm;
};
/// What coll_bench runs (`coll_bench --list`): its schedules, and the
/// ranges they were compiled for (its --param), within which a family's
/// member of p ranks is found as the emitted code finds it.
struct BenchProgram {
  /// Collective -> its schedules, in coll_bench's order.
  std::map<std::string, std::vector<Available>> available;
  std::vector<ir::ParamRange> ranges;
};

/// A candidate and the sizes at which the model chose it.
using Group = std::pair<const Candidate *, std::vector<long long>>;

/// One `collc bench`: each collective on each rank count priced, chosen,
/// timed and printed, then the summaries and the files.
class BenchRun {
public:
  BenchRun(const BenchOptions &options, const BenchProgram &program)
      : o(options), program(program) {}

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
  /// coll_bench timing `candidate` at `sizes`, Open MPI forced to its like
  /// algorithm when `forced`; nothing after printing why it did not run.
  std::optional<Launch> launchCandidate(const std::string &collective, int p,
                                        const Candidate &candidate,
                                        const std::vector<long long> &sizes,
                                        bool forced) const;
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
  const BenchProgram &program;
  llvm::raw_ostream &os = llvm::outs();
  llvm::raw_ostream &errs = llvm::errs();
  const bool text = o.text;
  SpecCache specs;
  std::vector<Row> rows;
  std::vector<std::string> notes;
  int choiceCells = 0, choiceMissed = 0; // --check-choice
  bool failedChecksum = false;
};

/// One SVG per collective and its rows as CSV.
std::string svgPlot(llvm::StringRef collective, llvm::ArrayRef<Row> rows);
std::string csvOf(llvm::ArrayRef<Row> rows);

} // namespace collc::tools::bench
