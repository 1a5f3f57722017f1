#pragma once
// Interval evaluation of ir::Expr under evaluate()'s meaning (64-bit
// wrapping arithmetic, partial division and shifts), so the simulator can
// decide a chunk selector for a whole box of chunk coordinates at once and
// look at single chunks only where the box straddles the selector's
// boundary.
//
// This is the simulator's own analysis, independent of the prover's width
// analysis (prove/Width.h), which bounds the solver's total semantics.

#include "ir/Expr.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace collc::simulate {

/// What evaluate() can give over a box of environments: every value it
/// returns lies in lo..hi; `mayFail` is false only when it succeeds
/// everywhere in the box.
struct ValueRange {
  int64_t lo = INT64_MIN;
  int64_t hi = INT64_MAX;
  bool mayFail = false;

  bool isZero() const { return lo == 0 && hi == 0; }
  bool excludesZero() const { return lo > 0 || hi < 0; }
};

/// The range of evaluate(e, env) over every env with lo[s] <= env[s] <=
/// hi[s] (a slot past the end reads as 0, as in evaluate()). Sound, not
/// always tight: a box it cannot decide is split by the caller.
ValueRange evaluateRange(const ir::Expr &e, llvm::ArrayRef<int64_t> lo,
                         llvm::ArrayRef<int64_t> hi);

/// A predicate prepared for many box evaluations within one transfer (or,
/// varying the rank too, one step): the sub-expressions that read no slot
/// varying in the search are evaluated once by specialise(), and evaluate()
/// treats them as constants.
class RangePredicate {
public:
  explicit RangePredicate(const ir::Expr &e);

  /// The slots a search may vary, as bits of `varying`.
  enum VaryingSlot : unsigned { Origin = 1, Dest = 2, Index = 4, Rank = 8 };
  /// Evaluates, in `env`, every maximal sub-expression that reads none of
  /// the slots in `varying` (VaryingSlot bits).
  void specialise(llvm::ArrayRef<int64_t> env, unsigned varying);
  /// evaluateRange() of the expression, given the environment specialise()
  /// saw for the fixed parts.
  ValueRange evaluate(llvm::ArrayRef<int64_t> lo,
                      llvm::ArrayRef<int64_t> hi) const;
  /// The expression's nodes: what one evaluate() costs at most.
  size_t size() const { return nodes.size(); }

private:
  struct Node {
    const ir::Expr *expr;
    unsigned args[3];
    unsigned reads; // slots read, as in `varying`
    unsigned end;   // one past the last node of its subtree (pre-order)
    ValueRange value; // when fixed
    bool fixed;
  };
  unsigned flatten(const ir::Expr &e);
  ValueRange evaluateNode(unsigned i, llvm::ArrayRef<int64_t> lo,
                          llvm::ArrayRef<int64_t> hi) const;

  std::vector<Node> nodes; // pre-order; nodes[0] is the root
};

} // namespace collc::simulate
