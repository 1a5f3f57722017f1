// Irregular all-to-all over a proved static pattern (001 §3; see
// collc/Alltoallv.h), on the runtime's backend interface: point-to-point
// sends and receives of byte messages, MPI or in memory.

#include "collc/Alltoallv.h"

#include "collc/Backend.h"
#include "collc/Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

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

/// A piece of a block in a forwarding message (a `schedule x : alltoallv`
/// whose blocks are split into `chunks` pieces): which piece, where it
/// lies in its block, and its count * elementSize bytes after the headers.
struct PieceHeader {
  int32_t origin;
  int32_t dest;
  int64_t index;
  int64_t offset;
  int64_t count;
};

/// Piece k of `pieces` of a block of n elements: its first element and its
/// count, n * k / pieces onwards, so that pieces differ by one at most.
struct PieceSpan {
  int64_t offset, count;
};
PieceSpan pieceOf(int64_t n, int64_t k, int64_t pieces) {
  const int64_t at = n * k / pieces;
  return {at, n * (k + 1) / pieces - at};
}

// Stage k's messages carry tag base + k. Over MPI they travel on a
// duplicate of their own (MpiChannel::Alltoallv: the schedule engine's step
// tags cover every tag MPI guarantees). The local backend has one set of
// mailboxes per local::run, shared with the engine, and no tag limit: its
// base lies above every engine tag.
constexpr int mpiTagBase = 0x2a40;
constexpr int localTagBase = 1 << 16;

int fail(int code, const char *why) {
  std::fprintf(stderr, "collc alltoallv: %s\n", why);
  return code;
}

/// A failure seen once messages are under way, where the counts decide it:
/// each rank passes its own, so this rank may be the only one to see it
/// while the others wait on its messages. As Engine::failLocal: the
/// communicator's error handler, then the job is aborted.
int failAlone(CommRef comm, const char *name, int code, const char *why) {
  Call c;
  c.name = name;
  c.comm = comm.mpi;
  c.local = comm.local;
  return Engine::failLocal(c, code, why);
}

