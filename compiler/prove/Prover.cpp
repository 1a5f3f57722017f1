// The prover: each property of each step asked of Z3 as one query over
// symbolic ranks, loop values and parameters (what is proved and how:
// docs/proofs.md). A model is rebuilt and explained in
// ProverCounterexamples.cpp.

#include "prove/ExprToSmt.h"
#include "prove/MeshRanks.h"
#include "prove/ProverState.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <set>

using namespace collc;
using namespace collc::prove;
using verify::Status;

namespace {

/// What a step's queries depend on: its enclosing loops and its rules as
/// written. Two sites with one key get the same answers, so an explicit
/// schedule's repeated steps are proved once, not once per step.
std::string siteKey(const StepSite &site) {
  std::string key;
  llvm::raw_string_ostream os(key);
  auto expr = [&](const ir::ExprRef &e) {
    os << (e ? ir::print(*e) : std::string("-")) << ";";
  };
  for (const ir::Loop *loop : site.loops)
    os << loop << ",";
  for (const ir::TransferRule &rule : site.step->rules) {
    os << "|" << rule.fromBuffer << "," << static_cast<int>(rule.mode) << ":";
    expr(rule.guard);
    expr(rule.peer);
    expr(rule.selector);
    for (const ir::Delivery &d : rule.into) {
      os << d.buffer << "@";
      expr(d.when);
    }
    os << "<";
    for (const ir::ExprRef &e : rule.senders)
      expr(e);
  }
  return os.str();
}

void collectSites(const std::vector<ir::BodyItem> &body,
                  std::vector<const ir::Loop *> &loops,
                  std::vector<StepSite> &sites) {
  for (const ir::BodyItem &item : body) {
    if (const auto *step = std::get_if<ir::Step>(&item)) {
      sites.push_back({step, loops, static_cast<unsigned>(sites.size() + 1)});
      continue;
    }
    const auto &loop = std::get<std::shared_ptr<ir::Loop>>(item);
    loops.push_back(loop.get());
    collectSites(loop->body, loops, sites);
    loops.pop_back();
  }
}

} // namespace

// --- construction -----------------------------------------------------------

llvm::Expected<Prover> Prover::create(const ir::Schedule &schedule,
                                      ProverOptions options) {
  auto state = std::make_unique<State>();
  State &s = *state;
  s.schedule = &schedule;
  s.options = std::move(options);
  s.solver.setVerbose(s.options.verbose, s.options.dumpSmt);
  s.solver.rememberIn(s.options.provedQueries);
  s.layOutSlots();
  if (llvm::Error err = s.takeRanges())
    return err;
  if (llvm::Error err = s.describeTopology())
    return err;
  return Prover(std::move(state));
}

void Prover::State::layOutSlots() {
  // The schedule's layout, widened to cover every slot its parameters and
  // loops use, then src/dst/from/to for the route forms.
  unsigned n = std::max<unsigned>(schedule->numSlots(), ir::NumFixedSlots);
  for (const ir::Parameter &param : schedule->params)
    n = std::max(n, param.slot + 1);
  std::vector<const ir::Loop *> loops;
  collectSites(schedule->body, loops, sites);
  for (const StepSite &site : sites)
    for (const ir::Loop *loop : site.loops)
      n = std::max(n, loop->slot + 1);
  numSlots = n;
  srcSlot = n;
  dstSlot = n + 1;
  fromSlot = n + 2;
  toSlot = n + 3;
}

llvm::Error Prover::State::takeRanges() {
  for (const ir::Parameter &param : schedule->params) {
    auto range = llvm::find_if(options.ranges, [&](const ParamRange &r) {
      return r.name == param.name;
    });
    if (range == options.ranges.end())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "no range given for parameter '%s'",
                                     param.name.c_str());
    if (range->lo > range->hi)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "empty range %lld .. %lld for parameter '%s'",
          static_cast<long long>(range->lo), static_cast<long long>(range->hi),
          param.name.c_str());
    paramRange.push_back({range->lo, range->hi});
  }
  return llvm::Error::success();
}

