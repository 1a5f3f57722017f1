// The irregular all-to-all patterns of 001 §3: Figure 10's priority
// schedule, the array layout for every P, Lemma 1's message counts, and the
// proofs (simulator for every P in 2..300, Z3 for a few) that every stage is
// contention-free and matched.

#include "alltoallv/Emit.h"
#include "alltoallv/Patterns.h"
#include "simulate/Simulator.h"
#include "verify/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace collc;
using namespace collc::alltoallv;

namespace {

int64_t ceilSqrt(int64_t p) {
  int64_t s = 0;
  while (s * s < p)
    ++s;
  return s;
}

int64_t floorSqrt(int64_t p) {
  int64_t s = ceilSqrt(p);
  return s * s == p ? s : s - 1;
}

Topology full(int64_t n) {
  return llvm::cantFail(Topology::make(TopologyKind::Full, {n}));
}

Pattern pattern(Algorithm a, int64_t p) {
  llvm::Expected<Pattern> pat = buildPattern(a, p);
  EXPECT_TRUE(static_cast<bool>(pat)) << llvm::toString(pat.takeError());
  return *pat;
}

// Figure 10: the third row (row 2) of the array for P = 61 (C = R = 8,
// r = 5), senders 16..23 and the incomplete-row node 58; -1 is a stall (X),
// -2 an empty cell of step 9.
TEST(Alltoallv, Fig10_P61PrioritySchedule) {
  Layout l = layoutFor(61);
  EXPECT_EQ(l.columns, 8);
  EXPECT_EQ(l.rows, 8);
  EXPECT_EQ(l.r, 5);
  EXPECT_EQ(revisedRowSenders(l, 2),
            (std::vector<int64_t>{16, 17, 18, 19, 20, 21, 22, 23, 58}));
  const int64_t X = -1, _ = -1;
  const std::vector<std::vector<int64_t>> figure10 = {
      {17, 18, 19, 20, 21, 22, 23, 16, 59},
      {18, 19, 20, 21, 22, 23, 16, 17, 60},
      {19, 20, X, 22, 23, 16, 17, 18, 21},
      {20, X, 21, 23, 16, 17, 18, 19, 22},
      {X, 21, 22, 16, 17, 18, 19, 20, 23},
      {21, 22, 23, 17, 18, 19, 20, X, 56},
      {22, 23, 16, 18, 19, 20, X, 21, 57},
      {23, 16, 17, 19, 20, X, 21, 22, 58},
      {16, 17, 18, _, _, 21, 22, 23, _},
  };
  EXPECT_EQ(revisedRowSchedule(l, 2), figure10);
}

// Figure 9 without stalls would have node contention; a row that receives
// no additional messages keeps the plain R-Schedule of Figure 6.
TEST(Alltoallv, Fig6_RowsWithoutAdditionalMessagesKeepPlainSchedule) {
  Layout l = layoutFor(61);
  std::vector<std::vector<int64_t>> row6 = revisedRowSchedule(l, 6);
  ASSERT_EQ(row6.size(), 8u);
  for (int64_t k = 1; k <= 8; ++k)
    for (int64_t c = 0; c < 8; ++c)
      EXPECT_EQ(row6[k - 1][c], 48 + (c + k) % 8);
}

// §3.2.2(A): C = ceil(sqrt P) unless P = ceil(sqrt P) floor(sqrt P) - 1,
// where C = floor(sqrt P); then there are always enough complete rows.
TEST(Alltoallv, Sec322A_LayoutForEveryP) {
  for (int64_t p = 2; p <= 4096; ++p) {
    Layout l = layoutFor(p);
    bool special = p == ceilSqrt(p) * floorSqrt(p) - 1;
    EXPECT_EQ(l.rearranged, special) << "P = " << p;
    EXPECT_EQ(l.columns, special ? floorSqrt(p) : ceilSqrt(p)) << "P = " << p;
    EXPECT_EQ(l.rows, (p + l.columns - 1) / l.columns);
    EXPECT_LE(l.rows, ceilSqrt(p)) << "P = " << p;
    EXPECT_EQ(l.r, p % l.columns);
    EXPECT_GE(l.rows - 1, l.r) << "P = " << p;
  }
  Layout five = layoutFor(5); // 5 = 3 * 2 - 1
  EXPECT_TRUE(five.rearranged);
  EXPECT_EQ(five.columns, 2);
  EXPECT_EQ(five.rows, 3);
  EXPECT_EQ(five.r, 1);
}

// Checks a stage table directly: each rank sends and receives at most one
// message per step, no message is sent twice, and returns the messages.
std::set<std::pair<int64_t, int64_t>> messagesOf(const Stage &stage,
                                                 int64_t p) {
  std::set<std::pair<int64_t, int64_t>> sent;
  for (size_t s = 0; s < stage.numSteps(); ++s) {
    std::vector<int> received(p, 0);
    for (int64_t x = 0; x < p; ++x) {
      int64_t y = stage.sendTo[s][x];
      if (y < 0)
        continue;
      EXPECT_NE(x, y);
      EXPECT_EQ(++received[y], 1)
          << "P = " << p << " stage " << stage.name << " step " << s + 1;
      EXPECT_TRUE(sent.insert({x, y}).second);
    }
  }
  return sent;
}

// What each stage must deliver: in a row (column) stage every node reaches
// every other node of its row (column), plus the additional messages of
// §3.2.2(A); Lemma 1's counts follow, self-messages included.
TEST(Alltoallv, Lemma1_MessagesPerStageForEveryP) {
  for (int64_t p = 2; p <= 300; ++p) {
    Pattern pat = pattern(Algorithm::FourStage, p);
    const Layout &l = pat.layout;
    const int64_t c = ceilSqrt(p);
    ASSERT_EQ(pat.stages.size(), 4u);
    for (const Stage &stage : pat.stages) {
      std::set<std::pair<int64_t, int64_t>> sent = messagesOf(stage, p);
      bool rowStage = stage.name == "I" || stage.name == "III";
      std::set<std::pair<int64_t, int64_t>> expected;
      for (int64_t x = 0; x < p; ++x) {
        if (rowStage) {
          for (int64_t col = 0; col < l.columns; ++col)
            if (l.rowPeer(x, col) != x)
              expected.insert({x, l.rowPeer(x, col)});
        } else {
          for (int64_t row = 0; row < l.columnSize(l.column(x)); ++row)
            if (l.rank(row, l.column(x)) != x)
              expected.insert({x, l.rank(row, l.column(x))});
        }
      }
      EXPECT_EQ(sent, expected) << "P = " << p << " stage " << stage.name;
      std::vector<int64_t> in(p, 1); // the self-message
      for (auto [x, y] : sent)
        ++in[y];
      for (int64_t y = 0; y < p; ++y) {
        bool complete = l.columnSize(l.column(y)) == l.rows;
        int64_t bound = complete ? c : (rowStage ? c + 1 : c - 1);
        EXPECT_LE(in[y], bound) << "P = " << p << " node " << y;
      }
      if (rowStage)
        EXPECT_LE(static_cast<int64_t>(stage.numSteps()), c + 1)
            << "P = " << p;
      else
        EXPECT_LE(static_cast<int64_t>(stage.numSteps()), c - 1);
    }
  }
}

// The independent checker on the Schedule IR the emitter prints: every
// stage contention-free and matched, for every P in 2..64 and for the sizes
// up to 300 that need the rearrangement or leave a single node in the
// incomplete row (Fig. 9's worst case). Lemma1_MessagesPerStageForEveryP
// checks the tables themselves for every P in 2..300.
TEST(Alltoallv, EveryStageContentionFreeBySimulation) {
  std::vector<int64_t> sizes;
  for (int64_t p = 2; p <= 300; ++p) {
    Layout l = layoutFor(p);
    if (p <= 64 || l.rearranged || l.r == 1 || p == 300)
      sizes.push_back(p);
  }
  for (int64_t p : sizes) {
    Pattern pat = pattern(Algorithm::FourStage, p);
    for (size_t s = 0; s < pat.stages.size(); ++s) {
      ir::Schedule sched = stageSchedule(pat, s, "stage");
      llvm::Expected<simulate::SimulationResult> result =
          simulate::simulate(sched, {});
      ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
      for (verify::Property prop :
           {verify::Property::Contention, verify::Property::Matching,
            verify::Property::Causality, verify::Property::Congestion})
        EXPECT_EQ(result->result(prop).status, verify::Status::Proved)
            << "P = " << p << " stage " << pat.stages[s].name << " "
            << verify::propertyName(prop);
    }
  }
}

// The whole pattern as one schedule: every element a node forwards reached
// it first, and every block ends at its destination, through the chunk
// index that names the node its elements are dealt to (A2, A4). Every P in
// 2..40 for each algorithm that applies, and A4 at the paper's P = 61 and
// at the sizes up to 130 that need the rearrangement or leave one node in
// the incomplete row (the stages alone are checked to 300 above; the routes
// have P^3 chunks).
TEST(Alltoallv, WholePatternRoutesEveryBlockBySimulation) {
  std::vector<std::pair<Algorithm, int64_t>> cases;
  for (Algorithm algorithm : {Algorithm::Direct, Algorithm::TwoStageRandom,
                              Algorithm::FourStage, Algorithm::TwoStageMesh})
    for (int64_t p = 2; p <= 40; ++p)
      cases.push_back({algorithm, p});
  for (int64_t p = 41; p <= 130; ++p) {
    Layout l = layoutFor(p);
    if (l.rearranged || l.r == 1 || p == 61)
      cases.push_back({Algorithm::FourStage, p});
  }
  for (auto [algorithm, p] : cases) {
    llvm::Expected<Pattern> pat = buildPattern(algorithm, p);
    if (!pat) { // A3 off a perfect square
      llvm::consumeError(pat.takeError());
      continue;
    }
    ir::Schedule sched = patternSchedule(*pat, "whole");
    llvm::Expected<simulate::SimulationResult> result =
        simulate::simulate(sched, {});
    ASSERT_TRUE(static_cast<bool>(result))
        << llvm::toString(result.takeError());
    ASSERT_FALSE(result->unfinished) << "P = " << p;
    for (verify::Property prop :
         {verify::Property::Causality, verify::Property::Correctness,
          verify::Property::Contention, verify::Property::Matching}) {
      const verify::PropertyResult &r = result->result(prop);
      EXPECT_EQ(r.status, verify::Status::Proved)
          << algorithmName(algorithm).str() << " P = " << p << " "
          << verify::propertyName(prop) << ": "
          << (r.counterexample ? r.counterexample->message : "");
    }
  }
}

// A table that leaves one message out is still contention-free and matched
// stage by stage; only the routes show the blocks it strands, and the code
// is not printed.
TEST(Alltoallv, RoutesCatchAMessageLeftOut) {
  llvm::Expected<PatternVerdict> v =
      verifyPattern("x", Algorithm::FourStage, full(10), 60);
  ASSERT_TRUE(static_cast<bool>(v)) << llvm::toString(v.takeError());
  ASSERT_TRUE(v->proved());
  Pattern broken = v->pattern;
  std::vector<int64_t> &step = broken.stages[2].sendTo[0]; // Stage III
  auto sender = llvm::find_if(step, [](int64_t y) { return y >= 0; });
  ASSERT_NE(sender, step.end());
  *sender = -1;

  PatternVerdict mutated = *v;
  mutated.pattern = broken;
  for (StageVerdict &stage : mutated.stages) {
    llvm::Expected<verify::ScheduleReport> r = verify::verifySchedule(
        stageSchedule(broken, &stage - mutated.stages.data(), "stage"), {});
    ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
    for (const verify::PropertyResult &p : r->properties) {
      if (p.property == verify::Property::Contention ||
          p.property == verify::Property::Matching) {
        EXPECT_EQ(p.status, verify::Status::Proved)
            << stage.stage.name << " " << verify::propertyName(p.property);
      }
    }
  }
  mutated.routes.schedule = patternSchedule(broken, "x_routes");
  llvm::Expected<verify::ScheduleReport> routes =
      verify::verifySchedule(mutated.routes.schedule, {});
  ASSERT_TRUE(static_cast<bool>(routes)) << llvm::toString(routes.takeError());
  mutated.routes.report = std::move(*routes);
  EXPECT_EQ(mutated.verdict(), verify::Status::Counterexample);
  bool stranded = false;
  for (const verify::PropertyResult &r : mutated.routes.report.properties)
    if (r.property == verify::Property::Correctness)
      stranded = r.status == verify::Status::Counterexample;
  EXPECT_TRUE(stranded);
  llvm::Expected<EmittedCollective> refused =
      emitCollective("x", mutated, "f.coll:3");
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(refused.takeError())
                .find("the routes of `x` are not proved"),
            std::string::npos);
}

