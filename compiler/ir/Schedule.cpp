#include "ir/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <iterator>

using namespace collc::ir;

llvm::StringRef collc::ir::collectiveKindName(CollectiveKind kind) {
  return meaning::rowOf(kind).name;
}

std::optional<CollectiveKind>
collc::ir::parseCollectiveKind(llvm::StringRef name) {
  for (const meaning::KindRow &r : meaning::kinds)
    if (r.name == name)
      return r.kind;
  return std::nullopt;
}

std::string
collc::ir::collectiveKindList(llvm::function_ref<bool(CollectiveKind)> which) {
  std::vector<llvm::StringRef> names;
  for (const meaning::KindRow &r : meaning::kinds)
    if (!which || which(r.kind))
      names.push_back(r.name);
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0                  ? ""
             : i + 1 == names.size() ? " or "
                                     : ", ") +
            names[i].str();
  return list;
}

std::string collc::ir::rangeText(llvm::ArrayRef<ParamRange> ranges) {
  std::string s;
  for (const ParamRange &r : ranges)
    s += (s.empty() ? "" : ", ") + r.name + " = " + std::to_string(r.lo) +
         (r.lo == r.hi ? "" : ".." + std::to_string(r.hi));
  return s;
}

std::optional<collc::ir::ParamRange>
collc::ir::givenRange(const Schedule &schedule, const Parameter &param,
                      llvm::ArrayRef<ParamRange> given, bool withinDeclared) {
  const bool fixed = param.range && param.range->first == param.range->second &&
                     schedule.isGiven(param.slot);
  auto named = llvm::find_if(
      given, [&](const ParamRange &r) { return r.name == param.name; });
  if (named == given.end() || fixed)
    return std::nullopt;
  ParamRange range = *named;
  if (withinDeclared && param.range) {
    range.lo = std::max(range.lo, param.range->first);
    range.hi = std::min(range.hi, param.range->second);
  }
  return range;
}

bool collc::ir::hasSplit(CollectiveKind whole) {
  for (const meaning::KindRow &first : meaning::kinds)
    for (const meaning::KindRow &second : meaning::kinds)
      if (splitsInto(whole, first.kind, second.kind))
        return true;
  return false;
}

bool collc::ir::isSplitPart(CollectiveKind kind) {
  for (const meaning::KindRow &whole : meaning::kinds)
    for (const meaning::KindRow &other : meaning::kinds)
      if (splitsInto(whole.kind, kind, other.kind) ||
          splitsInto(whole.kind, other.kind, kind))
        return true;
  return false;
}

void collc::ir::rewriteBody(
    std::vector<BodyItem> &body,
    const std::function<ExprRef(const ExprRef &, ExprRole)> &fn,
    const std::function<void(Loop &)> &onLoop,
    const std::function<void(TransferRule &)> &onRule) {
  for (BodyItem &item : body) {
    if (auto *loop = std::get_if<std::shared_ptr<Loop>>(&item)) {
      auto copy = std::make_shared<Loop>(**loop);
      if (onLoop)
        onLoop(*copy);
      copy->lo = fn(copy->lo, ExprRole::LoopBound);
      copy->hi = fn(copy->hi, ExprRole::LoopBound);
      for (Invariant &inv : copy->invariants)
        inv.holds = fn(inv.holds, ExprRole::Invariant);
      rewriteBody(copy->body, fn, onLoop, onRule);
      *loop = std::move(copy);
      continue;
    }
    for (TransferRule &rule : std::get<Step>(item).rules) {
      if (onRule)
        onRule(rule);
      rule.guard = fn(rule.guard, ExprRole::Guard);
      rule.peer = fn(rule.peer, ExprRole::Peer);
      rule.selector = fn(rule.selector, ExprRole::Selector);
      for (Delivery &d : rule.into)
        d.when = fn(d.when, ExprRole::DeliveryWhen);
      for (ExprRef &s : rule.senders)
        s = fn(s, ExprRole::Sender);
    }
  }
}

