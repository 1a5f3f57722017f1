// Checking a loaded file's schedules and patterns (see Pipeline.h).

#include "pipeline/Pipeline.h"

using namespace collc;

static llvm::Error notAPattern(const CollectiveDef &c) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "'" + c.algorithm +
                                     "' is not an alltoallv pattern");
}

llvm::Expected<alltoallv::PatternVerdict>
pipeline::checkPattern(const CollectiveDef &c,
                       const verify::VerifyOptions &options) {
  std::optional<alltoallv::Algorithm> algorithm =
      alltoallv::algorithmFor(c.algorithm);
  if (!algorithm)
    return notAPattern(c);
  return alltoallv::verifyPattern(c.name, *algorithm, c.topology,
                                  options.timeoutSeconds);
}

llvm::Expected<ir::Schedule>
pipeline::patternScheduleOf(const CollectiveDef &c) {
  std::optional<alltoallv::Algorithm> algorithm =
      alltoallv::algorithmFor(c.algorithm);
  if (!algorithm)
    return notAPattern(c);
  llvm::Expected<alltoallv::Pattern> pattern =
      alltoallv::buildPattern(*algorithm, c.topology.numRanks());
  if (!pattern)
    return pattern.takeError();
  ir::Schedule s = alltoallv::patternSchedule(*pattern, c.name, &c.topology);
  s.loc = c.loc;
  return s;
}

pipeline::Checked pipeline::check(const Program &program,
                                  const verify::VerifyOptions &options,
                                  const CheckEvents &events) {
  Checked out;
  auto failed = [&](llvm::Error e, llvm::StringRef name, llvm::SMLoc loc) {
    out.verdict = verify::Status::Error;
    if (events.failure)
      events.failure(std::move(e), name, loc);
    else
      llvm::consumeError(std::move(e));
    return out;
  };
  for (const ir::Schedule &schedule : program.schedules) {
    llvm::Expected<verify::ScheduleReport> report =
        verify::verifySchedule(schedule, options);
    if (!report)
      return failed(report.takeError(), schedule.name, schedule.loc);
    if (events.schedule)
      events.schedule(schedule, *report);
    const verify::Status verdict = report->verdict();
    out.verdict = verify::worse(out.verdict, verdict);
    if (verdict == verify::Status::Proved)
      out.schedules.push_back({&schedule, std::move(*report)});
  }
  for (const CollectiveDef &c : program.collectives) {
    if (!program.runsPattern(c))
      continue;
    llvm::Expected<alltoallv::PatternVerdict> verdict =
        checkPattern(c, options);
    if (!verdict)
      return failed(verdict.takeError(), c.name, c.loc);
    if (events.pattern)
      events.pattern(c, *verdict);
    out.verdict = verify::worse(out.verdict, verdict->verdict());
    if (verdict->verdict() == verify::Status::Proved)
      out.patterns.push_back({&c, std::move(*verdict)});
  }
  return out;
}
