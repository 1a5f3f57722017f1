// The stages after the front end: a file's schedules and patterns checked,
// then emitted only when proved (pipeline/Pipeline.h, emit/Emitter.h).

#include "pipeline/Pipeline.h"
#include "SourceTextTest.h"
#include "alltoallv/Patterns.h"
#include "ir/Instantiate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace collc;

namespace {

class PipelineTest : public test::SourceTextTest {
protected:
  /// check() of `program`, recording the names of the schedules and
  /// collectives it reported, in order.
  pipeline::Checked check(const Program &program) {
    pipeline::CheckEvents events;
    events.schedule = [&](const ir::Schedule &s,
                          const verify::ScheduleReport &) {
      reported.push_back(s.name);
    };
    events.pattern = [&](const CollectiveDef &c,
                         const alltoallv::PatternVerdict &) {
      reported.push_back(c.name);
    };
    return pipeline::check(program, verify::VerifyOptions{}, events);
  }

  /// What the emitter is told of a test's file, named `baseName`.
  static emit::EmitOptions emitOptions(const std::string &baseName) {
    emit::EmitOptions options;
    options.baseName = baseName;
    options.specName = "test.coll";
    return options;
  }

  std::vector<std::string> reported;
};

const char *const kGood = R"(
topology f4 = full(4);
schedule good : broadcast(root: 0) on f4 {
  step { 0 -> 1 }
  step { 0 -> 2; 1 -> 3 }
}
collective x = alltoallv on f4 using direct;
)";

// A proved file: every schedule and every pattern checked, in order, and
// both emitted.
TEST_F(PipelineTest, ProvedFileIsCheckedThenEmitted) {
  Program program = load(kGood);
  pipeline::Checked checked = check(program);
  EXPECT_EQ(checked.verdict, verify::Status::Proved);
  EXPECT_EQ(reported, (std::vector<std::string>{"good", "x"}));
  ASSERT_EQ(checked.schedules.size(), 1u);
  ASSERT_EQ(checked.patterns.size(), 1u);
  EXPECT_EQ(checked.patterns.front().collective->name, "x");

  const emit::EmitOptions options = emitOptions("good");
  llvm::Expected<emit::EmittedFiles> files =
      emit::emitCpp(program, checked.schedules, checked.patterns, options);
  ASSERT_TRUE(static_cast<bool>(files)) << llvm::toString(files.takeError());
  EXPECT_NE(files->header.find("int good("), std::string::npos);
  EXPECT_NE(files->header.find("int x(const void *sendbuf"), std::string::npos);

  // A pattern the emitter was not given is not proved: no code for it.
  llvm::Expected<emit::EmittedFiles> unchecked =
      emit::emitCpp(program, checked.schedules, {}, options);
  ASSERT_FALSE(static_cast<bool>(unchecked));
  EXPECT_NE(llvm::toString(unchecked.takeError()).find("was not checked"),
            std::string::npos);
}

// A schedule with a counterexample: the file's verdict is the worst, the
// other schedules and the pattern are still checked, and only the proved
// ones are kept for the emitter.
TEST_F(PipelineTest, CounterexampleIsTheFilesVerdict) {
  Program program = load(std::string(kGood) + R"(
schedule early : broadcast(root: 0) on f4 {
  step { 0 -> 1; 1 -> 3 }
  step { 0 -> 2 }
}
)");
  pipeline::Checked checked = check(program);
  EXPECT_EQ(checked.verdict, verify::Status::Counterexample);
  EXPECT_EQ(reported, (std::vector<std::string>{"good", "early", "x"}));
  ASSERT_EQ(checked.schedules.size(), 1u);
  EXPECT_EQ(checked.schedules.front().schedule->name, "good");
  EXPECT_EQ(checked.patterns.size(), 1u);
}

