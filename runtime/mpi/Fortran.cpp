// libcollc_mpi's Fortran entry points.
//
// Open MPI 4.1's Fortran bindings call the MPI library's PMPI_X directly:
// mpif.h and `use mpi` call mpi_allreduce_ (or mpi_allreduce,
// mpi_allreduce__, MPI_ALLREDUCE, as the Fortran compiler spells names),
// `use mpi_f08` calls mpi_allreduce_f08_, and none of them reaches the
// drop-in's MPI_Allreduce. So each intercepted collective is defined here
// under those names: its handles made C's (MPI_Comm_f2c, MPI_Type_f2c,
// MPI_Op_f2c), Fortran's MPI_IN_PLACE and MPI_BOTTOM made C's, and the C
// entry point called, so that a Fortran call is decided, run and counted as
// the same C call is. MPI_Finalize comes along: the drop-in prints its
// report there. (A freed communicator needs no entry point: MPI frees the
// schedules' duplicate on it by its attribute, whichever call frees it.)
//
// MPICH 4.0's Fortran bindings call MPI_X themselves (mpif.h, `use mpi` and
// `use mpi_f08`'s collectives that take a buffer), so those need nothing
// here; its mpi_f08 calls PMPI_X for the calls without a buffer
// (MPI_Finalize, MPI_Barrier, MPI_Ibarrier), which is why those are defined
// for every MPI.

#include <mpi.h>

#include <initializer_list>
#include <type_traits>
#include <vector>

// A Fortran INTEGER array (counts, displacements) is passed on as C's int
// array.
static_assert(std::is_same_v<MPI_Fint, int>,
              "the drop-in's Fortran entry points assume MPI_Fint is int");

namespace {

void result(MPI_Fint *ierr, int rc) {
  if (ierr) // optional in mpi_f08
    *ierr = rc;
}

/// A nonblocking call's result: its request, Fortran's, where it started.
/// `req` by reference: it is read once the call that sets it has returned.
int started(int rc, const MPI_Request &req, MPI_Fint *request) {
  if (rc == MPI_SUCCESS)
    *request = PMPI_Request_c2f(req);
  return rc;
}

MPI_Comm comm(const MPI_Fint *f) { return PMPI_Comm_f2c(*f); }

} // namespace

using F = const MPI_Fint *; // an INTEGER argument
using R = MPI_Fint *;       // a request, an INTEGER written

