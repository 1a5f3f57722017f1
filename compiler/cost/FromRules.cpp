// Pricing from a schedule's rules (cost/Cost.h's costFromRules): each step's
// messages are counted over ranges of ranks at once, so the cost follows
// the number of steps rather than that of transfers.
//
// For one rule of one step, a range of ranks R is decided at once when
// interval evaluation (simulate/RangeEval.h) shows that every rank of R
// sends (its guard) and that every one sends the same number of chunks: the
// selector is then decided box by box over R and the chunk coordinates,
// and a box it holds on adds its size for every rank of R. A range that
// cannot be decided is halved, down to single ranks, which are exact. A
// selector conjunct that pins a coordinate to an expression of the rank
// (`origin == (r - k + p) % p`) is taken out and its coordinate replaced by
// that expression: each rank then names one block, whichever it is. So is
// one that pins a coordinate's low bits (every 2^j-th coordinate), or its
// distance round from an offset (`(dest - origin + p) % p >= k`), on a
// coordinate nothing else reads: each rank names as many.

#include "cost/Cost.h"

#include "ir/Instantiate.h"
#include "simulate/RangeEval.h"
#include "simulate/Semantics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <array>
#include <optional>

using namespace collc;
using namespace collc::cost;
using ir::Expr;
using ir::ExprOp;
using ir::ExprRef;
using simulate::RangePredicate;
using simulate::ValueRange;

