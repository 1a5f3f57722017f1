#include "cost/Cost.h"
#include "collc/Member.h"

#include "ir/Instantiate.h"
#include "simulate/Simulator.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

using namespace collc;
using namespace collc::cost;

//===----------------------------------------------------------------------===//
// Fraction
//===----------------------------------------------------------------------===//

Fraction::Fraction(int64_t n, int64_t d) : num(n), den(d) {
  assert(d > 0 && "a fraction's denominator is positive");
  int64_t g = std::gcd(num, den);
  if (g > 1) {
    num /= g;
    den /= g;
  }
}

std::string Fraction::str() const {
  return den == 1 ? std::to_string(num)
                  : std::to_string(num) + "/" + std::to_string(den);
}

Fraction &Fraction::operator+=(const Fraction &o) {
  // Over the least common multiple, so sums of many small fractions with
  // the same denominator (c/K per step) stay small.
  int64_t l = std::lcm(den, o.den);
  *this = Fraction(num * (l / den) + o.num * (l / o.den), l);
  return *this;
}

namespace collc::cost {

Fraction operator*(const Fraction &a, const Fraction &b) {
  int64_t g1 = std::gcd(a.num, b.den), g2 = std::gcd(b.num, a.den);
  g1 = g1 ? g1 : 1;
  g2 = g2 ? g2 : 1;
  return Fraction((a.num / g1) * (b.num / g2), (a.den / g2) * (b.den / g1));
}

bool operator<(const Fraction &a, const Fraction &b) {
  return static_cast<__int128>(a.num) * b.den <
         static_cast<__int128>(b.num) * a.den;
}

} // namespace collc::cost

//===----------------------------------------------------------------------===//
// Pricing a schedule
//===----------------------------------------------------------------------===//

llvm::Expected<std::optional<std::string>>
collc::cost::tooLargeToSimulate(const ir::Schedule &schedule,
                                llvm::ArrayRef<int64_t> params) {
  uint64_t evaluations = 0, steps = 0;
  llvm::Expected<ir::Instance> shape = ir::walkSteps(
      schedule, params,
      [&](const ir::InstanceStep &) {
        ++steps;
        return llvm::Error::success();
      },
      &evaluations);
  if (!shape)
    return shape.takeError();
  llvm::Expected<simulate::Semantics> semantics =
      simulate::Semantics::make(shape->collective, shape->p, shape->chunks);
  if (!semantics)
    return semantics.takeError();
  // Every rank may come to hold a run per chunk (an all-gather's blocks
  // carry different contributions), and the simulator keeps them all.
  uint64_t p = static_cast<uint64_t>(shape->p),
           universe = semantics->universeSize();
  uint64_t held = universe > UINT64_MAX / p ? UINT64_MAX : p * universe;
  // The limits it passes, with its figures.
  std::vector<std::string> over;
  auto check = [&](uint64_t n, uint64_t limit, const char *what) {
    if (n > limit)
      over.push_back(std::to_string(n) + " " + what + ", more than " +
                     std::to_string(limit));
  };
  check(evaluations, maxSimulatedRankEvaluations, "senders to try");
  check(held, maxSimulatedChunks, "chunks its ranks may hold");
  check(steps, maxSimulatedSteps, "steps");
  if (over.empty())
    return std::nullopt;
  std::string why = "at p = " + std::to_string(shape->p) +
                    " it is too large to simulate for its cost (";
  for (size_t i = 0; i < over.size(); ++i)
    why += (i ? "; " : "") + over[i];
  return why + ")";
}

namespace {

/// The cost of a member too large to simulate (`why` says how): priced
/// from its rules, which is only sound where a proof says it holds there.
llvm::Expected<ScheduleCost>
costWithoutSimulating(const ir::Schedule &schedule,
                      llvm::ArrayRef<int64_t> params,
                      const CostOptions &costOptions, const std::string &why) {
  if (costOptions.provedBy.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "%s and not known to hold there, which pricing it from its rules "
        "needs",
        why.c_str());
  llvm::Expected<ScheduleCost> fromRules =
      costFromRules(schedule, params, costOptions.ports);
  if (fromRules)
    fromRules->reliesOn = costOptions.provedBy;
  return fromRules;
}

/// Which messages carry only data their senders held at the start: the
/// chunks each rank has received, checked against what it sends. (Up to
/// a few hundred ranks; past that no message counts as fresh.)
class FreshMessages {
public:
  explicit FreshMessages(size_t steps) : fresh(steps) {}
  // The simulation's callback holds `this`.
  FreshMessages(const FreshMessages &) = delete;
  FreshMessages &operator=(const FreshMessages &) = delete;

