#pragma once
// The runtime that code emitted by `collc compile` calls. An emitted function
// describes its schedule step by step (who sends to whom, which chunks, into
// which buffers); the Engine moves the data.
//
// Chunk flow follows the compiler's simulator (compiler/simulate/
// Semantics.h): a chunk has coordinates (origin, dest, index); each rank
// starts with the chunks its collective gives it (collc/Meaning.h, the
// table the compiler reads too), in every buffer; a send
// carries the chunks of one buffer that the selector accepts, as they are at
// the start of the step; deliveries land at the end of the step, in the order
// the receives were declared (by rule, then by sender). Copy replaces the
// receiver's value; reduce folds into it, operands in rank order.
//
// Messages are self-describing: a sender lists the chunks it sends (with the
// ranks each combines), so a receiver needs no model of the sender's state,
// and the receiver derives the rest (mode, delivery buffers) from the rule
// evaluated for the sender.
//
// Storage: each buffer is a dense table of chunk slots, one per chunk the
// collective can ever have, over one memory block per (origin, dest) block.
// A block of the result buffer that this rank outputs lives in the user's
// output buffer itself, an input block is read from the user's input until
// something is written to it, and the rest comes from a pool reused across
// calls, so a step moves data straight between user buffers where the
// schedule allows and allocates nothing in the steady state.

#include "collc/Backend.h"
#include "collc/Datatype.h"
#include "collc/Meaning.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

/// The .coll language's `**` on 64-bit integers (exponent >= 0), as
/// ir::printCpp spells it in emitted expressions.
inline int64_t collc_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  for (; exp > 0; --exp)
    result *= base;
  return result;
}

/// The .coll language's `bitreverse(x, n)`: the low n bits of x reversed,
/// n in 0 .. 62 (sema and the prover keep it there).
inline int64_t collc_bitreverse(int64_t x, int64_t n) {
  uint64_t out = 0;
  for (int64_t i = 0; i < n; ++i)
    out |= ((static_cast<uint64_t>(x) >> i) & 1) << (n - 1 - i);
  return static_cast<int64_t>(out);
}

/// The .coll language's `ceil_log2(x)`: the least k >= 0 with 2^k >= x.
inline int64_t collc_ceil_log2(int64_t x) {
  return x <= 1 ? 0 : 64 - __builtin_clzll(static_cast<uint64_t>(x - 1));
}

namespace collc::rt {

/// The kinds of collective (collc/Meaning.h); an alltoallv runs in
/// collc/Alltoallv.h, never through the engine.
using Kind = meaning::Kind;

/// The arguments of one call, as MPI names them. Unused ones stay default.
struct Call {
  // The emitted function, for messages; its address also identifies the
  // schedule (each emitted function has its own array), which Signature
  // compares.
  const char *name = "";
  Kind kind = Kind::Broadcast;
  const void *send = nullptr; // MPI_IN_PLACE allowed where MPI allows it
  void *recv = nullptr;
  int count = 0;              // elements per block
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;    // reductions only
  int root = 0;
  int64_t shift = 0;          // shift(q)
  MPI_Comm comm = MPI_COMM_NULL;
  LocalComm *local = nullptr; // instead of comm: a rank of local::run
  // The schedule runs on the communicator's ranks rotated: rank r plays
  // rank (r - rotation) mod p of the schedule, and block b of a buffer is
  // the schedule's block (b - rotation) mod p (Backend::rotated). How
  // any_root:: runs a rooted schedule for another root.
  int rotation = 0;
  // Proved to fold in rank order (its collective says commutative: false),
  // so a non-commutative operator may run it, unrotated.
  bool foldsInOrder = false;
  // A buffer of an exchange whose side has a count and type of its own
  // (MPI requires only the signatures to match): its block must hold as
  // many bytes as `count` elements of `type`. Not given: `count` and
  // `type` (a given MPI_DATATYPE_NULL is the user's error, refused).
  struct Side {
    int count = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    bool given = false;
  };
  Side sendSide, recvSide;
  /// Whether a side this call uses differs from `count` and `type`.
  bool sidesDiffer() const {
    auto differs = [&](const Side &s, const void *buf) {
      return buf != MPI_IN_PLACE && s.given &&
             (s.type != type || s.count != count);
    };
    return differs(sendSide, send) || differs(recvSide, recv);
  }
};

/// Either communicator an emitted function accepts: an MPI communicator or a
/// rank of the local (threads) backend (collc/Local.h).
struct CommRef {
  CommRef(MPI_Comm c) : mpi(c) {}
  CommRef(LocalComm &c) : local(&c) {}
  /// The communicator with its ranks rotated (Call::rotation).
  CommRef(MPI_Comm c, int rotation) : mpi(c), rotation(rotation) {}
  CommRef(LocalComm &c, int rotation) : local(&c), rotation(rotation) {}
  int rank() const;
  MPI_Comm mpi = MPI_COMM_NULL;
  LocalComm *local = nullptr;
  int rotation = 0;
};

/// The rotation that makes `root` play `provedRoot` on `size` ranks, or -1
/// when either is outside the communicator.
inline int rotationFor(int root, int provedRoot, int size) {
  if (root < 0 || root >= size || provedRoot < 0 || provedRoot >= size)
    return -1;
  return (root - provedRoot + size) % size;
}

class Engine {
public:
  /// Borrows this thread's containers (kept across calls, so a call
  /// allocates nothing in the steady state).
  Engine() = default;
  /// Returns the containers and the call's scratch memory.
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  /// Checks the arguments and connects to the communicator. Returns an MPI
  /// error code; on error, prints why (naming call.name) to stderr.
  int connect(const Call &call);
  int64_t rank() const { return me; }
  int64_t size() const { return p; }
  /// A permutation's table, size() entries for the emitted code to fill
  /// before start(): where each rank's block goes. start() refuses one
  /// that is not a bijection of the ranks.
  int64_t *permutation() {
    workspace->permutationTo.assign(static_cast<size_t>(p), -1);
    return workspace->permutationTo.data();
  }