// The prover of record (Z3) on the paper's P = 61 and the rearranged P = 5.
TEST(Alltoallv, EveryStageProvedByZ3) {
  for (int64_t p : {5, 61}) {
    Pattern pat = pattern(Algorithm::FourStage, p);
    for (size_t s = 0; s < pat.stages.size(); ++s) {
      ir::Schedule sched = stageSchedule(pat, s, "stage");
      verify::VerifyOptions options;
      options.only = {verify::Property::Contention,
                      verify::Property::Matching,
                      verify::Property::Congestion};
      llvm::Expected<verify::ScheduleReport> report =
          verify::verifySchedule(sched, options);
      ASSERT_TRUE(static_cast<bool>(report)) << llvm::toString(report.takeError());
      EXPECT_EQ(report->verdict(), verify::Status::Proved)
          << "P = " << p << " stage " << pat.stages[s].name;
    }
  }
}

TEST(Alltoallv, Sec313_TwoStageMeshNeedsPerfectSquare) {
  llvm::Expected<Pattern> bad = buildPattern(Algorithm::TwoStageMesh, 61);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "two_stage_mesh (001 §3.1.3, A3) needs a perfect square number "
            "of ranks, not 61; four_stage (A4) runs on any number");
  Pattern a3 = pattern(Algorithm::TwoStageMesh, 64);
  ASSERT_EQ(a3.stages.size(), 2u);
  EXPECT_EQ(a3.stages[0].numSteps(), 7u); // 2 sqrt(P) start-ups, self included
  EXPECT_EQ(a3.stages[1].numSteps(), 7u);
  Pattern a1 = pattern(Algorithm::Direct, 7);
  EXPECT_EQ(a1.stages[0].numSteps(), 6u);
  EXPECT_EQ(messagesOf(a1.stages[0], 7).size(), 42u);
}

} // namespace

