// collc verify FILE...: prove the schedules in them.

#include "tools/Commands.h"

#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "verify/Verifier.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace collc;
using namespace collc::tools;
namespace cl = llvm::cl;

namespace {

cl::SubCommand verifyCommand(
    "verify", "Prove schedules: causality, contention, congestion, matching "
              "and correctness; print a counterexample when one fails");
cl::list<std::string> verifyFiles(cl::Positional, cl::OneOrMore,
                                  cl::desc("<file.coll>..."),
                                  cl::sub(verifyCommand),
                                  cl::cat(category()));
cl::opt<std::string> verifySchedule("schedule",
                                    cl::desc("Verify only this schedule"),
                                    cl::value_desc("NAME"),
                                    cl::sub(verifyCommand),
                                    cl::cat(category()));
cl::opt<int64_t> verifyP("p", cl::desc("Verify for exactly N ranks"),
                         cl::value_desc("N"), cl::init(0),
                         cl::sub(verifyCommand), cl::cat(category()));
cl::opt<std::string> verifyRange("range",
                                 cl::desc("Verify for every number of ranks "
                                          "in LO..HI"),
                                 cl::value_desc("LO..HI"),
                                 cl::sub(verifyCommand),
                                 cl::cat(category()));
cl::list<std::string> verifyParams(
    "param", cl::desc("Range of a schedule parameter, e.g. d=1..16"),
    cl::value_desc("NAME=LO..HI"), cl::sub(verifyCommand),
    cl::cat(category()));
cl::opt<std::string> verifyOnly(
    "properties",
    cl::desc("Comma-separated subset of causality, contention, congestion, "
             "matching, correctness"),
    cl::sub(verifyCommand), cl::cat(category()));
enum class Format { Text, Json };
cl::opt<Format> verifyFormat(
    "format", cl::desc("Output format"),
    cl::values(clEnumValN(Format::Text, "text", "readable report"),
               clEnumValN(Format::Json, "json", "one JSON document")),
    cl::init(Format::Text), cl::sub(verifyCommand), cl::cat(category()));
cl::opt<unsigned> verifyTimeout("timeout",
                                cl::desc("Solver time limit per query, in "
                                         "seconds (default 60)"),
                                cl::init(60), cl::sub(verifyCommand),
                                cl::cat(category()));
cl::opt<bool> verifyAllPort("all-port",
                            cl::desc("All-port model: one message per "
                                     "channel instead of per rank"),
                            cl::sub(verifyCommand), cl::cat(category()));
cl::opt<int64_t> verifyMaxSim("simulate-up-to",
                              cl::desc("Largest number of ranks simulated "
                                       "(default 4096)"),
                              cl::init(4096), cl::sub(verifyCommand),
                              cl::cat(category()));
cl::opt<bool> verifyVerbose("verbose", cl::desc("Print every solver query"),
                            cl::sub(verifyCommand), cl::cat(category()));


llvm::json::Value toJson(const verify::Counterexample &c) {
  llvm::json::Object o;
  llvm::json::Object params;
  for (const auto &[name, value] : c.params)
    params[name] = value;
  o["params"] = std::move(params);
  o["p"] = c.p;
  if (c.step > 0)
    o["step"] = c.step;
  if (c.rank)
    o["rank"] = *c.rank;
  if (c.channel) {
    o["channel"] = llvm::json::Object{{"from", c.channel->first},
                                      {"to", c.channel->second}};
    o["load"] = c.load;
  }
  llvm::json::Array transfers;
  for (const verify::TransferRef &t : c.transfers)
    transfers.push_back(llvm::json::Object{{"src", t.src}, {"dst", t.dst}});
  o["transfers"] = std::move(transfers);
  if (!c.chunk.empty())
    o["chunk"] = c.chunk;
  if (!c.expected.empty() || !c.actual.empty()) {
    o["expected"] = c.expected;
    o["actual"] = c.actual;
  }
  o["message"] = c.message;
  return o;
}

int runVerify() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), llvm::errs().has_colors());
  verify::VerifyOptions options;
  if (verifyP.getNumOccurrences()) {
    if (verifyP < 1) {
      llvm::errs() << "collc: error: --p needs a positive number of ranks\n";
      return ExitInputError;
    }
    options.p = verifyP;
  }
  if (!verifyRange.empty()) {
    options.ranks = parseRange(verifyRange);
    if (!options.ranks) {
      llvm::errs() << "collc: error: --range needs LO..HI, got '"
                   << verifyRange << "'\n";
      return ExitInputError;
    }
  }
  for (const std::string &param : verifyParams) {
    std::optional<verify::ParamRange> r = parseParamOption(param);
    if (!r)
      return ExitInputError;
    options.params.push_back(*r);
  }
  if (!verifyOnly.empty()) {
    llvm::SmallVector<llvm::StringRef, 5> names;
    llvm::StringRef(verifyOnly).split(names, ',');
    for (llvm::StringRef name : names) {
      std::optional<verify::Property> found;
      for (auto p : {verify::Property::Causality, verify::Property::Contention,
                     verify::Property::Congestion, verify::Property::Matching,
                     verify::Property::Correctness})
        if (name.trim() == verify::propertyName(p))
          found = p;
      if (!found) {
        llvm::errs() << "collc: error: unknown property '" << name << "'\n";
        return ExitInputError;
      }
      options.only.push_back(*found);
    }
  }
  options.ports = verifyAllPort ? PortModel::All : PortModel::Single;
  options.timeoutSeconds = verifyTimeout;
  options.maxSimulatedRanks = verifyMaxSim;
  if (verifyVerbose)
    options.verbose = &llvm::errs();

  int exitCode = ExitOk;
  auto worsen = [&](int code) {
    // Input error > counterexample > unknown > ok.
    static const int rank[] = {0, 2, 3, 1};
    if (rank[code] > rank[exitCode])
      exitCode = code;
  };
  llvm::json::Array jsonSchedules;
  size_t verified = 0;
  for (const std::string &file : verifyFiles) {
    std::vector<std::pair<std::string, std::vector<library::Choice>>> choices;
    llvm::Expected<Program> program = loadResolved(file, diags, &choices);
    if (!program) {
      llvm::consumeError(program.takeError());
      worsen(ExitInputError);
      continue;
    }
    // A file whose model has all ports means its schedules for them.
    verify::VerifyOptions own = options;
    if (program->ports() == PortModel::All)
      own.ports = PortModel::All;
    for (const ir::Schedule &schedule : program->schedules) {
      if (!verifySchedule.empty() && schedule.name != verifySchedule)
        continue;
      ++verified;
      llvm::Expected<verify::ScheduleReport> report =
          verify::verifySchedule(schedule, own);
      if (!report) {
        diags.error(schedule.loc, "cannot verify '" + schedule.name + "': " +
                                      llvm::toString(report.takeError()));
        worsen(ExitInputError);
        continue;
      }
      switch (report->verdict()) {
      case verify::Status::Proved:
        break;
      case verify::Status::Counterexample:
        worsen(ExitCounterexample);
        break;
      case verify::Status::Unknown:
        worsen(ExitUnknown);
        break;
      case verify::Status::Error:
        worsen(ExitInputError);
        break;
      }
      if (verifyFormat == Format::Text) {
        for (const auto &[collective, picked] : choices)
          for (const library::Choice &c : picked)
            if (c.schedule.name == schedule.name)
              llvm::outs() << "collective " << collective << ": "
                 << library::describe(c) << "\n";
        verify::printText(schedule, *report, llvm::outs());
        continue;
      }
      llvm::json::Array properties;
      for (const verify::PropertyResult &r : report->properties) {
        llvm::json::Object o{{"property", verify::propertyName(r.property)},
                             {"status", verify::statusName(r.status)},
                             {"method", r.method}};
        if (!r.detail.empty())
          o["detail"] = r.detail;
        if (r.property == verify::Property::Congestion)
          o["max_load"] = r.maxLoad;
        if (r.counterexample)
          o["counterexample"] = toJson(*r.counterexample);
        properties.push_back(std::move(o));
      }
      llvm::json::Array warnings;
      for (const verify::Counterexample &w : report->warnings)
        warnings.push_back(toJson(w));
      llvm::json::Object ranges;
      for (const verify::ParamRange &r : report->ranges)
        ranges[r.name] = llvm::json::Array{r.lo, r.hi};
      jsonSchedules.push_back(llvm::json::Object{
          {"schedule", report->name},
          {"collective", report->collective},
          {"topology", report->topology},
          {"ports", report->ports == PortModel::All ? "all" : "single"},
          {"ranges", std::move(ranges)},
          {"simulated", report->simulated},
          {"verdict", verify::statusName(report->verdict())},
          {"seconds", report->seconds},
          {"properties", std::move(properties)},
          {"warnings", std::move(warnings)}});
    }
  }
  if (!verifySchedule.empty() && verified == 0 && !diags.hasErrors()) {
    llvm::errs() << "collc: error: no schedule named '" << verifySchedule
                 << "'\n";
    return ExitInputError;
  }
  if (verifyFormat == Format::Json)
    llvm::outs() << llvm::formatv(
        "{0:2}\n", llvm::json::Value(llvm::json::Object{
                       {"schedules", std::move(jsonSchedules)}}));
  return exitCode;
}

CommandRegistration registration(verifyCommand, runVerify,
                                 "collc verify FILE...   prove the schedules "
                                 "in them");

} // namespace
