#pragma once
// Data redistribution (004 §3): an array of n elements moved between the
// allocations HPF names over p ranks — consecutive (block), cyclic and
// block-cyclic — as one all-to-all personalized exchange whose sizes follow
// from the two allocations alone.
//
// Every rank works the sizes out alike, so when each pair exchanges the same
// number of elements (block to cyclic with p^2 dividing n, and the like) the
// exchange is a regular all-to-all: a collc-emitted one (a proved schedule)
// or MPI_Alltoall. Shares that differ little still take a given regular
// one, each in a slot of the largest; the rest an MPI_Alltoallv-shaped
// function.
// Elements travel in increasing global index, so neither side sends indices.

#include <mpi.h>

#include <cstdint>

namespace collc::rt {

/// How n elements are allocated over p ranks. Block: ceil(n / p) consecutive
/// elements a rank (HPF's BLOCK), the last ones fewer or none. Cyclic:
/// element i on rank i mod p. BlockCyclic: blocks of `block` consecutive
/// elements dealt round the ranks.
struct Distribution {
  enum class Kind { Block, Cyclic, BlockCyclic };
  Kind kind = Kind::Block;
  int64_t block = 1; // BlockCyclic only

  static Distribution consecutive() { return {Kind::Block, 1}; }
  static Distribution cyclic() { return {Kind::Cyclic, 1}; }
  static Distribution blockCyclic(int64_t b) { return {Kind::BlockCyclic, b}; }

  /// The rank that holds element i, and where in its local array.
  int64_t owner(int64_t i, int64_t n, int64_t p) const;
  int64_t local(int64_t i, int64_t n, int64_t p) const;
  /// How many elements `rank` holds.
  int64_t count(int64_t rank, int64_t n, int64_t p) const;
  /// Calls fn(i) for each element `rank` holds, in increasing i.
  template <typename Fn>
  void forEachOwned(int64_t rank, int64_t n, int64_t p, Fn &&fn) const;
};

using AlltoallFn = int (*)(const void *, int, MPI_Datatype, void *, int,
                           MPI_Datatype, MPI_Comm);
using AlltoallvFn = int (*)(const void *, const int *, const int *,
                            MPI_Datatype, void *, const int *, const int *,
                            MPI_Datatype, MPI_Comm);

/// Moves this rank's part of an n-element array of a contiguous `type` from
/// allocation `from` (in `send`, from.count(rank) elements) to `to` (into
/// `recv`, to.count(rank) elements). A regular exchange goes through
/// `alltoall`, an irregular one too, padded to the largest pair's share,
/// when that sends at most twice n/p + 1 elements a rank, and otherwise
/// through `alltoallv` (MPI_Alltoall and MPI_Alltoallv when null). Returns
/// an MPI error code, the same on every rank for arguments every rank can
/// see wrong.
int redistribute(const void *send, Distribution from, void *recv,
                 Distribution to, int64_t n, MPI_Datatype type, MPI_Comm comm,
                 AlltoallFn alltoall = nullptr,
                 AlltoallvFn alltoallv = nullptr);

template <typename Fn>
void Distribution::forEachOwned(int64_t rank, int64_t n, int64_t p,
                                Fn &&fn) const {
  switch (kind) {
  case Kind::Block: {
    const int64_t b = n / p + (n % p != 0);
    for (int64_t i = rank * b; i < n && i < (rank + 1) * b; ++i)
      fn(i);
    return;
  }
  case Kind::Cyclic:
    for (int64_t i = rank; i < n; i += p)
      fn(i);
    return;
  case Kind::BlockCyclic:
    for (int64_t start = rank * block; start < n; start += p * block)
      for (int64_t i = start; i < n && i < start + block; ++i)
        fn(i);
    return;
  }
}

} // namespace collc::rt
