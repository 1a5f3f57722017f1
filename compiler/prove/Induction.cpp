#include "prove/Induction.h"
#include "prove/ExprToSmt.h"
#include "prove/MeshRanks.h"
#include "prove/Width.h"
#include "smt/Solver.h"
#include "smt/Term.h"
#include "topology/Topology.h"

#include "llvm/ADT/STLExtras.h"

#include <functional>
#include <map>
#include <optional>
#include <set>

using namespace collc;
using namespace collc::prove;
using ir::CollectiveKind;
using ir::Expr;
using ir::ExprOp;
using ir::ExprRef;
using smt::Term;
using verify::Property;
using verify::PropertyResult;
using verify::Status;

bool prove::hasInvariants(const ir::Schedule &schedule) {
  // A family of straight-line steps needs none: each step's effect is
  // stated once for every size.
  const bool straight = llvm::none_of(schedule.body, [](const auto &item) {
    return std::holds_alternative<std::shared_ptr<ir::Loop>>(item);
  });
  if (straight && schedule.isSymbolic() && !schedule.body.empty())
    return true;
  std::function<bool(const std::vector<ir::BodyItem> &)> any =
      [&](const std::vector<ir::BodyItem> &body) {
        for (const ir::BodyItem &item : body)
          if (const auto *loop = std::get_if<std::shared_ptr<ir::Loop>>(&item))
            if (!(*loop)->invariants.empty() || any((*loop)->body))
              return true;
        return false;
      };
  return any(schedule.body);
}

namespace {

struct Chunk {
  Term origin, dest, index;
};

/// Which ranks' data a buffer holds: `under` surely, `over` at most. Terms
/// from `under` may hold fresh variables read universally, so they appear
/// only negated in a query; those from `over` existentially, so only
/// positively. A copy collective's state ignores `f` and has no `over`.
using StateFn =
    std::function<Term(const Term &r, const Chunk &c, const Term &f)>;
struct BufferState {
  StateFn under, over;
};
using State = std::vector<BufferState>;

/// The values every query at one place in the body shares.
struct Frame {
  std::vector<Term> env; // parameters, p, loop variables by slot
  std::vector<Term> assumptions;
  std::vector<std::pair<std::string, Term>> named; // shown in failures
};

/// What a failed obligation is about.
enum class Concern { Causality, Correctness };

class Inductor {
public:
  Inductor(const ir::Schedule &schedule, const InductionOptions &options)
      : schedule(schedule), options(options) {
    solver.setVerbose(options.verbose, options.dumpSmt);
    solver.rememberIn(options.provedQueries);
  }

  std::vector<PropertyResult> run();

private:
  // --- set-up ---------------------------------------------------------------
  std::optional<std::string> setUp(Frame &top);
  void permutationIsBijection(const Frame &top);
  /// A violation the induction shows for certain (a permutation that is
  /// no bijection), beside `failure`.
  std::optional<verify::Counterexample> definite;
  unsigned chooseWidth(const ExprRef &numRanks);
  void requireBody(WidthAnalysis &w, const std::vector<ir::BodyItem> &body);

  // --- expressions ----------------------------------------------------------
  std::vector<Term> envAt(const Frame &fr, const Term *r, const Chunk *c,
                          const Term *f) const {
    std::vector<Term> env = fr.env;
    if (r)
      env[ir::SlotRank] = *r;
    if (c) {
      env[ir::SlotOrigin] = c->origin;
      env[ir::SlotDest] = c->dest;
      env[ir::SlotIndex] = c->index;
    }
    if (f && schedule.contributorSlot)
      env[*schedule.contributorSlot] = *f;
    return env;
  }
  /// `e` is defined and nonzero.
  Term holds(const Expr &e, const std::vector<Term> &env) {
    ExprToSmt tr(ctx, env);
    return tr.translate(e).defined && tr.nonzero(e);
  }
  Term var(const std::string &name) { return ctx.bitVecVar(name, width); }
  /// A fresh rank; on a mesh or a torus made from its coordinates
  /// (prove/MeshRanks.h).
  Term rankVar(const std::string &name) {
    return rankVariable(ctx, name, width, extents);
  }
  Term isRank(const Term &t) { return sge(t, 0) && slt(t, p); }
  Chunk freshChunk() {
    return {rankVar("origin"), rankVar("dest"), var("index")};
  }
  Term universe(const Chunk &c);
  /// Whether rank r holds chunk c by `h` (collc/Meaning.h); none: every
  /// chunk of the universe.
  std::optional<Term> holding(const meaning::Holding &h, const Term &r,
                              const Chunk &c);
  Term initial(const Term &r, const Chunk &c, const Term &f);
  Term required(const Term &r, const Chunk &c);
  Term wanted(const Term &r, const Term &f);

  // --- steps ----------------------------------------------------------------
  struct Delivery {
    const ir::TransferRule *rule;
    unsigned buffer;
    const ExprRef *when;
  };
  Term fires(const ir::TransferRule &rule, const Frame &fr, const Term &s);
  /// Sender s's delivery `d` reaches rank r with chunk c (reading `st`
  /// from below when `over` is false, from above when it is true).
  Term arrives(const Delivery &d, const Frame &fr, const State &st,
               const Term &s, const Term &r, const Chunk &c, bool over);
  Term held(const State &st, unsigned buffer, const Term &s, const Chunk &c,
            bool over);
  std::vector<Term> candidates(const ir::TransferRule &rule, const Frame &fr,
                               const Term &r);
  std::vector<Delivery> deliveries(const ir::Step &step) const;
  void checkStep(const ir::Step &step, const Frame &fr, const State &st);
  State afterStep(const ir::Step &step, const Frame &fr, const State &st);
  void walk(const std::vector<ir::BodyItem> &body, const Frame &fr,
            State &st);
  void loop(const ir::Loop &loop, const Frame &fr, State &st);
  void checkResult(const Frame &fr, const State &st);

