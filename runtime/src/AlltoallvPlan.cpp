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

/// A run of consecutive bytes of one (origin, destination) block, followed
/// in a message by its `count` bytes.
struct RunHeader {
  int32_t origin;
  int32_t dest;
  int64_t offset;
  int64_t count;
};

/// How many k in [0, n) have ((start + k) mod m) mod g == b: the share of
/// group b when the counter function of Figure 11 deals n elements (here
/// bytes: the runtime moves every block as bytes).
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
  Exchange(const AlltoallvPlan &plan, int me, Workspace &ws)
      : plan(plan), me(me), buckets(ws.buckets) {
    for (int set = 0; set < 2; ++set) {
      buckets[set].resize(plan.p);
      payloadBytes[set].assign(plan.p, 0);
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
    std::fill(payloadBytes[set].begin(), payloadBytes[set].end(), 0);
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
      size_t n = static_cast<size_t>(h.count);
      if (h.count < 0 || at + n > bytes)
        return false;
      if (!f(h, data + at))
        return false;
      at += n;
    }
    return at == bytes;
  }

  /// The payload of a message: its runs' counts (up to a malformed run).
  int64_t payloadOf(const char *data, size_t bytes) const {
    int64_t n = 0;
    forEachRun(data, bytes, [&](const RunHeader &h, const char *) {
      n += h.count;
      return true;
    });
    return n;
  }

  Bytes &bucket(int set, int peer) { return buckets[set][peer]; }
  int64_t bucketPayload(int set, int peer) const {
    return payloadBytes[set][peer];
  }
  size_t bucketBytes(int set) const {
    size_t total = 0;
    for (const auto &b : buckets[set])
      total += b.size();
    return total;
  }
  int64_t setPayload(int set) const {
    int64_t total = 0;
    for (int64_t n : payloadBytes[set])
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
             payload + static_cast<size_t>(part.offset - h.offset));
      part.offset += part.count;
    }
    counter[h.dest] += h.count;
  }

  void append(int peer, const RunHeader &h, const char *payload) {
    if (h.count == 0)
      return;
    Bytes &b = buckets[current][peer];
    payloadBytes[current][peer] += h.count;
    size_t at = b.size();
    size_t n = static_cast<size_t>(h.count);
    b.resize(at + sizeof h + n);
    std::memcpy(b.data() + at, &h, sizeof h);
    std::memcpy(b.data() + at + sizeof h, payload, n);
  }

  const AlltoallvPlan &plan;
  int me;
  std::vector<Bytes> (&buckets)[2];
  std::vector<int64_t> payloadBytes[2]; // per bucket, headers not counted
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
/// stage): one call's state, and a method for each part of a stage.
class StagedExchange {
public:
  StagedExchange(const AlltoallvPlan &plan, Backend &backend, int tagBase,
                 AlltoallvMode mode, Workspace &ws)
      : plan(plan), backend(backend), tagBase(tagBase), mode(mode),
        dual(mode == AlltoallvMode::NonBlockingDual), me(backend.rank()),
        ws(ws), ex(plan, me, ws) {
    local.stages.resize(plan.stages.size());
  }

