// The MPI backend: non-blocking point-to-point per step on a private
// duplicate of the user's communicator. A small message of several pieces
// is packed into (or unpacked from) one contiguous buffer, since its
// datatype would cost more to create than its bytes to copy; a large one
// goes out and comes in as one hindexed datatype over MPI_BOTTOM, which the
// MPI library moves without our copy (bench/results/16-cores: packing every
// message made a 16-rank scatter 2-2.9x, all-gather 1.5x slower than MPI's
// from 32 KiB, against 1.5-1.8x and 1.0x unpacked).

#include "collc/Backend.h"

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace collc::rt {
namespace {

class MpiBackend final : public Backend {
public:
  explicit MpiBackend(MPI_Comm comm) : comm(comm) {
    MPI_Comm_rank(comm, &myRank);
    MPI_Comm_size(comm, &numRanks);
  }
  ~MpiBackend() override { reset(); }
  bool outlivesCalls() const override { return true; }
  int rank() const override { return myRank; }
  int size() const override { return numRanks; }

  int isend(int peer, int tag, const std::vector<Piece> &pieces,
            int &request) override {
    Layout l;
    if (int rc = layout(pieces, l, Direction::Out))
      return rc;
    request = static_cast<int>(requests.size());
    requests.push_back(MPI_REQUEST_NULL);
    counted.push_back(false);
    unpackInto.emplace_back();
    return MPI_Isend(l.base, l.count, l.type, peer, tag, comm,
                     &requests.back());
  }

  int send(int peer, int tag, const std::vector<Piece> &pieces) override {
    Layout l;
    if (int rc = layout(pieces, l, Direction::Out))
      return rc;
    return MPI_Send(l.base, l.count, l.type, peer, tag, comm);
  }

  int recv(int peer, int tag, const std::vector<Piece> &pieces,
           size_t &bytes) override {
    Layout l;
    if (int rc = layout(pieces, l, Direction::In))
      return rc;
    MPI_Status status;
    if (int rc = MPI_Recv(l.base, l.count, l.type, peer, tag, comm, &status))
      return rc;
    unpack(l, pieces);
    return received(l, status, bytes);
  }

  int sendrecv(int dest, int sendTag, const std::vector<Piece> &out,
               int source, int recvTag, const std::vector<Piece> &in,
               size_t &bytes) override {
    Layout o, i;
    if (int rc = layout(out, o, Direction::Out))
      return rc;
    if (int rc = layout(in, i, Direction::In))
      return rc;
    MPI_Status status;
    if (int rc = MPI_Sendrecv(o.base, o.count, o.type, dest, sendTag, i.base,
                              i.count, i.type, source, recvTag, comm, &status))
      return rc;
    unpack(i, in);
    return received(i, status, bytes);
  }

  int sendOne(int peer, int tag, Piece piece) override {
    if (piece.bytes > static_cast<size_t>(INT_MAX))
      return MPI_ERR_COUNT;
    return MPI_Send(piece.data, static_cast<int>(piece.bytes), MPI_BYTE, peer,
                    tag, comm);
  }

  int recvOne(int peer, int tag, Piece piece, size_t &bytes) override {
    if (piece.bytes > static_cast<size_t>(INT_MAX))
      return MPI_ERR_COUNT;
    MPI_Status status;
    if (int rc = MPI_Recv(piece.data, static_cast<int>(piece.bytes), MPI_BYTE,
                          peer, tag, comm, &status))
      return rc;
    return received(Layout{}, status, bytes);
  }

  int sendrecvOne(int dest, int sendTag, Piece out, int source, int recvTag,
                  Piece in, size_t &bytes) override {
    if (out.bytes > static_cast<size_t>(INT_MAX) ||
        in.bytes > static_cast<size_t>(INT_MAX))
      return MPI_ERR_COUNT;
    MPI_Status status;
    if (int rc = MPI_Sendrecv(out.data, static_cast<int>(out.bytes), MPI_BYTE,
                              dest, sendTag, in.data,
                              static_cast<int>(in.bytes), MPI_BYTE, source,
                              recvTag, comm, &status))
      return rc;
    return received(Layout{}, status, bytes);
  }

  int irecv(int peer, int tag, const std::vector<Piece> &pieces,
            int &request) override {
    Layout l;
    if (int rc = layout(pieces, l, Direction::In))
      return rc;
    request = static_cast<int>(requests.size());
    requests.push_back(MPI_REQUEST_NULL);
    counted.push_back(l.type == MPI_BYTE && l.staged < 0);
    unpackInto.emplace_back();
    if (l.staged >= 0)
      unpackInto.back() = {l.staged, pieces};
    return MPI_Irecv(l.base, l.count, l.type, peer, tag, comm,
                     &requests.back());
  }

  int wait(int request, size_t &bytes) override {
    MPI_Status status;
    if (int rc = MPI_Wait(&requests[static_cast<size_t>(request)], &status))
      return rc;
    unpackAfter(static_cast<size_t>(request));
    bytes = 0;
    if (counted[static_cast<size_t>(request)]) {
      int n = 0;
      MPI_Get_count(&status, MPI_BYTE, &n);
      bytes = static_cast<size_t>(n);
    }
    return MPI_SUCCESS;
  }

  int waitAll(int first, int last, size_t *bytes) override {
    const size_t n = static_cast<size_t>(last - first);
    if (!n)
      return MPI_SUCCESS;
    MPI_Request *r = &requests[static_cast<size_t>(first)];
    if (!bytes) {
      if (int rc = MPI_Waitall(static_cast<int>(n), r, MPI_STATUSES_IGNORE))
        return rc;
      for (size_t i = 0; i < n; ++i)
        unpackAfter(static_cast<size_t>(first) + i);
      return MPI_SUCCESS;
    }
    statuses.resize(n);
    if (int rc = MPI_Waitall(static_cast<int>(n), r, statuses.data()))
      return rc;
    for (size_t i = 0; i < n; ++i)
      unpackAfter(static_cast<size_t>(first) + i);
    for (size_t i = 0; i < n; ++i) {
      bytes[i] = 0;
      if (counted[static_cast<size_t>(first) + i]) {
        int count = 0;
        MPI_Get_count(&statuses[i], MPI_BYTE, &count);
        bytes[i] = static_cast<size_t>(count);
      }
    }
    return MPI_SUCCESS;
  }

  int probe(int peer, int tag, size_t &bytes) override {
    MPI_Status status;
    if (int rc = MPI_Probe(peer, tag, comm, &status))
      return rc;
    int n = 0;
    if (int rc = MPI_Get_count(&status, MPI_BYTE, &n))
      return rc;
    bytes = static_cast<size_t>(n);
    return MPI_SUCCESS;
  }

  size_t held() const override {
    size_t active = types.size();
    for (MPI_Request r : requests)
      active += r != MPI_REQUEST_NULL;
    return active;
  }

  void reset() override {
    // Waited for, a request is null; one left by a call that failed part
    // way is released rather than lost (its message still completes).
    for (MPI_Request &r : requests)
      if (r != MPI_REQUEST_NULL)
        MPI_Request_free(&r);
    for (MPI_Datatype &t : types)
      MPI_Type_free(&t);
    types.clear();
    requests.clear();
    counted.clear();
    unpackInto.clear();
    stagesUsed = 0; // kept, for the next step's large messages
  }

private:
  struct Layout {
    void *base = nullptr;
    int count = 0;
    MPI_Datatype type = MPI_BYTE;
    int staged = -1; // the staging buffer it is packed into, if any
  };

  /// Several pieces of at most this many bytes travel packed: the eager
  /// sizes, where the library copies the message through its own buffers
  /// anyway (Open MPI's shared memory: 4 KiB).
  static constexpr size_t packUpTo = 4 * 1024;
  enum class Direction { Out, In };

  /// A staged receive's pieces, written once its request completes.
  struct Unpack {
    int staged = -1;
    std::vector<Piece> pieces;
  };

  void unpack(const Layout &l, const std::vector<Piece> &pieces) {
    if (l.staged < 0)
      return;
    const char *from = stages[static_cast<size_t>(l.staged)].get();
    for (const Piece &p : pieces) {
      std::memcpy(p.data, from, p.bytes);
      from += p.bytes;
    }
  }

  void unpackAfter(size_t request) {
    Unpack &u = unpackInto[request];
    if (u.staged < 0)
      return;
    Layout l;
    l.staged = u.staged;
    unpack(l, u.pieces);
    u.staged = -1;
  }

  /// A blocking receive's size, as wait() reports it.
  static int received(const Layout &l, const MPI_Status &status,
                      size_t &bytes) {
    bytes = 0;
    if (l.type != MPI_BYTE || l.staged >= 0)
      return MPI_SUCCESS;
    int n = 0;
    if (int rc = MPI_Get_count(&status, MPI_BYTE, &n))
      return rc;
    bytes = static_cast<size_t>(n);
    return MPI_SUCCESS;
  }

  int layout(const std::vector<Piece> &pieces, Layout &l,
             Direction direction = Direction::Out) {
    if (pieces.size() == 1) { // most messages: plain bytes
      if (pieces[0].bytes > static_cast<size_t>(INT_MAX))
        return MPI_ERR_COUNT;
      l.base = pieces[0].data;
      l.count = static_cast<int>(pieces[0].bytes);
      return MPI_SUCCESS;
    }
    size_t total = 0;
    for (const Piece &p : pieces)
      total += p.bytes;
    if (total > static_cast<size_t>(INT_MAX))
      return MPI_ERR_COUNT;
    if (pieces.size() <= 1) {
      l.base = pieces.empty() ? nullptr : pieces[0].data;
      l.count = static_cast<int>(total);
      return MPI_SUCCESS;
    }
    if (total > packUpTo)
      return describe(pieces, l);
    if (stagesUsed == stages.size()) {
      stages.emplace_back();
      stageBytes.push_back(0);
    }
    const size_t i = stagesUsed++;
    if (stageBytes[i] < total) {
      stages[i].reset(new char[total]);
      stageBytes[i] = total;
    }
    char *to = stages[i].get();
    if (direction == Direction::Out)
      for (const Piece &p : pieces) {
        std::memcpy(to, p.data, p.bytes);
        to += p.bytes;
      }
    l.base = stages[i].get();
    l.count = static_cast<int>(total);
    l.staged = static_cast<int>(i);
    return MPI_SUCCESS;
  }

  /// The pieces as one hindexed datatype over MPI_BOTTOM, freed at reset().
  int describe(const std::vector<Piece> &pieces, Layout &l) {
    lengths.clear();
    offsets.clear();
    for (const Piece &p : pieces) {
      MPI_Aint address = 0;
      MPI_Get_address(p.data, &address);
      lengths.push_back(static_cast<int>(p.bytes));
      offsets.push_back(address);
    }
    MPI_Datatype t;
    if (int rc = MPI_Type_create_hindexed(static_cast<int>(pieces.size()),
                                          lengths.data(), offsets.data(),
                                          MPI_BYTE, &t))
      return rc;
    if (int rc = MPI_Type_commit(&t))
      return rc;
    types.push_back(t);
    l.base = MPI_BOTTOM;
    l.count = 1;
    l.type = t;
    return MPI_SUCCESS;
  }

  MPI_Comm comm;
  int myRank = 0, numRanks = 0;
  std::vector<MPI_Request> requests;
  std::vector<MPI_Status> statuses;
  std::vector<bool> counted; // a receive of plain bytes: report its size
  std::vector<MPI_Datatype> types;
  std::vector<int> lengths;
  std::vector<MPI_Aint> offsets;
  std::vector<Unpack> unpackInto; // by request
  // Packed messages' buffers, kept across calls; the first stagesUsed are
  // this step's.
  std::vector<std::unique_ptr<char[]>> stages;
  std::vector<size_t> stageBytes;
  size_t stagesUsed = 0;
};

/// What the attribute holds: the duplicate and the backend over it.
struct Duplicate {
  MPI_Comm comm = MPI_COMM_NULL;
  std::unique_ptr<MpiBackend> backend;
};

int dupKeyvals[2] = {MPI_KEYVAL_INVALID, MPI_KEYVAL_INVALID}; // by channel
std::mutex keyvalMaking; // makeMpiBackend's, below

/// Each thread remembers the communicator it used last and its backend, so
/// that a program calling collectives on one communicator skips the
/// attribute lookup. Freeing any duplicate invalidates every thread's entry
/// (a new communicator may reuse a freed one's handle).
std::atomic<uint64_t> duplicatesFreed{0};
struct LastUsed {
  MPI_Comm comm = MPI_COMM_NULL;
  Backend *backend = nullptr;
  uint64_t generation = 0;
};
thread_local LastUsed lastUsed[2]; // by channel

// The duplicate lives as long as the user's communicator: MPI calls this when
// that one is freed (or at MPI_Finalize for the predefined ones).
int freeDuplicate(MPI_Comm, int, void *attribute, void *) {
  duplicatesFreed.fetch_add(1);
  auto *dup = static_cast<Duplicate *>(attribute);
  dup->backend.reset();
  int rc = MPI_Comm_free(&dup->comm);
  delete dup;
  return rc;
}

} // namespace

uint64_t mpiDuplicatesFreed() { return duplicatesFreed.load(); }

bool hasMpiBackend(MPI_Comm comm, MpiChannel channel) {
  if (comm == MPI_COMM_NULL)
    return false;
  const int c = channel == MpiChannel::Schedules ? 0 : 1;
  if (lastUsed[c].comm == comm &&
      lastUsed[c].generation == duplicatesFreed.load())
    return true;
  int dupKeyval = MPI_KEYVAL_INVALID;
  {
    std::lock_guard<std::mutex> hold(keyvalMaking);
    dupKeyval = dupKeyvals[c];
  }
  void *attribute = nullptr;
  int found = 0;
  return dupKeyval != MPI_KEYVAL_INVALID &&
         MPI_Comm_get_attr(comm, dupKeyval, &attribute, &found) ==
             MPI_SUCCESS &&
         found;
}

size_t mpiBackendHeld(MPI_Comm comm) {
  Backend *backend = nullptr;
  return makeMpiBackend(comm, backend) == MPI_SUCCESS ? backend->held() : 0;
}

int makeMpiBackend(MPI_Comm comm, Backend *&backend, MpiChannel channel) {
  if (comm == MPI_COMM_NULL)
    return MPI_ERR_COMM;
  const int c = channel == MpiChannel::Schedules ? 0 : 1;
  LastUsed &last = lastUsed[c];
  const uint64_t generation = duplicatesFreed.load();
  if (last.comm == comm && last.generation == generation) {
    backend = last.backend;
    return MPI_SUCCESS;
  }
  int dupKeyval = MPI_KEYVAL_INVALID;
  {
    // Under MPI_THREAD_MULTIPLE several threads' first calls come at once.
    // Open MPI writes a new keyval by counting up from 0 in place, through
    // the predefined keyvals (MPI_TAG_UB's and the like): a thread reading
    // it meanwhile took such an attribute for a Duplicate and crashed. So
    // it is made once, into a local, and read under the same lock.
    std::lock_guard<std::mutex> hold(keyvalMaking);
    if (dupKeyvals[c] == MPI_KEYVAL_INVALID) {
      int made = MPI_KEYVAL_INVALID;
      if (int rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN,
                                          freeDuplicate, &made, nullptr))
        return rc;
      dupKeyvals[c] = made;
    }
    dupKeyval = dupKeyvals[c];
  }
  void *attribute = nullptr;
  int found = 0;
  if (int rc = MPI_Comm_get_attr(comm, dupKeyval, &attribute, &found))
    return rc;
  if (!found) {
    auto *dup = new Duplicate;
    // MPI_Comm_create, not MPI_Comm_dup: a dup runs the program's attribute
    // copy callbacks (and the free, its delete callbacks), which may refuse,
    // free a shared value twice, or call a collective on `comm` again.
    MPI_Group group = MPI_GROUP_NULL;
    int rc = MPI_Comm_group(comm, &group);
    if (rc == MPI_SUCCESS) {
      rc = MPI_Comm_create(comm, group, &dup->comm);
      MPI_Group_free(&group);
    }
    if (rc != MPI_SUCCESS) {
      delete dup;
      return rc;
    }
    // Its errors come back as codes: the runtime names what failed, then
    // hands the failure to the user's communicator (Engine::failLocal), whose
    // handler decides; the duplicate's inherited one would abort unsaid.
    if (int rc = MPI_Comm_set_errhandler(dup->comm, MPI_ERRORS_RETURN)) {
      MPI_Comm_free(&dup->comm);
      delete dup;
      return rc;
    }
    if (int rc = MPI_Comm_set_attr(comm, dupKeyval, dup)) {
      MPI_Comm_free(&dup->comm);
      delete dup;
      return rc;
    }
    dup->backend = std::make_unique<MpiBackend>(dup->comm);
    attribute = dup;
  }
  backend = static_cast<Duplicate *>(attribute)->backend.get();
  last = {comm, backend, generation};
  return MPI_SUCCESS;
}

} // namespace collc::rt
