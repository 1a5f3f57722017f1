// Sema: the program-level tables and the entry points (analyze,
// loadSource, loadProgram). The analyzer itself (sema/Analyzer.h) is
// written in SemaExpressions.cpp, SemaDeclarations.cpp and
// SemaSchedules.cpp.

#include "sema/Sema.h"

#include "sema/Analyzer.h"
#include "support/Files.h"
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
  if (std::string why = notAFileToRead(path); !why.empty())
    return reported(diags, "cannot read '" + path + "': " + why);
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer)
    return reported(diags, "cannot read '" + path +
                               "': " + buffer.getError().message());
  return loadSource(std::move(*buffer), diags);
}
