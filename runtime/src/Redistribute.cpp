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

namespace {
/// How the agreed shares travel, decided alike on every rank.
struct ExchangeShape {
  bool everyPairSame = false; // one share for every pair: a plain all-to-all
  bool padded = false;        // each pair's share in a slot of the largest
  int share = 0;              // every pair's, when everyPairSame
  int64_t slot = 0;           // the largest pair's share
};

/// One call of redistribute past its communicator check, with a method for
/// each part of it. The buffers stay run()'s locals, so that each is made
/// and freed where the call always made and freed it.
class Redistribution {
public:
  Redistribution(const Distribution &from, const Distribution &to, int64_t n,
                 MPI_Datatype type, MPI_Comm comm, int rank, int size,
                 collc::rt::AlltoallFn alltoall,
                 collc::rt::AlltoallvFn alltoallv)
      : from(from), to(to), n(n), type(type), comm(comm), size(size), p(size),
        me(rank), alltoall(alltoall), alltoallv(alltoallv) {}

  int run(const void *send, void *recv);

private:
  int check(int &typeSize) const;
  void countShares(std::vector<int> &sendCounts,
                   std::vector<int> &recvCounts) const;
  int agree(int error, const std::vector<int> &sendCounts,
            const std::vector<int> &recvCounts, int (&agreed)[5]) const;
  ExchangeShape shapeExchange(const int (&agreed)[5]) const;
  void layOutBuckets(const ExchangeShape &shape,
                     const std::vector<int> &sendCounts,
                     const std::vector<int> &recvCounts,
                     std::vector<int> &sendDispls,
                     std::vector<int> &recvDispls) const;
  void pack(const void *send, size_t bytes, std::vector<int> &cursor,
            std::vector<char> &packed) const;
  int exchange(const ExchangeShape &shape, const std::vector<char> &packed,
               std::vector<char> &arrived, const std::vector<int> &sendCounts,
               const std::vector<int> &sendDispls,
               const std::vector<int> &recvCounts,
               const std::vector<int> &recvDispls) const;
  void unpack(void *recv, size_t bytes, const std::vector<char> &arrived,
              std::vector<int> &cursor) const;

