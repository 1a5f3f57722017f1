#include "simulate/RangeEval.h"

#include "ir/Schedule.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <bit>
#include <initializer_list>
#include <optional>

using namespace collc;
using namespace collc::simulate;
using ir::Expr;
using ir::ExprOp;

namespace {

using Wide = __int128;

ValueRange point(int64_t v) { return {v, v, false}; }
ValueRange everything(bool mayFail) { return {INT64_MIN, INT64_MAX, mayFail}; }
ValueRange boolean(bool canBeFalse, bool canBeTrue, bool mayFail) {
  if (!canBeTrue)
    return {0, 0, mayFail};
  if (!canBeFalse)
    return {1, 1, mayFail};
  return {0, 1, mayFail};
}

/// lo..hi from exact bounds; everything when a bound leaves int64_t, since
/// the 64-bit result wraps there and its values are no longer an interval.
ValueRange fromWide(Wide lo, Wide hi, bool mayFail) {
  if (lo < INT64_MIN || hi > INT64_MAX)
    return everything(mayFail);
  return {static_cast<int64_t>(lo), static_cast<int64_t>(hi), mayFail};
}

ValueRange hullOf(std::initializer_list<Wide> values, bool mayFail) {
  return fromWide(std::min(values), std::max(values), mayFail);
}

bool mayBeZero(const ValueRange &r) { return r.lo <= 0 && 0 <= r.hi; }

/// The set bits of `mask`, highest first: where the loops below can act.
/// Each of them skips the bits that cannot change its bound, which the
/// book's loops test one by one from bit 63.
template <typename Visit> void highestFirst(uint64_t mask, Visit visit) {
  while (mask != 0) {
    const uint64_t m = uint64_t(1) << (63 - std::countl_zero(mask));
    if (visit(m))
      return;
    mask &= ~m;
  }
}

// Bounds of x op y for unsigned x in a..b and y in c..d (Warren, Hacker's
// Delight §4-3); the values here are non-negative int64_t.
uint64_t minOr(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  highestFirst(a ^ c, [&](uint64_t m) {
    if (c & m) {
      uint64_t t = (a | m) & -m;
      if (t <= b)
        return a = t, true;
    } else {
      uint64_t t = (c | m) & -m;
      if (t <= d)
        return c = t, true;
    }
    return false;
  });
  return a | c;
}

uint64_t maxOr(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  highestFirst(b & d, [&](uint64_t m) {
    uint64_t t = (b - m) | (m - 1);
    if (t >= a)
      return b = t, true;
    t = (d - m) | (m - 1);
    if (t >= c)
      return d = t, true;
    return false;
  });
  return b | d;
}

uint64_t minAnd(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  // A bit above both b and d gives t > b and t > d: nothing to try there.
  const uint64_t below = std::bit_ceil((b | d) + 1) - 1;
  highestFirst(~a & ~c & below, [&](uint64_t m) {
    uint64_t t = (a | m) & -m;
    if (t <= b)
      return a = t, true;
    t = (c | m) & -m;
    if (t <= d)
      return c = t, true;
    return false;
  });
  return a & c;
}

uint64_t maxAnd(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  highestFirst(b ^ d, [&](uint64_t m) {
    if (b & m) {
      uint64_t t = (b & ~m) | (m - 1);
      if (t >= a)
        return b = t, true;
    } else {
      uint64_t t = (d & ~m) | (m - 1);
      if (t >= c)
        return d = t, true;
    }
    return false;
  });
  return b & d;
}

/// The smallest 2^k - 1 at or above v (v >= 0).
int64_t fillBelow(int64_t v) {
  uint64_t m = static_cast<uint64_t>(v);
  for (int s = 1; s < 64; s <<= 1)
    m |= m >> s;
  return static_cast<int64_t>(m);
}

ValueRange bitwise(ExprOp op, ValueRange x, ValueRange y, bool mayFail) {
  if (x.lo >= 0 && y.lo >= 0) {
    uint64_t a = x.lo, b = x.hi, c = y.lo, d = y.hi;
    switch (op) {
    case ExprOp::BitAnd:
      return {static_cast<int64_t>(minAnd(a, b, c, d)),
              static_cast<int64_t>(maxAnd(a, b, c, d)), mayFail};
    case ExprOp::BitOr:
      return {static_cast<int64_t>(minOr(a, b, c, d)),
              static_cast<int64_t>(maxOr(a, b, c, d)), mayFail};
    default: // xor: no bit above the operands' highest
      return {0, fillBelow(std::max(x.hi, y.hi)), mayFail};
    }
  }
  if (op == ExprOp::BitAnd) {
    // With one operand non-negative, the result lies between 0 and it.
    if (x.lo >= 0)
      return {0, x.hi, mayFail};
    if (y.lo >= 0)
      return {0, y.hi, mayFail};
  }
  return everything(mayFail);
}

ValueRange divide(ValueRange x, ValueRange y, bool mayFail) {
  // Truncating division is monotone in x, and in y on each side of 0, so the
  // extremes are at the corners of each sign part of y.
  if (mayBeZero(y) || (x.lo == INT64_MIN && y.lo <= -1 && -1 <= y.hi))
    mayFail = true;
  std::optional<ValueRange> out;
  auto part = [&](int64_t ylo, int64_t yhi) {
    if (ylo > yhi)
      return;
    ValueRange r = hullOf({Wide(x.lo) / ylo, Wide(x.lo) / yhi,
                           Wide(x.hi) / ylo, Wide(x.hi) / yhi},
                          mayFail);
    out = out ? ValueRange{std::min(out->lo, r.lo), std::max(out->hi, r.hi),
                           mayFail}
              : r;
  };
  part(y.lo, std::min<int64_t>(y.hi, -1));
  part(std::max<int64_t>(y.lo, 1), y.hi);
  return out ? *out : ValueRange{0, 0, true};
}

ValueRange remainder(ValueRange x, ValueRange y, bool mayFail) {
  if (mayBeZero(y) || (x.lo == INT64_MIN && y.lo <= -1 && -1 <= y.hi))
    mayFail = true;
  if (y.isZero())
    return {0, 0, true};
  // |x % y| < |y| and x % y takes x's sign and is no larger than x.
  Wide m = std::max(y.lo < 0 ? -Wide(y.lo) : Wide(y.lo),
                    y.hi < 0 ? -Wide(y.hi) : Wide(y.hi)) -
           1;
  if (x.lo >= 0 && y.lo > 0) {
    if (x.hi < y.lo) // every divisor exceeds x: x % y == x
      return {x.lo, x.hi, mayFail};
    if (y.lo == y.hi && x.lo / y.lo == x.hi / y.lo) // one period: monotone
      return {x.lo % y.lo, x.hi % y.lo, mayFail};
  }
  if (x.hi <= 0 && y.lo > 0 && y.lo == y.hi && x.lo / y.lo == x.hi / y.lo)
    return {x.lo % y.lo, x.hi % y.lo, mayFail};
  Wide lo = x.lo < 0 ? std::max(-m, Wide(x.lo)) : 0;
  Wide hi = x.hi > 0 ? std::min(m, Wide(x.hi)) : 0;
  return fromWide(lo, hi, mayFail);
}

ValueRange shiftLeft(ValueRange x, ValueRange y, bool mayFail) {
  if (y.lo < 0 || y.hi > 63)
    mayFail = true;
  int64_t slo = std::max<int64_t>(y.lo, 0), shi = std::min<int64_t>(y.hi, 63);
  if (slo > shi)
    return {0, 0, true};
  if (x.lo >= 0 && (shi == 0 || x.hi < (int64_t(1) << (63 - shi))))
    return {x.lo << slo, x.hi << shi, mayFail};
  return everything(mayFail);
}

ValueRange shiftRight(ValueRange x, ValueRange y, bool mayFail) {
  if (y.lo < 0 || y.hi > 63)
    mayFail = true;
  int64_t slo = std::max<int64_t>(y.lo, 0), shi = std::min<int64_t>(y.hi, 63);
  if (slo > shi)
    return {0, 0, true};
  // Monotone in x, and in the amount for either sign of x: the corners.
  return hullOf({Wide(x.lo >> slo), Wide(x.lo >> shi), Wide(x.hi >> slo),
                 Wide(x.hi >> shi)},
                mayFail);
}

ValueRange power(ValueRange x, ValueRange y, bool mayFail) {
  if (y.lo < 0)
    mayFail = true;
  if (y.hi < 0)
    return {0, 0, true};
  int64_t elo = std::max<int64_t>(y.lo, 0), ehi = y.hi;
  // For a base of at least 1, x ** e grows with x and e; bound it while it
  // fits, else give up (the result wraps).
  if (x.lo >= 1) {
    auto exact = [](int64_t base, int64_t e) -> std::optional<int64_t> {
      Wide r = 1;
      for (int64_t i = 0; i < e; ++i) {
        r *= base;
        if (r > INT64_MAX)
          return std::nullopt;
        if (base == 1)
          break;
      }
      return static_cast<int64_t>(r);
    };
    std::optional<int64_t> lo = exact(x.lo, elo), hi = exact(x.hi, ehi);
    if (lo && hi)
      return {*lo, *hi, mayFail};
  }
  return everything(mayFail);
}

ValueRange compare(ExprOp op, ValueRange x, ValueRange y, bool mayFail) {
  // Whether the comparison can be true and whether it can be false.
  bool canTrue = false, canFalse = false;
  switch (op) {
  case ExprOp::Eq:
  case ExprOp::Ne: {
    bool canEqual = x.lo <= y.hi && y.lo <= x.hi;
    bool canDiffer = !(x.lo == x.hi && y.lo == y.hi && x.lo == y.lo);
    canTrue = op == ExprOp::Eq ? canEqual : canDiffer;
    canFalse = op == ExprOp::Eq ? canDiffer : canEqual;
    break;
  }
  case ExprOp::Lt: // x < y
    canTrue = x.lo < y.hi;
    canFalse = x.hi >= y.lo;
    break;
  case ExprOp::Le:
    canTrue = x.lo <= y.hi;
    canFalse = x.hi > y.lo;
    break;
  case ExprOp::Gt:
    canTrue = x.hi > y.lo;
    canFalse = x.lo <= y.hi;
    break;
  case ExprOp::Ge:
    canTrue = x.hi >= y.lo;
    canFalse = x.lo < y.hi;
    break;
  default:
    llvm_unreachable("not a comparison");
  }
  return boolean(canFalse, canTrue, mayFail);
}

/// `c ? a : b`: only the branch `c` picks where it decides.
template <typename Operand> ValueRange rangeOfSelect(Operand operand) {
  ValueRange c = operand(0);
  if (c.isZero() || c.excludesZero()) {
    ValueRange r = operand(c.isZero() ? 2 : 1);
    r.mayFail |= c.mayFail;
    return r;
  }
  ValueRange a = operand(1);
  ValueRange b = operand(2);
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi),
          c.mayFail || a.mayFail || b.mayFail};
}

