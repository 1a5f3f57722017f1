// The report (COLLC_MPI_REPORT=1) counts the calls made within
// MPI_Finalize too: a delete callback on MPI_COMM_SELF runs when
// MPI_Finalize frees its attributes (MPI 3.1 §8.7.1), and the all-reduces
// it calls there must be in the report printed after it.
//
//   COLLC_MPI_REPORT=1 mpirun -np N dropin_finalize

#include <mpi.h>

#include <cstdio>

namespace {

int allreduceAtFinalize(MPI_Comm, int, void *, void *) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int round = 0; round < 3; ++round) {
    int one = 1, sum = 0;
    if (MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) !=
            MPI_SUCCESS ||
        sum != size)
      std::printf("FAILED: the all-reduce within MPI_Finalize\n");
  }
  return MPI_SUCCESS;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, allreduceAtFinalize, &keyval,
                         nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  MPI_Comm_free_keyval(&keyval);
  return MPI_Finalize();
}
