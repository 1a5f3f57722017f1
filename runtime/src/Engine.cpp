// The schedule engine: each rank's chunk slots per buffer, self-describing
// messages, deliveries in the simulator's order (compiler/simulate/
// Simulator.h), and the collectives' inputs and outputs in MPI's layout.
//
// Message format (native byte order; both ends run the same binary layout):
//   header: uint64 n, uint64 dataBytes, then n records {int32 slot, lo, hi,
//   ordered}; data: the n chunks' bytes in record order (a chunk's length
//   follows from its index and the call's count, which every rank shares).
// A message of at most wholeLimit bytes travels whole (tag 2s), received
// into a buffer posted before the step's sends (a step of one receive and
// at most one such send is a single MPI_Recv or MPI_Sendrecv). A longer one
// sends its header alone (tag 2s, the receiver tells which from the
// length) and its data after it (tag 2s + 1), so that the receiver, knowing
// the layout, takes a copy straight into the destination chunks and a
// reduce's operand where the result goes, or into scratch memory it folds
// from. A call like the previous one posts those data receives before the
// headers come (Engine::Recall).

#include "collc/Runtime.h"
#include "collc/Datatype.h"

#include "collc/Local.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace collc::rt {

namespace {
constexpr int64_t maxChunkIndices = int64_t(1) << 23; // as the simulator
constexpr int64_t tagSteps = 16383; // two tags a step below the least
                                    // MPI_TAG_UB the standard allows
// A message of at most this many bytes travels whole, its data after its
// header; a longer one sends its header first, so that the receiver takes
// the data straight into place. Open MPI over shared memory sends up to
// 4 KiB (its own header included) eagerly, and past that a whole message
// would cost a rendezvous and two copies more than a split one.
constexpr size_t wholeLimit = 4032;
// Data a repeated call receives in the step's bytes rather than in place
// (exchangeRepeat); below about 1 KiB copying it costs less than placing.
constexpr size_t landingLimit = 1024;
constexpr size_t headerBytes = 16;
// Calls whose headers a thread remembers (Engine::Recall): a program's few
// collectives with large messages.
constexpr size_t recallKeep = 8;
// The largest recording (Trace) a call's record keeps: its effects, and
// the scratch memory it holds on to.
constexpr size_t traceOps = size_t(1) << 14;
constexpr size_t traceScratch = size_t(1) << 20;
// A recorded step's messages land in step bytes no earlier step used, up
// to this many in all, so that a replay may start them together
// (startIndependentMessages).
constexpr size_t traceStepBytes = size_t(1) << 18;
// Recordings a record keeps (one per type, operator and MPI_IN_PLACE use,
// the newest), and how many it drops before it records no more.
constexpr size_t maxTraces = 4;
constexpr int maxRefused = 2;
thread_local uint64_t replayCount = 0; // Engine::replays()
thread_local uint64_t startedCount = 0; // Engine::startedEarly()

bool isReduction(Kind k) {
  return k == Kind::Reduce || k == Kind::Allreduce ||
         k == Kind::ReduceScatter || k == Kind::Scan;
}
bool isRooted(Kind k) {
  return k == Kind::Broadcast || k == Kind::Reduce || k == Kind::Scatter ||
         k == Kind::Gather;
}

/// Scratch memory kept per thread across calls (ranks of the local backend
/// are threads), so repeated calls allocate nothing.
struct Pool {
  std::vector<std::pair<char *, size_t>> free;
  ~Pool() {
    for (auto &[data, bytes] : free)
      delete[] data;
  }
};
thread_local Pool threadPool;
constexpr size_t poolKeep = 64;

/// encode()'s rule, which readHeader() checks: a message travels whole
/// when it is small or has no data.
bool wholeMessage(size_t head, size_t data) {
  return data == 0 || head + data <= wholeLimit;
}

void putU64(char *&out, uint64_t v) {
  std::memcpy(out, &v, sizeof v);
  out += sizeof v;
}
uint64_t getU64(const char *&in) {
  uint64_t v;
  std::memcpy(&v, in, sizeof v);
  in += sizeof v;
  return v;
}
} // namespace

// A call like the last ones on its communicator (Memory) does the same
// at this rank as the last one did: the same messages to and from the same
// ranks, the same copies and folds at the same places in its buffers, since
// all of them follow from the function and its arguments. So the second
// like call records them, and from the third on that recording is replayed
// (Engine::replayLast before the emitted function builds an engine, or
// start() after its checks), which skips working out the schedule step by
// step (most of a small message's cost). The messages are those of
// exchangeRepeat, so a rank that replays and one that does not still agree.
struct Engine::Trace {
  enum class Code : uint8_t {
    Send,
    Recv,
    Sendrecv,
    Isend,
    Irecv,
    WaitAll,
    Reset,
    Copy,
    Fold,
  };
  /// An address as its base and offset. Bases: the user's input (call.send)
  /// and output (call.recv), the step's bytes, then each scratch block.
  enum : uint32_t { Input, Output, StepBytes, FirstScratch };
  struct Ref {
    uint32_t base = 0;
    size_t offset = 0, bytes = 0;
  };
  struct Op {
    Code code = Code::Reset;
    int peer = 0, tag = 0;   // WaitAll: first, last
    int peer2 = 0, tag2 = 0; // Sendrecv's receive; Fold: the count
    // refs [first, split): what is sent, the copy's target or the fold's
    // operands and result; [split, last): what is received or copied.
    uint32_t first = 0, split = 0, last = 0;
    // sizes [first, last) of a WaitAll, or one size: the bytes received.
    uint32_t sizesFirst = 0, sizesLast = 0;
  };
  // What else the effects depend on (Signature holds the rest).
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  bool inputInPlace = false, outputInPlace = false;
  // The type and operator are MPI's own, never freed: a handle names the
  // same one at every call (Engine::replayLast relies on it).
  bool predefined = false;
  bool commutative = true; // the operator's, which decides what a fold may do
  // The typed loop of a predefined operator on a basic type, found once
  // (null: combine() finds the way, as for a user's operator).
  FoldFn fold = nullptr;
  std::vector<Op> ops;
  std::vector<Ref> refs;
  std::vector<size_t> sizes;
  std::vector<std::unique_ptr<char[]>> scratch; // the trace's own
  size_t stepBytes = 0;
  bool complete = true; // false: an effect could not be recorded

  bool fits(const Call &c) const {
    return c.type == type && c.op == op &&
           (c.send == MPI_IN_PLACE) == inputInPlace &&
           (c.recv == MPI_IN_PLACE) == outputInPlace;
  }
};

class Engine::TracingBackend final : public Backend {
public:
  TracingBackend(Engine &engine, Backend &inner)
      : engine(engine), inner(inner), trace(*engine.tracing) {}
  Backend &real() { return inner; }

  int rank() const override { return inner.rank(); }
  int size() const override { return inner.size(); }
  int isend(int peer, int tag, const std::vector<Piece> &pieces,
            int &request) override {
    note(Trace::Code::Isend, peer, tag, pieces);
    return inner.isend(peer, tag, pieces, request);
  }
  int send(int peer, int tag, const std::vector<Piece> &pieces) override {
    note(Trace::Code::Send, peer, tag, pieces);
    return inner.send(peer, tag, pieces);
  }
  int irecv(int peer, int tag, const std::vector<Piece> &pieces,
            int &request) override {
    note(Trace::Code::Irecv, peer, tag, {}, pieces);
    return inner.irecv(peer, tag, pieces, request);
  }
  int recv(int peer, int tag, const std::vector<Piece> &pieces,
           size_t &bytes) override {
    note(Trace::Code::Recv, peer, tag, {}, pieces);
    const int rc = inner.recv(peer, tag, pieces, bytes);
    noteSizes(&bytes, 1);
    return rc;
  }
  int sendrecv(int dest, int sendTag, const std::vector<Piece> &out, int source,
               int recvTag, const std::vector<Piece> &in,
               size_t &bytes) override {
    Trace::Op &op = note(Trace::Code::Sendrecv, dest, sendTag, out, in);
    op.peer2 = source;
    op.tag2 = recvTag;
    const int rc =
        inner.sendrecv(dest, sendTag, out, source, recvTag, in, bytes);
    noteSizes(&bytes, 1);
    return rc;
  }
  int waitAll(int first, int last, size_t *bytes) override {
    note(Trace::Code::WaitAll, first, last);
    const int rc = inner.waitAll(first, last, bytes);
    if (bytes)
      noteSizes(bytes, static_cast<size_t>(last - first));
    return rc;
  }
  // Not used by a repeated call's steps: a call that uses them is not
  // recorded.
  int wait(int request, size_t &bytes) override {
    trace.complete = false;
    return inner.wait(request, bytes);
  }
  int probe(int peer, int tag, size_t &bytes) override {
    trace.complete = false;
    return inner.probe(peer, tag, bytes);
  }
  void reset() override {
    note(Trace::Code::Reset, 0, 0);
    inner.reset();
  }

private:
  Trace::Op &note(Trace::Code code, int peer, int tag,
                  const std::vector<Piece> &out = {},
                  const std::vector<Piece> &in = {}) {
    Trace::Op op;
    op.code = code;
    op.peer = peer;
    op.tag = tag;
    op.first = static_cast<uint32_t>(trace.refs.size());
    engine.noteRefs(out);
    op.split = static_cast<uint32_t>(trace.refs.size());
    engine.noteRefs(in);
    op.last = static_cast<uint32_t>(trace.refs.size());
    trace.ops.push_back(op);
    return trace.ops.back();
  }
  void noteSizes(const size_t *bytes, size_t n) {
    Trace::Op &op = trace.ops.back();
    op.sizesFirst = static_cast<uint32_t>(trace.sizes.size());
    trace.sizes.insert(trace.sizes.end(), bytes, bytes + n);
    op.sizesLast = static_cast<uint32_t>(trace.sizes.size());
  }

  Engine &engine;
  Backend &inner;
  Trace &trace;
};

Engine::Workspace &Engine::threadWorkspace() {
  thread_local Workspace mine;
  return mine;
}

Engine::Workspace *Engine::takeWorkspace() {
  Workspace &mine = threadWorkspace();
  Workspace *w = mine.busy ? new Workspace : &mine;
  w->busy = true;
  return w;
}

