// collc cost FILE...: the exact cost of schedules, A·t_s + B·m·t_w, step by
// step, against the seeds' lower bounds and a model's t_s and t_w.

#include "tools/Commands.h"
#include "tools/ModelFile.h"

#include "alltoallv/Emit.h"
#include "cost/Cost.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "verify/Verifier.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace collc;
using namespace collc::tools;
namespace cl = llvm::cl;

namespace {

cl::SubCommand costCommand("cost",
                           "Price schedules: A·t_s + B·m·t_w exactly, per "
                           "step, with the seeds' lower bound");
cl::list<std::string> costFiles(cl::Positional, cl::OneOrMore,
                                cl::desc("<file.coll>..."),
                                cl::sub(costCommand), cl::cat(category()));
cl::list<std::string> costSchedules(
    "schedule",
    cl::desc("Price only these schedules (names separated by commas)"),
    cl::value_desc("NAME,..."), cl::CommaSeparated, cl::sub(costCommand),
    cl::cat(category()));
MemberOptions costMember(costCommand);
cl::opt<Format> costFormat(
    "format", cl::desc("Output format"),
    formatValues("readable table", "one JSON document"),
    cl::init(Format::Text), cl::sub(costCommand), cl::cat(category()));
cl::opt<std::string> costModel("model",
                               cl::desc("Cost model for the time: one "
                                        "declared in the file, or a model "
                                        "file (FILE.coll or FILE.coll:NAME, "
                                        "as collc calibrate -o writes)"),
                               cl::value_desc("NAME"), cl::sub(costCommand),
                               cl::cat(category()));
cl::opt<double> costBytes("bytes",
                          cl::desc("Message size m in bytes for the time "
                                   "(default 1024)"),
                          cl::init(1024), cl::sub(costCommand),
                          cl::cat(category()));
cl::opt<bool> costAllPort("all-port",
                          cl::desc("All-port model (without --model)"),
                          cl::sub(costCommand), cl::cat(category()));

/// The member of `schedule` the options ask for.
llvm::Expected<std::vector<int64_t>> chooseParams(const ir::Schedule &s) {
  return costMember.choose(s);
}

std::string describeMember(const ir::Schedule &s, const cost::ScheduleCost &c) {
  std::string out;
  for (size_t i = 0; i < s.params.size(); ++i)
    if (s.params[i].name != "p")
      out += s.params[i].name + " = " + std::to_string(c.params[i]) + ", ";
  return out + "p = " + std::to_string(c.p);
}

/// What lets a member too large to simulate be priced from its rules
/// (cost::CostOptions::provedBy): the library's proof a collective's choice
/// relied on, else a proof of the member itself by Z3 (simulation would be
/// too large). Empty for a member small enough to simulate; an error when
/// the member is neither simulated nor proved.
llvm::Expected<std::string> proofForPricing(const LoadedFile &file,
                                            const ir::Schedule &schedule,
                                            llvm::ArrayRef<int64_t> params,
                                            PortModel ports) {
  llvm::Expected<std::optional<std::string>> tooLarge =
      cost::tooLargeToSimulate(schedule, params);
  if (!tooLarge)
    return tooLarge.takeError();
  if (!*tooLarge)
    return "";
  for (const auto &[collective, picked] : file.choices)
    for (const library::Choice &c : picked)
      if (c.schedule.name == schedule.name && !c.reliesOn.empty())
        return c.reliesOn;
  verify::VerifyOptions vo;
  for (size_t i = 0; i < schedule.params.size(); ++i)
    vo.params.push_back({schedule.params[i].name, params[i], params[i]});
  vo.ports = ports;
  vo.maxSimulatedRanks = 0;
  llvm::Expected<verify::ScheduleReport> report =
      verify::verifySchedule(schedule, vo);
  if (!report)
    return report.takeError();
  if (report->verdict() != verify::Status::Proved)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "%s, and collc verify does not prove it there (%s), which pricing it "
        "from its rules needs",
        (*tooLarge)->c_str(), verify::statusName(report->verdict()));
  return std::string("its proof at this size (collc verify)");
}

