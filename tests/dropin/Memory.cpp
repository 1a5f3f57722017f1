// What the drop-in keeps of a large call's memory: while large calls repeat,
// their buffers stay (taken afresh, their page faults cost more than the
// call); once calls need no more than collc::rt::detail::keptAcrossCalls,
// the process's resident memory comes back. Measured from VmRSS, with the
// program's own buffers freed before each reading.
//
//   mpirun -np N dropin_memory reduce_scatter|alltoallv_in_place

#include "collc/KeptMemory.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

/// This process's resident memory, in bytes.
long long residentBytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0)
      return std::atoll(line.c_str() + 6) * 1024;
  return -1;
}

/// One call of `what` with blocks of `count` ints, checked.
bool call(const std::string &what, int count, int p, int rank) {
  std::vector<int> in(static_cast<size_t>(count) * p, rank + 1);
  if (what == "reduce_scatter") {
    std::vector<int> out(static_cast<size_t>(count), 0);
    MPI_Reduce_scatter_block(in.data(), out.data(), count, MPI_INT, MPI_SUM,
                             MPI_COMM_WORLD);
    return out.empty() ||
           (out.front() == p * (p + 1) / 2 && out.back() == p * (p + 1) / 2);
  }
  // In place, every block is packed into a copy, sent, and unpacked.
  for (int j = 0; j < p; ++j)
    in[static_cast<size_t>(j) * count] = rank * p + j;
  std::vector<int> counts(static_cast<size_t>(p), count), displs;
  for (int j = 0; j < p; ++j)
    displs.push_back(j * count);
  MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, in.data(),
                counts.data(), displs.data(), MPI_INT, MPI_COMM_WORLD);
  for (int j = 0; j < p && count > 0; ++j)
    if (in[static_cast<size_t>(j) * count] != j * p + rank)
      return false;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const std::string what = argc > 1 ? argv[1] : "reduce_scatter";
  constexpr long long kept = collc::rt::detail::keptAcrossCalls;
  constexpr long long mib = 1 << 20;
  // A call whose buffers are three times what a thread keeps; what a
  // process holds besides them varies by a few MiB.
  const int large = static_cast<int>(3 * kept / p / sizeof(int));
  constexpr long long slack = 16 * mib;
  bool right = true;
  const long long before = residentBytes();
  for (int i = 0; i < 3; ++i)
    right &= call(what, large, p, rank);
  const long long afterLarge = residentBytes();
  for (unsigned i = 0; i < collc::rt::detail::KeptBytes::idleCalls; ++i)
    right &= call(what, 16, p, rank);
  const long long afterSmall = residentBytes();
  std::printf("rank %d: %s resident %lld MiB, after 3 large calls %lld, after "
              "%u small ones %lld\n",
              rank, what.c_str(), before / mib, afterLarge / mib,
              collc::rt::detail::KeptBytes::idleCalls, afterSmall / mib);
  if (!right)
    std::printf("FAILED: rank %d: a wrong result\n", rank);
  // Held while large calls repeat, given back once they stop.
  if (afterLarge - before <= kept + slack)
    std::printf("FAILED: rank %d: the large calls' buffers were not kept\n",
                rank);
  if (afterSmall - before > kept + slack)
    std::printf("FAILED: rank %d: %lld MiB still held after the large calls\n",
                rank, (afterSmall - before) / mib);
  MPI_Finalize();
  return 0;
}
