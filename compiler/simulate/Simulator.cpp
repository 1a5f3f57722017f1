#include "simulate/Simulator.h"

#include "simulate/ChunkRuns.h"
#include "simulate/RangeEval.h"
#include "simulate/Semantics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <optional>

using namespace collc;
using namespace collc::simulate;
using ir::Expr;
using ir::ExprOp;
using verify::Counterexample;
using verify::Property;

const verify::PropertyResult &
SimulationResult::result(verify::Property property) const {
  return properties[static_cast<size_t>(property)];
}

bool SimulationResult::allHold() const {
  for (const verify::PropertyResult &r : properties)
    if (r.status != verify::Status::Proved)
      return false;
  return true;
}

namespace {

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
};

bool isChunkSlot(unsigned slot) {
  return slot == ir::SlotOrigin || slot == ir::SlotDest ||
         slot == ir::SlotIndex;
}

bool readsChunk(const Expr &e) {
  if (e.op == ExprOp::Var)
    return isChunkSlot(e.slot);
  for (const ir::ExprRef &a : e.args)
    if (readsChunk(*a))
      return true;
  return false;
}

void collectPins(const Expr &e, RulePlan &plan) {
  if (e.op == ExprOp::And) {
    collectPins(*e.args[0], plan);
    collectPins(*e.args[1], plan);
    return;
  }
  if (e.op != ExprOp::Eq)
    return;
  for (int side = 0; side < 2; ++side) {
    const Expr &v = *e.args[side];
    const Expr &other = *e.args[1 - side];
    if (v.op == ExprOp::Var && isChunkSlot(v.slot) && !readsChunk(other)) {
      plan.pins.push_back({v.slot, &other});
      return;
    }
  }
}

