#pragma once
// The simulator's state, shared by Simulator.cpp (steps, routes and ports)
// and SimulatorValues.cpp (what the chunks hold: deliveries, folds and the
// post-condition). Private to compiler/simulate.

#include "simulate/ChunkRuns.h"
#include "simulate/RangeEval.h"
#include "simulate/Semantics.h"
#include "simulate/Simulator.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace collc::simulate::detail {

using ir::Expr;
using verify::Counterexample;
using verify::Property;

constexpr size_t numProperties = 5;

/// A value: the contributions a chunk carries. Values are immutable,
/// interned and shared: equal values have one handle, so runs of chunks with
/// equal values merge, a copy delivery copies the handle, and only a fold
/// makes a new value.
struct Value {
  Contributions contributions;
  /// First step at which a non-commutative fold combined two values that are
  /// not adjacent rank intervals; 0 when every fold was in rank order.
  unsigned misfoldStep = 0;
};

/// Chunks read from the sender at the start of a step, delivered at its end.
struct Pending {
  IdRange ids;
  uint32_t value;
};

/// A delivery of the current step, for finding two that land on the same
/// chunk of one rank's buffer.
struct Write {
  size_t slot; // rank * buffers + buffer
  IdRange ids;
  size_t transfer;
  uint32_t value;
  bool copy;
};

/// Per rule, what the simulator can precompute: coordinates its selector
/// pins (a conjunct `origin == e` with e free of chunk coordinates), so that
/// the universe is enumerated only where the selector can hold; and whether
/// each delivery condition reads chunk coordinates (else it is evaluated once
/// per transfer).
struct RulePlan {
  llvm::SmallVector<std::pair<unsigned, const Expr *>, 3> pins;
  llvm::SmallVector<bool, 1> whenPerChunk;
  /// The selector and the delivery conditions, for box evaluation.
  std::optional<RangePredicate> selector;
  std::vector<std::optional<RangePredicate>> when;
  /// The chunk coordinates the selector reads (bits: 1 origin, 2 dest, 4
  /// index); a box is split only along those.
  unsigned readsCoords = 0;
};

class Simulator {
public:
  Simulator(const ir::Instance &inst, const Topology &topo,
            const SimulateOptions &options, Semantics sem)
      : inst(inst), schedule(*inst.schedule), topo(topo), options(options),
        sem(std::move(sem)) {}

  llvm::Expected<SimulationResult> run();

private:
  llvm::Error prepare();
  llvm::Error runStep(const ir::InstanceStep &step, StepStats &stats);
  llvm::Error collect(const ir::InstanceStep &step, size_t ti,
                      std::vector<int64_t> &env, int64_t &count);
  /// collect() of a rule without a selector: all the sender holds.
  void collectWhole(const ir::InstanceStep &step, const ir::Transfer &t,
                    const ChunkRuns &from, int64_t &count);
  /// The box the selector is searched in: the universe, narrowed to the
  /// coordinates the rule's pins fix; none where the pins leave it empty.
  std::optional<Semantics::Box>
  searchBox(const RulePlan &plan, const std::vector<int64_t> &env) const;
  /// The selected chunks' ids in `box`, into `selected`, in id order.
  llvm::Error selectChunks(const ir::InstanceStep &step, const ir::Transfer &t,
                           RulePlan &plan, const Semantics::Box &box,
                           std::vector<int64_t> &env);
  /// Warns of transfer `t`'s rule selecting no chunk (once a rule).
  void warnEmpty(const ir::InstanceStep &step, const ir::Transfer &t);
  /// Queues the `selected` chunks the sender holds; reports those it lacks.
  void collectSelected(const ir::InstanceStep &step, const ir::Transfer &t,
                       const ChunkRuns &from, int64_t &count);
  llvm::Error route(const ir::InstanceStep &step,
                    const std::vector<char> &valid, StepStats &stats);
  /// The most loaded channel of a step; among equals the first in channel
  /// order.
  struct WorstChannel {
    std::optional<Channel> channel;
    int64_t load = 0;
    void add(const Channel &ch, int64_t messages) {
      if (messages > load || (messages == load && ch < *channel)) {
        load = messages;
        channel = ch;
      }
    }
  };
  /// route() on a ring or a linear array, whose routes are arcs.
  void loadArcs(const ir::InstanceStep &step, const std::vector<char> &valid,
                StepStats &stats, WorstChannel &worst);
  /// route() on any topology, hop by hop.
  llvm::Error loadHops(const ir::InstanceStep &step,
                       const std::vector<char> &valid, StepStats &stats,
                       WorstChannel &worst);
  /// The channels transfer `t` crosses, in `path`.
  const llvm::SmallVectorImpl<Channel> &routeOf(const ir::Transfer &t) {
    path.clear();
    topo.route(t.src, t.dst, path);
    return path;
  }
  /// Reports the step's most loaded channel where it carries two or more
  /// messages, with the transfers that cross it.
  void reportCongestion(const ir::InstanceStep &step,
                        const std::vector<char> &valid,
                        const WorstChannel &worst);
  void checkContention(const ir::InstanceStep &step,
                       const std::vector<char> &valid);
  llvm::Error deliver(const ir::InstanceStep &step,
                      const std::vector<char> &valid);
  /// Adds `add` to writeCount for each delivery of the step's valid
  /// transfers that carry something, or with 0 clears their counts.
  void countWrites(const ir::InstanceStep &step, const std::vector<char> &valid,
                   unsigned add);
  /// Transfer ti's delivery d: its pending runs, where its condition holds.
  llvm::Error deliverTo(const ir::InstanceStep &step, size_t ti, size_t d,
                        std::vector<int64_t> &env);
  /// Copies transfer ti's pending runs into buffer b in one pass.
  void mergeMessage(const ir::InstanceStep &step, size_t ti, unsigned b);
  /// Lands the parts of `item` where `delivery`'s condition on the chunk
  /// (`when`, its box evaluation) holds.
  llvm::Error landWhere(const ir::InstanceStep &step, size_t ti,
                        const ir::Delivery &delivery, RangePredicate &when,
                        const Pending &item, std::vector<int64_t> &env);
  void checkCorrectness();

