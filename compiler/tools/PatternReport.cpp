// An alltoallv collective's checked pattern as verify and compile report it.

#include "tools/Commands.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace collc;

namespace {

/// "proved          (z3)": the status column as printText aligns it.
std::string statusColumn(const verify::PropertyResult &r) {
  std::string status = verify::statusName(r.status);
  status.resize(std::max<size_t>(status.size(), 15), ' ');
  return status + " (" + r.method + (r.detail.empty() ? "" : "; " + r.detail) +
         ")";
}

/// "14·t_s + 96·m·t_w, m = L_max/P (001 Theorem 2 (A4); each stage's
/// traffic times its most loaded channel: 1, 3, 1, 3)".
std::string costText(const alltoallv::PatternVerdict &verdict) {
  const alltoallv::ModelCost cost = verdict.cost();
  std::string loads;
  for (const alltoallv::StageVerdict &v : verdict.stages)
    loads += (loads.empty() ? "" : ", ") + std::to_string(v.maxLoad);
  return std::to_string(cost.startups) + "·t_s + " +
         std::to_string(cost.traffic) + "·m·t_w, m = L_max/P (" + cost.source +
         "; each stage's traffic times its most loaded channel: " + loads + ")";
}

} // namespace

llvm::json::Object
collc::tools::patternJson(const CollectiveDef &c,
                          const alltoallv::PatternVerdict &verdict) {
  llvm::json::Array stages;
  for (const alltoallv::StageVerdict &v : verdict.stages) {
    llvm::json::Array properties;
    for (const verify::PropertyResult &r : v.report.properties)
      if (r.property != verify::Property::Congestion)
        properties.push_back(
            llvm::json::Object{{"property", verify::propertyName(r.property)},
                               {"status", verify::statusName(r.status)},
                               {"method", r.method}});
    llvm::json::Object o{{"stage", v.stage.name},
                         {"kind", alltoallv::stageKindName(v.stage.kind)},
                         {"steps", static_cast<int64_t>(v.stage.numSteps())},
                         {"properties", std::move(properties)},
                         {"max_load", v.maxLoad}};
    if (v.congestion)
      o["congestion"] = counterexampleJson(*v.congestion);
    stages.push_back(std::move(o));
  }
  llvm::json::Array routes;
  for (const verify::PropertyResult &r : verdict.routes.report.properties)
    routes.push_back(
        llvm::json::Object{{"property", verify::propertyName(r.property)},
                           {"status", verify::statusName(r.status)},
                           {"method", r.method}});
  const alltoallv::ModelCost cost = verdict.cost();
  return llvm::json::Object{
      {"collective", c.name},
      {"algorithm", alltoallv::algorithmName(verdict.pattern.algorithm)},
      {"topology", verdict.topology},
      {"p", verdict.pattern.layout.p},
      {"verdict", verify::statusName(verdict.verdict())},
      {"max_load", verdict.maxLoad()},
      {"stages", std::move(stages)},
      {"routes",
       llvm::json::Object{
           {"chunks_per_block", alltoallv::chunksPerBlock(verdict.pattern)},
           {"properties", std::move(routes)}}},
      {"cost", llvm::json::Object{{"ts", cost.startups},
                                  {"tw_m", cost.traffic},
                                  {"m", "L_max/P"},
                                  {"source", cost.source}}},
      {"seconds", verdict.seconds()}};
}

void collc::tools::printPattern(const CollectiveDef &c,
                                const alltoallv::PatternVerdict &verdict,
                                llvm::raw_ostream &os) {
  const alltoallv::Algorithm algorithm = verdict.pattern.algorithm;
  const alltoallv::Layout &l = verdict.pattern.layout;
  os << "collective " << c.name << " : alltoallv on " << verdict.topology
     << ", by " << alltoallv::algorithmName(algorithm) << " (001 §3)";
  if (algorithm == alltoallv::Algorithm::FourStage ||
      algorithm == alltoallv::Algorithm::TwoStageMesh)
    os << ": C = " << l.columns << " columns, R = " << l.rows
       << " rows, r = " << l.r << (l.rearranged ? " (rearranged)" : "");
  os << "\n";
  for (const alltoallv::StageVerdict &v : verdict.stages) {
    os << "  stage " << v.stage.name << " ("
       << alltoallv::stageKindName(v.stage.kind) << "), "
       << plural(v.stage.numSteps(), "step") << "\n";
    for (const verify::PropertyResult &r : v.report.properties)
      if (r.property != verify::Property::Congestion)
        os << "    " << llvm::left_justify(verify::propertyName(r.property), 12)
           << " " << statusColumn(r) << "\n";
    os << "    congestion   "
       << llvm::left_justify(v.congestion ? "congests" : "none", 15) << " ("
       << (v.congestion ? v.congestionText() + "; measured, not required"
                        : "most loaded channel: 1 message")
       << ")\n";
    // A refuted stage in full: the counterexample, where, and the steps
    // before. An UNKNOWN's reason is already in its line.
    if (llvm::any_of(v.report.properties, [](const verify::PropertyResult &r) {
          return r.property != verify::Property::Congestion &&
                 r.status == verify::Status::Counterexample;
        })) {
      verify::ScheduleReport failed = v.report;
      llvm::erase_if(failed.properties, [](const verify::PropertyResult &r) {
        return r.property == verify::Property::Congestion;
      });
      verify::printText(v.schedule, failed, os);
    }
  }
  const int64_t chunks = alltoallv::chunksPerBlock(verdict.pattern);
  os << "  routes of the whole, "
     << (chunks > 1 ? plural(static_cast<size_t>(chunks), "chunk") +
                          " a block: the node its elements are dealt to"
                    : "one chunk a block")
     << "\n";
  for (const verify::PropertyResult &r : verdict.routes.report.properties)
    os << "    " << llvm::left_justify(verify::propertyName(r.property), 12)
       << " " << statusColumn(r) << "\n";
  // A route that fails in full: the chunk, where, and the steps before.
  if (verdict.routes.verdict() == verify::Status::Counterexample)
    verify::printText(verdict.routes.schedule, verdict.routes.report, os);
  os << "  cost: " << costText(verdict) << "\n";
  switch (verdict.verdict()) {
  case verify::Status::Proved:
    os << "PROVED";
    if (verdict.maxLoad() > 1)
      os << ": contention-free, matched and routed; congests on "
         << verdict.topology << " (up to " << verdict.maxLoad()
         << " messages on a channel), which the cost counts";
    break;
  case verify::Status::Unknown:
    os << "UNKNOWN";
    break;
  case verify::Status::Counterexample:
    os << "COUNTEREXAMPLE";
    break;
  case verify::Status::Error:
    os << "ERROR";
    break;
  }
  os << llvm::format(" (%.2f s)\n", verdict.seconds());
}
