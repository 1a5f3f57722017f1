// The schedule engine: each rank's chunk slots per buffer, deliveries in
// the simulator's order (compiler/simulate/Simulator.h), and the
// collectives' inputs and outputs in MPI's layout. The messages are
// EngineMessages.cpp's, the recording and replay of a repeated call
// EngineTrace.cpp's.

#include "EngineDetail.h"
#include "collc/KeptMemory.h"

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

using namespace detail;

namespace {
/// Scratch memory kept per thread across calls (ranks of the local backend
/// are threads), so repeated calls allocate nothing.
struct Pool {
  std::vector<std::pair<char *, size_t>> free;
  size_t bytes = 0; // of those in `free`
  KeptBytes scratchKept, stepKept; // the thread's workspace's step bytes
  ~Pool() {
    for (auto &[data, bytes] : free)
      delete[] data;
  }
  /// Frees the largest entry, or the smallest.
  void drop(bool largest) {
    auto bySize = [](const auto &a, const auto &b) {
      return a.second < b.second;
    };
    auto at = largest ? std::max_element(free.begin(), free.end(), bySize)
                      : std::min_element(free.begin(), free.end(), bySize);
    bytes -= at->second;
    delete[] at->first;
    free.erase(at);
  }
};
thread_local Pool threadPool;
constexpr size_t poolKeep = 64;
} // namespace

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
  for (auto &entry : taken) {
    threadPool.free.push_back(entry);
    threadPool.bytes += entry.second;
  }
  taken.clear();
  sends.clear();
  sendList.clear();
  receives.clear();
  // A permutation's table is the call's: the next one fills its own.
  workspace->permutationTo.clear();
  releaseKept(*workspace);
  // Leave the buffers' tables sized: start() reassigns them in place.
  if (workspace == &threadWorkspace())
    workspace->busy = false;
  else
    delete workspace;
  // Past poolKeep entries, the smallest go.
  while (threadPool.free.size() > poolKeep)
    threadPool.drop(false);
}

void Engine::releaseKept(Workspace &w) {
  const size_t scratchUsed = w.scratchUsed, stepUsed = w.stepUsed;
  w.scratchUsed = w.stepUsed = 0;
  if (threadPool.scratchKept.release(scratchUsed, threadPool.bytes))
    while (threadPool.bytes > keptAcrossCalls)
      threadPool.drop(true);
  // A nested call's workspace goes with it.
  if (&w == &threadWorkspace() &&
      threadPool.stepKept.release(stepUsed, w.stepCapacity)) {
    w.stepStore.reset();
    w.stepCapacity = 0;
  }
}

