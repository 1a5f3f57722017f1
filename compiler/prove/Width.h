#pragma once
// How many bits the prover's bit-vectors need: an interval analysis over
// ir::Expr, given an interval for every slot.
//
// The rule. ExprToSmt translates at width w: every variable and constant is
// a w-bit vector and every operator has SMT-LIB's total meaning at w bits.
// Take the query's variables within their intervals. If, for every
// sub-expression e of everything translated, the interval of e's 64-bit
// value (under the same total meaning, wrapping included) lies within
// -2^(w-1) .. 2^(w-1)-1, then the w-bit term equals the 64-bit term, by
// induction over e:
//   + - * ~ & | ^ and ite agree modulo 2^w at any width, and a value that
//   fits is fixed by its residue;
//   comparisons agree on values that fit;
//   bvsdiv / bvsrem agree on operands and results that fit (a zero divisor
//   gives -1, 1 or the dividend at both widths; the one quotient that
//   overflows, -2^(w-1) / -1, does not fit and is excluded);
//   shifts agree: an amount in 0..w-1 shifts alike, an amount at or past w
//   (or negative, read unsigned) gives 0 or the sign fill at w bits and,
//   for a result that fits, the same at 64 bits;
//   `**` is built from * and shifts, and its 2^k form compares the exponent
//   with 63, which is why the width is never below MinWidth.
// A query is the conjunction of range assumptions on its variables (each
// variable's range over those declared before it) and terms over them;
// with the variables within their intervals wherever a term's value
// matters, the query at width w is satisfiable exactly when it is at 64
// bits, and a model at w bits is one at 64 bits, read sign-extended.
// Where some interval does not fit 63 bits the width is 64: the
// translation is then the exact one.

#include "ir/Expr.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <vector>

namespace collc::prove {

/// The narrowest width the analysis picks: 63 (the largest defined shift
/// amount, compared against by `**` and by definedness) must be a constant
/// of every width.
constexpr unsigned MinWidth = 8;

/// A set of int64_t values lo..hi, inclusive (never empty).
struct Interval {
  int64_t lo = INT64_MIN;
  int64_t hi = INT64_MAX;

  static Interval all() { return {}; }
  static Interval point(int64_t v) { return {v, v}; }
  /// lo..hi given as 128-bit bounds; all() when a bound leaves int64_t (the
  /// 64-bit value wrapped).
  static Interval fromWide(__int128 lo, __int128 hi);

  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  bool isAll() const { return lo == INT64_MIN && hi == INT64_MAX; }
  Interval hull(const Interval &other) const;
  /// Bits of the narrowest two's-complement number holding lo and hi.
  unsigned signedBits() const;
  bool operator==(const Interval &) const = default;
};

/// The interval of e's 64-bit value under the solver's total semantics,
/// with the value of slot i in `slots[i]` (a slot past the end reads as 0,
/// as in evaluate()).
Interval intervalOf(const ir::Expr &e, llvm::ArrayRef<Interval> slots);

/// Collects the width a query needs: every expression it translates is
/// given to require(), after the intervals of the slots it reads are set.
class WidthAnalysis {
public:
  /// `numSlots` slots, each unbounded until set.
  explicit WidthAnalysis(unsigned numSlots) : slots(numSlots) {}

  void setSlot(unsigned slot, Interval interval);
  Interval slot(unsigned slot) const { return slots[slot]; }

  /// The interval of `e`; every sub-expression's interval must fit.
  Interval require(const ir::Expr &e);
  /// A value the query states outside the expressions (a constant it
  /// compares with, a variable's range) must fit as well.
  void require(Interval interval);

  /// MinWidth .. 63, or 64 when some interval needs 64 bits.
  unsigned width() const;

private:
  Interval visit(const ir::Expr &e);

  std::vector<Interval> slots;
  llvm::DenseMap<const ir::Expr *, Interval> cache; // within one require()
  unsigned bits = 1;
};

} // namespace collc::prove
