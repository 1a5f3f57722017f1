#include "tools/ModelFile.h"

#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <tuple>

using namespace collc;

llvm::Expected<CostModel> collc::tools::loadModel(llvm::StringRef spec) {
  llvm::StringRef path = spec, name;
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   message.str());
  };
  if (!llvm::sys::fs::exists(path)) {
    std::tie(path, name) = spec.rsplit(':');
    if (name.empty() || !llvm::sys::fs::exists(path))
      return error("--model needs FILE or FILE:NAME of a .coll file "
                   "declaring a model, got '" +
                   spec + "'");
  }
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), llvm::errs().has_colors());
  llvm::Expected<Program> program = loadProgram(path, diags);
  if (!program)
    return program.takeError();
  if (diags.hasErrors())
    return error("errors in model file '" + path + "'");
  for (const CostModel &m : program->models)
    if (name.empty() || m.name == name) {
      CostModel copy = m;
      copy.loc = llvm::SMLoc();
      return copy;
    }
  return error("'" + path + "' declares no model" +
               (name.empty() ? llvm::Twine("") : " '" + name + "'"));
}
