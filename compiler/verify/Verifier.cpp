#include "verify/Verifier.h"

#include "ir/Instantiate.h"
#include "prove/Induction.h"
#include "prove/Prover.h"
#include "simulate/Simulator.h"
#include "topology/Topology.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <map>

using namespace collc;
using namespace collc::verify;

namespace {

llvm::Error inputError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

using Clock = std::chrono::steady_clock;
/// How far simulation cross-checks a family proved by induction: every
/// member of up to this many ranks. A size, not a time, so that the report
/// does not depend on the machine's speed or load (5 s before reached
/// p = 2289 for ring_bc and 1642 for ring_reduce in one loaded run).
constexpr int64_t crossCheckRanks = 256;
/// And at most this much of the simulator's work (SimulateOptions::
/// workLimit) over all members: selectors that interval evaluation cannot
/// decide by whole boxes cost per chunk, and an all-to-all has p^2 of them;
/// its runs cost too, p^3 moved over a member of the one-step spread.
constexpr uint64_t crossCheckWork = uint64_t(1) << 24;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The topology dimensions of the family member with parameter values
/// `values` (indexed like Schedule::params).
std::optional<std::vector<int64_t>> dimsFor(const ir::Schedule &s,
                                            llvm::ArrayRef<int64_t> values) {
  std::vector<int64_t> env(s.numSlots(), 0);
  for (size_t i = 0; i < s.params.size(); ++i)
    env[s.params[i].slot] = values[i];
  std::vector<int64_t> dims;
  for (const ir::ExprRef &d : s.topology.dims) {
    ir::EvalResult r = ir::evaluate(*d, env);
    if (!r.ok())
      return std::nullopt;
    dims.push_back(r.value);
  }
  return dims;
}

/// Ranks of the family member with parameter values `values`.
std::optional<int64_t> ranksFor(const ir::Schedule &s,
                                llvm::ArrayRef<int64_t> values) {
  std::optional<std::vector<int64_t>> dims = dimsFor(s, values);
  if (!dims)
    return std::nullopt;
  llvm::Expected<int64_t> n = ir::countRanks(s.topology.kind, *dims);
  if (!n) {
    llvm::consumeError(n.takeError());
    return std::nullopt;
  }
  return *n;
}

/// The parameter values a counterexample names, indexed like
/// Schedule::params.
std::optional<std::vector<int64_t>> paramValues(const ir::Schedule &s,
                                                const Counterexample &c) {
  std::vector<int64_t> values;
  for (const ir::Parameter &param : s.params) {
    auto it = llvm::find_if(
        c.params, [&](const auto &pv) { return pv.first == param.name; });
    if (it == c.params.end())
      return std::nullopt;
    values.push_back(it->second);
  }
  return values;
}

/// Whether a schedule without parameters can be verified as asked: no
/// --param for it, and its one member within `ranks`; or why not.
llvm::Error
checkSingleMember(const ir::Schedule &s, const VerifyOptions &options,
                  const std::optional<std::pair<int64_t, int64_t>> &ranks) {
  if (!options.params.empty() && !options.paramsWithinDeclared)
    return inputError("schedule '" + s.name + "' has no parameters");
  if (ranks) {
    std::optional<int64_t> n = ranksFor(s, {});
    if (!n || *n < ranks->first || *n > ranks->second)
      return inputError("schedule '" + s.name + "' is for " +
                        describeTopology(s.topology) + " (" +
                        std::to_string(n.value_or(0)) +
                        " ranks), outside the requested size");
  }
  return llvm::Error::success();
}

/// The range of `param` that the options give or the schedule declares
/// (lo > hi where neither does, or where a rank count will set it).
ParamRange
givenOrDeclared(const ir::Schedule &s, const ir::Parameter &param,
                const VerifyOptions &options,
                const std::optional<std::pair<int64_t, int64_t>> &ranks) {
  if (std::optional<ParamRange> given = ir::givenRange(
          s, param, options.params, options.paramsWithinDeclared))
    return *given;
  if (param.range && !ranks)
    return {param.name, param.range->first, param.range->second};
  return {param.name, 0, -1};
}

/// Whether every --param names a parameter of `s`; or the first that does
/// not.
llvm::Error checkParamNames(const ir::Schedule &s,
                            const VerifyOptions &options) {
  for (const ParamRange &given : options.params)
    if (!options.paramsWithinDeclared &&
        llvm::none_of(s.params, [&](const ir::Parameter &p) {
          return p.name == given.name;
        }))
      return inputError("schedule '" + s.name + "' has no parameter '" +
                        given.name + "'");
  return llvm::Error::success();
}

/// Sets the range of `s`'s one parameter to the values whose members have
/// `ranks` ranks; or why it cannot.
llvm::Error narrowToRanks(const ir::Schedule &s,
                          const std::pair<int64_t, int64_t> &ranks,
                          std::vector<ParamRange> &ranges) {
  if (s.params.size() != 1)
    return inputError("schedule '" + s.name +
                      "' has several parameters; give each with --param");
  // Sizes grow with the parameter in every topology family, so the
  // matching values form one interval.
  int64_t lo = -1, hi = -1;
  for (int64_t v = 0; v <= maxRanks; ++v) {
    std::optional<int64_t> n = ranksFor(s, {v});
    if (!n)
      continue;
    if (*n > ranks.second)
      break;
    if (*n >= ranks.first) {
      if (lo < 0)
        lo = v;
      hi = v;
    }
  }
  if (lo < 0)
    return inputError("no member of schedule '" + s.name + "' (" +
                      describeTopology(s.topology) + ") has " +
                      (ranks.first == ranks.second
                           ? std::to_string(ranks.first)
                           : std::to_string(ranks.first) + ".." +
                                 std::to_string(ranks.second)) +
                      " ranks");
  ranges[0] = {s.params[0].name, lo, hi};
  return llvm::Error::success();
}

/// Whether every range is non-empty; or how to give the first that is not.
llvm::Error checkBounded(const ir::Schedule &s,
                         const std::vector<ParamRange> &ranges) {
  for (const ParamRange &r : ranges)
    if (r.lo > r.hi)
      return inputError("schedule '" + s.name + "' is a family over '" +
                        r.name + "'; give its range with 'where " + r.name +
                        " in LO .. HI', --param " + r.name +
                        "=LO..HI or --range LO..HI");
  return llvm::Error::success();
}

/// The parameter ranges to verify over.
llvm::Expected<std::vector<ParamRange>>
resolveRanges(const ir::Schedule &s, const VerifyOptions &options) {
  std::vector<ParamRange> ranges;
  std::optional<std::pair<int64_t, int64_t>> ranks = options.ranks;
  if (options.p)
    ranks = std::make_pair(*options.p, *options.p);

  if (s.params.empty()) {
    if (llvm::Error e = checkSingleMember(s, options, ranks))
      return e;
    return ranges;
  }

  for (const ir::Parameter &param : s.params)
    ranges.push_back(givenOrDeclared(s, param, options, ranks));
  if (llvm::Error e = checkParamNames(s, options))
    return e;

  if (ranks)
    if (llvm::Error e = narrowToRanks(s, *ranks, ranges))
      return e;
  if (llvm::Error e = checkBounded(s, ranges))
    return e;
  return ranges;
}

/// The solver's limit per query in milliseconds (0: none); a fraction of a
/// millisecond is a millisecond, since 0 would mean no limit at all.
unsigned timeoutMs(const VerifyOptions &options) {
  if (options.timeoutSeconds <= 0)
    return 0;
  double ms = std::ceil(options.timeoutSeconds * 1000);
  return ms >= std::numeric_limits<unsigned>::max()
             ? std::numeric_limits<unsigned>::max()
             : static_cast<unsigned>(ms);
}

bool wanted(const VerifyOptions &options, Property p) {
  return options.only.empty() || llvm::is_contained(options.only, p);
}

/// The topology of the family member with the counterexample's parameters.
std::optional<Topology> topologyFor(const ir::Schedule &s,
                                    const Counterexample &c) {
  std::optional<std::vector<int64_t>> values = paramValues(s, c);
  std::optional<std::vector<int64_t>> dims =
      values ? dimsFor(s, *values) : std::nullopt;
  if (!dims)
    return std::nullopt;
  auto t = Topology::make(s.topology.kind, *dims, s.topology.edges,
                          s.topology.order);
  if (!t) {
    llvm::consumeError(t.takeError());
    return std::nullopt;
  }
  return std::move(*t);
}

/// The family member a counterexample lives in.
std::optional<ir::Instance> instanceFor(const ir::Schedule &s,
                                        const Counterexample &c) {
  std::optional<std::vector<int64_t>> values = paramValues(s, c);
  if (!values)
    return std::nullopt;
  llvm::Expected<ir::Instance> instance = ir::instantiate(s, *values);
  if (!instance) {
    llvm::consumeError(instance.takeError());
    return std::nullopt;
  }
  return std::move(*instance);
}

/// A congestion counterexample names two messages that share a channel; a
/// person wants the worst channel of that step (Figure 4.12's four
/// messages, not any two of them). Recount the step's loads concretely.
void showMostLoadedChannel(const ir::Schedule &s, Counterexample &c) {
  if (c.step < 1)
    return;
  std::optional<ir::Instance> instance = instanceFor(s, c);
  if (!instance)
    return;
  std::optional<Topology> topo = topologyFor(s, c);
  if (!topo || c.step > (int64_t)instance->steps.size())
    return;
  const ir::InstanceStep &step = instance->steps[c.step - 1];
  std::map<Channel, std::vector<TransferRef>> users;
  llvm::SmallVector<Channel, 16> route;
  for (const ir::Transfer &t : step.transfers) {
    if (t.dst < 0 || t.dst >= topo->numRanks() || t.dst == t.src)
      continue;
    route.clear();
    topo->route(t.src, t.dst, route);
    for (const Channel &ch : route)
      users[ch].push_back({t.src, t.dst});
  }
  const std::pair<const Channel, std::vector<TransferRef>> *worst = nullptr;
  for (const auto &entry : users)
    if (!worst || entry.second.size() > worst->second.size())
      worst = &entry;
  if (!worst || worst->second.size() < 2)
    return;
  c.channel = std::make_pair(worst->first.from, worst->first.to);
  c.load = static_cast<int64_t>(worst->second.size());
  c.transfers = worst->second;
  c.p = topo->numRanks();
  c.message = c.channelLoad();
}

/// A composition's verdicts from its parts' own proofs (000 §4.7.1).
/// Its steps are its parts' steps with their chunks renamed, so matching,
/// contention and congestion, which each step decides alone, hold where
/// the parts' do. Where the first part ends with rank x holding piece x and
/// the second starts from that and only moves it (meaning::splitsInto),
/// the composition computes its collective, each rank sending only what it
/// holds, if each part computes its own: causality and correctness follow
/// from the parts'. The parts are proved as declared, on the composition's
/// topology.
struct FromParts {
  std::string method;
  std::vector<PropertyResult> symbolic, inductive;
};

/// The two parts `s` is proved from, or none where it is proved whole.
std::optional<std::pair<const ir::Schedule *, const ir::Schedule *>>
provingParts(const ir::Schedule &s) {
  if (s.parts.size() != 2 || !s.parts[0].schedule || !s.parts[1].schedule)
    return std::nullopt;
  const ir::Schedule &first = *s.parts[0].schedule,
                     &second = *s.parts[1].schedule;
  if (!ir::splitsInto(s.collective.kind, first.collective.kind,
                      second.collective.kind))
    return std::nullopt;
  // The parts must be this schedule's as composed (library/Compose.h): the
  // same root, and topologies of the same shape, the same kind or one
  // inside it. A schedule moved or renamed since is proved as itself.
  for (const ir::Schedule *part : {&first, &second}) {
    const ir::TopologyTemplate &t = part->topology;
    if (!runsInside(t.kind, s.topology.kind) ||
        t.dims.size() != s.topology.dims.size() ||
        t.edges != s.topology.edges || t.order != s.topology.order ||
        (ir::isRooted(part->collective.kind) &&
         part->collective.root != s.collective.root))
      return std::nullopt;
  }
  return std::make_pair(&first, &second);
}

/// The options the parts are verified with; their parameters are set per
/// part.
VerifyOptions partOptionsFor(const VerifyOptions &options) {
  VerifyOptions partOptions = options;
  partOptions.p.reset();
  partOptions.ranks.reset();
  partOptions.nameSenders = false;
  // Causality of the second part rests on the first's correctness.
  if (!partOptions.only.empty() && (wanted(options, Property::Causality) ||
                                    wanted(options, Property::Correctness)))
    for (Property p : {Property::Causality, Property::Correctness})
      if (!llvm::is_contained(partOptions.only, p))
        partOptions.only.push_back(p);
  return partOptions;
}

/// Whether `ranges` are the family as declared. Asked for that, the parts
/// are proved as declared too where that holds it: what verifying them (the
/// library) proves. Asked for less, or for one size, they are proved over
/// as much.
bool rangesAsDeclared(const ir::Schedule &s,
                      const std::vector<ParamRange> &ranges) {
  bool asDeclared =
      ranges.size() == s.params.size() &&
      llvm::any_of(ranges, [](const ParamRange &r) { return r.lo < r.hi; });
  for (size_t j = 0; j < ranges.size() && asDeclared; ++j)
    asDeclared = s.params[j].range &&
                 s.params[j].range->first == ranges[j].lo &&
                 s.params[j].range->second == ranges[j].hi;
  return asDeclared;
}

/// The range of the part's parameter `q`, which takes the composition's
/// dimension it stands for (ir::partParameters): a constant, or one of its
/// parameters, over that one's range. None where no dimension gives it.
std::optional<ParamRange>
partRange(const ir::Schedule &s, const std::vector<ParamRange> &ranges,
          const std::map<unsigned, ir::ExprRef> &given, const ir::Parameter &q,
          bool asDeclared) {
  std::optional<ParamRange> range;
  auto it = given.find(q.slot);
  if (it != given.end() && it->second->isConst())
    range = ParamRange{q.name, it->second->value, it->second->value};
  else if (it != given.end())
    for (size_t j = 0; j < s.params.size() && j < ranges.size(); ++j)
      if (it->second->op == ir::ExprOp::Var &&
          s.params[j].slot == it->second->slot)
        range = ParamRange{q.name, ranges[j].lo, ranges[j].hi};
  if (!range)
    return std::nullopt;
  if (asDeclared && q.range && q.range->first <= range->lo &&
      range->hi <= q.range->second)
    range = ParamRange{q.name, q.range->first, q.range->second};
  return range;
}

/// Verifies one part of `s` with `partOptions`, its parameters set here.
/// Returns why `s` must be proved whole instead, or none where the part
/// proved every property asked.
std::optional<std::string> provePart(const ir::Schedule &s,
                                     const ir::Schedule &declared,
                                     const std::vector<ParamRange> &ranges,
                                     bool asDeclared,
                                     VerifyOptions &partOptions) {
  // A part for a topology inside the composition's (a linear array in a
  // ring: library/Compose.h) is proved on the composition's, whose
  // routes its messages take there.
  std::optional<ir::Schedule> inside;
  if (declared.topology.kind != s.topology.kind) {
    inside = declared;
    inside->topology.kind = s.topology.kind;
  }
  const ir::Schedule *part = inside ? &*inside : &declared;
  partOptions.params.clear();
  const std::map<unsigned, ir::ExprRef> given =
      ir::partParameters(s.topology, *part);
  for (const ir::Parameter &q : part->params) {
    std::optional<ParamRange> range =
        partRange(s, ranges, given, q, asDeclared);
    if (!range)
      return "'" + part->name + "' has parameter '" + q.name +
             "', which no dimension of the composition gives";
    partOptions.params.push_back(*range);
  }
  if (partOptions.verbose)
    *partOptions.verbose << "prove " << s.name << " from its part "
                         << part->name
                         << (inside ? " on " + describeTopology(part->topology)
                                    : std::string())
                         << (partOptions.params.empty()
                                 ? std::string()
                                 : ", " + ir::rangeText(partOptions.params))
                         << "\n";
  llvm::Expected<ScheduleReport> report = verifySchedule(*part, partOptions);
  if (!report) {
    std::string why = llvm::toString(report.takeError());
    return "'" + part->name + "': " + why;
  }
  for (const PropertyResult &r : report->properties)
    if (r.status != Status::Proved)
      return "'" + part->name + "' has " + propertyName(r.property) + " " +
             statusName(r.status);
  return std::nullopt;
}

/// Records each property asked as proved from the parts: causality and
/// correctness by induction, the per-step ones symbolically.
void addPartVerdicts(FromParts &result, const VerifyOptions &options) {
  for (Property p :
       {Property::Matching, Property::Contention, Property::Congestion,
        Property::Causality, Property::Correctness}) {
    if (!wanted(options, p))
      continue;
    PropertyResult r;
    r.property = p;
    r.status = Status::Proved;
    r.method = result.method;
    (p == Property::Causality || p == Property::Correctness ? result.inductive
                                                            : result.symbolic)
        .push_back(r);
  }
}

std::optional<FromParts> proveFromParts(const ir::Schedule &s,
                                        const std::vector<ParamRange> &ranges,
                                        const VerifyOptions &options) {
  std::optional<std::pair<const ir::Schedule *, const ir::Schedule *>> parts =
      provingParts(s);
  if (!parts)
    return std::nullopt;
  const ir::Schedule &first = *parts->first, &second = *parts->second;
  VerifyOptions partOptions = partOptionsFor(options);
  const bool asDeclared = rangesAsDeclared(s, ranges);
  FromParts result;
  result.method = "from its parts: " + first.name + ", " + second.name;
  for (const ir::Schedule *declared : {&first, &second})
    if (std::optional<std::string> why =
            provePart(s, *declared, ranges, asDeclared, partOptions)) {
      if (options.verbose)
        *options.verbose << "prove " << s.name << " whole: " << *why << "\n";
      return std::nullopt;
    }
  addPartVerdicts(result, options);
  return result;
}

} // namespace