Engine::~Engine() {
  if (backend)
    backend->reset();
  for (auto &entry : taken)
    threadPool.free.push_back(entry);
  taken.clear();
  sends.clear();
  sendList.clear();
  receives.clear();
  // A permutation's table is the call's: the next one fills its own.
  workspace->permutationTo.clear();
  // Leave the buffers' tables sized: start() reassigns them in place.
  if (workspace == &threadWorkspace())
    workspace->busy = false;
  else
    delete workspace;
  while (threadPool.free.size() > poolKeep) {
    auto smallest = std::min_element(
        threadPool.free.begin(), threadPool.free.end(),
        [](const auto &a, const auto &b) { return a.second < b.second; });
    delete[] smallest->first;
    threadPool.free.erase(smallest);
  }
}

char *Engine::scratch(size_t bytes) {
  auto &free = threadPool.free;
  auto best = free.end();
  for (auto it = free.begin(); it != free.end(); ++it)
    if (it->second >= bytes && (best == free.end() || it->second < best->second))
      best = it;
  std::pair<char *, size_t> entry;
  if (best != free.end()) {
    entry = *best;
    free.erase(best);
  } else {
    size_t size = std::max<size_t>(bytes, 256);
    entry = {new char[size], size};
  }
  taken.push_back(entry);
  return entry.first;
}

char *Engine::blockScratch(int buffer, int64_t block) {
  Buffer &b = buffers[static_cast<size_t>(buffer)];
  const size_t blocks = b.blocks.size();
  if (blocks > static_cast<size_t>(p) || blockBytes == 0 ||
      blocks > regionBytes / blockBytes)
    return scratch(blockBytes);
  if (!b.region)
    b.region = scratch(blocks * blockBytes);
  return b.region + static_cast<size_t>(block) * blockBytes;
}

char *Engine::stepBytesOf(Workspace &w, size_t bytes) {
  if (bytes > w.stepCapacity) {
    w.stepStore.reset(new char[bytes]);
    w.stepCapacity = bytes;
  }
  return w.stepStore.get();
}

int CommRef::rank() const {
  int r = 0, n = 1;
  if (local) {
    r = local->rank();
    n = rotation ? local->size() : 1;
  } else {
    MPI_Comm_rank(mpi, &r);
    if (rotation)
      MPI_Comm_size(mpi, &n);
  }
  return rotation ? (r - rotation % n + n) % n : r;
}

int Engine::failCall(const Call &c, int code, const char *message) {
  std::fprintf(stderr, "collc: %s: %s\n", c.name, message);
  return code;
}

int Engine::failLocal(const Call &c, int code, const char *message) {
  std::fprintf(stderr, "collc: %s: %s (seen by this rank alone: the job "
               "is aborted so that no rank waits for it)\n", c.name, message);
  if (c.local || c.comm == MPI_COMM_NULL)
    return code;
  // The launcher forwards a rank's output on its own time, and an abort
  // tears the job down at once: a moment first, so the message is seen.
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  MPI_Comm_call_errhandler(c.comm, code);
  MPI_Abort(c.comm, code);
  return code;
}

int Engine::connect(const Call &c) {
  call = c;
  if (call.count < 0)
    return fail(MPI_ERR_COUNT, "negative count");
  if (call.type == MPI_DATATYPE_NULL)
    return fail(MPI_ERR_TYPE, "null datatype");
  // A predefined operator folds a derived type as its basic type, as MPI
  // libraries do; every rank passes the same type to a reduction.
  if (isReduction(call.kind) && predefinedOp(call.op)) {
    TypeInfo info;
    if (describe(call.type, info) == MPI_SUCCESS && !info.named &&
        info.base != MPI_DATATYPE_NULL && info.lb == 0 && info.trueLb == 0 &&
        info.contiguous(2) &&
        static_cast<int64_t>(call.count) * info.perElement <= INT_MAX) {
      call.type = info.base;
      call.count *= info.perElement;
    }
  }
  if (int rc = checkType())
    return rc;
  int rc = MPI_SUCCESS;
  if (call.local) {
    rc = makeLocalBackend(*call.local, ownedBackend);
    backend = ownedBackend.get();
  } else {
    rc = makeMpiBackend(call.comm, backend);
  }
  if (rc)
    return fail(rc, call.local ? "invalid local communicator"
                               : "cannot duplicate the communicator");
  if (call.rotation < 0 || call.rotation >= backend->size())
    return fail(MPI_ERR_ARG, "rank rotation outside the communicator");
  backend = backend->rotated(call.rotation);
  me = backend->rank();
  p = backend->size();
  if (isRooted(call.kind) && (call.root < 0 || call.root >= p))
    return fail(MPI_ERR_ROOT, "root outside the communicator");
  if (isReduction(call.kind)) {
    if (call.op == MPI_OP_NULL)
      return fail(MPI_ERR_OP, "null reduction operator");
    if (int rc = checkOp())
      return rc;
  }
  if (missingBuffer())
    return failLocal(call, MPI_ERR_BUFFER,
                     "a null buffer where this rank has data");
  return MPI_SUCCESS;
}

bool Engine::missingBuffer() const {
  if (call.count == 0 || extent == 0)
    return false;
  const bool atRoot = me == call.root;
  const bool sendInPlace = call.send == MPI_IN_PLACE;
  bool needsSend = !sendInPlace, needsRecv = true;
  switch (call.kind) {
  case Kind::Broadcast:
    needsSend = false;
    break;
  case Kind::Reduce:
    needsRecv = atRoot;
    break;
  case Kind::Gather:
    needsSend = !(atRoot && sendInPlace);
    needsRecv = atRoot;
    break;
  case Kind::Scatter:
    needsSend = atRoot;
    needsRecv = !(atRoot && call.recv == MPI_IN_PLACE);
    break;
  default:
    break;
  }
  return (needsSend && !call.send) || (needsRecv && !call.recv);
}

// A predefined datatype or operator is never freed, so what was learnt about
// the last one a thread used stays true: a program that calls collectives
// on one type asks MPI once, not at every call.
namespace {
thread_local MPI_Datatype lastNamedType = MPI_DATATYPE_NULL;
thread_local MPI_Aint lastNamedExtent = 0;
thread_local MPI_Op lastNamedOp = MPI_OP_NULL;
} // namespace

int Engine::checkType() {
  if (call.type == lastNamedType) {
    extent = lastNamedExtent;
    return MPI_SUCCESS;
  }
  int typeSize = 0;
  MPI_Aint lb = 0, trueLb = 0, trueExtent = 0;
  if (MPI_Type_size(call.type, &typeSize) != MPI_SUCCESS ||
      MPI_Type_get_extent(call.type, &lb, &extent) != MPI_SUCCESS ||
      MPI_Type_get_true_extent(call.type, &trueLb, &trueExtent) !=
          MPI_SUCCESS)
    return fail(MPI_ERR_TYPE, "invalid datatype");
  // Chunks are moved as bytes: the type must be contiguous.
  if (lb != 0 || trueLb != 0 || typeSize != extent || trueExtent != extent ||
      extent == 0)
    return fail(MPI_ERR_TYPE,
                "only contiguous datatypes are supported (size == extent; "
                "the drop-in library packs others)");
  int integers = 0, addresses = 0, types = 0, combiner = 0;
  if (MPI_Type_get_envelope(call.type, &integers, &addresses, &types,
                            &combiner) == MPI_SUCCESS &&
      combiner == MPI_COMBINER_NAMED) {
    lastNamedType = call.type;
    lastNamedExtent = extent;
  }
  return MPI_SUCCESS;
}

int Engine::checkOp() {
  if (call.op == lastNamedOp) {
    commutative = true; // every predefined operator is
    return MPI_SUCCESS;
  }
  int flag = 1;
  if (MPI_Op_commutative(call.op, &flag) != MPI_SUCCESS)
    return fail(MPI_ERR_OP, "invalid reduction operator");
  commutative = flag != 0;
  if (predefinedOp(call.op))
    lastNamedOp = call.op;
  // Every rank passes the same operator, so all refuse it alike, before
  // any message moves (docs/runtime.md: what an operator must be).
  if (!commutative && !call.foldsInOrder)
    return fail(MPI_ERR_OP, "the operator is not commutative, and this "
                            "schedule is not proved to fold in rank order "
                            "(its collective does not say commutative: "
                            "false)");
  if (!commutative && call.rotation != 0)
    return fail(MPI_ERR_OP, "the operator is not commutative, and this root "
                            "renames the ranks of the schedule's, which "
                            "folds in rank order for its own root alone");
  return MPI_SUCCESS;
}

const char *Engine::inputBlock(int64_t origin, int64_t dest) const {
  origin = userBlock(origin);
  dest = userBlock(dest);
  const bool inPlace = call.send == MPI_IN_PLACE;
  const char *send = static_cast<const char *>(call.send);
  const char *recv = static_cast<const char *>(call.recv);
  const MPI_Aint block = extent * call.count;
  switch (call.kind) {
  case Kind::Broadcast:
    return recv;
  case Kind::Reduce:
  case Kind::Allreduce:
  case Kind::Scan:
  case Kind::Shift:
  case Kind::Permute:
    return inPlace ? recv : send;
  case Kind::Allgather:
  case Kind::Gather:
    return inPlace ? recv + origin * block : send;
  case Kind::ReduceScatter:
  case Kind::Scatter:
  case Kind::Alltoall:
    return (inPlace ? recv : send) + dest * block;
  }
  return nullptr;
}

char *Engine::outputBlock(int64_t origin, int64_t dest) const {
  origin = userBlock(origin);
  dest = userBlock(dest);
  char *recv = static_cast<char *>(call.recv);
  const MPI_Aint block = extent * call.count;
  switch (call.kind) {
  case Kind::Broadcast:
  case Kind::Reduce:
  case Kind::Allreduce:
  case Kind::Scan:
  case Kind::Shift:
  case Kind::Permute:
  case Kind::ReduceScatter:
    return recv;
  case Kind::Scatter:
    // The root's own block stays in place under MPI_IN_PLACE.
    return call.recv == MPI_IN_PLACE ? nullptr : recv;
  case Kind::Allgather:
  case Kind::Gather:
  case Kind::Alltoall:
    return recv + origin * block;
  }
  (void)dest;
  return nullptr;
}

// The blocks every rank of the collective may hold: Semantics.h's table.
int64_t Engine::blockOf(int64_t origin, int64_t dest) const {
  switch (call.kind) {
  case Kind::Broadcast:
  case Kind::Reduce:
  case Kind::Allreduce:
  case Kind::Scan:
    return 0;
  case Kind::Allgather:
  case Kind::Gather:
  case Kind::Shift:
  case Kind::Permute:
    return origin;
  case Kind::ReduceScatter:
  case Kind::Scatter:
    return dest;
  case Kind::Alltoall:
    return origin * p + dest;
  }
  return -1;
}