/// `and` (`isAnd`) or `or`: the right operand is evaluated only where the
/// left one does not decide (0 for `and`, nonzero for `or`).
template <typename Operand>
ValueRange rangeOfLogic(bool isAnd, Operand operand) {
  ValueRange a = operand(0);
  bool aTrue = !a.isZero(), aFalse = mayBeZero(a);
  if (isAnd ? !aTrue : !aFalse)
    return boolean(aFalse, aTrue, a.mayFail);
  ValueRange b = operand(1);
  bool bTrue = !b.isZero(), bFalse = mayBeZero(b);
  bool mayFail = a.mayFail || b.mayFail;
  if (isAnd)
    return boolean(aFalse || bFalse, aTrue && bTrue, mayFail);
  return boolean(aFalse && bFalse, aTrue || bTrue, mayFail);
}

ValueRange rangeOfUnary(ExprOp op, ValueRange x) {
  switch (op) {
  case ExprOp::Neg:
    return fromWide(-Wide(x.hi), -Wide(x.lo), x.mayFail);
  case ExprOp::BitNot:
    return {~x.hi, ~x.lo, x.mayFail};
  case ExprOp::Not:
    return boolean(!x.isZero(), mayBeZero(x), x.mayFail);
  case ExprOp::CeilLog2:
    return {ir::ceilLog2(x.lo), ir::ceilLog2(x.hi), x.mayFail};
  default:
    llvm_unreachable("not a unary operator");
  }
}

