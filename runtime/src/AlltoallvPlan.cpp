// The pattern tables' irregular all-to-all (001 §3: A1-A4 as proved step
// tables, collc/Alltoallv.h's alltoallv()): each stage deals what a rank
// holds into buckets by Figure 11's counter function and sends them as runs
// behind headers.

#include "AlltoallvDetail.h"

#include <algorithm>
#include <cstring>

namespace collc::rt {
using namespace alltoallv_detail;
namespace {

/// A run of consecutive elements of one (origin, destination) block,
/// followed in a message by its count * elementSize bytes.
struct RunHeader {
  int32_t origin;
  int32_t dest;
  int64_t offset;
  int64_t count;
};

/// How many k in [0, n) have ((start + k) mod m) mod g == b: the share of
/// group b when the counter function of Figure 11 deals n elements.
int64_t dealt(int64_t start, int64_t n, int64_t m, int64_t g, int64_t b) {
  auto below = [&](int64_t x) { // v in [0, x) with v mod g == b
    return x > b ? (x - b + g - 1) / g : 0;
  };
  int64_t a = start % m, rem = n % m;
  int64_t c = (n / m) * below(m);
  if (a + rem <= m)
    c += below(a + rem) - below(a);
  else
    c += below(m) - below(a) + below(a + rem - m);
  return c;
}

/// One rank's buckets through a plan's stages: what each stage deals to
/// whom, and the runs that reach this rank.
class Exchange {
public:
  Exchange(const AlltoallvPlan &plan, int me, size_t elementSize, Workspace &ws)
      : plan(plan), me(me), elementSize(elementSize), buckets(ws.buckets) {
    for (int set = 0; set < 2; ++set) {
      buckets[set].resize(plan.p);
      elements[set].assign(plan.p, 0);
    }
  }

  int rowOf(int x) const { return x / plan.columns; }
  int columnOf(int x) const { return x % plan.columns; }
  int columnSize(int c) const {
    return plan.r == 0 || c < plan.r ? plan.rows : plan.rows - 1;
  }
  /// Where Stages I and III send what is bound for column c (pseudo-nodes
  /// of the incomplete row stand in at node (sender's column, c)).
  int rowPeer(int c) const {
    if (plan.r > 0 && rowOf(me) == plan.rows - 1 && c >= plan.r)
      return columnOf(me) * plan.columns + c;
    return rowOf(me) * plan.columns + c;
  }

  /// Empties buffer `set` and readies it for `stage`'s distribution.
  void startStage(size_t stage, int set) {
    kinds[set] = plan.stages[stage].kind;
    for (auto &b : buckets[set])
      b.clear();
    std::fill(elements[set].begin(), elements[set].end(), 0);
    std::vector<int64_t> &counter = counters[set];
    AlltoallvStageKind kind = kinds[set];
    counter.assign(plan.p, 0);
    int n = columnSize(columnOf(me));
    for (int j = 0; j < plan.p; ++j) {
      switch (kind) {
      case AlltoallvStageKind::RowDistribute:
        counter[j] = j % plan.columns;
        break;
      case AlltoallvStageKind::ColumnDistribute:
        counter[j] = j % n;
        break;
      case AlltoallvStageKind::Spread:
        // A2 balances through intermediates chosen at random; a fixed
        // hash of (sender, destination) keeps runs reproducible.
        counter[j] = static_cast<int64_t>(
            (static_cast<uint64_t>(j) * 2654435761u + me * 40503u) % plan.p);
        break;
      default:
        break;
      }
    }
  }

  /// Puts one run into the buckets of buffer `set`.
  void distribute(int set, const RunHeader &h, const char *payload) {
    current = set;
    switch (kinds[set]) {
    case AlltoallvStageKind::RowDistribute:
      deal(h, payload, plan.p, plan.columns,
           [&](int64_t g) { return rowPeer(static_cast<int>(g)); });
      return;
    case AlltoallvStageKind::ColumnDistribute: {
      int n = columnSize(columnOf(me));
      deal(h, payload, n, n, [&](int64_t g) {
        return static_cast<int>(g) * plan.columns + columnOf(me);
      });
      return;
    }
    case AlltoallvStageKind::Spread:
      deal(h, payload, plan.p, plan.p,
           [&](int64_t g) { return static_cast<int>(g); });
      return;
    case AlltoallvStageKind::RowCollect:
      append(rowPeer(columnOf(h.dest)), h, payload);
      return;
    case AlltoallvStageKind::ColumnCollect:
    case AlltoallvStageKind::Direct:
      append(h.dest, h, payload);
      return;
    }
  }

