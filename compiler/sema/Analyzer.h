#pragma once
// Sema's analyzer, shared by its parts: Sema.cpp (the tables, the
// entry points), SemaExpressions.cpp, SemaDeclarations.cpp (topologies,
// models, collectives) and SemaSchedules.cpp (schedule bodies). Internal
// to compiler/sema.

#include "sema/Sema.h"

#include "syntax/Parser.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <boost/variant/static_visitor.hpp>

#include <functional>
#include <optional>

namespace collc::sema {

namespace x3 = boost::spirit::x3;
using ir::ExprOp;
using ir::ExprRef;

inline llvm::SMLoc locOf(const ast::Located &node) {
  return llvm::SMLoc::getFromPointer(node.begin);
}
inline llvm::SMRange rangeOf(const ast::Located &node) {
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

inline const ast::Located &locatedOf(const ast::Operand &operand) {
  return boost::apply_visitor(LocatedOf(), operand);
}

/// The operand itself when it is a bare name (the grammar wraps every operand
/// in one node per precedence level; those with no operators are looked
/// through).
const ast::Identifier *asIdentifier(const ast::Operand &operand);
/// The operand itself when it is a bare call, `f(a, b)`.
const ast::Call *asCall(const ast::Operand &operand);

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
  /// Declares `name` at `id`; a later clash notes `note` there (default:
  /// "NAME declared here").
  void declare(llvm::StringRef name, const ast::Identifier &id,
               llvm::StringRef note = "");
  void topologyDecl(const ast::TopologyDecl &decl);
  void modelDecl(const ast::ModelDecl &decl);
  /// A model's `segment: SIZE`, opened in `model`; false after an error.
  bool segmentField(const ast::Field &field, CostModel &model,
                    const ast::Field *&segmentStart, bool &hasTs, bool &hasTw);
  /// Whether an open segment has its `ts` and `tw`; reports the one missing.
  bool segmentComplete(const ast::Field *segmentStart, bool hasTs, bool hasTw);
  /// A model's other field into `model`; false after reporting what is wrong.
  bool modelField(const ast::Field &field, CostModel &model,
                  llvm::StringMap<llvm::SMLoc> &seen, bool inSegment,
                  bool &hasTs, bool &hasTw);
  /// The size a model's `segment: SIZE` starts at, above `after`; reports
  /// why not.
  std::optional<int64_t> segmentBytes(const ast::Field &field, int64_t after);
  /// A model's `ports`, `copies`, `serve` or `cores` set in `model`: true,
  /// or false with the error reported; nothing for another field.
  std::optional<bool> machineField(const ast::Field &field, CostModel &model);
  /// A model's `ts`, `tw` or `to` in seconds (per byte for `tw`); reports
  /// a missing or wrong unit.
  std::optional<double> modelTime(const ast::Field &field);
  void collectiveDecl(const ast::CollectiveDecl &decl);
  /// Whether `algo` names a library algorithm for `kind` on `topology`;
  /// reports why not.
  bool libraryAlgorithm(const ast::Identifier &algo, ir::CollectiveKind kind,
                        TopologyKind topology, llvm::StringRef topologyName);
  void scheduleDecl(const ast::ScheduleDecl &decl);
  /// The schedule's topology into `s.topology`: a named one, or a family
  /// whose sizes become `s`'s parameters; `ranks` where it is concrete.
  /// False after an error.
  bool scheduleTopology(const ast::ScheduleDecl &decl, ir::Schedule &s,
                        Scope &scope, std::optional<int64_t> &ranks);
  /// `where d in 1 .. 16`: each parameter's range. False after an error.
  bool parameterRanges(const ast::ScheduleDecl &decl, ir::Schedule &s);

  std::optional<Topology> concreteTopology(const ast::TopologyRef &ref);
  std::optional<ir::TopologyTemplate>
  topologyTemplate(const ast::TopologyExpr &expr, ir::Schedule *schedule,
                   Scope *scope);
  /// A topology's arguments into `t`; false after reporting an error.
  bool topologyArguments(const ast::TopologyExpr &expr, ir::TopologyTemplate &t,
                         ir::Schedule *schedule, Scope *scope);
  /// A hypercube's `order: natural` or `gray` into `t`; reports another.
  bool hypercubeOrder(const ast::Argument &arg, ir::TopologyTemplate &t);
  /// One dimension into `dims`, in a schedule's header maybe a parameter.
  bool topologyDimension(const ast::Argument &arg, ir::Schedule *schedule,
                         Scope *scope, std::vector<ExprRef> &dims);
  /// Whether `t` has the dimensions its kind takes; reports it if not.
  bool topologyArity(const ast::TopologyExpr &expr,
                     const ir::TopologyTemplate &t);
  /// A graph's edges into `t`; false after an error (or another kind's).
  bool graphEdges(const ast::TopologyExpr &expr, ir::TopologyTemplate &t);
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
  /// A collective as declared or in a schedule's header. A declaration
  /// passes `redistribution`, where `redistribute(from:, to:)` leaves its
  /// allocations (the collective is then the alltoall it runs).
  std::optional<ir::Collective>
  collective(const ast::CollectiveExpr &expr, std::optional<int64_t> ranks,
             ir::Schedule *schedule = nullptr, Scope *scope = nullptr,
             std::optional<Redistribution> *redistribution = nullptr);
  /// The kind a collective names (redistribute in a `declaration` only).
  std::optional<ir::CollectiveKind>
  collectiveKind(const ast::CollectiveExpr &expr, bool declaration);
  /// Whether `arg` has a name in `allowed` not yet in `seen`; reports why not.
  bool freshArgument(const ast::CollectiveExpr &expr, const ast::Argument &arg,
                     const std::vector<std::string> &allowed,
                     llvm::StringMap<llvm::SMLoc> &seen);
  /// One named argument into `c` or `moves`; false after reporting an error.
  bool collectiveArgument(const ast::Argument &arg,
                          std::optional<int64_t> ranks, ir::Schedule *schedule,
                          Scope *scope, bool redistributes, ir::Collective &c,
                          Redistribution &moves, bool &sawQ);
  /// A collective's `op`, `type` or `commutative` argument into `c`;
  /// false after reporting what is wrong with it.
  bool wordArgument(const std::string &key, const ast::Argument &arg,
                    ir::Collective &c);
  /// A collective's `root` or constant `q` into `c`; false after
  /// reporting a value that is not a number or is outside the topology.
  bool numberArgument(const std::string &key, const ast::Argument &arg,
                      std::optional<int64_t> ranks, ir::Collective &c);
  /// Whether `c` has the arguments its kind needs (a shift's amount,
  /// permute's `to:`, a redistribution's two allocations); false after
  /// reporting the one missing.
  bool argumentsComplete(const ast::CollectiveExpr &expr,
                         const ir::Collective &c, bool sawQ,
                         bool sawAllocations);
  /// permute's `to:` into `c`: lowered, spelled for messages, and on a
  /// topology of known size checked to be a bijection.
  bool permutationArgument(const ast::Argument &arg,
                           std::optional<int64_t> ranks, Scope *scope,
                           ir::Collective &c);
  /// `block`, `cyclic` or `block_cyclic(b)`.
  std::optional<Allocation> allocation(const ast::Operand &value);

  // Schedule bodies.
  bool body(const std::vector<ast::BodyItem> &items, ir::Schedule &schedule,
            Scope &scope, std::vector<ir::BodyItem> &out,
            std::optional<int64_t> ranks);
  /// A `for` loop into `out` (left out after a bad bound or name).
  bool forLoop(const ast::ForLoop &loop, ir::Schedule &schedule, Scope &scope,
               std::vector<ir::BodyItem> &out, std::optional<int64_t> ranks);
  /// `buffer a, b;`: each new buffer; false after reporting a duplicate.
  bool bufferDecl(const ast::BufferDecl &decl, ir::Schedule &schedule);
  /// `a, b starts empty;`: marks each buffer; false after an error.
  bool startsEmptyDecl(const ast::StartsEmptyDecl &decl,
                       ir::Schedule &schedule);
  /// `chunks N;` into `schedule.chunks`; false after an error.
  bool chunksDecl(const ast::ChunksDecl &decl, ir::Schedule &schedule);
  std::optional<ir::Step> step(const ast::Step &step, ir::Schedule &schedule,
                               Scope &scope, std::optional<int64_t> ranks);
  /// Whether a loop variable's name is free here; reports it if not.
  bool freshName(const ast::Identifier &var, const Scope &scope);
  /// Lowers `inv` into `loop`, over the loop's scope and a chunk's
  /// coordinates (and `from`, for a reduction).
  bool invariant(const ast::Invariant &inv, ir::Schedule &schedule,
                 Scope &scope, ir::Loop &loop);
  bool ruleLoop(const ast::RuleLoop &loop, ir::Schedule &schedule, Scope &scope,
                std::optional<int64_t> ranks,
                std::vector<ir::TransferRule> &out);
  /// A rule loop's variable, fresh, and its bounds, over constants and one
  /// parameter (into `slots`).
  bool ruleLoopBounds(const ast::RuleLoop &loop, const ir::Schedule &schedule,
                      const Scope &scope, ExprRef &lo, ExprRef &hi,
                      std::vector<unsigned> &slots);
  /// A rule loop's transfers into `lowered`, its variable in `slot`.
  bool ruleLoopTransfers(const ast::RuleLoop &loop, ir::Schedule &schedule,
                         Scope &scope, std::optional<int64_t> ranks,
                         unsigned slot, std::vector<ir::TransferRule> &lowered);
  std::optional<ir::TransferRule> transfer(const ast::Transfer &t,
                                           ir::Schedule &schedule, Scope &scope,
                                           std::optional<int64_t> ranks);
  /// A transfer's sender (as the rule's guard) and receiver (its peer);
  /// false after reporting a bad sender or a constant rank out of place.
  bool transferEndpoints(const ast::Transfer &t, const Scope &scope,
                         std::optional<int64_t> ranks, ir::TransferRule &rule);
  /// Whether rank `e` lies in a topology of `ranks` ranks (a symbolic rank
  /// or an unknown size passes); reports it at `where` if not.
  bool rankInTopology(const ExprRef &e, const ast::Operand &where,
                      std::optional<int64_t> ranks);
  /// The transfer's block filter into `rule.selector` (an alltoallv's
  /// default included); false after an error.
  bool transferSelector(const ast::Transfer &t, const ir::Schedule &schedule,
                        Scope &scope, ir::TransferRule &rule);
  /// The transfer's `from` buffer and deliveries; false after an error.
  bool transferBuffers(const ast::Transfer &t, const ir::Schedule &schedule,
                       const Scope &scope, ir::TransferRule &rule);
  /// Copy or reduce, by the collective or an explicit word; false after
  /// reporting `reduce` in a collective that combines nothing.
  bool transferMode(const ast::Transfer &t, const ir::Schedule &schedule,
                    ir::TransferRule &rule);
  std::optional<unsigned> bufferIndex(const ir::Schedule &schedule,
                                      const ast::Identifier &id);

  // Expressions.
  ExprRef lower(const ast::Operand &operand, const Scope &scope);
  /// While set, what `lower` makes of a name not in scope (null: an error).
  std::function<ExprRef(const ast::Identifier &)> unknownName;
  /// min, max, ceil_log2 and 004's address maps.
  ExprRef lowerCall(const ast::Call &call, const Scope &scope);
  /// gray, gray_inverse, subcube_invert, bitreverse, shuffle: spelled in
  /// shifts and bitwise operators (bitreverse an operator of its own), so
  /// every stage already reads them.
  ExprRef lowerAddressMap(const ast::Call &call, unsigned arity,
                          const Scope &scope);
  ExprRef lowerChain(const ast::Chain &chain, const Scope &scope);
  /// `e`, or null (reported at `loc`) when it is deeper than maxExprDepth.
  ExprRef capDepth(ExprRef e, const ast::Located &where);
  std::optional<int64_t> constant(const ast::Operand &operand,
                                  llvm::StringRef what);
  std::optional<int64_t> number(const ast::Number &n);

  DiagnosticEngine &diags;
  Program program;
  struct Declared {
    llvm::SMLoc loc;
    std::string note; // what a clash's note says of it
  };
  llvm::StringMap<Declared> names; // every declared name
  // Topologies whose declaration has been reported as wrong: their uses
  // say nothing more.
  llvm::StringSet<> badTopologies;
};

/// Reports a Topology::make error at the topology's place.
std::optional<Topology> makeTopology(const ir::TopologyTemplate &t,
                                     DiagnosticEngine &diags,
                                     llvm::SMRange range,
                                     const ast::TopologyExpr *expr);

} // namespace collc::sema
