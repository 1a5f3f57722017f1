// libcollc_mpi's calls that move blocks and fold none: MPI_Bcast,
// MPI_Allgather, MPI_Alltoall, MPI_Gather and MPI_Scatter.

#include "Agreement.h"
#include "Interpose.h"
#include "Route.h"
#include "collc/Meaning.h"

#include <cstdio>

using namespace collc::mpi;
using collc::rt::describe;
using collc::rt::Staged;
using collc::rt::TypeInfo;

extern "C" {

namespace {

/// MPI_Bcast's whole path, out of line, so that the remembered call's path
/// in MPI_Bcast stays short.
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
  const Choice choice =
      why == Reason::Count ? choose(Coll::Bcast, c.size, bytes) : refuse(why);
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

using BlocksCall = int (*)(const void *, int, MPI_Datatype, void *, int,
                           MPI_Datatype, int, MPI_Comm);

/// A blocks call's arguments as the program passed them. `root` < 0 for
/// the unrooted calls.
struct BlocksArgs {
  const void *send;
  int sendcount;
  MPI_Datatype sendtype;
  void *recv;
  int recvcount;
  MPI_Datatype recvtype;
  int root;
  MPI_Comm comm;
};

/// The sides of a blocks call this rank uses (collc/Meaning.h), with
/// MPI_IN_PLACE where the call allows it (elsewhere it is refused before a
/// buffer is staged), and each used side's block.
struct BlockSides {
  bool atRoot = false, inPlace = false;
  bool usesSend = false, usesRecv = false;
  /// Why a side cannot run (Reason::Count: it can), and its block's bytes.
  Reason sendWhy = Reason::Count, recvWhy = Reason::Count;
  int64_t sendBytes = 0, recvBytes = 0;
  TypeInfo sendInfo, recvInfo;

  /// The receive side sizes the schedule where both are used.
  int64_t bytes() const { return usesRecv ? recvBytes : sendBytes; }
};

BlockSides sidesUsed(const collc::meaning::Conditions &m, const Comm &c,
                     const BlocksArgs &x) {
  BlockSides s;
  s.atRoot = c.rank == x.root;
  const bool sendInPlace =
                 x.send == MPI_IN_PLACE && m.maySendInPlace(s.atRoot),
             recvInPlace =
                 x.recv == MPI_IN_PLACE && m.mayReceiveInPlace(s.atRoot);
  const collc::meaning::BuffersUsed used =
      collc::meaning::buffersUsed(m, c.rank, x.root, sendInPlace);
  s.usesSend = used.send;
  s.usesRecv = used.recv && !recvInPlace;
  s.inPlace = sendInPlace || recvInPlace;
  return s;
}

/// Each side this rank uses gives a block's size.
void sizeSides(const BlocksArgs &x, BlockSides &s) {
  if (s.usesRecv)
    s.recvWhy = blockBytes(x.recvcount, x.recvtype, s.recvInfo, s.recvBytes);
  if (s.usesSend)
    s.sendWhy = blockBytes(x.sendcount, x.sendtype, s.sendInfo, s.sendBytes);
}

/// A root's arguments that no other rank passes (a gather's receive side,
/// a scatter's send side), found invalid: the others decide by their own
/// block, which the root's other side, where it has one, tells. Where they
/// run a schedule, MPI's error here would leave them waiting, so the job
/// stops; MPI_SUCCESS where they hand the call on too.
int rootOnlyFault(Coll coll, const collc::meaning::Conditions &m,
                  const Comm &c, const BlocksArgs &x, const BlockSides &s) {
  const collc::meaning::BuffersUsed others =
      collc::meaning::buffersUsed(m, (x.root + 1) % c.size, x.root, false);
  const bool sharedSend = s.usesSend && others.send,
             sharedRecv = s.usesRecv && others.recv;
  const Reason sharedWhy = sharedSend   ? s.sendWhy
                           : sharedRecv ? s.recvWhy
                                        : Reason::Invalid;
  const int64_t sharedBytes = sharedSend ? s.sendBytes : s.recvBytes;
  if ((sharedSend || sharedRecv) &&
      (sharedWhy != Reason::Count ||
       !choose(coll, c.size, sharedBytes).candidate))
    return MPI_SUCCESS;
  char what[160];
  std::snprintf(what, sizeof what,
                "%s: the root's %s count or type is invalid, and the "
                "other ranks may run a schedule",
                collName(coll), others.send ? "receive" : "send");
  return localFailure(x.comm, MPI_ERR_ARG, what);
}

/// Runs schedule `k` on the call's buffers, staged where their layout
/// asks, and remembers the call under `key` where they went to the
/// schedule as they are.
int runBlocks(const Candidate &k, Coll coll, const CallKey &key,
              const collc::meaning::Conditions &m, const Comm &c,
              const BlocksArgs &x, const BlockSides &s) {
  if (int rc = misplacedInPlace(coll, c, x.root, x.send, x.recv, x.comm))
    return rc;
  // How many blocks each buffer holds at this rank.
  const int sendBlocks = m.sendPerDest() ? c.size : 1;
  const int recvBlocks = m.recvPerOrigin() ? c.size : 1;
  Buffers b;
  int rc = MPI_SUCCESS;
  if (s.usesSend)
    rc = b.in.start(x.send, int64_t{x.sendcount} * sendBlocks, x.sendtype,
                    s.sendInfo, true, false, x.comm);
  if (!rc && s.usesRecv)
    rc = b.out.start(x.recv, int64_t{x.recvcount} * recvBlocks, x.recvtype,
                     s.recvInfo, s.inPlace, true, x.comm);
  if (rc)
    return ran(x.comm, rc, "cannot stage the buffers of a collective");
  Args a;
  a.send = s.usesSend ? static_cast<const void *>(b.in.bytes())
                      : (s.inPlace ? MPI_IN_PLACE : nullptr);
  a.recv = s.usesRecv ? static_cast<void *>(b.out.bytes())
                      : (s.inPlace ? MPI_IN_PLACE : nullptr);
  a.count = static_cast<int>(s.bytes());
  a.root = x.root < 0 ? 0 : x.root;
  a.comm = x.comm;
  if (int rc = k.run(a))
    return ran(x.comm, rc, "a collective's schedule failed");
  if ((!s.usesSend || (s.sendInfo.named && a.send == x.send)) &&
      (!s.usesRecv || (s.recvInfo.named && a.recv == x.recv)))
    remember(coll, key, a, s.usesSend, s.usesRecv, s.inPlace, k,
             "a collective's schedule failed");
  return ran(x.comm, b.out.finish(x.comm), "cannot unpack a collective");
}

/// Allgather, Alltoall, Gather and Scatter: blocks of bytes. The side of a
/// block that is significant at this rank gives its size (MPI requires the
/// signatures to match). The whole path, out of line, as decideBcast's.
[[gnu::noinline]] int decideBlocks(Coll coll, const CallKey &key,
                                   const BlocksArgs &x, BlocksCall theirs) {
  Comm c;
  Reason why = screen(coll, x.comm, c);
  const collc::meaning::Conditions &m =
      collc::meaning::conditionsOf(kindOf(coll));
  if (why == Reason::Count && m.rooted() && (x.root < 0 || x.root >= c.size))
    why = Reason::Invalid;
  BlockSides s = sidesUsed(m, c, x);
  if (int rc = checked(x.comm, [&] {
        Agreed a = agreed(coll, m.rooted() ? x.root : -1, MPI_OP_NULL,
                          s.usesRecv ? x.recvcount : x.sendcount,
                          s.usesRecv ? x.recvtype : x.sendtype);
        // Only the sides this rank uses: MPI ignores the others' arguments,
        // which may be anything.
        if (s.usesRecv && s.usesSend) {
          const int64_t received = bytesOf(x.recvcount, x.recvtype),
                        sent = bytesOf(x.sendcount, x.sendtype);
          if (received >= 0 && sent >= 0 && received != sent)
            a.fault = "its send and receive sizes differ";
        }
        return a;
      }))
    return rc;
  if (why == Reason::Count) {
    sizeSides(x, s);
    why = s.recvWhy != Reason::Count ? s.recvWhy : s.sendWhy;
  }
  // An erroneous program (the signatures differ) is MPI's to report; the
  // sizes are known here only, so the path is this rank's: stop the job.
  if (s.usesRecv && s.usesSend && s.recvWhy != Reason::Invalid &&
      s.sendWhy != Reason::Invalid && s.recvBytes != s.sendBytes)
    return localFailure(x.comm, MPI_ERR_TRUNCATE,
                        "the send and receive sizes of a collective differ "
                        "(the type signatures must match)");
  if (why == Reason::Invalid && s.atRoot && m.rooted() && c.size > 0)
    if (int rc = rootOnlyFault(coll, m, c, x, s))
      return rc;
  const Choice choice =
      why == Reason::Count ? choose(coll, c.size, s.bytes()) : refuse(why);
  return route(
      coll, choice,
      [&](const Candidate &k) { return runBlocks(k, coll, key, m, c, x, s); },
      [&] {
        return theirs(x.send, x.sendcount, x.sendtype, x.recv, x.recvcount,
                      x.recvtype, x.root, x.comm);
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
  return decideBlocks(coll, key,
                      {send, sendcount, sendtype, recv, recvcount, recvtype,
                       root, comm},
                      theirs);
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

} // extern "C"
