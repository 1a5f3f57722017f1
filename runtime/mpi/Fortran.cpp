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
// `use mpi_f08`'s collectives), so its collectives need nothing here; its
// mpi_f08 alone calls PMPI_Finalize, which is why that one is defined for
// every MPI.

#include <mpi.h>

#include <initializer_list>
#include <type_traits>

// A Fortran INTEGER array (counts, displacements) is passed on as C's int
// array.
static_assert(std::is_same_v<MPI_Fint, int>,
              "the drop-in's Fortran entry points assume MPI_Fint is int");

namespace {

void result(MPI_Fint *ierr, int rc) {
  if (ierr) // optional in mpi_f08
    *ierr = rc;
}

} // namespace

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

MPI_Comm comm(const MPI_Fint *f) { return PMPI_Comm_f2c(*f); }
MPI_Datatype type(const MPI_Fint *f) { return PMPI_Type_f2c(*f); }
MPI_Op op(const MPI_Fint *f) { return PMPI_Op_f2c(*f); }

} // namespace

using F = const MPI_Fint *; // an INTEGER argument

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
#define COLLC_FORTRAN_BLOCKS(name, NAME, cfn)                                  \
  COLLC_FORTRAN(name, NAME,                                                    \
                (void *send, F sendcount, F sendtype, void *recv,              \
                 F recvcount, F recvtype, F c, MPI_Fint *ierr)) {              \
    result(ierr, cfn(inPlace(send), *sendcount, type(sendtype), buffer(recv),  \
                     *recvcount, type(recvtype), comm(c)));                    \
  }
COLLC_FORTRAN_BLOCKS(mpi_allgather, MPI_ALLGATHER, MPI_Allgather)
COLLC_FORTRAN_BLOCKS(mpi_alltoall, MPI_ALLTOALL, MPI_Alltoall)

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

COLLC_FORTRAN(mpi_allgatherv, MPI_ALLGATHERV,
              (void *send, F sendcount, F sendtype, void *recv, F recvcounts,
               F displs, F recvtype, F c, MPI_Fint *ierr)) {
  result(ierr, MPI_Allgatherv(inPlace(send), *sendcount, type(sendtype),
                              buffer(recv), recvcounts, displs,
                              type(recvtype), comm(c)));
}

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

COLLC_FORTRAN(mpi_alltoallv, MPI_ALLTOALLV,
              (void *send, F sendcounts, F sdispls, F sendtype, void *recv,
               F recvcounts, F rdispls, F recvtype, F c, MPI_Fint *ierr)) {
  result(ierr, MPI_Alltoallv(inPlace(send), sendcounts, sdispls,
                             type(sendtype), buffer(recv), recvcounts,
                             rdispls, type(recvtype), comm(c)));
}

} // extern "C"

#endif // OPEN_MPI
