#include "ir/Expr.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace collc::ir;

namespace {
unsigned depthOver(const std::vector<ExprRef> &args) {
  unsigned d = 0;
  for (const ExprRef &a : args)
    d = std::max(d, a->depth);
  return d + 1;
}

/// A copy of `e` with new operands.
ExprRef withArgs(const Expr &e, std::vector<ExprRef> args) {
  auto copy = std::make_shared<Expr>(e);
  copy->depth = depthOver(args);
  copy->args = std::move(args);
  return copy;
}
} // namespace

ExprRef Expr::constant(int64_t v, llvm::SMLoc loc) {
  auto e = std::make_shared<Expr>();
  e->op = ExprOp::Const;
  e->value = v;
  e->loc = loc;
  return e;
}

ExprRef Expr::var(llvm::StringRef name, unsigned slot, llvm::SMLoc loc) {
  auto e = std::make_shared<Expr>();
  e->op = ExprOp::Var;
  e->name = name.str();
  e->slot = slot;
  e->loc = loc;
  return e;
}

ExprRef Expr::unary(ExprOp op, ExprRef a, llvm::SMLoc loc) {
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->args = {std::move(a)};
  e->depth = depthOver(e->args);
  e->loc = loc;
  return e;
}

ExprRef Expr::binary(ExprOp op, ExprRef a, ExprRef b, llvm::SMLoc loc) {
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->args = {std::move(a), std::move(b)};
  e->depth = depthOver(e->args);
  e->loc = loc;
  return e;
}

ExprRef Expr::select(ExprRef c, ExprRef a, ExprRef b, llvm::SMLoc loc) {
  auto e = std::make_shared<Expr>();
  e->op = ExprOp::Select;
  e->args = {std::move(c), std::move(a), std::move(b)};
  e->depth = depthOver(e->args);
  e->loc = loc;
  return e;
}

