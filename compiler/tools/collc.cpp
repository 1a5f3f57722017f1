// collc: the command-line driver. Every subcommand follows one pattern:
//   collc <subcommand> FILE... [options]
// and exits 0 on success, 2 on input errors (after printing them with their
// place in the source).

#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace collc;
namespace cl = llvm::cl;

#ifndef COLLC_VERSION
#define COLLC_VERSION "0.0.0"
#endif

namespace {

enum ExitCode {
  ExitOk = 0,
  ExitCounterexample = 1,
  ExitInputError = 2,
  ExitUnknown = 3,
};

cl::OptionCategory collcCategory("collc options");

cl::SubCommand checkCommand("check",
                            "Parse and check .coll files; report every "
                            "mistake at its place");
cl::list<std::string> checkFiles(cl::Positional, cl::OneOrMore,
                                 cl::desc("<file.coll>..."),
                                 cl::sub(checkCommand), cl::cat(collcCategory));


std::string plural(size_t n, llvm::StringRef word) {
  if (n == 1)
    return "1 " + word.str();
  if (word.endswith("y"))
    return std::to_string(n) + " " + word.drop_back().str() + "ies";
  return std::to_string(n) + " " + word.str() + "s";
}

int runCheck() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), llvm::errs().has_colors());
  size_t topologies = 0, models = 0, collectives = 0, schedules = 0;
  for (const std::string &file : checkFiles) {
    llvm::Expected<Program> program = loadProgram(file, diags);
    if (!program) {
      llvm::consumeError(program.takeError()); // already reported
      continue;
    }
    topologies += program->topologies.size();
    models += program->models.size();
    collectives += program->collectives.size();
    schedules += program->schedules.size();
  }
  if (diags.hasErrors()) {
    llvm::errs() << "collc: " << plural(diags.errorCount(), "error") << "\n";
    return ExitInputError;
  }
  llvm::outs() << "collc: " << plural(checkFiles.size(), "file")
               << " checked: " << plural(topologies, "topology") << ", "
               << plural(models, "model") << ", "
               << plural(collectives, "collective") << ", "
               << plural(schedules, "schedule") << "; no errors\n";
  return ExitOk;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "collc " << COLLC_VERSION
       << "\n  a formally checked schedule compiler for collective "
          "communication\n";
  });
  cl::HideUnrelatedOptions(collcCategory);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "collc: compile .coll specifications of collective communication "
          "into proved schedules\n\n"
          "  collc check FILE...   parse and check specifications\n",
          &llvm::errs()))
    return ExitInputError;

  if (checkCommand)
    return runCheck();

  llvm::errs() << "collc: no subcommand given; try 'collc --help'\n";
  return ExitInputError;
}