  // --- queries --------------------------------------------------------------
  /// Whether `terms` (with the frame's assumptions) is unsatisfiable;
  /// otherwise records why not, with the values of `shown`.
  bool obligation(Concern concern, const std::string &what, const Frame &fr,
                  std::vector<Term> terms,
                  std::vector<std::pair<std::string, Term>> shown);
  std::vector<std::pair<std::string, Term>>
  chunkShown(const Chunk &c) const;
  void unsupported(const std::string &why) {
    if (!failure)
      failure = {Concern::Causality, why};
  }
  bool failed() const { return failure.has_value(); }

  const ir::Schedule &schedule;
  const InductionOptions &options;
  smt::Context ctx;
  smt::Solver solver{ctx};
  unsigned width = smt::DefaultWidth;
  unsigned numSlots = 0;
  bool reduction = false;
  std::optional<int64_t> fixedOrigin, fixedDest;
  Term p, chunks;
  Term shift; // a shift's amount, in 0 .. p - 1
  Term amount; // a shift's amount as declared
  /// A mesh's or torus's extents, first dimension first, when a shift's
  /// destination is also stated in coordinates (see carried).
  std::vector<Term> radices;
  /// A mesh's or a torus's extents, for rankVar.
  std::vector<Term> extents;
  /// The coordinates of a shift's destination as mixed-radix addition: each
  /// of dest's digits is origin's plus the amount's plus the carry from the
  /// digit after it, mod the extent (row-major labels: the last coordinate
  /// is the least significant digit). True of dest = (origin + q) mod p for
  /// every q >= 0, since each stride divides p; stated beside dest, it spares
  /// the solver deriving it through products of symbolic extents, which it
  /// does not manage on tori up to 64 x 64 (000 §4.6.1, Figure 4.22: the row
  /// shift by q mod b, the compensating shift of the blocks that wrapped
  /// round, then the column shift by q / b mod a).
  Term carried(const Term &origin, const Term &dest) {
    const size_t n = radices.size();
    std::vector<std::optional<Term>> stride(n); // none: 1
    for (size_t i = n - 1; i > 0; --i)
      stride[i - 1] = stride[i] ? *stride[i] * radices[i] : radices[i];
    auto digit = [&](const Term &x, size_t i, bool top) {
      Term above = stride[i] ? sdiv(x, *stride[i]) : x;
      return i == 0 && !top ? above : srem(above, radices[i]);
    };
    Term holds = ctx.boolean(true);
    std::optional<Term> carry;
    for (size_t i = n; i-- > 0;) {
      Term sum = digit(origin, i, false) + digit(amount, i, true);
      if (carry)
        sum = sum + *carry;
      // Two digits and a carry stay below twice the extent: the wrapped
      // sum is a subtraction, not a divider.
      const Term wraps = sge(sum, radices[i]);
      holds =
          holds && digit(dest, i, false) == ite(wraps, sum - radices[i], sum);
      carry = ite(wraps, ctx.bitVec(1, width), ctx.bitVec(0, width));
    }
    return holds;
  }
  bool shiftNeverNegative = true; // by its range, which chooseWidth reads
  /// Where a shift takes the block of `origin`, a rank: (origin + shift)
  /// mod p, without a division, since the sum is below 2p.
  Term shifted(const Term &origin) {
    Term sum = origin + shift;
    return ite(sge(sum, p), sum - p, sum);
  }
  /// The slots a permutation's `to` is read in: p and the parameters.
  std::vector<Term> collectiveEnv;
  /// Where a shift or a permutation takes the block of `origin`. That a
  /// permutation is a bijection of the ranks is proved apart from the
  /// schedule (prove/Permutation.h).
  Term destOf(const Term &origin) {
    if (schedule.collective.kind != CollectiveKind::Permute)
      return shifted(origin);
    std::vector<Term> env = collectiveEnv;
    env[ir::SlotRank] = origin;
    return ExprToSmt(ctx, env).translate(*schedule.collective.permuteTo).value;
  }
  bool destFromOrigin() const {
    return ir::meaningOf(schedule.collective.kind).destFromOrigin();
  }
  std::map<const ir::TransferRule *, std::vector<ExprRef>> senders;
  /// What candidates() defined since the last query (see there).
  std::vector<Term> definitions;
  std::optional<std::pair<Concern, std::string>> failure;
};

// --- set-up -----------------------------------------------------------------

std::optional<std::string> Inductor::setUp(Frame &top) {
  const ir::Collective &coll = schedule.collective;
  reduction = ir::isReduction(coll.kind);
  if (reduction && !coll.commutative)
    return "the fold order of a non-commutative reduction is checked by "
           "simulation only";
  const meaning::Conditions &means = ir::meaningOf(coll.kind);
  fixedOrigin = means.fixedOrigin(coll.root);
  fixedDest = means.fixedDest(coll.root);

  ExprRef numRanks =
      symbolic::numRanks(schedule.topology.kind, schedule.topology.dims);
  if (!numRanks)
    return "the number of ranks of " +
           topologyKindName(schedule.topology.kind).str() +
           " has no closed form";

  numSlots = std::max<unsigned>(schedule.numSlots(), ir::NumFixedSlots);
  width = chooseWidth(numRanks);
  top.env.assign(numSlots, ctx.bitVec(0, width));
  std::vector<size_t> rangeAt; // each parameter's range in top.assumptions
  for (const ir::Parameter &param : schedule.params) {
    auto range = llvm::find_if(options.ranges, [&](const auto &r) {
      return r.name == param.name;
    });
    if (range == options.ranges.end())
      return "no range for parameter '" + param.name + "'";
    Term v = var(param.name);
    top.env[param.slot] = v;
    rangeAt.push_back(top.assumptions.size());
    top.assumptions.push_back(sge(v, range->lo) && sle(v, range->hi));
    top.named.push_back({param.name, v});
  }
  bool sizeIsParam = llvm::any_of(
      schedule.params, [](const ir::Parameter &q) { return q.name == "p"; });
  SmtExpr size = ExprToSmt(ctx, top.env).translate(*numRanks);
  p = size.value;
  top.assumptions.push_back(size.defined && sge(p, 1));
  top.env[ir::SlotSize] = p;
  if (!sizeIsParam)
    top.named.push_back({"p", p});
  extents = meshExtents(schedule.topology, top.env);
  for (const Term &extent : extents) // a topology has no empty dimension
    top.assumptions.push_back(sge(extent, 1));
  // A shift's amount on a mesh, read in coordinates (prove/MeshRanks.h).
  if (std::optional<size_t> i = amountParameter(schedule);
      i && !extents.empty()) {
    const ir::Parameter &param = schedule.params[*i];
    auto range = llvm::find_if(
        options.ranges, [&](const auto &r) { return r.name == param.name; });
    if (range->lo >= 0) {
      DigitNumber q = numberVariable(ctx, param.name, width, extents);
      top.env[param.slot] = q.value;
      top.assumptions[rangeAt[*i]] =
          q.exact && sge(q.value, range->lo) && sle(q.value, range->hi);
      for (auto &[name, value] : top.named)
        if (name == param.name)
          value = q.value;
    }
  }
  chunks = ctx.bitVec(1, width);
  if (schedule.chunks) {
    SmtExpr k = ExprToSmt(ctx, top.env).translate(*schedule.chunks);
    chunks = k.value;
    top.assumptions.push_back(k.defined && sge(chunks, 1));
  }
  // A shift's amount, reduced mod p into 0 .. p - 1 as an instance reduces
  // it; one division when the amount is never negative.
  amount = ctx.bitVec(schedule.collective.shift, width);
  if (const ir::ExprRef &q = schedule.collective.shiftOf) {
    SmtExpr value = ExprToSmt(ctx, top.env).translate(*q);
    top.assumptions.push_back(value.defined);
    amount = value.value;
  }
  shift = shiftNeverNegative ? srem(amount, p) : srem(srem(amount, p) + p, p);
  // A permutation reads r (its origin), p and the parameters.
  collectiveEnv = top.env;
  if (coll.kind == CollectiveKind::Shift && shiftNeverNegative)
    radices = extents;
  for (const ir::TransferRule *rule : [&] {
         std::vector<const ir::TransferRule *> all;
         std::function<void(const std::vector<ir::BodyItem> &)> collect =
             [&](const std::vector<ir::BodyItem> &body) {
               for (const ir::BodyItem &item : body) {
                 if (const auto *st = std::get_if<ir::Step>(&item)) {
                   for (const ir::TransferRule &r : st->rules)
                     all.push_back(&r);
                   continue;
                 }
                 collect(std::get<std::shared_ptr<ir::Loop>>(item)->body);
               }
             };
         collect(schedule.body);
         return all;
       }()) {
    if (!reduction && rule->mode == ir::TransferMode::Reduce)
      return "a " + ir::collectiveKindName(coll.kind).str() +
             " schedule that folds is checked by simulation only";
    senders[rule] =
        ir::sendersOf(*rule, sizeIsPowerOfTwo(schedule.topology.kind));
  }
  return std::nullopt;
}

unsigned Inductor::chooseWidth(const ExprRef &numRanks) {
  unsigned slots = numSlots;
  WidthAnalysis w(slots);
  for (const ir::Parameter &param : schedule.params) {
    auto range = llvm::find_if(options.ranges, [&](const auto &r) {
      return r.name == param.name;
    });
    if (range == options.ranges.end())
      continue;
    Interval i{range->lo, range->hi};
    w.require(i);
    w.setSlot(param.slot, i);
  }
  Interval size = w.require(*numRanks);
  size.lo = std::max<int64_t>(size.lo, 1);
  if (size.hi < size.lo)
    return smt::DefaultWidth;
  w.setSlot(ir::SlotSize, size);
  // Ranks, and sums of two of them (a shift's origin + q, t + m).
  Interval rank{0, size.hi - 1};
  int64_t shift = std::abs(schedule.collective.shift);
  shiftNeverNegative = schedule.collective.shift >= 0;
  if (schedule.collective.shiftOf) {
    Interval q = w.require(*schedule.collective.shiftOf);
    shift = std::max(std::abs(q.lo), std::abs(q.hi));
    shiftNeverNegative = q.lo >= 0;
  }
  w.require(Interval{-2 * size.hi - shift, 2 * size.hi + shift});
  for (unsigned slot : {unsigned(ir::SlotRank), unsigned(ir::SlotOrigin),
                        unsigned(ir::SlotDest)})
    w.setSlot(slot, rank);
  if (const ExprRef &to = schedule.collective.permuteTo)
    w.require(*to);
  if (schedule.contributorSlot)
    w.setSlot(*schedule.contributorSlot, rank);
  Interval k = schedule.chunks ? w.require(*schedule.chunks) : Interval{1, 1};
  w.setSlot(ir::SlotIndex, Interval{0, std::max<int64_t>(k.hi - 1, 0)});
  requireBody(w, schedule.body);
  return w.width();
}

void Inductor::requireBody(WidthAnalysis &w,
                           const std::vector<ir::BodyItem> &body) {
  for (const ir::BodyItem &item : body) {
    if (const auto *step = std::get_if<ir::Step>(&item)) {
      for (const ir::TransferRule &rule : step->rules) {
        if (rule.guard)
          w.require(*rule.guard);
        w.require(*rule.peer);
        if (rule.selector)
          w.require(*rule.selector);
        for (const ir::Delivery &d : rule.into)
          if (d.when)
            w.require(*d.when);
        for (const ExprRef &c :
             ir::sendersOf(rule, sizeIsPowerOfTwo(schedule.topology.kind)))
          w.require(*c);
      }
      continue;
    }
    const ir::Loop &loop = *std::get<std::shared_ptr<ir::Loop>>(item);
    Interval lo = w.require(*loop.lo), hi = w.require(*loop.hi);
    Interval k = lo.hull(hi);
    // The invariant is read one value past either end.
    k = Interval::fromWide(static_cast<__int128>(k.lo) - 1,
                           static_cast<__int128>(k.hi) + 1);
    w.require(k);
    w.setSlot(loop.slot, k);
    for (const ir::Invariant &inv : loop.invariants)
      w.require(*inv.holds);
    requireBody(w, loop.body);
  }
}

// --- the collective ---------------------------------------------------------

Term Inductor::universe(const Chunk &c) {
  Term origin = fixedOrigin ? c.origin == *fixedOrigin : isRank(c.origin);
  Term dest;
  if (fixedDest)
    dest = c.dest == *fixedDest;
  else if (destFromOrigin()) {
    // In coordinates the sum needs no remainder by p = a * b: the digits
    // say all that (origin + q) mod p does.
    dest = radices.empty() ? c.dest == destOf(c.origin)
                           : carried(c.origin, c.dest);
  } else
    dest = isRank(c.dest);
  return origin && dest && sge(c.index, 0) && slt(c.index, chunks);
}

std::optional<Term> Inductor::holding(const meaning::Holding &h, const Term &r,
                                      const Chunk &c) {
  // Within the universe, which fixes each other coordinate: an origin of
  // Source (pi^-1(r)) is a dest of r, which its rule says.
  std::optional<Term> t;
  auto also = [&](const Term &x) { t = t ? *t && x : x; };
  if (h.at == meaning::At::Root)
    also(r == schedule.collective.root);
  if (h.at == meaning::At::AfterFirst)
    also(r != 0);
  if (h.origin == meaning::Coord::Self)
    also(c.origin == r);
  if (h.dest == meaning::Coord::Self)
    also(c.dest == r);
  return t;
}

Term Inductor::initial(const Term &r, const Chunk &c, const Term &f) {
  std::optional<Term> held =
      holding(ir::meaningOf(schedule.collective.kind).initial, r, c);
  if (!reduction)
    return held ? *held : ctx.boolean(true);
  // Each chunk a rank starts with carries its own contribution.
  return held ? *held && f == r : f == r;
}

Term Inductor::required(const Term &r, const Chunk &c) {
  std::optional<Term> held =
      holding(ir::meaningOf(schedule.collective.kind).required, r, c);
  return held ? *held : ctx.boolean(true);
}

Term Inductor::wanted(const Term &r, const Term &f) {
  switch (ir::meaningOf(schedule.collective.kind).carries) {
  case meaning::Carries::Prefix:
    return sge(f, 0) && sle(f, r);
  case meaning::Carries::Before:
    return sge(f, 0) && slt(f, r);
  default:
    return isRank(f);
  }
}

// --- steps ------------------------------------------------------------------

Term Inductor::fires(const ir::TransferRule &rule, const Frame &fr,
                     const Term &s) {
  std::vector<Term> env = envAt(fr, &s, nullptr, nullptr);
  ExprToSmt tr(ctx, env);
  Term guard = ctx.boolean(true);
  if (rule.guard)
    guard = tr.translate(*rule.guard).defined && tr.nonzero(*rule.guard);
  SmtExpr peer = tr.translate(*rule.peer);
  return isRank(s) && guard && peer.defined && isRank(peer.value) &&
         peer.value != s;
}

Term Inductor::held(const State &st, unsigned buffer, const Term &s,
                    const Chunk &c, bool over) {
  if (reduction) // every rank holds a value of every chunk, its own at first
    return universe(c);
  Term none = ctx.bitVec(0, width);
  return universe(c) &&
         (over ? st[buffer].over : st[buffer].under)(s, c, none);
}

Term Inductor::arrives(const Delivery &d, const Frame &fr, const State &st,
                       const Term &s, const Term &r, const Chunk &c,
                       bool over) {
  const ir::TransferRule &rule = *d.rule;
  std::vector<Term> env = envAt(fr, &s, &c, nullptr);
  Term sent = rule.selector ? universe(c) && holds(*rule.selector, env)
                            : held(st, rule.fromBuffer, s, c, over);
  Term when = *d.when ? holds(**d.when, env) : ctx.boolean(true);
  SmtExpr peer = ExprToSmt(ctx, env).translate(*rule.peer);
  return fires(rule, fr, s) && peer.value == r && when && sent;
}

std::vector<Term> Inductor::candidates(const ir::TransferRule &rule,
                                       const Frame &fr, const Term &r) {
  std::vector<Term> out;
  std::vector<Term> env = envAt(fr, &r, nullptr, nullptr);
  for (const ExprRef &e : senders[&rule]) {
    Term t = ExprToSmt(ctx, env).translate(*e).value;
    if (extents.empty() || t.constant() || ctx.digitsKnown(t)) {
      out.push_back(t);
      continue;
    }
    // On a mesh or a torus, a sender whose digits are known in no radix
    // (the sender of (r + b) % p is r - b or r - b + p; one known in some
    // radix, a 3-D mesh's plane, stays: made afresh it costs more)
    // as a rank made from its coordinates, equal to the candidate where
    // that is a rank (and no rank, so no sender, where it is not): its row
    // and column are then digits, not dividers. The definition goes into
    // the query that uses it.
    Term v = rankVar("sender");
    definitions.push_back(implies(isRank(t), v == t));
    out.push_back(ite(isRank(t), v, ctx.bitVec(-1, width)));
  }
  return out;
}

std::vector<Inductor::Delivery>
Inductor::deliveries(const ir::Step &step) const {
  std::vector<Delivery> out;
  for (const ir::TransferRule &rule : step.rules)
    for (const ir::Delivery &d : rule.into)
      out.push_back({&rule, d.buffer, &d.when});
  return out;
}

void Inductor::checkStep(const ir::Step &step, const Frame &fr,
                         const State &st) {
  for (const ir::TransferRule &rule : step.rules) {
    if (failed())
      return;
    if (!rule.selector) {
      // A message of everything the sender holds must not be empty. The
      // witness is a chunk a rank keeps once it has it: its own block, or
      // the first piece of the root's.
      if (reduction)
        continue;
      Term s = rankVar("sender");
      Chunk own{fixedOrigin ? ctx.bitVec(*fixedOrigin, width) : s,
                fixedDest ? ctx.bitVec(*fixedDest, width) : s,
                ctx.bitVec(0, width)};
      if (destFromOrigin())
        own.dest = destOf(own.origin);
      if (!obligation(Concern::Causality,
                      "a rank may send everything it holds while holding "
                      "nothing (or not its own first chunk)",
                      fr, {fires(rule, fr, s), !held(st, rule.fromBuffer, s, own, false)},
                      {{"sender", s}}))
        return;
      continue;
    }
    Term s = rankVar("sender");
    Chunk c = freshChunk();
    std::vector<Term> env = envAt(fr, &s, &c, nullptr);
    auto shown = chunkShown(c);
    shown.insert(shown.begin(), {"sender", s});
    if (!obligation(Concern::Causality, "a selector is undefined", fr,
                    {fires(rule, fr, s), universe(c),
                     !ExprToSmt(ctx, env).translate(*rule.selector).defined},
                    shown))
      return;
    if (!reduction &&
        !obligation(Concern::Causality,
                    "a rank may send a chunk it does not hold", fr,
                    {fires(rule, fr, s), holds(*rule.selector, env),
                     universe(c), !held(st, rule.fromBuffer, s, c, false)},
                    shown))
      return;
  }
  if (!reduction || failed())
    return;
  // Reductions: a chunk of a rank takes one copy, or folds that add
  // contributions it does not have yet.
  std::vector<Delivery> all = deliveries(step);
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = i; j < all.size(); ++j) {
      const Delivery &a = all[i], &b = all[j];
      if (a.buffer != b.buffer || failed())
        continue;
      Term r = rankVar("r"), s1 = rankVar("sender"), s2 = rankVar("sender");
      Chunk c = freshChunk();
      std::vector<Term> terms = {arrives(a, fr, st, s1, r, c, true),
                                 arrives(b, fr, st, s2, r, c, true)};
      if (i == j)
        terms.push_back(s1 != s2);
      auto shown = chunkShown(c);
      shown.insert(shown.begin(), {{"receiver", r}, {"sender", s1},
                                   {"other sender", s2}});
      bool copies = a.rule->mode == ir::TransferMode::Copy ||
                    b.rule->mode == ir::TransferMode::Copy;
      if (copies) {
        obligation(Concern::Correctness,
                   "a chunk may receive a copy and another value in one step",
                   fr, terms, shown);
        continue;
      }
      Term f = rankVar("contributor");
      terms.push_back(st[a.rule->fromBuffer].over(s1, c, f));
      terms.push_back(st[b.rule->fromBuffer].over(s2, c, f));
      shown.push_back({"contributor", f});
      obligation(Concern::Correctness,
                 "two folds of one step may add the same contribution", fr,
                 terms, shown);
    }
    const Delivery &d = all[i];
    if (d.rule->mode != ir::TransferMode::Reduce || failed())
      continue;
    Term r = rankVar("r"), s = rankVar("sender"), f = rankVar("contributor");
    Chunk c = freshChunk();
    auto shown = chunkShown(c);
    shown.insert(shown.begin(), {{"receiver", r}, {"sender", s}});
    shown.push_back({"contributor", f});
    obligation(Concern::Correctness,
               "a fold may add a contribution the value has already", fr,
               {arrives(d, fr, st, s, r, c, true),
                st[d.rule->fromBuffer].over(s, c, f),
                st[d.buffer].over(r, c, f)},
               shown);
  }
}

