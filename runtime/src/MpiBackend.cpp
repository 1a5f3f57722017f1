// The MPI backend: non-blocking point-to-point per step on a private
// duplicate of the user's communicator. A message of several pieces goes out
// and comes in as one hindexed datatype over MPI_BOTTOM, so nothing is packed.

#include "collc/Backend.h"

#include <climits>

namespace collc::rt {
namespace {

class MpiBackend final : public Backend {
public:
  explicit MpiBackend(MPI_Comm comm) : comm(comm) {
    MPI_Comm_rank(comm, &myRank);
    MPI_Comm_size(comm, &numRanks);
  }
  ~MpiBackend() override { reset(); }
  int rank() const override { return myRank; }
  int size() const override { return numRanks; }

  int isend(int peer, int tag, const std::vector<Piece> &pieces,
            int &request) override {
    Layout l;
    if (int rc = layout(pieces, l))
      return rc;
    request = static_cast<int>(requests.size());
    requests.push_back(MPI_REQUEST_NULL);
    counted.push_back(false);
    return MPI_Isend(l.base, l.count, l.type, peer, tag, comm,
                     &requests.back());
  }

  int irecv(int peer, int tag, const std::vector<Piece> &pieces,
            int &request) override {
    Layout l;
    if (int rc = layout(pieces, l))
      return rc;
    request = static_cast<int>(requests.size());
    requests.push_back(MPI_REQUEST_NULL);
    counted.push_back(l.type == MPI_BYTE);
    return MPI_Irecv(l.base, l.count, l.type, peer, tag, comm,
                     &requests.back());
  }

  int wait(int request, size_t &bytes) override {
    MPI_Status status;
    if (int rc = MPI_Wait(&requests[static_cast<size_t>(request)], &status))
      return rc;
    bytes = 0;
    if (counted[static_cast<size_t>(request)]) {
      int n = 0;
      MPI_Get_count(&status, MPI_BYTE, &n);
      bytes = static_cast<size_t>(n);
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

  void reset() override {
    for (MPI_Datatype &t : types)
      MPI_Type_free(&t);
    types.clear();
    requests.clear();
    counted.clear();
  }

private:
  struct Layout {
    void *base = nullptr;
    int count = 0;
    MPI_Datatype type = MPI_BYTE;
  };

  int layout(const std::vector<Piece> &pieces, Layout &l) {
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
  std::vector<bool> counted; // a receive of plain bytes: report its size
  std::vector<MPI_Datatype> types;
  std::vector<int> lengths;
  std::vector<MPI_Aint> offsets;
};

/// What the attribute holds: the duplicate and the backend over it.
struct Duplicate {
  MPI_Comm comm = MPI_COMM_NULL;
  std::unique_ptr<MpiBackend> backend;
};

int dupKeyvals[2] = {MPI_KEYVAL_INVALID, MPI_KEYVAL_INVALID}; // by channel

// The duplicate lives as long as the user's communicator: MPI calls this when
// that one is freed (or at MPI_Finalize for the predefined ones).
int freeDuplicate(MPI_Comm, int, void *attribute, void *) {
  auto *dup = static_cast<Duplicate *>(attribute);
  dup->backend.reset();
  int rc = MPI_Comm_free(&dup->comm);
  delete dup;
  return rc;
}

} // namespace

int makeMpiBackend(MPI_Comm comm, Backend *&backend, MpiChannel channel) {
  if (comm == MPI_COMM_NULL)
    return MPI_ERR_COMM;
  int &dupKeyval = dupKeyvals[channel == MpiChannel::Schedules ? 0 : 1];
  if (dupKeyval == MPI_KEYVAL_INVALID)
    if (int rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, freeDuplicate,
                                        &dupKeyval, nullptr))
      return rc;
  void *attribute = nullptr;
  int found = 0;
  if (int rc = MPI_Comm_get_attr(comm, dupKeyval, &attribute, &found))
    return rc;
  if (!found) {
    auto *dup = new Duplicate;
    if (int rc = MPI_Comm_dup(comm, &dup->comm)) {
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
  return MPI_SUCCESS;
}

} // namespace collc::rt
