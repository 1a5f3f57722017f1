#include "tools/StepTable.h"

#include "cost/Cost.h"

using namespace collc;
using namespace collc::tools;

namespace {

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

} // namespace

llvm::Expected<StepTable> collc::tools::tabulate(const ir::Schedule &schedule,
                                                 llvm::ArrayRef<int64_t> params,
                                                 PortModel ports) {
  llvm::Expected<ir::Instance> instance = ir::instantiate(schedule, params);
  if (!instance)
    return instance.takeError();
  llvm::Expected<Topology> topology =
      Topology::make(schedule.topology.kind, instance->dims,
                     schedule.topology.edges, schedule.topology.order);
  if (!topology)
    return topology.takeError();

  StepTable table{std::move(*instance), std::move(*topology), {}, {}};
  table.messages.resize(table.instance.steps.size());
  // Each step's messages, filled as the simulator chooses their chunks.
  simulate::SimulateOptions options;
  options.ports = ports;
  options.onTransfer = [&](const ir::InstanceStep &step, size_t ti,
                           llvm::ArrayRef<simulate::IdRange> ids,
                           const simulate::Semantics &sem) {
    const ir::Transfer &t = step.transfers[ti];
    uint64_t chunks = 0;
    for (const simulate::IdRange &r : ids)
      chunks += r.size();
    StepMessage m;
    m.src = t.src;
    m.dst = t.dst;
    m.reduce = step.step->rules[t.rule].mode == ir::TransferMode::Reduce;
    m.chunks = describeChunks(ids, sem);
    m.size = cost::Fraction(static_cast<int64_t>(chunks),
                            table.instance.chunks)
                 .str() +
             " m";
    llvm::SmallVector<Channel, 8> route;
    table.topology.route(t.src, t.dst, route);
    m.via.push_back(t.src);
    for (const Channel &c : route)
      m.via.push_back(c.to);
    table.messages[step.number - 1].push_back(std::move(m));
  };
  llvm::Expected<simulate::SimulationResult> result =
      simulate::simulate(table.instance, table.topology, options);
  if (!result)
    return result.takeError();
  table.result = std::move(*result);
  return table;
}

std::string collc::tools::stepHeading(const ir::InstanceStep &step) {
  std::string out = "step " + std::to_string(step.number);
  if (!step.step->name.empty())
    out += " " + step.step->name;
  return out + verify::loopValuesText(step.loopVars);
}