// Every spelling of one Fortran entry point: the f08 name defined, the
// others its aliases (the f08 and the older bindings pass the same
// arguments, handles as INTEGERs, buffers as addresses; ierr is optional
// in f08 only).
#define COLLC_FORTRAN(name, NAME, params)                                      \
  void name##_f08_ params;                                                     \
  void name params __attribute__((alias(#name "_f08_")));                      \
  void name##_ params __attribute__((alias(#name "_f08_")));                   \
  void name##__ params __attribute__((alias(#name "_f08_")));                  \
  void NAME params __attribute__((alias(#name "_f08_")));                      \
  void name##_f08_ params

extern "C" {

COLLC_FORTRAN(mpi_finalize, MPI_FINALIZE, (MPI_Fint * ierr)) {
  result(ierr, MPI_Finalize());
}

// Calls with no buffer, which MPICH's mpi_f08 also makes on PMPI_X: counted
// as handed on (HandedOn.cpp), as C's are.
COLLC_FORTRAN(mpi_barrier, MPI_BARRIER, (F c, MPI_Fint *ierr)) {
  result(ierr, MPI_Barrier(comm(c)));
}

COLLC_FORTRAN(mpi_ibarrier, MPI_IBARRIER, (F c, R request, MPI_Fint *ierr)) {
  MPI_Request req = MPI_REQUEST_NULL;
  result(ierr, started(MPI_Ibarrier(comm(c), &req), req, request));
}

} // extern "C"

#if defined(OPEN_MPI)

// Fortran's MPI_IN_PLACE and MPI_BOTTOM are common blocks: the sentinel is
// the block's address, under the name the Fortran compiler gives it (Open
// MPI's libmpi defines the spellings of its compiler; the others are null
// here).
extern "C" {
#define COLLC_SENTINEL(name) extern int name __attribute__((weak));
COLLC_SENTINEL(MPI_FORTRAN_IN_PLACE)
COLLC_SENTINEL(mpi_fortran_in_place)
COLLC_SENTINEL(mpi_fortran_in_place_)
COLLC_SENTINEL(mpi_fortran_in_place__)
COLLC_SENTINEL(MPI_FORTRAN_BOTTOM)
COLLC_SENTINEL(mpi_fortran_bottom)
COLLC_SENTINEL(mpi_fortran_bottom_)
COLLC_SENTINEL(mpi_fortran_bottom__)
#undef COLLC_SENTINEL
}

namespace {

bool among(const void *addr, std::initializer_list<const int *> sentinels) {
  for (const int *s : sentinels)
    if (s && addr == s)
      return true;
  return false;
}

/// A buffer argument: Fortran's MPI_BOTTOM is C's.
void *buffer(void *addr) {
  return among(addr, {&MPI_FORTRAN_BOTTOM, &mpi_fortran_bottom,
                      &mpi_fortran_bottom_, &mpi_fortran_bottom__})
             ? MPI_BOTTOM
             : addr;
}

/// A buffer argument that may be MPI_IN_PLACE.
void *inPlace(void *addr) {
  return among(addr, {&MPI_FORTRAN_IN_PLACE, &mpi_fortran_in_place,
                      &mpi_fortran_in_place_, &mpi_fortran_in_place__})
             ? MPI_IN_PLACE
             : buffer(addr);
}

MPI_Datatype type(const MPI_Fint *f) { return PMPI_Type_f2c(*f); }
MPI_Op op(const MPI_Fint *f) { return PMPI_Op_f2c(*f); }

/// Alltoallw's array of a type per rank of `c` (of its remote group if it
/// is an intercommunicator), C's; empty for null (an in-place send's, which
/// MPI ignores).
std::vector<MPI_Datatype> types(const MPI_Fint *f, MPI_Comm c) {
  int inter = 0, n = 0;
  if (f && PMPI_Comm_test_inter(c, &inter) == MPI_SUCCESS)
    (inter ? PMPI_Comm_remote_size : PMPI_Comm_size)(c, &n);
  std::vector<MPI_Datatype> t(size_t(n > 0 ? n : 0));
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = PMPI_Type_f2c(f[i]);
  return t;
}

} // namespace

extern "C" {

COLLC_FORTRAN(mpi_bcast, MPI_BCAST,
              (void *buf, F count, F t, F root, F c, MPI_Fint *ierr)) {
  result(ierr, MPI_Bcast(buffer(buf), *count, type(t), *root, comm(c)));
}

COLLC_FORTRAN(mpi_reduce, MPI_REDUCE,
              (void *send, void *recv, F count, F t, F o, F root, F c,
               MPI_Fint *ierr)) {
  result(ierr, MPI_Reduce(inPlace(send), buffer(recv), *count, type(t), op(o),
                          *root, comm(c)));
}

// The reductions of one count: the same arguments, in place or not.
#define COLLC_FORTRAN_REDUCTION(name, NAME, cfn)                               \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, void *recv, F count, F t, F o, F c,               \
                 MPI_Fint *ierr)) {                                            \
    result(ierr, cfn(inPlace(send), buffer(recv), *count, type(t), op(o),      \
                     comm(c)));                                                \
  }
COLLC_FORTRAN_REDUCTION(mpi_allreduce, MPI_ALLREDUCE, MPI_Allreduce)
COLLC_FORTRAN_REDUCTION(mpi_scan, MPI_SCAN, MPI_Scan)
COLLC_FORTRAN_REDUCTION(mpi_exscan, MPI_EXSCAN, MPI_Exscan)
COLLC_FORTRAN_REDUCTION(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK,
                        MPI_Reduce_scatter_block)

COLLC_FORTRAN(mpi_reduce_scatter, MPI_REDUCE_SCATTER,
              (void *send, void *recv, F counts, F t, F o, F c,
               MPI_Fint *ierr)) {
  result(ierr, MPI_Reduce_scatter(inPlace(send), buffer(recv), counts,
                                  type(t), op(o), comm(c)));
}

// All-gather and all-to-all: blocks, in place or not.
// sendbuf: inPlace where the call allows MPI_IN_PLACE (a neighbour call
// does not), else buffer.
#define COLLC_FORTRAN_BLOCKS(name, NAME, cfn, sendbuf)                         \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, F sendcount, F sendtype, void *recv, F recvcount, \
                 F recvtype, F c, MPI_Fint *ierr)) {                           \
    result(ierr, cfn(sendbuf(send), *sendcount, type(sendtype), buffer(recv),  \
                     *recvcount, type(recvtype), comm(c)));                    \
  }
COLLC_FORTRAN_BLOCKS(mpi_allgather, MPI_ALLGATHER, MPI_Allgather, inPlace)
COLLC_FORTRAN_BLOCKS(mpi_alltoall, MPI_ALLTOALL, MPI_Alltoall, inPlace)

// Gather and scatter: blocks to or from a root. MPI_IN_PLACE is the
// gather's send buffer at the root, and the scatter's receive buffer there.
#define COLLC_FORTRAN_ROOTED(name, NAME, cfn, sendbuf, recvbuf)                \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, F sendcount, F sendtype, void *recv,              \
                 F recvcount, F recvtype, F root, F c, MPI_Fint *ierr)) {      \
    result(ierr, cfn(sendbuf(send), *sendcount, type(sendtype), recvbuf(recv), \
                     *recvcount, type(recvtype), *root, comm(c)));             \
  }
COLLC_FORTRAN_ROOTED(mpi_gather, MPI_GATHER, MPI_Gather, inPlace, buffer)
COLLC_FORTRAN_ROOTED(mpi_scatter, MPI_SCATTER, MPI_Scatter, buffer, inPlace)

// Blocks of their own counts received (allgatherv).
#define COLLC_FORTRAN_GATHERV(name, NAME, cfn, sendbuf)                        \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, F sendcount, F sendtype, void *recv,              \
                 F recvcounts, F displs, F recvtype, F c, MPI_Fint *ierr)) {   \
    result(ierr, cfn(sendbuf(send), *sendcount, type(sendtype), buffer(recv),  \
                     recvcounts, displs, type(recvtype), comm(c)));            \
  }
