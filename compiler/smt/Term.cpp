#include "smt/Term.h"
#include "smt/Z3Detail.h"

#include <cassert>
#include <unordered_map>

using namespace collc::smt;

namespace {

uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }
int64_t s(uint64_t v) { return static_cast<int64_t>(v); }
uint64_t mask(unsigned width) {
  return width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
}
/// A result computed on 64 bits, reduced to `width` bits.
int64_t reduce(uint64_t v, unsigned width) { return signExtend(v, width); }

// SMT-LIB's total semantics on `width`-bit vectors held sign-extended, for
// folding. They must agree with Z3 exactly (SmtTest holds them against it).
int64_t foldSdiv(int64_t a, int64_t b, unsigned width) {
  if (b == 0)
    return a >= 0 ? -1 : 1;
  if (b == -1) // the one quotient that overflows: -(-2^(w-1))
    return reduce(0 - u(a), width);
  return a / b;
}
int64_t foldSrem(int64_t a, int64_t b) {
  if (b == 0)
    return a;
  if (b == -1)
    return 0;
  return a % b;
}
// The shift amount is read as a `width`-bit unsigned number.
int64_t foldShl(int64_t a, int64_t b, unsigned width) {
  uint64_t amount = u(b) & mask(width);
  return amount >= width ? 0 : reduce(u(a) << amount, width);
}
int64_t foldAshr(int64_t a, int64_t b, unsigned width) {
  uint64_t amount = u(b) & mask(width);
  if (amount >= width)
    return a < 0 ? -1 : 0;
  return a >> amount;
}

} // namespace

namespace {
using Access = collc::smt::detail::Access;
z3::expr toZ3(const Term &t) { return Access::toZ3(t); }
Term wrap(Context *ctx, Sort sort, const z3::expr &e) {
  return Access::wrap(ctx, sort,
                      sort == Sort::Bool ? 0 : e.get_sort().bv_size(), e);
}
/// A hash of `e`'s structure that does not depend on what the context made
/// before (as Z3's ids and hashes do: a fresh variable's name carries a
/// count, "r!17"): a variable counts by its name up to the '!'.
uint64_t shapeHash(const z3::expr &e,
                   std::unordered_map<unsigned, uint64_t> &seen) {
  if (auto it = seen.find(e.id()); it != seen.end())
    return it->second;
  uint64_t h = 0xcbf29ce484222325u; // FNV-1a over the node's words
  auto mix = [&h](llvm::StringRef text) {
    for (char c : text)
      h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3u;
    h = (h ^ 0xff) * 0x100000001b3u;
  };
  if (e.is_numeral()) {
    mix(e.to_string());
  } else if (e.is_app()) {
    const std::string name = e.decl().name().str();
    mix(llvm::StringRef(name).split('!').first);
    for (unsigned i = 0; i < e.num_args(); ++i)
      mix(std::to_string(shapeHash(e.arg(i), seen)));
  }
  if (e.is_bv())
    mix(std::to_string(e.get_sort().bv_size()));
  seen.emplace(e.id(), h);
  return h;
}

/// A bit-vector result of `a`'s width.
Term bits(const Term &a, const z3::expr &e) {
  return Access::wrap(a.context(), Sort::BitVec, a.width(), e);
}
using Digits = collc::smt::detail::ContextImpl::Digits;
/// What Context::knowDigits stated of `a`, in every radix.
const std::vector<Digits> *digitsOf(const Term &a) {
  if (a.constant())
    return nullptr;
  auto &digits = Access::implOf(*a.context()).digits;
  auto it = digits.find(toZ3(a).id());
  return it == digits.end() ? nullptr : &it->second;
}
/// ... in radix `b`.
const Digits *digitsOf(const Term &a, const Term &b) {
  const std::vector<Digits> *all = b.constant() ? nullptr : digitsOf(a);
  if (!all)
    return nullptr;
  for (const Digits &d : *all)
    if (toZ3(d.radix).id() == toZ3(b).id())
      return &d;
  return nullptr;
}
/// Whether `b` is 2^k << x for some constant k and any x (a hypercube's
/// p = 1 << d, a binomial tree's 2 << i): a power of two, the sign bit or 0.
bool isPowerOfTwo(const Term &b) {
  if (b.constant())
    return false;
  z3::expr e = toZ3(b);
  if (!e.is_app() || e.decl().decl_kind() != Z3_OP_BSHL)
    return false;
  z3::expr base = e.arg(0);
  uint64_t power = 0;
  return base.is_numeral_u64(power) && power != 0 && (power & (power - 1)) == 0;
}
Term folded(const Term &a, int64_t v) {
  return a.context()->bitVec(v, a.width());
}
[[maybe_unused]] bool sameWidth(const Term &a, const Term &b) {
  return a.isBitVec() && b.isBitVec() && a.width() == b.width();
}
} // namespace

