#pragma once
// How a drop-in candidate calls an emitted function (DropinSchedules.cpp,
// written by candidates.py): the MPI arguments of Args, types already made
// bytes or the reduction's basic type. Rooted schedules run through their
// any_root:: twins: a communicator is a fully connected network, on which
// rotating the ranks is a symmetry, so a schedule proved for one root is
// proved for every root.

#include "Choice.h"

#define COLLC_MPI_BCAST(f)                                                     \
  [](const Args &a) { return any_root::f(a.recv, a.count, a.type, a.root, a.comm); }
#define COLLC_MPI_REDUCE(f)                                                    \
  [](const Args &a) {                                                          \
    return any_root::f(a.send, a.recv, a.count, a.type, a.op, a.root, a.comm); \
  }
#define COLLC_MPI_ALLREDUCE(f)                                                 \
  [](const Args &a) { return f(a.send, a.recv, a.count, a.type, a.op, a.comm); }
#define COLLC_MPI_BLOCKS(f)                                                    \
  [](const Args &a) {                                                          \
    return f(a.send, a.count, a.type, a.recv, a.count, a.type, a.comm);        \
  }
#define COLLC_MPI_ROOTED(f)                                                    \
  [](const Args &a) {                                                          \
    return any_root::f(a.send, a.count, a.type, a.recv, a.count, a.type,       \
                       a.root, a.comm);                                        \
  }
// All-reduce as a reduce to rank 0, then a broadcast from it: two proved
// schedules, one after the other (000 §4.3: the naive all-reduce). In
// place, a rank's input is in its receive buffer; MPI_IN_PLACE means that
// in a reduce at its root alone (MPI 4.0 §6.9.1), so the others pass that
// buffer as their input.
#define COLLC_MPI_REDUCE_BCAST(reduce, bcast)                                  \
  [](const Args &a) {                                                          \
    const void *send = a.send;                                                 \
    void *recv = a.recv;                                                       \
    if (send == MPI_IN_PLACE) {                                                \
      int rank = 0;                                                            \
      PMPI_Comm_rank(a.comm, &rank);                                           \
      if (rank != 0) {                                                         \
        send = a.recv;                                                         \
        recv = nullptr;                                                        \
      }                                                                        \
    }                                                                          \
    if (int rc = reduce(send, recv, a.count, a.type, a.op, 0, a.comm))         \
      return rc;                                                               \
    return bcast(a.recv, a.count, a.type, 0, a.comm);                          \
  }
// An irregular all-to-all (001 §3), each side by its own type.
#define COLLC_MPI_ALLTOALLV(f)                                                 \
  [](const Args &a) {                                                          \
    return f(a.send, a.sendCounts, a.sendDispls, a.type, a.recv, a.recvCounts, \
             a.recvDispls, a.recvType, a.comm);                                \
  }