  /// Loads each rank's input into `buffers` buffers split into `chunks`
  /// chunk indices per block, but for the buffers whose bit is set in
  /// `startEmpty`, which hold nothing until they receive. Call after the
  /// size checks. A call like the last ones on its communicator runs whole
  /// here, from their recording (Trace): then replayed() is true and the
  /// steps must not run.
  int start(int buffers, int64_t chunks, uint64_t startEmpty = 0);
  bool replayed() const { return replayedCall; }

  /// Prints "collc: NAME: message" to stderr and returns `code`: an
  /// error every rank finds alike (connect(), the emitted checks). Once
  /// start() has returned, only this rank may see it while the others wait
  /// on its messages: then failLocal.
  int fail(int code, const char *message) const {
    return started ? failLocal(call, code, message)
                   : failCall(call, code, message);
  }
  /// A failure this rank alone sees on an MPI communicator: its error
  /// handler, then MPI_Abort even if the handler returns, since no rank
  /// may be left waiting for this one (the local backend returns `code`).
  static int failLocal(const Call &call, int code, const char *message);

  /// Runs `call` as recorded when it is like one of the last calls on its
  /// MPI communicator whose recording (start()) used the same predefined
  /// type and operator: the checks connect() and the emitted function make
  /// passed for those arguments then. Returns whether it ran the call, with
  /// its result in `rc`; otherwise the call goes the whole way.
  static bool replayLast(const Call &call, int &rc);
  /// How many calls this thread has run as recorded (for tests).
  static uint64_t replays();
  /// How many messages this thread's recordings start at a replay's
  /// beginning, together (for tests).
  static uint64_t startedEarly();

  /// This rank sends to `peer` the chunks of `fromBuffer` that `select`
  /// accepts (as they are now: deliveries wait for endStep).
  template <typename Selector>
  void send(int64_t peer, int fromBuffer, Selector &&select) {
    const Buffer &b = buffers[static_cast<size_t>(fromBuffer)];
    const size_t first = sendList.size();
    for (size_t s = 0; s < b.slots.size(); ++s)
      if (b.slots[s].held) {
        const int64_t slot = static_cast<int64_t>(s);
        const size_t block = static_cast<size_t>(blockOfSlot(slot));
        if (select(blockOrigin[block], blockDest[block], chunkOf(slot)))
          sendList.push_back(static_cast<int32_t>(s));
      }
    sends.push_back({static_cast<int>(peer), fromBuffer, first,
                     sendList.size()});
  }
  /// This rank sends everything it holds in `fromBuffer`.
  void sendAll(int64_t peer, int fromBuffer) {
    send(peer, fromBuffer, [](int64_t, int64_t, int64_t) { return true; });
  }
  /// This rank receives from `sender` into the buffers whose bit is set in
  /// `intoMask`, by copy or by reduce.
  void receive(int64_t sender, uint64_t intoMask, bool reduce);
  /// Runs the step's sends and receives and delivers. `step` numbers steps
  /// in execution order (the message tag); `name` is for messages.
  int endStep(int64_t step, const char *name);