namespace {

/// Expression nodes one pricing may evaluate over intervals (a second or
/// two). A schedule whose rules interval evaluation cannot decide over
/// ranges of ranks costs about p evaluations per step; past this it is
/// refused with the limit named.
constexpr uint64_t maxNodeEvaluations = uint64_t(1) << 27;

bool isChunkSlot(unsigned slot) {
  return slot == ir::SlotOrigin || slot == ir::SlotDest ||
         slot == ir::SlotIndex;
}

bool readsChunk(const Expr &e) {
  return ir::reads(e, ir::SlotOrigin) || ir::reads(e, ir::SlotDest) ||
         ir::reads(e, ir::SlotIndex);
}

/// How a pin groups a coordinate's values: `/ c` and `>> s` name the run
/// of c (2^s) values value * c .. value * c + c - 1; `& m`, m one less than
/// a power of two, the values whose low bits are value, every (m + 1)-th.
enum class Grouping { Quotient, Shift, LowBits };

/// A selector conjunct `coordinate / c == value`, `coordinate >> s ==
/// value` or `coordinate & m == value` (`coordinate == value` with no
/// block), value free of chunk coordinates: each rank selects at most the
/// one group of coordinates that value names. The group's size is fixed
/// within a step (it reads neither the rank nor a chunk coordinate).
struct Pin {
  unsigned slot = 0;
  ExprRef value;
  ExprRef block;                          // null: one coordinate
  Grouping grouping = Grouping::Quotient; // of the block, if any
};

/// Whether m is one less than a power of two below 2^62: a mask of low bits
/// whose modulus m + 1 fits.
bool isLowBitsMask(int64_t m) {
  return m >= 0 && m < (int64_t(1) << 62) && (m & (m + 1)) == 0;
}

/// Whether `m` is written as one less than a power of two: `(c << s) - 1`
/// with c a power of two, or such a constant. Hypercube schedules name the
/// low bits of a coordinate so: `dest & ((2 << i) - 1)`.
bool lowBitsMask(const Expr &m) {
  auto powerOfTwo = [](const Expr &e) {
    return e.op == ExprOp::Const && e.value > 0 &&
           (e.value & (e.value - 1)) == 0;
  };
  if (m.op == ExprOp::Const)
    return isLowBitsMask(m.value);
  return m.op == ExprOp::Sub && m.args[1]->op == ExprOp::Const &&
         m.args[1]->value == 1 && m.args[0]->op == ExprOp::Shl &&
         powerOfTwo(*m.args[0]->args[0]);
}

/// Whether `e` is fixed within a step: it reads no rank or chunk slot.
bool fixedInStep(const Expr &e) {
  return !readsChunk(e) && !ir::reads(e, ir::SlotRank);
}

/// Solves `x op y` for the variable x holds once under + and - (`r - origin
/// == e` is `origin == r - e`; `k - r < 3` is `r > k - 3`): `isTarget` picks
/// the variable, which `y` must not read. Gives the comparison on the
/// variable alone, and what it is compared with; for a chunk coordinate
/// also `/ c`, `>> s` or `& m` on it, as a block (Pin::block).
struct Solved {
  ExprOp op;
  ExprRef bound;
  ExprRef block;
  Grouping grouping = Grouping::Quotient;
  unsigned slot = 0;
};
ExprOp flip(ExprOp op) {
  switch (op) {
  case ExprOp::Lt:
    return ExprOp::Gt;
  case ExprOp::Le:
    return ExprOp::Ge;
  case ExprOp::Gt:
    return ExprOp::Lt;
  case ExprOp::Ge:
    return ExprOp::Le;
  default:
    return op;
  }
}
std::optional<Solved> solve(const ExprRef &x, ExprOp op, const ExprRef &y,
                            bool (*isTarget)(unsigned slot)) {
  auto readsTarget = [&](const Expr &e) {
    std::vector<unsigned> slots;
    ir::collectSlots(e, slots);
    return llvm::any_of(slots, isTarget);
  };
  if (readsTarget(*y))
    return std::nullopt;
  switch (x->op) {
  case ExprOp::Var:
    if (!isTarget(x->slot))
      return std::nullopt;
    return Solved{op, y, nullptr, Grouping::Quotient, x->slot};
  case ExprOp::Div:
  case ExprOp::Shr: {
    const Expr &a = *x->args[0];
    if (op != ExprOp::Eq || a.op != ExprOp::Var || !isTarget(a.slot) ||
        !isChunkSlot(a.slot) || !fixedInStep(*x->args[1]))
      return std::nullopt;
    return Solved{op, y, x->args[1],
                  x->op == ExprOp::Shr ? Grouping::Shift : Grouping::Quotient,
                  a.slot};
  }
  case ExprOp::BitAnd:
    for (int k = 0; k < 2; ++k) {
      const Expr &a = *x->args[k];
      const ExprRef &mask = x->args[1 - k];
      if (op == ExprOp::Eq && a.op == ExprOp::Var && isTarget(a.slot) &&
          isChunkSlot(a.slot) && fixedInStep(*mask) && lowBitsMask(*mask))
        return Solved{op, y, mask, Grouping::LowBits, a.slot};
    }
    return std::nullopt;
  case ExprOp::Add:
  case ExprOp::Sub: {
    bool left = readsTarget(*x->args[0]), right = readsTarget(*x->args[1]);
    if (left == right)
      return std::nullopt;
    if (left) // a + b op y: a op y - b; a - b op y: a op y + b
      return solve(
          x->args[0], op,
          Expr::binary(x->op == ExprOp::Add ? ExprOp::Sub : ExprOp::Add, y,
                       x->args[1]),
          isTarget);
    if (x->op == ExprOp::Add) // a + b op y: b op y - a
      return solve(x->args[1], op, Expr::binary(ExprOp::Sub, y, x->args[0]),
                   isTarget);
    // a - b op y: b flip(op) a - y
    return solve(x->args[1], flip(op), Expr::binary(ExprOp::Sub, x->args[0], y),
                 isTarget);
  }
  default:
    return std::nullopt;
  }
}

bool isComparison(ExprOp op) {
  switch (op) {
  case ExprOp::Eq:
  case ExprOp::Lt:
  case ExprOp::Le:
  case ExprOp::Gt:
  case ExprOp::Ge:
    return true;
  default:
    return false;
  }
}

std::optional<Solved> solveEither(const Expr &c,
                                  bool (*isTarget)(unsigned slot)) {
  if (!isComparison(c.op))
    return std::nullopt;
  if (auto s = solve(c.args[0], c.op, c.args[1], isTarget))
    return s;
  return solve(c.args[1], flip(c.op), c.args[0], isTarget);
}

bool isRankSlot(unsigned slot) { return slot == ir::SlotRank; }

/// A guard conjunct `r op bound`, bound free of the rank: it bounds the
/// senders of a step directly instead of by halving ranges of ranks.
struct RankBound {
  ExprOp op;
  ExprRef bound;
};

/// A guard conjunct `(r ^ x) & m == c` (no `^ x`: x = 0) or `r % m == c`,
/// x, m and c fixed in a step, m one less than a power of two for `&`: the
/// senders are every (m + 1)-th (m-th) rank, as in recursive doubling's
/// `r & ((2 << i) - 1) == 0`, which halving ranges of ranks would take
/// down to each one. A step whose m is no such number uses the conjunct
/// as any other.
struct Congruence {
  ExprRef flip, divisor, value; // flip may be null
  bool masked = true;           // `&` (divisor is m), else `%`
};

bool isRank(const Expr &e) {
  return e.op == ExprOp::Var && e.slot == ir::SlotRank;
}

/// Reads `e & m == c` (either side, either operand), e the rank or the rank
/// xor something, or `r % m == c`, all else fixed in a step.
std::optional<Congruence> congruence(const Expr &c) {
  if (c.op != ExprOp::Eq)
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Expr &masked = *c.args[side];
    const ExprRef &value = c.args[1 - side];
    if (!fixedInStep(*value))
      continue;
    if (masked.op == ExprOp::Mod && isRank(*masked.args[0]) &&
        fixedInStep(*masked.args[1]))
      return Congruence{nullptr, masked.args[1], value, false};
    if (masked.op != ExprOp::BitAnd)
      continue;
    for (int operand = 0; operand < 2; ++operand) {
      const Expr &x = *masked.args[operand];
      const ExprRef &mask = masked.args[1 - operand];
      if (!fixedInStep(*mask))
        continue;
      if (isRank(x))
        return Congruence{nullptr, mask, value, true};
      if (x.op != ExprOp::BitXor)
        continue;
      for (int k = 0; k < 2; ++k)
        if (isRank(*x.args[k]) && fixedInStep(*x.args[1 - k]))
          return Congruence{x.args[1 - k], mask, value, true};
    }
  }
  return std::nullopt;
}

/// The coordinates lo..hi whose distance (c - offset + m) % m is in
/// first..last, where the sum is never negative.
int64_t countDistances(int64_t lo, int64_t hi, int64_t offset, int64_t m,
                       std::pair<__int128, __int128> span) {
  const __int128 first = span.first, last = span.second;
  if (first > last)
    return 0;
  // Those x in 0..n - 1 with x % m in first..last.
  auto below = [&](__int128 n) {
    return n / m * (last - first + 1) +
           std::clamp<__int128>(n % m - first, 0, last - first + 1);
  };
  const __int128 from = static_cast<__int128>(lo) - offset + m;
  return static_cast<int64_t>(below(from + (hi - lo) + 1) - below(from));
}

/// The ranks lo..hi that are `residue` (in 0..modulus - 1) modulo
/// `modulus`: those at that distance from 0.
int64_t countCongruent(int64_t lo, int64_t hi, int64_t modulus,
                       int64_t residue) {
  return countDistances(lo, hi, 0, modulus, {residue, residue});
}