COLLC_FORTRAN_GATHERV(mpi_allgatherv, MPI_ALLGATHERV, MPI_Allgatherv, inPlace)

COLLC_FORTRAN(mpi_gatherv, MPI_GATHERV,
              (void *send, F sendcount, F sendtype, void *recv, F recvcounts,
               F displs, F recvtype, F root, F c, MPI_Fint *ierr)) {
  result(ierr, MPI_Gatherv(inPlace(send), *sendcount, type(sendtype),
                           buffer(recv), recvcounts, displs, type(recvtype),
                           *root, comm(c)));
}

COLLC_FORTRAN(mpi_scatterv, MPI_SCATTERV,
              (void *send, F sendcounts, F displs, F sendtype, void *recv,
               F recvcount, F recvtype, F root, F c, MPI_Fint *ierr)) {
  result(ierr, MPI_Scatterv(buffer(send), sendcounts, displs, type(sendtype),
                            inPlace(recv), *recvcount, type(recvtype), *root,
                            comm(c)));
}

// Blocks of their own counts both ways (alltoallv).
#define COLLC_FORTRAN_ALLTOALLV(name, NAME, cfn, sendbuf)                      \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, F sendcounts, F sdispls, F sendtype, void *recv,  \
                 F recvcounts, F rdispls, F recvtype, F c, MPI_Fint *ierr)) {  \
    result(ierr,                                                               \
           cfn(sendbuf(send), sendcounts, sdispls, type(sendtype),             \
               buffer(recv), recvcounts, rdispls, type(recvtype), comm(c)));   \
  }
COLLC_FORTRAN_ALLTOALLV(mpi_alltoallv, MPI_ALLTOALLV, MPI_Alltoallv, inPlace)

// The other calls no schedule runs (HandedOn.cpp): forwarded to the same C
// entry points, so that the report counts them as it counts C's.

COLLC_FORTRAN(mpi_alltoallw, MPI_ALLTOALLW,
              (void *send, F sendcounts, F sdispls, F sendtypes, void *recv,
               F recvcounts, F rdispls, F recvtypes, F c, MPI_Fint *ierr)) {
  MPI_Comm cc = comm(c);
  const bool sendsInPlace = inPlace(send) == MPI_IN_PLACE;
  std::vector<MPI_Datatype> s = types(sendsInPlace ? nullptr : sendtypes, cc);
  std::vector<MPI_Datatype> r = types(recvtypes, cc);
  result(ierr, MPI_Alltoallw(inPlace(send), sendcounts, sdispls, s.data(),
                             buffer(recv), recvcounts, rdispls, r.data(), cc));
}