  /// Records, as `options` simulates a member of p ranks, which messages
  /// are fresh; this must outlive the simulation.
  void watch(int64_t p, simulate::SimulateOptions &options) {
    constexpr int64_t freshRanks = 256;
    if (p > freshRanks)
      return;
    receivedBy.resize(static_cast<size_t>(p));
    arriving.resize(static_cast<size_t>(p));
    options.onTransfer = [this](const ir::InstanceStep &step, size_t transfer,
                                llvm::ArrayRef<simulate::IdRange> chunks,
                                const simulate::Semantics &) {
      record(step, transfer, chunks);
    };
  }

  /// Per step (0-based), whether each of its messages is fresh; may be
  /// shorter than the step's messages, the rest not fresh.
  const std::vector<bool> &ofStep(size_t index) const { return fresh[index]; }

private:
  void record(const ir::InstanceStep &step, size_t transfer,
              llvm::ArrayRef<simulate::IdRange> chunks) {
    if (step.number != arrivingStep) { // the steps before have arrived
      for (size_t r = 0; r < arriving.size(); ++r) {
        for (const simulate::IdRange &ids : arriving[r])
          receivedBy[r].assign(ids.lo, ids.hi, 0);
        arriving[r].clear();
      }
      arrivingStep = step.number;
    }
    const ir::Transfer &t = step.transfers[transfer];
    std::vector<bool> &f = fresh[step.number - 1];
    f.resize(step.transfers.size(), false);
    bool held = true;
    for (const simulate::IdRange &c : chunks)
      receivedBy[static_cast<size_t>(t.src)].visit(
          c.lo, c.hi, [&](uint64_t, uint64_t, uint32_t) { held = false; },
          [](uint64_t, uint64_t) {});
    f[transfer] = held;
    std::vector<simulate::IdRange> &into = arriving[static_cast<size_t>(t.dst)];
    into.insert(into.end(), chunks.begin(), chunks.end());
  }

  std::vector<simulate::ChunkRuns> receivedBy;          // the ids, value 0
  std::vector<std::vector<simulate::IdRange>> arriving; // this step's
  std::vector<std::vector<bool>> fresh;
  unsigned arrivingStep = 0;
};

/// The first property the simulation did not prove, and how it fails
/// (empty when there is none).
std::string firstFailure(const simulate::SimulationResult &sim) {
  for (const verify::PropertyResult &r : sim.properties) {
    if (r.status == verify::Status::Proved)
      continue;
    std::string why = verify::propertyName(r.property);
    if (r.counterexample) {
      if (r.counterexample->step > 0)
        why += " at step " + std::to_string(r.counterexample->step);
      why += ": " + r.counterexample->message;
    }
    return why;
  }
  return "";
}

/// A simulated step's cost, its words in units of m (`chunks` per block).
StepCost stepCost(const simulate::StepStats &stats,
                  const ir::InstanceStep &step, int64_t chunks,
                  const std::vector<bool> &fresh) {
  StepCost s;
  s.step = stats.step;
  s.messages = static_cast<int64_t>(step.transfers.size());
  s.maxLoad = stats.maxLoad;
  s.words = Fraction(stats.maxChannelChunks, chunks);
  int64_t allChunks = 0;
  for (int64_t messageChunks : stats.messageChunks) {
    allChunks += messageChunks;
    s.messageWords.push_back(Fraction(messageChunks, chunks));
  }
  s.totalWords = Fraction(allChunks, chunks);
  s.loopVars = step.loopVars;
  for (const ir::Transfer &t : step.transfers) {
    s.senders.push_back(t.src);
    s.receivers.push_back(t.dst);
  }
  s.fresh = fresh;
  s.fresh.resize(s.senders.size(), false);
  return s;
}

/// The cost of `instance` (`params` of its schedule) from its simulation.
ScheduleCost simulatedCost(const ir::Instance &instance,
                           llvm::ArrayRef<int64_t> params, PortModel ports,
                           const simulate::SimulationResult &sim,
                           const FreshMessages &fresh) {
  ScheduleCost cost;
  cost.p = instance.p;
  cost.collective = instance.collective;
  cost.params.assign(params.begin(), params.end());
  cost.ports = ports;
  cost.valid = sim.allHold();
  if (!cost.valid)
    cost.invalidBecause = firstFailure(sim);
  for (const simulate::StepStats &stats : sim.steps) {
    StepCost s = stepCost(stats, instance.steps[stats.step - 1],
                          instance.chunks, fresh.ofStep(stats.step - 1));
    if (s.messages > 0)
      ++cost.startups;
    cost.words += s.words;
    cost.steps.push_back(std::move(s));
  }
  return cost;
}

} // namespace