  /// Distributes every run of a message.
  bool distributeMessage(int set, const char *data, size_t bytes) {
    return forEachRun(data, bytes,
                      [&](const RunHeader &h, const char *payload) {
                        distribute(set, h, payload);
                        return true;
                      });
  }

  template <typename F>
  bool forEachRun(const char *data, size_t bytes, F f) const {
    size_t at = 0;
    while (at + sizeof(RunHeader) <= bytes) {
      RunHeader h;
      std::memcpy(&h, data + at, sizeof h);
      at += sizeof h;
      size_t n = static_cast<size_t>(h.count) * elementSize;
      if (h.count < 0 || at + n > bytes)
        return false;
      if (!f(h, data + at))
        return false;
      at += n;
    }
    return at == bytes;
  }

  /// The elements of a message: its runs' counts (up to a malformed run).
  int64_t elementsOf(const char *data, size_t bytes) const {
    int64_t n = 0;
    forEachRun(data, bytes, [&](const RunHeader &h, const char *) {
      n += h.count;
      return true;
    });
    return n;
  }

  Bytes &bucket(int set, int peer) { return buckets[set][peer]; }
  int64_t bucketElements(int set, int peer) const {
    return elements[set][peer];
  }
  size_t bucketBytes(int set) const {
    size_t total = 0;
    for (const auto &b : buckets[set])
      total += b.size();
    return total;
  }
  int64_t setElements(int set) const {
    int64_t total = 0;
    for (int64_t n : elements[set])
      total += n;
    return total;
  }

private:
  template <typename Target>
  void deal(const RunHeader &h, const char *payload, int64_t m, int64_t g,
            Target target) {
    std::vector<int64_t> &counter = counters[current];
    int64_t start = counter[h.dest];
    RunHeader part = h;
    for (int64_t b = 0; b < g; ++b) {
      part.count = dealt(start, h.count, m, g, b);
      if (part.count == 0)
        continue;
      append(target(b), part,
             payload +
                 static_cast<size_t>(part.offset - h.offset) * elementSize);
      part.offset += part.count;
    }
    counter[h.dest] += h.count;
  }

  void append(int peer, const RunHeader &h, const char *payload) {
    if (h.count == 0)
      return;
    Bytes &b = buckets[current][peer];
    elements[current][peer] += h.count;
    size_t at = b.size();
    size_t n = static_cast<size_t>(h.count) * elementSize;
    b.resize(at + sizeof h + n);
    std::memcpy(b.data() + at, &h, sizeof h);
    std::memcpy(b.data() + at + sizeof h, payload, n);
  }

