// An ordinary MPI program that knows nothing of collc: a distributed
// histogram and statistics of some samples. Run it as it is, or with the
// drop-in, which runs its collective calls by collc's proved schedules:
//
//   mpirun -np 6 ./dropin_example
//   mpirun -np 6 -x LD_PRELOAD=PREFIX/lib/libcollc_mpi.so
//          -x COLLC_MPI_REPORT=1 ./dropin_example
//
// (with MPICH: mpiexec -genv LD_PRELOAD ... instead of -x).
//
// It checks every result against a serial computation at rank 0.

#include <mpi.h>

#include <cstdio>
#include <vector>

namespace {

// Rank r's samples: a fixed sequence, so rank 0 can compute them all.
std::vector<int> samplesOf(int rank, int n) {
  std::vector<int> s(static_cast<size_t>(n));
  unsigned x = 12345u + 977u * static_cast<unsigned>(rank);
  for (int &v : s) {
    x = x * 1103515245u + 12345u;
    v = static_cast<int>((x >> 16) % 100);
  }
  return s;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  // The last rank decides how many samples each rank draws.
  int n = rank == size - 1 ? 1000 : 0;
  MPI_Bcast(&n, 1, MPI_INT, size - 1, MPI_COMM_WORLD);
  const std::vector<int> mine = samplesOf(rank, n);

  // A histogram of 10 bins, summed over ranks; the extremes.
  std::vector<long> bins(10, 0), total(10, 0);
  for (int v : mine)
    ++bins[static_cast<size_t>(v / 10)];
  MPI_Allreduce(bins.data(), total.data(), 10, MPI_LONG, MPI_SUM,
                MPI_COMM_WORLD);
  int lo = 100, hi = -1, globalLo = 0, globalHi = 0;
  for (int v : mine) {
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  MPI_Allreduce(&lo, &globalLo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&hi, &globalHi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

  // Each rank's mean, gathered at rank 1; a running total by rank order.
  double mean = 0;
  for (int v : mine)
    mean += v;
  mean /= n;
  std::vector<double> means(static_cast<size_t>(size));
  MPI_Gather(&mean, 1, MPI_DOUBLE, means.data(), 1, MPI_DOUBLE, 1 % size,
             MPI_COMM_WORLD);
  long count = static_cast<long>(mine.size()), upTo = 0;
  MPI_Scan(&count, &upTo, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

  // Everyone's first three samples, everywhere.
  std::vector<int> firsts(static_cast<size_t>(3 * size));
  MPI_Allgather(mine.data(), 3, MPI_INT, firsts.data(), 3, MPI_INT,
                MPI_COMM_WORLD);

  // Rank 0 checks everything against a serial computation; rank 1 its means.
  int wrong = 0;
  std::vector<long> serialBins(10, 0);
  int serialLo = 100, serialHi = -1;
  for (int r = 0; r < size; ++r) {
    const std::vector<int> s = samplesOf(r, n);
    for (int v : s) {
      ++serialBins[static_cast<size_t>(v / 10)];
      serialLo = v < serialLo ? v : serialLo;
      serialHi = v > serialHi ? v : serialHi;
    }
    for (int j = 0; j < 3; ++j)
      wrong += firsts[static_cast<size_t>(3 * r + j)] != s[static_cast<size_t>(j)];
    if (rank == 1 % size) {
      double m = 0;
      for (int v : s)
        m += v;
      wrong += means[static_cast<size_t>(r)] != m / n;
    }
  }
  wrong += total != serialBins || globalLo != serialLo || globalHi != serialHi;
  wrong += upTo != static_cast<long>(rank + 1) * n;
  int anyWrong = 0;
  MPI_Reduce(&wrong, &anyWrong, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("%d ranks, %d samples each; bins:", size, n);
    for (long b : total)
      std::printf(" %ld", b);
    std::printf("; min %d, max %d\n", globalLo, globalHi);
    std::printf("%s: results %s the serial computation\n",
                anyWrong ? "FAILED" : "ok", anyWrong ? "differ from" : "match");
  }
  MPI_Finalize();
  return anyWrong ? 1 : 0;
}
