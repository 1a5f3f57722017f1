// Irregular all-to-all (001 §3; see collc/Alltoallv.h) on the runtime's
// backend interface: point-to-point sends and receives of byte messages,
// MPI or in memory. This file: what the exchanges share, the direct
// exchange, and the steps an emitted `schedule x : alltoallv` walks.

#include "AlltoallvDetail.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

namespace collc::rt {
namespace alltoallv_detail {

int fail(int code, const char *why) {
  std::fprintf(stderr, "collc alltoallv: %s\n", why);
  return code;
}

int failAlone(CommRef comm, const char *name, int code, const char *why) {
  Call c;
  c.name = name;
  c.comm = comm.mpi;
  c.local = comm.local;
  return Engine::failLocal(c, code, why);
}

int ByteBlocks::start(const void *sendbuf, const int *sendcounts,
                      const int *sdispls, MPI_Datatype sendtype, void *recvbuf,
                      const int *recvcounts, const int *rdispls,
                      MPI_Datatype recvtype, int p, CommRef comm,
                      const char *&why) {
  // In place, the send arguments are ignored, and may be anything.
  const bool inPlace = sendbuf == MPI_IN_PLACE;
  if (!recvcounts || !rdispls || (!inPlace && (!sendcounts || !sdispls))) {
    why = "a null count or displacement array";
    return MPI_ERR_ARG;
  }
  if (recvbuf == MPI_IN_PLACE) {
    why = "MPI_IN_PLACE as the receive buffer (only the send buffer may be)";
    return MPI_ERR_BUFFER;
  }
  // describe() knows the last few predefined types without asking MPI.
  TypeInfo sendInfo, recvInfo;
  if (describe(recvtype, recvInfo) != MPI_SUCCESS ||
      (!inPlace && describe(sendtype, sendInfo) != MPI_SUCCESS)) {
    why = "an invalid datatype";
    return MPI_ERR_TYPE;
  }
  const MPI_Comm packing = packingComm(comm);
  // In place, each block is read from where it is received, into a copy
  // that the exchange does not overwrite.
  int rc = inPlace ? in.start(recvbuf, recvcounts, rdispls, recvtype, recvInfo,
                              p, true, false, true, packing)
                   : in.start(sendbuf, sendcounts, sdispls, sendtype, sendInfo,
                              p, true, false, false, packing);
  why = in.why;
  if (rc != MPI_SUCCESS)
    return rc;
  rc = out.start(recvbuf, recvcounts, rdispls, recvtype, recvInfo, p, false,
                 true, false, packing);
  why = out.why;
  return rc;
}

namespace {
constexpr size_t keep = 4;
thread_local AlltoallvSteps::Rows kept[keep];
thread_local size_t next = 0;
} // namespace

AlltoallvSteps::Rows &rowsFor(const void *schedule, int p, int me,
                              bool &found) {
  AlltoallvSteps::Rows *slot = nullptr;
  for (AlltoallvSteps::Rows &r : kept)
    if (r.schedule == schedule && r.p == p && r.me == me) {
      if (r.complete) {
        found = true;
        return r;
      }
      slot = &r; // a walk that noted too little: walked again in its place
    }
  if (!slot) {
    slot = &kept[next];
    next = (next + 1) % keep;
  }
  AlltoallvSteps::Rows &r = *slot;
  r.schedule = schedule;
  r.p = p;
  r.me = me;
  r.complete = false;
  r.forwards = false;
  r.pieces = 1;
  r.blockAt.assign(1, 0);
  r.blocks.clear();
  r.readyAt.clear();
  r.sendAt.assign(1, 0);
  r.receiveAt.assign(1, 0);
  r.sends.clear();
  r.receives.clear();
  found = false;
  return r;
}

namespace {

/// Copies this rank's own block and counts it and both buffers into `st`
/// when asked to; MPI_ERR_TRUNCATE where it does not fit recvcounts.
int copyOwnBlock(const BlockLayout &at, int size, int me,
                 AlltoallvStageStats *st) {
  if (at.sendcounts[me] > at.recvcounts[me])
    return MPI_ERR_TRUNCATE;
  if (at.sendcounts[me] > 0)
    moveBytes(at.received(me).data, at.sent(me).data,
              static_cast<size_t>(at.sendcounts[me]));
  if (st) {
    st->received = 1;
    st->longestReceived = st->receiveBuffer = at.recvcounts[me];
    for (int j = 0; j < size; ++j)
      st->sendBuffer += at.sendcounts[j];
  }
  return MPI_SUCCESS;
}

/// The steps of one direct exchange as they run, their requests kept in
/// the caller's per-thread vectors.
class DirectExchange {
public:
  DirectExchange(const AlltoallvSteps::Rows &rows, Backend &backend, int tag,
                 const BlockLayout &at, AlltoallvStats *stats,
                 AlltoallvStageStats *st, std::vector<int> &requests,
                 std::vector<int> &from, std::vector<Piece> &one,
                 std::vector<Piece> &other)
      : rows(rows), backend(backend), tag(tag), at(at), stats(stats), st(st),
        requests(requests), from(from), one(one), other(other) {}