std::string channelName(const Channel &c) {
  return std::to_string(c.from) + "->" + std::to_string(c.to);
}

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
  llvm::Error route(const ir::InstanceStep &step,
                    const std::vector<char> &valid, StepStats &stats);
  void checkContention(const ir::InstanceStep &step,
                       const std::vector<char> &valid);
  llvm::Error deliver(const ir::InstanceStep &step,
                      const std::vector<char> &valid);
  void checkCorrectness();

  /// The chunks of `box` at which `predicate` holds, appended to `out` in id
  /// order. The environment is `env` with the chunk coordinates of the box;
  /// a box the interval evaluation cannot decide is split. Returns false,
  /// with the chunk and the failure, at the first chunk (in id order) where
  /// the predicate cannot be evaluated.
  bool select(const RangePredicate &ranges, const Expr &predicate,
              const Semantics::Box &box,
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
  llvm::DenseMap<uint64_t, uint32_t> foldMemo;        // (a, b) -> a + b
  std::vector<ChunkRuns> held; // rank * B + buffer
  std::vector<Counterexample> warnings;
  llvm::DenseMap<const ir::TransferRule *, bool> warnedEmpty;
  llvm::DenseMap<const ir::TransferRule *, RulePlan> plans;
  std::optional<Counterexample> found[numProperties];
  uint64_t work = 0; // select() calls: SimulateOptions::workLimit's unit

  // Ring (of at least 3 ranks) and linear array: routes are arcs, counted
  // with difference arrays (see route()).
  bool arcRouting = false;
  std::vector<int64_t> arcCount[2], arcWords[2];

  // Per-step scratch, sized once.
  std::vector<int64_t> boxLo, boxHi;   // environment bounds for select()
  std::vector<IdRange> selected, accepted;
  std::vector<std::pair<IdRange, uint32_t>> pieces;
  std::vector<ChunkRuns::Run> incoming;
  std::vector<Write> writes;
  std::vector<uint32_t> writeCount; // per rank * B + buffer, for checkRaces
  std::vector<Pending> pending;
  std::vector<size_t> pendingBegin;        // per transfer, into `pending`
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

Counterexample Simulator::base(const ir::InstanceStep *step) const {
  Counterexample cex;
  cex.params = inst.namedParams();
  cex.p = inst.p;
  if (step) {
    cex.step = step->number;
    cex.loopVars = step->loopVars;
  }
  return cex;
}

llvm::Error Simulator::evalError(const Expr &e, const ir::EvalResult &r,
                                 llvm::StringRef role,
                                 const ir::InstanceStep &step,
                                 const ir::Transfer &t,
                                 std::optional<ChunkKey> chunk,
                                 llvm::SMLoc fallback) const {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  os << "cannot evaluate " << role << " `" << ir::print(e) << "`";
  if (r.where && r.where != &e)
    os << ": `" << ir::print(*r.where) << "`";
  os << ": " << ir::describe(r.error) << " (at step " << step.number
     << ", r = " << t.src;
  if (chunk)
    os << ", " << chunkPhrase(*chunk);
  for (auto &[name, value] : step.loopVars)
    os << ", " << name << " = " << value;
  for (auto &[name, value] : inst.namedParams())
    os << ", " << name << " = " << value;
  os << ")";
  llvm::SMLoc loc = r.where && r.where->loc.isValid() ? r.where->loc
                    : e.loc.isValid()                 ? e.loc
                                                      : fallback;
  return llvm::make_error<ir::EvalFailure>(os.str(), loc);
}

llvm::Error Simulator::prepare() {
  numBuffers = std::max<unsigned>(1, schedule.buffers.size());
  for (const ir::InstanceStep &step : inst.steps) {
    for (const ir::TransferRule &rule : step.step->rules) {
      if (plans.count(&rule))
        continue;
      auto badBuffer = [&](unsigned b) {
        return llvm::make_error<ir::EvalFailure>(
            "rule uses buffer " + std::to_string(b) + " but the schedule has " +
                std::to_string(numBuffers),
            rule.loc);
      };
      if (rule.fromBuffer >= numBuffers)
        return badBuffer(rule.fromBuffer);
      if (rule.into.empty())
        return llvm::make_error<ir::EvalFailure>("rule delivers into no buffer",
                                                 rule.loc);
      RulePlan plan;
      if (rule.selector) {
        collectPins(*rule.selector, plan);
        plan.selector.emplace(*rule.selector);
      }
      for (const ir::Delivery &d : rule.into) {
        if (d.buffer >= numBuffers)
          return badBuffer(d.buffer);
        plan.whenPerChunk.push_back(d.when && readsChunk(*d.when));
        plan.when.emplace_back();
        if (d.when && plan.whenPerChunk.back())
          plan.when.back().emplace(*d.when);
      }
      plans[&rule] = std::move(plan);
    }
  }

  // Every buffer starts as a copy of the rank's input, unless it starts
  // empty (ir/Schedule.h).
  held.resize(static_cast<size_t>(inst.p) * numBuffers);
  for (int64_t r = 0; r < inst.p; ++r)
    sem.initial(r, [&](IdRange ids, const Contributions &c) {
      uint32_t value = intern({c, 0});
      for (unsigned b = 0; b < numBuffers; ++b)
        if (b >= schedule.buffers.size() || !schedule.buffers[b].startsEmpty)
          buffer(r, b).assign(ids.lo, ids.hi, value);
    });

  arcRouting = topo.numNodes() == inst.p &&
               ((topo.kind() == TopologyKind::Ring && inst.p >= 3) ||
                topo.kind() == TopologyKind::Linear);
  return llvm::Error::success();
}

llvm::Expected<SimulationResult> Simulator::run() {
  if (auto err = prepare())
    return err;
  SimulationResult result;
  result.steps.reserve(inst.steps.size());
  for (const ir::InstanceStep &step : inst.steps) {
    StepStats stats;
    stats.step = step.number;
    if (auto err = runStep(step, stats))
      return err;
    result.maxLoad = std::max(result.maxLoad, stats.maxLoad);
    result.steps.push_back(std::move(stats));
    result.work = work;
    if (options.workLimit && work > options.workLimit &&
        result.steps.size() < inst.steps.size()) {
      result.unfinished = true;
      return result;
    }
    if (options.stopAtViolation &&
        llvm::any_of(found, [](const auto &f) { return f.has_value(); }))
      break;
  }
  if (result.steps.size() == inst.steps.size())
    checkCorrectness();

  for (size_t i = 0; i < numProperties; ++i) {
    verify::PropertyResult r;
    r.property = static_cast<Property>(i);
    r.method = "simulation";
    r.status =
        found[i] ? verify::Status::Counterexample : verify::Status::Proved;
    r.counterexample = found[i];
    r.maxLoad = result.maxLoad;
    result.properties.push_back(std::move(r));
  }
  result.warnings = std::move(warnings);
  return result;
}

llvm::Error Simulator::runStep(const ir::InstanceStep &step, StepStats &stats) {
  size_t n = step.transfers.size();
  stats.messageChunks.assign(n, 0);
  std::vector<char> valid(n, 0);
  pending.clear();
  pendingBegin.assign(n + 1, 0);
  std::vector<int64_t> env;

  for (size_t ti = 0; ti < n; ++ti) {
    const ir::Transfer &t = step.transfers[ti];
    pendingBegin[ti] = pending.size();
    if (t.dst < 0 || t.dst >= inst.p || t.dst == t.src) {
      if (!reported(Property::Matching)) {
        Counterexample cex = base(&step);
        cex.rank = t.src;
        cex.transfers = {{t.src, t.dst}};
        cex.message = t.dst == t.src
                          ? "rank " + std::to_string(t.src) + " sends to itself"
                          : "rank " + std::to_string(t.src) + " sends to " +
                                std::to_string(t.dst) + ", outside " +
                                topo.describe();
        report(Property::Matching, std::move(cex));
      }
      continue;
    }
    valid[ti] = 1;
    int64_t count = 0;
    if (auto err = collect(step, ti, env, count))
      return err;
    stats.messageChunks[ti] = count;
    stats.maxMessageChunks = std::max(stats.maxMessageChunks, count);
  }
  pendingBegin[n] = pending.size();
  if (options.onTransfer) {
    std::vector<IdRange> ids;
    for (size_t ti = 0; ti < n; ++ti) {
      if (!valid[ti])
        continue;
      ids.clear();
      for (size_t i = pendingBegin[ti]; i < pendingBegin[ti + 1]; ++i)
        if (!ids.empty() && ids.back().hi + 1 == pending[i].ids.lo)
          ids.back().hi = pending[i].ids.hi;
        else
          ids.push_back(pending[i].ids);
      options.onTransfer(step, ti, ids, sem);
    }
  }

  if (auto err = route(step, valid, stats))
    return err;
  checkContention(step, valid);
  return deliver(step, valid);
}

bool Simulator::select(const RangePredicate &ranges, const Expr &predicate,
                       const Semantics::Box &box,
                       std::vector<int64_t> &env, std::vector<IdRange> &out,
                       std::pair<ChunkKey, ir::EvalResult> &failure) {
  ++work;
  boxLo[ir::SlotOrigin] = box.oLo;
  boxHi[ir::SlotOrigin] = box.oHi;
  boxLo[ir::SlotDest] = box.dLo;
  boxHi[ir::SlotDest] = box.dHi;
  boxLo[ir::SlotIndex] = box.kLo;
  boxHi[ir::SlotIndex] = box.kHi;
  ValueRange v = ranges.evaluate(boxLo, boxHi);
  if (!v.mayFail && v.excludesZero()) {
    sem.appendIds(box, out);
    return true;
  }
  if (!v.mayFail && v.isZero())
    return true;
  bool follows = sem.destFollowsOrigin();
  Semantics::Box left = box, right = box;
  if (box.oLo < box.oHi) { // split by origin first: ids stay in order
    left.oHi = box.oLo + (box.oHi - box.oLo) / 2;
    right.oLo = left.oHi + 1;
    if (follows) {
      std::tie(left.dLo, left.dHi) = sem.destBounds(left.oLo, left.oHi);
      std::tie(right.dLo, right.dHi) = sem.destBounds(right.oLo, right.oHi);
    }
  } else if (!follows && box.dLo < box.dHi) {
    left.dHi = box.dLo + (box.dHi - box.dLo) / 2;
    right.dLo = left.dHi + 1;
  } else if (box.kLo < box.kHi) {
    left.kHi = box.kLo + (box.kHi - box.kLo) / 2;
    right.kLo = left.kHi + 1;
  } else { // one chunk: evaluate it
    env[ir::SlotOrigin] = box.oLo;
    env[ir::SlotDest] = box.dLo;
    env[ir::SlotIndex] = box.kLo;
    ir::EvalResult r = ir::evaluate(predicate, env);
    if (!r.ok()) {
      failure = {makeChunkKey(box.oLo, box.dLo, box.kLo), r};
      return false;
    }
    if (r.value != 0)
      sem.appendIds(box, out);
    return true;
  }
  return select(ranges, predicate, left, env, out, failure) &&
         select(ranges, predicate, right, env, out, failure);
}

llvm::Error Simulator::collect(const ir::InstanceStep &step, size_t ti,
                               std::vector<int64_t> &env, int64_t &count) {
  const ir::Transfer &t = step.transfers[ti];
  const ir::TransferRule &rule = step.step->rules[t.rule];
  const ChunkRuns &from = buffer(t.src, rule.fromBuffer);

  if (!rule.selector) {
    if (from.empty() && !reported(Property::Causality)) {
      Counterexample cex = base(&step);
      cex.rank = t.src;
      cex.transfers = {{t.src, t.dst}};
      cex.message = "rank " + std::to_string(t.src) + " sends to " +
                    std::to_string(t.dst) + " at step " +
                    std::to_string(step.number) + " but holds nothing";
      report(Property::Causality, std::move(cex));
    }
    from.forEach([&](uint64_t lo, uint64_t hi, uint32_t value) {
      pending.push_back({{lo, hi}, value});
    });
    count = static_cast<int64_t>(from.count());
    return llvm::Error::success();
  }

  inst.envFor(step, t, env);
  RulePlan &plan = plans.find(&rule)->second;
  // The box the selector is searched in: the universe, narrowed to the
  // coordinates the selector pins.
  Semantics::Box box = sem.universeBox();
  bool empty = false;
  for (auto &[slot, e] : plan.pins) {
    ir::EvalResult v = ir::evaluate(*e, env);
    if (!v.ok())
      continue; // the selector itself reports it, if it is reached
    int64_t *lo = slot == ir::SlotOrigin ? &box.oLo
                  : slot == ir::SlotDest ? &box.dLo
                                         : &box.kLo;
    int64_t *hi = slot == ir::SlotOrigin ? &box.oHi
                  : slot == ir::SlotDest ? &box.dHi
                                         : &box.kHi;
    if (v.value < *lo || v.value > *hi) {
      empty = true; // outside the universe, or contradicting another pin
      break;
    }
    if (slot == ir::SlotDest && sem.destFollowsOrigin())
      continue; // the dest follows the origin: the search finds it
    *lo = *hi = v.value;
    if (slot == ir::SlotOrigin && sem.destFollowsOrigin())
      std::tie(box.dLo, box.dHi) = sem.destBounds(box.oLo, box.oHi);
  }

  selected.clear();
  if (!empty) {
    // The coordinates the box pins are constants of the search.
    unsigned varying = (box.oLo < box.oHi ? 1u : 0u) |
                       (box.dLo < box.dHi ? 2u : 0u) |
                       (box.kLo < box.kHi ? 4u : 0u);
    env[ir::SlotOrigin] = box.oLo;
    env[ir::SlotDest] = box.dLo;
    env[ir::SlotIndex] = box.kLo;
    plan.selector->specialise(env, varying);
    boxLo = env;
    boxHi = env;
    std::pair<ChunkKey, ir::EvalResult> failure;
    if (!select(*plan.selector, *rule.selector, box, env, selected, failure))
      return evalError(*rule.selector, failure.second, "selector", step, t,
                       failure.first, rule.loc);
  }
  if (selected.empty() && warnedEmpty.try_emplace(&rule, true).second) {
    // Not a violation (the message is matched and the result unaffected),
    // but a message with nothing in it costs a start-up for nothing and
    // usually means the selector is off by one.
    Counterexample w = base(&step);
    w.rank = t.src;
    w.transfers = {{t.src, t.dst}};
    w.message = "rank " + std::to_string(t.src) + " sends " +
                std::to_string(t.dst) + " an empty message at step " +
                std::to_string(step.number) + ": `" +
                ir::print(*rule.selector) + "` selects no chunk";
    warnings.push_back(std::move(w));
  }

  for (const IdRange &ids : selected)
    from.visit(
        ids.lo, ids.hi,
        [&](uint64_t lo, uint64_t hi, uint32_t value) {
          pending.push_back({{lo, hi}, value});
          count += static_cast<int64_t>(hi - lo + 1);
        },
        [&](uint64_t lo, uint64_t) {
          if (reported(Property::Causality))
            return;
          ChunkKey key = sem.keyOf(lo);
          Counterexample cex = base(&step);
          cex.rank = t.src;
          cex.transfers = {{t.src, t.dst}};
          cex.chunk = sem.describeChunk(key);
          cex.message = "rank " + std::to_string(t.src) + " sends " +
                        chunkPhrase(key) + " to " + std::to_string(t.dst) +
                        " at step " + std::to_string(step.number) +
                        " but does not hold it";
          report(Property::Causality, std::move(cex));
        });
  return llvm::Error::success();
}

llvm::Error Simulator::route(const ir::InstanceStep &step,
                             const std::vector<char> &valid, StepStats &stats) {
  size_t n = step.transfers.size();
  bool allPort = options.ports == PortModel::All;
  firstHop.assign(allPort ? n : 0, UINT64_MAX);
  lastHop.assign(allPort ? n : 0, UINT64_MAX);

  // The most loaded channel; among equals the first in channel order.
  std::optional<Channel> worst;
  int64_t worstLoad = 0;
  auto account = [&](const Channel &ch, int64_t messages, int64_t chunks) {
    stats.maxChannelChunks = std::max(stats.maxChannelChunks, chunks);
    if (messages > worstLoad || (messages == worstLoad && ch < *worst)) {
      worstLoad = messages;
      worst = ch;
    }
  };

  if (arcRouting) {
    // Ring and linear routes are arcs in one direction: add each message to
    // a difference array per direction (0: towards increasing rank, channel
    // i -> i+1 at index i; 1: towards decreasing rank, i -> i-1 at i), so a
    // step costs O(p + transfers) however far the messages travel.
    int64_t p = inst.p;
    bool ring = topo.kind() == TopologyKind::Ring;
    for (auto &d : arcCount)
      d.assign(p + 1, 0);
    for (auto &d : arcWords)
      d.assign(p + 1, 0);
    auto addRange = [&](int dir, int64_t lo, int64_t len, int64_t chunks) {
      // channels lo .. lo + len - 1 (mod p) of direction dir
      auto put = [&](int64_t from, int64_t to) {
        arcCount[dir][from] += 1;
        arcCount[dir][to] -= 1;
        arcWords[dir][from] += chunks;
        arcWords[dir][to] -= chunks;
      };
      if (lo + len <= p) {
        put(lo, lo + len);
      } else {
        put(lo, p);
        put(0, lo + len - p);
      }
    };
    for (size_t ti = 0; ti < n; ++ti) {
      if (!valid[ti])
        continue;
      const ir::Transfer &t = step.transfers[ti];
      int64_t forward = ((t.dst - t.src) % p + p) % p;
      int64_t backward = p - forward;
      bool up;
      if (!ring) {
        up = t.dst > t.src;
      } else if (forward != backward) {
        up = forward < backward; // the shorter direction (Topology.h)
      } else {
        // A tie: the topology decides; ask it.
        path.clear();
        topo.route(t.src, t.dst, path);
        up = !path.empty() && path[0].to == (t.src + 1) % p;
      }
      int64_t len = ring ? (up ? forward : backward)
                         : (up ? t.dst - t.src : t.src - t.dst);
      int64_t chunks = stats.messageChunks[ti];
      if (up)
        addRange(0, t.src, len, chunks);
      else
        addRange(1, ((t.dst + 1) % p + p) % p, len, chunks);
      if (allPort) {
        int64_t step1 = up ? 1 : p - 1;
        auto first = channelKey({t.src, (t.src + step1) % p});
        auto last = channelKey({(t.dst - step1 + p) % p, t.dst});
        firstHop[ti] = first ? *first : UINT64_MAX;
        lastHop[ti] = last ? *last : UINT64_MAX;
      }
    }
    for (int dir = 0; dir < 2; ++dir) {
      int64_t messages = 0, chunks = 0;
      for (int64_t i = 0; i < p; ++i) {
        messages += arcCount[dir][i];
        chunks += arcWords[dir][i];
        if (messages > 0)
          account({i, dir == 0 ? (i + 1) % p : (i + p - 1) % p}, messages,
                  chunks);
      }
    }
  } else {
    loads.clear();
    for (size_t ti = 0; ti < n; ++ti) {
      if (!valid[ti])
        continue;
      const ir::Transfer &t = step.transfers[ti];
      path.clear();
      topo.route(t.src, t.dst, path);
      for (size_t h = 0; h < path.size(); ++h) {
        std::optional<uint64_t> c = channelKey(path[h]);
        if (!c)
          return llvm::make_error<ir::EvalFailure>(
              "route from " + std::to_string(t.src) + " to " +
                  std::to_string(t.dst) + " on " + topo.describe() +
                  " uses channel " + channelName(path[h]) +
                  ", which the topology does not have",
              llvm::SMLoc());
        ChannelLoad &l = loads[*c];
        ++l.messages;
        l.chunks += stats.messageChunks[ti];
        if (allPort && h == 0)
          firstHop[ti] = *c;
        if (allPort)
          lastHop[ti] = *c;
      }
    }
    for (const auto &[key, l] : loads)
      account(topo.channelOfKey(key), l.messages, l.chunks);
  }
  stats.maxLoad = worstLoad;
  stats.worstChannel = worst;

  if (worstLoad >= 2 && !reported(Property::Congestion)) {
    Channel ch = *worst;
    Counterexample cex = base(&step);
    cex.channel = {ch.from, ch.to};
    cex.load = worstLoad;
    for (size_t ti = 0; ti < n; ++ti) {
      if (!valid[ti])
        continue;
      const ir::Transfer &t = step.transfers[ti];
      path.clear();
      topo.route(t.src, t.dst, path);
      if (llvm::is_contained(path, ch))
        cex.transfers.push_back({t.src, t.dst});
    }
    cex.message = "channel " + channelName(ch) + " carries " +
                  std::to_string(worstLoad) + " messages";
    report(Property::Congestion, std::move(cex));
  }
  return llvm::Error::success();
}

void Simulator::checkContention(const ir::InstanceStep &step,
                                const std::vector<char> &valid) {
  if (reported(Property::Contention))
    return;
  size_t n = step.transfers.size();
  bool single = options.ports == PortModel::Single;
  // Two passes, sends (rank or first hop) then receives (rank or last hop):
  // count, then name the first transfer whose port is shared.
  for (int receives = 0; receives < 2; ++receives) {
    auto port = [&](size_t ti) -> uint64_t {
      const ir::Transfer &t = step.transfers[ti];
      if (single)
        return static_cast<uint64_t>(receives ? t.dst : t.src);
      return receives ? lastHop[ti] : firstHop[ti];
    };
    std::optional<uint64_t> shared;
    portCount.clear();
    for (size_t ti = 0; ti < n; ++ti)
      if (valid[ti] && port(ti) != UINT64_MAX && ++portCount[port(ti)] == 2 &&
          !shared)
        shared = port(ti);
    if (!shared)
      continue;

    Counterexample cex = base(&step);
    for (size_t ti = 0; ti < n; ++ti)
      if (valid[ti] && port(ti) == *shared)
        cex.transfers.push_back(
            {step.transfers[ti].src, step.transfers[ti].dst});
    int64_t rank = receives ? cex.transfers[0].dst : cex.transfers[0].src;
    cex.rank = rank;
    std::string what = std::to_string(cex.transfers.size()) + " messages";
    if (single) {
      cex.message = "rank " + std::to_string(rank) +
                    (receives ? " receives " : " sends ") + what + " at step " +
                    std::to_string(step.number) + " (single-port)";
    } else {
      Channel ch = topo.channelOfKey(*shared);
      cex.channel = {ch.from, ch.to};
      cex.load = static_cast<int64_t>(cex.transfers.size());
      cex.message = "rank " + std::to_string(rank) +
                    (receives ? " receives " : " sends ") + what + " over " +
                    channelName(ch) + " at step " +
                    std::to_string(step.number) + " (all-port)";
    }
    report(Property::Contention, std::move(cex));
    return;
  }
}

uint32_t Simulator::intern(Value v) {
  std::vector<int64_t> key{v.misfoldStep};
  for (const Contributions::Run &r : v.contributions.runs())
    key.insert(key.end(), {r.lo, r.hi, r.count});
  auto [it, inserted] =
      interned.try_emplace(std::move(key), static_cast<uint32_t>(pool.size()));
  if (inserted)
    pool.push_back(std::move(v));
  return it->second;
}

uint32_t Simulator::fold(uint32_t local, uint32_t incoming, unsigned step) {
  // A step folds the same pair of values into many chunks (a block at a
  // time); the memo is per step, as the step number is part of the result.
  auto [memo, fresh] =
      foldMemo.try_emplace((uint64_t(local) << 32) | incoming, 0);
  if (!fresh)
    return memo->second;
  const Value &a = pool[local];
  const Value &b = pool[incoming];
  Value v = a;
  v.contributions.add(b.contributions);
  if (a.misfoldStep && b.misfoldStep)
    v.misfoldStep = std::min(a.misfoldStep, b.misfoldStep);
  else
    v.misfoldStep = a.misfoldStep ? a.misfoldStep : b.misfoldStep;
  // A non-commutative operator can only combine neighbouring ranges, lower
  // ranks on the left (the emitted code orders the operands by rank).
  if (!schedule.collective.commutative && !v.misfoldStep) {
    bool adjacent =
        a.contributions.isInterval() && b.contributions.isInterval() &&
        (a.contributions.runs()[0].hi + 1 == b.contributions.runs()[0].lo ||
         b.contributions.runs()[0].hi + 1 == a.contributions.runs()[0].lo);
    if (!adjacent)
      v.misfoldStep = step;
  }
  uint32_t handle = intern(std::move(v));
  // intern() does not touch the memo: `memo` stays valid.
  memo->second = handle;
  return handle;
}

void Simulator::land(const ir::InstanceStep &step, size_t ti, unsigned b,
                     IdRange ids, uint32_t value, bool copy) {
  size_t slot = static_cast<size_t>(step.transfers[ti].dst) * numBuffers + b;
  if (writeCount[slot] > 1) // more than one delivery: checkRaces() looks
    writes.push_back({slot, ids, ti, value, copy});
  ChunkRuns &into = held[slot];
  if (copy) {
    into.assign(ids.lo, ids.hi, value);
    return;
  }
  pieces.clear();
  into.visit(
      ids.lo, ids.hi,
      [&](uint64_t lo, uint64_t hi, uint32_t local) {
        pieces.push_back({{lo, hi}, fold(local, value, step.number)});
      },
      [&](uint64_t lo, uint64_t hi) { pieces.push_back({{lo, hi}, value}); });
  for (auto &[range, v] : pieces)
    into.assign(range.lo, range.hi, v);
}

void Simulator::checkRaces(const ir::InstanceStep &step) {
  // A copy and another delivery of the same step on the same chunk: the
  // result depends on which message the receiver handles first, unless
  // both copy the same value. Sorted by buffer and chunk, overlapping
  // deliveries are neighbours.
  std::sort(writes.begin(), writes.end(), [](const Write &x, const Write &y) {
    return x.slot != y.slot ? x.slot < y.slot : x.ids.lo < y.ids.lo;
  });
  for (size_t i = 0; i < writes.size(); ++i)
    for (size_t j = i + 1; j < writes.size() && writes[j].slot == writes[i].slot &&
                           writes[j].ids.lo <= writes[i].ids.hi;
         ++j) {
      const Write &x = writes[i], &y = writes[j];
      if (!(x.copy || y.copy) || (x.copy && y.copy && x.value == y.value))
        continue;
      // The earlier delivery first; the chunk is where both land.
      const Write &a = x.transfer < y.transfer ? x : y;
      const Write &b = x.transfer < y.transfer ? y : x;
      const ir::Transfer &ta = step.transfers[a.transfer];
      const ir::Transfer &tb = step.transfers[b.transfer];
      ChunkKey key = sem.keyOf(y.ids.lo);
      unsigned buffer = static_cast<unsigned>(x.slot % numBuffers);
      Counterexample cex = base(&step);
      cex.rank = ta.dst;
      cex.transfers = {{ta.src, ta.dst}, {tb.src, tb.dst}};
      cex.chunk = sem.describeChunk(key);
      cex.message =
          "ranks " + std::to_string(ta.src) + " and " + std::to_string(tb.src) +
          (x.copy && y.copy ? " copy different values of " : " both deliver ") +
          chunkPhrase(key) + " into rank " + std::to_string(ta.dst) +
          (numBuffers > 1 ? "'s buffer " + schedule.buffers[buffer].name
                          : std::string()) +
          " at step " + std::to_string(step.number) +
          (x.copy && y.copy ? "" : ", one a copy and one a fold") +
          ": the result depends on which arrives first";
      report(Property::Correctness, std::move(cex));
      return;
    }
}

llvm::Error Simulator::deliver(const ir::InstanceStep &step,
                               const std::vector<char> &valid) {
  std::vector<int64_t> env;
  foldMemo.clear();
  writes.clear();
  // Buffers that more than one delivery of the step reaches: only there can
  // two race (checkRaces).
  writeCount.resize(held.size(), 0);
  bool tracking = !reported(Property::Correctness);
  for (size_t ti = 0; tracking && ti < step.transfers.size(); ++ti) {
    if (!valid[ti] || pendingBegin[ti] == pendingBegin[ti + 1])
      continue;
    const ir::Transfer &t = step.transfers[ti];
    for (const ir::Delivery &d : step.step->rules[t.rule].into)
      ++writeCount[static_cast<size_t>(t.dst) * numBuffers + d.buffer];
  }
  for (size_t ti = 0; ti < step.transfers.size(); ++ti) {
    if (!valid[ti])
      continue;
    const ir::Transfer &t = step.transfers[ti];
    const ir::TransferRule &rule = step.step->rules[t.rule];
    RulePlan &plan = plans.find(&rule)->second;
    size_t begin = pendingBegin[ti], end = pendingBegin[ti + 1];
    if (begin == end)
      continue;
    inst.envFor(step, t, env);
    bool copy = rule.mode == ir::TransferMode::Copy;
    for (size_t d = 0; d < rule.into.size(); ++d) {
      const ir::Delivery &delivery = rule.into[d];
      if (delivery.when && !plan.whenPerChunk[d]) {
        ir::EvalResult w = ir::evaluate(*delivery.when, env);
        if (!w.ok())
          return evalError(*delivery.when, w, "delivery condition", step, t,
                           std::nullopt, rule.loc);
        if (w.value == 0)
          continue;
      }
      bool perChunk = delivery.when && plan.whenPerChunk[d];
      ChunkRuns &into = buffer(t.dst, delivery.buffer);
      if (copy && !perChunk && end - begin >= 8 &&
          (end - begin) * 8 >= into.numRuns()) {
        // A message of many runs (everything a rank holds): merge it in
        // one pass rather than run by run.
        incoming.clear();
        for (size_t i = begin; i < end; ++i) {
          const Pending &item = pending[i];
          incoming.push_back({item.ids.lo, item.ids.hi, item.value});
          if (writeCount[static_cast<size_t>(t.dst) * numBuffers +
                         delivery.buffer] > 1)
            writes.push_back({static_cast<size_t>(t.dst) * numBuffers +
                                  delivery.buffer,
                              item.ids, ti, item.value, true});
        }
        into.assignAll(incoming.data(), incoming.size());
        continue;
      }
      for (size_t i = begin; i < end; ++i) {
        const Pending &item = pending[i];
        if (!perChunk) {
          land(step, ti, delivery.buffer, item.ids, item.value, copy);
          continue;
        }
        // A condition on the chunk: the parts of the run where it holds.
        accepted.clear();
        RangePredicate &when = *plan.when[d];
        when.specialise(env, 7);
        boxLo = env;
        boxHi = env;
        std::optional<std::pair<ChunkKey, ir::EvalResult>> failure;
        sem.boxesOf(item.ids, [&](const Semantics::Box &box) {
          std::pair<ChunkKey, ir::EvalResult> f;
          if (!failure && !select(when, *delivery.when, box, env, accepted, f))
            failure = f;
        });
        if (failure)
          return evalError(*delivery.when, failure->second,
                           "delivery condition", step, t, failure->first,
                           rule.loc);
        for (const IdRange &ids : accepted)
          land(step, ti, delivery.buffer, ids, item.value, copy);
      }
    }
  }
  if (!reported(Property::Correctness) && !writes.empty())
    checkRaces(step);
  for (size_t ti = 0; tracking && ti < step.transfers.size(); ++ti) {
    const ir::Transfer &t = step.transfers[ti];
    if (valid[ti])
      for (const ir::Delivery &d : step.step->rules[t.rule].into)
        writeCount[static_cast<size_t>(t.dst) * numBuffers + d.buffer] = 0;
  }
  return llvm::Error::success();
}

void Simulator::checkCorrectness() {
  const ir::InstanceStep *last =
      inst.steps.empty() ? nullptr : &inst.steps.back();
  for (int64_t r = 0; r < inst.p && !reported(Property::Correctness); ++r) {
    const ChunkRuns &result = buffer(r, 0);
    auto check = [&](ChunkKey key, const Value *v,
                     const Contributions &expected) {
      if (reported(Property::Correctness))
        return;
      if (v && v->contributions == expected && !v->misfoldStep)
        return;
      // A violation: only now build the strings.
      Counterexample cex = base(last);
      cex.rank = r;
      cex.chunk = sem.describeChunk(key);
      cex.expected = expected.str();
      std::string at = chunkPhrase(key) + " at rank " + std::to_string(r);
      if (!v) {
        cex.actual = "nothing";
        cex.message =
            "rank " + std::to_string(r) + " does not hold " + chunkPhrase(key);
        report(Property::Correctness, std::move(cex));
        return;
      }
      cex.actual = v->contributions.str();
      if (v->contributions == expected) {
        const ir::InstanceStep &misfold = inst.steps[v->misfoldStep - 1];
        cex.step = misfold.number;
        cex.loopVars = misfold.loopVars;
        cex.message = at +
                      " combines contributions out of rank order at step " +
                      std::to_string(v->misfoldStep) + " ('" +
                      schedule.collective.op + "' is not commutative)";
        report(Property::Correctness, std::move(cex));
        return;
      }
      // Name the first rank whose contribution count is wrong.
      llvm::SmallVector<int64_t, 8> bounds;
      for (const auto *c : {&expected, &v->contributions})
        for (const Contributions::Run &run : c->runs()) {
          bounds.push_back(run.lo);
          bounds.push_back(run.hi + 1);
        }
      llvm::sort(bounds);
      for (int64_t x : bounds) {
        int64_t want = expected.count(x), have = v->contributions.count(x);
        if (want == have)
          continue;
        std::string whose = "rank " + std::to_string(x) + "'s contribution";
        if (have == 0)
          cex.message = at + " lacks " + whose;
        else if (want == 0)
          cex.message =
              at + " holds " + whose + ", which is not in " + expected.str();
        else
          cex.message =
              at + " holds " + whose +
              (have == 2 ? " twice" : " " + std::to_string(have) + " times");
        break;
      }
      report(Property::Correctness, std::move(cex));
    };
    sem.required(r, [&](IdRange ids, const Contributions &expected) {
      if (reported(Property::Correctness))
        return;
      result.visit(
          ids.lo, ids.hi,
          [&](uint64_t lo, uint64_t, uint32_t value) {
            check(sem.keyOf(lo), &pool[value], expected);
          },
          [&](uint64_t lo, uint64_t) {
            check(sem.keyOf(lo), nullptr, expected);
          });
    });
  }
}

} // namespace

