#pragma once
// A library family specialised to a declared collective: the parameters
// solved from the target topology's dimensions (or a shape the target
// contains), the shift amount or the permutation matched, and the ranks
// renamed where the root differs and a renaming is a symmetry. Private to
// compiler/library; Library.cpp resolves with it.

#include "library/Library.h"

#include "llvm/Support/Error.h"

#include <vector>

namespace collc::library::detail {

/// `family` specialised to `def`, one member for each shape of its topology
/// that `def`'s contains (a graph may contain mesh(2, 8) and mesh(4, 4)),
/// or why none fits.
llvm::Expected<std::vector<Choice>> specialise(const ir::Schedule &family,
                                               const CollectiveDef &def);
/// The first of `members`: a schedule of the file is run as its first fit.
llvm::Expected<Choice> first(llvm::Expected<std::vector<Choice>> members);

} // namespace collc::library::detail
