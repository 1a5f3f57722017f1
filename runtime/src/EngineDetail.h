#pragma once
// What the engine's three parts share (Engine.cpp: state, chunk slots and
// MPI's layout; EngineMessages.cpp: the wire format and header recall;
// EngineTrace.cpp: recording a call and replaying it): the limits, the
// thread's pools and caches, and a recording's form. Internal to the runtime.

#include "collc/Backend.h"
#include "collc/Runtime.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace collc::rt {
namespace detail {
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
inline thread_local uint64_t replayCount = 0;  // Engine::replays()
inline thread_local uint64_t startedCount = 0; // Engine::startedEarly()

/// What a collective of kind `k` means (collc/Meaning.h's table).
inline const meaning::Conditions &meaningOf(Kind k) {
  return meaning::conditionsOf(k);
}
inline bool isReduction(Kind k) { return meaningOf(k).reduction(); }
inline bool isRooted(Kind k) { return meaningOf(k).rooted(); }

/// encode()'s rule, which readHeader() checks: a message travels whole
/// when it is small or has no data.
inline bool wholeMessage(size_t head, size_t data) {
  return data == 0 || head + data <= wholeLimit;
}

inline void putU64(char *&out, uint64_t v) {
  std::memcpy(out, &v, sizeof v);
  out += sizeof v;
}
inline uint64_t getU64(const char *&in) {
  uint64_t v;
  std::memcpy(&v, in, sizeof v);
  in += sizeof v;
  return v;
}

// A predefined datatype or operator is never freed, so what was learnt about
// the last one a thread used stays true: a program that calls collectives
// on one type asks MPI once, not at every call.
inline thread_local MPI_Datatype lastNamedType = MPI_DATATYPE_NULL;
inline thread_local int lastNamedSize = 0;
inline thread_local MPI_Op lastNamedOp = MPI_OP_NULL;
} // namespace detail

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

} // namespace collc::rt
