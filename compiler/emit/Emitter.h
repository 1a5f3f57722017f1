#pragma once
// The C++ emitter: verified schedules become functions with MPI's argument
// order that run on collc_runtime (runtime/include/collc/Runtime.h).
//
// Symbolic schedules become rank-parametric code: loops as in the spec, each
// rule's guard, peer, selector and delivery conditions printed with
// ir::printCpp (the expression language's C++ interpretation). Hand-written
// steps (constant sender and receiver) become tables. The receiver side of a
// rule evaluates, at this rank, the candidate senders the prover showed to
// include every sender (ScheduleReport::namedSenders: a few per step), or
// else scans r = 0..p-1, and takes those whose guard holds and whose peer is
// this rank, so both ends agree on every message without a model of each
// other's state (messages carry their chunk list; see Runtime.h).

#include "alltoallv/Emit.h"
#include "sema/Program.h"
#include "verify/Verifier.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"

#include <string>
#include <vector>

namespace collc::emit {

struct VerifiedSchedule {
  const ir::Schedule *schedule = nullptr;
  verify::ScheduleReport report; // must be proved
};

/// An alltoallv collective that runs a library pattern (001 §3), and that
/// pattern's stages checked on its topology.
struct VerifiedPattern {
  const CollectiveDef *collective = nullptr;
  alltoallv::PatternVerdict verdict; // must be proved
};

struct EmitOptions {
  std::string baseName;  // files are baseName.h and baseName.cpp
  std::string ns;        // C++ namespace of the functions (may be a::b)
  std::string specName;  // the spec file as named on the command line
  /// For source lines in comments (may be null).
  const llvm::SourceMgr *sourceMgr = nullptr;
};

struct EmittedFiles {
  std::string header;
  std::string source;
  /// What the user should know though nothing failed: an alltoallv pattern
  /// that congests on its topology (alltoallv/Emit.h).
  std::vector<std::string> notes;
};

/// Emits one function per schedule of `schedules`, one per collective
/// declaration of `program` whose `using` names one of them, and one per
/// alltoallv collective of `patterns`. Errors: a collective kind the runtime
/// does not run, a report that is not a proof, an alltoallv collective
/// without its pattern.
llvm::Expected<EmittedFiles> emitCpp(const Program &program,
                                     llvm::ArrayRef<VerifiedSchedule> schedules,
                                     llvm::ArrayRef<VerifiedPattern> patterns,
                                     const EmitOptions &options);

} // namespace collc::emit