ValueRange rangeOfBinary(ExprOp op, ValueRange x, ValueRange y) {
  bool mayFail = x.mayFail || y.mayFail;
  switch (op) {
  case ExprOp::Add:
    return fromWide(Wide(x.lo) + y.lo, Wide(x.hi) + y.hi, mayFail);
  case ExprOp::Sub:
    return fromWide(Wide(x.lo) - y.hi, Wide(x.hi) - y.lo, mayFail);
  case ExprOp::Mul:
    return hullOf({Wide(x.lo) * y.lo, Wide(x.lo) * y.hi, Wide(x.hi) * y.lo,
                   Wide(x.hi) * y.hi},
                  mayFail);
  case ExprOp::Div:
    return divide(x, y, mayFail);
  case ExprOp::Mod:
    return remainder(x, y, mayFail);
  case ExprOp::Pow:
    return power(x, y, mayFail);
  case ExprOp::Shl:
    return shiftLeft(x, y, mayFail);
  case ExprOp::Shr:
    return shiftRight(x, y, mayFail);
  case ExprOp::BitAnd:
  case ExprOp::BitOr:
  case ExprOp::BitXor:
    return bitwise(op, x, y, mayFail);
  case ExprOp::Min:
    return {std::min(x.lo, y.lo), std::min(x.hi, y.hi), mayFail};
  case ExprOp::Max:
    return {std::max(x.lo, y.lo), std::max(x.hi, y.hi), mayFail};
  case ExprOp::BitReverse:
    return {0, (int64_t(1) << std::clamp<int64_t>(y.hi, 0, 62)) - 1,
            mayFail || y.lo < 0 || y.hi > 62};
  case ExprOp::Eq:
  case ExprOp::Ne:
  case ExprOp::Lt:
  case ExprOp::Le:
  case ExprOp::Gt:
  case ExprOp::Ge:
    return compare(op, x, y, mayFail);
  default:
    llvm_unreachable("not a binary operator");
  }
}

