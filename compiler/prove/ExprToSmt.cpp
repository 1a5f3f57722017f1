#include "prove/ExprToSmt.h"
#include "prove/Width.h"

#include "llvm/ADT/STLExtras.h"

#include <cassert>

using namespace collc;
using namespace collc::prove;
using ir::ExprOp;
using smt::Term;

ExprToSmt::ExprToSmt(smt::Context &ctx, llvm::ArrayRef<Term> slots)
    : ctx(ctx), slots(slots.begin(), slots.end()) {
  auto typed = llvm::find_if(slots, [](const Term &t) { return t.isValid(); });
  if (typed != slots.end())
    width = typed->width();
  assert(width >= MinWidth &&
         llvm::all_of(slots,
                      [&](const Term &t) {
                        return !t.isValid() || t.width() == width;
                      }) &&
         "slots of one width, at least MinWidth");
}

Term ExprToSmt::test(const Entry &e) {
  return e.asBool.isValid() ? e.asBool : e.value != 0;
}

Term ExprToSmt::nonzero(const ir::Expr &e) { return test(get(e)); }

SmtExpr ExprToSmt::translate(const ir::Expr &e) {
  Entry entry = get(e);
  return {entry.value, entry.defined};
}

ExprToSmt::Entry ExprToSmt::get(const ir::Expr &e) {
  auto it = cache.find(&e);
  if (it != cache.end())
    return it->second;
  Entry entry = build(e);
  cache.insert({&e, entry});
  return entry;
}

// x ** n modulo 2^width, as evaluate() computes it (modulo 2^64) by
// square-and-multiply.
Term ExprToSmt::power(const Term &base, const Term &exponent) {
  Term one = ctx.bitVec(1, width);
  if (auto n = exponent.constant()) {
    // Negative exponents are undefined; any value will do.
    Term result = one, square = base;
    for (uint64_t bits = *n < 0 ? 0 : static_cast<uint64_t>(*n); bits != 0;
         bits >>= 1) {
      if (bits & 1)
        result = result * square;
      if (bits > 1)
        square = square * square;
    }
    return result;
  }
  if (auto x = base.constant()) {
    if (*x == 0)
      return ite(exponent == 0, one, ctx.bitVec(0, width));
    if (*x == 1)
      return one;
    if (*x == -1)
      return ite((exponent & one) == 0, one, ctx.bitVec(-1, width));
    if (*x > 0 && (*x & (*x - 1)) == 0) {
      // 2^k ** n == 1 << (k * n); for n > 63 the product is 0 mod 2^64,
      // and testing n first keeps k * n from wrapping.
      int64_t k = __builtin_ctzll(static_cast<uint64_t>(*x));
      if (k == 1)
        return shl(one, exponent);
      return ite(sle(exponent, 63), shl(one, exponent * ctx.bitVec(k, width)),
                 ctx.bitVec(0, width));
    }
  }
  // General case: one round per exponent bit. The squares of a constant base
  // fold to constants, so only the selections reach the solver.
  Term result = one, square = base;
  for (int bit = 0; bit < 64; ++bit) {
    Term set = (ashr(exponent, ctx.bitVec(bit, width)) & one) != 0;
    result = result * ite(set, square, one);
    square = square * square;
  }
  return result;
}

ExprToSmt::Entry ExprToSmt::fromBool(const Term &b, const Constants &k) {
  return Entry{ite(b, k.one, k.zero), k.yes, b};
}

ExprToSmt::Entry ExprToSmt::build(const ir::Expr &e) {
  // Made first, in this order, as every term is made in one order (the
  // cache's comment says why).
  const Constants k{ctx.boolean(true), ctx.bitVec(1, width),
                    ctx.bitVec(0, width)};
  switch (e.op) {
  case ExprOp::Const:
    return {ctx.bitVec(e.value, width), k.yes, {}};
  case ExprOp::Var:
    return {e.slot < slots.size() ? slots[e.slot] : k.zero, k.yes, {}};
  case ExprOp::Select: {
    Entry c = get(*e.args[0]), a = get(*e.args[1]), b = get(*e.args[2]);
    Term cond = test(c);
    Entry r{ite(cond, a.value, b.value),
            c.defined && ite(cond, a.defined, b.defined),
            {}};
    if (a.asBool.isValid() && b.asBool.isValid())
      r.asBool = ite(cond, a.asBool, b.asBool);
    return r;
  }
  case ExprOp::And:
  case ExprOp::Or: {
    Entry a = get(*e.args[0]), b = get(*e.args[1]);
    Term ta = test(a), tb = test(b);
    bool isAnd = e.op == ExprOp::And;
    // The right operand is evaluated (and must be defined) only when the
    // left one does not decide the result.
    Entry r = fromBool(isAnd ? (ta && tb) : (ta || tb), k);
    r.defined = a.defined && implies(isAnd ? ta : !ta, b.defined);
    return r;
  }
  default:
    break;
  }
  Entry a = get(*e.args[0]);
  if (e.args.size() == 1)
    return unary(e.op, a, k);
  Entry b = get(*e.args[1]);
  return binary(e.op, a, b, k);
}

