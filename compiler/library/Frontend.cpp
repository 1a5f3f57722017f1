#include "library/Frontend.h"

#include "library/Compose.h"
#include "sema/Sema.h"

#include "llvm/ADT/STLExtras.h"

using namespace collc;

llvm::Expected<Program> library::Frontend::load(llvm::StringRef path,
                                                Resolutions *choices) {
  llvm::Expected<Program> program = loadProgram(path, diags);
  if (!program || diags.hasErrors())
    return program;
  const bool composes =
      llvm::any_of(program->schedules,
                   [](const ir::Schedule &s) { return !s.parts.empty(); });
  if (program->collectives.empty() && !composes)
    return program;
  if (!library) {
    llvm::Expected<Library> loaded = library::load(directory, diags);
    if (!loaded) {
      diags.error(llvm::toString(loaded.takeError()));
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "no algorithm library");
    }
    library = std::move(*loaded);
  }
  if (composes &&
      !composeAll(
          *program, [&](llvm::StringRef name) { return library->find(name); },
          diags))
    return program;
  resolveAll(*program, *library, diags, choices);
  return program;
}
