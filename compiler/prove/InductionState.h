#pragma once
// The induction prover's state, shared by Induction.cpp (set-up, the
// collective's conditions, the queries) and InductionSteps.cpp (a step's
// effect and a loop's invariant). Private to compiler/prove.

#include "prove/ExprToSmt.h"
#include "prove/Induction.h"
#include "prove/MeshRanks.h"
#include "prove/Width.h"
#include "smt/Solver.h"
#include "smt/Term.h"
#include "topology/Topology.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace collc::prove::detail {

using ir::CollectiveKind;
using ir::Expr;
using ir::ExprOp;
using ir::ExprRef;
using smt::Term;
using verify::Property;
using verify::PropertyResult;
using verify::Status;

struct Chunk {
  Term origin, dest, index;
};

/// Which ranks' data a buffer holds: `under` surely, `over` at most. Terms
/// from `under` may hold fresh variables read universally, so they appear
/// only negated in a query; those from `over` existentially, so only
/// positively. A copy collective's state ignores `f` and has no `over`.
using StateFn =
    std::function<Term(const Term &r, const Chunk &c, const Term &f)>;
struct BufferState {
  StateFn under, over;
};
using State = std::vector<BufferState>;

/// The values every query at one place in the body shares.
struct Frame {
  std::vector<Term> env; // parameters, p, loop variables by slot
  std::vector<Term> assumptions;
  std::vector<std::pair<std::string, Term>> named; // shown in failures
};

/// What a failed obligation is about.
enum class Concern { Causality, Correctness };

class Inductor {
public:
  Inductor(const ir::Schedule &schedule, const InductionOptions &options)
      : schedule(schedule), options(options) {
    solver.setVerbose(options.verbose, options.dumpSmt);
    solver.rememberIn(options.provedQueries);
  }

  std::vector<PropertyResult> run();

private:
  // --- set-up ---------------------------------------------------------------
  std::optional<std::string> setUp(Frame &top);
  /// Each parameter a variable within its range; where each range's
  /// assumption is in `top`, by parameter.
  std::optional<std::string> setUpParameters(Frame &top,
                                             std::vector<size_t> &rangeAt);
  /// A shift's amount on a mesh, read in coordinates (prove/MeshRanks.h).
  void shiftAmountInDigits(Frame &top, const std::vector<size_t> &rangeAt);
  /// Each rule's senders, once; a refusal when a non-reduction folds.
  std::optional<std::string> setUpRules();
  void permutationIsBijection(const Frame &top);
  /// A violation the induction shows for certain (a permutation that is
  /// no bijection), beside `failure`.
  std::optional<verify::Counterexample> definite;
  unsigned chooseWidth(const ExprRef &numRanks);
  void requireBody(WidthAnalysis &w, const std::vector<ir::BodyItem> &body);

  // --- expressions ----------------------------------------------------------
  std::vector<Term> envAt(const Frame &fr, const Term *r, const Chunk *c,
                          const Term *f) const {
    std::vector<Term> env = fr.env;
    if (r)
      env[ir::SlotRank] = *r;
    if (c) {
      env[ir::SlotOrigin] = c->origin;
      env[ir::SlotDest] = c->dest;
      env[ir::SlotIndex] = c->index;
    }
    if (f && schedule.contributorSlot)
      env[*schedule.contributorSlot] = *f;
    return env;
  }
  /// `e` is defined and nonzero.
  Term holds(const Expr &e, const std::vector<Term> &env) {
    ExprToSmt tr(ctx, env);
    return tr.translate(e).defined && tr.nonzero(e);
  }
  Term var(const std::string &name) { return ctx.bitVecVar(name, width); }
  /// A fresh rank; on a mesh or a torus made from its coordinates
  /// (prove/MeshRanks.h).
  Term rankVar(const std::string &name) {
    return rankVariable(ctx, name, width, extents);
  }
  Term isRank(const Term &t) { return sge(t, 0) && slt(t, p); }
  Chunk freshChunk() {
    return {rankVar("origin"), rankVar("dest"), var("index")};
  }
  Term universe(const Chunk &c);
  /// Whether rank r holds chunk c by `h` (collc/Meaning.h); none: every
  /// chunk of the universe.
  std::optional<Term> holding(const meaning::Holding &h, const Term &r,
                              const Chunk &c);
  Term initial(const Term &r, const Chunk &c, const Term &f);
  Term required(const Term &r, const Chunk &c);
  Term wanted(const Term &r, const Term &f);

