// libcollc_mpi's calls whose counts differ from rank to rank:
// MPI_Alltoallv, MPI_Allgatherv, MPI_Gatherv and MPI_Scatterv.

#include "Agreement.h"
#include "Interpose.h"
#include "Route.h"
#include "collc/Meaning.h"

#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace collc::mpi;
using collc::rt::addressAt;
using collc::rt::describe;
using collc::rt::packElements;
using collc::rt::Staged;
using collc::rt::TypeInfo;

namespace {

/// MPI_Alltoallv by candidate `k` (an alltoallv pattern of 001 §3): the
/// runtime moves each side as bytes by its own type, so each rank's own
/// counts and layouts are all it needs.
int alltoallvBy(const Candidate &k, const void *send, const int *sendcounts,
                const int *sdispls, MPI_Datatype sendtype, void *recv,
                const int *recvcounts, const int *rdispls,
                MPI_Datatype recvtype, MPI_Comm comm) {
  Args a;
  a.send = send;
  a.recv = recv;
  a.type = sendtype;
  a.recvType = recvtype;
  a.comm = comm;
  a.sendCounts = sendcounts;
  a.sendDispls = sdispls;
  a.recvCounts = recvcounts;
  a.recvDispls = rdispls;
  return ran(comm, k.run(a), "MPI_Alltoallv: the exchange failed");
}

} // namespace