  const AlltoallvPlan &plan;
  int me;
  size_t elementSize;
  std::vector<Bytes> (&buckets)[2];
  std::vector<int64_t> elements[2]; // per bucket, headers not counted
  int current = 0;
  AlltoallvStageKind kinds[2] = {AlltoallvStageKind::Direct,
                                 AlltoallvStageKind::Direct};
  std::vector<int64_t> counters[2];
};

/// A one-stage Direct plan's table as this rank's steps: its sends, and
/// the ranks whose entry names it.
const AlltoallvSteps::Rows &rowsOfPlan(const AlltoallvPlan &plan, int me) {
  bool found = false;
  AlltoallvSteps::Rows &rows = rowsFor(&plan, plan.p, me, found);
  if (found)
    return rows;
  const AlltoallvStage &stage = plan.stages.front();
  for (int s = 0; s < stage.steps; ++s) {
    const int *row = stage.sendTo + static_cast<size_t>(s) * plan.p;
    if (row[me] >= 0)
      rows.sends.push_back(row[me]);
    for (int x = 0; x < plan.p; ++x)
      if (row[x] == me)
        rows.receives.push_back(x);
    rows.sendAt.push_back(static_cast<int>(rows.sends.size()));
    rows.receiveAt.push_back(static_cast<int>(rows.receives.size()));
  }
  rows.complete = true;
  return rows;
}

/// A plan's exchange through its stages' buckets (every plan but one direct
/// stage). Returns an MPI code and, on a failure, `why`.
int stagedExchange(const AlltoallvPlan &plan, Backend &backend, int tagBase,
                   size_t es, const char *in, const int *sendcounts,
                   const int *sdispls, char *out, const int *recvcounts,
                   const int *rdispls, AlltoallvMode mode,
                   AlltoallvStats *stats, const char *&why) {
  const int size = plan.p, me = backend.rank();
  const size_t stages = plan.stages.size();
  const bool dual = mode == AlltoallvMode::NonBlockingDual;
  HeldWorkspace lease;
  Workspace &ws = lease.workspace;
  Exchange ex(plan, me, es, ws);
  AlltoallvStats local;
  local.stages.resize(stages);
  bool overflow = false;
  auto deliver = [&](const RunHeader &h, const char *payload) {
    if (h.dest != me || h.origin < 0 || h.origin >= size || h.offset < 0 ||
        h.offset + h.count > recvcounts[h.origin]) {
      overflow = true;
      return false;
    }
    std::memcpy(out + (static_cast<size_t>(rdispls[h.origin]) + h.offset) * es,
                payload, static_cast<size_t>(h.count) * es);
    return true;
  };
  auto waitAll = [&](std::vector<int> &requests) -> int {
    for (int request : requests) {
      size_t bytes = 0;
      if (int rc = backend.wait(request, bytes))
        return rc;
    }
    requests.clear();
    return MPI_SUCCESS;
  };

  // Stage 0's buckets come straight from the send buffer (R-Distribute
  // scans it once).
  ex.startStage(0, 0);
  for (int j = 0; j < size; ++j)
    ex.distribute(0, RunHeader{me, j, 0, static_cast<int64_t>(sendcounts[j])},
                  in + static_cast<size_t>(sdispls[j]) * es);

  std::vector<int> previousSends;
  for (size_t k = 0; k < stages; ++k) {
    const AlltoallvStage &stage = plan.stages[k];
    AlltoallvStageStats &st = local.stages[k];
    const int set = dual ? static_cast<int>(k % 2) : 0;
    const int next = dual ? 1 - set : 0;
    const bool last = k + 1 == stages;
    const int tag = tagBase + static_cast<int>(k);
    // The bucket a rank keeps for itself: Lemma 1's message from itself.
    const int64_t mineElements = ex.bucketElements(set, me);
    st.sendBuffer = ex.setElements(set);
    st.received = 1;
    st.longestReceived = mineElements;
    st.receiveBuffer = mineElements;
    Bytes &mine = ws.mine;
    mine.swap(ex.bucket(set, me));
    ex.bucket(set, me).clear();
    if (dual && !last) {
      // The other buffer was the stage before's: its sends must be done
      // before it fills again.
      if (int rc = waitAll(previousSends))
        return rc;
      ex.startStage(k + 1, next);
    }
    // Messages kept until the stage's end (single send buffer): the
    // first `kept` of the inbox.
    size_t kept = 0;
    size_t receivedBytes = 0;
    auto onMessage = [&](const Bytes &m) {
      receivedBytes += m.size();
      const int64_t n = ex.elementsOf(m.data(), m.size());
      ++st.received;
      st.longestReceived = std::max(st.longestReceived, n);
      st.receiveBuffer += n;
      if (last)
        overflow |= !ex.forEachRun(m.data(), m.size(), deliver);
      else if (dual)
        overflow |= !ex.distributeMessage(next, m.data(), m.size());
      else
        ++kept;
    };
    auto receiveFrom = [&](int from) -> int {
      // The size is the sender's business: ask for it, then take it whole.
      size_t bytes = 0;
      if (int rc = backend.probe(from, tag, bytes))
        return rc;
      if (ws.inbox.size() <= kept)
        ws.inbox.resize(kept + 1);
      Bytes &m = ws.inbox[kept];
      m.resize(bytes);
      int request = 0;
      if (int rc = backend.irecv(from, tag, {Piece{m.data(), bytes}}, request))
        return rc;
      if (int rc = backend.wait(request, bytes))
        return rc;
      onMessage(m);
      return MPI_SUCCESS;
    };
    auto sendTo = [&](int step) { return stage.sendTo[step * size + me]; };
    auto receiveFromOf = [&](int step) {
      for (int x = 0; x < size; ++x)
        if (stage.sendTo[step * size + x] == me)
          return x;
      return -1;
    };
    for (int s = 0; s < stage.steps; ++s)
      if (sendTo(s) >= 0 &&
          ex.bucket(set, sendTo(s)).size() > static_cast<size_t>(INT32_MAX)) {
        why = "a message exceeds 2 GiB";
        return MPI_ERR_COUNT;
      }
    std::vector<int> sends;
    auto post = [&](int peer) -> int {
      Bytes &b = ex.bucket(set, peer);
      ++local.messages;
      ++st.sent;
      st.longestSent = std::max(st.longestSent, ex.bucketElements(set, peer));
      int request = 0;
      if (int rc =
              backend.isend(peer, tag, {Piece{b.data(), b.size()}}, request))
        return rc;
      sends.push_back(request);
      return MPI_SUCCESS;
    };
    size_t bucketBytes = ex.bucketBytes(set) + mine.size();
    if (mode == AlltoallvMode::Blocking) {
      for (int s = 0; s < stage.steps; ++s) {
        if (sendTo(s) >= 0)
          if (int rc = post(sendTo(s)))
            return rc;
        if (int from = receiveFromOf(s); from >= 0)
          if (int rc = receiveFrom(from))
            return rc;
        if (int rc = waitAll(sends))
          return rc;
      }
    } else {
      for (int s = 0; s < stage.steps; ++s)
        if (sendTo(s) >= 0)
          if (int rc = post(sendTo(s)))
            return rc;
      for (int s = 0; s < stage.steps; ++s)
        if (int from = receiveFromOf(s); from >= 0)
          if (int rc = receiveFrom(from))
            return rc;
    }
    local.largestBuffer = std::max<int64_t>(
        local.largestBuffer, static_cast<int64_t>(bucketBytes + receivedBytes));
    if (dual) {
      previousSends.insert(previousSends.end(), sends.begin(), sends.end());
    } else if (int rc = waitAll(sends)) {
      return rc;
    }
    // What this rank kept for itself goes on like a received message.
    if (last) {
      overflow |= !ex.forEachRun(mine.data(), mine.size(), deliver);
    } else {
      if (!dual)
        ex.startStage(k + 1, next);
      overflow |= !ex.distributeMessage(next, mine.data(), mine.size());
      for (size_t i = 0; i < kept; ++i)
        overflow |=
            !ex.distributeMessage(next, ws.inbox[i].data(), ws.inbox[i].size());
    }
  }
  if (int rc = waitAll(previousSends))
    return rc;
  if (stats)
    *stats = std::move(local);
  if (overflow) {
    why = "received data does not fit recvcounts";
    return MPI_ERR_TRUNCATE;
  }
  return MPI_SUCCESS;
}

} // namespace

int alltoallv(const AlltoallvPlan &plan, const void *sendbuf,
              const int *sendcounts, const int *sdispls, MPI_Datatype sendtype,
              void *recvbuf, const int *recvcounts, const int *rdispls,
              MPI_Datatype recvtype, CommRef comm, AlltoallvMode mode,
              AlltoallvStats *stats) {
  std::unique_ptr<Backend> owned; // the local backend's
  Backend *backend = nullptr;
  if (comm.local) {
    if (int rc = makeLocalBackend(*comm.local, owned))
      return fail(rc, "invalid local communicator");
    backend = owned.get();
  } else if (int rc =
                 makeMpiBackend(comm.mpi, backend, MpiChannel::Alltoallv)) {
    return fail(rc, "cannot duplicate the communicator");
  }
  const int size = backend->size(), me = backend->rank();
  if (size != plan.p)
    return fail(MPI_ERR_COMM, "the communicator's size is not the one the "
                              "schedule was proved for");
  size_t es = contiguousSize(sendtype);
  if (es == 0 || es != contiguousSize(recvtype))
    return fail(MPI_ERR_TYPE, "only contiguous types of the same size are "
                              "supported");
  ForgetRequests forget{backend};
  const int tagBase = tagBaseOf(comm);

  const size_t stages = plan.stages.size();
  if (stages == 1 && plan.stages.front().kind == AlltoallvStageKind::Direct) {
    // Counted only when asked for: most calls are a program's, not a test's.
    thread_local AlltoallvStats local; // reused: no allocation per call
    if (stats) {
      local.messages = local.largestBuffer = 0;
      local.stages.assign(1, {});
    }
    if (int rc =
            directExchange(rowsOfPlan(plan, me), *backend, tagBase, es,
                           static_cast<const char *>(sendbuf), sendcounts,
                           sdispls, static_cast<char *>(recvbuf), recvcounts,
                           rdispls, mode, stats ? &local : nullptr))
      return failAlone(comm, "alltoallv", rc,
                       "a message does not fit recvcounts, or the backend "
                       "failed");
    if (stats)
      *stats = local;
    return MPI_SUCCESS;
  }
  // Every failure from here on may be this rank's alone (failAlone).
  const char *why = "a message failed to travel";
  if (int rc = stagedExchange(plan, *backend, tagBase, es,
                              static_cast<const char *>(sendbuf), sendcounts,
                              sdispls, static_cast<char *>(recvbuf), recvcounts,
                              rdispls, mode, stats, why))
    return failAlone(comm, "alltoallv", rc, why);
  return MPI_SUCCESS;
}

} // namespace collc::rt
