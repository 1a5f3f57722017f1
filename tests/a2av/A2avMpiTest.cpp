// End to end under mpirun: the irregular all-to-all of collc_runtime, run
// over the proved patterns of A1-A4 (001 §3) in every mode of §3.4, on the
// paper's Pattern 1 (one spike) and Pattern 2 (2-D transpose) of Figure 14,
// random sizes, all-zero sizes and one huge pair; each result must be
// identical, byte for byte, to MPI_Alltoallv's. Then with ranks that lay
// their blocks out differently, and in place.
//
// Usage: a2av_mpi_test [emitted] [counts_differ]   (with "emitted": the
// functions collc compile wrote for tests/a2av/a2av.coll, instead of plans
// built here; with "counts_differ": rank 2 expects less from rank 0 than
// rank 0 sends, which only rank 2 can see, so the job must be aborted with
// the message rather than leave the other ranks reporting success.)

#include "A2avCases.h"

#include <mpi.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#ifdef COLLC_A2AV_EMITTED
#include "a2av.h"
#include "alltoall.h"
#include "alltoallv_forwarding.h"
#endif

using namespace collc;
using namespace collc::a2av_test;

namespace {

using Call = std::function<int(const void *, const int *, const int *,
                               MPI_Datatype, void *, const int *, const int *,
                               MPI_Datatype, MPI_Comm)>;

/// Runs one case; returns whether this rank's result matched MPI's, and
/// (so that MPI_Alltoallv itself is checked too) the serial all-to-all.
bool runCase(const Call &call, const std::vector<int> &m, int p, int me) {
  RankBuffers b = buffersFor(m, p, me);
  std::vector<int64_t> expected = b.recv;
  MPI_Alltoallv(b.send.data(), b.sendcounts.data(), b.sdispls.data(),
                MPI_INT64_T, expected.data(), b.recvcounts.data(),
                b.rdispls.data(), MPI_INT64_T, MPI_COMM_WORLD);
  int rc = call(b.send.data(), b.sendcounts.data(), b.sdispls.data(),
                MPI_INT64_T, b.recv.data(), b.recvcounts.data(),
                b.rdispls.data(), MPI_INT64_T, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS && b.recv == expected &&
         expected == expectedRecv(m, p, me);
}

/// How a rank lays out its int64 elements: `type` holds `per` of them, and
/// the element at logical index L (block j's k-th at per * displs[j] + k)
/// lies in memory slot slot(L); every other slot is a hole.
struct Layout {
  MPI_Datatype type;
  int per;
  int64_t (*slot)(int64_t);
};

/// MPI_INT64_T; each element in the second half of 16 bytes (its true lower
/// bound 8); pairs whose two elements lie in reverse order, packed (as
/// MPI_Pack reads them) as two ascending ones.
Layout layoutOf(int kind) {
  static const MPI_Datatype secondHalf = [] {
    const int one = 1;
    const MPI_Aint at = sizeof(int64_t);
    const MPI_Datatype int64 = MPI_INT64_T;
    MPI_Datatype inStruct, t;
    MPI_Type_create_struct(1, &one, &at, &int64, &inStruct);
    MPI_Type_create_resized(inStruct, 0, 2 * sizeof(int64_t), &t);
    MPI_Type_free(&inStruct);
    MPI_Type_commit(&t);
    return t;
  }();
  static const MPI_Datatype reversedPair = [] {
    const int lengths[] = {1, 1}, displs[] = {1, 0};
    MPI_Datatype t;
    MPI_Type_indexed(2, lengths, displs, MPI_INT64_T, &t);
    MPI_Type_commit(&t);
    return t;
  }();
  switch (kind) {
  case 0:
    return {MPI_INT64_T, 1, [](int64_t l) { return l; }};
  case 1:
    return {secondHalf, 1, [](int64_t l) { return 2 * l + 1; }};
  default:
    return {reversedPair, 2, [](int64_t l) { return l ^ 1; }};
  }
}

/// Each rank's layout is its own, as MPI allows (only the type signatures
/// must match): rank r lays its elements out by layoutOf(r % 3), on a
/// count matrix of even entries; holes must stay as they were. With
/// `inPlace` (a symmetric matrix) every rank passes MPI_IN_PLACE, its
/// blocks to send where it receives. Returns whether this rank's result is
/// right.
bool runLayouts(const Call &call, const std::vector<int> &m, int p, int me,
                bool inPlace) {
  const RankBuffers b = buffersFor(m, p, me);
  const Layout l = layoutOf(me % 3);
  constexpr int64_t hole = -99;
  auto slotOf = [&](const std::vector<int> &displs, int j, int k) {
    return static_cast<size_t>(l.slot(int64_t{l.per} * displs[j] + k));
  };
  std::vector<int64_t> send(2 * b.send.size() + 2, hole),
      recv(2 * b.recv.size() + 2, hole), expected = recv;
  std::vector<int> sendCounts(b.sendcounts), recvCounts(b.recvcounts);
  for (int j = 0; j < p; ++j) {
    for (int k = 0; k < b.sendcounts[j]; ++k)
      send[slotOf(b.sdispls, j, k)] = element(me, j, k);
    for (int k = 0; k < b.recvcounts[j]; ++k) {
      expected[slotOf(b.rdispls, j, k)] = element(j, me, k);
      if (inPlace)
        recv[slotOf(b.rdispls, j, k)] = element(me, j, k);
    }
    sendCounts[j] /= l.per;
    recvCounts[j] /= l.per;
  }
  const int rc = call(inPlace ? MPI_IN_PLACE : send.data(), sendCounts.data(),
                      b.sdispls.data(), l.type, recv.data(), recvCounts.data(),
                      b.rdispls.data(), l.type, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS && recv == expected;
}

/// The counts_differ case on `call`; reached past the call only where the
/// job was not aborted, which fails the test.
int runCountsDiffer(const Call &call, int p, int me) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::vector<int> sendCounts(p, 4), recvCounts(p, 4), displs(p);
  for (int j = 0; j < p; ++j)
    displs[j] = 4 * j;
  if (me == 2)
    recvCounts[0] = 3;
  std::vector<int> in(4 * p, me), out(4 * p, 0);
  int rc =
      call(in.data(), sendCounts.data(), displs.data(), MPI_INT, out.data(),
           recvCounts.data(), displs.data(), MPI_INT, MPI_COMM_WORLD);
  std::printf("rank %d: returned %d\n", me, rc);
  std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 1;
}

#ifdef COLLC_A2AV_EMITTED
/// Messages this rank has started, counted through MPI's profiling
/// interface (MPI 4.0 §15.2): the backend sends with these three.
long messagesStarted = 0;
#endif

} // namespace

#ifdef COLLC_A2AV_EMITTED
extern "C" {
int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
              MPI_Comm comm, MPI_Request *request) {
  ++messagesStarted;
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}
int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
             MPI_Comm comm) {
  ++messagesStarted;
  return PMPI_Send(buf, count, type, dest, tag, comm);
}
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 int dest, int sendtag, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                 MPI_Status *status) {
  ++messagesStarted;
  return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                       recvcount, recvtype, source, recvtag, comm, status);
}
}