llvm::Error Prover::State::describeTopology() {
  const ir::TopologyTemplate &topo = schedule->topology;
  bool concreteDims = true;
  std::vector<int64_t> dimValues;
  for (const ExprRef &dim : topo.dims) {
    std::vector<unsigned> used;
    ir::collectSlots(*dim, used);
    ir::EvalResult v = ir::evaluate(*dim, {});
    concreteDims &= used.empty() && v.ok();
    dimValues.push_back(v.value);
  }
  if (concreteDims) {
    auto made = Topology::make(topo.kind, dimValues, topo.edges, topo.order);
    if (!made)
      return made.takeError();
    topology = std::move(*made);
  }

  ExprRef src = ir::Expr::var("src", srcSlot),
          dst = ir::Expr::var("dst", dstSlot);
  ExprRef from = ir::Expr::var("from", fromSlot),
          to = ir::Expr::var("to", toSlot);
  numRanks = symbolic::numRanks(topo.kind, topo.dims);
  if (!numRanks && topology)
    numRanks = ir::Expr::constant(topology->numRanks());
  if (!numRanks && !topo.dims.empty() &&
      (topo.kind == TopologyKind::Tree || topo.kind == TopologyKind::Graph))
    numRanks = topo.dims[0]; // tree(leaves: n), graph(n): n ranks
  if (!numRanks)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot size topology %s",
                                   topologyKindName(topo.kind).str().c_str());
  numNodes = symbolic::numNodes(topo.kind, topo.dims);
  isChannel = symbolic::isChannel(topo.kind, topo.dims, from, to, topo.order);
  onRoute =
      symbolic::onRoute(topo.kind, topo.dims, src, dst, from, to, topo.order);
  routeLegs = symbolic::onRouteLegs(topo.kind, topo.dims, src, dst, from, to,
                                    topo.order);
  return llvm::Error::success();
}

Prover::Prover(std::unique_ptr<State> state) : state(std::move(state)) {}
Prover::Prover(Prover &&) = default;
Prover &Prover::operator=(Prover &&) = default;
Prover::~Prover() = default;

const smt::Solver &Prover::solver() const { return state->solver; }

PropertyResult Prover::prove(Property property) {
  return state->prove(property);
}

std::vector<PropertyResult> Prover::proveAll() {
  return {prove(Property::Matching), prove(Property::Contention),
          prove(Property::Congestion)};
}

std::map<const ir::TransferRule *, std::vector<ExprRef>>
Prover::namedSenders() {
  std::map<const ir::TransferRule *, std::vector<ExprRef>> named;
  for (const StepSite &site : state->sites)
    for (unsigned k = 0; k < site.step->rules.size(); ++k) {
      const ir::TransferRule &rule = site.step->rules[k];
      std::vector<ExprRef> candidates =
          ir::sendersOf(rule, sizeIsPowerOfTwo(state->schedule->topology.kind));
      if (!candidates.empty() && state->sendersNamed(site, k, candidates))
        named[&rule] = std::move(candidates);
    }
  return named;
}

// The question is easy where the candidates come from inverting the peer
// (r ^ c, (r + c) % p) and folds at once for a guard `r == e`; a query that
// needs more work (about 10 s here) is left to the scan, which is always
// right. A bound of work, not time: what it decides is emitted.
constexpr unsigned namedSendersWork = 80000000;

