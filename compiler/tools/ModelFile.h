#pragma once
// Cost models from files, as `collc cost --model`, `collc bench --model`
// and the drop-in's build read them.

#include "sema/Program.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace collc::tools {

/// A cost model from `FILE` (its only or first model) or `FILE:NAME`.
/// Errors in the file are printed with their place, as `collc check` does.
llvm::Expected<CostModel> loadModel(llvm::StringRef spec);

} // namespace collc::tools
