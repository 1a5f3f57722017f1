#pragma once
// The checked program: what sema makes of an AST. Every declaration here has
// passed the semantic checks; schedules are in Schedule IR.

#include "ir/Schedule.h"
#include "topology/Topology.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collc {

/// `model lan = { ts: 10us, tw: 2ns/byte, ports: single };`
/// A machine whose messages cost otherwise above some sizes (the eager
/// limit, the caches) gives the segments in order, each opened by `segment:`,
/// the size it starts at:
/// `{ ts: 0.2us, tw: 0.1ns/byte, segment: 8KiB, ts: 2us, tw: 0.08ns/byte }`.
struct CostModel {
  std::string name;
  double ts = 0;        // seconds per message (start-up), below `larger`
  double twPerByte = 0; // seconds per byte, below `larger`
  /// Further segments, fromBytes ascending and above 0.
  std::vector<MessageCost> larger;
  /// All the segments, the first from 0 bytes.
  std::vector<MessageCost> segments() const {
    std::vector<MessageCost> all{{0, ts, twPerByte}};
    all.insert(all.end(), larger.begin(), larger.end());
    return all;
  }
  /// The segment a message of `bytes` is priced in.
  MessageCost at(double bytes) const { return segmentOf(segments(), bytes); }
  PortModel ports = PortModel::Single;
  // `cores`, `copies` and `serve`: what the ranks share, which prices a
  // schedule otherwise than the port model (cost::ScheduleCost::line).
  Machine machine;
  // t_o: what each further message costs a rank that starts (or receives)
  // several at once where receivers copy (cost::ScheduleCost::line);
  // unset, a start-up.
  std::optional<double> to;
  llvm::SMLoc loc;
};

struct TopologyDef {
  std::string name;
  Topology topology;
  llvm::SMLoc loc;
};

/// How an array of n elements is dealt over the ranks (004 §3, HPF's
/// names): what each means, element by element, is the runtime's
/// collc::rt::Distribution; the compiler only names it.
struct Allocation {
  enum class Kind { Block, Cyclic, BlockCyclic };
  Kind kind = Kind::Block;
  int64_t block = 1; // BlockCyclic only
  /// As written: block, cyclic, block_cyclic(3).
  std::string spelling() const;
};

/// `redistribute(from: block, to: cyclic)`: an all-to-all personalized
/// exchange whose pairs' shares follow from the two allocations (004 §3).
/// The collective is resolved and proved as the all-to-all it runs.
struct Redistribution {
  Allocation from, to;
};

/// `collective bc = broadcast(root: 0) on cube using recursive_doubling;`
struct CollectiveDef {
  std::string name;
  ir::Collective collective;
  /// A redistribution runs `collective` (an alltoall) under the name
  /// collectiveFunction() and takes `name` itself for the array's move.
  std::optional<Redistribution> redistribution;
  /// The function that runs `collective`: the name, or for a redistribution
  /// NAME_exchange.
  std::string collectiveFunction() const {
    return redistribution ? name + "_exchange" : name;
  }
  Topology topology;
  std::string algorithm; // empty or "auto": chosen by cost
  llvm::SMLoc loc;
  llvm::SMLoc algorithmLoc;
  /// The schedules it resolved to (library/Library.h), in Program::schedules:
  /// each applies to messages from `fromBytes` up to the next one's.
  struct Resolved {
    std::string schedule;
    int64_t fromBytes = 0;
  };
  std::vector<Resolved> resolved;
};

struct Program {
  std::vector<TopologyDef> topologies;
  std::vector<CostModel> models;
  std::vector<CollectiveDef> collectives;
  std::vector<ir::Schedule> schedules;

  const ir::Schedule *findSchedule(llvm::StringRef name) const;
  /// An alltoallv collective whose `using` names no schedule of the file:
  /// it runs a pattern built for its P (001 §3, alltoallv/Patterns.h).
  bool runsPattern(const CollectiveDef &c) const;
  /// Whether `name` names `schedule`: its own name, or that of a collective
  /// it was resolved for (`x` names x_from_0_bytes and x_from_N_bytes).
  bool names(llvm::StringRef name, const ir::Schedule &schedule) const;
  /// The port model the file's schedules are meant for: its first model's,
  /// the one its collectives were resolved and priced under; single-port
  /// when it declares none.
  PortModel ports() const {
    return models.empty() ? PortModel::Single : models.front().ports;
  }
};

/// Reduction operators and element types the language knows.
bool isKnownOperator(llvm::StringRef op);
bool isKnownType(llvm::StringRef type);

} // namespace collc