bool Prover::State::sendersNamed(const StepSite &site, unsigned k,
                                 const std::vector<ExprRef> &candidates) {
  ExprRef free = ir::rankFreeGuard(site.step->rules[k]);
  std::vector<ExprRef> evaluated = candidates;
  if (free)
    evaluated.push_back(free);
  Frame f = frameFor(site, "", widthFor(site, false, evaluated));
  Send sender = sendFor(f, site, "");
  Term receiver = rankVariable(ctx, "receiver", f.width, f.extents);
  std::vector<Term> env = f.base;
  env[ir::SlotRank] = receiver;
  ExprToSmt atReceiver(ctx, env);
  std::vector<Term> named, undefined;
  for (const ExprRef &c : candidates) {
    SmtExpr e = atReceiver.translate(*c);
    named.push_back(e.defined && e.value == sender.rank);
    undefined.push_back(!e.defined);
  }
  std::vector<Term> query = f.paramAssumptions;
  llvm::append_range(query, f.loopAssumptions);
  llvm::append_range(query, sender.assumptions);
  query.push_back(sender.rule == static_cast<int64_t>(k));
  // A sender no candidate names, or a receiver where a candidate cannot be
  // evaluated.
  Term missed = sender.wellFormed && sender.peer == receiver && !ctx.any(named);
  // The candidates are evaluated where the guard's rank-free part holds
  // (the emitted code tests it first).
  Term isRank = sge(receiver, 0) && slt(receiver, f.p);
  if (free)
    isRank = isRank && atReceiver.nonzero(*free);
  query.push_back(missed || (isRank && ctx.any(undefined)));
  return solver.check("senders", query, options.timeoutMs, namedSendersWork)
      .isUnsat();
}

// --- frames and sends -------------------------------------------------------

Interval Prover::State::boundSlots(WidthAnalysis &w, const StepSite &site,
                                   std::vector<Interval> *loops) {
  for (size_t i = 0; i < schedule->params.size(); ++i) {
    Interval range{paramRange[i].first, paramRange[i].second};
    w.require(range);
    w.setSlot(schedule->params[i].slot, range);
  }
  // The query assumes p >= 1.
  Interval p = w.require(*numRanks);
  p.lo = std::max<int64_t>(p.lo, 1);
  if (p.hi < p.lo)
    return p;
  w.setSlot(ir::SlotSize, p);
  for (const ir::Loop *loop : site.loops) {
    Interval lo = w.require(*loop->lo), hi = w.require(*loop->hi);
    w.setSlot(loop->slot, lo.hull(hi));
    if (loops)
      loops->push_back(lo.hull(hi));
  }
  return p;
}

unsigned Prover::State::widthFor(const StepSite &site, bool routes,
                                 llvm::ArrayRef<ExprRef> extra) {
  WidthAnalysis w(numSlots + 4);
  Interval p = boundSlots(w, site);
  if (p.hi < p.lo)
    return smt::DefaultWidth; // no instance: nothing to gain
  Interval rank{0, p.hi - 1};
  w.setSlot(ir::SlotRank, rank);
  int64_t numRules = static_cast<int64_t>(site.step->rules.size());
  w.require(Interval{0, numRules});
  for (const ir::TransferRule &rule : site.step->rules) {
    if (rule.guard)
      w.require(*rule.guard);
    w.require(*rule.peer);
  }
  for (const ExprRef &e : extra)
    w.require(*e);
  if (routes && onRoute) {
    // Routes are asked for sends that matching accepts (peers are ranks)
    // and for channels between nodes.
    Interval nodes = w.require(*numNodes);
    for (unsigned slot : {srcSlot, dstSlot})
      w.setSlot(slot, rank);
    for (unsigned slot : {fromSlot, toSlot})
      w.setSlot(slot, Interval{0, std::max<int64_t>(nodes.hi - 1, 0)});
    w.require(*onRoute);
    w.require(*isChannel);
  } else if (routes && topology) {
    w.require(Interval{0, topology->numChannels()});
  }
  return w.width();
}

