// Causality and correctness by induction over loop invariants
// (prove/Induction.h): proofs for whole families, and the obligation that
// fails, with the values that show it, when an invariant or a schedule is
// wrong.

#include "prove/Induction.h"
#include "SourceTextTest.h"
#include "library/Compose.h"
#include "sema/Sema.h"
#include "verify/Verifier.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

using namespace collc;
using verify::Property;
using verify::PropertyResult;
using verify::Status;

namespace {

class InductionTest : public test::SourceTextTest {
protected:
  /// Causality and correctness of the first schedule of `text`, for
  /// parameter p in lo .. hi.
  std::vector<PropertyResult> induce(const std::string &text, int64_t lo,
                                     int64_t hi) {
    program = load(text);
    return induceSchedule(/*last=*/false, lo, hi);
  }

  /// The same for the last schedule of `text`, a composition of the others.
  std::vector<PropertyResult> induceComposite(const std::string &text,
                                              int64_t lo, int64_t hi) {
    program = load(text);
    EXPECT_TRUE(library::composeAll(
        program, [](llvm::StringRef) { return nullptr; }, diags))
        << errors;
    return induceSchedule(/*last=*/true, lo, hi);
  }

  /// Causality and correctness of the loaded program's first or last
  /// schedule, for p in lo .. hi.
  std::vector<PropertyResult> induceSchedule(bool last, int64_t lo,
                                             int64_t hi) {
    EXPECT_FALSE(program.schedules.empty());
    if (program.schedules.empty())
      return {};
    prove::InductionOptions options;
    options.ranges.push_back({"p", lo, hi});
    return prove::proveByInduction(
        last ? program.schedules.back() : program.schedules.front(), options);
  }

  Program program;
};

const char *ringAllgather = R"(
schedule ring_allgather : allgather on ring(p) where p in 2 .. 4096 {
  for k in 0 .. p - 2 invariant (r - origin + p) % p <= k {
    step { r -> (r + 1) % p : origin == (r - k + p) % p }
  }
}
)";

TEST_F(InductionTest, Alg4_4_RingAllgatherHoldsForEveryRingUpTo4096) {
  auto results = induce(ringAllgather, 2, 4096);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].property, Property::Causality);
  EXPECT_EQ(results[1].property, Property::Correctness);
  for (const PropertyResult &r : results) {
    EXPECT_EQ(r.status, Status::Proved) << r.detail;
    EXPECT_EQ(r.method, "z3 (induction)");
  }
}

TEST_F(InductionTest, VerifyTakesTheInductionAsTheVerdict) {
  program = load(ringAllgather);
  ASSERT_FALSE(program.schedules.empty());
  verify::VerifyOptions options;
  llvm::Expected<verify::ScheduleReport> report =
      verify::verifySchedule(program.schedules.front(), options);
  ASSERT_TRUE(static_cast<bool>(report)) << llvm::toString(report.takeError());
  EXPECT_EQ(report->verdict(), Status::Proved);
  for (const PropertyResult &r : report->properties)
    if (r.property == Property::Correctness ||
        r.property == Property::Causality) {
      EXPECT_EQ(r.method, "z3 (induction)");
      // Simulation only cross-checks the smaller sizes.
      EXPECT_NE(r.detail.find("simulation agrees on"), std::string::npos)
          << r.detail;
    }
}

TEST_F(InductionTest, ASimulationThatIsTheVerdictStopsAtItsWorkBudget) {
  // No invariant: simulation decides, and a family of 4,095 members is
  // more than the budget. It stops at a bound of work, not of time, and
  // says so; a member stops within it, not only between members.
  program = load(R"(
schedule s : allgather on ring(p) where p in 2 .. 4096 {
  for k in 0 .. p - 2 {
    step { r -> (r + 1) % p : origin == (r - k + p) % p }
  }
}
)");
  ASSERT_FALSE(program.schedules.empty());
  verify::VerifyOptions options;
  options.simulationBudgetWork = 100000;
  llvm::Expected<verify::ScheduleReport> report =
      verify::verifySchedule(program.schedules.front(), options);
  ASSERT_TRUE(static_cast<bool>(report)) << llvm::toString(report.takeError());
  EXPECT_EQ(report->verdict(), Status::Unknown);
  for (const PropertyResult &r : report->properties)
    if (r.property == Property::Correctness) {
      EXPECT_EQ(r.status, Status::Unknown);
      EXPECT_NE(r.detail.find("the simulation budget of 100000 units of "
                              "the simulator's work ran out"),
                std::string::npos)
          << r.detail;
    }
}

