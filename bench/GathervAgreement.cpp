// What a uniform decision for MPI_Gatherv would cost (docs/dropin.md,
// "Gatherv and scatterv"): MPI's own gatherv with equal counts, which the
// drop-in runs, beside collc's gather schedule plus the broadcast of one
// integer from the root that every rank would need to learn that the
// counts are equal. Run with the drop-in preloaded, so that MPI_Gather is
// collc's:
//
//   mpirun -np 4 -x LD_PRELOAD=build/runtime/mpi/libcollc_mpi.so
//          build/bench/gatherv_agreement [ITERATIONS]
//
// Prints a Markdown table: per block size, the median over the calls of
// the slowest rank's time, each call after a barrier.

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const int iterations = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2000;
  const char *columns[] = {"PMPI_Gatherv", "MPI_Gather (collc)", "PMPI_Gather",
                           "PMPI_Bcast of an int"};
  if (rank == 0) {
    std::printf("| block | ranks |");
    for (const char *c : columns)
      std::printf(" %s |", c);
    std::printf(" collc gather + bcast |\n|---|---|---|---|---|---|---|\n");
  }
  std::vector<int> counts(static_cast<size_t>(p)), displs(static_cast<size_t>(p));
  std::vector<double> times(static_cast<size_t>(iterations));
  for (int m : {8, 1024, 65536}) {
    std::vector<char> send(static_cast<size_t>(m)),
        recv(static_cast<size_t>(m) * static_cast<size_t>(p));
    for (int j = 0; j < p; ++j) {
      counts[static_cast<size_t>(j)] = m;
      displs[static_cast<size_t>(j)] = j * m;
    }
    double median[4] = {};
    for (int k = 0; k < 4; ++k) {
      for (int i = -50; i < iterations; ++i) { // 50 to warm up
        int value = i;
        PMPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        if (k == 0)
          PMPI_Gatherv(send.data(), m, MPI_BYTE, recv.data(), counts.data(),
                       displs.data(), MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (k == 1)
          MPI_Gather(send.data(), m, MPI_BYTE, recv.data(), m, MPI_BYTE, 0,
                     MPI_COMM_WORLD);
        else if (k == 2)
          PMPI_Gather(send.data(), m, MPI_BYTE, recv.data(), m, MPI_BYTE, 0,
                      MPI_COMM_WORLD);
        else
          PMPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
        const double took = MPI_Wtime() - start;
        double slowest = 0;
        PMPI_Reduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (i >= 0)
          times[static_cast<size_t>(i)] = slowest;
      }
      std::nth_element(times.begin(), times.begin() + iterations / 2,
                       times.end());
      median[k] = times[static_cast<size_t>(iterations / 2)] * 1e6;
    }
    if (rank == 0) {
      std::printf("| %d B | %d |", m, p);
      for (double us : median)
        std::printf(" %.2f us |", us);
      std::printf(" %.2f us |\n", median[1] + median[3]);
    }
  }
  MPI_Finalize();
  return 0;
}