State Inductor::afterStep(const ir::Step &step, const Frame &fr,
                          const State &st) {
  std::vector<Delivery> all = deliveries(step);
  State next = st;
  for (unsigned b = 0; b < st.size(); ++b) {
    std::vector<Delivery> copies, folds;
    for (const Delivery &d : all)
      if (d.buffer == b)
        (d.rule->mode == ir::TransferMode::Copy ? copies : folds).push_back(d);
    if (copies.empty() && folds.empty())
      continue;
    // Each arrival from a named candidate sender, with what it brings.
    auto fromCandidates = [this, fr, st](const std::vector<Delivery> &ds,
                                         const Term &r, const Chunk &c,
                                         const Term &f, bool carries) {
      std::vector<Term> any;
      for (const Delivery &d : ds)
        for (const Term &w : candidates(*d.rule, fr, r)) {
          Term t = arrives(d, fr, st, w, r, c, false);
          if (carries)
            t = t && st[d.rule->fromBuffer].under(w, c, f);
          any.push_back(t);
        }
      return ctx.any(any);
    };
    if (!reduction) {
      BufferState old = st[b];
      next[b].under = [=, this](const Term &r, const Chunk &c, const Term &f) {
        return old.under(r, c, f) || fromCandidates(copies, r, c, f, false);
      };
      continue;
    }
    // Some sender, named by a fresh variable (read as "there is one").
    auto fromSome = [this, fr, st](const std::vector<Delivery> &ds,
                                   const Term &r, const Chunk &c,
                                   const Term *f) {
      std::vector<Term> any;
      for (const Delivery &d : ds) {
        Term s = rankVar("sender");
        Term t = arrives(d, fr, st, s, r, c, true);
        if (f)
          t = t && st[d.rule->fromBuffer].over(s, c, *f);
        any.push_back(t);
      }
      return ctx.any(any);
    };
    BufferState old = st[b];
    next[b].under = [=, this](const Term &r, const Chunk &c, const Term &f) {
      Term noCopy = !fromSome(copies, r, c, nullptr);
      return fromCandidates(copies, r, c, f, true) ||
             (noCopy &&
              (old.under(r, c, f) || fromCandidates(folds, r, c, f, true)));
    };
    next[b].over = [=, this](const Term &r, const Chunk &c, const Term &f) {
      Term surelyCopied = fromCandidates(copies, r, c, f, false);
      return fromSome(copies, r, c, &f) || (!surelyCopied && old.over(r, c, f)) ||
             fromSome(folds, r, c, &f);
    };
  }
  return next;
}

