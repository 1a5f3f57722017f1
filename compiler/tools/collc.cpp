// collc: the command-line driver. Every subcommand follows one pattern:
//   collc <subcommand> FILE... [options]
// and exits 0 on success, 1 on a counterexample, 2 on input errors (printed
// with their place in the source), 3 when the solver could not decide.

#include "tools/Commands.h"

#include "cost/Cost.h"
#include "ir/Instantiate.h"
#include "library/Library.h"
#include "pipeline/Pipeline.h"
#include "sema/Sema.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace collc::tools;
namespace cl = llvm::cl;

#ifndef COLLC_VERSION
#define COLLC_VERSION "0.0.0"
#endif

namespace {

struct Registered {
  cl::SubCommand *command;
  int (*run)();
  std::string usage;
};

std::vector<Registered> &registry() {
  static std::vector<Registered> commands;
  return commands;
}

const char *argv0 = "collc";

} // namespace

cl::OptionCategory &collc::tools::category() {
  static cl::OptionCategory collcCategory("collc options");
  return collcCategory;
}

CommandRegistration::CommandRegistration(cl::SubCommand &command, int (*run)(),
                                         llvm::StringRef usage) {
  registry().push_back({&command, run, usage.str()});
}

std::string collc::tools::plural(size_t n, llvm::StringRef word) {
  if (n == 1)
    return "1 " + word.str();
  if (word.endswith("y"))
    return std::to_string(n) + " " + word.drop_back().str() + "ies";
  return std::to_string(n) + " " + word.str() + "s";
}

collc::library::Frontend
collc::tools::frontendFor(collc::DiagnosticEngine &diags) {
  return collc::library::Frontend(diags,
                                  collc::library::defaultDirectory(argv0));
}

bool collc::tools::Selection::selects(const LoadedFile &file,
                                      const collc::ir::Schedule &s) const {
  return names.empty() || llvm::any_of(names, [&](const std::string &name) {
           return file.program.names(name, s);
         });
}

bool collc::tools::Selection::selects(llvm::StringRef name) const {
  return names.empty() || llvm::is_contained(names, name);
}

std::optional<Selection>
collc::tools::loadSelection(llvm::ArrayRef<std::string> files,
                            llvm::ArrayRef<std::string> names,
                            collc::DiagnosticEngine &diags) {
  Selection out;
  out.names = names.vec();
  llvm::StringSet<> known;
  collc::library::Frontend frontend = frontendFor(diags);
  for (const std::string &file : files) {
    LoadedFile l;
    l.path = file;
    llvm::Expected<collc::Program> program = frontend.load(file, &l.choices);
    if (!program) {
      llvm::consumeError(program.takeError());
      out.failed = true;
      continue;
    }
    l.program = std::move(*program);
    for (const collc::ir::Schedule &schedule : l.program.schedules)
      known.insert(schedule.name);
    for (const collc::CollectiveDef &c : l.program.collectives)
      if (!c.resolved.empty() || l.program.runsPattern(c))
        known.insert(c.name); // its schedules, or an alltoallv's pattern
    out.files.push_back(std::move(l));
  }
  // A name may be in a file that did not load: say nothing of it then.
  bool missing = false;
  for (const std::string &name : names)
    if (!known.contains(name) && !diags.hasErrors()) {
      diags.error("no schedule named '" + name + "'");
      missing = true;
    }
  if (missing)
    return std::nullopt;
  return out;
}

llvm::Expected<std::vector<const collc::ir::Schedule *>>
collc::tools::schedulesOf(const LoadedFile &file,
                          std::vector<collc::ir::Schedule> &patterns) {
  patterns.clear();
  for (const collc::CollectiveDef &c : file.program.collectives) {
    if (!file.program.runsPattern(c))
      continue;
    llvm::Expected<collc::ir::Schedule> s =
        collc::pipeline::patternScheduleOf(c);
    if (!s)
      return s.takeError();
    patterns.push_back(std::move(*s));
  }
  std::vector<const collc::ir::Schedule *> out;
  for (const collc::ir::Schedule &s : file.program.schedules)
    out.push_back(&s);
  for (const collc::ir::Schedule &s : patterns)
    out.push_back(&s);
  return out;
}

