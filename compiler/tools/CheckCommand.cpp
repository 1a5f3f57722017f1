// collc check FILE...: parse and check specifications.

#include "tools/Commands.h"

#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace collc;
using namespace collc::tools;
namespace cl = llvm::cl;

namespace {

cl::SubCommand checkCommand("check",
                            "Parse and check .coll files; report every "
                            "mistake at its place");
cl::list<std::string> checkFiles(cl::Positional, cl::OneOrMore,
                                 cl::desc("<file.coll>..."),
                                 cl::sub(checkCommand), cl::cat(category()));
cl::opt<Format>
    checkFormat("format", cl::desc("Output format"),
                formatValues("a summary line",
                             "one JSON document: the counts, each "
                             "collective's schedules and the diagnostics"),
                cl::init(Format::Text), cl::sub(checkCommand),
                cl::cat(category()));

int runCheck() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), llvm::errs().has_colors());
  JsonDocument json(diags, checkFormat == Format::Json);
  llvm::json::Array resolutions;
  size_t topologies = 0, models = 0, collectives = 0, schedules = 0;
  library::Frontend frontend = frontendFor(diags);
  for (const std::string &file : checkFiles) {
    llvm::Expected<Program> program = frontend.load(file);
    if (!program) {
      llvm::consumeError(program.takeError()); // already reported
      continue;
    }
    topologies += program->topologies.size();
    models += program->models.size();
    collectives += program->collectives.size();
    // Declared schedules; those the collectives resolved to come after.
    schedules += program->schedules.size();
    for (const CollectiveDef &c : program->collectives) {
      schedules -= c.resolved.size();
      llvm::json::Array resolved;
      for (const CollectiveDef::Resolved &r : c.resolved)
        resolved.push_back(llvm::json::Object{{"schedule", r.schedule},
                                              {"from_bytes", r.fromBytes}});
      llvm::json::Object resolution{
          {"file", file}, {"name", c.name}, {"resolved", std::move(resolved)}};
      if (c.redistribution)
        resolution["redistribute"] =
            llvm::json::Object{{"from", c.redistribution->from.spelling()},
                               {"to", c.redistribution->to.spelling()}};
      resolutions.push_back(std::move(resolution));
    }
  }
  if (json) {
    json.members["files"] = static_cast<int64_t>(checkFiles.size());
    json.members["topologies"] = static_cast<int64_t>(topologies);
    json.members["models"] = static_cast<int64_t>(models);
    json.members["schedules"] = static_cast<int64_t>(schedules);
    json.members["collectives"] = std::move(resolutions);
  }
  if (diags.hasErrors()) {
    llvm::errs() << "collc: " << plural(diags.errorCount(), "error") << "\n";
    return ExitInputError;
  }
  if (json)
    return ExitOk;
  llvm::outs() << "collc: " << plural(checkFiles.size(), "file")
               << " checked: " << plural(topologies, "topology") << ", "
               << plural(models, "model") << ", "
               << plural(collectives, "collective") << ", "
               << plural(schedules, "schedule") << "; no errors\n";
  return ExitOk;
}

CommandRegistration registration(checkCommand, runCheck,
                                 "collc check FILE...    parse and check "
                                 "specifications");

} // namespace
