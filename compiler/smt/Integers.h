#pragma once
// Private to compiler/smt/*.cpp: a bit-vector query read as linear integer
// arithmetic, for the solver's first attempt (docs/proofs.md, "Linear
// queries over the integers").

#include <z3++.h>

#include <optional>
#include <unordered_map>
#include <vector>

namespace collc::smt::detail {

/// Reads bit-vector terms as integers with the same values: each variable
/// of width w ranges over -2^(w-1) .. 2^(w-1) - 1 and each sum, difference
/// and product by a constant wraps as the bit-vector does (a fresh integer
/// counts the wraps), so a model of the reading is a model of the query
/// and the reverse. Division and remainder by a positive constant are
/// exact too. A division by anything else reads as a fresh integer: the
/// reading then has every model of the query and more, so its unsat is
/// still the query's, and a model of it must be checked on the query.
/// Bitwise operators, shifts and products of two variables have no
/// reading. Z3's linear arithmetic decides the rest at once where
/// bit-blasting grows with the width (docs/proofs.md has the figures).
class IntegerReading {
public:
  explicit IntegerReading(z3::context &z) : z(z), definitions(z) {}

  /// Whether `e` has a reading, found without making any term: a query
  /// without one reaches the bit-vectors in a context as it was.
  bool readable(const z3::expr &e);
  /// The reading of a Boolean term; none where a part has no reading.
  std::optional<z3::expr> read(const z3::expr &e);
  /// What the reading's fresh integers mean; assert these with the terms.
  const z3::expr_vector &facts() const { return definitions; }
  /// The bit-vector variables read, with their integers.
  const std::vector<std::pair<z3::expr, z3::expr>> &variables() const {
    return vars;
  }

private:
  std::optional<z3::expr> readNode(const z3::expr &e);
  /// A numeral, a variable or a truth value; none for anything else.
  std::optional<z3::expr> readLeaf(const z3::expr &e);
  /// `e`, whose arguments read as `args`.
  std::optional<z3::expr> readOperator(const z3::expr &e,
                                       const std::vector<z3::expr> &args);
  /// A signed quotient or remainder `e` of the readings `args`.
  z3::expr readDivision(const z3::expr &e, const std::vector<z3::expr> &args);
  /// `sum` of width w brought into -2^(w-1) .. 2^(w-1) - 1 by whole wraps.
  z3::expr wrapped(const z3::expr &sum, unsigned width);
  z3::expr fresh(const char *prefix);

  z3::context &z;
  z3::expr_vector definitions;
  std::vector<std::pair<z3::expr, z3::expr>> vars;
  std::unordered_map<unsigned, z3::expr> readings; // by Z3 id
  std::unordered_map<unsigned, bool> readability;  // by Z3 id
};

} // namespace collc::smt::detail