char *Engine::writable(int buffer, int64_t block, int64_t skipFrom,
                       int64_t skipTo) {
  Block &b = buffers[static_cast<size_t>(buffer)].blocks[static_cast<size_t>(block)];
  if (b.data && !b.readOnly)
    return b.data;
  char *to = b.home ? b.home : blockScratch(buffer, block);
  if (b.data && blockBytes) {
    const size_t from = static_cast<size_t>(chunkBegin(skipFrom) * extent);
    const size_t until = static_cast<size_t>(chunkBegin(skipTo) * extent);
    if (from < until) {
      copyBytes(to, b.data, from);
      copyBytes(to + until, b.data + until, blockBytes - until);
    } else {
      copyBytes(to, b.data, blockBytes);
    }
  }
  b.data = to;
  b.readOnly = false;
  return to;
}

int Engine::start(int numBuffers, int64_t numChunks) {
  if (numChunks < 1 || numChunks > maxChunkIndices)
    return fail(MPI_ERR_ARG, "chunk count outside 1..2^23");
  chunks = numChunks;
  chunkBase = call.count / chunks;
  chunkExtra = call.count % chunks;
  bufferMask = numBuffers >= 64 ? ~uint64_t(0)
                                : (uint64_t(1) << numBuffers) - 1;
  blockBytes = static_cast<size_t>(extent) * static_cast<size_t>(call.count);
  // The last like call's headers, where the communicator keeps them.
  remembering = backend->outlivesCalls();
  memory = nullptr;
  recall = nullptr;
  recalled = resent = 0;
  if (remembering) {
    if (!backend->engineMemory)
      backend->engineMemory = std::make_shared<Memory>();
    memory = static_cast<Memory *>(backend->engineMemory.get());
    const Signature signature{call.name, call.kind,  call.count, chunks,
                              call.root, call.shift, extent,     numBuffers};
    for (const CallRecord &r : memory->calls)
      if (r.signature == signature) {
        recall = &r;
        break;
      }
    const Trace *fitting =
        recall ? recall->recordingFor(call, commutative) : nullptr;
    if (fitting) {
      replayedCall = true;
      const int rc = runTrace(*fitting, call, *backend, *workspace);
      if (rc == MPI_SUCCESS)
        remember();
      else
        backend->reset(); // as replayLast: no request outlives the call
      return rc;
    }
    memory->recording.clear();
    memory->recording.signature = signature;
  }
  if (call.kind == Kind::Permute) {
    // The table every rank computed alike; checked, so a wrong one fails
    // on every rank rather than losing a block.
    std::vector<int64_t> &to = workspace->permutationTo,
                         &from = workspace->permutationFrom;
    from.assign(static_cast<size_t>(p), -1);
    bool bijection = to.size() == static_cast<size_t>(p);
    for (size_t o = 0; bijection && o < to.size(); ++o) {
      bijection =
          to[o] >= 0 && to[o] < p && from[static_cast<size_t>(to[o])] < 0;
      if (bijection)
        from[static_cast<size_t>(to[o])] = static_cast<int64_t>(o);
    }
    if (!bijection)
      return fail(MPI_ERR_ARG,
                  "the permutation is not a bijection of the ranks");
  }
  const int64_t root = call.root;
  // Every block of the collective, by blockOf's numbering.
  blockOrigin.clear();
  blockDest.clear();
  auto add = [&](int64_t o, int64_t d) {
    blockOrigin.push_back(o);
    blockDest.push_back(d);
  };
  switch (call.kind) {
  case Kind::Broadcast:
    add(root, 0);
    break;
  case Kind::Reduce:
    add(0, root);
    break;
  case Kind::Allreduce:
  case Kind::Scan:
    add(0, 0);
    break;
  case Kind::Allgather:
    for (int64_t o = 0; o < p; ++o)
      add(o, 0);
    break;
  case Kind::Gather:
    for (int64_t o = 0; o < p; ++o)
      add(o, root);
    break;
  case Kind::Shift:
  case Kind::Permute:
    for (int64_t o = 0; o < p; ++o)
      add(o, destOf(o));
    break;
  case Kind::ReduceScatter:
    for (int64_t t = 0; t < p; ++t)
      add(0, t);
    break;
  case Kind::Scatter:
    for (int64_t t = 0; t < p; ++t)
      add(root, t);
    break;
  case Kind::Alltoall:
    for (int64_t o = 0; o < p; ++o)
      for (int64_t t = 0; t < p; ++t)
        add(o, t);
    break;
  }
  const size_t numBlocks = blockOrigin.size();
  const size_t numSlots = numBlocks * static_cast<size_t>(chunks);
  if (numSlots > size_t(INT32_MAX))
    return fail(MPI_ERR_ARG, "too many chunks");
  started = true;
  buffers.resize(static_cast<size_t>(numBuffers));
  for (Buffer &b : buffers) {
    b.blocks.assign(numBlocks, {});
    b.slots.assign(numSlots, {});
    b.region = nullptr;
  }
  maxMessageBytes = headerBytes + numSlots * sizeof(Record) +
                    numBlocks * blockBytes;
  // A call like an earlier one but for its type, operator or use of
  // MPI_IN_PLACE is recorded too, unless recordings of it were too large.
  if (recall && recall->refused < maxRefused)
    beginTrace();
  // The result goes straight where this rank outputs it.
  for (size_t blk = 0; blk < numBlocks; ++blk)
    buffers[0].blocks[blk].home = nullptr;
  forEachOutput([&](int64_t o, int64_t d) {
    if (char *home = outputBlock(o, d))
      buffers[0].blocks[static_cast<size_t>(blockOf(o, d))].home = home;
  });
  // Pre-condition per kind: compiler/simulate/Semantics.h's table. Input in
  // the output buffer (MPI_IN_PLACE, a broadcast's root) is read in place
  // only by the block it is the home of; any other copy is taken now, before
  // results overwrite it.
  const bool inputInRecv =
      call.kind == Kind::Broadcast || call.send == MPI_IN_PLACE;
  forEachInput([&](int64_t origin, int64_t dest) {
    const char *input = inputBlock(origin, dest);
    const size_t blk = static_cast<size_t>(blockOf(origin, dest));
    for (size_t b = 0; b < buffers.size(); ++b) {
      Block &block = buffers[b].blocks[blk];
      if (!inputInRecv) {
        block.data = const_cast<char *>(input);
        block.readOnly = true;
      } else if (b == 0 && input == block.home) {
        block.data = block.home;
      } else {
        block.data = scratch(blockBytes);
        if (blockBytes)
          copyBytes(block.data, input, blockBytes);
      }
      for (int64_t k = 0; k < chunks; ++k) {
        Slot &s = buffers[b].slots[blk * static_cast<size_t>(chunks) +
                                   static_cast<size_t>(k)];
        s.held = true;
        s.lo = s.hi = static_cast<int32_t>(me);
        s.ordered = true;
      }
    }
  });
  return MPI_SUCCESS;
}

void Engine::receive(int64_t sender, uint64_t intoMask, bool reduce) {
  Expected e;
  e.sender = sender;
  e.intoMask = intoMask & bufferMask;
  e.reduce = reduce;
  receives.push_back(e);
}

int Engine::collect(int fromBuffer, size_t first, size_t last,
                    std::vector<Piece> &pieces) {
  collectPieces(fromBuffer, first, last, pieces);
  // A run of blocks partly still in the user's input and partly received
  // into the buffer's region (a gather's subtree: its own block and those
  // below it) goes out as one piece once the input's blocks are copied to
  // their places beside the others: one block's copy, against a message
  // of several pieces that MPI moves without its single copy.
  Buffer &b = buffers[static_cast<size_t>(fromBuffer)];
  if (pieces.size() < 2 || !b.region)
    return MPI_SUCCESS;
  bool copied = false;
  for (size_t i = first; i < last; ++i) {
    const int64_t blk = blockOfSlot(sendList[i]);
    if (b.blocks[static_cast<size_t>(blk)].readOnly) {
      writable(fromBuffer, blk);
      copied = true;
    }
  }
  if (copied)
    collectPieces(fromBuffer, first, last, pieces);
  return MPI_SUCCESS;
}

void Engine::collectPieces(int fromBuffer, size_t first, size_t last,
                           std::vector<Piece> &pieces) {
  pieces.clear();
  const Buffer &b = buffers[static_cast<size_t>(fromBuffer)];
  for (size_t i = first; i < last; ++i) {
    const int64_t s = sendList[i];
    const size_t bytes = slotBytes(s);
    if (!bytes)
      continue;
    char *data = slotData(b.blocks[static_cast<size_t>(blockOfSlot(s))],
                          chunkOf(s));
    if (!pieces.empty() && pieces.back().data + pieces.back().bytes == data)
      pieces.back().bytes += bytes;
    else
      pieces.push_back({data, bytes});
  }
}

int Engine::deliver(int into, int32_t slot, const Record &r,
                    const char *bytes, bool reduce) {
  Buffer &buffer = buffers[static_cast<size_t>(into)];
  Slot &held = buffer.slots[static_cast<size_t>(slot)];
  const int64_t blk = blockOfSlot(slot), k = chunkOf(slot);
  const size_t n = static_cast<size_t>(chunkLength(k));
  const size_t offset = static_cast<size_t>(chunkBegin(k) * extent);
  // The held value stays where it is, so that a block still in the user's
  // input is copied out without this chunk and the fold writes it once.
  const Block &block = buffer.blocks[static_cast<size_t>(blk)];
  const char *old = block.data ? block.data + offset : nullptr;
  char *to = writable(into, blk, k, k + 1) + offset;
  if (!reduce || !held.held) {
    if (n)
      copyBytes(to, bytes, n * static_cast<size_t>(extent));
    held.held = true;
    held.lo = r.lo;
    held.hi = r.hi;
    held.ordered = r.ordered != 0;
    return MPI_SUCCESS;
  }
  return fold(held, r, old, bytes, to, n);
}

int Engine::fold(Slot &held, const Record &r, const char *old,
                 const char *incoming, char *to, size_t n) {
  const bool ordered = r.ordered != 0;
  const bool adjacent = ordered && held.ordered &&
                        (r.hi + 1 == held.lo || held.hi + 1 == r.lo);
  if (!commutative && !adjacent)
    return fail(MPI_ERR_OP, "this schedule cannot fold a non-commutative "
                            "operator in rank order");
  // Rank order whenever the operands allow it, so every rank computes the
  // same floating-point value.
  const bool incomingIsLower = r.lo < held.lo;
  const char *lower = incomingIsLower ? incoming : old;
  const char *upper = incomingIsLower ? old : incoming;
  if (int rc =
          combine(lower, upper, to, static_cast<int>(n), call.type, call.op))
    return fail(rc, "reduction failed");
  if (tracing) {
    Trace::Op op;
    op.code = Trace::Code::Fold;
    op.peer2 = static_cast<int>(n);
    op.first = static_cast<uint32_t>(tracing->refs.size());
    const size_t bytes = n * static_cast<size_t>(extent);
    noteRefs({{const_cast<char *>(lower), bytes},
              {const_cast<char *>(upper), bytes},
              {to, bytes}});
    op.split = op.last = static_cast<uint32_t>(tracing->refs.size());
    tracing->ops.push_back(op);
  }
  held.ordered = adjacent;
  held.lo = std::min(held.lo, r.lo);
  held.hi = std::max(held.hi, r.hi);
  return MPI_SUCCESS;
}

