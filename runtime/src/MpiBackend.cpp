// The MPI backend: non-blocking point-to-point per step on a private
// duplicate of the user's communicator.

#include "collc/Backend.h"

namespace collc::rt {
namespace {

int dupKeyval = MPI_KEYVAL_INVALID;

// The duplicate lives as long as the user's communicator: MPI calls this when
// that one is freed (or at MPI_Finalize for the predefined ones).
int freeDuplicate(MPI_Comm, int, void *attribute, void *) {
  auto *dup = static_cast<MPI_Comm *>(attribute);
  int rc = MPI_Comm_free(dup);
  delete dup;
  return rc;
}

class MpiBackend final : public Backend {
public:
  explicit MpiBackend(MPI_Comm comm) : comm(comm) {
    MPI_Comm_rank(comm, &myRank);
    MPI_Comm_size(comm, &numRanks);
  }
  int rank() const override { return myRank; }
  int size() const override { return numRanks; }

  int exchange(int tag, const std::vector<OutMessage> &out,
               const std::vector<int> &sources,
               std::vector<std::vector<char>> &received) override {
    requests.assign(out.size(), MPI_REQUEST_NULL);
    for (size_t i = 0; i < out.size(); ++i)
      if (int rc = MPI_Isend(out[i].bytes.data(),
                             static_cast<int>(out[i].bytes.size()), MPI_BYTE,
                             out[i].peer, tag, comm, &requests[i]))
        return rc;
    // Sizes vary with what the sender holds: probe, then receive exactly
    // that message (MPI_Mprobe, so no other receive can take it between).
    received.resize(sources.size());
    for (size_t i = 0; i < sources.size(); ++i) {
      MPI_Message message;
      MPI_Status status;
      if (int rc = MPI_Mprobe(sources[i], tag, comm, &message, &status))
        return rc;
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      received[i].resize(static_cast<size_t>(bytes));
      if (int rc = MPI_Mrecv(received[i].data(), bytes, MPI_BYTE, &message,
                             MPI_STATUS_IGNORE))
        return rc;
    }
    return MPI_Waitall(static_cast<int>(requests.size()), requests.data(),
                       MPI_STATUSES_IGNORE);
  }

private:
  MPI_Comm comm;
  int myRank = 0, numRanks = 0;
  std::vector<MPI_Request> requests;
};

} // namespace

int makeMpiBackend(MPI_Comm comm, std::unique_ptr<Backend> &backend) {
  if (comm == MPI_COMM_NULL)
    return MPI_ERR_COMM;
  if (dupKeyval == MPI_KEYVAL_INVALID)
    if (int rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, freeDuplicate,
                                        &dupKeyval, nullptr))
      return rc;
  void *attribute = nullptr;
  int found = 0;
  if (int rc = MPI_Comm_get_attr(comm, dupKeyval, &attribute, &found))
    return rc;
  if (!found) {
    auto *dup = new MPI_Comm;
    if (int rc = MPI_Comm_dup(comm, dup)) {
      delete dup;
      return rc;
    }
    if (int rc = MPI_Comm_set_attr(comm, dupKeyval, dup)) {
      MPI_Comm_free(dup);
      delete dup;
      return rc;
    }
    attribute = dup;
  }
  backend = std::make_unique<MpiBackend>(*static_cast<MPI_Comm *>(attribute));
  return MPI_SUCCESS;
}

} // namespace collc::rt
