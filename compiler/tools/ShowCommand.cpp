// collc show FILE...: a schedule as the step table a person checks against
// the seeds' figures - per step, each transfer src -> dst, the chunks it
// carries, its size in units of m and, when it is more than one hop, its
// route.

#include "tools/Commands.h"
#include "tools/StepTable.h"

#include "sema/Sema.h"
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
MemberOptions showMember(showCommand);
cl::opt<bool> showAllPort("all-port", cl::desc("All-port model"),
                          cl::sub(showCommand), cl::cat(category()));
cl::opt<Format>
    showFormat("format", cl::desc("Output format"),
               formatValues("the step tables",
                            "one JSON document: each schedule's steps and "
                            "their messages, and the diagnostics"),
               cl::init(Format::Text), cl::sub(showCommand),
               cl::cat(category()));

/// A member's step table as `--format json` prints it: per step its
/// messages, each with the chunks, the size in m and the route.
llvm::json::Object tableJson(const ir::Schedule &schedule,
                             const StepTable &table) {
  const ir::Instance &instance = table.instance;
  llvm::json::Array steps;
  for (const ir::InstanceStep &step : instance.steps) {
    llvm::json::Object loops;
    for (const auto &[var, value] : step.loopVars)
      loops[var] = value;
    llvm::json::Array messages;
    for (const StepMessage &m : table.messages[step.number - 1]) {
      llvm::json::Array via;
      for (int64_t node : m.via)
        via.push_back(node);
      messages.push_back(llvm::json::Object{{"src", m.src},
                                            {"dst", m.dst},
                                            {"reduce", m.reduce},
                                            {"chunks", m.chunks},
                                            {"size", m.size},
                                            {"via", std::move(via)}});
    }
    steps.push_back(llvm::json::Object{{"step", step.number},
                                       {"name", step.step->name},
                                       {"loop", std::move(loops)},
                                       {"messages", std::move(messages)}});
  }
  return llvm::json::Object{
      {"schedule", schedule.name},
      {"collective", verify::describeCollective(instance.collective)},
      {"topology", table.topology.describe()},
      {"p", instance.p},
      {"chunks_per_block", instance.chunks},
      {"simulates", table.result.allHold()},
      {"steps", std::move(steps)}};
}

int showOne(const ir::Schedule &schedule, llvm::ArrayRef<int64_t> params,
            PortModel ports, llvm::raw_ostream &os, DiagnosticEngine &diags,
            llvm::json::Array *json) {
  llvm::Expected<StepTable> table = tabulate(schedule, params, ports);
  if (!table) {
    reportFailure(diags, table.takeError(), "show", schedule.name,
                  schedule.loc);
    return ExitInputError;
  }
  if (json) {
    json->push_back(tableJson(schedule, *table));
    return ExitOk;
  }
  const ir::Instance &instance = table->instance;
  os << "schedule " << schedule.name << " : "
     << verify::describeCollective(instance.collective) << " on "
     << table->topology.describe() << ", p = " << instance.p;
  if (instance.chunks > 1)
    os << ", " << instance.chunks << " chunks per block";
  os << "\n";
  for (const ir::InstanceStep &step : instance.steps) {
    os << stepHeading(step) << "\n";
    const std::vector<StepMessage> &messages = table->messages[step.number - 1];
    std::vector<std::string> transfers, routes;
    size_t width[3] = {0, 0, 0};
    for (const StepMessage &m : messages) {
      std::string transfer =
          std::to_string(m.src) + " -> " + std::to_string(m.dst);
      if (m.reduce)
        transfer += " (reduce)";
      // The route only when it is more than one hop.
      std::string route;
      if (m.via.size() > 2)
        for (size_t i = 0; i < m.via.size(); ++i)
          route += (i ? " -> " : "") + std::to_string(m.via[i]);
      width[0] = std::max(width[0], transfer.size());
      width[1] = std::max(width[1], m.chunks.size());
      width[2] = std::max(width[2], m.size.size());
      transfers.push_back(std::move(transfer));
      routes.push_back(std::move(route));
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      os << "  " << llvm::left_justify(transfers[i], width[0]) << "  "
         << llvm::left_justify(messages[i].chunks, width[1]) << "  ";
      if (routes[i].empty())
        os << messages[i].size << "\n";
      else
        os << llvm::left_justify(messages[i].size, width[2]) << "  via "
           << routes[i] << "\n";
    }
  }
  if (!table->result.allHold())
    os << "warning: the schedule does not simulate correctly; run collc "
          "verify\n";
  return ExitOk;
}

int runShow() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), llvm::errs().has_colors());
  JsonDocument json(diags, showFormat == Format::Json);
  llvm::json::Array &shownJson = json.list("schedules");
  std::optional<Selection> selection =
      loadSelection(showFiles, showSchedules, diags);
  if (!selection)
    return ExitInputError;
  int exitCode = selection->failed ? ExitInputError : ExitOk;
  size_t shown = 0;
  std::vector<ir::Schedule> patterns;
  for (const LoadedFile &file : selection->files) {
    llvm::Expected<std::vector<const ir::Schedule *>> schedules =
        schedulesOf(file, patterns);
    if (!schedules) {
      diags.error(llvm::SMLoc(), llvm::toString(schedules.takeError()));
      exitCode = ExitInputError;
      continue;
    }
    for (const ir::Schedule *each : *schedules) {
      const ir::Schedule &schedule = *each;
      if (!selection->selects(file, schedule))
        continue;
      llvm::Expected<std::vector<int64_t>> member = showMember.choose(schedule);
      if (!member) {
        llvm::Error error = member.takeError();
        const bool skipped = showMember.skips(error, *selection);
        std::string message = llvm::toString(std::move(error));
        if (skipped) {
          diags.note(llvm::SMLoc(), "skipping " + message);
          continue;
        }
        diags.error(schedule.loc,
                    "cannot show '" + schedule.name + "': " + message);
        exitCode = ExitInputError;
        continue;
      }
      if (shown++ && !json)
        llvm::outs() << "\n";
      if (int rc = showOne(schedule, *member,
                           portsFor(file.program, showAllPort), llvm::outs(),
                           diags, json ? &shownJson : nullptr))
        exitCode = rc;
    }
  }
  return diags.hasErrors() ? ExitInputError : exitCode;
}

CommandRegistration registration(showCommand, runShow,
                                 "collc show FILE...     print schedules step "
                                 "by step, with chunks and routes");

} // namespace
