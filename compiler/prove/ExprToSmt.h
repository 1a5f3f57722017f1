#pragma once
// Interpretation 3 of ir::Expr (see ir/Expr.h): translation to solver terms.
//
// The translation is at the width of the slot terms it is given: 64 bits
// is exact; a narrower width w is equivalent where prove/Width.h's analysis
// shows every sub-expression fits w-bit signed arithmetic (the prover
// checks this before it narrows). The description below is for 64 bits.
//
// Every operator means exactly what ir::evaluate() makes it mean on int64_t,
// wherever evaluate() succeeds: wrapping + - *, `/` truncating (bvsdiv), `%`
// with the sign of the dividend (bvsrem), `>>` arithmetic, signed
// comparisons and min/max, `and`/`or`/`not`/select testing against zero, and
// `**` exactly (wrapping, like evaluate's square-and-multiply): a constant
// exponent unrolls, base 2^k becomes a shift, and a symbolic base and
// exponent become 64 rounds of square-and-multiply (exact but costly for the
// solver).
//
// Where evaluate() fails (division by zero or INT64_MIN / -1, shift amount
// outside 0..63, negative exponent) the value term is unconstrained by C++
// and `defined` is false; the prover states `defined` as an obligation.
// Definedness follows evaluate's short-circuiting: `a and b` needs b defined
// only when a is nonzero, select only its chosen branch.

#include "ir/Expr.h"
#include "smt/Term.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/MapVector.h"

namespace collc::prove {

struct SmtExpr {
  smt::Term value;   // bit-vector of the slots' width
  smt::Term defined; // boolean: evaluate() would succeed
};

/// Translates expressions over one slot environment, sharing the terms of
/// sub-expressions that are shared between the expressions it is given.
class ExprToSmt {
public:
  /// `slots[i]` is the term for variable slot i, bit-vectors of one width
  /// (at least MinWidth; 64 without slots); a slot outside the array reads
  /// as 0, as in evaluate().
  ExprToSmt(smt::Context &ctx, llvm::ArrayRef<smt::Term> slots);

  SmtExpr translate(const ir::Expr &e);
  /// The boolean "e is nonzero", without a detour through 0/1 for
  /// comparisons and logic.
  smt::Term nonzero(const ir::Expr &e);

private:
  struct Entry {
    smt::Term value;
    smt::Term defined;
    smt::Term
        asBool; // valid for comparisons and logic: value == (asBool ? 1 : 0)
  };
  /// The terms every operator may use, made once per expression.
  struct Constants {
    smt::Term yes, one, zero; // true, and 1 and 0 at the width
  };
  Entry get(const ir::Expr &e);
  Entry build(const ir::Expr &e);
  Entry unary(ir::ExprOp op, const Entry &a, const Constants &k);
  Entry binary(ir::ExprOp op, const Entry &a, const Entry &b,
               const Constants &k);
  /// A comparison, as 0 or 1 (and as a boolean).
  Entry compare(ir::ExprOp op, const smt::Term &x, const smt::Term &y,
                const Constants &k);
  /// The low n bits of x in reverse order (ir::ExprOp::BitReverse).
  smt::Term bitReverse(const smt::Term &x, const smt::Term &n,
                       const Constants &k);
  Entry fromBool(const smt::Term &b, const Constants &k);
  smt::Term test(const Entry &e);
  smt::Term power(const smt::Term &base, const smt::Term &exponent);

  smt::Context &ctx;
  std::vector<smt::Term> slots;
  unsigned width = smt::DefaultWidth;
  // In the order built, so its terms are let go in one order: Z3 gives
  // a freed term's id to the next term made, and its search follows ids, so
  // an order by address would make a query's work differ from run to run.
  llvm::MapVector<const ir::Expr *, Entry> cache;
};

/// The value of `e` with `slots[i]` for variable slot i. `slots` must not
/// be empty (its terms name the context); use ExprToSmt otherwise.
smt::Term toSmt(const ir::Expr &e, llvm::ArrayRef<smt::Term> slots);
/// Value and definedness of `e`.
SmtExpr toSmtChecked(const ir::Expr &e, llvm::ArrayRef<smt::Term> slots);

} // namespace collc::prove