collc::tools::MemberOptions::MemberOptions(llvm::cl::SubCommand &command)
    : ranks("p",
            llvm::cl::desc("Number of ranks (of a family, the member of N "
                           "ranks that emitted code runs)"),
            llvm::cl::value_desc("N"), llvm::cl::init(0),
            llvm::cl::sub(command), llvm::cl::cat(category())),
      params("param",
             llvm::cl::desc("Value of a schedule parameter, e.g. d=4; with "
                            "--p, a range to find the member in, e.g. "
                            "a=1..4 (as compile's --param)"),
             llvm::cl::value_desc("NAME=V|LO..HI"), llvm::cl::sub(command),
             llvm::cl::cat(category())) {}

llvm::Expected<std::vector<int64_t>>
collc::tools::MemberOptions::choose(const collc::ir::Schedule &s) const {
  return chooseMember(s, ranks,
                      std::vector<std::string>(params.begin(), params.end()));
}

llvm::Expected<std::vector<int64_t>>
collc::tools::chooseMember(const collc::ir::Schedule &s, int64_t p,
                           llvm::ArrayRef<std::string> params) {
  llvm::Expected<std::vector<collc::ir::ParamRange>> parsed =
      parseParamOptions(params);
  if (!parsed)
    return parsed.takeError();
  const std::vector<collc::ir::ParamRange> &given = *parsed;
  // The first one given for a name, as compile takes it.
  auto givenFor =
      [&](const std::string &name) -> const collc::ir::ParamRange * {
    for (const collc::ir::ParamRange &r : given)
      if (r.name == name)
        return &r;
    return nullptr;
  };
  if (p > 0) {
    // `--p N`: the member of N ranks emitted code runs, searched within the
    // ranges --param narrows (compiled with the same --param, the code
    // searches the same); a shift family's amount is its one value.
    std::optional<int64_t> amount;
    if (const collc::ir::ExprRef &shiftOf = s.collective.shiftOf)
      if (const collc::ir::ParamRange *q = givenFor(shiftOf->name)) {
        if (q->lo != q->hi)
          return llvm::createStringError(
              llvm::inconvertibleErrorCode(),
              "the shift amount '%s' takes one value (--param %s=V)",
              q->name.c_str(), q->name.c_str());
        amount = q->lo;
      }
    return collc::cost::paramsForRanks(s, p, amount, given);
  }
  if (!given.empty()) {
    std::vector<int64_t> out;
    for (const collc::ir::Parameter &param : s.params) {
      const collc::ir::ParamRange *r = givenFor(param.name);
      if (!r)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "no value for parameter '%s'",
                                       param.name.c_str());
      if (r->lo != r->hi)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "--param %s=%lld..%lld is a range; give one value, or --p N for "
            "the member of N ranks within it",
            r->name.c_str(), static_cast<long long>(r->lo),
            static_cast<long long>(r->hi));
      out.push_back(r->lo);
    }
    return out;
  }
  if (hasFixedSize(s)) {
    std::vector<int64_t> out;
    for (const collc::ir::Parameter &q : s.params)
      out.push_back(q.range->first);
    return out;
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "'%s' is a family; give %s", s.name.c_str(),
                                 sizeOptions(s).c_str());
}

void collc::tools::reportFailure(collc::DiagnosticEngine &diags,
                                 llvm::Error error, llvm::StringRef verb,
                                 llvm::StringRef name, llvm::SMLoc loc) {
  std::string prefix = ("cannot " + verb + " '" + name + "': ").str();
  llvm::handleAllErrors(
      std::move(error),
      [&](const collc::ir::EvalFailure &f) {
        if (!f.loc.isValid() || f.loc == loc) {
          diags.error(loc, prefix + f.message);
          return;
        }
        diags.error(f.loc, prefix + f.message);
        diags.note(loc, "'" + name + "' is declared here");
      },
      [&](const llvm::ErrorInfoBase &e) {
        diags.error(loc, prefix + e.message());
      });
}

