#include "prove/MeshRanks.h"
#include "prove/ExprToSmt.h"

#include <optional>
#include <string>
#include <utility>

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

namespace {
/// The number whose digits are `leading` then one coordinate per extent,
/// the last least significant, with knowDigits stated for every split of
/// the coordinates. `exact`, if given, gets what keeps each product and
/// sum from wrapping, where the leading digit is at least 0 and each
/// extent at least 1: written before the digits are stated, so that it
/// compares the numbers themselves and not the digits it vouches for.
Term fromDigits(smt::Context &ctx, llvm::StringRef name, unsigned width,
                llvm::ArrayRef<Term> extents, std::optional<Term> leading,
                std::vector<Term> *exact = nullptr) {
  auto coordinate = [&](size_t axis) {
    Term x = ctx.bitVecVar(name.str() + "." + std::to_string(axis), width);
    Term c = ite(sge(x, 0) && slt(x, extents[axis]), x, ctx.bitVec(0, width));
    // Its neighbour's, (c + 1) % e, is then a comparison (smt/Term.h).
    ctx.knowBelow(c, extents[axis]);
    return c;
  };
  // prefixes[j]: the digits before axis j as a number; suffixes[j]
  // and radices[j]: those from axis j on, and the product of their extents.
  std::vector<Term> prefixes, suffixes, radices;
  size_t first = 0;
  if (leading) {
    prefixes.push_back(*leading);
  } else {
    prefixes.push_back(coordinate(0));
    first = 1;
  }
  for (size_t axis = first; axis < extents.size(); ++axis) {
    Term low = coordinate(axis);
    Term product = prefixes.back() * extents[axis];
    Term next = product + low;
    if (exact) {
      // Both factors are at least 0: no unsigned wrap and a clear sign
      // bit is no signed wrap; then the sum of two such numbers.
      exact->push_back(umulFits(prefixes.back(), extents[axis]) &&
                       sge(product, 0) && sge(next, 0));
    }
    // Every split of the coordinates, so that `r / (b * c)` on a mesh of
    // a x b x c is the plane as `r / c` is the line.
    for (size_t j = 1; j < prefixes.size(); ++j) {
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
} // namespace

std::optional<size_t> prove::amountParameter(const ir::Schedule &schedule) {
  const ir::ExprRef &q = schedule.collective.shiftOf;
  if (!q || q->op != ir::ExprOp::Var)
    return std::nullopt;
  for (size_t i = 0; i < schedule.params.size(); ++i)
    if (schedule.params[i].slot == q->slot)
      return i;
  return std::nullopt;
}

prove::DigitNumber prove::numberVariable(smt::Context &ctx,
                                         llvm::StringRef name, unsigned width,
                                         llvm::ArrayRef<Term> extents) {
  Term leading = ctx.bitVecVar(name.str() + ".high", width);
  // Where nothing wraps the digits are those bvsdiv and bvsrem give, and
  // every number from 0 to the width's largest has its digits.
  std::vector<Term> exact{sge(leading, 0)};
  Term value = fromDigits(ctx, name, width, extents, leading, &exact);
  return {value, ctx.all(exact)};
}

Term prove::rankVariable(smt::Context &ctx, llvm::StringRef name,
                         unsigned width, llvm::ArrayRef<Term> extents) {
  if (extents.empty())
    return ctx.bitVecVar(name, width);
  return fromDigits(ctx, name, width, extents, std::nullopt);
}
