// The timing program behind `collc bench` and `collc calibrate`: an MPI
// program that runs one collc-emitted collective (compiled at build time from
// specs/library by collc_add_spec) and the MPI library's own collective in
// the same run, interleaved, on the same buffers, and prints raw timings for
// collc to summarise. Every timed call's result is checked: a checksum of
// the emitted function's output against the MPI library's on the same input,
// so a fast wrong answer fails the run (exit 1).
//
//   coll_bench --list
//   coll_bench --collective NAME --schedule S [--root R] --bytes 8,64,...
//              [--iterations K] [--repeat R]
//   coll_bench --collective NAME --dropin [--root R] --bytes 8,64,...
//              [--repeat R]
//   coll_bench --pingpong --bytes 8,64,... [--iterations K]
//   coll_bench --ring --bytes 8,64,... [--iterations K]
//   coll_bench --copy --bytes 8,64,... [--iterations K]
//   coll_bench --fanout --bytes 8,64,... [--iterations K]
//
// --dropin times the program's own call (MPI_Allreduce ...: a preloaded
// drop-in such as libcollc_mpi answers it) against the MPI library's, called
// by its profiling name (PMPI_Allreduce ...), which a drop-in leaves alone.
// --repeat R times R calls back to back in each sample (their mean), as a
// loop of collectives runs them; by default each call is timed alone after
// a barrier.
//
// Output (rank 0, one line each, tab-separated):
//   ranges NAME=LO..HI ...                         (--list: the ranges its
//                                                  schedules are compiled
//                                                  for, collc's --param)
//   schedule COLLECTIVE SCHEDULE SPEC_FILE MCA     (--list; MCA: Open MPI's
//                                                  like algorithm as
//                                                  PARAMETER=VALUE, or -)
//   size BYTES ITERATIONS OURS_US,... MPI_US,...   (per size; each sample is
//                                                  the slowest rank's time)
//   checked CALLS                                  (every checksum matched)
//   pingpong BYTES US,...                          (half a round trip)
//   ring BYTES US,...                              (one step of a ring of
//                                                  every rank)
//   copy BYTES US,...                              (every rank copying
//                                                  BYTES in memory at once)
//   fanout BYTES US,...                            (rank 0 sending BYTES to
//                                                  every other rank at once)
//
// BYTES is the collective's m as in Table 4.1 of seed 000 (and the MPI count
// argument in bytes): the whole vector for broadcast, reduce, allreduce and
// scan, each rank's block for allgather, scatter, gather and reduce_scatter,
// the per-pair block for alltoall(v). alltoallv runs the regular pattern,
// every pair's count the same (MPI_Alltoallv with equal counts), so that m
// is also L_max / P of 001 §3; bench/alltoallv times Figure 14's irregular
// patterns. Elements are doubles holding small integers, so every sum is
// exact and results compare bit for bit.

#include "allgather.h"
#include "allreduce_scan.h"
#include "alltoall.h"
#include "alltoallv.h"
#include "broadcast.h"
#include "scatter_gather.h"
#include "split.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>