COLLC_FORTRAN_BLOCKS(mpi_neighbor_allgather, MPI_NEIGHBOR_ALLGATHER,
                     MPI_Neighbor_allgather, buffer)
COLLC_FORTRAN_BLOCKS(mpi_neighbor_alltoall, MPI_NEIGHBOR_ALLTOALL,
                     MPI_Neighbor_alltoall, buffer)
COLLC_FORTRAN_GATHERV(mpi_neighbor_allgatherv, MPI_NEIGHBOR_ALLGATHERV,
                      MPI_Neighbor_allgatherv, buffer)
COLLC_FORTRAN_ALLTOALLV(mpi_neighbor_alltoallv, MPI_NEIGHBOR_ALLTOALLV,
                        MPI_Neighbor_alltoallv, buffer)

// Nonblocking calls: C's request handed back as Fortran's.

COLLC_FORTRAN(mpi_ibcast, MPI_IBCAST,
              (void *buf, F count, F t, F root, F c, R request,
               MPI_Fint *ierr)) {
  MPI_Request req = MPI_REQUEST_NULL;
  result(ierr,
         started(MPI_Ibcast(buffer(buf), *count, type(t), *root, comm(c), &req),
                 req, request));
}

COLLC_FORTRAN(mpi_ireduce, MPI_IREDUCE,
              (void *send, void *recv, F count, F t, F o, F root, F c,
               R request, MPI_Fint *ierr)) {
  MPI_Request req = MPI_REQUEST_NULL;
  result(ierr, started(MPI_Ireduce(inPlace(send), buffer(recv), *count, type(t),
                                   op(o), *root, comm(c), &req),
                       req, request));
}

#define COLLC_FORTRAN_IREDUCTION(name, NAME, cfn)                              \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, void *recv, F count, F t, F o, F c, R request,    \
                 MPI_Fint *ierr)) {                                            \
    MPI_Request req = MPI_REQUEST_NULL;                                        \
    result(ierr, started(cfn(inPlace(send), buffer(recv), *count, type(t),     \
                             op(o), comm(c), &req),                            \
                         req, request));                                       \
  }
COLLC_FORTRAN_IREDUCTION(mpi_iallreduce, MPI_IALLREDUCE, MPI_Iallreduce)
COLLC_FORTRAN_IREDUCTION(mpi_iscan, MPI_ISCAN, MPI_Iscan)
COLLC_FORTRAN_IREDUCTION(mpi_iexscan, MPI_IEXSCAN, MPI_Iexscan)
COLLC_FORTRAN_IREDUCTION(mpi_ireduce_scatter_block, MPI_IREDUCE_SCATTER_BLOCK,
                         MPI_Ireduce_scatter_block)

COLLC_FORTRAN(mpi_ireduce_scatter, MPI_IREDUCE_SCATTER,
              (void *send, void *recv, F counts, F t, F o, F c, R request,
               MPI_Fint *ierr)) {
  MPI_Request req = MPI_REQUEST_NULL;
  result(ierr, started(MPI_Ireduce_scatter(inPlace(send), buffer(recv), counts,
                                           type(t), op(o), comm(c), &req),
                       req, request));
}

// sendbuf may be MPI_IN_PLACE where the blocking call's may (a neighbour
// call's never).
#define COLLC_FORTRAN_IBLOCKS(name, NAME, cfn, sendbuf)                        \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, F sendcount, F sendtype, void *recv, F recvcount, \
                 F recvtype, F c, R request, MPI_Fint *ierr)) {                \
    MPI_Request req = MPI_REQUEST_NULL;                                        \
    result(ierr, started(cfn(sendbuf(send), *sendcount, type(sendtype),        \
                             buffer(recv), *recvcount, type(recvtype),         \
                             comm(c), &req),                                   \
                         req, request));                                       \
  }
COLLC_FORTRAN_IBLOCKS(mpi_iallgather, MPI_IALLGATHER, MPI_Iallgather, inPlace)
COLLC_FORTRAN_IBLOCKS(mpi_ialltoall, MPI_IALLTOALL, MPI_Ialltoall, inPlace)
COLLC_FORTRAN_IBLOCKS(mpi_ineighbor_allgather, MPI_INEIGHBOR_ALLGATHER,
                      MPI_Ineighbor_allgather, buffer)