namespace {

/// What `collc compile` does for one collective: check its pattern
/// (pipeline::check), then print it.
llvm::Expected<EmittedCollective> checkAndEmit(llvm::StringRef name,
                                               Algorithm algorithm,
                                               const Topology &topology,
                                               llvm::StringRef where) {
  llvm::Expected<PatternVerdict> verdict =
      verifyPattern(name, algorithm, topology, 60);
  if (!verdict)
    return verdict.takeError();
  return emitCollective(name, *verdict, where);
}

// What `collc compile` prints for `collective x = alltoallv on full(5) using
// four_stage;`: the proved tables and MPI_Alltoallv's signature.
TEST(Alltoallv, EmitsProvedTablesWithAlltoallvSignature) {
  llvm::Expected<EmittedCollective> e =
      checkAndEmit("x", Algorithm::FourStage, full(5), "f.coll:3");
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  EXPECT_NE(e->declaration.find(
                "int x(const void *sendbuf, const int *sendcounts, const int "
                "*sdispls, MPI_Datatype sendtype, void *recvbuf, const int "
                "*recvcounts, const int *rdispls, MPI_Datatype recvtype, "
                "MPI_Comm comm, collc::rt::AlltoallvMode mode = "
                "collc::rt::AlltoallvMode::NonBlockingDual);"),
            std::string::npos)
      << e->declaration;
  EXPECT_NE(e->declaration.find("C = 2 columns, R = 3 rows, r = 1 "
                                "(rearranged, §3.2.2(A))"),
            std::string::npos);
  EXPECT_NE(e->declaration.find("Stage I (R-Distribute + R-Comm): 2 steps, "
                                "proved contention-free"),
            std::string::npos)
      << e->declaration;
  EXPECT_NE(e->definition.find("static const int x_stage0[]"),
            std::string::npos);
  EXPECT_NE(e->definition.find("AlltoallvStageKind::ColumnCollect, 2, x_stage3"),
            std::string::npos)
      << e->definition;
  // Its twin on the local backend runs the same plan.
  EXPECT_NE(e->localDeclaration.find(
                "int x(const void *sendbuf, const int *sendcounts, const int "
                "*sdispls, MPI_Datatype sendtype, void *recvbuf, const int "
                "*recvcounts, const int *rdispls, MPI_Datatype recvtype, "
                "collc::rt::LocalComm &comm, collc::rt::AlltoallvMode mode = "
                "collc::rt::AlltoallvMode::NonBlockingDual);"),
            std::string::npos)
      << e->localDeclaration;
  EXPECT_NE(e->localDefinition.find("return collc::rt::alltoallv(x_plan(), "),
            std::string::npos)
      << e->localDefinition;
  EXPECT_NE(e->definition.find("return collc::rt::alltoallv(x_plan(), "),
            std::string::npos);

  llvm::Expected<EmittedCollective> a3 =
      checkAndEmit("y", Algorithm::TwoStageMesh, full(61), "f.coll:4");
  ASSERT_FALSE(static_cast<bool>(a3));
  EXPECT_NE(llvm::toString(a3.takeError()).find("perfect square"),
            std::string::npos);
}

} // namespace

