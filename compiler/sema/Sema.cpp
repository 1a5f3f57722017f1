#include "sema/Sema.h"

#include "syntax/Parser.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MemoryBuffer.h"

#include <boost/variant/static_visitor.hpp>

#include <cctype>
#include <cmath>
#include <functional>
#include <limits>

using namespace collc;
namespace x3 = boost::spirit::x3;
using ir::ExprOp;
using ir::ExprRef;

//===----------------------------------------------------------------------===//
// Program-level tables
//===----------------------------------------------------------------------===//

const ir::Schedule *Program::findSchedule(llvm::StringRef name) const {
  for (const ir::Schedule &s : schedules)
    if (s.name == name)
      return &s;
  return nullptr;
}

bool Program::names(llvm::StringRef name, const ir::Schedule &schedule) const {
  if (schedule.name == name)
    return true;
  for (const CollectiveDef &c : collectives)
    if (c.name == name)
      for (const CollectiveDef::Resolved &r : c.resolved)
        if (r.schedule == schedule.name)
          return true;
  return false;
}

llvm::ArrayRef<AlgorithmInfo> collc::knownAlgorithms() {
  using CK = ir::CollectiveKind;
  using TK = TopologyKind;
  static const std::vector<AlgorithmInfo> table = {
      {"recursive_doubling", {CK::Broadcast, CK::Reduce}, {}, "000 §4.1"},
      {"ring",
       {CK::Allgather, CK::ReduceScatter, CK::Allreduce, CK::Alltoall,
        CK::Shift},
       {TK::Ring, TK::Torus, TK::Hypercube, TK::Full},
       "000 §4.2.1, §4.5.1, §4.6.1"},
      {"bidirectional_ring",
       {CK::Alltoall},
       {TK::Ring, TK::Torus, TK::Full},
       "000 §4.5.1"},
      {"mesh",
       {CK::Broadcast, CK::Reduce, CK::Allgather, CK::ReduceScatter,
        CK::Allreduce, CK::Alltoall, CK::Shift, CK::Scatter, CK::Gather},
       {TK::Mesh, TK::Torus},
       "000 §4.1.2, §4.2.2, §4.5.2, §4.6.1"},
      {"hypercube",
       {CK::Allgather, CK::ReduceScatter, CK::Allreduce, CK::Scan,
        CK::Alltoall},
       {TK::Hypercube, TK::Full},
       "000 Algs 4.7-4.9, §4.5.3"},
      {"binomial_tree", {CK::Scatter, CK::Gather}, {}, "000 §4.4"},
      {"sequential",
       {CK::Broadcast, CK::Scatter, CK::Gather},
       {},
       "000 §4.1's naive way, p - 1 messages from the source, one a rank; "
       "for scatter and gather §4.4's bound m(p - 1)"},
      {"reduce_broadcast", {CK::Allreduce}, {}, "000 §4.3"},
      {"linear_array",
       {CK::Allgather, CK::ReduceScatter, CK::Scan, CK::Alltoall},
       {TK::Linear, TK::Ring, TK::Hypercube, TK::Full, TK::Graph},
       "000 §4.2-4.3, §4.5.1 without wraparound (Problem 4.12)"},
      {"pairwise_exchange",
       {CK::Alltoall},
       {TK::Hypercube, TK::Full},
       "000 Alg 4.10"},
      {"scatter_allgather", {CK::Broadcast}, {}, "000 §4.7.1, Eq 4.13"},
      {"spanning_tree",
       {CK::Broadcast, CK::Reduce, CK::Scatter, CK::Gather, CK::Allreduce,
        CK::Allgather, CK::ReduceScatter, CK::Alltoall, CK::Shift},
       {TK::Graph},
       "a breadth-first spanning tree of the graph"},
      {"reduce_scatter_gather", {CK::Reduce}, {}, "000 §4.7.1"},
      {"reduce_scatter_allgather", {CK::Allreduce}, {}, "000 §4.7.1, Eq 4.14"},
      {"gray_code", {CK::Shift}, {TK::Hypercube}, "000 §4.6.2, Eq 4.11"},
      {"ecube", {CK::Shift}, {TK::Hypercube}, "000 §4.6.2, Eq 4.12"},
      {"spanning_binomial_trees", {CK::Broadcast}, {TK::Hypercube}, "004 §4.1"},
      {"rotated_gray_paths", {CK::Allgather}, {TK::Hypercube}, "004 §4.2"},
      {"rotated_spanning_trees",
       {CK::Scatter, CK::Gather, CK::Alltoall},
       {TK::Hypercube},
       "004 §4.4, 000 §4.7.2"},
      {"direct",
       {CK::Alltoall, CK::Alltoallv, CK::Permute},
       {},
       "001 §3.1 (A1); 004 §4.4's direct routing of a permutation"},
      {"dimension_exchange",
       {CK::Permute},
       {TK::Hypercube},
       "004 §4.4, §5: a sequence of pairwise dimension exchanges"},
      {"multiple_exchange",
       {CK::Permute},
       {TK::Hypercube},
       "004 §4.5, §5: several exchange sequences at once, all ports"},
      {"two_stage_random", {CK::Alltoallv}, {}, "001 §3.1 (A2)"},
      {"two_stage_mesh", {CK::Alltoallv}, {}, "001 §3.1 (A3)"},
      {"four_stage", {CK::Alltoallv}, {}, "001 §3.2 (A4)"},
  };
  return table;
}

static const char *const knownOperators[] = {
    "sum", "prod", "min",  "max",    "land",   "lor", "lxor",
    "band", "bor", "bxor", "maxloc", "minloc", "user"};
static const char *const knownTypes[] = {
    "i8",  "i16", "i32", "i64", "u8",  "u16",     "u32",
    "u64", "f32", "f64", "f80", "c64", "c128", "byte"};

bool collc::isKnownOperator(llvm::StringRef op) {
  return llvm::is_contained(knownOperators, op);
}
bool collc::isKnownType(llvm::StringRef type) {
  return llvm::is_contained(knownTypes, type);
}

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

namespace {

llvm::SMLoc locOf(const ast::Located &node) {
  return llvm::SMLoc::getFromPointer(node.begin);
}
llvm::SMRange rangeOf(const ast::Located &node) {
  return llvm::SMRange(llvm::SMLoc::getFromPointer(node.begin),
                       llvm::SMLoc::getFromPointer(node.end));
}

struct LocatedOf : boost::static_visitor<const ast::Located &> {
  const ast::Located &operator()(const ast::Number &n) const { return n; }
  const ast::Located &operator()(const ast::Identifier &n) const { return n; }
  template <typename T>
  const ast::Located &operator()(const x3::forward_ast<T> &n) const {
    return n.get();
  }
};

const ast::Located &locatedOf(const ast::Operand &operand) {
  return boost::apply_visitor(LocatedOf(), operand);
}

/// The operand itself when it is a bare name (the grammar wraps every operand
/// in one node per precedence level; those with no operators are looked
/// through).
const ast::Identifier *asIdentifier(const ast::Operand &operand) {
  const ast::Operand *o = &operand;
  while (true) {
    if (const auto *id = boost::get<ast::Identifier>(o))
      return id;
    if (const auto *c = boost::get<x3::forward_ast<ast::Conditional>>(o)) {
      if (!c->get().branches.empty())
        return nullptr;
      o = &c->get().condition;
    } else if (const auto *ch = boost::get<x3::forward_ast<ast::Chain>>(o)) {
      if (!ch->get().rest.empty())
        return nullptr;
      o = &ch->get().first;
    } else if (const auto *u = boost::get<x3::forward_ast<ast::Unary>>(o)) {
      if (!u->get().ops.empty())
        return nullptr;
      o = &u->get().operand;
    } else {
      return nullptr;
    }
  }
}

/// Names visible in an expression, with their slots.
class Scope {
public:
  struct Entry {
    std::string name;
    unsigned slot;
    llvm::SMLoc loc;
  };
  void add(llvm::StringRef name, unsigned slot, llvm::SMLoc loc = {}) {
    entries.push_back({name.str(), slot, loc});
  }
  const Entry *find(llvm::StringRef name) const {
    for (auto it = entries.rbegin(); it != entries.rend(); ++it)
      if (it->name == name)
        return &*it;
    return nullptr;
  }
  size_t size() const { return entries.size(); }
  void truncate(size_t n) { entries.resize(n); }

private:
  std::vector<Entry> entries;
};

class Analyzer {
public:
  Analyzer(DiagnosticEngine &diags) : diags(diags) {}

