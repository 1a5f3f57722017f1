// An emitted `schedule x : alltoallv` whose rules forward blocks, or with
// `chunks n` their pieces (collc/Alltoallv.h's AlltoallvSteps): each
// message carries the pieces its filter names behind headers that say what
// they are and where they lie in their block.

#include "AlltoallvDetail.h"

#include <algorithm>
#include <cstring>

namespace collc::rt::alltoallv_detail {
namespace {

/// A piece of a block in a forwarding message (a `schedule x : alltoallv`
/// whose blocks are split into `chunks` pieces): which piece, where it
/// lies in its block, and its `count` bytes after the headers.
struct PieceHeader {
  int32_t origin;
  int32_t dest;
  int64_t index;
  int64_t offset;
  int64_t count;
};

/// Piece k of `pieces` of a block of n bytes: its first byte and its
/// length, n * k / pieces onwards, so that pieces differ by one at most.
struct PieceSpan {
  int64_t offset, count;
};
PieceSpan pieceOf(int64_t n, int64_t k, int64_t pieces) {
  const int64_t at = n * k / pieces;
  return {at, n * (k + 1) / pieces - at};
}

/// The i-th piece header of a forwarding message, after its piece count.
PieceHeader pieceHeader(const char *message, int64_t i) {
  PieceHeader h;
  std::memcpy(&h, message + sizeof(int64_t) + static_cast<size_t>(i) * sizeof h,
              sizeof h);
  return h;
}

/// A message's first word: its piece count, and this bit where pieces may
/// have been left out for being empty.
constexpr int64_t emptiesLeftOut = int64_t(1) << 62;

/// A message of up to this many bytes travels packed, its pieces copied
/// behind the headers; a longer one is the headers, then the pieces from
/// where they lie (several make a derived datatype on each side). At 4
/// ranks, packing took 0.6-1.0 of the gathered time with messages to
/// 64 KiB, about 1.1 with messages of 65-260 KiB and up to 1.8 at 1 MiB
/// (bench/results/alltoallv-ir.txt).
constexpr size_t wholeMessage = size_t(1) << 17;

/// One call's exchange (forwardingExchange says what it does).
class ForwardingExchange {
public:
  ForwardingExchange(AlltoallvSteps::Rows &rows,
                     const std::vector<AlltoallvSteps::BlockFilter> *filters,
                     Backend &backend, int tag, const char *in,
                     const int *sendcounts, const int *sdispls, char *out,
                     const int *recvcounts, const int *rdispls, Workspace &ws,
                     const char *&why)
      : rows(rows), filters(filters), backend(backend), tag(tag), in(in),
        sendcounts(sendcounts), sdispls(sdispls), out(out),
        recvcounts(recvcounts), rdispls(rdispls), ws(ws), why(why), p(rows.p),
        me(rows.me), pieces(rows.pieces) {}

  /// The exchange: an MPI code; `noted`: false where a walk may have noted
  /// too few pieces.
  int run(bool &noted);

private:
  /// A piece's id: its block's (origin * p + dest), then its index.
  int64_t idOf(int64_t origin, int64_t dest, int64_t index) const {
    return (origin * p + dest) * pieces + index;
  }
  struct PieceName {
    int64_t origin, dest, index;
  };
  PieceName nameOf(int64_t id) const {
    return PieceName{id / pieces / p, id / pieces % p, id % pieces};
  }
  int malformed() {
    why = "a message is malformed";
    return MPI_ERR_INTERN;
  }
  bool wellFormed(const PieceHeader &h) const {
    return h.origin >= 0 && h.origin < p && h.dest >= 0 && h.dest < p &&
           h.index >= 0 && h.index < pieces && h.count >= 0;
  }
  bool find(int64_t id, Piece &piece, int64_t &offset) const;
  char *placeOf(const PieceHeader &h);
  int deliver(const PieceHeader &h, const char *payload);
  void noteSends(int step);
  int post(int k);
  int receive(int from);
  int receiveLong(int from, Bytes &m, int64_t runs, size_t headers,
                  size_t &bytes, bool &inPlace);
  int waitForSends();