void Engine::placeDirect(const Expected &e) {
  const int b = e.directBuffer;
  Buffer &buffer = buffers[static_cast<size_t>(b)];
  pieces.clear();
  for (size_t r = 0; r < e.records;) {
    // The records of one block, in chunk order when the sender's slots are.
    const int32_t first = recordAt(e, r).slot;
    const int64_t blk = blockOfSlot(first);
    size_t last = r + 1;
    bool consecutive = true;
    for (; last < e.records; ++last) {
      const int32_t slot = recordAt(e, last).slot;
      if (blockOfSlot(slot) != blk)
        break;
      consecutive = consecutive && slot == recordAt(e, last - 1).slot + 1;
    }
    Block &block = buffer.blocks[static_cast<size_t>(blk)];
    if (!block.data || block.readOnly) // not yet taken out of the input
      block.previous = block.data;
    const int64_t from = chunkOf(first);
    char *data = consecutive ? writable(b, blk, from, from + int64_t(last - r))
                             : writable(b, blk);
    for (; r < last; ++r) {
      const int32_t slot = recordAt(e, r).slot;
      const size_t bytes = slotBytes(slot);
      if (!bytes)
        continue;
      char *at = data + chunkBegin(chunkOf(slot)) * extent;
      if (!pieces.empty() && pieces.back().data + pieces.back().bytes == at)
        pieces.back().bytes += bytes;
      else
        pieces.push_back({at, bytes});
    }
  }
}

Engine::Record Engine::recordAt(const Expected &e, size_t r) {
  Record rec;
  std::memcpy(&rec, e.header + headerBytes + r * sizeof(Record), sizeof rec);
  return rec;
}

int Engine::readHeader(Expected &e, size_t bytes) const {
  if (bytes < headerBytes)
    return MPI_ERR_INTERN;
  if (int rc = parseHeader(e))
    return rc;
  const size_t head = headerBytes + e.records * sizeof(Record);
  // The data came with the header, or comes after it (encode's rule).
  e.whole = bytes == head + e.dataBytes;
  if (!e.whole && (bytes != head || wholeMessage(head, e.dataBytes)))
    return MPI_ERR_INTERN;
  e.data = e.whole ? e.landing + head : nullptr;
  return MPI_SUCCESS;
}

int Engine::parseHeader(Expected &e) const {
  const size_t numSlots = buffers.front().slots.size();
  const char *in = e.header;
  e.records = getU64(in);
  e.dataBytes = getU64(in);
  if (e.records > numSlots)
    return MPI_ERR_INTERN;
  size_t expected = 0;
  for (size_t r = 0; r < e.records; ++r) {
    const Record rec = recordAt(e, r);
    if (rec.slot < 0 || static_cast<size_t>(rec.slot) >= numSlots)
      return MPI_ERR_INTERN;
    expected += slotBytes(rec.slot);
  }
  if (expected != e.dataBytes)
    return MPI_ERR_INTERN;
  return MPI_SUCCESS;
}

int Engine::deliverAll() {
  for (const Expected &e : receives) {
    const char *data = e.data;
    for (size_t r = 0; r < e.records; ++r) {
      const Record rec = recordAt(e, r);
      for (uint64_t m = e.intoMask; m; m &= m - 1) {
        const int b = std::countr_zero(m);
        if ((e.direct || e.fused) && b == e.directBuffer) {
          // The data is in place; a fused reduce folds the held value in.
          Buffer &buffer = buffers[static_cast<size_t>(b)];
          Slot &s = buffer.slots[static_cast<size_t>(rec.slot)];
          if (e.fused && s.held) {
            const int64_t k = chunkOf(rec.slot);
            const Block &block =
                buffer.blocks[static_cast<size_t>(blockOfSlot(rec.slot))];
            const size_t offset = static_cast<size_t>(chunkBegin(k) * extent);
            char *at = block.data + offset;
            if (int rc = fold(s, rec, block.previous + offset, at, at,
                              static_cast<size_t>(chunkLength(k))))
              return rc;
            continue;
          }
          s.held = true;
          s.lo = rec.lo;
          s.hi = rec.hi;
          s.ordered = rec.ordered != 0;
          continue;
        }
        if (int rc = deliver(b, rec.slot, rec, data, e.reduce))
          return rc;
      }
      if (data)
        data += slotBytes(rec.slot);
    }
  }
  return MPI_SUCCESS;
}

bool Engine::predictHeaders() {
  if (!recall)
    return false;
  if (recalled + receives.size() > recall->senders.size())
    diverged("more messages than the last call like this one");
  for (size_t i = 0; i < receives.size(); ++i) {
    if (recall->senders[recalled + i] != receives[i].sender)
      diverged("messages from other ranks than in the last call like this "
               "one");
    receives[i].header =
        recall->received.data() + recall->receivedAt[recalled + i];
  }
  return true;
}

int Engine::checkSent(const Outgoing &o) {
  const size_t length = headerBytes + (o.last - o.first) * sizeof(Record);
  if (resent >= recall->receivers.size() ||
      recall->receivers[resent] != o.peer ||
      recall->sentAt[resent + 1] - recall->sentAt[resent] != length ||
      std::memcmp(recall->sent.data() + recall->sentAt[resent], o.message,
                  length) != 0)
    diverged("a message's chunks differ from those of the last call like "
             "this one");
  ++resent;
  return MPI_SUCCESS;
}

void Engine::divergedCall(const Call &c, const char *why) {
  std::fprintf(stderr, "collc: %s: internal error: %s\n", c.name, why);
  // The other ranks may be leaving out headers this rank would wait for:
  // returning would hang them.
  MPI_Abort(c.comm, MPI_ERR_INTERN);
  std::abort();
}

void Engine::remember() {
  if (!remembering)
    return;
  std::vector<CallRecord> &calls = memory->calls;
  size_t at = 0;
  if (recall) {
    at = static_cast<size_t>(recall - calls.data());
  } else {
    if (calls.size() < recallKeep)
      calls.emplace_back();
    at = calls.size() - 1;
    std::swap(calls[at], memory->recording);
  }
  moveToFront(*memory, at, recall != nullptr);
  recall = nullptr;
}

// Most recent first, nearly: a new call's record takes the place of the
// oldest and goes to the front, a repeated one goes there unless it is in
// the front half already, so that a program cycling through a few calls on
// a communicator (a collective, the checksum of its result, the slowest
// rank's time) reorders nothing and each finds its recording where it left
// it. Every rank makes the same calls, so every rank keeps the same order.
void Engine::moveToFront(Memory &memory, size_t at, bool repeated) {
  if (repeated && at < recallKeep / 2)
    return;
  std::rotate(memory.calls.begin(),
              memory.calls.begin() + static_cast<ptrdiff_t>(at),
              memory.calls.begin() + static_cast<ptrdiff_t>(at) + 1);
  ++memory.version;
}

bool Engine::locate(const char *at, size_t bytes, uint32_t &base,
                    size_t &offset) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(at);
  auto within = [&](const void *start, size_t size) {
    const uintptr_t s = reinterpret_cast<uintptr_t>(start);
    return start && a >= s && a + bytes <= s + size;
  };
  if (!bytes) {
    base = Trace::Input; // any address will do for nothing
    offset = 0;
    return true;
  }
  for (size_t i = 0; i < taken.size(); ++i)
    if (within(taken[i].first, taken[i].second)) {
      base = Trace::FirstScratch + static_cast<uint32_t>(i);
      offset = a - reinterpret_cast<uintptr_t>(taken[i].first);
      return true;
    }
  if (within(stepStore.get(), stepCapacity)) {
    base = Trace::StepBytes;
    offset = a - reinterpret_cast<uintptr_t>(stepStore.get());
    return true;
  }
  // The user's buffers, as far as inputBlock and outputBlock reach; an
  // address in both (buffers closer than that) cannot be told apart.
  const bool inPlace = call.send == MPI_IN_PLACE;
  const size_t all = static_cast<size_t>(p) * blockBytes;
  const bool perDest = call.kind == Kind::ReduceScatter ||
                       call.kind == Kind::Scatter ||
                       call.kind == Kind::Alltoall;
  const bool perOrigin = call.kind == Kind::Allgather ||
                         call.kind == Kind::Gather ||
                         call.kind == Kind::Alltoall;
  const void *input =
      inPlace || call.kind == Kind::Broadcast ? nullptr : call.send;
  const void *output = call.recv == MPI_IN_PLACE ? nullptr : call.recv;
  const bool in = within(input, perDest ? all : blockBytes);
  const bool out =
      within(output, perOrigin || (inPlace && perDest) ? all : blockBytes);
  if (in == out)
    return false;
  base = in ? Trace::Input : Trace::Output;
  offset = a - reinterpret_cast<uintptr_t>(in ? input : output);
  return true;
}

void Engine::noteRefs(const std::vector<Piece> &pieces) {
  for (const Piece &piece : pieces) {
    Trace::Ref ref;
    ref.bytes = piece.bytes;
    if (!locate(piece.data, piece.bytes, ref.base, ref.offset))
      tracing->complete = false;
    tracing->refs.push_back(ref);
  }
}

void moveBytes(char *to, const char *from, size_t n) {
  constexpr size_t block = size_t(128) << 10;
  const uintptr_t t = reinterpret_cast<uintptr_t>(to),
                  f = reinterpret_cast<uintptr_t>(from);
  if (n > 2 * block && (t + n <= f || f + n <= t)) {
    for (size_t at = 0; at < n; at += block)
      std::memcpy(to + at, from + at, std::min(block, n - at));
    return;
  }
  std::memmove(to, from, n);
}

void Engine::copyBytes(char *to, const char *from, size_t n) {
  moveBytes(to, from, n);
  if (!tracing || !n)
    return;
  Trace::Op op;
  op.code = Trace::Code::Copy;
  op.first = static_cast<uint32_t>(tracing->refs.size());
  noteRefs({{to, n}});
  op.split = static_cast<uint32_t>(tracing->refs.size());
  noteRefs({{const_cast<char *>(from), n}});
  op.last = static_cast<uint32_t>(tracing->refs.size());
  tracing->ops.push_back(op);
}

