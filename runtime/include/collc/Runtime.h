#pragma once
// The runtime that code emitted by `collc compile` calls. An emitted function
// describes its schedule step by step (who sends to whom, which chunks, into
// which buffers); the Engine moves the data.
//
// Chunk flow follows the compiler's simulator (compiler/simulate/
// Semantics.h): a chunk has coordinates (origin, dest, index); each rank
// starts with the chunks its collective gives it, in every buffer; a send
// carries the chunks of one buffer that the selector accepts, as they are at
// the start of the step; deliveries land at the end of the step, in the order
// the receives were declared (by rule, then by sender). Copy replaces the
// receiver's value; reduce folds into it, operands in rank order.
//
// Messages are self-describing: a sender lists the chunks it sends (with the
// ranks each combines), so a receiver needs no model of the sender's state,
// and the receiver derives the rest (mode, delivery buffers) from the rule
// evaluated for the sender.

#include "collc/Backend.h"

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

/// The .coll language's `**` on 64-bit integers (exponent >= 0), as
/// ir::printCpp spells it in emitted expressions.
inline int64_t collc_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  for (; exp > 0; --exp)
    result *= base;
  return result;
}

namespace collc::rt {

enum class Kind {
  Broadcast,
  Reduce,
  Allreduce,
  Allgather,
  ReduceScatter,
  Scatter,
  Gather,
  Scan,
  Alltoall,
  Shift,
};

/// The arguments of one call, as MPI names them. Unused ones stay default.
struct Call {
  const char *name = "";  // the emitted function, for messages
  Kind kind = Kind::Broadcast;
  const void *send = nullptr; // MPI_IN_PLACE allowed where MPI allows it
  void *recv = nullptr;
  int count = 0;              // elements per block
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;    // reductions only
  int root = 0;
  int64_t shift = 0;          // shift(q)
  MPI_Comm comm = MPI_COMM_NULL;
};

/// Chunk coordinates packed as the simulator packs them.
using ChunkKey = uint64_t;
inline ChunkKey chunkKey(int64_t origin, int64_t dest, int64_t index) {
  return (static_cast<uint64_t>(origin) << 44) |
         (static_cast<uint64_t>(dest) << 24) | static_cast<uint64_t>(index);
}

class Engine {
public:
  Engine();
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  /// Checks the arguments and connects to the communicator. Returns an MPI
  /// error code; on error, prints why (naming call.name) to stderr.
  int connect(const Call &call);
  int64_t rank() const { return me; }
  int64_t size() const { return p; }

  /// Loads each rank's input into `buffers` buffers split into `chunks`
  /// chunk indices per block. Call after the size checks.
  int start(int buffers, int64_t chunks);

  /// Prints "collc: NAME: message" to stderr and returns `code`.
  int fail(int code, const char *message) const;

  /// This rank sends to `peer` the chunks of `fromBuffer` that `select`
  /// accepts (as they are now: deliveries wait for endStep).
  template <typename Selector>
  void send(int64_t peer, int fromBuffer, Selector &&select) {
    std::vector<ChunkKey> keys;
    for (const auto &[key, value] : buffers[fromBuffer])
      if (select(origin(key), dest(key), index(key)))
        keys.push_back(key);
    sendChunks(peer, fromBuffer, keys);
  }
  /// This rank sends everything it holds in `fromBuffer`.
  void sendAll(int64_t peer, int fromBuffer);
  /// This rank receives from `sender` into the buffers whose bit is set in
  /// `intoMask`, by copy or by reduce.
  void receive(int64_t sender, uint64_t intoMask, bool reduce);
  /// Runs the step's sends and receives and delivers. `step` numbers steps
  /// in execution order (the message tag); `name` is for messages.
  int endStep(int64_t step, const char *name);

  /// Writes what the collective outputs at this rank from buffer 0.
  int finish();

  static int64_t origin(ChunkKey k) { return static_cast<int64_t>(k >> 44); }
  static int64_t dest(ChunkKey k) {
    return static_cast<int64_t>((k >> 24) & ((uint64_t(1) << 20) - 1));
  }
  static int64_t index(ChunkKey k) {
    return static_cast<int64_t>(k & ((uint64_t(1) << 24) - 1));
  }

private:
  /// A chunk's value: its bytes and the ranks it combines (an interval while
  /// `ordered`; reduces out of rank order clear it).
  struct Value {
    int64_t lo = 0, hi = 0;
    bool ordered = true;
    std::vector<char> bytes;
  };
  struct Expected {
    int64_t sender = 0;
    uint64_t intoMask = 0;
    bool reduce = false;
  };

  void sendChunks(int64_t peer, int fromBuffer,
                  const std::vector<ChunkKey> &keys);
  /// Element range of chunk index k within a block of `count` elements.
  int64_t chunkBegin(int64_t k) const;
  int64_t chunkLength(int64_t k) const;
  /// Where a chunk starts in the user's input / output at this rank (null
  /// when the collective gives this rank no such chunk).
  const char *inputBlock(int64_t origin, int64_t dest) const;
  char *outputBlock(int64_t origin, int64_t dest) const;
  int deliver(int into, ChunkKey key, Value value, bool reduce);

  Call call;
  std::unique_ptr<Backend> backend;
  int64_t me = 0, p = 0, chunks = 1;
  MPI_Aint extent = 0;
  bool commutative = true;
  std::vector<std::map<ChunkKey, Value>> buffers;
  std::vector<OutMessage> sends;
  std::vector<Expected> receives;
};

} // namespace collc::rt
