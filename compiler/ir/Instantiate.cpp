#include "ir/Instantiate.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace collc;
using namespace collc::ir;

char EvalFailure::ID = 0;

void EvalFailure::log(llvm::raw_ostream &os) const { os << message; }

std::error_code EvalFailure::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

size_t Instance::numTransfers() const {
  size_t n = 0;
  for (const InstanceStep &s : steps)
    n += s.transfers.size();
  return n;
}

void Instance::envFor(const InstanceStep &step, const Transfer &t,
                      std::vector<int64_t> &env) const {
  env.assign(step.env.begin(), step.env.end());
  env[SlotRank] = t.src;
}

std::vector<std::pair<std::string, int64_t>> Instance::namedParams() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (size_t i = 0; i < params.size() && i < schedule->params.size(); ++i)
    out.emplace_back(schedule->params[i].name, params[i]);
  return out;
}

llvm::Expected<int64_t> collc::ir::countRanks(TopologyKind kind,
                                              llvm::ArrayRef<int64_t> dims) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::make_error<EvalFailure>(
        (topologyKindName(kind) + ": " + why).str(), llvm::SMLoc());
  };
  if (dims.empty())
    return fail("no dimensions given");
  switch (kind) {
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    int64_t n = 1;
    for (int64_t d : dims) {
      if (d < 1)
        return fail("dimension " + llvm::Twine(d) + " is not positive");
      if (n > maxRanks / d)
        return fail("more than " + llvm::Twine(maxRanks) + " ranks");
      n *= d;
    }
    return n;
  }
  case TopologyKind::Hypercube:
    if (dims[0] < 0 || dims[0] > 20)
      return fail("dimension " + llvm::Twine(dims[0]) + " is outside 0..20");
    return int64_t(1) << dims[0];
  default:
    return dims[0];
  }
}

namespace {

/// Conjuncts of a top-level `a && b && ...`.
void flattenAnd(const Expr &e, llvm::SmallVectorImpl<const Expr *> &out) {
  if (e.op == ExprOp::And) {
    flattenAnd(*e.args[0], out);
    flattenAnd(*e.args[1], out);
    return;
  }
  out.push_back(&e);
}

bool readsSlot(const Expr &e, unsigned slot) {
  if (e.op == ExprOp::Var)
    return e.slot == slot;
  for (const ExprRef &a : e.args)
    if (readsSlot(*a, slot))
      return true;
  return false;
}

/// If the guard contains a conjunct `r == e` (or `e == r`) with `e`
/// independent of r, returns `e`: only the rank it evaluates to can fire.
/// This makes hand-written steps (guard `r == a`) cost one evaluation
/// instead of p.
const Expr *rankPin(const Expr &guard) {
  llvm::SmallVector<const Expr *, 4> conjuncts;
  flattenAnd(guard, conjuncts);
  for (const Expr *c : conjuncts) {
    if (c->op != ExprOp::Eq)
      continue;
    for (int side = 0; side < 2; ++side) {
      const Expr &v = *c->args[side];
      const Expr &other = *c->args[1 - side];
      if (v.op == ExprOp::Var && v.slot == SlotRank &&
          !readsSlot(other, SlotRank))
        return &other;
    }
  }
  return nullptr;
}

// Instantiation stops beyond this many steps, so a runaway loop bound is an
// error and not an out-of-memory; transfers are bounded before they are
// listed (maxRankEvaluations).
constexpr uint64_t maxSteps = uint64_t(1) << 24;

class Instantiator {
public:
  using StepSink = llvm::function_ref<llvm::Error(const InstanceStep &)>;
  /// With a sink, steps go to it without their transfers (walkSteps).
  Instantiator(const Schedule &schedule, Instance &out,
               std::optional<StepSink> sink = std::nullopt)
      : schedule(schedule), out(out), sink(sink) {}

  /// Senders tried (or, walking, that would be): see walkSteps.
  uint64_t rankEvaluations = 0;