namespace {

/// Every argument any collective takes; each row's adapters pick theirs.
struct Args {
  const void *send = nullptr;
  void *recv = nullptr;
  int count = 0; // elements per block
  const int *counts = nullptr; // alltoallv: per-peer counts and displacements
  const int *displs = nullptr;
  MPI_Datatype type = MPI_DOUBLE;
  MPI_Op op = MPI_SUM;
  int root = 0;
  MPI_Comm comm = MPI_COMM_WORLD;
};
using Fn = int (*)(const Args &);

/// Which buffers a collective reads and writes, in blocks of `count`.
enum class Shape {
  Broadcast,     // recv is the buffer: root's input, everyone's output
  Reduce,        // send: 1 block; recv: 1 block at the root
  Allreduce,     // send: 1; recv: 1 everywhere (scan too)
  Exscan,        // send: 1; recv: 1, undefined at rank 0
  Allgather,     // send: 1; recv: p
  ReduceScatter, // send: p; recv: 1
  Scatter,       // send: p at the root; recv: 1
  Gather,        // send: 1; recv: p at the root
  Alltoall,      // send: p; recv: p (alltoallv: counts[] per peer)
};

struct Schedule {
  const char *name; // the library schedule (and emitted function)
  const char *spec; // its file under specs/library, or one under bench/
  Fn run;
  // The MPI library's algorithm that sends the same messages, as Open MPI's
  // tuned component names it (coll_tuned_<component>_algorithm), or none:
  // `collc bench --same-algorithm` forces it, so that the ratio measures
  // the implementation rather than the choice of algorithm.
  const char *mpiAlgorithm = nullptr;
};

/// One collective of the harness. Adding one (or a schedule for one) is
/// adding a row below.
struct Row {
  const char *collective;
  const char *mpiComponent; // Open MPI's name for it: coll_tuned_<this>_...
  Shape shape;
  Fn mpi;  // the MPI library's own collective, as the program calls it
  Fn pmpi; // the same through its profiling name: the library itself even
           // when a drop-in (libcollc_mpi) is preloaded
  std::vector<Schedule> schedules;
};

#define COLLC_MPI_AND_PMPI(fn, ...) [](const Args &a) { return MPI_##fn(__VA_ARGS__); }, [](const Args &a) { return PMPI_##fn(__VA_ARGS__); }
#define COLLC_BCAST(f) [](const Args &a) { return f(a.recv, a.count, a.type, a.root, a.comm); }
#define COLLC_REDUCE(f) [](const Args &a) { return f(a.send, a.recv, a.count, a.type, a.op, a.root, a.comm); }
#define COLLC_ALLRED(f) [](const Args &a) { return f(a.send, a.recv, a.count, a.type, a.op, a.comm); }
#define COLLC_GATHERLIKE(f) [](const Args &a) { return f(a.send, a.count, a.type, a.recv, a.count, a.type, a.comm); }
#define COLLC_ROOTED(f) [](const Args &a) { return f(a.send, a.count, a.type, a.recv, a.count, a.type, a.root, a.comm); }
// bench/alltoallv.coll's ALGO (four_stage: A4, direct: A1) on n ranks, in
// its default mode (dual send buffers, 001 §3.4); MPI is the like
// algorithm of Open MPI, or nullptr.
#define COLLC_A2AV_FN(f) [](const Args &a) { return f(a.send, a.counts, a.displs, a.type, a.recv, a.counts, a.displs, a.type, a.comm); }
#define COLLC_A2AV(algo, n, mpi) {#algo "_" #n, "bench/alltoallv.coll", COLLC_A2AV_FN(algo##_##n), mpi}
// Every rank count bench/alltoallv.coll has a function for.
#define COLLC_A2AV_EVERY_P(algo, mpi) \
  COLLC_A2AV(algo, 2, mpi), COLLC_A2AV(algo, 3, mpi), COLLC_A2AV(algo, 4, mpi), \
  COLLC_A2AV(algo, 5, mpi), COLLC_A2AV(algo, 6, mpi), COLLC_A2AV(algo, 7, mpi), \
  COLLC_A2AV(algo, 8, mpi), COLLC_A2AV(algo, 9, mpi), COLLC_A2AV(algo, 10, mpi), \
  COLLC_A2AV(algo, 11, mpi), COLLC_A2AV(algo, 12, mpi), COLLC_A2AV(algo, 13, mpi), \
  COLLC_A2AV(algo, 14, mpi), COLLC_A2AV(algo, 15, mpi), COLLC_A2AV(algo, 16, mpi), \
  COLLC_A2AV(algo, 24, mpi), COLLC_A2AV(algo, 32, mpi), COLLC_A2AV(algo, 48, mpi), \
  COLLC_A2AV(algo, 64, mpi)

const std::vector<Row> &rows() {
  using namespace collc_bench;
  // clang-format off
  static const std::vector<Row> table = {
      {"broadcast", "bcast", Shape::Broadcast,
       COLLC_MPI_AND_PMPI(Bcast, a.recv, a.count, a.type, a.root, a.comm),
       {{"hypercube_bc", "broadcast.coll", COLLC_BCAST(hypercube_bc), "binomial"},
        {"linear_bc", "broadcast.coll", COLLC_BCAST(linear_bc), "binomial"},
        {"ring_bc", "broadcast.coll", COLLC_BCAST(ring_bc), "binomial"},
        {"star_bc", "broadcast.coll", COLLC_BCAST(star_bc), "basic_linear"},
        {"hypercube_bc_split", "split.coll", COLLC_BCAST(hypercube_bc_split), "scatter_allgather"},
        {"ring_bc_split", "split.coll", COLLC_BCAST(ring_bc_split), "scatter_allgather_ring"}}},
      {"reduce", "reduce", Shape::Reduce,
       COLLC_MPI_AND_PMPI(Reduce, a.send, a.recv, a.count, a.type, a.op, a.root, a.comm),
       {{"hypercube_reduce", "broadcast.coll", COLLC_REDUCE(hypercube_reduce), "binomial"},
        {"linear_reduce", "broadcast.coll", COLLC_REDUCE(linear_reduce), "binomial"},
        {"ring_reduce", "broadcast.coll", COLLC_REDUCE(ring_reduce), "binomial"},
        {"hypercube_reduce_split", "split.coll", COLLC_REDUCE(hypercube_reduce_split), "rabenseifner"},
        {"ring_reduce_split", "split.coll", COLLC_REDUCE(ring_reduce_split)}}},
      {"allreduce", "allreduce", Shape::Allreduce,
       COLLC_MPI_AND_PMPI(Allreduce, a.send, a.recv, a.count, a.type, a.op, a.comm),
       {{"hypercube_allreduce", "allreduce_scan.coll", COLLC_ALLRED(hypercube_allreduce), "recursive_doubling"},
        {"full_allreduce", "allreduce_scan.coll", COLLC_ALLRED(full_allreduce), "recursive_doubling"},
        {"hypercube_allreduce_split", "split.coll", COLLC_ALLRED(hypercube_allreduce_split), "rabenseifner"},
        {"ring_allreduce_split", "split.coll", COLLC_ALLRED(ring_allreduce_split), "ring"}}},
      {"allgather", "allgather", Shape::Allgather,
       COLLC_MPI_AND_PMPI(Allgather, a.send, a.count, a.type, a.recv, a.count, a.type, a.comm),
       {{"hypercube_allgather", "allgather.coll", COLLC_GATHERLIKE(hypercube_allgather), "recursive_doubling"},
        {"ring_allgather", "allgather.coll", COLLC_GATHERLIKE(ring_allgather), "ring"},
        {"full_allgather", "allgather.coll", COLLC_GATHERLIKE(full_allgather), "bruck"}}},
      {"reduce_scatter", "reduce_scatter_block", Shape::ReduceScatter,
       COLLC_MPI_AND_PMPI(Reduce_scatter_block, a.send, a.recv, a.count, a.type, a.op, a.comm),
       {{"hypercube_reduce_scatter", "allgather.coll", COLLC_ALLRED(hypercube_reduce_scatter), "recursive_halving"},
        {"ring_reduce_scatter", "allgather.coll", COLLC_ALLRED(ring_reduce_scatter)},
        {"full_reduce_scatter", "allgather.coll", COLLC_ALLRED(full_reduce_scatter)}}},
      {"scatter", "scatter", Shape::Scatter,
       COLLC_MPI_AND_PMPI(Scatter, a.send, a.count, a.type, a.recv, a.count, a.type, a.root, a.comm),
       {{"hypercube_scatter", "scatter_gather.coll", COLLC_ROOTED(hypercube_scatter), "binomial"},
        {"linear_scatter", "scatter_gather.coll", COLLC_ROOTED(linear_scatter), "binomial"},
        {"star_scatter", "scatter_gather.coll", COLLC_ROOTED(star_scatter), "basic_linear"}}},
      {"gather", "gather", Shape::Gather,
       COLLC_MPI_AND_PMPI(Gather, a.send, a.count, a.type, a.recv, a.count, a.type, a.root, a.comm),
       {{"hypercube_gather", "scatter_gather.coll", COLLC_ROOTED(hypercube_gather), "binomial"},
        {"linear_gather", "scatter_gather.coll", COLLC_ROOTED(linear_gather), "binomial"},
        {"star_gather", "scatter_gather.coll", COLLC_ROOTED(star_gather), "basic_linear"}}},
      {"scan", "scan", Shape::Allreduce,
       COLLC_MPI_AND_PMPI(Scan, a.send, a.recv, a.count, a.type, a.op, a.comm),
       {{"hypercube_scan", "allreduce_scan.coll", COLLC_ALLRED(hypercube_scan), "recursive_doubling"},
        {"linear_scan", "allreduce_scan.coll", COLLC_ALLRED(linear_scan), "linear"},
        {"full_scan", "allreduce_scan.coll", COLLC_ALLRED(full_scan), "recursive_doubling"}}},
      {"exscan", "exscan", Shape::Exscan,
       COLLC_MPI_AND_PMPI(Exscan, a.send, a.recv, a.count, a.type, a.op, a.comm),
       {{"hypercube_exscan", "allreduce_scan.coll", COLLC_ALLRED(hypercube_exscan), "recursive_doubling"},
        {"linear_exscan", "allreduce_scan.coll", COLLC_ALLRED(linear_exscan), "linear"},
        {"full_exscan", "allreduce_scan.coll", COLLC_ALLRED(full_exscan), "recursive_doubling"}}},
      {"alltoall", "alltoall", Shape::Alltoall,
       COLLC_MPI_AND_PMPI(Alltoall, a.send, a.count, a.type, a.recv, a.count, a.type, a.comm),
       {{"pairwise_exchange", "alltoall.coll", COLLC_GATHERLIKE(pairwise_exchange), "pairwise"},
        {"hypercube_alltoall", "alltoall.coll", COLLC_GATHERLIKE(hypercube_alltoall), "modified_bruck"},
        {"ring_alltoall", "alltoall.coll", COLLC_GATHERLIKE(ring_alltoall)}}},
      // Per-size functions (the A4 pattern depends on P), and the library's
      // one function for every size.
      {"alltoallv", "alltoallv", Shape::Alltoall,
       COLLC_MPI_AND_PMPI(Alltoallv, a.send, a.counts, a.displs, a.type,
                          a.recv, a.counts, a.displs, a.type, a.comm),
       // A1's P - 1 steps of one message each way are Open MPI's
       // pairwise exchange; A4 has no counterpart there. The library's
       // alltoallv_direct is A1 for every size, as the drop-in runs it.
       {COLLC_A2AV_EVERY_P(four_stage, nullptr),
        COLLC_A2AV_EVERY_P(direct, "pairwise"),
        {"alltoallv_direct", "alltoall.coll", COLLC_A2AV_FN(alltoallv_direct), "pairwise"}}},
  };
  // clang-format on
  return table;
}

int rank = 0, size = 1;
/// Calls timed back to back in each sample (--repeat): one call's time is
/// their mean, with the caches and predictors as a loop of calls leaves
/// them.
int repeat = 1;

[[noreturn]] void die(const std::string &message) {
  if (rank == 0)
    std::fprintf(stderr, "coll_bench: error: %s\n", message.c_str());
  MPI_Finalize();
  std::exit(2);
}

std::vector<long long> parseBytes(const char *text) {
  std::vector<long long> out;
  for (const char *p = text; *p;) {
    char *end = nullptr;
    long long v = std::strtoll(p, &end, 10);
    if (end == p || v <= 0 || v % 8 != 0)
      die(std::string("--bytes needs positive multiples of 8 (the element "
                      "is a double), got '") + text + "'");
    out.push_back(v);
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      die(std::string("bad --bytes list '") + text + "'");
  }
  return out;
}

/// Order-sensitive checksum of n doubles' bit patterns.
uint64_t checksum(const double *data, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, &data[i], sizeof bits);
    sum += bits * (2 * i + 1);
  }
  return sum;
}

