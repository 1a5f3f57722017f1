#pragma once
// The Schedule IR: one representation of a schedule that the simulator runs,
// the prover proves, the cost model prices and the emitter prints.
//
// A schedule is the collective it implements, a chunking of the message, and
// a body of steps and step loops. A step holds transfer rules
//     guard(r, i) => r sends chunk-set(r, i) from buffer B to peer(r, i),
//                    delivered (copied or reduced) into buffers B1, B2, ...
// A hand-written step `a -> b` is the constant rule guard = (r == a),
// peer = b, chunk-set = everything in the buffer.
//
// Semantics of a step: every rule is evaluated for every rank r against the
// state at the start of the step; all deliveries land at its end.

#include "ir/Expr.h"
#include "ir/TopologyKind.h"

#include "collc/Meaning.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace collc::ir {

using CollectiveKind = meaning::Kind; // collc/Meaning.h

/// The values a schedule parameter ranges over, inclusive: what verify is
/// asked for, what the prover and the induction prove over, and what a
/// report says was proved.
struct ParamRange {
  std::string name;
  int64_t lo = 0;
  int64_t hi = 0;
};
/// The ranges as reports print them: "p = 2..64, d = 3" (one value alone).
std::string rangeText(llvm::ArrayRef<ParamRange> ranges);

/// Each kind of collective by its name in the language, and what it means,
/// are written once, in collc/Meaning.h's table (meaning::kinds), which the
/// runtime reads too.
llvm::StringRef collectiveKindName(CollectiveKind kind);
std::optional<CollectiveKind> parseCollectiveKind(llvm::StringRef name);
/// The kinds' names as a list for messages: "broadcast, reduce, ... or
/// shift"; only those `which` accepts, where given.
std::string
collectiveKindList(llvm::function_ref<bool(CollectiveKind)> which = nullptr);
/// What a collective of the kind means: its line of collc/Meaning.h.
inline const meaning::Conditions &meaningOf(CollectiveKind kind) {
  return meaning::conditionsOf(kind);
}
/// Whether the collective combines contributions (reduce, allreduce,
/// reduce_scatter, scan, exscan).
inline bool isReduction(CollectiveKind kind) {
  return meaningOf(kind).reduction();
}
/// Whether it has a root (broadcast, reduce, scatter, gather).
inline bool isRooted(CollectiveKind kind) { return meaningOf(kind).rooted(); }
/// Whether a part of kind `first` then one of kind `second`, on the pieces
/// of a message cut one per rank, make a `whole` (000 §4.7.1;
/// meaning::splitsInto).
inline bool splitsInto(CollectiveKind whole, CollectiveKind first,
                       CollectiveKind second) {
  return meaning::splitsInto(meaningOf(whole), meaningOf(first),
                             meaningOf(second));
}
/// Whether some two parts make the kind; whether it is one of such parts.
bool hasSplit(CollectiveKind whole);
bool isSplitPart(CollectiveKind kind);

/// What a collective computes (its pre- and post-condition: meaningOf).
/// Parameters that do not apply to the kind are unused.
struct Collective {
  CollectiveKind kind = CollectiveKind::Broadcast;
  int64_t root = 0;             // broadcast, reduce, scatter, gather
  int64_t shift = 0;            // shift(q: ...)
  /// A family over the shift amount, `shift(q: q)`: that parameter (one
  /// member per amount); null: the constant `shift`. An instance
  /// (ir/Instantiate.h) has it evaluated into `shift`.
  ExprRef shiftOf;

  /// How a permutation is named in messages: as written, or printed.
  std::string permutationText() const {
    return permuteSpelling.empty() && permuteTo ? print(*permuteTo)
                                                : permuteSpelling;
  }
  /// Whether the parameter in `slot` is the family's shift amount.
  bool isShiftAmount(unsigned slot) const {
    return shiftOf && shiftOf->slot == slot;
  }
  /// permute(to: EXPR) (004 §4.4, §4.5, §5): where rank r's block goes, an
  /// expression over r (SlotRank: the block's origin), p and parameters.
  ExprRef permuteTo;
  /// `to` as written, for messages (the address maps are expanded).
  std::string permuteSpelling;
  /// An instance's permutation, evaluated: the destination of each origin
  /// (ir/Instantiate.h fills it and refuses a map that is not a bijection).
  std::shared_ptr<const std::vector<int64_t>> permutation;
  std::string op = "sum";       // reductions: sum prod min max land lor ...
  bool commutative = true;      // false: folding order is checked
  std::string type = "f64";     // element type name as written
};