/// One operator over its operands' ranges; `operand(i)` gives operand i's
/// range and is called only for the operands evaluate() would reach.
template <typename Operand>
ValueRange rangeOfOperator(ExprOp op, size_t arity, Operand operand) {
  if (op == ExprOp::Select)
    return rangeOfSelect(operand);
  if (op == ExprOp::And || op == ExprOp::Or)
    return rangeOfLogic(op == ExprOp::And, operand);
  ValueRange x = operand(0);
  if (arity == 1)
    return rangeOfUnary(op, x);
  return rangeOfBinary(op, x, operand(1));
}

unsigned slotBit(unsigned slot) {
  return slot == ir::SlotOrigin  ? RangePredicate::Origin
         : slot == ir::SlotDest  ? RangePredicate::Dest
         : slot == ir::SlotIndex ? RangePredicate::Index
         : slot == ir::SlotRank  ? RangePredicate::Rank
                                 : 0u;
}

} // namespace

ValueRange collc::simulate::evaluateRange(const Expr &e,
                                          llvm::ArrayRef<int64_t> lo,
                                          llvm::ArrayRef<int64_t> hi) {
  if (e.op == ExprOp::Const)
    return point(e.value);
  if (e.op == ExprOp::Var)
    return e.slot < lo.size() ? ValueRange{lo[e.slot], hi[e.slot], false}
                              : point(0);
  return rangeOfOperator(e.op, e.args.size(), [&](size_t i) {
    return evaluateRange(*e.args[i], lo, hi);
  });
}

RangePredicate::RangePredicate(const Expr &e) { flatten(e); }

unsigned RangePredicate::flatten(const Expr &e) {
  unsigned index = static_cast<unsigned>(nodes.size());
  nodes.push_back(Node{&e, {0, 0, 0}, 0, 0, {}, false});
  unsigned reads = e.op == ExprOp::Var ? slotBit(e.slot) : 0;
  for (size_t i = 0; i < e.args.size(); ++i) {
    unsigned child = flatten(*e.args[i]);
    nodes[index].args[i] = child;
    reads |= nodes[child].reads;
  }
  nodes[index].reads = reads;
  nodes[index].end = static_cast<unsigned>(nodes.size());
  return index;
}

void RangePredicate::specialise(llvm::ArrayRef<int64_t> env,
                                unsigned varying) {
  for (Node &n : nodes)
    n.fixed = false;
  // Pre-order: a node is evaluated once, where its parent varies.
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node &n = nodes[i];
    if ((n.reads & varying) != 0 || n.fixed)
      continue;
    n.fixed = true;
    ir::EvalResult r = ir::evaluate(*n.expr, env);
    n.value = r.ok() ? ValueRange{r.value, r.value, false}
                     : everything(/*mayFail=*/true);
    // Its descendants are never visited: skip them.
    i = n.end - 1;
  }
}

ValueRange RangePredicate::evaluate(llvm::ArrayRef<int64_t> lo,
                                    llvm::ArrayRef<int64_t> hi) const {
  return evaluateNode(0, lo, hi);
}

ValueRange RangePredicate::evaluateNode(unsigned i, llvm::ArrayRef<int64_t> lo,
                                        llvm::ArrayRef<int64_t> hi) const {
  const Node &n = nodes[i];
  if (n.fixed)
    return n.value;
  const Expr &e = *n.expr;
  if (e.op == ExprOp::Const)
    return point(e.value);
  if (e.op == ExprOp::Var)
    return e.slot < lo.size() ? ValueRange{lo[e.slot], hi[e.slot], false}
                              : point(0);
  return rangeOfOperator(e.op, e.args.size(), [&](size_t a) {
    // Most operands are fixed values or chunk coordinates: no call for them.
    const Node &arg = nodes[n.args[a]];
    if (arg.fixed)
      return arg.value;
    const Expr &ae = *arg.expr;
    if (ae.op == ExprOp::Var && ae.slot < lo.size())
      return ValueRange{lo[ae.slot], hi[ae.slot], false};
    return evaluateNode(n.args[a], lo, hi);
  });
}
