#pragma once
// What `collc bench` and `collc calibrate` share: finding and launching the
// MPI timing program (bench/coll_bench, built next to collc), the default
// model and a model's block as a file holds it, and summary statistics of
// timing samples.

#include "sema/Program.h"
#include "tools/ModelFile.h"

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
/// EXTRA_ENV (NAME=VALUE) is added to collc's environment for the run, in
/// place of any variable of that name or whose name starts with DROP_PREFIX.
llvm::Expected<Launch> launch(int ranks, llvm::ArrayRef<std::string> args,
                              llvm::ArrayRef<std::string> extraEnv = {},
                              llvm::StringRef dropPrefix = "");

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

/// The ratio of two timings taken in pairs (coll_bench times collc's call
/// and MPI's in the same iteration, interleaved): the median of the
/// per-pair ratios, with a distribution-free 95% confidence interval for
/// it (order statistics: the ranks n/2 ± 1.96·√n/2 of the sorted ratios;
/// with 5 pairs, the smallest and largest, 94%). Where a median misses the
/// target but the interval reaches it, the run cannot tell the two apart.
struct PairedRatio {
  double median = 0, low = 0, high = 0;
  size_t n = 0;
};
PairedRatio pairedRatio(llvm::ArrayRef<double> ours,
                        llvm::ArrayRef<double> theirs);

/// How `calibrate` times one message of m bytes.
enum class Pattern {
  PingPong, // pairs of ranks at once; half a round trip, the slowest pair's
  Ring,     // every rank sends to the next and receives from the one
            // before, step after step; one step, the slowest rank's
  Copy,     // every rank copies m bytes in memory at once, the slowest
            // rank's: the bound a large collective's copies cannot beat
};

/// t_s and t_w fitted to timings of coll_bench on `ranks` ranks.
struct Calibration {
  CostModel model;
  std::string block; // `model NAME = { ... };`, which reads back as `model`
  std::vector<std::pair<double, Stats>> points; // bytes, microseconds
  double rms = 0, worst = 0; // relative error of the model over the points
  std::string clamped;       // why a coefficient was set to 0, if one was
  // What one sample costs the model, in messages of t_s + m·t_w: 1, or for a
  // ring of more ranks than cores, ranks / cores (each step's messages run
  // on the cores in turn; the model says `cores` and per-message figures).
  double messagesPerSample = 1;
  std::string commandLine;
  bool oversubscribed = false;
  // A ring's calibration on a core per rank also times rank 0 sending its
  // largest size to every other rank at once: that time in ring steps
  // (about 1 where receivers copy, p - 1 where the sender's port does).
  double fanoutBytes = 0, fanoutSteps = 0;
};

/// One segment of a fitted model: t(m) = t_s + t_w·m from fromBytes up.
struct FittedSegment {
  int64_t fromBytes = 0;
  double tsUs = 0, twUs = 0; // microseconds, and microseconds a byte
  double sumSquares = 0;     // of the relative errors at its points
  std::string clamped;       // why a coefficient was set to 0, if one was
};

/// t(m) = t_s + t_w·m (000 §4.1.6's cost of one message with cut-through
/// routing) fitted to (bytes, time) points, ascending, by least squares
/// weighted by 1/t², so that small and large messages count alike. One
/// line cannot follow a machine across the eager limit and out of its
/// caches: the points are split into the fewest runs of consecutive sizes
/// (at most 4, each of at least 3 sizes) whose lines meet 10% RMS relative
/// error, or the runs that come closest; each run's line holds from its
/// first size (the first from 0).
std::vector<FittedSegment>
fitSegments(llvm::ArrayRef<std::pair<double, Stats>> points);

/// Runs coll_bench's PATTERN over `sizes` (at least two) on `ranks` ranks
/// and fits its model's segments to them (fitSegments).
llvm::Expected<Calibration> calibrate(int ranks, Pattern pattern,
                                      llvm::ArrayRef<long long> sizes,
                                      int iterations, llvm::StringRef name);

/// Comma-separated numbers as coll_bench prints them.
std::vector<double> parseSamples(llvm::StringRef text);

/// printf into a string.
std::string strf(const char *format, ...) __attribute__((format(printf, 1, 2)));

/// "8 B", "64 KiB", "16 MiB".
std::string formatBytes(long long bytes);

} // namespace collc::tools::bench
