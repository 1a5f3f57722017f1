// Recording a call and replaying it (Engine::Trace, EngineDetail.h): the
// engine's effects as a list of operations on its buffers, simplified
// once, then run again for every like call.

#include "EngineDetail.h"

#include "collc/Datatype.h"
#include "collc/Runtime.h"

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
  const meaning::Conditions &m = meaningOf(call.kind);
  const bool perDest = m.sendPerDest(), perOrigin = m.recvPerOrigin();
  const void *input = m.inputInReceive(inPlace) ? nullptr : call.send;
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
  constexpr size_t farthest = 64;    // ops looked at after a receive
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
      receiveSizes.push_back(
          op.sizesLast > op.sizesFirst ? t.sizes[op.sizesFirst] : 0);
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
  wait.peer = 0;    // first
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

namespace {
// Inlined, as is Engine::replayMessage: most ops have one piece, and a call
// of a small message is mostly the replay loop's overhead.

/// Trace ref i at the call's bases (Trace::Ref).
template <typename Trace>
__attribute__((always_inline)) inline Piece
refPiece(const Trace &t, const std::vector<char *> &bases, uint32_t i) {
  const auto &r = t.refs[i];
  return Piece{bases[r.base] + r.offset, r.bytes};
}

/// Refs first..last at the call's bases, into `into`.
template <typename Trace>
__attribute__((always_inline)) inline void
refPieces(const Trace &t, const std::vector<char *> &bases, uint32_t first,
          uint32_t last, std::vector<Piece> &into) {
  into.resize(last - first);
  for (uint32_t i = first; i < last; ++i)
    into[i - first] = refPiece(t, bases, i);
}
} // namespace

[[gnu::always_inline]] inline int
Engine::replayMessage(const Trace &t, size_t opIndex, const Call &call,
                      Backend &backend, Workspace &w) {
  const Trace::Op &op = t.ops[opIndex];
  const std::vector<char *> &bases = w.bases;
  std::vector<Piece> &pieces = w.pieces, &single = w.single;
  auto sizesMatch = [&](const size_t *got) {
    for (uint32_t i = op.sizesFirst; i < op.sizesLast; ++i)
      if (got[i - op.sizesFirst] != t.sizes[i])
        divergedCall(call, "a message differs from the one the last call "
                           "like this one received");
  };
  int rc = MPI_SUCCESS, request = 0;
  size_t got = 0;
  switch (op.code) {
  case Trace::Code::Send:
    if (op.split - op.first == 1)
      return backend.sendOne(op.peer, op.tag, refPiece(t, bases, op.first));
    refPieces(t, bases, op.first, op.split, pieces);
    return backend.send(op.peer, op.tag, pieces);
  case Trace::Code::Isend:
    refPieces(t, bases, op.first, op.split, pieces);
    return backend.isend(op.peer, op.tag, pieces, request);
  case Trace::Code::Irecv:
    refPieces(t, bases, op.split, op.last, single);
    return backend.irecv(op.peer, op.tag, single, request);
  case Trace::Code::Recv:
    if (op.last - op.split == 1) {
      rc = backend.recvOne(op.peer, op.tag, refPiece(t, bases, op.split), got);
    } else {
      refPieces(t, bases, op.split, op.last, single);
      rc = backend.recv(op.peer, op.tag, single, got);
    }
    sizesMatch(&got);
    return rc;
  case Trace::Code::Sendrecv:
    if (op.split - op.first == 1 && op.last - op.split == 1) {
      rc = backend.sendrecvOne(op.peer, op.tag, refPiece(t, bases, op.first),
                               op.peer2, op.tag2, refPiece(t, bases, op.split),
                               got);
    } else {
      refPieces(t, bases, op.first, op.split, pieces);
      refPieces(t, bases, op.split, op.last, single);
      rc = backend.sendrecv(op.peer, op.tag, pieces, op.peer2, op.tag2, single,
                            got);
    }
    sizesMatch(&got);
    return rc;
  case Trace::Code::WaitAll: {
    std::vector<size_t> &received = w.received;
    received.resize(op.sizesLast - op.sizesFirst);
    rc = backend.waitAll(op.peer, op.tag,
                         received.empty() ? nullptr : received.data());
    sizesMatch(received.data());
    return rc;
  }
  case Trace::Code::Reset: // runTrace's own
  case Trace::Code::Copy:
  case Trace::Code::Fold:
    break;
  }
  return MPI_SUCCESS;
}