  /// Writes what the collective outputs at this rank from buffer 0.
  int finish();

private:
  struct Workspace; // below
  /// What a slot holds: whether it holds a value, and the ranks the value
  /// combines (an interval while `ordered`; reduces out of rank order clear
  /// it).
  struct Slot {
    int32_t lo = 0, hi = 0;
    bool held = false, ordered = true;
  };
  /// Where a block's bytes are: `data` (null until needed), read-only while
  /// it is the user's input; `home` is where the result goes (or null).
  struct Block {
    char *data = nullptr;
    char *home = nullptr;
    bool readOnly = false;
    // Where the held values were until a fused reduce of this step took
    // the block out of the user's input (see receiveData).
    const char *previous = nullptr;
  };
  struct Buffer {
    std::vector<Block> blocks;
    std::vector<Slot> slots; // block * chunks + index
    // Where its blocks live that are not the user's, in block order, when
    // it has a block a rank (regionBlock): null until one is needed.
    char *region = nullptr;
  };
  /// One record of a message header: a slot and its value's ranks.
  struct Record {
    int32_t slot, lo, hi, ordered;
  };
  struct Outgoing {
    int peer = 0;
    int buffer = 0;
    size_t first = 0, last = 0; // its slots: sendSlots[first, last)
    // Filled by endStep.
    char *message = nullptr; // header, and the data when whole
    size_t length = 0;
    size_t dataBytes = 0;
    bool whole = true;
    size_t piecesFirst = 0, piecesLast = 0; // its data: sendPieces[...)
  };
  struct Expected {
    int64_t sender = 0;
    uint64_t intoMask = 0;
    bool reduce = false;
    // Filled by endStep.
    const char *header = nullptr; // the message's header (or its prediction)
    char *landing = nullptr; // where its first message is received
    size_t records = 0;
    size_t dataBytes = 0;
    bool whole = true;    // the data came with the header
    char *data = nullptr; // the chunks' bytes, in record order
    bool direct = false;  // received in place into `directBuffer`
    bool fused = false;   // ... a reduce's operand, folded there
    int directBuffer = 0;
    int request = -1;
  };

