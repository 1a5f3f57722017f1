#pragma once
// The cost model (000 §4.1.6, §4.7.2; docs/library.md, "The cost model"):
// with cut-through routing a step takes t_s + t_w × (words on its most
// loaded directed channel), so congestion is priced, not hidden; a schedule
// takes the sum over its steps. A step in which no rank sends costs
// nothing.
//
// Costs are exact: A·t_s + B·m·t_w with A a step count and B a fraction.
// The message size m is the collective's block as in Table 4.1: the whole
// message for broadcast, reduce, allreduce and scan, each rank's piece for
// allgather, scatter and gather, the per-destination piece for
// reduce_scatter, the per-pair message for alltoall and shift. In the chunk
// model (simulate/Semantics.h) that is one (origin, dest) block of K chunk
// indices, so a channel carrying c chunks carries c/K·m words.

#include "ir/Schedule.h"
#include "topology/Topology.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collc::cost {

/// A non-negative exact fraction num/den in lowest terms.
class Fraction {
public:
  Fraction() = default;
  Fraction(int64_t whole) : num(whole) {}
  /// den must be positive.
  Fraction(int64_t num, int64_t den);

  int64_t numerator() const { return num; }
  int64_t denominator() const { return den; }
  double toDouble() const { return static_cast<double>(num) / den; }
  /// "3", "7/2".
  std::string str() const;

  Fraction &operator+=(const Fraction &o);
  friend Fraction operator+(Fraction a, const Fraction &b) { return a += b; }
  friend Fraction operator*(const Fraction &a, const Fraction &b);
  friend bool operator==(const Fraction &a, const Fraction &b) {
    return a.num == b.num && a.den == b.den;
  }
  friend bool operator<(const Fraction &a, const Fraction &b);

private:
  int64_t num = 0;
  int64_t den = 1;
};

struct StepCost {
  unsigned step = 0;      // 1-based, as the simulator numbers steps
  int64_t messages = 0;   // transfers in the step
  int64_t maxLoad = 0;    // messages on the most loaded channel
  Fraction words;         // words on the most loaded channel, in units of m
  Fraction totalWords;    // words of all the step's messages, in units of m
  std::vector<int64_t> senders, receivers; // of each message, in order
  std::vector<Fraction> messageWords;      // of each message, in units of m
  /// Per message: whether it carries only data its sender held when the
  /// call began (none it received), so it can start at the call's start.
  std::vector<bool> fresh;
  /// The step's loop variables, outermost first (for the table).
  std::vector<std::pair<std::string, int64_t>> loopVars;
  /// Steps step .. step + count - 1 in a row, of one IR step, cost alike
  /// (a cost from the rules keeps them as one entry); loopVarsLast are
  /// the last one's loop variables. `messages` is then the most in one of
  /// them, fewestMessages the fewest.
  int64_t count = 1;
  int64_t fewestMessages = 0;
  std::vector<std::pair<std::string, int64_t>> loopVarsLast;
};

struct ScheduleCost {
  int64_t p = 0;
  /// The collective of the member priced (a permutation evaluated).
  ir::Collective collective;
  std::vector<int64_t> params; // indexed like Schedule::params
  PortModel ports = PortModel::Single;
  int64_t startups = 0; // A: steps that send anything
  Fraction words;       // B: the t_w coefficient in units of m
  std::vector<StepCost> steps;
  /// Whether the simulation found every property to hold; the cost of a
  /// schedule that congests still counts the congestion.
  bool valid = false;
  /// When not valid, the first property that fails and how, e.g.
  /// "contention at step 1: rank 0 sends 3 messages in step 1 (single-port)".
  std::string invalidBecause;
  /// Empty when simulated; else what a cost priced from the rules
  /// (costFromRules) relies on instead, as a phrase: "its proof ...". Such
  /// a cost has no per-message detail, so line() gives the port model's.
  std::string reliesOn;

  /// A·t_s + B·m·t_w, in seconds, for m = bytes.
  double seconds(double ts, double twPerByte, double bytes) const {
    return startups * ts + words.toDouble() * bytes * twPerByte;
  }

