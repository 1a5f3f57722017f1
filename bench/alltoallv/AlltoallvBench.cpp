// Irregular all-to-all benchmark (001 §4): A4 (blocking, non-blocking, dual
// send buffers) against A1-A3 and the MPI library's MPI_Alltoallv, on
// Pattern 1 (one spike), Pattern 2 (2-D transpose) of Figure 14 and random
// sizes. Prints, per case, the time per call (median over the runs, slowest
// rank), message start-ups per node, the largest buffer, and Theorem 2's
// prediction
//   T = (4 ceil(sqrt P) + 2) T_d + 4 (ceil(sqrt P) + 1) ceil(sqrt P) L_max / P t
// with T_d and t (per byte) measured by ping-pong between ranks 0 and 1.
//
//   mpirun -np 8 bench/alltoallv/alltoallv_bench [--mmax N] [--runs N]
//                                                [--csv FILE]

#include "alltoallv/Patterns.h"
#include "collc/Alltoallv.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace collc;

namespace {

struct OwnedPlan {
  std::vector<std::vector<int>> tables;
  rt::AlltoallvPlan plan;
};

OwnedPlan toPlan(const alltoallv::Pattern &pattern) {
  OwnedPlan owned;
  owned.plan.p = static_cast<int>(pattern.layout.p);
  owned.plan.columns = static_cast<int>(pattern.layout.columns);
  owned.plan.rows = static_cast<int>(pattern.layout.rows);
  owned.plan.r = static_cast<int>(pattern.layout.r);
  for (const alltoallv::Stage &st : pattern.stages) {
    std::vector<int> table;
    for (const auto &step : st.sendTo)
      for (int64_t y : step)
        table.push_back(static_cast<int>(y));
    owned.tables.push_back(std::move(table));
  }
  for (size_t s = 0; s < pattern.stages.size(); ++s)
    owned.plan.stages.push_back(
        {static_cast<rt::AlltoallvStageKind>(pattern.stages[s].kind),
         static_cast<int>(pattern.stages[s].numSteps()),
         owned.tables[s].data()});
  return owned;
}

/// Figure 14's patterns; "small" messages are up to mmax / 16 elements.
std::vector<int> sizes(const std::string &name, int p, int mmax) {
  std::vector<int> m(p * p);
  std::mt19937 rng(2024);
  alltoallv::Layout l = alltoallv::layoutFor(p);
  int c = static_cast<int>(l.columns);
  for (int i = 0; i < p; ++i) {
    int spikeTo = name == "spike" ? static_cast<int>(rng() % p)
                                  : ((i % c) * c + i / c < p ? (i % c) * c + i / c : i);
    for (int j = 0; j < p; ++j)
      m[i * p + j] = name == "random" ? static_cast<int>(rng() % (mmax + 1))
                     : j == spikeTo   ? mmax
                                      : static_cast<int>(rng() % (mmax / 16 + 1));
  }
  return m;
}

using Call = std::function<int(const void *, const int *, const int *,
                               MPI_Datatype, void *, const int *, const int *,
                               MPI_Datatype, MPI_Comm, rt::AlltoallvStats *)>;

double pingPong(int bytes, int rounds, int me) {
  std::vector<char> buf(std::max(bytes, 1));
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < rounds; ++i) {
    if (me == 0) {
      MPI_Send(buf.data(), bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    } else if (me == 1) {
      MPI_Recv(buf.data(), bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
    }
  }
  double t = (MPI_Wtime() - t0) / (2.0 * rounds);
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int p = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int mmax = 1024, runs = 20;
  std::string csvPath;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--mmax")
      mmax = std::atoi(argv[i + 1]);
    else if (a == "--runs")
      runs = std::atoi(argv[i + 1]);
    else if (a == "--csv")
      csvPath = argv[i + 1];
  }
  if (p < 2) {
    std::fprintf(stderr, "alltoallv_bench needs at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  const int elementBytes = 8; // MPI_INT64_T
  double td = pingPong(0, 200, me);
  double perByte = (pingPong(1 << 20, 20, me) - td) / (1 << 20);

  std::vector<std::pair<std::string, Call>> calls;
  calls.push_back({"MPI_Alltoallv",
                   [](const void *sb, const int *sc, const int *sd,
                      MPI_Datatype st, void *rb, const int *rc, const int *rd,
                      MPI_Datatype rt, MPI_Comm comm, rt::AlltoallvStats *) {
                     return MPI_Alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm);
                   }});
  std::vector<OwnedPlan> plans;
  plans.reserve(8);
  struct Variant {
    alltoallv::Algorithm algorithm;
    rt::AlltoallvMode mode;
    const char *label;
  };
  for (Variant v : {Variant{alltoallv::Algorithm::Direct,
                            rt::AlltoallvMode::NonBlocking, "A1 direct"},
                    Variant{alltoallv::Algorithm::TwoStageRandom,
                            rt::AlltoallvMode::NonBlocking, "A2 two-stage"},
                    Variant{alltoallv::Algorithm::TwoStageMesh,
                            rt::AlltoallvMode::NonBlocking, "A3 mesh"},
                    Variant{alltoallv::Algorithm::FourStage,
                            rt::AlltoallvMode::Blocking, "A4-b"},
                    Variant{alltoallv::Algorithm::FourStage,
                            rt::AlltoallvMode::NonBlocking, "A4-n1"},
                    Variant{alltoallv::Algorithm::FourStage,
                            rt::AlltoallvMode::NonBlockingDual, "A4-n2"}}) {
    llvm::Expected<alltoallv::Pattern> pat =
        alltoallv::buildPattern(v.algorithm, p);
    if (!pat) {
      llvm::consumeError(pat.takeError());
      continue;
    }
    plans.push_back(toPlan(*pat));
    const rt::AlltoallvPlan *plan = &plans.back().plan;
    calls.push_back(
        {v.label, [plan, mode = v.mode](const void *sb, const int *sc,
                                        const int *sd, MPI_Datatype st,
                                        void *rb, const int *rc,
                                        const int *rd, MPI_Datatype rt,
                                        MPI_Comm comm,
                                        rt::AlltoallvStats *stats) {
           return rt::alltoallv(*plan, sb, sc, sd, st, rb, rc, rd, rt, comm,
                                mode, stats);
         }});
  }

  FILE *csv = nullptr;
  if (me == 0 && !csvPath.empty())
    csv = std::fopen(csvPath.c_str(), "w");
  if (csv)
    std::fprintf(csv, "p,pattern,mmax,algorithm,us_per_call,startups_per_node,"
                      "largest_buffer_bytes,lmax_bytes,theorem2_us\n");
  if (me == 0)
    std::printf("P = %d, M_max = %d elements of %d bytes, %d runs; "
                "ping-pong T_d = %.2f us, t = %.3f ns/byte\n",
                p, mmax, elementBytes, runs, td * 1e6, perByte * 1e9);
  const int64_t c = static_cast<int64_t>(std::ceil(std::sqrt(double(p))));
  for (const char *pattern : {"spike", "transpose", "random"}) {
    std::vector<int> m = sizes(pattern, p, mmax);
    int64_t lmax = 0;
    for (int i = 0; i < p; ++i) {
      int64_t out = 0, in = 0;
      for (int j = 0; j < p; ++j)
        out += m[i * p + j], in += m[j * p + i];
      lmax = std::max({lmax, out, in});
    }
    double lmaxBytes = double(lmax) * elementBytes;
    double theorem2 = (4 * c + 2) * td + 4.0 * (c + 1) * c * lmaxBytes / p * perByte;
    std::vector<int> sc(p), sd(p), rc(p), rd(p);
    for (int j = 0, s = 0, r = 0; j < p; ++j) {
      sc[j] = m[me * p + j], sd[j] = s, s += sc[j];
      rc[j] = m[j * p + me], rd[j] = r, r += rc[j];
    }
    std::vector<int64_t> send(sd[p - 1] + sc[p - 1] + 1, me),
        recv(rd[p - 1] + rc[p - 1] + 1);
    if (me == 0)
      std::printf("\n%-10s L_max = %.0f bytes, Theorem 2: %.1f us\n"
                  "%-16s %12s %10s %14s\n",
                  pattern, lmaxBytes, theorem2 * 1e6, "algorithm",
                  "us/call", "start-ups", "largest buffer");
    for (const auto &[name, call] : calls) {
      std::vector<double> times;
      rt::AlltoallvStats stats;
      for (int run = 0; run < runs + 2; ++run) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        call(send.data(), sc.data(), sd.data(), MPI_INT64_T, recv.data(),
             rc.data(), rd.data(), MPI_INT64_T, MPI_COMM_WORLD, &stats);
        double t = MPI_Wtime() - t0, slowest = 0;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (run >= 2) // warm-up: private communicator, caches
          times.push_back(slowest);
      }
      std::sort(times.begin(), times.end());
      int64_t counts[2] = {stats.messages, stats.largestBuffer}, maxCounts[2];
      if (name == "MPI_Alltoallv")
        counts[0] = counts[1] = -1; // not observable
      MPI_Allreduce(counts, maxCounts, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
      double us = times[times.size() / 2] * 1e6;
      if (me == 0) {
        char startups[32] = "-", buffer[32] = "-";
        if (maxCounts[0] >= 0) {
          std::snprintf(startups, sizeof startups, "%lld",
                        static_cast<long long>(maxCounts[0]));
          std::snprintf(buffer, sizeof buffer, "%lld",
                        static_cast<long long>(maxCounts[1]));
        }
        std::printf("%-16s %12.1f %10s %14s\n", name.c_str(), us, startups,
                    buffer);
        if (csv)
          std::fprintf(csv, "%d,%s,%d,%s,%.2f,%s,%s,%.0f,%.2f\n", p, pattern,
                       mmax, name.c_str(), us, startups, buffer, lmaxBytes,
                       theorem2 * 1e6);
      }
    }
  }
  if (csv)
    std::fclose(csv);
  MPI_Finalize();
  return 0;
}
