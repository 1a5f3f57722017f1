#pragma once
// Causality and correctness of a whole family at once, by induction over
// its loops (properties 1 and 5 of docs/proofs.md, "What is proved"), with
// Z3.
//
// The simulator checks these two properties one size at a time, which
// costs p^2 chunk moves or more per size: a ring of up to 4096 ranks is out
// of reach. A loop's invariant (`for k in lo .. hi invariant EXPR { ... }`,
// ir::Invariant) says which chunks - and for a reduction which
// contributions - a buffer holds at the head of every iteration. With it,
// every obligation below is one quantifier-free query over symbolic ranks,
// chunks, loop values and parameters:
//
//   entry        the invariant at the first value holds what the code
//                before the loop leaves;
//   preservation one iteration's steps take the invariant at k to the
//                invariant at the next value;
//   causality    every chunk a selector names is one its sender holds;
//   conflicts    (reductions) no chunk of a rank gets a copy and another
//                delivery in one step, and no fold adds a contribution the
//                value has already;
//   result       after the last step every rank holds what the collective
//                requires (collc/Meaning.h's post-condition), and for
//                a reduction nothing else.
//
// The state is known exactly inside loops (their invariants) and
// approximated from both sides elsewhere: `under` (what a rank surely
// holds) and `over` (what it may hold). A chunk that arrives at rank r came
// from a sender s with peer(s) = r; the prover names candidate senders by
// solving the peer expression for s syntactically (r + a, (r + a) % p,
// r ^ m, either branch of `c ? a : b`, the rank a guard `r == e` fixes).
// Candidates are only witnesses - each is checked to send what is claimed -
// so a wrong one costs a proof, never soundness.
//
// Every buffer a loop delivers into needs an invariant on that loop. For a
// copy collective (broadcast, scatter, gather, all-gather, all-to-all,
// shift) an invariant only needs to hold less than the buffer does; for a
// reduction it must be exact, and it reads `contributor`, the contributing rank
// - except on a loop that only copies, as the all-gather or gather of a
// composition does after its reduce-scatter (library/Compose.h): there an
// invariant without `contributor` names chunks whose value is final (the
// collective's result), and it may name fewer than are, as in a copy
// collective; any other chunk holds its value from before the loop or the
// final one.

#include "ir/Schedule.h"
#include "ir/Verdict.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace collc::smt {
class ProvedQueries;
} // namespace collc::smt

namespace collc::prove {

struct InductionOptions {
  /// The range of every parameter of the schedule, by name.
  std::vector<ir::ParamRange> ranges;
  unsigned timeoutMs = 60000;           // per query; 0: no limit
  llvm::raw_ostream *verbose = nullptr; // one line per query
  bool dumpSmt = false;                 // with verbose: each in SMT-LIB
  /// Queries proved before, shared with other provers (smt::ProvedQueries);
  /// null: every query goes to Z3.
  smt::ProvedQueries *provedQueries = nullptr;
};

/// Whether some loop of the schedule has an invariant.
bool hasInvariants(const ir::Schedule &schedule);

/// Causality, then correctness, with method "z3 (induction)": Proved holds
/// for every member of the ranges. Otherwise Unknown, with the reason in
/// `detail`: a loop that delivers without an invariant, an obligation that
/// fails (with the values that show it), a solver timeout. Never
/// Counterexample: a failed obligation may be the invariant's fault rather
/// than the schedule's, and the simulator reports real ones.
std::vector<verify::PropertyResult>
proveByInduction(const ir::Schedule &schedule, const InductionOptions &options);

} // namespace collc::prove