/// The environment layout shared by evaluate(), toSmt() and printCpp().
/// Fixed slots first; parameters and loop variables follow.
enum FixedSlot : unsigned {
  SlotRank = 0,   // r: the sending rank
  SlotSize = 1,   // p: number of ranks
  SlotOrigin = 2, // chunk coordinates, inside a selector
  SlotDest = 3,
  SlotIndex = 4,
  NumFixedSlots = 5,
};

enum class TransferMode { Copy, Reduce };

/// Where a transfer's chunks land at the receiver.
struct Delivery {
  unsigned buffer = 0; // index into Schedule::buffers
  ExprRef when;        // null: always; else over the sender's environment
};

struct TransferRule {
  ExprRef guard;    // null: every rank sends
  ExprRef peer;     // the receiving rank
  ExprRef selector; // null: every chunk in `fromBuffer`; else a predicate
                    // over SlotOrigin/SlotDest/SlotIndex (and r, i, ...)
  unsigned fromBuffer = 0;
  llvm::SmallVector<Delivery, 1> into; // never empty
  TransferMode mode = TransferMode::Copy;
  /// Expressions over the receiving rank (in SlotRank) for ranks that may
  /// send to it, beyond those sendersOf() finds from the guard and peer
  /// (a relabelling keeps them; see library/Library.cpp).
  std::vector<ExprRef> senders;
  llvm::SMLoc loc;
};

/// Candidates for the ranks that send to rank r (SlotRank) under `rule`, as
/// expressions over r: rule.senders, the ranks a guard `r == e` fixes, and
/// the solutions of peer == r where the rank occurs once in the peer. At most
/// eight; a candidate need not send (the prover checks that it does).
/// `sizeIsPowerOfTwo` (a hypercube): `x % p` is solved for any offset.
std::vector<ExprRef> sendersOf(const TransferRule &rule,
                               bool sizeIsPowerOfTwo = false);

/// Appends the conjuncts of `e` (its operands under `and`, nested or not)
/// in evaluation order.
void conjuncts(const ExprRef &e, std::vector<ExprRef> &out);

/// The leading conjuncts of a rule's guard that do not read the rank, as one
/// expression (null: none). Where they are false no rank sends under the
/// rule, so a receiver need not look for senders; being evaluated first in
/// the guard, they are defined wherever it is.
ExprRef rankFreeGuard(const TransferRule &rule);

/// An alltoallv rule without a chunk filter: the sender's own block for the
/// receiver, `origin == r and dest == peer` (001's patterns; its size is
/// known to those two alone).
ExprRef ownBlockSelector(const ExprRef &peer);
/// Whether `rule` sends just that: the runtime then moves the block straight
/// from the send buffer into the receive buffer, with no run header.
bool sendsOwnBlock(const TransferRule &rule);

struct Step {
  std::string name; // optional label from the source
  std::vector<TransferRule> rules;
  llvm::SMLoc loc;
};

/// `invariant [buffer:] holds` on a loop: at the head of the iteration for
/// each value of the loop variable (and after the last one, with the value
/// past it), rank r's buffer holds chunk (origin, dest, index) exactly when
/// `holds` is nonzero. For a reduction, `holds` also reads the schedule's
/// `contributor` slot: the chunk's value includes that rank's contribution
/// (once) exactly when it is nonzero. For a copy collective, "exactly" may
/// be "at least". prove/Induction.h checks it.
struct Invariant {
  unsigned buffer = 0;
  ExprRef holds;
  llvm::SMLoc loc;
};

struct Loop;
using BodyItem = std::variant<Step, std::shared_ptr<Loop>>;

/// for var in lo .. hi (inclusive; empty when lo > hi), counting down when
/// `reverse` is set.
struct Loop {
  unsigned slot = 0;
  std::string var;
  ExprRef lo, hi;
  bool reverse = false;
  std::vector<Invariant> invariants; // at most one per buffer
  std::vector<BodyItem> body;
  llvm::SMLoc loc;
};

/// A topology whose dimensions may be expressions over parameters
/// (`hypercube(dim: d)`): the schedule is a family, one member per value.
struct TopologyTemplate {
  TopologyKind kind = TopologyKind::Full;
  std::vector<ExprRef> dims;
  std::vector<std::pair<int64_t, int64_t>> edges; // graph only
  RankOrder order = RankOrder::Natural;           // hypercube only
  llvm::SMLoc loc;
};

/// A free parameter of a family (the `d` of `hypercube(dim: d)`).
struct Parameter {
  std::string name;
  unsigned slot = 0;
  llvm::SMLoc loc;
  /// The range the spec declares (`where d in 1 .. 16`), if any.
  std::optional<std::pair<int64_t, int64_t>> range;
};