namespace {

// Wrapping arithmetic: the emitted C++ works on int64_t and the prover on
// 64-bit vectors, both of which wrap; the evaluator must agree with them.
int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t bitReverse(int64_t x, int64_t n) {
  uint64_t out = 0;
  for (int64_t i = 0; i < n; ++i)
    out |= ((static_cast<uint64_t>(x) >> i) & 1) << (n - 1 - i);
  return static_cast<int64_t>(out);
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

EvalResult fail(EvalError err, const Expr &e) { return {0, err, &e}; }

/// A unary operator on its operand's value.
EvalResult evaluateUnary(ExprOp op, int64_t x) {
  switch (op) {
  case ExprOp::Neg:
    return {wrapSub(0, x)};
  case ExprOp::BitNot:
    return {~x};
  case ExprOp::Not:
    return {x == 0};
  case ExprOp::CeilLog2:
    return {ceilLog2(x)};
  default:
    llvm_unreachable("not a unary operator");
  }
}

/// x to the power y >= 0, wrapping: square-and-multiply, so huge exponents
/// cost 64 rounds.
int64_t wrapPow(int64_t x, int64_t y) {
  uint64_t r = 1, base = static_cast<uint64_t>(x);
  for (uint64_t n = static_cast<uint64_t>(y); n != 0; n >>= 1) {
    if (n & 1)
      r *= base;
    base *= base;
  }
  return static_cast<int64_t>(r);
}

/// Binary operator `e` on its operands' values; an undefined result fails
/// at `e`.
EvalResult evaluateBinary(const Expr &e, int64_t x, int64_t y) {
  switch (e.op) {
  case ExprOp::Add:
    return {wrapAdd(x, y)};
  case ExprOp::Sub:
    return {wrapSub(x, y)};
  case ExprOp::Mul:
    return {wrapMul(x, y)};
  case ExprOp::Div:
  case ExprOp::Mod:
    if (y == 0)
      return fail(EvalError::DivByZero, e);
    if (x == INT64_MIN && y == -1)
      return fail(EvalError::Overflow, e);
    return {e.op == ExprOp::Div ? x / y : x % y};
  case ExprOp::Pow:
    if (y < 0)
      return fail(EvalError::BadPow, e);
    return {wrapPow(x, y)};
  case ExprOp::Shl:
  case ExprOp::Shr:
    if (y < 0 || y > 63)
      return fail(EvalError::BadShift, e);
    return {e.op == ExprOp::Shl
                ? static_cast<int64_t>(static_cast<uint64_t>(x) << y)
                : x >> y};
  case ExprOp::BitAnd:
    return {x & y};
  case ExprOp::BitOr:
    return {x | y};
  case ExprOp::BitXor:
    return {x ^ y};
  case ExprOp::Min:
    return {std::min(x, y)};
  case ExprOp::Max:
    return {std::max(x, y)};
  case ExprOp::BitReverse:
    if (y < 0 || y > 62)
      return fail(EvalError::BadBits, e);
    return {bitReverse(x, y)};
  case ExprOp::Eq:
    return {x == y};
  case ExprOp::Ne:
    return {x != y};
  case ExprOp::Lt:
    return {x < y};
  case ExprOp::Le:
    return {x <= y};
  case ExprOp::Gt:
    return {x > y};
  case ExprOp::Ge:
    return {x >= y};
  default:
    llvm_unreachable("not a binary operator");
  }
}

} // namespace

EvalResult collc::ir::evaluate(const Expr &e, llvm::ArrayRef<int64_t> env) {
  switch (e.op) {
  case ExprOp::Const:
    return {e.value};
  case ExprOp::Var:
    return {e.slot < env.size() ? env[e.slot] : 0};
  case ExprOp::Select: {
    EvalResult c = evaluate(*e.args[0], env);
    if (!c.ok())
      return c;
    return evaluate(*e.args[c.value != 0 ? 1 : 2], env);
  }
  case ExprOp::And: {
    EvalResult a = evaluate(*e.args[0], env);
    if (!a.ok() || a.value == 0)
      return a.ok() ? EvalResult{0} : a;
    EvalResult b = evaluate(*e.args[1], env);
    return b.ok() ? EvalResult{b.value != 0} : b;
  }
  case ExprOp::Or: {
    EvalResult a = evaluate(*e.args[0], env);
    if (!a.ok() || a.value != 0)
      return a.ok() ? EvalResult{1} : a;
    EvalResult b = evaluate(*e.args[1], env);
    return b.ok() ? EvalResult{b.value != 0} : b;
  }
  default:
    break;
  }

  EvalResult a = evaluate(*e.args[0], env);
  if (!a.ok() || e.args.size() == 1)
    return a.ok() ? evaluateUnary(e.op, a.value) : a;
  EvalResult b = evaluate(*e.args[1], env);
  if (!b.ok())
    return b;
  return evaluateBinary(e, a.value, b.value);
}

namespace {

// Precedence for printing, loosest first; mirrors the .coll grammar (which
// binds bitwise operators tighter than comparisons, unlike C).
int precedence(ExprOp op) {
  switch (op) {
  case ExprOp::Select:
    return 1;
  case ExprOp::Or:
    return 2;
  case ExprOp::And:
    return 3;
  case ExprOp::Eq:
  case ExprOp::Ne:
  case ExprOp::Lt:
  case ExprOp::Le:
  case ExprOp::Gt:
  case ExprOp::Ge:
    return 4;
  case ExprOp::BitOr:
    return 5;
  case ExprOp::BitXor:
    return 6;
  case ExprOp::BitAnd:
    return 7;
  case ExprOp::Shl:
  case ExprOp::Shr:
    return 8;
  case ExprOp::Add:
  case ExprOp::Sub:
    return 9;
  case ExprOp::Mul:
  case ExprOp::Div:
  case ExprOp::Mod:
    return 10;
  case ExprOp::Pow:
    return 11;
  case ExprOp::Neg:
  case ExprOp::BitNot:
  case ExprOp::Not:
    return 12;
  case ExprOp::CeilLog2: // printed as a call
    return 13;
  default:
    return 13;
  }
}

const char *spelling(ExprOp op, bool cpp) {
  switch (op) {
  case ExprOp::Neg:
  case ExprOp::Sub:
    return "-";
  case ExprOp::BitNot:
    return "~";
  case ExprOp::Not:
    return cpp ? "!" : "not ";
  case ExprOp::Add:
    return "+";
  case ExprOp::Mul:
    return "*";
  case ExprOp::Div:
    return "/";
  case ExprOp::Mod:
    return "%";
  case ExprOp::Pow:
    return "**";
  case ExprOp::Shl:
    return "<<";
  case ExprOp::Shr:
    return ">>";
  case ExprOp::BitAnd:
    return "&";
  case ExprOp::BitOr:
    return "|";
  case ExprOp::BitXor:
    return "^";
  case ExprOp::Eq:
    return "==";
  case ExprOp::Ne:
    return "!=";
  case ExprOp::Lt:
    return "<";
  case ExprOp::Le:
    return "<=";
  case ExprOp::Gt:
    return ">";
  case ExprOp::Ge:
    return ">=";
  case ExprOp::And:
    return cpp ? "&&" : "and";
  case ExprOp::Or:
    return cpp ? "||" : "or";
  default:
    return "?";
  }
}

class Printer {
public:
  Printer(bool cpp, llvm::ArrayRef<std::string> names) : cpp(cpp), names(names) {}