// --- Context ----------------------------------------------------------------

Context::Context() : impl(std::make_unique<detail::ContextImpl>()) {}
Context::~Context() = default;

bool Context::digitsKnown(const Term &number) const {
  const std::vector<Digits> *all = digitsOf(number);
  return all && !all->empty();
}

void Context::knowDigits(const Term &number, const Term &radix,
                         const Term &high, const Term &low, bool canonical) {
  if (number.constant() || radix.constant())
    return; // folding divides constants already
  impl->digits[toZ3(number).id()].push_back(
      {number, radix, high, low, canonical});
}

void Context::knowBelow(const Term &number, const Term &radix) {
  if (number.constant() || radix.constant())
    return;
  std::vector<Term> &radices = impl->below[toZ3(number).id()];
  if (radices.empty())
    radices.push_back(number); // keeps the id from going to another term
  radices.push_back(radix);
}

Term Context::bitVec(int64_t v, unsigned width) {
  assert(width >= 1 && width <= 64 && "bit-vector width out of range");
  return Term(this, Sort::BitVec, width, signExtend(u(v), width), nullptr);
}

Term Context::boolean(bool b) {
  return Term(this, Sort::Bool, 0, b ? 1 : 0, nullptr);
}

Term Context::bitVecVar(llvm::StringRef name, unsigned width) {
  assert(width >= 1 && width <= 64 && "bit-vector width out of range");
  std::string unique = name.str() + "!" + std::to_string(varCounter++);
  return wrap(this, Sort::BitVec, impl->z3.bv_const(unique.c_str(), width));
}

Term Context::boolVar(llvm::StringRef name) {
  std::string unique = name.str() + "!" + std::to_string(varCounter++);
  return wrap(this, Sort::Bool, impl->z3.bool_const(unique.c_str()));
}

Term Context::all(llvm::ArrayRef<Term> terms) {
  z3::expr_vector live(impl->z3);
  for (const Term &t : terms) {
    assert(t.isBool() && "all() of a non-boolean");
    if (t.isFalse())
      return boolean(false);
    if (!t.isTrue())
      live.push_back(toZ3(t));
  }
  if (live.empty())
    return boolean(true);
  if (live.size() == 1)
    return wrap(this, Sort::Bool, live[0]);
  return wrap(this, Sort::Bool, z3::mk_and(live));
}

Term Context::any(llvm::ArrayRef<Term> terms) {
  z3::expr_vector live(impl->z3);
  for (const Term &t : terms) {
    assert(t.isBool() && "any() of a non-boolean");
    if (t.isTrue())
      return boolean(true);
    if (!t.isFalse())
      live.push_back(toZ3(t));
  }
  if (live.empty())
    return boolean(false);
  if (live.size() == 1)
    return wrap(this, Sort::Bool, live[0]);
  return wrap(this, Sort::Bool, z3::mk_or(live));
}

// --- detail -----------------------------------------------------------------

z3::expr detail::Access::toZ3(const Term &t) {
  assert(t.isValid() && "use of an invalid term");
  if (t.ast)
    return t.ast->expr;
  z3::context &z = t.ctx->impl->z3;
  if (t.isBool())
    return z.bool_val(*t.value != 0);
  return z.bv_val(u(*t.value) & mask(t.width()), t.width());
}

// --- Term -------------------------------------------------------------------

std::string Term::print() const {
  if (!isValid())
    return "<invalid>";
  if (value)
    return isBool() ? (*value ? "true" : "false") : std::to_string(*value);
  try {
    return ast->expr.to_string();
  } catch (const z3::exception &e) {
    return std::string("<error: ") + e.msg() + ">";
  }
}

