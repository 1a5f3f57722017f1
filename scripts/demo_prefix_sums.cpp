// The demo's last step (scripts/demo.sh): prefix sums, Algorithm 4.9, run by
// the code `collc compile specs/hypercube.coll` emitted, on 8 ranks. By
// default the ranks are threads of this process (collc's local backend);
// with --mpi, the processes mpirun started. Prints each rank's input and
// result, checks them against a serial prefix sum, and exits 1 on mismatch.
//
//   prefix_sums            # 8 threads
//   mpirun -np 8 prefix_sums --mpi

#include "hypercube.h"

#include "collc/Local.h"

#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int count = 4;

std::vector<long> input(int rank) {
  std::vector<long> v(count);
  for (int i = 0; i < count; ++i)
    v[static_cast<size_t>(i)] = (rank + 1) * (i + 1);
  return v;
}

// This rank's line of output; `ok` says whether it matches the serial sums.
std::string report(int rank, int rc, const std::vector<long> &in,
                   const std::vector<long> &out, bool &ok) {
  std::vector<long> want(count, 0);
  for (int r = 0; r <= rank; ++r)
    for (int i = 0; i < count; ++i)
      want[static_cast<size_t>(i)] += input(r)[static_cast<size_t>(i)];
  ok = rc == MPI_SUCCESS && out == want;
  std::string line = "rank " + std::to_string(rank) + ": input";
  char number[32];
  for (long x : in) {
    std::snprintf(number, sizeof number, " %3ld", x);
    line += number;
  }
  line += "  ->  prefix sums";
  for (long x : out) {
    std::snprintf(number, sizeof number, " %4ld", x);
    line += number;
  }
  return line + (rc != MPI_SUCCESS ? "  (error)" : ok ? "" : "  (WRONG)");
}

} // namespace

int main(int argc, char **argv) {
  const bool useMpi = argc > 1 && std::strcmp(argv[1], "--mpi") == 0;
  if (useMpi) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<long> in = input(rank), out(count);
    int rc = demo::prefix_sums(in.data(), out.data(), count, MPI_LONG,
                               MPI_SUM, MPI_COMM_WORLD);
    bool ok = false;
    // Rank 0 prints every rank's line, in rank order.
    char line[256] = {};
    std::snprintf(line, sizeof line, "%s", report(rank, rc, in, out, ok).c_str());
    std::vector<char> lines(rank == 0 ? sizeof line * size : 0);
    MPI_Gather(line, sizeof line, MPI_CHAR, lines.data(), sizeof line,
               MPI_CHAR, 0, MPI_COMM_WORLD);
    int wrong = !ok, anyWrong = 0;
    MPI_Reduce(&wrong, &anyWrong, 1, MPI_INT, MPI_LOR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      for (int r = 0; r < size; ++r)
        std::printf("%s\n", lines.data() + sizeof line * r);
      std::printf(anyWrong ? "MISMATCH with the serial prefix sums\n"
                           : "OK: %d MPI processes match the serial prefix "
                             "sums\n",
                  size);
    }
    MPI_Bcast(&anyWrong, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return anyWrong;
  }
  constexpr int ranks = 8;
  std::vector<std::vector<long>> in(ranks), out(ranks);
  std::vector<int> codes(ranks);
  int rc = collc::rt::local::run(ranks, [&](collc::rt::LocalComm &comm) {
    const size_t me = static_cast<size_t>(comm.rank());
    in[me] = input(comm.rank());
    out[me].assign(count, 0);
    codes[me] = demo::local::prefix_sums(in[me].data(), out[me].data(), count,
                                         MPI_LONG, MPI_SUM, comm);
  });
  if (rc != MPI_SUCCESS) {
    std::printf("cannot start the local backend\n");
    return 1;
  }
  bool wrong = false;
  for (int r = 0; r < ranks; ++r) {
    const size_t i = static_cast<size_t>(r);
    bool ok = false;
    std::printf("%s\n", report(r, codes[i], in[i], out[i], ok).c_str());
    wrong |= !ok;
  }
  std::printf(wrong ? "MISMATCH with the serial prefix sums\n"
                    : "OK: %d threads (local backend) match the serial prefix "
                      "sums\n",
              ranks);
  return wrong;
}