bool collc::tools::hasFixedSize(const collc::ir::Schedule &s) {
  return llvm::all_of(s.params, [](const collc::ir::Parameter &q) {
    return q.range && q.range->first == q.range->second;
  });
}

std::string collc::tools::sizeOptions(const collc::ir::Schedule &s) {
  std::string params, ranges;
  for (const collc::ir::Parameter &q : s.params) {
    params += (params.empty() ? "" : " ") + ("--param " + q.name) + "=V";
    if (q.range)
      ranges += (ranges.empty() ? "" : ", ") + q.name + " in " +
                std::to_string(q.range->first) + ".." +
                std::to_string(q.range->second);
  }
  return "--p N or " + params + (ranges.empty() ? "" : " (" + ranges + ")");
}

collc::tools::JsonDocument::JsonDocument(collc::DiagnosticEngine &diags,
                                         bool enabled)
    : diags(diags), enabled(enabled) {
  if (enabled)
    diags.keepRecords();
}

namespace {
/// A diagnostic as clang's JSON diagnostics write one.
llvm::json::Object toJson(const collc::DiagnosticEngine::Record &d) {
  llvm::json::Object o{{"severity", d.severity}, {"message", d.message}};
  if (d.line) {
    o["file"] = d.file;
    o["line"] = d.line;
    o["column"] = d.column;
  }
  if (d.severity != "note") {
    llvm::json::Array notes;
    for (const collc::DiagnosticEngine::Record &n : d.notes)
      notes.push_back(toJson(n));
    o["notes"] = std::move(notes);
  }
  return o;
}
} // namespace

collc::tools::JsonDocument::~JsonDocument() {
  if (!enabled)
    return;
  for (auto &[key, list] : lists)
    members[key] = std::move(list);
  llvm::json::Array diagnostics;
  for (const collc::DiagnosticEngine::Record &d : diags.takeRecords())
    diagnostics.push_back(toJson(d));
  members["diagnostics"] = std::move(diagnostics);
  llvm::outs() << llvm::formatv("{0:2}\n",
                                llvm::json::Value(std::move(members)));
}

llvm::json::Value
collc::tools::counterexampleJson(const collc::verify::Counterexample &c) {
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
  for (const collc::verify::TransferRef &t : c.transfers)
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

llvm::json::Object
collc::tools::reportJson(const collc::verify::ScheduleReport &report) {
  namespace verify = collc::verify;
  llvm::json::Array properties;
  for (const verify::PropertyResult &r : report.properties) {
    llvm::json::Object o{{"property", verify::propertyName(r.property)},
                         {"status", verify::statusName(r.status)},
                         {"method", r.method}};
    if (!r.detail.empty())
      o["detail"] = r.detail;
    if (r.property == verify::Property::Congestion)
      o["max_load"] = r.maxLoad;
    if (r.counterexample)
      o["counterexample"] = counterexampleJson(*r.counterexample);
    properties.push_back(std::move(o));
  }
  llvm::json::Array warnings;
  for (const verify::Counterexample &w : report.warnings)
    warnings.push_back(counterexampleJson(w));
  llvm::json::Object ranges;
  for (const verify::ParamRange &r : report.ranges)
    ranges[r.name] = llvm::json::Array{r.lo, r.hi};
  return llvm::json::Object{
      {"schedule", report.name},
      {"collective", report.collective},
      {"topology", report.topology},
      {"ports", report.ports == collc::PortModel::All ? "all" : "single"},
      {"ranges", std::move(ranges)},
      {"simulated", report.simulated},
      {"verdict", verify::statusName(report.verdict())},
      {"seconds", report.seconds},
      {"properties", std::move(properties)},
      {"warnings", std::move(warnings)}};
}

const char collc::tools::timeoutHelp[] =
    "Solver time limit per query in seconds, fractions allowed (default 60; "
    "0: no limit); a query that runs out is UNKNOWN";

std::optional<double>
collc::tools::timeoutOption(double seconds, collc::DiagnosticEngine &diags) {
  if (seconds < 0 || std::isnan(seconds)) {
    diags.error("--timeout needs a number of seconds, 0 or more (0: no "
                "limit), got " + llvm::formatv("{0}", seconds));
    return std::nullopt;
  }
  return seconds;
}

bool collc::tools::writeFile(llvm::StringRef path, llvm::StringRef text,
                             collc::DiagnosticEngine &diags) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec) {
    diags.error(llvm::SMLoc(),
                "cannot write '" + path.str() + "': " + ec.message());
    return false;
  }
  out << text;
  return true;
}