/// The coordinates lo..hi whose low bits (modulo `modulus`, a power of two)
/// are a rank's value in v, as many for every value of v; none when not.
std::optional<int64_t> lowBitsCount(int64_t lo, int64_t hi, int64_t modulus,
                                    const ValueRange &v) {
  if (v.hi < 0 || v.lo >= modulus)
    return 0; // low bits no coordinate has
  if (v.lo == v.hi)
    return countCongruent(lo, hi, modulus, v.lo);
  // Every value in 0..modulus - 1 has as many where lo..hi is whole periods.
  if (v.lo < 0 || v.hi >= modulus || (hi - lo + 1) % modulus != 0)
    return std::nullopt;
  return (hi - lo + 1) / modulus;
}

/// A selector conjunct `(coordinate - offset + m) % m op bound`, offset
/// free of chunk coordinates, m and bound fixed in a step: the coordinates
/// a given distance round from offset. Where the coordinate's range is
/// whole periods of m, as many for every offset (that keeps the sum from
/// going negative); else counted for one offset, rank by rank. The ring's
/// all-to-all names so the blocks a rank passes on (`(dest - origin + p) %
/// p >= k`, its origin pinned to the rank), which interval evaluation
/// decides only rank by rank.
struct CyclicRange {
  unsigned slot = 0;
  ExprRef offset, modulus, bound;
  ExprOp op = ExprOp::Eq;
};

std::optional<CyclicRange> cyclicRange(const Expr &c) {
  if (!isComparison(c.op))
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Expr &x = *c.args[side];
    const ExprRef &bound = c.args[1 - side];
    if (!fixedInStep(*bound) || x.op != ExprOp::Mod)
      continue;
    const Expr &sum = *x.args[0];
    const ExprRef &m = x.args[1];
    if (!fixedInStep(*m) || sum.op != ExprOp::Add ||
        !ir::sameTree(*sum.args[1], *m))
      continue;
    const Expr &difference = *sum.args[0];
    if (difference.op != ExprOp::Sub || difference.args[0]->op != ExprOp::Var ||
        !isChunkSlot(difference.args[0]->slot) ||
        readsChunk(*difference.args[1]))
      continue;
    return CyclicRange{difference.args[0]->slot, difference.args[1], m, bound,
                       side == 0 ? c.op : flip(c.op)};
  }
  return std::nullopt;
}

/// The values y in 0..m - 1 with `y op bound`: first..last, empty where
/// first > last.
std::pair<__int128, __int128> distances(ExprOp op, int64_t bound, int64_t m) {
  const __int128 b = bound;
  auto within = [&](__int128 first, __int128 last) {
    return std::pair(std::max<__int128>(first, 0),
                     std::min<__int128>(last, m - 1));
  };
  switch (op) {
  case ExprOp::Lt:
    return within(0, b - 1);
  case ExprOp::Le:
    return within(0, b);
  case ExprOp::Gt:
    return within(b + 1, m - 1);
  case ExprOp::Ge:
    return within(b, m - 1);
  default: // Eq
    return within(b, b);
  }
}

/// What the search needs of one rule.
struct RulePlan {
  std::vector<RankBound> rankBounds;
  std::optional<Congruence> congruent;
  int64_t modulus = 1, residue = 0; // the congruence's, in this step
  ExprRef guardRest;                // the guard's other conjuncts
  /// Of guardRest, and of the whole guard for a step where the congruence
  /// is no such (then its conjunct is decided like the others).
  std::optional<RangePredicate> guard, wholeGuard;
  const RangePredicate *stepGuard = nullptr; // the one this step uses
  /// No selector: every chunk its sender holds, which in a reduction is
  /// every chunk of a buffer that does not start empty (each rank starts
  /// with its share of all, and deliveries replace values, never chunks),
  /// and in a broadcast whose every rule has no selector is every chunk or
  /// none (the root holds them all, and whoever receives gets all a holder
  /// has): with causality, all.
  bool wholeBuffer = false;
  std::vector<Pin> pins; // at most one per coordinate
  /// The selector without the pins' conjuncts and the cyclic ranges', each
  /// exact pin's coordinate replaced by its value.
  ExprRef reduced;
  std::optional<RangePredicate> selector; // of `reduced`
  /// Conjuncts of the reduced selector counted per coordinate, each on a
  /// coordinate nothing else reads (not in `reduced`); `whole` is
  /// `reduced` with them, for a step or ranks they do not count.
  std::vector<CyclicRange> cyclic;
  std::vector<std::optional<RangePredicate>> cyclicOffsets;
  ExprRef whole;
  std::optional<RangePredicate> wholeSelector; // of `whole`
  std::vector<std::optional<RangePredicate>> pinValues;
  std::vector<bool> reducedReads; // per pin: whether `whole` reads its slot
  std::vector<int64_t> widths;    // per pin: its block's size in this step
};

/// Whether a conjunct other than parts[i] reads `slot`.
bool readByAnother(llvm::ArrayRef<ExprRef> parts, size_t i, unsigned slot) {
  for (size_t j = 0; j < parts.size(); ++j)
    if (j != i && ir::reads(*parts[j], slot))
      return true;
  return false;
}

ExprRef conjoin(llvm::ArrayRef<ExprRef> parts) {
  ExprRef out;
  for (const ExprRef &c : parts)
    out = out ? Expr::binary(ExprOp::And, out, c) : c;
  return out ? out : Expr::constant(1);
}

