#include "collc/Redistribute.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

using collc::rt::Distribution;

namespace {
// Block's elements a rank, ceil(n / p), at least 1 so that it divides.
int64_t blockSize(int64_t n, int64_t p) {
  return std::max<int64_t>(1, n / p + (n % p != 0));
}
} // namespace

int64_t Distribution::owner(int64_t i, int64_t n, int64_t p) const {
  switch (kind) {
  case Kind::Block:
    return i / blockSize(n, p);
  case Kind::Cyclic:
    return i % p;
  case Kind::BlockCyclic:
    return (i / block) % p;
  }
  return -1;
}

int64_t Distribution::local(int64_t i, int64_t n, int64_t p) const {
  switch (kind) {
  case Kind::Block:
    return i % blockSize(n, p);
  case Kind::Cyclic:
    return i / p;
  case Kind::BlockCyclic:
    return i / (block * p) * block + i % block;
  }
  return -1;
}

int64_t Distribution::count(int64_t rank, int64_t n, int64_t p) const {
  switch (kind) {
  case Kind::Block: {
    const int64_t b = blockSize(n, p);
    return std::clamp<int64_t>(n - rank * b, 0, b);
  }
  case Kind::Cyclic:
    return rank < n ? (n - rank + p - 1) / p : 0;
  case Kind::BlockCyclic: {
    // Whole rounds of p blocks, then what the last round deals this rank.
    const int64_t round = block * p, rounds = n / round;
    return rounds * block +
           std::clamp<int64_t>(n % round - rank * block, 0, block);
  }
  }
  return 0;
}

int collc::rt::redistribute(const void *send, Distribution from, void *recv,
                            Distribution to, int64_t n, MPI_Datatype type,
                            MPI_Comm comm, AlltoallFn alltoall,
                            AlltoallvFn alltoallv) {
  int rank = 0, size = 0;
  if (comm == MPI_COMM_NULL || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
      MPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return MPI_ERR_COMM;
  const int64_t p = size, me = rank;
  // What every rank can see wrong, and what its own counts are, agreed in
  // one reduction so that every rank takes the same path or none.
  int typeSize = 0;
  MPI_Aint lb = 0, extent = 0;
  int error = MPI_SUCCESS;
  // An element's index, a block and a round of blocks stay far inside
  // int64_t.
  const int64_t largest = INT64_MAX / 4 / p;
  auto badBlock = [&](const Distribution &d) {
    return d.kind == Distribution::Kind::BlockCyclic &&
           (d.block < 1 || d.block > largest);
  };
  if (n < 0 || n > largest)
    error = MPI_ERR_COUNT;
  else if (badBlock(from) || badBlock(to))
    error = MPI_ERR_ARG;
  else if (type == MPI_DATATYPE_NULL ||
           MPI_Type_size(type, &typeSize) != MPI_SUCCESS ||
           MPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS || lb != 0 ||
           extent != typeSize)
    error = MPI_ERR_TYPE;

  if (error == MPI_SUCCESS &&
      (from.count(me, n, p) > INT_MAX || to.count(me, n, p) > INT_MAX))
    error = MPI_ERR_COUNT;
  std::vector<int> sendCounts(size, 0), recvCounts(size, 0);
  if (error == MPI_SUCCESS) {
    from.forEachOwned(me, n, p,
                      [&](int64_t i) { ++sendCounts[to.owner(i, n, p)]; });
    to.forEachOwned(me, n, p,
                    [&](int64_t i) { ++recvCounts[from.owner(i, n, p)]; });
  }
  const int same = sendCounts.front();
  const bool regular = std::all_of(sendCounts.begin(), sendCounts.end(),
                                   [&](int c) { return c == same; }) &&
                       std::all_of(recvCounts.begin(), recvCounts.end(),
                                   [&](int c) { return c == same; });
  const int largestShare =
      *std::max_element(sendCounts.begin(), sendCounts.end());
  int agreed[5] = {error, regular ? 0 : 1, same, -same, largestShare};
  int rc = MPI_Allreduce(MPI_IN_PLACE, agreed, 5, MPI_INT, MPI_MAX, comm);
  if (rc != MPI_SUCCESS)
    return rc;
  if (agreed[0] != MPI_SUCCESS)
    return agreed[0];
  const bool everyPairSame = agreed[1] == 0 && agreed[2] == -agreed[3];
  // Shares that differ little (block <-> cyclic with p^2 not dividing n)
  // still take the regular exchange given, each pair's share in a slot of
  // the largest, while that sends at most twice what a rank holds; every
  // rank decides from the agreed figures alike.
  const int64_t slot = agreed[4];
  const bool padded = !everyPairSame && alltoall &&
                      slot * p <= 2 * (n / p + 1) && slot * p <= INT_MAX;

  // Bucket t holds, in increasing i, the elements bound for rank t; padded,
  // bucket t starts at slot t on both sides.
  std::vector<int> sendDispls(size, 0), recvDispls(size, 0);
  for (int t = 1; t < size; ++t) {
    sendDispls[t] = padded ? static_cast<int>(slot * t)
                           : sendDispls[t - 1] + sendCounts[t - 1];
    recvDispls[t] = padded ? static_cast<int>(slot * t)
                           : recvDispls[t - 1] + recvCounts[t - 1];
  }
  const size_t bytes = static_cast<size_t>(typeSize);
  const size_t slotsBytes = static_cast<size_t>(slot * p) * bytes;
  std::vector<char> packed(
      padded ? slotsBytes : static_cast<size_t>(from.count(me, n, p)) * bytes);
  std::vector<char> arrived(
      padded ? slotsBytes : static_cast<size_t>(to.count(me, n, p)) * bytes);
  std::vector<int> cursor = sendDispls;
  const char *in = static_cast<const char *>(send);
  from.forEachOwned(me, n, p, [&](int64_t i) {
    const int t = static_cast<int>(to.owner(i, n, p));
    std::memcpy(packed.data() + static_cast<size_t>(cursor[t]++) * bytes,
                in + static_cast<size_t>(from.local(i, n, p)) * bytes, bytes);
  });

  if (everyPairSame) {
    if (agreed[2] > 0)
      rc = (alltoall ? alltoall : MPI_Alltoall)(packed.data(), agreed[2], type,
                                                arrived.data(), agreed[2], type,
                                                comm);
  } else if (padded) {
    rc = alltoall(packed.data(), static_cast<int>(slot), type, arrived.data(),
                  static_cast<int>(slot), type, comm);
  } else {
    rc = (alltoallv ? alltoallv : MPI_Alltoallv)(
        packed.data(), sendCounts.data(), sendDispls.data(), type,
        arrived.data(), recvCounts.data(), recvDispls.data(), type, comm);
  }
  if (rc != MPI_SUCCESS)
    return rc;

  // Rank s's elements arrive in increasing i: take them in that order.
  cursor = recvDispls;
  char *out = static_cast<char *>(recv);
  to.forEachOwned(me, n, p, [&](int64_t i) {
    const int s = static_cast<int>(from.owner(i, n, p));
    std::memcpy(out + static_cast<size_t>(to.local(i, n, p)) * bytes,
                arrived.data() + static_cast<size_t>(cursor[s]++) * bytes,
                bytes);
  });
  return MPI_SUCCESS;
}