void Inductor::walk(const std::vector<ir::BodyItem> &body, const Frame &fr,
                    State &st) {
  for (const ir::BodyItem &item : body) {
    if (failed())
      return;
    if (const auto *step = std::get_if<ir::Step>(&item)) {
      checkStep(*step, fr, st);
      st = afterStep(*step, fr, st);
      continue;
    }
    loop(*std::get<std::shared_ptr<ir::Loop>>(item), fr, st);
  }
}

void Inductor::loop(const ir::Loop &loop, const Frame &fr, State &st) {
  std::set<unsigned> written;
  std::function<void(const std::vector<ir::BodyItem> &)> collect =
      [&](const std::vector<ir::BodyItem> &body) {
        for (const ir::BodyItem &item : body) {
          if (const auto *step = std::get_if<ir::Step>(&item)) {
            for (const ir::TransferRule &rule : step->rules)
              for (const ir::Delivery &d : rule.into)
                written.insert(d.buffer);
            continue;
          }
          collect(std::get<std::shared_ptr<ir::Loop>>(item)->body);
        }
      };
  collect(loop.body);
  for (unsigned b : written)
    if (!llvm::any_of(loop.invariants,
                      [&](const ir::Invariant &i) { return i.buffer == b; }))
      return unsupported("the loop over '" + loop.var +
                         "' writes buffer '" + schedule.buffers[b].name +
                         "' and has no invariant for it");

  ExprToSmt outer(ctx, fr.env);
  SmtExpr lo = outer.translate(*loop.lo), hi = outer.translate(*loop.hi);
  Term nonEmpty = lo.defined && hi.defined && sle(lo.value, hi.value);
  Term first = loop.reverse ? hi.value : lo.value;
  Term past = loop.reverse ? lo.value - 1 : hi.value + 1;
  // In a reduction, an invariant that does not read `contributor` on a loop
  // that only copies (the all-gather or gather after a reduce-scatter in a
  // composition) names chunks whose value is final (the collective's
  // result). Like a copy collective's, it may name fewer than are: any
  // other chunk holds either the value it had before the loop or the final
  // one, so it surely has what both have, and at most what either has.
  bool copiesOnly = true;
  ir::forEachRule(loop.body, [&](const ir::TransferRule &rule) {
    copiesOnly &= rule.mode == ir::TransferMode::Copy;
  });
  const State before = st;
  auto invariantAt = [this, &fr, &loop, &before,
                      copiesOnly](const ir::Invariant &inv,
                                  const Term &k) -> BufferState {
    Frame at = fr;
    at.env[loop.slot] = k;
    const ExprRef holdsExpr = inv.holds;
    StateFn stated = [this, at, holdsExpr](const Term &r, const Chunk &c,
                                           const Term &f) {
      return holds(*holdsExpr, envAt(at, &r, &c, &f));
    };
    if (!reduction || !copiesOnly ||
        (schedule.contributorSlot &&
         ir::reads(*holdsExpr, *schedule.contributorSlot)))
      return {stated, stated};
    BufferState entry = before[inv.buffer];
    auto finalOr = [this, stated](StateFn otherwise, bool surely) -> StateFn {
      return [this, stated, otherwise, surely](const Term &r, const Chunk &c,
                                               const Term &f) {
        Term final = wanted(r, f), kept = otherwise(r, c, f);
        return ite(stated(r, c, f), final,
                   surely ? kept && final : kept || final);
      };
    };
    return {finalOr(entry.under, true), finalOr(entry.over, false)};
  };
  std::string name = "the invariant of the loop over '" + loop.var + "'";

  // The invariant at loop value `at` against the state `actual`: it claims
  // only what is held and, for a reduction, leaves nothing out.
  auto matches = [&](const Frame &where, const Term &at, const State &actual,
                     const std::string &claimsTooMuch,
                     const std::string &leavesOut) {
    for (const ir::Invariant &inv : loop.invariants) {
      Term r = rankVar("r"), f = rankVar("contributor");
      Chunk c = freshChunk();
      auto shown = chunkShown(c);
      shown.insert(shown.begin(), {"rank", r});
      if (reduction)
        shown.push_back({"contributor", f});
      BufferState stated = invariantAt(inv, at);
      std::vector<Term> base = {isRank(r), universe(c)};
      if (reduction)
        base.push_back(isRank(f));
      std::vector<Term> claims = base;
      claims.push_back(stated.under(r, c, f));
      claims.push_back(!actual[inv.buffer].under(r, c, f));
      if (!obligation(Concern::Causality, name + claimsTooMuch, where, claims,
                      shown))
        return false;
      if (!reduction)
        continue;
      std::vector<Term> misses = base;
      misses.push_back(actual[inv.buffer].over(r, c, f));
      misses.push_back(!stated.over(r, c, f));
      if (!obligation(Concern::Causality, name + leavesOut, where, misses,
                      shown))
        return false;
    }
    return true;
  };

  // Entry.
  Frame entry = fr;
  entry.assumptions.push_back(nonEmpty);
  entry.named.push_back({loop.var, first});
  if (!matches(entry, first, st,
               " claims a chunk the rank does not hold on entry",
               " leaves out a contribution on entry"))
    return;

  // One iteration, from the invariant at k.
  Frame body = fr;
  Term k = var(loop.var);
  body.env[loop.slot] = k;
  body.assumptions.push_back(lo.defined && hi.defined && sle(lo.value, k) &&
                             sle(k, hi.value));
  body.named.push_back({loop.var, k});
  State inside = st;
  for (const ir::Invariant &inv : loop.invariants)
    inside[inv.buffer] = invariantAt(inv, k);
  walk(loop.body, body, inside);
  if (failed())
    return;
  if (!matches(body, loop.reverse ? k - 1 : k + 1, inside,
               " is not preserved: after an iteration it claims a chunk the "
               "rank does not hold",
               " is not preserved: after an iteration it leaves out a "
               "contribution"))
    return;

  // After the loop: the invariant past the last value, unless it ran no
  // iteration.
  for (const ir::Invariant &inv : loop.invariants) {
    BufferState end = invariantAt(inv, past);
    BufferState entry = before[inv.buffer];
    st[inv.buffer].under = [=](const Term &r, const Chunk &c, const Term &f) {
      return ite(nonEmpty, end.under(r, c, f), entry.under(r, c, f));
    };
    if (reduction)
      st[inv.buffer].over = [=](const Term &r, const Chunk &c,
                                const Term &f) {
        return ite(nonEmpty, end.over(r, c, f), entry.over(r, c, f));
      };
  }
}