/// The guard's rank bounds, its congruence (the first), and the rest.
void planGuard(const ir::TransferRule &rule, RulePlan &p) {
  if (!rule.guard)
    return;
  std::vector<ExprRef> parts, rest;
  ir::conjuncts(rule.guard, parts);
  for (const ExprRef &c : parts) {
    std::optional<Solved> b = solveEither(*c, isRankSlot);
    std::optional<Congruence> mod = p.congruent ? std::nullopt : congruence(*c);
    if (b && b->op != ExprOp::Eq)
      p.rankBounds.push_back({b->op, b->bound});
    else if (mod)
      p.congruent = mod;
    else
      rest.push_back(c);
  }
  if (!rest.empty()) {
    p.guardRest = conjoin(rest);
    p.guard.emplace(*p.guardRest);
  }
  if (p.congruent)
    p.wholeGuard.emplace(*rule.guard);
}

/// The selector conjuncts that pin a coordinate (at most one each); returns
/// the others.
std::vector<ExprRef> planPins(llvm::ArrayRef<ExprRef> parts,
                              const simulate::Semantics &sem, RulePlan &p) {
  std::vector<ExprRef> rest;
  // A shift's dest follows from its origin: a pin on it stays a conjunct.
  bool destFollows = sem.destFollowsOrigin() && sem.usesDest();
  // Low bits pin every (m + 1)-th coordinate, a set no box holds: only
  // where no other conjunct reads the coordinate, so that its count is all.
  for (size_t i = 0; i < parts.size(); ++i) {
    const ExprRef &c = parts[i];
    std::optional<Solved> solved =
        c->op == ExprOp::Eq ? solveEither(*c, isChunkSlot) : std::nullopt;
    bool taken = solved && !(destFollows && solved->slot == ir::SlotDest) &&
                 llvm::none_of(p.pins, [&](const Pin &q) {
                   return q.slot == solved->slot;
                 });
    if (taken && solved->grouping == Grouping::LowBits)
      taken =
          !sem.destFollowsOrigin() && !readByAnother(parts, i, solved->slot);
    if (taken)
      p.pins.push_back(
          {solved->slot, solved->bound, solved->block, solved->grouping});
    else
      rest.push_back(c);
  }
  return rest;
}

/// Of the conjuncts left after the pins (exact pins substituted), the
/// cyclic ranges; returns the others.
std::vector<ExprRef> planCyclicRanges(llvm::ArrayRef<ExprRef> reducedParts,
                                      const simulate::Semantics &sem,
                                      RulePlan &p) {
  std::vector<ExprRef> kept;
  for (size_t i = 0; i < reducedParts.size(); ++i) {
    const ExprRef &c = reducedParts[i];
    std::optional<CyclicRange> range = cyclicRange(*c);
    auto onSlot = [&](unsigned slot) { return range && slot == range->slot; };
    bool taken =
        range && !sem.destFollowsOrigin() &&
        llvm::none_of(p.pins, [&](const Pin &q) { return onSlot(q.slot); }) &&
        llvm::none_of(p.cyclic,
                      [&](const CyclicRange &q) { return onSlot(q.slot); }) &&
        !readByAnother(reducedParts, i, range->slot);
    if (taken) {
      p.cyclic.push_back(*range);
      p.cyclicOffsets.emplace_back(*range->offset);
    } else {
      kept.push_back(c);
    }
  }
  return kept;
}

RulePlan plan(const ir::TransferRule &rule, const simulate::Semantics &sem) {
  RulePlan p;
  planGuard(rule, p);
  p.wholeBuffer = !rule.selector;
  std::vector<ExprRef> parts;
  if (rule.selector)
    ir::conjuncts(rule.selector, parts);
  std::vector<ExprRef> rest = planPins(parts, sem, p);
  auto pinnedValue = [&](const Expr &v) -> ExprRef {
    for (const Pin &pin : p.pins)
      if (!pin.block && v.slot == pin.slot)
        return pin.value;
    return nullptr;
  };
  std::vector<ExprRef> reducedParts;
  for (const ExprRef &c : rest)
    reducedParts.push_back(ir::substitute(c, pinnedValue));
  std::vector<ExprRef> kept = planCyclicRanges(reducedParts, sem, p);
  p.whole = conjoin(reducedParts);
  p.reduced = p.cyclic.empty() ? p.whole : conjoin(kept);
  p.selector.emplace(*p.reduced);
  if (!p.cyclic.empty())
    p.wholeSelector.emplace(*p.whole);
  for (const Pin &pin : p.pins) {
    p.pinValues.emplace_back(*pin.value);
    p.reducedReads.push_back(ir::reads(*p.whole, pin.slot));
  }
  return p;
}

/// One step's messages: how many, and the most chunks in one.
struct StepCount {
  int64_t messages = 0;
  int64_t maxChunks = 0;
};

class RuleCounter {
public:
  RuleCounter(const simulate::Semantics &sem, uint64_t &evaluations)
      : sem(sem), evaluations(evaluations) {}

  /// Whether a rule without a selector sends every chunk (RulePlan's
  /// wholeBuffer): in a reduction, or in a broadcast without selectors.
  bool wholeBufferIsUniverse = false;

  /// Adds the senders of `rule` in the step with environment `env`.
  llvm::Error count(const ir::TransferRule &rule, RulePlan &plan,
                    const ir::InstanceStep &step, StepCount &out);

private:
  struct Coordinate {
    int64_t lo = 0, hi = 0;
    bool collapsed = false; // pinned: one value, or one block, per rank
    int64_t factor = 1;     // chunks per rank along it when collapsed
  };
  using Box = std::array<Coordinate, 3>; // origin, dest, index