namespace collc::smt {

namespace {
/// The factors of a product, however it is bracketed: (2^i * b) * c and
/// 2^i * (b * c) both give 2^i, b and c.
void factorsOf(const z3::expr &e, std::vector<z3::expr> &out) {
  if (e.is_app() && e.decl().decl_kind() == Z3_OP_BMUL) {
    for (unsigned k = 0; k < e.num_args(); ++k)
      factorsOf(e.arg(k), out);
    return;
  }
  out.push_back(e);
}

/// m when `addend` is m * radix, the radix being one of its factors or a
/// product of some: a 3-D mesh's r + 2^i * (b * c) moves the number by
/// 2^i * b in radix c and by 2^i in radix b * c.
std::optional<Term> multiplierOf(const Term &addend, const Term &radix) {
  if (addend.constant() || radix.constant())
    return std::nullopt;
  std::vector<z3::expr> factors, radixFactors;
  factorsOf(toZ3(addend), factors);
  if (factors.size() < 2)
    return std::nullopt;
  factorsOf(toZ3(radix), radixFactors);
  for (const z3::expr &f : radixFactors) {
    auto it = llvm::find_if(
        factors, [&](const z3::expr &g) { return g.id() == f.id(); });
    if (it == factors.end())
      return std::nullopt;
    factors.erase(it);
  }
  std::optional<Term> m;
  for (const z3::expr &f : factors)
    m = m ? *m * bits(addend, f) : bits(addend, f);
  return m ? *m : addend.context()->bitVec(1, addend.width());
}

/// The digits of `sum` = `x` + `sign` * `addend` from those of x, where the
/// addend is 1, a radix of x or a multiple of one: a neighbour's rank on a
/// mesh, r + 1 or r + b, keeps its coordinates, so that (r + 1) % b is a
/// comparison and not a divider. Each case is exact under bvsdiv's
/// truncation, including a sum that falls below 0.
void carryDigits(const Term &sum, const Term &x, const Term &addend, int sign) {
  const std::vector<Digits> *all = digitsOf(x);
  if (!all || sum.constant())
    return;
  Context &ctx = *sum.context();
  const unsigned w = sum.width();
  const Term zero = ctx.bitVec(0, w), one = ctx.bitVec(1, w);
  // Copied: knowDigits below may grow the table that `all` points into.
  const std::vector<Digits> sources = *all;
  for (const Digits &d : sources) {
    int step = 0; // +1 or -1: by one; +2 or -2: by the radix
    if (auto c = addend.constant(); c && (*c == 1 || *c == -1))
      step = static_cast<int>(*c) * sign;
    else if (!addend.constant() && toZ3(addend).id() == toZ3(d.radix).id())
      step = 2 * sign;
    std::optional<Term> rows; // the quotient's move, by whole radices
    if (step == 2 || step == -2)
      rows = step > 0 ? one : ctx.bitVec(-1, w);
    else if (std::optional<Term> m = multiplierOf(addend, d.radix))
      rows = sign > 0 ? *m : -*m; // a mesh's 2^i rows, or p = a * b
    if (rows) {
      // x + m * R is (h + m) * R + l, whose truncated digits are those
      // unless h + m and l have opposite signs: then one radix moves
      // from the quotient into the remainder.
      Term high = d.high + *rows;
      if (d.canonical && step == 2) {
        ctx.knowDigits(sum, d.radix, high, d.low, true);
        continue;
      }
      Term down = slt(high, zero) && sgt(d.low, zero);
      Term up = d.canonical ? ctx.boolean(false)
                            : sgt(high, zero) && slt(d.low, zero);
      ctx.knowDigits(
          sum, d.radix, ite(down, high + one, ite(up, high - one, high)),
          ite(down, d.low - d.radix, ite(up, d.low + d.radix, d.low)), false);
      continue;
    }
    if (!d.canonical && (step == 1 || step == -1)) {
      // Truncated digits of either sign (a neighbour of x - b, which may
      // fall below 0): h and l share x's sign. Past a radix's end the
      // carry goes into h; at 0 from below, x + 1 = (h + 1) * R + 1 - R.
      const Term nonNegative = sge(d.high, zero) && sge(d.low, zero);
      if (step == 1) {
        Term carry = nonNegative && d.low + one == d.radix;
        Term rise = !nonNegative && d.low == zero;
        ctx.knowDigits(sum, d.radix, ite(carry || rise, d.high + one, d.high),
                       ite(carry, zero, ite(rise, one - d.radix, d.low + one)),
                       false);
      } else {
        // x > 0 borrows at l = 0; x <= 0 at l = 1 - R, x - 1 = (h - 1) * R.
        Term positive = nonNegative && !(d.high == zero && d.low == zero);
        Term borrow = positive && d.low == zero;
        Term fall = !positive && d.low == one - d.radix;
        ctx.knowDigits(sum, d.radix, ite(borrow || fall, d.high - one, d.high),
                       ite(borrow, d.radix - one, ite(fall, zero, d.low - one)),
                       false);
      }
      continue;
    }
    if (!d.canonical)
      continue;
    if (step == 1) {
      Term carry = d.low + one == d.radix;
      ctx.knowDigits(sum, d.radix, ite(carry, d.high + one, d.high),
                     ite(carry, zero, d.low + one), true);
    } else if (step == -1) {
      // 0 - 1 = -1 is quotient 0, remainder -1, when the radix is not 1.
      Term borrow = d.low == zero;
      Term negative = borrow && d.high == zero && d.radix != one;
      ctx.knowDigits(
          sum, d.radix, ite(borrow && !negative, d.high - one, d.high),
          ite(borrow, ite(negative, ctx.bitVec(-1, w), d.radix - one),
              d.low - one),
          false);
    }
  }
}
} // namespace

Term operator+(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return folded(a, s(u(*a.value) + u(*b.value)));
  if (a.value && *a.value == 0)
    return b;
  if (b.value && *b.value == 0)
    return a;
  // (x - y) + y is x: a sender's rank put back through its peer.
  for (auto [k, other] : {std::pair(&a, &b), std::pair(&b, &a)})
    if (const z3::expr e = toZ3(*k);
        !k->value && e.decl().decl_kind() == Z3_OP_BSUB && e.num_args() == 2 &&
        e.arg(1).id() == toZ3(*other).id())
      return bits(a, e.arg(0));
  Term sum = bits(a, toZ3(a) + toZ3(b));
  carryDigits(sum, a, b, 1);
  carryDigits(sum, b, a, 1);
  return sum;
}

Term operator-(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return folded(a, s(u(*a.value) - u(*b.value)));
  if (b.value && *b.value == 0)
    return a;
  // (x + y) - y is x.
  if (const z3::expr e = toZ3(a);
      !a.value && e.decl().decl_kind() == Z3_OP_BADD && e.num_args() == 2)
    for (unsigned k : {0u, 1u})
      if (e.arg(k).id() == toZ3(b).id())
        return bits(a, e.arg(1 - k));
  Term difference = bits(a, toZ3(a) - toZ3(b));
  carryDigits(difference, a, b, -1);
  return difference;
}

Term operator*(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return folded(a, s(u(*a.value) * u(*b.value)));
  for (auto [k, other] : {std::pair(&a, &b), std::pair(&b, &a)}) {
    if (k->value && *k->value == 0)
      return *k;
    if (k->value && *k->value == 1)
      return *other;
  }
  // One term for b * c and c * b, so that a radix a product names (a 3-D
  // mesh's plane, Context::knowDigits) is found whichever way it was
  // written. Ordered by shape, not by Z3's ids, which count what the
  // context made before: a composite's query is then its part's, word for
  // word (ProvedQueries).
  std::unordered_map<unsigned, uint64_t> seen;
  if (!a.value && !b.value) {
    const uint64_t shapeA = shapeHash(toZ3(a), seen),
                   shapeB = shapeHash(toZ3(b), seen);
    if (shapeB < shapeA || (shapeB == shapeA && toZ3(b).id() < toZ3(a).id()))
      return bits(a, toZ3(b) * toZ3(a));
  }
  return bits(a, toZ3(a) * toZ3(b));
}

Term operator-(const Term &a) {
  assert(a.isBitVec());
  if (a.value)
    return folded(a, s(0 - u(*a.value)));
  return bits(a, -toZ3(a));
}

Term sdiv(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return folded(a, foldSdiv(*a.value, *b.value, a.width()));
  if (b.value && *b.value == 1)
    return a;
  if (const Digits *d = digitsOf(a, b))
    return d->high;
  return bits(a, toZ3(a) / toZ3(b)); // z3++: bvsdiv
}

namespace {
/// Whether 0 <= `a` < `b` by Context::knowBelow.
bool knownBelow(const Term &a, const Term &b) {
  if (a.constant() || b.constant())
    return false;
  auto &below = Access::implOf(*a.context()).below;
  auto it = below.find(toZ3(a).id());
  if (it == below.end())
    return false;
  return llvm::any_of(llvm::drop_begin(it->second), [&](const Term &r) {
    return toZ3(r).id() == toZ3(b).id();
  });
}
/// Bounds of a number in a radix R that is at least 1: lo.first * R +
/// lo.second <= a <= hi.first * R + hi.second for every R.
struct Span {
  std::pair<int64_t, int64_t> lo, hi;
};
/// `a`'s span in radix `b` from what the query knows: a coordinate lies in
/// 0 .. R - 1 (Context::knowBelow), R is R, and sums and differences of
/// these and small constants add up. The width holds them, as it holds the
/// expressions they come from.
std::optional<Span> spanIn(const Term &a, const Term &b, bool &vouched,
                           int depth = 3) {
  std::optional<int64_t> c = a.constant();
  if (uint64_t bitsOf = 0; !c && toZ3(a).is_numeral_u64(bitsOf))
    c = signExtend(bitsOf, a.width()); // a constant inside a Z3 term
  if (c) {
    if (*c < -64 || *c > 64)
      return std::nullopt;
    return Span{{0, *c}, {0, *c}};
  }
  if (toZ3(a).id() == toZ3(b).id())
    return Span{{1, 0}, {1, 0}};
  if (knownBelow(a, b)) {
    vouched = true; // 0 <= a < b: b is at least 1
    return Span{{0, 0}, {1, -1}};
  }
  const z3::expr e = toZ3(a);
  const Z3_decl_kind kind = e.decl().decl_kind();
  if (depth == 0)
    return std::nullopt;
  if (kind == Z3_OP_ITE) {
    // Either branch: the wider of the two bounds where they differ.
    std::optional<Span> x = spanIn(bits(a, e.arg(1)), b, vouched, depth - 1);
    std::optional<Span> y = spanIn(bits(a, e.arg(2)), b, vouched, depth - 1);
    if (!x || !y)
      return std::nullopt;
    if (x->lo == y->lo && x->hi == y->hi)
      return x;
    auto lower = [](auto u, auto v) {
      // m R + c <= n R + d for every R >= 1 where m <= n and m + c <= n + d.
      return u.first <= v.first && u.first + u.second <= v.first + v.second;
    };
    std::optional<std::pair<int64_t, int64_t>> lo, hi;
    if (lower(x->lo, y->lo))
      lo = x->lo;
    else if (lower(y->lo, x->lo))
      lo = y->lo;
    if (lower(x->hi, y->hi))
      hi = y->hi;
    else if (lower(y->hi, x->hi))
      hi = x->hi;
    if (!lo || !hi)
      return std::nullopt;
    return Span{*lo, *hi};
  }
  if (e.num_args() != 2 || (kind != Z3_OP_BADD && kind != Z3_OP_BSUB))
    return std::nullopt;
  std::optional<Span> x = spanIn(bits(a, e.arg(0)), b, vouched, depth - 1);
  std::optional<Span> y = spanIn(bits(a, e.arg(1)), b, vouched, depth - 1);
  if (!x || !y)
    return std::nullopt;
  auto plus = [](auto u, auto v) {
    return std::pair(u.first + v.first, u.second + v.second);
  };
  auto minus = [](auto u, auto v) {
    return std::pair(u.first - v.first, u.second - v.second);
  };
  if (kind == Z3_OP_BADD)
    return Span{plus(x->lo, y->lo), plus(x->hi, y->hi)};
  return Span{minus(x->lo, y->hi), minus(x->hi, y->lo)};
}
/// Whether m * R + c >= 0, or < 0, for every R >= 1.
bool alwaysNonNegative(std::pair<int64_t, int64_t> f) {
  return f.first >= 0 && f.first + f.second >= 0;
}
bool alwaysNegative(std::pair<int64_t, int64_t> f) {
  return f.first <= 0 && f.first + f.second < 0;
}
/// srem(a, b) without a divider where a's span puts it within one radix
/// of 0 or in 0 .. 2b - 1: a coordinate's neighbour, (c + 1) % b, or a
/// distance round a ring of coordinates, (x - y + b) % b.
std::optional<Term> remainderBySpan(const Term &a, const Term &b) {
  // The bounds hold for divisors of at least 1, which a coordinate below
  // b vouches for; a divisor of any sign keeps Z3's remainder.
  bool vouched = false;
  std::optional<Span> span = spanIn(a, b, vouched);
  if (!span || !vouched)
    return std::nullopt;
  auto below = [&](std::pair<int64_t, int64_t> f, int64_t radices) {
    return alwaysNegative({f.first - radices, f.second}); // f < radices * R
  };
  auto above = [&](std::pair<int64_t, int64_t> f, int64_t radices) {
    return alwaysNonNegative(
        {f.first + radices, f.second - 1}); // f > -radices * R
  };
  if (above(span->lo, 1) && below(span->hi, 1))
    return a; // |a| < b: srem is a itself
  if (alwaysNonNegative(span->lo) && below(span->hi, 2)) {
    Term r = ite(slt(a, b), a, a - b);
    a.context()->knowBelow(r, b);
    return r;
  }
  return std::nullopt;
}
/// srem(a, A * R), where b = A * R has digits A and 0 in a radix R in
/// which a has digits h and l: srem(h, A) * R + l, with those digits, and
/// no divider. Truncation keeps it exact for a of either sign, since
/// a / (A R) truncated is (a / R truncated) / A truncated. A torus's
/// (r + b) % (a * b) is then its row plus one, round the column, and its
/// column, compared as coordinates.
std::optional<Term> remainderByMultiple(const Term &a, const Term &b) {
  const std::vector<Digits> *all = digitsOf(b);
  if (!all)
    return std::nullopt;
  for (const Digits &m : *all) {
    std::optional<int64_t> low = m.low.constant();
    const Digits *x = digitsOf(a, m.radix);
    if (!m.canonical || !low || *low != 0 || !x)
      continue;
    // Copied: srem below may state digits and grow the table.
    const Digits radixDigits = m, number = *x;
    Term high = srem(number.high, radixDigits.high);
    Term value = high * radixDigits.radix + number.low;
    a.context()->knowDigits(value, radixDigits.radix, high, number.low,
                            number.canonical);
    return value;
  }
  return std::nullopt;
}
} // namespace

Term srem(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return folded(a, foldSrem(*a.value, *b.value));
  if (const Digits *d = digitsOf(a, b))
    return d->low;
  if (std::optional<Term> r = remainderByMultiple(a, b))
    return *r;
  if (std::optional<Term> r = remainderBySpan(a, b))
    return *r;
  if (isPowerOfTwo(b)) {
    // The low bits of |a| with a's sign, for every a and shift (2^k << x
    // that is 0 or the sign bit included): bvsrem's value, without a divider.
    Term mask = b - 1, zero = a.context()->bitVec(0, a.width());
    return ite(sge(a, zero), a & mask, -((-a) & mask));
  }
  Term rem = bits(a, z3::srem(toZ3(a), toZ3(b)));
  if (b.value)
    return rem;
  // Schedules take ranks modulo a symbolic size, (r + k) % p, where the
  // dividend is below twice the divisor. Naming those two cases lets the
  // SAT solver settle them with comparators instead of reasoning through
  // a divider circuit; the value is srem's in every case.
  Term zero = a.context()->bitVec(0, a.width());
  return ite(sge(a, zero) && slt(a, b), a,
             ite(sgt(b, zero) && sge(a, b) && slt(a - b, b), a - b, rem));
}

Term shl(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return folded(a, foldShl(*a.value, *b.value, a.width()));
  if (b.value && *b.value == 0)
    return a;
  if (a.value && *a.value == 0)
    return a;
  return bits(a, z3::shl(toZ3(a), toZ3(b)));
}

Term ashr(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return folded(a, foldAshr(*a.value, *b.value, a.width()));
  if (b.value && *b.value == 0)
    return a;
  if (a.value && (*a.value == 0 || *a.value == -1))
    return a;
  return bits(a, z3::ashr(toZ3(a), toZ3(b)));
}

Term operator&(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return folded(a, *a.value & *b.value);
  for (auto [k, other] : {std::pair(&a, &b), std::pair(&b, &a)}) {
    if (k->value && *k->value == 0)
      return *k;
    if (k->value && *k->value == -1)
      return *other;
  }
  return bits(a, toZ3(a) & toZ3(b));
}

Term operator|(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return folded(a, *a.value | *b.value);
  for (auto [k, other] : {std::pair(&a, &b), std::pair(&b, &a)}) {
    if (k->value && *k->value == -1)
      return *k;
    if (k->value && *k->value == 0)
      return *other;
  }
  return bits(a, toZ3(a) | toZ3(b));
}

Term operator^(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return folded(a, *a.value ^ *b.value);
  if (a.value && *a.value == 0)
    return b;
  if (b.value && *b.value == 0)
    return a;
  return bits(a, toZ3(a) ^ toZ3(b));
}

Term operator~(const Term &a) {
  assert(a.isBitVec());
  if (a.value)
    return folded(a, ~*a.value);
  return bits(a, ~toZ3(a));
}

Term umulFits(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value) {
    const unsigned __int128 product =
        (unsigned __int128)(u(*a.value) & mask(a.width())) *
        (u(*b.value) & mask(b.width()));
    return a.ctx->boolean(product <= mask(a.width()));
  }
  return wrap(a.ctx, Sort::Bool,
              z3::bvmul_no_overflow(toZ3(a), toZ3(b), false));
}

