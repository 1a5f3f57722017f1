// The induction prover (docs/proofs.md): what each rank holds is stated
// for every size at once, the collective's pre- and post-conditions from
// collc/Meaning.h, each loop's by its invariant; a step's effect is
// InductionSteps.cpp's.

#include "prove/InductionState.h"

#include "llvm/ADT/STLExtras.h"

#include <set>

using namespace collc;
using namespace collc::prove;
using namespace collc::prove::detail;

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
  if (std::optional<std::string> refusal = setUpParameters(top, rangeAt))
    return refusal;
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
  shiftAmountInDigits(top, rangeAt);
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
  return setUpRules();
}

std::optional<std::string>
Inductor::setUpParameters(Frame &top, std::vector<size_t> &rangeAt) {
  for (const ir::Parameter &param : schedule.params) {
    auto range = llvm::find_if(
        options.ranges, [&](const auto &r) { return r.name == param.name; });
    if (range == options.ranges.end())
      return "no range for parameter '" + param.name + "'";
    Term v = var(param.name);
    top.env[param.slot] = v;
    rangeAt.push_back(top.assumptions.size());
    top.assumptions.push_back(sge(v, range->lo) && sle(v, range->hi));
    top.named.push_back({param.name, v});
  }
  return std::nullopt;
}

void Inductor::shiftAmountInDigits(Frame &top,
                                   const std::vector<size_t> &rangeAt) {
  std::optional<size_t> i = amountParameter(schedule);
  if (!i || extents.empty())
    return;
  const ir::Parameter &param = schedule.params[*i];
  auto range = llvm::find_if(
      options.ranges, [&](const auto &r) { return r.name == param.name; });
  if (range->lo < 0)
    return;
  DigitNumber q = numberVariable(ctx, param.name, width, extents);
  top.env[param.slot] = q.value;
  top.assumptions[rangeAt[*i]] =
      q.exact && sge(q.value, range->lo) && sle(q.value, range->hi);
  for (auto &[name, value] : top.named)
    if (name == param.name)
      value = q.value;
}

std::optional<std::string> Inductor::setUpRules() {
  const bool powerOfTwo = sizeIsPowerOfTwo(schedule.topology.kind);
  std::optional<std::string> refusal;
  ir::forEachRule(schedule.body, [&](const ir::TransferRule &rule) {
    if (!reduction && rule.mode == ir::TransferMode::Reduce && !refusal)
      refusal = "a " + ir::collectiveKindName(schedule.collective.kind).str() +
                " schedule that folds is checked by simulation only";
    senders[&rule] = ir::sendersOf(rule, powerOfTwo);
  });
  return refusal;
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
  // Only reductions ask, where a chunk carries ranks, not its origin's copy.
  meaning::Span<Term> from =
      meaning::carried(ir::meaningOf(schedule.collective.kind).carries, r, r,
                       ctx.bitVec(0, width), p - 1);
  return sge(f, from.lo) && sle(f, from.hi);
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
      if (schedule.startsEmpty(b))
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

std::vector<PropertyResult>
prove::proveByInduction(const ir::Schedule &schedule,
                        const InductionOptions &options) {
  return Inductor(schedule, options).run();
}