llvm::Expected<ScheduleCost>
collc::cost::costOf(const ir::Schedule &schedule,
                    llvm::ArrayRef<int64_t> params,
                    const CostOptions &costOptions) {
  const PortModel ports = costOptions.ports;
  // The member's size first: simulating it must fit in time and memory.
  llvm::Expected<std::optional<std::string>> tooLarge =
      tooLargeToSimulate(schedule, params);
  if (!tooLarge)
    return tooLarge.takeError();
  if (*tooLarge)
    return costWithoutSimulating(schedule, params, costOptions, **tooLarge);
  llvm::Expected<ir::Instance> instance = ir::instantiate(schedule, params);
  if (!instance)
    return instance.takeError();
  std::vector<int64_t> dims = instance->dims;
  llvm::Expected<Topology> topology =
      Topology::make(schedule.topology.kind, dims, schedule.topology.edges,
                     schedule.topology.order);
  if (!topology)
    return topology.takeError();
  simulate::SimulateOptions options;
  options.ports = ports;
  options.stopAtViolation = costOptions.stopAtViolation;
  FreshMessages fresh(instance->steps.size());
  fresh.watch(instance->p, options);
  llvm::Expected<simulate::SimulationResult> sim =
      simulate::simulate(*instance, *topology, options);
  if (!sim)
    return sim.takeError();
  return simulatedCost(*instance, params, ports, *sim, fresh);
}

std::string collc::cost::ScheduleCost::Line::str() const {
  std::string out = startups.str() + "·t_s + ";
  if (!(overheads == Fraction()))
    out += overheads.str() + "·t_o + ";
  return out + words.str() + "·m·t_w";
}

std::pair<double, double> collc::cost::ScheduleCost::Line::coefficients(
    llvm::ArrayRef<MessageCost> segments, double bytes,
    std::optional<double> to) const {
  double a = 0, b = 0;
  for (const Part &part : parts) {
    const MessageCost seg =
        segmentOf(segments, part.largest.toDouble() * bytes);
    a += part.startups.toDouble() * seg.ts +
         part.overheads.toDouble() * to.value_or(seg.ts);
    b += part.words.toDouble() * seg.twPerByte;
  }
  return {a, b};
}

std::vector<collc::cost::ScheduleCost::Line::Part>
collc::cost::ScheduleCost::Line::partsByLargest() const {
  // Sorted, then merged: a ring of 65,536 ranks has a part per step.
  std::vector<Part> sorted(parts.begin(), parts.end()), out;
  llvm::stable_sort(sorted, [](const Part &a, const Part &b) {
    return a.largest < b.largest;
  });
  for (const Part &part : sorted) {
    if (out.empty() || !(out.back().largest == part.largest)) {
      out.push_back(part);
      continue;
    }
    out.back().startups += part.startups;
    out.back().words += part.words;
    out.back().overheads += part.overheads;
  }
  return out;
}