extern "C" {

// Each rank's counts and layouts are its own (MPI asks only that what i
// sends j is what j expects from i), so the path is decided by the
// communicator alone, and the pattern by its size, priced at m = 0: the
// block sizes differ from rank to rank, and so would a choice made on them.
int MPI_Alltoallv(const void *send, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recv, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
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
                           recvcounts, rdispls, recvtype, comm);
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

namespace {

/// MPI_Allgatherv's blocks as one all-gather's, the same at every rank (as
/// recvcounts in bytes is).
struct GatheredBlocks {
  TypeInfo recvInfo;
  int64_t bytes = 0; // a block's, padded
  int count = 0;     // the largest
  bool unequal = false;
};

/// COLLC_MPI_CHECK for MPI_Allgatherv: the counts in bytes against every
/// rank's, and what this rank sends against what recvcounts gives it.
int checkAllgatherv(MPI_Comm comm, const Comm &c, const void *send,
                    int sendcount, MPI_Datatype sendtype, const int *recvcounts,
                    MPI_Datatype recvtype) {
  return checked(comm, [&] {
    Agreed a = agreed(Coll::Allgatherv, -1, MPI_OP_NULL, 1, recvtype);
    a.bytes.reset();
    a.counts = countsDigest(c.size, recvcounts, recvtype);
    const int64_t own =
        recvcounts && c.size > 0 ? bytesOf(recvcounts[c.rank], recvtype) : -1;
    if (send != MPI_IN_PLACE) { // else the send arguments are ignored
      const int64_t sent = bytesOf(sendcount, sendtype);
      if (sent >= 0 && own >= 0 && sent != own)
        a.fault = "it sends another size than recvcounts gives it";
    }
    return a;
  });
}

/// The `p` blocks of `recvcounts` as an all-gather's, in `g`, or the reason
/// they cannot be.
Reason asAllgather(int p, const int *recvcounts, MPI_Datatype recvtype,
                   GatheredBlocks &g) {
  Reason why = Reason::Count;
  for (int j = 0; why == Reason::Count && j < p; ++j) {
    if (recvcounts[j] < 0)
      why = Reason::Invalid;
    g.unequal = g.unequal || recvcounts[j] != recvcounts[0];
    g.count = std::max(g.count, recvcounts[j]);
  }
  if (why == Reason::Count)
    why = blockBytes(g.count, recvtype, g.recvInfo, g.bytes);
  if (why == Reason::Count && g.unequal && !paddedSize(p, [&](int j) {
        return int64_t{recvcounts[j]} * g.recvInfo.size;
      }))
    why = Reason::UnequalCounts;
  return why;
}

/// What this rank sends, where a schedule runs (`sendInfo` filled): its own
/// to get right, as the others are in the schedule already.
int checkOwnSend(MPI_Comm comm, int sendcount, MPI_Datatype sendtype,
                 int64_t own, TypeInfo &sendInfo) {
  if (sendcount < 0 || sendtype == MPI_DATATYPE_NULL ||
      describe(sendtype, sendInfo) != MPI_SUCCESS)
    return localFailure(comm, sendcount < 0 ? MPI_ERR_COUNT : MPI_ERR_TYPE,
                        "MPI_Allgatherv: an invalid send count or type");
  if (int64_t{sendcount} * sendInfo.size != own)
    return localFailure(comm, MPI_ERR_TRUNCATE,
                        "MPI_Allgatherv: this rank sends another size than "
                        "recvcounts gives it");
  return MPI_SUCCESS;
}

/// Whether the blocks lie in order, one after another, in the user's
/// buffer: the schedule then runs on it, with no copy.
bool inOrder(const GatheredBlocks &g, const int *displs, int p) {
  bool regular = !g.unequal && g.recvInfo.contiguous(int64_t{g.count} * p);
  for (int j = 0; regular && j < p; ++j)
    regular = displs[j] == int64_t{j} * g.count;
  return regular;
}

/// Where displs puts block `j`, of elements `extent` apart, in `recv`.
char *placeOf(void *recv, const int *displs, int j, MPI_Aint extent) {
  return addressAt(recv, static_cast<MPI_Aint>(displs[j]) * extent);
}

/// The gathered copy `all`, a block of g.bytes a rank, unpacked to where
/// displs puts each block.
int unpackGathered(char *all, const GatheredBlocks &g, void *recv,
                   const int *recvcounts, const int *displs,
                   MPI_Datatype recvtype, int p, MPI_Comm comm) {
  for (int j = 0; j < p; ++j) {
    int at = 0;
    if (recvcounts[j] &&
        packElements(false, placeOf(recv, displs, j, g.recvInfo.extent),
                     recvcounts[j], recvtype, all + g.bytes * j,
                     static_cast<int>(g.bytes), &at, comm) != MPI_SUCCESS)
      return ran(comm, MPI_ERR_INTERN, "MPI_Allgatherv: cannot unpack");
  }
  return MPI_SUCCESS;
}

/// MPI_Allgatherv by candidate `k`, an all-gather of blocks of g.bytes:
/// this rank's own is `ownCount` elements.
int allgathervBy(const Candidate &k, const void *send, int sendcount,
                 MPI_Datatype sendtype, const TypeInfo &sendInfo, void *recv,
                 const int *recvcounts, const int *displs,
                 MPI_Datatype recvtype, const GatheredBlocks &g, int ownCount,
                 const Comm &c, MPI_Comm comm) {
  const int p = c.size;
  const bool inPlace = send == MPI_IN_PLACE;
  const int64_t own = int64_t{ownCount} * g.recvInfo.size;
  // Packed or copied from here, not handed to a schedule that would refuse
  // them.
  if (g.recvInfo.nullWithData(recv, int64_t{g.bytes} * p) ||
      (!inPlace && sendInfo.nullWithData(send, sendcount)))
    return localFailure(comm, MPI_ERR_BUFFER,
                        "MPI_Allgatherv: a null buffer where this rank has "
                        "data");
  // The blocks in order, one after another: the user's buffer itself, or a
  // copy packed from and unpacked to where displs puts them.
  const bool regular = inOrder(g, displs, p);
  std::vector<char> copy;
  char *all = addressAt(recv, g.recvInfo.trueLb);
  char *mine = all + g.bytes * c.rank;
  if (!regular) {
    copy.resize(static_cast<size_t>(g.bytes) * static_cast<size_t>(p));
    all = copy.data();
    mine = all + g.bytes * c.rank;
    int at = 0;
    if (inPlace && own &&
        packElements(true, placeOf(recv, displs, c.rank, g.recvInfo.extent),
                     ownCount, recvtype, mine, static_cast<int>(g.bytes), &at,
                     comm) != MPI_SUCCESS)
      return ran(comm, MPI_ERR_INTERN, "MPI_Allgatherv: cannot pack");
  }
  // A padded block is sent from its place in the copy, in place.
  Staged in;
  if (!inPlace && own)
    if (int rc =
            in.start(send, sendcount, sendtype, sendInfo, true, false, comm))
      return ran(comm, rc, "MPI_Allgatherv: cannot stage the buffer");
  if (!inPlace && g.unequal && own)
    std::memcpy(mine, in.bytes(), static_cast<size_t>(own));
  Args a;
  a.send = inPlace || g.unequal ? MPI_IN_PLACE : in.bytes();
  a.recv = all;
  a.count = static_cast<int>(g.bytes);
  a.comm = comm;
  if (int rc = k.run(a))
    return ran(comm, rc, "MPI_Allgatherv: the schedule failed");
  return regular ? MPI_SUCCESS
                 : unpackGathered(all, g, recv, recvcounts, displs, recvtype, p,
                                  comm);
}

} // namespace

int MPI_Allgatherv(const void *send, int sendcount, MPI_Datatype sendtype,
                   void *recv, const int recvcounts[], const int displs[],
                   MPI_Datatype recvtype, MPI_Comm comm) {
  // recvcounts is the same at every rank in bytes (each is what that rank
  // sends; recvtype may differ from rank to rank, its signature may not);
  // displs is this rank's own layout. Equal counts make it an all-gather,
  // the blocks wherever displs puts them; counts that differ by little, an
  // all-gather of blocks padded to the largest (paddedSize).
  Comm c;
  GatheredBlocks g;
  Reason why = screen(Coll::Allgatherv, comm, c);
  if (int rc = checkAllgatherv(comm, c, send, sendcount, sendtype, recvcounts,
                               recvtype))
    return rc;
  // Open MPI's own call reads through a null array and crashes.
  if (why == Reason::Count && (!recvcounts || !displs))
    return localFailure(comm, MPI_ERR_ARG,
                        "MPI_Allgatherv: a null count or displacement array");
  if (why == Reason::Count)
    why = asAllgather(c.size, recvcounts, recvtype, g);
  const Choice choice = why == Reason::Count
                            ? choose(Coll::Allgather, c.size, g.bytes)
                            : refuse(why);
  const bool inPlace = send == MPI_IN_PLACE;
  const int ownCount = why == Reason::Count ? recvcounts[c.rank] : 0;
  TypeInfo sendInfo;
  if (choice.candidate && !inPlace)
    if (int rc = checkOwnSend(comm, sendcount, sendtype,
                              int64_t{ownCount} * g.recvInfo.size, sendInfo))
      return rc;
  return route(
      Coll::Allgatherv, choice,
      [&](const Candidate &k) {
        if (int rc =
                misplacedInPlace(Coll::Allgatherv, c, -1, send, recv, comm))
          return rc;
        return allgathervBy(k, send, sendcount, sendtype, sendInfo, recv,
                            recvcounts, displs, recvtype, g, ownCount, c, comm);
      },
      [&] {
        return PMPI_Allgatherv(send, sendcount, sendtype, recv, recvcounts,
                               displs, recvtype, comm);
      });
}

} // extern "C"
