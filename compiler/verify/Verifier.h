#pragma once
// The verification stage: runs both checkers on a schedule over a size range
// and merges their verdicts.
//
//  - matching, contention, congestion: Z3 (prove/) is the prover of record;
//    one query covers the whole range. The simulator checks the same three
//    properties on every instance it runs; a disagreement is reported as an
//    error, never hidden.
//  - causality, correctness: exact simulation (simulate/) of every size in
//    the range, smallest first, up to maxSimulatedRanks ranks and a budget
//    of transfers. Sizes left unsimulated make the verdict Unknown, with the
//    sizes that were checked named.

#include "ir/Schedule.h"
#include "topology/Topology.h"
#include "ir/Verdict.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace collc::smt {
class ProvedQueries;
} // namespace collc::smt

namespace collc::verify {

using ir::ParamRange;

struct VerifyOptions {
  /// Number of ranks: exactly (p) or a range; converted to parameter ranges
  /// for a one-parameter family.
  std::optional<int64_t> p;
  std::optional<std::pair<int64_t, int64_t>> ranks;
  /// Explicit parameter ranges (`--param d=1..16`); override the spec's.
  std::vector<ParamRange> params;
  /// `params` asked of a whole file's schedules at once (a build): a range
  /// applies to the schedules that have its parameter, within the range
  /// each declares (the code is for what the spec declares, and a build
  /// may prove less of it). Otherwise a schedule without one is an error.
  bool paramsWithinDeclared = false;
  PortModel ports = PortModel::Single;
  double timeoutSeconds = 60; // per solver query; 0: no limit
  int64_t maxSimulatedRanks = 4096;
  /// Transfers simulated over the members before the next is left out:
  /// work, not time, so the verdict does not depend on the machine (about
  /// a minute on one core; ring_alltoall at p = 1024 is a million).
  int64_t simulationBudgetTransfers = int64_t(1) << 24;
  /// And units of work (SimulateOptions::workLimit) over all
  /// members, a bound within a member too: an all-to-all on a mesh costs
  /// per chunk, and one member of 4,096 ranks ran for many minutes.
  uint64_t simulationBudgetWork = uint64_t(1) << 28;
  /// Which properties to check (all five when empty).
  std::vector<Property> only;
  llvm::raw_ostream *verbose = nullptr;
  bool dumpSmt = false; // with verbose: each query in SMT-LIB
  /// Also find which rules' receivers can name their senders
  /// (ScheduleReport::namedSenders), for code generation.
  bool nameSenders = false;
  /// Queries proved before: verifying several schedules with one set
  /// proves what their parts share once (smt::ProvedQueries). Null: every
  /// query goes to Z3.
  smt::ProvedQueries *provedQueries = nullptr;
};

struct ScheduleReport {
  std::string name;
  std::string collective; // e.g. "broadcast(root: 0)"
  std::string topology;   // e.g. "hypercube(dim: d)"
  PortModel ports = PortModel::Single; // contention was judged under it
  std::vector<ParamRange> ranges; // what was asked
  std::string simulated;  // e.g. "d = 1..12 (p = 2..4096)"
  std::vector<PropertyResult> properties;
  /// What the simulator found suspicious but not wrong (a message with no
  /// chunk in it), from the smallest size that shows it.
  std::vector<Counterexample> warnings;
  /// With VerifyOptions::nameSenders: per rule, expressions over the
  /// receiving rank that name every rank sending to it under that rule
  /// (prove::Prover::namedSenders).
  std::map<const ir::TransferRule *, std::vector<ir::ExprRef>> namedSenders;
  double seconds = 0;

  /// Proved when every property is; Counterexample when any is; else
  /// Unknown (or Error).
  Status verdict() const;
};

/// Verifies one schedule. Errors are input errors (no range given for a
/// family, a range that fits no size, an expression that cannot be
/// evaluated); property failures are part of the report.
llvm::Expected<ScheduleReport> verifySchedule(const ir::Schedule &schedule,
                                              const VerifyOptions &options);

/// The report as text: a line per property, and for each counterexample the
/// `ERROR:` line, the `Example:` with concrete values, and the trace of the
/// steps that lead there.
void printText(const ir::Schedule &schedule, const ScheduleReport &report,
               llvm::raw_ostream &os);

/// Prints the collective as written: "broadcast(root: 0)".
std::string describeCollective(const ir::Collective &c);
/// Prints a topology template: "hypercube(dim: d)".
std::string describeTopology(const ir::TopologyTemplate &t);

} // namespace collc::verify
