// The local backend: one mailbox per rank under one lock. A send that finds
// its receive posted copies straight into the receiver's pieces; otherwise it
// waits in the receiver's mailbox and the receive copies from the sender's
// pieces (which stay untouched until the send completes). Either way each
// message is copied once.

#include "collc/Local.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <list>
#include <mutex>
#include <thread>

namespace collc::rt {

namespace {
/// A request's completion, written under the world's lock; `owner` is the
/// rank that waits for it.
struct Completion {
  int owner = 0;
  bool done = false;
  int rc = MPI_SUCCESS;
  size_t bytes = 0;
};

struct Posted {
  int peer = 0; // the other end
  int tag = 0;
  std::vector<Piece> pieces;
  Completion *completion = nullptr;
};

size_t totalBytes(const std::vector<Piece> &pieces) {
  size_t n = 0;
  for (const Piece &p : pieces)
    n += p.bytes;
  return n;
}

/// Copies the concatenation of `from` into `to`; the received size, or an
/// error when `to` is too small.
int copyPieces(const std::vector<Piece> &from, const std::vector<Piece> &to,
               size_t &bytes) {
  size_t ti = 0, toff = 0;
  bytes = 0;
  for (const Piece &f : from) {
    size_t foff = 0;
    while (foff < f.bytes) {
      if (ti == to.size())
        return MPI_ERR_TRUNCATE;
      size_t n = std::min(f.bytes - foff, to[ti].bytes - toff);
      std::memcpy(to[ti].data + toff, f.data + foff, n);
      foff += n;
      toff += n;
      bytes += n;
      if (toff == to[ti].bytes) {
        ++ti;
        toff = 0;
      }
    }
  }
  return MPI_SUCCESS;
}
} // namespace

class LocalWorld {
public:
  explicit LocalWorld(int size)
      : sends(size), recvs(size), wake(static_cast<size_t>(size)), ranks(size) {
  }
  int size() const { return ranks; }

  void send(int from, int to, int tag, const std::vector<Piece> &pieces,
            Completion &c) {
    std::lock_guard<std::mutex> lock(mutex);
    auto &waiting = recvs[static_cast<size_t>(to)];
    for (auto it = waiting.begin(); it != waiting.end(); ++it)
      if (it->peer == from && it->tag == tag) {
        size_t bytes = 0;
        int rc = copyPieces(pieces, it->pieces, bytes);
        complete(*it->completion, rc, bytes);
        complete(c, rc, bytes);
        waiting.erase(it);
        return;
      }
    sends[static_cast<size_t>(to)].push_back({from, tag, pieces, &c});
    // A probe at `to` may be waiting for it.
    wake[static_cast<size_t>(to)].notify_all();
  }

  void recv(int at, int from, int tag, const std::vector<Piece> &pieces,
            Completion &c) {
    std::lock_guard<std::mutex> lock(mutex);
    auto &waiting = sends[static_cast<size_t>(at)];
    for (auto it = waiting.begin(); it != waiting.end(); ++it)
      if (it->peer == from && it->tag == tag) {
        size_t bytes = 0;
        int rc = copyPieces(it->pieces, pieces, bytes);
        complete(*it->completion, rc, bytes);
        complete(c, rc, bytes);
        waiting.erase(it);
        return;
      }
    recvs[static_cast<size_t>(at)].push_back({from, tag, pieces, &c});
  }

  int wait(Completion &c, size_t &bytes) {
    std::unique_lock<std::mutex> lock(mutex);
    wake[static_cast<size_t>(c.owner)].wait(lock, [&] { return c.done; });
    bytes = c.bytes;
    return c.rc;
  }

  /// The size of the first unreceived send from `from` to `at` with `tag`,
  /// once there is one.
  size_t probe(int at, int from, int tag) {
    std::unique_lock<std::mutex> lock(mutex);
    const auto &waiting = sends[static_cast<size_t>(at)];
    size_t bytes = 0;
    wake[static_cast<size_t>(at)].wait(lock, [&] {
      for (const Posted &p : waiting)
        if (p.peer == from && p.tag == tag) {
          bytes = totalBytes(p.pieces);
          return true;
        }
      return false;
    });
    return bytes;
  }

private:
  // One condition per rank, so that a completion wakes only the rank that
  // waits for it (with 64 ranks, one shared condition woke all 64 threads
  // for every message).
  void complete(Completion &c, int rc, size_t bytes) {
    c.done = true;
    c.rc = rc;
    c.bytes = bytes;
    wake[static_cast<size_t>(c.owner)].notify_all();
  }

  std::mutex mutex;
  // Per receiving rank: sends not yet received, receives not yet matched,
  // each in posting order (so one sender's messages match in order).
  std::vector<std::list<Posted>> sends, recvs;
  std::vector<std::condition_variable> wake;
  int ranks;
};

int LocalComm::size() const { return world->size(); }

namespace {
class LocalBackend final : public Backend {
public:
  explicit LocalBackend(LocalComm &comm) : comm(comm) {}
  int rank() const override { return comm.rank(); }
  int size() const override { return comm.size(); }
  int isend(int peer, int tag, const std::vector<Piece> &pieces,
            int &request) override {
    if (peer < 0 || peer >= size())
      return MPI_ERR_RANK;
    request = static_cast<int>(completions.size());
    completions.emplace_back().owner = rank();
    comm.channels().send(rank(), peer, tag, pieces, completions.back());
    return MPI_SUCCESS;
  }
  int irecv(int peer, int tag, const std::vector<Piece> &pieces,
            int &request) override {
    if (peer < 0 || peer >= size())
      return MPI_ERR_RANK;
    request = static_cast<int>(completions.size());
    completions.emplace_back().owner = rank();
    comm.channels().recv(rank(), peer, tag, pieces, completions.back());
    return MPI_SUCCESS;
  }
  int wait(int request, size_t &bytes) override {
    return comm.channels().wait(completions[static_cast<size_t>(request)],
                                bytes);
  }
  int waitAll(int first, int last, size_t *bytes) override {
    for (int r = first; r < last; ++r) {
      size_t n = 0;
      if (int rc = wait(r, n))
        return rc;
      if (bytes)
        bytes[r - first] = n;
    }
    return MPI_SUCCESS;
  }
  int probe(int peer, int tag, size_t &bytes) override {
    if (peer < 0 || peer >= size())
      return MPI_ERR_RANK;
    bytes = comm.channels().probe(rank(), peer, tag);
    return MPI_SUCCESS;
  }
  void reset() override { completions.clear(); }

private:
  LocalComm &comm;
  std::deque<Completion> completions; // stable addresses
};

void finalizeMpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}
} // namespace

int makeLocalBackend(LocalComm &comm, std::unique_ptr<Backend> &backend) {
  backend = std::make_unique<LocalBackend>(comm);
  return MPI_SUCCESS;
}

int local::run(int ranks, const std::function<void(LocalComm &)> &fn) {
  if (ranks < 1)
    return MPI_ERR_ARG;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) !=
        MPI_SUCCESS)
      return MPI_ERR_OTHER;
    std::atexit(finalizeMpi);
  }
  auto world = std::make_shared<LocalWorld>(ranks);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      LocalComm comm(world, r);
      try {
        fn(comm);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::exception_ptr &e : errors)
    if (e)
      std::rethrow_exception(e);
  return MPI_SUCCESS;
}

} // namespace collc::rt