  /// Fixes the plan's pins, guards and selector to the step's values.
  void specialise();
  /// The width of each pin's block in the step.
  llvm::Error blockWidths();
  /// Narrows first..last to the ranks the guard's bounds let send.
  llvm::Error boundRanks(int64_t &first, int64_t &last);
  /// Sets the plan's modulus, residue and step guard; false when no rank
  /// meets the guard's congruence.
  llvm::Expected<bool> stepCongruence();
  llvm::Error ranks(int64_t lo, int64_t hi);
  /// The chunks every rank of lo..hi sends, when interval evaluation shows
  /// they are as many for each; none when it cannot.
  llvm::Expected<std::optional<int64_t>> uniform(int64_t lo, int64_t hi);
  enum class PinFit { Fits, NoChunk, Undecided };
  /// Fits pin i to its coordinate c for every rank of lo..hi: a narrower
  /// range or a count per rank (Fits), no chunk at all, or undecided.
  llvm::Expected<PinFit> fitPin(size_t i, Coordinate &c, int64_t lo,
                                int64_t hi);
  /// Counts each cyclic range's coordinate in `box` as its values in range,
  /// as many for every rank of the current range (Counted); Undecided where
  /// the ranks may count differently, Whole (`box` as it was) where one does
  /// not count so at all (the whole selector decides).
  enum class CyclicFit { Counted, Undecided, Whole };
  llvm::Expected<CyclicFit> countCyclicRanges(Box &box);
  /// Counts the chunks of `box` the reduced selector holds on, for every
  /// rank of the current range; false when a single chunk stays undecided.
  llvm::Expected<bool> search(Box box, int64_t &total);
  /// Counts an evaluation of `predicate` against the bound.
  llvm::Error tick(const RangePredicate &predicate);
  llvm::Error evalFailure(const Expr &e, const ir::EvalResult &r,
                          llvm::StringRef role, int64_t rank);

  const simulate::Semantics &sem;
  uint64_t &evaluations;
  const ir::TransferRule *rule = nullptr;
  RulePlan *plan = nullptr;
  const ir::InstanceStep *step = nullptr;
  StepCount *out = nullptr;
  std::vector<int64_t> lo, hi, env;
  /// What search() decides a box by: the reduced selector, or the whole
  /// one where the cyclic ranges do not count.
  const RangePredicate *selector = nullptr;
  const Expr *selectorExpr = nullptr; // its expression
};

/// A chunk coordinate's index in a RuleCounter box.
int boxCoordinate(unsigned slot) {
  return slot == ir::SlotOrigin ? 0 : slot == ir::SlotDest ? 1 : 2;
}

llvm::Error RuleCounter::tick(const RangePredicate &predicate) {
  evaluations += predicate.size();
  if (evaluations <= maxNodeEvaluations)
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "pricing it from its rules takes more than %llu evaluations of "
      "expression nodes (interval evaluation does not decide its guards or "
      "selectors over ranges of ranks)",
      static_cast<unsigned long long>(maxNodeEvaluations));
}

llvm::Error RuleCounter::evalFailure(const Expr &e, const ir::EvalResult &r,
                                     llvm::StringRef role, int64_t rank) {
  std::string message = "cannot evaluate " + role.str() + " `" + ir::print(e) +
                        "`: " + ir::describe(r.error).str() + " (at step " +
                        std::to_string(step->number) +
                        ", r = " + std::to_string(rank);
  for (const auto &[name, value] : step->loopVars)
    message += ", " + name + " = " + std::to_string(value);
  llvm::SMLoc loc = r.where && r.where->loc.isValid() ? r.where->loc : e.loc;
  return llvm::make_error<ir::EvalFailure>(message + ")",
                                           loc.isValid() ? loc : rule->loc);
}

llvm::Error RuleCounter::count(const ir::TransferRule &r, RulePlan &p,
                               const ir::InstanceStep &s, StepCount &o) {
  rule = &r;
  plan = &p;
  step = &s;
  out = &o;
  env = s.env;
  lo = s.env;
  hi = s.env;
  specialise();
  if (p.wholeBuffer && !wholeBufferIsUniverse)
    return llvm::make_error<ir::EvalFailure>(
        "a rule without a selector sends what its sender holds, which only "
        "simulation tells here",
        r.loc);
  if (auto err = blockWidths())
    return err;
  int64_t first = 0, last = sem.numRanks() - 1;
  if (auto err = boundRanks(first, last))
    return err;
  llvm::Expected<bool> some = stepCongruence();
  if (!some)
    return some.takeError();
  if (!*some || first > last)
    return llvm::Error::success();
  return ranks(first, last);
}

void RuleCounter::specialise() {
  // Everything but the rank and the chunk coordinates is fixed in a step.
  unsigned varying = RangePredicate::Rank | RangePredicate::Origin |
                     RangePredicate::Dest | RangePredicate::Index;
  if (plan->guard)
    plan->guard->specialise(env, varying);
  if (plan->wholeGuard)
    plan->wholeGuard->specialise(env, varying);
  plan->selector->specialise(env, varying);
  if (plan->wholeSelector)
    plan->wholeSelector->specialise(env, varying);
  for (auto &v : plan->pinValues)
    v->specialise(env, varying);
  for (auto &v : plan->cyclicOffsets)
    v->specialise(env, varying);
}