uint64_t Engine::replays() { return replayCount; }
uint64_t Engine::startedEarly() { return startedCount; }

void Engine::beginTrace() {
  tracing = std::make_shared<Trace>();
  tracing->commutative = commutative;
  tracing->type = call.type;
  tracing->op = call.op;
  tracing->predefined = call.type == lastNamedType &&
                        (call.op == MPI_OP_NULL || call.op == lastNamedOp);
  tracing->inputInPlace = call.send == MPI_IN_PLACE;
  tracing->outputInPlace = call.recv == MPI_IN_PLACE;
  if (call.op != MPI_OP_NULL)
    tracing->fold = foldFunction(call.type, call.op);
  tracer = std::make_shared<TracingBackend>(*this, *backend);
  backend = tracer.get();
  tracedStepBytes = 0;
}

namespace {

/// A reset after which nothing was left to forget (no request issued and
/// no message of several pieces, whose datatype a reset frees, since the
/// last one) does nothing: a replay leaves it out. Most steps of a small
/// message's call are a blocking send or receive of one piece.
template <typename Trace> void dropIdleResets(Trace &t) {
  using Code = typename Trace::Code;
  bool idle = true;
  size_t kept = 0;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const typename Trace::Op &op = t.ops[i];
    if (op.code == Code::Reset) {
      if (idle)
        continue;
      idle = true;
    } else if (op.code == Code::Isend || op.code == Code::Irecv) {
      idle = false;
    } else if (op.code == Code::Send || op.code == Code::Recv ||
               op.code == Code::Sendrecv) {
      idle = idle && op.split - op.first <= 1 && op.last - op.split <= 1;
    }
    t.ops[kept++] = op;
  }
  t.ops.resize(kept);
}

/// What an op reads and writes, as refs: a send's data, a receive's
/// places, a copy's source and target, a fold's operands and result.
template <typename Trace> struct Access {
  using Code = typename Trace::Code;
  using Ref = typename Trace::Ref;
  std::vector<Ref> reads, writes;

  Access(const Trace &t, const typename Trace::Op &op) {
    auto add = [&](std::vector<Ref> &into, uint32_t first, uint32_t last) {
      for (uint32_t i = first; i < last; ++i)
        if (t.refs[i].bytes)
          into.push_back(t.refs[i]);
    };
    switch (op.code) {
    case Code::Copy:
      add(writes, op.first, op.split);
      add(reads, op.split, op.last);
      break;
    case Code::Fold:
      add(reads, op.first, op.first + 2);
      add(writes, op.first + 2, op.first + 3);
      break;
    default:
      add(reads, op.first, op.split);
      add(writes, op.split, op.last);
      break;
    }
  }
};

template <typename Ref>
bool overlaps(const std::vector<Ref> &a, const std::vector<Ref> &b) {
  for (const Ref &x : a)
    for (const Ref &y : b)
      if (x.base == y.base && x.offset < y.offset + y.bytes &&
          y.offset < x.offset + x.bytes)
        return true;
  return false;
}

/// Memory a group of ops reads and writes.
template <typename Ref> struct Footprint {
  std::vector<Ref> reads, writes;
  template <typename A> void add(const A &a) {
    reads.insert(reads.end(), a.reads.begin(), a.reads.end());
    writes.insert(writes.end(), a.writes.begin(), a.writes.end());
  }
  /// Whether running `a` out of order with the group could change what
  /// either reads or leaves.
  template <typename A> bool hazard(const A &a) const {
    return overlaps(a.reads, writes) || overlaps(a.writes, reads) ||
           overlaps(a.writes, writes);
  }
};

/// A message received into the step's bytes and copied from there, whole,
/// to one place that nothing else touches in between (the receive's own
/// send included) is received straight into that place instead: a little
/// data lands in the step's bytes while a call works out where it goes
/// (exchangeRepeat), and a replay knows. Saves the copy, and leaves the
/// step's bytes free for startIndependentMessages.
template <typename Trace> void receiveInPlace(Trace &t) {
  using Code = typename Trace::Code;
  using Ref = typename Trace::Ref;
  constexpr size_t farthest = 64;  // ops looked at after a receive
  constexpr size_t afterCopy = 1024; // and after its copy
  auto same = [](const Ref &a, const Ref &b) {
    return a.base == b.base && a.offset == b.offset && a.bytes == b.bytes;
  };
  std::vector<bool> dropped(t.ops.size(), false);
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const typename Trace::Op &op = t.ops[i];
    if ((op.code != Code::Recv && op.code != Code::Sendrecv &&
         op.code != Code::Irecv) ||
        op.last - op.split != 1 || t.refs[op.split].base != Trace::StepBytes)
      continue;
    const Ref landed = t.refs[op.split];
    const std::vector<Ref> landedRefs{landed};
    // The first op after it that touches the landed bytes: a copy of them,
    // whole, to a place nothing in between touches.
    for (size_t j = i + 1; j < t.ops.size() && j <= i + farthest; ++j) {
      if (dropped[j])
        continue;
      const Access<Trace> a(t, t.ops[j]);
      if (!overlaps(a.reads, landedRefs) && !overlaps(a.writes, landedRefs))
        continue;
      const typename Trace::Op &copy = t.ops[j];
      if (copy.code != Code::Copy || copy.split - copy.first != 1 ||
          copy.last - copy.split != 1 || !same(t.refs[copy.split], landed))
        break;
      const std::vector<Ref> target{t.refs[copy.first]};
      // Nor the receive itself: a sendrecv may send from there.
      bool clear = !overlaps(target, landedRefs) &&
                   !overlaps(Access<Trace>(t, op).reads, target);
      for (size_t k = i + 1; k < j && clear; ++k) {
        const Access<Trace> between(t, t.ops[k]);
        clear = !overlaps(between.reads, target) &&
                !overlaps(between.writes, target);
      }
      // Nothing after the copy may read the landed bytes before they are
      // written again (not looked for past `afterCopy` ops: then no).
      for (size_t k = j + 1; clear; ++k) {
        if (k == t.ops.size())
          break;
        if (k > j + afterCopy) {
          clear = false;
          break;
        }
        const Access<Trace> after(t, t.ops[k]);
        if (overlaps(after.reads, landedRefs))
          clear = false;
        if (overlaps(after.writes, landedRefs))
          break;
      }
      if (clear) {
        t.refs[op.split] = target.front();
        dropped[j] = true;
      }
      break;
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < t.ops.size(); ++i)
    if (!dropped[i])
      t.ops[kept++] = t.ops[i];
  t.ops.resize(kept);
}

