// Sema: expressions, lowered to ir::Expr over a scope of names.

#include "sema/Analyzer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cctype>
#include <cmath>
#include <limits>

namespace collc::sema {

/// The operand with the nodes that carry no operator looked through (the
/// grammar wraps every operand in one node per precedence level).
static const ast::Operand &bare(const ast::Operand &operand) {
  const ast::Operand *o = &operand;
  while (true) {
    if (const auto *c = boost::get<x3::forward_ast<ast::Conditional>>(o)) {
      if (!c->get().branches.empty())
        return *o;
      o = &c->get().condition;
    } else if (const auto *ch = boost::get<x3::forward_ast<ast::Chain>>(o)) {
      if (!ch->get().rest.empty())
        return *o;
      o = &ch->get().first;
    } else if (const auto *u = boost::get<x3::forward_ast<ast::Unary>>(o)) {
      if (!u->get().ops.empty())
        return *o;
      o = &u->get().operand;
    } else {
      return *o;
    }
  }
}

const ast::Identifier *asIdentifier(const ast::Operand &operand) {
  return boost::get<ast::Identifier>(&bare(operand));
}

const ast::Call *asCall(const ast::Operand &operand) {
  const auto *call = boost::get<x3::forward_ast<ast::Call>>(&bare(operand));
  return call ? &call->get() : nullptr;
}

std::optional<int64_t> Analyzer::number(const ast::Number &n) {
  int64_t value = 0;
  for (char c : n.digits) {
    int digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
      diags.error(locOf(n),
                  "number " + n.digits +
                      " is too large (the largest is 9223372036854775807)",
                  rangeOf(n));
      return std::nullopt;
    }
    value = value * 10 + digit;
  }
  return value;
}

ExprRef Analyzer::lower(const ast::Operand &operand, const Scope &scope) {
  struct Visitor : boost::static_visitor<ExprRef> {
    Analyzer &a;
    const Scope &scope;
    Visitor(Analyzer &a, const Scope &scope) : a(a), scope(scope) {}

    ExprRef operator()(const ast::Number &n) const {
      auto v = a.number(n);
      return v ? ir::Expr::constant(*v, locOf(n)) : nullptr;
    }
    ExprRef operator()(const ast::Identifier &id) const {
      if (const Scope::Entry *e = scope.find(id.name))
        return ir::Expr::var(id.name, e->slot, locOf(id));
      if (a.unknownName)
        return a.unknownName(id);
      a.diags.error(
          locOf(id),
          "unknown name '" + id.name + "'" +
              (scope.size() == 0 ? "; a constant is needed here" : ""),
          rangeOf(id));
      return nullptr;
    }
    ExprRef operator()(const x3::forward_ast<ast::Chain> &c) const {
      return a.lowerChain(c.get(), scope);
    }
    ExprRef operator()(const x3::forward_ast<ast::Unary> &u) const {
      ExprRef e = a.lower(u.get().operand, scope);
      if (!e)
        return nullptr;
      for (auto it = u.get().ops.rbegin(); it != u.get().ops.rend(); ++it) {
        ExprOp op = *it == "-"   ? ExprOp::Neg
                    : *it == "~" ? ExprOp::BitNot
                                 : ExprOp::Not;
        e = a.capDepth(ir::Expr::unary(op, e, locOf(u.get())), u.get());
        if (!e)
          return nullptr;
      }
      return e;
    }
    ExprRef operator()(const x3::forward_ast<ast::Call> &c) const {
      return a.lowerCall(c.get(), scope);
    }
    ExprRef operator()(const x3::forward_ast<ast::Conditional> &c) const {
      const ast::Conditional &cond = c.get();
      // a ? b : c ? d : e  ==  a ? b : (c ? d : e): fold from the right.
      std::vector<ExprRef> parts;
      parts.push_back(a.lower(cond.condition, scope));
      for (const ast::Branch &b : cond.branches) {
        parts.push_back(a.lower(b.value, scope));
        parts.push_back(a.lower(b.next, scope));
      }
      if (llvm::is_contained(parts, nullptr))
        return nullptr;
      ExprRef e = parts.back();
      for (size_t i = parts.size() - 1; i >= 2 && e; i -= 2)
        e = a.capDepth(
            ir::Expr::select(parts[i - 2], parts[i - 1], e, locOf(cond)), cond);
      return e;
    }
  };
  return boost::apply_visitor(Visitor(*this, scope), operand);
}

