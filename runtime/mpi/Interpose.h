#pragma once
// libcollc_mpi: MPI's collective calls, run by proved schedules. This
// header is what every intercepted call shares; the calls themselves are in
// Reductions.cpp, Exchanges.cpp and Irregular.cpp, those only counted on
// their way to MPI in HandedOn.cpp, MPI_Init and MPI_Finalize (the report)
// in Interpose.cpp, and Fortran's names forward to them from Fortran.cpp.
//
// Each MPI_X is what a program calls (LD_PRELOAD, or linked before
// MPI); PMPI_X is the MPI library's own. A call runs a library schedule
// when one is proved for the communicator's size, chosen by the model
// (Choice.h), and otherwise goes to PMPI_X with its reason counted. Every
// test that decides the path reads only what MPI requires to be equal on
// every rank, so all ranks take the same one; after that, a failure only
// one rank can see aborts through the communicator's error handler rather
// than leave the others waiting.

#include "Choice.h"
#include "collc/Backend.h"
#include "collc/Datatype.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <numeric>

namespace collc::mpi {

/// What every intercepted call learns of its communicator first.
struct Comm {
  int rank = 0, size = 0;
};

/// The reason to hand on a call on `comm` before looking at its data, or
/// nothing (Reason::Count) with `c` filled.
Reason screen(Coll coll, MPI_Comm comm, Comm &c);

/// MPI_IN_PLACE where the call allows none (meaning::inPlaceFault, as the
/// engine refuses it), found before a buffer is staged through MPI's
/// marker. This rank may be the only one to pass it: the job is aborted.
int misplacedInPlace(Coll coll, const Comm &c, int root, const void *send,
                     const void *recv, MPI_Comm comm);

/// The block size in bytes (Table 4.1's m), or the reason it cannot run.
Reason blockBytes(int count, MPI_Datatype type, rt::TypeInfo &info,
                  int64_t &bytes);

/// Blocks of `p` sizes in bytes that differ, as blocks of the largest: its
/// size, or 0 where the padding would be more than an eighth of the data
/// or one element a block, whichever is more. An element is the sizes'
/// greatest common divisor (where n elements are split as n / p and
/// n / p + 1), at most 32 bytes (MPI's largest basic type): sizes with a
/// large common factor are not an even split. The sizes are the same at
/// every rank (MPI_Reduce_scatter's and MPI_Allgatherv's counts in bytes),
/// so this is too; a negative one is MPI's to report.
template <typename SizeOf> int64_t paddedSize(int p, SizeOf sizeOf) {
  int64_t total = 0, largest = 0, unit = 0;
  for (int i = 0; i < p; ++i) {
    const int64_t size = sizeOf(i);
    if (size < 0)
      return 0;
    total += size;
    largest = std::max(largest, size);
    unit = std::gcd(unit, size);
  }
  const int64_t padding = largest * p - total;
  constexpr int64_t largestElement = 32;
  if (padding > std::max(total / 8, std::min(unit, largestElement) * p))
    return 0;
  return largest;
}

/// A schedule's own result: once the choice is made, every rank is in the
/// schedule, so a failure here is one rank's (its buffers, memory, a
/// message that does not match) and must not leave the others waiting.
int ran(MPI_Comm comm, int rc, const char *what);

/// Stages the buffers of a call and runs its schedule: `in` the input
/// (null when in place), `out` the output (null where not significant).
struct Buffers {
  rt::Staged in, out;
};

/// A call's arguments but its buffers: every input to the decision whether
/// and how a schedule runs it (the rank and size follow from the
/// communicator).
struct CallKey {
  MPI_Comm comm{};
  MPI_Datatype sendtype{}, recvtype{};
  MPI_Op op{};
  int sendcount = 0, recvcount = 0, root = 0;
  bool sendInPlace = false, recvInPlace = false;
  friend bool operator==(const CallKey &, const CallKey &) = default;
};

/// A call that a schedule ran, remembered with its decision, so that the
/// same call again (but its buffers) runs that schedule at once. Only a
/// call whose types and operator are predefined is remembered (they never
/// change; a freed derived type's handle may come back for another type),
/// and only where its buffers go to the schedule as they are. A freed
/// communicator's handle may come back too: freeing it, by any call, frees
/// the schedules' duplicate on it, which mpiDuplicatesFreed() counts.
/// Zero-initialised, not MPI_COMM_NULL and the like (addresses in the MPI
/// library under Open MPI), so the thread-local tables need no initialiser
/// call at each use; an entry without a candidate matches nothing.
struct Remembered {
  CallKey key;
  uint64_t freed = 0; // mpiDuplicatesFreed() when remembered
  // The schedule's arguments but the buffers, and where those go: the
  // user's pointer, or else MPI_IN_PLACE (inPlace) or null.
  int count = 0, root = 0;
  MPI_Datatype type{};
  MPI_Op op{};
  bool passSend = false, passRecv = false, inPlace = false;
  const Candidate *candidate = nullptr;
  std::atomic<uint64_t> *calls = nullptr;
  const char *failure = nullptr; // what the whole path says when it fails
};

constexpr unsigned rememberedWays = 4; // a program cycles through a few
// Constant-initialised, so that the files that read it need no TLS wrapper
// call (GCC 12 and later).
extern constinit thread_local Remembered rememberedCalls[scheduledColls]
                                                        [rememberedWays];

/// The remembered call `key` of `coll`, or null. Inlined into each MPI_X.
[[gnu::always_inline]] inline const Remembered *recall(Coll coll,
                                                       const CallKey &key) {
  for (const Remembered &r : rememberedCalls[static_cast<int>(coll)])
    if (r.candidate && r.key == key &&
        r.freed == collc::rt::mpiDuplicatesFreed())
      return &r;
  return nullptr;
}

/// A remembered call run again on this call's buffers.
int runRemembered(const Remembered &r, const void *send, void *recv);

/// Remembers the call `key` that candidate `k` just ran with `a`, whose
/// buffers were the user's own where `passSend` and `passRecv` say; the
/// call again fails with `failure`, as this one would have. Timed calls
/// (the report) always take the whole path. Once the schedule has run, the
/// communicator has the duplicate whose freeing ends the entry (any rank
/// alone may find that it has not).
void remember(Coll coll, const CallKey &key, const Args &a, bool passSend,
              bool passRecv, bool inPlace, const Candidate &k,
              const char *failure);

} // namespace collc::mpi