std::string collc::verify::describeCollective(const ir::Collective &c) {
  using CK = ir::CollectiveKind;
  std::string s = ir::collectiveKindName(c.kind).str();
  std::vector<std::string> args;
  if (ir::isRooted(c.kind))
    args.push_back("root: " + std::to_string(c.root));
  if (ir::isReduction(c.kind))
    args.push_back("op: " + c.op);
  if (ir::isReduction(c.kind) && !c.commutative)
    args.push_back("commutative: false");
  if (c.kind == CK::Shift)
    args.push_back(
        "q: " + (c.shiftOf ? ir::print(*c.shiftOf) : std::to_string(c.shift)));
  if (c.permuteTo)
    args.push_back("to: " + c.permutationText());
  if (!args.empty())
    s += "(" + llvm::join(args, ", ") + ")";
  return s;
}

std::string collc::verify::describeTopology(const ir::TopologyTemplate &t) {
  std::vector<std::string> dims;
  for (const ir::ExprRef &d : t.dims)
    dims.push_back(ir::print(*d));
  std::string kind = topologyKindName(t.kind).str();
  switch (t.kind) {
  case TopologyKind::Hypercube:
    return kind + "(dim: " + dims[0] +
           (t.order == RankOrder::Gray ? ", order: gray)" : ")");
  case TopologyKind::Tree:
    return kind + "(leaves: " + dims[0] + ")";
  default:
    return kind + "(" + llvm::join(dims, ", ") + ")";
  }
}

