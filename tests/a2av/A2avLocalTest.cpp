// The irregular all-to-all on the local backend: ranks as threads of this
// process (collc/Local.h), no mpirun. A4 in each mode of 001 §3.4, A1, A2
// and A3 (at perfect squares) run over the proved patterns on 2 to 64 ranks,
// on Figure 14's Pattern 1 (spike) and Pattern 2 (transpose), random sizes,
// all-zero sizes and one huge pair; every rank's receive buffer must equal
// a serial computation of the all-to-all, gaps between blocks untouched.
// The functions `collc compile` emitted for a2av_local.coll run through
// their twins in namespace `local` the same way.

#include "A2avCases.h"
#include "a2av_local.h"
#include "alltoall.h"
#include "alltoallv_forwarding.h"

#include "collc/Local.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

using namespace collc;
using namespace collc::a2av_test;

namespace {

const int rankCounts[] = {2, 3, 5, 8, 13, 24, 35, 55, 61, 64};
const std::vector<const char *> patterns = {"spike", "transpose", "random",
                                            "zero", "huge"};
// The first call of an emitted schedule notes what each message carries,
// and later calls leave its empty pieces out: a first call with no elements
// must note them all the same.
const std::vector<const char *> sparseFirst = {"zero", "huge", "spike", "zero",
                                               "random"};

using Fn =
    std::function<int(const RankBuffers &, RankBuffers &, rt::LocalComm &)>;

/// Runs `fn` on p ranks for every pattern of `order` (one local::run, the
/// calls in that order) and compares each rank's result with the serial
/// all-to-all.
void checkAll(const std::string &name, int p, const Fn &fn,
              const std::vector<const char *> &order = patterns) {
  std::vector<std::vector<int>> matrices;
  for (const char *pattern : order)
    matrices.push_back(countMatrix(pattern, p, 50, 5000));
  const size_t n = matrices.size();
  std::vector<std::vector<std::vector<int64_t>>> got(
      n, std::vector<std::vector<int64_t>>(static_cast<size_t>(p)));
  std::vector<std::vector<int>> codes(
      n, std::vector<int>(static_cast<size_t>(p), -1));
  ASSERT_EQ(rt::local::run(p,
                           [&](rt::LocalComm &comm) {
                             const int me = comm.rank();
                             for (size_t c = 0; c < n; ++c) {
                               RankBuffers b = buffersFor(matrices[c], p, me);
                               codes[c][me] = fn(b, b, comm);
                               got[c][me] = std::move(b.recv);
                             }
                           }),
            MPI_SUCCESS);
  for (size_t c = 0; c < n; ++c)
    for (int me = 0; me < p; ++me) {
      SCOPED_TRACE(name + " on " + std::to_string(p) + " ranks, " + order[c] +
                   ", rank " + std::to_string(me));
      EXPECT_EQ(codes[c][me], MPI_SUCCESS);
      EXPECT_EQ(got[c][me], expectedRecv(matrices[c], p, me));
    }
}

/// The pattern of `a` on p ranks, run in `mode`.
void checkPlan(alltoallv::Algorithm a, rt::AlltoallvMode mode,
               const std::string &name, int p) {
  llvm::Expected<alltoallv::Pattern> pattern = alltoallv::buildPattern(a, p);
  ASSERT_TRUE(static_cast<bool>(pattern))
      << llvm::toString(pattern.takeError());
  OwnedPlan plan = toPlan(*pattern);
  checkAll(name, p,
           [&](const RankBuffers &in, RankBuffers &out, rt::LocalComm &comm) {
             return rt::alltoallv(plan.plan, in.send.data(),
                                  in.sendcounts.data(), in.sdispls.data(),
                                  MPI_INT64_T, out.recv.data(),
                                  in.recvcounts.data(), in.rdispls.data(),
                                  MPI_INT64_T, comm, mode);
           });
}

TEST(A2avLocal, A4Blocking) {
  for (int p : rankCounts)
    checkPlan(alltoallv::Algorithm::FourStage, rt::AlltoallvMode::Blocking,
              "A4-b", p);
}

TEST(A2avLocal, A4NonBlocking) {
  for (int p : rankCounts)
    checkPlan(alltoallv::Algorithm::FourStage, rt::AlltoallvMode::NonBlocking,
              "A4-n1", p);
}

TEST(A2avLocal, A4DualBuffers) {
  for (int p : rankCounts)
    checkPlan(alltoallv::Algorithm::FourStage,
              rt::AlltoallvMode::NonBlockingDual, "A4-n2", p);
}

TEST(A2avLocal, A1Direct) {
  for (int p : rankCounts)
    checkPlan(alltoallv::Algorithm::Direct, rt::AlltoallvMode::NonBlocking,
              "A1", p);
}

TEST(A2avLocal, A2TwoStageRandom) {
  for (int p : rankCounts)
    checkPlan(alltoallv::Algorithm::TwoStageRandom,
              rt::AlltoallvMode::NonBlockingDual, "A2", p);
}

// 001 §3.1.3: A3 only on perfect squares.
TEST(A2avLocal, A3TwoStageMeshOnSquares) {
  for (int p : {4, 9, 16, 36, 64})
    checkPlan(alltoallv::Algorithm::TwoStageMesh, rt::AlltoallvMode::Blocking,
              "A3", p);
}

// What `collc compile` wrote, through the twins in namespace `local`, in
// their default mode (dual buffers) and blocking.
using EmittedFn = int (*)(const void *, const int *, const int *, MPI_Datatype,
                          void *, const int *, const int *, MPI_Datatype,
                          rt::LocalComm &, rt::AlltoallvMode);

void checkEmitted(const std::string &name, int p, EmittedFn fn) {
  for (rt::AlltoallvMode mode :
       {rt::AlltoallvMode::NonBlockingDual, rt::AlltoallvMode::Blocking})
    checkAll(name, p,
             [&](const RankBuffers &in, RankBuffers &out, rt::LocalComm &comm) {
               return fn(in.send.data(), in.sendcounts.data(),
                         in.sdispls.data(), MPI_INT64_T, out.recv.data(),
                         in.recvcounts.data(), in.rdispls.data(), MPI_INT64_T,
                         comm, mode);
             });
}

TEST(A2avLocal, EmittedTwins) {
  namespace gen = a2av_local::local;
  const std::pair<int, EmittedFn> a4[] = {
      {2, gen::a4_2},   {3, gen::a4_3},   {5, gen::a4_5},   {8, gen::a4_8},
      {13, gen::a4_13}, {24, gen::a4_24}, {35, gen::a4_35}, {55, gen::a4_55},
      {61, gen::a4_61}, {64, gen::a4_64}};
  for (auto [p, fn] : a4)
    checkEmitted("emitted a4_" + std::to_string(p), p, fn);
  checkEmitted("emitted a1_13", 13, gen::a1_13);
  checkEmitted("emitted a2_8", 8, gen::a2_8);
  checkEmitted("emitted a3_9", 9, gen::a3_9);
}

// The library's `schedule alltoallv_direct` (specs/library/alltoall.coll),
// one emitted function for every size: its steps are walked at each rank
// on the first call and kept for the next ones (run twice per size here).
TEST(A2avLocal, LibrarySchedule) {
  for (int p = 2; p <= 64; ++p)
    checkAll("alltoallv_direct", p,
             [](const RankBuffers &in, RankBuffers &out, rt::LocalComm &comm) {
               return a2av_library::local::alltoallv_direct(
                   in.send.data(), in.sendcounts.data(), in.sdispls.data(),
                   MPI_INT64_T, out.recv.data(), in.recvcounts.data(),
                   in.rdispls.data(), MPI_INT64_T, comm);
             });
}

// Schedules whose messages forward blocks (specs/alltoallv_forwarding.coll):
// the ring's on every size, the mesh's and A3's and A4's where p = a * b
// with a in 1..8, b in 2..8 (the squarest array: 3 x 4 for 12 ranks, one row
// for 7), the hypercube's on powers of two.
// The first call at each size picks each message's blocks with the rules'
// filters; the later ones send what it noted.
TEST(A2avLocal, ForwardingSchedules) {
  namespace gen = a2av_forward::local;
  using LocalFn =
      int (*)(const void *, const int *, const int *, MPI_Datatype, void *,
              const int *, const int *, MPI_Datatype, rt::LocalComm &);
  auto check = [](const char *name, int p, LocalFn fn,
                  const std::vector<const char *> &order = patterns) {
    checkAll(
        name, p,
        [&](const RankBuffers &in, RankBuffers &out, rt::LocalComm &comm) {
          return fn(in.send.data(), in.sendcounts.data(), in.sdispls.data(),
                    MPI_INT64_T, out.recv.data(), in.recvcounts.data(),
                    in.rdispls.data(), MPI_INT64_T, comm);
        },
        order);
  };
  for (int p : rankCounts)
    check("ring_alltoallv", p, gen::ring_alltoallv);
  for (int p : {4, 6, 9, 12, 24, 35, 64})
    check("mesh_alltoallv", p, gen::mesh_alltoallv);
  for (int p : {2, 8, 64})
    check("hypercube_alltoallv", p, gen::hypercube_alltoallv);
  for (int p : {4, 7, 9, 12, 16, 36, 40, 64})
    check("two_stage_mesh_alltoallv", p, gen::two_stage_mesh_alltoallv);
  // Blocks in pieces: dealt over every rank (A2), over rows then columns
  // (A4).
  for (int p : rankCounts)
    check("spread_alltoallv", p, gen::spread_alltoallv);
  for (int p : {4, 7, 9, 12, 16, 36, 40, 64})
    check("four_stage_alltoallv", p, gen::four_stage_alltoallv);
  for (int p : {5, 24})
    check("spread_alltoallv", p, gen::spread_alltoallv, sparseFirst);
  for (int p : {9, 12, 36})
    check("four_stage_alltoallv", p, gen::four_stage_alltoallv, sparseFirst);
  check("ring_alltoallv", 7, gen::ring_alltoallv, sparseFirst);
}

// Each rank keeps its own notes of what its messages carry, and a later
// call leaves empty pieces out. Ranks that have forgotten their notes walk
// again among peers that do not; their walks then see messages without the
// empty pieces, so they must neither trust nor keep what they noted, and
// must say so to the ranks they send to (on the ring, rank 2 hears only
// from rank 1), call after call, while every result stays right.
TEST(A2avLocal, ForgetfulRanksWalkAgainAmongPeersThatDoNot) {
  namespace gen = a2av_forward::local;
  using LocalFn =
      int (*)(const void *, const int *, const int *, MPI_Datatype, void *,
              const int *, const int *, MPI_Datatype, rt::LocalComm &);
  const std::vector<const char *> calls = {"spike", "zero",   "huge",
                                           "spike", "random", "zero"};
  auto check = [&](const char *name, int p, LocalFn fn) {
    std::vector<std::vector<int>> matrices;
    for (const char *pattern : calls)
      matrices.push_back(countMatrix(pattern, p, 50, 5000));
    std::vector<std::vector<std::vector<int64_t>>> got(
        calls.size(), std::vector<std::vector<int64_t>>(size_t(p)));
    std::vector<std::vector<int>> codes(calls.size(),
                                        std::vector<int>(size_t(p), -1));
    ASSERT_EQ(rt::local::run(p,
                             [&](rt::LocalComm &comm) {
                               const int me = comm.rank();
                               for (size_t c = 0; c < calls.size(); ++c) {
                                 // Ranks 1 and 2 forget after the first
                                 // call and again after the fourth.
                                 if ((me == 1 || me == 2) && (c == 1 || c == 4))
                                   rt::AlltoallvSteps::forgetNoted();
                                 RankBuffers b = buffersFor(matrices[c], p, me);
                                 codes[c][me] =
                                     fn(b.send.data(), b.sendcounts.data(),
                                        b.sdispls.data(), MPI_INT64_T,
                                        b.recv.data(), b.recvcounts.data(),
                                        b.rdispls.data(), MPI_INT64_T, comm);
                                 got[c][me] = std::move(b.recv);
                               }
                             }),
              MPI_SUCCESS);
    for (size_t c = 0; c < calls.size(); ++c)
      for (int me = 0; me < p; ++me) {
        SCOPED_TRACE(std::string(name) + " on " + std::to_string(p) +
                     " ranks, call " + std::to_string(c) + " (" + calls[c] +
                     "), rank " + std::to_string(me));
        EXPECT_EQ(codes[c][me], MPI_SUCCESS);
        EXPECT_EQ(got[c][me], expectedRecv(matrices[c], p, me));
      }
  };
  check("spread_alltoallv", 5, gen::spread_alltoallv);
  check("four_stage_alltoallv", 9, gen::four_stage_alltoallv);
  check("ring_alltoallv", 6, gen::ring_alltoallv);
}

// Outside its proved range the library schedule refuses, on every rank.
TEST(A2avLocal, LibraryScheduleRefusesUnprovedSize) {
  std::vector<int> rc(65, -1);
  ASSERT_EQ(
      rt::local::run(65,
                     [&](rt::LocalComm &comm) {
                       RankBuffers b = buffersFor(
                           countMatrix("random", 65, 5, 0), 65, comm.rank());
                       rc[comm.rank()] = a2av_library::local::alltoallv_direct(
                           b.send.data(), b.sendcounts.data(), b.sdispls.data(),
                           MPI_INT64_T, b.recv.data(), b.recvcounts.data(),
                           b.rdispls.data(), MPI_INT64_T, comm);
                     }),
      MPI_SUCCESS);
  for (int code : rc)
    EXPECT_EQ(code, MPI_ERR_SIZE);
}

// The emitted function refuses a communicator of another size, as the MPI
// one does, instead of running a schedule proved for a different P.
TEST(A2avLocal, EmittedRefusesOtherSize) {
  std::vector<int> rc(3, -1);
  ASSERT_EQ(rt::local::run(3,
                           [&](rt::LocalComm &comm) {
                             RankBuffers b =
                                 buffersFor(countMatrix("random", 3, 5, 0), 3,
                                            comm.rank());
                             rc[comm.rank()] = a2av_local::local::a4_2(
                                 b.send.data(), b.sendcounts.data(),
                                 b.sdispls.data(), MPI_INT64_T, b.recv.data(),
                                 b.recvcounts.data(), b.rdispls.data(),
                                 MPI_INT64_T, comm);
                           }),
            MPI_SUCCESS);
  for (int code : rc)
    EXPECT_EQ(code, MPI_ERR_COMM);
}

// MPI_IN_PLACE is the send buffer's alone (MPI 4.0 §6.8): as a receive
// buffer it is refused before anything is written through it, by the
// emitted schedule and by a plan alike.
TEST(A2avLocal, InPlaceReceiveBufferRefused) {
  llvm::Expected<alltoallv::Pattern> pattern =
      alltoallv::buildPattern(alltoallv::Algorithm::FourStage, 4);
  ASSERT_TRUE(static_cast<bool>(pattern))
      << llvm::toString(pattern.takeError());
  OwnedPlan plan = toPlan(*pattern);
  std::vector<int> rc(8, -1);
  ASSERT_EQ(rt::local::run(
                4,
                [&](rt::LocalComm &comm) {
                  RankBuffers b = buffersFor(countMatrix("random", 4, 5, 0), 4,
                                             comm.rank());
                  rc[comm.rank()] = a2av_library::local::alltoallv_direct(
                      b.send.data(), b.sendcounts.data(), b.sdispls.data(),
                      MPI_INT64_T, MPI_IN_PLACE, b.recvcounts.data(),
                      b.rdispls.data(), MPI_INT64_T, comm);
                  rc[4 + comm.rank()] = rt::alltoallv(
                      plan.plan, b.send.data(), b.sendcounts.data(),
                      b.sdispls.data(), MPI_INT64_T, MPI_IN_PLACE,
                      b.recvcounts.data(), b.rdispls.data(), MPI_INT64_T, comm);
                }),
            MPI_SUCCESS);
  for (int code : rc)
    EXPECT_EQ(code, MPI_ERR_BUFFER);
}

} // namespace