// An alltoallv schedule's rule without a filter, or with one that names just
// the sender's own block for the receiver, moves that block straight from
// buffer to buffer (sendAll: no header, no probe); a rule that names other
// blocks forwards them, its filter kept by value past the walk.
TEST_F(PipelineTest, AlltoallvRulesSendOwnBlockOrForward) {
  Program program = load(R"(
schedule own : alltoallv on full(4) {
  for k in 1 .. 3 {
    step { r -> (r + k) % 4 }
  }
}
schedule named : alltoallv on full(4) {
  for k in 1 .. 3 {
    step { r -> (r + k) % 4 : origin == r and dest == (r + k) % 4 }
  }
}
schedule forwards : alltoallv on ring(4) {
  for k in 1 .. 3
      invariant (r - origin + 4) % 4 < k
        and (dest - origin + 4) % 4 >= (r - origin + 4) % 4 {
    step {
      r -> (r + 1) % 4
        : origin == (r - k + 1 + 4) % 4 and (dest - origin + 4) % 4 >= k
    }
  }
}
)");
  pipeline::Checked checked = check(program);
  EXPECT_EQ(checked.verdict, verify::Status::Proved);
  const emit::EmitOptions options = emitOptions("a2av");
  llvm::Expected<emit::EmittedFiles> files =
      emit::emitCpp(program, checked.schedules, checked.patterns, options);
  ASSERT_TRUE(static_cast<bool>(files)) << llvm::toString(files.takeError());
  auto body = [&](const std::string &name) {
    const std::string &text = files->source;
    size_t at = text.find("static int " + name + "(");
    EXPECT_NE(at, std::string::npos) << name;
    return text.substr(at, text.find("\n}\n", at) - at);
  };
  EXPECT_NE(body("own").find("eng.sendAll("), std::string::npos);
  EXPECT_NE(body("named").find("eng.sendAll("), std::string::npos);
  EXPECT_EQ(body("named").find("eng.send("), std::string::npos);
  EXPECT_NE(body("forwards")
                .find("eng.send(((r + int64_t(1)) % int64_t(4)), 0, [=]("),
            std::string::npos)
      << body("forwards");
  EXPECT_EQ(body("forwards").find("eng.sendAll("), std::string::npos);
}

// 001's A2, A3 and A4 written in the language
// (specs/alltoallv_forwarding.coll) are the patterns compiler/alltoallv
// builds for them, step for step: stage after stage, every rank sending to
// the same peer (A3 and A4 on the square arrays, a = b = s, where the
// tables' array has no incomplete row).
TEST_F(PipelineTest, AlltoallvFamiliesAreThePatterns) {
  auto text =
      llvm::MemoryBuffer::getFile(COLLC_SPECS_DIR "/alltoallv_forwarding.coll");
  ASSERT_TRUE(static_cast<bool>(text));
  Program program = load((*text)->getBuffer().str());
  struct Family {
    const char *name;
    alltoallv::Algorithm algorithm;
    bool square; // the parameters are the array's sides a and b, p = a * b
  };
  for (const Family &f :
       {Family{"spread_alltoallv", alltoallv::Algorithm::TwoStageRandom, false},
        Family{"two_stage_mesh_alltoallv", alltoallv::Algorithm::TwoStageMesh,
               true},
        Family{"four_stage_alltoallv", alltoallv::Algorithm::FourStage,
               true}}) {
    const ir::Schedule *family = program.findSchedule(f.name);
    ASSERT_NE(family, nullptr) << f.name;
    for (int64_t s : {2, 3, 5, 8}) {
      const int64_t p = f.square ? s * s : s;
      SCOPED_TRACE(std::string(f.name) + ", p = " + std::to_string(p));
      llvm::Expected<ir::Instance> instance =
          ir::instantiate(*family, f.square ? std::vector<int64_t>{s, s}
                                            : std::vector<int64_t>{s});
      ASSERT_TRUE(static_cast<bool>(instance))
          << llvm::toString(instance.takeError());
      llvm::Expected<alltoallv::Pattern> pattern =
          alltoallv::buildPattern(f.algorithm, p);
      ASSERT_TRUE(static_cast<bool>(pattern))
          << llvm::toString(pattern.takeError());
      std::vector<std::vector<int64_t>> tables;
      for (const alltoallv::Stage &stage : pattern->stages)
        tables.insert(tables.end(), stage.sendTo.begin(), stage.sendTo.end());
      ASSERT_EQ(instance->steps.size(), tables.size());
      for (size_t k = 0; k < tables.size(); ++k) {
        std::vector<int64_t> sendTo(static_cast<size_t>(p), -1);
        for (const ir::Transfer &t : instance->steps[k].transfers)
          sendTo[static_cast<size_t>(t.src)] = t.dst;
        EXPECT_EQ(sendTo, tables[k]) << "step " << k + 1;
      }
    }
  }
}

} // namespace
