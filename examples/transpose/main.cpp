// Matrix transposition by all-to-all personalized communication (000
// Example 4.2, Figure 4.17): an n x n matrix, n = p b, rowwise over p ranks,
// each holding b rows. Rank r sends rank j the b x b block of its rows in
// columns j b .. j b + b - 1; after the exchange (the proved pairwise
// exchange of Algorithm 4.10, §4.5.3) it transposes each received block and
// holds rows r b .. r b + b - 1 of the transpose. Checked against
// A^T[i][j] = A[j][i].
//
//   mpirun -np 4 build/examples/transpose/transpose_example

#include "hypercube.h"

#include <mpi.h>

#include <cstdio>
#include <vector>

namespace {

const int b = 2; // rows per rank

int element(int row, int col, int n) { return row * n + col; }

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = size * b;
  const int block = b * b;

  // send[j] is the block for rank j: my rows, rank j's columns.
  std::vector<int> send(static_cast<size_t>(size) * block);
  std::vector<int> recv(send.size());
  for (int j = 0; j < size; ++j)
    for (int i = 0; i < b; ++i)
      for (int k = 0; k < b; ++k)
        send[j * block + i * b + k] = element(rank * b + i, j * b + k, n);

  int err = hypercube::pairwise(send.data(), block, MPI_INT, recv.data(), block,
                                MPI_INT, MPI_COMM_WORLD);
  if (err != MPI_SUCCESS) {
    std::fprintf(stderr, "rank %d: pairwise failed (%d)\n", rank, err);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  // recv[j] is A[j b .., r b ..]; its transpose is A^T[r b .., j b ..].
  std::vector<int> mine(static_cast<size_t>(b) * n);
  for (int j = 0; j < size; ++j)
    for (int i = 0; i < b; ++i)
      for (int k = 0; k < b; ++k)
        mine[i * n + j * b + k] = recv[j * block + k * b + i];

  int wrong = 0;
  for (int i = 0; i < b; ++i)
    for (int c = 0; c < n; ++c)
      wrong += mine[i * n + c] != element(c, rank * b + i, n);
  int anyWrong = 0;
  MPI_Allreduce(&wrong, &anyWrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  std::vector<int> all(static_cast<size_t>(n) * n);
  MPI_Gather(mine.data(), b * n, MPI_INT, all.data(), b * n, MPI_INT, 0,
             MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("A^T, with A[i][j] = %d i + j:\n", n);
    for (int i = 0; i < n; ++i) {
      for (int c = 0; c < n; ++c)
        std::printf(" %4d", all[i * n + c]);
      std::printf("\n");
    }
    std::printf("%s: %d x %d matrix on %d ranks, transpose %s A[j][i]\n",
                anyWrong ? "FAILED" : "ok", n, n, size,
                anyWrong ? "differs from" : "matches");
  }
  MPI_Finalize();
  return anyWrong ? 1 : 0;
}