  llvm::Error run(llvm::ArrayRef<int64_t> params,
                  llvm::function_ref<llvm::Error(const Instance &)> begin = {});

private:
  /// out.collective.permutation: `to` at every rank, refused unless it is a
  /// bijection of 0 .. p - 1 (naming a rank sent outside, or two that meet).
  llvm::Error evaluatePermutation(const Expr &to);
  llvm::Error runBody(const std::vector<BodyItem> &body);
  llvm::Error runStep(const Step &step);
  llvm::Error runLoop(const Loop &loop);
  llvm::Expected<int64_t> eval(const Expr &e, llvm::StringRef role,
                               llvm::SMLoc fallback,
                               std::optional<int64_t> rank = std::nullopt);

  const Schedule &schedule;
  Instance &out;
  std::optional<StepSink> sink;
  std::vector<int64_t> env;
  std::vector<std::pair<std::string, int64_t>> loopVars;
  unsigned stepCount = 0;
};

llvm::Expected<int64_t> Instantiator::eval(const Expr &e, llvm::StringRef role,
                                           llvm::SMLoc fallback,
                                           std::optional<int64_t> rank) {
  EvalResult r = evaluate(e, env);
  if (r.ok())
    return r.value;
  std::string msg;
  llvm::raw_string_ostream os(msg);
  os << "cannot evaluate " << role << " `" << print(e) << "`";
  if (r.where && r.where != &e)
    os << ": `" << print(*r.where) << "`";
  os << ": " << describe(r.error);
  // The values it was evaluated at, so the failing instance can be found.
  llvm::SmallVector<std::string, 4> at;
  if (rank)
    at.push_back("step " + std::to_string(stepCount + 1));
  if (rank)
    at.push_back("r = " + std::to_string(*rank));
  for (auto &[name, value] : loopVars)
    at.push_back(name + " = " + std::to_string(value));
  for (size_t i = 0; i < schedule.params.size(); ++i)
    at.push_back(schedule.params[i].name + " = " +
                 std::to_string(out.params[i]));
  if (!at.empty()) {
    os << " (at ";
    for (size_t i = 0; i < at.size(); ++i)
      os << (i ? ", " : "") << at[i];
    os << ")";
  }
  llvm::SMLoc loc = r.where && r.where->loc.isValid() ? r.where->loc
                    : e.loc.isValid()                 ? e.loc
                                                      : fallback;
  return llvm::make_error<EvalFailure>(os.str(), loc);
}

llvm::Error Instantiator::evaluatePermutation(const Expr &to) {
  auto dest = std::make_shared<std::vector<int64_t>>(out.p);
  std::vector<int64_t> sender(out.p, -1);
  auto refuse = [&](const std::string &what) {
    std::string at;
    for (size_t i = 0; i < schedule.params.size(); ++i)
      at += (i ? ", " : " (at ") + schedule.params[i].name + " = " +
            std::to_string(out.params[i]);
    return llvm::make_error<EvalFailure>(
        "permutation `" + schedule.collective.permutationText() +
            "` is not a bijection of the ranks 0.." +
            std::to_string(out.p - 1) + ": " + what +
            (at.empty() ? "" : at + ")"),
        to.loc.isValid() ? to.loc : schedule.loc);
  };
  for (int64_t r = 0; r < out.p; ++r) {
    env[SlotRank] = r;
    auto d = eval(to, "permutation", schedule.loc);
    env[SlotRank] = 0;
    if (!d)
      return d.takeError();
    if (*d < 0 || *d >= out.p)
      return refuse("it sends rank " + std::to_string(r) + " to " +
                    std::to_string(*d));
    int64_t &first = sender[static_cast<size_t>(*d)];
    if (first >= 0)
      return refuse("it sends ranks " + std::to_string(first) + " and " +
                    std::to_string(r) + " both to " + std::to_string(*d));
    first = r;
    (*dest)[static_cast<size_t>(r)] = *d;
  }
  out.collective.permutation = std::move(dest);
  return llvm::Error::success();
}

llvm::Error
Instantiator::run(llvm::ArrayRef<int64_t> params,
                  llvm::function_ref<llvm::Error(const Instance &)> begin) {
  if (params.size() != schedule.params.size())
    return llvm::make_error<EvalFailure>(
        "schedule '" + schedule.name + "' has " +
            std::to_string(schedule.params.size()) + " parameter(s), got " +
            std::to_string(params.size()) + " value(s)",
        schedule.loc);
  out.schedule = &schedule;
  out.params.assign(params.begin(), params.end());

  unsigned numSlots = std::max<unsigned>(schedule.numSlots(), NumFixedSlots);
  for (const Parameter &param : schedule.params)
    numSlots = std::max(numSlots, param.slot + 1);
  env.assign(numSlots, 0);
  for (size_t i = 0; i < params.size(); ++i)
    env[schedule.params[i].slot] = params[i];

  for (const ExprRef &dim : schedule.topology.dims) {
    auto value = eval(*dim, "topology dimension", schedule.topology.loc);
    if (!value)
      return value.takeError();
    out.dims.push_back(*value);
  }
  auto p = countRanks(schedule.topology.kind, out.dims);
  if (!p) {
    std::string msg = llvm::toString(p.takeError());
    return llvm::make_error<EvalFailure>(msg, schedule.topology.loc);
  }
  if (*p < 1 || *p > maxRanks)
    return llvm::make_error<EvalFailure>(
        "number of ranks " + std::to_string(*p) + " is outside 1.." +
            std::to_string(maxRanks),
        schedule.topology.loc);
  out.p = *p;
  env[SlotSize] = out.p;

  out.collective = schedule.collective;
  if (const ExprRef &q = schedule.collective.shiftOf) {
    auto amount = eval(*q, "shift amount", q->loc);
    if (!amount)
      return amount.takeError();
    out.collective.shift = (*amount % out.p + out.p) % out.p;
    out.collective.shiftOf = nullptr;
  }
  if (const ExprRef &to = schedule.collective.permuteTo)
    if (auto err = evaluatePermutation(*to))
      return err;

  if (schedule.chunks) {
    auto k = eval(*schedule.chunks, "chunk count", schedule.loc);
    if (!k)
      return k.takeError();
    if (*k < 1)
      return llvm::make_error<EvalFailure>(
          "chunk count `" + print(*schedule.chunks) + "` is " +
              std::to_string(*k) + "; it must be at least 1",
          schedule.chunks->loc.isValid() ? schedule.chunks->loc : schedule.loc);
    out.chunks = *k;
  }
  if (begin)
    if (auto err = begin(out))
      return err;
  return runBody(schedule.body);
}

llvm::Error Instantiator::runBody(const std::vector<BodyItem> &body) {
  for (const BodyItem &item : body) {
    if (const Step *step = std::get_if<Step>(&item)) {
      if (auto err = runStep(*step))
        return err;
    } else if (auto err = runLoop(*std::get<std::shared_ptr<Loop>>(item))) {
      return err;
    }
  }
  return llvm::Error::success();
}

llvm::Error Instantiator::runLoop(const Loop &loop) {
  auto lo = eval(*loop.lo, "loop bound", loop.loc);
  if (!lo)
    return lo.takeError();
  auto hi = eval(*loop.hi, "loop bound", loop.loc);
  if (!hi)
    return hi.takeError();
  if (*lo > *hi)
    return llvm::Error::success();
  if (static_cast<uint64_t>(*hi) - static_cast<uint64_t>(*lo) >= maxSteps)
    return llvm::make_error<EvalFailure>(
        "loop over " + loop.var + " from " + std::to_string(*lo) + " to " +
            std::to_string(*hi) + " has too many iterations",
        loop.loc);
  if (loop.slot >= env.size())
    env.resize(loop.slot + 1, 0);
  int64_t saved = env[loop.slot];
  loopVars.emplace_back(loop.var, 0);
  for (int64_t n = 0, count = *hi - *lo + 1; n < count; ++n) {
    int64_t v = loop.reverse ? *hi - n : *lo + n;
    env[loop.slot] = v;
    loopVars.back().second = v;
    if (auto err = runBody(loop.body))
      return err;
  }
  loopVars.pop_back();
  env[loop.slot] = saved;
  return llvm::Error::success();
}

llvm::Error Instantiator::runStep(const Step &step) {
  if (stepCount >= maxSteps)
    return llvm::make_error<EvalFailure>(
        "schedule has more than " + std::to_string(maxSteps) + " steps",
        step.loc);
  InstanceStep inst;
  inst.number = stepCount + 1;
  inst.step = &step;
  inst.loopVars = loopVars;

  for (unsigned ruleIndex = 0; ruleIndex < step.rules.size(); ++ruleIndex) {
    const TransferRule &rule = step.rules[ruleIndex];
    auto fire = [&](int64_t r) -> llvm::Error {
      env[SlotRank] = r;
      if (rule.guard) {
        auto g = eval(*rule.guard, "guard", rule.loc, r);
        if (!g)
          return g.takeError();
        if (*g == 0)
          return llvm::Error::success();
      }
      auto peer = eval(*rule.peer, "peer", rule.loc, r);
      if (!peer)
        return peer.takeError();
      inst.transfers.push_back({r, *peer, ruleIndex});
      return llvm::Error::success();
    };

    const Expr *pin = rule.guard ? rankPin(*rule.guard) : nullptr;
    std::optional<int64_t> only;
    if (pin) {
      env[SlotRank] = 0;
      EvalResult v = evaluate(*pin, env);
      if (v.ok())
        only = v.value;
    }
    rankEvaluations += only ? 1 : static_cast<uint64_t>(out.p);
    if (sink)
      continue;
    if (only) {
      if (*only >= 0 && *only < out.p)
        if (auto err = fire(*only))
          return err;
    } else {
      for (int64_t r = 0; r < out.p; ++r)
        if (auto err = fire(r))
          return err;
    }
  }
  env[SlotRank] = 0;
  inst.env = env;
  ++stepCount;
  if (sink)
    return (*sink)(inst);
  out.steps.push_back(std::move(inst));
  return llvm::Error::success();
}

} // namespace

