#pragma once
// Private to compiler/smt/*.cpp: the Z3 objects behind Term, Context and
// Result. Nothing outside compiler/smt/ includes this header (or z3++.h).

#include "smt/Term.h"

#include <z3++.h>

#include <map>
#include <vector>

namespace collc::smt::detail {

struct Ast {
  z3::expr expr;
};

struct ContextImpl {
  z3::context z3;
  /// Context::knowDigits, by the Z3 id of the number, which each entry
  /// holds so that Z3 cannot give the id to another term.
  struct Digits {
    Term number, radix, high, low;
    bool canonical; // 0 <= low < radix and high >= 0
  };
  std::map<unsigned, std::vector<Digits>> digits;
  /// Context::knowBelow: radices each number is known to lie in 0 .. radix
  /// - 1 of, by the Z3 id of the number, which the first entry holds.
  std::map<unsigned, std::vector<Term>> below;
};

struct Model {
  z3::model model;
};

/// The one door through which the wrapper's .cpp files reach Term and
/// Context internals.
struct Access {
  static Term wrap(Context *ctx, Sort sort, unsigned width, const z3::expr &e) {
    return Term(ctx, sort, width, std::nullopt,
                std::make_shared<const Ast>(Ast{e}));
  }
  static z3::expr toZ3(const Term &t);
  static z3::context &z3Of(Context &ctx) { return ctx.impl->z3; }
  static ContextImpl &implOf(Context &ctx) { return *ctx.impl; }
};

} // namespace collc::smt::detail