Status ScheduleReport::verdict() const {
  bool unknown = false;
  for (const PropertyResult &r : properties) {
    if (r.status == Status::Counterexample)
      return Status::Counterexample;
    if (r.status == Status::Error)
      return Status::Error;
    unknown |= r.status == Status::Unknown;
  }
  return unknown ? Status::Unknown : Status::Proved;
}

namespace {

/// What simulating a family's members, smallest first, found: the
/// independent check of what Z3 proves, and the verdict where it cannot.
struct SimulationRun {
  std::vector<std::optional<PropertyResult>> firstFailure =
      std::vector<std::optional<PropertyResult>>(5);
  std::vector<bool> holdsEverywhere = std::vector<bool>(5, true);
  size_t simulated = 0;
  bool complete = false;
  std::string stopReason;
  std::string covered; // "d = 1..4 (up to p = 16)", or "no size"
  std::vector<Counterexample> warnings;

  PropertyResult verdict(Property p) const {
    size_t i = static_cast<size_t>(p);
    if (firstFailure[i])
      return *firstFailure[i];
    PropertyResult r;
    r.property = p;
    r.method = "simulation";
    if (simulated > 0 && (complete || holdsEverywhere[i])) {
      r.status = complete ? Status::Proved : Status::Unknown;
      r.detail = complete ? "every size simulated: " + covered
                          : "simulated " + covered + "; " + stopReason;
    } else {
      r.status = Status::Unknown;
      r.detail = "nothing simulated; " + stopReason;
    }
    return r;
  }
};

/// Every member of the family, smallest first, at most 100000 of them
/// (`cut` says the list was cut, so no run over it can be complete).
std::vector<std::vector<int64_t>>
membersBySize(const ir::Schedule &s, llvm::ArrayRef<ParamRange> ranges,
              bool &cut) {
  std::vector<std::vector<int64_t>> members{{}};
  cut = false;
  for (const ParamRange &r : ranges) {
    std::vector<std::vector<int64_t>> next;
    for (const auto &m : members)
      for (int64_t v = r.lo; v <= r.hi; ++v) {
        if (next.size() == 100000) {
          cut = true;
          break;
        }
        next.push_back(m);
        next.back().push_back(v);
      }
    members = std::move(next);
  }
  std::sort(members.begin(), members.end(), [&](const auto &a, const auto &b) {
    return ranksFor(s, a).value_or(0) < ranksFor(s, b).value_or(0);
  });
  return members;
}

/// A simulation run's budgets and what it has spent of them.
struct SimulationBudget {
  int64_t transfers = 0;
  uint64_t work = 0;
  std::string workOut; // the stop reason once `work` is spent
  int64_t transfersSimulated = 0;
  uint64_t workSpent = 0;
};

/// The budgets of `options`, or the cross-check's after a proof by
/// induction (`inducedAll`).
SimulationBudget budgetFor(const VerifyOptions &options, bool inducedAll) {
  SimulationBudget b;
  b.transfers = options.simulationBudgetTransfers;
  b.work = inducedAll ? crossCheckWork : options.simulationBudgetWork;
  b.workOut = (inducedAll ? "the cross-check of a proof by induction stops at "
                          : "the simulation budget of ") +
              std::to_string(b.work) + " units of the simulator's work" +
              (inducedAll ? "" : " ran out");
  return b;
}

/// Why the run stops before a member of `n` ranks, or "" to simulate it.
std::string stopBefore(std::optional<int64_t> n, const SimulationRun &run,
                       const SimulationBudget &b, const VerifyOptions &options,
                       bool inducedAll) {
  if (n && *n > options.maxSimulatedRanks)
    return "sizes above " + std::to_string(options.maxSimulatedRanks) +
           " ranks are not simulated";
  if (inducedAll && n && *n > crossCheckRanks)
    return "the cross-check of a proof by induction stops at " +
           std::to_string(crossCheckRanks) + " ranks";
  // A budget of work, not of seconds: how far simulation gets, and so
  // the verdict, is the same on any machine under any load.
  if (run.simulated > 0 && b.transfersSimulated > b.transfers)
    return "the simulation budget of " + std::to_string(b.transfers) +
           " transfers ran out";
  if (b.workSpent >= b.work)
    return b.workOut;
  return "";
}

/// Adds one finished member's transfers, warnings and failures to the run.
void recordMember(SimulationRun &run, SimulationBudget &b,
                  const simulate::SimulationResult &result) {
  ++run.simulated;
  for (const simulate::StepStats &step : result.steps)
    b.transfersSimulated += static_cast<int64_t>(step.messageChunks.size());
  if (run.warnings.empty())
    run.warnings = result.warnings;
  for (const PropertyResult &r : result.properties) {
    size_t i = static_cast<size_t>(r.property);
    if (r.status != Status::Proved) {
      run.holdsEverywhere[i] = false;
      if (!run.firstFailure[i])
        run.firstFailure[i] = r;
    }
  }
}

/// Sets whether the run is complete, why not, and what it covered.
void describeCoverage(SimulationRun &run, llvm::ArrayRef<ParamRange> ranges,
                      const std::vector<std::vector<int64_t>> &members,
                      bool cut, int64_t largestP) {
  run.complete = !cut && run.simulated == members.size();
  if (cut && run.stopReason.empty())
    run.stopReason = "the family has more than 100000 members, of which "
                     "100000 are simulated";
  std::vector<ParamRange> coveredRanges = ranges.vec();
  // Members run smallest first, so a cut-off range ends at the last one's
  // value (a complete run covers every range whole, whatever the order).
  if (!coveredRanges.empty() && run.simulated && !run.complete)
    coveredRanges.back().hi = members[run.simulated - 1].back();
  // A cut-off run over several parameters covers no range whole: count it.
  std::string covered =
      !run.complete && ranges.size() > 1
          ? "the first " + std::to_string(run.simulated) + " members by size"
          : ir::rangeText(coveredRanges);
  run.covered =
      run.simulated == 0
          ? "no size"
          : (ranges.empty()
                 ? "p = " + std::to_string(largestP)
                 : covered + " (up to p = " + std::to_string(largestP) + ")");
}

/// Simulates the members of `ranges` until a budget, a size limit or a
/// failure of every property stops it. After a proof by induction
/// (`inducedAll`) it is a cross-check of the smaller sizes only.
llvm::Expected<SimulationRun> simulateMembers(const ir::Schedule &s,
                                              llvm::ArrayRef<ParamRange> ranges,
                                              const VerifyOptions &options,
                                              bool inducedAll) {
  SimulationRun run;
  SimulationBudget budget = budgetFor(options, inducedAll);
  bool cut = false;
  std::vector<std::vector<int64_t>> members = membersBySize(s, ranges, cut);

  simulate::SimulateOptions so;
  so.ports = options.ports;
  int64_t largestP = 0;
  // Asked only for what Z3 decides: it is the verdict of record, so skip the
  // (possibly long) cross-checking simulation.
  const bool wantedHere = wanted(options, Property::Causality) ||
                          wanted(options, Property::Correctness);
  if (!wantedHere)
    run.stopReason = "simulation not requested";
  for (size_t m = 0; wantedHere && m < members.size(); ++m) {
    const std::vector<int64_t> &member = members[m];
    std::optional<int64_t> n = ranksFor(s, member);
    std::string stop = stopBefore(n, run, budget, options, inducedAll);
    if (!stop.empty()) {
      run.stopReason = std::move(stop);
      break;
    }
    so.workLimit = budget.work - budget.workSpent;
    llvm::Expected<simulate::SimulationResult> result =
        simulate::simulate(s, member, so);
    if (!result)
      return result.takeError();
    budget.workSpent += result->work;
    if (result->unfinished) {
      run.stopReason = budget.workOut;
      break;
    }
    recordMember(run, budget, *result);
    largestP = std::max(largestP, n.value_or(0));
    // Once every property has failed somewhere, larger sizes add nothing.
    if (llvm::all_of(run.firstFailure,
                     [](const auto &f) { return f.has_value(); }))
      break;
  }
  describeCoverage(run, ranges, members, cut, largestP);
  return run;
}

/// The verdict on one property from Z3's (`z3`) and the simulator's
/// (`sim`): the two checkers are independent, so a disagreement is an
/// error, and where Z3 cannot decide, an exhaustive or failing simulation
/// does.
PropertyResult reconcile(PropertyResult z3, PropertyResult sim, bool symbolic,
                         const SimulationRun &run) {
  if (!symbolic && z3.status == Status::Proved &&
      sim.status != Status::Counterexample)
    z3.detail = "for every size; " +
                (run.simulated == 0 ? "not simulated: " + run.stopReason
                                    : "simulation agrees on " + run.covered);
  if (!symbolic && z3.status == Status::Unknown &&
      sim.status == Status::Unknown) {
    // Neither decides: say what each got to.
    sim.detail += "; z3 (induction): " + z3.detail;
    z3 = sim;
  }
  if (z3.status == Status::Proved && sim.status == Status::Counterexample) {
    z3.status = Status::Error;
    z3.detail = "the prover and the simulator disagree: simulation found " +
                (sim.counterexample ? sim.counterexample->message
                                    : std::string("a violation"));
    z3.counterexample = sim.counterexample;
  } else if (z3.status == Status::Counterexample &&
             sim.status == Status::Proved) {
    z3.status = Status::Error;
    z3.detail = "the prover and the simulator disagree: the simulator "
                "finds no violation of the prover's counterexample";
  } else if (z3.status != Status::Proved &&
             z3.status != Status::Counterexample) {
    if (sim.status == Status::Counterexample || sim.status == Status::Proved) {
      sim.detail += (sim.detail.empty() ? "" : "; ") +
                    std::string(symbolic ? "z3: " : "z3 (induction): ") +
                    z3.detail;
      z3 = sim;
    }
  }
  z3.maxLoad = std::max(z3.maxLoad, sim.maxLoad);
  return z3;
}

/// Z3: matching, contention and congestion over the whole range (or as the
/// parts proved them); the senders the prover names, into `report`. The
/// prover is gone before induction starts, as its terms would steer it.
llvm::Expected<std::vector<PropertyResult>>
proveSymbolic(const ir::Schedule &s, const std::vector<ParamRange> &ranges,
              const VerifyOptions &options,
              const std::optional<FromParts> &fromParts,
              ScheduleReport &report) {
  prove::ProverOptions po;
  po.ranges = ranges;
  po.ports = options.ports;
  po.timeoutMs = timeoutMs(options);
  po.verbose = options.verbose;
  po.dumpSmt = options.dumpSmt;
  po.provedQueries = options.provedQueries;
  llvm::Expected<prove::Prover> prover = prove::Prover::create(s, po);
  if (!prover)
    return prover.takeError();
  std::vector<PropertyResult> proved;
  if (fromParts)
    proved = fromParts->symbolic;
  else
    for (Property p :
         {Property::Matching, Property::Contention, Property::Congestion})
      if (wanted(options, p))
        proved.push_back(prover->prove(p));
  if (options.nameSenders)
    report.namedSenders = prover->namedSenders();
  return proved;
}

/// Z3 by induction over the loops' invariants: causality and correctness
/// over the whole range (or as the parts proved them).
std::vector<PropertyResult>
proveInductive(const ir::Schedule &s, const std::vector<ParamRange> &ranges,
               const VerifyOptions &options,
               const std::optional<FromParts> &fromParts) {
  if (fromParts)
    return fromParts->inductive;
  bool inductionWanted = wanted(options, Property::Causality) ||
                         wanted(options, Property::Correctness);
  if (!inductionWanted || !prove::hasInvariants(s))
    return {};
  prove::InductionOptions io;
  io.ranges = ranges;
  io.timeoutMs = timeoutMs(options);
  io.verbose = options.verbose;
  io.dumpSmt = options.dumpSmt;
  io.provedQueries = options.provedQueries;
  return prove::proveByInduction(s, io);
}

/// Each wanted property's verdict in `report`: Z3's (symbolic or induced),
/// reconciled with the simulation, or the simulation's alone.
void addVerdicts(const ir::Schedule &s, const VerifyOptions &options,
                 const std::vector<PropertyResult> &proved,
                 const std::vector<PropertyResult> &induced,
                 const SimulationRun &run, ScheduleReport &report) {
  for (Property p :
       {Property::Causality, Property::Contention, Property::Congestion,
        Property::Matching, Property::Correctness}) {
    if (!wanted(options, p))
      continue;
    bool symbolic = p == Property::Contention || p == Property::Congestion ||
                    p == Property::Matching;
    const std::vector<PropertyResult> &fromZ3 = symbolic ? proved : induced;
    auto byZ3 = llvm::find_if(
        fromZ3, [&](const PropertyResult &r) { return r.property == p; });
    if (byZ3 == fromZ3.end()) {
      report.properties.push_back(run.verdict(p));
      continue;
    }
    PropertyResult verdict = reconcile(*byZ3, run.verdict(p), symbolic, run);
    if (p == Property::Congestion && verdict.counterexample)
      showMostLoadedChannel(s, *verdict.counterexample);
    report.properties.push_back(verdict);
  }
}

} // namespace