/// A replayed call starts together, at its beginning, the messages that
/// wait on nothing before them: a send whose data nothing earlier in the
/// call writes, a receive into memory nothing earlier touches. A pairwise
/// exchange then posts all its p - 1 receives and sends at once, as
/// MPI's own linear all-to-all does, and a star gather's root all its
/// receives. The ops of the call's first stretch go in three groups:
///   started: those messages, as irecvs then isends (requests 0 .. n-1);
///   kept: messages and copies that conflict with nothing in flight, run
///     in their order while the started ones travel;
///   late: copies and folds that read or overwrite what is in flight, or
///     depend on a late one, run after one wait for the started messages.
/// The stretch ends at an op that uses requests of its own, or a message
/// that would have to wait for the late ones. Every op of it was before
/// that point, and the wait completes only its messages, so what a peer
/// waits on comes no later than before. A message to (from) a peer stays
/// behind one kept to (from) it, so each pair's messages keep their order.
template <typename Trace> size_t startIndependentMessages(Trace &t) {
  using Code = typename Trace::Code;
  using Op = typename Trace::Op;
  using Ref = typename Trace::Ref;
  constexpr size_t longest = 1024; // ops looked at: conflicts cost n^2
  std::vector<Op> receives, sends, kept, late;
  std::vector<size_t> receiveSizes;
  Footprint<Ref> before, inFlight, lateOps;
  std::vector<int> keptSendPeers, keptReceivePeers;
  size_t started = 0; // ops whose messages start early
  auto has = [](const std::vector<int> &v, int x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  size_t end = 0;
  for (; end < t.ops.size() && end < longest; ++end) {
    const Op &op = t.ops[end];
    if (op.code == Code::Reset)
      continue; // one reset after the wait frees what the stretch made
    if (op.code == Code::Isend || op.code == Code::Irecv ||
        op.code == Code::WaitAll)
      break;
    const Access<Trace> a(t, op);
    if (op.code == Code::Copy || op.code == Code::Fold) {
      if (inFlight.hazard(a) || lateOps.hazard(a)) {
        late.push_back(op);
        lateOps.add(a);
      } else {
        kept.push_back(op);
      }
      before.add(a);
      continue;
    }
    if (lateOps.hazard(a) || inFlight.hazard(a))
      break;
    const bool sending = op.code != Code::Recv;
    const bool receiving = op.code != Code::Send;
    const int sendPeer = op.peer;
    const int receivePeer = op.code == Code::Sendrecv ? op.peer2 : op.peer;
    const bool free = !overlaps(a.reads, before.writes) &&
                      !overlaps(a.writes, before.reads) &&
                      !overlaps(a.writes, before.writes) &&
                      !(sending && has(keptSendPeers, sendPeer)) &&
                      !(receiving && has(keptReceivePeers, receivePeer));
    if (!free) {
      kept.push_back(op);
      if (sending)
        keptSendPeers.push_back(sendPeer);
      if (receiving)
        keptReceivePeers.push_back(receivePeer);
      before.add(a);
      continue;
    }
    if (receiving) {
      Op r = op;
      r.code = Code::Irecv;
      r.peer = receivePeer;
      r.tag = op.code == Code::Sendrecv ? op.tag2 : op.tag;
      r.first = op.split;
      receives.push_back(r);
      receiveSizes.push_back(op.sizesLast > op.sizesFirst ? t.sizes[op.sizesFirst]
                                                         : 0);
    }
    if (sending) {
      Op s = op;
      s.code = Code::Isend;
      s.split = s.last = op.split;
      sends.push_back(s);
    }
    ++started;
    inFlight.add(a);
    before.add(a);
  }
  if (started < 2)
    return 0; // nothing gained
  std::vector<Op> ops;
  ops.reserve(t.ops.size() + 2);
  ops.insert(ops.end(), receives.begin(), receives.end());
  ops.insert(ops.end(), sends.begin(), sends.end());
  ops.insert(ops.end(), kept.begin(), kept.end());
  Op wait;
  wait.code = Code::WaitAll;
  wait.peer = 0;
  wait.tag = static_cast<int>(receives.size() + sends.size());
  wait.sizesFirst = static_cast<uint32_t>(t.sizes.size());
  t.sizes.insert(t.sizes.end(), receiveSizes.begin(), receiveSizes.end());
  t.sizes.resize(t.sizes.size() + sends.size(), 0); // a send reports none
  wait.sizesLast = static_cast<uint32_t>(t.sizes.size());
  ops.push_back(wait);
  ops.emplace_back(); // reset
  ops.insert(ops.end(), late.begin(), late.end());
  ops.insert(ops.end(), t.ops.begin() + static_cast<ptrdiff_t>(end),
             t.ops.end());
  t.ops = std::move(ops);
  return started;
}

/// Whether the copy or fold at `i` writes memory that a send in
/// [start, i) reads: that send cannot be left running past it. (Past a
/// few hundred ops it says yes rather than look.)
template <typename Trace>
bool overwritesSent(const Trace &t, size_t start, size_t i) {
  using Code = typename Trace::Code;
  if (i - start > 256)
    return true;
  const Access<Trace> op(t, t.ops[i]);
  for (size_t j = start; j < i; ++j) {
    const typename Trace::Op &send = t.ops[j];
    if ((send.code == Code::Send || send.code == Code::Isend) &&
        overlaps(op.writes, Access<Trace>(t, send).reads))
      return true;
  }
  return false;
}

/// The sends after a rank's last receive read memory that nothing writes
/// again in the call (a copy or fold after them that would is checked):
/// all of a broadcast's or a scatter's root, the rest of the tree once it
/// holds its data. Recorded, each waits for its step's end, so a rank that
/// sends to three children waits for the first to take its message before
/// it starts the second; with the ranks time-sharing a core, for the first
/// to be scheduled. Replayed, they start at once and are waited for
/// together at the call's end, as MPI's own trees do (an isend to each
/// child, then one wait). Messages between two ranks keep their order, so
/// the peers see no difference.
template <typename Trace> void deferTrailingSends(Trace &t) {
  using Code = typename Trace::Code;
  // The tail starts after the last receive, and after any copy or fold
  // that overwrites what a send before it reads, once every request issued
  // so far has been waited for. A root's copy of its own block, last, does
  // not end it.
  size_t start = 0;
  bool looking = false;
  int issued = 0, waited = 0; // requests since the last reset
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const typename Trace::Op &op = t.ops[i];
    switch (op.code) {
    case Code::Isend:
      ++issued;
      break;
    case Code::Irecv:
      ++issued;
      looking = true;
      break;
    case Code::WaitAll:
      waited = std::max(waited, op.tag);
      break;
    case Code::Reset:
      issued = waited = 0;
      break;
    case Code::Recv:
    case Code::Sendrecv:
      looking = true;
      break;
    case Code::Copy:
    case Code::Fold:
      looking = looking || overwritesSent(t, start, i);
      break;
    case Code::Send:
      break;
    }
    if (looking && issued <= waited) {
      start = i + 1;
      looking = false;
    }
  }
  int sends = 0;
  for (size_t i = start; i < t.ops.size(); ++i)
    sends += t.ops[i].code == Code::Send || t.ops[i].code == Code::Isend;
  if (looking || sends < 2) // one send waits as long either way
    return;
  // Reset, the sends as isends (numbered from 0) and the copies and folds
  // in their order, one wait, reset.
  std::vector<typename Trace::Op> tail(1); // an Op is a Reset by default
  for (size_t i = start; i < t.ops.size(); ++i) {
    typename Trace::Op op = t.ops[i];
    if (op.code == Code::WaitAll || op.code == Code::Reset)
      continue; // they waited for sends only: once, below
    if (op.code == Code::Send)
      op.code = Code::Isend;
    tail.push_back(op);
  }
  typename Trace::Op wait;
  wait.code = Code::WaitAll;
  wait.peer = 0; // first
  wait.tag = sends; // last
  tail.push_back(wait);
  tail.emplace_back();
  t.ops.resize(start);
  t.ops.insert(t.ops.end(), tail.begin(), tail.end());
}

} // namespace

void Engine::keepTrace() {
  if (!tracing)
    return;
  backend = &tracer->real();
  tracer.reset();
  CallRecord &record =
      memory->calls[static_cast<size_t>(recall - memory->calls.data())];
  Trace &t = *tracing;
  // The bytes each base is used for (the pool may have handed out larger
  // blocks than asked for).
  std::vector<size_t> used(Trace::FirstScratch + taken.size(), 0);
  for (const Trace::Ref &ref : t.refs)
    used[ref.base] = std::max(used[ref.base], ref.offset + ref.bytes);
  t.stepBytes = used[Trace::StepBytes];
  size_t scratchBytes = 0;
  for (size_t i = Trace::FirstScratch; i < used.size(); ++i)
    scratchBytes += used[i];
  // A recording keeps its scratch: only for calls of small messages,
  // where the per-call work it saves matters.
  if (t.complete && t.ops.size() <= traceOps && scratchBytes <= traceScratch) {
    for (size_t i = Trace::FirstScratch; i < used.size(); ++i)
      t.scratch.emplace_back(new char[std::max<size_t>(used[i], 1)]);
    receiveInPlace(t);
    startedCount += startIndependentMessages(t);
    deferTrailingSends(t);
    dropIdleResets(t);
    if (record.traces.size() == maxTraces)
      record.traces.erase(record.traces.begin());
    record.traces.push_back(tracing);
  } else {
    ++record.refused;
  }
  ++memory->version;
  tracing.reset();
}

const Engine::Trace *
Engine::CallRecord::recordingFor(const Call &c,
                                 std::optional<bool> commutative) const {
  for (auto t = traces.rbegin(); t != traces.rend(); ++t)
    if ((*t)->fits(c) &&
        (commutative ? (*t)->commutative == *commutative : (*t)->predefined))
      return t->get();
  return nullptr;
}

int Engine::runTrace(const Trace &t, const Call &call, Backend &backend,
                     Workspace &w) {
  std::vector<char *> &bases = w.bases;
  std::vector<Piece> &pieces = w.pieces, &single = w.single;
  std::vector<size_t> &received = w.received;
  ++replayCount;
  bases.assign({nullptr, nullptr, stepBytesOf(w, t.stepBytes)});
  if (call.send != MPI_IN_PLACE)
    bases[Trace::Input] =
        const_cast<char *>(static_cast<const char *>(call.send));
  if (call.recv != MPI_IN_PLACE)
    bases[Trace::Output] = static_cast<char *>(call.recv);
  for (const auto &block : t.scratch)
    bases.push_back(block.get());
  // Inlined: most ops have one piece, and a call of a small message is
  // mostly this loop's overhead.
  auto resolve = [&](uint32_t first, uint32_t last, std::vector<Piece> &into)
      __attribute__((always_inline)) {
    into.resize(last - first);
    for (uint32_t i = first; i < last; ++i) {
      const Trace::Ref &r = t.refs[i];
      into[i - first] = {bases[r.base] + r.offset, r.bytes};
    }
  };
  auto piece = [&](uint32_t i) {
    const Trace::Ref &r = t.refs[i];
    return Piece{bases[r.base] + r.offset, r.bytes};
  };
  auto at = [&](uint32_t i) {
    return bases[t.refs[i].base] + t.refs[i].offset;
  };
  auto sizesMatch = [&](const Trace::Op &op, const size_t *got) {
    for (uint32_t i = op.sizesFirst; i < op.sizesLast; ++i)
      if (got[i - op.sizesFirst] != t.sizes[i])
        divergedCall(call, "a message differs from the one the last call "
                           "like this one received");
  };
  for (const Trace::Op &op : t.ops) {
    int rc = MPI_SUCCESS, request = 0;
    size_t got = 0;
    switch (op.code) {
    case Trace::Code::Send:
      if (op.split - op.first == 1) {
        rc = backend.sendOne(op.peer, op.tag, piece(op.first));
        break;
      }
      resolve(op.first, op.split, pieces);
      rc = backend.send(op.peer, op.tag, pieces);
      break;
    case Trace::Code::Isend:
      resolve(op.first, op.split, pieces);
      rc = backend.isend(op.peer, op.tag, pieces, request);
      break;
    case Trace::Code::Irecv:
      resolve(op.split, op.last, single);
      rc = backend.irecv(op.peer, op.tag, single, request);
      break;
    case Trace::Code::Recv:
      if (op.last - op.split == 1) {
        rc = backend.recvOne(op.peer, op.tag, piece(op.split), got);
      } else {
        resolve(op.split, op.last, single);
        rc = backend.recv(op.peer, op.tag, single, got);
      }
      sizesMatch(op, &got);
      break;
    case Trace::Code::Sendrecv:
      if (op.split - op.first == 1 && op.last - op.split == 1) {
        rc = backend.sendrecvOne(op.peer, op.tag, piece(op.first), op.peer2,
                                 op.tag2, piece(op.split), got);
      } else {
        resolve(op.first, op.split, pieces);
        resolve(op.split, op.last, single);
        rc = backend.sendrecv(op.peer, op.tag, pieces, op.peer2, op.tag2,
                              single, got);
      }
      sizesMatch(op, &got);
      break;
    case Trace::Code::WaitAll:
      received.resize(op.sizesLast - op.sizesFirst);
      rc = backend.waitAll(op.peer, op.tag,
                           received.empty() ? nullptr : received.data());
      sizesMatch(op, received.data());
      break;
    case Trace::Code::Reset:
      backend.reset();
      break;
    case Trace::Code::Copy:
      moveBytes(at(op.first), at(op.split), t.refs[op.first].bytes);
      break;
    case Trace::Code::Fold:
      if (t.fold)
        t.fold(at(op.first), at(op.first + 1), at(op.first + 2),
               static_cast<size_t>(op.peer2));
      else if ((rc = combine(at(op.first), at(op.first + 1), at(op.first + 2),
                             op.peer2, call.type, call.op)))
        return failLocal(call, rc, "reduction failed");
      break;
    }
    if (rc)
      return failLocal(call, rc, "communication failed");
  }
  return MPI_SUCCESS;
}

struct Engine::LastReplay {
  // The call's arguments but its buffers; its type and operator are MPI's
  // own (a recording replayLast takes), so their handles cannot change.
  const char *name = nullptr;
  Kind kind = Kind::Broadcast;
  int count = 0, root = 0, rotation = 0;
  int64_t shift = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  bool sendInPlace = false, recvInPlace = false;
  MPI_Comm comm = MPI_COMM_NULL;
  // What replayLast found, valid while `freed` and `version` hold.
  Backend *backend = nullptr;
  Memory *memory = nullptr;
  const Trace *trace = nullptr;
  uint64_t freed = 0, version = 0;

