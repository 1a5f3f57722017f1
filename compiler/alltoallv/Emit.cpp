// Proves and prints an irregular all-to-all collective (see Emit.h).

#include "alltoallv/Emit.h"

#include "ir/Instantiate.h"
#include "simulate/Simulator.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

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

bool StageVerdict::proved() const {
  return llvm::all_of(report.properties, [](const verify::PropertyResult &r) {
    return r.property == verify::Property::Congestion ||
           r.status == verify::Status::Proved;
  });
}

std::string StageVerdict::congestionText() const {
  if (!congestion)
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << congestion->message;
  if (congestion->step > 0)
    os << " at step " << congestion->step;
  return os.str();
}

bool PatternVerdict::proved() const {
  return routes.proved() &&
         llvm::all_of(stages, [](const StageVerdict &s) { return s.proved(); });
}

verify::Status PatternVerdict::verdict() const {
  verify::Status worst = routes.verdict();
  for (const StageVerdict &s : stages)
    for (const verify::PropertyResult &r : s.report.properties)
      if (r.property != verify::Property::Congestion)
        worst = verify::worse(worst, r.status);
  return worst;
}

double PatternVerdict::seconds() const {
  double total = routes.report.seconds;
  for (const StageVerdict &s : stages)
    total += s.report.seconds;
  return total;
}

int64_t PatternVerdict::maxLoad() const {
  int64_t load = 1;
  for (const StageVerdict &s : stages)
    load = std::max(load, s.maxLoad);
  return load;
}

ModelCost PatternVerdict::cost() const {
  std::vector<int64_t> loads;
  for (const StageVerdict &s : stages)
    loads.push_back(s.maxLoad);
  return modelCost(pattern.algorithm, pattern.layout.p, loads);
}

llvm::Expected<std::vector<int64_t>>
alltoallv::stageLoads(const Pattern &pattern, const Topology &topology) {
  std::vector<int64_t> loads;
  for (size_t s = 0; s < pattern.stages.size(); ++s) {
    ir::Schedule sched = stageSchedule(pattern, s, "stage", &topology);
    llvm::Expected<ir::Instance> instance = ir::instantiate(sched, {});
    if (!instance)
      return instance.takeError();
    llvm::Expected<simulate::SimulationResult> sim =
        simulate::simulate(*instance, topology);
    if (!sim)
      return sim.takeError();
    loads.push_back(std::max<int64_t>(sim->maxLoad, 1));
  }
  return loads;
}

llvm::Expected<PatternVerdict>
alltoallv::verifyPattern(llvm::StringRef name, Algorithm algorithm,
                         const Topology &topology, double timeoutSeconds) {
  llvm::Expected<Pattern> pattern =
      buildPattern(algorithm, topology.numRanks());
  if (!pattern)
    return pattern.takeError();
  PatternVerdict out;
  out.pattern = std::move(*pattern);
  out.topology = topology.describe();
  for (size_t s = 0; s < out.pattern.stages.size(); ++s) {
    StageVerdict v;
    v.stage = out.pattern.stages[s];
    v.schedule = stageSchedule(
        out.pattern, s, (name + "_stage_" + v.stage.name).str(), &topology);
    verify::VerifyOptions options;
    options.timeoutSeconds = timeoutSeconds;
    options.only = {verify::Property::Contention, verify::Property::Matching,
                    verify::Property::Congestion};
    llvm::Expected<verify::ScheduleReport> report =
        verify::verifySchedule(v.schedule, options);
    if (!report)
      return report.takeError();
    v.report = std::move(*report);
    for (const verify::PropertyResult &r : v.report.properties)
      if (r.property == verify::Property::Congestion) {
        v.maxLoad = std::max<int64_t>(r.maxLoad, 1);
        if (r.status == verify::Status::Counterexample)
          v.congestion = r.counterexample;
      }
    out.stages.push_back(std::move(v));
  }
  out.routes.schedule =
      patternSchedule(out.pattern, (name + "_routes").str(), &topology);
  const int64_t p = out.pattern.layout.p;
  const int64_t chunks = chunksPerBlock(out.pattern);
  if (p * p * chunks > maxRoutedChunks) {
    out.routes.report.name = out.routes.schedule.name;
    out.routes.report.collective = "alltoallv";
    out.routes.report.topology = out.topology;
    for (verify::Property property :
         {verify::Property::Causality, verify::Property::Correctness})
      out.routes.report.properties.push_back(
          {property, verify::Status::Unknown, "simulation",
           "the routes of " + std::to_string(p) + " ranks have " +
               std::to_string(p * p * chunks) + " chunks, above the " +
               std::to_string(maxRoutedChunks) + " simulated",
           std::nullopt, 1});
    return out;
  }
  verify::VerifyOptions options;
  options.timeoutSeconds = timeoutSeconds;
  options.only = {verify::Property::Causality, verify::Property::Correctness};
  llvm::Expected<verify::ScheduleReport> report =
      verify::verifySchedule(out.routes.schedule, options);
  if (!report)
    return report.takeError();
  out.routes.report = std::move(*report);
  return out;
}

