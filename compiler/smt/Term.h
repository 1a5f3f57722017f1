#pragma once
// Solver terms: bit-vectors (64 bits unless a narrower width is asked for)
// and booleans, folded to constants where both operands are constants, so
// that trivial queries never reach Z3.
//
// Every operator has SMT-LIB's total meaning at its operands' width w
// (bvsdiv by zero is -1 or 1, bvsrem by zero is the dividend, shifts by w or
// more saturate); both operands of a binary operator have one width. A
// constant is held as its value sign-extended from w bits. Callers
// that need C++'s partial meaning state definedness separately (see
// prove/ExprToSmt.h). Folding follows the same total meaning, so a folded
// term and the Z3 term it replaces always agree.
//
// This header does not include z3++.h: only compiler/smt/*.cpp sees Z3.

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace collc::smt {

class Context;
class Solver;
class Result;

namespace detail {
struct Ast;         // holds a z3::expr
struct ContextImpl; // holds the z3::context
struct Access;      // the wrapper's own view of the internals
} // namespace detail

enum class Sort { Bool, BitVec };

/// The width of bit-vectors unless one is asked for.
constexpr unsigned DefaultWidth = 64;

/// The value of the low `width` bits of `bits` as a signed number.
inline int64_t signExtend(uint64_t bits, unsigned width) {
  if (width >= 64)
    return static_cast<int64_t>(bits);
  uint64_t sign = uint64_t(1) << (width - 1);
  bits &= (sign << 1) - 1;
  return static_cast<int64_t>(bits ^ sign) - static_cast<int64_t>(sign);
}

/// Whether `v` is a `width`-bit signed number.
inline bool fitsSigned(int64_t v, unsigned width) {
  return signExtend(static_cast<uint64_t>(v), width) == v;
}

/// A boolean or a bit-vector term of 1..64 bits. A default-constructed Term is
/// invalid; every other Term belongs to one Context and must not outlive it.
class Term {
public:
  Term() = default;

  bool isValid() const { return ctx != nullptr; }
  Sort sort() const { return sortValue; }
  bool isBool() const { return sortValue == Sort::Bool; }
  bool isBitVec() const { return sortValue == Sort::BitVec; }
  /// Bits of a bit-vector (0 for a boolean).
  unsigned width() const { return isBitVec() ? widthValue : 0; }
  /// The folded value (booleans as 0/1), if the term is a constant.
  std::optional<int64_t> constant() const { return value; }
  bool isTrue() const { return isBool() && value && *value != 0; }
  bool isFalse() const { return isBool() && value && *value == 0; }

  /// The context the term belongs to (null for an invalid term).
  Context *context() const { return ctx; }

  /// SMT-LIB text of the term (constants print without calling Z3).
  std::string print() const;

  // Bit-vector arithmetic, wrapping modulo 2^width.
  friend Term operator+(const Term &a, const Term &b);
  friend Term operator-(const Term &a, const Term &b);
  friend Term operator*(const Term &a, const Term &b);
  friend Term operator-(const Term &a);
  friend Term sdiv(const Term &a, const Term &b); // bvsdiv: truncates
  friend Term srem(const Term &a, const Term &b); // bvsrem: sign of a
  friend Term shl(const Term &a, const Term &b);
  friend Term ashr(const Term &a, const Term &b);
  friend Term operator&(const Term &a, const Term &b);
  friend Term operator|(const Term &a, const Term &b);
  friend Term operator^(const Term &a, const Term &b);
  friend Term operator~(const Term &a);
  friend Term smin(const Term &a, const Term &b);
  friend Term smax(const Term &a, const Term &b);
  /// Whether a * b, as unsigned numbers, fits the width (no wrap).
  friend Term umulFits(const Term &a, const Term &b);

  // Comparisons (booleans); == and != also compare booleans.
  friend Term operator==(const Term &a, const Term &b);
  friend Term operator!=(const Term &a, const Term &b);
  friend Term slt(const Term &a, const Term &b);
  friend Term sle(const Term &a, const Term &b);
  friend Term sgt(const Term &a, const Term &b);
  friend Term sge(const Term &a, const Term &b);

  // Boolean connectives.
  friend Term operator&&(const Term &a, const Term &b);
  friend Term operator||(const Term &a, const Term &b);
  friend Term operator!(const Term &a);
  friend Term implies(const Term &a, const Term &b);

  /// c ? a : b, with c boolean and a, b of one sort.
  friend Term ite(const Term &c, const Term &a, const Term &b);

  // Mixed-sort operators with an int64_t constant on one side, taken at the
  // term's width.
  friend Term operator+(const Term &a, int64_t b);
  friend Term operator-(const Term &a, int64_t b);
  friend Term operator==(const Term &a, int64_t b);
  friend Term operator!=(const Term &a, int64_t b);
  friend Term slt(const Term &a, int64_t b);
  friend Term sle(const Term &a, int64_t b);
  friend Term sge(const Term &a, int64_t b);
  friend Term sgt(const Term &a, int64_t b);

private:
  friend class Context;
  friend struct detail::Access;

  Term(Context *ctx, Sort sort, unsigned width, std::optional<int64_t> value,
       std::shared_ptr<const detail::Ast> ast)
      : ctx(ctx), sortValue(sort), widthValue(width), value(value),
        ast(std::move(ast)) {}

  Context *ctx = nullptr;
  Sort sortValue = Sort::BitVec;
  unsigned widthValue = DefaultWidth;
  std::optional<int64_t> value;           // set: a constant
  std::shared_ptr<const detail::Ast> ast; // set: not a constant
};

/// Owns the Z3 context. Create one per thread; terms from different contexts
/// must not be mixed.
class Context {
public:
  Context();
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  /// `v` modulo 2^width (sign-extended back, as every constant is held).
  Term bitVec(int64_t v, unsigned width = DefaultWidth);
  Term boolean(bool b);
  /// A fresh variable; `name` is for printing (a suffix keeps it unique).
  Term bitVecVar(llvm::StringRef name, unsigned width = DefaultWidth);
  Term boolVar(llvm::StringRef name);

  /// Conjunction and disjunction of any number of booleans (true / false
  /// when empty), folding constant operands away.
  Term all(llvm::ArrayRef<Term> terms);
  Term any(llvm::ArrayRef<Term> terms);

  /// Number of variables made so far (for tests and statistics).
  unsigned numVars() const { return varCounter; }

  /// States that sdiv and srem of `number` by `radix` are `high` and `low`
  /// wherever the query's assumptions hold (which keep every radix
  /// positive), so that a query asks for them with no divider circuit: a
  /// rank of a mesh built from its coordinates (prove/MeshRanks.h) is
  /// divided by a symbolic extent as a lookup. `canonical`: moreover 0 <=
  /// `low` < `radix` and `high` >= 0, so that digits of the number plus 1
  /// or plus the radix follow from these (operator+ and operator- carry
  /// them).
  void knowDigits(const Term &number, const Term &radix, const Term &high,
                  const Term &low, bool canonical);
  /// States that 0 <= `number` < `radix` wherever the query's assumptions
  /// hold: a mesh coordinate, so that its neighbour's, (c + 1) % a, is a
  /// comparison and a subtraction with no divider circuit.
  void knowBelow(const Term &number, const Term &radix);
  /// Whether knowDigits stated (or carried) `number`'s digits in some radix.
  bool digitsKnown(const Term &number) const;

private:
  friend struct detail::Access;

  std::unique_ptr<detail::ContextImpl> impl;
  unsigned varCounter = 0;
};

} // namespace collc::smt