  bool matches(const Call &c) const {
    return c.name == name && c.comm == comm && c.count == count &&
           c.root == root && c.rotation == rotation && c.type == type &&
           c.op == op &&
           c.kind == kind && c.shift == shift &&
           (c.send == MPI_IN_PLACE) == sendInPlace &&
           (c.recv == MPI_IN_PLACE) == recvInPlace;
  }
};

bool Engine::replayLast(const Call &c, int &rc) {
  // The last few calls replayed here (a program cycles through a few).
  constexpr unsigned kept = 4;
  thread_local LastReplay lasts[kept];
  thread_local unsigned nextLast = 0;
  Workspace &w = threadWorkspace();
  if (c.local || w.busy)
    return false;
  // The same call as one replayed here: its record is where it was, in
  // its communicator's front half (nothing changed there since), so it
  // runs as found then, and nothing moves (moveToFront).
  for (LastReplay &last : lasts)
    if (last.trace && last.matches(c) && last.freed == mpiDuplicatesFreed() &&
        last.memory->version == last.version) {
      w.busy = true;
      rc = runTrace(*last.trace, c, *last.backend, w);
      w.busy = false;
      if (rc != MPI_SUCCESS) {
        last.backend->reset(); // a recording ends with its last step's reset
        last.trace = nullptr;
      }
      return true;
    }
  Backend *backend = nullptr;
  if (makeMpiBackend(c.comm, backend) != MPI_SUCCESS ||
      c.rotation < 0 || c.rotation >= backend->size())
    return false; // connect() reports it
  backend = backend->rotated(c.rotation);
  auto *memory = static_cast<Memory *>(backend->engineMemory.get());
  if (!memory)
    return false;
  // The record start() would find: signatures are unique among the calls
  // kept, and one whose recording fits this call's predefined type and
  // operator has this call's signature (its extent follows from the type).
  std::vector<CallRecord> &calls = memory->calls;
  for (size_t at = 0; at < calls.size(); ++at) {
    const CallRecord &r = calls[at];
    if (r.signature.name != c.name || r.signature.kind != c.kind ||
        r.signature.count != c.count || r.signature.root != c.root ||
        r.signature.shift != c.shift)
      continue;
    const Trace *t = r.recordingFor(c, std::nullopt);
    if (!t)
      continue;
    w.busy = true;
    rc = runTrace(*t, c, *backend, w);
    w.busy = false;
    if (rc != MPI_SUCCESS) {
      backend->reset(); // a recording ends with its last step's reset
      return true;
    }
    // As remember() does for the call start() would have replayed, so that
    // every rank keeps its records in the same order.
    // (The recording itself stays where it is: `t` holds.)
    moveToFront(*memory, at, true);
    // Now in the front half, where a repeat moves nothing.
    LastReplay &last = lasts[nextLast];
    nextLast = (nextLast + 1) % kept;
    last = {c.name, c.kind, c.count, c.root, c.rotation, c.shift,
            c.type, c.op, c.send == MPI_IN_PLACE, c.recv == MPI_IN_PLACE,
            c.comm, backend, memory, t, mpiDuplicatesFreed(),
            memory->version};
    return true;
  }
  return false;
}

void Engine::encode(Outgoing &o) {
  const Buffer &b = buffers[static_cast<size_t>(o.buffer)];
  collect(o.buffer, o.first, o.last, pieces);
  size_t data = 0;
  for (const Piece &piece : pieces)
    data += piece.bytes;
  const size_t n = o.last - o.first;
  char *out = o.message;
  putU64(out, n);
  putU64(out, data);
  for (size_t i = o.first; i < o.last; ++i) {
    const Slot &s = b.slots[static_cast<size_t>(sendList[i])];
    Record r{sendList[i], s.lo, s.hi, s.ordered ? 1 : 0};
    std::memcpy(out, &r, sizeof r);
    out += sizeof r;
  }
  const size_t head = headerBytes + n * sizeof(Record);
  o.dataBytes = data;
  o.whole = wholeMessage(head, data);
  o.length = head + (o.whole ? data : 0);
  o.piecesFirst = sendPieces.size();
  sendPieces.insert(sendPieces.end(), pieces.begin(), pieces.end());
  o.piecesLast = sendPieces.size();
  // A repeated call sends the data alone (exchangeRepeat).
  if (o.whole && !recall)
    for (const Piece &piece : pieces) {
      std::memcpy(out, piece.data, piece.bytes);
      out += piece.bytes;
    }
}

void Engine::planData() {
  if (std::all_of(receives.begin(), receives.end(),
                  [](const Expected &e) { return e.whole || !e.dataBytes; }))
    return; // nothing to place
  // A copy into one buffer lands in place when nothing else in this step
  // touches its slots there: no send reads them, no other receive writes
  // them (deliveries keep the declared order).
  if (receives.size() == 1) {
    // No other receive: only the sends can touch the slots.
    Expected &e = receives.front();
    if (!e.whole && e.dataBytes)
      planOne(e, [&](int32_t slot) {
        for (const Outgoing &o : sends)
          if (o.buffer == e.directBuffer)
            for (size_t i = o.first; i < o.last; ++i)
              if (sendList[i] == slot)
                return false;
        return true;
      }, false);
    return;
  }
  const size_t numSlots = buffers.front().slots.size();
  touched.resize(buffers.size());
  for (auto &t : touched)
    t.assign(numSlots, 0);
  for (const Outgoing &o : sends)
    for (size_t i = o.first; i < o.last; ++i)
      touched[static_cast<size_t>(o.buffer)][static_cast<size_t>(sendList[i])] = 2;
  uint64_t receivedOnce = 0, receivedTwice = 0; // buffers, by receives
  for (const Expected &e : receives) {
    receivedTwice |= receivedOnce & e.intoMask;
    receivedOnce |= e.intoMask;
    for (uint64_t m = e.intoMask; m; m &= m - 1)
      for (size_t r = 0; r < e.records; ++r) {
        uint16_t &t = touched[static_cast<size_t>(std::countr_zero(m))]
                             [static_cast<size_t>(recordAt(e, r).slot)];
        t = static_cast<uint16_t>(std::min(t + 1, 2));
      }
  }
  for (Expected &e : receives) {
    if (e.whole || !e.dataBytes)
      continue;
    const int b = std::countr_zero(e.intoMask);
    planOne(e, [&](int32_t slot) {
      return touched[static_cast<size_t>(b)][static_cast<size_t>(slot)] == 1;
    }, receivedTwice >> b & 1);
  }
}

template <typename Alone>
void Engine::planOne(Expected &e, Alone &&alone, bool bufferShared) {
  const bool single = std::popcount(e.intoMask) == 1;
  e.directBuffer = std::countr_zero(e.intoMask);
  e.direct = !e.reduce && single;
  for (size_t r = 0; r < e.records && e.direct; ++r)
    e.direct = alone(recordAt(e, r).slot);
  // A reduce's operand lands where the result will live, and is folded
  // there with the held value, when that value is elsewhere (still in the
  // user's input, where this step's sends read it) and no other receive
  // writes the buffer: no copy of the input first, no scratch.
  e.fused = e.reduce && single && !bufferShared;
  const Buffer &into = buffers[static_cast<size_t>(e.directBuffer)];
  for (size_t r = 0; r < e.records && e.fused; ++r) {
    const Block &block =
        into.blocks[static_cast<size_t>(blockOfSlot(recordAt(e, r).slot))];
    e.fused = !block.data || block.readOnly;
  }
}

void Engine::landData(Expected &e) {
  if (e.whole)
    pieces.assign(1, {e.landing, e.dataBytes});
  else
    placeData(e);
}

void Engine::placeData(Expected &e) {
  if (e.direct || e.fused) {
    placeDirect(e);
  } else {
    e.data = scratch(e.dataBytes);
    pieces.assign(1, {e.data, e.dataBytes});
  }
}

int Engine::receiveData(int tagData, int &first, int &last) {
  first = last = -1;
  planData();
  for (Expected &e : receives) {
    if (e.whole || !e.dataBytes)
      continue;
    placeData(e);
    if (int rc = backend->irecv(static_cast<int>(e.sender), tagData, pieces,
                                e.request))
      return rc;
    if (first < 0)
      first = e.request;
    last = e.request + 1;
  }
  return MPI_SUCCESS;
}

void Engine::dataOf(Outgoing &o) {
  const size_t head = headerBytes + (o.last - o.first) * sizeof(Record);
  const size_t n = o.piecesLast - o.piecesFirst;
  if (n == 1 || !o.whole) {
    pieces.assign(sendPieces.begin() + static_cast<ptrdiff_t>(o.piecesFirst),
                  sendPieces.begin() + static_cast<ptrdiff_t>(o.piecesLast));
    return;
  }
  // A small message in several pieces is packed after its header: cheaper
  // than a derived datatype.
  char *out = o.message + head;
  for (size_t i = o.piecesFirst; i < o.piecesLast; ++i) {
    copyBytes(out, sendPieces[i].data, sendPieces[i].bytes);
    out += sendPieces[i].bytes;
  }
  pieces.assign(1, {o.message + head, static_cast<size_t>(out - o.message) - head});
}