namespace {

// The flat-model prices collc bench predicts with: A4 by Theorem 2,
// (4 ceil(sqrt P) + 2) T_d + 4 (ceil(sqrt P) + 1) ceil(sqrt P) L_max / P t,
// and A1-A3 by Table 3 (start-ups; total traffic L_max, 2 L_max, 2 L_max).
TEST(Alltoallv, Thm2_Table3_ModelCost) {
  ModelCost a4 = modelCost(Algorithm::FourStage, 61); // ceil(sqrt 61) = 8
  EXPECT_EQ(a4.startups, 34);
  EXPECT_EQ(a4.traffic, 288);
  EXPECT_STREQ(a4.source, "001 Theorem 2 (A4)");
  ModelCost a4sq = modelCost(Algorithm::FourStage, 64);
  EXPECT_EQ(a4sq.startups, 34);
  EXPECT_EQ(a4sq.traffic, 288);
  EXPECT_EQ(modelCost(Algorithm::FourStage, 65).startups, 38);
  ModelCost a1 = modelCost(Algorithm::Direct, 61);
  EXPECT_EQ(a1.startups, 61);
  EXPECT_EQ(a1.traffic, 61); // L_max = P (L_max / P)
  EXPECT_EQ(modelCost(Algorithm::TwoStageRandom, 61).startups, 122);
  EXPECT_EQ(modelCost(Algorithm::TwoStageRandom, 61).traffic, 122);
  EXPECT_EQ(modelCost(Algorithm::TwoStageMesh, 64).startups, 16);
  EXPECT_EQ(modelCost(Algorithm::TwoStageMesh, 64).traffic, 128);
}

} // namespace