char *Engine::scratch(size_t bytes) {
  workspace->scratchUsed += bytes;
  auto &free = threadPool.free;
  auto best = free.end();
  for (auto it = free.begin(); it != free.end(); ++it)
    if (it->second >= bytes && (best == free.end() || it->second < best->second))
      best = it;
  std::pair<char *, size_t> entry;
  if (best != free.end()) {
    entry = *best;
    threadPool.bytes -= entry.second;
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
  w.stepUsed = std::max(w.stepUsed, bytes);
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

auto Engine::frame() const {
  return meaning::Frame{p, static_cast<int64_t>(call.root),
                        [this](int64_t o) { return destOf(o); },
                        [this](int64_t d) { return originOf(d); }};
}

int Engine::connect(const Call &c) {
  call = c;
  // A rank's own count and type: others may pass other ones (an exchange's
  // own sides, a broadcast's signature in other types), so what is wrong
  // with them may be this rank's alone.
  if (call.count < 0)
    return failLocal(call, MPI_ERR_COUNT, "negative count");
  if (call.type == MPI_DATATYPE_NULL)
    return failLocal(call, MPI_ERR_TYPE, "null datatype");
  TypeInfo info;
  bool packs = false;
  if (int rc = checkType(info, packs))
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
  if (const char *fault = bufferFault(c))
    return failLocal(call, MPI_ERR_BUFFER, fault);
  // The sides are the user's counts: `c`'s, not call's (in bytes by now).
  // `info` is left empty for the type checkType knew already, which has no
  // holes: Staged uses such a buffer in place.
  return packs || c.sidesDiffer() ? stageBuffers(c, info) : MPI_SUCCESS;
}

int Engine::stageBuffers(const Call &user, const TypeInfo &info) {
  const meaning::Conditions &m = meaningOf(call.kind);
  const bool sendInPlace = call.send == MPI_IN_PLACE;
  const meaning::BuffersUsed used =
      meaning::buffersUsed(m, me, call.root, sendInPlace);
  // Input in the receive buffer only where this rank starts with some (a
  // scatter's non-root may pass MPI_IN_PLACE as its unused send buffer).
  const bool inputInRecv = used.starts && m.inputInReceive(sendInPlace);
  // Packing reads the type alone; the local backend has no communicator.
  const MPI_Comm packing = call.local ? MPI_COMM_SELF : call.comm;
  const char *why = "cannot pack a buffer of a derived datatype";
  // A buffer of `blocks` blocks, as its side's own count and type lay it.
  auto stage = [&](Staged &staged, const void *buf, const Call::Side &side,
                   int64_t blocks, bool read, bool write) {
    if (!side.given || (side.type == user.type && side.count == user.count))
      return staged.start(buf, blocks * user.count, user.type, info, read,
                          write, packing);
    TypeInfo own;
    if (side.count < 0 || describe(side.type, own) != MPI_SUCCESS) {
      why = "an invalid count or datatype on one side";
      return side.count < 0 ? MPI_ERR_COUNT : MPI_ERR_TYPE;
    }
    // A block is call.count units of `extent` bytes, packed (checkType).
    if (int64_t{side.count} * own.size != int64_t{call.count} * extent) {
      why = "the send and receive sides of a block differ in size (their "
            "type signatures must match)";
      return MPI_ERR_TRUNCATE;
    }
    return staged.start(buf, blocks * side.count, side.type, own, read, write,
                        packing);
  };
  int rc = MPI_SUCCESS;
  if (used.send && !sendInPlace) {
    rc = stage(stagedSend, call.send, call.sendSide, m.sendPerDest() ? p : 1,
               true, false);
    call.send = stagedSend.bytes();
  }
  if (rc == MPI_SUCCESS && used.recv && call.recv != MPI_IN_PLACE) {
    // In place, a block per destination is the input, in the receive buffer.
    const int64_t blocks =
        m.recvPerOrigin() || (inputInRecv && m.sendPerDest()) ? p : 1;
    rc = stage(stagedRecv, call.recv, call.recvSide, blocks, inputInRecv, true);
    call.recv = stagedRecv.bytes();
  }
  // The other ranks go on into the schedule: this rank alone sees it.
  if (rc != MPI_SUCCESS)
    return failLocal(call, rc, why);
  return MPI_SUCCESS;
}

int Engine::unstageResult() {
  if (int rc = stagedRecv.finish(call.local ? MPI_COMM_SELF : call.comm))
    return failLocal(call, rc,
                     "cannot unpack the result into a derived datatype");
  return MPI_SUCCESS;
}

const char *Engine::bufferFault(const Call &user) const {
  const meaning::Conditions &m = meaningOf(call.kind);
  const bool sendInPlace = call.send == MPI_IN_PLACE;
  if (const char *fault = meaning::inPlaceFault(m, me, call.root, sendInPlace,
                                                call.recv == MPI_IN_PLACE))
    return fault;
  if (call.count == 0 || extent == 0)
    return nullptr;
  // Exscan's rank 0 has no result (MPI 4.0 §6.11.2): its receive buffer
  // is not used.
  const meaning::BuffersUsed used =
      meaning::buffersUsed(m, me, call.root, sendInPlace);
  // A null buffer is MPI_BOTTOM where its side's type is absolute.
  auto missing = [&](bool isUsed, const void *buf, const Call::Side &side) {
    TypeInfo info;
    return isUsed && !buf &&
           (describe(side.given ? side.type : user.type, info) != MPI_SUCCESS ||
            info.nullWithData(buf, side.given ? side.count : user.count));
  };
  if (missing(used.send, call.send, call.sendSide) ||
      missing(used.recv, call.recv, call.recvSide))
    return "a null buffer where this rank has data";
  // An output may not alias another argument (MPI 4.0 §2.3): in place is
  // said with MPI_IN_PLACE. Both may be MPI_BOTTOM, with types apart.
  if (used.send && used.recv && call.send == call.recv && call.send)
    return "the same address as send and receive buffer (MPI_IN_PLACE "
           "says in place)";
  return nullptr;
}

namespace {

/// Sets `extent` and `call.count` from elements of `size` bytes: a
/// reduction folds elements, anything else moves its block's bytes, so that
/// chunks split a block alike at every rank whatever type each passes
/// (MPI_INT x 6 at one, pairs of ints x 3 at another: the signatures
/// match). False where a block's bytes are more than an int counts.
bool inUnits(Call &call, MPI_Aint &extent, int size) {
  extent = size;
  if (isReduction(call.kind))
    return true;
  if (int64_t{call.count} * size > INT_MAX)
    return false;
  call.count *= size;
  extent = 1;
  return true;
}

} // namespace

int Engine::checkType(TypeInfo &info, bool &packs) {
  // The bytes of an element as the schedule sees it.
  int size = lastNamedSize;
  if (call.type != lastNamedType) {
    const bool reduces = isReduction(call.kind);
    if (describe(call.type, info) != MPI_SUCCESS)
      return failLocal(call, MPI_ERR_TYPE, "invalid datatype");
    // Elements of no bytes: the empty signature of no elements, which
    // another rank may pass instead; a reduction's type is every rank's.
    if (info.size == 0 && reduces)
      return fail(MPI_ERR_TYPE, "a reduction over a datatype of size 0");
    // Chunks move as bytes. A layout with holes is packed, `size` bytes an
    // element (stageBuffers), whatever layout this rank passes: MPI
    // requires only the type signatures to match.
    const bool holes = info.lb != 0 || info.trueLb != 0 || !info.contiguous(2);
    packs = holes;
    size = info.size;
    if (reduces && !info.named && predefinedOp(call.op) &&
        info.base != MPI_DATATYPE_NULL &&
        static_cast<int64_t>(call.count) * info.perElement <= INT_MAX) {
      // A predefined operator folds a derived type as its basic type, as
      // MPI libraries do.
      call.type = info.base;
      call.count *= info.perElement;
      size = info.size / info.perElement;
    } else if (reduces && holes) {
      // Any other operator reads elements as the type lays them out. Every
      // rank passes the same datatype to a reduction (MPI 4.0 §6.9.1).
      return fail(MPI_ERR_TYPE, "a reduction over a datatype with holes "
                                "needs a predefined operator on one basic "
                                "type");
    }
    if (info.named && !holes) {
      lastNamedType = call.type;
      lastNamedSize = info.size;
    }
  }
  return inUnits(call, extent, size)
             ? MPI_SUCCESS
             : fail(MPI_ERR_COUNT, "a block of more than 2 GiB");
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

// The user's buffers, laid out as MPI's call of the kind lays them
// (meaning::Conditions::sendPerDest and the rest).
const char *Engine::inputBlock(int64_t origin, int64_t dest) const {
  const meaning::Conditions &m = meaningOf(call.kind);
  const bool inPlace = call.send == MPI_IN_PLACE;
  const char *send = static_cast<const char *>(call.send);
  const char *recv = static_cast<const char *>(call.recv);
  const MPI_Aint block = extent * call.count;
  if (m.oneBuffer())
    return recv;
  if (m.sendPerDest())
    return (inPlace ? recv : send) + userBlock(dest) * block;
  if (inPlace && m.recvPerOrigin()) // its own block, where it would land
    return recv + userBlock(origin) * block;
  return inPlace ? recv : send;
}

char *Engine::outputBlock(int64_t origin, int64_t dest) const {
  (void)dest;
  // The scatter root's own block stays in place under MPI_IN_PLACE (the
  // only receive buffer bufferFault lets be MPI_IN_PLACE).
  if (call.recv == MPI_IN_PLACE)
    return nullptr;
  char *recv = static_cast<char *>(call.recv);
  if (meaningOf(call.kind).recvPerOrigin())
    return recv + userBlock(origin) * extent * call.count;
  return recv;
}

int64_t Engine::blockOf(int64_t origin, int64_t dest) const {
  return meaningOf(call.kind).blockIndex(origin, dest, p);
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

int Engine::start(int numBuffers, int64_t numChunks, uint64_t startEmpty) {
  if (numChunks < 1 || numChunks > maxChunkIndices)
    return fail(MPI_ERR_ARG, "chunk count outside 1..2^23");
  chunks = numChunks;
  chunkBase = call.count / chunks;
  chunkExtra = call.count % chunks;
  bufferMask = numBuffers >= 64 ? ~uint64_t(0)
                                : (uint64_t(1) << numBuffers) - 1;
  blockBytes = static_cast<size_t>(extent) * static_cast<size_t>(call.count);
  if (std::optional<int> rc = replayRecorded(numBuffers))
    return *rc == MPI_SUCCESS ? unstageResult() : *rc;
  if (call.kind == Kind::Permute)
    if (int rc = checkPermutation(); rc != MPI_SUCCESS)
      return rc;
  if (int rc = layOutBlocks(numBuffers); rc != MPI_SUCCESS)
    return rc;
  // A call like an earlier one but for its type, operator or use of
  // MPI_IN_PLACE is recorded too, unless recordings of it were too large.
  if (recall && recall->refused < maxRefused)
    beginTrace();
  placeInputs(startEmpty);
  return MPI_SUCCESS;
}

std::optional<int> Engine::replayRecorded(int numBuffers) {
  // The last like call's headers, where the communicator keeps them.
  remembering = backend->outlivesCalls();
  memory = nullptr;
  recall = nullptr;
  recalled = resent = 0;
  if (!remembering)
    return std::nullopt;
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
  if (!fitting) {
    memory->recording.clear();
    memory->recording.signature = signature;
    return std::nullopt;
  }
  replayedCall = true;
  const int rc = runTrace(*fitting, call, *backend, *workspace);
  if (rc == MPI_SUCCESS)
    remember();
  else
    backend->reset(); // as replayLast: no request outlives the call
  return rc;
}

int Engine::checkPermutation() {
  // The table every rank computed alike; checked, so a wrong one fails on
  // every rank rather than losing a block.
  std::vector<int64_t> &to = workspace->permutationTo,
                       &from = workspace->permutationFrom;
  from.assign(static_cast<size_t>(p), -1);
  bool bijection = to.size() == static_cast<size_t>(p);
  for (size_t o = 0; bijection && o < to.size(); ++o) {
    bijection = to[o] >= 0 && to[o] < p && from[static_cast<size_t>(to[o])] < 0;
    if (bijection)
      from[static_cast<size_t>(to[o])] = static_cast<int64_t>(o);
  }
  return bijection ? MPI_SUCCESS
                   : fail(MPI_ERR_ARG,
                          "the permutation is not a bijection of the ranks");
}

int Engine::layOutBlocks(int numBuffers) {
  // Every block of the collective, by blockOf's numbering.
  blockOrigin.clear();
  blockDest.clear();
  meaning::forEachUniverseBlock(meaningOf(call.kind), frame(),
                                [&](int64_t o, int64_t dLo, int64_t dHi) {
                                  for (int64_t d = dLo; d <= dHi; ++d) {
                                    blockOrigin.push_back(o);
                                    blockDest.push_back(d);
                                  }
                                });
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
  return MPI_SUCCESS;
}

void Engine::placeInputs(uint64_t startEmpty) {
  // The result goes straight where this rank outputs it.
  for (Block &block : buffers[0].blocks)
    block.home = nullptr;
  forEachOutput([&](int64_t o, int64_t d) {
    if (char *home = outputBlock(o, d))
      buffers[0].blocks[static_cast<size_t>(blockOf(o, d))].home = home;
  });
  // What each rank starts with (collc/Meaning.h). Input in the output
  // buffer (MPI_IN_PLACE, a broadcast's root) is read in place only by the
  // block it is the home of; any other copy is taken now, before results
  // overwrite it.
  const bool inputInRecv =
      meaningOf(call.kind).inputInReceive(call.send == MPI_IN_PLACE);
  forEachInput([&](int64_t origin, int64_t dest) {
    const char *input = inputBlock(origin, dest);
    const size_t blk = static_cast<size_t>(blockOf(origin, dest));
    for (size_t b = 0; b < buffers.size(); ++b) {
      if (b < 64 && (startEmpty >> b & 1))
        continue;
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

template <typename Fn>
void Engine::forEachBlock(const meaning::Holding &h, Fn &&fn) const {
  meaning::forEachBlock(h, me, frame(),
                        [&](int64_t o, int64_t dLo, int64_t dHi) {
                          for (int64_t d = dLo; d <= dHi; ++d)
                            fn(o, d);
                        });
}

template <typename Fn> void Engine::forEachInput(Fn &&fn) const {
  forEachBlock(meaningOf(call.kind).initial, fn);
}

template <typename Fn> void Engine::forEachOutput(Fn &&fn) const {
  forEachBlock(meaningOf(call.kind).required, fn);
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
    rc = unstageResult();
  }
  return rc;
}

} // namespace collc::rt