  /// Returns an MPI code and, on a failure, `why`.
  int run(const char *in, const int *sendcounts, const int *sdispls, char *out,
          const int *recvcounts, const int *rdispls, AlltoallvStats *stats,
          const char *&why) {
    output = out;
    outputCounts = recvcounts;
    outputDispls = rdispls;
    // Stage 0's buckets come straight from the send buffer (R-Distribute
    // scans it once).
    ex.startStage(0, 0);
    for (int j = 0; j < plan.p; ++j)
      ex.distribute(0, RunHeader{me, j, 0, static_cast<int64_t>(sendcounts[j])},
                    in + static_cast<size_t>(sdispls[j]));
    for (size_t k = 0; k < plan.stages.size(); ++k)
      if (int rc = runStage(k, why))
        return rc;
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

private:
  /// One stage as it runs: its table, the bucket sets it sends from and
  /// deals into, and what it has received.
  struct Stage {
    const AlltoallvStage &table;
    AlltoallvStageStats &stats;
    int set = 0, next = 0, tag = 0;
    bool last = false;
    // Messages kept until the stage's end (single send buffer): the first
    // `kept` of the inbox.
    size_t kept = 0;
    size_t receivedBytes = 0;
    std::vector<int> sends;

    Stage(const AlltoallvStage &table, AlltoallvStageStats &stats)
        : table(table), stats(stats) {}
  };

  /// Copies a run that reached its destination into the receive buffer;
  /// false for one that does not fit recvcounts.
  auto delivery() {
    return [this](const RunHeader &h, const char *payload) {
      if (h.dest != me || h.origin < 0 || h.origin >= plan.p || h.offset < 0 ||
          h.offset + h.count > outputCounts[h.origin])
        return false;
      std::memcpy(output + static_cast<size_t>(outputDispls[h.origin]) +
                      static_cast<size_t>(h.offset),
                  payload, static_cast<size_t>(h.count));
      return true;
    };
  }

  int sendTo(const Stage &s, int step) const {
    return s.table.sendTo[step * plan.p + me];
  }
  int receiveFrom(const Stage &s, int step) const {
    for (int x = 0; x < plan.p; ++x)
      if (s.table.sendTo[step * plan.p + x] == me)
        return x;
    return -1;
  }

  int runStage(size_t k, const char *&why) {
    Stage s{plan.stages[k], local.stages[k]};
    s.set = dual ? static_cast<int>(k % 2) : 0;
    s.next = dual ? 1 - s.set : 0;
    s.last = k + 1 == plan.stages.size();
    s.tag = tagBase + static_cast<int>(k);
    // The bucket a rank keeps for itself: Lemma 1's message from itself.
    const int64_t minePayload = ex.bucketPayload(s.set, me);
    s.stats.sendBuffer = ex.setPayload(s.set);
    s.stats.received = 1;
    s.stats.longestReceived = minePayload;
    s.stats.receiveBuffer = minePayload;
    Bytes &mine = ws.mine;
    mine.swap(ex.bucket(s.set, me));
    ex.bucket(s.set, me).clear();
    if (dual && !s.last) {
      // The other buffer was the stage before's: its sends must be done
      // before it fills again.
      if (int rc = waitAll(previousSends))
        return rc;
      ex.startStage(k + 1, s.next);
    }
    for (int step = 0; step < s.table.steps; ++step)
      if (sendTo(s, step) >= 0 && ex.bucket(s.set, sendTo(s, step)).size() >
                                      static_cast<size_t>(INT32_MAX)) {
        why = "a message exceeds 2 GiB";
        return MPI_ERR_COUNT;
      }
    const size_t bucketBytes = ex.bucketBytes(s.set) + mine.size();
    if (mode == AlltoallvMode::Blocking) {
      for (int step = 0; step < s.table.steps; ++step) {
        if (sendTo(s, step) >= 0)
          if (int rc = post(s, sendTo(s, step)))
            return rc;
        if (int from = receiveFrom(s, step); from >= 0)
          if (int rc = receive(s, from))
            return rc;
        if (int rc = waitAll(s.sends))
          return rc;
      }
    } else {
      for (int step = 0; step < s.table.steps; ++step)
        if (sendTo(s, step) >= 0)
          if (int rc = post(s, sendTo(s, step)))
            return rc;
      for (int step = 0; step < s.table.steps; ++step)
        if (int from = receiveFrom(s, step); from >= 0)
          if (int rc = receive(s, from))
            return rc;
    }
    local.largestBuffer =
        std::max<int64_t>(local.largestBuffer,
                          static_cast<int64_t>(bucketBytes + s.receivedBytes));
    if (dual) {
      previousSends.insert(previousSends.end(), s.sends.begin(), s.sends.end());
    } else if (int rc = waitAll(s.sends)) {
      return rc;
    }
    // What this rank kept for itself goes on like a received message.
    if (s.last) {
      overflow |= !ex.forEachRun(mine.data(), mine.size(), delivery());
    } else {
      if (!dual)
        ex.startStage(k + 1, s.next);
      overflow |= !ex.distributeMessage(s.next, mine.data(), mine.size());
      for (size_t i = 0; i < s.kept; ++i)
        overflow |= !ex.distributeMessage(s.next, ws.inbox[i].data(),
                                          ws.inbox[i].size());
    }
    return MPI_SUCCESS;
  }

  /// Sends this rank's bucket for `peer`.
  int post(Stage &s, int peer) {
    Bytes &b = ex.bucket(s.set, peer);
    ++local.messages;
    ++s.stats.sent;
    s.stats.longestSent =
        std::max(s.stats.longestSent, ex.bucketPayload(s.set, peer));
    int request = 0;
    if (int rc =
            backend.isend(peer, s.tag, {Piece{b.data(), b.size()}}, request))
      return rc;
    s.sends.push_back(request);
    return MPI_SUCCESS;
  }

  /// Receives the stage's message from `from`: its size is the sender's
  /// business, so ask for it, then take it whole.
  int receive(Stage &s, int from) {
    size_t bytes = 0;
    if (int rc = backend.probe(from, s.tag, bytes))
      return rc;
    if (ws.inbox.size() <= s.kept)
      ws.inbox.resize(s.kept + 1);
    Bytes &m = ws.inbox[s.kept];
    m.resize(bytes);
    int request = 0;
    if (int rc = backend.irecv(from, s.tag, {Piece{m.data(), bytes}}, request))
      return rc;
    if (int rc = backend.wait(request, bytes))
      return rc;
    s.receivedBytes += m.size();
    const int64_t n = ex.payloadOf(m.data(), m.size());
    ++s.stats.received;
    s.stats.longestReceived = std::max(s.stats.longestReceived, n);
    s.stats.receiveBuffer += n;
    if (s.last)
      overflow |= !ex.forEachRun(m.data(), m.size(), delivery());
    else if (dual)
      overflow |= !ex.distributeMessage(s.next, m.data(), m.size());
    else
      ++s.kept;
    return MPI_SUCCESS;
  }

  int waitAll(std::vector<int> &requests) {
    for (int request : requests) {
      size_t bytes = 0;
      if (int rc = backend.wait(request, bytes))
        return rc;
    }
    requests.clear();
    return MPI_SUCCESS;
  }

  const AlltoallvPlan &plan;
  Backend &backend;
  const int tagBase;
  const AlltoallvMode mode;
  const bool dual;
  const int me;
  Workspace &ws;
  Exchange ex;
  char *output = nullptr;
  const int *outputCounts = nullptr, *outputDispls = nullptr;
  AlltoallvStats local;
  std::vector<int> previousSends;
  bool overflow = false;
};

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
  // Kept across calls: a repeated exchange allocates nothing.
  thread_local ByteBlocks bytes;
  const char *why = "";
  if (int rc = bytes.start(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                           recvcounts, rdispls, recvtype, size, comm, why))
    return failAlone(comm, "alltoallv", rc, why);
  ForgetRequests forget{backend};
  const int tagBase = tagBaseOf(comm);
  const BlockLayout at = bytes.layout();

