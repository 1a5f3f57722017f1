// Irregular all-to-all benchmark (001 §4): A4 (blocking, non-blocking, dual
// send buffers) against A1, A2, A3 (blocking and non-blocking, on a perfect
// square number of ranks), the same patterns written as proved schedules
// (specs/alltoallv_forwarding.coll, "-ir": A2 up to 64 ranks, A3 and A4 on
// the squarest a x b array, a up to 8 and b 2 to 8) and the MPI library's
// MPI_Alltoallv, on the regular pattern (every pair M_max elements),
// Pattern 1 (one spike) and Pattern 2 (2-D transpose) of Figure 14, and
// random sizes. Every call's result is compared with MPI_Alltoallv's on
// the same input (exit 1 on a difference). Prints a table per pattern and, with
// --csv, one row per pattern and algorithm:
//   time per call (median over the runs of the slowest rank's; minimum and
//   maximum), start-ups per node and the largest buffer (the most over the
//   ranks, from AlltoallvStats; not observable for MPI_Alltoallv), the
//   longest message received, L_max, the flat model's time for the
//   algorithm (A4: Theorem 2, A1-A3: Table 3), and Theorem 2's
//     T = (4 ceil(sqrt P) + 2) T_d + 4 (ceil(sqrt P) + 1) ceil(sqrt P) L_max /
//     P t
//   for comparison on every row, with T_d and t (per byte) measured by
//   ping-pong between ranks 0 and 1.
//
//   mpirun -np 9 bench/alltoallv/alltoallv_bench [--mmax N] [--runs N]
//                                                [--csv FILE]

#include "alltoallv/Patterns.h"
#include "alltoallv_forwarding.h"
#include "collc/Alltoallv.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <optional>
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

/// The count matrix of a pattern: regular sends mmax to every node; Figure
/// 14's Pattern 1 (spike) and Pattern 2 (transpose) send mmax to one node
/// (random; the transpose partner (i % C) C + floor(i / C) on the A4 array,
/// or i where that is not a node) and up to mmax / 16 to the others;
/// random sends up to mmax to each.
std::vector<int> sizes(const std::string &name, int p, int mmax) {
  std::vector<int> m(static_cast<size_t>(p) * p);
  std::mt19937 rng(2024);
  alltoallv::Layout l = alltoallv::layoutFor(p);
  int c = static_cast<int>(l.columns);
  for (int i = 0; i < p; ++i) {
    int transpose = (i % c) * c + i / c;
    int spikeTo = name == "spike" ? static_cast<int>(rng() % p)
                                  : (transpose < p ? transpose : i);
    for (int j = 0; j < p; ++j)
      m[static_cast<size_t>(i) * p + j] =
          name == "regular"  ? mmax
          : name == "random" ? static_cast<int>(rng() % (mmax + 1))
          : j == spikeTo     ? mmax
                             : static_cast<int>(rng() % (mmax / 16 + 1));
  }
  return m;
}

using Call = std::function<int(const void *, const int *, const int *,
                               MPI_Datatype, void *, const int *, const int *,
                               MPI_Datatype, MPI_Comm, rt::AlltoallvStats *)>;

/// One line of the table: an algorithm in a mode, or MPI's.
struct Variant {
  std::string label;
  // Whose flat model prices it; none: MPI_Alltoallv, or an emitted A3 or
  // A4 off a square, whose array is not the tables'.
  std::optional<alltoallv::Algorithm> algorithm;
  Call call;
  bool counted = false; // fills AlltoallvStats (the pattern tables' runtime)
};

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

