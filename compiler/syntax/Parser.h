#pragma once
// Entry point of the front end: .coll text -> AST.

#include "support/Diagnostics.h"
#include "syntax/AST.h"

namespace collc {

/// Parses the SourceMgr buffer `bufferId`. Syntax errors are reported through
/// `diags` (with recovery at the next declaration, so one run shows several);
/// the returned program holds every declaration that parsed.
ast::Program parseProgram(unsigned bufferId, DiagnosticEngine &diags);

/// Largest nesting of brackets, braces and conditionals the parser accepts
/// (the grammar is recursive-descent; deeper input would exhaust the stack).
constexpr unsigned maxNestingDepth = 128;

} // namespace collc
