#pragma once
// Semantic analysis: AST -> Program. Resolves names, checks parameters,
// sizes, ranks and roots, and lowers schedules to Schedule IR. Every problem
// is reported through the DiagnosticEngine at its place in the source.

#include "sema/Program.h"
#include "support/Diagnostics.h"
#include "syntax/AST.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace collc {

/// Checks `ast` and builds the program. Declarations with errors are left
/// out; the caller tests diags.hasErrors().
Program analyze(const ast::Program &ast, DiagnosticEngine &diags);

/// Reads `path` into the SourceMgr, parses and checks it. Returns the buffer
/// id, or an error (already reported) when the file cannot be read or is not
/// text. Parse and semantic errors are reported through diags.
llvm::Expected<Program> loadProgram(llvm::StringRef path,
                                    DiagnosticEngine &diags);

/// The same for text already in memory (named by the buffer's identifier).
llvm::Expected<Program> loadSource(std::unique_ptr<llvm::MemoryBuffer> buffer,
                                   DiagnosticEngine &diags);

/// Largest input file accepted.
constexpr uint64_t maxSourceBytes = 16u << 20;

} // namespace collc
