#pragma once
// Irregular all-to-all (MPI_Alltoallv) by a proved static pattern: the
// four-stage algorithm A4 of 001 §3.2 and the baselines A1-A3 of §3.1.
//
// The pattern (who sends to whom in which step) depends on P only; collc
// proves it contention-free and emits it as tables. The data each message
// carries is decided here, at run time, from the counts:
//   - R-Distribute / C-Distribute (Figure 11): for every P elements bound for
//     node j, R go to each of the first r columns and R - 1 to each of the
//     others, by the counter function F(x) = (x % P) % C with count[j]
//     starting at j % C; C-Distribute likewise over the column. The scan
//     keeps each run of consecutive elements contiguous, so no sort.
//   - C-Collect / R-Collect: everything for column k (row k) in bucket k.
// Messages are self-describing runs (origin, destination, offset, count) of
// bytes, so a receiver needs no model of the sender's counts, nor of its
// datatype: each rank stages its own sides as bytes by its own types (MPI
// asks only that the type signatures match), so the elements dealt above are
// bytes.
//
// It runs on either backend of the runtime (collc/Backend.h): MPI, on a
// private duplicate of the communicator, or the local one, ranks as threads
// (collc/Local.h).

#include "collc/Runtime.h"

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace collc::rt {

class Backend;

/// What a stage's buckets hold (compiler/alltoallv/Patterns.h StageKind).
enum class AlltoallvStageKind {
  RowDistribute,
  ColumnDistribute,
  RowCollect,
  ColumnCollect,
  Spread,
  Direct,
};

/// One stage: in step s, rank x sends its bucket for sendTo[s * p + x]
/// (-1: nothing). Every rank receives at most one message per step.
struct AlltoallvStage {
  AlltoallvStageKind kind = AlltoallvStageKind::Direct;
  int steps = 0;
  const int *sendTo = nullptr; // steps * p entries
};

/// The C x R array of 001 §3.2 and the stages to run.
struct AlltoallvPlan {
  int p = 0;
  int columns = 0; // C
  int rows = 0;    // R
  int r = 0;       // nodes in the incomplete row
  std::vector<AlltoallvStage> stages;
};

/// §3.4: blocking (a send and a receive per step), non-blocking with one
/// send buffer (a stage's sends all posted, then its receives; the next
/// stage distributes once they are done), and non-blocking with dual send
/// buffers (each received message is distributed at once into the other
/// buffer while this stage's sends are still in flight).
enum class AlltoallvMode { Blocking, NonBlocking, NonBlockingDual };

/// One stage at one rank, in bytes of the blocks (run headers not counted):
/// 001 §3.2.4 states Lemmas 1 and 3 and Theorem 1 in elements, and they
/// hold for whatever unit the counter function deals, bytes here.
struct AlltoallvStageStats {
  int64_t sent = 0;     // messages to other ranks (start-ups)
  int64_t received = 0; // messages received, counting the one a rank keeps
                        // for itself, as Lemma 1 does
  int64_t longestReceived = 0; // the longest of those (own one included)
  int64_t longestSent = 0;     // the longest message sent to another rank
  int64_t sendBuffer = 0;      // sBUF: every bucket, own one included
  int64_t receiveBuffer = 0;   // rBUF: everything received, own one included
};

/// What a call did at this rank, for the benchmark and the tests.
struct AlltoallvStats {
  int64_t messages = 0;      // start-ups: messages sent to other ranks
  int64_t largestBuffer = 0; // bytes: send buckets + received, largest stage
                             // (run headers included: the memory used)
  std::vector<AlltoallvStageStats> stages; // one per plan stage
};

/// MPI_Alltoallv's contract, on an MPI communicator or a rank of
/// local::run: any datatypes (a side with holes is packed), MPI_IN_PLACE
/// as sendbuf. Returns MPI_SUCCESS or an MPI error code (and prints why)
/// when the communicator's size is not plan.p; what only this rank can see
/// (an invalid argument, what arrives does not fit recvcounts) goes to the
/// communicator's error handler and aborts the job (on local::run, where
/// there is no job to abort, it is returned at that rank). A side packed
/// (holes, or in place) holds at most 2 GiB in all.
int alltoallv(const AlltoallvPlan &plan, const void *sendbuf,
              const int *sendcounts, const int *sdispls, MPI_Datatype sendtype,
              void *recvbuf, const int *recvcounts, const int *rdispls,
              MPI_Datatype recvtype, CommRef comm,
              AlltoallvMode mode = AlltoallvMode::NonBlockingDual,
              AlltoallvStats *stats = nullptr);

/// A `schedule x : alltoallv` at one rank, as the function collc emits for
/// it drives it: the emitted code walks the schedule's steps as it does for
/// any schedule (the calls an Engine gets), noting whom this rank sends to
/// and hears from; run() then moves the blocks, their sizes from the counts.
/// A rule without a chunk filter sends the sender's own block for the
/// receiver, straight from buffer to buffer (the direct exchange of a
/// one-stage plan). A rule with one forwards blocks, or with `chunks` their
/// pieces: its message holds those it names, each behind a header (origin,
/// dest, index, offset, size), so a rank that passes a piece on learns its
/// size from the message (the receiver probes for the size). A rank's
/// steps, and which pieces each of its messages carries, depend
/// only on the schedule, the size and the rank, so a thread keeps the last
/// few and the walk is skipped where they are known().
class AlltoallvSteps {
public:
  /// A rule's chunk filter over (origin, dest, index), with the walk's
  /// values captured.
  using BlockFilter = std::function<bool(int64_t, int64_t, int64_t)>;

  /// This rank's part in `comm`; `schedule` names the schedule (the
  /// emitted function's own static name, so its address tells schedules
  /// apart). Errors: an MPI code.
  int connect(const char *schedule, CommRef comm);
  int size() const { return p; }
  int rank() const { return me; }
  /// Whether this rank's steps are known from an earlier call alike.
  bool known() const;
  /// Forgets the steps this thread noted, and frees them: its next call of
  /// each schedule walks again, while its peers' may not (which is safe).
  /// Not while a call runs on this thread.
  static void forgetNoted();
  /// Prints "collc: SCHEDULE: message" and returns `code` (before run(),
  /// every rank sees the same, as for Engine::fail).
  int fail(int code, const char *message) const;
  /// The schedule's `chunks n`: each block is sent in n pieces, piece k of
  /// a block of `size` bytes its bytes from size * k / n on (before
  /// the walk; 1 without).
  int splitBlocks(int64_t n);
  /// The walk's calls: this rank sends its own block for `peer`, or the
  /// blocks `filter` names (of those it holds: causality is proved, so all
  /// it names), or receives from `sender`.
  void sendAll(int64_t peer, int buffer);
  template <typename Select> void send(int64_t peer, int, Select &&filter) {
    sendFiltered(peer, BlockFilter(std::forward<Select>(filter)));
  }
  void receive(int64_t sender, uint64_t into, bool reduce);
  int endStep(int64_t step, const char *name);
  /// MPI_Alltoallv's contract over the steps walked (or known), as
  /// alltoallv() keeps it.
  int run(const void *sendbuf, const int *sendcounts, const int *sdispls,
          MPI_Datatype sendtype, void *recvbuf, const int *recvcounts,
          const int *rdispls, MPI_Datatype recvtype,
          AlltoallvMode mode = AlltoallvMode::NonBlockingDual);

  /// One rank's steps: the peers it sends to and receives from, by step,
  /// and where some message forwards, the pieces each send carries (ids
  /// (origin * p + dest) * pieces + index) and the first step that starts
  /// with all of them at this rank (filled by a walk, from the filters; kept
  /// once a walk saw every piece).
  struct Rows {
    const void *schedule = nullptr;
    int p = 0, me = 0;
    bool complete = false;
    bool forwards = false;
    int64_t pieces = 1; // per block
    std::vector<int> sendAt{0}, sends, receiveAt{0}, receives;
    std::vector<int> blockAt{0};
    std::vector<int64_t> blocks;
    std::vector<int> readyAt;
  };

private:
  const char *schedule = "";
  CommRef comm = CommRef(MPI_COMM_NULL);
  Backend *backend = nullptr;
  std::shared_ptr<Backend> owned; // the local backend's
  int p = 0, me = 0;
  Rows *rows = nullptr;
  /// The walk's filters, one per send (empty: the own block), until run().
  std::vector<BlockFilter> filters;

  void sendFiltered(int64_t peer, BlockFilter filter);
};

} // namespace collc::rt