Prover::State::Frame Prover::State::frameFor(const StepSite &site,
                                             llvm::StringRef tag,
                                             unsigned width) {
  Frame f;
  f.width = width;
  f.base.resize(numSlots + 4);
  for (unsigned slot = 0; slot < f.base.size(); ++slot) {
    llvm::StringRef name = slot < schedule->slotNames.size()
                               ? llvm::StringRef(schedule->slotNames[slot])
                               : llvm::StringRef("slot");
    f.base[slot] = ctx.bitVecVar(name.empty() ? "slot" : name, width);
  }
  for (size_t i = 0; i < schedule->params.size(); ++i) {
    const ir::Parameter &param = schedule->params[i];
    Term v = ctx.bitVecVar(param.name, width);
    f.base[param.slot] = v;
    f.paramVars.push_back(v);
    f.paramAssumptions.push_back(sge(v, paramRange[i].first) &&
                                 sle(v, paramRange[i].second));
  }
  {
    SmtExpr p = ExprToSmt(ctx, f.base).translate(*numRanks);
    f.p = p.value;
    // A size that cannot be computed leaves no instance to check.
    f.paramAssumptions.push_back(p.defined);
    f.paramAssumptions.push_back(sge(f.p, 1));
  }
  f.base[ir::SlotSize] = f.p;
  f.extents = meshExtents(schedule->topology, f.base);
  for (const Term &extent : f.extents) // a topology has no empty dimension
    f.paramAssumptions.push_back(sge(extent, 1));
  // A shift's amount on a mesh, read in coordinates (prove/MeshRanks.h).
  if (std::optional<size_t> i = amountParameter(*schedule);
      i && !f.extents.empty() && paramRange[*i].first >= 0) {
    DigitNumber q =
        numberVariable(ctx, schedule->params[*i].name, width, f.extents);
    f.base[schedule->params[*i].slot] = q.value;
    f.paramVars[*i] = q.value;
    f.paramAssumptions[*i] = q.exact && sge(q.value, paramRange[*i].first) &&
                             sle(q.value, paramRange[*i].second);
  }

  // Loops, outermost first: each one's bounds over the variables outside it.
  std::vector<Term> undefined;
  for (const ir::Loop *loop : site.loops) {
    ExprToSmt outer(ctx, f.base);
    SmtExpr lo = outer.translate(*loop->lo), hi = outer.translate(*loop->hi);
    Term v = ctx.bitVecVar(loop->var + tag.str(), width);
    Term defined = lo.defined && hi.defined;
    undefined.push_back(ctx.all(f.loopAssumptions) && !defined);
    f.loopAssumptions.push_back(defined && sle(lo.value, v) &&
                                sle(v, hi.value));
    f.loopVars.push_back(v);
    f.base[loop->slot] = v;
  }
  f.boundsUndefined = ctx.any(undefined);
  return f;
}

Prover::State::Send Prover::State::sendFor(const Frame &frame,
                                           const StepSite &site,
                                           llvm::StringRef tag) {
  Send s;
  std::vector<Term> env = frame.base;
  s.rank = rankVariable(ctx, "r" + tag.str(), frame.width, frame.extents);
  env[ir::SlotRank] = s.rank;
  s.assumptions.push_back(sge(s.rank, 0) && slt(s.rank, frame.p));

  const std::vector<ir::TransferRule> &rules = site.step->rules;
  int64_t numRules = static_cast<int64_t>(rules.size());
  s.rule = numRules == 1 ? ctx.bitVec(0, frame.width)
                         : ctx.bitVecVar("rule" + tag.str(), frame.width);
  s.assumptions.push_back(sge(s.rule, 0) && slt(s.rule, numRules));

  ExprToSmt tr(ctx, env);
  std::vector<Term> wellFormed, bad;
  s.peer = ctx.bitVec(0, frame.width);
  // Last rule first, so the ite chain reads rule 0 outermost.
  for (int64_t k = numRules - 1; k >= 0; --k) {
    const ir::TransferRule &rule = rules[k];
    Term fires = ctx.boolean(true), guardDefined = ctx.boolean(true);
    if (rule.guard) {
      fires = tr.nonzero(*rule.guard);
      guardDefined = tr.translate(*rule.guard).defined;
    }
    SmtExpr peer = tr.translate(*rule.peer);
    Term accepted = peer.defined && sge(peer.value, 0) &&
                    slt(peer.value, frame.p) && peer.value != s.rank;
    Term chosen = s.rule == k;
    wellFormed.push_back(chosen && guardDefined && fires && accepted);
    bad.push_back(chosen && (!guardDefined || (fires && !accepted)));
    s.peer = ite(chosen, peer.value, s.peer);
  }
  s.wellFormed = ctx.any(wellFormed);
  s.bad = ctx.any(bad);
  return s;
}