void Inductor::checkResult(const Frame &fr, const State &st) {
  Term r = rankVar("r"), f = rankVar("contributor");
  Chunk c = freshChunk();
  auto shown = chunkShown(c);
  shown.insert(shown.begin(), {"rank", r});
  if (!reduction) {
    obligation(Concern::Correctness,
               "a rank may lack a chunk of its result", fr,
               {isRank(r), universe(c), required(r, c),
                !st[0].under(r, c, ctx.bitVec(0, width))},
               shown);
    return;
  }
  shown.push_back({"contributor", f});
  if (!obligation(Concern::Correctness,
                  "a result may lack a contribution", fr,
                  {isRank(r), universe(c), required(r, c), wanted(r, f),
                   !st[0].under(r, c, f)},
                  shown))
    return;
  obligation(Concern::Correctness,
             "a result may include a contribution it must not", fr,
             {isRank(r), universe(c), required(r, c), isRank(f),
              !wanted(r, f), st[0].over(r, c, f)},
             shown);
}

// --- queries ----------------------------------------------------------------

std::vector<std::pair<std::string, Term>>
Inductor::chunkShown(const Chunk &c) const {
  std::vector<std::pair<std::string, Term>> out;
  if (!fixedOrigin)
    out.push_back({"origin", c.origin});
  if (!fixedDest && !destFromOrigin())
    out.push_back({"dest", c.dest});
  if (schedule.chunks)
    out.push_back({"index", c.index});
  return out;
}