  // C++ gets full parentheses around every compound operand: its precedence
  // differs from ours (`a & b == c`), and clarity beats brevity there.
  std::string print(const Expr &e, int outer) {
    switch (e.op) {
    case ExprOp::Const:
      if (cpp && e.value == INT64_MIN)
        return "INT64_MIN";
      return cpp ? "int64_t(" + std::to_string(e.value) + ")"
                 : std::to_string(e.value);
    case ExprOp::Var:
      return e.slot < names.size() && !names[e.slot].empty() ? names[e.slot]
                                                              : e.name;
    case ExprOp::Min:
    case ExprOp::Max: {
      std::string fn = e.op == ExprOp::Min ? "min" : "max";
      if (cpp)
        fn = "std::" + fn + "<int64_t>";
      return fn + "(" + print(*e.args[0], 0) + ", " + print(*e.args[1], 0) + ")";
    }
    case ExprOp::CeilLog2:
      return std::string(cpp ? "collc_ceil_log2" : "ceil_log2") + "(" +
             print(*e.args[0], 0) + ")";
    case ExprOp::BitReverse:
      return std::string(cpp ? "collc_bitreverse" : "bitreverse") + "(" +
             print(*e.args[0], 0) + ", " + print(*e.args[1], 0) + ")";
    case ExprOp::Pow:
      if (cpp)
        return "collc_pow(" + print(*e.args[0], 0) + ", " +
               print(*e.args[1], 0) + ")";
      break;
    default:
      break;
    }
    int prec = precedence(e.op);
    std::string s;
    if (e.op == ExprOp::Select) {
      s = print(*e.args[0], prec + 1) + " ? " + print(*e.args[1], prec + 1) +
          " : " + print(*e.args[2], prec);
    } else if (e.args.size() == 1) {
      s = std::string(spelling(e.op, cpp)) + print(*e.args[0], prec);
    } else {
      // Left associative: the right operand needs parentheses at equal
      // precedence. Pow is right associative.
      bool rightAssoc = e.op == ExprOp::Pow;
      s = print(*e.args[0], rightAssoc ? prec + 1 : prec) + " " +
          spelling(e.op, cpp) + " " +
          print(*e.args[1], rightAssoc ? prec : prec + 1);
    }
    bool paren = cpp ? outer > 0 : prec < outer;
    return paren ? "(" + s + ")" : s;
  }

private:
  bool cpp;
  llvm::ArrayRef<std::string> names;
};

} // namespace

std::string collc::ir::printCpp(const Expr &e, llvm::ArrayRef<std::string> names) {
  return Printer(true, names).print(e, 0);
}

std::string collc::ir::print(const Expr &e) { return Printer(false, {}).print(e, 0); }

ExprRef collc::ir::fold(const ExprRef &e) {
  if (e->op == ExprOp::Const || e->op == ExprOp::Var)
    return e;
  std::vector<ExprRef> args;
  bool allConst = true;
  bool changed = false;
  for (const ExprRef &a : e->args) {
    args.push_back(fold(a));
    allConst &= args.back()->isConst();
    changed |= args.back() != a;
  }
  if (allConst) {
    ExprRef copy = withArgs(*e, args);
    EvalResult r = evaluate(*copy, {});
    if (r.ok())
      return Expr::constant(r.value, e->loc);
    return copy; // leave undefined operations for the checker to report
  }
  if (e->op == ExprOp::Select && args[0]->isConst())
    return args[0]->value != 0 ? args[1] : args[2];
  if (!changed)
    return e;
  return withArgs(*e, std::move(args));
}

collc::ir::ExprRef collc::ir::substitute(
    const ExprRef &e, const std::function<ExprRef(const Expr &var)> &replace) {
  if (!e)
    return e;
  if (e->op == ExprOp::Var) {
    ExprRef replacement = replace(*e);
    return replacement ? replacement : e;
  }
  bool changed = false;
  std::vector<ExprRef> args;
  args.reserve(e->args.size());
  for (const ExprRef &a : e->args) {
    args.push_back(substitute(a, replace));
    changed |= args.back() != a;
  }
  if (!changed)
    return e;
  return withArgs(*e, std::move(args));
}

void collc::ir::collectSlots(const Expr &e, std::vector<unsigned> &slots) {
  if (e.op == ExprOp::Var) {
    if (!llvm::is_contained(slots, e.slot))
      slots.push_back(e.slot);
    return;
  }
  for (const ExprRef &a : e.args)
    collectSlots(*a, slots);
}

bool collc::ir::reads(const Expr &e, unsigned slot) {
  if (e.op == ExprOp::Var)
    return e.slot == slot;
  return llvm::any_of(e.args,
                      [&](const ExprRef &a) { return reads(*a, slot); });
}

bool collc::ir::sameTree(const Expr &a, const Expr &b) {
  if (a.op != b.op || a.args.size() != b.args.size())
    return false;
  if (a.op == ExprOp::Const)
    return a.value == b.value;
  if (a.op == ExprOp::Var)
    return a.slot == b.slot;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!sameTree(*a.args[i], *b.args[i]))
      return false;
  return true;
}

llvm::StringRef collc::ir::describe(EvalError error) {
  switch (error) {
  case EvalError::None:
    return "no error";
  case EvalError::DivByZero:
    return "division by zero";
  case EvalError::Overflow:
    return "integer overflow: -9223372036854775808 divided by -1 does not "
           "fit in 64 bits";
  case EvalError::BadShift:
    return "shift amount outside 0..63";
  case EvalError::BadBits:
    return "bit count outside 0..62";
  case EvalError::BadPow:
    return "negative exponent";
  }
  return "unknown error";
}