  int run(AlltoallvMode mode) {
    const int steps = static_cast<int>(rows.sendAt.size()) - 1;
    if (mode == AlltoallvMode::Blocking || steps == 1)
      return runStepByStep(steps);
    return runAllAtOnce(steps);
  }

private:
  const AlltoallvSteps::Rows &rows;
  Backend &backend;
  const int tag;
  const BlockLayout at;
  AlltoallvStats *const stats;
  AlltoallvStageStats *const st;
  std::vector<int> &requests;
  std::vector<int> &from; // per request: the sender, or -1
  std::vector<Piece> &one, &other;

  int runStepByStep(int steps) {
    for (int s = 0; s < steps; ++s) {
      if (std::optional<int> rc = exchangeOne(s)) {
        if (*rc)
          return *rc;
        continue;
      }
      if (int rc = postReceives(s))
        return rc;
      if (int rc = postSends(s))
        return rc;
      if (int rc = finish())
        return rc;
    }
    return MPI_SUCCESS;
  }

  int runAllAtOnce(int steps) {
    // Receives first, so that no message waits as unexpected.
    for (int s = 0; s < steps; ++s)
      if (int rc = postReceives(s))
        return rc;
    for (int s = 0; s < steps; ++s)
      if (int rc = postSends(s))
        return rc;
    return finish();
  }

  void countSent(int to) {
    if (!st)
      return;
    ++stats->messages;
    ++st->sent;
    st->longestSent = std::max<int64_t>(st->longestSent, at.sendcounts[to]);
  }

  void countReceived(int source) {
    if (!st)
      return;
    ++st->received;
    st->longestReceived =
        std::max<int64_t>(st->longestReceived, at.recvcounts[source]);
    st->receiveBuffer += at.recvcounts[source];
  }

  int postSends(int s) {
    for (int k = rows.sendAt[s]; k < rows.sendAt[s + 1]; ++k) {
      const int to = rows.sends[k];
      int request = 0;
      one[0] = at.sent(to);
      if (int rc = backend.isend(to, tag, one, request))
        return rc;
      requests.push_back(request);
      from.push_back(-1);
      countSent(to);
    }
    return MPI_SUCCESS;
  }

  int postReceives(int s) {
    for (int k = rows.receiveAt[s]; k < rows.receiveAt[s + 1]; ++k) {
      const int x = rows.receives[k];
      int request = 0;
      one[0] = at.received(x);
      if (int rc = backend.irecv(x, tag, one, request))
        return rc;
      requests.push_back(request);
      from.push_back(x);
    }
    return MPI_SUCCESS;
  }

  int finish() {
    // The requests since the backend's last reset, numbered in order: one
    // wait for all.
    if (!requests.empty())
      if (int rc =
              backend.waitAll(requests.front(), requests.back() + 1, nullptr))
        return rc;
    for (size_t i = 0; i < requests.size(); ++i)
      if (from[i] >= 0)
        countReceived(from[i]);
    requests.clear();
    from.clear();
    return MPI_SUCCESS;
  }