/// "3·t_s + 7/2·m·t_w"
std::string formula(int64_t startups, const cost::Fraction &words) {
  return std::to_string(startups) + "·t_s + " + words.str() + "·m·t_w";
}

/// The model --model names for `program`: one the file declares, or a
/// model in another file (FILE or FILE:NAME, as `collc calibrate -o` writes
/// one), kept in `external`; null without --model.
llvm::Expected<const CostModel *> modelFor(const Program &program,
                                           llvm::StringRef path,
                                           std::optional<CostModel> &external) {
  if (costModel.empty())
    return nullptr;
  for (const CostModel &m : program.models)
    if (m.name == costModel)
      return &m;
  if (llvm::StringRef(costModel).contains(".coll")) {
    llvm::Expected<CostModel> loaded = loadModel(costModel);
    if (!loaded)
      return loaded.takeError();
    external = std::move(*loaded);
    return &*external;
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path.str() + " declares no model '" +
                                     costModel + "'");
}

/// One member priced, with what the options add: the seeds' lower bound
/// and, under a model, its price on the model's machine.
struct Priced {
  const ir::Schedule &schedule;
  cost::ScheduleCost cost;
  std::optional<cost::LowerBound> bound;
  const CostModel *model = nullptr;
  std::optional<cost::ScheduleCost::Line> onMachine;
  std::optional<double> seconds;
  const char *portName = "";
};

/// Each largest message's start-ups and words: a model of several segments
/// prices each in its own (Line::coefficients).
llvm::json::Array partsOf(const cost::ScheduleCost::Line &line) {
  llvm::json::Array parts;
  for (const cost::ScheduleCost::Line::Part &part : line.partsByLargest())
    parts.push_back(llvm::json::Object{{"largest_m", part.largest.str()},
                                       {"ts", part.startups.str()},
                                       {"to", part.overheads.str()},
                                       {"tw_m", part.words.str()}});
  return parts;
}

llvm::json::Object costJson(const Priced &priced) {
  const ir::Schedule &schedule = priced.schedule;
  const cost::ScheduleCost &c = priced.cost;
  llvm::json::Array steps;
  for (const cost::StepCost &s : c.steps) {
    llvm::json::Object vars;
    for (const auto &[name, value] : s.loopVars)
      vars[name] = value;
    llvm::json::Object step{{"step", s.step},
                            {"loop", std::move(vars)},
                            {"messages", s.messages},
                            {"max_load", s.maxLoad},
                            {"tw_m", s.words.str()}};
    // A run of steps alike (a cost from the rules): its last step, loop
    // values and fewest messages.
    if (s.count > 1) {
      llvm::json::Object last;
      for (const auto &[name, value] : s.loopVarsLast)
        last[name] = value;
      step["last_step"] = s.step + s.count - 1;
      step["last_loop"] = std::move(last);
      step["fewest_messages"] = s.fewestMessages;
    }
    steps.push_back(std::move(step));
  }
  llvm::json::Object params;
  for (size_t i = 0; i < schedule.params.size(); ++i)
    params[schedule.params[i].name] = c.params[i];
  llvm::json::Object o{
      {"schedule", schedule.name},
      {"collective", verify::describeCollective(schedule.collective)},
      {"topology", verify::describeTopology(schedule.topology)},
      {"params", std::move(params)},
      {"p", c.p},
      {"ports", priced.portName},
      {"valid", c.valid},
      {"ts", c.startups},
      {"tw_m", c.words.str()},
      {"parts", partsOf(c.line(Machine()))},
      {"steps", std::move(steps)}};
  if (priced.bound)
    o["lower_bound"] = llvm::json::Object{{"tw_m", priced.bound->words.str()},
                                          {"source", priced.bound->source}};
  if (!c.reliesOn.empty())
    o["relies_on"] = c.reliesOn;
  // The price on the model's machine: A and B as its cores and copies
  // make them.
  if (priced.seconds)
    o["time"] = llvm::json::Object{{"model", priced.model->name},
                                   {"bytes", costBytes.getValue()},
                                   {"seconds", *priced.seconds},
                                   {"ts", priced.onMachine->startups.str()},
                                   {"to", priced.onMachine->overheads.str()},
                                   {"tw_m", priced.onMachine->words.str()},
                                   {"parts", partsOf(*priced.onMachine)}};
  return o;
}