  Program run(const ast::Program &ast);

private:
  // Declarations.
  void declare(llvm::StringRef name, const ast::Identifier &id);
  void topologyDecl(const ast::TopologyDecl &decl);
  void modelDecl(const ast::ModelDecl &decl);
  void collectiveDecl(const ast::CollectiveDecl &decl);
  /// Whether `algo` names a library algorithm for `kind` on `topology`;
  /// reports why not.
  bool libraryAlgorithm(const ast::Identifier &algo, ir::CollectiveKind kind,
                        TopologyKind topology, llvm::StringRef topologyName);
  void scheduleDecl(const ast::ScheduleDecl &decl);

  std::optional<Topology> concreteTopology(const ast::TopologyRef &ref);
  std::optional<ir::TopologyTemplate>
  topologyTemplate(const ast::TopologyExpr &expr, ir::Schedule *schedule,
                   Scope *scope);
  /// In a schedule's header (`schedule` and `scope` given), a shift's
  /// amount may be a bare unknown name: a new parameter (`shift(q: q)`).
  /// A new parameter of family `s` named `id` (`p` is the size's slot).
  ExprRef newParameter(const ast::Identifier &id, ir::Schedule &s,
                       Scope &scope);
  /// The amount of a schedule's `shift(q: value)`: a new parameter for a
  /// bare unknown name, else a constant.
  ExprRef familyShift(const ast::Operand &value, ir::Schedule &s, Scope &scope);
  /// Whether a permutation reads a family's parameters (beyond r and p).
  static bool isFamily(const ir::Expr &e, const Scope *scope);
  /// Whether `to` is a bijection of 0 .. p - 1; else an error at `at`
  /// naming the rank sent outside or the two that meet.
  bool isBijection(const ir::Expr &to, int64_t p, const ast::Located &at);
  std::optional<ir::Collective> collective(const ast::CollectiveExpr &expr,
                                           std::optional<int64_t> ranks,
                                           ir::Schedule *schedule = nullptr,
                                           Scope *scope = nullptr);

  // Schedule bodies.
  bool body(const std::vector<ast::BodyItem> &items, ir::Schedule &schedule,
            Scope &scope, std::vector<ir::BodyItem> &out,
            std::optional<int64_t> ranks);
  std::optional<ir::Step> step(const ast::Step &step, ir::Schedule &schedule,
                               Scope &scope, std::optional<int64_t> ranks);
  /// Whether a loop variable's name is free here; reports it if not.
  bool freshName(const ast::Identifier &var, const Scope &scope);
  /// Lowers `inv` into `loop`, over the loop's scope and a chunk's
  /// coordinates (and `from`, for a reduction).
  bool invariant(const ast::Invariant &inv, ir::Schedule &schedule,
                 Scope &scope, ir::Loop &loop);
  bool ruleLoop(const ast::RuleLoop &loop, ir::Schedule &schedule,
                Scope &scope, std::optional<int64_t> ranks,
                std::vector<ir::TransferRule> &out);
  std::optional<ir::TransferRule> transfer(const ast::Transfer &t,
                                           ir::Schedule &schedule,
                                           Scope &scope,
                                           std::optional<int64_t> ranks);
  std::optional<unsigned> bufferIndex(const ir::Schedule &schedule,
                                      const ast::Identifier &id);

  // Expressions.
  ExprRef lower(const ast::Operand &operand, const Scope &scope);
  /// While set, what `lower` makes of a name not in scope (null: an error).
  std::function<ExprRef(const ast::Identifier &)> unknownName;
  ExprRef lowerChain(const ast::Chain &chain, const Scope &scope);
  /// `e`, or null (reported at `loc`) when it is deeper than maxExprDepth.
  ExprRef capDepth(ExprRef e, const ast::Located &where);
  std::optional<int64_t> constant(const ast::Operand &operand,
                                  llvm::StringRef what);
  std::optional<int64_t> number(const ast::Number &n);

  DiagnosticEngine &diags;
  Program program;
  llvm::StringMap<llvm::SMLoc> names; // every declared name
  // Topologies whose declaration has been reported as wrong: their uses
  // say nothing more.
  llvm::StringSet<> badTopologies;
};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

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
      a.diags.error(locOf(id), "unknown name '" + id.name + "'" +
                                   (scope.size() == 0
                                        ? "; a constant is needed here"
                                        : ""),
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
      const ast::Call &call = c.get();
      if (std::optional<unsigned> arity = addressMapArity(call.function.name))
        return addressMap(call, *arity);
      std::optional<ExprOp> op;
      if (call.function.name == "min")
        op = ExprOp::Min;
      else if (call.function.name == "max")
        op = ExprOp::Max;
      if (!op) {
        a.diags.error(locOf(call.function),
                      "unknown function '" + call.function.name +
                          "'; expected min, max, bitreverse, gray, "
                          "gray_inverse or shuffle",
                      rangeOf(call.function));
        return nullptr;
      }
      if (call.args.size() < 2) {
        a.diags.error(locOf(call), "'" + call.function.name +
                                       "' needs at least two arguments",
                      rangeOf(call));
        return nullptr;
      }
      ExprRef e = a.lower(call.args[0], scope);
      for (size_t i = 1; i < call.args.size() && e; ++i) {
        ExprRef next = a.lower(call.args[i], scope);
        e = next ? a.capDepth(ir::Expr::binary(*op, e, next, locOf(call)),
                              call)
                 : nullptr;
      }
      return e;
    }
    // 004's maps of node addresses (§4.4, §4.5, §5), by their arity.
    static std::optional<unsigned> addressMapArity(const std::string &name) {
      if (name == "gray" || name == "gray_inverse")
        return 1;
      if (name == "bitreverse")
        return 2;
      if (name == "shuffle")
        return 3;
      return std::nullopt;
    }
    /// bitreverse(x, n) is an operator of its own; the others are spelled
    /// in shifts and bitwise operators, so every stage already reads them.
    ExprRef addressMap(const ast::Call &call, unsigned arity) const {
      const std::string &name = call.function.name;
      if (call.args.size() != arity) {
        a.diags.error(locOf(call),
                      "'" + name + "' takes " + std::to_string(arity) +
                          " argument" + (arity == 1 ? "" : "s"),
                      rangeOf(call));
        return nullptr;
      }
      std::vector<ExprRef> args;
      for (const ast::Operand &arg : call.args)
        if (!args.emplace_back(a.lower(arg, scope)))
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
      } else {
        // shuffle(x, k, n): the low n bits of x rotated left by k, a k-step
        // shuffle of an n-bit address (§5); k in 0 .. n.
        ExprRef mask =
            bin(ExprOp::Sub, bin(ExprOp::Shl, num(1), args[2]), num(1));
        ExprRef low = bin(ExprOp::BitAnd, args[0], mask);
        e = bin(ExprOp::BitAnd,
                bin(ExprOp::BitOr, bin(ExprOp::Shl, low, args[1]),
                    bin(ExprOp::Shr, low, bin(ExprOp::Sub, args[2], args[1]))),
                mask);
      }
      return a.capDepth(e, call);
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
            ir::Expr::select(parts[i - 2], parts[i - 1], e, locOf(cond)),
            cond);
      return e;
    }
  };
  return boost::apply_visitor(Visitor(*this, scope), operand);
}