  /// connect()'s checks of the datatype (sets `extent`; `info` and `packs`
  /// where the buffers go through stageBuffers) and the operator (sets
  /// `commutative`).
  int checkType(TypeInfo &info, bool &packs);
  int checkOp();
  /// A derived type's buffers at this rank as packed elements, `user`'s
  /// count and type (collc/Datatype.h's Staged); the result is unpacked by
  /// unstageResult() once the call has run.
  int stageBuffers(const Call &user, const TypeInfo &info);
  int unstageResult();
  /// What is wrong with the buffers this rank reads or writes (null, but
  /// for MPI_BOTTOM, or MPI_IN_PLACE where MPI forbids it), or null: a
  /// failure only this rank may see. `user`'s types tell MPI_BOTTOM.
  const char *bufferFault(const Call &user) const;
  // A block of `count` elements splits into `chunks` chunks, the first
  // count % chunks of them one element longer (as the simulator splits).
  int64_t chunkBegin(int64_t k) const {
    return k * chunkBase + std::min(k, chunkExtra);
  }
  int64_t chunkLength(int64_t k) const {
    return chunkBase + (k < chunkExtra ? 1 : 0);
  }
  /// A slot's chunk index within its block (most schedules have one chunk
  /// a block, so no division).
  int64_t chunkOf(int64_t slot) const {
    return chunks == 1 ? 0 : slot % chunks;
  }
  int64_t blockOfSlot(int64_t slot) const {
    return chunks == 1 ? slot : slot / chunks;
  }
  size_t slotBytes(int64_t slot) const {
    return static_cast<size_t>(chunkLength(chunkOf(slot)) * extent);
  }
  /// Where a block starts in the user's input / output at this rank, as
  /// MPI's call of the kind lays its buffers out (outputBlock: null for an
  /// MPI_IN_PLACE receive buffer, whose block stays where it is).
  const char *inputBlock(int64_t origin, int64_t dest) const;
  /// The user's block index of the schedule's rank `r` (Call::rotation).
  int64_t userBlock(int64_t r) const {
    return call.rotation ? (r + call.rotation) % p : r;
  }
  char *outputBlock(int64_t origin, int64_t dest) const;
  /// The block index of (origin, dest), or -1 outside the collective's.
  int64_t blockOf(int64_t origin, int64_t dest) const;
  /// Makes a block writable (copying the user's input out first).
  /// A block still in the user's input is copied to where it will live,
  /// except chunks [skipFrom, skipTo), which a delivery is about to write
  /// whole.
  char *writable(int buffer, int64_t block, int64_t skipFrom = 0,
                 int64_t skipTo = 0);
  /// Makes the blocks that a direct receive lands in writable (keeping a
  /// block's old place in `previous`) and lists where its chunks go in
  /// `pieces`.
  void placeDirect(const Expected &e);
  /// Folds `incoming` (n elements, its ranks in `r`) with the value `held`
  /// describes, at `old`, into `to` (which may be either operand).
  int fold(Slot &held, const Record &r, const char *old, const char *incoming,
           char *to, size_t n);
  char *slotData(const Block &b, int64_t k) const {
    return b.data + chunkBegin(k) * extent;
  }
  /// Bytes from the pool, valid until the call ends.
  char *scratch(size_t bytes);
  /// Where block `block` of `buffer` lives when it is not the user's: its
  /// place in the buffer's region, so that the runs of blocks a tree
  /// forwards (gather, scatter) lie in one piece and go out as one
  /// contiguous message, or scratch of its own where a region would be
  /// large (more blocks than ranks, or over regionBytes).
  char *blockScratch(int buffer, int64_t block);
  static constexpr size_t regionBytes = size_t(1) << 30;
  /// Bytes for this step's headers (and small messages whole), valid until
  /// the next call; kept per thread, so the steady state allocates nothing.
  char *stepBytes(size_t bytes) { return stepBytesOf(*workspace, bytes); }
  static char *stepBytesOf(Workspace &w, size_t bytes);
  /// At the end of a call on `w`, run or replayed: frees the thread's
  /// scratch and `w`'s step bytes past what a thread keeps (KeptBytes).
  static void releaseKept(Workspace &w);
  /// Writes a send's message at o.message: its header, and the data after
  /// it when the whole message is small; sets o.length and o.whole and
  /// keeps the data's pieces in sendPieces.
  void encode(Outgoing &o);
  /// The step's messages (endStep): each receive's first message, a small
  /// message whole or a header, lands in `bound` bytes at `bytes`.
  int exchange(int tagHeader, int tagData, size_t bound, char *bytes);
  /// exchange() of a step with one receive and at most one small send.
  int exchangeSingle(int tagHeader, int tagData, size_t bound);
  /// Posts the data receives of the receives whose data did not come with
  /// their headers: straight into place where the step allows.
  int receiveData(int tagData, int &first, int &last);
  /// receiveData's parts: where each receive's data lands (e.direct,
  /// e.fused), and the pieces of one receive, in `pieces`.
  void planData();
  /// planData for one receive: alone(buffer, slot) says whether nothing
  /// else in the step touches that slot of that buffer; bufferShared,
  /// whether another receive writes its (first) buffer.
  template <typename Alone>
  void planOne(Expected &e, Alone &&alone, bool bufferShared);
  void placeData(Expected &e);
  /// A repeated call's receive: the pieces its data lands in.
  void landData(Expected &e);
  /// A repeated call's step: only data moves (see Memory).
  int exchangeRepeat(int tagData);
  /// exchangeRepeat() of a step with at most one receive and one send.
  int exchangeRepeatSingle(int tagData);
  /// A send's data as pieces to send alone, in `pieces`.
  void dataOf(Outgoing &o);
  /// Add this step's sent and received headers to the recording.
  void recordSends();
  void rememberHeaders();
  /// Decodes and checks the header of a receive's first message, `bytes`
  /// long; returns an MPI error code.
  int readHeader(Expected &e, size_t bytes) const;
  /// Decodes and checks a header (e.header); returns an MPI error code.
  int parseHeader(Expected &e) const;
  /// What makes two calls exchange the same headers: the emitted function
  /// with the same arguments (but the buffers and the operator), on the
  /// same communicator. The function is its name's address, not its text:
  /// two spec files may each emit a `bc`.
  struct Signature {
    const char *name = nullptr;
    Kind kind = Kind::Broadcast;
    int64_t count = 0, chunks = 0, root = 0, shift = 0;
    MPI_Aint extent = 0;
    int buffers = 0;
    bool operator==(const Signature &o) const {
      return name == o.name && kind == o.kind && count == o.count &&
             chunks == o.chunks && root == o.root && shift == o.shift &&
             extent == o.extent && buffers == o.buffers;
    }
  };
  /// A repeated call's effects at this rank, recorded (Engine.cpp).
  struct Trace;
  /// The backend a recorded call runs on: the real one, noting each call.
  class TracingBackend;
  /// The headers a call received (with their senders) and sent (with
  /// their receivers), in order, and the recordings of calls like it.
  struct CallRecord {
    Signature signature;
    std::vector<char> received, sent;
    std::vector<size_t> receivedAt, sentAt; // header i: [at[i], at[i + 1])
    std::vector<int64_t> senders, receivers;
    std::vector<std::shared_ptr<Trace>> traces; // the newest last
    int refused = 0; // recordings dropped as too large or incomplete
    /// The newest recording that fits `c`: made with its type, operator
    /// and use of MPI_IN_PLACE, and with an operator that commutes as
    /// `commutative` says. Before the checks (no `commutative`), only a
    /// recording of MPI's own type and operator, which cannot have changed.
    const Trace *recordingFor(const Call &c,
                              std::optional<bool> commutative) const;
    void clear() {
      received.clear();
      sent.clear();
      receivedAt.assign(1, 0);
      sentAt.assign(1, 0);
      senders.clear();
      receivers.clear();
      traces.clear();
      refused = 0;
    }
  };
  /// The last calls on one communicator, most recent first
  /// (kept by its backend). Every rank makes the same calls on it in the
  /// same order (MPI's rule for collectives), so every rank finds a call
  /// here exactly when the others do: then its messages go without
  /// headers, each end knowing them from the last like call.
  struct Memory {
    std::vector<CallRecord> calls;
    CallRecord recording; // this call's, while it runs
    // Changes whenever `calls` or a record's recordings do, so that a
    // thread's LastReplay can tell that what it found is still there.
    uint64_t version = 0;
  };
  /// The call this thread last replayed through replayLast, and what it
  /// found for it: a call with the same arguments (but the buffers) on the
  /// same communicator, while no communicator has been freed and nothing
  /// in its Memory has changed, replays the same recording without looking
  /// for it (most of what a small message's call costs besides MPI's own).
  struct LastReplay;
  /// Whether this step's headers are known from `recall`; sets each
  /// receive's header to its prediction.
  bool predictHeaders();
  /// Keeps what this call received and sent for the next one like it.
  void remember();
  /// Puts record `at` of `memory` first (see Engine.cpp for when).
  static void moveToFront(Memory &memory, size_t at, bool repeated);
  /// Where `bytes` bytes at `at` lie, as a trace names them (false: not
  /// in memory a trace can name).
  bool locate(const char *at, size_t bytes, uint32_t &base,
              size_t &offset) const;
  /// memmove, noted by a recording call.
  void copyBytes(char *to, const char *from, size_t n);
  /// Notes where each piece lies in the recording (Trace::refs).
  void noteRefs(const std::vector<Piece> &pieces);
  /// Starts recording this call's effects (start()); keeps the recording
  /// with the last like call's record (finish()).
  void beginTrace();
  void keepTrace();
  // start()'s parts. A call like the last recorded one runs its recording
  // (its return code; none: this call runs the schedule).
  std::optional<int> replayRecorded(int numBuffers);
  int checkPermutation();
  int layOutBlocks(int numBuffers); // blocks, buffers, maxMessageBytes
  void placeInputs(uint64_t startEmpty);
  /// Runs a recorded call's effects on `call`'s buffers, with `w`'s lists.
  static int runTrace(const Trace &t, const Call &call, Backend &backend,
                      Workspace &w);
  /// runTrace's message op t.ops[opIndex] (a send, receive or wait): its
  /// return code.
  static int replayMessage(const Trace &t, size_t opIndex, const Call &call,
                           Backend &backend, Workspace &w);
  static int failCall(const Call &call, int code, const char *message);
  [[noreturn]] static void divergedCall(const Call &call, const char *why);
  /// Checks that a message's header is the one the last like call sent,
  /// which its receiver knows in its stead.
  int checkSent(const Outgoing &o);
  /// A repeated call found its messages differ from the last like call's
  /// (a bug, not a user's error): prints why and aborts, since other ranks
  /// may be waiting for what this rank no longer sends.
  [[noreturn]] void diverged(const char *why) const { divergedCall(call, why); }
  /// Record r of a received message's header.
  static Record recordAt(const Expected &e, size_t r);
  /// Performs the step's deliveries, in the order the receives were
  /// declared.
  int deliverAll();
  int deliver(int into, int32_t slot, const Record &r, const char *bytes,
              bool reduce);
  int collect(int fromBuffer, size_t first, size_t last,
              std::vector<Piece> &pieces);
  void collectPieces(int fromBuffer, size_t first, size_t last,
                     std::vector<Piece> &pieces);
  /// Where a shift or a permutation takes origin's block, and back.
  int64_t destOf(int64_t origin) const;
  int64_t originOf(int64_t dest) const;
  /// The call as collc/Meaning.h's rules read it.
  auto frame() const;
  /// Calls fn(origin, dest) for each block `h` names at this rank.
  template <typename Fn>
  void forEachBlock(const meaning::Holding &h, Fn &&fn) const;
  /// Calls fn(origin, dest) for each block this rank starts with.
  template <typename Fn> void forEachInput(Fn &&fn) const;
  /// Calls fn(origin, dest) for each block this rank outputs.
  template <typename Fn> void forEachOutput(Fn &&fn) const;

