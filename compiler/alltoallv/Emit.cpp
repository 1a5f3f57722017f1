// Proves and prints an irregular all-to-all collective (see Emit.h).

#include "alltoallv/Emit.h"

#include "verify/Verifier.h"

#include "llvm/Support/raw_ostream.h"

using namespace collc;
using namespace collc::alltoallv;

static llvm::StringRef runtimeKind(StageKind kind) {
  switch (kind) {
  case StageKind::RowDistribute:
    return "RowDistribute";
  case StageKind::ColumnDistribute:
    return "ColumnDistribute";
  case StageKind::RowCollect:
    return "RowCollect";
  case StageKind::ColumnCollect:
    return "ColumnCollect";
  case StageKind::Spread:
    return "Spread";
  case StageKind::Direct:
    return "Direct";
  }
  return "Direct";
}

/// MPI_Alltoallv's parameters with `comm` of type `commType`, and the mode.
static std::string signature(llvm::StringRef commType) {
  return ("const void *sendbuf, const int *sendcounts, const int *sdispls, "
          "MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, "
          "const int *rdispls, MPI_Datatype recvtype, " +
          commType + (commType.endswith("&") ? "comm" : " comm") +
          ", collc::rt::AlltoallvMode mode")
      .str();
}
static const char *const defaultMode =
    " = collc::rt::AlltoallvMode::NonBlockingDual";

llvm::Expected<EmittedCollective>
alltoallv::emitCollective(llvm::StringRef name, Algorithm algorithm, int64_t p,
                          llvm::StringRef where, unsigned timeoutSeconds) {
  llvm::Expected<Pattern> pattern = buildPattern(algorithm, p);
  if (!pattern)
    return pattern.takeError();
  const Layout &l = pattern->layout;

  std::string comment;
  llvm::raw_string_ostream c(comment);
  c << "// Collective `" << name << "` (" << where << "): alltoallv on " << p
    << " ranks, by " << algorithmName(algorithm) << " (001 §3).\n";
  if (algorithm == Algorithm::FourStage || algorithm == Algorithm::TwoStageMesh)
    c << "// Array: C = " << l.columns << " columns, R = " << l.rows
      << " rows, r = " << l.r
      << (l.rearranged ? " (rearranged, §3.2.2(A))" : "") << ".\n";
  for (size_t s = 0; s < pattern->stages.size(); ++s) {
    const Stage &st = pattern->stages[s];
    ir::Schedule sched =
        stageSchedule(*pattern, s, (name + "_stage_" + st.name).str());
    verify::VerifyOptions options;
    options.timeoutSeconds = timeoutSeconds;
    options.only = {verify::Property::Contention, verify::Property::Matching,
                    verify::Property::Congestion};
    llvm::Expected<verify::ScheduleReport> report =
        verify::verifySchedule(sched, options);
    if (!report)
      return report.takeError();
    if (report->verdict() != verify::Status::Proved) {
      std::string text;
      llvm::raw_string_ostream os(text);
      verify::printText(sched, *report, os);
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "stage " + st.name + " of `" + name +
                                         "` is not proved:\n" + os.str());
    }
    c << "// Stage " << st.name << " (" << stageKindName(st.kind)
      << "): " << st.numSteps()
      << " steps, proved contention-free, congestion-free "
      << "and matched";
    for (const verify::PropertyResult &r : report->properties)
      if (r.property == verify::Property::Contention)
        c << " (" << r.method << ")";
    c << ".\n";
  }

  EmittedCollective out;
  const std::string mpiSignature = signature("MPI_Comm"),
                    localSignature = signature("collc::rt::LocalComm &");
  out.declaration = c.str() + "int " + name.str() + "(" + mpiSignature +
                    defaultMode + ");\n\n";
  out.localDeclaration =
      "int " + name.str() + "(" + localSignature + defaultMode + ");\n";
  std::string def;
  llvm::raw_string_ostream d(def);
  d << c.str();
  for (size_t s = 0; s < pattern->stages.size(); ++s) {
    d << "static const int " << name << "_stage" << s << "[] = {";
    const Stage &st = pattern->stages[s];
    for (size_t i = 0; i < st.numSteps(); ++i) {
      d << "\n   ";
      for (int64_t y : st.sendTo[i])
        d << " " << y << ",";
    }
    d << "\n};\n";
  }
  // One plan for the function and its twin on the local backend.
  d << "static const collc::rt::AlltoallvPlan &" << name << "_plan() {\n"
    << "  static const collc::rt::AlltoallvPlan plan = [] {\n"
    << "    collc::rt::AlltoallvPlan plan;\n"
    << "    plan.p = " << l.p << ";\n    plan.columns = " << l.columns
    << ";\n    plan.rows = " << l.rows << ";\n    plan.r = " << l.r << ";\n";
  for (size_t s = 0; s < pattern->stages.size(); ++s)
    d << "    plan.stages.push_back({collc::rt::AlltoallvStageKind::"
      << runtimeKind(pattern->stages[s].kind) << ", "
      << pattern->stages[s].numSteps() << ", " << name << "_stage" << s
      << "});\n";
  d << "    return plan;\n  }();\n  return plan;\n}\n";
  const std::string call =
      "  return collc::rt::alltoallv(" + name.str() +
      "_plan(), sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, "
      "rdispls, recvtype, comm, mode);\n}\n";
  d << "int " << name << "(" << mpiSignature << ") {\n" << call << "\n";
  out.definition = d.str();
  out.localDefinition =
      "int " + name.str() + "(" + localSignature + ") {\n" + call;
  return out;
}
