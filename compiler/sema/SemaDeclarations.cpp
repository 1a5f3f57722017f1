// Sema: declarations of topologies, cost models and collectives.

#include "alltoallv/Patterns.h"
#include "library/Algorithms.h"
#include "sema/Analyzer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cctype>
#include <cmath>
#include <limits>

namespace collc::sema {

void Analyzer::declare(llvm::StringRef name, const ast::Identifier &id,
                       llvm::StringRef note) {
  auto [it, inserted] = names.try_emplace(
      name,
      Declared{locOf(id), note.empty() ? "'" + name.str() + "' declared here"
                                       : note.str()});
  if (!inserted) {
    diags.error(locOf(id), "'" + name + "' is already declared", rangeOf(id));
    diags.note(it->second.loc, it->second.note);
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

bool Analyzer::hypercubeOrder(const ast::Argument &arg,
                              ir::TopologyTemplate &t) {
  const ast::Identifier *id = asIdentifier(arg.value);
  if (!id || (id->name != "gray" && id->name != "natural")) {
    diags.error(locOf(locatedOf(arg.value)),
                "a hypercube's order is 'natural' (rank k is node k) or "
                "'gray' (rank k is node k ^ (k >> 1))",
                rangeOf(locatedOf(arg.value)));
    return false;
  }
  t.order = id->name == "gray" ? RankOrder::Gray : RankOrder::Natural;
  return true;
}

bool Analyzer::topologyDimension(const ast::Argument &arg,
                                 ir::Schedule *schedule, Scope *scope,
                                 std::vector<ExprRef> &dims) {
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
    dims.push_back(newParameter(*id, *schedule, *scope));
    return true;
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
  if (!e)
    return false;
  dims.push_back(ir::fold(e));
  return true;
}

bool Analyzer::topologyArguments(const ast::TopologyExpr &expr,
                                 ir::TopologyTemplate &t,
                                 ir::Schedule *schedule, Scope *scope) {
  llvm::StringRef paramName = topologyParamName(t.kind);
  bool multi = t.kind == TopologyKind::Mesh || t.kind == TopologyKind::Torus;
  bool ok = true;
  for (const ast::Argument &arg : expr.args) {
    // `order: gray` numbers a hypercube's ranks in Gray-code order (000
    // §4.6.2's linear array on the cube).
    if (arg.key && arg.key->name == "order" &&
        t.kind == TopologyKind::Hypercube) {
      ok &= hypercubeOrder(arg, t);
      continue;
    }
    if (arg.key && (multi || arg.key->name != paramName)) {
      diags.error(locOf(*arg.key),
                  expr.kind.name + " has no parameter '" + arg.key->name + "'" +
                      (multi ? "; give the dimensions by position, as in " +
                                   expr.kind.name + "(4, 4)"
                             : "; expected '" + paramName.str() + "'"),
                  rangeOf(*arg.key));
      ok = false;
      continue;
    }
    ok &= topologyDimension(arg, schedule, scope, t.dims);
  }
  return ok;
}

bool Analyzer::topologyArity(const ast::TopologyExpr &expr,
                             const ir::TopologyTemplate &t) {
  llvm::StringRef paramName = topologyParamName(t.kind);
  bool multi = t.kind == TopologyKind::Mesh || t.kind == TopologyKind::Torus;
  if (t.dims.empty() || (!multi && t.dims.size() != 1)) {
    diags.error(locOf(expr),
                multi ? expr.kind.name + " needs at least one dimension"
                      : expr.kind.name + " takes one parameter" +
                            (paramName == "n" ? ", the number of ranks"
                                              : ", '" + paramName.str() + "'") +
                            ", got " + std::to_string(t.dims.size()),
                rangeOf(expr));
    return false;
  }
  return true;
}

bool Analyzer::graphEdges(const ast::TopologyExpr &expr,
                          ir::TopologyTemplate &t) {
  if (expr.edges && t.kind != TopologyKind::Graph) {
    diags.error(locOf(expr.edges->front()),
                "only graph(...) takes a list of edges");
    return false;
  }
  if (expr.edges) {
    for (const ast::Edge &edge : *expr.edges) {
      auto a = number(edge.from), b = number(edge.to);
      if (!a || !b)
        return false;
      t.edges.emplace_back(*a, *b);
    }
  }
  return true;
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
  if (!topologyArguments(expr, t, schedule, scope))
    return std::nullopt;
  if (!topologyArity(expr, t) || !graphEdges(expr, t))
    return std::nullopt;
  return t;
}

/// Reports a Topology::make error at the topology's place.
std::optional<Topology> makeTopology(const ir::TopologyTemplate &t,
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
      diags.note(names.lookup(id->name).loc, names.lookup(id->name).note);
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

namespace {
/// The named arguments a collective of `kind` takes (`redistributes`: the
/// alltoall of a `redistribute(from:, to:)`).
std::vector<std::string> collectiveParameters(ir::CollectiveKind kind,
                                              bool redistributes) {
  std::vector<std::string> allowed = {"type"};
  if (redistributes) {
    allowed.push_back("from");
    allowed.push_back("to");
  }
  if (ir::isRooted(kind))
    allowed.push_back("root");
  if (ir::isReduction(kind)) {
    allowed.push_back("op");
    allowed.push_back("commutative");
  }
  if (kind == ir::CollectiveKind::Shift)
    allowed.push_back("q");
  if (kind == ir::CollectiveKind::Permute)
    allowed.push_back("to");
  return allowed;
}
} // namespace

bool Analyzer::numberArgument(const std::string &key, const ast::Argument &arg,
                              std::optional<int64_t> ranks, ir::Collective &c) {
  std::optional<int64_t> v = constant(arg.value, "'" + key + "'");
  if (!v)
    return false;
  bool ok = true;
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
    if (*v < 0 || (ranks && *v >= *ranks)) {
      diags.error(locOf(locatedOf(arg.value)),
                  "shift amount " + std::to_string(*v) + " must be in 0.." +
                      (ranks ? std::to_string(*ranks - 1) : "p-1"),
                  rangeOf(locatedOf(arg.value)));
      ok = false;
    }
    c.shift = *v;
  }
  return ok;
}

bool Analyzer::argumentsComplete(const ast::CollectiveExpr &expr,
                                 const ir::Collective &c, bool sawQ,
                                 bool sawAllocations) {
  const bool redistributes = expr.kind.name == "redistribute";
  if (c.kind == ir::CollectiveKind::Shift && !sawQ) {
    diags.error(locOf(expr), "shift needs its amount, as in shift(q: 1)",
                rangeOf(expr));
    return false;
  }
  if (c.kind == ir::CollectiveKind::Permute && !c.permuteTo) {
    diags.error(locOf(expr),
                "permute needs where each rank's block goes, as in "
                "permute(to: bitreverse(r, 3))",
                rangeOf(expr));
    return false;
  }
  if (redistributes && !sawAllocations) {
    diags.error(locOf(expr),
                "redistribute needs the allocation it moves from and the one "
                "it moves to, as in redistribute(from: block, to: cyclic)",
                rangeOf(expr));
    return false;
  }
  return true;
}

std::optional<ir::CollectiveKind>
Analyzer::collectiveKind(const ast::CollectiveExpr &expr, bool declaration) {
  // 004 §3: a redistribution is an all-to-all personalized exchange.
  const bool redistributes = expr.kind.name == "redistribute";
  if (redistributes && !declaration) {
    diags.error(locOf(expr.kind),
                "a schedule runs the all-to-all of a redistribution: write "
                "it for alltoall, and declare `collective NAME = "
                "redistribute(from: ..., to: ...) on T using SCHEDULE`",
                rangeOf(expr.kind));
    return std::nullopt;
  }
  std::optional<ir::CollectiveKind> kind =
      redistributes ? ir::CollectiveKind::Alltoall
                    : ir::parseCollectiveKind(expr.kind.name);
  if (!kind) {
    std::string kinds = ir::collectiveKindList();
    if (declaration) // "..., shift, permute or redistribute"
      kinds = kinds.replace(kinds.rfind(" or "), 4, ", ") + " or redistribute";
    diags.error(locOf(expr.kind),
                "unknown collective '" + expr.kind.name + "'; expected " +
                    kinds,
                rangeOf(expr.kind));
    return std::nullopt;
  }
  return kind;
}

bool Analyzer::freshArgument(const ast::CollectiveExpr &expr,
                             const ast::Argument &arg,
                             const std::vector<std::string> &allowed,
                             llvm::StringMap<llvm::SMLoc> &seen) {
  if (!arg.key) {
    diags.error(locOf(arg),
                "parameters of a collective are named, as in " +
                    expr.kind.name + "(" + allowed.back() + ": ...)",
                rangeOf(arg));
    return false;
  }
  const std::string &key = arg.key->name;
  if (!llvm::is_contained(allowed, key)) {
    std::string list;
    for (const std::string &a : allowed)
      list += (list.empty() ? "'" : ", '") + a + "'";
    diags.error(locOf(*arg.key),
                expr.kind.name + " has no parameter '" + key + "'; it takes " +
                    list,
                rangeOf(*arg.key));
    return false;
  }
  auto [it, fresh] = seen.try_emplace(key, locOf(*arg.key));
  if (!fresh) {
    diags.error(locOf(*arg.key), "parameter '" + key + "' given twice",
                rangeOf(*arg.key));
    diags.note(it->second, "first given here");
    return false;
  }
  return true;
}

bool Analyzer::collectiveArgument(const ast::Argument &arg,
                                  std::optional<int64_t> ranks,
                                  ir::Schedule *schedule, Scope *scope,
                                  bool redistributes, ir::Collective &c,
                                  Redistribution &moves, bool &sawQ) {
  const std::string &key = arg.key->name;
  if (key == "op" || key == "type" || key == "commutative")
    return wordArgument(key, arg, c);
  if (redistributes) { // `from` or `to`
    std::optional<Allocation> a = allocation(arg.value);
    if (a)
      (key == "from" ? moves.from : moves.to) = *a;
    return a.has_value();
  }
  if (key == "to")
    return permutationArgument(arg, ranks, scope, c);
  if (key == "q" && schedule && scope) {
    ExprRef amount = familyShift(arg.value, *schedule, *scope);
    if (!amount)
      return false;
    if (amount->op != ExprOp::Const) {
      sawQ = true;
      c.shiftOf = amount;
      return true;
    }
  }
  sawQ = sawQ || key == "q";
  return numberArgument(key, arg, ranks, c);
}

std::optional<ir::Collective>
Analyzer::collective(const ast::CollectiveExpr &expr,
                     std::optional<int64_t> ranks, ir::Schedule *schedule,
                     Scope *scope,
                     std::optional<Redistribution> *redistribution) {
  const bool redistributes = expr.kind.name == "redistribute";
  std::optional<ir::CollectiveKind> kind =
      collectiveKind(expr, redistribution != nullptr);
  if (!kind)
    return std::nullopt;
  ir::Collective c;
  c.kind = *kind;
  Redistribution moves;
  const std::vector<std::string> allowed =
      collectiveParameters(c.kind, redistributes);

  bool ok = true, sawQ = false;
  llvm::StringMap<llvm::SMLoc> seen;
  for (const ast::Argument &arg : expr.args) {
    if (!freshArgument(expr, arg, allowed, seen)) {
      ok = false;
      continue;
    }
    ok &= collectiveArgument(arg, ranks, schedule, scope, redistributes, c,
                             moves, sawQ);
  }
  ok = ok && argumentsComplete(expr, c, sawQ,
                               redistributes && seen.count("from") &&
                                   seen.count("to"));
  if (redistributes)
    *redistribution = moves;
  if (c.op == "user" && !seen.count("commutative") && ok) {
    // A user operator's algebra is unknown: assume the weaker case.
    c.commutative = false;
  }
  if (!ok)
    return std::nullopt;
  return c;
}

std::optional<int64_t> Analyzer::segmentBytes(const ast::Field &field,
                                              int64_t after) {
  // A size in bytes: 8KiB, 4096B.
  const ast::Quantity *q = boost::get<ast::Quantity>(&field.value);
  const double n = q ? std::strtod(q->number.c_str(), nullptr) : -1;
  const double unit = !q ? -1
                         : llvm::StringSwitch<double>(q->unit)
                               .Case("B", 1)
                               .Case("KiB", 1024)
                               .Case("MiB", 1024 * 1024)
                               .Case("GiB", 1024.0 * 1024 * 1024)
                               .Default(-1);
  const double bytes = n * unit;
  if (!q || unit < 0 || bytes != std::floor(bytes) || bytes > 1e18) {
    diags.error(locOf(field),
                "'segment' needs the size it starts at in bytes, such "
                "as 8KiB (B, KiB, MiB or GiB)",
                rangeOf(field));
    return std::nullopt;
  }
  if (bytes <= static_cast<double>(after)) {
    diags.error(locOf(field),
                "segment sizes must increase, each above 0; this one is " +
                    llvm::Twine(static_cast<int64_t>(bytes)) +
                    " bytes, after " + llvm::Twine(after),
                rangeOf(field));
    return std::nullopt;
  }
  return static_cast<int64_t>(bytes);
}

std::optional<bool> Analyzer::machineField(const ast::Field &field,
                                           CostModel &model) {
  const std::string &key = field.key.name;
  const ast::Quantity *q = boost::get<ast::Quantity>(&field.value);
  const ast::Identifier *word = boost::get<ast::Identifier>(&field.value);
  auto refuse = [&](const char *message) {
    diags.error(locOf(field), message, rangeOf(field));
    return false;
  };
  if (key == "ports") {
    if (!word || (word->name != "single" && word->name != "all"))
      return refuse("ports must be 'single' or 'all'");
    model.ports = word->name == "all" ? PortModel::All : PortModel::Single;
    return true;
  }
  if (key == "copies") {
    if (!word || (word->name != "sender" && word->name != "receiver"))
      return refuse("copies must be 'sender' or 'receiver'");
    model.machine.copies =
        word->name == "receiver" ? CopyModel::Receiver : CopyModel::Sender;
    return true;
  }
  if (key == "serve") {
    const double x = q ? std::strtod(q->number.c_str(), nullptr) : -1;
    if (!q || !q->unit.empty() || !(x >= 0 && x <= 1))
      return refuse("'serve' must be a number from 0 to 1, such as 0.2");
    model.machine.serve = x;
    return true;
  }
  if (key == "cores") {
    const double n = q ? std::strtod(q->number.c_str(), nullptr) : 0;
    if (!q || !q->unit.empty() || n < 1 || n > (1 << 20) || n != std::floor(n))
      return refuse("'cores' must be a whole number from 1 to 1048576, "
                    "such as 2");
    model.machine.cores = static_cast<int64_t>(n);
    return true;
  }
  return std::nullopt;
}

std::optional<double> Analyzer::modelTime(const ast::Field &field) {
  const std::string &key = field.key.name;
  const ast::Quantity *q = boost::get<ast::Quantity>(&field.value);
  if (!q) {
    diags.error(locOf(field),
                "expected a quantity such as " +
                    llvm::Twine(key != "tw" ? "10us" : "2ns/byte"),
                rangeOf(field));
    return std::nullopt;
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
    diags.error(
        llvm::SMLoc::getFromPointer(q->begin),
        key != "tw"
            ? "'" + key + "' needs a time unit: s, ms, us, ns or ps"
            : std::string("'tw' needs a time per byte, such as 2ns/byte"),
        rangeOf(*q));
    return std::nullopt;
  }
  if (!std::isfinite(value * scale)) {
    diags.error(llvm::SMLoc::getFromPointer(q->begin), "quantity out of range",
                rangeOf(*q));
    return std::nullopt;
  }
  return value * scale;
}

bool Analyzer::segmentComplete(const ast::Field *segmentStart, bool hasTs,
                               bool hasTw) {
  if (!segmentStart || (hasTs && hasTw))
    return true;
  diags.error(locOf(*segmentStart),
              "the segment opened here needs " +
                  llvm::Twine(!hasTs ? "'ts'" : "'tw'") +
                  " before the next segment or the model's end",
              rangeOf(*segmentStart));
  return false;
}

bool Analyzer::segmentField(const ast::Field &field, CostModel &model,
                            const ast::Field *&segmentStart, bool &hasTs,
                            bool &hasTw) {
  const int64_t after =
      model.larger.empty() ? 0 : model.larger.back().fromBytes;
  std::optional<int64_t> bytes = segmentBytes(field, after);
  if (bytes && !segmentStart && (!hasTs || !hasTw)) {
    diags.error(locOf(field),
                "give the first segment's 'ts' and 'tw' before 'segment'",
                rangeOf(field));
    bytes.reset();
  }
  const bool ok = segmentComplete(segmentStart, hasTs, hasTw) && bytes;
  // A segment in error still takes the fields after it, so that they
  // are not mistaken for the previous segment's.
  model.larger.push_back({bytes.value_or(after + 1), 0, 0});
  segmentStart = &field;
  hasTs = hasTw = false;
  return ok;
}

bool Analyzer::modelField(const ast::Field &field, CostModel &model,
                          llvm::StringMap<llvm::SMLoc> &seen, bool inSegment,
                          bool &hasTs, bool &hasTw) {
  const std::string &key = field.key.name;
  // ts and tw once in each segment.
  const std::string seenKey =
      (key == "ts" || key == "tw") && inSegment
          ? key + " from " + std::to_string(model.larger.size())
          : key;
  auto [it, fresh] = seen.try_emplace(seenKey, locOf(field.key));
  if (!fresh) {
    diags.error(locOf(field.key), "field '" + key + "' given twice",
                rangeOf(field.key));
    diags.note(it->second, "first given here");
    return false;
  }
  if (std::optional<bool> set = machineField(field, model))
    return *set;
  if (key != "ts" && key != "tw" && key != "to") {
    diags.error(locOf(field.key),
                "a model has no field '" + key +
                    "'; it takes 'ts', 'tw', 'to', 'segment', 'ports', "
                    "'cores', 'copies' and 'serve'",
                rangeOf(field.key));
    return false;
  }
  std::optional<double> seconds = modelTime(field);
  if (!seconds)
    return false;
  if (key == "to") {
    model.to = *seconds;
    return true;
  }
  double &ts = model.larger.empty() ? model.ts : model.larger.back().ts;
  double &tw =
      model.larger.empty() ? model.twPerByte : model.larger.back().twPerByte;
  (key == "ts" ? ts : tw) = *seconds;
  (key == "ts" ? hasTs : hasTw) = true;
  return true;
}

void Analyzer::modelDecl(const ast::ModelDecl &decl) {
  declare(decl.name.name, decl.name);
  CostModel model;
  model.name = decl.name.name;
  model.loc = locOf(decl);
  bool ok = true, hasTs = false, hasTw = false;
  // The segment `ts` and `tw` go to: the first, or the last one opened.
  const ast::Field *segmentStart = nullptr;
  llvm::StringMap<llvm::SMLoc> seen;
  for (const ast::Field &field : decl.fields) {
    if (field.key.name == "segment") {
      ok = segmentField(field, model, segmentStart, hasTs, hasTw) && ok;
      continue;
    }
    const bool inSegment = segmentStart != nullptr;
    ok = modelField(field, model, seen, inSegment, hasTs, hasTw) && ok;
  }
  if (segmentStart)
    ok = segmentComplete(segmentStart, hasTs, hasTw) && ok;
  // t_o and serve price groups of steps where receivers copy, and only
  // there (cost::ScheduleCost::line).
  if (ok && model.machine.copies != CopyModel::Receiver &&
      (model.to || model.machine.serve > 0))
    diags.warning(locOf(decl.name),
                  "model '" + decl.name.name +
                      "': 'to' and 'serve' price only where receivers copy; "
                      "without 'copies: receiver' they change nothing",
                  rangeOf(decl.name));
  if (ok && !segmentStart && (!hasTs || !hasTw)) {
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
                                ir::CollectiveKind kind, TopologyKind topology,
                                llvm::StringRef topologyName) {
  const library::Algorithm *info = library::findAlgorithm(algo.name);
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
  if (!library::runsOn(*info, kind, topology)) {
    diags.error(locOf(algo),
                "algorithm '" + algo.name + "' does not run on " +
                    topologyName.str(),
                rangeOf(algo));
    return false;
  }
  return true;
}

bool Analyzer::wordArgument(const std::string &key, const ast::Argument &arg,
                            ir::Collective &c) {
  const ast::Identifier *word = asIdentifier(arg.value);
  bool ok = true;
  if (!word) {
    diags.error(locOf(locatedOf(arg.value)),
                "expected a name for '" + key + "'",
                rangeOf(locatedOf(arg.value)));
    return false;
  }
  // A name from the language's list, else an error that gives the list.
  auto known = [&](bool isKnown, llvm::StringRef what, llvm::StringRef list) {
    if (!isKnown)
      diags.error(locOf(*word),
                  "unknown " + what + " '" + word->name + "'; expected " + list,
                  rangeOf(*word));
    ok &= isKnown;
  };
  if (key == "op") {
    known(isKnownOperator(word->name), "operator",
          "sum, prod, min, max, land, lor, lxor, band, bor, bxor, maxloc, "
          "minloc or user");
    c.op = word->name;
  } else if (key == "type") {
    known(isKnownType(word->name), "type",
          "i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, f80, c64, c128 or "
          "byte");
    c.type = word->name;
  } else {
    if (word->name != "true" && word->name != "false") {
      diags.error(locOf(*word), "expected true or false", rangeOf(*word));
      ok = false;
    }
    c.commutative = word->name == "true";
  }
  return ok;
}

bool Analyzer::permutationArgument(const ast::Argument &arg,
                                   std::optional<int64_t> ranks, Scope *scope,
                                   ir::Collective &c) {
  bool ok = true;
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
  return ok;
}

std::optional<Allocation> Analyzer::allocation(const ast::Operand &value) {
  const ast::Located &at = locatedOf(value);
  auto expected = [&]() -> std::optional<Allocation> {
    diags.error(locOf(at),
                "expected an allocation: block, cyclic or block_cyclic(b)",
                rangeOf(at));
    return std::nullopt;
  };
  using Kind = Allocation::Kind;
  if (const ast::Identifier *word = asIdentifier(value)) {
    if (word->name == "block")
      return Allocation{Kind::Block, 1};
    if (word->name == "cyclic")
      return Allocation{Kind::Cyclic, 1};
    return expected();
  }
  const ast::Call *call = asCall(value);
  if (!call || call->function.name != "block_cyclic")
    return expected();
  if (call->args.size() != 1) {
    diags.error(locOf(*call),
                "block_cyclic takes one argument, the elements in a block",
                rangeOf(*call));
    return std::nullopt;
  }
  std::optional<int64_t> b = constant(call->args[0], "the block");
  if (!b)
    return std::nullopt;
  // A rank's share is an MPI count, an int.
  constexpr int64_t largest = std::numeric_limits<int>::max();
  if (*b < 1 || *b > largest) {
    const ast::Located &arg = locatedOf(call->args[0]);
    diags.error(locOf(arg),
                "a block of block_cyclic holds 1.." + std::to_string(largest) +
                    " elements, not " + std::to_string(*b),
                rangeOf(arg));
    return std::nullopt;
  }
  return Allocation{Kind::BlockCyclic, *b};
}

void Analyzer::collectiveDecl(const ast::CollectiveDecl &decl) {
  declare(decl.name.name, decl.name);
  std::optional<Topology> topo = concreteTopology(decl.on);
  std::optional<Redistribution> redistribution;
  std::optional<ir::Collective> c = collective(
      decl.what, topo ? std::optional(topo->numRanks()) : std::nullopt, nullptr,
      nullptr, &redistribution);
  if (!topo || !c)
    return;
  CollectiveDef def;
  def.name = decl.name.name;
  def.collective = *c;
  def.redistribution = redistribution;
  if (redistribution) // the all-to-all it runs has a function of its own
    declare(def.collectiveFunction(), decl.name,
            "'" + def.collectiveFunction() + "' runs the exchange of '" +
                def.name + "', declared here");
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
                        ir::collectiveKindName(s->collective.kind) + ", not " +
                        ir::collectiveKindName(c->kind),
                    rangeOf(*decl.algorithm));
        diags.note(s->loc, "'" + def.algorithm + "' declared here");
        return;
      }
    } else if (!libraryAlgorithm(*decl.algorithm, c->kind, topo->kind(),
                                 topo->describe())) {
      return;
    }
  }
  // An irregular all-to-all runs a pattern of 001 §3 built for this P:
  // whether it exists (A3 needs a square) and is small enough to build.
  if (c->kind == ir::CollectiveKind::Alltoallv &&
      !program.findSchedule(def.algorithm))
    if (std::optional<alltoallv::Algorithm> algorithm =
            alltoallv::algorithmFor(def.algorithm))
      if (llvm::Error e = alltoallv::checkRanks(*algorithm, topo->numRanks())) {
        // At `using NAME`, or without one at the topology it is too big for.
        const ast::Located *at = nullptr;
        if (decl.algorithm)
          at = &*decl.algorithm;
        else if (const auto *id = boost::get<ast::Identifier>(&decl.on))
          at = id;
        else
          at = &boost::get<ast::TopologyExpr>(decl.on);
        diags.error(locOf(*at), llvm::toString(std::move(e)), rangeOf(*at));
        return;
      }
  program.collectives.push_back(std::move(def));
}

} // namespace collc::sema