  const Distribution &from, &to;
  const int64_t n;
  const MPI_Datatype type;
  const MPI_Comm comm;
  const int size;
  const int64_t p, me;
  const collc::rt::AlltoallFn alltoall;
  const collc::rt::AlltoallvFn alltoallv;
};

int Redistribution::run(const void *send, void *recv) {
  // What every rank can see wrong, and what its own counts are, agreed in
  // one reduction so that every rank takes the same path or none.
  int typeSize = 0;
  const int error = check(typeSize);
  std::vector<int> sendCounts(size, 0), recvCounts(size, 0);
  if (error == MPI_SUCCESS)
    countShares(sendCounts, recvCounts);
  int agreed[5];
  int rc = agree(error, sendCounts, recvCounts, agreed);
  if (rc != MPI_SUCCESS)
    return rc;
  if (agreed[0] != MPI_SUCCESS)
    return agreed[0];
  const ExchangeShape shape = shapeExchange(agreed);

  std::vector<int> sendDispls(size, 0), recvDispls(size, 0);
  layOutBuckets(shape, sendCounts, recvCounts, sendDispls, recvDispls);
  const size_t bytes = static_cast<size_t>(typeSize);
  const size_t slotsBytes = static_cast<size_t>(shape.slot * p) * bytes;
  std::vector<char> packed(
      shape.padded ? slotsBytes
                   : static_cast<size_t>(from.count(me, n, p)) * bytes);
  std::vector<char> arrived(
      shape.padded ? slotsBytes
                   : static_cast<size_t>(to.count(me, n, p)) * bytes);
  std::vector<int> cursor = sendDispls;
  pack(send, bytes, cursor, packed);
  rc = exchange(shape, packed, arrived, sendCounts, sendDispls, recvCounts,
                recvDispls);
  if (rc != MPI_SUCCESS)
    return rc;

  // Rank s's elements arrive in increasing i: take them in that order.
  cursor = recvDispls;
  unpack(recv, bytes, arrived, cursor);
  return MPI_SUCCESS;
}

/// What every rank can see wrong, or this rank's counts past int: an MPI
/// code. typeSize is the type's once MPI_Type_size has run.
int Redistribution::check(int &typeSize) const {
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
  return error;
}

/// How many of this rank's elements go to each rank, and how many come from
/// each.
void Redistribution::countShares(std::vector<int> &sendCounts,
                                 std::vector<int> &recvCounts) const {
  from.forEachOwned(me, n, p,
                    [&](int64_t i) { ++sendCounts[to.owner(i, n, p)]; });
  to.forEachOwned(me, n, p,
                  [&](int64_t i) { ++recvCounts[from.owner(i, n, p)]; });
}

/// Reduces, over every rank, the worst error, whether the shares are
/// regular, the one share and the largest: MPI_Allreduce's code.
int Redistribution::agree(int error, const std::vector<int> &sendCounts,
                          const std::vector<int> &recvCounts,
                          int (&agreed)[5]) const {
  const int same = sendCounts.front();
  const bool regular = std::all_of(sendCounts.begin(), sendCounts.end(),
                                   [&](int c) { return c == same; }) &&
                       std::all_of(recvCounts.begin(), recvCounts.end(),
                                   [&](int c) { return c == same; });
  const int largestShare =
      *std::max_element(sendCounts.begin(), sendCounts.end());
  agreed[0] = error;
  agreed[1] = regular ? 0 : 1;
  agreed[2] = same;
  agreed[3] = -same;
  agreed[4] = largestShare;
  return MPI_Allreduce(MPI_IN_PLACE, agreed, 5, MPI_INT, MPI_MAX, comm);
}

ExchangeShape Redistribution::shapeExchange(const int (&agreed)[5]) const {
  ExchangeShape shape;
  shape.everyPairSame = agreed[1] == 0 && agreed[2] == -agreed[3];
  shape.share = agreed[2];
  // Shares that differ little (block <-> cyclic with p^2 not dividing n)
  // still take the regular exchange given, each pair's share in a slot of
  // the largest, while that sends at most twice what a rank holds; every
  // rank decides from the agreed figures alike.
  shape.slot = agreed[4];
  shape.padded = !shape.everyPairSame && alltoall &&
                 shape.slot * p <= 2 * (n / p + 1) && shape.slot * p <= INT_MAX;
  return shape;
}

/// Bucket t holds, in increasing i, the elements bound for rank t; padded,
/// bucket t starts at slot t on both sides.
void Redistribution::layOutBuckets(const ExchangeShape &shape,
                                   const std::vector<int> &sendCounts,
                                   const std::vector<int> &recvCounts,
                                   std::vector<int> &sendDispls,
                                   std::vector<int> &recvDispls) const {
  for (int t = 1; t < size; ++t) {
    sendDispls[t] = shape.padded ? static_cast<int>(shape.slot * t)
                                 : sendDispls[t - 1] + sendCounts[t - 1];
    recvDispls[t] = shape.padded ? static_cast<int>(shape.slot * t)
                                 : recvDispls[t - 1] + recvCounts[t - 1];
  }
}

/// Copies this rank's elements from `send` into their buckets, `cursor`
/// starting at each bucket's start.
void Redistribution::pack(const void *send, size_t bytes,
                          std::vector<int> &cursor,
                          std::vector<char> &packed) const {
  const char *in = static_cast<const char *>(send);
  from.forEachOwned(me, n, p, [&](int64_t i) {
    const int t = static_cast<int>(to.owner(i, n, p));
    std::memcpy(packed.data() + static_cast<size_t>(cursor[t]++) * bytes,
                in + static_cast<size_t>(from.local(i, n, p)) * bytes, bytes);
  });
}

/// The one all-to-all the shape calls for (none when every share is empty).
int Redistribution::exchange(const ExchangeShape &shape,
                             const std::vector<char> &packed,
                             std::vector<char> &arrived,
                             const std::vector<int> &sendCounts,
                             const std::vector<int> &sendDispls,
                             const std::vector<int> &recvCounts,
                             const std::vector<int> &recvDispls) const {
  int rc = MPI_SUCCESS;
  if (shape.everyPairSame) {
    if (shape.share > 0)
      rc = (alltoall ? alltoall : MPI_Alltoall)(packed.data(), shape.share,
                                                type, arrived.data(),
                                                shape.share, type, comm);
  } else if (shape.padded) {
    rc = alltoall(packed.data(), static_cast<int>(shape.slot), type,
                  arrived.data(), static_cast<int>(shape.slot), type, comm);
  } else {
    rc = (alltoallv ? alltoallv : MPI_Alltoallv)(
        packed.data(), sendCounts.data(), sendDispls.data(), type,
        arrived.data(), recvCounts.data(), recvDispls.data(), type, comm);
  }
  return rc;
}

/// Copies the arrived buckets into `recv`, `cursor` starting at each
/// bucket's start.
void Redistribution::unpack(void *recv, size_t bytes,
                            const std::vector<char> &arrived,
                            std::vector<int> &cursor) const {
  char *out = static_cast<char *>(recv);
  to.forEachOwned(me, n, p, [&](int64_t i) {
    const int s = static_cast<int>(from.owner(i, n, p));
    std::memcpy(out + static_cast<size_t>(to.local(i, n, p)) * bytes,
                arrived.data() + static_cast<size_t>(cursor[s]++) * bytes,
                bytes);
  });
}
} // namespace

int collc::rt::redistribute(const void *send, Distribution from, void *recv,
                            Distribution to, int64_t n, MPI_Datatype type,
                            MPI_Comm comm, AlltoallFn alltoall,
                            AlltoallvFn alltoallv) {
  int rank = 0, size = 0;
  if (comm == MPI_COMM_NULL || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
      MPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return MPI_ERR_COMM;
  return Redistribution(from, to, n, type, comm, rank, size, alltoall,
                        alltoallv)
      .run(send, recv);
}