/// Contiguous types only: the element size, or 0. A predefined type is
/// never freed, so the last one a thread asked about is answered without
/// asking MPI again (three calls that cost more than a small exchange).
size_t contiguousSize(MPI_Datatype type) {
  thread_local MPI_Datatype lastNamed = MPI_DATATYPE_NULL;
  thread_local size_t lastNamedSize = 0;
  if (type == lastNamed)
    return lastNamedSize;
  int size = 0;
  MPI_Aint lb = 0, extent = 0, trueLb = 0, trueExtent = 0;
  if (MPI_Type_size(type, &size) || MPI_Type_get_extent(type, &lb, &extent) ||
      MPI_Type_get_true_extent(type, &trueLb, &trueExtent))
    return 0;
  if (size <= 0 || lb != 0 || trueLb != 0 || extent != size ||
      trueExtent != size)
    return 0;
  int integers = 0, addresses = 0, types = 0, combiner = 0;
  if (MPI_Type_get_envelope(type, &integers, &addresses, &types, &combiner) ==
          MPI_SUCCESS &&
      combiner == MPI_COMBINER_NAMED) {
    lastNamed = type;
    lastNamedSize = static_cast<size_t>(size);
  }
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

/// Message bytes: a vector that leaves what it grows by uninitialized,
/// since every byte is written right after (zeroing a bucket before
/// copying a run into it wrote each byte twice).
template <typename T> struct Uninitialized : std::allocator<T> {
  template <typename U> struct rebind { using other = Uninitialized<U>; };
  Uninitialized() = default;
  template <typename U> Uninitialized(const Uninitialized<U> &) {}
  template <typename U> void construct(U *at) { ::new (at) U; }
  template <typename U, typename... Args>
  void construct(U *at, Args &&...args) {
    ::new (at) U(std::forward<Args>(args)...);
  }
};
using Bytes = std::vector<char, Uninitialized<char>>;

/// The memory of a call, kept per thread across calls (a rank of the local
/// backend is a thread): emptied, never freed, so that a call allocates
/// nothing once it has seen its largest messages. Allocating it afresh made
/// the heap grow and shrink on every call, and from 32 KiB per pair on the
/// page faults and TLB flushes cost 10-100 times the exchange itself.
struct Workspace {
  bool busy = false;
  // The send buffers: a staged exchange's by peer, a forwarding one's by
  // send.
  std::vector<Bytes> buckets[2];
  // The received messages: a stage's, or a whole forwarding exchange's.
  std::vector<Bytes> inbox;
  Bytes mine; // the bucket a rank keeps for itself
  // A forwarding exchange's pieces held, by id, with their offsets in their
  // blocks, and in the order they came (where that order stood as each step
  // began, on a first call); per origin, the pieces of its block
  // for this rank that arrived; its sends' requests.
  std::unordered_map<int64_t, std::pair<Piece, int64_t>> held;
  std::vector<int64_t> order;
  std::vector<size_t> heldBefore;
  std::vector<int64_t> arrived;
  std::vector<int> sendRequests;
};

/// The thread's workspace for the length of a call; a call inside another
/// on the same thread gets one of its own.
struct HeldWorkspace {
  Workspace own;
  Workspace &workspace;
  HeldWorkspace() : workspace(thread().busy ? own : thread()) {
    workspace.busy = true;
  }
  ~HeldWorkspace() { workspace.busy = false; }
  HeldWorkspace(const HeldWorkspace &) = delete;
  HeldWorkspace &operator=(const HeldWorkspace &) = delete;

private:
  static Workspace &thread() {
    thread_local Workspace workspace;
    return workspace;
  }
};

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

/// A direct exchange (A1, 001 §3.1, or a `schedule x : alltoallv`): every
/// message is one whole block, so it goes from the send buffer straight into
/// the receive buffer, without run headers or buckets, and its size is the
/// receiver's recvcounts entry (no probe). The steps' order is `rows`'s.
/// Counts into `stats` (one stage) when asked to.
int directExchange(const AlltoallvSteps::Rows &rows, Backend &backend, int tag,
                   size_t es, const char *in, const int *sendcounts,
                   const int *sdispls, char *out, const int *recvcounts,
                   const int *rdispls, AlltoallvMode mode,
                   AlltoallvStats *stats) {
  const int size = rows.p, me = rows.me;
  const int steps = static_cast<int>(rows.sendAt.size()) - 1;
  AlltoallvStageStats *st = stats ? &stats->stages.front() : nullptr;
  auto block = [&](const char *base, const int *displs, const int *counts,
                   int peer) {
    return Piece{const_cast<char *>(base) +
                     static_cast<size_t>(displs[peer]) * es,
                 static_cast<size_t>(counts[peer]) * es};
  };
  if (sendcounts[me] > recvcounts[me])
    return MPI_ERR_TRUNCATE;
  if (sendcounts[me] > 0)
    moveBytes(block(out, rdispls, recvcounts, me).data,
              block(in, sdispls, sendcounts, me).data,
              static_cast<size_t>(sendcounts[me]) * es);
  if (st) {
    st->received = 1;
    st->longestReceived = st->receiveBuffer = recvcounts[me];
    for (int j = 0; j < size; ++j)
      st->sendBuffer += sendcounts[j];
  }

  // Kept per thread, so that a call allocates nothing.
  thread_local std::vector<int> requests;
  thread_local std::vector<int> from; // per request: the sender, or -1
  thread_local std::vector<Piece> one(1);
  requests.clear();
  from.clear();
  auto countSent = [&](int to) {
    if (!st)
      return;
    ++stats->messages;
    ++st->sent;
    st->longestSent = std::max<int64_t>(st->longestSent, sendcounts[to]);
  };
  auto countReceived = [&](int source) {
    if (!st)
      return;
    ++st->received;
    st->longestReceived =
        std::max<int64_t>(st->longestReceived, recvcounts[source]);
    st->receiveBuffer += recvcounts[source];
  };
  auto post = [&](int s) -> int {
    for (int k = rows.sendAt[s]; k < rows.sendAt[s + 1]; ++k) {
      const int to = rows.sends[k];
      int request = 0;
      one[0] = block(in, sdispls, sendcounts, to);
      if (int rc = backend.isend(to, tag, one, request))
        return rc;
      requests.push_back(request);
      from.push_back(-1);
      countSent(to);
    }
    return MPI_SUCCESS;
  };
  auto postReceive = [&](int s) -> int {
    for (int k = rows.receiveAt[s]; k < rows.receiveAt[s + 1]; ++k) {
      const int x = rows.receives[k];
      int request = 0;
      one[0] = block(out, rdispls, recvcounts, x);
      if (int rc = backend.irecv(x, tag, one, request))
        return rc;
      requests.push_back(request);
      from.push_back(x);
    }
    return MPI_SUCCESS;
  };
  auto finish = [&]() -> int {
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
  };
  // A step of one message each way (the one step on two ranks) is one
  // sendrecv, as in MPI's own pairwise exchange: no requests to keep and
  // wait for. Returns the MPI code, or nothing if step s is not such a step.
  thread_local std::vector<Piece> other(1);
  auto exchangeOne = [&](int s) -> std::optional<int> {
    const int send = rows.sendAt[s], receive = rows.receiveAt[s];
    if (rows.sendAt[s + 1] - send != 1 || rows.receiveAt[s + 1] - receive != 1)
      return std::nullopt;
    const int to = rows.sends[send], source = rows.receives[receive];
    one[0] = block(in, sdispls, sendcounts, to);
    other[0] = block(out, rdispls, recvcounts, source);
    size_t bytes = 0;
    int rc = backend.sendrecvOne(to, tag, one[0], source, tag, other[0], bytes);
    countSent(to);
    countReceived(source);
    return rc;
  };
  if (mode == AlltoallvMode::Blocking || steps == 1) {
    for (int s = 0; s < steps; ++s) {
      if (std::optional<int> rc = exchangeOne(s)) {
        if (*rc)
          return *rc;
        continue;
      }
      if (int rc = postReceive(s))
        return rc;
      if (int rc = post(s))
        return rc;
      if (int rc = finish())
        return rc;
    }
    return MPI_SUCCESS;
  }
  // Receives first, so that no message waits as unexpected.
  for (int s = 0; s < steps; ++s)
    if (int rc = postReceive(s))
      return rc;
  for (int s = 0; s < steps; ++s)
    if (int rc = post(s))
      return rc;
  return finish();
}

/// The i-th piece header of a forwarding message, after its piece count.
PieceHeader pieceHeader(const char *message, int64_t i) {
  PieceHeader h;
  std::memcpy(&h, message + sizeof(int64_t) + static_cast<size_t>(i) * sizeof h,
              sizeof h);
  return h;
}

/// An exchange whose messages forward pieces of blocks (a `schedule x :
/// alltoallv` with chunk filters; a block is one piece without `chunks`):
/// each message is its number of pieces, their PieceHeaders, then the
/// pieces, and its size is probed (a long one leaves from where its pieces
/// lie). A piece for this rank lands in the receive buffer; any other is
/// kept, in the message it came in, until a later step sends it on. A send's
/// pieces are those its filter names among what this rank holds (all it
/// names: causality is proved), in the order it came to hold them; the
/// first call picks them with the filters (`filters`) and notes them in
/// `rows`, later calls alike send what was noted.
int forwardingExchange(AlltoallvSteps::Rows &rows,
                       const std::vector<AlltoallvSteps::BlockFilter> *filters,
                       Backend &backend, int tag, size_t es, const char *in,
                       const int *sendcounts, const int *sdispls, char *out,
                       const int *recvcounts, const int *rdispls,
                       const char *&why) {
  const int64_t p = rows.p, me = rows.me, pieces = rows.pieces;
  const int steps = static_cast<int>(rows.sendAt.size()) - 1;
  HeldWorkspace lease;
  Workspace &ws = lease.workspace;
  // Every received message stays until the end: its pieces may go on.
  if (ws.inbox.size() < rows.receives.size())
    ws.inbox.resize(rows.receives.size());
  std::vector<Bytes> &buckets = ws.buckets[0];

  // A piece's id: its block's (origin * p + dest), then its index.
  auto idOf = [&](int64_t origin, int64_t dest, int64_t index) {
    return (origin * p + dest) * pieces + index;
  };
  struct PieceName {
    int64_t origin, dest, index;
  };
  auto nameOf = [&](int64_t id) {
    return PieceName{id / pieces / p, id / pieces % p, id % pieces};
  };
  // The pieces received so far, by id, where they lie now, with their
  // offsets; the own ones are read from the send buffer.
  auto &held = ws.held;
  std::vector<int64_t> &order = ws.order; // ids as this rank came to hold them
  held.clear();
  order.clear();
  // On the first call, where `order` stood at the start of each step.
  std::vector<size_t> &heldBefore = ws.heldBefore;
  heldBefore.clear();
  if (filters) {
    rows.blockAt.assign(1, 0);
    rows.blocks.clear();
    rows.readyAt.clear();
    for (int64_t d = 0; d < p; ++d)
      for (int64_t k = 0; k < pieces; ++k)
        order.push_back(idOf(me, d, k));
  }
  auto find = [&](int64_t id, Piece &piece, int64_t &offset) {
    if (const PieceName n = nameOf(id); n.origin == me) {
      const PieceSpan span = pieceOf(sendcounts[n.dest], n.index, pieces);
      offset = span.offset;
      piece = Piece{const_cast<char *>(in) +
                        static_cast<size_t>(sdispls[n.dest] + span.offset) * es,
                    static_cast<size_t>(span.count) * es};
      return true;
    }
    auto it = held.find(id);
    if (it == held.end())
      return false;
    std::tie(piece, offset) = it->second;
    return true;
  };
  // Where a piece for this rank goes, or null if it does not fit recvcounts.
  auto placeOf = [&](const PieceHeader &h) -> char * {
    if (h.offset < 0 || h.count < 0 ||
        h.offset + h.count > recvcounts[h.origin]) {
      why = "a block does not fit recvcounts";
      return nullptr;
    }
    return out + static_cast<size_t>(rdispls[h.origin] + h.offset) * es;
  };
  std::vector<int64_t> &arrived = ws.arrived;
  arrived.assign(static_cast<size_t>(p), 0);
  auto wellFormed = [&](const PieceHeader &h) {
    if (h.origin >= 0 && h.origin < p && h.dest >= 0 && h.dest < p &&
        h.index >= 0 && h.index < pieces && h.count >= 0)
      return true;
    why = "a message is malformed";
    return false;
  };
  // Takes one piece in: an MPI code. A piece of this rank's own block may
  // come back: it is read from the send buffer, and counted, noted and
  // sent on as the own piece it is, never twice.
  auto deliver = [&](const PieceHeader &h, const char *payload) {
    if (!wellFormed(h))
      return MPI_ERR_INTERN;
    if (h.origin == me)
      return MPI_SUCCESS;
    const int64_t id = idOf(h.origin, h.dest, h.index);
    const size_t bytes = static_cast<size_t>(h.count) * es;
    char *at = const_cast<char *>(payload);
    if (h.dest == me) {
      at = placeOf(h);
      if (!at)
        return MPI_ERR_TRUNCATE;
      if (at != payload)
        moveBytes(at, payload, bytes);
    }
    if (held.insert_or_assign(id, std::pair(Piece{at, bytes}, h.offset))
            .second) {
      if (h.dest == me)
        ++arrived[static_cast<size_t>(h.origin)];
      if (filters)
        order.push_back(id);
    }
    return MPI_SUCCESS;
  };
  if (sendcounts[me] > recvcounts[me]) {
    why = "a block does not fit recvcounts";
    return MPI_ERR_TRUNCATE;
  }
  moveBytes(out + static_cast<size_t>(rdispls[me]) * es,
            in + static_cast<size_t>(sdispls[me]) * es,
            static_cast<size_t>(sendcounts[me]) * es);
  arrived[static_cast<size_t>(me)] = pieces;

  // As the engine: a message of up to this many bytes travels packed.
  constexpr size_t wholeMessage = 4032;
  thread_local std::vector<Piece> gathered;
  // A message that is only headers, of pieces too long to travel with them:
  // they follow, taken into place, those for this rank into the receive
  // buffer and the rest behind the headers in `m` (its layout when packed).
  thread_local std::vector<Piece> into;
  auto receiveLong = [&](int from, Bytes &m, int64_t runs, size_t headers,
                         size_t &bytes, bool &inPlace) -> int {
    inPlace = false;
    if (bytes != headers)
      return MPI_SUCCESS;
    size_t payload = 0;
    for (int64_t i = 0; i < runs; ++i) {
      const PieceHeader h = pieceHeader(m.data(), i);
      if (!wellFormed(h))
        return MPI_ERR_INTERN;
      payload += static_cast<size_t>(h.count) * es;
    }
    // Packed, or only headers (however many): no second message.
    if (payload == 0 || headers + payload <= wholeMessage)
      return MPI_SUCCESS;
    m.resize(headers + payload);
    into.clear();
    size_t at = headers;
    for (int64_t i = 0; i < runs; ++i) {
      const PieceHeader h = pieceHeader(m.data(), i);
      const size_t n = static_cast<size_t>(h.count) * es;
      if (n == 0)
        continue;
      char *place = m.data() + at;
      if (h.dest == me && !(place = placeOf(h)))
        return MPI_ERR_TRUNCATE;
      into.push_back(Piece{place, n});
      at += n;
    }
    size_t got = 0;
    if (int rc = backend.recv(from, tag, into, got))
      return rc;
    // (An MPI receive into several places does not count its bytes: 0.)
    if (got != 0 && got != payload) {
      why = "a message is malformed";
      return MPI_ERR_INTERN;
    }
    bytes = headers + payload;
    inPlace = true;
    return MPI_SUCCESS;
  };
  // Sends go in the order of the steps, so that each peer takes them in
  // that order; each send's buffer lives until all are done.
  if (buckets.size() < rows.sends.size())
    buckets.resize(rows.sends.size());
  std::vector<int> &sendRequests = ws.sendRequests;
  sendRequests.clear();
  auto post = [&](int k) -> int {
    const int to = rows.sends[k];
    // The piece count and headers, then the pieces: copied behind them up
    // to wholeMessage bytes, else sent from where they lie (one gathered
    // message, as the engine's long messages).
    Bytes &b = buckets[k];
    const int64_t runs = rows.blockAt[k + 1] - rows.blockAt[k];
    b.resize(sizeof runs + static_cast<size_t>(runs) * sizeof(PieceHeader));
    std::memcpy(b.data(), &runs, sizeof runs);
    size_t payload = 0;
    gathered.assign(1, Piece{});
    for (int i = rows.blockAt[k]; i < rows.blockAt[k + 1]; ++i) {
      const int64_t id = rows.blocks[i];
      Piece piece;
      int64_t offset = 0;
      if (!find(id, piece, offset)) {
        why = "a block to send on never arrived";
        return MPI_ERR_INTERN;
      }
      const PieceName n = nameOf(id);
      const PieceHeader h{static_cast<int32_t>(n.origin),
                          static_cast<int32_t>(n.dest), n.index, offset,
                          static_cast<int64_t>(piece.bytes / es)};
      std::memcpy(b.data() + sizeof runs +
                      static_cast<size_t>(i - rows.blockAt[k]) * sizeof h,
                  &h, sizeof h);
      payload += piece.bytes;
      if (piece.bytes)
        gathered.push_back(piece);
    }
    if (b.size() + payload > static_cast<size_t>(INT32_MAX)) {
      why = "a message exceeds 2 GiB";
      return MPI_ERR_COUNT;
    }
    if (b.size() + payload <= wholeMessage) {
      for (size_t i = 1; i < gathered.size(); ++i) {
        const size_t at = b.size();
        b.resize(at + gathered[i].bytes);
        std::memcpy(b.data() + at, gathered[i].data, gathered[i].bytes);
      }
      gathered.resize(1);
    }
    int request = 0;
    if (gathered.size() > 1) {
      // Long: the headers first, so that the receiver takes the pieces
      // straight into place.
      if (int rc = backend.isend(to, tag, {Piece{b.data(), b.size()}}, request))
        return rc;
      sendRequests.push_back(request);
      gathered.erase(gathered.begin());
    } else {
      gathered[0] = Piece{b.data(), b.size()};
    }
    if (int rc = backend.isend(to, tag, gathered, request))
      return rc;
    sendRequests.push_back(request);
    return MPI_SUCCESS;
  };
  const int sends = static_cast<int>(rows.sends.size());
  int posted = 0; // sends 0 .. posted - 1 have gone
  size_t received = 0;
  for (int s = 0; s < steps; ++s) {
    if (filters) {
      heldBefore.push_back(order.size());
      for (int k = rows.sendAt[s]; k < rows.sendAt[s + 1]; ++k) {
        const int to = rows.sends[k];
        const AlltoallvSteps::BlockFilter &filter = (*filters)[k];
        // The last of the send's pieces that this rank came to hold.
        size_t last = 0;
        if (!filter) {
          for (int64_t i = 0; i < pieces; ++i)
            rows.blocks.push_back(idOf(me, to, i));
        } else {
          for (size_t i = 0; i < order.size(); ++i)
            if (const PieceName n = nameOf(order[i]);
                filter(n.origin, n.dest, n.index)) {
              rows.blocks.push_back(order[i]);
              last = i;
            }
        }
        rows.blockAt.push_back(static_cast<int>(rows.blocks.size()));
        // The first step that starts with all of them here.
        rows.readyAt.push_back(static_cast<int>(
            std::upper_bound(heldBefore.begin(), heldBefore.end(), last) -
            heldBefore.begin()));
      }
    }
    for (; posted < rows.sendAt[s + 1]; ++posted)
      if (int rc = post(posted))
        return rc;
    // On a call whose pieces were noted, a send whose pieces are all here
    // (its own, or arrived) goes ahead of its step, once those before it
    // have gone: the steps of a stage that deals its own blocks go at once.
    for (; !filters && posted < sends && rows.readyAt[posted] <= s; ++posted)
      if (int rc = post(posted))
        return rc;
    for (int k = rows.receiveAt[s]; k < rows.receiveAt[s + 1]; ++k) {
      const int from = rows.receives[k];
      size_t bytes = 0;
      if (int rc = backend.probe(from, tag, bytes))
        return rc;
      Bytes &m = ws.inbox[received++];
      m.resize(bytes);
      if (int rc = backend.recvOne(from, tag, Piece{m.data(), bytes}, bytes))
        return rc;
      int64_t runs = -1;
      if (bytes >= sizeof runs)
        std::memcpy(&runs, m.data(), sizeof runs);
      const size_t headers =
          sizeof runs + static_cast<size_t>(runs) * sizeof(PieceHeader);
      if (runs < 0 || runs > p * p * pieces || headers > bytes) {
        why = "a message is malformed";
        return MPI_ERR_INTERN;
      }
      bool inPlace = false;
      if (int rc = receiveLong(from, m, runs, headers, bytes, inPlace))
        return rc;
      size_t at = headers;
      for (int64_t i = 0; i < runs; ++i) {
        const PieceHeader h = pieceHeader(m.data(), i);
        const size_t n = static_cast<size_t>(h.count) * es;
        if (!wellFormed(h) || at + n > bytes) {
          why = "a message is malformed";
          return MPI_ERR_INTERN;
        }
        const char *payload = m.data() + at;
        if (inPlace && h.dest == me && n && !(payload = placeOf(h)))
          return MPI_ERR_TRUNCATE;
        if (int rc = deliver(h, payload))
          return rc;
        at += n;
      }
      if (at != bytes) {
        why = "a message is malformed";
        return MPI_ERR_INTERN;
      }
    }
  }
  // The sends' requests, a run of consecutive numbers at a time.
  for (size_t i = 0, j = 0; i < sendRequests.size(); i = j) {
    for (j = i + 1;
         j < sendRequests.size() && sendRequests[j] == sendRequests[j - 1] + 1;
         ++j)
      ;
    if (int rc =
            backend.waitAll(sendRequests[i], sendRequests[j - 1] + 1, nullptr))
      return rc;
  }
  // Correctness is proved; a piece that never came is the runtime's fault.
  if (std::find_if(arrived.begin(), arrived.end(),
                   [&](int64_t n) { return n != pieces; }) != arrived.end()) {
    why = "a block for this rank never arrived";
    return MPI_ERR_INTERN;
  }
  return MPI_SUCCESS;
}

/// This thread's last few ranks' steps, by schedule (a plan, or an emitted
/// schedule's name), size and rank, so that a call like an earlier one
/// does not work them out again. `found`: whether they are complete.
AlltoallvSteps::Rows &rowsFor(const void *schedule, int p, int me,
                              bool &found) {
  constexpr size_t keep = 4;
  thread_local AlltoallvSteps::Rows kept[keep];
  thread_local size_t next = 0;
  for (AlltoallvSteps::Rows &r : kept)
    if (r.schedule == schedule && r.p == p && r.me == me && r.complete) {
      found = true;
      return r;
    }
  AlltoallvSteps::Rows &r = kept[next];
  next = (next + 1) % keep;
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
  // Every request is waited for before a normal return; the backend then
  // forgets them (on an error return too, so the next call starts clean).
  struct Forget {
    Backend *backend;
    ~Forget() { backend->reset(); }
  } forget{backend};
  const int tagBase = comm.local ? localTagBase : mpiTagBase;

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
  size_t es = contiguousSize(sendtype);
  if (es == 0 || es != contiguousSize(recvtype))
    return ::collc::rt::fail(MPI_ERR_TYPE, "only contiguous types of the "
                                           "same size are supported");
  struct Forget {
    Backend *backend;
    ~Forget() { backend->reset(); }
  } forget{backend};
  const int tag = comm.local ? localTagBase : mpiTagBase;
  const char *in = static_cast<const char *>(sendbuf);
  char *out = static_cast<char *>(recvbuf);
  if (rows->forwards) {
    const char *why = "a message failed to travel";
    if (int rc = forwardingExchange(*rows, walked ? &filters : nullptr,
                                    *backend, tag, es, in, sendcounts, sdispls,
                                    out, recvcounts, rdispls, why))
      return failAlone(comm, schedule, rc, why);
    rows->complete = true;
    return MPI_SUCCESS;
  }
  if (int rc = directExchange(*rows, *backend, tag, es, in, sendcounts, sdispls,
                              out, recvcounts, rdispls, mode, nullptr))
    return failAlone(comm, schedule, rc,
                     "a message does not fit recvcounts, or the backend "
                     "failed");
  return MPI_SUCCESS;
}

} // namespace collc::rt
