// Erroneous programs that used to leave ranks waiting forever: each must
// now end within seconds, every rank with the error or the job aborted.
//
//   mpirun -np 4 dropin_errors CASE
//
//   null_buffer_one_rank  rank 1 passes a null receive buffer with count 4
//   allgatherv_null_one_rank  rank 1 passes a null receive buffer to an
//                         all-gather of near-equal counts (it was copied
//                         into: a segmentation fault)
//   reduce_scatter_null_one_rank  the same for a reduce-scatter
//   in_place_one_rank     rank 1 passes MPI_IN_PLACE as its receive buffer
//   in_place_send_one_rank  rank 1, not the root of a reduce, passes
//                         MPI_IN_PLACE as its send buffer
//   in_place_strided_one_rank  rank 1 passes MPI_IN_PLACE as MPI_Allgather's
//                         receive buffer, of a strided type (it was packed
//                         from MPI's marker: a segmentation fault)
//   alltoallv_in_place_receive  rank 2 passes MPI_IN_PLACE as
//                         MPI_Alltoallv's receive buffer (also a crash)
//   sizes_differ          the root broadcasts 4 ints, the others expect 64
//   pinned_bad_schedule   COLLC_MPI_ALLREDUCE names no schedule
//   alltoallv_counts_differ  rank 2 expects more from rank 0 than it sends
//   alltoallv_negative_count rank 3 passes a negative send count
//   gather_root_count     the root of a gather passes receive count -1
//   scatter_root_type     the root of a scatter passes MPI_DATATYPE_NULL as
//                         its send type
//   gather_root_in_place_count  the same as gather_root_count, the root's
//                         block in place
//   gather_root_size      the root of a gather expects no data, the others
//                         send 4 ints each
//
// Under COLLC_MPI_CHECK=1, on a communicator that returns errors: programs
// that break MPI's same-arguments rule, which no rank can see alone. Every
// rank must return MPI_ERR_ARG.
//   check_roots_differ    rank 3 broadcasts from root 1, the others from 0
//   check_collectives_differ  rank 3 calls MPI_Allreduce, the others
//                         MPI_Bcast
//   check_counts_differ   rank 2 all-reduces 8 ints, the others 4
//   check_ops_differ      rank 1 all-reduces with MPI_MAX, the others
//                         MPI_SUM
//   check_alltoallv_counts  rank 2 expects 3 ints from rank 0, which sends 4
//   check_gatherv_counts  the root expects 3 ints from rank 2, which sends 4
//   check_allgatherv_counts  rank 1's recvcounts differ from the others'

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "";
  if (std::strcmp(which, "pinned_bad_schedule") == 0)
    setenv("COLLC_MPI_ALLREDUCE", "no_such_schedule", 1);
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<int> in(64, rank), out(64, 0);
  int rc = MPI_SUCCESS;
  const bool check = std::strncmp(which, "check_", 6) == 0;
  if (check)
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (std::strcmp(which, "check_roots_differ") == 0) {
    rc = MPI_Bcast(out.data(), 4, MPI_INT, rank == 3 ? 1 : 0, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "check_collectives_differ") == 0) {
    rc = rank == 3 ? MPI_Allreduce(in.data(), out.data(), 4, MPI_INT, MPI_SUM,
                                   MPI_COMM_WORLD)
                   : MPI_Bcast(out.data(), 4, MPI_INT, 0, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "check_counts_differ") == 0) {
    rc = MPI_Allreduce(in.data(), out.data(), rank == 2 ? 8 : 4, MPI_INT,
                       MPI_SUM, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "check_ops_differ") == 0) {
    rc = MPI_Allreduce(in.data(), out.data(), 4, MPI_INT,
                       rank == 1 ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "check_gatherv_counts") == 0) {
    const int counts[4] = {4, 4, 3, 4}, displs[4] = {0, 4, 8, 12};
    rc = MPI_Gatherv(in.data(), 4, MPI_INT, out.data(), counts, displs, MPI_INT,
                     0, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "check_allgatherv_counts") == 0) {
    int counts[4] = {4, 4, 4, 4};
    const int displs[4] = {0, 4, 8, 12};
    if (rank == 1)
      counts[0] = 5;
    rc = MPI_Allgatherv(in.data(), counts[rank], MPI_INT, out.data(), counts,
                        displs, MPI_INT, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "allgatherv_null_one_rank") == 0) {
    // Near-equal counts: padded into blocks alike, copied by the drop-in.
    const int counts[4] = {4, 3, 4, 4}, displs[4] = {0, 4, 7, 11};
    rc = MPI_Allgatherv(in.data(), counts[rank], MPI_INT,
                        rank == 1 ? nullptr : out.data(), counts, displs,
                        MPI_INT, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "reduce_scatter_null_one_rank") == 0) {
    const int counts[4] = {4, 3, 4, 4};
    rc = MPI_Reduce_scatter(in.data(), rank == 1 ? nullptr : out.data(), counts,
                            MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "null_buffer_one_rank") == 0) {
    rc = MPI_Allreduce(in.data(), rank == 1 ? nullptr : out.data(), 4,
                       MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "in_place_one_rank") == 0) {
    rc = MPI_Allreduce(in.data(), rank == 1 ? MPI_IN_PLACE : out.data(), 4,
                       MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "in_place_send_one_rank") == 0) {
    rc = MPI_Reduce(rank <= 1 ? MPI_IN_PLACE : in.data(), out.data(), 4,
                    MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  } else if (std::strcmp(which, "in_place_strided_one_rank") == 0) {
    MPI_Datatype strided;
    MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    rc = MPI_Allgather(in.data(), 2, strided,
                       rank == 1 ? MPI_IN_PLACE : out.data(), 2, strided,
                       MPI_COMM_WORLD);
    MPI_Type_free(&strided);
  } else if (std::strcmp(which, "sizes_differ") == 0) {
    rc = MPI_Bcast(out.data(), rank == 0 ? 4 : 64, MPI_INT, 0,
                   MPI_COMM_WORLD);
  } else if (std::strcmp(which, "pinned_bad_schedule") == 0) {
    rc = MPI_Allreduce(in.data(), out.data(), 4, MPI_INT, MPI_SUM,
                       MPI_COMM_WORLD);
  } else if (std::strncmp(which, "gather_root_", 12) == 0) {
    // Arguments that only the root passes (MPI 4.0 §6.5): the others
    // cannot see them, so they would run on without it.
    out.resize(256, 0);
    const bool inPlace = std::strcmp(which, "gather_root_in_place_count") == 0;
    const int recvcount = std::strcmp(which, "gather_root_size") == 0 ? 0 : -1;
    rc = MPI_Gather(rank == 0 && inPlace ? MPI_IN_PLACE : in.data(), 4, MPI_INT,
                    out.data(), rank == 0 ? recvcount : 4, MPI_INT, 0,
                    MPI_COMM_WORLD);
  } else if (std::strcmp(which, "scatter_root_type") == 0) {
    in.resize(256, rank);
    rc = MPI_Scatter(in.data(), 4, rank == 0 ? MPI_DATATYPE_NULL : MPI_INT,
                     out.data(), 4, MPI_INT, 0, MPI_COMM_WORLD);
  } else if (std::strncmp(which, "alltoallv_", 10) == 0 ||
             std::strcmp(which, "check_alltoallv_counts") == 0) {
    // Four ints between every pair, but for the case's one rank.
    std::vector<int> counts(64, 4), displs(64);
    for (int j = 0; j < 16; ++j)
      displs[static_cast<size_t>(j)] = 4 * j;
    std::vector<int> sendCounts = counts, recvCounts = counts;
    if ((std::strcmp(which, "alltoallv_counts_differ") == 0 ||
         std::strcmp(which, "check_alltoallv_counts") == 0) &&
        rank == 2)
      recvCounts[0] = 3; // rank 0 still sends 4
    if (std::strcmp(which, "alltoallv_negative_count") == 0 && rank == 3)
      sendCounts[1] = -1;
    in.resize(256, rank);
    out.resize(256, 0);
    void *recv = out.data();
    if (std::strcmp(which, "alltoallv_in_place_receive") == 0 && rank == 2)
      recv = MPI_IN_PLACE;
    rc = MPI_Alltoallv(in.data(), sendCounts.data(), displs.data(), MPI_INT,
                       recv, recvCounts.data(), displs.data(), MPI_INT,
                       MPI_COMM_WORLD);
  } else {
    std::fprintf(stderr, "unknown case '%s'\n", which);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  // A rank the error passed by (the root of sizes_differ sends what it has
  // and is done) goes on as a program would, to its next call, where the
  // abort finds it. (Open MPI 4.1 can leave a job whose ranks abort while
  // another is inside MPI_Finalize running until mpirun is killed.)
  std::printf("rank %d: returned %d\n", rank, rc);
  std::fflush(stdout);
  if (check) {
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    int mine = cls == MPI_ERR_ARG, all = 0, size = 0;
    PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
      std::printf("check: %d of %d ranks returned MPI_ERR_ARG\n", all, size);
    std::fflush(stdout);
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc == MPI_SUCCESS ? 0 : 1;
}
