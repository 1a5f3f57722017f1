// The simulator: one instance run step by step over its chunks, each
// transfer's chunks selected, routed over the topology with its channels'
// and ports' loads counted; what the chunks then hold is
// SimulatorValues.cpp's.

#include "simulate/SimulatorState.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace collc;
using namespace collc::simulate;
using namespace collc::simulate::detail;
using ir::ExprOp;

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

/// Sorts `ids` and merges the ranges that touch.
void coalesce(std::vector<IdRange> &ids) {
  llvm::sort(ids,
             [](const IdRange &a, const IdRange &b) { return a.lo < b.lo; });
  size_t n = 0;
  for (const IdRange &r : ids)
    if (n > 0 && ids[n - 1].hi + 1 >= r.lo)
      ids[n - 1].hi = std::max(ids[n - 1].hi, r.hi);
    else
      ids[n++] = r;
  ids.resize(n);
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

} // namespace

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
        plan.readsCoords =
            (ir::reads(*rule.selector, ir::SlotOrigin) ? 1u : 0u) |
            (ir::reads(*rule.selector, ir::SlotDest) ? 2u : 0u) |
            (ir::reads(*rule.selector, ir::SlotIndex) ? 4u : 0u);
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
        if (!schedule.startsEmpty(b))
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
  // A run costs its lookup in the sender's holdings whatever the selector
  // cost: an all-to-all's step moves p runs a rank that one box selects.
  work += pending.size();
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
                       unsigned readsCoords, const Semantics::Box &box,
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
  // Only along a coordinate the selector reads does a split decide more
  // (a dest that follows its origin is split with the origin).
  const bool readsOrigin = readsCoords & (follows ? 3u : 1u),
             readsDest = !follows && (readsCoords & 2u),
             readsIndex = readsCoords & 4u;
  Semantics::Box left = box, right = box;
  if (readsOrigin && box.oLo < box.oHi) { // origin first: ids stay in order
    left.oHi = box.oLo + (box.oHi - box.oLo) / 2;
    right.oLo = left.oHi + 1;
    if (follows) {
      std::tie(left.dLo, left.dHi) = sem.destBounds(left.oLo, left.oHi);
      std::tie(right.dLo, right.dHi) = sem.destBounds(right.oLo, right.oHi);
    }
  } else if (readsDest && box.dLo < box.dHi) {
    left.dHi = box.dLo + (box.dHi - box.dLo) / 2;
    right.dLo = left.dHi + 1;
  } else if (readsIndex && box.kLo < box.kHi) {
    left.kHi = box.kLo + (box.kHi - box.kLo) / 2;
    right.kLo = left.kHi + 1;
  } else { // the selector is constant over the box: evaluate one chunk
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
  return select(ranges, predicate, readsCoords, left, env, out, failure) &&
         select(ranges, predicate, readsCoords, right, env, out, failure);
}

llvm::Error Simulator::collect(const ir::InstanceStep &step, size_t ti,
                               std::vector<int64_t> &env, int64_t &count) {
  const ir::Transfer &t = step.transfers[ti];
  const ir::TransferRule &rule = step.step->rules[t.rule];
  const ChunkRuns &from = buffer(t.src, rule.fromBuffer);

  if (!rule.selector) {
    collectWhole(step, t, from, count);
    return llvm::Error::success();
  }

  inst.envFor(step, t, env);
  RulePlan &plan = plans.find(&rule)->second;
  selected.clear();
  if (std::optional<Semantics::Box> box = searchBox(plan, env))
    if (llvm::Error err = selectChunks(step, t, plan, *box, env))
      return err;
  if (selected.empty() && warnedEmpty.try_emplace(&rule, true).second)
    warnEmpty(step, t);
  collectSelected(step, t, from, count);
  return llvm::Error::success();
}

void Simulator::collectWhole(const ir::InstanceStep &step,
                             const ir::Transfer &t, const ChunkRuns &from,
                             int64_t &count) {
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
}

std::optional<Semantics::Box>
Simulator::searchBox(const RulePlan &plan,
                     const std::vector<int64_t> &env) const {
  Semantics::Box box = sem.universeBox();
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
    if (v.value < *lo || v.value > *hi)
      return std::nullopt; // outside the universe, or contradicting a pin
    if (slot == ir::SlotDest && sem.destFollowsOrigin())
      continue; // the dest follows the origin: the search finds it
    *lo = *hi = v.value;
    if (slot == ir::SlotOrigin && sem.destFollowsOrigin())
      std::tie(box.dLo, box.dHi) = sem.destBounds(box.oLo, box.oHi);
  }
  return box;
}

llvm::Error Simulator::selectChunks(const ir::InstanceStep &step,
                                    const ir::Transfer &t, RulePlan &plan,
                                    const Semantics::Box &box,
                                    std::vector<int64_t> &env) {
  const ir::TransferRule &rule = step.step->rules[t.rule];
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
  if (!select(*plan.selector, *rule.selector, plan.readsCoords, box, env,
              selected, failure))
    return evalError(*rule.selector, failure.second, "selector", step, t,
                     failure.first, rule.loc);
  // A box left whole along the origin or dest puts its ids out of order.
  if (!std::is_sorted(
          selected.begin(), selected.end(),
          [](const IdRange &a, const IdRange &b) { return a.lo < b.lo; }))
    coalesce(selected);
  return llvm::Error::success();
}