namespace {

// On a topology with fewer links than full(P) the stages share some
// (ring(8): the column stages send 0->3, 1->4 and 2->5 over channel 2->3
// in one step). Contention-free and matched stay proved; the load is
// measured, priced, and reported, and the code is still written.
TEST(Alltoallv, StagesOnDeclaredTopologyReportTheirLoad) {
  Topology ring8 = llvm::cantFail(Topology::make(TopologyKind::Ring, {8}));
  llvm::Expected<PatternVerdict> v =
      verifyPattern("x", Algorithm::FourStage, ring8, 60);
  ASSERT_TRUE(static_cast<bool>(v)) << llvm::toString(v.takeError());
  EXPECT_TRUE(v->proved());
  std::vector<int64_t> loads;
  for (const StageVerdict &s : v->stages)
    loads.push_back(s.maxLoad);
  EXPECT_EQ(loads, (std::vector<int64_t>{1, 3, 1, 3}));
  EXPECT_EQ(v->stages[1].congestionText(),
            "channel 2->3 carries 3 messages at step 1");
  // Theorem 2's 14 t_s + 48 m t_w on full(8); each stage's quarter of the
  // traffic times its load on the ring: 12 (1 + 3 + 1 + 3) = 96.
  EXPECT_EQ(v->cost().startups, 14);
  EXPECT_EQ(v->cost().traffic, 96);
  llvm::Expected<std::vector<int64_t>> simulated =
      stageLoads(v->pattern, ring8);
  ASSERT_TRUE(static_cast<bool>(simulated));
  EXPECT_EQ(*simulated, loads);

  llvm::Expected<EmittedCollective> e = emitCollective("x", *v, "f.coll:3");
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  EXPECT_NE(e->note.find("congests on ring(8): stage II: channel 2->3 "
                         "carries 3 messages at step 1"),
            std::string::npos)
      << e->note;
  EXPECT_NE(e->declaration.find("Stage II (C-Distribute + C-Comm): 2 steps, "
                                "proved contention-free and matched (z3); "
                                "congests on ring(8)"),
            std::string::npos)
      << e->declaration;

  llvm::Expected<EmittedCollective> flat =
      checkAndEmit("y", Algorithm::FourStage, full(8), "f.coll:4");
  ASSERT_TRUE(static_cast<bool>(flat)) << llvm::toString(flat.takeError());
  EXPECT_EQ(flat->note, "");
  EXPECT_NE(flat->declaration.find("congestion-free on full(8)"),
            std::string::npos);

  // A stage whose matching is not proved: the pattern's verdict says so,
  // and no code is printed for it. The congestion measured stays apart.
  EXPECT_EQ(v->verdict(), verify::Status::Proved);
  PatternVerdict unproved = *v;
  for (verify::PropertyResult &r : unproved.stages[1].report.properties)
    if (r.property == verify::Property::Matching)
      r.status = verify::Status::Unknown;
  EXPECT_EQ(unproved.verdict(), verify::Status::Unknown);
  llvm::Expected<EmittedCollective> refused =
      emitCollective("x", unproved, "f.coll:3");
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(
      llvm::toString(refused.takeError()).find("stage II of `x` is not proved"),
      std::string::npos);

  // Routes never checked are not proved: the verdict is UNKNOWN and no
  // code is printed.
  PatternVerdict unrouted = *v;
  unrouted.routes.report.properties.clear();
  EXPECT_EQ(unrouted.verdict(), verify::Status::Unknown);
  llvm::Expected<EmittedCollective> unchecked =
      emitCollective("x", unrouted, "f.coll:3");
  ASSERT_FALSE(static_cast<bool>(unchecked));
  EXPECT_NE(llvm::toString(unchecked.takeError())
                .find("the routes of `x` are not proved"),
            std::string::npos);
}

} // namespace
