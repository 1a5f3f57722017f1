#pragma once
// The .coll abstract syntax tree: plain structs filled by the X3 grammar
// (syntax/Grammar.cpp). Every node records where it starts and ends in the
// source buffer so diagnostics can point at it.

#include <boost/spirit/home/x3/support/ast/variant.hpp>

#include <boost/optional.hpp>
#include <string>
#include <vector>

namespace collc::ast {

namespace x3 = boost::spirit::x3;

/// Source range [begin, end) inside the SourceMgr buffer being parsed.
struct Located {
  const char *begin = nullptr;
  const char *end = nullptr;
};

struct Identifier : Located {
  std::string name;
};

/// A whole number as written; sema converts it and reports overflow.
struct Number : Located {
  std::string digits;
};

struct Unary;
struct Chain;
struct Call;
struct Conditional;

struct Operand : x3::variant<Number, Identifier, x3::forward_ast<Call>,
                             x3::forward_ast<Unary>, x3::forward_ast<Chain>,
                             x3::forward_ast<Conditional>> {
  using base_type::base_type;
  using base_type::operator=;
};
using Expr = Operand;

/// `op operand` inside a Chain.
struct Operation : Located {
  std::string op;
  Operand operand;
};

/// first (op operand)*: the operators of one precedence level, left to right.
struct Chain : Located {
  Operand first;
  std::vector<Operation> rest;
};

/// Prefix operators (`-`, `~`, `not`), innermost last.
struct Unary : Located {
  std::vector<std::string> ops;
  Operand operand;
};

/// min(a, b), max(a, b), ...
struct Call : Located {
  Identifier function;
  std::vector<Operand> args;
};

/// cond ? a : b ? c : d  ==  cond ? a : (b ? c : d)
struct Branch : Located {
  Operand value;
  Operand next;
};
struct Conditional : Located {
  Operand condition;
  std::vector<Branch> branches; // never empty
};

/// `key: value` or a positional `value`.
struct Argument : Located {
  boost::optional<Identifier> key;
  Expr value;
};

struct Edge : Located {
  Number from;
  Number to;
};

/// ring(8), hypercube(dim: 3), graph(6) { 0-1, 1-2 }
struct TopologyExpr : Located {
  Identifier kind;
  std::vector<Argument> args;
  boost::optional<std::vector<Edge>> edges;
};

/// A topology written in place, or the name of a declared one.
struct TopologyRef : x3::variant<TopologyExpr, Identifier> {
  using base_type::base_type;
  using base_type::operator=;
};

struct TopologyDecl : Located {
  Identifier name;
  TopologyExpr value;
};

/// 10us, 2ns/byte, 1.5e9
struct Quantity : Located {
  std::string number;
  std::string unit;
};

struct FieldValue : x3::variant<Quantity, Identifier> {
  using base_type::base_type;
  using base_type::operator=;
};

struct Field : Located {
  Identifier key;
  FieldValue value;
};

struct ModelDecl : Located {
  Identifier name;
  std::vector<Field> fields;
};

/// broadcast(root: 0), allreduce(op: sum, type: f64), alltoall
struct CollectiveExpr : Located {
  Identifier kind;
  std::vector<Argument> args;
};

struct CollectiveDecl : Located {
  Identifier name;
  CollectiveExpr what;
  TopologyRef on;
  boost::optional<Identifier> algorithm;
};

/// A buffer a transfer delivers into, optionally only when a condition holds.
struct Target : Located {
  Identifier buffer;
  boost::optional<Expr> when;
};

/// src -> dst [: selector] [from B] [into T, ...] [copy|reduce] [when guard]
struct Transfer : Located {
  Expr src;
  Expr dst;
  boost::optional<Expr> selector;
  boost::optional<Identifier> from;
  std::vector<Target> into;
  boost::optional<Identifier> mode;
  boost::optional<Expr> guard;
};

/// `for j in 0 .. d - 1 { r -> r ^ (1 << j) : index == j }` inside a step:
/// the transfers once for every j, all in the same step (004's all-port
/// algorithms send on every dimension at once).
struct RuleLoop : Located {
  Identifier var;
  Expr lo;
  Expr hi;
  std::vector<Transfer> transfers;
};

struct StepItem : x3::variant<Transfer, RuleLoop> {
  using base_type::base_type;
  using base_type::operator=;
};

struct Step : Located {
  boost::optional<Identifier> label;
  std::vector<StepItem> transfers;
};

struct ForLoop;

/// buffer msg, tmp;
struct BufferDecl : Located {
  std::vector<Identifier> names;
};

/// chunks p;
struct ChunksDecl : Located {
  Expr count;
};

/// result, acc starts empty;
struct StartsEmptyDecl : Located {
  std::vector<Identifier> names;
};

struct BodyItem : x3::variant<Step, x3::forward_ast<ForLoop>, BufferDecl,
                              ChunksDecl, StartsEmptyDecl> {
  using base_type::base_type;
  using base_type::operator=;
};

/// `invariant [buffer:] expr` on a loop: which chunks (and, for a
/// reduction, which contributions `from`) a buffer holds at the head of
/// every iteration.
struct Invariant : Located {
  boost::optional<Identifier> buffer;
  Expr holds;
};

/// for i in [reverse] lo .. hi [invariant ...]* { ... }
struct ForLoop : Located {
  Identifier var;
  bool reverse = false;
  Expr lo;
  Expr hi;
  std::vector<Invariant> invariants;
  std::vector<BodyItem> body;
};

/// A parameter's range in the schedule header: `where d in 1 .. 16`.
struct ParamRange : Located {
  Identifier name;
  Expr lo;
  Expr hi;
};

/// `= hypercube_scatter then hypercube_allgather;`: a schedule made of
/// others, run one after the other on the pieces of a split message.
struct Composition : Located {
  Identifier first;
  std::vector<Identifier> rest;
};

/// Steps written out, or a composition of other schedules.
struct ScheduleBody
    : x3::variant<std::vector<BodyItem>, Composition> {
  using base_type::base_type;
  using base_type::operator=;
};

struct ScheduleDecl : Located {
  Identifier name;
  CollectiveExpr what;
  TopologyRef on;
  boost::optional<Identifier> algorithm; // `using ALGO`: what it implements
  std::vector<ParamRange> ranges;
  ScheduleBody body;
};

struct Declaration
    : x3::variant<TopologyDecl, ModelDecl, CollectiveDecl, ScheduleDecl> {
  using base_type::base_type;
  using base_type::operator=;
};

struct Program {
  std::vector<Declaration> declarations;
};

} // namespace collc::ast