/// The variants timed: MPI_Alltoallv, then each algorithm in each mode
/// that applies to `p` ranks (A3 on perfect squares only), its plan kept
/// in `plans`.
std::vector<Variant> variantsFor(int p, std::deque<OwnedPlan> &plans) {
  std::vector<Variant> variants;
  variants.push_back(
      {"MPI_Alltoallv", std::nullopt,
       [](const void *sb, const int *sc, const int *sd, MPI_Datatype st,
          void *rb, const int *rc, const int *rd, MPI_Datatype rt,
          MPI_Comm comm, rt::AlltoallvStats *) {
         return MPI_Alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm);
       }});
  using A = alltoallv::Algorithm;
  using M = rt::AlltoallvMode;
  struct Spec {
    A algorithm;
    M mode;
    const char *label;
  };
  const Spec specs[] = {{A::Direct, M::NonBlocking, "A1"},
                        {A::TwoStageRandom, M::NonBlocking, "A2"},
                        {A::TwoStageMesh, M::Blocking, "A3-b"},
                        {A::TwoStageMesh, M::NonBlocking, "A3-n1"},
                        {A::FourStage, M::Blocking, "A4-b"},
                        {A::FourStage, M::NonBlocking, "A4-n1"},
                        {A::FourStage, M::NonBlockingDual, "A4-n2"}};
  for (const Spec &s : specs) {
    llvm::Expected<alltoallv::Pattern> pat =
        alltoallv::buildPattern(s.algorithm, p);
    if (!pat) { // A3 off perfect squares
      llvm::consumeError(pat.takeError());
      continue;
    }
    plans.push_back(toPlan(*pat));
    const rt::AlltoallvPlan *plan = &plans.back().plan;
    variants.push_back(
        {s.label, s.algorithm,
         [plan, mode = s.mode](const void *sb, const int *sc, const int *sd,
                               MPI_Datatype st, void *rb, const int *rc,
                               const int *rd, MPI_Datatype rt, MPI_Comm comm,
                               rt::AlltoallvStats *stats) {
           return rt::alltoallv(*plan, sb, sc, sd, st, rb, rc, rd, rt, comm,
                                mode, stats);
         },
         true});
  }
  // The emitted schedules, where their family has p ranks.
  using Emitted =
      int (*)(const void *, const int *, const int *, MPI_Datatype, void *,
              const int *, const int *, MPI_Datatype, MPI_Comm);
  // The flat model prices the tables' array (Table 3, Theorem 2), which
  // an emitted A3 or A4 runs on a square only: elsewhere no model.
  auto emitted = [&](const char *label, std::optional<A> algorithm, Emitted f) {
    variants.push_back(
        {label, algorithm,
         [f](const void *sb, const int *sc, const int *sd, MPI_Datatype st,
             void *rb, const int *rc, const int *rd, MPI_Datatype rt,
             MPI_Comm comm, rt::AlltoallvStats *) {
           return f(sb, sc, sd, st, rb, rc, rd, rt, comm);
         }});
  };
  // A3 and A4 on an a x b array, a in 1..8 and b in 2..8 as compiled.
  bool array = false;
  for (int a = 1; a <= 8; ++a)
    array |= p % a == 0 && p / a >= 2 && p / a <= 8;
  if (p <= 64)
    emitted("A2-ir", A::TwoStageRandom, a2av_ir::spread_alltoallv);
  int side = 1;
  while ((side + 1) * (side + 1) <= p)
    ++side;
  const bool square = side * side == p;
  if (array) {
    emitted("A3-ir", square ? std::optional(A::TwoStageMesh) : std::nullopt,
            a2av_ir::two_stage_mesh_alltoallv);
    emitted("A4-ir", square ? std::optional(A::FourStage) : std::nullopt,
            a2av_ir::four_stage_alltoallv);
  }
  return variants;
}

/// This rank's side of one count matrix: its counts and displacements,
/// what it sends (each element names its sender, receiver and index), and
/// what MPI_Alltoallv delivers to it.
struct Exchange {
  std::vector<int> sc, sd, rc, rd;
  std::vector<int64_t> send, expected;
  int64_t lmax = 0; // L_max: the most any node sends or receives, elements
};