llvm::Error RuleCounter::blockWidths() {
  // Blocks are fixed within the step: a divisor c, or 2^s for a shift s.
  plan->widths.clear();
  for (const Pin &pin : plan->pins) {
    int64_t width = 1;
    if (pin.block) {
      ir::EvalResult b = ir::evaluate(*pin.block, env);
      if (!b.ok())
        return evalFailure(*pin.block, b, "selector", 0);
      bool fits = false;
      switch (pin.grouping) {
      case Grouping::Quotient:
        fits = b.value > 0;
        width = b.value;
        break;
      case Grouping::Shift:
        fits = b.value >= 0 && b.value < 62;
        width = fits ? int64_t(1) << b.value : 0;
        break;
      case Grouping::LowBits:
        fits = isLowBitsMask(b.value);
        width = fits ? b.value + 1 : 0;
        break;
      }
      if (!fits)
        return llvm::make_error<ir::EvalFailure>(
            "the selector's block `" + ir::print(*pin.block) + "` is " +
                std::to_string(b.value) + " at step " +
                std::to_string(step->number),
            pin.block->loc.isValid() ? pin.block->loc : rule->loc);
    }
    plan->widths.push_back(width);
  }
  return llvm::Error::success();
}

llvm::Error RuleCounter::boundRanks(int64_t &first, int64_t &last) {
  // The guard's bounds on the rank narrow the senders at once.
  for (const RankBound &b : plan->rankBounds) {
    ir::EvalResult v = ir::evaluate(*b.bound, env);
    if (!v.ok())
      return evalFailure(*b.bound, v, "guard", 0);
    switch (b.op) {
    case ExprOp::Lt:
      last = std::min(last, v.value - 1);
      break;
    case ExprOp::Le:
      last = std::min(last, v.value);
      break;
    case ExprOp::Gt:
      first = std::max(first, v.value + 1);
      break;
    default: // Ge
      first = std::max(first, v.value);
      break;
    }
  }
  return llvm::Error::success();
}

llvm::Expected<bool> RuleCounter::stepCongruence() {
  plan->modulus = 1;
  plan->residue = 0;
  plan->stepGuard = plan->guard ? &*plan->guard : nullptr;
  if (!plan->congruent)
    return true;
  int64_t at[3] = {0, 0, 0}; // flip, divisor, value
  const ExprRef *parts[3] = {&plan->congruent->flip, &plan->congruent->divisor,
                             &plan->congruent->value};
  for (int i = 0; i < 3; ++i) {
    if (!*parts[i])
      continue;
    ir::EvalResult v = ir::evaluate(**parts[i], env);
    if (!v.ok())
      return evalFailure(**parts[i], v, "guard", 0);
    at[i] = v.value;
  }
  int64_t divisor = at[1], value = at[2];
  int64_t modulus = plan->congruent->masked ? divisor + 1 : divisor;
  bool usable = divisor >= 0 && divisor < (int64_t(1) << 40) && modulus > 0 &&
                (!plan->congruent->masked || (divisor & (divisor + 1)) == 0);
  if (!usable) {
    plan->stepGuard = &*plan->wholeGuard;
    return true;
  }
  // A remainder (low bits) outside 0..modulus - 1 is no rank's.
  if (value < 0 || value >= modulus)
    return false;
  plan->modulus = modulus;
  plan->residue = plan->congruent->masked ? (value ^ at[0]) & divisor : value;
  return true;
}

llvm::Error RuleCounter::ranks(int64_t rlo, int64_t rhi) {
  lo[ir::SlotRank] = rlo;
  hi[ir::SlotRank] = rhi;
  const int64_t senders =
      countCongruent(rlo, rhi, plan->modulus, plan->residue);
  if (senders == 0)
    return llvm::Error::success();
  if (plan->stepGuard) {
    if (auto err = tick(*plan->stepGuard))
      return err;
    ValueRange g = plan->stepGuard->evaluate(lo, hi);
    if (!g.mayFail && g.isZero())
      return llvm::Error::success();
    if (rlo == rhi && !(!g.mayFail && g.excludesZero())) {
      env[ir::SlotRank] = rlo;
      ir::EvalResult exact = ir::evaluate(*rule->guard, env);
      if (!exact.ok())
        return evalFailure(*rule->guard, exact, "guard", rlo);
      if (exact.value == 0)
        return llvm::Error::success();
    } else if (rlo != rhi && (g.mayFail || !g.excludesZero())) {
      int64_t mid = rlo + (rhi - rlo) / 2;
      if (auto err = ranks(rlo, mid))
        return err;
      return ranks(mid + 1, rhi);
    }
  }
  llvm::Expected<std::optional<int64_t>> chunks = uniform(rlo, rhi);
  if (!chunks)
    return chunks.takeError();
  if (*chunks) {
    out->messages += senders;
    out->maxChunks = std::max(out->maxChunks, **chunks);
    return llvm::Error::success();
  }
  int64_t mid = rlo + (rhi - rlo) / 2;
  if (auto err = ranks(rlo, mid))
    return err;
  return ranks(mid + 1, rhi);
}

