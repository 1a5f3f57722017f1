#pragma once
// The stages before verification, in order, for one file: parse and check
// it (sema/Sema.h), compose its compositions from its own schedules and the
// library's (library/Compose.h), and resolve its collective declarations
// against the algorithm library (library/Library.h). The commands, the
// benchmark harness and the verification benchmark read files through it.

#include "library/Library.h"
#include "sema/Program.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collc::library {

/// What each collective declaration of a file resolved to, by its name.
using Resolutions = std::vector<std::pair<std::string, std::vector<Choice>>>;

class Frontend {
public:
  /// Reports through `diags`; reads the library from `directory` the first
  /// time a file needs it, into diags' SourceMgr, so a counterexample in a
  /// library schedule points into the library's file.
  Frontend(DiagnosticEngine &diags, std::string directory)
      : diags(diags), directory(std::move(directory)) {}

  /// `path` parsed, checked, composed and resolved; `choices`, when given,
  /// gets what each collective resolved to. Errors are reported through
  /// the diagnostics, and a file that cannot be read or checked returns
  /// one.
  llvm::Expected<Program> load(llvm::StringRef path,
                               Resolutions *choices = nullptr);

private:
  DiagnosticEngine &diags;
  std::string directory;
  std::optional<Library> library;
};

} // namespace collc::library
