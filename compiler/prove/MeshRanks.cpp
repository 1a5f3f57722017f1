#include "prove/MeshRanks.h"
#include "prove/ExprToSmt.h"

#include <string>

using namespace collc;
using smt::Term;

std::vector<Term> prove::meshExtents(const ir::TopologyTemplate &topology,
                                     llvm::ArrayRef<Term> env) {
  std::vector<Term> extents;
  if ((topology.kind != TopologyKind::Mesh &&
       topology.kind != TopologyKind::Torus) ||
      topology.dims.size() < 2)
    return extents;
  ExprToSmt tr(*env.front().context(), env);
  for (const ir::ExprRef &d : topology.dims)
    extents.push_back(tr.translate(*d).value);
  // The size and each product of leading extents, in the radices a rank
  // has (rankVariable), are those extents' product and 0: `r < p` then
  // compares coordinates.
  smt::Context &ctx = *extents.front().context();
  const Term zero = ctx.bitVec(0, extents.front().width());
  std::vector<Term> leading{extents.front()}; // e0 * .. * e(j-1) at j - 1
  for (size_t j = 2; j <= extents.size(); ++j) {
    leading.push_back(leading.back() * extents[j - 1]);
    const Term &number = j == extents.size() && env[ir::SlotSize].isValid()
                             ? env[ir::SlotSize]
                             : leading.back();
    for (size_t i = 1; i < j; ++i) {
      Term radix = extents[i];
      for (size_t k = i + 1; k < j; ++k)
        radix = radix * extents[k];
      ctx.knowDigits(number, radix, leading[i - 1], zero, true);
    }
  }
  return extents;
}

Term prove::rankVariable(smt::Context &ctx, llvm::StringRef name,
                         unsigned width, llvm::ArrayRef<Term> extents) {
  if (extents.empty())
    return ctx.bitVecVar(name, width);
  auto coordinate = [&](size_t axis) {
    Term x = ctx.bitVecVar(name.str() + "." + std::to_string(axis), width);
    return ite(sge(x, 0) && slt(x, extents[axis]), x, ctx.bitVec(0, width));
  };
  // prefixes[j]: the coordinates before axis j as a number; suffixes[j]
  // and radices[j]: those from axis j on, and the product of their extents.
  std::vector<Term> prefixes{coordinate(0)}, suffixes, radices;
  for (size_t axis = 1; axis < extents.size(); ++axis) {
    Term low = coordinate(axis);
    Term next = prefixes.back() * extents[axis] + low;
    // Every split of the coordinates, so that `r / (b * c)` on a mesh of
    // a x b x c is the plane as `r / c` is the line.
    for (size_t j = 1; j < axis; ++j) {
      suffixes[j - 1] = suffixes[j - 1] * extents[axis] + low;
      radices[j - 1] = radices[j - 1] * extents[axis];
      ctx.knowDigits(next, radices[j - 1], prefixes[j - 1], suffixes[j - 1],
                     true);
    }
    ctx.knowDigits(next, extents[axis], prefixes.back(), low, true);
    suffixes.push_back(low);
    radices.push_back(extents[axis]);
    prefixes.push_back(next);
  }
  return prefixes.back();
}