llvm::Expected<std::optional<int64_t>> RuleCounter::uniform(int64_t rlo,
                                                            int64_t rhi) {
  if (plan->wholeBuffer)
    return std::optional<int64_t>(static_cast<int64_t>(sem.universeSize()));
  lo[ir::SlotRank] = rlo;
  hi[ir::SlotRank] = rhi;
  simulate::Semantics::Box u = sem.universeBox();
  Box box;
  box[0] = {u.oLo, u.oHi};
  box[1] = {u.dLo, u.dHi};
  box[2] = {u.kLo, u.kHi};
  for (size_t i = 0; i < plan->pins.size(); ++i) {
    llvm::Expected<PinFit> fit =
        fitPin(i, box[boxCoordinate(plan->pins[i].slot)], rlo, rhi);
    if (!fit)
      return fit.takeError();
    if (*fit == PinFit::Undecided)
      return std::nullopt;
    if (*fit == PinFit::NoChunk)
      return std::optional<int64_t>(0); // no rank names a chunk
  }
  selector = &*plan->selector;
  selectorExpr = plan->reduced.get();
  if (!plan->cyclic.empty()) {
    llvm::Expected<CyclicFit> counted = countCyclicRanges(box);
    if (!counted)
      return counted.takeError();
    if (*counted == CyclicFit::Undecided)
      return std::nullopt;
    if (*counted == CyclicFit::Whole) {
      selector = &*plan->wholeSelector;
      selectorExpr = plan->whole.get();
    }
  }
  // A shift's dest follows its origin's range.
  if (sem.destFollowsOrigin()) {
    std::tie(box[1].lo, box[1].hi) = sem.destBounds(box[0].lo, box[0].hi);
    box[1].collapsed = true;
  }
  int64_t total = 0;
  llvm::Expected<bool> decided = search(box, total);
  if (!decided)
    return decided.takeError();
  if (!*decided)
    return std::nullopt;
  return std::optional<int64_t>(total);
}

llvm::Expected<RuleCounter::PinFit>
RuleCounter::fitPin(size_t i, Coordinate &c, int64_t rlo, int64_t rhi) {
  const Pin &pin = plan->pins[i];
  if (auto err = tick(*plan->pinValues[i]))
    return err;
  ValueRange v = plan->pinValues[i]->evaluate(lo, hi);
  // One rank names one value: exact, where intervals may not say it.
  if (v.mayFail || (rlo == rhi && v.lo != v.hi)) {
    if (rlo != rhi)
      return PinFit::Undecided;
    env[ir::SlotRank] = rlo;
    ir::EvalResult exact = ir::evaluate(*pin.value, env);
    if (!exact.ok())
      return evalFailure(*pin.value, exact, "selector", rlo);
    v = {exact.value, exact.value, false};
  }
  const int64_t width = plan->widths[i];
  if (pin.grouping == Grouping::LowBits) {
    std::optional<int64_t> n = lowBitsCount(c.lo, c.hi, width, v);
    if (!n)
      return PinFit::Undecided;
    if (*n == 0)
      return PinFit::NoChunk;
    c.collapsed = true;
    c.factor = *n;
    return PinFit::Fits;
  }
  // The block each rank names, and its hull over the range.
  __int128 first = static_cast<__int128>(v.lo) * width;
  __int128 last = static_cast<__int128>(v.hi) * width + width - 1;
  if (last < c.lo || first > c.hi)
    return PinFit::NoChunk;
  if (v.lo == v.hi) { // one block for the whole range: a narrower box
    c.lo = static_cast<int64_t>(std::max<__int128>(first, c.lo));
    c.hi = static_cast<int64_t>(std::min<__int128>(last, c.hi));
    if (!pin.block)
      c.collapsed = true;
    return PinFit::Fits;
  }
  // Blocks that move with the rank: each within the coordinate's range,
  // and read no further (an exact pin's coordinate is substituted).
  if (first < c.lo || last > c.hi || (pin.block && plan->reducedReads[i]))
    return PinFit::Undecided;
  c.lo = static_cast<int64_t>(first);
  c.hi = static_cast<int64_t>(last);
  c.collapsed = true;
  c.factor = width;
  return PinFit::Fits;
}

llvm::Expected<RuleCounter::CyclicFit>
RuleCounter::countCyclicRanges(Box &box) {
  Box counted = box;
  for (size_t i = 0; i < plan->cyclic.size(); ++i) {
    const CyclicRange &range = plan->cyclic[i];
    Coordinate &c = counted[boxCoordinate(range.slot)];
    ir::EvalResult m = ir::evaluate(*range.modulus, env);
    ir::EvalResult bound = ir::evaluate(*range.bound, env);
    // The whole selector reports what does not evaluate.
    if (!m.ok() || !bound.ok() || m.value <= 0 || c.collapsed || c.lo < 0 ||
        c.hi > INT64_MAX / 4 || m.value > INT64_MAX / 4)
      return CyclicFit::Whole;
    if (auto err = tick(*plan->cyclicOffsets[i]))
      return err;
    // From an offset in -m..lo + m the sum is neither negative (where C's %
    // is) nor overflowing.
    ValueRange offset = plan->cyclicOffsets[i]->evaluate(lo, hi);
    if (offset.mayFail || offset.hi > c.lo + m.value || offset.lo < -m.value)
      return CyclicFit::Whole;
    const auto span = distances(range.op, bound.value, m.value);
    // Every distance as often (whole periods), or none or all of them pass:
    // as many for every offset.
    if ((c.hi - c.lo + 1) % m.value == 0 || span.first > span.second ||
        (span.first == 0 && span.second == m.value - 1))
      c.factor = countDistances(c.lo, c.hi, 0, m.value, span);
    else if (offset.lo == offset.hi)
      c.factor = countDistances(c.lo, c.hi, offset.lo, m.value, span);
    else
      return lo[ir::SlotRank] == hi[ir::SlotRank] ? CyclicFit::Whole
                                                  : CyclicFit::Undecided;
    c.collapsed = true;
  }
  box = counted;
  return CyclicFit::Counted;
}

