// libcollc_mpi's reductions: MPI_Reduce, MPI_Allreduce, MPI_Scan,
// MPI_Exscan, MPI_Reduce_scatter_block and MPI_Reduce_scatter.

#include "Agreement.h"
#include "Fold.h"
#include "Interpose.h"
#include "Route.h"
#include "collc/Meaning.h"

#include "collc/Backend.h"

#include <cstring>
#include <vector>

using namespace collc::mpi;
using collc::rt::describe;
using collc::rt::Staged;
using collc::rt::TypeInfo;

extern "C" {

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

/// Why a reduction goes to MPI, or Reason::Count where it need not. Fills c,
/// info, bytes and fold as far as it got: all valid where it need not.
Reason screenReduction(Coll coll, int count, MPI_Datatype type, MPI_Op op,
                       int root, MPI_Comm comm, Comm &c, TypeInfo &info,
                       int64_t &bytes, Fold &fold) {
  Reason why = screen(coll, comm, c);
  if (why == Reason::Count && coll == Coll::Reduce &&
      (root < 0 || root >= c.size))
    why = Reason::Invalid;
  if (why == Reason::Count)
    why = blockBytes(count, type, info, bytes);
  if (why == Reason::Count)
    why = foldOf(count, type, info, op, fold);
  return why;
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
  const Reason why =
      screenReduction(coll, count, type, op, root, comm, c, info, bytes, fold);
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
        return reduceAsBasicType(send, recv, count, count, type, basic, output,
                                 comm, [&](const void *s, void *r, int per) {
                                   return theirs(s, r, count * per, basic.base,
                                                 op, root, comm);
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
  return reduction(Coll::Scan, send, recv, count, type, op, -1, comm,
                   [](const void *s, void *r, int n, MPI_Datatype t, MPI_Op o,
                      int,
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
  // Copied from here, not handed to a schedule that would refuse them.
  if (info.nullWithData(inPlace ? recv : send, total) ||
      info.nullWithData(recv, own))
    return localFailure(comm, MPI_ERR_BUFFER,
                        "MPI_Reduce_scatter: a null buffer where this rank "
                        "has data");
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

/// MPI_Reduce_scatter of p blocks of `count` elements alike by `k`;
/// remembered under `key` (the block variant's, `counts` null) where the
/// buffers went to the schedule as they are.
int reduceScatterEqual(const Candidate &k, const CallKey &key, const void *send,
                       void *recv, int count, MPI_Datatype type,
                       const TypeInfo &info, const Fold &fold, MPI_Op op,
                       const Comm &c, MPI_Comm comm, const int *counts) {
  const bool inPlace = send == MPI_IN_PLACE;
  Buffers b;
  int rc = MPI_SUCCESS;
  // In place, the input is the receive buffer, p blocks long; the result
  // is its first block.
  if (!inPlace)
    rc = b.in.start(send, int64_t{count} * c.size, type, info, true, false,
                    comm);
  if (!rc)
    rc = b.out.start(recv, inPlace ? int64_t{count} * c.size : count, type,
                     info, inPlace, true, comm);
  if (rc)
    return ran(comm, rc, "MPI_Reduce_scatter: cannot stage the buffers");
  const Args a =
      fold.args(inPlace ? MPI_IN_PLACE : b.in.bytes(), b.out.bytes(), op, comm);
  if (int rc = k.run(a))
    return ran(comm, rc, "MPI_Reduce_scatter: the schedule failed");
  if (!counts && info.named && fold.type == type &&
      collc::rt::predefinedOp(op) && (inPlace || a.send == send) &&
      a.recv == recv)
    remember(Coll::ReduceScatter, key, a, true, true, false, k,
             "MPI_Reduce_scatter: the schedule failed");
  // In place, only the result is unpacked: the rest of the copy is the
  // input the user left there.
  return ran(comm, b.out.finish(comm, count),
             "MPI_Reduce_scatter: cannot unpack");
}

/// The call handed to MPI: a predefined operator on a derived type as its
/// basic type (asBasicType), as the schedules fold it, unless `asIs` (an
/// invalid call or an intercommunicator: MPI's as given). `counts`, where
/// given, are MPI_Reduce_scatter's (`count` then says nothing).
int reduceScatterByMpi(const void *send, void *recv, int count,
                       MPI_Datatype type, MPI_Op op, const Comm &c,
                       MPI_Comm comm, const int *counts, bool asIs) {
  TypeInfo basic;
  int64_t total = int64_t{count} * c.size;
  if (counts)
    total = std::accumulate(counts, counts + c.size, int64_t{0});
  if (asIs || c.size <= 0 || !asBasicType(type, op, 0, basic) ||
      total * basic.perElement > INT_MAX)
    return counts
               ? PMPI_Reduce_scatter(send, recv, counts, type, op, comm)
               : PMPI_Reduce_scatter_block(send, recv, count, type, op, comm);
  return reduceAsBasicType(
      send, recv, total, counts ? counts[c.rank] : count, type, basic, true,
      comm, [&](const void *s, void *r, int per) {
        if (!counts)
          return PMPI_Reduce_scatter_block(s, r, count * per, basic.base, op,
                                           comm);
        std::vector<int> basicCounts(counts, counts + c.size);
        for (int &n : basicCounts)
          n *= per;
        return PMPI_Reduce_scatter(s, r, basicCounts.data(), basic.base, op,
                                   comm);
      });
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
        return reduceScatterEqual(k, key, send, recv, count, type, info, fold,
                                  op, c, comm, counts);
      },
      [&] {
        return reduceScatterByMpi(send, recv, count, type, op, c, comm, counts,
                                  why == Reason::Invalid ||
                                      why == Reason::Intercomm);
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

} // extern "C"