  AlltoallvSteps::Rows &rows;
  const std::vector<AlltoallvSteps::BlockFilter> *filters; // a walk's
  Backend &backend;
  const int tag;
  const char *const in;
  const int *const sendcounts, *const sdispls;
  char *const out;
  const int *const recvcounts, *const rdispls;
  Workspace &ws;
  const char *&why;
  const int64_t p, me, pieces;
  /// Whether a message that may lack pieces came (so the walk may too).
  bool partial = false;
  /// Messages received so far (each stays in ws.inbox: its pieces may go on).
  size_t received = 0;
};

/// Where piece `id` lies now, with its offset in its block: the own ones
/// in the send buffer, the others where they were received.
bool ForwardingExchange::find(int64_t id, Piece &piece, int64_t &offset) const {
  if (const PieceName n = nameOf(id); n.origin == me) {
    const PieceSpan span = pieceOf(sendcounts[n.dest], n.index, pieces);
    offset = span.offset;
    piece = Piece{const_cast<char *>(in) +
                      static_cast<size_t>(sdispls[n.dest] + span.offset),
                  static_cast<size_t>(span.count)};
    return true;
  }
  auto it = ws.held.find(id);
  if (it == ws.held.end())
    return false;
  std::tie(piece, offset) = it->second;
  return true;
}

/// Where a piece for this rank goes, or null if it does not fit recvcounts.
char *ForwardingExchange::placeOf(const PieceHeader &h) {
  if (h.offset < 0 || h.count < 0 ||
      h.offset + h.count > recvcounts[h.origin]) {
    why = "a block does not fit recvcounts";
    return nullptr;
  }
  return out + static_cast<size_t>(rdispls[h.origin] + h.offset);
}

/// Takes one piece in: an MPI code. A piece of this rank's own block may
/// come back: it is read from the send buffer, and counted, noted and sent
/// on as the own piece it is, never twice.
int ForwardingExchange::deliver(const PieceHeader &h, const char *payload) {
  if (!wellFormed(h))
    return malformed();
  if (h.origin == me)
    return MPI_SUCCESS;
  const int64_t id = idOf(h.origin, h.dest, h.index);
  const size_t bytes = static_cast<size_t>(h.count);
  char *at = const_cast<char *>(payload);
  if (h.dest == me) {
    at = placeOf(h);
    if (!at)
      return MPI_ERR_TRUNCATE;
    if (at != payload)
      moveBytes(at, payload, bytes);
  }
  if (ws.held.insert_or_assign(id, std::pair(Piece{at, bytes}, h.offset))
          .second) {
    if (h.dest == me)
      ++ws.arrived[static_cast<size_t>(h.origin)];
    if (filters)
      ws.order.push_back(id);
  }
  return MPI_SUCCESS;
}

/// The walk notes step `step`'s sends: the pieces each filter names among
/// those this rank holds, in the order it came to hold them, and the first
/// step that starts with all of them here (a later call may send then).
void ForwardingExchange::noteSends(int step) {
  ws.heldBefore.push_back(ws.order.size());
  for (int k = rows.sendAt[step]; k < rows.sendAt[step + 1]; ++k) {
    const int to = rows.sends[k];
    const AlltoallvSteps::BlockFilter &filter = (*filters)[k];
    // The last of the send's pieces that this rank came to hold.
    size_t last = 0;
    if (!filter) {
      for (int64_t i = 0; i < pieces; ++i)
        rows.blocks.push_back(idOf(me, to, i));
    } else {
      for (size_t i = 0; i < ws.order.size(); ++i)
        if (const PieceName n = nameOf(ws.order[i]);
            filter(n.origin, n.dest, n.index)) {
          rows.blocks.push_back(ws.order[i]);
          last = i;
        }
    }
    rows.blockAt.push_back(static_cast<int>(rows.blocks.size()));
    rows.readyAt.push_back(static_cast<int>(
        std::upper_bound(ws.heldBefore.begin(), ws.heldBefore.end(), last) -
        ws.heldBefore.begin()));
  }
}

/// Sends send k: the piece count and headers, then the pieces, copied
/// behind them up to wholeMessage bytes, else sent from where they lie (one
/// gathered message). Sends go in the order of the steps, so that each peer
/// takes them in that order; each one's buffer lives until all are done.
int ForwardingExchange::post(int k) {
  const int to = rows.sends[k];
  Bytes &b = ws.buckets[0][k];
  b.resize(sizeof(int64_t));
  size_t payload = 0;
  std::vector<Piece> &gathered = ws.gathered;
  gathered.assign(1, Piece{});
  bool leftOut = partial; // a partial walk noted only what came
  for (int i = rows.blockAt[k]; i < rows.blockAt[k + 1]; ++i) {
    const int64_t id = rows.blocks[i];
    Piece piece;
    int64_t offset = 0;
    if (!find(id, piece, offset)) {
      // A later call: an empty piece did not travel (below).
      if (!filters) {
        leftOut = true;
        continue;
      }
      why = "a block to send on never arrived";
      return MPI_ERR_INTERN;
    }
    // A walk sends every piece it holds, so that each rank notes every
    // piece it will forward whatever the counts; a later call leaves the
    // empty ones out, as the tables send no empty run (a sparse exchange
    // would otherwise carry p * pieces headers a rank).
    if (piece.bytes == 0 && !filters) {
      leftOut = true;
      continue;
    }
    const PieceName n = nameOf(id);
    const PieceHeader h{static_cast<int32_t>(n.origin),
                        static_cast<int32_t>(n.dest), n.index, offset,
                        static_cast<int64_t>(piece.bytes)};
    const size_t at = b.size();
    b.resize(at + sizeof h);
    std::memcpy(b.data() + at, &h, sizeof h);
    payload += piece.bytes;
    if (piece.bytes)
      gathered.push_back(piece);
  }
  const int64_t runs =
      static_cast<int64_t>((b.size() - sizeof(int64_t)) / sizeof(PieceHeader));
  const int64_t word = leftOut ? runs | emptiesLeftOut : runs;
  std::memcpy(b.data(), &word, sizeof word);
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
    ws.sendRequests.push_back(request);
    gathered.erase(gathered.begin());
  } else {
    gathered[0] = Piece{b.data(), b.size()};
  }
  if (int rc = backend.isend(to, tag, gathered, request))
    return rc;
  ws.sendRequests.push_back(request);
  return MPI_SUCCESS;
}

/// Receives the next message, from `from`, and takes its pieces in.
int ForwardingExchange::receive(int from) {
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
  if (runs >= 0 && (runs & emptiesLeftOut)) {
    runs &= ~emptiesLeftOut;
    partial = true;
  }
  const size_t headers =
      sizeof runs + static_cast<size_t>(runs) * sizeof(PieceHeader);
  if (runs < 0 || runs > p * p * pieces || headers > bytes)
    return malformed();
  bool inPlace = false;
  if (int rc = receiveLong(from, m, runs, headers, bytes, inPlace))
    return rc;
  size_t at = headers;
  for (int64_t i = 0; i < runs; ++i) {
    const PieceHeader h = pieceHeader(m.data(), i);
    const size_t n = static_cast<size_t>(h.count);
    if (!wellFormed(h) || at + n > bytes)
      return malformed();
    const char *payload = m.data() + at;
    if (inPlace && h.dest == me && n && !(payload = placeOf(h)))
      return MPI_ERR_TRUNCATE;
    if (int rc = deliver(h, payload))
      return rc;
    at += n;
  }
  return at == bytes ? MPI_SUCCESS : malformed();
}

/// A message that is only headers, of pieces too long to travel with them:
/// they follow, taken into place, those for this rank into the receive
/// buffer and the rest behind the headers in `m` (its layout when packed).
int ForwardingExchange::receiveLong(int from, Bytes &m, int64_t runs,
                                    size_t headers, size_t &bytes,
                                    bool &inPlace) {
  inPlace = false;
  if (bytes != headers)
    return MPI_SUCCESS;
  size_t payload = 0;
  for (int64_t i = 0; i < runs; ++i) {
    const PieceHeader h = pieceHeader(m.data(), i);
    if (!wellFormed(h))
      return malformed();
    payload += static_cast<size_t>(h.count);
  }
  // Packed, or only headers (however many): no second message.
  if (payload == 0 || headers + payload <= wholeMessage)
    return MPI_SUCCESS;
  m.resize(headers + payload);
  std::vector<Piece> &into = ws.gathered;
  into.clear();
  size_t at = headers;
  for (int64_t i = 0; i < runs; ++i) {
    const PieceHeader h = pieceHeader(m.data(), i);
    const size_t n = static_cast<size_t>(h.count);
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
  if (got != 0 && got != payload)
    return malformed();
  bytes = headers + payload;
  inPlace = true;
  return MPI_SUCCESS;
}

/// The sends' requests, a run of consecutive numbers at a time.
int ForwardingExchange::waitForSends() {
  const std::vector<int> &requests = ws.sendRequests;
  for (size_t i = 0, j = 0; i < requests.size(); i = j) {
    for (j = i + 1; j < requests.size() && requests[j] == requests[j - 1] + 1;
         ++j)
      ;
    if (int rc = backend.waitAll(requests[i], requests[j - 1] + 1, nullptr))
      return rc;
  }
  return MPI_SUCCESS;
}

int ForwardingExchange::run(bool &noted) {
  const int steps = static_cast<int>(rows.sendAt.size()) - 1;
  // Every received message stays until the end: its pieces may go on.
  if (ws.inbox.size() < rows.receives.size())
    ws.inbox.resize(rows.receives.size());
  if (ws.buckets[0].size() < rows.sends.size())
    ws.buckets[0].resize(rows.sends.size());
  ws.held.clear();
  ws.order.clear();
  ws.heldBefore.clear();
  ws.sendRequests.clear();
  ws.arrived.assign(static_cast<size_t>(p), 0);
  if (filters) {
    rows.blockAt.assign(1, 0);
    rows.blocks.clear();
    rows.readyAt.clear();
    for (int64_t d = 0; d < p; ++d)
      for (int64_t k = 0; k < pieces; ++k)
        ws.order.push_back(idOf(me, d, k));
  }
  if (sendcounts[me] > recvcounts[me]) {
    why = "a block does not fit recvcounts";
    return MPI_ERR_TRUNCATE;
  }
  moveBytes(out + static_cast<size_t>(rdispls[me]),
            in + static_cast<size_t>(sdispls[me]),
            static_cast<size_t>(sendcounts[me]));
  ws.arrived[static_cast<size_t>(me)] = pieces;

  const int sends = static_cast<int>(rows.sends.size());
  int posted = 0; // sends 0 .. posted - 1 have gone
  for (int s = 0; s < steps; ++s) {
    if (filters)
      noteSends(s);
    for (; posted < rows.sendAt[s + 1]; ++posted)
      if (int rc = post(posted))
        return rc;
    // On a call whose pieces were noted, a send whose pieces are all here
    // (its own, or arrived) goes ahead of its step, once those before it
    // have gone: the steps of a stage that deals its own blocks go at once.
    for (; !filters && posted < sends && rows.readyAt[posted] <= s; ++posted)
      if (int rc = post(posted))
        return rc;
    for (int k = rows.receiveAt[s]; k < rows.receiveAt[s + 1]; ++k)
      if (int rc = receive(rows.receives[k]))
        return rc;
  }
  if (int rc = waitForSends())
    return rc;
  // Correctness is proved; a piece that never came is the runtime's fault.
  // (A later call cannot tell a piece left out for being empty from one
  // lost: a walk that got every piece checks.)
  noted = !filters || !partial;
  if (filters && !partial &&
      std::find_if(ws.arrived.begin(), ws.arrived.end(), [&](int64_t n) {
        return n != pieces;
      }) != ws.arrived.end()) {
    why = "a block for this rank never arrived";
    return MPI_ERR_INTERN;
  }
  return MPI_SUCCESS;
}

} // namespace

/// An exchange whose messages forward pieces of blocks (a `schedule x :
/// alltoallv` with chunk filters; a block is one piece without `chunks`):
/// each message is its number of pieces, their PieceHeaders, then the
/// pieces, and its size is probed (a long one leaves from where its pieces
/// lie). A piece for this rank lands in the receive buffer; any other is
/// kept, in the message it came in, until a later step sends it on. A send's
/// pieces are those its filter names among what this rank holds (all it
/// names: causality is proved), in the order it came to hold them; the
/// first call picks them with the filters (`filters`) and notes them in
/// `rows`, later calls alike send what was noted but the empty pieces.
/// Each rank keeps its own notes, so a rank may walk again (its notes
/// forgotten, or pushed out by others) while its peers leave empty pieces
/// out: their messages say so, and such a walk notes too little, so it
/// checks no arrivals, marks its own messages alike and is not kept. The
/// rank walks at each call until one in which no piece bound its way was
/// left out (no early sends meanwhile).
int forwardingExchange(AlltoallvSteps::Rows &rows,
                       const std::vector<AlltoallvSteps::BlockFilter> *filters,
                       Backend &backend, int tag, const char *in,
                       const int *sendcounts, const int *sdispls, char *out,
                       const int *recvcounts, const int *rdispls,
                       const char *&why, bool &noted) {
  HeldWorkspace lease;
  const int rc =
      ForwardingExchange(rows, filters, backend, tag, in, sendcounts, sdispls,
                         out, recvcounts, rdispls, lease.workspace, why)
          .run(noted);
  // After a failure, requests may still write into the buffers.
  if (rc == MPI_SUCCESS)
    lease.workspace.trim();
  return rc;
}

} // namespace collc::rt::alltoallv_detail