Term smin(const Term &a, const Term &b) { return ite(sle(a, b), a, b); }
Term smax(const Term &a, const Term &b) { return ite(sge(a, b), a, b); }

namespace {
/// The digits of `a` and of `b` in one radix, where both have them (a
/// constant 0 has 0 and 0 in every radix): two numbers compare as their
/// digits do, high first, since bvsdiv and bvsrem by a positive radix
/// write each number one way. A rank of a mesh is then compared by its
/// coordinates, with no product in the query (prove/MeshRanks.h).
std::optional<std::pair<Digits, Digits>> commonDigits(const Term &a,
                                                      const Term &b) {
  if (!a.isBitVec() || (a.constant() && b.constant()))
    return std::nullopt;
  // 0 and -1 (no sender, Induction.cpp) in a radix R > 0: 0 is 0 and 0,
  // -1 is 0 and -1 unless R is 1.
  auto constantIn = [](const Term &c,
                       const Digits &d) -> std::optional<Digits> {
    if (*c.constant() == 0)
      return Digits{c, d.radix, c, c, true};
    if (*c.constant() != -1)
      return std::nullopt;
    Term zero = folded(c, 0), unit = d.radix == folded(c, 1);
    return Digits{c, d.radix, ite(unit, c, zero), ite(unit, zero, c), false};
  };
  const std::vector<Digits> *da = digitsOf(a), *db = digitsOf(b);
  if (da && !da->empty() && b.constant())
    if (auto d = constantIn(b, da->front()))
      return std::pair(da->front(), *d);
  if (db && !db->empty() && a.constant())
    if (auto d = constantIn(a, db->front()))
      return std::pair(*d, db->front());
  if (!da || !db)
    return std::nullopt;
  for (const Digits &x : *da)
    for (const Digits &y : *db)
      if (toZ3(x.radix).id() == toZ3(y.radix).id())
        return std::pair(x, y);
  return std::nullopt;
}
} // namespace