namespace {

/// At most this many candidate senders per rule.
constexpr size_t maxCandidates = 8;

/// Appends solutions s of `e`(s) == `target` (s read from slot r) as
/// expressions over `target`, where the rank occurs once on the way down.
void invert(const ExprRef &e, const ExprRef &target, bool sizeIsPowerOfTwo,
            std::vector<ExprRef> &out) {
  if (out.size() >= maxCandidates)
    return;
  auto recurse = [sizeIsPowerOfTwo](const ExprRef &e, const ExprRef &target,
                                    std::vector<ExprRef> &out) {
    invert(e, target, sizeIsPowerOfTwo, out);
  };
  auto has = [](const ExprRef &x) { return reads(*x, SlotRank); };
  auto bin = [](ExprOp op, const ExprRef &a, const ExprRef &b) {
    return Expr::binary(op, a, b);
  };
  switch (e->op) {
  case ExprOp::Var:
    if (e->slot == SlotRank)
      out.push_back(target);
    return;
  case ExprOp::Add:
  case ExprOp::Sub:
  case ExprOp::BitXor: {
    const ExprRef &a = e->args[0], &b = e->args[1];
    if (has(a) == has(b))
      return;
    if (e->op == ExprOp::BitXor)
      return recurse(has(a) ? a : b,
                     bin(ExprOp::BitXor, target, has(a) ? b : a), out);
    if (e->op == ExprOp::Add)
      return recurse(has(a) ? a : b, bin(ExprOp::Sub, target, has(a) ? b : a),
                     out);
    // a - b == t: a == t + b, or b == a - t.
    return has(a) ? recurse(a, bin(ExprOp::Add, target, b), out)
                  : recurse(b, bin(ExprOp::Sub, a, target), out);
  }
  case ExprOp::Neg:
  case ExprOp::BitNot:
    return recurse(e->args[0], Expr::unary(e->op, target), out);
  case ExprOp::Mod: {
    // x % m == t for a rank plus an offset, x in 0 .. 2m - 1: x is t or
    // t + m. The sender is a rank, so where the first solution is one it
    // is the one (with m = p, both cannot be ranks).
    const ExprRef &x = e->args[0], &m = e->args[1];
    if (!has(x) || has(m))
      return;
    std::vector<ExprRef> low, high;
    recurse(x, target, low);
    // With m = p a power of two (a hypercube), the low bits of a sum, a
    // difference or an exclusive or are those of its operands', so the one
    // rank is the solution's low bits, whatever the offset (r + q with q
    // beyond p too).
    ExprRef size = Expr::var("p", SlotSize);
    if (sizeIsPowerOfTwo && low.size() == 1 && m->op == ExprOp::Var &&
        m->slot == SlotSize) {
      out.push_back(bin(ExprOp::BitAnd, low[0],
                        bin(ExprOp::Sub, size, Expr::constant(1))));
      return;
    }
    recurse(x, bin(ExprOp::Add, target, m), high);
    if (low.size() != 1 || high.size() != 1) {
      out.insert(out.end(), low.begin(), low.end());
      out.insert(out.end(), high.begin(), high.end());
      return;
    }
    ExprRef isRank =
        bin(ExprOp::And, bin(ExprOp::Ge, low[0], Expr::constant(0)),
            bin(ExprOp::Lt, low[0], size));
    out.push_back(Expr::select(isRank, low[0], high[0]));
    return;
  }
  case ExprOp::Select:
    recurse(e->args[1], target, out);
    recurse(e->args[2], target, out);
    return;
  default:
    return;
  }
}

/// The ranks a guard fixes: conjuncts `r == e` with e free of r.
void guardRanks(const ExprRef &guard, std::vector<ExprRef> &out) {
  if (!guard)
    return;
  if (guard->op == ExprOp::And) {
    guardRanks(guard->args[0], out);
    guardRanks(guard->args[1], out);
    return;
  }
  if (guard->op != ExprOp::Eq)
    return;
  for (int side = 0; side < 2; ++side) {
    const ExprRef &v = guard->args[side], &e = guard->args[1 - side];
    if (v->op == ExprOp::Var && v->slot == SlotRank && !reads(*e, SlotRank) &&
        out.size() < maxCandidates)
      out.push_back(e);
  }
}

} // namespace

