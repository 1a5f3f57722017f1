// The stages after the front end: a file's schedules and patterns checked,
// then emitted only when proved (pipeline/Pipeline.h, emit/Emitter.h).

#include "pipeline/Pipeline.h"
#include "SourceTextTest.h"

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

  emit::EmitOptions options;
  options.baseName = "good";
  options.specName = "test.coll";
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

} // namespace
