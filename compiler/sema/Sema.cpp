// Sema: the program-level tables and the entry points (analyze,
// loadSource, loadProgram). The analyzer itself (sema/Analyzer.h) is
// written in SemaExpressions.cpp, SemaDeclarations.cpp and
// SemaSchedules.cpp.

#include "sema/Sema.h"

#include "sema/Analyzer.h"
#include "syntax/Parser.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace collc;

//===----------------------------------------------------------------------===//
// Program-level tables
//===----------------------------------------------------------------------===//

std::string Allocation::spelling() const {
  switch (kind) {
  case Kind::Block:
    return "block";
  case Kind::Cyclic:
    return "cyclic";
  case Kind::BlockCyclic:
    return "block_cyclic(" + std::to_string(block) + ")";
  }
  return "";
}

const ir::Schedule *Program::findSchedule(llvm::StringRef name) const {
  for (const ir::Schedule &s : schedules)
    if (s.name == name)
      return &s;
  return nullptr;
}

bool Program::runsPattern(const CollectiveDef &c) const {
  return c.collective.kind == ir::CollectiveKind::Alltoallv &&
         !findSchedule(c.algorithm);
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
      {"recursive_doubling",
       {CK::Broadcast, CK::Reduce, CK::Allgather, CK::ReduceScatter,
        CK::Allreduce, CK::Scan, CK::Exscan},
       {},
       "000 §4.1, §4.3"},
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
       {CK::Allgather, CK::ReduceScatter, CK::Allreduce, CK::Scan, CK::Exscan,
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
       {CK::Allgather, CK::ReduceScatter, CK::Scan, CK::Exscan, CK::Alltoall},
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

namespace collc::sema {

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

} // namespace collc::sema

Program collc::analyze(const ast::Program &ast, DiagnosticEngine &diags) {
  return sema::Analyzer(diags).run(ast);
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
