#pragma once
// The local backend: ranks as threads of one process, exchanging messages
// over in-memory channels, so emitted collectives run without mpirun (tests,
// the demo). Every emitted function has an overload taking a LocalComm in
// place of the MPI_Comm:
//
//   collc::rt::local::run(8, [&](collc::rt::LocalComm &comm) {
//     ring_allgather(send, n, MPI_INT, recv, n, MPI_INT, comm);
//   });
//
// MPI datatypes and operators still describe the data, so run() initializes
// MPI as a singleton (MPI_THREAD_MULTIPLE, finalized at exit) when the
// program has not; no messages go through MPI.

#include "collc/Backend.h"

#include <functional>
#include <memory>

namespace collc::rt {

class LocalWorld;

/// One rank's end of a local::run: its rank and the shared channels.
class LocalComm {
public:
  LocalComm(std::shared_ptr<LocalWorld> world, int rank)
      : world(std::move(world)), me(rank) {}
  int rank() const { return me; }
  int size() const;
  LocalWorld &channels() const { return *world; }

private:
  std::shared_ptr<LocalWorld> world;
  int me;
};

namespace local {
/// Runs fn on `ranks` threads, one LocalComm each, and waits for all.
/// Returns MPI_SUCCESS, or MPI_ERR_ARG for ranks < 1 and MPI_ERR_OTHER when
/// MPI cannot be initialized; an exception from fn is rethrown here.
int run(int ranks, const std::function<void(LocalComm &)> &fn);
} // namespace local

} // namespace collc::rt