Term Prover::State::routeHas(const Frame &frame, const Send &send,
                             const Term &from, const Term &to, size_t leg) {
  std::vector<Term> env = frame.base;
  env[srcSlot] = send.rank;
  env[dstSlot] = send.peer;
  env[fromSlot] = from;
  env[toSlot] = to;
  return ExprToSmt(ctx, env).nonzero(*routeLegs[leg]);
}

Term Prover::State::channelIsReal(const Frame &frame, const Term &from,
                                  const Term &to) {
  std::vector<Term> env = frame.base;
  env[fromSlot] = from;
  env[toSlot] = to;
  ExprToSmt tr(ctx, env);
  Term nodes = tr.translate(*numNodes).value;
  return sge(from, 0) && slt(from, nodes) && sge(to, 0) && slt(to, nodes) &&
         tr.nonzero(*isChannel);
}

bool Prover::State::sendsToNeighbours(const StepSite &site) {
  // Ranks are nodes on every topology with a closed form but a tree, whose
  // ranks are its leaves and never neighbours.
  if (schedule->topology.kind == TopologyKind::Tree || !isChannel)
    return false;
  auto known = neighbourSteps.find(site.index);
  if (known != neighbourSteps.end())
    return known->second;
  Frame f = frameFor(site, "", widthFor(site, true));
  Send a = sendFor(f, site, "");
  std::vector<Term> query = f.paramAssumptions;
  llvm::append_range(query, a.assumptions);
  llvm::append_range(query, f.loopAssumptions);
  query.push_back(a.wellFormed);
  query.push_back(!channelIsReal(f, a.rank, a.peer));
  if (options.verbose)
    *options.verbose << "prove neighbours, IR step " << site.index << ", "
                     << f.width << "-bit\n";
  // Only a short cut: a question Z3 does not settle soon costs no more than
  // this work (about 30 s here) before the routes are asked (the library's
  // take up to 12 s, on tori up to 64 x 64; a step with a send further away
  // is sat at once).
  constexpr unsigned neighbourWork = 240000000;
  bool all = solver.check("neighbours", query, options.timeoutMs, neighbourWork)
                 .isUnsat();
  neighbourSteps[site.index] = all;
  return all;
}

bool Prover::State::buildTable() {
  if (table)
    return true;
  if (!tableProblem.empty())
    return false;
  if (!topology) {
    tableProblem = "no symbolic routing for " +
                   topologyKindName(schedule->topology.kind).str() +
                   " with parameter-dependent dimensions";
    return false;
  }
  const Topology &t = *topology;
  int64_t n = t.numRanks();
  // Sum of route lengths, bounded before anything is stored.
  int64_t entries = 0;
  for (int64_t a = 0; a < n && entries <= options.maxRouteTableEntries; ++a)
    for (int64_t b = 0; b < n; ++b)
      entries += t.distance(a, b);
  if (entries > options.maxRouteTableEntries) {
    tableProblem = "route table of " + t.describe() + " too large (more than " +
                   std::to_string(options.maxRouteTableEntries) + " entries)";
    return false;
  }
  llvm::ArrayRef<Channel> channels = t.channels();
  RouteTable rt;
  rt.all.resize(channels.size());
  rt.first.resize(channels.size());
  rt.last.resize(channels.size());
  auto indexOf = [&](const Channel &c) {
    return static_cast<size_t>(llvm::lower_bound(channels, c) -
                               channels.begin());
  };
  llvm::SmallVector<Channel, 16> route;
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < n; ++b) {
      if (a == b)
        continue;
      route.clear();
      t.route(a, b, route);
      for (const Channel &c : route)
        rt.all[indexOf(c)].push_back({a, b});
      rt.first[indexOf(route.front())].push_back({a, b});
      rt.last[indexOf(route.back())].push_back({a, b});
    }
  table = std::move(rt);
  return true;
}