/// Element i of rank r's input: small integers, distinct across ranks and
/// blocks, so that sums of up to thousands of them stay exact.
double inputValue(int r, size_t i) {
  return static_cast<double>(static_cast<long long>((r * 7919 + i * 31) % 2001) - 1000);
}

struct Buffers {
  std::vector<double> input, send, recv;
  size_t outputElements = 0; // significant output at this rank
  std::vector<int> counts, displs;
};

Buffers makeBuffers(Shape shape, size_t count, int root) {
  const size_t p = static_cast<size_t>(size);
  size_t sendBlocks = 1, recvBlocks = 1;
  bool outputHere = true;
  switch (shape) {
  case Shape::Broadcast: sendBlocks = 0; break;
  case Shape::Reduce: outputHere = rank == root; break;
  case Shape::Allreduce: break;
  case Shape::Exscan: outputHere = rank != 0; break;
  case Shape::Allgather: recvBlocks = p; break;
  case Shape::ReduceScatter: sendBlocks = p; break;
  case Shape::Scatter: sendBlocks = rank == root ? p : 0; break;
  case Shape::Gather: recvBlocks = rank == root ? p : 0; outputHere = rank == root; break;
  case Shape::Alltoall: sendBlocks = recvBlocks = p; break;
  }
  Buffers b;
  b.input.resize((shape == Shape::Broadcast ? 1 : sendBlocks) * count);
  for (size_t i = 0; i < b.input.size(); ++i)
    b.input[i] = inputValue(rank, i);
  b.send = b.input;
  b.recv.resize(std::max<size_t>(recvBlocks, 1) * count);
  b.outputElements = outputHere ? recvBlocks * count : 0;
  for (size_t i = 0; i < p; ++i) {
    b.counts.push_back(static_cast<int>(count));
    b.displs.push_back(static_cast<int>(i * count));
  }
  return b;
}