llvm::Expected<ScheduleReport>
collc::verify::verifySchedule(const ir::Schedule &s,
                              const VerifyOptions &options) {
  Clock::time_point start = Clock::now();
  ScheduleReport report;
  report.name = s.name;
  report.collective = describeCollective(s.collective);
  report.topology = describeTopology(s.topology);
  report.ports = options.ports;
  auto ranges = resolveRanges(s, options);
  if (!ranges)
    return ranges.takeError();
  report.ranges = *ranges;

  std::optional<FromParts> fromParts = proveFromParts(s, *ranges, options);
  llvm::Expected<std::vector<PropertyResult>> proved =
      proveSymbolic(s, *ranges, options, fromParts, report);
  if (!proved)
    return proved.takeError();
  std::vector<PropertyResult> induced =
      proveInductive(s, *ranges, options, fromParts);
  // Once causality and correctness hold by induction, simulation is a
  // cross-check of the smaller sizes, not the verdict.
  bool inducedAll =
      !induced.empty() && llvm::all_of(induced, [](const PropertyResult &r) {
        return r.status == Status::Proved;
      });
  llvm::Expected<SimulationRun> run =
      simulateMembers(s, *ranges, options, inducedAll);
  if (!run)
    return run.takeError();
  report.simulated = run->covered;
  report.warnings = run->warnings;
  addVerdicts(s, options, *proved, induced, *run, report);
  report.seconds = secondsSince(start);
  return report;
}

