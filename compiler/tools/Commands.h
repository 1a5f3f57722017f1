#pragma once
// The subcommands of collc. Each lives in its own file (XCommand.cpp), with
// its options under its own cl::SubCommand, and registers itself here; the
// driver runs the one the command line selects. Adding a subcommand is
// adding a file.

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <cstddef>
#include <string>

namespace collc::tools {

/// Exit codes shared by every subcommand.
enum ExitCode {
  ExitOk = 0,
  ExitCounterexample = 1,
  ExitInputError = 2,
  ExitUnknown = 3,
};

/// The category every collc option belongs to (others are hidden).
llvm::cl::OptionCategory &category();

struct CommandRegistration {
  CommandRegistration(llvm::cl::SubCommand &command, int (*run)(),
                      llvm::StringRef usage);
};

/// "1 file", "3 topologies".
std::string plural(size_t n, llvm::StringRef word);

} // namespace collc::tools
