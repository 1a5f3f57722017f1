// The collective calls no schedule runs, intercepted only to be counted:
// each goes to MPI's own (PMPI_X) at once, and the report says why, so a
// program's every collective call is either run by collc or accounted for.
// Nonblocking calls stay MPI's: a schedule runs within its call, and they
// must progress while the program works (MPI 4.0 §6.12).

#include "Agreement.h"
#include "Choice.h"
#include "Route.h"

#include <mpi.h>

using namespace collc::mpi;

// MPI_NAME(PARAMS) { PMPI_NAME(ARGS), counted under COLL with WHY }.
#define COLLC_HANDED_ON(NAME, COLL, WHY, PARAMS, ARGS)                         \
  int MPI_##NAME PARAMS {                                                      \
    return handOn(Coll::COLL, Reason::WHY, [&] { return PMPI_##NAME ARGS; });  \
  }

// The same for a call of one of the argument lists below, SHAPE_PARAMS and
// SHAPE_ARGS (I...: a nonblocking call's, with its request).
#define COLLC_HANDED_ON_AS(NAME, COLL, WHY, SHAPE)                             \
  COLLC_HANDED_ON(NAME, COLL, WHY, SHAPE##_PARAMS, SHAPE##_ARGS)

// A block each way (allgather, alltoall and their neighbourhood kinds).
#define BLOCKS_PARAMS                                                          \
  (const void *send, int sendcount, MPI_Datatype sendtype, void *recv,         \
   int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
#define BLOCKS_ARGS (send, sendcount, sendtype, recv, recvcount, recvtype, comm)
#define IBLOCKS_PARAMS                                                         \
  (const void *send, int sendcount, MPI_Datatype sendtype, void *recv,         \
   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
#define IBLOCKS_ARGS                                                           \
  (send, sendcount, sendtype, recv, recvcount, recvtype, comm, request)
// One block sent, blocks of their own counts received (allgatherv).
#define GATHERV_PARAMS                                                         \
  (const void *send, int sendcount, MPI_Datatype sendtype, void *recv,         \
   const int recvcounts[], const int displs[], MPI_Datatype recvtype,          \
   MPI_Comm comm)
#define GATHERV_ARGS                                                           \
  (send, sendcount, sendtype, recv, recvcounts, displs, recvtype, comm)
#define IGATHERV_PARAMS                                                        \
  (const void *send, int sendcount, MPI_Datatype sendtype, void *recv,         \
   const int recvcounts[], const int displs[], MPI_Datatype recvtype,          \
   MPI_Comm comm, MPI_Request *request)
#define IGATHERV_ARGS                                                          \
  (send, sendcount, sendtype, recv, recvcounts, displs, recvtype, comm, request)
// Blocks of their own counts both ways (alltoallv).
#define ALLTOALLV_PARAMS                                                       \
  (const void *send, const int sendcounts[], const int sdispls[],              \
   MPI_Datatype sendtype, void *recv, const int recvcounts[],                  \
   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
#define ALLTOALLV_ARGS                                                         \
  (send, sendcounts, sdispls, sendtype, recv, recvcounts, rdispls, recvtype,   \
   comm)
#define IALLTOALLV_PARAMS                                                      \
  (const void *send, const int sendcounts[], const int sdispls[],              \
   MPI_Datatype sendtype, void *recv, const int recvcounts[],                  \
   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,                  \
   MPI_Request *request)
#define IALLTOALLV_ARGS                                                        \
  (send, sendcounts, sdispls, sendtype, recv, recvcounts, rdispls, recvtype,   \
   comm, request)
// A reduction without a root (allreduce, scan, exscan, reduce-scatter).
#define IREDUCTION_PARAMS                                                      \
  (const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,      \
   MPI_Comm comm, MPI_Request *request)
#define IREDUCTION_ARGS (send, recv, count, type, op, comm, request)
// A block each way at a root (scatter, gather).
#define IROOTED_PARAMS                                                         \
  (const void *send, int sendcount, MPI_Datatype sendtype, void *recv,         \
   int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,              \
   MPI_Request *request)
#define IROOTED_ARGS                                                           \
  (send, sendcount, sendtype, recv, recvcount, recvtype, root, comm, request)

extern "C" {

int MPI_Barrier(MPI_Comm comm) {
  // Under COLLC_MPI_CHECK a barrier takes part in the comparison too: a
  // rank that calls it where the others call another collective is found.
  if (int rc = checked(comm, [] {
        Agreed a;
        a.coll = Coll::Barrier;
        return a;
      }))
    return rc;
  return handOn(Coll::Barrier, Reason::NoSchedule,
                [&] { return PMPI_Barrier(comm); });
}

COLLC_HANDED_ON(Alltoallw, Alltoallw, NoSchedule,
                (const void *send, const int sendcounts[], const int sdispls[],
                 const MPI_Datatype sendtypes[], void *recv,
                 const int recvcounts[], const int rdispls[],
                 const MPI_Datatype recvtypes[], MPI_Comm comm),
                (send, sendcounts, sdispls, sendtypes, recv, recvcounts,
                 rdispls, recvtypes, comm))
COLLC_HANDED_ON_AS(Neighbor_allgather, NeighborAllgather, NoSchedule, BLOCKS)
COLLC_HANDED_ON_AS(Neighbor_allgatherv, NeighborAllgatherv, NoSchedule, GATHERV)
COLLC_HANDED_ON_AS(Neighbor_alltoall, NeighborAlltoall, NoSchedule, BLOCKS)
COLLC_HANDED_ON_AS(Neighbor_alltoallv, NeighborAlltoallv, NoSchedule, ALLTOALLV)
COLLC_HANDED_ON(Neighbor_alltoallw, NeighborAlltoallw, NoSchedule,
                (const void *send, const int sendcounts[],
                 const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                 void *recv, const int recvcounts[], const MPI_Aint rdispls[],
                 const MPI_Datatype recvtypes[], MPI_Comm comm),
                (send, sendcounts, sdispls, sendtypes, recv, recvcounts,
                 rdispls, recvtypes, comm))

COLLC_HANDED_ON(Ibarrier, Ibarrier, Nonblocking,
                (MPI_Comm comm, MPI_Request *request), (comm, request))
COLLC_HANDED_ON(Ibcast, Ibcast, Nonblocking,
                (void *buf, int count, MPI_Datatype type, int root,
                 MPI_Comm comm, MPI_Request *request),
                (buf, count, type, root, comm, request))
COLLC_HANDED_ON(Ireduce, Ireduce, Nonblocking,
                (const void *send, void *recv, int count, MPI_Datatype type,
                 MPI_Op op, int root, MPI_Comm comm, MPI_Request *request),
                (send, recv, count, type, op, root, comm, request))
COLLC_HANDED_ON_AS(Iallreduce, Iallreduce, Nonblocking, IREDUCTION)
COLLC_HANDED_ON_AS(Iallgather, Iallgather, Nonblocking, IBLOCKS)
COLLC_HANDED_ON_AS(Iallgatherv, Iallgatherv, Nonblocking, IGATHERV)
COLLC_HANDED_ON_AS(Ireduce_scatter_block, IreduceScatterBlock, Nonblocking,
                   IREDUCTION)
COLLC_HANDED_ON(Ireduce_scatter, IreduceScatter, Nonblocking,
                (const void *send, void *recv, const int counts[],
                 MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                 MPI_Request *request),
                (send, recv, counts, type, op, comm, request))
COLLC_HANDED_ON_AS(Iscatter, Iscatter, Nonblocking, IROOTED)
COLLC_HANDED_ON(Iscatterv, Iscatterv, Nonblocking,
                (const void *send, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recv, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request),
                (send, sendcounts, displs, sendtype, recv, recvcount, recvtype,
                 root, comm, request))
COLLC_HANDED_ON_AS(Igather, Igather, Nonblocking, IROOTED)
COLLC_HANDED_ON(Igatherv, Igatherv, Nonblocking,
                (const void *send, int sendcount, MPI_Datatype sendtype,
                 void *recv, const int recvcounts[], const int displs[],
                 MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request),
                (send, sendcount, sendtype, recv, recvcounts, displs, recvtype,
                 root, comm, request))
COLLC_HANDED_ON_AS(Iscan, Iscan, Nonblocking, IREDUCTION)
COLLC_HANDED_ON_AS(Iexscan, Iexscan, Nonblocking, IREDUCTION)
COLLC_HANDED_ON_AS(Ialltoall, Ialltoall, Nonblocking, IBLOCKS)
COLLC_HANDED_ON_AS(Ialltoallv, Ialltoallv, Nonblocking, IALLTOALLV)
COLLC_HANDED_ON(Ialltoallw, Ialltoallw, Nonblocking,
                (const void *send, const int sendcounts[], const int sdispls[],
                 const MPI_Datatype sendtypes[], void *recv,
                 const int recvcounts[], const int rdispls[],
                 const MPI_Datatype recvtypes[], MPI_Comm comm,
                 MPI_Request *request),
                (send, sendcounts, sdispls, sendtypes, recv, recvcounts,
                 rdispls, recvtypes, comm, request))
COLLC_HANDED_ON_AS(Ineighbor_allgather, IneighborAllgather, Nonblocking,
                   IBLOCKS)
COLLC_HANDED_ON_AS(Ineighbor_allgatherv, IneighborAllgatherv, Nonblocking,
                   IGATHERV)
COLLC_HANDED_ON_AS(Ineighbor_alltoall, IneighborAlltoall, Nonblocking, IBLOCKS)
COLLC_HANDED_ON_AS(Ineighbor_alltoallv, IneighborAlltoallv, Nonblocking,
                   IALLTOALLV)
COLLC_HANDED_ON(Ineighbor_alltoallw, IneighborAlltoallw, Nonblocking,
                (const void *send, const int sendcounts[],
                 const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                 void *recv, const int recvcounts[], const MPI_Aint rdispls[],
                 const MPI_Datatype recvtypes[], MPI_Comm comm,
                 MPI_Request *request),
                (send, sendcounts, sdispls, sendtypes, recv, recvcounts,
                 rdispls, recvtypes, comm, request))

} // extern "C"