llvm::Expected<bool> RuleCounter::search(Box box, int64_t &total) {
  const unsigned slots[3] = {ir::SlotOrigin, ir::SlotDest, ir::SlotIndex};
  for (int i = 0; i < 3; ++i) {
    lo[slots[i]] = box[i].lo;
    hi[slots[i]] = box[i].hi;
  }
  if (auto err = tick(*selector))
    return err;
  ValueRange v = selector->evaluate(lo, hi);
  auto size = [&] {
    int64_t n = 1;
    for (const Coordinate &c : box)
      n *= c.collapsed ? c.factor : c.hi - c.lo + 1;
    return n;
  };
  if (!v.mayFail && v.excludesZero()) {
    total += size();
    return true;
  }
  if (!v.mayFail && v.isZero())
    return true;
  for (int i = 0; i < 3; ++i) {
    Coordinate &c = box[i];
    if (c.collapsed || c.lo == c.hi)
      continue;
    Box left = box, right = box;
    left[i].hi = c.lo + (c.hi - c.lo) / 2;
    right[i].lo = left[i].hi + 1;
    if (i == 0 && sem.destFollowsOrigin()) {
      std::tie(left[1].lo, left[1].hi) = sem.destBounds(left[0].lo, left[0].hi);
      std::tie(right[1].lo, right[1].hi) =
          sem.destBounds(right[0].lo, right[0].hi);
    }
    llvm::Expected<bool> a = search(left, total);
    if (!a || !*a)
      return a;
    return search(right, total);
  }
  // One chunk per rank: exact for a single rank, else undecided.
  if (lo[ir::SlotRank] != hi[ir::SlotRank])
    return false;
  for (int i = 0; i < 3; ++i)
    env[slots[i]] = box[i].lo;
  env[ir::SlotRank] = lo[ir::SlotRank];
  ir::EvalResult exact = ir::evaluate(*selectorExpr, env);
  if (!exact.ok())
    return evalFailure(*rule->selector, exact, "selector", env[ir::SlotRank]);
  if (exact.value != 0)
    total += size();
  return true;
}

/// Whether a rule without a selector sends every chunk
/// (RuleCounter::wholeBufferIsUniverse): in a reduction, or in a broadcast
/// without selectors.
bool sendsEveryChunkWhole(const ir::Schedule &schedule) {
  bool anySelector = false;
  ir::forEachRule(schedule.body, [&](const ir::TransferRule &rule) {
    anySelector |= bool(rule.selector);
  });
  return ir::isReduction(schedule.collective.kind) ||
         (schedule.collective.kind == ir::CollectiveKind::Broadcast &&
          !anySelector);
}

/// Adds step `s` to `cost`. Steps of one IR step alike in a row
/// (`sameIrStep`; the same words, messages or none) are one entry: a ring
/// of 2^20 ranks has 2^20 - 1 steps.
void addStep(ScheduleCost &cost, StepCost s, bool sameIrStep) {
  if (s.messages > 0)
    ++cost.startups;
  cost.words += s.words;
  if (!cost.steps.empty() && sameIrStep) {
    StepCost &last = cost.steps.back();
    if ((last.messages > 0) == (s.messages > 0) && last.words == s.words) {
      ++last.count;
      last.messages = std::max(last.messages, s.messages);
      last.fewestMessages = std::min(last.fewestMessages, s.messages);
      last.loopVarsLast = std::move(s.loopVars);
      return;
    }
  }
  s.fewestMessages = s.messages;
  cost.steps.push_back(std::move(s));
}

} // namespace

llvm::Expected<ScheduleCost>
collc::cost::costFromRules(const ir::Schedule &schedule,
                           llvm::ArrayRef<int64_t> params, PortModel ports) {
  std::optional<simulate::Semantics> sem;
  llvm::DenseMap<const ir::TransferRule *, RulePlan> plans;
  uint64_t evaluations = 0;
  ScheduleCost cost;
  cost.params.assign(params.begin(), params.end());
  cost.ports = ports;
  int64_t chunksPerBlock = 1;
  const ir::Step *lastStep = nullptr;
  const bool wholeBufferIsUniverse = sendsEveryChunkWhole(schedule);
  llvm::Expected<ir::Instance> shape = ir::walkSteps(
      schedule, params,
      [&](const ir::InstanceStep &step) -> llvm::Error {
        StepCount counted;
        RuleCounter counter(*sem, evaluations);
        for (const ir::TransferRule &rule : step.step->rules) {
          // A buffer that starts empty holds what it has received.
          counter.wholeBufferIsUniverse =
              wholeBufferIsUniverse && !schedule.startsEmpty(rule.fromBuffer);
          auto it = plans.find(&rule);
          if (it == plans.end())
            it = plans.try_emplace(&rule, plan(rule, *sem)).first;
          if (auto err = counter.count(rule, it->second, step, counted))
            return err;
        }
        StepCost s;
        s.step = step.number;
        s.messages = counted.messages;
        // Without congestion every channel of a step carries at most one
        // message: the most loaded carries the largest.
        s.maxLoad = counted.messages > 0 ? 1 : 0;
        s.words = Fraction(counted.maxChunks, chunksPerBlock);
        s.loopVars = step.loopVars;
        addStep(cost, std::move(s), lastStep == step.step);
        lastStep = step.step;
        return llvm::Error::success();
      },
      nullptr,
      [&](const ir::Instance &instance) -> llvm::Error {
        llvm::Expected<simulate::Semantics> made = simulate::Semantics::make(
            instance.collective, instance.p, instance.chunks);
        if (!made)
          return made.takeError();
        sem.emplace(std::move(*made));
        chunksPerBlock = instance.chunks;
        cost.p = instance.p;
        cost.collective = instance.collective;
        return llvm::Error::success();
      });
  if (!shape)
    return shape.takeError();
  cost.valid = true;
  return cost;
}