COLLC_FORTRAN_IBLOCKS(mpi_ineighbor_alltoall, MPI_INEIGHBOR_ALLTOALL,
                      MPI_Ineighbor_alltoall, buffer)

#define COLLC_FORTRAN_IROOTED(name, NAME, cfn, sendbuf, recvbuf)               \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, F sendcount, F sendtype, void *recv, F recvcount, \
                 F recvtype, F root, F c, R request, MPI_Fint *ierr)) {        \
    MPI_Request req = MPI_REQUEST_NULL;                                        \
    result(ierr, started(cfn(sendbuf(send), *sendcount, type(sendtype),        \
                             recvbuf(recv), *recvcount, type(recvtype), *root, \
                             comm(c), &req),                                   \
                         req, request));                                       \
  }
COLLC_FORTRAN_IROOTED(mpi_igather, MPI_IGATHER, MPI_Igather, inPlace, buffer)
COLLC_FORTRAN_IROOTED(mpi_iscatter, MPI_ISCATTER, MPI_Iscatter, buffer, inPlace)

#define COLLC_FORTRAN_IGATHERV(name, NAME, cfn, sendbuf)                       \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, F sendcount, F sendtype, void *recv,              \
                 F recvcounts, F displs, F recvtype, F c, R request,           \
                 MPI_Fint *ierr)) {                                            \
    MPI_Request req = MPI_REQUEST_NULL;                                        \
    result(ierr, started(cfn(sendbuf(send), *sendcount, type(sendtype),        \
                             buffer(recv), recvcounts, displs, type(recvtype), \
                             comm(c), &req),                                   \
                         req, request));                                       \
  }
COLLC_FORTRAN_IGATHERV(mpi_iallgatherv, MPI_IALLGATHERV, MPI_Iallgatherv,
                       inPlace)
COLLC_FORTRAN_IGATHERV(mpi_ineighbor_allgatherv, MPI_INEIGHBOR_ALLGATHERV,
                       MPI_Ineighbor_allgatherv, buffer)

COLLC_FORTRAN(mpi_igatherv, MPI_IGATHERV,
              (void *send, F sendcount, F sendtype, void *recv, F recvcounts,
               F displs, F recvtype, F root, F c, R request, MPI_Fint *ierr)) {
  MPI_Request req = MPI_REQUEST_NULL;
  result(ierr, started(MPI_Igatherv(inPlace(send), *sendcount, type(sendtype),
                                    buffer(recv), recvcounts, displs,
                                    type(recvtype), *root, comm(c), &req),
                       req, request));
}

COLLC_FORTRAN(mpi_iscatterv, MPI_ISCATTERV,
              (void *send, F sendcounts, F displs, F sendtype, void *recv,
               F recvcount, F recvtype, F root, F c, R request,
               MPI_Fint *ierr)) {
  MPI_Request req = MPI_REQUEST_NULL;
  result(ierr, started(MPI_Iscatterv(buffer(send), sendcounts, displs,
                                     type(sendtype), inPlace(recv), *recvcount,
                                     type(recvtype), *root, comm(c), &req),
                       req, request));
}

#define COLLC_FORTRAN_IALLTOALLV(name, NAME, cfn, sendbuf)                     \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, F sendcounts, F sdispls, F sendtype, void *recv,  \
                 F recvcounts, F rdispls, F recvtype, F c, R request,          \
                 MPI_Fint *ierr)) {                                            \
    MPI_Request req = MPI_REQUEST_NULL;                                        \
    result(ierr, started(cfn(sendbuf(send), sendcounts, sdispls,               \
                             type(sendtype), buffer(recv), recvcounts,         \
                             rdispls, type(recvtype), comm(c), &req),          \
                         req, request));                                       \
  }
COLLC_FORTRAN_IALLTOALLV(mpi_ialltoallv, MPI_IALLTOALLV, MPI_Ialltoallv,
                         inPlace)
COLLC_FORTRAN_IALLTOALLV(mpi_ineighbor_alltoallv, MPI_INEIGHBOR_ALLTOALLV,
                         MPI_Ineighbor_alltoallv, buffer)

} // extern "C"

#endif // OPEN_MPI