Exchange exchangeFor(const std::vector<int> &m, int p, int me) {
  Exchange x;
  for (int i = 0; i < p; ++i) {
    int64_t out = 0, in = 0;
    for (int j = 0; j < p; ++j)
      out += m[static_cast<size_t>(i) * p + j],
          in += m[static_cast<size_t>(j) * p + i];
    x.lmax = std::max({x.lmax, out, in});
  }
  x.sc.resize(p), x.sd.resize(p), x.rc.resize(p), x.rd.resize(p);
  for (int j = 0, s = 0, r = 0; j < p; ++j) {
    x.sc[j] = m[static_cast<size_t>(me) * p + j], x.sd[j] = s, s += x.sc[j];
    x.rc[j] = m[static_cast<size_t>(j) * p + me], x.rd[j] = r, r += x.rc[j];
  }
  x.send.resize(static_cast<size_t>(x.sd[p - 1]) + x.sc[p - 1] + 1);
  x.expected.assign(static_cast<size_t>(x.rd[p - 1]) + x.rc[p - 1] + 1, -1);
  for (int j = 0; j < p; ++j)
    for (int k = 0; k < x.sc[j]; ++k)
      x.send[static_cast<size_t>(x.sd[j]) + k] =
          (int64_t(me) << 40) | (int64_t(j) << 24) | k;
  MPI_Alltoallv(x.send.data(), x.sc.data(), x.sd.data(), MPI_INT64_T,
                x.expected.data(), x.rc.data(), x.rd.data(), MPI_INT64_T,
                MPI_COMM_WORLD);
  return x;
}

/// One variant timed on one exchange: the slowest rank's time of each run
/// after two of warm-up (private communicator, buffers), sorted; and, the
/// most over the ranks, its start-ups, largest buffer and longest message
/// (-1: not observable, MPI's and the emitted schedules') and whether any
/// result was wrong.
struct Timing {
  std::vector<double> times;
  int64_t startups = -1, largestBuffer = -1, longestMessage = -1;
  bool wrong = false;
};

