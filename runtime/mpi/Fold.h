#pragma once
// How libcollc_mpi folds a reduction: by a schedule's own operator
// functions, or, where MPI's own reduction runs it, as its basic type.

#include "Choice.h"
#include "collc/Datatype.h"

#include <mpi.h>

#include <cstdint>

namespace collc::mpi {

/// How a reduction's elements are folded: `count` elements of `type`
/// (the user's type, or its basic type for a predefined operator), packed
/// when the user's layout has holes.
struct Fold {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int count = 0;
  bool ordered = false; // the operator does not commute

  /// A schedule's arguments for this fold of staged buffers.
  Args args(const void *send, void *recv, MPI_Op op, MPI_Comm comm,
            int root = 0) const {
    Args a;
    a.send = send;
    a.recv = recv;
    a.count = count;
    a.type = type;
    a.op = op;
    a.root = root;
    a.comm = comm;
    return a;
  }
};

/// The fold of `count` elements of `type` by `op`, or why the library
/// cannot do it. Every rank passes the same type and operator to a
/// reduction (MPI 4.0 §6.9.1), so every rank decides alike.
Reason foldOf(int count, MPI_Datatype type, const rt::TypeInfo &info, MPI_Op op,
              Fold &fold);

/// Whether MPI's own reduction should get the call as its basic type: a
/// predefined operator on a derived type, which the schedules fold as its
/// basic type and some MPI libraries refuse (Open MPI 4.1), so that a call
/// means the same whichever runs it.
/// `count` elements of `type` must be a count of its basic type that MPI's
/// int holds.
bool asBasicType(MPI_Datatype type, MPI_Op op, int count, rt::TypeInfo &info);

/// MPI's own reduction `reduce(send, recv, elements of info.base)` on
/// `inCount` elements of `type` in and `outCount` out, packed and
/// unpacked (in place: MPI_IN_PLACE as `send`; `output`: whether the
/// receive buffer is significant here).
template <typename Reduce>
int reduceAsBasicType(const void *send, void *recv, int64_t inCount,
                      int64_t outCount, MPI_Datatype type,
                      const rt::TypeInfo &info, bool output, MPI_Comm comm,
                      Reduce &&reduce) {
  const bool inPlace = send == MPI_IN_PLACE;
  rt::Staged in, out;
  int rc = MPI_SUCCESS;
  if (!inPlace)
    rc = in.start(send, inCount, type, info, true, false, comm);
  // A receive buffer that is not significant here still goes to MPI as a
  // buffer (MPICH checks an exclusive scan's at rank 0), never written back;
  // MPI_BOTTOM too, where the type is absolute.
  const bool staged = output || inPlace || recv || info.fromBottom();
  if (!rc && staged)
    rc = out.start(recv, inPlace ? inCount : outCount, type, info, inPlace,
                   output, comm);
  if (rc)
    return rc;
  rc = reduce(inPlace ? MPI_IN_PLACE : in.bytes(),
              staged ? out.bytes() : nullptr, info.perElement);
  if (rc)
    return rc;
  // In place, only the result (a reduce-scatter's first block) goes back.
  return out.finish(comm, outCount);
}

} // namespace collc::mpi