/// "  time: 1.2e-05 s (model NAME, m = 1024 bytes)"
void printTime(llvm::raw_ostream &os, double seconds, const CostModel &model) {
  os << "  time: " << llvm::format("%.4g", seconds) << " s (model "
     << model.name << ", m = " << llvm::format("%.0f", costBytes.getValue())
     << " bytes)\n";
}

void printCost(llvm::raw_ostream &os, const LoadedFile &file,
               const Priced &priced) {
  const ir::Schedule &schedule = priced.schedule;
  const cost::ScheduleCost &c = priced.cost;
  for (const auto &[collective, picked] : file.choices)
    for (const library::Choice &choice : picked)
      if (choice.schedule.name == schedule.name) {
        os << "collective " << collective << ": " << library::describe(choice)
           << "\n";
        for (const CollectiveDef &def : file.program.collectives)
          if (def.name == collective && def.redistribution)
            os << "  the exchange of redistribute(from: "
               << def.redistribution->from.spelling()
               << ", to: " << def.redistribution->to.spelling()
               << "): m is what each pair trades, n/p^2 elements where "
                  "every pair trades as many\n";
      }
  os << "schedule " << schedule.name << " : "
     << verify::describeCollective(schedule.collective) << " on "
     << verify::describeTopology(schedule.topology) << ", "
     << describeMember(schedule, c) << ", " << priced.portName << "\n";
  if (!c.valid)
    os << "  warning: the schedule does not simulate correctly; run "
          "collc verify\n";
  if (!c.reliesOn.empty())
    os << "  priced from its rules, too large to simulate, relying on "
       << c.reliesOn << "\n";
  os << "  step  messages  max load  words (m)\n";
  // A run of steps alike shows its first and last.
  auto span = [&](int64_t first, int64_t last) {
    return first == last ? std::to_string(first)
                         : std::to_string(first) + ".." + std::to_string(last);
  };
  for (const cost::StepCost &s : c.steps) {
    os << "  " << llvm::right_justify(span(s.step, s.step + s.count - 1), 4)
       << "  "
       << llvm::right_justify(
              span(s.count > 1 ? s.fewestMessages : s.messages, s.messages), 8)
       << "  " << llvm::right_justify(std::to_string(s.maxLoad), 8) << "  "
       << s.words.str();
    if (!s.loopVars.empty()) {
      os << "   (";
      for (size_t i = 0; i < s.loopVars.size(); ++i) {
        os << (i ? ", " : "") << s.loopVars[i].first << " = "
           << s.loopVars[i].second;
        if (s.count > 1 && i < s.loopVarsLast.size() &&
            s.loopVarsLast[i].second != s.loopVars[i].second)
          os << ".." << s.loopVarsLast[i].second;
      }
      os << ")";
    }
    os << "\n";
  }
  os << "  total: " << formula(c.startups, c.words) << "\n";
  if (priced.bound)
    os << "  lower bound: " << priced.bound->words.str() << "·m·t_w ("
       << priced.bound->source << ")\n";
  // Cores shared, or receivers copying, price it otherwise.
  const std::optional<cost::ScheduleCost::Line> &onMachine = priced.onMachine;
  if (onMachine && !(onMachine->startups == cost::Fraction(c.startups) &&
                     onMachine->overheads == cost::Fraction() &&
                     onMachine->words == c.words))
    os << "  on model " << priced.model->name
       << "'s machine: " << onMachine->str() << "\n";
  if (priced.seconds)
    printTime(os, *priced.seconds, *priced.model);
}

