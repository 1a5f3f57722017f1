// Prefix sums (000 §4.3, Algorithm 4.9) with collc's proved hypercube
// schedule, called exactly like MPI_Scan, and checked against a serial
// computation of the same sums.
//
//   mpirun -np 8 build/examples/prefix_sums/prefix_sums_example

#include "hypercube.h"

#include <mpi.h>

#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  // Each rank contributes the numbers rank*10 + j; rank r receives the sum
  // over ranks 0..r, element by element.
  const int count = 4;
  std::vector<long> mine(count), prefix(count);
  for (int j = 0; j < count; ++j)
    mine[j] = rank * 10L + j;

  int err = demo::prefix_sums(mine.data(), prefix.data(), count, MPI_LONG,
                              MPI_SUM, MPI_COMM_WORLD);
  if (err != MPI_SUCCESS) {
    std::fprintf(stderr, "rank %d: prefix_sums failed (%d)\n", rank, err);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  int wrong = 0;
  for (int j = 0; j < count; ++j) {
    long serial = 0;
    for (int r = 0; r <= rank; ++r)
      serial += r * 10L + j;
    wrong += prefix[j] != serial;
  }
  int anyWrong = 0;
  MPI_Allreduce(&wrong, &anyWrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  // Rank 0 prints everything: output of several processes interleaves.
  std::vector<long> all(static_cast<size_t>(count) * size);
  MPI_Gather(prefix.data(), count, MPI_LONG, all.data(), count, MPI_LONG, 0,
             MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      std::printf("rank %d: prefix sums", r);
      for (int j = 0; j < count; ++j)
        std::printf(" %ld", all[static_cast<size_t>(r) * count + j]);
      std::printf("\n");
    }
    std::printf("%s: %d ranks, results %s the serial computation\n",
                anyWrong ? "FAILED" : "ok", size,
                anyWrong ? "differ from" : "match");
  }
  MPI_Finalize();
  return anyWrong ? 1 : 0;
}