// --- the properties ---------------------------------------------------------

PropertyResult Prover::State::prove(Property property) {
  PropertyResult result;
  result.property = property;
  result.method = "z3";
  if (property != Property::Matching && property != Property::Contention &&
      property != Property::Congestion) {
    result.status = Status::Error;
    result.detail = std::string("the prover does not handle ") +
                    verify::propertyName(property);
    return result;
  }
  bool needsRoutes =
      property == Property::Congestion ||
      (property == Property::Contention && options.ports == PortModel::All);
  if (needsRoutes && !onRoute && !buildTable()) {
    result.status = Status::Unknown;
    result.detail = tableProblem;
    return result;
  }

  std::optional<PropertyResult> unknown, error;
  std::set<std::string> provedSites;
  for (const StepSite &site : sites) {
    if (site.step->rules.empty())
      continue;
    std::string key = siteKey(site);
    if (provedSites.count(key))
      continue;
    smt::Result r;
    PropertyResult one = proveSite(property, site, r);
    if (one.status == Status::Proved)
      provedSites.insert(std::move(key));
    if (options.verbose)
      *options.verbose << "  " << verify::propertyName(property) << ", IR step "
                       << site.index << ": " << verify::statusName(one.status)
                       << "\n";
    switch (one.status) {
    case Status::Proved:
      break;
    case Status::Counterexample:
      return one;
    case Status::Unknown:
      if (!unknown)
        unknown = one;
      break;
    case Status::Error:
      if (!error)
        error = one;
      break;
    }
  }
  if (error)
    return *error;
  if (unknown)
    return *unknown;
  result.status = Status::Proved;
  result.maxLoad = 1;
  return result;
}

// A symbolic shift amount, as in `r - (1 << i) * b`, makes bit-blasting
// reason through a barrel shifter and every product after it; with the
// amount fixed they fold away. mesh_reduce's column step on meshes up to
// 64 x 64 took 17 s as one query; per route leg and value of i its parts
// take 0.02-3.4 s.
// So a query that does not answer within ProverOptions::splitAfterWork is
// split by the value of a loop variable that is a shift amount or an
// exponent in the step's rules, the one with the fewest values if that is at
// most `maxSplitValues`; each part has the full time limit. (Any other
// variable leaves the circuits as they are: mesh_allgather's `for k in 1 ..
// b - 1` split 63 ways costs 3-17 s a part.)
constexpr int64_t maxSplitValues = 32;

/// The slots read by the amount of a shift or the exponent of a power in `e`.
static void collectShiftAmountSlots(const ir::Expr &e,
                                    std::vector<unsigned> &slots) {
  bool amount = e.op == ir::ExprOp::Shl || e.op == ir::ExprOp::Shr ||
                e.op == ir::ExprOp::Pow;
  for (size_t k = 0; k < e.args.size(); ++k) {
    if (amount && k == 1)
      ir::collectSlots(*e.args[k], slots);
    else
      collectShiftAmountSlots(*e.args[k], slots);
  }
}

