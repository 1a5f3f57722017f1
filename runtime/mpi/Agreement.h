#pragma once
// COLLC_MPI_CHECK=1: before each intercepted call, the ranks compare what
// MPI requires them to pass alike (MPI 4.0 §6.1: the collective, its root,
// operator and type signature, the counts), so a program that breaks the
// rule gets an error at every rank instead of ranks waiting for one another.
// It costs a call one MPI_Allreduce more (two for the v-calls whose counts
// are compared pairwise); it is off by default.

#include "Choice.h"

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace collc::mpi {

/// One call's arguments as numbers every rank computes alike from its own;
/// nullopt where this rank cannot tell (a user's operator, a type that
/// mixes basic types), which agrees with any value.
struct Agreed {
  Coll coll = Coll::Count;
  int root = -1; // -1 where the collective has none
  std::optional<int64_t> op, base;
  std::optional<int64_t> bytes;  // a block's, in bytes
  std::optional<int64_t> counts; // a digest of every rank's block bytes
  // Something this rank alone sees that breaks the rule (its send and
  // receive sizes differ): a short text, or null.
  const char *fault = nullptr;
};

/// Whether COLLC_MPI_CHECK is on.
bool checking();

/// A digest of p block sizes (`count(j)` elements of `type`) in bytes.
std::optional<int64_t> countsDigest(int p, const int *counts,
                                    MPI_Datatype type);

/// A call on `count` elements of `type` (its block), with `root` (-1:
/// none) and `op` (MPI_OP_NULL: none).
Agreed agreed(Coll coll, int root, MPI_Op op, int count, MPI_Datatype type);
/// `count` elements of `type` in bytes, or -1 where MPI would refuse them.
int64_t bytesOf(int count, MPI_Datatype type);

/// Compares `a` across `comm` (one MPI_Allreduce): MPI_SUCCESS where every
/// rank agrees, else MPI_ERR_ARG at every rank, through `comm`'s error
/// handler, the first difference printed once. An intercommunicator or an
/// invalid communicator is MPI's to check: MPI_SUCCESS.
int agree(MPI_Comm comm, const Agreed &a);

/// The calls whose counts pair ranks (MPI_Alltoallv, MPI_Gatherv,
/// MPI_Scatterv): agree() on the collective and `root`, then `sends(rank,
/// j)`, the bytes this rank sends rank j, are exchanged (one MPI_Alltoall)
/// and compared with `receives(rank, j)`, those it expects from j (-1: not
/// known here); a mismatch is an error at every rank (one MPI_Allreduce).
using PairBytes = std::function<int64_t(int rank, int j)>;
int agreePairwise(MPI_Comm comm, Coll coll, int root, const PairBytes &sends,
                  const PairBytes &receives);

/// Whether `comm` is an intracommunicator the check runs on (an
/// intercommunicator, or an invalid one, is MPI's to check).
bool checkable(MPI_Comm comm);

/// agree() where COLLC_MPI_CHECK is on and `comm` is checkable: `describe`
/// makes the Agreed only then, from the arguments MPI reads at this rank.
template <typename Describe> int checked(MPI_Comm comm, Describe describe) {
  return checking() && checkable(comm) ? agree(comm, describe()) : MPI_SUCCESS;
}

} // namespace collc::mpi
