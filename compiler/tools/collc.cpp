// collc: the command-line driver. Every subcommand follows one pattern:
//   collc <subcommand> FILE... [options]
// and exits 0 on success, 1 on a counterexample, 2 on input errors (printed
// with their place in the source), 3 when the solver could not decide.

#include "tools/Commands.h"

#include "cost/Cost.h"
#include "library/Compose.h"
#include "library/Library.h"
#include "sema/Sema.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

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

llvm::Expected<collc::Program> collc::tools::loadResolved(
    llvm::StringRef path, collc::DiagnosticEngine &diags,
    std::vector<std::pair<std::string, std::vector<collc::library::Choice>>>
        *choices) {
  llvm::Expected<collc::Program> program = collc::loadProgram(path, diags);
  if (!program || diags.hasErrors())
    return program;
  bool composes = llvm::any_of(program->schedules, [](const auto &s) {
    return !s.parts.empty();
  });
  if (program->collectives.empty() && !composes)
    return program;
  // The library's sources join the SourceMgr, so counterexamples in its
  // schedules point into them; one copy per SourceMgr.
  static std::map<const llvm::SourceMgr *, collc::library::Library> loaded;
  auto it = loaded.find(&diags.getSourceMgr());
  if (it == loaded.end()) {
    llvm::Expected<collc::library::Library> lib = collc::library::load(
        collc::library::defaultDirectory(argv0), diags);
    if (!lib) {
      diags.error(llvm::toString(lib.takeError()));
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "no algorithm library");
    }
    it = loaded.emplace(&diags.getSourceMgr(), std::move(*lib)).first;
  }
  const collc::library::Library &library = it->second;
  if (composes &&
      !collc::library::composeAll(
          *program, [&](llvm::StringRef name) { return library.find(name); },
          diags))
    return program;
  collc::library::resolveAll(*program, library, diags, choices);
  return program;
}

llvm::Expected<std::vector<int64_t>>
collc::tools::chooseMember(const collc::ir::Schedule &s, int64_t p,
                           llvm::ArrayRef<std::string> params) {
  // `--p N --param q=V`: the size's member shifting by V.
  const collc::ir::ExprRef &shiftOf = s.collective.shiftOf;
  if (p > 0 && shiftOf && params.size() == 1) {
    auto [name, value] = llvm::StringRef(params[0]).split('=');
    int64_t amount;
    if (name.trim() == shiftOf->name && !value.trim().getAsInteger(10, amount))
      return collc::cost::paramsForRanks(s, p, amount);
  }
  if (!params.empty()) {
    std::vector<std::optional<int64_t>> values(s.params.size());
    for (const std::string &text : params) {
      auto [name, value] = llvm::StringRef(text).split('=');
      int64_t v;
      if (value.trim().getAsInteger(10, v))
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "--param needs NAME=V, got '%s'",
                                       text.c_str());
      for (size_t i = 0; i < s.params.size(); ++i)
        if (s.params[i].name == name.trim())
          values[i] = v;
    }
    std::vector<int64_t> out;
    for (size_t i = 0; i < s.params.size(); ++i) {
      if (!values[i])
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "no value for parameter '%s'",
                                       s.params[i].name.c_str());
      out.push_back(*values[i]);
    }
    return out;
  }
  if (p > 0)
    return collc::cost::paramsForRanks(s, p);
  if (llvm::all_of(s.params, [](const collc::ir::Parameter &q) {
        return q.range && q.range->first == q.range->second;
      })) {
    std::vector<int64_t> out;
    for (const collc::ir::Parameter &q : s.params)
      out.push_back(q.range->first);
    return out;
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "'%s' is a family; give --p N or --param",
                                 s.name.c_str());
}

bool collc::tools::writeFile(llvm::StringRef path, llvm::StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec) {
    llvm::errs() << "collc: error: cannot write '" << path
                 << "': " << ec.message() << "\n";
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

std::optional<collc::verify::ParamRange>
collc::tools::parseParamOption(llvm::StringRef text) {
  auto [name, range] = text.split('=');
  std::optional<std::pair<int64_t, int64_t>> r = parseRange(range);
  if (name.trim().empty() || !r) {
    llvm::errs() << "collc: error: --param needs NAME=LO..HI or NAME=V, got '"
                 << text << "'\n";
    return std::nullopt;
  }
  return collc::verify::ParamRange{name.trim().str(), r->first, r->second};
}

bool collc::tools::ProvedQueriesFile::open(llvm::StringRef file) {
  if (file.empty())
    return true;
  if (llvm::Error e = proved.load(file)) {
    llvm::errs() << "collc: error: " << llvm::toString(std::move(e)) << "\n";
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