llvm::Expected<SimulationResult>
collc::simulate::simulate(const ir::Instance &instance,
                          const Topology &topology,
                          const SimulateOptions &options) {
  if (topology.numRanks() != instance.p)
    return llvm::make_error<ir::EvalFailure>(
        "schedule has " + std::to_string(instance.p) + " ranks but " +
            topology.describe() + " has " + std::to_string(topology.numRanks()),
        instance.schedule->loc);
  auto sem = Semantics::make(instance.collective, instance.p, instance.chunks);
  if (!sem)
    return sem.takeError();
  Simulator sim(instance, topology, options, std::move(*sem));
  return sim.run();
}

llvm::Expected<SimulationResult>
collc::simulate::simulate(const ir::Schedule &schedule,
                          llvm::ArrayRef<int64_t> params,
                          const SimulateOptions &options) {
  auto instance = ir::instantiate(schedule, params);
  if (!instance)
    return instance.takeError();
  auto topology = Topology::make(schedule.topology.kind, instance->dims,
                                 schedule.topology.edges,
                       schedule.topology.order);
  if (!topology) {
    std::string msg = llvm::toString(topology.takeError());
    return llvm::make_error<ir::EvalFailure>(msg, schedule.topology.loc);
  }
  return simulate(*instance, *topology, options);
}
