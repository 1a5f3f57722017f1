#pragma once
// Fresh ranks of a mesh or a torus built from their coordinates. Schedules
// and routes on a mesh of a x b name a rank's row and column as `r / b`
// and `r % b` with b symbolic; as a bit-vector division each is a divider
// circuit the SAT solver searches backwards through. A rank made as
// row * b + column, with Context::knowDigits stating so, divides into its
// coordinates with no circuit at all, and the product is computed forwards
// from the coordinates the solver picks.

#include "ir/Schedule.h"
#include "smt/Term.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <vector>

namespace collc::prove {

/// The extents of `topology`, translated over `env`, when it is a mesh or
/// a torus of two or more dimensions; empty otherwise. The digits stated
/// of ranks and of the size (env's p) hold where each extent is at least 1,
/// which the caller assumes.
std::vector<smt::Term> meshExtents(const ir::TopologyTemplate &topology,
                                   llvm::ArrayRef<smt::Term> env);

/// A fresh variable called `name`. With extents, it takes every value in
/// 0 .. product - 1 and no other, row-major from one fresh coordinate per
/// extent (a coordinate out of its range reads as 0), and divides by the
/// last extent, and each prefix by the one before, into coordinates. With
/// none it is a plain variable, and the caller states its range either way.
smt::Term rankVariable(smt::Context &ctx, llvm::StringRef name, unsigned width,
                       llvm::ArrayRef<smt::Term> extents);

/// A fresh number at least 0 that the schedule divides by the extents of
/// a mesh or a torus (a shift's amount q, read as q % b and q / b % a):
/// made like a rank, row-major from one coordinate per extent, under a
/// leading digit that any number at least 0 may take, so that each such
/// division is a lookup. `exact` says that no product in it wraps, which
/// the caller assumes; so does the caller's range, which it states on
/// `value` as for a plain variable.
/// The index in `schedule.params` of a shift's amount when the collective
/// takes it from a parameter (`shift(q: q)`).
std::optional<size_t> amountParameter(const ir::Schedule &schedule);

struct DigitNumber {
  smt::Term value, exact;
};
DigitNumber numberVariable(smt::Context &ctx, llvm::StringRef name,
                           unsigned width, llvm::ArrayRef<smt::Term> extents);

} // namespace collc::prove
