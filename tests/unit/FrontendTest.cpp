// The front end as tables: input -> exact diagnostics, and input -> the
// Schedule IR it lowers to.

#include "ir/Instantiate.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace collc;

namespace {

struct Checked {
  std::optional<Program> program;
  std::string diagnostics;
};

Checked check(llvm::StringRef source) {
  llvm::SourceMgr sourceMgr;
  std::string out;
  llvm::raw_string_ostream os(out);
  DiagnosticEngine diags(sourceMgr, os);
  auto program = loadSource(
      llvm::MemoryBuffer::getMemBufferCopy(source, "t.coll"), diags);
  Checked result;
  if (program)
    result.program = std::move(*program);
  else
    llvm::consumeError(program.takeError());
  os.flush();
  result.diagnostics = out;
  return result;
}

struct DiagnosticCase {
  const char *source;
  const char *expected; // the whole diagnostic output
};

class Diagnostics : public ::testing::TestWithParam<DiagnosticCase> {};

TEST_P(Diagnostics, ExactText) {
  Checked c = check(GetParam().source);
  EXPECT_FALSE(c.program.has_value());
  EXPECT_EQ(c.diagnostics, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Frontend, Diagnostics,
    ::testing::Values(
        // Syntax.
        DiagnosticCase{"topology a = ring(8)\n",
                       "t.coll:1:21: error: expected ';', found end of file\n"
                       "topology a = ring(8)\n"
                       "                    ^\n"},
        // A ';' left off at a line's end is missing there, not at the next.
        DiagnosticCase{"topology a = ring(8)  # eight\n\ntopology b = ring(4);",
                       "t.coll:1:21: error: expected ';', found 't' on line 3\n"
                       "topology a = ring(8)  # eight\n"
                       "                    ^\n"},
        DiagnosticCase{"topology = ring(8);",
                       "t.coll:1:10: error: expected a name, found '='\n"
                       "topology = ring(8);\n"
                       "         ^\n"},
        DiagnosticCase{"schedule s : broadcast on ring(4) { step { 0 => 1 } }",
                       "t.coll:1:46: error: expected '->', found '='\n"
                       "schedule s : broadcast on ring(4) { step { 0 => 1 } }\n"
                       "                                             ^\n"},
        // Names.
        DiagnosticCase{"topology a = ring(4);\ntopology a = ring(4);",
                       "t.coll:2:10: error: 'a' is already declared\n"
                       "topology a = ring(4);\n"
                       "         ^\n"
                       "t.coll:1:10: note: 'a' declared here\n"
                       "topology a = ring(4);\n"
                       "         ^\n"},
        DiagnosticCase{"model m = { ts: 1us, tw: 1ns/byte };\n"
                       "collective c = allgather on m;",
                       "t.coll:2:29: error: 'm' is not a topology\n"
                       "collective c = allgather on m;\n"
                       "                            ^\n"
                       "t.coll:1:7: note: 'm' declared here\n"
                       "model m = { ts: 1us, tw: 1ns/byte };\n"
                       "      ^\n"},
        // Sizes, ranks, roots.
        DiagnosticCase{
            "topology a = ring(1);",
            "t.coll:1:14: error: ring needs at least 2 ranks, got 1\n"
            "topology a = ring(1);\n"
            "             ^~~~~~~\n"},
        DiagnosticCase{"collective c = scatter(root: 4) on ring(4);",
                       "t.coll:1:30: error: root 4 is outside the topology "
                       "(ranks 0..3)\n"
                       "collective c = scatter(root: 4) on ring(4);\n"
                       "                             ^\n"},
        DiagnosticCase{"schedule s : broadcast(root: 0) on ring(4) {\n"
                       "  step { 1 -> 1 }\n}",
                       "t.coll:2:10: error: rank 1 sends to itself\n"
                       "  step { 1 -> 1 }\n"
                       "         ^~~~~~\n"},
        // Operators, types, numbers.
        DiagnosticCase{"collective c = reduce(op: mean) on ring(4);",
                       "t.coll:1:27: error: unknown operator 'mean'; expected "
                       "sum, prod, min, max, land, lor, lxor, band, bor, bxor, "
                       "maxloc, minloc or user\n"
                       "collective c = reduce(op: mean) on ring(4);\n"
                       "                          ^~~~\n"},
        DiagnosticCase{"topology a = full(9223372036854775808);",
                       "t.coll:1:19: error: number 9223372036854775808 is too "
                       "large (the largest is 9223372036854775807)\n"
                       "topology a = full(9223372036854775808);\n"
                       "                  ^~~~~~~~~~~~~~~~~~~\n"},
        // Schedules.
        DiagnosticCase{"schedule s : allgather on ring(p) {\n"
                       "  step { for j in 0 .. p { r -> r + 1 } }\n}",
                       "t.coll:2:10: error: a loop inside a step is unrolled "
                       "for every size the topology allows, so it may run at "
                       "most 64 times; its bounds reach 0 .. 1048576\n"
                       "  step { for j in 0 .. p { r -> r + 1 } }\n"
                       "         ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"},
        DiagnosticCase{
            "schedule s : allgather on ring(4) {\n"
            "  for i in 0 .. 1 { step { for j in 0 .. i { r -> r + 1 } } }\n}",
            "t.coll:2:28: error: the bounds of a loop inside a "
            "step may use constants and one of the topology's "
            "parameters, not 'i'\n"
            "  for i in 0 .. 1 { step { for j in 0 .. i { r -> r + 1 } } }\n"
            "                           ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"},
        DiagnosticCase{"schedule s : allgather on ring(4) {\n"
                       "  step { r -> r + 1 reduce }\n}",
                       "t.coll:2:21: error: 'reduce' needs a reducing "
                       "collective; allgather combines nothing\n"
                       "  step { r -> r + 1 reduce }\n"
                       "                    ^~~~~~\n"},
        DiagnosticCase{"schedule s : allgather on ring(4) {\n"
                       "  step { r + 1 -> r }\n}",
                       "t.coll:2:10: error: the sender must be 'r' (every "
                       "rank) or an expression without 'r' (one rank)\n"
                       "  step { r + 1 -> r }\n"
                       "         ^~~~~\n"},
        DiagnosticCase{"schedule s : allgather on ring(4) {\n"
                       "  step { r -> r + 1 from tmp }\n}",
                       "t.coll:2:26: error: unknown buffer 'tmp'; declare it "
                       "with 'buffer tmp;'\n"
                       "  step { r -> r + 1 from tmp }\n"
                       "                         ^~~\n"},
        DiagnosticCase{"schedule s : allgather on ring(4) {\n"
                       "  for r in 0 .. 2 { step { r -> 0 } }\n}",
                       "t.coll:2:7: error: 'r' is already defined\n"
                       "  for r in 0 .. 2 { step { r -> 0 } }\n"
                       "      ^\n"
                       "t.coll:2:7: note: 'r' is the sending rank and 'p' the "
                       "number of ranks\n"
                       "  for r in 0 .. 2 { step { r -> 0 } }\n"
                       "      ^\n"},
        DiagnosticCase{
            "schedule s : allgather on hypercube(dim: d) "
            "where e in 1 .. 3 { }",
            "t.coll:1:51: error: 'e' is not a parameter of this "
            "schedule\n"
            "schedule s : allgather on hypercube(dim: d) where e "
            "in 1 .. 3 { }\n"
            "                                                  ^\n"}),
    [](const ::testing::TestParamInfo<DiagnosticCase> &info) {
      return "Case" + std::to_string(info.index);
    });

TEST(Frontend, SpecWithEveryFormChecksClean) {
  Checked c = check(R"(
    topology ring8 = ring(8);
    topology m = mesh(2, 3, 4);
    topology net = graph(4) { 0-1, 1-2, 2-3 };
    model lan = { ts: 10us, tw: 2ns/byte, ports: all, segment: 8KiB,
                  ts: 20us, tw: 1ns/byte, segment: 1MiB, ts: 0s, tw: 3ns/byte };
    collective ar = allreduce(op: sum, type: f64) on m;
    schedule s : broadcast(root: 0) on ring8 { step { 0 -> 4 } }
  )");
  ASSERT_TRUE(c.program) << c.diagnostics;
  EXPECT_EQ(c.diagnostics, "");
  EXPECT_EQ(c.program->topologies.size(), 3u);
  EXPECT_EQ(c.program->topologies[1].topology.numRanks(), 24);
  ASSERT_EQ(c.program->models.size(), 1u);
  EXPECT_DOUBLE_EQ(c.program->models[0].ts, 10e-6);
  EXPECT_DOUBLE_EQ(c.program->models[0].twPerByte, 2e-9);
  EXPECT_EQ(c.program->models[0].ports, PortModel::All);
  // Each segment prices from its size up; below the first, the model's own.
  const CostModel &lan = c.program->models[0];
  ASSERT_EQ(lan.larger.size(), 2u);
  EXPECT_EQ(lan.larger[0].fromBytes, 8192);
  EXPECT_EQ(lan.larger[1].fromBytes, 1 << 20);
  EXPECT_DOUBLE_EQ(lan.at(8191).ts, 10e-6);
  EXPECT_DOUBLE_EQ(lan.at(8192).ts, 20e-6);
  EXPECT_DOUBLE_EQ(lan.at(8192).twPerByte, 1e-9);
  EXPECT_DOUBLE_EQ(lan.at(1 << 20).ts, 0);
  EXPECT_DOUBLE_EQ(lan.at(1e9).twPerByte, 3e-9);
  EXPECT_EQ(c.program->collectives[0].collective.op, "sum");
}

TEST(Frontend, HandWrittenTransferIsAConstantRule) {
  Checked c = check("schedule s : broadcast(root: 0) on ring(8) {\n"
                    "  step { 0 -> 4 }\n}");
  ASSERT_TRUE(c.program) << c.diagnostics;
  const ir::Schedule &s = c.program->schedules[0];
  ASSERT_EQ(s.body.size(), 1u);
  const ir::Step &step = std::get<ir::Step>(s.body[0]);
  ASSERT_EQ(step.rules.size(), 1u);
  EXPECT_EQ(ir::print(*step.rules[0].guard), "r == 0");
  EXPECT_EQ(ir::print(*step.rules[0].peer), "4");
  EXPECT_EQ(step.rules[0].mode, ir::TransferMode::Copy);
}

TEST(Frontend, SymbolicScheduleBindsParametersAndLoops) {
  Checked c = check(
      "schedule bc : broadcast(root: 0) on hypercube(dim: d)\n"
      "    where d in 1 .. 16 {\n"
      "  for i in reverse 0 .. d - 1 {\n"
      "    step { r -> r ^ (1 << i) when r & ((2 << i) - 1) == 0 }\n"
      "  }\n}");
  ASSERT_TRUE(c.program) << c.diagnostics;
  const ir::Schedule &s = c.program->schedules[0];
  ASSERT_EQ(s.params.size(), 1u);
  EXPECT_EQ(s.params[0].name, "d");
  ASSERT_TRUE(s.params[0].range);
  EXPECT_EQ(s.params[0].range->second, 16);
  const auto &loop = std::get<std::shared_ptr<ir::Loop>>(s.body[0]);
  EXPECT_TRUE(loop->reverse);
  EXPECT_EQ(ir::print(*loop->hi), "d - 1");
  const ir::TransferRule &rule = std::get<ir::Step>(loop->body[0]).rules[0];
  // Bitwise binds tighter than comparison: (r & ((2 << i) - 1)) == 0.
  EXPECT_EQ(rule.guard->op, ir::ExprOp::Eq);
  EXPECT_EQ(rule.guard->args[0]->op, ir::ExprOp::BitAnd);
  EXPECT_EQ(ir::print(*rule.peer), "r ^ 1 << i");
  // The rule evaluates as Algorithm 4.1 says: at i = 2 on d = 3, rank 0
  // sends to 4 and rank 4 does not send.
  std::vector<int64_t> env(s.numSlots(), 0);
  env[ir::SlotSize] = 8;
  env[loop->slot] = 2;
  env[ir::SlotRank] = 0;
  EXPECT_EQ(ir::evaluate(*rule.guard, env).value, 1);
  EXPECT_EQ(ir::evaluate(*rule.peer, env).value, 4);
  env[ir::SlotRank] = 4;
  EXPECT_EQ(ir::evaluate(*rule.guard, env).value, 0);
}

TEST(Frontend, PrefixSumsDeliverIntoTwoBuffers) {
  Checked c = check(
      "schedule ps : scan(op: sum) on hypercube(dim: 3) {\n"
      "  buffer msg;\n"
      "  for i in 0 .. 2 {\n"
      "    step { r -> r ^ (1 << i) from msg into msg, result if r < r ^ (1 << i) }\n"
      "  }\n}");
  ASSERT_TRUE(c.program) << c.diagnostics;
  const ir::Schedule &s = c.program->schedules[0];
  ASSERT_EQ(s.buffers.size(), 2u);
  const auto &loop = std::get<std::shared_ptr<ir::Loop>>(s.body[0]);
  const ir::TransferRule &rule = std::get<ir::Step>(loop->body[0]).rules[0];
  EXPECT_EQ(rule.fromBuffer, 1u);
  ASSERT_EQ(rule.into.size(), 2u);
  EXPECT_EQ(rule.into[0].buffer, 1u);
  EXPECT_FALSE(rule.into[0].when);
  EXPECT_EQ(rule.into[1].buffer, 0u);
  EXPECT_EQ(ir::print(*rule.into[1].when), "r < r ^ 1 << i");
  EXPECT_EQ(rule.mode, ir::TransferMode::Reduce);
}

// A loop inside a step is unrolled into one rule per value the topology
// allows (a hypercube's dimension is at most 20), each guarded by the
// bounds; constant bounds need no guard.
TEST(Frontend, LoopInsideAStepIsARulePerValue) {
  Checked c = check(
      "schedule t : broadcast(root: 0) on hypercube(dim: d) where d in 1 .. 4 {\n"
      "  step { for j in 0 .. d - 1 { 0 -> 1 << j } }\n"
      "  step { for k in 1 .. 2 { r -> r ^ k when r < k } }\n}");
  ASSERT_TRUE(c.program) << c.diagnostics;
  const ir::Schedule &s = c.program->schedules[0];
  const ir::Step &first = std::get<ir::Step>(s.body[0]);
  ASSERT_EQ(first.rules.size(), 20u);
  EXPECT_EQ(ir::print(*first.rules[3].peer), "8");
  EXPECT_EQ(ir::print(*first.rules[3].guard), "3 <= d - 1 and r == 0");
  const ir::Step &second = std::get<ir::Step>(s.body[1]);
  ASSERT_EQ(second.rules.size(), 2u);
  EXPECT_EQ(ir::print(*second.rules[1].peer), "r ^ 2");
  EXPECT_EQ(ir::print(*second.rules[1].guard), "r < 2");
}

// Sema records a composition's parts; until the library stage composes
// them the schedule has no steps, and instantiating it is an error rather
// than a schedule that sends nothing.
TEST(Frontend, CompositionHasPartsUntilComposed) {
  Checked c = check("schedule s : broadcast(root: 0) on hypercube(dim: d)\n"
                    "    where d in 1 .. 3 = a then b;");
  ASSERT_TRUE(c.program) << c.diagnostics;
  const ir::Schedule &s = c.program->schedules[0];
  ASSERT_EQ(s.parts.size(), 2u);
  EXPECT_EQ(s.parts[1].name, "b");
  EXPECT_TRUE(s.body.empty());
  llvm::Expected<ir::Instance> instance = ir::instantiate(s, {2});
  ASSERT_FALSE(bool(instance));
  EXPECT_EQ(llvm::toString(instance.takeError()),
            "schedule 's' is a composition whose parts were not composed");
}

TEST(Frontend, ConditionalIsRightAssociativeAndPowerToo) {
  Checked c = check("topology a = full(0 ? 1 : 1 ? 2 ** 3 ** 2 : 3);");
  ASSERT_TRUE(c.program) << c.diagnostics;
  EXPECT_EQ(c.program->topologies[0].topology.numRanks(), 512);
}

TEST(Frontend, SeveralErrorsInOneRun) {
  Checked c = check("topology a = ring(1);\n"
                    "topology b = ring(8)\n"
                    "topology c = hypercube(dim: 0);\n");
  EXPECT_FALSE(c.program);
  EXPECT_NE(c.diagnostics.find("t.coll:1:14: error: ring needs"),
            std::string::npos);
  EXPECT_NE(c.diagnostics.find("t.coll:2:21: error: expected ';'"),
            std::string::npos);
  EXPECT_NE(c.diagnostics.find("t.coll:3:14: error: hypercube dimension"),
            std::string::npos);
}

} // namespace
