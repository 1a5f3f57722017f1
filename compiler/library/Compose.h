#pragma once
// Composition of schedules: the split-message algorithms of 000 §4.7.1.
//
//   schedule bc : broadcast(root: 0) on hypercube(dim: d)
//       using scatter_allgather where d in 1 .. 8
//     = hypercube_scatter then hypercube_allgather;
//
// The message is cut into p pieces (times the parts' own chunking), and the
// parts run one after the other on the pieces: piece k plays the block of
// rank k in each part, so a scatter's `dest`, a gather's or all-gather's
// `origin` and a reduce-scatter's `dest` become the composite's `index`.
// That is Eq 4.13 (broadcast = scatter + all-gather) and Eq 4.14 (all-reduce
// = reduce-scatter + all-gather), and §4.7.1's reduction = reduce-scatter +
// gather.
//
// The composite is an ordinary schedule once composed: its steps are the
// parts' steps (their source locations kept, so a counterexample points into
// the part), and it keeps its parts. The verifier proves it from its parts'
// own proofs where collc/Meaning.h's table says the parts make the whole
// (meaning::splitsInto), and otherwise like any other schedule: the parts'
// loop invariants come along, renamed like their selectors, so parts proved
// by induction make a composite proved by induction. Composition checks
// only what it needs to rename; whether the parts together compute the
// composite's collective is the verifier's to decide.

#include "sema/Program.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace collc::library {

/// Whether `part` can be part `position` (0-based) of `composite`; the
/// error says why not, and `where` (if given) the place in the part to show.
llvm::Error checkPart(const ir::Schedule &composite, const ir::Schedule &part,
                      size_t position, llvm::SMLoc *where = nullptr);

/// The composite's body, chunking and slots from its parts, which must have
/// passed checkPart.
void compose(ir::Schedule &composite,
             llvm::ArrayRef<const ir::Schedule *> parts);

/// Composes every composition of `program`, finding parts among its own
/// schedules first and then through `findElsewhere` (the library; may
/// return null). Problems are reported at the part; returns false if there
/// were any.
bool composeAll(
    Program &program,
    llvm::function_ref<const ir::Schedule *(llvm::StringRef)> findElsewhere,
    DiagnosticEngine &diags);

} // namespace collc::library
