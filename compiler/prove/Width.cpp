#include "prove/Width.h"

#include <algorithm>
#include <cassert>
#include <initializer_list>
#include <optional>

using namespace collc;
using namespace collc::prove;
using ir::ExprOp;

using Wide = __int128;

Interval Interval::fromWide(Wide lo, Wide hi) {
  if (lo < INT64_MIN || hi > INT64_MAX)
    return all();
  return {static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}

Interval Interval::hull(const Interval &other) const {
  return {std::min(lo, other.lo), std::max(hi, other.hi)};
}

namespace {

unsigned bitLength(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

/// Bits of the narrowest two's-complement number holding v.
unsigned signedBitsOf(int64_t v) {
  return bitLength(static_cast<uint64_t>(v < 0 ? ~v : v)) + 1;
}

/// 0 .. 2^k - 1, the smallest such range holding 0 .. v (v >= 0).
int64_t allOnesCovering(int64_t v) {
  unsigned k = bitLength(static_cast<uint64_t>(v));
  return k >= 63 ? INT64_MAX : (int64_t(1) << k) - 1;
}

/// The hull of a list of 128-bit candidates.
Interval hullOf(std::initializer_list<Wide> values) {
  return Interval::fromWide(std::min(values), std::max(values));
}

/// Every value of a `bits`-bit two's-complement number.
Interval signedRange(unsigned bits) {
  if (bits >= 64)
    return Interval::all();
  int64_t half = int64_t(1) << (bits - 1);
  return {-half, half - 1};
}

/// x ** n for n >= 0, saturating above 2^64 (exact below).
Wide powSaturating(Wide x, int64_t n) {
  const Wide limit = Wide(1) << 64;
  Wide result = 1;
  for (int64_t i = 0; i < n; ++i) {
    result *= x;
    if (result > limit || result < -limit)
      return result > 0 ? limit : -limit;
    if (result == 0 || result == 1)
      break; // stays there
  }
  return result;
}

// --- one operator: the values it can take with operands in x and y ----------

Interval divide(Interval x, Interval y) {
  // Truncating division is monotone in each operand while the divisor keeps
  // its sign, so the corners bound each sign's part.
  auto corners = [&](int64_t c, int64_t d) {
    return hullOf(
        {Wide(x.lo) / c, Wide(x.lo) / d, Wide(x.hi) / c, Wide(x.hi) / d});
  };
  std::optional<Interval> out;
  auto add = [&](Interval part) { out = out ? out->hull(part) : part; };
  if (y.lo < 0)
    add(corners(y.lo, std::min<int64_t>(y.hi, -1)));
  if (y.hi > 0)
    add(corners(std::max<int64_t>(y.lo, 1), y.hi));
  if (y.contains(0)) { // bvsdiv by zero: -1 for x >= 0, 1 for x < 0
    if (x.hi >= 0)
      add(Interval::point(-1));
    if (x.lo < 0)
      add(Interval::point(1));
  }
  return *out;
}

Interval remainder(Interval x, Interval y) {
  // bvsrem takes the dividend's sign and |x rem y| <= |x|; with no zero
  // divisor also |x rem y| < |y|. A zero divisor gives x itself.
  Wide bound = Wide(std::max(-Wide(x.lo), Wide(x.hi)));
  if (!y.contains(0))
    bound = std::min(bound, std::max(-Wide(y.lo), Wide(y.hi)) - 1);
  return Interval::fromWide(x.lo < 0 ? std::max(Wide(x.lo), -bound) : 0,
                            x.hi > 0 ? std::min(Wide(x.hi), bound) : 0);
}

/// The part of the shift amounts y within 0..63, if any.
std::optional<Interval> shiftAmounts(Interval y) {
  int64_t lo = std::max<int64_t>(y.lo, 0), hi = std::min<int64_t>(y.hi, 63);
  if (lo > hi)
    return std::nullopt;
  return Interval{lo, hi};
}

Interval shiftLeft(Interval x, Interval y) {
  // Monotone in x, and in the amount (up for x >= 0, down for x < 0); an
  // amount outside 0..63 gives 0.
  std::optional<Interval> out;
  auto add = [&](Interval part) { out = out ? out->hull(part) : part; };
  if (auto k = shiftAmounts(y))
    add(hullOf({Wide(x.lo) << k->lo, Wide(x.lo) << k->hi, Wide(x.hi) << k->lo,
                Wide(x.hi) << k->hi}));
  if (y.lo < 0 || y.hi > 63)
    add(Interval::point(0));
  return *out;
}

Interval shiftRight(Interval x, Interval y) {
  // Monotone in x, and in the amount (towards 0 or -1); an amount outside
  // 0..63 gives the sign fill.
  std::optional<Interval> out;
  auto add = [&](Interval part) { out = out ? out->hull(part) : part; };
  if (auto k = shiftAmounts(y))
    add(hullOf({Wide(x.lo >> k->lo), Wide(x.lo >> k->hi), Wide(x.hi >> k->lo),
                Wide(x.hi >> k->hi)}));
  if (y.lo < 0 || y.hi > 63) {
    if (x.lo < 0)
      add(Interval::point(-1));
    if (x.hi >= 0)
      add(Interval::point(0));
  }
  return *out;
}

Interval bitwise(ExprOp op, Interval x, Interval y) {
  bool xNonNeg = x.lo >= 0, yNonNeg = y.lo >= 0;
  if (xNonNeg && yNonNeg) {
    int64_t ones = allOnesCovering(std::max(x.hi, y.hi));
    switch (op) {
    case ExprOp::BitAnd:
      return {0, std::min(x.hi, y.hi)};
    case ExprOp::BitOr:
      return {std::max(x.lo, y.lo), ones};
    default:
      return {0, ones};
    }
  }
  if (op == ExprOp::BitAnd && (xNonNeg || yNonNeg))
    return {0, xNonNeg ? x.hi : y.hi}; // x & y <= x for x >= 0
  // Bitwise operators keep a value that fits k bits within k bits.
  return signedRange(std::max(x.signedBits(), y.signedBits()));
}

Interval power(Interval base, Interval exponent) {
  // Negative exponents are undefined and their total value depends on the
  // form ExprToSmt picks: no bound.
  if (exponent.lo < 0)
    return Interval::all();
  Wide magnitude = std::max(-Wide(base.lo), Wide(base.hi));
  Wide largest = powSaturating(magnitude, exponent.hi);
  if (magnitude <= 1)
    largest = 1;
  if (base.lo >= 0) {
    // Monotone in both for base >= 1; a zero base gives 0 or 1.
    Wide smallest = base.lo == 0 ? 0 : powSaturating(base.lo, exponent.lo);
    return Interval::fromWide(smallest, std::max(largest, Wide(1)));
  }
  return Interval::fromWide(-largest, std::max(largest, Wide(1)));
}

/// A test's value: 1 when it always holds, 0 when it never does.
Interval decided(bool always, bool never) {
  return always  ? Interval::point(1)
         : never ? Interval::point(0)
                 : Interval{0, 1};
}

/// A comparison's or a logical operator's value, 0 or 1, or the one value
/// the intervals leave (a > 64 for a in 1..64 is 0), so that a bound that
/// counts such tests (the mesh gather's log a) is no wider than the values
/// it can take.
Interval tested(ExprOp op, Interval x, Interval y) {
  switch (op) {
  case ExprOp::Lt:
    return decided(x.hi < y.lo, x.lo >= y.hi);
  case ExprOp::Le:
    return decided(x.hi <= y.lo, x.lo > y.hi);
  case ExprOp::Gt:
    return decided(x.lo > y.hi, x.hi <= y.lo);
  case ExprOp::Ge:
    return decided(x.lo >= y.hi, x.hi < y.lo);
  case ExprOp::Eq:
  case ExprOp::Ne: {
    bool same = x.lo == x.hi && x == y;
    bool apart = x.hi < y.lo || y.hi < x.lo;
    return op == ExprOp::Eq ? decided(same, apart) : decided(apart, same);
  }
  case ExprOp::Not:
    return decided(x == Interval::point(0), !x.contains(0));
  case ExprOp::And:
    return decided(!x.contains(0) && !y.contains(0),
                   x == Interval::point(0) || y == Interval::point(0));
  case ExprOp::Or:
    return decided(!x.contains(0) || !y.contains(0),
                   x == Interval::point(0) && y == Interval::point(0));
  default:
    return {0, 1};
  }
}

/// What `op` can yield on operands in `x` and `y` (y unused by a unary one).
Interval operatorInterval(ExprOp op, Interval x, Interval y) {
  switch (op) {
  case ExprOp::Neg:
    return Interval::fromWide(-Wide(x.hi), -Wide(x.lo));
  case ExprOp::BitNot:
    return {~x.hi, ~x.lo};
  case ExprOp::CeilLog2:
    return {ir::ceilLog2(x.lo), ir::ceilLog2(x.hi)};
  case ExprOp::Add:
    return Interval::fromWide(Wide(x.lo) + y.lo, Wide(x.hi) + y.hi);
  case ExprOp::Sub:
    return Interval::fromWide(Wide(x.lo) - y.hi, Wide(x.hi) - y.lo);
  case ExprOp::Mul:
    return hullOf({Wide(x.lo) * y.lo, Wide(x.lo) * y.hi, Wide(x.hi) * y.lo,
                   Wide(x.hi) * y.hi});
  case ExprOp::Div:
    return divide(x, y);
  case ExprOp::Mod:
    return remainder(x, y);
  case ExprOp::Pow:
    return power(x, y);
  case ExprOp::Shl:
    return shiftLeft(x, y);
  case ExprOp::Shr:
    return shiftRight(x, y);
  case ExprOp::BitAnd:
  case ExprOp::BitOr:
  case ExprOp::BitXor:
    return bitwise(op, x, y);
  case ExprOp::Min:
    return {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
  case ExprOp::Max:
    return {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
  case ExprOp::BitReverse:
    // n bits of result; outside 0..62 it is undefined, any value will do.
    return {0, (int64_t(1) << std::clamp<int64_t>(y.hi, 0, 62)) - 1};
  default:
    return tested(op, x, y);
  }
}

} // namespace

unsigned Interval::signedBits() const {
  return std::max(signedBitsOf(lo), signedBitsOf(hi));
}

Interval collc::prove::intervalOf(const ir::Expr &e,
                                  llvm::ArrayRef<Interval> slots) {
  WidthAnalysis analysis(static_cast<unsigned>(slots.size()));
  for (unsigned i = 0; i < slots.size(); ++i)
    analysis.setSlot(i, slots[i]);
  return analysis.require(e);
}

void WidthAnalysis::setSlot(unsigned slot, Interval interval) {
  if (slot >= slots.size())
    slots.resize(slot + 1, Interval::point(0));
  slots[slot] = interval;
}

Interval WidthAnalysis::require(const ir::Expr &e) {
  // The cache shares the work on sub-expressions shared within `e`; across
  // calls an address may have been reused by a different expression.
  cache.clear();
  return visit(e);
}

void WidthAnalysis::require(Interval interval) {
  bits = std::max(bits, interval.signedBits());
}

unsigned WidthAnalysis::width() const {
  return bits > 63 ? 64 : std::max(bits, MinWidth);
}

Interval WidthAnalysis::visit(const ir::Expr &e) {
  auto it = cache.find(&e);
  if (it != cache.end())
    return it->second;

  Interval out;
  switch (e.op) {
  case ExprOp::Const:
    out = Interval::point(e.value);
    break;
  case ExprOp::Var:
    out = e.slot < slots.size() ? slots[e.slot] : Interval::point(0);
    break;
  case ExprOp::Select: {
    Interval c = visit(*e.args[0]), a = visit(*e.args[1]),
             b = visit(*e.args[2]);
    if (!c.contains(0))
      out = a;
    else if (c == Interval::point(0))
      out = b;
    else
      out = a.hull(b);
    break;
  }
  default: {
    Interval x = visit(*e.args[0]);
    Interval y = e.args.size() > 1 ? visit(*e.args[1]) : Interval::point(0);
    out = operatorInterval(e.op, x, y);
    break;
  }
  }
  require(out);
  cache.try_emplace(&e, out);
  return out;
}