struct Buffer {
  Buffer(std::string name) : name(std::move(name)) {}
  std::string name;
  /// `NAME starts empty;`: the buffer holds nothing at the start. Otherwise
  /// it starts as a copy of the collective's input at that rank. Buffer 0
  /// is the one the post-condition is checked on.
  bool startsEmpty = false;
  llvm::SMLoc emptyLoc; // where it is said to start empty
};

struct Schedule;

/// One schedule of a composition `= A then B` (000 §4.7.1).
struct PartRef {
  std::string name;
  llvm::SMLoc loc;
  /// The part as declared, once the library stage has found it: the
  /// verifier proves a composition from its parts' own proofs.
  std::shared_ptr<const Schedule> schedule;
};

struct Schedule {
  std::string name;
  /// The library algorithm it implements (`using ALGO` in its header), by
  /// which `collective x = ... using ALGO;` finds it; empty: none.
  std::string algorithm;
  Collective collective;
  TopologyTemplate topology;
  std::vector<Parameter> params;
  ExprRef chunks;                // chunk indices per block (null: 1)
  std::vector<Buffer> buffers;   // buffers[0] is the result
  std::vector<BodyItem> body;
  std::vector<std::string> slotNames; // slot -> name, for printing
  /// A composition's parts, in order. Sema leaves the body empty; the
  /// library stage (library/Compose.h) fills it with the parts' steps.
  std::vector<PartRef> parts;
  /// The slot of `contributor` (a contributing rank) in invariants; none when no
  /// invariant names it.
  std::optional<unsigned> contributorSlot;
  llvm::SMLoc loc;

  unsigned numSlots() const { return static_cast<unsigned>(slotNames.size()); }
  bool isSymbolic() const { return !params.empty(); }
  /// Whether buffer `b` starts empty (`NAME starts empty;`); a buffer the
  /// schedule does not declare starts as the input, as every buffer does.
  bool startsEmpty(size_t b) const {
    return b < buffers.size() && buffers[b].startsEmpty;
  }
  /// The parameter in `slot` that the communicator's size does not set: a
  /// family's shift amount or a permutation's own (`shuffle(r, k % d, d)`'s
  /// k). Each stage gets such a value from its caller, not from p.
  bool isGiven(unsigned slot) const {
    return !llvm::any_of(topology.dims,
                         [&](const ExprRef &d) { return reads(*d, slot); });
  }
  /// A given parameter other than a shift's amount: a permutation's own,
  /// which no caller's argument sets either, so a member needs its value.
  bool isMemberChoice(unsigned slot) const {
    return isGiven(slot) && !collective.isShiftAmount(slot);
  }
};

/// The range the first of `given` (the --param options) names for `param`,
/// within its declared range where `withinDeclared`; none where no option
/// names it, or where the schedule fixes the value and its size does not set
/// it (a member the library resolved, whose topology is concrete), which is
/// no family's range for an option to move. Verify and cost both narrow by it.
std::optional<ParamRange> givenRange(const Schedule &schedule,
                                     const Parameter &param,
                                     llvm::ArrayRef<ParamRange> given,
                                     bool withinDeclared);

/// Which expression of a body a rewrite is given.
enum class ExprRole {
  Guard,
  Peer,
  Selector,
  DeliveryWhen,
  Sender, // TransferRule::senders, ranks like a peer
  LoopBound,
  Invariant
};

/// What a part of a composition (library/Compose.h) takes its parameters
/// from: each dimension of the part's topology is a parameter or a
/// constant (sema keeps them so), and the parameter that is the part's
/// dimension i is the composition's dimension i. By the part's slot.
std::map<unsigned, ExprRef> partParameters(const TopologyTemplate &composite,
                                           const Schedule &part);

/// Calls fn on every rule of `body`, in order, loops' bodies once each.
void forEachRule(const std::vector<BodyItem> &body,
                 llvm::function_ref<void(const TransferRule &)> fn);

/// Rewrites every expression of `body` in place through `fn` (a null
/// expression is passed as null), every loop through `onLoop` before its
/// bounds are rewritten, and every rule through `onRule` before its
/// expressions are. Loops are copied first: schedules share them.
void rewriteBody(std::vector<BodyItem> &body,
                 const std::function<ExprRef(const ExprRef &, ExprRole)> &fn,
                 const std::function<void(Loop &)> &onLoop = nullptr,
                 const std::function<void(TransferRule &)> &onRule = nullptr);

} // namespace collc::ir