TEST_F(InductionTest, AnInvariantThatClaimsTooMuchIsNotPreserved) {
  auto results = induce(R"(
schedule s : allgather on ring(p) where p in 2 .. 64 {
  for k in 0 .. p - 2 invariant (r - origin + p) % p <= k + 1 {
    step { r -> (r + 1) % p : origin == (r - k + p) % p }
  }
}
)",
                        2, 64);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, Status::Unknown);
  EXPECT_NE(results[0].detail.find("claims a chunk the rank does not hold on "
                                   "entry"),
            std::string::npos)
      << results[0].detail;
  // The values that show it: a size, the loop's first value, a rank and
  // the chunk it does not hold.
  EXPECT_NE(results[0].detail.find("k = 0"), std::string::npos)
      << results[0].detail;
  EXPECT_NE(results[0].detail.find("origin"), std::string::npos);
}

TEST_F(InductionTest, OneStepShortLacksAChunkAtTheEnd) {
  auto results = induce(R"(
schedule s : allgather on ring(p) where p in 2 .. 64 {
  for k in 0 .. p - 3 invariant (r - origin + p) % p <= k {
    step { r -> (r + 1) % p : origin == (r - k + p) % p }
  }
}
)",
                        2, 64);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, Status::Proved) << results[0].detail;
  EXPECT_EQ(results[1].status, Status::Unknown);
  EXPECT_NE(results[1].detail.find("a rank may lack a chunk of its result"),
            std::string::npos)
      << results[1].detail;
}

TEST_F(InductionTest, SendingAChunkNotYetReceivedIsACausalityFailure) {
  // Each rank forwards the block two behind it, which it gets a step late.
  auto results = induce(R"(
schedule s : allgather on ring(p) where p in 3 .. 64 {
  for k in 0 .. p - 2 invariant (r - origin + p) % p <= k {
    step { r -> (r + 1) % p : origin == (r - k - 1 + 2 * p) % p }
  }
}
)",
                        3, 64);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, Status::Unknown);
  EXPECT_NE(results[0].detail.find("may send a chunk it does not hold"),
            std::string::npos)
      << results[0].detail;
}

const char *ringReduceScatter = R"(
schedule s : reduce_scatter(op: sum) on ring(p) where p in 2 .. 64 {
  for k in 1 .. p - 1
      invariant contributor == r or (r - dest - 1 + p) % p + 1 <= k
        and (contributor - dest - 1 + p) % p <= (r - dest - 1 + p) % p {
    step { r -> (r + 1) % p : dest == (r - k + p) % p }
  }
}
)";

TEST_F(InductionTest, Alg4_5_RingReduceScatterCountsEveryContributionOnce) {
  auto results = induce(ringReduceScatter, 2, 64);
  ASSERT_EQ(results.size(), 2u);
  for (const PropertyResult &r : results)
    EXPECT_EQ(r.status, Status::Proved) << r.detail;
}

TEST_F(InductionTest, AReductionInvariantMustBeExact) {
  // Leaves out the partial sums' contributions: true of what the ranks
  // hold, but not all of it.
  auto results = induce(R"(
schedule s : reduce_scatter(op: sum) on ring(p) where p in 2 .. 64 {
  for k in 1 .. p - 1 invariant contributor == r {
    step { r -> (r + 1) % p : dest == (r - k + p) % p }
  }
}
)",
                        2, 64);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].status, Status::Unknown);
  EXPECT_NE(results[1].detail.find("leaves out a contribution"),
            std::string::npos)
      << results[1].detail;
}

TEST_F(InductionTest, FoldingTheSameContributionTwiceIsCaught) {
  // Two rounds of the ring reduction: the second adds every contribution
  // again.
  auto results = induce(R"(
schedule s : allreduce(op: sum) on ring(p) where p in 2 .. 32 {
  for k in 0 .. 1 invariant k == 0 ? contributor == r : 1 {
    step { r -> (r + 1) % p }
  }
}
)",
                        2, 32);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].status, Status::Unknown);
  EXPECT_NE(results[1].detail.find("a fold may add a contribution the value "
                                   "has already"),
            std::string::npos)
      << results[1].detail;
}

