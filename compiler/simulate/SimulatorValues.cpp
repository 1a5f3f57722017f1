// What the chunks hold: a step's deliveries landed (copied or folded, each
// value interned once), races between them found, and the post-condition
// checked at the end.

#include "simulate/SimulatorState.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace collc;
using namespace collc::simulate;
using namespace collc::simulate::detail;
using ir::ExprOp;

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
      [&](uint64_t lo, uint64_t hi) {
        pieces.push_back({{lo, hi}, value});
      });
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
    for (size_t j = i + 1;
         j < writes.size() && writes[j].slot == writes[i].slot &&
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

void Simulator::countWrites(const ir::InstanceStep &step,
                            const std::vector<char> &valid, unsigned add) {
  for (size_t ti = 0; ti < step.transfers.size(); ++ti) {
    if (!valid[ti] || (add && pendingBegin[ti] == pendingBegin[ti + 1]))
      continue;
    const ir::Transfer &t = step.transfers[ti];
    for (const ir::Delivery &d : step.step->rules[t.rule].into) {
      uint32_t &count =
          writeCount[static_cast<size_t>(t.dst) * numBuffers + d.buffer];
      count = add ? count + add : 0;
    }
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
  if (tracking)
    countWrites(step, valid, 1);
  for (size_t ti = 0; ti < step.transfers.size(); ++ti) {
    if (!valid[ti] || pendingBegin[ti] == pendingBegin[ti + 1])
      continue;
    const ir::Transfer &t = step.transfers[ti];
    const ir::TransferRule &rule = step.step->rules[t.rule];
    inst.envFor(step, t, env);
    for (size_t d = 0; d < rule.into.size(); ++d)
      if (llvm::Error err = deliverTo(step, ti, d, env))
        return err;
  }
  if (!reported(Property::Correctness) && !writes.empty())
    checkRaces(step);
  if (tracking)
    countWrites(step, valid, 0);
  return llvm::Error::success();
}

llvm::Error Simulator::deliverTo(const ir::InstanceStep &step, size_t ti,
                                 size_t d, std::vector<int64_t> &env) {
  const ir::Transfer &t = step.transfers[ti];
  const ir::TransferRule &rule = step.step->rules[t.rule];
  RulePlan &plan = plans.find(&rule)->second;
  const ir::Delivery &delivery = rule.into[d];
  if (delivery.when && !plan.whenPerChunk[d]) {
    ir::EvalResult w = ir::evaluate(*delivery.when, env);
    if (!w.ok())
      return evalError(*delivery.when, w, "delivery condition", step, t,
                       std::nullopt, rule.loc);
    if (w.value == 0)
      return llvm::Error::success();
  }
  const size_t begin = pendingBegin[ti], end = pendingBegin[ti + 1];
  const bool copy = rule.mode == ir::TransferMode::Copy;
  const bool perChunk = delivery.when && plan.whenPerChunk[d];
  work += end - begin; // the runs landed
  if (copy && !perChunk && end - begin >= 8 &&
      (end - begin) * 8 >= buffer(t.dst, delivery.buffer).numRuns()) {
    mergeMessage(step, ti, delivery.buffer);
    return llvm::Error::success();
  }
  for (size_t i = begin; i < end; ++i) {
    const Pending &item = pending[i];
    if (!perChunk) {
      land(step, ti, delivery.buffer, item.ids, item.value, copy);
      continue;
    }
    if (llvm::Error err =
            landWhere(step, ti, delivery, *plan.when[d], item, env))
      return err;
  }
  return llvm::Error::success();
}

void Simulator::mergeMessage(const ir::InstanceStep &step, size_t ti,
                             unsigned b) {
  // A message of many runs (everything a rank holds): merge it in one pass
  // rather than run by run.
  const size_t slot =
      static_cast<size_t>(step.transfers[ti].dst) * numBuffers + b;
  incoming.clear();
  for (size_t i = pendingBegin[ti]; i < pendingBegin[ti + 1]; ++i) {
    const Pending &item = pending[i];
    incoming.push_back({item.ids.lo, item.ids.hi, item.value});
    if (writeCount[slot] > 1)
      writes.push_back({slot, item.ids, ti, item.value, true});
  }
  held[slot].assignAll(incoming.data(), incoming.size());
}

llvm::Error Simulator::landWhere(const ir::InstanceStep &step, size_t ti,
                                 const ir::Delivery &delivery,
                                 RangePredicate &when, const Pending &item,
                                 std::vector<int64_t> &env) {
  // A condition on the chunk: the parts of the run where it holds.
  const ir::Transfer &t = step.transfers[ti];
  const ir::TransferRule &rule = step.step->rules[t.rule];
  accepted.clear();
  when.specialise(env, 7);
  boxLo = env;
  boxHi = env;
  std::optional<std::pair<ChunkKey, ir::EvalResult>> failure;
  sem.boxesOf(item.ids, [&](const Semantics::Box &box) {
    std::pair<ChunkKey, ir::EvalResult> f;
    if (!failure && !select(when, *delivery.when, 7u, box, env, accepted, f))
      failure = f;
  });
  if (failure)
    return evalError(*delivery.when, failure->second, "delivery condition",
                     step, t, failure->first, rule.loc);
  for (const IdRange &ids : accepted)
    land(step, ti, delivery.buffer, ids, item.value,
         rule.mode == ir::TransferMode::Copy);
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