std::optional<std::pair<int64_t, int64_t>>
collc::tools::parseRange(llvm::StringRef text) {
  auto [lo, hi] = text.split("..");
  if (hi.empty() && !text.contains(".."))
    hi = lo;
  int64_t a, b;
  if (lo.trim().getAsInteger(10, a) || hi.trim().getAsInteger(10, b) || a > b)
    return std::nullopt;
  return std::make_pair(a, b);
}

std::optional<collc::ir::ParamRange>
collc::tools::parseNamedRange(llvm::StringRef text) {
  auto [name, range] = text.split('=');
  std::optional<std::pair<int64_t, int64_t>> r = parseRange(range);
  if (name.trim().empty() || !r)
    return std::nullopt;
  return collc::ir::ParamRange{name.trim().str(), r->first, r->second};
}

llvm::Expected<std::vector<collc::ir::ParamRange>>
collc::tools::parseParamOptions(llvm::ArrayRef<std::string> texts) {
  std::vector<collc::ir::ParamRange> ranges;
  for (const std::string &text : texts) {
    std::optional<collc::ir::ParamRange> r = parseNamedRange(text);
    if (!r)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--param needs NAME=V or NAME=LO..HI, "
                                     "got '%s'",
                                     text.c_str());
    ranges.push_back(std::move(*r));
  }
  return ranges;
}

bool collc::tools::ProvedQueriesFile::open(llvm::StringRef file,
                                           collc::DiagnosticEngine &diags) {
  // What the algorithm library proved when it was built (an installed
  // collc's PREFIX/share/collc/specs/library/proved-queries.txt): each
  // digest is a whole query's text, so a schedule, prover or topology that
  // differs asks Z3 again.
  llvm::SmallString<256> shipped(collc::library::defaultDirectory(argv0));
  llvm::sys::path::append(shipped, collc::library::provedQueriesFile);
  if (llvm::Error e = proved.load(shipped)) {
    diags.error(llvm::toString(std::move(e)));
    return false;
  }
  if (file.empty())
    return true;
  if (llvm::Error e = proved.load(file)) {
    diags.error(llvm::toString(std::move(e)));
    return false;
  }
  path = file.str();
  return true;
}

collc::tools::ProvedQueriesFile::~ProvedQueriesFile() {
  if (path.empty())
    return;
  if (llvm::Error e = proved.save(path))
    llvm::errs() << "collc: warning: the proved queries are not kept: "
                 << llvm::toString(std::move(e)) << "\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  argv0 = argv[0];
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "collc " << COLLC_VERSION
       << "\n  a formally checked schedule compiler for collective "
          "communication\n";
  });
  cl::HideUnrelatedOptions(category());
  std::string overview = "collc: compile .coll specifications of collective "
                         "communication into proved schedules\n\n";
  for (const Registered &r : registry())
    overview += "  " + r.usage + "\n";
  if (!cl::ParseCommandLineOptions(argc, argv, overview, &llvm::errs()))
    return ExitInputError;

  for (const Registered &r : registry())
    if (*r.command)
      return r.run();

  llvm::errs() << "collc: no subcommand given; try 'collc --help'\n";
  return ExitInputError;
}