  // --- steps ----------------------------------------------------------------
  struct Delivery {
    const ir::TransferRule *rule;
    unsigned buffer;
    const ExprRef *when;
  };
  Term fires(const ir::TransferRule &rule, const Frame &fr, const Term &s);
  /// Sender s's delivery `d` reaches rank r with chunk c (reading `st`
  /// from below when `over` is false, from above when it is true).
  Term arrives(const Delivery &d, const Frame &fr, const State &st,
               const Term &s, const Term &r, const Chunk &c, bool over);
  Term held(const State &st, unsigned buffer, const Term &s, const Chunk &c,
            bool over);
  std::vector<Term> candidates(const ir::TransferRule &rule, const Frame &fr,
                               const Term &r);
  std::vector<Delivery> deliveries(const ir::Step &step) const;
  void checkStep(const ir::Step &step, const Frame &fr, const State &st);
  /// checkStep's obligations (the sends' false where one fails): a message
  /// of everything the sender holds is not empty; a selector is defined and
  /// names only what the sender holds; two deliveries of one step to one
  /// chunk are not a copy and a value, nor two folds of one contribution;
  /// a fold adds nothing the value has.
  bool checkWholeSend(const ir::TransferRule &rule, const Frame &fr,
                      const State &st);
  bool checkSelectedSend(const ir::TransferRule &rule, const Frame &fr,
                         const State &st);
  void checkTwoDeliveries(const Delivery &a, const Delivery &b, bool same,
                          const Frame &fr, const State &st);
  void checkRefold(const Delivery &d, const Frame &fr, const State &st);
  State afterStep(const ir::Step &step, const Frame &fr, const State &st);
  void walk(const std::vector<ir::BodyItem> &body, const Frame &fr, State &st);
  void loop(const ir::Loop &loop, const Frame &fr, State &st);
  /// A loop as its entry sees it: the frame, the state before it, and
  /// whether its body only copies.
  struct LoopEntry {
    const ir::Loop &loop;
    const Frame &frame;
    const State before;
    bool copiesOnly;
  };
  /// What invariant `inv` says the buffer holds at loop value k.
  BufferState invariantAt(const LoopEntry &at, const ir::Invariant &inv,
                          const Term &k);
  /// The loop's invariants at value k against `actual`: each claims only
  /// what is held and, for a reduction, leaves nothing out.
  bool invariantsMatch(const LoopEntry &at, const Frame &where, const Term &k,
                       const State &actual, const std::string &claimsTooMuch,
                       const std::string &leavesOut);
  void checkResult(const Frame &fr, const State &st);

  // --- queries --------------------------------------------------------------
  /// Whether `terms` (with the frame's assumptions) is unsatisfiable;
  /// otherwise records why not, with the values of `shown`.
  bool obligation(Concern concern, const std::string &what, const Frame &fr,
                  std::vector<Term> terms,
                  std::vector<std::pair<std::string, Term>> shown);
  std::vector<std::pair<std::string, Term>> chunkShown(const Chunk &c) const;
  void unsupported(const std::string &why) {
    if (!failure)
      failure = {Concern::Causality, why};
  }
  bool failed() const { return failure.has_value(); }

  const ir::Schedule &schedule;
  const InductionOptions &options;
  smt::Context ctx;
  smt::Solver solver{ctx};
  unsigned width = smt::DefaultWidth;
  unsigned numSlots = 0;
  bool reduction = false;
  std::optional<int64_t> fixedOrigin, fixedDest;
  Term p, chunks;
  Term shift;  // a shift's amount, in 0 .. p - 1
  Term amount; // a shift's amount as declared
  /// A mesh's or torus's extents, first dimension first, when a shift's
  /// destination is also stated in coordinates (see carried).
  std::vector<Term> radices;
  /// A mesh's or a torus's extents, for rankVar.
  std::vector<Term> extents;
  /// The coordinates of a shift's destination as mixed-radix addition: each
  /// of dest's digits is origin's plus the amount's plus the carry from the
  /// digit after it, mod the extent (row-major labels: the last coordinate
  /// is the least significant digit). True of dest = (origin + q) mod p for
  /// every q >= 0, since each stride divides p; stated beside dest, it spares
  /// the solver deriving it through products of symbolic extents, which it
  /// does not manage on tori up to 64 x 64 (000 §4.6.1, Figure 4.22: the row
  /// shift by q mod b, the compensating shift of the blocks that wrapped
  /// round, then the column shift by q / b mod a).
  Term carried(const Term &origin, const Term &dest) {
    const size_t n = radices.size();
    std::vector<std::optional<Term>> stride(n); // none: 1
    for (size_t i = n - 1; i > 0; --i)
      stride[i - 1] = stride[i] ? *stride[i] * radices[i] : radices[i];
    auto digit = [&](const Term &x, size_t i, bool top) {
      Term above = stride[i] ? sdiv(x, *stride[i]) : x;
      return i == 0 && !top ? above : srem(above, radices[i]);
    };
    Term holds = ctx.boolean(true);
    std::optional<Term> carry;
    for (size_t i = n; i-- > 0;) {
      Term sum = digit(origin, i, false) + digit(amount, i, true);
      if (carry)
        sum = sum + *carry;
      // Two digits and a carry stay below twice the extent: the wrapped
      // sum is a subtraction, not a divider.
      const Term wraps = sge(sum, radices[i]);
      holds =
          holds && digit(dest, i, false) == ite(wraps, sum - radices[i], sum);
      carry = ite(wraps, ctx.bitVec(1, width), ctx.bitVec(0, width));
    }
    return holds;
  }
  bool shiftNeverNegative = true; // by its range, which chooseWidth reads
  /// Where a shift takes the block of `origin`, a rank: (origin + shift)
  /// mod p, without a division, since the sum is below 2p.
  Term shifted(const Term &origin) {
    Term sum = origin + shift;
    return ite(sge(sum, p), sum - p, sum);
  }
  /// The slots a permutation's `to` is read in: p and the parameters.
  std::vector<Term> collectiveEnv;
  /// Where a shift or a permutation takes the block of `origin`. That a
  /// permutation is a bijection of the ranks is proved apart from the
  /// schedule (prove/Permutation.h).
  Term destOf(const Term &origin) {
    if (schedule.collective.kind != CollectiveKind::Permute)
      return shifted(origin);
    std::vector<Term> env = collectiveEnv;
    env[ir::SlotRank] = origin;
    return ExprToSmt(ctx, env).translate(*schedule.collective.permuteTo).value;
  }
  bool destFromOrigin() const {
    return ir::meaningOf(schedule.collective.kind).destFromOrigin();
  }
  std::map<const ir::TransferRule *, std::vector<ExprRef>> senders;
  /// What candidates() defined since the last query (see there).
  std::vector<Term> definitions;
  std::optional<std::pair<Concern, std::string>> failure;
};

} // namespace collc::prove::detail