/// An alltoallv collective (001 §3): the flat model of Theorem 2 / Table 3,
/// each stage's traffic taken as many times as its most loaded channel on
/// the declared topology carries messages; m = L_max / P. Written to the
/// text output or, with --format json, appended to `json`.
llvm::Error priceAlltoallv(const CollectiveDef &def,
                           alltoallv::Algorithm algorithm,
                           const CostModel *model, llvm::json::Array &json) {
  const int64_t p = def.topology.numRanks();
  llvm::Expected<alltoallv::Pattern> pattern =
      alltoallv::buildPattern(algorithm, p);
  if (!pattern)
    return pattern.takeError();
  llvm::Expected<std::vector<int64_t>> loads =
      alltoallv::stageLoads(*pattern, def.topology);
  if (!loads)
    return loads.takeError();
  alltoallv::ModelCost c = alltoallv::modelCost(algorithm, p, *loads);
  std::optional<double> seconds;
  if (model) {
    const MessageCost seg = model->at(costBytes);
    seconds =
        c.startups * seg.ts + c.traffic * costBytes.getValue() * seg.twPerByte;
  }
  if (costFormat == Format::Json) {
    llvm::json::Array stages;
    for (size_t i = 0; i < loads->size(); ++i)
      stages.push_back(llvm::json::Object{
          {"stage", pattern->stages[i].name},
          {"steps", static_cast<int64_t>(pattern->stages[i].numSteps())},
          {"max_load", (*loads)[i]}});
    llvm::json::Object o{{"collective", def.name},
                         {"algorithm", alltoallv::algorithmName(algorithm)},
                         {"topology", def.topology.describe()},
                         {"p", p},
                         {"ts", c.startups},
                         {"tw_m", c.traffic},
                         {"m", "L_max/P"},
                         {"source", c.source},
                         {"stages", std::move(stages)}};
    if (seconds)
      o["time"] = llvm::json::Object{{"model", model->name},
                                     {"bytes", costBytes.getValue()},
                                     {"seconds", *seconds}};
    json.push_back(std::move(o));
    return llvm::Error::success();
  }
  llvm::raw_ostream &os = llvm::outs();
  os << "collective " << def.name << " : alltoallv on "
     << def.topology.describe() << ", by "
     << alltoallv::algorithmName(algorithm) << " (001 §3), p = " << p << "\n";
  os << "  stage  steps  max load\n";
  for (size_t i = 0; i < loads->size(); ++i)
    os << "  " << llvm::left_justify(pattern->stages[i].name, 5)
       << llvm::right_justify(std::to_string(pattern->stages[i].numSteps()), 6)
       << llvm::right_justify(std::to_string((*loads)[i]), 10) << "\n";
  os << "  total: " << c.startups << "·t_s + " << c.traffic
     << "·m·t_w, m = L_max/P (" << c.source
     << "; each stage's traffic times its most loaded channel)\n";
  if (seconds)
    printTime(os, *seconds, *model);
  return llvm::Error::success();
}

/// A schedule priced for `params`: its proof, cost and lower bound, and on
/// a model its line and time for --bytes.
llvm::Expected<Priced> priceSchedule(const LoadedFile &file,
                                     const ir::Schedule &schedule,
                                     llvm::ArrayRef<int64_t> params,
                                     const CostModel *model, PortModel ports) {
  cost::CostOptions options;
  options.ports = ports;
  llvm::Expected<std::string> provedBy =
      proofForPricing(file, schedule, params, ports);
  if (!provedBy)
    return provedBy.takeError();
  options.provedBy = std::move(*provedBy);
  llvm::Expected<cost::ScheduleCost> c =
      cost::costOf(schedule, params, options);
  if (!c)
    return c.takeError();
  std::optional<cost::LowerBound> bound =
      cost::lowerBound(c->collective, schedule.topology.kind, c->p, ports);
  Priced result{schedule,
                std::move(*c),
                std::move(bound),
                model,
                {},
                {},
                ports == PortModel::All ? "all-port" : "single-port"};
  if (model) {
    result.onMachine = result.cost.line(model->machine);
    result.seconds =
        result.onMachine->seconds(model->segments(), costBytes, model->to);
  }
  return result;
}

/// One `collc cost` run over its selection: each schedule priced (or, a
/// family without a size, listed with what it needs) and each alltoallv
/// pattern, printed as they come.
class CostRun {
public:
  CostRun(DiagnosticEngine &diags, JsonDocument &json,
          const Selection &selection)
      : diags(diags), json(json), selection(selection),
        exitCode(selection.failed ? ExitInputError : ExitOk) {}

