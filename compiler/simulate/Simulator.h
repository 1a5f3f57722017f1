#pragma once
// The exact simulator: runs an instantiated schedule chunk by chunk on a
// topology and checks the five properties of docs/proofs.md ("What is
// proved"), independently of the prover.
//
// Step semantics (ir/Schedule.h): every transfer of a step reads the state
// at the start of the step; deliveries land at its end, in transfer order.
// Copy delivery replaces the receiver's value of the chunk; reduce delivery
// folds the incoming contributions into it (or stores them if it had none).
// A delivery whose `when` evaluates to 0 is skipped. Two deliveries of one
// step on the same chunk of a rank's buffer where one is a copy (and the
// other a fold, or a copy of another value) are a correctness violation: the
// emitted code handles messages as they arrive.
//
// Holdings are runs of chunk ids (ChunkRuns), and a selector is decided a
// box of chunk coordinates at a time by interval evaluation (RangeEval), so
// the cost follows the number of blocks moved, not of chunks.

#include "ir/Instantiate.h"
#include "simulate/Semantics.h"
#include "topology/Topology.h"
#include "ir/Verdict.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace collc::simulate {

/// The port model is collc::PortModel (topology/Topology.h).
struct SimulateOptions {
  PortModel ports = PortModel::Single;
  /// Stop after the step in which the first property fails, leaving the
  /// rest unchecked (resolution discards such a schedule whatever it costs).
  bool stopAtViolation = false;
  /// Units of work (a selector or delivery-condition evaluation of a box or
  /// a chunk, a run of chunks read from a sender or delivered) after which
  /// the run stops at the end of a step, unfinished (0: no limit). Work, not
  /// time, so where a run stops is the same on any machine under any load.
  uint64_t workLimit = 0;
  /// Called for every transfer of every step once its chunks are chosen
  /// (before any delivery of the step), with the chunk ids it carries;
  /// `semantics` describes them (Semantics::boxesOf). For `collc show`.
  std::function<void(const ir::InstanceStep &step, size_t transfer,
                     llvm::ArrayRef<IdRange> chunks,
                     const Semantics &semantics)>
      onTransfer;
};

/// What the cost model needs from one step.
struct StepStats {
  unsigned step = 0; // 1-based
  /// Chunks carried by each transfer, parallel to InstanceStep::transfers
  /// (0 for transfers that matching rejected).
  std::vector<int64_t> messageChunks;
  int64_t maxMessageChunks = 0;
  /// Messages on the most loaded directed channel.
  int64_t maxLoad = 0;
  /// That channel (the first in channel order among equals), as the
  /// congestion check names it; none when the step sends nothing. For
  /// `collc draw`, which marks it.
  std::optional<Channel> worstChannel;
  /// Chunks summed over the messages crossing a channel, the largest over
  /// the channels: the words on the most loaded channel, in chunks.
  int64_t maxChannelChunks = 0;
};

struct SimulationResult {
  /// One per verify::Property, in the enum's order; method "simulation".
  /// Empty when the run is unfinished.
  std::vector<verify::PropertyResult> properties;
  /// The run reached SimulateOptions::workLimit before its last step, and
  /// decides nothing.
  bool unfinished = false;
  /// Work spent (SimulateOptions::workLimit's unit).
  uint64_t work = 0;
  std::vector<StepStats> steps;
  /// The largest channel load over all steps.
  int64_t maxLoad = 0;
  /// What holds but looks wrong: a transfer whose selector names no chunk
  /// (an empty message), the first per rule. The message says which.
  std::vector<verify::Counterexample> warnings;

  const verify::PropertyResult &result(verify::Property property) const;
  /// Whether every property holds.
  bool allHold() const;
};

/// Simulates `instance` on `topology` (which must have instance.p ranks).
/// Property violations are results, not errors; errors are a selector or
/// delivery condition that cannot be evaluated (ir::EvalFailure), a buffer
/// index out of range, or a collective that does not fit (bad root).
llvm::Expected<SimulationResult> simulate(const ir::Instance &instance,
                                          const Topology &topology,
                                          const SimulateOptions &options = {});

/// Instantiates `schedule` with `params`, builds its topology and simulates.
llvm::Expected<SimulationResult> simulate(const ir::Schedule &schedule,
                                          llvm::ArrayRef<int64_t> params,
                                          const SimulateOptions &options = {});

} // namespace collc::simulate
