#pragma once
// A schedule member as `collc show` prints it and `collc draw` draws it:
// instantiated, its topology built and simulated once, each step's messages
// with the chunks they carry (as Semantics names them) and their routes.
// Both commands read this one table, so a figure and the text agree.

#include "ir/Instantiate.h"
#include "simulate/Simulator.h"
#include "topology/Topology.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace collc::tools {

struct StepMessage {
  int64_t src = 0, dst = 0;
  bool reduce = false;
  /// "all", "(origin 0..3)", "(dest 4..7)": show's chunk column.
  std::string chunks;
  /// "1 m", "1/2 m": the message's size in units of m.
  std::string size;
  /// The nodes the message passes, src and dst included (a tree's switches
  /// too): the topology's route, as the simulator and cost take it.
  llvm::SmallVector<int64_t, 8> via;
};

struct StepTable {
  ir::Instance instance;
  Topology topology;
  /// Per step (indexed like instance.steps), its messages in transfer order.
  std::vector<std::vector<StepMessage>> messages;
  simulate::SimulationResult result;
};

/// Instantiates `schedule` with `params`, builds its topology and simulates
/// it under `ports`. Errors are those of the three (for reportFailure).
llvm::Expected<StepTable> tabulate(const ir::Schedule &schedule,
                                   llvm::ArrayRef<int64_t> params,
                                   PortModel ports);

/// "step 3 forward (i = 2)": a step's heading as show prints it.
std::string stepHeading(const ir::InstanceStep &step);

} // namespace collc::tools