  // A step of one message each way (the one step on two ranks) is one
  // sendrecv, as in MPI's own pairwise exchange: no requests to keep and
  // wait for. Returns the MPI code, or nothing if step s is not such a step.
  std::optional<int> exchangeOne(int s) {
    const int send = rows.sendAt[s], receive = rows.receiveAt[s];
    if (rows.sendAt[s + 1] - send != 1 || rows.receiveAt[s + 1] - receive != 1)
      return std::nullopt;
    const int to = rows.sends[send], source = rows.receives[receive];
    one[0] = at.sent(to);
    other[0] = at.received(source);
    size_t bytes = 0;
    int rc = backend.sendrecvOne(to, tag, one[0], source, tag, other[0], bytes);
    countSent(to);
    countReceived(source);
    return rc;
  }
};

} // namespace

int directExchange(const AlltoallvSteps::Rows &rows, Backend &backend, int tag,
                   const BlockLayout &at, AlltoallvMode mode,
                   AlltoallvStats *stats) {
  AlltoallvStageStats *st = stats ? &stats->stages.front() : nullptr;
  if (int rc = copyOwnBlock(at, rows.p, rows.me, st))
    return rc;

  // Kept per thread, so that a call allocates nothing.
  thread_local std::vector<int> requests;
  thread_local std::vector<int> from; // per request: the sender, or -1
  thread_local std::vector<Piece> one(1);
  requests.clear();
  from.clear();
  thread_local std::vector<Piece> other(1);
  return DirectExchange(rows, backend, tag, at, stats, st, requests, from, one,
                        other)
      .run(mode);
}

} // namespace alltoallv_detail

using namespace alltoallv_detail;

int AlltoallvSteps::connect(const char *name, CommRef c) {
  schedule = name;
  comm = c;
  if (c.local) {
    std::unique_ptr<Backend> mine;
    if (int rc = makeLocalBackend(*c.local, mine))
      return fail(rc, "invalid local communicator");
    owned = std::move(mine);
    backend = owned.get();
  } else if (int rc = makeMpiBackend(c.mpi, backend, MpiChannel::Alltoallv)) {
    return fail(rc, "cannot duplicate the communicator");
  }
  p = backend->size();
  me = backend->rank();
  bool found = false;
  rows = &rowsFor(schedule, p, me, found);
  return MPI_SUCCESS;
}

bool AlltoallvSteps::known() const { return rows && rows->complete; }

void AlltoallvSteps::forgetNoted() {
  for (Rows &r : kept)
    r = Rows{};
}

int AlltoallvSteps::fail(int code, const char *message) const {
  std::fprintf(stderr, "collc: %s: %s\n", schedule, message);
  return code;
}

int AlltoallvSteps::splitBlocks(int64_t n) {
  // The same on every rank: the count depends on the size alone. A rank
  // notes piece ids by int: p * p * count of them at most.
  const int64_t blocks = int64_t(std::max(p, 1)) * std::max(p, 1);
  if (n < 1 || n > INT32_MAX / blocks)
    return fail(MPI_ERR_ARG, "a block's piece count is out of range");
  rows->pieces = n;
  return MPI_SUCCESS;
}

// The own block is copied in place of a message to oneself (run()).
void AlltoallvSteps::sendAll(int64_t peer, int) {
  if (peer == me)
    return;
  rows->sends.push_back(static_cast<int>(peer));
  filters.emplace_back();
}

void AlltoallvSteps::sendFiltered(int64_t peer, BlockFilter filter) {
  if (peer == me)
    return;
  rows->sends.push_back(static_cast<int>(peer));
  filters.push_back(std::move(filter));
  rows->forwards = true;
}

void AlltoallvSteps::receive(int64_t sender, uint64_t, bool) {
  if (sender != me)
    rows->receives.push_back(static_cast<int>(sender));
}

int AlltoallvSteps::endStep(int64_t, const char *) {
  rows->sendAt.push_back(static_cast<int>(rows->sends.size()));
  rows->receiveAt.push_back(static_cast<int>(rows->receives.size()));
  return MPI_SUCCESS;
}

int AlltoallvSteps::run(const void *sendbuf, const int *sendcounts,
                        const int *sdispls, MPI_Datatype sendtype,
                        void *recvbuf, const int *recvcounts,
                        const int *rdispls, MPI_Datatype recvtype,
                        AlltoallvMode mode) {
  // A direct walk is all the next call alike needs; a forwarding one also
  // needs the blocks its first run picks.
  const bool walked = !rows->complete;
  if (!rows->forwards)
    rows->complete = true;
  // Kept across calls: a repeated exchange allocates nothing.
  thread_local ByteBlocks bytes;
  const char *why = "";
  if (int rc = bytes.start(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                           recvcounts, rdispls, recvtype, p, comm, why))
    return failAlone(comm, schedule, rc, why);
  ForgetRequests forget{backend};
  const int tag = tagBaseOf(comm);
  const BlockLayout at = bytes.layout();
  if (rows->forwards) {
    why = "a message failed to travel";
    bool noted = true;
    if (int rc =
            forwardingExchange(*rows, walked ? &filters : nullptr, *backend,
                               tag, at.in, at.sendcounts, at.sdispls, at.out,
                               at.recvcounts, at.rdispls, why, noted))
      return failAlone(comm, schedule, rc, why);
    rows->complete = noted;
  } else if (int rc = directExchange(*rows, *backend, tag, at, mode, nullptr)) {
    return failAlone(comm, schedule, rc,
                     "a message does not fit recvcounts, or the backend "
                     "failed");
  }
  if (bytes.finish(comm) != MPI_SUCCESS)
    return failAlone(comm, schedule, MPI_ERR_INTERN,
                     "cannot unpack the receive buffer");
  return MPI_SUCCESS;
}

} // namespace collc::rt
