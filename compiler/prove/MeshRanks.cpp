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
  Term number = coordinate(0);
  for (size_t axis = 1; axis < extents.size(); ++axis) {
    Term low = coordinate(axis);
    Term next = number * extents[axis] + low;
    ctx.knowDigits(next, extents[axis], number, low, true);
    number = next;
  }
  return number;
}