/// The emitted mesh_alltoallv, compiled for mesh(a, b) with a in 1..4 and
/// b in 2..9, runs on p ranks the member whose sides are closest
/// (collc/Member.h): each rank sends a - 1 + b - 1 messages, where the
/// first member in order, mesh(1, p), would send p - 1 (tiny blocks: one
/// message a step). Returns whether every rank sent as many.
bool runsSquarestMesh(int p, int me) {
  int sides[10][2] = {{},     {},     {1, 2}, {1, 3}, {2, 2},
                      {1, 5}, {2, 3}, {1, 7}, {2, 4}, {3, 3}};
  const long expected = sides[p][0] - 1 + sides[p][1] - 1;
  std::vector<int> m(static_cast<size_t>(p) * p, 1);
  RankBuffers b = buffersFor(m, p, me);
  messagesStarted = 0;
  const int rc = a2av_forward::mesh_alltoallv(
      b.send.data(), b.sendcounts.data(), b.sdispls.data(), MPI_INT64_T,
      b.recv.data(), b.recvcounts.data(), b.rdispls.data(), MPI_INT64_T,
      MPI_COMM_WORLD);
  const long sent = messagesStarted;
  int ok =
      rc == MPI_SUCCESS && sent == expected && b.recv == expectedRecv(m, p, me);
  int allOk = 0;
  PMPI_Allreduce(&ok, &allOk, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (me == 0)
    std::printf("%-28s p=%d mesh(%d, %d): rank 0 sent %ld messages, %s\n",
                "emitted mesh_alltoallv", p, sides[p][0], sides[p][1], sent,
                allOk ? "as its member's steps" : "MISMATCH");
  return allOk;
}
#endif

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int p = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  bool emitted = false, countsDiffer = false;
  std::string via; // via=NAME: counts_differ on the emitted schedule NAME
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    emitted |= arg == "emitted";
    countsDiffer |= arg == "counts_differ";
    if (arg.rfind("via=", 0) == 0)
      via = arg.substr(4);
  }

  std::vector<std::pair<std::string, Call>> calls;
  std::vector<OwnedPlan> plans;
  plans.reserve(8);
  if (emitted) {
#ifdef COLLC_A2AV_EMITTED
    // The emitted functions, in their default (dual-buffer) mode.
#define COLLC_EMITTED(F)                                                       \
  [](const void *sb, const int *sc, const int *sd, MPI_Datatype st, void *rb,  \
     const int *rc, const int *rd, MPI_Datatype rt,                            \
     MPI_Comm comm) { return F(sb, sc, sd, st, rb, rc, rd, rt, comm); }
    std::string name = "emitted a2a" + std::to_string(p);
    if (p == 2)
      calls.push_back({name, COLLC_EMITTED(collc_test::a2a2)});
    if (p == 3)
      calls.push_back({name, COLLC_EMITTED(collc_test::a2a3)});
    if (p == 5)
      calls.push_back({name, COLLC_EMITTED(collc_test::a2a5)});
    if (p == 8)
      calls.push_back({name, COLLC_EMITTED(collc_test::a2a8)});
    // Forwarding schedules, where their topology has p ranks.
    calls.push_back({"emitted ring_alltoallv",
                     COLLC_EMITTED(a2av_forward::ring_alltoallv)});
    calls.push_back({"emitted mesh_alltoallv",
                     COLLC_EMITTED(a2av_forward::mesh_alltoallv)});
    // A3 and A4 on the squarest a x b array (one row for a prime).
    calls.push_back({"emitted two_stage_mesh_alltoallv",
                     COLLC_EMITTED(a2av_forward::two_stage_mesh_alltoallv)});
    calls.push_back({"emitted four_stage_alltoallv",
                     COLLC_EMITTED(a2av_forward::four_stage_alltoallv)});
    calls.push_back({"emitted spread_alltoallv",
                     COLLC_EMITTED(a2av_forward::spread_alltoallv)});
    if ((p & (p - 1)) == 0)
      calls.push_back({"emitted hypercube_alltoallv",
                       COLLC_EMITTED(a2av_forward::hypercube_alltoallv)});
    calls.push_back({"emitted alltoallv_direct",
                     COLLC_EMITTED(a2av_library::alltoallv_direct)});
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
        calls.push_back({alltoallv::algorithmName(a).str() + "/" + modeName,
                         [plan, mode = mode](
                             const void *sb, const int *sc, const int *sd,
                             MPI_Datatype st, void *rb, const int *rc,
                             const int *rd, MPI_Datatype rt, MPI_Comm comm) {
                           return rt::alltoallv(*plan, sb, sc, sd, st, rb, rc,
                                                rd, rt, comm, mode);
                         }});
    }
  }

  // Emitted: the library's schedule (last), or the one `via` names;
  // plans: A4 in its default mode.
  if (countsDiffer) {
    const Call *call = emitted ? &calls.back().second : &calls[2].second;
    for (const auto &[callName, c] : calls)
      if (!via.empty() && callName == "emitted " + via)
        call = &c;
    return runCountsDiffer(*call, p, me);
  }

  int failures = 0;
  for (const auto &[callName, call] : calls)
    for (const char *pattern :
         {"spike", "transpose", "random", "zero", "huge"}) {
      std::vector<int> m = countMatrix(pattern, p, 50, 5000);
      int ok = runCase(call, m, p, me) ? 1 : 0, allOk = 0;
      MPI_Allreduce(&ok, &allOk, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      if (me == 0)
        std::printf("%-28s %-10s p=%d %s\n", callName.c_str(), pattern, p,
                    allOk ? "identical to MPI_Alltoallv" : "MISMATCH");
      failures += !allOk;
    }
  // Ranks that lay their blocks out differently; then in place, on a
  // symmetric matrix (what i sends j, j sends i).
  for (const auto &[callName, call] : calls)
    for (bool inPlace : {false, true}) {
      std::vector<int> m = countMatrix("random", p, 25, 2500, 2);
      for (int i = 0; i < p; ++i)
        for (int j = 0; j < i; ++j)
          m[static_cast<size_t>(j) * p + i] = m[static_cast<size_t>(i) * p + j];
      int ok = runLayouts(call, m, p, me, inPlace) ? 1 : 0, allOk = 0;
      MPI_Allreduce(&ok, &allOk, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      if (me == 0)
        std::printf("%-28s %-10s p=%d %s\n", callName.c_str(),
                    inPlace ? "in place" : "layouts", p,
                    allOk ? "right, holes untouched" : "MISMATCH");
      failures += !allOk;
    }
#ifdef COLLC_A2AV_EMITTED
  if (emitted && p <= 9)
    failures += !runsSquarestMesh(p, me);
#endif
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
