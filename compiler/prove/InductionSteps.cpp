// The induction prover's steps: which rules fire, what a rank holds after
// a step (copied or folded), each step's causality, and a loop's invariant
// checked at entry, preserved by an iteration and assumed after it.

#include "prove/InductionState.h"

#include "llvm/ADT/STLExtras.h"

#include <set>

using namespace collc;
using namespace collc::prove;
using namespace collc::prove::detail;

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
  return universe(c) && (over ? st[buffer].over : st[buffer].under)(s, c, none);
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
    if (!(rule.selector ? checkSelectedSend(rule, fr, st)
                        : checkWholeSend(rule, fr, st)))
      return;
  }
  if (!reduction || failed())
    return;
  // Reductions: a chunk of a rank takes one copy, or folds that add
  // contributions it does not have yet.
  std::vector<Delivery> all = deliveries(step);
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = i; j < all.size(); ++j)
      if (all[i].buffer == all[j].buffer && !failed())
        checkTwoDeliveries(all[i], all[j], i == j, fr, st);
    if (all[i].rule->mode == ir::TransferMode::Reduce && !failed())
      checkRefold(all[i], fr, st);
  }
}

bool Inductor::checkWholeSend(const ir::TransferRule &rule, const Frame &fr,
                              const State &st) {
  // A message of everything the sender holds must not be empty. The
  // witness is a chunk a rank keeps once it has it: its own block, or the
  // first piece of the root's.
  if (reduction)
    return true;
  Term s = rankVar("sender");
  Chunk own{fixedOrigin ? ctx.bitVec(*fixedOrigin, width) : s,
            fixedDest ? ctx.bitVec(*fixedDest, width) : s,
            ctx.bitVec(0, width)};
  if (destFromOrigin())
    own.dest = destOf(own.origin);
  return obligation(
      Concern::Causality,
      "a rank may send everything it holds while holding "
      "nothing (or not its own first chunk)",
      fr, {fires(rule, fr, s), !held(st, rule.fromBuffer, s, own, false)},
      {{"sender", s}});
}

bool Inductor::checkSelectedSend(const ir::TransferRule &rule, const Frame &fr,
                                 const State &st) {
  Term s = rankVar("sender");
  Chunk c = freshChunk();
  std::vector<Term> env = envAt(fr, &s, &c, nullptr);
  auto shown = chunkShown(c);
  shown.insert(shown.begin(), {"sender", s});
  if (!obligation(Concern::Causality, "a selector is undefined", fr,
                  {fires(rule, fr, s), universe(c),
                   !ExprToSmt(ctx, env).translate(*rule.selector).defined},
                  shown))
    return false;
  return reduction ||
         obligation(Concern::Causality,
                    "a rank may send a chunk it does not hold", fr,
                    {fires(rule, fr, s), holds(*rule.selector, env),
                     universe(c), !held(st, rule.fromBuffer, s, c, false)},
                    shown);
}

void Inductor::checkTwoDeliveries(const Delivery &a, const Delivery &b,
                                  bool same, const Frame &fr, const State &st) {
  Term r = rankVar("r"), s1 = rankVar("sender"), s2 = rankVar("sender");
  Chunk c = freshChunk();
  std::vector<Term> terms = {arrives(a, fr, st, s1, r, c, true),
                             arrives(b, fr, st, s2, r, c, true)};
  if (same)
    terms.push_back(s1 != s2);
  auto shown = chunkShown(c);
  shown.insert(shown.begin(),
               {{"receiver", r}, {"sender", s1}, {"other sender", s2}});
  bool copies = a.rule->mode == ir::TransferMode::Copy ||
                b.rule->mode == ir::TransferMode::Copy;
  if (copies) {
    obligation(Concern::Correctness,
               "a chunk may receive a copy and another value in one step", fr,
               terms, shown);
    return;
  }
  Term f = rankVar("contributor");
  terms.push_back(st[a.rule->fromBuffer].over(s1, c, f));
  terms.push_back(st[b.rule->fromBuffer].over(s2, c, f));
  shown.push_back({"contributor", f});
  obligation(Concern::Correctness,
             "two folds of one step may add the same contribution", fr, terms,
             shown);
}

