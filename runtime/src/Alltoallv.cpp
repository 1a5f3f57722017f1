// Irregular all-to-all over a proved static pattern (001 §3; see
// collc/Alltoallv.h). MPI point-to-point only.

#include "collc/Alltoallv.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

namespace collc::rt {
namespace {

/// A run of consecutive elements of one (origin, destination) block,
/// followed in a message by its count * elementSize bytes.
struct RunHeader {
  int32_t origin;
  int32_t dest;
  int64_t offset;
  int64_t count;
};

constexpr int baseTag = 0x2a40;

int dupKeyval = MPI_KEYVAL_INVALID;

int freeDuplicate(MPI_Comm, int, void *attribute, void *) {
  auto *dup = static_cast<MPI_Comm *>(attribute);
  MPI_Comm_free(dup);
  delete dup;
  return MPI_SUCCESS;
}

/// A private duplicate of `comm`, made once and kept on it, so our
/// messages never meet the caller's. It is not the Engine's duplicate
/// (MpiBackend.cpp) on purpose: the Engine's step tags cover 0..32767, which
/// overlaps the stage tags here, so sharing one would let a message of one
/// collective match a receive of another.
int privateComm(MPI_Comm comm, MPI_Comm *out) {
  if (dupKeyval == MPI_KEYVAL_INVALID)
    if (int rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, freeDuplicate,
                                        &dupKeyval, nullptr))
      return rc;
  void *attribute = nullptr;
  int found = 0;
  if (int rc = MPI_Comm_get_attr(comm, dupKeyval, &attribute, &found))
    return rc;
  if (!found) {
    auto *dup = new MPI_Comm;
    if (int rc = MPI_Comm_dup(comm, dup)) {
      delete dup;
      return rc;
    }
    if (int rc = MPI_Comm_set_attr(comm, dupKeyval, dup))
      return rc;
    attribute = dup;
  }
  *out = *static_cast<MPI_Comm *>(attribute);
  return MPI_SUCCESS;
}

int fail(int code, const char *why) {
  std::fprintf(stderr, "collc alltoallv: %s\n", why);
  return code;
}

/// Contiguous types only: the element size, or 0.
size_t contiguousSize(MPI_Datatype type) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, trueLb = 0, trueExtent = 0;
  if (MPI_Type_size(type, &size) || MPI_Type_get_extent(type, &lb, &extent) ||
      MPI_Type_get_true_extent(type, &trueLb, &trueExtent))
    return 0;
  if (size <= 0 || lb != 0 || trueLb != 0 || extent != size ||
      trueExtent != size)
    return 0;
  return static_cast<size_t>(size);
}

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

class Exchange {
public:
  Exchange(const AlltoallvPlan &plan, int me, size_t elementSize)
      : plan(plan), me(me), elementSize(elementSize) {
    for (auto &set : buckets)
      set.resize(plan.p);
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

  std::vector<char> &bucket(int set, int peer) { return buckets[set][peer]; }
  size_t bucketBytes(int set) const {
    size_t total = 0;
    for (const auto &b : buckets[set])
      total += b.size();
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
             payload + static_cast<size_t>(part.offset - h.offset) * elementSize);
      part.offset += part.count;
    }
    counter[h.dest] += h.count;
  }

  void append(int peer, const RunHeader &h, const char *payload) {
    if (h.count == 0)
      return;
    std::vector<char> &b = buckets[current][peer];
    size_t at = b.size();
    size_t n = static_cast<size_t>(h.count) * elementSize;
    b.resize(at + sizeof h + n);
    std::memcpy(b.data() + at, &h, sizeof h);
    std::memcpy(b.data() + at + sizeof h, payload, n);
  }

  const AlltoallvPlan &plan;
  int me;
  size_t elementSize;
  std::vector<std::vector<char>> buckets[2];
  int current = 0;
  AlltoallvStageKind kinds[2] = {AlltoallvStageKind::Direct,
                                 AlltoallvStageKind::Direct};
  std::vector<int64_t> counters[2];
};

} // namespace

