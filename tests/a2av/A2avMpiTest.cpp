// End to end under mpirun: the irregular all-to-all of collc_runtime, run
// over the proved patterns of A1-A4 (001 §3) in every mode of §3.4, on the
// paper's Pattern 1 (one spike) and Pattern 2 (2-D transpose) of Figure 14,
// random sizes, all-zero sizes and one huge pair; each result must be
// identical, byte for byte, to MPI_Alltoallv's.
//
// Usage: a2av_mpi_test [emitted]   (with "emitted": the functions collc
// compile wrote for tests/a2av/a2av.coll, instead of plans built here.)

#include "alltoallv/Patterns.h"
#include "collc/Alltoallv.h"

#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#ifdef COLLC_A2AV_EMITTED
#include "a2av.h"
#endif

using namespace collc;

namespace {

struct OwnedPlan {
  std::vector<std::vector<int>> tables;
  rt::AlltoallvPlan plan;
};

OwnedPlan toPlan(const alltoallv::Pattern &pattern) {
  OwnedPlan owned;
  const alltoallv::Layout &l = pattern.layout;
  owned.plan.p = static_cast<int>(l.p);
  owned.plan.columns = static_cast<int>(l.columns);
  owned.plan.rows = static_cast<int>(l.rows);
  owned.plan.r = static_cast<int>(l.r);
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

/// counts[i * p + j]: elements node i sends node j. Every rank computes the
/// same matrix from the same seed.
std::vector<int> sizes(const std::string &name, int p, int smallMax,
                       int spike) {
  std::vector<int> m(p * p, 0);
  std::mt19937 rng(12345);
  for (int i = 0; i < p; ++i) {
    int spikeTo = -1;
    if (name == "spike")
      spikeTo = static_cast<int>(rng() % p);
    else if (name == "transpose") {
      // Figure 14: j = (i % C) C + floor(i / C), on the A4 array.
      alltoallv::Layout l = alltoallv::layoutFor(p);
      int c = static_cast<int>(l.columns);
      spikeTo = (i % c) * c + i / c;
      if (spikeTo >= p)
        spikeTo = i;
    }
    for (int j = 0; j < p; ++j) {
      if (name == "zero")
        m[i * p + j] = 0;
      else if (name == "random")
        m[i * p + j] = static_cast<int>(rng() % (4 * smallMax + 1));
      else if (name == "huge")
        m[i * p + j] = (i == p - 1 && j == 0) ? 1 << 20 : 0;
      else
        m[i * p + j] = j == spikeTo ? spike : static_cast<int>(rng() % (smallMax + 1));
    }
  }
  return m;
}

using Call = std::function<int(const void *, const int *, const int *,
                               MPI_Datatype, void *, const int *, const int *,
                               MPI_Datatype, MPI_Comm)>;

/// Runs one case; returns whether this rank's result matched.
bool runCase(const Call &call, const std::vector<int> &m, int p, int me) {
  std::vector<int> sendcounts(p), sdispls(p), recvcounts(p), rdispls(p);
  int sendTotal = 0, recvTotal = 0;
  for (int j = 0; j < p; ++j) {
    sendcounts[j] = m[me * p + j];
    sdispls[j] = sendTotal + 3 * j; // gaps, to catch displacement mistakes
    sendTotal = sdispls[j] + sendcounts[j];
    recvcounts[j] = m[j * p + me];
    rdispls[j] = recvTotal + 2 * j;
    recvTotal = rdispls[j] + recvcounts[j];
  }
  std::vector<int64_t> send(sendTotal + 1);
  for (int j = 0; j < p; ++j)
    for (int k = 0; k < sendcounts[j]; ++k)
      send[sdispls[j] + k] =
          (static_cast<int64_t>(me) << 40) | (static_cast<int64_t>(j) << 24) | k;
  std::vector<int64_t> expected(recvTotal + 1, -7), actual(recvTotal + 1, -7);
  MPI_Alltoallv(send.data(), sendcounts.data(), sdispls.data(), MPI_INT64_T,
                expected.data(), recvcounts.data(), rdispls.data(), MPI_INT64_T,
                MPI_COMM_WORLD);
  int rc = call(send.data(), sendcounts.data(), sdispls.data(), MPI_INT64_T,
                actual.data(), recvcounts.data(), rdispls.data(), MPI_INT64_T,
                MPI_COMM_WORLD);
  return rc == MPI_SUCCESS && actual == expected;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int p = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  bool emitted = argc > 1 && std::string(argv[1]) == "emitted";

  std::vector<std::pair<std::string, Call>> calls;
  std::vector<OwnedPlan> plans;
  plans.reserve(8);
  if (emitted) {
#ifdef COLLC_A2AV_EMITTED
    // The emitted functions, in their default (dual-buffer) mode.
#define COLLC_EMITTED(F)                                                     \
  [](const void *sb, const int *sc, const int *sd, MPI_Datatype st, void *rb, \
     const int *rc, const int *rd, MPI_Datatype rt, MPI_Comm comm) {          \
    return F(sb, sc, sd, st, rb, rc, rd, rt, comm);                           \
  }
    std::string name = "emitted a2a" + std::to_string(p);
    if (p == 2) calls.push_back({name, COLLC_EMITTED(collc_test::a2a2)});
    if (p == 3) calls.push_back({name, COLLC_EMITTED(collc_test::a2a3)});
    if (p == 5) calls.push_back({name, COLLC_EMITTED(collc_test::a2a5)});
    if (p == 8) calls.push_back({name, COLLC_EMITTED(collc_test::a2a8)});
#undef COLLC_EMITTED
#endif
    if (calls.empty()) {
      if (me == 0)
        std::fprintf(stderr, "no emitted function for %d ranks\n", p);
      MPI_Finalize();
      return 1;
    }
  } else {
    for (alltoallv::Algorithm a :
         {alltoallv::Algorithm::FourStage, alltoallv::Algorithm::Direct,
          alltoallv::Algorithm::TwoStageRandom,
          alltoallv::Algorithm::TwoStageMesh}) {
      llvm::Expected<alltoallv::Pattern> pat = alltoallv::buildPattern(a, p);
      if (!pat) {
        llvm::consumeError(pat.takeError()); // A3 off perfect squares
        continue;
      }
      plans.push_back(toPlan(*pat));
      const rt::AlltoallvPlan *plan = &plans.back().plan;
      for (auto [mode, modeName] :
           {std::pair{rt::AlltoallvMode::Blocking, "blocking"},
            std::pair{rt::AlltoallvMode::NonBlocking, "nonblocking"},
            std::pair{rt::AlltoallvMode::NonBlockingDual, "dual"}})
        calls.push_back(
            {alltoallv::algorithmName(a).str() + "/" + modeName,
             [plan, mode = mode](const void *sb, const int *sc, const int *sd,
                                 MPI_Datatype st, void *rb, const int *rc,
                                 const int *rd, MPI_Datatype rt,
                                 MPI_Comm comm) {
               return rt::alltoallv(*plan, sb, sc, sd, st, rb, rc, rd, rt,
                                    comm, mode);
             }});
    }
  }

  int failures = 0;
  for (const auto &[callName, call] : calls)
    for (const char *pattern : {"spike", "transpose", "random", "zero", "huge"}) {
      std::vector<int> m = sizes(pattern, p, 50, 5000);
      int ok = runCase(call, m, p, me) ? 1 : 0, allOk = 0;
      MPI_Allreduce(&ok, &allOk, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      if (me == 0)
        std::printf("%-28s %-10s p=%d %s\n", callName.c_str(), pattern, p,
                    allOk ? "identical to MPI_Alltoallv" : "MISMATCH");
      failures += !allOk;
    }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