/// The first stage, then the routes, not proved, with the verifier's text;
/// success when all are: only proved patterns are written.
static llvm::Error unprovedError(llvm::StringRef name,
                                 const PatternVerdict &verdict) {
  for (const StageVerdict &v : verdict.stages) {
    if (v.proved())
      continue;
    const Stage &st = v.stage;
    // What failed, without the congestion that is only measured.
    verify::ScheduleReport failed = v.report;
    llvm::erase_if(failed.properties, [](const verify::PropertyResult &r) {
      return r.property == verify::Property::Congestion;
    });
    std::string text;
    llvm::raw_string_ostream os(text);
    verify::printText(v.schedule, failed, os);
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "stage " + st.name + " of `" + name +
                                       "` is not proved:\n" + os.str());
  }
  if (!verdict.routes.proved()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    verify::printText(verdict.routes.schedule, verdict.routes.report, os);
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the routes of `" + name +
                                       "` are not proved:\n" + os.str());
  }
  return llvm::Error::success();
}

/// One comment line for a proved stage: how it was proved, and its load on
/// the declared topology.
static void printStageComment(llvm::raw_ostream &c, const StageVerdict &v,
                              const PatternVerdict &verdict) {
  const Stage &st = v.stage;
  c << "// Stage " << st.name << " (" << stageKindName(st.kind)
    << "): " << st.numSteps() << " steps, proved contention-free and "
    << "matched";
  for (const verify::PropertyResult &r : v.report.properties)
    if (r.property == verify::Property::Contention)
      c << " (" << r.method << ")";
  if (v.congestion)
    c << "; congests on " << verdict.topology << ": " << v.congestionText();
  else
    c << ", congestion-free on " << verdict.topology;
  c << ".\n";
}

/// The comment above the declaration and the definition: the algorithm, its
/// array, and what was proved of each stage and of the routes.
static std::string provenanceComment(llvm::StringRef name,
                                     const PatternVerdict &verdict,
                                     llvm::StringRef where) {
  const Algorithm algorithm = verdict.pattern.algorithm;
  const Layout &l = verdict.pattern.layout;
  std::string comment;
  llvm::raw_string_ostream c(comment);
  c << "// Collective `" << name << "` (" << where << "): alltoallv on "
    << verdict.topology << ", by " << algorithmName(algorithm)
    << " (001 §3).\n";
  if (algorithm == Algorithm::FourStage || algorithm == Algorithm::TwoStageMesh)
    c << "// Array: C = " << l.columns << " columns, R = " << l.rows
      << " rows, r = " << l.r
      << (l.rearranged ? " (rearranged, §3.2.2(A))" : "") << ".\n";
  for (const StageVerdict &v : verdict.stages)
    printStageComment(c, v, verdict);
  c << "// Routes: every block reaches its destination, and a node forwards "
       "only what\n// reached it (correctness, causality: "
    << verdict.routes.report.properties.front().method << ").\n";
  return c.str();
}

