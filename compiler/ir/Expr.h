#pragma once
// The Schedule IR's expression language: integer expressions over the rank
// `r`, loop indices, the size `p` and topology parameters.
//
// An expression has three interpretations, each written once:
//   evaluate()  - instantiate a concrete schedule (ir/Expr.cpp),
//   printCpp()  - print as C++ for the emitted code (ir/Expr.cpp),
//   toSmt()     - translate to a solver term for the prover (verify/).
// All three give the operators C++'s meaning on 64-bit signed integers:
// `/` truncates, `%` takes the sign of the dividend, `>>` is arithmetic.
// Division by zero and shifts outside 0..63 are undefined; evaluate() reports
// them and the prover states them as obligations.

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace collc::ir {

enum class ExprOp {
  Const,
  Var,
  // unary
  Neg,
  BitNot,
  Not,
  /// ceil_log2(x): the least k >= 0 with 2^k >= x (0 for x <= 1): the
  /// steps of a recursive doubling over x ranks, the bits of x - 1.
  CeilLog2,
  // binary arithmetic and bitwise
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Pow,
  Shl,
  Shr,
  BitAnd,
  BitOr,
  BitXor,
  Min,
  Max,
  /// bitreverse(x, n): the low n bits of x in reverse order, n in 0 .. 62
  /// (004 §4.4's bit reversal); the bits of x above them are dropped.
  BitReverse,
  // comparisons (0 or 1)
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  // logic (0 or 1; operands are tested against 0)
  And,
  Or,
  // cond ? a : b
  Select,
};

/// ceil_log2(x) as evaluate() computes it (collc_ceil_log2 in the emitted
/// code); non-decreasing, so an interval maps to its ends' values.
inline int64_t ceilLog2(int64_t x) {
  return x <= 1 ? 0 : 64 - __builtin_clzll(static_cast<uint64_t>(x - 1));
}

struct Expr;
using ExprRef = std::shared_ptr<const Expr>;

/// A variable is named for printing and numbered for speed: `slot` indexes
/// the environment that evaluate() and toSmt() are given.
struct Expr {
  ExprOp op;
  int64_t value = 0;    // Const
  std::string name;     // Var
  unsigned slot = 0;    // Var
  std::vector<ExprRef> args;
  llvm::SMLoc loc;      // where it came from, for diagnostics (may be null)
  /// Operators on the longest path to a leaf (1 for a leaf): the passes
  /// over expressions recurse, so sema refuses any deeper than maxExprDepth.
  unsigned depth = 1;

  static ExprRef constant(int64_t v, llvm::SMLoc loc = {});
  static ExprRef var(llvm::StringRef name, unsigned slot, llvm::SMLoc loc = {});
  static ExprRef unary(ExprOp op, ExprRef a, llvm::SMLoc loc = {});
  static ExprRef binary(ExprOp op, ExprRef a, ExprRef b, llvm::SMLoc loc = {});
  static ExprRef select(ExprRef c, ExprRef a, ExprRef b, llvm::SMLoc loc = {});

  bool isConst() const { return op == ExprOp::Const; }
};

/// The deepest expression sema accepts: evaluate(), fold(), the printers,
/// toSmt() and the width analysis recurse once per level, and so does the
/// destruction of a node's operands.
constexpr unsigned maxExprDepth = 1000;

/// Why an evaluation failed.
enum class EvalError { None, DivByZero, Overflow, BadShift, BadPow, BadBits };

struct EvalResult {
  int64_t value = 0;
  EvalError error = EvalError::None;
  const Expr *where = nullptr; // the sub-expression that failed
  bool ok() const { return error == EvalError::None; }
};

/// Interpretation 1: evaluate with `env[slot]` as each variable's value.
EvalResult evaluate(const Expr &e, llvm::ArrayRef<int64_t> env);

/// Interpretation 2: print as a C++ expression over int64_t variables named
/// as in the source (or as `names[slot]` when `names` is given).
std::string printCpp(const Expr &e,
                     llvm::ArrayRef<std::string> names = {});

/// The source spelling, for diagnostics and `collc show`.
std::string print(const Expr &e);

/// Folds constant sub-expressions; the result is equivalent under evaluate().
ExprRef fold(const ExprRef &e);

/// The expression with every variable v replaced by replace(v) (or kept
/// when that returns null).
ExprRef substitute(const ExprRef &e,
                   const std::function<ExprRef(const Expr &var)> &replace);

/// Every slot the expression reads.
void collectSlots(const Expr &e, std::vector<unsigned> &slots);
/// Whether the expression reads `slot`.
bool reads(const Expr &e, unsigned slot);
/// Whether two expressions are the same tree: operators, constants and
/// variables' slots alike (names and places aside).
bool sameTree(const Expr &a, const Expr &b);

/// A human-readable message for an evaluation error.
llvm::StringRef describe(EvalError error);

} // namespace collc::ir
