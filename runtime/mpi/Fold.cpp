#include "Fold.h"

#include "collc/Backend.h"

#include <climits>

namespace collc::mpi {

Reason foldOf(int count, MPI_Datatype type, const rt::TypeInfo &info, MPI_Op op,
              Fold &fold) {
  if (op == MPI_OP_NULL)
    return Reason::Invalid;
  // A predefined type and operator never change: the verdict on the last
  // few pairs holds (a repeated call asks MPI nothing).
  thread_local MPI_Datatype lastType[4] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL,
                                           MPI_DATATYPE_NULL,
                                           MPI_DATATYPE_NULL};
  thread_local MPI_Op lastOp[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL,
                                   MPI_OP_NULL};
  thread_local unsigned next = 0;
  for (int i = 0; i < 4; ++i)
    if (type == lastType[i] && op == lastOp[i]) {
      fold.type = type;
      fold.count = count;
      return Reason::Count;
    }
  int commutative = 1;
  if (PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS)
    return Reason::Invalid;
  fold.ordered = !commutative;
  if (collc::rt::predefinedOp(op)) {
    if (info.base == MPI_DATATYPE_NULL)
      return Reason::MixedType;
    // A predefined operator folds a derived type as its basic type.
    fold.type = info.base;
    fold.count = count * info.perElement;
    if (!collc::rt::foldFunction(fold.type, op))
      return Reason::OpOnType;
    if (info.named) {
      lastType[next] = type;
      lastOp[next] = op;
      next = (next + 1) % 4;
    }
    return Reason::Count;
  }
  // A user's function folds its own type: it must lie in one piece (a
  // padded pair, MPI_DOUBLE_INT, does not, named as it is).
  if (info.lb != 0 || info.trueLb != 0 || !info.contiguous(2))
    return Reason::UserOpLayout;
  fold.type = type;
  fold.count = count;
  return Reason::Count;
}

bool asBasicType(MPI_Datatype type, MPI_Op op, int count, rt::TypeInfo &info) {
  return type != MPI_DATATYPE_NULL && collc::rt::predefinedOp(op) &&
         rt::describe(type, info) == MPI_SUCCESS && !info.named &&
         info.base != MPI_DATATYPE_NULL &&
         int64_t{count} * info.perElement <= INT_MAX;
}

} // namespace collc::mpi
