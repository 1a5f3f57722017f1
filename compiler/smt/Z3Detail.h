#pragma once
// Private to compiler/smt/*.cpp: the Z3 objects behind Term, Context and
// Result. Nothing outside compiler/smt/ includes this header (or z3++.h).

#include "smt/Term.h"

#include <z3++.h>

namespace collc::smt::detail {

struct Ast {
  z3::expr expr;
};

struct ContextImpl {
  z3::context z3;
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
};

} // namespace collc::smt::detail
