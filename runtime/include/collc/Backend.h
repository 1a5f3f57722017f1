#pragma once
// The narrow interface between the schedule engine and a transport: start
// sends and receives of byte messages, wait for them, and fold received data
// into a buffer. A message is the concatenation of a list of pieces, so data
// goes straight from where it lies to where it belongs; its content is the
// engine's business (runtime/src/Engine.cpp describes the format).

#include <mpi.h>

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

namespace collc::rt {

/// A contiguous range of bytes.
struct Piece {
  char *data = nullptr;
  size_t bytes = 0;
};

class LocalComm;

class Backend {
public:
  virtual ~Backend() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Starts sending the concatenation of `pieces` to `peer`; the pieces stay
  /// untouched until the request completes. Messages from one rank to another
  /// with one tag are received in the order they were sent. Sets `request`
  /// (a small integer, valid until reset()); returns an MPI error code.
  virtual int isend(int peer, int tag, const std::vector<Piece> &pieces,
                    int &request) = 0;
  /// Sends the concatenation of `pieces` to `peer` and returns when the
  /// pieces may be reused. Only for a message whose receive is posted, or
  /// will be without waiting on this rank (a step's receives are all posted
  /// before its sends), else two ranks sending to each other could wait
  /// forever. Saves the request an isend costs.
  virtual int send(int peer, int tag, const std::vector<Piece> &pieces) {
    int request = 0;
    size_t bytes = 0;
    if (int rc = isend(peer, tag, pieces, request))
      return rc;
    return wait(request, bytes);
  }
  /// Receives the next message from `peer` with `tag` into `pieces` and
  /// sets `bytes` to its size.
  virtual int recv(int peer, int tag, const std::vector<Piece> &pieces,
                   size_t &bytes) {
    int request = 0;
    if (int rc = irecv(peer, tag, pieces, request))
      return rc;
    return wait(request, bytes);
  }
  /// send(dest, sendTag, out) and recv(source, recvTag, in, bytes) at once,
  /// the receive posted first: a step's one exchange in one call.
  virtual int sendrecv(int dest, int sendTag, const std::vector<Piece> &out,
                       int source, int recvTag, const std::vector<Piece> &in,
                       size_t &bytes) {
    int request = 0;
    if (int rc = irecv(source, recvTag, in, request))
      return rc;
    if (int rc = send(dest, sendTag, out))
      return rc;
    return wait(request, bytes);
  }
  /// send(), recv() and sendrecv() of messages of one piece, most of a
  /// replayed call's, which a transport may pass on without making a list.
  virtual int sendOne(int peer, int tag, Piece piece) {
    one.assign(1, piece);
    return send(peer, tag, one);
  }
  virtual int recvOne(int peer, int tag, Piece piece, size_t &bytes) {
    one.assign(1, piece);
    return recv(peer, tag, one, bytes);
  }
  virtual int sendrecvOne(int dest, int sendTag, Piece out, int source,
                          int recvTag, Piece in, size_t &bytes) {
    one.assign(1, out);
    other.assign(1, in);
    return sendrecv(dest, sendTag, one, source, recvTag, other, bytes);
  }
  /// Starts receiving the next message from `peer` with `tag` into `pieces`
  /// (in order; at most their total size).
  virtual int irecv(int peer, int tag, const std::vector<Piece> &pieces,
                    int &request) = 0;
  /// Waits for `request`; for a receive, `bytes` is the message's size.
  virtual int wait(int request, size_t &bytes) = 0;
  /// Waits for requests first .. last - 1 at once (requests are numbered
  /// 0, 1, ... from the last reset()); for a receive among them,
  /// bytes[request - first] is the message's size (`bytes` may be null).
  /// One call for a step's messages instead of one wait each.
  virtual int waitAll(int first, int last, size_t *bytes) = 0;
  /// Waits until the next message from `peer` with `tag` has arrived and
  /// sets `bytes` to its size, leaving it to the next irecv from `peer` with
  /// `tag`. For messages whose size only the sender knows: the irregular
  /// all-to-all's staged and forwarding exchanges (AlltoallvPlan.cpp,
  /// AlltoallvForwarding.cpp) depend on every rank's counts.
  virtual int probe(int peer, int tag, size_t &bytes) = 0;
  /// Forgets every request: each has been waited for, or, after a call
  /// that failed part way, is released.
  virtual void reset() = 0;

