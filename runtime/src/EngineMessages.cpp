// The engine's messages (Engine.cpp has the rest).
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
        // Received in place into another buffer: taken from there.
        const char *from =
            e.direct
                ? slotData(
                      buffers[static_cast<size_t>(e.directBuffer)]
                          .blocks[static_cast<size_t>(blockOfSlot(rec.slot))],
                      chunkOf(rec.slot))
                : data;
        if (int rc = deliver(b, rec.slot, rec, from, e.reduce))
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
      planOne(
          e,
          [&](int b, int32_t slot) {
            for (const Outgoing &o : sends)
              if (o.buffer == b)
                for (size_t i = o.first; i < o.last; ++i)
                  if (sendList[i] == slot)
                    return false;
            return true;
          },
          false);
    return;
  }
  const size_t numSlots = buffers.front().slots.size();
  touched.resize(buffers.size());
  for (auto &t : touched)
    t.assign(numSlots, 0);
  for (const Outgoing &o : sends)
    for (size_t i = o.first; i < o.last; ++i)
      touched[static_cast<size_t>(o.buffer)][static_cast<size_t>(sendList[i])] =
          2;
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
    planOne(
        e,
        [&](int b, int32_t slot) {
          return touched[static_cast<size_t>(b)][static_cast<size_t>(slot)] ==
                 1;
        },
        receivedTwice >> std::countr_zero(e.intoMask) & 1);
  }
}

template <typename Alone>
void Engine::planOne(Expected &e, Alone &&alone, bool bufferShared) {
  const bool single = std::popcount(e.intoMask) == 1;
  e.directBuffer = std::countr_zero(e.intoMask);
  e.direct = !e.reduce && single;
  for (size_t r = 0; r < e.records && e.direct; ++r)
    e.direct = alone(e.directBuffer, recordAt(e, r).slot);
  // A message into several buffers lands in place in one that only takes a
  // copy (nothing held there yet, or no fold), and the others take it from
  // there: one copy fewer on an exclusive scan's chain (`into msg, result`).
  for (uint64_t m = single ? 0 : e.intoMask; m && !e.direct; m &= m - 1) {
    const int b = std::countr_zero(m);
    const Buffer &into = buffers[static_cast<size_t>(b)];
    bool copies = true;
    for (size_t r = 0; r < e.records && copies; ++r) {
      const int32_t slot = recordAt(e, r).slot;
      copies = (!e.reduce || !into.slots[static_cast<size_t>(slot)].held) &&
               alone(b, slot);
    }
    if (copies) {
      e.direct = true;
      e.directBuffer = b;
    }
  }
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
  pieces.assign(
      1, {o.message + head, static_cast<size_t>(out - o.message) - head});
}

int Engine::exchangeRepeatSingle(int tagData) {
  Expected *e = receives.empty() || !receives.front().dataBytes
                    ? nullptr
                    : &receives.front();
  Outgoing *o =
      sends.empty() || sends.front().dataBytes == 0 ? nullptr : &sends.front();
  if (e)
    landData(*e);
  std::swap(single, pieces); // the receive's pieces
  if (o)
    dataOf(*o);
  size_t got = 0;
  int rc = MPI_SUCCESS;
  if (e && o)
    rc = backend->sendrecv(o->peer, tagData, pieces,
                           static_cast<int>(e->sender), tagData, single, got);
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
  // At most one receive and one send (each step of a hypercube or
  // pairwise-exchange schedule): one blocking call.
  if (receives.size() <= 1 && sends.size() <= 1)
    return exchangeRepeatSingle(tagData);
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

int Engine::exchangeSingle(int tagHeader, int tagData, size_t bound) {
  int first = -1, last = -1; // the data receive's requests
  Expected &e = receives.front();
  single.assign(1, {e.landing, bound});
  size_t got = 0;
  if (sends.empty()) {
    if (int rc =
            backend->recv(static_cast<int>(e.sender), tagHeader, single, got))
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
  // One receive and at most one small send (each step of a hypercube or
  // pairwise-exchange schedule): one blocking call.
  if (receives.size() == 1 && sends.size() <= 1 &&
      (sends.empty() || sends.front().whole))
    return exchangeSingle(tagHeader, tagData, bound);
  int first = -1, last = -1; // the data receives' requests
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
  if (int rc = backend->waitAll(numReceives, std::max(requests, last), nullptr))
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

} // namespace collc::rt