ExprToSmt::Entry ExprToSmt::unary(ExprOp op, const Entry &a,
                                  const Constants &k) {
  Entry r;
  switch (op) {
  case ExprOp::Neg:
    r = {-a.value, k.yes, {}};
    break;
  case ExprOp::BitNot:
    r = {~a.value, k.yes, {}};
    break;
  case ExprOp::Not:
    r = fromBool(!test(a), k);
    break;
  case ExprOp::CeilLog2: {
    // The powers of two below x, counted: each fits the width (x does,
    // prove/Width.h), and a negative x exceeds none.
    r = {k.zero, k.yes, {}};
    for (unsigned j = 0; j + 2 <= width; ++j)
      r.value = r.value + ite(sgt(a.value, ctx.bitVec(int64_t(1) << j, width)),
                              k.one, k.zero);
    break;
  }
  default:
    assert(false && "not a unary operator");
    r = {k.zero, ctx.boolean(false), {}};
    break;
  }
  r.defined = a.defined;
  return r;
}

ExprToSmt::Entry ExprToSmt::binary(ExprOp op, const Entry &a, const Entry &b,
                                   const Constants &k) {
  const Term &x = a.value, &y = b.value;
  Term defined = a.defined && b.defined;
  Entry r;
  switch (op) {
  case ExprOp::Add:
    r = {x + y, k.yes, {}};
    break;
  case ExprOp::Sub:
    r = {x - y, k.yes, {}};
    break;
  case ExprOp::Mul:
    r = {x * y, k.yes, {}};
    break;
  case ExprOp::Div:
  case ExprOp::Mod:
    r = {op == ExprOp::Div ? sdiv(x, y) : srem(x, y), k.yes, {}};
    defined = defined && y != 0;
    // Below 64 bits x fits the width, so it is never INT64_MIN.
    if (width == 64)
      defined = defined && !(x == INT64_MIN && y == -1);
    break;
  case ExprOp::Pow:
    r = {power(x, y), k.yes, {}};
    defined = defined && sge(y, 0);
    break;
  case ExprOp::Shl:
  case ExprOp::Shr:
    r = {op == ExprOp::Shl ? shl(x, y) : ashr(x, y), k.yes, {}};
    defined = defined && sge(y, 0) && sle(y, 63);
    break;
  case ExprOp::BitAnd:
    r = {x & y, k.yes, {}};
    break;
  case ExprOp::BitOr:
    r = {x | y, k.yes, {}};
    break;
  case ExprOp::BitXor:
    r = {x ^ y, k.yes, {}};
    break;
  case ExprOp::Min:
    r = {smin(x, y), k.yes, {}};
    break;
  case ExprOp::Max:
    r = {smax(x, y), k.yes, {}};
    break;
  case ExprOp::BitReverse:
    r = {bitReverse(x, y, k), k.yes, {}};
    defined = defined && sge(y, 0) && sle(y, 62);
    break;
  default:
    r = compare(op, x, y, k);
    break;
  }
  r.defined = defined;
  return r;
}

Term ExprToSmt::bitReverse(const Term &x, const Term &n, const Constants &k) {
  // Bit i of x lands at n - 1 - i for i < n. Where the result fits the
  // width (prove/Width.h), n is below it, so bits 0 .. width - 1 suffice.
  Term out = k.zero;
  for (unsigned i = 0; i < width; ++i)
    out = out | ite(slt(ctx.bitVec(i, width), n),
                    shl(ashr(x, ctx.bitVec(i, width)) & k.one,
                        n - ctx.bitVec(i + 1, width)),
                    k.zero);
  // Undefined past 62 bits; 0 there, at every width alike.
  return ite(sle(n, 62), out, k.zero);
}

ExprToSmt::Entry ExprToSmt::compare(ExprOp op, const Term &x, const Term &y,
                                    const Constants &k) {
  switch (op) {
  case ExprOp::Eq:
    return fromBool(x == y, k);
  case ExprOp::Ne:
    return fromBool(x != y, k);
  case ExprOp::Lt:
    return fromBool(slt(x, y), k);
  case ExprOp::Le:
    return fromBool(sle(x, y), k);
  case ExprOp::Gt:
    return fromBool(sgt(x, y), k);
  case ExprOp::Ge:
    return fromBool(sge(x, y), k);
  default:
    assert(false && "not a binary operator");
    return {k.zero, ctx.boolean(false), {}};
  }
}

Term collc::prove::toSmt(const ir::Expr &e, llvm::ArrayRef<Term> slots) {
  assert(!slots.empty() && slots[0].context() && "toSmt needs a context");
  return ExprToSmt(*slots[0].context(), slots).translate(e).value;
}

SmtExpr collc::prove::toSmtChecked(const ir::Expr &e,
                                   llvm::ArrayRef<Term> slots) {
  assert(!slots.empty() && slots[0].context() && "toSmt needs a context");
  return ExprToSmt(*slots[0].context(), slots).translate(e);
}