bool Inductor::obligation(Concern concern, const std::string &what,
                          const Frame &fr, std::vector<Term> terms,
                          std::vector<std::pair<std::string, Term>> shown) {
  if (failed())
    return false;
  terms.insert(terms.end(), fr.assumptions.begin(), fr.assumptions.end());
  // Each defines a fresh variable, so they hold in any case the rest has.
  terms.insert(terms.end(), definitions.begin(), definitions.end());
  definitions.clear();
  // What the query asks, so a slow one can be told from the others.
  if (options.verbose)
    *options.verbose << "induction: is there a case where " << what << "?\n";
  smt::Result res = solver.check("induction", terms, options.timeoutMs);
  if (res.isUnsat())
    return true;
  std::string why = what;
  if (res.isSat()) {
    std::string values;
    for (const auto &[name, term] : fr.named)
      values += (values.empty() ? "" : ", ") + name + " = " +
                std::to_string(res.value(term));
    for (const auto &[name, term] : shown)
      values += (values.empty() ? "" : ", ") + name + " " +
                std::to_string(res.value(term));
    why += " (" + values + ")";
  } else {
    why += "? the solver could not tell (" +
           (res.reason().empty() ? std::string("unknown") : res.reason()) +
           ")";
  }
  failure = {concern, why};
  return false;
}

