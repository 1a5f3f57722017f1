#include "smt/Integers.h"

#include <string>

using namespace collc::smt::detail;

namespace {

/// 2^k in decimal, for k <= 64 (a bit-vector is at most 64 bits wide).
std::string powerOfTwo(unsigned k) {
  unsigned __int128 v = static_cast<unsigned __int128>(1) << k;
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + unsigned(v % 10)));
    v /= 10;
  } while (v != 0);
  return digits;
}

} // namespace

z3::expr IntegerReading::fresh(const char *prefix) {
  return z3::expr(z, Z3_mk_fresh_const(z, prefix, z.int_sort()));
}

z3::expr IntegerReading::wrapped(const z3::expr &sum, unsigned width) {
  const z3::expr wraps = fresh("wraps");
  const z3::expr value = sum - z.int_val(powerOfTwo(width).c_str()) * wraps;
  const z3::expr half = z.int_val(powerOfTwo(width - 1).c_str());
  definitions.push_back(-half <= value && value < half);
  return value;
}

bool IntegerReading::readable(const z3::expr &e) {
  if (auto it = readability.find(e.id()); it != readability.end())
    return it->second;
  bool ok = e.is_app();
  if (ok && !e.is_numeral() && e.num_args() != 0) {
    switch (e.decl().decl_kind()) {
    case Z3_OP_AND:
    case Z3_OP_OR:
    case Z3_OP_NOT:
    case Z3_OP_IMPLIES:
    case Z3_OP_XOR:
    case Z3_OP_ITE:
    case Z3_OP_EQ:
    case Z3_OP_DISTINCT:
    case Z3_OP_SLEQ:
    case Z3_OP_SLT:
    case Z3_OP_SGEQ:
    case Z3_OP_SGT:
    case Z3_OP_BADD:
    case Z3_OP_BSUB:
    case Z3_OP_BNEG:
    case Z3_OP_BSDIV:
    case Z3_OP_BSDIV_I:
    case Z3_OP_BSREM:
    case Z3_OP_BSREM_I:
      break;
    case Z3_OP_BMUL: {
      unsigned variables = 0;
      for (unsigned i = 0; i < e.num_args(); ++i)
        variables += e.arg(i).is_numeral() ? 0 : 1;
      ok = variables <= 1; // linear
      break;
    }
    default:
      ok = false;
    }
    for (unsigned i = 0; ok && i < e.num_args(); ++i)
      ok = readable(e.arg(i));
  } else if (ok && e.num_args() == 0 && !e.is_numeral()) {
    const Z3_decl_kind kind = e.decl().decl_kind();
    ok = kind == Z3_OP_TRUE || kind == Z3_OP_FALSE ||
         (kind == Z3_OP_UNINTERPRETED && (e.is_bool() || e.is_bv()));
  } else if (ok) {
    ok = e.is_bv(); // a numeral
  }
  readability.emplace(e.id(), ok);
  return ok;
}

std::optional<z3::expr> IntegerReading::read(const z3::expr &e) {
  if (!readable(e))
    return std::nullopt;
  auto it = readings.find(e.id());
  if (it != readings.end())
    return it->second;
  std::optional<z3::expr> r = readNode(e);
  if (r)
    readings.emplace(e.id(), *r);
  return r;
}

std::optional<z3::expr> IntegerReading::readNode(const z3::expr &e) {
  if (!e.is_app())
    return std::nullopt;
  if (std::optional<z3::expr> leaf = readLeaf(e))
    return leaf;
  std::vector<z3::expr> args;
  for (unsigned i = 0; i < e.num_args(); ++i) {
    std::optional<z3::expr> a = read(e.arg(i));
    if (!a)
      return std::nullopt;
    args.push_back(*a);
  }
  return readOperator(e, args);
}