int Engine::runTrace(const Trace &t, const Call &call, Backend &backend,
                     Workspace &w) {
  std::vector<char *> &bases = w.bases;
  ++replayCount;
  bases.assign({nullptr, nullptr, stepBytesOf(w, t.stepBytes)});
  if (call.send != MPI_IN_PLACE)
    bases[Trace::Input] =
        const_cast<char *>(static_cast<const char *>(call.send));
  if (call.recv != MPI_IN_PLACE)
    bases[Trace::Output] = static_cast<char *>(call.recv);
  for (const auto &block : t.scratch)
    bases.push_back(block.get());
  auto at = [&](uint32_t i) { return refPiece(t, bases, i).data; };
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const Trace::Op &op = t.ops[i];
    int rc = MPI_SUCCESS;
    switch (op.code) {
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
    case Trace::Code::Send:
    case Trace::Code::Isend:
    case Trace::Code::Irecv:
    case Trace::Code::Recv:
    case Trace::Code::Sendrecv:
    case Trace::Code::WaitAll:
      rc = replayMessage(t, i, call, backend, w);
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
           c.op == op && c.kind == kind && c.shift == shift &&
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
  // A side with a type of its own is staged by connect(), as a recording is
  // not (it ran on `type`).
  if (c.local || w.busy || c.sidesDiffer())
    return false;
  // The same call as one replayed here: its record is where it was, in
  // its communicator's front half (nothing changed there since), so it
  // runs as found then, and nothing moves (moveToFront).
  for (LastReplay &last : lasts)
    if (last.trace && last.matches(c) && last.freed == mpiDuplicatesFreed() &&
        last.memory->version == last.version) {
      w.busy = true;
      rc = runTrace(*last.trace, c, *last.backend, w);
      if (rc != MPI_SUCCESS) {
        last.backend->reset(); // a recording ends with its last step's reset
        last.trace = nullptr;
      }
      releaseKept(w); // after the reset, as ~Engine does
      w.busy = false;
      return true;
    }
  Backend *backend = nullptr;
  if (makeMpiBackend(c.comm, backend) != MPI_SUCCESS || c.rotation < 0 ||
      c.rotation >= backend->size())
    return false; // connect() reports it
  backend = backend->rotated(c.rotation);
  auto *memory = static_cast<Memory *>(backend->engineMemory.get());
  if (!memory)
    return false;
  // The record start() would find: signatures are unique among the calls
  // kept, and one whose recording fits this call's predefined type and
  // operator has this call's signature (its extent follows from the type).
  // A block's bytes where nothing is folded, as connect() counts it.
  int64_t count = c.count;
  if (!isReduction(c.kind)) {
    int size = 0;
    if (c.type == lastNamedType)
      size = lastNamedSize;
    else if (c.type == MPI_DATATYPE_NULL ||
             PMPI_Type_size(c.type, &size) != MPI_SUCCESS)
      return false;
    count *= size;
  }
  std::vector<CallRecord> &calls = memory->calls;
  for (size_t at = 0; at < calls.size(); ++at) {
    const CallRecord &r = calls[at];
    if (r.signature.name != c.name || r.signature.kind != c.kind ||
        r.signature.count != count || r.signature.root != c.root ||
        r.signature.shift != c.shift)
      continue;
    const Trace *t = r.recordingFor(c, std::nullopt);
    if (!t)
      continue;
    w.busy = true;
    rc = runTrace(*t, c, *backend, w);
    if (rc != MPI_SUCCESS)
      backend->reset(); // a recording ends with its last step's reset
    releaseKept(w);
    w.busy = false;
    if (rc != MPI_SUCCESS)
      return true;
    // As remember() does for the call start() would have replayed, so that
    // every rank keeps its records in the same order.
    // (The recording itself stays where it is: `t` holds.)
    moveToFront(*memory, at, true);
    // Now in the front half, where a repeat moves nothing.
    LastReplay &last = lasts[nextLast];
    nextLast = (nextLast + 1) % kept;
    last = {c.name,
            c.kind,
            c.count,
            c.root,
            c.rotation,
            c.shift,
            c.type,
            c.op,
            c.send == MPI_IN_PLACE,
            c.recv == MPI_IN_PLACE,
            c.comm,
            backend,
            memory,
            t,
            mpiDuplicatesFreed(),
            memory->version};
    return true;
  }
  return false;
}

} // namespace collc::rt
