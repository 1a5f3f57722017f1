// The drop-in under MPI_THREAD_MULTIPLE: several threads call collectives
// at once, each on its own duplicate of the world (MPI 4.0 §11.6.3: calls
// on different communicators may overlap). Every result is checked, and
// the report's tallies (collc_mpi_counts) must count every call exactly
// once: each thread keeps its own, so none is lost to another's.
//
//   mpirun -np N dropin_threads [THREADS] [CALLS] [every]
//
// Prints "threads: N calls, M failed" at rank 0; "skipped: ..." where the
// MPI does not provide MPI_THREAD_MULTIPLE.

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

extern "C" void collc_mpi_counts(unsigned long long *collc,
                                 unsigned long long *mpi);

namespace {

/// The value rank `from` sends rank `to` in call `seed`, element k.
int valueOf(int from, int to, int seed, int k) {
  return from * 1000 + to * 10 + seed + k;
}

/// One call of each of the others; returns the number of wrong results.
int everyOther(MPI_Comm comm, int rank, int p, int seed, int root) {
  constexpr int n = 5;
  const size_t all = static_cast<size_t>(p) * n;
  std::vector<int> in(all), out(all, -1);
  int wrong = 0;
  for (int t = 0; t < p; ++t)
    for (int k = 0; k < n; ++k)
      in[static_cast<size_t>(t * n + k)] = valueOf(rank, t, seed, k);
  MPI_Alltoall(in.data(), n, MPI_INT, out.data(), n, MPI_INT, comm);
  for (int s = 0; s < p; ++s)
    for (int k = 0; k < n; ++k)
      wrong += out[static_cast<size_t>(s * n + k)] != valueOf(s, rank, seed, k);

  // Rank t gets 1 + (rank + t) % n elements from each rank.
  std::vector<int> sendCounts(static_cast<size_t>(p)),
      recvCounts(sendCounts.size()), sendDispls(sendCounts.size()),
      recvDispls(sendCounts.size());
  for (int t = 0; t < p; ++t) {
    sendCounts[static_cast<size_t>(t)] = 1 + (rank + t) % n;
    recvCounts[static_cast<size_t>(t)] = 1 + (t + rank) % n;
    sendDispls[static_cast<size_t>(t)] = recvDispls[static_cast<size_t>(t)] =
        t * n;
  }
  std::fill(out.begin(), out.end(), -1);
  MPI_Alltoallv(in.data(), sendCounts.data(), sendDispls.data(), MPI_INT,
                out.data(), recvCounts.data(), recvDispls.data(), MPI_INT,
                comm);
  for (int s = 0; s < p; ++s)
    for (int k = 0; k < recvCounts[static_cast<size_t>(s)]; ++k)
      wrong += out[static_cast<size_t>(s * n + k)] != valueOf(s, rank, seed, k);

  std::vector<int> mine(n);
  for (int k = 0; k < n; ++k)
    mine[static_cast<size_t>(k)] = valueOf(rank, 0, seed, k);
  MPI_Allgather(mine.data(), n, MPI_INT, out.data(), n, MPI_INT, comm);
  for (int s = 0; s < p; ++s)
    for (int k = 0; k < n; ++k)
      wrong += out[static_cast<size_t>(s * n + k)] != valueOf(s, 0, seed, k);

  std::vector<int> folded(n, -1);
  MPI_Reduce(mine.data(), folded.data(), n, MPI_INT, MPI_SUM, root, comm);
  for (int k = 0; rank == root && k < n; ++k) {
    int sum = 0;
    for (int s = 0; s < p; ++s)
      sum += valueOf(s, 0, seed, k);
    wrong += folded[static_cast<size_t>(k)] != sum;
  }
  MPI_Scan(mine.data(), folded.data(), n, MPI_INT, MPI_SUM, comm);
  for (int k = 0; k < n; ++k) {
    int sum = 0;
    for (int s = 0; s <= rank; ++s)
      sum += valueOf(s, 0, seed, k);
    wrong += folded[static_cast<size_t>(k)] != sum;
  }
  return wrong;
}

/// One thread's calls: an all-reduce and a broadcast from a moving root,
/// `calls` times, on `comm`; with `every`, also an all-gather, an
/// all-to-all, an irregular all-to-all (the runtime's second channel), a
/// reduction to a moving root and a scan. Returns the number of wrong
/// results.
int work(MPI_Comm comm, int thread, int calls, bool every) {
  int rank = 0, p = 0, wrong = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &p);
  for (int i = 0; i < calls; ++i) {
    const int count = 1 + (i * 7 + thread) % 300;
    std::vector<int> in(static_cast<size_t>(count)), out(in.size());
    for (int k = 0; k < count; ++k)
      in[static_cast<size_t>(k)] = rank * 3 + k + thread + i;
    MPI_Allreduce(in.data(), out.data(), count, MPI_INT, MPI_SUM, comm);
    for (int k = 0; k < count; ++k)
      wrong += out[static_cast<size_t>(k)] !=
               3 * p * (p - 1) / 2 + p * (k + thread + i);
    const int root = (i + thread) % p;
    for (int k = 0; k < count; ++k)
      out[static_cast<size_t>(k)] = rank == root ? k * root + thread : -1;
    MPI_Bcast(out.data(), count, MPI_INT, root, comm);
    for (int k = 0; k < count; ++k)
      wrong += out[static_cast<size_t>(k)] != k * root + thread;
    if (every)
      wrong += everyOther(comm, rank, p, thread + i, root);
  }
  return wrong;
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0)
      std::printf("skipped: this MPI does not provide MPI_THREAD_MULTIPLE\n");
    MPI_Finalize();
    return 0;
  }
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 200;
  const bool every = argc > 3 && std::string(argv[3]) == "every";
  std::vector<MPI_Comm> comms(static_cast<size_t>(threads));
  for (MPI_Comm &c : comms)
    MPI_Comm_dup(MPI_COMM_WORLD, &c);

  unsigned long long ours0 = 0, theirs0 = 0;
  collc_mpi_counts(&ours0, &theirs0);
  std::vector<int> wrong(static_cast<size_t>(threads));
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&, t] {
      wrong[static_cast<size_t>(t)] =
          work(comms[static_cast<size_t>(t)], t, calls, every);
    });
  for (std::thread &t : running)
    t.join();
  unsigned long long ours = 0, theirs = 0;
  collc_mpi_counts(&ours, &theirs);

  // Every call counted once, by collc or by MPI: two or seven calls per
  // iteration.
  const unsigned long long expected =
      (every ? 7ull : 2ull) * static_cast<unsigned long long>(threads * calls);
  const unsigned long long counted = ours - ours0 + theirs - theirs0;
  int failed = 0;
  for (int w : wrong)
    failed += w != 0;
  if (counted != expected) {
    std::printf("rank %d: %llu calls counted, %llu made\n", rank, counted,
                expected);
    ++failed;
  }
  int failedAll = 0;
  MPI_Allreduce(&failed, &failedAll, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("threads: %llu calls by collc at rank 0, %d failed\n",
                ours - ours0, failedAll);
  for (MPI_Comm &c : comms)
    MPI_Comm_free(&c);
  MPI_Finalize();
  return failedAll ? 1 : 0;
}