  const size_t stages = plan.stages.size();
  if (stages == 1 && plan.stages.front().kind == AlltoallvStageKind::Direct) {
    // Counted only when asked for: most calls are a program's, not a test's.
    thread_local AlltoallvStats local; // reused: no allocation per call
    if (stats) {
      local.messages = local.largestBuffer = 0;
      local.stages.assign(1, {});
    }
    if (int rc = directExchange(rowsOfPlan(plan, me), *backend, tagBase, at,
                                mode, stats ? &local : nullptr))
      return failAlone(comm, "alltoallv", rc,
                       "a message does not fit recvcounts, or the backend "
                       "failed");
    if (stats)
      *stats = local;
  } else {
    // Every failure from here on may be this rank's alone (failAlone).
    why = "a message failed to travel";
    HeldWorkspace lease;
    StagedExchange exchange(plan, *backend, tagBase, mode, lease.workspace);
    if (int rc = exchange.run(at.in, at.sendcounts, at.sdispls, at.out,
                              at.recvcounts, at.rdispls, stats, why))
      return failAlone(comm, "alltoallv", rc, why);
    lease.workspace.trim(); // after a failure, requests may still write there
  }
  if (bytes.finish(comm) != MPI_SUCCESS)
    return failAlone(comm, "alltoallv", MPI_ERR_INTERN,
                     "cannot unpack the receive buffer");
  return MPI_SUCCESS;
}

} // namespace collc::rt
