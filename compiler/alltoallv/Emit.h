#pragma once
// The irregular all-to-all of a `collective x = alltoallv on T using ALGO;`
// as C++: the pattern of ALGO for T's size is proved stage by stage on T,
// and its routes as one schedule (verify, as any schedule; pipeline/
// Pipeline.h checks it with the file's schedules), then printed as step tables
// with a function of MPI_Alltoallv's signature that runs them on collc_runtime
// (runtime/include/collc/Alltoallv.h).

#include "alltoallv/Patterns.h"
#include "verify/Verifier.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace collc::alltoallv {

/// One stage's checks on the declared topology. Contention-free and matched
/// are required: the runtime posts one send and one receive per rank and
/// step, and the receiver knows its sender from the table. Congestion is
/// measured, not required: the patterns are the paper's for a flat network
/// (001 §2.1, full(P)), and on a topology with fewer links they share some;
/// they still run, slower, and the cost counts the load.
struct StageVerdict {
  Stage stage;
  ir::Schedule schedule;         // what was checked
  verify::ScheduleReport report; // contention, matching, congestion
  /// Messages on the most loaded channel in any step (1: none shared).
  int64_t maxLoad = 1;
  /// Where the load peaks, when some channel carries two or more.
  std::optional<verify::Counterexample> congestion;

  /// Contention-free and matched, both proved.
  bool proved() const;
  /// "channel 1->2 carries 2 messages at step 3", or "" when uncongested.
  std::string congestionText() const;
};

/// The most chunks (P^2 blocks times the chunks of one) whose routes are
/// simulated: A4 up to P = 322, in about 3 GB. The routes of a larger
/// pattern are UNKNOWN, and no code is written for it (its stages' proofs
/// take hours by then).
inline constexpr int64_t maxRoutedChunks = int64_t(1) << 25;

/// The whole pattern's routes (patternSchedule): every node forwards only
/// what reached it (causality) and every block ends at its destination
/// (correctness), through the node each element is dealt to.
struct RoutesVerdict {
  ir::Schedule schedule;         // what was checked
  verify::ScheduleReport report; // causality, correctness

  /// Unknown when nothing was checked: routes are proved, never assumed.
  verify::Status verdict() const {
    return report.properties.empty() ? verify::Status::Unknown
                                     : report.verdict();
  }
  bool proved() const { return verdict() == verify::Status::Proved; }
};

struct PatternVerdict {
  Pattern pattern;
  std::string topology; // as declared, e.g. "ring(8)"
  std::vector<StageVerdict> stages;
  RoutesVerdict routes;

  bool proved() const;
  /// The worst of the stages' contention and matching verdicts (congestion
  /// is measured, not required) and the routes' verdict.
  verify::Status verdict() const;
  double seconds() const; // the stages' proofs and the routes', in all
  int64_t maxLoad() const;
  /// The flat model (Theorem 2, Table 3) with each stage's load.
  ModelCost cost() const;
};

/// Each stage's most loaded channel on `topology` (the pattern's P ranks),
/// by simulation alone: what the cost needs, without the proofs.
llvm::Expected<std::vector<int64_t>> stageLoads(const Pattern &pattern,
                                                const Topology &topology);

/// Builds `algorithm`'s pattern for `topology`'s ranks, checks every
/// stage on `topology` and the routes of the whole. Errors: an algorithm that
/// does not apply (two_stage_mesh off a perfect square), a stage verify cannot
/// check.
llvm::Expected<PatternVerdict> verifyPattern(llvm::StringRef name,
                                             Algorithm algorithm,
                                             const Topology &topology,
                                             double timeoutSeconds);

struct EmittedCollective {
  std::string declaration; // for the header
  std::string definition;  // for the source
  // The same function on the local backend (collc/Local.h), taking a
  // collc::rt::LocalComm & for the MPI_Comm: for namespace `local` in the
  // header and the source, as every emitted function has.
  std::string localDeclaration;
  std::string localDefinition;
  /// When the pattern congests on the declared topology: one line for the
  /// user that says where and that the code is written anyway.
  std::string note;
};

/// The function `name` that runs the pattern of `verdict`, declared at
/// `where`. Errors: a stage that is not proved contention-free and matched,
/// routes that are not proved (with the verifier's verdict).
llvm::Expected<EmittedCollective> emitCollective(llvm::StringRef name,
                                                 const PatternVerdict &verdict,
                                                 llvm::StringRef where);

} // namespace collc::alltoallv