/// `name`_stage<s>: one row per step, each rank's destination in it.
static void printStageTables(llvm::raw_ostream &d, llvm::StringRef name,
                             const Pattern &pattern) {
  for (size_t s = 0; s < pattern.stages.size(); ++s) {
    d << "static const int " << name << "_stage" << s << "[] = {";
    const Stage &st = pattern.stages[s];
    for (size_t i = 0; i < st.numSteps(); ++i) {
      d << "\n   ";
      for (int64_t y : st.sendTo[i])
        d << " " << y << ",";
    }
    d << "\n};\n";
  }
}

/// `name`_plan(): the layout and the stage tables, built once.
static void printPlan(llvm::raw_ostream &d, llvm::StringRef name,
                      const Pattern &pattern) {
  const Layout &l = pattern.layout;
  // One plan for the function and its twin on the local backend.
  d << "static const collc::rt::AlltoallvPlan &" << name << "_plan() {\n"
    << "  static const collc::rt::AlltoallvPlan plan = [] {\n"
    << "    collc::rt::AlltoallvPlan plan;\n"
    << "    plan.p = " << l.p << ";\n    plan.columns = " << l.columns
    << ";\n    plan.rows = " << l.rows << ";\n    plan.r = " << l.r << ";\n";
  for (size_t s = 0; s < pattern.stages.size(); ++s)
    d << "    plan.stages.push_back({collc::rt::AlltoallvStageKind::"
      << runtimeKind(pattern.stages[s].kind) << ", "
      << pattern.stages[s].numSteps() << ", " << name << "_stage" << s
      << "});\n";
  d << "    return plan;\n  }();\n  return plan;\n}\n";
}

/// The user's note for a congested pattern: its most loaded stage.
static std::string congestionNote(llvm::StringRef name,
                                  const PatternVerdict &verdict,
                                  llvm::StringRef where) {
  const StageVerdict *worst = nullptr;
  for (const StageVerdict &v : verdict.stages)
    if (!worst || v.maxLoad > worst->maxLoad)
      worst = &v;
  return "alltoallv `" + name.str() + "` (" + where.str() + ") congests on " +
         verdict.topology + ": stage " + worst->stage.name + ": " +
         worst->congestionText() +
         "; its stages are proved contention-free and matched, so the "
         "code is written; the cost counts the load";
}

llvm::Expected<EmittedCollective>
alltoallv::emitCollective(llvm::StringRef name, const PatternVerdict &verdict,
                          llvm::StringRef where) {
  if (llvm::Error e = unprovedError(name, verdict))
    return e;
  const std::string comment = provenanceComment(name, verdict, where);

  EmittedCollective out;
  const std::string mpiSignature = signature("MPI_Comm"),
                    localSignature = signature("collc::rt::LocalComm &");
  out.declaration = comment + "int " + name.str() + "(" + mpiSignature +
                    defaultMode + ");\n\n";
  out.localDeclaration =
      "int " + name.str() + "(" + localSignature + defaultMode + ");\n";
  std::string def;
  llvm::raw_string_ostream d(def);
  d << comment;
  printStageTables(d, name, verdict.pattern);
  printPlan(d, name, verdict.pattern);
  const std::string call =
      "  return collc::rt::alltoallv(" + name.str() +
      "_plan(), sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, "
      "rdispls, recvtype, comm, mode);\n}\n";
  d << "int " << name << "(" << mpiSignature << ") {\n" << call << "\n";
  out.definition = d.str();
  if (verdict.maxLoad() > 1)
    out.note = congestionNote(name, verdict, where);
  out.localDefinition =
      "int " + name.str() + "(" + localSignature + ") {\n" + call;
  return out;
}
