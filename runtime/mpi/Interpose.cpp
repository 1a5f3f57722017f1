// libcollc_mpi: MPI's collective calls, run by proved schedules.
//
// Each MPI_X below is what a program calls (LD_PRELOAD, or linked before
// MPI); PMPI_X is the MPI library's own. A call runs a library schedule
// when one is proved for the communicator's size, chosen by the model
// (Choice.h), and otherwise goes to PMPI_X with its reason counted. Every
// test that decides the path reads only what MPI requires to be equal on
// every rank, so all ranks take the same one; after that, a failure only
// one rank can see aborts through the communicator's error handler rather
// than leave the others waiting.

#include "Agreement.h"
#include "Choice.h"
#include "Route.h"
#include "collc/Datatype.h"
#include "collc/Meaning.h"

#include "collc/Backend.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <numeric>
#include <vector>

using namespace collc::mpi;
using collc::rt::Staged;
using collc::rt::TypeInfo;
using collc::rt::describe;

namespace {

/// What every intercepted call learns of its communicator first.
struct Comm {
  int rank = 0, size = 0;
};

/// The reason to hand on a call on `comm` before looking at its data, or
/// nothing (Reason::Count) with `c` filled.
Reason screen(Coll coll, MPI_Comm comm, Comm &c) {
  if (comm == MPI_COMM_NULL)
    return Reason::Invalid;
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
    return Reason::Invalid;
  if (inter)
    return Reason::Intercomm;
  PMPI_Comm_size(comm, &c.size);
  PMPI_Comm_rank(comm, &c.rank);
  if (pinnedToMpi(coll))
    return Reason::Pinned;
  if (c.size == 1)
    return Reason::OneRank;
  return Reason::Count;
}

/// MPI_IN_PLACE where the call allows none (meaning::inPlaceFault, as the
/// engine refuses it), found before a buffer is staged through MPI's
/// marker. This rank may be the only one to pass it: the job is aborted.
int misplacedInPlace(Coll coll, const Comm &c, int root, const void *send,
                     const void *recv, MPI_Comm comm) {
  const char *fault = collc::meaning::inPlaceFault(
      collc::meaning::conditionsOf(kindOf(coll)), c.rank, root,
      send == MPI_IN_PLACE, recv == MPI_IN_PLACE);
  if (!fault)
    return MPI_SUCCESS;
  char what[160];
  std::snprintf(what, sizeof what, "%s: %s", collName(coll), fault);
  return localFailure(comm, MPI_ERR_BUFFER, what);
}

/// The block size in bytes (Table 4.1's m), or the reason it cannot run.
Reason blockBytes(int count, MPI_Datatype type, TypeInfo &info,
                  int64_t &bytes) {
  if (count < 0 || type == MPI_DATATYPE_NULL ||
      describe(type, info) != MPI_SUCCESS)
    return Reason::Invalid;
  bytes = static_cast<int64_t>(count) * info.size;
  if (bytes == 0)
    return Reason::Empty;
  if (bytes > INT_MAX)
    return Reason::TooLarge;
  return Reason::Count;
}

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
Reason foldOf(int count, MPI_Datatype type, const TypeInfo &info, MPI_Op op,
              Fold &fold) {
  if (op == MPI_OP_NULL)
    return Reason::Invalid;
  // A predefined type and operator never change: the verdict on the last
  // few pairs holds (a repeated call asks MPI nothing).
  thread_local MPI_Datatype lastType[4] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL,
                                           MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
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

/// Whether MPI's own reduction should get the call as its basic type: a
/// predefined operator on a derived type, which the schedules fold as its
/// basic type and some MPI libraries refuse (Open MPI 4.1), so that a call
/// means the same whichever runs it.
/// `count` elements of `type` must be a count of its basic type that MPI's
/// int holds.
bool asBasicType(MPI_Datatype type, MPI_Op op, int count, TypeInfo &info) {
  return type != MPI_DATATYPE_NULL && collc::rt::predefinedOp(op) &&
         describe(type, info) == MPI_SUCCESS && !info.named &&
         info.base != MPI_DATATYPE_NULL &&
         int64_t{count} * info.perElement <= INT_MAX;
}

/// MPI's own reduction `reduce(send, recv, elements of info.base)` on
/// `inCount` elements of `type` in and `outCount` out, packed and
/// unpacked (in place: MPI_IN_PLACE as `send`; `output`: whether the
/// receive buffer is significant here).
template <typename Reduce>
int reduceAsBasicType(const void *send, void *recv, int64_t inCount,
                      int64_t outCount, MPI_Datatype type, const TypeInfo &info,
                      bool output, MPI_Comm comm, Reduce &&reduce) {
  const bool inPlace = send == MPI_IN_PLACE;
  Staged in, out;
  int rc = MPI_SUCCESS;
  if (!inPlace)
    rc = in.start(send, inCount, type, info, true, false, comm);
  // A receive buffer that is not significant here still goes to MPI as a
  // buffer (MPICH checks an exclusive scan's at rank 0), never written back.
  const bool staged = output || inPlace || recv;
  if (!rc && staged)
    rc = out.start(recv, inPlace ? inCount : outCount, type, info, inPlace,
                   output, comm);
  if (rc)
    return rc;
  rc = reduce(inPlace ? MPI_IN_PLACE : in.bytes(),
              staged ? out.bytes() : nullptr, info.perElement);
  if (rc)
    return rc;
  return out.finish(comm);
}

/// A schedule's own result: once the choice is made, every rank is in the
/// schedule, so a failure here is one rank's (its buffers, memory, a
/// message that does not match) and must not leave the others waiting.
int ran(MPI_Comm comm, int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return rc;
  return localFailure(comm, rc, what);
}

/// Stages the buffers of a call and runs its schedule: `in` the input
/// (null when in place), `out` the output (null where not significant).
struct Buffers {
  Staged in, out;
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
thread_local Remembered rememberedCalls[scheduledColls][rememberedWays];
thread_local unsigned rememberedNext[scheduledColls];

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
int runRemembered(const Remembered &r, const void *send, void *recv) {
  Args a;
  a.send = r.passSend ? send : (r.inPlace ? MPI_IN_PLACE : nullptr);
  a.recv = r.passRecv ? recv : (r.inPlace ? MPI_IN_PLACE : nullptr);
  a.count = r.count;
  a.type = r.type;
  a.op = r.op;
  a.root = r.root;
  a.comm = r.key.comm;
  add(*r.calls, uint64_t{1});
  if (int rc = r.candidate->run(a))
    return ran(a.comm, rc, r.failure);
  return MPI_SUCCESS;
}

/// Remembers the call `key` that candidate `k` just ran with `a`, whose
/// buffers were the user's own where `passSend` and `passRecv` say; the
/// call again fails with `failure`, as this one would have. Timed calls
/// (the report) always take the whole path. Once the schedule has run, the
/// communicator has the duplicate whose freeing ends the entry (any rank
/// alone may find that it has not).
void remember(Coll coll, const CallKey &key, const Args &a, bool passSend,
              bool passRecv, bool inPlace, const Candidate &k,
              const char *failure) {
  if (reporting() || checking() || !collc::rt::hasMpiBackend(key.comm))
    return;
  unsigned &next = rememberedNext[static_cast<int>(coll)];
  Remembered &r = rememberedCalls[static_cast<int>(coll)][next];
  next = (next + 1) % rememberedWays;
  r.key = key;
  r.freed = collc::rt::mpiDuplicatesFreed();
  r.count = a.count;
  r.root = a.root;
  r.type = a.type;
  r.op = a.op;
  r.passSend = passSend;
  r.passRecv = passRecv;
  r.inPlace = inPlace;
  r.candidate = &k;
  r.calls = &callsOf(coll, k);
  r.failure = failure;
}

/// One side of an irregular exchange as bytes: p blocks of `counts[j]`
/// elements at `displs[j]` extents, each block where the user put it when
/// the type lies in one piece (the block's bytes and offset fit an int),
/// else packed one after another into a copy, read in when `read`; finish()
/// unpacks the copy when `write`.
class Blocks {
public:
  /// An MPI error code, and `why`, for what only this rank can see: a
  /// negative count, a null buffer that should hold data, over 2 GiB.
  int start(const void *buf, const int *counts, const int *displs,
            MPI_Datatype type, const TypeInfo &info, int p, bool read,
            bool write, bool copy, MPI_Comm comm) {
    user = static_cast<char *>(const_cast<void *>(buf));
    userCounts = counts;
    userDispls = displs;
    userType = type;
    extent = info.extent;
    packed = copy || !info.contiguous(2);
    writeBack = false;
    byteCounts.resize(static_cast<size_t>(p));
    byteDispls.resize(static_cast<size_t>(p));
    int64_t total = 0;
    for (int j = 0; j < p; ++j) {
      if (counts[j] < 0) {
        why = "a negative count";
        return MPI_ERR_COUNT;
      }
      const int64_t bytes = static_cast<int64_t>(counts[j]) * info.size;
      const int64_t at = static_cast<int64_t>(displs[j]) * info.extent;
      if (bytes > INT_MAX) {
        why = "a block over 2 GiB";
        return MPI_ERR_COUNT;
      }
      if (at < 0 || at > INT_MAX)
        packed = true;
      byteCounts[static_cast<size_t>(j)] = static_cast<int>(bytes);
      byteDispls[static_cast<size_t>(j)] = static_cast<int>(at);
      total += bytes;
    }
    if (total > 0 && !user) {
      why = "a null buffer where this rank has data";
      return MPI_ERR_BUFFER;
    }
    if (!packed) {
      base = user ? user + info.trueLb : nullptr;
      return MPI_SUCCESS;
    }
    if (total > INT_MAX) {
      why = "over 2 GiB on one side of a rank";
      return MPI_ERR_COUNT;
    }
    data.resize(static_cast<size_t>(total));
    base = data.data();
    for (int j = 0, at = 0; j < p; ++j) {
      byteDispls[static_cast<size_t>(j)] = at;
      at += byteCounts[static_cast<size_t>(j)];
    }
    writeBack = write;
    for (int j = 0; read && j < p; ++j) {
      int position = byteDispls[static_cast<size_t>(j)];
      // Nothing to pack for no data (a type of size 0 included).
      if (byteCounts[static_cast<size_t>(j)] > 0 &&
          PMPI_Pack(block(j), counts[j], type, base, static_cast<int>(total),
                    &position, comm) != MPI_SUCCESS) {
        why = "cannot pack a block";
        return MPI_ERR_INTERN;
      }
    }
    return MPI_SUCCESS;
  }

  int finish(MPI_Comm comm) {
    for (size_t j = 0; writeBack && j < byteCounts.size(); ++j) {
      int position = byteDispls[j];
      if (byteCounts[j] > 0 &&
          PMPI_Unpack(base, static_cast<int>(data.size()), &position,
                      block(static_cast<int>(j)), userCounts[j], userType,
                      comm) != MPI_SUCCESS)
        return MPI_ERR_INTERN;
    }
    return MPI_SUCCESS;
  }

  char *base = nullptr;
  std::vector<int> byteCounts, byteDispls;
  const char *why = "";

private:
  char *block(int j) const {
    return user + static_cast<MPI_Aint>(userDispls[j]) * extent;
  }

  char *user = nullptr;
  const int *userCounts = nullptr, *userDispls = nullptr;
  MPI_Datatype userType = MPI_DATATYPE_NULL;
  MPI_Aint extent = 0;
  bool packed = false, writeBack = false;
  std::vector<char> data;
};

/// MPI_Alltoallv by candidate `k` (an alltoallv pattern of 001 §3), both
/// sides as bytes: the pattern's messages say what they carry, so each
/// rank's own counts and layouts are all it needs.
int alltoallvBy(const Candidate &k, const void *send, const int *sendcounts,
                const int *sdispls, MPI_Datatype sendtype, void *recv,
                const int *recvcounts, const int *rdispls,
                MPI_Datatype recvtype, MPI_Comm comm, int p) {
  // In place, the send arguments are ignored (MPI 4.0 §6.8): each block
  // is read from where it is received, before the exchange overwrites it.
  const bool inPlace = send == MPI_IN_PLACE;
  if (!recvcounts || !rdispls || (!inPlace && (!sendcounts || !sdispls)))
    return localFailure(comm, MPI_ERR_ARG,
                        "MPI_Alltoallv: a null count or displacement array");
  TypeInfo sendInfo, recvInfo;
  if (recvtype == MPI_DATATYPE_NULL ||
      describe(recvtype, recvInfo) != MPI_SUCCESS ||
      (!inPlace && (sendtype == MPI_DATATYPE_NULL ||
                    describe(sendtype, sendInfo) != MPI_SUCCESS)))
    return localFailure(comm, MPI_ERR_TYPE,
                        "MPI_Alltoallv: an invalid datatype");
  // Kept across calls: a repeated exchange allocates nothing.
  thread_local Blocks in, out;
  int rc = inPlace ? in.start(recv, recvcounts, rdispls, recvtype, recvInfo, p,
                              true, false, true, comm)
                   : in.start(send, sendcounts, sdispls, sendtype, sendInfo, p,
                              true, false, false, comm);
  const char *why = in.why;
  if (rc == MPI_SUCCESS) {
    rc = out.start(recv, recvcounts, rdispls, recvtype, recvInfo, p, false,
                   true, false, comm);
    why = out.why;
  }
  if (rc != MPI_SUCCESS) {
    char what[128];
    std::snprintf(what, sizeof what, "MPI_Alltoallv: %s", why);
    return localFailure(comm, rc, what);
  }
  Args a;
  a.send = in.base;
  a.recv = out.base;
  a.type = MPI_BYTE;
  a.comm = comm;
  a.sendCounts = in.byteCounts.data();
  a.sendDispls = in.byteDispls.data();
  a.recvCounts = out.byteCounts.data();
  a.recvDispls = out.byteDispls.data();
  if (int r = k.run(a))
    return ran(comm, r, "MPI_Alltoallv: the exchange failed");
  return ran(comm, out.finish(comm), "MPI_Alltoallv: cannot unpack");
}

} // namespace

extern "C" {

namespace {

/// MPI_Bcast's whole path, out of line, as decideReduction's.
[[gnu::noinline]] int decideBcast(const CallKey &key, void *buf, int count,
                                  MPI_Datatype type, int root, MPI_Comm comm) {
  Comm c;
  TypeInfo info;
  int64_t bytes = 0;
  if (int rc = checked(comm, [&] {
        return agreed(Coll::Bcast, root, MPI_OP_NULL, count, type);
      }))
    return rc;
  Reason why = screen(Coll::Bcast, comm, c);
  if (why == Reason::Count && (root < 0 || root >= c.size))
    why = Reason::Invalid;
  if (why == Reason::Count)
    why = blockBytes(count, type, info, bytes);
  const Choice choice = why == Reason::Count
                            ? choose(Coll::Bcast, c.size, bytes)
                            : refuse(why);
  return route(
      Coll::Bcast, choice,
      [&](const Candidate &k) {
        if (int rc = misplacedInPlace(Coll::Bcast, c, root, nullptr, buf, comm))
          return rc;
        Staged data;
        const bool atRoot = c.rank == root;
        if (int rc = data.start(buf, count, type, info, atRoot, !atRoot, comm))
          return ran(comm, rc, "MPI_Bcast: cannot stage the buffer");
        Args a;
        a.recv = data.bytes();
        a.count = static_cast<int>(bytes);
        a.root = root;
        a.comm = comm;
        if (int rc = k.run(a))
          return ran(comm, rc, "MPI_Bcast: the schedule failed");
        if (info.named && data.bytes() == buf)
          remember(Coll::Bcast, key, a, false, true, false, k,
                   "MPI_Bcast: the schedule failed");
        return ran(comm, data.finish(comm), "MPI_Bcast: cannot unpack");
      },
      [&] { return PMPI_Bcast(buf, count, type, root, comm); });
}

} // namespace

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root,
              MPI_Comm comm) {
  const CallKey key{comm, type, type, {}, count, count, root};
  if (const Remembered *r = recall(Coll::Bcast, key))
    return runRemembered(*r, nullptr, buf);
  return decideBcast(key, buf, count, type, root, comm);
}

namespace {

/// A reduce by a schedule that keeps rank order (proved for root 0) to any
/// `root`: the schedule runs unrotated to rank 0, into scratch there, then
/// rank 0 sends the result to the root's `out`, one message more. It goes
/// over the schedules' own duplicate of the communicator with tag 0: the
/// root posts its receive only after its part of the schedule is done, and
/// messages from one rank with one tag arrive in the order sent, so no
/// step's message (and no later call's) can take its place.
int reduceThenMove(const Candidate &k, Args a, const Comm &c, int root,
                   char *out) {
  collc::rt::Backend *backend = nullptr;
  // Every rank alike: the duplicate is made on first use, collectively.
  if (int rc = collc::rt::makeMpiBackend(a.comm, backend))
    return rc;
  MPI_Aint lb = 0, extent = 0;
  if (int rc = PMPI_Type_get_extent(a.type, &lb, &extent))
    return rc;
  const size_t resultBytes =
      static_cast<size_t>(a.count) * static_cast<size_t>(extent);
  std::vector<char> scratch(c.rank == 0 ? resultBytes : 0);
  a.root = 0;
  if (c.rank == 0)
    a.recv = scratch.data();
  if (int rc = k.run(a))
    return rc;
  if (c.rank == 0)
    return backend->sendOne(root, 0, {scratch.data(), resultBytes});
  if (c.rank != root)
    return MPI_SUCCESS;
  size_t got = 0;
  if (int rc = backend->recvOne(0, 0, {out, resultBytes}, got))
    return rc;
  return got == resultBytes ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
}

/// Whether `rank`'s receive buffer is significant: a reduce's at its root
/// alone, an exclusive scan's everywhere but rank 0 (MPI 4.0 §6.11.2).
bool hasOutput(Coll coll, int rank, int root) {
  return coll == Coll::Reduce ? rank == root
                              : coll != Coll::Exscan || rank != 0;
}

/// The whole path of a reduction (Reduce, Allreduce, Scan, Exscan; `root`
/// < 0 for the unrooted ones): screen, choose, stage and run, or hand on.
/// Out of line, so that the remembered call's path below stays short.
[[gnu::noinline]] int
decideReduction(Coll coll, const CallKey &key, const void *send, void *recv,
                int count, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm,
                int (*theirs)(const void *, void *, int, MPI_Datatype, MPI_Op,
                              int, MPI_Comm)) {
  Comm c;
  TypeInfo info;
  int64_t bytes = 0;
  Fold fold;
  if (int rc =
          checked(comm, [&] { return agreed(coll, root, op, count, type); }))
    return rc;
  Reason why = screen(coll, comm, c);
  if (why == Reason::Count && coll == Coll::Reduce &&
      (root < 0 || root >= c.size))
    why = Reason::Invalid;
  if (why == Reason::Count)
    why = blockBytes(count, type, info, bytes);
  if (why == Reason::Count)
    why = foldOf(count, type, info, op, fold);
  // The schedules that keep rank order are proved for root 0: another root
  // would rotate the ranks, and the order with them. So such a reduce runs
  // to rank 0 and its result then moves to the root.
  const bool moved =
      why == Reason::Count && fold.ordered && coll == Coll::Reduce && root != 0;
  const Choice choice = why == Reason::Count
                            ? choose(coll, c.size, bytes, fold.ordered)
                            : refuse(why);
  // Remembered only where the buffers go to the schedule as they are.
  const bool rememberable = choice.candidate && info.named &&
                            fold.type == type && !moved &&
                            collc::rt::predefinedOp(op);
  return route(
      coll, choice,
      [&](const Candidate &k) {
        if (int rc = misplacedInPlace(coll, c, root, send, recv, comm))
          return rc;
        const bool inPlace = send == MPI_IN_PLACE;
        // A reduce's receive buffer is significant at its root alone, an
        // exclusive scan's everywhere but rank 0 (hasOutput).
        const bool output = hasOutput(coll, c.rank, root);
        Buffers b;
        int rc = MPI_SUCCESS;
        if (!inPlace)
          rc = b.in.start(send, count, type, info, true, false, comm);
        if (!rc && (output || inPlace))
          rc = b.out.start(recv, count, type, info, inPlace, output, comm);
        if (rc)
          return ran(comm, rc, "cannot stage the buffers of a reduction");
        Args a = fold.args(inPlace ? MPI_IN_PLACE : b.in.bytes(),
                           (output || inPlace) ? b.out.bytes() : nullptr, op,
                           comm, root < 0 ? 0 : root);
        if (moved) {
          // The root contributes like any rank; rank 0 folds into scratch.
          a.send = inPlace ? b.out.bytes() : a.send;
          a.recv = nullptr;
          if (int rc = reduceThenMove(k, a, c, root, b.out.bytes()))
            return ran(comm, rc,
                       "a reduction's result cannot move to its root");
        } else if (int rc = k.run(a)) {
          return ran(comm, rc, "a reduction's schedule failed");
        }
        if (rememberable && (inPlace || a.send == send) &&
            (!(output || inPlace) || a.recv == recv))
          remember(coll, key, a, true, output || inPlace, false, k,
                   "a reduction's schedule failed");
        return ran(comm, b.out.finish(comm), "cannot unpack a reduction");
      },
      [&] {
        TypeInfo basic;
        if (why == Reason::Invalid || why == Reason::Intercomm ||
            !asBasicType(type, op, count, basic))
          return theirs(send, recv, count, type, op, root, comm);
        const bool output = hasOutput(coll, c.rank, root);
        return reduceAsBasicType(
            send, recv, count, count, type, basic, output, comm,
            [&](const void *s, void *r, int per) {
              return theirs(s, r, count * per, basic.base, op, root, comm);
            });
      });
}

// Inlined into each MPI_X, whose constant kind and root fold away.
[[gnu::always_inline]] inline int
reduction(Coll coll, const void *send, void *recv, int count, MPI_Datatype type,
          MPI_Op op, int root, MPI_Comm comm,
          int (*theirs)(const void *, void *, int, MPI_Datatype, MPI_Op, int,
                        MPI_Comm)) {
  const CallKey key{comm,  type,  type, op,
                    count, count, root, send == MPI_IN_PLACE};
  if (const Remembered *r = recall(coll, key))
    return runRemembered(*r, send, recv);
  return decideReduction(coll, key, send, recv, count, type, op, root, comm,
                         theirs);
}

} // namespace

int MPI_Reduce(const void *send, void *recv, int count, MPI_Datatype type,
               MPI_Op op, int root, MPI_Comm comm) {
  return reduction(Coll::Reduce, send, recv, count, type, op, root, comm,
                   PMPI_Reduce);
}

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                  MPI_Op op, MPI_Comm comm) {
  return reduction(
      Coll::Allreduce, send, recv, count, type, op, -1, comm,
      [](const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int,
         MPI_Comm cm) { return PMPI_Allreduce(s, r, n, t, o, cm); });
}

int MPI_Scan(const void *send, void *recv, int count, MPI_Datatype type,
             MPI_Op op, MPI_Comm comm) {
  return reduction(
      Coll::Scan, send, recv, count, type, op, -1, comm,
      [](const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int,
         MPI_Comm cm) { return PMPI_Scan(s, r, n, t, o, cm); });
}

int MPI_Exscan(const void *send, void *recv, int count, MPI_Datatype type,
               MPI_Op op, MPI_Comm comm) {
  return reduction(Coll::Exscan, send, recv, count, type, op, -1, comm,
                   [](const void *s, void *r, int n, MPI_Datatype t, MPI_Op o,
                      int,
                      MPI_Comm cm) { return PMPI_Exscan(s, r, n, t, o, cm); });
}

namespace {

/// MPI_Reduce_scatter with unequal counts by `k`, a reduce-scatter of p
/// blocks of `padded` elements: the input laid out a block each, zeros
/// after its own count, and the result's own count kept.
int reduceScatterPadded(const Candidate &k, const void *send, void *recv,
                        const int *counts, int padded, MPI_Datatype type,
                        const TypeInfo &info, const Fold &fold, MPI_Op op,
                        const Comm &c, MPI_Comm comm) {
  const bool inPlace = send == MPI_IN_PLACE;
  int64_t total = 0;
  for (int i = 0; i < c.size; ++i)
    total += counts[i];
  const int own = counts[c.rank];
  Buffers b;
  int rc =
      b.in.start(inPlace ? recv : send, total, type, info, true, false, comm);
  if (!rc)
    rc = b.out.start(recv, own, type, info, false, true, comm);
  if (rc)
    return ran(comm, rc, "MPI_Reduce_scatter: cannot stage the buffers");
  const int64_t block = int64_t{padded} * info.size;
  std::vector<char> in(static_cast<size_t>(block * c.size)), out(block);
  for (int64_t i = 0, at = 0; i < c.size; at += counts[i++])
    std::memcpy(in.data() + i * block, b.in.bytes() + at * info.size,
                static_cast<size_t>(int64_t{counts[i]} * info.size));
  if (int rc = k.run(fold.args(in.data(), out.data(), op, comm)))
    return ran(comm, rc, "MPI_Reduce_scatter: the schedule failed");
  std::memcpy(b.out.bytes(), out.data(),
              static_cast<size_t>(int64_t{own} * info.size));
  return ran(comm, b.out.finish(comm), "MPI_Reduce_scatter: cannot unpack");
}

/// MPI_Reduce_scatter_block, or MPI_Reduce_scatter where `counts` is
/// given; only the former is remembered under `key` (the latter's counts
/// are an array, which no key holds).
[[gnu::noinline]] int reduceScatterBlock(const CallKey &key, const void *send,
                                         void *recv, int count,
                                         MPI_Datatype type, MPI_Op op,
                                         MPI_Comm comm, const int *counts) {
  Comm c;
  TypeInfo info;
  int64_t bytes = 0;
  Fold fold;
  Reason why = screen(Coll::ReduceScatter, comm, c);
  if (int rc = checked(comm, [&] {
        // The block variant's counts are p alike: the same call as
        // MPI_Reduce_scatter with those counts.
        Agreed a =
            agreed(Coll::ReduceScatter, -1, op, counts ? 1 : count, type);
        if (counts) {
          a.bytes.reset();
          a.counts = countsDigest(c.size, counts, type);
        } else if (count >= 0) {
          const std::vector<int> same(static_cast<size_t>(c.size), count);
          a.counts = countsDigest(c.size, same.data(), type);
        }
        return a;
      }))
    return rc;
  // MPI_Reduce_scatter: the counts are the same argument at every rank,
  // read on every path that has the size (MPI's own gets them as the
  // block's count when it folds the basic type).
  bool unequal = false;
  if (counts && c.size > 0) {
    count = counts[0];
    for (int i = 1; i < c.size; ++i)
      unequal = unequal || counts[i] != count;
  }
  // Unequal counts run as blocks of the largest, padded, where that is
  // cheap (paddedSize), and only with a predefined operator: a user's
  // would see the padding.
  if (why == Reason::Count && unequal) {
    const int64_t size = bytesOf(1, type);
    count =
        collc::rt::predefinedOp(op) && size > 0
            ? static_cast<int>(
                  paddedSize(c.size, [&](int i) { return counts[i] * size; }) /
                  size)
            : 0;
    if (!count)
      why = Reason::UnequalCounts;
  }
  if (why == Reason::Count)
    why = blockBytes(count, type, info, bytes);
  if (why == Reason::Count)
    why = foldOf(count, type, info, op, fold);
  const Choice choice =
      why == Reason::Count
          ? choose(Coll::ReduceScatter, c.size, bytes, fold.ordered)
          : refuse(why);
  return route(
      Coll::ReduceScatter, choice,
      [&](const Candidate &k) {
        if (int rc =
                misplacedInPlace(Coll::ReduceScatter, c, -1, send, recv, comm))
          return rc;
        if (unequal)
          return reduceScatterPadded(k, send, recv, counts, count, type, info,
                                     fold, op, c, comm);
        const bool inPlace = send == MPI_IN_PLACE;
        Buffers b;
        int rc = MPI_SUCCESS;
        // In place, the input is the receive buffer, p blocks long; the
        // result is its first block.
        if (!inPlace)
          rc = b.in.start(send, int64_t{count} * c.size, type, info, true,
                          false, comm);
        if (!rc)
          rc = b.out.start(recv, inPlace ? int64_t{count} * c.size : count,
                           type, info, inPlace, true, comm);
        if (rc)
          return ran(comm, rc, "MPI_Reduce_scatter: cannot stage the buffers");
        const Args a = fold.args(inPlace ? MPI_IN_PLACE : b.in.bytes(),
                                 b.out.bytes(), op, comm);
        if (int rc = k.run(a))
          return ran(comm, rc, "MPI_Reduce_scatter: the schedule failed");
        if (!counts && info.named && fold.type == type &&
            collc::rt::predefinedOp(op) && (inPlace || a.send == send) &&
            a.recv == recv)
          remember(Coll::ReduceScatter, key, a, true, true, false, k,
                   "MPI_Reduce_scatter: the schedule failed");
        return ran(comm, b.out.finish(comm),
                   "MPI_Reduce_scatter: cannot unpack");
      },
      [&] {
        TypeInfo basic;
        if (why == Reason::Invalid || why == Reason::Intercomm || unequal ||
            !asBasicType(type, op, count, basic))
          return counts
                     ? PMPI_Reduce_scatter(send, recv, counts, type, op, comm)
                     : PMPI_Reduce_scatter_block(send, recv, count, type, op,
                                                 comm);
        return reduceAsBasicType(
            send, recv, int64_t{count} * c.size, count, type, basic, true, comm,
            [&](const void *s, void *r, int per) {
              return PMPI_Reduce_scatter_block(s, r, count * per, basic.base,
                                               op, comm);
            });
      });
}

} // namespace

int MPI_Reduce_scatter_block(const void *send, void *recv, int count,
                             MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const CallKey key{comm,  type,  type, op,
                    count, count, -1,   send == MPI_IN_PLACE};
  if (const Remembered *r = recall(Coll::ReduceScatter, key))
    return runRemembered(*r, send, recv);
  return reduceScatterBlock(key, send, recv, count, type, op, comm, nullptr);
}

int MPI_Reduce_scatter(const void *send, void *recv, const int counts[],
                       MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (!counts)
    return PMPI_Reduce_scatter(send, recv, counts, type, op, comm);
  return reduceScatterBlock({}, send, recv, 0, type, op, comm, counts);
}

namespace {

using BlocksCall = int (*)(const void *, int, MPI_Datatype, void *, int,
                           MPI_Datatype, int, MPI_Comm);

/// Allgather, Alltoall, Gather and Scatter: blocks of bytes. `root` < 0
/// for the unrooted ones. The side of a block that is significant at this
/// rank gives its size (MPI requires the signatures to match). The whole
/// path, out of line, as decideReduction's.
[[gnu::noinline]] int decideBlocks(Coll coll, const CallKey &key,
                                   const void *send, int sendcount,
                                   MPI_Datatype sendtype, void *recv,
                                   int recvcount, MPI_Datatype recvtype,
                                   int root, MPI_Comm comm, BlocksCall theirs) {
  Comm c;
  TypeInfo sendInfo, recvInfo;
  Reason why = screen(coll, comm, c);
  const collc::meaning::Conditions &m =
      collc::meaning::conditionsOf(kindOf(coll));
  if (why == Reason::Count && m.rooted() && (root < 0 || root >= c.size))
    why = Reason::Invalid;
  // The buffers this rank uses (collc/Meaning.h), with MPI_IN_PLACE where
  // the call allows it; elsewhere it is refused before a buffer is staged.
  const bool atRoot = c.rank == root;
  const bool sendInPlace = send == MPI_IN_PLACE && m.maySendInPlace(atRoot),
             recvInPlace = recv == MPI_IN_PLACE && m.mayReceiveInPlace(atRoot);
  const collc::meaning::BuffersUsed used =
      collc::meaning::buffersUsed(m, c.rank, root, sendInPlace);
  const bool usesSend = used.send, usesRecv = used.recv && !recvInPlace;
  const bool inPlace = sendInPlace || recvInPlace;
  if (int rc = checked(comm, [&] {
        Agreed a = agreed(coll, m.rooted() ? root : -1, MPI_OP_NULL,
                          usesRecv ? recvcount : sendcount,
                          usesRecv ? recvtype : sendtype);
        // Only the sides this rank uses: MPI ignores the others' arguments,
        // which may be anything.
        if (usesRecv && usesSend) {
          const int64_t received = bytesOf(recvcount, recvtype),
                        sent = bytesOf(sendcount, sendtype);
          if (received >= 0 && sent >= 0 && received != sent)
            a.fault = "its send and receive sizes differ";
        }
        return a;
      }))
    return rc;
  // Each side this rank uses gives a block's size; the receive side is
  // the one the schedule is sized by where both are used.
  int64_t recvBytes = 0, sendBytes = 0;
  Reason recvWhy = Reason::Count, sendWhy = Reason::Count;
  if (why == Reason::Count && usesRecv)
    recvWhy = blockBytes(recvcount, recvtype, recvInfo, recvBytes);
  if (why == Reason::Count && usesSend)
    sendWhy = blockBytes(sendcount, sendtype, sendInfo, sendBytes);
  const int64_t bytes = usesRecv ? recvBytes : sendBytes;
  if (why == Reason::Count)
    why = recvWhy != Reason::Count ? recvWhy : sendWhy;
  // An erroneous program (the signatures differ) is MPI's to report; the
  // sizes are known here only, so the path is this rank's: stop the job.
  if (usesRecv && usesSend && recvWhy != Reason::Invalid &&
      sendWhy != Reason::Invalid && recvBytes != sendBytes)
    return localFailure(comm, MPI_ERR_TRUNCATE,
                        "the send and receive sizes of a collective differ "
                        "(the type signatures must match)");
  // A root's arguments that no other rank passes (a gather's receive side,
  // a scatter's send side), found invalid: the others decide by their own
  // block, which the root's other side, where it has one, tells. Where they
  // run a schedule, MPI's error here would leave them waiting.
  if (why == Reason::Invalid && atRoot && m.rooted() && c.size > 0) {
    const collc::meaning::BuffersUsed others =
        collc::meaning::buffersUsed(m, (root + 1) % c.size, root, false);
    const bool sharedSend = usesSend && others.send,
               sharedRecv = usesRecv && others.recv;
    const Reason sharedWhy = sharedSend   ? sendWhy
                             : sharedRecv ? recvWhy
                                          : Reason::Invalid;
    const int64_t sharedBytes = sharedSend ? sendBytes : recvBytes;
    if ((!sharedSend && !sharedRecv) ||
        (sharedWhy == Reason::Count &&
         choose(coll, c.size, sharedBytes).candidate)) {
      char what[160];
      std::snprintf(what, sizeof what,
                    "%s: the root's %s count or type is invalid, and the "
                    "other ranks may run a schedule",
                    collName(coll), others.send ? "receive" : "send");
      return localFailure(comm, MPI_ERR_ARG, what);
    }
  }
  const Choice choice =
      why == Reason::Count ? choose(coll, c.size, bytes) : refuse(why);
  return route(
      coll, choice,
      [&](const Candidate &k) {
        if (int rc = misplacedInPlace(coll, c, root, send, recv, comm))
          return rc;
        // How many blocks each buffer holds at this rank.
        const int sendBlocks = m.sendPerDest() ? c.size : 1;
        const int recvBlocks = m.recvPerOrigin() ? c.size : 1;
        Buffers b;
        int rc = MPI_SUCCESS;
        if (usesSend)
          rc = b.in.start(send, int64_t{sendcount} * sendBlocks, sendtype,
                          sendInfo, true, false, comm);
        if (!rc && usesRecv)
          rc = b.out.start(recv, int64_t{recvcount} * recvBlocks, recvtype,
                           recvInfo, inPlace, true, comm);
        if (rc)
          return ran(comm, rc, "cannot stage the buffers of a collective");
        Args a;
        a.send = usesSend ? static_cast<const void *>(b.in.bytes())
                          : (inPlace ? MPI_IN_PLACE : nullptr);
        a.recv = usesRecv ? static_cast<void *>(b.out.bytes())
                          : (inPlace ? MPI_IN_PLACE : nullptr);
        a.count = static_cast<int>(bytes);
        a.root = root < 0 ? 0 : root;
        a.comm = comm;
        if (int rc = k.run(a))
          return ran(comm, rc, "a collective's schedule failed");
        // Remembered where the buffers went to the schedule as they are.
        if ((!usesSend || (sendInfo.named && a.send == send)) &&
            (!usesRecv || (recvInfo.named && a.recv == recv)))
          remember(coll, key, a, usesSend, usesRecv, inPlace, k,
                   "a collective's schedule failed");
        return ran(comm, b.out.finish(comm), "cannot unpack a collective");
      },
      [&] {
        return theirs(send, sendcount, sendtype, recv, recvcount, recvtype,
                      root, comm);
      });
}

[[gnu::always_inline]] inline int blocks(Coll coll, const void *send,
                                         int sendcount, MPI_Datatype sendtype,
                                         void *recv, int recvcount,
                                         MPI_Datatype recvtype, int root,
                                         MPI_Comm comm, BlocksCall theirs) {
  const CallKey key{comm,
                    sendtype,
                    recvtype,
                    {},
                    sendcount,
                    recvcount,
                    root,
                    send == MPI_IN_PLACE,
                    recv == MPI_IN_PLACE};
  if (const Remembered *r = recall(coll, key))
    return runRemembered(*r, send, recv);
  return decideBlocks(coll, key, send, sendcount, sendtype, recv, recvcount,
                      recvtype, root, comm, theirs);
}

} // namespace

int MPI_Allgather(const void *send, int sendcount, MPI_Datatype sendtype,
                  void *recv, int recvcount, MPI_Datatype recvtype,
                  MPI_Comm comm) {
  return blocks(Coll::Allgather, send, sendcount, sendtype, recv, recvcount,
                recvtype, -1, comm,
                [](const void *s, int sc, MPI_Datatype st, void *r, int rc,
                   MPI_Datatype rt, int, MPI_Comm cm) {
                  return PMPI_Allgather(s, sc, st, r, rc, rt, cm);
                });
}

int MPI_Alltoall(const void *send, int sendcount, MPI_Datatype sendtype,
                 void *recv, int recvcount, MPI_Datatype recvtype,
                 MPI_Comm comm) {
  return blocks(Coll::Alltoall, send, sendcount, sendtype, recv, recvcount,
                recvtype, -1, comm,
                [](const void *s, int sc, MPI_Datatype st, void *r, int rc,
                   MPI_Datatype rt, int, MPI_Comm cm) {
                  return PMPI_Alltoall(s, sc, st, r, rc, rt, cm);
                });
}

int MPI_Gather(const void *send, int sendcount, MPI_Datatype sendtype,
               void *recv, int recvcount, MPI_Datatype recvtype, int root,
               MPI_Comm comm) {
  return blocks(Coll::Gather, send, sendcount, sendtype, recv, recvcount,
                recvtype, root, comm, PMPI_Gather);
}

int MPI_Scatter(const void *send, int sendcount, MPI_Datatype sendtype,
                void *recv, int recvcount, MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  return blocks(Coll::Scatter, send, sendcount, sendtype, recv, recvcount,
                recvtype, root, comm, PMPI_Scatter);
}

// Each rank's counts and layouts are its own (MPI asks only that what i
// sends j is what j expects from i), so the path is decided by the
// communicator alone, and the pattern by its size, priced at m = 0: the
// block sizes differ from rank to rank, and so would a choice made on them.
int MPI_Alltoallv(const void *send, const int sendcounts[],
                  const int sdispls[], MPI_Datatype sendtype, void *recv,
                  const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  if (checking() && checkable(comm)) {
    // In place, the send arguments are ignored, and may be anything.
    const int64_t sendSize = send == MPI_IN_PLACE ? -1 : bytesOf(1, sendtype),
                  recvSize = bytesOf(1, recvtype);
    auto received = [&](int, int j) -> int64_t {
      return recvcounts && recvSize >= 0 && recvcounts[j] >= 0
                 ? recvcounts[j] * recvSize
                 : -1;
    };
    if (int rc = agreePairwise(
            comm, Coll::Alltoallv, -1,
            [&](int rank, int j) -> int64_t {
              if (send == MPI_IN_PLACE)
                return received(rank, j);
              return sendcounts && sendSize >= 0 && sendcounts[j] >= 0
                         ? sendcounts[j] * sendSize
                         : -1;
            },
            received))
      return rc;
  }
  Comm c;
  const Reason why = screen(Coll::Alltoallv, comm, c);
  const Choice choice =
      why == Reason::Count ? choose(Coll::Alltoallv, c.size, 0) : refuse(why);
  return route(
      Coll::Alltoallv, choice,
      [&](const Candidate &k) {
        if (int rc = misplacedInPlace(Coll::Alltoallv, c, -1, send, recv, comm))
          return rc;
        return alltoallvBy(k, send, sendcounts, sdispls, sendtype, recv,
                           recvcounts, rdispls, recvtype, comm, c.size);
      },
      [&] {
        return PMPI_Alltoallv(send, sendcounts, sdispls, sendtype, recv,
                              recvcounts, rdispls, recvtype, comm);
      });
}

namespace {

/// COLLC_MPI_CHECK for MPI_Gatherv and MPI_Scatterv: the root's `counts`
/// of `rootType` against each rank's own block, `count` of `type`; the
/// root receives them (gatherv) or sends them (scatterv). `inPlace`: the
/// root's own block stays where it is.
int checkRootCounts(MPI_Comm comm, Coll coll, int root, const int *counts,
                    MPI_Datatype rootType, int count, MPI_Datatype type,
                    bool inPlace) {
  if (!checking() || !checkable(comm))
    return MPI_SUCCESS;
  // The root's arguments are read at the root alone: elsewhere MPI ignores
  // them, and they may be anything.
  const PairBytes rootSide = [&](int rank, int j) -> int64_t {
    if (rank != root)
      return 0;
    const int64_t rootSize = bytesOf(1, rootType);
    if ((j == root && inPlace) || !counts || rootSize < 0 || counts[j] < 0)
      return -1;
    return counts[j] * rootSize;
  };
  const PairBytes ownSide = [&](int rank, int j) -> int64_t {
    if (j != root)
      return 0;
    return rank == root && inPlace ? -1 : bytesOf(count, type);
  };
  return coll == Coll::Gatherv
             ? agreePairwise(comm, coll, root, ownSide, rootSide)
             : agreePairwise(comm, coll, root, rootSide, ownSide);
}

} // namespace

// MPI_Gatherv's recvcounts and MPI_Scatterv's sendcounts are significant at
// the root only; every other rank knows its own count alone, which MPI lets
// differ from the others'. Equal counts are a fact at the root, and a path
// chosen on it would leave the root in a schedule the others never enter:
// only a message from the root could tell them (docs/dropin.md weighs its
// cost). They go to MPI, counted.
int MPI_Gatherv(const void *send, int sendcount, MPI_Datatype sendtype,
                void *recv, const int recvcounts[], const int displs[],
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (int rc = checkRootCounts(comm, Coll::Gatherv, root, recvcounts, recvtype,
                               sendcount, sendtype, send == MPI_IN_PLACE))
    return rc;
  return handOn(Coll::Gatherv, Reason::RootCounts, [&] {
    return PMPI_Gatherv(send, sendcount, sendtype, recv, recvcounts, displs,
                        recvtype, root, comm);
  });
}

int MPI_Scatterv(const void *send, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recv, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (int rc = checkRootCounts(comm, Coll::Scatterv, root, sendcounts, sendtype,
                               recvcount, recvtype, recv == MPI_IN_PLACE))
    return rc;
  return handOn(Coll::Scatterv, Reason::RootCounts, [&] {
    return PMPI_Scatterv(send, sendcounts, displs, sendtype, recv, recvcount,
                         recvtype, root, comm);
  });
}

int MPI_Allgatherv(const void *send, int sendcount, MPI_Datatype sendtype,
                   void *recv, const int recvcounts[], const int displs[],
                   MPI_Datatype recvtype, MPI_Comm comm) {
  // recvcounts is the same at every rank in bytes (each is what that rank
  // sends; recvtype may differ from rank to rank, its signature may not);
  // displs is this rank's own layout. Equal counts make it an all-gather,
  // the blocks wherever displs puts them; counts that differ by little, an
  // all-gather of blocks padded to the largest (paddedSize).
  Comm c;
  TypeInfo recvInfo;
  int64_t bytes = 0; // a block's, padded
  Reason why = screen(Coll::Allgatherv, comm, c);
  if (int rc = checked(comm, [&] {
        Agreed a = agreed(Coll::Allgatherv, -1, MPI_OP_NULL, 1, recvtype);
        a.bytes.reset();
        a.counts = countsDigest(c.size, recvcounts, recvtype);
        const int64_t own = recvcounts && c.size > 0
                                ? bytesOf(recvcounts[c.rank], recvtype)
                                : -1;
        if (send != MPI_IN_PLACE) { // else the send arguments are ignored
          const int64_t sent = bytesOf(sendcount, sendtype);
          if (sent >= 0 && own >= 0 && sent != own)
            a.fault = "it sends another size than recvcounts gives it";
        }
        return a;
      }))
    return rc;
  // Open MPI's own call reads through a null array and crashes.
  if (why == Reason::Count && (!recvcounts || !displs))
    return localFailure(comm, MPI_ERR_ARG,
                        "MPI_Allgatherv: a null count or displacement array");
  bool unequal = false;
  int count = 0; // the largest
  for (int j = 0; why == Reason::Count && j < c.size; ++j) {
    if (recvcounts[j] < 0)
      why = Reason::Invalid;
    unequal = unequal || recvcounts[j] != recvcounts[0];
    count = std::max(count, recvcounts[j]);
  }
  if (why == Reason::Count)
    why = blockBytes(count, recvtype, recvInfo, bytes);
  if (why == Reason::Count && unequal && !paddedSize(c.size, [&](int j) {
        return int64_t{recvcounts[j]} * recvInfo.size;
      }))
    why = Reason::UnequalCounts;
  const Choice choice = why == Reason::Count
                            ? choose(Coll::Allgather, c.size, bytes)
                            : refuse(why);
  const bool inPlace = send == MPI_IN_PLACE;
  const int ownCount = why == Reason::Count ? recvcounts[c.rank] : 0;
  const int64_t own = int64_t{ownCount} * recvInfo.size;
  // What this rank sends is its own to get right: the others are in the
  // schedule already.
  TypeInfo sendInfo;
  if (choice.candidate && !inPlace &&
      (sendcount < 0 || sendtype == MPI_DATATYPE_NULL ||
       describe(sendtype, sendInfo) != MPI_SUCCESS))
    return localFailure(comm, sendcount < 0 ? MPI_ERR_COUNT : MPI_ERR_TYPE,
                        "MPI_Allgatherv: an invalid send count or type");
  if (choice.candidate && !inPlace && int64_t{sendcount} * sendInfo.size != own)
    return localFailure(comm, MPI_ERR_TRUNCATE,
                        "MPI_Allgatherv: this rank sends another size than "
                        "recvcounts gives it");
  return route(
      Coll::Allgatherv, choice,
      [&](const Candidate &k) {
        if (int rc =
                misplacedInPlace(Coll::Allgatherv, c, -1, send, recv, comm))
          return rc;
        const int p = c.size;
        // The blocks in order, one after another: the user's buffer itself,
        // or a copy packed from and unpacked to where displs puts them.
        bool regular = !unequal && recvInfo.contiguous(int64_t{count} * p);
        for (int j = 0; regular && j < p; ++j)
          regular = displs[j] == int64_t{j} * count;
        auto place = [&](int j) {
          return static_cast<char *>(recv) +
                 static_cast<MPI_Aint>(displs[j]) * recvInfo.extent;
        };
        std::vector<char> copy;
        char *all = static_cast<char *>(recv) + recvInfo.trueLb;
        char *mine = all + bytes * c.rank;
        if (!regular) {
          copy.resize(static_cast<size_t>(bytes) * static_cast<size_t>(p));
          all = copy.data();
          mine = all + bytes * c.rank;
          int at = 0;
          if (inPlace && own &&
              PMPI_Pack(place(c.rank), ownCount, recvtype, mine,
                        static_cast<int>(bytes), &at, comm) != MPI_SUCCESS)
            return ran(comm, MPI_ERR_INTERN, "MPI_Allgatherv: cannot pack");
        }
        // A padded block is sent from its place in the copy, in place.
        Staged in;
        if (!inPlace && own)
          if (int rc = in.start(send, sendcount, sendtype, sendInfo, true,
                                false, comm))
            return ran(comm, rc, "MPI_Allgatherv: cannot stage the buffer");
        if (!inPlace && unequal && own)
          std::memcpy(mine, in.bytes(), static_cast<size_t>(own));
        Args a;
        a.send = inPlace || unequal ? MPI_IN_PLACE : in.bytes();
        a.recv = all;
        a.count = static_cast<int>(bytes);
        a.comm = comm;
        if (int rc = k.run(a))
          return ran(comm, rc, "MPI_Allgatherv: the schedule failed");
        for (int j = 0; !regular && j < p; ++j) {
          int at = 0;
          if (recvcounts[j] &&
              PMPI_Unpack(all + bytes * j, static_cast<int>(bytes), &at,
                          place(j), recvcounts[j], recvtype,
                          comm) != MPI_SUCCESS)
            return ran(comm, MPI_ERR_INTERN, "MPI_Allgatherv: cannot unpack");
        }
        return MPI_SUCCESS;
      },
      [&] {
        return PMPI_Allgatherv(send, sendcount, sendtype, recv, recvcounts,
                               displs, recvtype, comm);
      });
}

int MPI_Init(int *argc, char ***argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS && reporting())
    armReport();
  return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && reporting())
    armReport();
  return rc;
}

int MPI_Finalize(void) {
  if (reporting())
    reportBeforeFinalize();
  return PMPI_Finalize();
}

} // extern "C"