/// 004's maps of node addresses (§4.4, §4.5, §5), by their arity.
static std::optional<unsigned> addressMapArity(const std::string &name) {
  if (name == "gray" || name == "gray_inverse" || name == "subcube_invert")
    return 1;
  if (name == "bitreverse")
    return 2;
  if (name == "shuffle")
    return 3;
  return std::nullopt;
}

ExprRef Analyzer::lowerCall(const ast::Call &call, const Scope &scope) {
  if (std::optional<unsigned> arity = addressMapArity(call.function.name))
    return lowerAddressMap(call, *arity, scope);
  if (call.function.name == "ceil_log2") {
    if (call.args.size() != 1) {
      diags.error(locOf(call), "'ceil_log2' takes 1 argument", rangeOf(call));
      return nullptr;
    }
    ExprRef x = lower(call.args[0], scope);
    return x ? capDepth(ir::Expr::unary(ExprOp::CeilLog2, x, locOf(call)), call)
             : nullptr;
  }
  std::optional<ExprOp> op;
  if (call.function.name == "min")
    op = ExprOp::Min;
  else if (call.function.name == "max")
    op = ExprOp::Max;
  if (!op) {
    diags.error(locOf(call.function),
                "unknown function '" + call.function.name +
                    "'; expected min, max, ceil_log2, bitreverse, "
                    "gray, gray_inverse, shuffle or subcube_invert",
                rangeOf(call.function));
    return nullptr;
  }
  if (call.args.size() < 2) {
    diags.error(locOf(call),
                "'" + call.function.name + "' needs at least two arguments",
                rangeOf(call));
    return nullptr;
  }
  ExprRef e = lower(call.args[0], scope);
  for (size_t i = 1; i < call.args.size() && e; ++i) {
    ExprRef next = lower(call.args[i], scope);
    e = next ? capDepth(ir::Expr::binary(*op, e, next, locOf(call)), call)
             : nullptr;
  }
  return e;
}

ExprRef Analyzer::lowerAddressMap(const ast::Call &call, unsigned arity,
                                  const Scope &scope) {
  const std::string &name = call.function.name;
  if (call.args.size() != arity) {
    diags.error(locOf(call),
                "'" + name + "' takes " + std::to_string(arity) + " argument" +
                    (arity == 1 ? "" : "s"),
                rangeOf(call));
    return nullptr;
  }
  std::vector<ExprRef> args;
  for (const ast::Operand &arg : call.args)
    if (!args.emplace_back(lower(arg, scope)))
      return nullptr;
  const llvm::SMLoc loc = locOf(call);
  auto bin = [&](ExprOp op, ExprRef l, ExprRef r) {
    return ir::Expr::binary(op, std::move(l), std::move(r), loc);
  };
  auto num = [&](int64_t v) { return ir::Expr::constant(v, loc); };
  ExprRef e;
  if (name == "bitreverse") {
    e = bin(ExprOp::BitReverse, args[0], args[1]);
  } else if (name == "gray") {
    // The binary-reflected Gray code of x: x ^ (x >> 1).
    e = bin(ExprOp::BitXor, args[0], bin(ExprOp::Shr, args[0], num(1)));
  } else if (name == "gray_inverse") {
    // Its inverse, the prefix xor of x's bits, in six doublings.
    e = args[0];
    for (int64_t k : {1, 2, 4, 8, 16, 32})
      e = bin(ExprOp::BitXor, e, bin(ExprOp::Shr, e, num(k)));
  } else if (name == "subcube_invert") {
    // x with the bits below its leading one inverted: bit inversion in
    // the subcube 00..01xx..x that holds x (§4.5, Figure 8). The bits
    // from the leading one down, in six doublings, less the leading one.
    ExprRef smeared = args[0];
    for (int64_t k : {1, 2, 4, 8, 16, 32})
      smeared = bin(ExprOp::BitOr, smeared, bin(ExprOp::Shr, smeared, num(k)));
    e = bin(ExprOp::BitXor, args[0], bin(ExprOp::Shr, smeared, num(1)));
  } else {
    // shuffle(x, k, n): the low n bits of x rotated left by k, a k-step
    // shuffle of an n-bit address (§5); k in 0 .. n.
    ExprRef mask = bin(ExprOp::Sub, bin(ExprOp::Shl, num(1), args[2]), num(1));
    ExprRef low = bin(ExprOp::BitAnd, args[0], mask);
    e = bin(ExprOp::BitAnd,
            bin(ExprOp::BitOr, bin(ExprOp::Shl, low, args[1]),
                bin(ExprOp::Shr, low, bin(ExprOp::Sub, args[2], args[1]))),
            mask);
  }
  return capDepth(e, call);
}