Term operator==(const Term &a, const Term &b) {
  assert(a.isValid() && b.isValid() && a.sort() == b.sort() &&
         a.width() == b.width());
  if (a.value && b.value)
    return a.ctx->boolean(*a.value == *b.value);
  if (a.isBool()) {
    // Equality with a boolean constant is the other operand or its negation.
    if (a.value)
      return *a.value ? b : !b;
    if (b.value)
      return *b.value ? a : !a;
  }
  if (a.ast && b.ast && a.ast == b.ast)
    return a.ctx->boolean(true);
  if (auto d = commonDigits(a, b))
    return d->first.high == d->second.high && d->first.low == d->second.low;
  return wrap(a.ctx, Sort::Bool, toZ3(a) == toZ3(b));
}

Term operator!=(const Term &a, const Term &b) { return !(a == b); }

Term slt(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return a.ctx->boolean(*a.value < *b.value);
  if (auto d = commonDigits(a, b))
    return slt(d->first.high, d->second.high) ||
           (d->first.high == d->second.high &&
            slt(d->first.low, d->second.low));
  return wrap(a.ctx, Sort::Bool, z3::slt(toZ3(a), toZ3(b)));
}

Term sle(const Term &a, const Term &b) {
  assert(sameWidth(a, b));
  if (a.value && b.value)
    return a.ctx->boolean(*a.value <= *b.value);
  if (auto d = commonDigits(a, b))
    return slt(d->first.high, d->second.high) ||
           (d->first.high == d->second.high &&
            sle(d->first.low, d->second.low));
  return wrap(a.ctx, Sort::Bool, z3::sle(toZ3(a), toZ3(b)));
}