  /// Whether the backend lives as long as its communicator (MPI's, cached
  /// on it) rather than one call (the local one), so that the schedule
  /// engine can keep what it learns about calls in `engineMemory`.
  virtual bool outlivesCalls() const { return false; }
  std::shared_ptr<void> engineMemory;
  /// Requests and datatypes not yet released (reset() releases them): none
  /// between calls. For tests.
  virtual size_t held() const { return 0; }

  /// This backend with its ranks renamed: rank r of the view is rank
  /// (r + rotation) mod size() here, so a schedule proved for one root runs
  /// for another (a rotation is a symmetry of a fully connected network,
  /// which is what a communicator without a topology is). Kept with this
  /// backend, one per rotation, so a view's engineMemory lasts as long.
  /// `rotation` in 1 .. size() - 1; 0 is this backend itself.
  Backend *rotated(int rotation);

private:
  std::vector<Piece> one, other; // the *One defaults' lists, kept
  std::map<int, std::unique_ptr<Backend>> rotations; // rotated()'s views
};

/// Which private duplicate of a communicator a backend runs on: the schedule
/// engine's step tags span the whole tag range MPI guarantees (0..32767), so
/// the irregular all-to-all, whose stage tags would overlap them, has its own.
enum class MpiChannel { Schedules, Alltoallv };

/// Point-to-point over a private duplicate of `comm` (one per channel),
/// created on first use and cached on `comm` with an attribute (with the
/// backend itself, which lives as long as `comm`), so that no user message
/// (not even an MPI_ANY_TAG receive) can match a collective's message.
/// Errors: an MPI code.
int makeMpiBackend(MPI_Comm comm, Backend *&backend,
                   MpiChannel channel = MpiChannel::Schedules);

/// Backend::held() of the schedules' backend of `comm` (for tests: a call
/// must leave no request or datatype behind). 0 when it has none yet.
size_t mpiBackendHeld(MPI_Comm comm);

/// How many of makeMpiBackend's duplicates have been freed so far: while
/// it stays the same, a communicator handle still names the communicator
/// (and the backend) it named before.
uint64_t mpiDuplicatesFreed();

/// Whether `comm` has makeMpiBackend's duplicate already (local, so one rank
/// alone may ask): then freeing `comm`, by whatever call, counts in
/// mpiDuplicatesFreed().
bool hasMpiBackend(MPI_Comm comm, MpiChannel channel = MpiChannel::Schedules);

/// In-memory channels between the threads of a local::run (Local.h).
int makeLocalBackend(LocalComm &comm, std::unique_ptr<Backend> &backend);

/// out[i] = lower[i] op upper[i]: the operands in rank order, as a
/// non-commutative op needs them; `out` may be either operand or neither,
/// so a fold needs no copy first. Predefined ops on MPI's basic types run as
/// typed loops; anything else goes through MPI_Reduce_local.
int combine(const void *lower, const void *upper, void *out, int count,
            MPI_Datatype type, MPI_Op op);

/// memmove, a large copy between apart ranges going in blocks of 128 KiB,
/// as Open MPI's datatype engine copies (opal_datatype_copy.h,
/// MEM_OP_BLOCK_SIZE_CONST): the C library's memcpy bypasses the cache for
/// a copy of several MiB, and a rank's own block of a 2-rank gather,
/// scatter or all-gather of 8-16 MiB took 1.03-1.10x MPI's time that way,
/// 0.97-1.03x in blocks.
void moveBytes(char *to, const char *from, size_t n);

/// combine's typed loop for a predefined operator on a basic type, found
/// once (a recording keeps it): out[i] = lower[i] op upper[i] for n
/// elements. Null for any other type or operator.
using FoldFn = void (*)(const void *lower, const void *upper, void *out,
                        size_t n);
FoldFn foldFunction(MPI_Datatype type, MPI_Op op);
/// The instruction sets the typed loops are built for (x86-64: AVX2 and
/// AVX-512 besides the baseline); foldFunction takes the widest the
/// processor has.
enum class FoldIsa { Baseline, Avx2, Avx512 };
bool foldIsaSupported(FoldIsa isa);
/// foldFunction with the loops of `isa` (null where the processor lacks it).
FoldFn foldFunction(MPI_Datatype type, MPI_Op op, FoldIsa isa);

} // namespace collc::rt