std::vector<double> collc::cost::ScheduleCost::Line::segmentChanges(
    llvm::ArrayRef<MessageCost> segments) const {
  std::vector<double> at;
  for (const Part &part : parts)
    if (part.largest.numerator() > 0)
      for (const MessageCost &seg : segments.drop_front())
        at.push_back(static_cast<double>(seg.fromBytes) /
                     part.largest.toDouble());
  llvm::sort(at);
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

namespace {

/// A step's largest message, in words.
Fraction largestMessage(const StepCost &s) {
  Fraction largest;
  for (const Fraction &w : s.messageWords)
    if (largest < w)
      largest = w;
  return largest;
}

/// Steps priced as one (ScheduleCost::line): its port-model cost, its
/// busiest channel's words in any one step, its words, the ranks taking
/// part, those that received in it, and the messages and words each sent
/// and received.
class StepGroup {
public:
  StepGroup(int64_t p, int64_t cores, bool receiversCopy, Fraction serve)
      : cores(cores), receiversCopy(receiversCopy), serve(serve),
        active(static_cast<size_t>(p), false),
        received(static_cast<size_t>(p), false),
        sentWords(static_cast<size_t>(p)),
        receivedWords(static_cast<size_t>(p)),
        sentMessages(static_cast<size_t>(p), 0),
        receivedMessages(static_cast<size_t>(p), 0) {}

  /// Whether `s` sends what a rank received within the group: it waits for
  /// the group, so starts the next.
  bool waitsFor(const StepCost &s) const {
    for (size_t i = 0; i < s.senders.size(); ++i)
      if (received[static_cast<size_t>(s.senders[i])] && !s.fresh[i])
        return true;
    return false;
  }

  void add(const StepCost &s) {
    portCost.startups += Fraction(1);
    portCost.words += s.words;
    if (busiestChannel < s.words)
      busiestChannel = s.words;
    totalWords += s.totalWords;
    if (largest < largestMessage(s))
      largest = largestMessage(s);
    for (size_t i = 0; i < s.senders.size(); ++i) {
      const size_t from = static_cast<size_t>(s.senders[i]),
                   to = static_cast<size_t>(s.receivers[i]);
      active[from] = active[to] = received[to] = true;
      sentWords[from] += s.messageWords[i];
      receivedWords[to] += s.messageWords[i];
      ++sentMessages[from];
      ++receivedMessages[to];
    }
  }

  /// What the group adds to the line (none: no rank took part), leaving it
  /// empty.
  std::optional<ScheduleCost::Line::Part> close() {
    const int64_t ranks = std::count(active.begin(), active.end(), true);
    ScheduleCost::Line::Part part;
    part.largest = largest;
    if (receiversCopy && (cores <= 0 || ranks <= cores)) {
      // Congestion on a channel is still priced, one step at a time.
      Fraction words = busiestChannel;
      for (const Fraction &own : receivedWords)
        if (words < own)
          words = own;
      for (const Fraction &own : sentWords)
        if (words < own * serve)
          words = own * serve;
      if (ranks > 0) {
        const int64_t busiest = std::max(
            *std::max_element(sentMessages.begin(), sentMessages.end()),
            *std::max_element(receivedMessages.begin(),
                              receivedMessages.end()));
        part.startups = Fraction(1);
        part.overheads = Fraction(busiest - 1);
        part.words = words;
      }
    } else if (cores <= 0 || ranks <= cores) {
      part.startups = portCost.startups;
      part.words = portCost.words;
    } else {
      Fraction words = totalWords * Fraction(1, cores);
      for (size_t r = 0; r < sentWords.size(); ++r)
        for (const Fraction &own : {sentWords[r], receivedWords[r]})
          if (words < own)
            words = own;
      part.startups = Fraction(ranks, cores);
      part.words = words;
    }
    clear();
    if (ranks == 0)
      return std::nullopt;
    return part;
  }

private:
  void clear() {
    portCost = {};
    busiestChannel = {};
    totalWords = {};
    largest = {};
    sentMessages.assign(sentMessages.size(), 0);
    receivedMessages.assign(receivedMessages.size(), 0);
    active.assign(active.size(), false);
    received.assign(received.size(), false);
    sentWords.assign(sentWords.size(), Fraction());
    receivedWords.assign(receivedWords.size(), Fraction());
  }

  const int64_t cores;
  const bool receiversCopy;
  const Fraction serve;
  ScheduleCost::Line portCost;
  Fraction busiestChannel, totalWords, largest;
  std::vector<bool> active, received;
  std::vector<Fraction> sentWords, receivedWords;
  std::vector<int64_t> sentMessages, receivedMessages;
};

} // namespace

collc::cost::ScheduleCost::Line
collc::cost::ScheduleCost::line(const Machine &machine) const {
  const int64_t cores = machine.cores;
  const bool receiversCopy = machine.copies == CopyModel::Receiver;
  // serve in thousandths, so that the line stays exact.
  const Fraction serve(static_cast<int64_t>(std::llround(machine.serve * 1000)),
                       1000);
  // A cost from a formula (no steps), or from the rules (no messages), is
  // the port model's.
  if ((cores <= 0 && !receiversCopy) || steps.empty() || !reliesOn.empty()) {
    Line l{Fraction(startups), words, Fraction(), {}};
    if (steps.empty()) {
      l.parts.push_back({l.startups, l.words, Fraction(), Fraction(1)});
      return l;
    }
    // A step a part, with its largest message: a simulated step's from its
    // messages; a step from the rules has no messages listed, but without
    // congestion (what its price relies on) its words are its largest
    // message, and a run of them alike (StepCost::count) is one part.
    auto fromRules = [](const StepCost &s) { return s.messageWords.empty(); };
    for (const StepCost &s : steps)
      if (s.messages > 0)
        l.parts.push_back({Fraction(s.count), s.words * Fraction(s.count),
                           Fraction(),
                           fromRules(s) ? s.words : largestMessage(s)});
    return l;
  }
  Line l;
  StepGroup group(p, cores, receiversCopy, serve);
  auto close = [&] {
    if (std::optional<Line::Part> part = group.close()) {
      l.startups += part->startups;
      l.overheads += part->overheads;
      l.words += part->words;
      l.parts.push_back(*part);
    }
  };
  for (const StepCost &s : steps) {
    if (s.messages == 0)
      continue;
    if (group.waitsFor(s))
      close();
    group.add(s);
  }
  close();
  return l;
}

char collc::cost::NoMember::ID = 0;

namespace {

/// What a search for the member with p ranks works on: the parameters'
/// values, and which of them it searches within which ranges.
struct ParamSearch {
  std::vector<int64_t> env;
  std::vector<unsigned> searched;
  std::vector<member::Range> ranges;
};

llvm::Error noMember(const ir::Schedule &schedule, int64_t p,
                     llvm::StringRef why) {
  return llvm::make_error<NoMember>(
      "'" + schedule.name + "' has no member with p = " + std::to_string(p) +
      why.str());
}

/// The values a parameter is searched over: its declared range (1..p where
/// neither it nor a --param gives one) within the first range a --param
/// gives it (ir::givenRange, as compile narrows what it proves).
member::Range searchRange(const ir::Schedule &schedule,
                          const ir::Parameter &param, int64_t p,
                          llvm::ArrayRef<ir::ParamRange> within) {
  if (std::optional<ir::ParamRange> given =
          ir::givenRange(schedule, param, within, /*withinDeclared=*/true))
    return {given->lo, given->hi};
  if (param.range)
    return {param.range->first, param.range->second};
  return {1, p};
}

// A permutation's own parameter: no size says which member is meant, unless
// a --param leaves it one value.
llvm::Error checkNoMemberChoice(const ir::Schedule &schedule, int64_t p,
                                llvm::ArrayRef<ir::ParamRange> within) {
  for (const ir::Parameter &param : schedule.params) {
    if (!schedule.isMemberChoice(param.slot))
      continue;
    const member::Range range = searchRange(schedule, param, p, within);
    if (range.lo == range.hi)
      continue;
    std::string every;
    for (const ir::Parameter &other : schedule.params)
      every += (every.empty() ? "--param " : " --param ") + other.name + "=N";
    return llvm::make_error<NoMember>(
        "the size does not set its parameter '" + param.name +
        "'; give it one value (--param " + param.name +
        "=V) or every parameter (" + every + ")");
  }
  return llvm::Error::success();
}

// The parameters the size leaves open, searched within searchRange: p's own
// is p, a shift's the amount (collc/Member.h says which member of p ranks
// runs).
llvm::Expected<ParamSearch> openParams(const ir::Schedule &schedule, int64_t p,
                                       std::optional<int64_t> amount,
                                       llvm::ArrayRef<ir::ParamRange> within) {
  ParamSearch search;
  search.env.assign(schedule.numSlots(), 0);
  for (const ir::Parameter &param : schedule.params) {
    if (schedule.collective.isShiftAmount(param.slot)) {
      // The emitted function refuses an amount outside its proved range,
      // the declared one at most.
      search.env[param.slot] = *amount;
      if (param.range &&
          (*amount < param.range->first || *amount > param.range->second))
        return noMember(schedule, p,
                        " shifting by " + std::to_string(*amount) + " (" +
                            param.name + " in " +
                            std::to_string(param.range->first) + ".." +
                            std::to_string(param.range->second) + ")");
      continue;
    }
    const member::Range range = searchRange(schedule, param, p, within);
    if (range.lo > range.hi)
      return noMember(schedule, p,
                      ": --param leaves '" + param.name + "' no value" +
                          (param.range
                               ? " within its declared range " +
                                     std::to_string(param.range->first) + ".." +
                                     std::to_string(param.range->second)
                               : std::string()));
    if (param.slot == ir::SlotSize) {
      search.env[param.slot] = p;
      if (p < range.lo || p > range.hi)
        return noMember(schedule, p,
                        " (" + param.name + " in " + std::to_string(range.lo) +
                            ".." + std::to_string(range.hi) + ")");
    } else {
      search.searched.push_back(param.slot);
      search.ranges.push_back(range);
    }
  }
  return search;
}

/// The ranks of the member whose searched parameters are `values`; -1 when
/// its topology cannot be evaluated.
int64_t ranksAt(const ir::Schedule &schedule, ParamSearch &search,
                const int64_t *values) {
  for (size_t i = 0; i < search.searched.size(); ++i)
    search.env[search.searched[i]] = values[i];
  std::vector<int64_t> dims;
  for (const ir::ExprRef &d : schedule.topology.dims) {
    ir::EvalResult value = ir::evaluate(*d, search.env);
    if (!value.ok())
      return -1;
    dims.push_back(value.value);
  }
  llvm::Expected<int64_t> n = ir::countRanks(schedule.topology.kind, dims);
  if (!n) {
    llvm::consumeError(n.takeError());
    return -1;
  }
  return *n;
}

/// Says why the search found no member with p ranks.
llvm::Error noMemberFound(const ir::Schedule &schedule, int64_t p,
                          ParamSearch &search) {
  if (schedule.params.empty()) {
    int64_t n = ranksAt(schedule, search, nullptr);
    return noMember(schedule, p,
                    n >= 0 ? " (it has " + std::to_string(n) + " ranks)" : "");
  }
  // The ranges searched, --param's narrowing included.
  std::string within;
  for (size_t i = 0; i < search.searched.size(); ++i)
    for (const ir::Parameter &param : schedule.params)
      if (param.slot == search.searched[i])
        within += (within.empty() ? " (" : ", ") + param.name + " in " +
                  std::to_string(search.ranges[i].lo) + ".." +
                  std::to_string(search.ranges[i].hi);
  return noMember(schedule, p, within.empty() ? "" : within + ")");
}

} // namespace

llvm::Expected<std::vector<int64_t>>
collc::cost::paramsForRanks(const ir::Schedule &schedule, int64_t p,
                            std::optional<int64_t> amount,
                            llvm::ArrayRef<ir::ParamRange> within) {
  const ir::ExprRef &shiftOf = schedule.collective.shiftOf;
  if (shiftOf && !amount)
    return llvm::make_error<NoMember>(
        "'" + schedule.name +
        "' is a family over the shift amount; give it (--param " +
        shiftOf->name + "=N)");
  if (llvm::Error err = checkNoMemberChoice(schedule, p, within))
    return err;
  llvm::Expected<ParamSearch> search = openParams(schedule, p, amount, within);
  if (!search)
    return search.takeError();
  // A search evaluates every member of the ranges; past this many, the
  // caller names the member (--param) rather than wait.
  constexpr int64_t maxSearched = int64_t(1) << 24;
  if (member::span(search->ranges.data(), search->ranges.size()) > maxSearched)
    return noMember(schedule, p,
                    " that a search of its parameters' ranges can find in "
                    "time; give every parameter (--param NAME=V)");
  auto ranksOf = [&](const int64_t *values) {
    return ranksAt(schedule, *search, values);
  };
  std::vector<int64_t> found(search->searched.size());
  if (!member::closest(search->ranges.data(), search->ranges.size(), p, ranksOf,
                       found.data()))
    return noMemberFound(schedule, p, *search);
  for (size_t i = 0; i < search->searched.size(); ++i)
    search->env[search->searched[i]] = found[i];
  std::vector<int64_t> values;
  for (const ir::Parameter &param : schedule.params)
    values.push_back(search->env[param.slot]);
  return values;
}

//===----------------------------------------------------------------------===//
// Lower bounds the seeds state
//===----------------------------------------------------------------------===//

std::optional<LowerBound> collc::cost::lowerBound(const ir::Collective &c,
                                                  TopologyKind topology,
                                                  int64_t p, PortModel ports) {
  using CK = ir::CollectiveKind;
  if (p < 2)
    return std::nullopt;
  bool cube = topology == TopologyKind::Hypercube;
  int64_t logP = 0;
  while ((int64_t(1) << logP) < p)
    ++logP;
  bool allPortCube = cube && ports == PortModel::All;
  switch (c.kind) {
  case CK::Broadcast:
    // 004 §4.1: M on a single-port cube, M/n with all ports.
    if (cube)
      return allPortCube ? LowerBound{Fraction(1, logP), "004 §4.1"}
                         : LowerBound{1, "004 §4.1"};
    return std::nullopt;
  case CK::Allgather:
  case CK::ReduceScatter:
    // 000 §4.2.4: every node receives m(p - 1) words through one port;
    // 004 §4.2: M(N - 1)/n on an all-port cube.
    if (allPortCube)
      return LowerBound{Fraction(p - 1, logP), "004 §4.2"};
    if (ports == PortModel::Single)
      return LowerBound{p - 1, "000 §4.2.4"};
    return std::nullopt;
  case CK::Scatter:
  case CK::Gather:
    // 000 §4.4: m(p - 1) words leave the source (enter the destination);
    // 004 §4.4: (N - 1)M/n with all ports.
    if (allPortCube)
      return LowerBound{Fraction(p - 1, logP), "004 §4.4"};
    if (ports == PortModel::Single)
      return LowerBound{p - 1, "000 §4.4"};
    return std::nullopt;
  case CK::Alltoall:
    // 004 §4.4: M N / 2 with all ports, every channel busy in every step.
    if (allPortCube)
      return LowerBound{Fraction(p, 2), "004 §4.4"};
    // 000 §4.5.3: total traffic p·m(p - 1)·(log p)/2 over (p log p)/2 links.
    if (cube)
      return LowerBound{p - 1, "000 §4.5.3"};
    // 000 §4.5.1: traffic m(p - 1)·p/2·p over p links, for messages that
    // all go one way round.
    if (topology == TopologyKind::Ring && ports == PortModel::Single)
      return LowerBound{Fraction(p * (p - 1), 2),
                        "000 §4.5.1, messages one way round"};
    return std::nullopt;
  case CK::Permute:
    // 004 §4.4: through one port a block that moves leaves its node whole,
    // so a permutation other than the identity costs m at least. With all
    // ports its parts may leave by several.
    if (c.permutation && ports == PortModel::Single)
      for (size_t o = 0; o < c.permutation->size(); ++o)
        if ((*c.permutation)[o] != static_cast<int64_t>(o))
          return LowerBound{1, "004 §4.4, a moved block leaves its node"};
    return std::nullopt;
  default:
    return std::nullopt;
  }
}