void Inductor::checkRefold(const Delivery &d, const Frame &fr,
                           const State &st) {
  Term r = rankVar("r"), s = rankVar("sender"), f = rankVar("contributor");
  Chunk c = freshChunk();
  auto shown = chunkShown(c);
  shown.insert(shown.begin(), {{"receiver", r}, {"sender", s}});
  shown.push_back({"contributor", f});
  obligation(Concern::Correctness,
             "a fold may add a contribution the value has already", fr,
             {arrives(d, fr, st, s, r, c, true),
              st[d.rule->fromBuffer].over(s, c, f), st[d.buffer].over(r, c, f)},
             shown);
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
      return fromSome(copies, r, c, &f) ||
             (!surelyCopied && old.over(r, c, f)) || fromSome(folds, r, c, &f);
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

/// A buffer the loop writes that no invariant of it describes, if any.
static std::optional<unsigned> bufferWithoutInvariant(const ir::Loop &loop) {
  std::set<unsigned> written;
  ir::forEachRule(loop.body, [&](const ir::TransferRule &rule) {
    for (const ir::Delivery &d : rule.into)
      written.insert(d.buffer);
  });
  for (unsigned b : written)
    if (!llvm::any_of(loop.invariants,
                      [&](const ir::Invariant &i) { return i.buffer == b; }))
      return b;
  return std::nullopt;
}

BufferState Inductor::invariantAt(const LoopEntry &at, const ir::Invariant &inv,
                                  const Term &k) {
  Frame fr = at.frame;
  fr.env[at.loop.slot] = k;
  const ExprRef holdsExpr = inv.holds;
  StateFn stated = [this, fr, holdsExpr](const Term &r, const Chunk &c,
                                         const Term &f) {
    return holds(*holdsExpr, envAt(fr, &r, &c, &f));
  };
  if (!reduction || !at.copiesOnly ||
      (schedule.contributorSlot &&
       ir::reads(*holdsExpr, *schedule.contributorSlot)))
    return {stated, stated};
  // In a reduction, an invariant that does not read `contributor` on a loop
  // that only copies (the all-gather or gather after a reduce-scatter in a
  // composition) names chunks whose value is final (the collective's
  // result). Like a copy collective's, it may name fewer than are: any
  // other chunk holds either the value it had before the loop or the final
  // one, so it surely has what both have, and at most what either has.
  BufferState entry = at.before[inv.buffer];
  auto finalOr = [this, stated](StateFn otherwise, bool surely) -> StateFn {
    return [this, stated, otherwise, surely](const Term &r, const Chunk &c,
                                             const Term &f) {
      Term final = wanted(r, f), kept = otherwise(r, c, f);
      return ite(stated(r, c, f), final,
                 surely ? kept && final : kept || final);
    };
  };
  return {finalOr(entry.under, true), finalOr(entry.over, false)};
}

bool Inductor::invariantsMatch(const LoopEntry &at, const Frame &where,
                               const Term &k, const State &actual,
                               const std::string &claimsTooMuch,
                               const std::string &leavesOut) {
  const std::string name =
      "the invariant of the loop over '" + at.loop.var + "'";
  for (const ir::Invariant &inv : at.loop.invariants) {
    Term r = rankVar("r"), f = rankVar("contributor");
    Chunk c = freshChunk();
    auto shown = chunkShown(c);
    shown.insert(shown.begin(), {"rank", r});
    if (reduction)
      shown.push_back({"contributor", f});
    BufferState stated = invariantAt(at, inv, k);
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
    if (!obligation(Concern::Causality, name + leavesOut, where, misses, shown))
      return false;
  }
  return true;
}

void Inductor::loop(const ir::Loop &loop, const Frame &fr, State &st) {
  if (std::optional<unsigned> b = bufferWithoutInvariant(loop))
    return unsupported("the loop over '" + loop.var + "' writes buffer '" +
                       schedule.buffers[*b].name +
                       "' and has no invariant for it");

  ExprToSmt outer(ctx, fr.env);
  SmtExpr lo = outer.translate(*loop.lo), hi = outer.translate(*loop.hi);
  Term nonEmpty = lo.defined && hi.defined && sle(lo.value, hi.value);
  Term first = loop.reverse ? hi.value : lo.value;
  Term past = loop.reverse ? lo.value - 1 : hi.value + 1;
  bool copiesOnly = true;
  ir::forEachRule(loop.body, [&](const ir::TransferRule &rule) {
    copiesOnly &= rule.mode == ir::TransferMode::Copy;
  });
  const LoopEntry at{loop, fr, st, copiesOnly};

  // Entry.
  Frame entry = fr;
  entry.assumptions.push_back(nonEmpty);
  entry.named.push_back({loop.var, first});
  if (!invariantsMatch(at, entry, first, st,
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
    inside[inv.buffer] = invariantAt(at, inv, k);
  walk(loop.body, body, inside);
  if (failed())
    return;
  if (!invariantsMatch(at, body, loop.reverse ? k - 1 : k + 1, inside,
                       " is not preserved: after an iteration it claims a "
                       "chunk the rank does not hold",
                       " is not preserved: after an iteration it leaves out a "
                       "contribution"))
    return;

  // After the loop: the invariant past the last value, unless it ran no
  // iteration.
  for (const ir::Invariant &inv : loop.invariants) {
    BufferState end = invariantAt(at, inv, past);
    BufferState entry = at.before[inv.buffer];
    st[inv.buffer].under = [=](const Term &r, const Chunk &c, const Term &f) {
      return ite(nonEmpty, end.under(r, c, f), entry.under(r, c, f));
    };
    if (reduction)
      st[inv.buffer].over = [=](const Term &r, const Chunk &c, const Term &f) {
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
    obligation(Concern::Correctness, "a rank may lack a chunk of its result",
               fr,
               {isRank(r), universe(c), required(r, c),
                !st[0].under(r, c, ctx.bitVec(0, width))},
               shown);
    return;
  }
  shown.push_back({"contributor", f});
  if (!obligation(Concern::Correctness, "a result may lack a contribution", fr,
                  {isRank(r), universe(c), required(r, c), wanted(r, f),
                   !st[0].under(r, c, f)},
                  shown))
    return;
  obligation(Concern::Correctness,
             "a result may include a contribution it must not", fr,
             {isRank(r), universe(c), required(r, c), isRank(f), !wanted(r, f),
              st[0].over(r, c, f)},
             shown);
}