  /// The chunks of `box` at which `predicate` holds, appended to `out` in id
  /// order. The environment is `env` with the chunk coordinates of the box;
  /// a box the interval evaluation cannot decide is split. Returns false,
  /// with the chunk and the failure, at the first chunk (in id order) where
  /// the predicate cannot be evaluated.
  bool select(const RangePredicate &ranges, const Expr &predicate,
              unsigned readsCoords, const Semantics::Box &box,
              std::vector<int64_t> &env, std::vector<IdRange> &out,
              std::pair<ChunkKey, ir::EvalResult> &failure);
  /// Lands `value` on `ids` of the receiver's buffer `b` (copy or fold).
  void land(const ir::InstanceStep &step, size_t ti, unsigned b, IdRange ids,
            uint32_t value, bool copy);
  /// Reports two deliveries of the step that race on a chunk.
  void checkRaces(const ir::InstanceStep &step);
  uint32_t intern(Value v);
  uint32_t fold(uint32_t local, uint32_t incoming, unsigned step);
  ChunkRuns &buffer(int64_t rank, unsigned b) {
    return held[static_cast<size_t>(rank) * numBuffers + b];
  }
  /// The channel's key (Topology::channelKey), or none when the topology
  /// has no such channel.
  std::optional<uint64_t> channelKey(const Channel &c) const {
    if (!topo.hasChannel(c.from, c.to))
      return std::nullopt;
    return topo.channelKey(c.from, c.to);
  }
  Counterexample base(const ir::InstanceStep *step) const;
  void report(Property property, Counterexample cex) {
    auto &slot = found[static_cast<size_t>(property)];
    if (!slot)
      slot = std::move(cex);
  }
  bool reported(Property property) const {
    return found[static_cast<size_t>(property)].has_value();
  }
  llvm::Error evalError(const Expr &e, const ir::EvalResult &r,
                        llvm::StringRef role, const ir::InstanceStep &step,
                        const ir::Transfer &t, std::optional<ChunkKey> chunk,
                        llvm::SMLoc fallback) const;
  std::string chunkPhrase(ChunkKey key) const {
    std::string d = sem.describeChunk(key);
    return d[0] == '(' ? "chunk " + d : d;
  }

  const ir::Instance &inst;
  const ir::Schedule &schedule;
  const Topology &topo;
  SimulateOptions options;
  Semantics sem;

  unsigned numBuffers = 1;
  std::vector<Value> pool;
  std::map<std::vector<int64_t>, uint32_t> interned; // value -> handle
  llvm::DenseMap<uint64_t, uint32_t> foldMemo;       // (a, b) -> a + b
  std::vector<ChunkRuns> held;                       // rank * B + buffer
  std::vector<Counterexample> warnings;
  llvm::DenseMap<const ir::TransferRule *, bool> warnedEmpty;
  llvm::DenseMap<const ir::TransferRule *, RulePlan> plans;
  std::optional<Counterexample> found[numProperties];
  /// select() calls, runs read from senders and runs delivered:
  /// SimulateOptions::workLimit's unit.
  uint64_t work = 0;

  // Ring (of at least 3 ranks) and linear array: routes are arcs, counted
  // with difference arrays (see route()).
  bool arcRouting = false;
  std::vector<int64_t> arcCount[2], arcWords[2];

  // Per-step scratch, sized once.
  std::vector<int64_t> boxLo, boxHi; // environment bounds for select()
  std::vector<IdRange> selected, accepted;
  std::vector<std::pair<IdRange, uint32_t>> pieces;
  std::vector<ChunkRuns::Run> incoming;
  std::vector<Write> writes;
  std::vector<uint32_t> writeCount; // per rank * B + buffer, for checkRaces
  std::vector<Pending> pending;
  std::vector<size_t> pendingBegin; // per transfer, into `pending`
  // The channels the step's messages cross, by key: a step touches only
  // its routes' channels, so nothing is held per channel of the topology
  // (full(n) has n(n - 1)).
  struct ChannelLoad {
    int64_t messages = 0;
    int64_t chunks = 0;
  };
  llvm::DenseMap<uint64_t, ChannelLoad> loads;
  std::vector<uint64_t> firstHop, lastHop;     // per transfer: channel keys
  llvm::DenseMap<uint64_t, int32_t> portCount; // per rank or channel key
  llvm::SmallVector<Channel, 32> path;
};

} // namespace collc::simulate::detail