smt::Result Prover::State::checkSplit(const char *name,
                                      std::vector<Term> query,
                                      llvm::ArrayRef<Term> cases,
                                      const Frame &f, const StepSite &site,
                                      std::string &at) {
  if (cases.size() > 1) {
    smt::Result last;
    for (size_t k = 0; k < cases.size(); ++k) {
      query.push_back(cases[k]);
      last = checkSplit(name, query, {}, f, site, at);
      query.pop_back();
      if (last.isUnsat())
        continue;
      if (!last.isSat())
        at = ", route leg " + std::to_string(k) + at;
      return last;
    }
    return last;
  }
  if (cases.size() == 1)
    query.push_back(cases.front());
  WidthAnalysis w(numSlots + 4);
  std::vector<Interval> loops;
  boundSlots(w, site, &loops);
  std::vector<unsigned> amounts;
  for (const ir::TransferRule &rule : site.step->rules) {
    collectShiftAmountSlots(*rule.peer, amounts);
    if (rule.guard)
      collectShiftAmountSlots(*rule.guard, amounts);
  }
  std::optional<size_t> split;
  auto values = [&](size_t j) {
    return static_cast<__int128>(loops[j].hi) - loops[j].lo + 1;
  };
  for (size_t j = 0; j < loops.size(); ++j)
    if (llvm::is_contained(amounts, site.loops[j]->slot) && values(j) >= 2 &&
        values(j) <= maxSplitValues &&
        (!split || values(j) < values(*split)))
      split = j;
  const unsigned wholeWork = options.splitAfterWork;
  if (!split)
    return solver.check(name, query, options.timeoutMs);
  smt::Result last;
  if (wholeWork) {
    last = solver.check(name, query, options.timeoutMs, wholeWork);
    if (!last.isUnknown() || last.reason() == "timeout")
      return last;
  }
  for (int64_t v = loops[*split].lo; v <= loops[*split].hi; ++v) {
    query.push_back(f.loopVars[*split] == v);
    last = solver.check(name, query, options.timeoutMs);
    query.pop_back();
    if (last.isUnsat())
      continue;
    if (!last.isSat())
      at = ", " + site.loops[*split]->var + " = " + std::to_string(v);
    return last;
  }
  // Every value of the variable is unsat (its range bounds it in the query),
  // so the whole query is: kept, so that no later run depends on how the
  // limited attempt at it went.
  solver.rememberProved(query);
  return last;
}

// --- the obligations ---------------------------------------------------------

const Prover::State::Obligation &
Prover::State::obligationFor(Property property) const {
  // Matching: one send whose rule breaks matching. Contention, single-port:
  // two sends that share a sender or a receiver. Congestion, and contention
  // all-port: two sends whose routes share a channel (anywhere; first or
  // last).
  static const Obligation matching{false, &State::buildMatching,
                                   &State::explainMatching};
  static const Obligation sharedPort{false, &State::buildPair,
                                     &State::explainSharedPort};
  static const Obligation sharedChannel{true, &State::buildPair,
                                        &State::explainSharedChannel};
  switch (property) {
  case Property::Matching:
    return matching;
  case Property::Contention:
    return options.ports == PortModel::Single ? sharedPort : sharedChannel;
  default:
    return sharedChannel;
  }
}

void Prover::State::buildMatching(SiteQuery &q, Property, const StepSite &) {
  q.query.push_back(q.f.boundsUndefined ||
                    (ctx.all(q.f.loopAssumptions) && q.a.bad));
}