Term sgt(const Term &a, const Term &b) { return slt(b, a); }
Term sge(const Term &a, const Term &b) { return sle(b, a); }

Term operator&&(const Term &a, const Term &b) {
  assert(a.isBool() && b.isBool());
  if (a.isFalse() || b.isTrue())
    return a;
  if (b.isFalse() || a.isTrue())
    return b;
  return wrap(a.ctx, Sort::Bool, toZ3(a) && toZ3(b));
}

Term operator||(const Term &a, const Term &b) {
  assert(a.isBool() && b.isBool());
  if (a.isTrue() || b.isFalse())
    return a;
  if (b.isTrue() || a.isFalse())
    return b;
  return wrap(a.ctx, Sort::Bool, toZ3(a) || toZ3(b));
}

Term operator!(const Term &a) {
  assert(a.isBool());
  if (a.value)
    return a.ctx->boolean(*a.value == 0);
  return wrap(a.ctx, Sort::Bool, !toZ3(a));
}

Term implies(const Term &a, const Term &b) { return !a || b; }

Term ite(const Term &c, const Term &a, const Term &b) {
  assert(c.isBool() && a.isValid() && b.isValid() && a.sort() == b.sort() &&
         a.width() == b.width());
  if (c.value)
    return *c.value ? a : b;
  if (a.value && b.value && *a.value == *b.value)
    return a;
  if (a.ast && b.ast && a.ast == b.ast)
    return a;
  Term chosen = wrap(c.ctx, a.sort(), z3::ite(toZ3(c), toZ3(a), toZ3(b)));
  // A choice of two numbers with digits in one radix has the chosen
  // digits: a torus neighbour, r + 1 or r + 1 - b at a row's end.
  if (auto d = commonDigits(a, b); d && !digitsOf(chosen, d->first.radix))
    c.ctx->knowDigits(chosen, d->first.radix,
                      ite(c, d->first.high, d->second.high),
                      ite(c, d->first.low, d->second.low),
                      d->first.canonical && d->second.canonical);
  return chosen;
}

Term operator+(const Term &a, int64_t b) { return a + folded(a, b); }
Term operator-(const Term &a, int64_t b) { return a - folded(a, b); }
Term operator==(const Term &a, int64_t b) { return a == folded(a, b); }
Term operator!=(const Term &a, int64_t b) { return a != folded(a, b); }
Term slt(const Term &a, int64_t b) { return slt(a, folded(a, b)); }
Term sle(const Term &a, int64_t b) { return sle(a, folded(a, b)); }
Term sge(const Term &a, int64_t b) { return sge(a, folded(a, b)); }
Term sgt(const Term &a, int64_t b) { return sgt(a, folded(a, b)); }

} // namespace collc::smt