int Engine::exchangeRepeat(int tagData) {
  // Every header is known: each end takes them from the last like call,
  // and only data moves, straight into place.
  for (Expected &e : receives) {
    if (int rc = parseHeader(e))
      return rc;
    // A little data lands in the step's bytes, to be copied or folded from
    // there as from a whole message: cheaper than working out its place.
    e.whole = e.dataBytes <= landingLimit;
    e.data = e.whole && e.dataBytes ? e.landing : nullptr;
  }
  for (const Outgoing &o : sends)
    checkSent(o);
  recalled += receives.size();
  planData();
  if (receives.size() <= 1 && sends.size() <= 1) {
    // At most one receive and one send (each step of a hypercube or
    // pairwise-exchange schedule): one blocking call.
    Expected *e = receives.empty() || !receives.front().dataBytes
                      ? nullptr
                      : &receives.front();
    Outgoing *o = sends.empty() || sends.front().dataBytes == 0
                      ? nullptr
                      : &sends.front();
    if (e)
      landData(*e);
    std::swap(single, pieces); // the receive's pieces
    if (o)
      dataOf(*o);
    size_t got = 0;
    int rc = MPI_SUCCESS;
    if (e && o)
      rc = backend->sendrecv(o->peer, tagData, pieces,
                             static_cast<int>(e->sender), tagData, single,
                             got);
    else if (e)
      rc = backend->recv(static_cast<int>(e->sender), tagData, single, got);
    else if (o)
      rc = backend->send(o->peer, tagData, pieces);
    if (rc)
      return rc;
    if (e && got && got != e->dataBytes)
      diverged("a message differs from the one the last call like this one "
               "received");
    return MPI_SUCCESS;
  }
  int requests = 0, request = 0;
  for (Expected &e : receives) {
    if (!e.dataBytes)
      continue;
    landData(e);
    if (int rc = backend->irecv(static_cast<int>(e.sender), tagData, pieces,
                                e.request))
      return rc;
    requests = e.request + 1;
  }
  for (Outgoing &o : sends) {
    if (!o.dataBytes)
      continue;
    dataOf(o);
    // Every receive of the step is posted, so a blocking send of a small
    // message returns at once.
    if (o.whole) {
      if (int rc = backend->send(o.peer, tagData, pieces))
        return rc;
      continue;
    }
    if (int rc = backend->isend(o.peer, tagData, pieces, request))
      return rc;
    requests = request + 1;
  }
  received.resize(static_cast<size_t>(requests));
  if (int rc = backend->waitAll(0, requests, received.data()))
    return rc;
  for (const Expected &e : receives) {
    if (!e.dataBytes)
      continue;
    const size_t got = received[static_cast<size_t>(e.request)];
    if (got && got != e.dataBytes) // a message in pieces reports no length
      diverged("a message differs from the one the last call like this one "
               "received");
  }
  return MPI_SUCCESS;
}

int Engine::exchange(int tagHeader, int tagData, size_t bound, char *bytes) {
  sendPieces.clear();
  for (size_t i = 0; i < sends.size(); ++i) {
    sends[i].message = bytes + (receives.size() + i) * bound;
    encode(sends[i]);
  }
  for (size_t i = 0; i < receives.size(); ++i) {
    receives[i].landing = bytes + i * bound;
    receives[i].header = receives[i].landing;
  }
  // A call like one before it on this communicator (same function and
  // arguments) exchanges the same headers, since what a rank holds at each
  // step follows from those alone: its messages go without them, each end
  // knowing them from the last like call (Memory).
  if (predictHeaders())
    return exchangeRepeat(tagData);
  recordSends();
  int first = -1, last = -1; // the data receives' requests
  if (receives.size() == 1 && sends.size() <= 1 &&
      (sends.empty() || sends.front().whole)) {
    // One receive and at most one small send (each step of a hypercube
    // or pairwise-exchange schedule): one blocking call.
    Expected &e = receives.front();
    single.assign(1, {e.landing, bound});
    size_t got = 0;
    if (sends.empty()) {
      if (int rc = backend->recv(static_cast<int>(e.sender), tagHeader,
                                 single, got))
        return rc;
    } else {
      const Outgoing &o = sends.front();
      pieces.assign(1, {o.message, o.length});
      if (int rc = backend->sendrecv(o.peer, tagHeader, pieces,
                                     static_cast<int>(e.sender), tagHeader,
                                     single, got))
        return rc;
    }
    if (int rc = readHeader(e, got))
      return rc;
    if (int rc = receiveData(tagData, first, last))
      return rc;
    if (first >= 0)
      if (int rc = backend->waitAll(first, last, nullptr))
        return rc;
    rememberHeaders();
    return MPI_SUCCESS;
  }
  // Receives first, so that the messages land straight in their buffers;
  // requests are numbered from 0 in the order they start (a blocking send
  // may take one too), so `requests` counts them.
  int requests = 0, request = 0;
  for (Expected &e : receives) {
    single.assign(1, {e.landing, bound});
    if (int rc = backend->irecv(static_cast<int>(e.sender), tagHeader, single,
                                e.request))
      return rc;
    requests = e.request + 1;
  }
  for (const Outgoing &o : sends) {
    single.assign(1, {o.message, o.length});
    // A small message goes out eagerly, and every receive of the step is
    // posted, so a blocking send returns at once and saves a request.
    if (o.whole) {
      if (int rc = backend->send(o.peer, tagHeader, single))
        return rc;
      continue;
    }
    if (int rc = backend->isend(o.peer, tagHeader, single, request))
      return rc;
    pieces.assign(sendPieces.begin() + static_cast<ptrdiff_t>(o.piecesFirst),
                  sendPieces.begin() + static_cast<ptrdiff_t>(o.piecesLast));
    if (int rc = backend->isend(o.peer, tagData, pieces, request))
      return rc;
    requests = request + 1;
  }
  const int numReceives = static_cast<int>(receives.size());
  received.resize(receives.size());
  if (int rc = backend->waitAll(0, numReceives, received.data()))
    return rc;
  for (size_t i = 0; i < receives.size(); ++i)
    if (int rc = readHeader(receives[i], received[i]))
      return rc;
  if (int rc = receiveData(tagData, first, last))
    return rc;
  // The data and every send.
  if (int rc = backend->waitAll(numReceives, std::max(requests, last),
                                nullptr))
    return rc;
  rememberHeaders();
  return MPI_SUCCESS;
}

void Engine::recordSends() {
  if (!remembering)
    return;
  CallRecord &r = memory->recording;
  for (const Outgoing &o : sends) {
    const size_t head = headerBytes + (o.last - o.first) * sizeof(Record);
    r.sent.insert(r.sent.end(), o.message, o.message + head);
    r.sentAt.push_back(r.sent.size());
    r.receivers.push_back(o.peer);
  }
}

void Engine::rememberHeaders() {
  if (!remembering)
    return;
  CallRecord &r = memory->recording;
  for (const Expected &e : receives) {
    const size_t length = headerBytes + e.records * sizeof(Record);
    r.received.insert(r.received.end(), e.header, e.header + length);
    r.receivedAt.push_back(r.received.size());
    r.senders.push_back(e.sender);
  }
}

int Engine::endStep(int64_t step, const char *name) {
  const int tagHeader = static_cast<int>(2 * (step % tagSteps));
  // Room for any receive's first message: a small message whole, or a
  // header; either bounds what a send writes first, too.
  const size_t headerBound =
      headerBytes + buffers.front().slots.size() * sizeof(Record);
  const size_t bound =
      std::min(maxMessageBytes, std::max(headerBound, wholeLimit));
  const size_t need = (receives.size() + sends.size()) * bound;
  char *bytes = nullptr;
  if (tracing && tracedStepBytes + need <= traceStepBytes) {
    // Past the bytes of the steps before: nothing one of them received
    // is in the way of this step's messages when a replay starts them early.
    bytes = stepBytes(tracedStepBytes + need) + tracedStepBytes;
    tracedStepBytes += (need + 63) & ~size_t(63);
  } else {
    bytes = stepBytes(need);
  }
  int rc = exchange(tagHeader, tagHeader + 1, bound, bytes);
  backend->reset();
  if (rc == MPI_SUCCESS)
    rc = deliverAll();
  else
    rc = fail(rc, (std::string("communication failed in ") + name).c_str());
  sends.clear();
  sendList.clear();
  receives.clear();
  return rc;
}

int64_t Engine::destOf(int64_t origin) const {
  if (call.kind == Kind::Permute)
    return workspace->permutationTo[static_cast<size_t>(origin)];
  return (origin + ((call.shift % p) + p) % p) % p;
}

int64_t Engine::originOf(int64_t dest) const {
  if (call.kind == Kind::Permute)
    return workspace->permutationFrom[static_cast<size_t>(dest)];
  return ((dest - call.shift % p) % p + p) % p;
}

template <typename Fn> void Engine::forEachInput(Fn &&fn) const {
  // Pre-condition per kind: compiler/simulate/Semantics.h's table.
  const int64_t root = call.root;
  switch (call.kind) {
  case Kind::Broadcast:
    if (me == root)
      fn(root, 0);
    break;
  case Kind::Reduce:
    fn(0, root);
    break;
  case Kind::Allreduce:
  case Kind::Scan:
    fn(0, 0);
    break;
  case Kind::Allgather:
    fn(me, 0);
    break;
  case Kind::ReduceScatter:
    for (int64_t t = 0; t < p; ++t)
      fn(0, t);
    break;
  case Kind::Scatter:
    if (me == root)
      for (int64_t t = 0; t < p; ++t)
        fn(root, t);
    break;
  case Kind::Gather:
    fn(me, root);
    break;
  case Kind::Alltoall:
    for (int64_t t = 0; t < p; ++t)
      fn(me, t);
    break;
  case Kind::Shift:
  case Kind::Permute:
    fn(me, destOf(me));
    break;
  }
}

template <typename Fn> void Engine::forEachOutput(Fn &&fn) const {
  // Post-condition per kind: compiler/simulate/Semantics.h's table.
  const int64_t root = call.root;
  switch (call.kind) {
  case Kind::Broadcast:
    fn(root, 0);
    break;
  case Kind::Reduce:
    if (me == root)
      fn(0, root);
    break;
  case Kind::Allreduce:
  case Kind::Scan:
    fn(0, 0);
    break;
  case Kind::Allgather:
    for (int64_t o = 0; o < p; ++o)
      fn(o, 0);
    break;
  case Kind::ReduceScatter:
    fn(0, me);
    break;
  case Kind::Scatter:
    fn(root, me);
    break;
  case Kind::Gather:
    if (me == root)
      for (int64_t o = 0; o < p; ++o)
        fn(o, root);
    break;
  case Kind::Alltoall:
    for (int64_t o = 0; o < p; ++o)
      fn(o, me);
    break;
  case Kind::Shift:
  case Kind::Permute:
    fn(originOf(me), me);
    break;
  }
}

int Engine::finish() {
  int rc = MPI_SUCCESS;
  const Buffer &result = buffers.front();
  forEachOutput([&](int64_t o, int64_t d) {
    char *home = outputBlock(o, d);
    if (!home || rc != MPI_SUCCESS)
      return;
    const size_t blk = static_cast<size_t>(blockOf(o, d));
    for (int64_t k = 0; k < chunks; ++k)
      if (!result.slots[blk * static_cast<size_t>(chunks) +
                        static_cast<size_t>(k)].held) {
        rc = fail(MPI_ERR_INTERN, "a result chunk never arrived");
        return;
      }
    const Block &block = result.blocks[blk];
    if (block.data != home && blockBytes)
      copyBytes(home, block.data, blockBytes);
  });
  if (rc == MPI_SUCCESS) {
    keepTrace();
    remember();
  }
  return rc;
}

} // namespace collc::rt