std::optional<z3::expr> IntegerReading::readLeaf(const z3::expr &e) {
  if (e.is_bv() && e.is_numeral()) {
    const unsigned width = e.get_sort().bv_size();
    const uint64_t bits = e.get_numeral_uint64();
    const int64_t value =
        width < 64 && (bits >> (width - 1)) != 0
            ? static_cast<int64_t>(bits - (uint64_t(1) << width))
            : static_cast<int64_t>(bits);
    return z.int_val(value);
  }
  const Z3_decl_kind kind = e.decl().decl_kind();
  if (kind == Z3_OP_UNINTERPRETED && e.num_args() == 0) {
    if (e.is_bool())
      return e;
    if (!e.is_bv())
      return std::nullopt;
    const unsigned width = e.get_sort().bv_size();
    z3::expr v = z.constant(e.decl().name(), z.int_sort());
    const z3::expr half = z.int_val(powerOfTwo(width - 1).c_str());
    definitions.push_back(-half <= v && v < half);
    vars.emplace_back(e, v);
    return v;
  }
  if (kind == Z3_OP_TRUE || kind == Z3_OP_FALSE)
    return e;
  return std::nullopt;
}

std::optional<z3::expr>
IntegerReading::readOperator(const z3::expr &e,
                             const std::vector<z3::expr> &args) {
  auto all = [&](auto combine) {
    z3::expr acc = args[0];
    for (size_t i = 1; i < args.size(); ++i)
      acc = combine(acc, args[i]);
    return acc;
  };
  auto vector = [&] {
    z3::expr_vector v(z);
    for (const z3::expr &a : args)
      v.push_back(a);
    return v;
  };
  const Z3_decl_kind kind = e.decl().decl_kind();
  const unsigned width = e.is_bv() ? e.get_sort().bv_size() : 0;
  switch (kind) {
  case Z3_OP_AND:
    return z3::mk_and(vector());
  case Z3_OP_OR:
    return z3::mk_or(vector());
  case Z3_OP_NOT:
    return !args[0];
  case Z3_OP_IMPLIES:
    return z3::implies(args[0], args[1]);
  case Z3_OP_XOR:
    return args[0] != args[1];
  case Z3_OP_ITE:
    return z3::ite(args[0], args[1], args[2]);
  case Z3_OP_EQ:
    return all([](const z3::expr &a, const z3::expr &b) { return a == b; });
  case Z3_OP_DISTINCT:
    return z3::distinct(vector());
  case Z3_OP_SLEQ:
    return args[0] <= args[1];
  case Z3_OP_SLT:
    return args[0] < args[1];
  case Z3_OP_SGEQ:
    return args[0] >= args[1];
  case Z3_OP_SGT:
    return args[0] > args[1];
  case Z3_OP_BADD:
    return wrapped(all([](auto a, auto b) { return a + b; }), width);
  case Z3_OP_BSUB:
    return wrapped(all([](auto a, auto b) { return a - b; }), width);
  case Z3_OP_BNEG:
    return wrapped(-args[0], width);
  case Z3_OP_BMUL: // by constants alone (readable)
    return wrapped(all([](auto a, auto b) { return a * b; }), width);
  case Z3_OP_BSDIV:
  case Z3_OP_BSDIV_I:
  case Z3_OP_BSREM:
  case Z3_OP_BSREM_I:
    return readDivision(e, args);
  default:
    return std::nullopt;
  }
}

z3::expr IntegerReading::readDivision(const z3::expr &e,
                                      const std::vector<z3::expr> &args) {
  const Z3_decl_kind kind = e.decl().decl_kind();
  const bool quotient = kind == Z3_OP_BSDIV || kind == Z3_OP_BSDIV_I;
  if (!e.arg(1).is_numeral() || !args[1].is_numeral() ||
      args[1].get_numeral_int64() <= 0)
    return fresh(quotient ? "quotient" : "remainder");
  // Truncating division by c > 0 (SMT-LIB's bvsdiv and bvsrem): the
  // remainder has the dividend's sign and is below c in size.
  const z3::expr &a = args[0], &c = args[1];
  const z3::expr q = fresh("quotient");
  const z3::expr rem = a - c * q;
  definitions.push_back(z3::implies(a >= 0, 0 <= rem && rem < c));
  definitions.push_back(z3::implies(a < 0, -c < rem && rem <= 0));
  return quotient ? q : rem;
}