int alltoallv(const AlltoallvPlan &plan, const void *sendbuf,
              const int *sendcounts, const int *sdispls, MPI_Datatype sendtype,
              void *recvbuf, const int *recvcounts, const int *rdispls,
              MPI_Datatype recvtype, MPI_Comm comm, AlltoallvMode mode,
              AlltoallvStats *stats) {
  int size = 0, me = 0;
  if (int rc = MPI_Comm_size(comm, &size))
    return rc;
  if (int rc = MPI_Comm_rank(comm, &me))
    return rc;
  if (size != plan.p)
    return fail(MPI_ERR_COMM, "the communicator's size is not the one the "
                              "schedule was proved for");
  size_t es = contiguousSize(sendtype);
  if (es == 0 || es != contiguousSize(recvtype))
    return fail(MPI_ERR_TYPE, "only contiguous types of the same size are "
                              "supported");
  MPI_Comm priv;
  if (int rc = privateComm(comm, &priv))
    return rc;

  const size_t stages = plan.stages.size();
  const bool dual = mode == AlltoallvMode::NonBlockingDual;
  Exchange ex(plan, me, es);
  AlltoallvStats local;
  bool overflow = false;
  char *out = static_cast<char *>(recvbuf);
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

  // Stage 0's buckets come straight from the send buffer (R-Distribute
  // scans it once).
  ex.startStage(0, 0);
  const char *in = static_cast<const char *>(sendbuf);
  for (int j = 0; j < size; ++j)
    ex.distribute(0,
                  RunHeader{me, j, 0, static_cast<int64_t>(sendcounts[j])},
                  in + static_cast<size_t>(sdispls[j]) * es);

  std::vector<MPI_Request> previousSends;
  for (size_t k = 0; k < stages; ++k) {
    const AlltoallvStage &stage = plan.stages[k];
    const int set = dual ? static_cast<int>(k % 2) : 0;
    const int next = dual ? 1 - set : 0;
    const bool last = k + 1 == stages;
    const int tag = baseTag + static_cast<int>(k);
    std::vector<char> mine = std::move(ex.bucket(set, me));
    ex.bucket(set, me).clear();
    if (dual && !last) {
      // The other buffer was the stage before's: its sends must be done
      // before it fills again.
      if (int rc = MPI_Waitall(static_cast<int>(previousSends.size()),
                               previousSends.data(), MPI_STATUSES_IGNORE))
        return rc;
      previousSends.clear();
      ex.startStage(k + 1, next);
    }
    std::vector<std::vector<char>> received;
    size_t receivedBytes = 0;
    auto onMessage = [&](std::vector<char> &&m) {
      receivedBytes += m.size();
      if (last)
        overflow |= !ex.forEachRun(m.data(), m.size(), deliver);
      else if (dual)
        overflow |= !ex.distributeMessage(next, m.data(), m.size());
      else
        received.push_back(std::move(m));
    };
    auto receiveFrom = [&](int from) -> int {
      MPI_Status st;
      if (int rc = MPI_Probe(from, tag, priv, &st))
        return rc;
      int bytes = 0;
      if (int rc = MPI_Get_count(&st, MPI_BYTE, &bytes))
        return rc;
      std::vector<char> m(static_cast<size_t>(bytes));
      if (int rc = MPI_Recv(m.data(), bytes, MPI_BYTE, from, tag, priv,
                            MPI_STATUS_IGNORE))
        return rc;
      onMessage(std::move(m));
      return MPI_SUCCESS;
    };
    auto sendTo = [&](int step) { return stage.sendTo[step * size + me]; };
    auto receiveFromOf = [&](int step) {
      for (int x = 0; x < size; ++x)
        if (stage.sendTo[step * size + x] == me)
          return x;
      return -1;
    };
    std::vector<MPI_Request> sends;
    auto post = [&](int peer) -> int {
      std::vector<char> &b = ex.bucket(set, peer);
      if (b.size() > static_cast<size_t>(INT32_MAX))
        return fail(MPI_ERR_COUNT, "a message exceeds 2 GiB");
      sends.emplace_back();
      ++local.messages;
      return MPI_Isend(b.data(), static_cast<int>(b.size()), MPI_BYTE, peer,
                       tag, priv, &sends.back());
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
        if (int rc = MPI_Waitall(static_cast<int>(sends.size()), sends.data(),
                                 MPI_STATUSES_IGNORE))
          return rc;
        sends.clear();
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
    } else if (int rc = MPI_Waitall(static_cast<int>(sends.size()),
                                    sends.data(), MPI_STATUSES_IGNORE)) {
      return rc;
    }
    // What this rank kept for itself goes on like a received message.
    if (last) {
      overflow |= !ex.forEachRun(mine.data(), mine.size(), deliver);
    } else {
      if (!dual)
        ex.startStage(k + 1, next);
      overflow |= !ex.distributeMessage(next, mine.data(), mine.size());
      for (const std::vector<char> &m : received)
        overflow |= !ex.distributeMessage(next, m.data(), m.size());
    }
  }
  if (int rc = MPI_Waitall(static_cast<int>(previousSends.size()),
                           previousSends.data(), MPI_STATUSES_IGNORE))
    return rc;
  if (stats)
    *stats = local;
  if (overflow)
    return fail(MPI_ERR_TRUNCATE, "received data does not fit recvcounts");
  return MPI_SUCCESS;
}

} // namespace collc::rt
