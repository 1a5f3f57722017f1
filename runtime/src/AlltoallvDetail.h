#pragma once
// What the irregular all-to-all's exchanges share (Alltoallv.cpp: the
// emitted schedules' steps and the direct exchange; AlltoallvPlan.cpp: the
// pattern tables' staged exchange, 001 §3; AlltoallvForwarding.cpp: the
// messages that forward pieces of blocks): tags, failures, the thread's
// workspace and its steps. Internal to the runtime.

#include "collc/Alltoallv.h"
#include "collc/Backend.h"
#include "collc/Datatype.h"
#include "collc/KeptMemory.h"
#include "collc/Runtime.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

namespace collc::rt::alltoallv_detail {

// Stage k's messages carry tag base + k. Over MPI they travel on a
// duplicate of their own (MpiChannel::Alltoallv: the schedule engine's step
// tags cover every tag MPI guarantees). The local backend has one set of
// mailboxes per local::run, shared with the engine, and no tag limit: its
// base lies above every engine tag.
constexpr int mpiTagBase = 0x2a40;
constexpr int localTagBase = 1 << 16;

/// The tag base of an exchange on `comm`.
inline int tagBaseOf(CommRef comm) {
  return comm.local ? localTagBase : mpiTagBase;
}

/// Every request is waited for before a normal return; the backend then
/// forgets them (on an error return too, so the next call starts clean).
struct ForgetRequests {
  Backend *backend;
  ~ForgetRequests() { backend->reset(); }
};

/// Prints "collc alltoallv: why" and returns `code`.
int fail(int code, const char *why);

/// A failure seen once messages are under way, where the counts decide it:
/// each rank passes its own, so this rank may be the only one to see it
/// while the others wait on its messages. As Engine::failLocal: the
/// communicator's error handler, then the job is aborted.
int failAlone(CommRef comm, const char *name, int code, const char *why);

/// Where each peer's block lies in the send and the receive buffer.
struct BlockLayout {
  const char *in;
  const int *sendcounts, *sdispls;
  char *out;
  const int *recvcounts, *rdispls;

  Piece sent(int peer) const { return block(in, sdispls, sendcounts, peer); }
  Piece received(int peer) const {
    return block(out, rdispls, recvcounts, peer);
  }
  Piece block(const char *base, const int *displs, const int *counts,
              int peer) const {
    return Piece{const_cast<char *>(base) + static_cast<size_t>(displs[peer]),
                 static_cast<size_t>(counts[peer])};
  }
};

/// MPI_Alltoallv's buffers at this rank as bytes, each side by its own
/// type (StagedBlocks): MPI asks only that what i sends j has the signature
/// j expects, so ranks may lay the same blocks out differently, and every
/// exchange counts and splits blocks in bytes. In place (MPI 4.0 §6.8),
/// the receive buffer's blocks are copied in as the send side.
struct ByteBlocks {
  StagedBlocks in, out;
  /// An MPI code and `why` for what only this rank may see (a null array,
  /// an invalid type, a negative count, a null buffer, over 2 GiB).
  int start(const void *sendbuf, const int *sendcounts, const int *sdispls,
            MPI_Datatype sendtype, void *recvbuf, const int *recvcounts,
            const int *rdispls, MPI_Datatype recvtype, int p, CommRef comm,
            const char *&why);
  /// Both sides as bytes, once start() succeeded.
  BlockLayout layout() const {
    return {in.base,  in.byteCounts.data(),  in.byteDispls.data(),
            out.base, out.byteCounts.data(), out.byteDispls.data()};
  }
  /// Unpacks what was received into a receive buffer with holes.
  int finish(CommRef comm) {
    in.finish(packingComm(comm)); // unpacks nothing: frees a large copy
    return out.finish(packingComm(comm));
  }
  static MPI_Comm packingComm(CommRef comm) {
    return comm.local ? MPI_COMM_SELF : comm.mpi;
  }
};

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
/// backend is a thread): emptied, and freed only as KeptBytes says, so
/// that a call allocates nothing once it has seen its largest messages.
/// Allocating it afresh made the heap grow and shrink on every call, and from
/// 32 KiB per pair on the page faults and TLB flushes cost 10-100 times the
/// exchange itself.
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
  // A forwarding message's pieces, gathered to send or to receive into.
  std::vector<Piece> gathered;

  /// Before a call: empties every message buffer (keeping its memory), so
  /// that trim() counts only what this call used.
  void startCall() {
    for (std::vector<Bytes> *set : {&buckets[0], &buckets[1], &inbox})
      for (Bytes &b : *set)
        b.clear();
    mine.clear();
  }
  /// After a call: frees the messages' buffers where they hold more than a
  /// thread keeps and calls no longer need it.
  void trim() {
    size_t used = mine.size(), held = mine.capacity();
    for (const std::vector<Bytes> *set : {&buckets[0], &buckets[1], &inbox})
      for (const Bytes &b : *set) {
        used += b.size();
        held += b.capacity();
      }
    if (!kept.release(used, held))
      return;
    for (std::vector<Bytes> *set : {&buckets[0], &buckets[1], &inbox})
      set->clear();
    Bytes().swap(mine);
  }

private:
  rt::detail::KeptBytes kept;
};

/// The thread's workspace for the length of a call; a call inside another
/// on the same thread gets one of its own.
struct HeldWorkspace {
  Workspace own;
  Workspace &workspace;
  HeldWorkspace() : workspace(thread().busy ? own : thread()) {
    workspace.busy = true;
    workspace.startCall();
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

/// This thread's last few ranks' steps, by schedule (a plan, or an emitted
/// schedule's name), size and rank, so that a call like an earlier one
/// does not work them out again. `found`: whether they are complete.
AlltoallvSteps::Rows &rowsFor(const void *schedule, int p, int me, bool &found);

/// A direct exchange (A1, 001 §3.1, or a `schedule x : alltoallv`): every
/// message is one whole block, so it goes from the send buffer straight into
/// the receive buffer, without run headers or buckets, and its size is the
/// receiver's recvcounts entry (no probe). The steps' order is `rows`'s.
/// Counts into `stats` (one stage) when asked to.
int directExchange(const AlltoallvSteps::Rows &rows, Backend &backend, int tag,
                   const BlockLayout &at, AlltoallvMode mode,
                   AlltoallvStats *stats);

/// An exchange whose messages forward pieces of blocks
/// (AlltoallvForwarding.cpp). Returns an MPI code and, on a failure, `why`;
/// `noted`: false where a walk (`filters`) may have noted too few pieces.
int forwardingExchange(AlltoallvSteps::Rows &rows,
                       const std::vector<AlltoallvSteps::BlockFilter> *filters,
                       Backend &backend, int tag, const char *in,
                       const int *sendcounts, const int *sdispls, char *out,
                       const int *recvcounts, const int *rdispls,
                       const char *&why, bool &noted);

} // namespace collc::rt::alltoallv_detail
