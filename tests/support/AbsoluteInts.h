#pragma once
// A datatype for buffers at MPI_BOTTOM (MPI 4.0 §5.1.12): ints of `data` at
// their absolute address.

#include <mpi.h>

namespace collc::test {

/// Pairs of `data`'s ints, second first (`reversed`: every layer must pack
/// it, as it is not in MPI_Pack's order), or ints one by one in order
/// (used where they lie). Committed; the caller frees it.
inline MPI_Datatype absoluteInts(int *data, bool reversed) {
  MPI_Aint first = 0, second = 0;
  MPI_Get_address(data, &first);
  MPI_Get_address(data + 1, &second);
  const int ones[] = {1, 1};
  const MPI_Aint at[] = {second, first};
  const MPI_Datatype ints[] = {MPI_INT, MPI_INT};
  MPI_Datatype t;
  MPI_Type_create_struct(reversed ? 2 : 1, ones, reversed ? at : &first, ints,
                         &t);
  MPI_Type_commit(&t);
  return t;
}

} // namespace collc::test
