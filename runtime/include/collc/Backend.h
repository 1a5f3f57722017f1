#pragma once
// The narrow interface between the schedule engine and a transport: post the
// sends and receives of one step, wait for them, and fold received data into
// a buffer. Messages are byte strings; their content is the engine's business
// (runtime/src/Engine.cpp describes the format).

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace collc::rt {

struct OutMessage {
  int peer = 0;
  std::vector<char> bytes;
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Posts every send of `sends`, receives one message from each rank of
  /// `sources` in order (a rank listed twice sends twice; messages from one
  /// rank arrive in the order they were sent), waits for all, and returns an
  /// MPI error code. `received[i]` is the message from `sources[i]`.
  virtual int exchange(int tag, const std::vector<OutMessage> &sends,
                       const std::vector<int> &sources,
                       std::vector<std::vector<char>> &received) = 0;
};

/// Point-to-point over a private duplicate of `comm`, created on first use and
/// cached on `comm` with an attribute, so that no user message (not even an
/// MPI_ANY_TAG receive) can match a schedule's message. Errors: an MPI code.
int makeMpiBackend(MPI_Comm comm, std::unique_ptr<Backend> &backend);

/// inout[i] = lower[i] op inout[i] when `incomingIsLower`, else
/// inout[i] = inout[i] op in[i]: the operands in rank order, as a
/// non-commutative op needs them. Predefined ops on MPI's basic types run as
/// typed loops; anything else goes through MPI_Reduce_local.
int reduceInto(const void *in, void *inout, int count, MPI_Datatype type,
               MPI_Op op, bool incomingIsLower);

} // namespace collc::rt
