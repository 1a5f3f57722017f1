#pragma once
// Instantiation: a Schedule (possibly a family over parameters) plus values
// for its parameters gives the explicit schedule - concrete topology
// dimensions, p, the chunk count, and the flat list of steps with every rule
// application (transfer) that fires in it.
//
// The explicit schedule keeps a pointer to the Schedule it came from (for the
// rules' selectors and deliveries), so the Schedule must outlive it.

#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace collc::ir {

/// An expression that cannot be evaluated (division by zero, a bad shift, a
/// value out of range) at a source location. The message names the
/// expression and the values it was evaluated at; the driver prints it at
/// `loc` (which may be null when the IR was built without source).
class EvalFailure : public llvm::ErrorInfo<EvalFailure> {
public:
  static char ID;
  EvalFailure(std::string message, llvm::SMLoc loc)
      : message(std::move(message)), loc(loc) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

  std::string message;
  llvm::SMLoc loc;
};

/// One rule application: `src` sends to `dst` under rule `rule` of the step.
struct Transfer {
  int64_t src = 0;
  int64_t dst = 0;
  unsigned rule = 0; // index into Step::rules
};

struct InstanceStep {
  unsigned number = 0;        // 1-based, in execution order
  const Step *step = nullptr; // the IR step this is an instance of
  /// The environment shared by every transfer of the step: p, parameters and
  /// loop variables filled; SlotRank and the chunk-coordinate slots are 0.
  /// Use Instance::envFor to get a transfer's environment.
  std::vector<int64_t> env;
  std::vector<std::pair<std::string, int64_t>> loopVars; // outermost first
  /// Ordered by rule, then by sender.
  std::vector<Transfer> transfers;
};

struct Instance {
  const Schedule *schedule = nullptr;
  /// The schedule's collective with a family's shift amount evaluated.
  Collective collective;
  std::vector<int64_t> params; // indexed like Schedule::params
  std::vector<int64_t> dims;   // evaluated TopologyTemplate::dims
  int64_t p = 0;               // number of ranks
  int64_t chunks = 1;          // chunk indices per block
  std::vector<InstanceStep> steps;

  size_t numTransfers() const;
  /// The environment a transfer's selector and delivery conditions are
  /// evaluated in: the step's environment with SlotRank = the sender.
  void envFor(const InstanceStep &step, const Transfer &t,
              std::vector<int64_t> &env) const;
  /// (name, value) of every parameter, for counterexamples.
  std::vector<std::pair<std::string, int64_t>> namedParams() const;
};

/// Number of ranks of a topology with the given evaluated dimensions, without
/// building it (ring/linear/full/graph: n; mesh/torus: the product;
/// hypercube: 2^dim; tree: leaves). Errors name the topology kind.
llvm::Expected<int64_t> countRanks(TopologyKind kind,
                                   llvm::ArrayRef<int64_t> dims);

/// The steps instantiate() lists, in order, each without its transfers
/// (InstanceStep::transfers stays empty; env and loopVars are filled): fn is
/// called once per step, and the Instance returned has no steps. Its cost
/// follows the number of steps, not of ranks, so it serves sizes whose
/// transfers would not fit in memory. `rankEvaluations`, when given, gets
/// how many senders instantiate() would try: per step and rule, one where
/// the guard fixes the sender (`r == e`), else p.
/// `begin`, when given, is called first, with the Instance's p, dims,
/// chunks and collective set.
llvm::Expected<Instance>
walkSteps(const Schedule &schedule, llvm::ArrayRef<int64_t> params,
          llvm::function_ref<llvm::Error(const InstanceStep &)> fn,
          uint64_t *rankEvaluations = nullptr,
          llvm::function_ref<llvm::Error(const Instance &)> begin = {});

/// Most rank evaluations instantiate() makes (walkSteps counts them): an
/// instance with more is refused before anything is built, so a large
/// topology gets an error naming the limit rather than exhausting memory.
constexpr uint64_t maxRankEvaluations = uint64_t(1) << 26;

/// Instantiates `schedule` with `params[i]` as the value of
/// `schedule.params[i]`. Loops run `lo .. hi` inclusive (empty when lo > hi),
/// downwards when `reverse`; a rule fires for every rank whose guard is
/// nonzero. Errors: wrong number of parameters, an expression that cannot be
/// evaluated (EvalFailure), p out of 1..maxRanks, a chunk count below 1,
/// more than maxRankEvaluations rank evaluations.
llvm::Expected<Instance> instantiate(const Schedule &schedule,
                                     llvm::ArrayRef<int64_t> params);

} // namespace collc::ir