void Simulator::warnEmpty(const ir::InstanceStep &step, const ir::Transfer &t) {
  // Not a violation (the message is matched and the result unaffected),
  // but a message with nothing in it costs a start-up for nothing and
  // usually means the selector is off by one.
  const ir::TransferRule &rule = step.step->rules[t.rule];
  Counterexample w = base(&step);
  w.rank = t.src;
  w.transfers = {{t.src, t.dst}};
  w.message = "rank " + std::to_string(t.src) + " sends " +
              std::to_string(t.dst) + " an empty message at step " +
              std::to_string(step.number) + ": `" + ir::print(*rule.selector) +
              "` selects no chunk";
  warnings.push_back(std::move(w));
}

void Simulator::collectSelected(const ir::InstanceStep &step,
                                const ir::Transfer &t, const ChunkRuns &from,
                                int64_t &count) {
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
}

llvm::Error Simulator::route(const ir::InstanceStep &step,
                             const std::vector<char> &valid, StepStats &stats) {
  const size_t n = step.transfers.size();
  const bool allPort = options.ports == PortModel::All;
  firstHop.assign(allPort ? n : 0, UINT64_MAX);
  lastHop.assign(allPort ? n : 0, UINT64_MAX);
  WorstChannel worst;
  if (arcRouting)
    loadArcs(step, valid, stats, worst);
  else if (llvm::Error err = loadHops(step, valid, stats, worst))
    return err;
  stats.maxLoad = worst.load;
  stats.worstChannel = worst.channel;
  reportCongestion(step, valid, worst);
  return llvm::Error::success();
}

void Simulator::loadArcs(const ir::InstanceStep &step,
                         const std::vector<char> &valid, StepStats &stats,
                         WorstChannel &worst) {
  // Ring and linear routes are arcs in one direction: add each message to
  // a difference array per direction (0: towards increasing rank, channel
  // i -> i+1 at index i; 1: towards decreasing rank, i -> i-1 at i), so a
  // step costs O(p + transfers) however far the messages travel.
  const bool allPort = options.ports == PortModel::All;
  const int64_t p = inst.p;
  const bool ring = topo.kind() == TopologyKind::Ring;
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
  for (size_t ti = 0; ti < step.transfers.size(); ++ti) {
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
    int64_t len =
        ring ? (up ? forward : backward) : (up ? t.dst - t.src : t.src - t.dst);
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
      if (messages > 0) {
        stats.maxChannelChunks = std::max(stats.maxChannelChunks, chunks);
        worst.add({i, dir == 0 ? (i + 1) % p : (i + p - 1) % p}, messages);
      }
    }
  }
}

llvm::Error Simulator::loadHops(const ir::InstanceStep &step,
                                const std::vector<char> &valid,
                                StepStats &stats, WorstChannel &worst) {
  const bool allPort = options.ports == PortModel::All;
  loads.clear();
  for (size_t ti = 0; ti < step.transfers.size(); ++ti) {
    if (!valid[ti])
      continue;
    const ir::Transfer &t = step.transfers[ti];
    const llvm::SmallVectorImpl<Channel> &hops = routeOf(t);
    for (size_t h = 0; h < hops.size(); ++h) {
      std::optional<uint64_t> c = channelKey(hops[h]);
      if (!c)
        return llvm::make_error<ir::EvalFailure>(
            "route from " + std::to_string(t.src) + " to " +
                std::to_string(t.dst) + " on " + topo.describe() +
                " uses channel " + hops[h].text() +
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
  for (const auto &[key, l] : loads) {
    stats.maxChannelChunks = std::max(stats.maxChannelChunks, l.chunks);
    worst.add(topo.channelOfKey(key), l.messages);
  }
  return llvm::Error::success();
}

void Simulator::reportCongestion(const ir::InstanceStep &step,
                                 const std::vector<char> &valid,
                                 const WorstChannel &worst) {
  if (worst.load < 2 || reported(Property::Congestion))
    return;
  const Channel ch = *worst.channel;
  Counterexample cex = base(&step);
  cex.channel = {ch.from, ch.to};
  cex.load = worst.load;
  for (size_t ti = 0; ti < step.transfers.size(); ++ti) {
    if (!valid[ti])
      continue;
    const ir::Transfer &t = step.transfers[ti];
    if (llvm::is_contained(routeOf(t), ch))
      cex.transfers.push_back({t.src, t.dst});
  }
  cex.message = cex.channelLoad();
  report(Property::Congestion, std::move(cex));
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
                    ch.text() + " at step " + std::to_string(step.number) +
                    " (all-port)";
    }
    report(Property::Contention, std::move(cex));
    return;
  }
}

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
  auto topology =
      Topology::make(schedule.topology.kind, instance->dims,
                     schedule.topology.edges, schedule.topology.order);
  if (!topology) {
    std::string msg = llvm::toString(topology.takeError());
    return llvm::make_error<ir::EvalFailure>(msg, schedule.topology.loc);
  }
  return simulate(*instance, *topology, options);
}