TEST_F(InductionTest, ALoopThatWritesWithoutAnInvariantIsNotInducted) {
  auto results = induce(R"(
schedule s : allgather on ring(p) where p in 2 .. 64 {
  for j in 0 .. 0 invariant origin == r {
    step { r -> (r + 1) % p : origin == r }
  }
  for k in 1 .. p - 2 {
    step { r -> (r + 1) % p : origin == (r - k + p) % p }
  }
}
)",
                        2, 64);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, Status::Unknown);
  EXPECT_NE(results[0].detail.find("the loop over 'k' writes buffer"),
            std::string::npos)
      << results[0].detail;
}

// Eq 4.14: all-reduce as the ring's reduce-scatter (Alg 4.5) and then its
// all-gather (Alg 4.4), each with its own invariant. `LAST` is the last step
// of the reduce-scatter.
const char *ringAllreduceSplit = R"(
schedule rs : reduce_scatter(op: sum) on ring(p) where p in 2 .. 4096 {
  for k in 1 .. LAST
      invariant contributor == r or (r - dest - 1 + p) % p + 1 <= k
        and (contributor - dest - 1 + p) % p <= (r - dest - 1 + p) % p {
    step { r -> (r + 1) % p : dest == (r - k + p) % p }
  }
}
schedule ag : allgather on ring(p) where p in 2 .. 4096 {
  for k in 0 .. p - 2 invariant (r - origin + p) % p <= k {
    step { r -> (r + 1) % p : origin == (r - k + p) % p }
  }
}
schedule ar : allreduce(op: sum) on ring(p) where p in 2 .. 4096
  = rs then ag;
)";

std::string withLastStep(const std::string &last) {
  std::string text = ringAllreduceSplit;
  text.replace(text.find("LAST"), 4, last);
  return text;
}

TEST_F(InductionTest, Eq4_14_ACompositionIsProvedByItsPartsInvariants) {
  // The all-gather's invariant says which pieces are final; the others
  // still hold the reduce-scatter's partial sums, and no rank ends with
  // one of those.
  auto results = induceComposite(withLastStep("p - 1"), 2, 64);
  ASSERT_EQ(results.size(), 2u);
  for (const PropertyResult &r : results) {
    EXPECT_EQ(r.status, Status::Proved) << r.detail;
    EXPECT_EQ(r.method, "z3 (induction)");
  }
}

TEST_F(InductionTest, AnAllgatherOfPiecesNotYetReducedIsCaught) {
  // The reduce-scatter stops a step short, so the all-gather starts from
  // partial sums: each part's invariant holds, the composition does not.
  auto results = induceComposite(withLastStep("p - 2"), 2, 64);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, Status::Unknown);
  EXPECT_NE(results[0].detail.find("the invariant of the loop over 'k' "
                                   "claims a chunk the rank does not hold on "
                                   "entry"),
            std::string::npos)
      << results[0].detail;
}

// Figure 4.22's shift on a torus: the library's schedule is proved for
// every size and amount; without the compensating shift for one of the
// blocks that wrapped round their row, it is not. The destination's
// coordinates, which the prover states beside dest for a shift on a mesh or
// torus, must not make a wrong schedule look right.
TEST_F(InductionTest, Fig4_22_TorusShiftNeedsEveryCompensatingStep) {
  auto file = llvm::MemoryBuffer::getFile(COLLC_LIBRARY_DIR "/shift.coll");
  ASSERT_TRUE(static_cast<bool>(file));
  const std::string text = (*file)->getBuffer().str();
  const std::string compensate = "when r % b < q % b\n";
  ASSERT_NE(text.find(compensate), std::string::npos);
  std::string wrong = text;
  wrong.replace(wrong.find(compensate), compensate.size(),
                "when r % b < q % b - 1\n");
  prove::InductionOptions options;
  options.ranges = {{"a", 3, 8}, {"b", 3, 8}, {"q", 0, 63}};
  for (const std::string *spec :
       std::array<const std::string *, 2>{&text, &wrong}) {
    program = load(*spec);
    auto torus = llvm::find_if(program.schedules, [](const auto &s) {
      return s.name == "torus_shift";
    });
    ASSERT_NE(torus, program.schedules.end());
    std::vector<PropertyResult> results =
        prove::proveByInduction(*torus, options);
    ASSERT_EQ(results.size(), 2u);
    if (spec == &text) {
      for (const PropertyResult &r : results)
        EXPECT_EQ(r.status, Status::Proved) << r.detail;
      continue;
    }
    EXPECT_EQ(results[0].status, Status::Unknown) << results[0].detail;
    EXPECT_NE(results[0].detail.find("claims a chunk the rank does not hold "
                                     "on entry"),
              std::string::npos)
        << results[0].detail;
  }
}

} // namespace