  /// A and B on a machine whose ranks share `cores` cores (0: a core each,
  /// the port model's A and B). A step in which no more ranks take part
  /// than there are cores costs what the port model says, t_s + (its
  /// busiest channel's words)·m·t_w. In one with more, each rank taking
  /// part has to be given a core, and the cores move all its words in
  /// turn: (ranks·t_s + all its words·m·t_w) / cores, but no faster than
  /// its busiest rank moves its own (the words it sends or receives, one
  /// core's work). The two agree for a step of `cores` ranks. t_s and t_w are
  /// then what a rank's turn and a word cost a core (collc calibrate --pattern
  /// ring with more ranks than cores measures them: each rank of a ring's step
  /// sends one message).
  ///
  /// Steps whose messages wait on nothing received since the first of
  /// them (their senders received nothing since, or they carry only data
  /// held when the call began) are priced as one step: nothing holds them
  /// back, so each rank takes its turn once for all of them. The runtime
  /// starts them so: a replay starts the messages that wait on nothing at
  /// its beginning (Engine's startIndependentMessages), a pairwise
  /// exchange's all at once, and leaves the sends after a rank's last
  /// receive running (deferTrailingSends), a star scatter's root's.
  ///
  /// Where receivers copy (`copies: receiver`) and every rank has a core,
  /// such a group costs a start-up, an overhead t_o for each further
  /// message its busiest rank sends (or receives, if more), and the words
  /// that rank receives, or `serve` times those it sends if more: a star's
  /// root starts its messages, and its receivers copy theirs at once from
  /// its memory. t_w is then what a copy costs while every rank copies (a
  /// ring's step), so the memory the copies share is priced in it.
  ///
  /// On a model of several segments (MessageCost) each step, or group of
  /// steps priced as one, is priced with the segment its largest message
  /// falls in: a binomial scatter's first message of p/2 blocks goes by
  /// rendezvous while its last, of one, goes eagerly.
  struct Line {
    Fraction startups, words;
    Fraction overheads; // further messages, at t_o each
    /// The steps or groups the line sums, each with its largest message
    /// (in units of m; from the rules, a step's words, as no channel
    /// carries two of its messages); one part of the largest 1 where the
    /// cost has no steps (a formula's).
    struct Part {
      Fraction startups, words, overheads, largest;
    };
    std::vector<Part> parts;
    /// "1·t_s + 14·t_o + 1·m·t_w" (no t_o term when there is none).
    std::string str() const;
    double seconds(double ts, double twPerByte, double bytes,
                   double to) const {
      return startups.toDouble() * ts + overheads.toDouble() * to +
             words.toDouble() * bytes * twPerByte;
    }
    /// The time for m = bytes on a model of `segments` (ascending, the
    /// first from 0), each part in its largest message's segment; t_o is
    /// `to`, else that segment's t_s.
    double seconds(llvm::ArrayRef<MessageCost> segments, double bytes,
                   std::optional<double> to) const {
      const auto [a, b] = coefficients(segments, bytes, to);
      return a + b * bytes;
    }
    /// The time as a + b·m, a in seconds and b in seconds a byte, for
    /// every m whose parts fall in the same segments as at `bytes`.
    std::pair<double, double> coefficients(llvm::ArrayRef<MessageCost> segments,
                                           double bytes,
                                           std::optional<double> to) const;
    /// The parts of one largest message summed, by largest ascending: all
    /// that pricing by segments needs (the drop-in's price table).
    std::vector<Part> partsByLargest() const;
    /// The sizes m at which a part's largest message reaches a segment's
    /// first size: between two of them, the time is one line.
    std::vector<double>
    segmentChanges(llvm::ArrayRef<MessageCost> segments) const;
  };
  Line line(const Machine &machine) const;
};