/// Before each call: the output poisoned (so a function that writes
/// nothing cannot pass), the broadcast root's data in place.
void prepare(Shape shape, Buffers &b, int root) {
  std::fill(b.recv.begin(), b.recv.end(), -0.5);
  if (shape == Shape::Broadcast && rank == root)
    std::copy(b.input.begin(), b.input.end(), b.recv.begin());
}

void printSamples(const std::vector<double> &us) {
  for (size_t i = 0; i < us.size(); ++i)
    std::printf("%s%.3f", i ? "," : "", us[i]);
}

/// Stops every rank where any rank's results of call `callIndex` differ
/// (sums[0] ours, sums[1] MPI's), each saying how.
void stopOnMismatch(const char *oursName, long long bytes, int callIndex,
                    const uint64_t sums[2]) {
  // The harness's own calls by their profiling names: a preloaded drop-in
  // neither answers nor counts them.
  int bad = sums[0] != sums[1], anyBad = 0;
  PMPI_Allreduce(&bad, &anyBad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!anyBad)
    return;
  if (bad)
    std::fprintf(stderr,
                 "coll_bench: rank %d: checksum mismatch: %s at %lld bytes, "
                 "call %d: collc's result %016llx, MPI's %016llx\n",
                 rank, oursName, bytes, callIndex,
                 static_cast<unsigned long long>(sums[0]),
                 static_cast<unsigned long long>(sums[1]));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    std::fprintf(stderr, "coll_bench: FAIL: %s gave a wrong result\n",
                 oursName);
  MPI_Finalize();
  std::exit(1);
}