Timing timeVariant(const Variant &v, const Exchange &x, int runs) {
  Timing out;
  rt::AlltoallvStats stats;
  std::vector<int64_t> recv(x.expected.size());
  int64_t wrong = 0;
  for (int run = 0; run < runs + 2; ++run) {
    std::fill(recv.begin(), recv.end(), -1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int code = v.call(x.send.data(), x.sc.data(), x.sd.data(), MPI_INT64_T,
                      recv.data(), x.rc.data(), x.rd.data(), MPI_INT64_T,
                      MPI_COMM_WORLD, &stats);
    double t = MPI_Wtime() - t0, slowest = 0;
    wrong |= code != MPI_SUCCESS || recv != x.expected;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (run >= 2)
      out.times.push_back(slowest);
  }
  std::sort(out.times.begin(), out.times.end());
  int64_t longest = 0;
  for (const rt::AlltoallvStageStats &st : stats.stages)
    longest = std::max(longest, st.longestReceived);
  int64_t counts[4] = {stats.messages, stats.largestBuffer, longest, wrong},
          most[4];
  if (!v.counted)
    counts[0] = counts[1] = counts[2] = -1;
  MPI_Allreduce(counts, most, 4, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  out.startups = most[0];
  out.largestBuffer = most[1];
  out.longestMessage = most[2];
  out.wrong = most[3] != 0;
  return out;
}

/// Where each variant's figures go, and the model that prices it.
struct Report {
  int p, mmax, elementBytes;
  double td, perByte; // the ping-pong's start-up and time a byte, seconds
  FILE *csv;          // null: the terminal alone

  double modelUs(const alltoallv::ModelCost &c, double lmaxBytes) const {
    return (c.startups * td + c.traffic * (lmaxBytes / p) * perByte) * 1e6;
  }

  /// One variant's row on the terminal and in the CSV file.
  void print(const char *pattern, const Variant &v, const Timing &timing,
             double lmaxBytes, double theorem2Us) const {
    const std::vector<double> &times = timing.times;
    const double us = times[times.size() / 2] * 1e6;
    auto number = [](int64_t x) {
      return x < 0 ? std::string() : std::to_string(x);
    };
    std::string model, source;
    if (v.algorithm) {
      alltoallv::ModelCost c = alltoallv::modelCost(*v.algorithm, p);
      char text[32];
      std::snprintf(text, sizeof text, "%.1f", modelUs(c, lmaxBytes));
      model = text;
      source = c.source;
    }
    auto shown = [](const std::string &s) { return s.empty() ? "-" : s; };
    std::printf("%-14s %10.1f %10.1f %10.1f %10s %14s %12s %10s%s\n",
                v.label.c_str(), us, times.front() * 1e6, times.back() * 1e6,
                shown(number(timing.startups)).c_str(),
                shown(number(timing.largestBuffer)).c_str(),
                shown(number(timing.longestMessage)).c_str(),
                shown(model).c_str(), timing.wrong ? "  WRONG RESULT" : "");
    if (csv)
      std::fprintf(csv,
                   "%d,%s,%d,%d,%s,%.2f,%.2f,%.2f,%s,%s,%s,%.0f,%s,%s,"
                   "%.2f\n",
                   p, pattern, mmax, elementBytes, v.label.c_str(), us,
                   times.front() * 1e6, times.back() * 1e6,
                   number(timing.startups).c_str(),
                   number(timing.largestBuffer).c_str(),
                   number(timing.longestMessage).c_str(), lmaxBytes,
                   model.c_str(), source.c_str(), theorem2Us);
  }
};
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
  if (p < 2 || mmax < 0 || runs < 1) {
    if (me == 0)
      std::fprintf(stderr, "alltoallv_bench needs at least 2 ranks, "
                           "--mmax >= 0 and --runs >= 1\n");
    MPI_Finalize();
    return 2;
  }
  const int elementBytes = 8; // MPI_INT64_T
  double td = pingPong(0, 200, me);
  double perByte = std::max(0.0, (pingPong(1 << 20, 20, me) - td) / (1 << 20));

  std::deque<OwnedPlan> plans; // the variants' calls point into them
  const std::vector<Variant> variants = variantsFor(p, plans);

  FILE *csv = nullptr;
  if (me == 0 && !csvPath.empty()) {
    csv = std::fopen(csvPath.c_str(), "w");
    if (!csv)
      std::fprintf(stderr, "alltoallv_bench: cannot write %s\n",
                   csvPath.c_str());
  }
  if (csv)
    std::fprintf(csv, "p,pattern,mmax_elements,element_bytes,algorithm,"
                      "us_per_call,us_min,us_max,startups_per_node,"
                      "largest_buffer_bytes,longest_message_bytes,lmax_bytes,"
                      "model_us,model_source,theorem2_us\n");
  if (me == 0)
    std::printf("P = %d, M_max = %d elements of %d bytes, %d runs; "
                "ping-pong T_d = %.2f us, t = %.3f ns/byte\n",
                p, mmax, elementBytes, runs, td * 1e6, perByte * 1e9);
  const Report report{p, mmax, elementBytes, td, perByte, csv};
  const alltoallv::ModelCost theorem2 =
      alltoallv::modelCost(alltoallv::Algorithm::FourStage, p);
  int mismatches = 0;
  for (const char *pattern : {"regular", "spike", "transpose", "random"}) {
    const Exchange x = exchangeFor(sizes(pattern, p, mmax), p, me);
    const double lmaxBytes = double(x.lmax) * elementBytes;
    const double theorem2Us = report.modelUs(theorem2, lmaxBytes);
    if (me == 0)
      std::printf("\n%-10s L_max = %.0f bytes, Theorem 2: %.1f us\n"
                  "%-14s %10s %10s %10s %10s %14s %12s %10s\n",
                  pattern, lmaxBytes, theorem2Us, "algorithm", "us/call", "min",
                  "max", "start-ups", "largest buffer", "longest msg",
                  "model us");
    for (const Variant &v : variants) {
      const Timing timing = timeVariant(v, x, runs);
      mismatches += timing.wrong;
      if (me == 0)
        report.print(pattern, v, timing, lmaxBytes, theorem2Us);
    }
  }
  if (csv)
    std::fclose(csv);
  if (me == 0 && mismatches)
    std::fprintf(stderr,
                 "alltoallv_bench: FAIL: %d results differed from "
                 "MPI_Alltoallv's\n",
                 mismatches);
  MPI_Finalize();
  return mismatches ? 1 : 0;
}