  /// The containers of an Engine, kept per thread between calls (so a call
  /// allocates nothing in the steady state).
  struct Workspace {
    bool busy = false;
    std::vector<int64_t> blockOrigin, blockDest;
    std::vector<int64_t> permutationTo, permutationFrom;
    std::vector<Buffer> buffers;
    std::vector<int32_t> sendList;
    std::vector<Outgoing> sends;
    std::vector<Expected> receives;
    std::vector<std::pair<char *, size_t>> taken;
    std::vector<Piece> pieces, single, sendPieces;
    std::vector<size_t> received;
    std::unique_ptr<char[]> stepStore;
    size_t stepCapacity = 0;
    size_t scratchUsed = 0, stepUsed = 0; // by this call: sum, peak
    std::vector<std::vector<uint16_t>> touched;
    std::vector<char *> bases; // replay's
  };
  /// This thread's workspace, or a new one for an Engine inside another
  /// (not something emitted code does).
  static Workspace *takeWorkspace();
  static Workspace &threadWorkspace();

  Call call;
  std::unique_ptr<Backend> ownedBackend; // the local backend's
  Backend *backend = nullptr;
  int64_t me = 0, p = 0, chunks = 1, chunkBase = 0, chunkExtra = 0;
  uint64_t bufferMask = 0; // a bit per buffer of the schedule
  MPI_Aint extent = 0;
  size_t blockBytes = 0;
  size_t maxMessageBytes = 0;
  bool commutative = true;
  // The workspace's containers, by name (bound, not swapped: binding costs
  // nothing per call).
  Workspace *workspace = takeWorkspace();
  std::vector<int64_t> &blockOrigin = workspace->blockOrigin,
                       &blockDest = workspace->blockDest;
  std::vector<Buffer> &buffers = workspace->buffers;
  std::vector<int32_t> &sendList = workspace->sendList; // this step's sends
  std::vector<Outgoing> &sends = workspace->sends;
  std::vector<Expected> &receives = workspace->receives;
  std::vector<std::pair<char *, size_t>> &taken =
      workspace->taken; // scratch of this call
  // endStep's working lists.
  std::vector<Piece> &pieces = workspace->pieces, &single = workspace->single,
                     &sendPieces = workspace->sendPieces;
  std::vector<size_t> &received = workspace->received;
  std::unique_ptr<char[]> &stepStore = workspace->stepStore; // stepBytes's
  size_t &stepCapacity = workspace->stepCapacity;
  std::vector<std::vector<uint16_t>> &touched = workspace->touched;
  Memory *memory = nullptr; // this communicator's, when its backend keeps one
  bool remembering = false; // whether this call's messages may be split
  const CallRecord *recall = nullptr; // the last like call's, if any
  size_t recalled = 0, resent = 0;    // its headers used so far
  // This call's recording, and the backend it runs on meanwhile.
  std::shared_ptr<Trace> tracing;
  std::shared_ptr<TracingBackend> tracer;
  size_t tracedStepBytes = 0; // step bytes the recording's steps have used
  bool replayedCall = false;
  bool started = false; // start() returned: failures are this rank's
  Staged stagedSend, stagedRecv; // a derived type's buffers, packed
};

} // namespace collc::rt
