// The library schedules the drop-in runs, compiled from specs/library at
// build time (runtime/mpi/CMakeLists.txt) and proved there for every size
// they are built for. Rooted ones run through their any_root:: twins: a
// communicator is a fully connected network, on which rotating the ranks
// is a symmetry, so a schedule proved for root 0 is proved for every root.
// Adding a schedule is adding a row; its price comes from `collc cost`.

#include "Choice.h"

#include "allgather.h"
#include "allreduce_scan.h"
#include "alltoall.h"
#include "broadcast.h"
#include "scatter_gather.h"
#include "ordered.h"
#include "split.h"

namespace collc::mpi {
namespace {

using namespace collc_mpi;

#define BCAST(f)                                                               \
  [](const Args &a) { return any_root::f(a.recv, a.count, a.type, a.root, a.comm); }
#define REDUCE(f)                                                              \
  [](const Args &a) {                                                          \
    return any_root::f(a.send, a.recv, a.count, a.type, a.op, a.root, a.comm); \
  }
#define ALLREDUCE(f)                                                           \
  [](const Args &a) { return f(a.send, a.recv, a.count, a.type, a.op, a.comm); }
#define BLOCKS(f)                                                              \
  [](const Args &a) {                                                          \
    return f(a.send, a.count, a.type, a.recv, a.count, a.type, a.comm);        \
  }
#define ROOTED(f)                                                              \
  [](const Args &a) {                                                          \
    return any_root::f(a.send, a.count, a.type, a.recv, a.count, a.type,       \
                       a.root, a.comm);                                        \
  }
// All-reduce as a reduce to rank 0, then a broadcast from it: two proved
// schedules, one after the other (000 §4.3: the naive all-reduce).
#define REDUCE_BCAST(reduce, bcast)                                            \
  [](const Args &a) {                                                          \
    if (int rc = reduce(a.send, a.recv, a.count, a.type, a.op, 0, a.comm))     \
      return rc;                                                               \
    return bcast(a.recv, a.count, a.type, 0, a.comm);                          \
  }

} // namespace

const Candidate candidates[] = {
    {"linear_bc", Coll::Bcast, BCAST(linear_bc), {"linear_bc", nullptr}},
    {"hypercube_bc", Coll::Bcast, BCAST(hypercube_bc), {"hypercube_bc", nullptr}},
    {"star_bc", Coll::Bcast, BCAST(star_bc), {"star_bc", nullptr}},
    {"linear_bc_split", Coll::Bcast, BCAST(linear_bc_split), {"linear_bc_split", nullptr}},
    {"ring_bc_split", Coll::Bcast, BCAST(ring_bc_split), {"ring_bc_split", nullptr}},
    {"hypercube_bc_split", Coll::Bcast, BCAST(hypercube_bc_split), {"hypercube_bc_split", nullptr}},

    {"linear_reduce", Coll::Reduce, REDUCE(linear_reduce), {"linear_reduce", nullptr}},
    {"hypercube_reduce", Coll::Reduce, REDUCE(hypercube_reduce), {"hypercube_reduce", nullptr}},
    {"linear_reduce_split", Coll::Reduce, REDUCE(linear_reduce_split), {"linear_reduce_split", nullptr}},
    {"ring_reduce_split", Coll::Reduce, REDUCE(ring_reduce_split), {"ring_reduce_split", nullptr}},
    {"hypercube_reduce_split", Coll::Reduce, REDUCE(hypercube_reduce_split), {"hypercube_reduce_split", nullptr}},

    {"hypercube_allreduce", Coll::Allreduce, ALLREDUCE(hypercube_allreduce), {"hypercube_allreduce", nullptr}},
    {"ring_allreduce_split", Coll::Allreduce, ALLREDUCE(ring_allreduce_split), {"ring_allreduce_split", nullptr}},
    {"linear_allreduce_split", Coll::Allreduce, ALLREDUCE(linear_allreduce_split), {"linear_allreduce_split", nullptr}},
    {"hypercube_allreduce_split", Coll::Allreduce, ALLREDUCE(hypercube_allreduce_split), {"hypercube_allreduce_split", nullptr}},
    {"linear_reduce+linear_bc", Coll::Allreduce, REDUCE_BCAST(linear_reduce, linear_bc), {"linear_reduce", "linear_bc"}},
    {"hypercube_reduce+hypercube_bc", Coll::Allreduce, REDUCE_BCAST(hypercube_reduce, hypercube_bc), {"hypercube_reduce", "hypercube_bc"}},

    {"ring_allgather", Coll::Allgather, BLOCKS(ring_allgather), {"ring_allgather", nullptr}},
    {"linear_allgather", Coll::Allgather, BLOCKS(linear_allgather), {"linear_allgather", nullptr}},
    {"hypercube_allgather", Coll::Allgather, BLOCKS(hypercube_allgather), {"hypercube_allgather", nullptr}},

    {"ring_reduce_scatter", Coll::ReduceScatter, ALLREDUCE(ring_reduce_scatter), {"ring_reduce_scatter", nullptr}},
    {"linear_reduce_scatter", Coll::ReduceScatter, ALLREDUCE(linear_reduce_scatter), {"linear_reduce_scatter", nullptr}},
    {"hypercube_reduce_scatter", Coll::ReduceScatter, ALLREDUCE(hypercube_reduce_scatter), {"hypercube_reduce_scatter", nullptr}},

    {"linear_scatter", Coll::Scatter, ROOTED(linear_scatter), {"linear_scatter", nullptr}},
    {"hypercube_scatter", Coll::Scatter, ROOTED(hypercube_scatter), {"hypercube_scatter", nullptr}},
    {"star_scatter", Coll::Scatter, ROOTED(star_scatter), {"star_scatter", nullptr}},

    {"linear_gather", Coll::Gather, ROOTED(linear_gather), {"linear_gather", nullptr}},
    {"hypercube_gather", Coll::Gather, ROOTED(hypercube_gather), {"hypercube_gather", nullptr}},
    {"star_gather", Coll::Gather, ROOTED(star_gather), {"star_gather", nullptr}},

    // Proved for operators that do not commute (ordered.coll).
    {"linear_reduce_ordered", Coll::Reduce, REDUCE(linear_reduce_ordered), {"linear_reduce_ordered", nullptr}, true},
    {"hypercube_allreduce_ordered", Coll::Allreduce, ALLREDUCE(hypercube_allreduce_ordered), {"hypercube_allreduce_ordered", nullptr}, true},
    {"linear_reduce_ordered+linear_bc", Coll::Allreduce, REDUCE_BCAST(linear_reduce_ordered, linear_bc), {"linear_reduce_ordered", "linear_bc"}, true},
    {"linear_scan_ordered", Coll::Scan, ALLREDUCE(linear_scan_ordered), {"linear_scan_ordered", nullptr}, true},
    {"hypercube_scan_ordered", Coll::Scan, ALLREDUCE(hypercube_scan_ordered), {"hypercube_scan_ordered", nullptr}, true},

    {"linear_scan", Coll::Scan, ALLREDUCE(linear_scan), {"linear_scan", nullptr}},
    {"hypercube_scan", Coll::Scan, ALLREDUCE(hypercube_scan), {"hypercube_scan", nullptr}},

    {"ring_alltoall", Coll::Alltoall, BLOCKS(ring_alltoall), {"ring_alltoall", nullptr}},
    {"linear_alltoall", Coll::Alltoall, BLOCKS(linear_alltoall), {"linear_alltoall", nullptr}},
    {"hypercube_alltoall", Coll::Alltoall, BLOCKS(hypercube_alltoall), {"hypercube_alltoall", nullptr}},
    {"pairwise_exchange", Coll::Alltoall, BLOCKS(pairwise_exchange), {"pairwise_exchange", nullptr}},
};
const int candidateCount = sizeof candidates / sizeof candidates[0];
static_assert(sizeof candidates / sizeof candidates[0] <= 64,
              "the report keeps 64 schedules per collective");

} // namespace collc::mpi
