// collc show FILE...: a schedule as the step table a person checks against
// the seeds' figures - per step, each transfer src -> dst, the chunks it
// carries, its size in units of m and, when it is more than one hop, its
// route.

#include "tools/Commands.h"

#include "cost/Cost.h"
#include "ir/Instantiate.h"
#include "sema/Sema.h"
#include "simulate/Simulator.h"
#include "support/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

using namespace collc;
using namespace collc::tools;
namespace cl = llvm::cl;

namespace {

cl::SubCommand showCommand("show", "Print schedules step by step: who sends "
                                   "which chunks to whom, and by which route");
cl::list<std::string> showFiles(cl::Positional, cl::OneOrMore,
                                cl::desc("<file.coll>..."),
                                cl::sub(showCommand), cl::cat(category()));
cl::list<std::string> showSchedules(
    "schedule",
    cl::desc("Show only these schedules (names separated by commas)"),
    cl::value_desc("NAME,..."), cl::CommaSeparated, cl::sub(showCommand),
    cl::cat(category()));
cl::opt<int64_t> showP("p",
                       cl::desc("Number of ranks (a family's member with "
                                "every parameter equal that has N ranks)"),
                       cl::value_desc("N"), cl::init(0), cl::sub(showCommand),
                       cl::cat(category()));
cl::list<std::string> showParams("param",
                                 cl::desc("Value of a schedule parameter, "
                                          "e.g. d=3"),
                                 cl::value_desc("NAME=V"),
                                 cl::sub(showCommand), cl::cat(category()));
cl::opt<bool> showAllPort("all-port", cl::desc("All-port model"),
                          cl::sub(showCommand), cl::cat(category()));

/// "a" or "a..b".
std::string span(int64_t lo, int64_t hi) {
  return lo == hi ? std::to_string(lo)
                  : std::to_string(lo) + ".." + std::to_string(hi);
}

/// The chunks of one message, by the coordinates that mean something for
/// the collective: "all" for a broadcast's single block, "(origin 0..3)",
/// "(origin 2, dest 5)", "(origin 1, index 0..1)".
std::string describeChunks(llvm::ArrayRef<simulate::IdRange> ids,
                           const simulate::Semantics &sem) {
  bool origin = sem.usesOrigin(), dest = sem.usesDest();
  bool index = sem.numChunkIndices() > 1;
  if (!origin && !dest && !index)
    return ids.empty() ? "nothing" : "all";
  std::vector<std::string> parts;
  for (const simulate::IdRange &r : ids)
    sem.boxesOf(r, [&](const simulate::Semantics::Box &b) {
      std::vector<std::string> fields;
      if (origin)
        fields.push_back("origin " + span(b.oLo, b.oHi));
      if (dest && !sem.destFollowsOrigin())
        fields.push_back("dest " + span(b.dLo, b.dHi));
      if (index)
        fields.push_back("index " + span(b.kLo, b.kHi));
      std::string text = "(";
      for (size_t i = 0; i < fields.size(); ++i)
        text += (i ? ", " : "") + fields[i];
      parts.push_back(text + ")");
    });
  if (parts.empty())
    return "nothing";
  // A long list helps nobody: the first few and a count.
  constexpr size_t shown = 6;
  std::string out;
  for (size_t i = 0; i < parts.size() && i < shown; ++i)
    out += (i ? " " : "") + parts[i];
  if (parts.size() > shown)
    out += " and " + std::to_string(parts.size() - shown) + " more";
  return out;
}

/// "0 -> 1 -> 2" for a route of more than one hop, else "".
std::string describeRoute(const Topology &topology, int64_t src, int64_t dst) {
  llvm::SmallVector<Channel, 8> route;
  topology.route(src, dst, route);
  if (route.size() < 2)
    return "";
  std::string out = std::to_string(src);
  for (const Channel &c : route)
    out += " -> " + std::to_string(c.to);
  return out;
}

struct Row {
  std::string transfer, chunks, size, route;
};

int showOne(const ir::Schedule &schedule, llvm::ArrayRef<int64_t> params,
            PortModel ports, llvm::raw_ostream &os, DiagnosticEngine &diags) {
  llvm::Expected<ir::Instance> instance = ir::instantiate(schedule, params);
  if (!instance) {
    reportFailure(diags, instance.takeError(), "show", schedule.name,
                      schedule.loc);
    return ExitInputError;
  }
  std::vector<int64_t> dims = instance->dims;
  llvm::Expected<Topology> topology =
      Topology::make(schedule.topology.kind, dims, schedule.topology.edges,
                       schedule.topology.order);
  if (!topology) {
    reportFailure(diags, topology.takeError(), "show", schedule.name,
                      schedule.loc);
    return ExitInputError;
  }

  // Each step's rows, filled as the simulator chooses every message's chunks.
  std::vector<std::vector<Row>> rows(instance->steps.size());
  simulate::SimulateOptions options;
  options.ports = ports;
  options.onTransfer = [&](const ir::InstanceStep &step, size_t ti,
                           llvm::ArrayRef<simulate::IdRange> ids,
                           const simulate::Semantics &sem) {
    const ir::Transfer &t = step.transfers[ti];
    uint64_t chunks = 0;
    for (const simulate::IdRange &r : ids)
      chunks += r.size();
    const ir::TransferRule &rule = step.step->rules[t.rule];
    std::string transfer = std::to_string(t.src) + " -> " +
                           std::to_string(t.dst);
    if (rule.mode == ir::TransferMode::Reduce)
      transfer += " (reduce)";
    rows[step.number - 1].push_back(
        {transfer, describeChunks(ids, sem),
         cost::Fraction(static_cast<int64_t>(chunks), instance->chunks).str() +
             " m",
         describeRoute(*topology, t.src, t.dst)});
  };
  llvm::Expected<simulate::SimulationResult> result =
      simulate::simulate(*instance, *topology, options);
  if (!result) {
    reportFailure(diags, result.takeError(), "show", schedule.name,
                      schedule.loc);
    return ExitInputError;
  }

  os << "schedule " << schedule.name << " : "
     << verify::describeCollective(instance->collective) << " on "
     << topology->describe() << ", p = " << instance->p;
  if (instance->chunks > 1)
    os << ", " << instance->chunks << " chunks per block";
  os << "\n";
  for (const ir::InstanceStep &step : instance->steps) {
    os << "step " << step.number;
    if (!step.step->name.empty())
      os << " " << step.step->name;
    if (!step.loopVars.empty()) {
      os << " (";
      for (size_t i = 0; i < step.loopVars.size(); ++i)
        os << (i ? ", " : "") << step.loopVars[i].first << " = "
           << step.loopVars[i].second;
      os << ")";
    }
    os << "\n";
    const std::vector<Row> &stepRows = rows[step.number - 1];
    size_t width[3] = {0, 0, 0};
    for (const Row &r : stepRows) {
      width[0] = std::max(width[0], r.transfer.size());
      width[1] = std::max(width[1], r.chunks.size());
      width[2] = std::max(width[2], r.size.size());
    }
    for (const Row &r : stepRows) {
      os << "  " << llvm::left_justify(r.transfer, width[0]) << "  "
         << llvm::left_justify(r.chunks, width[1]) << "  ";
      if (r.route.empty())
        os << r.size << "\n";
      else
        os << llvm::left_justify(r.size, width[2]) << "  via " << r.route
           << "\n";
    }
  }
  if (!result->allHold())
    os << "warning: the schedule does not simulate correctly; run collc "
          "verify\n";
  return ExitOk;
}

int runShow() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), llvm::errs().has_colors());
  std::optional<Selection> selection =
      loadSelection(showFiles, showSchedules, diags);
  if (!selection)
    return ExitInputError;
  int exitCode = selection->failed ? ExitInputError : ExitOk;
  size_t shown = 0;
  std::vector<std::string> params(showParams.begin(), showParams.end());
  for (const LoadedFile &file : selection->files) {
    for (const ir::Schedule &schedule : file.program.schedules) {
      if (!selection->selects(file, schedule))
        continue;
      llvm::Expected<std::vector<int64_t>> member =
          chooseMember(schedule, showP, params);
      if (!member) {
        std::string message = llvm::toString(member.takeError());
        // With --p over many schedules, those without such a member are
        // skipped; one named on its own is an error.
        if (showP > 0 && selection->names.empty() && params.empty()) {
          llvm::errs() << "collc: note: skipping " << message << "\n";
          continue;
        }
        diags.error(schedule.loc,
                    "cannot show '" + schedule.name + "': " + message);
        exitCode = ExitInputError;
        continue;
      }
      if (shown++)
        llvm::outs() << "\n";
      if (int rc = showOne(schedule, *member,
                           portsFor(file.program, showAllPort), llvm::outs(),
                           diags))
        exitCode = rc;
    }
  }
  return diags.hasErrors() ? ExitInputError : exitCode;
}

CommandRegistration registration(showCommand, runShow,
                                 "collc show FILE...     print schedules step "
                                 "by step, with chunks and routes");

} // namespace