//===----------------------------------------------------------------------===//
// Text output
//===----------------------------------------------------------------------===//

namespace {

std::string paramsText(const Counterexample &c) {
  std::string s;
  for (const auto &[name, value] : c.params)
    s += (s.empty() ? "" : ", ") + name + " = " + std::to_string(value);
  return s;
}

// A family over p (full(p), ring(p)) names the rank count already.
bool paramsNameRankCount(const Counterexample &c) {
  return llvm::any_of(c.params, [](const auto &v) { return v.first == "p"; });
}

void printTrace(const ir::Schedule &s, const Counterexample &c,
                llvm::raw_ostream &os) {
  std::optional<ir::Instance> instance = instanceFor(s, c);
  if (!instance)
    return;
  int64_t last = c.step > 0 ? c.step : 0;
  if (last <= 1)
    return;
  os << "Trace:\n";
  int64_t first = std::max<int64_t>(1, last - 8);
  if (first > 1)
    os << "  (steps 1.." << first - 1 << " not shown)\n";
  for (int64_t n = first; n < last && n <= (int64_t)instance->steps.size();
       ++n) {
    const ir::InstanceStep &step = instance->steps[n - 1];
    os << "  step " << n;
    for (size_t v = 0; v < step.loopVars.size(); ++v)
      os << (v == 0 ? " (" : ", ") << step.loopVars[v].first << " = "
         << step.loopVars[v].second
         << (v + 1 == step.loopVars.size() ? ")" : "");
    os << ":";
    size_t shown = 0;
    for (const ir::Transfer &t : step.transfers) {
      if (shown++ == 12) {
        os << " ... (" << step.transfers.size() << " transfers)";
        break;
      }
      os << (shown == 1 ? " " : ", ") << t.src << " -> " << t.dst;
    }
    if (step.transfers.empty())
      os << " (no transfers)";
    os << "\n";
  }
}

/// The report's opening: the schedule, what it is for, and each property's
/// status.
void printSummary(const ScheduleReport &report, llvm::raw_ostream &os) {
  os << "schedule " << report.name << " : " << report.collective << " on "
     << report.topology;
  if (!report.ranges.empty())
    os << ", " << ir::rangeText(report.ranges);
  if (report.ports == PortModel::All)
    os << ", all-port";
  os << "\n";
  for (const PropertyResult &r : report.properties) {
    os << llvm::formatv("  {0,-12} {1,-15} ({2}", propertyName(r.property),
                        statusName(r.status), r.method);
    if (!r.detail.empty())
      os << "; " << r.detail;
    os << ")\n";
  }
}

/// One line for each warning, naming the member it is about.
void printWarnings(const ScheduleReport &report, llvm::raw_ostream &os) {
  for (const Counterexample &w : report.warnings) {
    std::string where = paramsText(w);
    if (!paramsNameRankCount(w))
      where += (where.empty() ? "" : ", ") + std::string("p = ") +
               std::to_string(w.p);
    os << "WARNING: " << w.message << " (" << where << ")\n";
  }
}

/// The messages a counterexample names, each with its route where the
/// member's topology is known.
void printTransfers(const ir::Schedule &s, const Counterexample &c,
                    llvm::raw_ostream &os) {
  os << "  transfers:\n";
  // Routes make congestion readable: show the path of each message.
  std::optional<Topology> topo = topologyFor(s, c);
  for (const TransferRef &t : c.transfers) {
    os << "    " << t.src << " -> " << t.dst;
    if (topo && t.src >= 0 && t.dst >= 0 && t.src < topo->numRanks() &&
        t.dst < topo->numRanks() && t.src != t.dst) {
      llvm::SmallVector<Channel, 8> route;
      topo->route(t.src, t.dst, route);
      os << "   route " << t.src;
      for (const Channel &ch : route)
        os << "->" << ch.to;
    }
    os << "\n";
  }
}

/// What went wrong for property result `r`, on which member and where, and
/// the steps that led there.
void printCounterexample(const ir::Schedule &s, const PropertyResult &r,
                         llvm::raw_ostream &os) {
  const Counterexample &c = *r.counterexample;
  os << "ERROR: " << propertyName(r.property);
  if (c.step > 0)
    os << " at step " << c.step;
  os << ": " << c.message << "\n";
  os << "Example:\n";
  if (!c.params.empty())
    os << "  " << paramsText(c) << "\n";
  if (!paramsNameRankCount(c))
    os << "  p = " << c.p << "\n";
  if (c.step > 0) {
    os << "  step " << c.step;
    for (const auto &[name, value] : c.loopVars)
      os << ", " << name << " = " << value;
    os << "\n";
  }
  if (c.rank)
    os << "  rank " << *c.rank << "\n";
  if (c.channel)
    os << "  " << c.channelLoad() << "\n";
  if (!c.chunk.empty())
    os << "  " << (llvm::StringRef(c.chunk).startswith("chunk") ? "" : "chunk ")
       << c.chunk << "\n";
  if (!c.expected.empty() || !c.actual.empty())
    os << "  expected contributions " << c.expected << ", actual " << c.actual
       << "\n";
  if (!c.transfers.empty())
    printTransfers(s, c, os);
  printTrace(s, c, os);
}

} // namespace

void collc::verify::printText(const ir::Schedule &s,
                              const ScheduleReport &report,
                              llvm::raw_ostream &os) {
  printSummary(report, os);
  printWarnings(report, os);
  for (const PropertyResult &r : report.properties) {
    if (r.status != Status::Counterexample &&
        !(r.status == Status::Error && r.counterexample))
      continue;
    if (!r.counterexample)
      continue;
    printCounterexample(s, r, os);
  }
  Status v = report.verdict();
  os << (v == Status::Proved           ? "PROVED"
         : v == Status::Counterexample ? "COUNTEREXAMPLE"
         : v == Status::Unknown        ? "UNKNOWN"
                                       : "ERROR")
     << llvm::formatv(" ({0:f2} s)\n", report.seconds);
}