llvm::Expected<Instance>
collc::ir::instantiate(const Schedule &schedule,
                       llvm::ArrayRef<int64_t> params) {
  // Counted first, so an instance too large to build is refused before it
  // takes the memory.
  uint64_t evaluations = 0;
  llvm::Expected<Instance> shape = walkSteps(
      schedule, params,
      [](const InstanceStep &) { return llvm::Error::success(); },
      &evaluations);
  if (!shape)
    return shape.takeError();
  if (evaluations > maxRankEvaluations)
    return llvm::make_error<EvalFailure>(
        "schedule '" + schedule.name + "' at p = " + std::to_string(shape->p) +
            " would try " + std::to_string(evaluations) +
            " senders (every rank, for each rule of each step), more than "
            "the " +
            std::to_string(maxRankEvaluations) + " collc instantiates",
        schedule.loc);
  Instance out;
  Instantiator inst(schedule, out);
  if (auto err = inst.run(params))
    return err;
  return out;
}

llvm::Expected<Instance>
collc::ir::walkSteps(const Schedule &schedule, llvm::ArrayRef<int64_t> params,
                     llvm::function_ref<llvm::Error(const InstanceStep &)> fn,
                     uint64_t *rankEvaluations,
                     llvm::function_ref<llvm::Error(const Instance &)> begin) {
  // A composition's steps come from its parts (library/Compose.h); one that
  // was never composed has none, and must not pass for a schedule that
  // sends nothing.
  if (!schedule.parts.empty() && schedule.body.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "schedule '%s' is a composition whose parts were not composed",
        schedule.name.c_str());
  Instance out;
  Instantiator inst(schedule, out, fn);
  if (auto err = inst.run(params, begin))
    return err;
  if (rankEvaluations)
    *rankEvaluations = inst.rankEvaluations;
  return out;
}