std::vector<ExprRef> collc::ir::sendersOf(const TransferRule &rule,
                                          bool sizeIsPowerOfTwo) {
  std::vector<ExprRef> out(rule.senders.begin(), rule.senders.end());
  if (out.size() > maxCandidates)
    out.resize(maxCandidates);
  guardRanks(rule.guard, out);
  invert(rule.peer, Expr::var("r", SlotRank), sizeIsPowerOfTwo, out);
  return out;
}

void collc::ir::conjuncts(const ExprRef &e, std::vector<ExprRef> &out) {
  if (e->op == ExprOp::And) {
    conjuncts(e->args[0], out);
    conjuncts(e->args[1], out);
    return;
  }
  out.push_back(e);
}

std::map<unsigned, collc::ir::ExprRef>
collc::ir::partParameters(const TopologyTemplate &composite,
                          const Schedule &part) {
  std::map<unsigned, ExprRef> bound;
  for (size_t i = 0; i < part.topology.dims.size() && i < composite.dims.size();
       ++i) {
    const Expr &d = *part.topology.dims[i];
    if (d.op == ExprOp::Var &&
        llvm::any_of(part.params,
                     [&](const Parameter &q) { return q.slot == d.slot; }))
      bound.emplace(d.slot, composite.dims[i]);
  }
  return bound;
}

void collc::ir::forEachRule(const std::vector<BodyItem> &body,
                            llvm::function_ref<void(const TransferRule &)> fn) {
  for (const BodyItem &item : body) {
    if (const Step *step = std::get_if<Step>(&item)) {
      for (const TransferRule &rule : step->rules)
        fn(rule);
      continue;
    }
    forEachRule(std::get<std::shared_ptr<Loop>>(item)->body, fn);
  }
}

ExprRef collc::ir::rankFreeGuard(const TransferRule &rule) {
  if (!rule.guard)
    return nullptr;
  std::vector<ExprRef> all;
  conjuncts(rule.guard, all);
  ExprRef free;
  for (const ExprRef &c : all) {
    if (reads(*c, SlotRank))
      break;
    free = free ? Expr::binary(ExprOp::And, free, c) : c;
  }
  return free;
}

ExprRef collc::ir::ownBlockSelector(const ExprRef &peer) {
  llvm::SMLoc loc = peer->loc;
  return Expr::binary(
      ExprOp::And,
      Expr::binary(ExprOp::Eq, Expr::var("origin", SlotOrigin, loc),
                   Expr::var("r", SlotRank, loc), loc),
      Expr::binary(ExprOp::Eq, Expr::var("dest", SlotDest, loc), peer, loc),
      loc);
}

bool collc::ir::sendsOwnBlock(const TransferRule &rule) {
  return rule.selector && rule.peer &&
         sameTree(*rule.selector, *ownBlockSelector(rule.peer));
}

llvm::StringRef collc::topologyKindName(TopologyKind kind) {
  switch (kind) {
  case TopologyKind::Ring:
    return "ring";
  case TopologyKind::Linear:
    return "linear";
  case TopologyKind::Mesh:
    return "mesh";
  case TopologyKind::Torus:
    return "torus";
  case TopologyKind::Hypercube:
    return "hypercube";
  case TopologyKind::Tree:
    return "tree";
  case TopologyKind::Full:
    return "full";
  case TopologyKind::Graph:
    return "graph";
  }
  llvm_unreachable("unknown topology kind");
}