struct CostOptions {
  PortModel ports = PortModel::Single;
  /// Stop simulating at the first property that fails: the cost is then
  /// marked invalid and incomplete (resolution only wants valid ones).
  bool stopAtViolation = false;
  /// Where the schedule is known to hold at this member without simulating
  /// it (a proof), that knowledge as a phrase for ScheduleCost::reliesOn:
  /// a member too large to simulate is then priced from its rules.
  std::string provedBy;
};

/// Members that would try more senders than this (ir::walkSteps counts
/// them), whose ranks together could hold more chunks than that (p times
/// the collective's chunks), or that have more steps than that, are not
/// simulated for their cost: a ring's all-gather on 1024 ranks is about
/// 2^20 of the first two, and the simulator's time and memory grow with
/// all three.
constexpr uint64_t maxSimulatedRankEvaluations = uint64_t(1) << 21;
constexpr uint64_t maxSimulatedChunks = uint64_t(1) << 23;
constexpr uint64_t maxSimulatedSteps = uint64_t(1) << 16;

/// Why the member of `schedule` with `params` is too large to simulate for
/// its cost (the limits above, with its figures), or none when it is not.
llvm::Expected<std::optional<std::string>>
tooLargeToSimulate(const ir::Schedule &schedule,
                   llvm::ArrayRef<int64_t> params);

/// Prices `schedule` instantiated with `params` by simulating it under
/// `ports`, or, for a member too large to simulate that `provedBy` says
/// holds, from its rules (costFromRules). Errors are those of
/// instantiation and simulation, and a member too large to simulate
/// without a proof.
llvm::Expected<ScheduleCost> costOf(const ir::Schedule &schedule,
                                    llvm::ArrayRef<int64_t> params,
                                    const CostOptions &options);
inline llvm::Expected<ScheduleCost>
costOf(const ir::Schedule &schedule, llvm::ArrayRef<int64_t> params,
       PortModel ports = PortModel::Single) {
  CostOptions options;
  options.ports = ports;
  return costOf(schedule, params, options);
}

/// Prices `schedule` with `params` from its rules, without simulating:
/// each step's messages are counted over ranges of ranks at once, so the
/// work follows the steps, not the transfers (FromRules.cpp says how). The
/// cost is exact where contention, congestion, matching and causality hold
/// at this member - every channel then carries at most one message of a
/// step, and a message every chunk its selector names - which it does not
/// check: ScheduleCost::valid is set, and reliesOn left to the caller.
/// Errors: a rule without a selector (its size is what its sender holds),
/// a guard or selector that cannot be evaluated, and rules interval
/// evaluation cannot decide over ranges of ranks (past a bound on the
/// work, named in the message).
llvm::Expected<ScheduleCost> costFromRules(const ir::Schedule &schedule,
                                           llvm::ArrayRef<int64_t> params,
                                           PortModel ports);

/// paramsForRanks's answer where the schedule has no member of the size
/// asked for within the ranges, or the size alone does not name one (a
/// shift's amount, a permutation's parameter): over many schedules, a
/// command skips those, where any other error is the user's to mend.
class NoMember : public llvm::ErrorInfo<NoMember> {
public:
  static char ID;
  explicit NoMember(std::string message) : message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

  std::string message;
};

/// Parameter values that give `schedule` exactly p ranks: its own size for
/// a schedule without parameters, else the member of p ranks an emitted
/// function runs (collc/Member.h: the values closest together), searched
/// within the declared ranges narrowed by `within` (the --param ranges
/// compile proved and emitted for; names the schedule lacks are ignored).
/// A family over the shift amount (`shift(q: q)`) takes `amount` for it.
/// Errors: NoMember.
llvm::Expected<std::vector<int64_t>>
paramsForRanks(const ir::Schedule &schedule, int64_t p,
               std::optional<int64_t> amount = std::nullopt,
               llvm::ArrayRef<ir::ParamRange> within = {});

/// A lower bound on the t_w coefficient (in units of m) that the seeds
/// state for a collective, with where they state it.
struct LowerBound {
  Fraction words;
  std::string source;
};
std::optional<LowerBound> lowerBound(const ir::Collective &collective,
                                     TopologyKind topology, int64_t p,
                                     PortModel ports);

} // namespace collc::cost
