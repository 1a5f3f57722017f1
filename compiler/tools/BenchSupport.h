#pragma once
// What `collc bench` and `collc calibrate` share: finding and launching the
// MPI timing program (bench/coll_bench, built next to collc), cost models
// from files, and summary statistics of timing samples.

#include "sema/Program.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace collc::tools::bench {

/// The result of one mpirun.
struct Launch {
  int exitCode = 0;
  std::string out, err;
  std::string commandLine; // as a person would type it
  bool oversubscribed = false;
};

/// Cores this machine offers (at least 1).
unsigned cores();

/// Runs `mpirun -np RANKS coll_bench ARGS...`, oversubscribed (and saying
/// so) when RANKS exceeds the cores. coll_bench is $COLLC_BENCH_PROGRAM, or
/// bench/coll_bench beside the collc executable; mpirun is $COLLC_MPIEXEC or
/// the first mpirun/mpiexec on PATH.
/// EXTRA_ENV (NAME=VALUE) is added to collc's environment for the run.
llvm::Expected<Launch> launch(int ranks, llvm::ArrayRef<std::string> args,
                              llvm::ArrayRef<std::string> extraEnv = {});

/// A cost model from `FILE` (its only or first model) or `FILE:NAME`.
/// Errors in the file are printed with their place, as `collc check` does.
llvm::Expected<CostModel> loadModel(llvm::StringRef spec);

/// The model used when none is given; stated in the output as not measured.
CostModel defaultModel();

/// "12us", "85.3ps/byte": the model language's quantities, exact enough to
/// round-trip a fitted value.
std::string formatModelBlock(const CostModel &model);

/// `8,64,4096`; each a positive integer. Nothing when malformed.
std::optional<std::vector<long long>> parseList(llvm::StringRef text);

/// 8, 32, 128, ... (powers of 4 from 8) up to `maxBytes`, then maxBytes
/// itself (the range ends at 16 MiB, which is not 8·4^k).
std::vector<long long> powersOfFour(long long maxBytes);

struct Stats {
  double median = 0, min = 0, max = 0, q1 = 0, q3 = 0;
  size_t n = 0;
};
Stats summarize(std::vector<double> samples);

/// Comma-separated numbers as coll_bench prints them.
std::vector<double> parseSamples(llvm::StringRef text);

/// printf into a string.
std::string strf(const char *format, ...) __attribute__((format(printf, 1, 2)));

/// "8 B", "64 KiB", "16 MiB".
std::string formatBytes(long long bytes);

} // namespace collc::tools::bench