  void priceFile(const LoadedFile &file) {
    const Program &program = file.program;
    std::optional<CostModel> externalModel;
    llvm::Expected<const CostModel *> found =
        modelFor(program, file.path, externalModel);
    if (!found) {
      diags.error(llvm::toString(found.takeError()));
      exitCode = ExitInputError;
      return;
    }
    const CostModel *model = *found;
    // As verify judges them: the file's model's ports unless told.
    PortModel ports = model ? model->ports : portsFor(program, costAllPort);
    for (const ir::Schedule &schedule : program.schedules)
      if (selection.selects(file, schedule))
        priceOne(file, schedule, model, ports);
    for (const CollectiveDef &def : program.collectives)
      if (program.runsPattern(def) && selection.selects(def.name))
        pricePattern(def, model);
  }

  int finish() {
    if (!anySize && priced == 0 && !jsonUnpriced.empty() &&
        exitCode == ExitOk) {
      diags.error("nothing to price: every schedule is a family; give --p N "
                  "or --param NAME=V");
      exitCode = ExitInputError;
    }
    json.members["schedules"] = std::move(jsonSchedules);
    if (!jsonAlltoallv.empty())
      json.members["alltoallv"] = std::move(jsonAlltoallv);
    if (!jsonUnpriced.empty())
      json.members["unpriced"] = std::move(jsonUnpriced);
    return diags.hasErrors() ? ExitInputError : exitCode;
  }

private:
  void priceOne(const LoadedFile &file, const ir::Schedule &schedule,
                const CostModel *model, PortModel ports) {
    if (!anySize && selection.names.empty() && !hasFixedSize(schedule)) {
      std::string needs = sizeOptions(schedule);
      llvm::errs() << "collc: note: '" << schedule.name
                   << "' is a family; give " << needs << " to price it\n";
      jsonUnpriced.push_back(
          llvm::json::Object{{"schedule", schedule.name}, {"needs", needs}});
      return;
    }
    llvm::Expected<std::vector<int64_t>> params = chooseParams(schedule);
    if (!params) {
      llvm::Error error = params.takeError();
      const bool skipped = costMember.skips(error, selection);
      std::string message = llvm::toString(std::move(error));
      if (skipped) {
        llvm::errs() << "collc: note: skipping " << message << "\n";
        return;
      }
      diags.error(schedule.loc,
                  "cannot price '" + schedule.name + "': " + message);
      exitCode = ExitInputError;
      return;
    }
    llvm::Expected<Priced> result =
        priceSchedule(file, schedule, *params, model, ports);
    if (!result) {
      reportFailure(diags, result.takeError(), "price", schedule.name,
                    schedule.loc);
      exitCode = ExitInputError;
      return;
    }
    ++priced;
    if (costFormat == Format::Json)
      jsonSchedules.push_back(costJson(*result));
    else
      printCost(llvm::outs(), file, *result);
  }

  void pricePattern(const CollectiveDef &def, const CostModel *model) {
    std::optional<alltoallv::Algorithm> algorithm =
        alltoallv::algorithmFor(def.algorithm);
    if (!algorithm)
      return; // sema has reported it
    if (llvm::Error e = priceAlltoallv(def, *algorithm, model, jsonAlltoallv)) {
      reportFailure(diags, std::move(e), "price", def.name, def.loc);
      exitCode = ExitInputError;
      return;
    }
    ++priced;
  }

  DiagnosticEngine &diags;
  JsonDocument &json;
  const Selection &selection;
  int exitCode;
  size_t priced = 0;
  // Without a size or names, every schedule of fixed size is priced and
  // the families are listed with what they need.
  const bool anySize = costMember.given();
  llvm::json::Array jsonSchedules, jsonAlltoallv, jsonUnpriced;
};

int runCost() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), llvm::errs().has_colors());
  JsonDocument json(diags, costFormat == Format::Json);
  json.members["schedules"] = llvm::json::Array();
  std::optional<Selection> selection =
      loadSelection(costFiles, costSchedules, diags);
  if (!selection)
    return ExitInputError;
  CostRun run(diags, json, *selection);
  for (const LoadedFile &file : selection->files)
    run.priceFile(file);
  return run.finish();
}

CommandRegistration registration(costCommand, runCost,
                                 "collc cost FILE...     price schedules: "
                                 "A·t_s + B·m·t_w per step");

} // namespace