void Inductor::permutationIsBijection(const Frame &top) {
  // What the post-condition presumes, over the whole range: each rank's
  // block goes to a rank, and no two to the same one (ir/Instantiate.h
  // checks the same of one instance). A case found is a definite
  // counterexample, not a weak invariant.
  const ir::Expr &to = *schedule.collective.permuteTo;
  Term a = var("a"), b = var("b");
  std::vector<Term> env = top.env;
  env[ir::SlotRank] = a;
  SmtExpr toA = ExprToSmt(ctx, env).translate(to);
  env[ir::SlotRank] = b;
  SmtExpr toB = ExprToSmt(ctx, env).translate(to);
  enum class Flaw { Undefined, Outside, Collision };
  auto ask = [&](std::vector<Term> terms, Flaw flaw) {
    terms.insert(terms.end(), top.assumptions.begin(), top.assumptions.end());
    smt::Result res = solver.check("permutation", terms, options.timeoutMs);
    if (res.isUnsat())
      return true;
    const std::string what =
        "the permutation `" + schedule.collective.permutationText() + "`";
    if (!res.isSat()) {
      failure = {Concern::Correctness,
                 what + " is a bijection? the solver could not tell (" +
                     res.reason() + ")"};
      return false;
    }
    verify::Counterexample cx;
    for (const auto &[name, term] : top.named) {
      if (name == "p")
        cx.p = res.value(term);
      else
        cx.params.push_back({name, res.value(term)});
    }
    if (!cx.p)
      cx.p = res.value(p);
    const int64_t ra = res.value(a), rb = res.value(b),
                  d = res.value(toA.value);
    cx.rank = ra;
    cx.message =
        flaw == Flaw::Collision
            ? what + " sends ranks " + std::to_string(ra) + " and " +
                  std::to_string(rb) + " both to " + std::to_string(d)
        : flaw == Flaw::Outside
            ? what + " sends rank " + std::to_string(ra) + " outside 0.." +
                  std::to_string(cx.p - 1)
            : what + " cannot be evaluated at rank " + std::to_string(ra);
    failure = {Concern::Correctness, cx.message};
    definite = std::move(cx);
    return false;
  };
  if (ask({isRank(a), !toA.defined}, Flaw::Undefined) &&
      ask({isRank(a), !isRank(toA.value)}, Flaw::Outside))
    ask({isRank(a), isRank(b), slt(a, b), toA.value == toB.value},
        Flaw::Collision);
}