ExprRef Analyzer::lowerChain(const ast::Chain &chain, const Scope &scope) {
  ExprRef first = lower(chain.first, scope);
  if (!first)
    return nullptr;
  if (chain.rest.empty())
    return first;
  static const llvm::StringMap<ExprOp> binaryOps = {
      {"or", ExprOp::Or},   {"and", ExprOp::And},   {"==", ExprOp::Eq},
      {"!=", ExprOp::Ne},   {"<", ExprOp::Lt},      {"<=", ExprOp::Le},
      {">", ExprOp::Gt},    {">=", ExprOp::Ge},     {"|", ExprOp::BitOr},
      {"^", ExprOp::BitXor}, {"&", ExprOp::BitAnd}, {"<<", ExprOp::Shl},
      {">>", ExprOp::Shr},  {"+", ExprOp::Add},     {"-", ExprOp::Sub},
      {"*", ExprOp::Mul},   {"/", ExprOp::Div},     {"%", ExprOp::Mod},
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
              "expression nested deeper than " +
                  llvm::Twine(ir::maxExprDepth) +
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

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

void Analyzer::declare(llvm::StringRef name, const ast::Identifier &id) {
  auto [it, inserted] = names.try_emplace(name, locOf(id));
  if (!inserted) {
    diags.error(locOf(id), "'" + name + "' is already declared", rangeOf(id));
    diags.note(it->second, "'" + name + "' declared here");
  }
}

std::optional<TopologyKind> topologyKind(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<TopologyKind>>(name)
      .Case("ring", TopologyKind::Ring)
      .Case("linear", TopologyKind::Linear)
      .Case("mesh", TopologyKind::Mesh)
      .Case("torus", TopologyKind::Torus)
      .Case("hypercube", TopologyKind::Hypercube)
      .Case("tree", TopologyKind::Tree)
      .Case("full", TopologyKind::Full)
      .Case("graph", TopologyKind::Graph)
      .Default(std::nullopt);
}

/// The parameter a topology kind takes by name (mesh and torus take any
/// number of positional dimensions).
llvm::StringRef topologyParamName(TopologyKind kind) {
  switch (kind) {
  case TopologyKind::Hypercube:
    return "dim";
  case TopologyKind::Tree:
    return "leaves";
  case TopologyKind::Mesh:
  case TopologyKind::Torus:
    return "";
  default:
    return "n";
  }
}

std::optional<ir::TopologyTemplate>
Analyzer::topologyTemplate(const ast::TopologyExpr &expr,
                           ir::Schedule *schedule, Scope *scope) {
  std::optional<TopologyKind> kind = topologyKind(expr.kind.name);
  if (!kind) {
    diags.error(locOf(expr.kind),
                "unknown topology '" + expr.kind.name +
                    "'; expected ring, linear, mesh, torus, hypercube, tree, "
                    "full or graph",
                rangeOf(expr.kind));
    return std::nullopt;
  }
  ir::TopologyTemplate t;
  t.kind = *kind;
  t.loc = locOf(expr);
  llvm::StringRef paramName = topologyParamName(*kind);
  bool multi = *kind == TopologyKind::Mesh || *kind == TopologyKind::Torus;
  bool ok = true;
  for (const ast::Argument &arg : expr.args) {
    // `order: gray` numbers a hypercube's ranks in Gray-code order (000
    // §4.6.2's linear array on the cube).
    if (arg.key && arg.key->name == "order" &&
        *kind == TopologyKind::Hypercube) {
      const ast::Identifier *id = asIdentifier(arg.value);
      if (!id || (id->name != "gray" && id->name != "natural")) {
        diags.error(locOf(locatedOf(arg.value)),
                    "a hypercube's order is 'natural' (rank k is node k) or "
                    "'gray' (rank k is node k ^ (k >> 1))",
                    rangeOf(locatedOf(arg.value)));
        ok = false;
        continue;
      }
      t.order = id->name == "gray" ? RankOrder::Gray : RankOrder::Natural;
      continue;
    }
    if (arg.key && (multi || arg.key->name != paramName)) {
      diags.error(locOf(*arg.key),
                  expr.kind.name + " has no parameter '" + arg.key->name +
                      "'" +
                      (multi ? "; give the dimensions by position, as in " +
                                   expr.kind.name + "(4, 4)"
                             : "; expected '" + paramName.str() + "'"),
                  rangeOf(*arg.key));
      ok = false;
      continue;
    }
    // A bare unknown name in a schedule's topology is a parameter: the
    // schedule is a family, one member per value (`hypercube(dim: d)`).
    const ast::Identifier *id = asIdentifier(arg.value);
    // `p` names the number of ranks everywhere; in a topology it is the
    // parameter that sets it (`ring(p)`).
    bool sizeParam = id && id->name == "p" && schedule &&
                     llvm::none_of(schedule->params, [](const ir::Parameter &q) {
                       return q.name == "p";
                     });
    if (id && schedule && scope && (!scope->find(id->name) || sizeParam)) {
      t.dims.push_back(newParameter(*id, *schedule, *scope));
      continue;
    }
    // So is an unknown name in a dimension's expression: the dimension is
    // a function of the parameter (`tree(leaves: 1 << h)`, the trees with
    // a power of two of leaves).
    if (schedule && scope)
      unknownName = [&](const ast::Identifier &name) {
        return newParameter(name, *schedule, *scope);
      };
    ExprRef e = scope ? lower(arg.value, *scope) : nullptr;
    unknownName = nullptr;
    if (!scope) {
      std::optional<int64_t> v = constant(arg.value, "the topology's size");
      if (v)
        e = ir::Expr::constant(*v, locOf(locatedOf(arg.value)));
    }
    if (!e) {
      ok = false;
      continue;
    }
    t.dims.push_back(ir::fold(e));
  }
  if (!ok)
    return std::nullopt;
  if (t.dims.empty() || (!multi && t.dims.size() != 1)) {
    diags.error(locOf(expr),
                multi ? expr.kind.name + " needs at least one dimension"
                      : expr.kind.name + " takes one parameter" +
                            (paramName == "n"
                                 ? ", the number of ranks"
                                 : ", '" + paramName.str() + "'") +
                            ", got " + std::to_string(t.dims.size()),
                rangeOf(expr));
    return std::nullopt;
  }
  if (expr.edges && *kind != TopologyKind::Graph) {
    diags.error(locOf(expr.edges->front()),
                "only graph(...) takes a list of edges");
    return std::nullopt;
  }
  if (expr.edges) {
    for (const ast::Edge &edge : *expr.edges) {
      auto a = number(edge.from), b = number(edge.to);
      if (!a || !b)
        return std::nullopt;
      t.edges.emplace_back(*a, *b);
    }
  }
  return t;
}

/// Reports a Topology::make error at the topology's place.
static std::optional<Topology> makeTopology(const ir::TopologyTemplate &t,
                                            DiagnosticEngine &diags,
                                            llvm::SMRange range,
                                            const ast::TopologyExpr *expr) {
  std::vector<int64_t> dims;
  for (const ExprRef &d : t.dims) {
    if (!d->isConst()) {
      diags.error(d->loc.isValid() ? d->loc : t.loc,
                  "a topology's size must be a constant or a parameter name",
                  range);
      return std::nullopt;
    }
    dims.push_back(d->value);
  }
  llvm::Expected<Topology> topo =
      Topology::make(t.kind, dims, t.edges, t.order);
  if (!topo) {
    std::string message = llvm::toString(topo.takeError());
    llvm::SMLoc loc = t.loc;
    // Point at the offending edge when the message names one.
    if (expr && expr->edges) {
      for (const ast::Edge &edge : *expr->edges) {
        std::string spelled = edge.from.digits + "-" + edge.to.digits;
        if (llvm::StringRef(message).contains(" " + spelled + " ") ||
            llvm::StringRef(message).contains(" " + spelled + ",") ||
            llvm::StringRef(message).endswith(" " + spelled)) {
          loc = locOf(edge);
          range = rangeOf(edge);
          break;
        }
      }
    }
    diags.error(loc, message, range);
    return std::nullopt;
  }
  return std::move(*topo);
}

void Analyzer::topologyDecl(const ast::TopologyDecl &decl) {
  declare(decl.name.name, decl.name);
  auto t = topologyTemplate(decl.value, nullptr, nullptr);
  auto topo = t ? makeTopology(*t, diags, rangeOf(decl.value), &decl.value)
                : std::nullopt;
  if (!topo) {
    badTopologies.insert(decl.name.name);
    return;
  }
  program.topologies.push_back({decl.name.name, std::move(*topo), locOf(decl)});
}

std::optional<Topology>
Analyzer::concreteTopology(const ast::TopologyRef &ref) {
  if (const ast::Identifier *id = boost::get<ast::Identifier>(&ref)) {
    for (const TopologyDef &def : program.topologies)
      if (def.name == id->name)
        return def.topology;
    if (badTopologies.contains(id->name))
      return std::nullopt;
    if (names.count(id->name)) {
      diags.error(locOf(*id), "'" + id->name + "' is not a topology",
                  rangeOf(*id));
      diags.note(names.lookup(id->name), "'" + id->name + "' declared here");
    } else {
      diags.error(locOf(*id), "unknown topology '" + id->name + "'",
                  rangeOf(*id));
    }
    return std::nullopt;
  }
  const ast::TopologyExpr &expr = boost::get<ast::TopologyExpr>(ref);
  auto t = topologyTemplate(expr, nullptr, nullptr);
  if (!t)
    return std::nullopt;
  return makeTopology(*t, diags, rangeOf(expr), &expr);
}

ExprRef Analyzer::newParameter(const ast::Identifier &id, ir::Schedule &s,
                               Scope &scope) {
  unsigned slot = ir::SlotSize;
  if (id.name != "p") {
    slot = static_cast<unsigned>(s.slotNames.size());
    s.slotNames.push_back(id.name);
  }
  s.params.push_back({id.name, slot, locOf(id), std::nullopt});
  scope.add(id.name, slot, locOf(id));
  return ir::Expr::var(id.name, slot, locOf(id));
}

bool Analyzer::isFamily(const ir::Expr &e, const Scope *scope) {
  std::vector<unsigned> slots;
  ir::collectSlots(e, slots);
  return scope && llvm::any_of(slots, [](unsigned slot) {
           return slot != ir::SlotRank && slot != ir::SlotSize;
         });
}

bool Analyzer::isBijection(const ir::Expr &to, int64_t p,
                           const ast::Located &at) {
  // On a known size the map is checked here, where it is written; a
  // family's is proved for its whole range (prove/Induction.h).
  std::vector<int64_t> env(ir::NumFixedSlots, 0), sender(p, -1);
  env[ir::SlotSize] = p;
  auto refuse = [&](const std::string &why) {
    diags.error(locOf(at),
                "permutation is not a bijection of the ranks 0.." +
                    std::to_string(p - 1) + ": " + why,
                rangeOf(at));
    return false;
  };
  for (int64_t r = 0; r < p; ++r) {
    env[ir::SlotRank] = r;
    ir::EvalResult d = ir::evaluate(to, env);
    if (!d.ok()) {
      diags.error(locOf(at),
                  "cannot evaluate the permutation at r = " +
                      std::to_string(r) + ": " + ir::describe(d.error).str(),
                  rangeOf(at));
      return false;
    }
    if (d.value < 0 || d.value >= p)
      return refuse("it sends rank " + std::to_string(r) + " to " +
                    std::to_string(d.value));
    int64_t &first = sender[static_cast<size_t>(d.value)];
    if (first >= 0)
      return refuse("it sends ranks " + std::to_string(first) + " and " +
                    std::to_string(r) + " both to " + std::to_string(d.value));
    first = r;
  }
  return true;
}

ExprRef Analyzer::familyShift(const ast::Operand &value, ir::Schedule &s,
                              Scope &scope) {
  const ast::Identifier *id = asIdentifier(value);
  if (id && !scope.find(id->name))
    return newParameter(*id, s, scope);
  // Else a number: a family's emitted function takes its amount as an
  // argument, which an expression over other parameters could not be.
  ExprRef e = lower(value, scope);
  if (!e)
    return nullptr;
  e = ir::fold(e);
  if (e->op != ExprOp::Const) {
    diags.error(locOf(locatedOf(value)),
                "a shift amount is a number, or a name of its own for a "
                "family over the amount, as in shift(q: q)",
                rangeOf(locatedOf(value)));
    return nullptr;
  }
  return e;
}

std::optional<ir::Collective>
Analyzer::collective(const ast::CollectiveExpr &expr,
                     std::optional<int64_t> ranks, ir::Schedule *schedule,
                     Scope *scope) {
  std::optional<ir::CollectiveKind> kind =
      ir::parseCollectiveKind(expr.kind.name);
  if (!kind) {
    diags.error(locOf(expr.kind),
                "unknown collective '" + expr.kind.name + "'; expected " +
                    ir::collectiveKindList(),
                rangeOf(expr.kind));
    return std::nullopt;
  }
  using CK = ir::CollectiveKind;
  ir::Collective c;
  c.kind = *kind;
  bool hasRoot = ir::isRooted(c.kind);
  bool hasOp = ir::isReduction(c.kind);
  std::vector<std::string> allowed = {"type"};
  if (hasRoot)
    allowed.push_back("root");
  if (hasOp) {
    allowed.push_back("op");
    allowed.push_back("commutative");
  }
  if (c.kind == CK::Shift)
    allowed.push_back("q");
  if (c.kind == CK::Permute)
    allowed.push_back("to");

  bool ok = true, sawQ = false;
  llvm::StringMap<llvm::SMLoc> seen;
  for (const ast::Argument &arg : expr.args) {
    if (!arg.key) {
      diags.error(locOf(arg),
                  "parameters of a collective are named, as in " +
                      expr.kind.name + "(" + allowed.back() + ": ...)",
                  rangeOf(arg));
      ok = false;
      continue;
    }
    const std::string &key = arg.key->name;
    if (!llvm::is_contained(allowed, key)) {
      std::string list;
      for (const std::string &a : allowed)
        list += (list.empty() ? "'" : ", '") + a + "'";
      diags.error(locOf(*arg.key),
                  expr.kind.name + " has no parameter '" + key +
                      "'; it takes " + list,
                  rangeOf(*arg.key));
      ok = false;
      continue;
    }
    auto [it, fresh] = seen.try_emplace(key, locOf(*arg.key));
    if (!fresh) {
      diags.error(locOf(*arg.key), "parameter '" + key + "' given twice",
                  rangeOf(*arg.key));
      diags.note(it->second, "first given here");
      ok = false;
      continue;
    }
    const ast::Identifier *word = asIdentifier(arg.value);
    if (key == "op" || key == "type" || key == "commutative") {
      if (!word) {
        diags.error(locOf(locatedOf(arg.value)),
                    "expected a name for '" + key + "'",
                    rangeOf(locatedOf(arg.value)));
        ok = false;
        continue;
      }
      if (key == "op") {
        if (!isKnownOperator(word->name)) {
          diags.error(locOf(*word),
                      "unknown operator '" + word->name +
                          "'; expected sum, prod, min, max, land, lor, lxor, "
                          "band, bor, bxor, maxloc, minloc or user",
                      rangeOf(*word));
          ok = false;
        }
        c.op = word->name;
      } else if (key == "type") {
        if (!isKnownType(word->name)) {
          diags.error(locOf(*word),
                      "unknown type '" + word->name +
                          "'; expected i8, i16, i32, i64, u8, u16, u32, u64, "
                          "f32, f64, f80, c64, c128 or byte",
                      rangeOf(*word));
          ok = false;
        }
        c.type = word->name;
      } else {
        if (word->name != "true" && word->name != "false") {
          diags.error(locOf(*word), "expected true or false", rangeOf(*word));
          ok = false;
        }
        c.commutative = word->name == "true";
      }
      continue;
    }
    if (key == "to") {
      // A map of the rank r, over p and a family's parameters; a
      // declaration's has r and p alone. Instantiation refuses one that
      // is not a bijection, and the prover proves a family's is.
      Scope ranksOnly;
      ranksOnly.add("r", ir::SlotRank);
      ranksOnly.add("p", ir::SlotSize);
      c.permuteTo = lower(arg.value, scope ? *scope : ranksOnly);
      if (!c.permuteTo)
        ok = false;
      else
        c.permuteTo = ir::fold(c.permuteTo);
      // gray() and the like are expanded: messages quote the source.
      const ast::Located &at = locatedOf(arg.value);
      if (c.permuteTo && ranks && !isFamily(*c.permuteTo, scope) &&
          !isBijection(*c.permuteTo, *ranks, at))
        ok = false;
      for (const char *ch = at.begin; ch != at.end; ++ch)
        if (!std::isspace(static_cast<unsigned char>(*ch)))
          c.permuteSpelling += *ch;
        else if (!c.permuteSpelling.empty() && c.permuteSpelling.back() != ' ')
          c.permuteSpelling += ' ';
      continue;
    }
    if (key == "q" && schedule && scope) {
      ExprRef amount = familyShift(arg.value, *schedule, *scope);
      if (!amount) {
        ok = false;
        continue;
      }
      if (amount->op != ExprOp::Const) {
        sawQ = true;
        c.shiftOf = amount;
        continue;
      }
    }
    std::optional<int64_t> v = constant(arg.value, "'" + key + "'");
    if (!v) {
      ok = false;
      continue;
    }
    if (key == "root") {
      if (ranks && (*v < 0 || *v >= *ranks)) {
        diags.error(locOf(locatedOf(arg.value)),
                    "root " + std::to_string(*v) +
                        " is outside the topology (ranks 0.." +
                        std::to_string(*ranks - 1) + ")",
                    rangeOf(locatedOf(arg.value)));
        ok = false;
      }
      c.root = *v;
    } else if (key == "q") {
      sawQ = true;
      if (*v < 0 || (ranks && *v >= *ranks)) {
        diags.error(locOf(locatedOf(arg.value)),
                    "shift amount " + std::to_string(*v) + " must be in 0.." +
                        (ranks ? std::to_string(*ranks - 1) : "p-1"),
                    rangeOf(locatedOf(arg.value)));
        ok = false;
      }
      c.shift = *v;
    }
  }
  if (c.kind == CK::Shift && !sawQ && ok) {
    diags.error(locOf(expr), "shift needs its amount, as in shift(q: 1)",
                rangeOf(expr));
    ok = false;
  }
  if (c.kind == CK::Permute && !c.permuteTo && ok) {
    diags.error(locOf(expr),
                "permute needs where each rank's block goes, as in "
                "permute(to: bitreverse(r, 3))",
                rangeOf(expr));
    ok = false;
  }
  if (c.op == "user" && !seen.count("commutative") && ok) {
    // A user operator's algebra is unknown: assume the weaker case.
    c.commutative = false;
  }
  if (!ok)
    return std::nullopt;
  return c;
}

void Analyzer::modelDecl(const ast::ModelDecl &decl) {
  declare(decl.name.name, decl.name);
  CostModel model;
  model.name = decl.name.name;
  model.loc = locOf(decl);
  bool ok = true, hasTs = false, hasTw = false;
  llvm::StringMap<llvm::SMLoc> seen;
  for (const ast::Field &field : decl.fields) {
    const std::string &key = field.key.name;
    auto [it, fresh] = seen.try_emplace(key, locOf(field.key));
    if (!fresh) {
      diags.error(locOf(field.key), "field '" + key + "' given twice",
                  rangeOf(field.key));
      diags.note(it->second, "first given here");
      ok = false;
      continue;
    }
    const ast::Quantity *q = boost::get<ast::Quantity>(&field.value);
    const ast::Identifier *word = boost::get<ast::Identifier>(&field.value);
    if (key == "ports") {
      if (!word || (word->name != "single" && word->name != "all")) {
        diags.error(locOf(field), "ports must be 'single' or 'all'",
                    rangeOf(field));
        ok = false;
        continue;
      }
      model.ports = word->name == "all" ? PortModel::All : PortModel::Single;
      continue;
    }
    if (key == "copies") {
      if (!word || (word->name != "sender" && word->name != "receiver")) {
        diags.error(locOf(field), "copies must be 'sender' or 'receiver'",
                    rangeOf(field));
        ok = false;
        continue;
      }
      model.machine.copies =
          word->name == "receiver" ? CopyModel::Receiver : CopyModel::Sender;
      continue;
    }
    if (key == "serve") {
      const double x = q ? std::strtod(q->number.c_str(), nullptr) : -1;
      if (!q || !q->unit.empty() || !(x >= 0 && x <= 1)) {
        diags.error(locOf(field),
                    "'serve' must be a number from 0 to 1, such as 0.2",
                    rangeOf(field));
        ok = false;
        continue;
      }
      model.machine.serve = x;
      continue;
    }
    if (key == "cores") {
      char *end = nullptr;
      const double n = q ? std::strtod(q->number.c_str(), &end) : 0;
      if (!q || !q->unit.empty() || n < 1 || n > (1 << 20) ||
          n != std::floor(n)) {
        diags.error(locOf(field),
                    "'cores' must be a whole number from 1 to 1048576, "
                    "such as 2",
                    rangeOf(field));
        ok = false;
        continue;
      }
      model.machine.cores = static_cast<int64_t>(n);
      continue;
    }
    if (key != "ts" && key != "tw" && key != "to") {
      diags.error(locOf(field.key),
                  "a model has no field '" + key +
                      "'; it takes 'ts', 'tw', 'to', 'ports', 'cores', "
                      "'copies' and 'serve'",
                  rangeOf(field.key));
      ok = false;
      continue;
    }
    if (!q) {
      diags.error(locOf(field), "expected a quantity such as " +
                                    llvm::Twine(key != "tw" ? "10us"
                                                            : "2ns/byte"),
                  rangeOf(field));
      ok = false;
      continue;
    }
    double value = std::strtod(q->number.c_str(), nullptr);
    llvm::StringRef unit = q->unit;
    llvm::StringRef time = unit, per;
    if (unit.contains('/'))
      std::tie(time, per) = unit.split('/');
    double scale = llvm::StringSwitch<double>(time)
                       .Case("s", 1)
                       .Case("ms", 1e-3)
                       .Case("us", 1e-6)
                       .Case("ns", 1e-9)
                       .Case("ps", 1e-12)
                       .Default(-1);
    bool perByte = per == "byte" || per == "B";
    bool unitOk = scale > 0 && (key != "tw" ? per.empty() : perByte);
    if (!unitOk) {
      diags.error(llvm::SMLoc::getFromPointer(q->begin),
                  key != "tw" ? "'" + key + "' needs a time unit: s, ms, us, ns or ps"
                              : std::string("'tw' needs a time per byte, such as 2ns/byte"),
                  rangeOf(*q));
      ok = false;
      continue;
    }
    if (!std::isfinite(value * scale)) {
      diags.error(llvm::SMLoc::getFromPointer(q->begin),
                  "quantity out of range", rangeOf(*q));
      ok = false;
      continue;
    }
    if (key == "to") {
      model.to = value * scale;
      continue;
    }
    (key == "ts" ? model.ts : model.twPerByte) = value * scale;
    (key == "ts" ? hasTs : hasTw) = true;
  }
  // t_o and serve price groups of steps where receivers copy, and only
  // there (cost::ScheduleCost::line).
  if (ok && model.machine.copies != CopyModel::Receiver &&
      (model.to || model.machine.serve > 0))
    diags.warning(locOf(decl.name),
                  "model '" + decl.name.name +
                      "': 'to' and 'serve' price only where receivers copy; "
                      "without 'copies: receiver' they change nothing",
                  rangeOf(decl.name));
  if (ok && (!hasTs || !hasTw)) {
    diags.error(locOf(decl.name),
                "model '" + decl.name.name + "' needs " +
                    (!hasTs ? "'ts'" : "'tw'"),
                rangeOf(decl.name));
    ok = false;
  }
  if (ok)
    program.models.push_back(model);
}

bool Analyzer::libraryAlgorithm(const ast::Identifier &algo,
                                ir::CollectiveKind kind,
                                TopologyKind topology,
                                llvm::StringRef topologyName) {
  const AlgorithmInfo *info = nullptr;
  for (const AlgorithmInfo &a : knownAlgorithms())
    if (a.name == algo.name)
      info = &a;
  if (!info) {
    diags.error(locOf(algo),
                "unknown algorithm '" + algo.name +
                    "'; name a library algorithm or a schedule declared "
                    "earlier in the file",
                rangeOf(algo));
    return false;
  }
  if (!llvm::is_contained(info->collectives, kind)) {
    diags.error(locOf(algo),
                "algorithm '" + algo.name + "' does not implement " +
                    ir::collectiveKindName(kind),
                rangeOf(algo));
    return false;
  }
  // A graph may contain any topology (library/Library.h): resolution says
  // whether this one's does.
  if (!info->topologies.empty() && topology != TopologyKind::Graph &&
      !llvm::is_contained(info->topologies, topology)) {
    diags.error(locOf(algo),
                "algorithm '" + algo.name + "' does not run on " +
                    topologyName.str(),
                rangeOf(algo));
    return false;
  }
  return true;
}

void Analyzer::collectiveDecl(const ast::CollectiveDecl &decl) {
  declare(decl.name.name, decl.name);
  std::optional<Topology> topo = concreteTopology(decl.on);
  std::optional<ir::Collective> c =
      collective(decl.what, topo ? std::optional(topo->numRanks()) : std::nullopt);
  if (!topo || !c)
    return;
  CollectiveDef def;
  def.name = decl.name.name;
  def.collective = *c;
  def.topology = *topo;
  def.loc = locOf(decl);
  // `using auto` is the same as no `using`: chosen by cost.
  if (decl.algorithm && decl.algorithm->name == "auto") {
    def.algorithmLoc = locOf(*decl.algorithm);
  } else if (decl.algorithm) {
    def.algorithm = decl.algorithm->name;
    def.algorithmLoc = locOf(*decl.algorithm);
    if (const ir::Schedule *s = program.findSchedule(def.algorithm)) {
      if (s->collective.kind != c->kind) {
        diags.error(locOf(*decl.algorithm),
                    "schedule '" + def.algorithm + "' implements " +
                        ir::collectiveKindName(s->collective.kind) +
                        ", not " + ir::collectiveKindName(c->kind),
                    rangeOf(*decl.algorithm));
        diags.note(s->loc, "'" + def.algorithm + "' declared here");
        return;
      }
    } else if (!libraryAlgorithm(*decl.algorithm, c->kind, topo->kind(),
                                 topo->describe())) {
      return;
    }
  }
  // 001 §3.1.3: A3 arranges the nodes in a sqrt(P) x sqrt(P) mesh.
  if (c->kind == ir::CollectiveKind::Alltoallv &&
      def.algorithm == "two_stage_mesh" &&
      !program.findSchedule(def.algorithm)) {
    int64_t n = topo->numRanks(), side = 0;
    while ((side + 1) * (side + 1) <= n)
      ++side;
    if (side * side != n) {
      diags.error(locOf(*decl.algorithm),
                  "two_stage_mesh (001 §3.1.3, A3) needs a perfect square "
                  "number of ranks, not " +
                      std::to_string(n) + "; four_stage (A4) runs on any "
                                          "number",
                  rangeOf(*decl.algorithm));
      return;
    }
  }
  program.collectives.push_back(std::move(def));
}

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

void Analyzer::scheduleDecl(const ast::ScheduleDecl &decl) {
  declare(decl.name.name, decl.name);
  ir::Schedule s;
  s.name = decl.name.name;
  s.loc = locOf(decl);
  s.slotNames = {"r", "p", "origin", "dest", "index"};
  s.buffers.push_back({"result"});

  Scope scope;
  scope.add("r", ir::SlotRank);
  scope.add("p", ir::SlotSize);

  std::optional<ir::TopologyTemplate> topo;
  std::optional<int64_t> ranks;
  if (const ast::Identifier *id = boost::get<ast::Identifier>(&decl.on)) {
    std::optional<Topology> concrete = concreteTopology(decl.on);
    if (!concrete)
      return;
    topo = ir::TopologyTemplate::of(*concrete, locOf(*id));
    ranks = concrete->numRanks();
  } else {
    const ast::TopologyExpr &expr = boost::get<ast::TopologyExpr>(decl.on);
    topo = topologyTemplate(expr, &s, &scope);
    if (!topo)
      return;
    if (s.params.empty()) {
      std::optional<Topology> concrete =
          makeTopology(*topo, diags, rangeOf(expr), &expr);
      if (!concrete)
        return;
      ranks = concrete->numRanks();
    } else if (topo->kind == TopologyKind::Graph ||
               topo->kind == TopologyKind::Tree) {
      // Graph edges are fixed, so a graph family makes no sense; a tree
      // family is routed in closed form (symbolic::onRoute).
      if (topo->kind == TopologyKind::Graph) {
        diags.error(locOf(expr), "a graph's size must be a constant",
                    rangeOf(expr));
        return;
      }
    }
  }
  s.topology = *topo;

  std::optional<ir::Collective> c = collective(decl.what, ranks, &s, &scope);
  if (!c)
    return;
  s.collective = *c;
  if (decl.algorithm) {
    if (!libraryAlgorithm(*decl.algorithm, c->kind, topo->kind,
                          topologyKindName(topo->kind)))
      return;
    s.algorithm = decl.algorithm->name;
  }

  // Parameter ranges: `where d in 1 .. 16`.
  for (const ast::ParamRange &range : decl.ranges) {
    auto param = llvm::find_if(s.params, [&](const ir::Parameter &p) {
      return p.name == range.name.name;
    });
    if (param == s.params.end()) {
      diags.error(locOf(range.name),
                  "'" + range.name.name +
                      "' is not a parameter of this schedule",
                  rangeOf(range.name));
      return;
    }
    auto lo = constant(range.lo, "the range's lower bound");
    auto hi = constant(range.hi, "the range's upper bound");
    if (!lo || !hi)
      return;
    if (*lo > *hi) {
      diags.error(locOf(range), "empty range " + std::to_string(*lo) +
                                    " .. " + std::to_string(*hi),
                  rangeOf(range));
      return;
    }
    param->range = {*lo, *hi};
  }

  if (const auto *c = boost::get<ast::Composition>(&decl.body)) {
    // The parts may live in the library, which sema does not see: the
    // library stage looks them up and composes (library/Compose.h).
    s.parts.push_back({c->first.name, locOf(c->first)});
    for (const ast::Identifier &part : c->rest)
      s.parts.push_back({part.name, locOf(part)});
  } else if (!body(boost::get<std::vector<ast::BodyItem>>(decl.body), s,
                   scope, s.body, ranks)) {
    return;
  }
  program.schedules.push_back(std::move(s));
}

std::optional<unsigned> Analyzer::bufferIndex(const ir::Schedule &schedule,
                                              const ast::Identifier &id) {
  for (unsigned i = 0; i < schedule.buffers.size(); ++i)
    if (schedule.buffers[i].name == id.name)
      return i;
  diags.error(locOf(id),
              "unknown buffer '" + id.name + "'; declare it with 'buffer " +
                  id.name + ";'",
              rangeOf(id));
  return std::nullopt;
}

bool Analyzer::body(const std::vector<ast::BodyItem> &items,
                    ir::Schedule &schedule, Scope &scope,
                    std::vector<ir::BodyItem> &out,
                    std::optional<int64_t> ranks) {
  bool ok = true;
  for (const ast::BodyItem &item : items) {
    if (const ast::Step *st = boost::get<ast::Step>(&item)) {
      if (auto lowered = step(*st, schedule, scope, ranks))
        out.emplace_back(std::move(*lowered));
      else
        ok = false;
    } else if (const auto *fl =
                   boost::get<x3::forward_ast<ast::ForLoop>>(&item)) {
      const ast::ForLoop &loop = fl->get();
      auto l = std::make_shared<ir::Loop>();
      l->var = loop.var.name;
      l->reverse = loop.reverse;
      l->loc = locOf(loop);
      l->lo = lower(loop.lo, scope);
      l->hi = lower(loop.hi, scope);
      if (!l->lo || !l->hi) {
        ok = false;
        continue;
      }
      l->lo = ir::fold(l->lo);
      l->hi = ir::fold(l->hi);
      if (!freshName(loop.var, scope)) {
        ok = false;
        continue;
      }
      l->slot = static_cast<unsigned>(schedule.slotNames.size());
      schedule.slotNames.push_back(loop.var.name);
      size_t mark = scope.size();
      scope.add(loop.var.name, l->slot, locOf(loop.var));
      for (const ast::Invariant &inv : loop.invariants)
        ok &= invariant(inv, schedule, scope, *l);
      ok &= body(loop.body, schedule, scope, l->body, ranks);
      scope.truncate(mark);
      out.emplace_back(std::move(l));
    } else if (const ast::BufferDecl *bd = boost::get<ast::BufferDecl>(&item)) {
      for (const ast::Identifier &name : bd->names) {
        if (llvm::any_of(schedule.buffers, [&](const ir::Buffer &b) {
              return b.name == name.name;
            })) {
          diags.error(locOf(name),
                      "buffer '" + name.name + "' is already declared",
                      rangeOf(name));
          ok = false;
          continue;
        }
        schedule.buffers.push_back({name.name});
      }
    } else if (const ast::ChunksDecl *cd =
                   boost::get<ast::ChunksDecl>(&item)) {
      if (schedule.chunks) {
        diags.error(locOf(*cd), "the chunk count is already given",
                    rangeOf(*cd));
        ok = false;
        continue;
      }
      // The chunk count may depend on the size and parameters only.
      Scope sizes;
      sizes.add("p", ir::SlotSize);
      for (const ir::Parameter &param : schedule.params)
        sizes.add(param.name, param.slot);
      ExprRef e = lower(cd->count, sizes);
      if (!e) {
        ok = false;
        continue;
      }
      e = ir::fold(e);
      if (e->isConst() && e->value < 1) {
        diags.error(locOf(*cd), "the chunk count must be at least 1, got " +
                                    std::to_string(e->value),
                    rangeOf(*cd));
        ok = false;
        continue;
      }
      schedule.chunks = e;
    }
  }
  return ok;
}

std::optional<ir::Step> Analyzer::step(const ast::Step &st,
                                       ir::Schedule &schedule, Scope &scope,
                                       std::optional<int64_t> ranks) {
  ir::Step out;
  out.loc = locOf(st);
  if (st.label)
    out.name = st.label->name;
  bool ok = true;
  for (const ast::StepItem &item : st.transfers) {
    if (const auto *t = boost::get<ast::Transfer>(&item)) {
      if (auto rule = transfer(*t, schedule, scope, ranks))
        out.rules.push_back(std::move(*rule));
      else
        ok = false;
    } else {
      ok &= ruleLoop(boost::get<ast::RuleLoop>(item), schedule, scope, ranks,
                     out.rules);
    }
  }
  if (!ok)
    return std::nullopt;
  return out;
}

/// The values a parameter can take in any member of a family: a hypercube's
/// dimension is at most 20 (maxRanks ranks), any other size at most
/// maxRanks.
static std::pair<int64_t, int64_t> parameterLimits(const ir::Schedule &s,
                                                   unsigned slot) {
  for (const ir::ExprRef &d : s.topology.dims)
    if (d->op == ir::ExprOp::Var && d->slot == slot &&
        s.topology.kind == TopologyKind::Hypercube)
      return {1, llvm::Log2_64(maxRanks)};
  return {1, maxRanks};
}

bool Analyzer::invariant(const ast::Invariant &inv, ir::Schedule &schedule,
                         Scope &scope, ir::Loop &loop) {
  unsigned buffer = 0;
  if (inv.buffer) {
    auto b = bufferIndex(schedule, *inv.buffer);
    if (!b)
      return false;
    buffer = *b;
  }
  if (llvm::any_of(loop.invariants,
                   [&](const ir::Invariant &i) { return i.buffer == buffer; })) {
    diags.error(locOf(inv),
                "buffer '" + schedule.buffers[buffer].name +
                    "' already has an invariant on this loop",
                rangeOf(inv));
    return false;
  }
  if (!schedule.contributorSlot) {
    schedule.contributorSlot = static_cast<unsigned>(schedule.slotNames.size());
    schedule.slotNames.push_back("contributor");
  }
  size_t mark = scope.size();
  scope.add("origin", ir::SlotOrigin);
  scope.add("dest", ir::SlotDest);
  scope.add("index", ir::SlotIndex);
  scope.add("contributor", *schedule.contributorSlot);
  ExprRef holds = lower(inv.holds, scope);
  scope.truncate(mark);
  if (!holds)
    return false;
  holds = ir::fold(holds);
  if (!ir::isReduction(schedule.collective.kind) &&
      ir::reads(*holds, *schedule.contributorSlot)) {
    diags.error(locOf(locatedOf(inv.holds)),
                "'contributor' names a contribution to a reduction; a "
                "chunk of " +
                    ir::collectiveKindName(schedule.collective.kind).str() +
                    " holds its origin's data only",
                rangeOf(locatedOf(inv.holds)));
    return false;
  }
  loop.invariants.push_back({buffer, holds, locOf(inv)});
  return true;
}

bool Analyzer::freshName(const ast::Identifier &var, const Scope &scope) {
  const Scope::Entry *e = scope.find(var.name);
  if (!e)
    return true;
  diags.error(locOf(var), "'" + var.name + "' is already defined",
              rangeOf(var));
  if (e->loc.isValid())
    diags.note(e->loc, "'" + var.name + "' defined here");
  else
    diags.note(locOf(var),
               "'r' is the sending rank and 'p' the number of ranks");
  return false;
}

bool Analyzer::ruleLoop(const ast::RuleLoop &loop, ir::Schedule &schedule,
                        Scope &scope, std::optional<int64_t> ranks,
                        std::vector<ir::TransferRule> &out) {
  // The loop is unrolled here, a rule per value, each guarded by the
  // bounds, so every later stage (simulator, prover, emitter) sees plain
  // rules. Unrolling covers every member the topology allows, not just the
  // declared range, so no member is ever missing a rule.
  constexpr int64_t maxRules = 64;
  if (!freshName(loop.var, scope))
    return false;
  ExprRef lo = lower(loop.lo, scope), hi = lower(loop.hi, scope);
  if (!lo || !hi)
    return false;
  lo = ir::fold(lo);
  hi = ir::fold(hi);
  std::vector<unsigned> slots;
  ir::collectSlots(*lo, slots);
  ir::collectSlots(*hi, slots);
  for (unsigned slot : slots)
    if (!llvm::any_of(schedule.params, [&](const ir::Parameter &q) {
          return q.slot == slot;
        }) ||
        slots.size() > 1) {
      diags.error(locOf(loop),
                  "the bounds of a loop inside a step may use constants and "
                  "one of the topology's parameters, not '" +
                      schedule.slotNames[slot] + "'",
                  rangeOf(loop));
      return false;
    }

  // The hull of lo .. hi over every value of the parameter.
  int64_t first = INT64_MAX, last = INT64_MIN;
  std::vector<int64_t> env(schedule.numSlots(), 0);
  auto [from, to] = slots.empty() ? std::pair<int64_t, int64_t>{0, 0}
                                  : parameterLimits(schedule, slots[0]);
  for (int64_t v = from; v <= to; ++v) {
    if (!slots.empty())
      env[slots[0]] = v;
    ir::EvalResult l = ir::evaluate(*lo, env), h = ir::evaluate(*hi, env);
    if (!l.ok() || !h.ok() || l.value > h.value)
      continue;
    first = std::min(first, l.value);
    last = std::max(last, h.value);
  }
  if (first > last)
    return true; // never runs
  if (last - first >= maxRules) {
    diags.error(locOf(loop),
                "a loop inside a step is unrolled for every size the "
                "topology allows, so it may run at most " +
                    llvm::Twine(maxRules) + " times; its bounds reach " +
                    llvm::Twine(first) + " .. " + llvm::Twine(last),
                rangeOf(loop));
    return false;
  }

  unsigned slot = static_cast<unsigned>(schedule.slotNames.size());
  schedule.slotNames.push_back(loop.var.name);
  size_t mark = scope.size();
  scope.add(loop.var.name, slot, locOf(loop.var));
  std::vector<ir::TransferRule> lowered;
  bool ok = true;
  for (const ast::Transfer &t : loop.transfers) {
    if (auto rule = transfer(t, schedule, scope, ranks))
      lowered.push_back(std::move(*rule));
    else
      ok = false;
  }
  scope.truncate(mark);
  if (!ok)
    return false;

  using ir::Expr;
  using ir::ExprOp;
  for (int64_t v = first; v <= last; ++v) {
    ExprRef value = Expr::constant(v);
    auto bind = [&](const ExprRef &e) -> ExprRef {
      if (!e)
        return e;
      return ir::fold(ir::substitute(
          e, [&](const Expr &x) { return x.slot == slot ? value : nullptr; }));
    };
    // lo <= v <= hi, each side dropped where it folds to true.
    auto conjoin = [](ExprRef a, ExprRef b) -> ExprRef {
      if (!a || (a->isConst() && a->value != 0))
        return b;
      if (!b || (b->isConst() && b->value != 0))
        return a;
      return ir::fold(Expr::binary(ExprOp::And, a, b));
    };
    ExprRef inRange =
        conjoin(ir::fold(Expr::binary(ExprOp::Le, lo, value)),
                ir::fold(Expr::binary(ExprOp::Le, value, hi)));
    if (inRange && inRange->isConst() && inRange->value == 0)
      continue;
    for (const ir::TransferRule &rule : lowered) {
      ir::TransferRule copy = rule;
      copy.peer = bind(rule.peer);
      copy.selector = bind(rule.selector);
      for (ir::Delivery &d : copy.into)
        d.when = bind(d.when);
      // The bounds first: `and` is evaluated left to right, and the guard
      // may be undefined outside them (a shift by d - j).
      copy.guard = conjoin(inRange, bind(rule.guard));
      out.push_back(std::move(copy));
    }
  }
  return true;
}

std::optional<ir::TransferRule>
Analyzer::transfer(const ast::Transfer &t, ir::Schedule &schedule,
                   Scope &scope, std::optional<int64_t> ranks) {
  ir::TransferRule rule;
  rule.loc = locOf(t);
  ExprRef src = lower(t.src, scope);
  ExprRef dst = lower(t.dst, scope);
  if (!src || !dst)
    return std::nullopt;
  src = ir::fold(src);
  dst = ir::fold(dst);

  // `r -> ...` is a rule for every rank; `a -> ...` with `a` free of `r` is
  // the rule guarded by r == a.
  bool symbolicSender = src->op == ExprOp::Var && src->slot == ir::SlotRank;
  if (!symbolicSender && ir::reads(*src, ir::SlotRank)) {
    diags.error(locOf(locatedOf(t.src)),
                "the sender must be 'r' (every rank) or an expression "
                "without 'r' (one rank)",
                rangeOf(locatedOf(t.src)));
    return std::nullopt;
  }
  if (!symbolicSender)
    rule.guard = ir::Expr::binary(ExprOp::Eq,
                                  ir::Expr::var("r", ir::SlotRank, src->loc),
                                  src, src->loc);
  rule.peer = dst;

  // Constant endpoints are checked here; symbolic ones by the verifier.
  auto checkRank = [&](const ExprRef &e, const ast::Operand &where) {
    if (!e->isConst() || !ranks)
      return true;
    if (e->value < 0 || e->value >= *ranks) {
      diags.error(locOf(locatedOf(where)),
                  "rank " + std::to_string(e->value) +
                      " is outside the topology (ranks 0.." +
                      std::to_string(*ranks - 1) + ")",
                  rangeOf(locatedOf(where)));
      return false;
    }
    return true;
  };
  if (!checkRank(src, t.src) || !checkRank(dst, t.dst))
    return std::nullopt;
  if (src->isConst() && dst->isConst() && src->value == dst->value) {
    diags.error(locOf(t), "rank " + std::to_string(src->value) +
                              " sends to itself",
                rangeOf(t));
    return std::nullopt;
  }

  // An irregular all-to-all's blocks have sizes only their sender and
  // receiver know, so each message is one: the sender's own block for the
  // receiver (001's patterns; the runtime's direct exchange moves it).
  if (schedule.collective.kind == ir::CollectiveKind::Alltoallv) {
    if (t.selector || t.from || !t.into.empty()) {
      diags.error(locOf(t),
                  "an alltoallv schedule's message is the sender's own block "
                  "for the receiver: no chunk filter, 'from' or 'into'",
                  rangeOf(t));
      return std::nullopt;
    }
    auto var = [&](const char *name, unsigned slot) {
      return ir::Expr::var(name, slot, dst->loc);
    };
    rule.selector = ir::Expr::binary(
        ExprOp::And,
        ir::Expr::binary(ExprOp::Eq, var("origin", ir::SlotOrigin),
                         var("r", ir::SlotRank), dst->loc),
        ir::Expr::binary(ExprOp::Eq, var("dest", ir::SlotDest), dst, dst->loc),
        dst->loc);
  }
  if (t.selector) {
    size_t mark = scope.size();
    scope.add("origin", ir::SlotOrigin);
    scope.add("dest", ir::SlotDest);
    scope.add("index", ir::SlotIndex);
    rule.selector = lower(*t.selector, scope);
    scope.truncate(mark);
    if (!rule.selector)
      return std::nullopt;
    rule.selector = ir::fold(rule.selector);
  }
  if (t.from) {
    auto b = bufferIndex(schedule, *t.from);
    if (!b)
      return std::nullopt;
    rule.fromBuffer = *b;
  }
  for (const ast::Target &target : t.into) {
    auto b = bufferIndex(schedule, target.buffer);
    if (!b)
      return std::nullopt;
    ir::Delivery d;
    d.buffer = *b;
    if (target.when) {
      d.when = lower(*target.when, scope);
      if (!d.when)
        return std::nullopt;
      d.when = ir::fold(d.when);
    }
    rule.into.push_back(d);
  }
  if (rule.into.empty())
    rule.into.push_back({rule.fromBuffer, nullptr});

  bool reduction = ir::isReduction(schedule.collective.kind);
  rule.mode = reduction ? ir::TransferMode::Reduce : ir::TransferMode::Copy;
  if (t.mode) {
    if (t.mode->name == "reduce" && !reduction) {
      diags.error(locOf(*t.mode),
                  "'reduce' needs a reducing collective; " +
                      ir::collectiveKindName(schedule.collective.kind) +
                      " combines nothing",
                  rangeOf(*t.mode));
      return std::nullopt;
    }
    rule.mode = t.mode->name == "reduce" ? ir::TransferMode::Reduce
                                         : ir::TransferMode::Copy;
  }
  if (t.guard) {
    ExprRef g = lower(*t.guard, scope);
    if (!g)
      return std::nullopt;
    g = ir::fold(g);
    rule.guard =
        rule.guard ? ir::Expr::binary(ExprOp::And, rule.guard, g, g->loc) : g;
  }
  return rule;
}

Program Analyzer::run(const ast::Program &ast) {
  for (const ast::Declaration &decl : ast.declarations) {
    if (auto *d = boost::get<ast::TopologyDecl>(&decl))
      topologyDecl(*d);
    else if (auto *d = boost::get<ast::ModelDecl>(&decl))
      modelDecl(*d);
    else if (auto *d = boost::get<ast::CollectiveDecl>(&decl))
      collectiveDecl(*d);
    else if (auto *d = boost::get<ast::ScheduleDecl>(&decl))
      scheduleDecl(*d);
  }
  return std::move(program);
}

} // namespace

Program collc::analyze(const ast::Program &ast, DiagnosticEngine &diags) {
  return Analyzer(diags).run(ast);
}

namespace {
llvm::Error reported(DiagnosticEngine &diags, const llvm::Twine &message) {
  diags.error(message);
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str());
}
} // namespace

llvm::Expected<Program>
collc::loadSource(std::unique_ptr<llvm::MemoryBuffer> buffer,
                  DiagnosticEngine &diags) {
  llvm::StringRef text = buffer->getBuffer();
  std::string name = buffer->getBufferIdentifier().str();
  if (text.size() > maxSourceBytes)
    return reported(diags, "'" + name + "' is " +
                               llvm::Twine(text.size() >> 20) +
                               " MiB; specifications are limited to " +
                               llvm::Twine(maxSourceBytes >> 20) + " MiB");
  if (text.find('\0') != llvm::StringRef::npos)
    return reported(diags, "'" + name +
                               "' is not a text file (it contains NUL bytes)");
  unsigned id =
      diags.getSourceMgr().AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  unsigned before = diags.errorCount();
  ast::Program ast = parseProgram(id, diags);
  Program program = analyze(ast, diags);
  if (diags.errorCount() != before)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "'%s' has errors", name.c_str());
  return program;
}

llvm::Expected<Program> collc::loadProgram(llvm::StringRef path,
                                           DiagnosticEngine &diags) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer)
    return reported(diags, "cannot read '" + path +
                               "': " + buffer.getError().message());
  return loadSource(std::move(*buffer), diags);
}
