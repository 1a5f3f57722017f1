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

/// Allgather, Alltoall, Gather and Scatter: blocks of bytes. `root` < 0
/// for the unrooted ones. The side of a block that is significant at this
/// rank gives its size (MPI requires the signatures to match). The whole
/// path, out of line, as decideBcast's.
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

} // extern "C"