/// Times `ours` against `mpi`, the library's call, at every size; returns
/// the number of checked calls.
long long runCollective(const Row &row, const char *oursName, Fn ours, Fn mpi,
                        int root, const std::vector<long long> &sizes,
                        int iterations) {
  long long checked = 0;
  for (long long bytes : sizes) {
    const size_t count = static_cast<size_t>(bytes / 8);
    if (count > static_cast<size_t>(INT32_MAX / std::max(size, 1)))
      die("message too large for an int count");
    Buffers b = makeBuffers(row.shape, count, root);
    Args args;
    args.send = b.send.empty() ? nullptr : b.send.data();
    args.recv = b.recv.data();
    args.count = static_cast<int>(count);
    args.counts = b.counts.data();
    args.displs = b.displs.data();
    args.root = root;
    int k = iterations;
    if (k <= 0) // about 64 MiB moved per rank and variant, 5..200 calls
      k = static_cast<int>(std::clamp<long long>(
          (64ll << 20) / (bytes * std::max(size, 2)), 5, 200));
    const int warmup = std::min(k, 3);
    std::vector<double> oursUs, mpiUs;
    for (int it = -warmup; it < k; ++it) {
      // Interleaved, alternating which goes first, so drift and cache
      // effects fall on both alike.
      double t[2] = {0, 0};
      uint64_t sums[2] = {0, 0};
      for (int turn = 0; turn < 2; ++turn) {
        const int which = (it & 1) ? 1 - turn : turn; // 0 ours, 1 MPI
        prepare(row.shape, b, root);
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        int rc = MPI_SUCCESS;
        for (int r = 0; r < repeat && rc == MPI_SUCCESS; ++r)
          rc = which == 0 ? ours(args) : mpi(args);
        t[which] = (MPI_Wtime() - start) / repeat;
        if (rc != MPI_SUCCESS) {
          std::fprintf(stderr, "coll_bench: rank %d: %s returned error %d\n",
                       rank, which == 0 ? oursName : "MPI", rc);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
        sums[which] = checksum(b.recv.data(), b.outputElements);
      }
      stopOnMismatch(oursName, bytes, it + warmup, sums);
      if (it < 0)
        continue;
      ++checked;
      // The call's time is the slowest rank's.
      double slowest[2];
      PMPI_Reduce(t, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      oursUs.push_back(slowest[0] * 1e6);
      mpiUs.push_back(slowest[1] * 1e6);
    }
    if (rank == 0) {
      std::printf("size\t%lld\t%d\t", bytes, k);
      printSamples(oursUs);
      std::printf("\t");
      printSamples(mpiUs);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return checked;
}

/// Per size: timed samples (after up to 5 untimed), each the slowest rank's
/// `sample(buffers, bytes)` in seconds, printed as LABEL BYTES US,... The
/// default count moves about 256 MiB per size through `ranksMoving` ranks.
template <typename Sample>
void runTimed(const char *label, const std::vector<long long> &sizes,
              int iterations, int ranksMoving, Sample sample) {
  for (long long bytes : sizes) {
    std::vector<char> out(static_cast<size_t>(bytes), 1), in(out.size());
    int k = iterations > 0 ? iterations
                           : static_cast<int>(std::clamp<long long>(
                                 (256ll << 20) / (bytes * ranksMoving), 10,
                                 1000));
    std::vector<double> us;
    for (int it = -std::min(k, 5); it < k; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      double seconds = sample(out, in, static_cast<int>(bytes)), slowest = 0;
      PMPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (it >= 0)
        us.push_back(slowest * 1e6);
    }
    if (rank == 0) {
      std::printf("%s\t%lld\t", label, bytes);
      printSamples(us);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
}

/// Ping-pong between ranks 2i and 2i+1 (all pairs at once); each sample is
/// the slowest pair's half round trip.
void runPingPong(const std::vector<long long> &sizes, int iterations) {
  if (size < 2)
    die("--pingpong needs at least 2 ranks");
  const int peer = rank ^ 1;
  const bool active = peer < size;
  runTimed("pingpong", sizes, iterations, 1,
           [&](std::vector<char> &buf, std::vector<char> &, int bytes) {
             double start = MPI_Wtime();
             if (active && rank % 2 == 0) {
               MPI_Send(buf.data(), bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
               MPI_Recv(buf.data(), bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE);
             } else if (active) {
               MPI_Recv(buf.data(), bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE);
               MPI_Send(buf.data(), bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
             }
             return (MPI_Wtime() - start) / 2;
           });
}

/// A ring of every rank: in each of p steps, each rank sends to the next and
/// receives from the one before (one MPI_Sendrecv), passing on what it
/// received, so each step waits for the one before it as a schedule's steps
/// do. Each sample is the slowest rank's time for the p steps, over p: one
/// step of a schedule whose every rank sends and receives m bytes.
void runRing(const std::vector<long long> &sizes, int iterations) {
  if (size < 2)
    die("--ring needs at least 2 ranks");
  const int next = (rank + 1) % size, before = (rank + size - 1) % size;
  runTimed("ring", sizes, iterations, size,
           [&](std::vector<char> &out, std::vector<char> &in, int bytes) {
             double start = MPI_Wtime();
             for (int step = 0; step < size; ++step) {
               MPI_Sendrecv(out.data(), bytes, MPI_BYTE, next, 7, in.data(),
                            bytes, MPI_BYTE, before, 7, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE);
               std::swap(out, in);
             }
             return (MPI_Wtime() - start) / size;
           });
}

/// Every rank copying BYTES from one buffer to another at the same moment:
/// what ranks sharing the machine's memory can move, the bound a large
/// collective's copies cannot beat (read and write: 2·BYTES a copy).
void runCopy(const std::vector<long long> &sizes, int iterations) {
  runTimed("copy", sizes, iterations, size,
           [&](std::vector<char> &out, std::vector<char> &in, int bytes) {
             double start = MPI_Wtime();
             std::memcpy(in.data(), out.data(), static_cast<size_t>(bytes));
             double seconds = MPI_Wtime() - start;
             out[static_cast<size_t>(bytes) / 2] ^= in[0]; // not optimised out
             return seconds;
           });
}

/// Rank 0 starts a message of BYTES to every other rank at once and waits
/// for them all; each sample is the slowest rank's time. Against a ring's
/// step it tells who copies: if the sender's port moves the bytes, p - 1
/// steps; if each receiver copies its own from the sender's memory, about
/// one (collc calibrate, `copies: receiver`).
void runFanout(const std::vector<long long> &sizes, int iterations) {
  if (size < 2)
    die("--fanout needs at least 2 ranks");
  std::vector<MPI_Request> requests(static_cast<size_t>(size));
  runTimed("fanout", sizes, iterations, size,
           [&](std::vector<char> &out, std::vector<char> &in, int bytes) {
             double start = MPI_Wtime();
             if (rank == 0) {
               for (int r = 1; r < size; ++r)
                 MPI_Isend(out.data(), bytes, MPI_BYTE, r, 7, MPI_COMM_WORLD,
                           &requests[static_cast<size_t>(r - 1)]);
               MPI_Waitall(size - 1, requests.data(), MPI_STATUSES_IGNORE);
             } else {
               MPI_Recv(in.data(), bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE);
             }
             return MPI_Wtime() - start;
           });
}

/// What the command line asks for.
struct Options {
  std::string collective, scheduleName;
  std::vector<long long> sizes;
  int iterations = 0, root = 0;
  bool list = false, pingpong = false, ring = false, copy = false,
       fanout = false, dropin = false;
};

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--list")
      o.list = true;
    else if (a == "--pingpong")
      o.pingpong = true;
    else if (a == "--ring")
      o.ring = true;
    else if (a == "--copy")
      o.copy = true;
    else if (a == "--fanout")
      o.fanout = true;
    else if (a == "--dropin")
      o.dropin = true;
    else if (a == "--collective")
      o.collective = value();
    else if (a == "--schedule")
      o.scheduleName = value();
    else if (a == "--bytes")
      o.sizes = parseBytes(value());
    else if (a == "--iterations")
      o.iterations = std::atoi(value());
    else if (a == "--root")
      o.root = std::atoi(value());
    else if (a == "--repeat")
      repeat = std::atoi(value());
    else
      die("unknown argument '" + a + "'");
  }
  return o;
}

/// --list: the ranges the schedules were compiled for (collc compile's
/// --param, as NAME=LO..HI), then each schedule with its spec and MPI's
/// like algorithm, a line each.
void printSchedules() {
  std::printf("ranges%s", *COLLC_BENCH_RANGES ? "\t" : "");
  for (const char *c = COLLC_BENCH_RANGES; *c; ++c)
    std::putchar(*c == ',' ? '\t' : *c);
  std::printf("\n");
  for (const Row &row : rows()) {
    if (row.schedules.empty())
      std::printf("schedule\t%s\t-\t-\t-\n", row.collective);
    for (const Schedule &s : row.schedules) {
      // As the repository names the file: collc finds it in its own
      // tree or installed share/collc, wherever this program runs.
      const bool underBench = std::strncmp(s.spec, "bench/", 6) == 0;
      std::printf("schedule\t%s\t%s\t%s%s\t", row.collective, s.name,
                  underBench ? "" : "specs/library/", s.spec);
      if (s.mpiAlgorithm)
        std::printf("coll_tuned_%s_algorithm=%s\n", row.mpiComponent,
                    s.mpiAlgorithm);
      else
        std::printf("-\n");
    }
  }
}
} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Options o = parseOptions(argc, argv);
  if (o.list) {
    if (rank == 0)
      printSchedules();
    MPI_Finalize();
    return 0;
  }
  if (o.sizes.empty())
    die("--bytes is required");
  if (repeat < 1)
    die("--repeat needs a positive number of calls");
  if (o.pingpong || o.ring || o.copy || o.fanout) {
    if (o.pingpong)
      runPingPong(o.sizes, o.iterations);
    else if (o.ring)
      runRing(o.sizes, o.iterations);
    else if (o.fanout)
      runFanout(o.sizes, o.iterations);
    else
      runCopy(o.sizes, o.iterations);
    MPI_Finalize();
    return 0;
  }
  const Row *row = nullptr;
  for (const Row &r : rows())
    if (o.collective == r.collective)
      row = &r;
  if (!row)
    die("unknown collective '" + o.collective + "'");
  if (o.root < 0 || o.root >= size)
    die("--root outside the communicator");
  long long checked = 0;
  if (o.dropin) {
    checked = runCollective(*row, "the program's call", row->mpi, row->pmpi,
                            o.root, o.sizes, o.iterations);
  } else {
    const Schedule *schedule = nullptr;
    for (const Schedule &s : row->schedules)
      if (o.scheduleName == s.name)
        schedule = &s;
    if (!schedule)
      die("no schedule '" + o.scheduleName + "' for " + o.collective);
    checked = runCollective(*row, schedule->name, schedule->run, row->mpi,
                            o.root, o.sizes, o.iterations);
  }
  if (rank == 0)
    std::printf("checked\t%lld\n", checked);
  MPI_Finalize();
  return 0;
}
