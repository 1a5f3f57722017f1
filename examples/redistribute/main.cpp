// Data redistribution before an FFT-like step (004 §3, §4.4). An array of
// n = 16 p^2 values starts in consecutive (block) allocation. The first
// butterfly stage of a radix-2 FFT pairs elements i and i + n/2, which sit
// p/2 ranks apart there; in cyclic allocation they sit on one rank, so the
// array is moved block -> cyclic (an all-to-all personalized exchange in
// which every pair trades n/p^2 values: the proved pairwise exchange of
// Algorithm 4.10), the stage is computed locally, and the array moves back.
// Checked element by element against the stage computed whole. Then a
// block-cyclic allocation of blocks of 3 over n + 5 values, where the pairs
// trade different amounts (MPI_Alltoallv), goes there and back unchanged,
// and a wrong type on one rank alone returns the same error on every rank.
//
//   mpirun -np 4 build/examples/redistribute/redistribute_example

#include "hypercube.h"

#include "collc/Redistribute.h"

#include <mpi.h>

#include <cstdio>
#include <vector>

namespace {

using collc::rt::Distribution;

double value(int64_t i) { return static_cast<double>((i * 7) % 13) + 0.5 * i; }

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t p = size, n = 16 * p * p;
  const Distribution block = Distribution::consecutive(),
                     cyclic = Distribution::cyclic();
  bool ok = true;

  std::vector<double> mine(static_cast<size_t>(block.count(rank, n, p)));
  block.forEachOwned(rank, n, p, [&](int64_t i) {
    mine[static_cast<size_t>(block.local(i, n, p))] = value(i);
  });
  std::vector<double> dealt(static_cast<size_t>(cyclic.count(rank, n, p)));
  int rc =
      collc::rt::redistribute(mine.data(), block, dealt.data(), cyclic, n,
                              MPI_DOUBLE, MPI_COMM_WORLD, hypercube::pairwise);
  ok &= rc == MPI_SUCCESS;

  // The butterfly across n/2: local in cyclic allocation, since p divides
  // n/2 (element i + n/2 is local element i/p + n/(2p)).
  const size_t half = static_cast<size_t>(n / (2 * p));
  for (size_t l = 0; l < half; ++l) {
    const double a = dealt[l], b = dealt[l + half];
    dealt[l] = a + b;
    dealt[l + half] = a - b;
  }
  rc = collc::rt::redistribute(dealt.data(), cyclic, mine.data(), block, n,
                               MPI_DOUBLE, MPI_COMM_WORLD, hypercube::pairwise);
  ok &= rc == MPI_SUCCESS;
  block.forEachOwned(rank, n, p, [&](int64_t i) {
    const double want =
        i < n / 2 ? value(i) + value(i + n / 2) : value(i - n / 2) - value(i);
    if (mine[static_cast<size_t>(block.local(i, n, p))] != want) {
      if (ok)
        std::printf("rank %d: element %lld is %g, want %g\n", rank,
                    static_cast<long long>(i),
                    mine[static_cast<size_t>(block.local(i, n, p))], want);
      ok = false;
    }
  });

  // Blocks of 3 dealt round the ranks, over a size no allocation divides.
  const int64_t m = n + 5;
  const Distribution threes = Distribution::blockCyclic(3);
  std::vector<double> start(static_cast<size_t>(block.count(rank, m, p)));
  block.forEachOwned(rank, m, p, [&](int64_t i) {
    start[static_cast<size_t>(block.local(i, m, p))] = value(i);
  });
  std::vector<double> there(static_cast<size_t>(threes.count(rank, m, p)));
  std::vector<double> back(start.size());
  ok &= collc::rt::redistribute(start.data(), block, there.data(), threes, m,
                                MPI_DOUBLE, MPI_COMM_WORLD) == MPI_SUCCESS;
  threes.forEachOwned(rank, m, p, [&](int64_t i) {
    ok &= there[static_cast<size_t>(threes.local(i, m, p))] == value(i);
  });
  ok &= collc::rt::redistribute(there.data(), threes, back.data(), block, m,
                                MPI_DOUBLE, MPI_COMM_WORLD) == MPI_SUCCESS;
  ok &= back == start;

  // One rank alone passes a wrong type: every rank returns the same error,
  // agreed before any message, and none is left waiting.
  const int wrong = collc::rt::redistribute(
      start.data(), block, there.data(), threes, m,
      rank == size - 1 ? MPI_DATATYPE_NULL : MPI_DOUBLE, MPI_COMM_WORLD);
  ok &= wrong == MPI_ERR_TYPE;

  int everywhere = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf(everywhere ? "ok: %lld elements on %d ranks: block -> cyclic "
                             "-> block around the butterfly, and block-cyclic "
                             "(3) over %lld, match\n"
                           : "FAILED: %lld elements on %d ranks (%lld)\n",
                static_cast<long long>(n), size, static_cast<long long>(m));
  MPI_Finalize();
  return everywhere ? 0 : 1;
}
