// Matrix-vector multiplication y = A x on a q x q mesh of processes
// (000 Example 4.1, Figure 4.4), with blocks instead of single elements:
// process (i, j) holds the n/q x n/q block A[i][j]; the top row holds x, one
// block per column. Each column broadcasts its block of x from the top
// (one-to-all broadcast on a linear array, Figure 4.2), every process
// multiplies, and each row reduces its partial products into its first
// process (all-to-one reduction, Figure 4.3), so y ends in the leftmost
// column. Rows and columns are sub-communicators (MPI_Comm_split), each a
// linear array for the proved schedules of matvec.coll. The result is checked
// against a serial product.
//
//   mpirun -np 4 build/examples/matvec/matvec_example    (or 9, 16: p = q^2)

#include "matvec.h"

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

const int blockSize = 3; // rows and columns of a block

// Integer-valued entries, so every sum is exact in double.
double matrix(int row, int col) { return (row * 7 + col * 3) % 11 - 5; }
double vector(int row) { return row % 5 + 1; }

void require(int err, const char *what) {
  if (err != MPI_SUCCESS) {
    std::fprintf(stderr, "%s failed (%d)\n", what, err);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int q = static_cast<int>(std::lround(std::sqrt(size)));
  if (q * q != size) {
    if (rank == 0)
      std::fprintf(stderr, "matvec: needs a square number of ranks, not %d\n",
                   size);
    MPI_Finalize();
    return 2;
  }
  const int n = q * blockSize;
  // Row-major mesh labels, as Figure 4.4 numbers the processes.
  const int row = rank / q, col = rank % q;
  MPI_Comm rowComm, colComm;
  MPI_Comm_split(MPI_COMM_WORLD, row, col, &rowComm);
  MPI_Comm_split(MPI_COMM_WORLD, col, row, &colComm);

  // x's block `col` starts on the top process of the column.
  std::vector<double> x(blockSize, 0.0);
  if (row == 0)
    for (int k = 0; k < blockSize; ++k)
      x[k] = vector(col * blockSize + k);
  require(mesh::column_bc(x.data(), blockSize, MPI_DOUBLE, 0, colComm),
          "column broadcast");

  std::vector<double> partial(blockSize, 0.0), y(blockSize, 0.0);
  for (int i = 0; i < blockSize; ++i)
    for (int k = 0; k < blockSize; ++k)
      partial[i] += matrix(row * blockSize + i, col * blockSize + k) * x[k];
  require(mesh::row_reduce(partial.data(), y.data(), blockSize, MPI_DOUBLE,
                           MPI_SUM, 0, rowComm),
          "row reduction");

  // The leftmost column holds y; it checks its blocks and sends them to
  // rank 0 to print.
  int wrong = 0;
  std::vector<double> all(n);
  if (col == 0) {
    for (int i = 0; i < blockSize; ++i) {
      double serial = 0;
      for (int k = 0; k < n; ++k)
        serial += matrix(row * blockSize + i, k) * vector(k);
      wrong += y[i] != serial;
    }
    MPI_Gather(y.data(), blockSize, MPI_DOUBLE, all.data(), blockSize,
               MPI_DOUBLE, 0, colComm);
  }
  int anyWrong = 0;
  MPI_Reduce(&wrong, &anyWrong, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("y = A x for a %d x %d matrix:", n, n);
    for (double v : all)
      std::printf(" %g", v);
    std::printf("\n%s: %d x %d mesh, y = A x %s the serial product\n",
                anyWrong ? "FAILED" : "ok", q, q,
                anyWrong ? "differs from" : "matches");
  }
  MPI_Bcast(&anyWrong, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Comm_free(&rowComm);
  MPI_Comm_free(&colComm);
  MPI_Finalize();
  return anyWrong ? 1 : 0;
}