std::vector<PropertyResult> Inductor::run() {
  Frame top;
  if (auto problem = setUp(top))
    unsupported(*problem);
  if (!failed() && schedule.collective.permuteTo)
    permutationIsBijection(top);
  State st;
  if (!failed()) {
    for (size_t b = 0; b < schedule.buffers.size(); ++b) {
      StateFn init = [this](const Term &r, const Chunk &c, const Term &f) {
        return initial(r, c, f);
      };
      if (schedule.buffers[b].startsEmpty)
        init = [this](const Term &, const Chunk &, const Term &) {
          return ctx.boolean(false);
        };
      st.push_back({init, reduction ? init : StateFn()});
    }
    walk(schedule.body, top, st);
  }
  bool causalityShown = !failed();
  if (!failed())
    checkResult(top, st);

  auto result = [&](Property property, bool shown) {
    PropertyResult r;
    r.property = property;
    r.method = "z3 (induction)";
    r.status = shown ? Status::Proved : Status::Unknown;
    if (!shown)
      r.detail = failure ? failure->second : "not shown";
    if (definite && property == Property::Correctness) {
      r.status = Status::Counterexample;
      r.counterexample = definite;
    }
    return r;
  };
  return {result(Property::Causality, causalityShown),
          result(Property::Correctness, !failed())};
}

} // namespace

std::vector<PropertyResult>
prove::proveByInduction(const ir::Schedule &schedule,
                        const InductionOptions &options) {
  return Inductor(schedule, options).run();
}
