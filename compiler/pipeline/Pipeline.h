#pragma once
// The stages after the front end, in order, for one loaded file
// (library/Frontend.h: parse, check, compose, resolve): check every schedule
// of the file and every irregular all-to-all pattern its collectives run
// (verify/, alltoallv/), then emit C++ for them (emit/) only when all are
// proved. `collc compile` is load, check and emit; `collc verify` checks
// the same patterns through checkPattern.

#include "alltoallv/Emit.h"
#include "emit/Emitter.h"
#include "sema/Program.h"
#include "verify/Verifier.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/SMLoc.h"

#include <functional>
#include <vector>

namespace collc::pipeline {

/// The pattern alltoallv collective `c` runs (Program::runsPattern), built
/// for its topology's ranks, each stage checked there with `options`'
/// time limit. Errors: `using` names no pattern, or one that does not apply
/// (two_stage_mesh off a perfect square).
llvm::Expected<alltoallv::PatternVerdict>
checkPattern(const CollectiveDef &c, const verify::VerifyOptions &options);

/// The same pattern as one schedule named after `c`: its stages' steps, each
/// message carrying the chunks the runtime routes through it
/// (alltoallv::patternSchedule), on `c`'s topology; what show and draw
/// print for `c`.
llvm::Expected<ir::Schedule> patternScheduleOf(const CollectiveDef &c);

/// What checking one file found.
struct Checked {
  std::vector<emit::VerifiedSchedule> schedules; // the proved ones, in order
  std::vector<emit::VerifiedPattern> patterns;   // the proved ones, in order
  /// The worst verdict of all (Error: a check could not run).
  verify::Status verdict = verify::Status::Proved;
};

/// Each result as it comes; any may be empty.
struct CheckEvents {
  std::function<void(const ir::Schedule &, const verify::ScheduleReport &)>
      schedule;
  std::function<void(const CollectiveDef &, const alltoallv::PatternVerdict &)>
      pattern;
  /// A check that could not run, of `name` declared at `loc`; checking
  /// stops there.
  std::function<void(llvm::Error, llvm::StringRef name, llvm::SMLoc loc)>
      failure;
};

/// Proves every schedule of `program`, then every pattern its alltoallv
/// collectives run, under `options`.
Checked check(const Program &program, const verify::VerifyOptions &options,
              const CheckEvents &events);

} // namespace collc::pipeline
