#pragma once
// Which proved schedule runs an intercepted collective, or why MPI's own
// does: decided from what MPI requires to be the same on every rank (the
// communicator's size, the message's size in bytes, the operator, the
// type signature), so every rank takes the same path.

#include "collc/Meaning.h"

#include <mpi.h>

#include <atomic>

#include <cstdint>
#include <iterator>

namespace collc::mpi {

/// The collectives the drop-in intercepts.
enum class Coll {
  Bcast,
  Reduce,
  Allreduce,
  Allgather,
  ReduceScatter, // MPI_Reduce_scatter_block, and MPI_Reduce_scatter with
                 // equal or padded counts
  Scatter,
  Gather,
  Scan,
  Exscan,
  Alltoall,
  Alltoallv,
  Gatherv,
  Scatterv,
  Allgatherv,
  // Collective calls no schedule runs: counted as handed on, with why.
  Barrier,
  Alltoallw,
  NeighborAllgather,
  NeighborAllgatherv,
  NeighborAlltoall,
  NeighborAlltoallv,
  NeighborAlltoallw,
  Ibarrier,
  Ibcast,
  Ireduce,
  Iallreduce,
  Iallgather,
  Iallgatherv,
  IreduceScatterBlock,
  IreduceScatter,
  Iscatter,
  Iscatterv,
  Igather,
  Igatherv,
  Iscan,
  Iexscan,
  Ialltoall,
  Ialltoallv,
  Ialltoallw,
  IneighborAllgather,
  IneighborAllgatherv,
  IneighborAlltoall,
  IneighborAlltoallv,
  IneighborAlltoallw,
  Count
};
/// The collectives a schedule may run: those before Barrier. What the
/// drop-in keeps per collective between calls is kept for these alone.
inline constexpr int scheduledColls = static_cast<int>(Coll::Barrier);

/// Each call's name (as its COLLC_MPI_<NAME> variable and the report say
/// it) and the collective it runs (a v-variant, its regular one's; none for
/// those no schedule runs), in the order of Coll.
struct CollInfo {
  const char *name;
  meaning::Kind kind = meaning::Kind::Broadcast;
};
inline constexpr CollInfo colls[] = {
    {"bcast", meaning::Kind::Broadcast},
    {"reduce", meaning::Kind::Reduce},
    {"allreduce", meaning::Kind::Allreduce},
    {"allgather", meaning::Kind::Allgather},
    {"reduce_scatter", meaning::Kind::ReduceScatter},
    {"scatter", meaning::Kind::Scatter},
    {"gather", meaning::Kind::Gather},
    {"scan", meaning::Kind::Scan},
    {"exscan", meaning::Kind::Exscan},
    {"alltoall", meaning::Kind::Alltoall},
    {"alltoallv", meaning::Kind::Alltoallv},
    {"gatherv", meaning::Kind::Gather},
    {"scatterv", meaning::Kind::Scatter},
    {"allgatherv", meaning::Kind::Allgather},
    {"barrier"},
    {"alltoallw"},
    {"neighbor_allgather"},
    {"neighbor_allgatherv"},
    {"neighbor_alltoall"},
    {"neighbor_alltoallv"},
    {"neighbor_alltoallw"},
    {"ibarrier"},
    {"ibcast"},
    {"ireduce"},
    {"iallreduce"},
    {"iallgather"},
    {"iallgatherv"},
    {"ireduce_scatter_block"},
    {"ireduce_scatter"},
    {"iscatter"},
    {"iscatterv"},
    {"igather"},
    {"igatherv"},
    {"iscan"},
    {"iexscan"},
    {"ialltoall"},
    {"ialltoallv"},
    {"ialltoallw"},
    {"ineighbor_allgather"},
    {"ineighbor_allgatherv"},
    {"ineighbor_alltoall"},
    {"ineighbor_alltoallv"},
    {"ineighbor_alltoallw"},
};
static_assert(std::size(colls) == static_cast<size_t>(Coll::Count));
constexpr const char *collName(Coll c) {
  return colls[static_cast<int>(c)].name;
}
constexpr meaning::Kind kindOf(Coll c) {
  return colls[static_cast<int>(c)].kind;
}

/// Why a call went to MPI's own collective. Written once; the report
/// prints them.
enum class Reason {
  Invalid,        // an argument MPI rejects: MPI reports it
  Pinned,         // COLLC_MPI_<NAME>=mpi, or COLLC_MPI=off
  Intercomm,      // an intercommunicator
  OneRank,        // nothing to schedule
  Empty,          // count or type size 0
  TooLarge,       // over INT_MAX bytes in a block
  RanksUnproved,  // no schedule proved for this many ranks
  NonCommutative, // no schedule proved to fold in rank order
  OpOnType,       // no typed fold for this operator and type
  UserOpLayout,   // a user operator on a type with holes
  MixedType,      // a reduction over a type of several basic types
  UnequalCounts,  // irregular counts (allgatherv, reduce_scatter)
  RootCounts,     // counts only the root knows (gatherv, scatterv)
  NoSchedule,     // the library has no schedule for this collective
  Nonblocking,    // a nonblocking call: MPI's own progresses it
  Count
};
const char *reasonText(Reason r);

/// Everything a schedule of the drop-in is called with: the MPI
/// arguments, types already made bytes or the reduction's base type (but
/// MPI_Alltoallv's, which the runtime stages itself).
struct Args {
  const void *send = nullptr;
  void *recv = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_BYTE;
  MPI_Op op = MPI_OP_NULL;
  int root = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  // MPI_Alltoallv's blocks, `type` their send type and `recvType` their
  // receive type, as the user passed them (null elsewhere).
  const int *sendCounts = nullptr, *sendDispls = nullptr;
  const int *recvCounts = nullptr, *recvDispls = nullptr;
  MPI_Datatype recvType = MPI_BYTE;
};
using Run = int (*)(const Args &);

/// The communicator sizes a schedule is proved for (candidates.py reads
/// them from the emitted header): lo..hi, only the powers of two among
/// them on a hypercube. {0, 0}: those the price table has.
struct Sizes {
  int lo = 0, hi = 0;
  bool powersOfTwo = false;
  bool admit(int p) const {
    return p >= lo && p <= hi && (!powersOfTwo || (p & (p - 1)) == 0);
  }
};

/// A way to run a collective: one library schedule, or two run one after
/// the other (all-reduce as a reduce, then a broadcast from its root).
struct Candidate {
  const char *name;
  Coll coll;
  Run run;
  const char *parts[2]; // the schedules priced (the second may be null)
  // Proved to fold in rank order (`commutative: false`, ordered.coll): it
  // may run an operator that does not commute, unrotated.
  bool keepsOrder = false;
  Sizes sizes[2]; // each part's
};
/// Every candidate, and how many: DropinSchedules.cpp, which
/// candidates.py writes from the emitted headers (collc_add_mpi_library).
extern const Candidate candidates[];
extern const int candidateCount;

/// The decision for one call: a candidate, or a reason to hand it on.
struct Choice {
  const Candidate *candidate = nullptr;
  Reason reason = Reason::NoSchedule;
};

/// The cheapest candidate for `coll` on `ranks` ranks with blocks of
/// `bytes` (Table 4.1's m) under the model (COLLC_MPI_MODEL, else the
/// build's), or the one a COLLC_MPI_<NAME> pins.
/// `ordered`: the operator does not commute, so only a candidate that
/// keeps rank order may run it.
Choice choose(Coll coll, int ranks, int64_t bytes, bool ordered = false);
/// A decision made before the choice (Reason::Pinned when the
/// environment sends every call of `coll` to MPI).
bool pinnedToMpi(Coll coll);

/// Adds `n` to a tally that only its own thread writes: no locked
/// instruction, and the report may read it at any time.
template <typename T> void add(std::atomic<T> &to, T n) {
  to.store(to.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

/// Counts a call for the report (COLLC_MPI_REPORT=1), with its time.
void count(Coll coll, const Choice &choice, double seconds);
/// This thread's count of `coll`'s calls run by `candidate`, which
/// count() adds to: a call remembered with its decision adds to it
/// directly. Valid while the calling thread lives.
std::atomic<uint64_t> &callsOf(Coll coll, const Candidate &candidate);
bool reporting();
/// Prints the report at rank 0 of MPI_COMM_WORLD (MPI_Finalize).
void printReport();
/// At MPI_Init: the report is printed when MPI_Finalize frees MPI_COMM_SELF's
/// attributes, last in first out (MPI 3.1 §8.7.1), so after the program's own
/// delete callbacks, and the collectives they call, have run.
void armReport();
/// At MPI_Finalize: prints the report unless armReport() has it printed.
void reportBeforeFinalize();

/// A failure only this rank sees, after the choice: the communicator's
/// error handler, then an abort, since the other ranks may be waiting on
/// this one's messages (never a rank left waiting).
int localFailure(MPI_Comm comm, int code, const char *what);

} // namespace collc::mpi
