// Sema: schedules, their bodies, loops, invariants and transfer rules.

#include "sema/Analyzer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cctype>
#include <cmath>
#include <limits>

namespace collc::sema {

bool Analyzer::scheduleTopology(const ast::ScheduleDecl &decl, ir::Schedule &s,
                                Scope &scope, std::optional<int64_t> &ranks) {
  std::optional<ir::TopologyTemplate> topo;
  if (const ast::Identifier *id = boost::get<ast::Identifier>(&decl.on)) {
    std::optional<Topology> concrete = concreteTopology(decl.on);
    if (!concrete)
      return false;
    topo = collc::templateOf(*concrete, locOf(*id));
    ranks = concrete->numRanks();
  } else {
    const ast::TopologyExpr &expr = boost::get<ast::TopologyExpr>(decl.on);
    topo = topologyTemplate(expr, &s, &scope);
    if (!topo)
      return false;
    if (s.params.empty()) {
      std::optional<Topology> concrete =
          makeTopology(*topo, diags, rangeOf(expr), &expr);
      if (!concrete)
        return false;
      ranks = concrete->numRanks();
    } else if (topo->kind == TopologyKind::Graph) {
      // Graph edges are fixed, so a graph family makes no sense (a tree
      // family is routed in closed form, symbolic::onRoute).
      diags.error(locOf(expr), "a graph's size must be a constant",
                  rangeOf(expr));
      return false;
    }
  }
  s.topology = *topo;
  return true;
}

bool Analyzer::parameterRanges(const ast::ScheduleDecl &decl, ir::Schedule &s) {
  for (const ast::ParamRange &range : decl.ranges) {
    auto param = llvm::find_if(s.params, [&](const ir::Parameter &p) {
      return p.name == range.name.name;
    });
    if (param == s.params.end()) {
      diags.error(locOf(range.name),
                  "'" + range.name.name +
                      "' is not a parameter of this schedule",
                  rangeOf(range.name));
      return false;
    }
    auto lo = constant(range.lo, "the range's lower bound");
    auto hi = constant(range.hi, "the range's upper bound");
    if (!lo || !hi)
      return false;
    if (*lo > *hi) {
      diags.error(locOf(range),
                  "empty range " + std::to_string(*lo) + " .. " +
                      std::to_string(*hi),
                  rangeOf(range));
      return false;
    }
    param->range = {*lo, *hi};
  }
  return true;
}

void Analyzer::scheduleDecl(const ast::ScheduleDecl &decl) {
  declare(decl.name.name, decl.name);
  ir::Schedule s;
  s.name = decl.name.name;
  s.loc = locOf(decl);
  s.slotNames = {"r", "p", "origin", "dest", "index"};
  s.buffers.push_back({"result"});

  Scope scope;
  scope.add("r", ir::SlotRank);
  scope.add("p", ir::SlotSize);

  std::optional<int64_t> ranks;
  if (!scheduleTopology(decl, s, scope, ranks))
    return;

  // A permutation family may range over more than its topology: a name its
  // `where` bounds and the topology does not (`shuffle(r, k % d, d)` over
  // k) is a parameter of the map (004 §5's k-step shuffles).
  std::vector<std::pair<unsigned, const ast::Identifier *>> mapParams;
  if (decl.what.kind.name == "permute" && !ranks)
    for (const ast::ParamRange &range : decl.ranges)
      if (!scope.find(range.name.name)) {
        newParameter(range.name, s, scope);
        mapParams.push_back({s.params.back().slot, &range.name});
      }
  std::optional<ir::Collective> c = collective(decl.what, ranks, &s, &scope);
  if (!c)
    return;
  for (const auto &[slot, name] : mapParams)
    if (!c->permuteTo || !ir::reads(*c->permuteTo, slot)) {
      diags.error(locOf(*name),
                  "'" + name->name +
                      "' is not a parameter of this schedule: neither its "
                      "topology nor its permutation reads it",
                  rangeOf(*name));
      return;
    }
  s.collective = *c;
  if (decl.algorithm) {
    if (!libraryAlgorithm(*decl.algorithm, c->kind, s.topology.kind,
                          topologyKindName(s.topology.kind)))
      return;
    s.algorithm = decl.algorithm->name;
  }

  if (!parameterRanges(decl, s))
    return;

  if (const auto *c = boost::get<ast::Composition>(&decl.body)) {
    // The parts may live in the library, which sema does not see: the
    // library stage looks them up and composes (library/Compose.h).
    s.parts.push_back({c->first.name, locOf(c->first), nullptr});
    for (const ast::Identifier &part : c->rest)
      s.parts.push_back({part.name, locOf(part), nullptr});
  } else if (!body(boost::get<std::vector<ast::BodyItem>>(decl.body), s, scope,
                   s.body, ranks)) {
    return;
  }
  program.schedules.push_back(std::move(s));
}

std::optional<unsigned> Analyzer::bufferIndex(const ir::Schedule &schedule,
                                              const ast::Identifier &id) {
  for (unsigned i = 0; i < schedule.buffers.size(); ++i)
    if (schedule.buffers[i].name == id.name)
      return i;
  diags.error(locOf(id),
              "unknown buffer '" + id.name + "'; declare it with 'buffer " +
                  id.name + ";'",
              rangeOf(id));
  return std::nullopt;
}

bool Analyzer::body(const std::vector<ast::BodyItem> &items,
                    ir::Schedule &schedule, Scope &scope,
                    std::vector<ir::BodyItem> &out,
                    std::optional<int64_t> ranks) {
  bool ok = true;
  for (const ast::BodyItem &item : items) {
    if (const ast::Step *st = boost::get<ast::Step>(&item)) {
      if (auto lowered = step(*st, schedule, scope, ranks))
        out.emplace_back(std::move(*lowered));
      else
        ok = false;
    } else if (const auto *fl =
                   boost::get<x3::forward_ast<ast::ForLoop>>(&item)) {
      ok = forLoop(fl->get(), schedule, scope, out, ranks) && ok;
    } else if (const ast::BufferDecl *bd = boost::get<ast::BufferDecl>(&item)) {
      ok = bufferDecl(*bd, schedule) && ok;
    } else if (const ast::StartsEmptyDecl *ed =
                   boost::get<ast::StartsEmptyDecl>(&item)) {
      ok = startsEmptyDecl(*ed, schedule) && ok;
    } else if (const ast::ChunksDecl *cd = boost::get<ast::ChunksDecl>(&item)) {
      ok = chunksDecl(*cd, schedule) && ok;
    }
  }
  return ok;
}

bool Analyzer::forLoop(const ast::ForLoop &loop, ir::Schedule &schedule,
                       Scope &scope, std::vector<ir::BodyItem> &out,
                       std::optional<int64_t> ranks) {
  auto l = std::make_shared<ir::Loop>();
  l->var = loop.var.name;
  l->reverse = loop.reverse;
  l->loc = locOf(loop);
  l->lo = lower(loop.lo, scope);
  l->hi = lower(loop.hi, scope);
  if (!l->lo || !l->hi)
    return false;
  l->lo = ir::fold(l->lo);
  l->hi = ir::fold(l->hi);
  if (!freshName(loop.var, scope))
    return false;
  l->slot = static_cast<unsigned>(schedule.slotNames.size());
  schedule.slotNames.push_back(loop.var.name);
  size_t mark = scope.size();
  scope.add(loop.var.name, l->slot, locOf(loop.var));
  bool ok = true;
  for (const ast::Invariant &inv : loop.invariants)
    ok &= invariant(inv, schedule, scope, *l);
  ok &= body(loop.body, schedule, scope, l->body, ranks);
  scope.truncate(mark);
  out.emplace_back(std::move(l));
  return ok;
}

bool Analyzer::bufferDecl(const ast::BufferDecl &decl, ir::Schedule &schedule) {
  bool ok = true;
  for (const ast::Identifier &name : decl.names) {
    if (llvm::any_of(schedule.buffers, [&](const ir::Buffer &b) {
          return b.name == name.name;
        })) {
      diags.error(locOf(name), "buffer '" + name.name + "' is already declared",
                  rangeOf(name));
      ok = false;
      continue;
    }
    schedule.buffers.push_back({name.name});
  }
  return ok;
}

bool Analyzer::startsEmptyDecl(const ast::StartsEmptyDecl &decl,
                               ir::Schedule &schedule) {
  bool ok = true;
  for (const ast::Identifier &name : decl.names) {
    std::optional<unsigned> b = bufferIndex(schedule, name);
    if (!b) {
      ok = false;
      continue;
    }
    ir::Buffer &buffer = schedule.buffers[*b];
    if (buffer.startsEmpty) {
      diags.error(locOf(name),
                  "buffer '" + name.name + "' is already said to start empty",
                  rangeOf(name));
      diags.note(buffer.emptyLoc, "said here");
      ok = false;
      continue;
    }
    buffer.startsEmpty = true;
    buffer.emptyLoc = locOf(name);
  }
  return ok;
}

bool Analyzer::chunksDecl(const ast::ChunksDecl &decl, ir::Schedule &schedule) {
  if (schedule.chunks) {
    diags.error(locOf(decl), "the chunk count is already given", rangeOf(decl));
    return false;
  }
  // The chunk count may depend on the size and parameters only.
  Scope sizes;
  sizes.add("p", ir::SlotSize);
  for (const ir::Parameter &param : schedule.params)
    sizes.add(param.name, param.slot);
  ExprRef e = lower(decl.count, sizes);
  if (!e)
    return false;
  e = ir::fold(e);
  if (e->isConst() && e->value < 1) {
    diags.error(locOf(decl),
                "the chunk count must be at least 1, got " +
                    std::to_string(e->value),
                rangeOf(decl));
    return false;
  }
  schedule.chunks = e;
  return true;
}

std::optional<ir::Step> Analyzer::step(const ast::Step &st,
                                       ir::Schedule &schedule, Scope &scope,
                                       std::optional<int64_t> ranks) {
  ir::Step out;
  out.loc = locOf(st);
  if (st.label)
    out.name = st.label->name;
  bool ok = true;
  for (const ast::StepItem &item : st.transfers) {
    if (const auto *t = boost::get<ast::Transfer>(&item)) {
      if (auto rule = transfer(*t, schedule, scope, ranks))
        out.rules.push_back(std::move(*rule));
      else
        ok = false;
    } else {
      ok &= ruleLoop(boost::get<ast::RuleLoop>(item), schedule, scope, ranks,
                     out.rules);
    }
  }
  if (!ok)
    return std::nullopt;
  return out;
}

/// The values a parameter can take in any member of a family: a hypercube's
/// dimension is at most 20 (maxRanks ranks), any other size at most
/// maxRanks.
static std::pair<int64_t, int64_t> parameterLimits(const ir::Schedule &s,
                                                   unsigned slot) {
  for (const ir::ExprRef &d : s.topology.dims)
    if (d->op == ir::ExprOp::Var && d->slot == slot &&
        s.topology.kind == TopologyKind::Hypercube)
      return {1, llvm::Log2_64(maxRanks)};
  return {1, maxRanks};
}

bool Analyzer::invariant(const ast::Invariant &inv, ir::Schedule &schedule,
                         Scope &scope, ir::Loop &loop) {
  unsigned buffer = 0;
  if (inv.buffer) {
    auto b = bufferIndex(schedule, *inv.buffer);
    if (!b)
      return false;
    buffer = *b;
  }
  if (llvm::any_of(loop.invariants, [&](const ir::Invariant &i) {
        return i.buffer == buffer;
      })) {
    diags.error(locOf(inv),
                "buffer '" + schedule.buffers[buffer].name +
                    "' already has an invariant on this loop",
                rangeOf(inv));
    return false;
  }
  if (!schedule.contributorSlot) {
    schedule.contributorSlot = static_cast<unsigned>(schedule.slotNames.size());
    schedule.slotNames.push_back("contributor");
  }
  size_t mark = scope.size();
  scope.add("origin", ir::SlotOrigin);
  scope.add("dest", ir::SlotDest);
  scope.add("index", ir::SlotIndex);
  scope.add("contributor", *schedule.contributorSlot);
  ExprRef holds = lower(inv.holds, scope);
  scope.truncate(mark);
  if (!holds)
    return false;
  holds = ir::fold(holds);
  if (!ir::isReduction(schedule.collective.kind) &&
      ir::reads(*holds, *schedule.contributorSlot)) {
    diags.error(locOf(locatedOf(inv.holds)),
                "'contributor' names a contribution to a reduction; a "
                "chunk of " +
                    ir::collectiveKindName(schedule.collective.kind).str() +
                    " holds its origin's data only",
                rangeOf(locatedOf(inv.holds)));
    return false;
  }
  loop.invariants.push_back({buffer, holds, locOf(inv)});
  return true;
}

bool Analyzer::freshName(const ast::Identifier &var, const Scope &scope) {
  const Scope::Entry *e = scope.find(var.name);
  if (!e)
    return true;
  diags.error(locOf(var), "'" + var.name + "' is already defined",
              rangeOf(var));
  if (e->loc.isValid())
    diags.note(e->loc, "'" + var.name + "' defined here");
  else
    diags.note(locOf(var),
               "'r' is the sending rank and 'p' the number of ranks");
  return false;
}

/// The hull of lo .. hi over every value of the parameter in `slots` (at
/// most one); first > last when the loop never runs.
static std::pair<int64_t, int64_t>
boundsHull(const ir::Schedule &schedule, const ExprRef &lo, const ExprRef &hi,
           const std::vector<unsigned> &slots) {
  int64_t first = INT64_MAX, last = INT64_MIN;
  std::vector<int64_t> env(schedule.numSlots(), 0);
  auto [from, to] = slots.empty() ? std::pair<int64_t, int64_t>{0, 0}
                                  : parameterLimits(schedule, slots[0]);
  for (int64_t v = from; v <= to; ++v) {
    if (!slots.empty())
      env[slots[0]] = v;
    ir::EvalResult l = ir::evaluate(*lo, env), h = ir::evaluate(*hi, env);
    if (!l.ok() || !h.ok() || l.value > h.value)
      continue;
    first = std::min(first, l.value);
    last = std::max(last, h.value);
  }
  return {first, last};
}

/// `a and b`, each side dropped where it is absent or folds to true.
static ExprRef conjoin(ExprRef a, ExprRef b) {
  if (!a || (a->isConst() && a->value != 0))
    return b;
  if (!b || (b->isConst() && b->value != 0))
    return a;
  return ir::fold(ir::Expr::binary(ExprOp::And, a, b));
}

/// A copy of each rule in `lowered` per value first .. last of the loop
/// variable in `slot`, guarded by lo <= value <= hi, into `out`.
static void unrollRules(const std::vector<ir::TransferRule> &lowered,
                        unsigned slot, const ExprRef &lo, const ExprRef &hi,
                        int64_t first, int64_t last,
                        std::vector<ir::TransferRule> &out) {
  using ir::Expr;
  for (int64_t v = first; v <= last; ++v) {
    ExprRef value = Expr::constant(v);
    auto bind = [&](const ExprRef &e) -> ExprRef {
      if (!e)
        return e;
      return ir::fold(ir::substitute(
          e, [&](const Expr &x) { return x.slot == slot ? value : nullptr; }));
    };
    ExprRef inRange = conjoin(ir::fold(Expr::binary(ExprOp::Le, lo, value)),
                              ir::fold(Expr::binary(ExprOp::Le, value, hi)));
    if (inRange && inRange->isConst() && inRange->value == 0)
      continue;
    for (const ir::TransferRule &rule : lowered) {
      ir::TransferRule copy = rule;
      copy.peer = bind(rule.peer);
      copy.selector = bind(rule.selector);
      for (ir::Delivery &d : copy.into)
        d.when = bind(d.when);
      // The bounds first: `and` is evaluated left to right, and the guard
      // may be undefined outside them (a shift by d - j).
      copy.guard = conjoin(inRange, bind(rule.guard));
      out.push_back(std::move(copy));
    }
  }
}

bool Analyzer::ruleLoop(const ast::RuleLoop &loop, ir::Schedule &schedule,
                        Scope &scope, std::optional<int64_t> ranks,
                        std::vector<ir::TransferRule> &out) {
  // The loop is unrolled here, a rule per value, each guarded by the
  // bounds, so every later stage (simulator, prover, emitter) sees plain
  // rules. Unrolling covers every member the topology allows, not just the
  // declared range, so no member is ever missing a rule.
  constexpr int64_t maxRules = 64;
  ExprRef lo, hi;
  std::vector<unsigned> slots;
  if (!ruleLoopBounds(loop, schedule, scope, lo, hi, slots))
    return false;

  auto [first, last] = boundsHull(schedule, lo, hi, slots);
  if (first > last)
    return true; // never runs
  if (last - first >= maxRules) {
    diags.error(locOf(loop),
                "a loop inside a step is unrolled for every size the "
                "topology allows, so it may run at most " +
                    llvm::Twine(maxRules) + " times; its bounds reach " +
                    llvm::Twine(first) + " .. " + llvm::Twine(last),
                rangeOf(loop));
    return false;
  }

  unsigned slot = static_cast<unsigned>(schedule.slotNames.size());
  schedule.slotNames.push_back(loop.var.name);
  std::vector<ir::TransferRule> lowered;
  if (!ruleLoopTransfers(loop, schedule, scope, ranks, slot, lowered))
    return false;
  unrollRules(lowered, slot, lo, hi, first, last, out);
  return true;
}

bool Analyzer::ruleLoopBounds(const ast::RuleLoop &loop,
                              const ir::Schedule &schedule, const Scope &scope,
                              ExprRef &lo, ExprRef &hi,
                              std::vector<unsigned> &slots) {
  if (!freshName(loop.var, scope))
    return false;
  lo = lower(loop.lo, scope);
  hi = lower(loop.hi, scope);
  if (!lo || !hi)
    return false;
  lo = ir::fold(lo);
  hi = ir::fold(hi);
  ir::collectSlots(*lo, slots);
  ir::collectSlots(*hi, slots);
  for (unsigned slot : slots)
    if (!llvm::any_of(schedule.params,
                      [&](const ir::Parameter &q) { return q.slot == slot; }) ||
        slots.size() > 1) {
      diags.error(locOf(loop),
                  "the bounds of a loop inside a step may use constants and "
                  "one of the topology's parameters, not '" +
                      schedule.slotNames[slot] + "'",
                  rangeOf(loop));
      return false;
    }
  return true;
}

bool Analyzer::ruleLoopTransfers(const ast::RuleLoop &loop,
                                 ir::Schedule &schedule, Scope &scope,
                                 std::optional<int64_t> ranks, unsigned slot,
                                 std::vector<ir::TransferRule> &lowered) {
  size_t mark = scope.size();
  scope.add(loop.var.name, slot, locOf(loop.var));
  bool ok = true;
  for (const ast::Transfer &t : loop.transfers) {
    if (auto rule = transfer(t, schedule, scope, ranks))
      lowered.push_back(std::move(*rule));
    else
      ok = false;
  }
  scope.truncate(mark);
  return ok;
}

std::optional<ir::TransferRule>
Analyzer::transfer(const ast::Transfer &t, ir::Schedule &schedule, Scope &scope,
                   std::optional<int64_t> ranks) {
  ir::TransferRule rule;
  rule.loc = locOf(t);
  if (!transferEndpoints(t, scope, ranks, rule) ||
      !transferSelector(t, schedule, scope, rule) ||
      !transferBuffers(t, schedule, scope, rule) ||
      !transferMode(t, schedule, rule))
    return std::nullopt;
  if (t.guard) {
    ExprRef g = lower(*t.guard, scope);
    if (!g)
      return std::nullopt;
    g = ir::fold(g);
    rule.guard =
        rule.guard ? ir::Expr::binary(ExprOp::And, rule.guard, g, g->loc) : g;
  }
  return rule;
}

bool Analyzer::transferEndpoints(const ast::Transfer &t, const Scope &scope,
                                 std::optional<int64_t> ranks,
                                 ir::TransferRule &rule) {
  ExprRef src = lower(t.src, scope);
  ExprRef dst = lower(t.dst, scope);
  if (!src || !dst)
    return false;
  src = ir::fold(src);
  dst = ir::fold(dst);

  // `r -> ...` is a rule for every rank; `a -> ...` with `a` free of `r` is
  // the rule guarded by r == a.
  bool symbolicSender = src->op == ExprOp::Var && src->slot == ir::SlotRank;
  if (!symbolicSender && ir::reads(*src, ir::SlotRank)) {
    diags.error(locOf(locatedOf(t.src)),
                "the sender must be 'r' (every rank) or an expression "
                "without 'r' (one rank)",
                rangeOf(locatedOf(t.src)));
    return false;
  }
  if (!symbolicSender)
    rule.guard = ir::Expr::binary(
        ExprOp::Eq, ir::Expr::var("r", ir::SlotRank, src->loc), src, src->loc);
  rule.peer = dst;

  // Constant endpoints are checked here; symbolic ones by the verifier.
  if (!rankInTopology(src, t.src, ranks) || !rankInTopology(dst, t.dst, ranks))
    return false;
  if (src->isConst() && dst->isConst() && src->value == dst->value) {
    diags.error(locOf(t),
                "rank " + std::to_string(src->value) + " sends to itself",
                rangeOf(t));
    return false;
  }
  return true;
}

bool Analyzer::rankInTopology(const ExprRef &e, const ast::Operand &where,
                              std::optional<int64_t> ranks) {
  if (!e->isConst() || !ranks)
    return true;
  if (e->value < 0 || e->value >= *ranks) {
    diags.error(locOf(locatedOf(where)),
                "rank " + std::to_string(e->value) +
                    " is outside the topology (ranks 0.." +
                    std::to_string(*ranks - 1) + ")",
                rangeOf(locatedOf(where)));
    return false;
  }
  return true;
}

bool Analyzer::transferSelector(const ast::Transfer &t,
                                const ir::Schedule &schedule, Scope &scope,
                                ir::TransferRule &rule) {
  // An irregular all-to-all's blocks have sizes that only the ranks they
  // pass through learn, so a message carries blocks (or, with `chunks`,
  // their pieces) of the one buffer: those its filter names, or without one
  // the sender's own block for the receiver (001's patterns; the runtime's
  // direct exchange moves it).
  if (schedule.collective.kind == ir::CollectiveKind::Alltoallv) {
    if (t.from || !t.into.empty()) {
      diags.error(locOf(t),
                  "an alltoallv schedule's messages carry blocks of its one "
                  "buffer: no 'from' or 'into'",
                  rangeOf(t));
      return false;
    }
    if (!t.selector)
      rule.selector = ir::ownBlockSelector(rule.peer);
  }
  if (t.selector) {
    size_t mark = scope.size();
    scope.add("origin", ir::SlotOrigin);
    scope.add("dest", ir::SlotDest);
    scope.add("index", ir::SlotIndex);
    rule.selector = lower(*t.selector, scope);
    scope.truncate(mark);
    if (!rule.selector)
      return false;
    rule.selector = ir::fold(rule.selector);
  }
  return true;
}

bool Analyzer::transferBuffers(const ast::Transfer &t,
                               const ir::Schedule &schedule, const Scope &scope,
                               ir::TransferRule &rule) {
  if (t.from) {
    auto b = bufferIndex(schedule, *t.from);
    if (!b)
      return false;
    rule.fromBuffer = *b;
  }
  for (const ast::Target &target : t.into) {
    auto b = bufferIndex(schedule, target.buffer);
    if (!b)
      return false;
    ir::Delivery d;
    d.buffer = *b;
    if (target.when) {
      d.when = lower(*target.when, scope);
      if (!d.when)
        return false;
      d.when = ir::fold(d.when);
    }
    rule.into.push_back(d);
  }
  if (rule.into.empty())
    rule.into.push_back({rule.fromBuffer, nullptr});
  return true;
}

bool Analyzer::transferMode(const ast::Transfer &t,
                            const ir::Schedule &schedule,
                            ir::TransferRule &rule) {
  bool reduction = ir::isReduction(schedule.collective.kind);
  rule.mode = reduction ? ir::TransferMode::Reduce : ir::TransferMode::Copy;
  if (t.mode) {
    if (t.mode->name == "reduce" && !reduction) {
      diags.error(locOf(*t.mode),
                  "'reduce' needs a reducing collective; " +
                      ir::collectiveKindName(schedule.collective.kind) +
                      " combines nothing",
                  rangeOf(*t.mode));
      return false;
    }
    rule.mode = t.mode->name == "reduce" ? ir::TransferMode::Reduce
                                         : ir::TransferMode::Copy;
  }
  return true;
}

} // namespace collc::sema