void Prover::State::buildPair(SiteQuery &q, Property property,
                              const StepSite &site) {
  const Frame &f = q.f;
  const Send &a = q.a;
  q.b = sendFor(f, site, "2");
  const Send &b = *q.b;
  std::vector<Term> &query = q.query;
  llvm::append_range(query, f.loopAssumptions);
  llvm::append_range(query, b.assumptions);
  query.push_back(a.wellFormed);
  query.push_back(b.wellFormed);
  // Distinct sends, each unordered pair once.
  query.push_back(slt(a.rule, b.rule) ||
                  (a.rule == b.rule && slt(a.rank, b.rank)));
  if (property == Property::Contention && options.ports == PortModel::Single) {
    query.push_back(a.rank == b.rank || a.peer == b.peer);
    return;
  }
  if (onRoute) {
    q.from = rankVariable(ctx, "from", f.width, f.extents);
    q.to = rankVariable(ctx, "to", f.width, f.extents);
    const Term &from = q.from, &to = q.to;
    query.push_back(channelIsReal(f, from, to));
    if (sendsToNeighbours(site)) {
      // Routes are shortest (Topology::route), so a send to a neighbour
      // crosses one channel, its own: two sends share a channel, first or
      // last, only as the same pair of ranks. This spares the solver the
      // route's coordinate circuits (torus_shift's row steps on tori up
      // to 64 x 64: more than 60 s a query through the routes).
      query.push_back(from == a.rank && to == a.peer && from == b.rank &&
                      to == b.peer);
      return;
    }
    // Both routes cross the channel, on the same leg: a mesh's dimensions
    // apart spare the solver the other dimensions' division circuits (a
    // third of the time for mesh_reduce on 64 x 64).
    for (size_t leg = 0; leg < routeLegs.size(); ++leg)
      q.cases.push_back(routeHas(f, a, from, to, leg) &&
                        routeHas(f, b, from, to, leg));
    if (property == Property::Contention)
      query.push_back((from == a.rank && from == b.rank) ||
                      (to == a.peer && to == b.peer));
    return;
  }
  // The route table as a finite disjunction over the channels.
  q.chanIndex = ctx.bitVecVar("channel", f.width);
  auto crosses = [&](const Send &s,
                     llvm::ArrayRef<std::pair<int64_t, int64_t>> pairs) {
    std::vector<Term> alternatives;
    for (auto [src, dst] : pairs)
      alternatives.push_back(s.rank == src && s.peer == dst);
    return ctx.any(alternatives);
  };
  std::vector<Term> shared;
  for (size_t k = 0; k < table->all.size(); ++k) {
    Term both =
        property == Property::Congestion
            ? crosses(a, table->all[k]) && crosses(b, table->all[k])
            : (crosses(a, table->first[k]) && crosses(b, table->first[k])) ||
                  (crosses(a, table->last[k]) && crosses(b, table->last[k]));
    shared.push_back(q.chanIndex == static_cast<int64_t>(k) && both);
  }
  query.push_back(ctx.any(shared));
}
PropertyResult Prover::State::proveSite(Property property, const StepSite &site,
                                        smt::Result &r) {
  PropertyResult result;
  result.property = property;
  result.method = "z3";
  const char *name = verify::propertyName(property);
  const Obligation &o = obligationFor(property);
  SiteQuery q;
  q.f = frameFor(site, "", widthFor(site, o.routes));
  q.a = sendFor(q.f, site, "");
  q.query = q.f.paramAssumptions;
  llvm::append_range(q.query, q.a.assumptions);
  (this->*o.build)(q, property, site);

  if (options.verbose)
    *options.verbose << "prove " << name << ", IR step " << site.index
                     << (site.step->name.empty() ? ""
                                                 : " '" + site.step->name + "'")
                     << ", " << q.f.width << "-bit\n";
  std::string at;
  r = checkSplit(name, std::move(q.query), q.cases, q.f, site, at);
  switch (r.kind()) {
  case smt::Result::Kind::Unsat:
    result.status = Status::Proved;
    return result;
  case smt::Result::Kind::Unknown: {
    result.status = Status::Unknown;
    bool timeout = r.reason().find("timeout") != std::string::npos ||
                   r.reason().find("canceled") != std::string::npos;
    std::string where = " (IR step " + std::to_string(site.index) + at + ")";
    if (timeout)
      result.detail =
          llvm::formatv("timeout after {0:f3} s", r.seconds()).str();
    else
      result.detail = "solver gave up: " + r.reason();
    result.detail += where;
    return result;
  }
  case smt::Result::Kind::Error:
    result.status = Status::Error;
    result.detail = "solver error: " + r.reason();
    return result;
  case smt::Result::Kind::Sat:
    break;
  }
  // A violation: rebuilt concretely before it is reported.
  Concrete c;
  if (auto problem = concretize(r, q.f, site, c))
    return notReproduced(result, *problem);
  return (this->*o.explain)(q, r, property, site, c, std::move(result));
}