ExprRef Analyzer::lowerChain(const ast::Chain &chain, const Scope &scope) {
  ExprRef first = lower(chain.first, scope);
  if (!first)
    return nullptr;
  if (chain.rest.empty())
    return first;
  static const llvm::StringMap<ExprOp> binaryOps = {
      {"or", ExprOp::Or},    {"and", ExprOp::And},  {"==", ExprOp::Eq},
      {"!=", ExprOp::Ne},    {"<", ExprOp::Lt},     {"<=", ExprOp::Le},
      {">", ExprOp::Gt},     {">=", ExprOp::Ge},    {"|", ExprOp::BitOr},
      {"^", ExprOp::BitXor}, {"&", ExprOp::BitAnd}, {"<<", ExprOp::Shl},
      {">>", ExprOp::Shr},   {"+", ExprOp::Add},    {"-", ExprOp::Sub},
      {"*", ExprOp::Mul},    {"/", ExprOp::Div},    {"%", ExprOp::Mod},
      {"**", ExprOp::Pow}};
  std::vector<ExprRef> operands{first};
  std::vector<const ast::Operation *> ops;
  for (const ast::Operation &op : chain.rest) {
    ExprRef e = lower(op.operand, scope);
    if (!e)
      return nullptr;
    operands.push_back(e);
    ops.push_back(&op);
  }
  ExprOp kind = binaryOps.lookup(ops[0]->op);
  bool comparison = kind >= ExprOp::Eq && kind <= ExprOp::Ge;
  if (comparison && ops.size() > 1) {
    diags.error(locOf(*ops[1]),
                "comparisons do not chain; combine them with 'and'",
                rangeOf(*ops[1]));
    return nullptr;
  }
  if (kind == ExprOp::Pow) { // right associative
    ExprRef e = operands.back();
    for (size_t i = ops.size(); i-- > 0 && e;)
      e = capDepth(
          ir::Expr::binary(ExprOp::Pow, operands[i], e, locOf(*ops[i])),
          *ops[i]);
    return e;
  }
  ExprRef e = operands[0];
  for (size_t i = 0; i < ops.size() && e; ++i)
    e = capDepth(ir::Expr::binary(binaryOps.lookup(ops[i]->op), e,
                                  operands[i + 1], locOf(*ops[i])),
                 *ops[i]);
  return e;
}

// No range: the expression may be a line of thousands of characters.
ExprRef Analyzer::capDepth(ExprRef e, const ast::Located &where) {
  if (e->depth <= ir::maxExprDepth)
    return e;
  diags.error(locOf(where),
              "expression nested deeper than " + llvm::Twine(ir::maxExprDepth) +
                  " operators; split it into smaller expressions");
  return nullptr;
}

std::optional<int64_t> Analyzer::constant(const ast::Operand &operand,
                                          llvm::StringRef what) {
  Scope empty;
  ExprRef e = lower(operand, empty);
  if (!e)
    return std::nullopt;
  ir::EvalResult r = ir::evaluate(*e, {});
  if (!r.ok()) {
    diags.error(r.where && r.where->loc.isValid() ? r.where->loc
                                                  : locOf(locatedOf(operand)),
                what + llvm::Twine(" is undefined: ") + ir::describe(r.error),
                rangeOf(locatedOf(operand)));
    return std::nullopt;
  }
  return r.value;
}

} // namespace collc::sema
