// collc calibrate: measure t_s and t_w of the MPI backend on this machine.
// A ping-pong over message sizes (bench/coll_bench --pingpong, pairs of
// ranks at once), or a ring of every rank passing messages on step after
// step (--pattern ring: what a step costs when N ranks share the machine),
// then a least-squares fit of t(m) = t_s + t_w·m (bench::calibrate). Writes
// a `model NAME = { ts: ..., tw: ... };` block for specs, `collc cost
// --model FILE` and `collc bench --model FILE`.

#include "harness/BenchSupport.h"
#include "tools/Commands.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <ctime>

using namespace collc;
using namespace collc::tools;
using namespace collc::tools::bench;
namespace cl = llvm::cl;

namespace {

cl::SubCommand calibrateCommand("calibrate",
                                "Measure t_s and t_w of the MPI backend "
                                "(ping-pong, least squares) and write a "
                                "model block");
cl::opt<int> calRanks("ranks",
                      cl::desc("Ranks to run (pairs ping-pong at once; "
                               "default 2)"),
                      cl::value_desc("N"), cl::init(2),
                      cl::sub(calibrateCommand), cl::cat(category()));
cl::opt<Pattern> calPattern(
    "pattern", cl::desc("How one message is timed"),
    cl::values(clEnumValN(Pattern::PingPong, "pingpong",
                          "pairs of ranks at once, half a round trip "
                          "(default)"),
               clEnumValN(Pattern::Ring, "ring",
                          "every rank sends to the next, step after step: a "
                          "step of a schedule on this many ranks"),
               clEnumValN(Pattern::Copy, "copy",
                          "every rank copies in memory at once: the "
                          "machine's copy bandwidth for this many ranks "
                          "(from 1)")),
    cl::init(Pattern::PingPong), cl::sub(calibrateCommand),
    cl::cat(category()));
cl::opt<std::string> calName("name", cl::desc("Model name (default measured)"),
                             cl::value_desc("NAME"), cl::init("measured"),
                             cl::sub(calibrateCommand), cl::cat(category()));
cl::opt<std::string> calOut("o", cl::desc("Write the model block to FILE"),
                            cl::value_desc("FILE"), cl::sub(calibrateCommand),
                            cl::cat(category()));
cl::opt<std::string> calBytes(
    "bytes",
    cl::desc("Message sizes in bytes (default 8 B to 16 MiB, powers of 2)"),
    cl::value_desc("B,..."), cl::sub(calibrateCommand), cl::cat(category()));
cl::opt<int> calIterations("iterations",
                           cl::desc("Round trips per size (default by size)"),
                           cl::value_desc("K"), cl::init(0),
                           cl::sub(calibrateCommand), cl::cat(category()));

bool validName(llvm::StringRef name) {
  if (name.empty() || !(std::isalpha(name[0]) || name[0] == '_'))
    return false;
  return llvm::all_of(name, [](char c) { return std::isalnum(c) || c == '_'; });
}

/// What a calibration measured and fitted, as `collc calibrate` prints it:
/// each size against the model, the segments' t_s and t_w, what the
/// ranks' machine showed, the residual, and the model block.
void printCalibration(llvm::raw_ostream &os, const Calibration &fit,
                      const char *patternName) {
  const CostModel &model = fit.model;
  const bool ring = calPattern == Pattern::Ring;
  const bool copy = calPattern == Pattern::Copy;

  os << "collc calibrate: " << patternName << " on " << calRanks << " ranks ("
     << fit.commandLine << ")";
  if (fit.oversubscribed)
    os << "\n  oversubscribed: " << calRanks << " ranks on " << cores()
       << " cores";
  os << (ring   ? "\n  each sample: one step of every rank sending to the "
                  "next and receiving from the one before, the slowest "
                  "rank's\n"
         : copy ? "\n  each sample: every rank copying m bytes in memory at "
                  "once, the slowest rank's\n"
                : "\n  each sample: half a round trip, the slowest pair's\n");
  os << strf("  %9s %6s %12s %12s %12s %8s\n", "m",
             ring   ? "rings"
             : copy ? "copies"
                    : "trips",
             "measured us", "[min..max]", "model us", "model/meas");
  for (const auto &[m, st] : fit.points) {
    const MessageCost seg = model.at(m);
    double predicted =
        (seg.ts + seg.twPerByte * m) * fit.messagesPerSample * 1e6;
    std::string spread = strf("%.1f..%.1f", st.min, st.max);
    os << strf("  %9s %6zu %12.3f %12s %12.3f %8.2f\n",
               formatBytes(static_cast<long long>(m)).c_str(), st.n, st.median,
               spread.c_str(), predicted, predicted / st.median);
  }
  const double perSample = fit.messagesPerSample;
  const std::vector<MessageCost> segments = model.segments();
  for (const MessageCost &seg : segments)
    os << strf("  fit%s: t_s = %.3f us, t_w = %.4f ns/byte (%.2f GB/s)\n",
               segments.size() == 1
                   ? ""
                   : (" from " + formatBytes(seg.fromBytes)).c_str(),
               seg.ts * perSample * 1e6, seg.twPerByte * perSample * 1e9,
               seg.twPerByte > 0 ? 1e-9 / (seg.twPerByte * perSample) : 0.0);
  if (!fit.clamped.empty())
    os << "  " << llvm::StringRef(fit.clamped).ltrim() << "\n";
  if (model.machine.cores > 0)
    os << strf("  a step of %d messages on %lld cores: one message costs a "
               "core t_s = %.3f us, t_w = %.4f ns/byte (the model's "
               "figures, with cores: %lld)\n",
               calRanks.getValue(), static_cast<long long>(model.machine.cores),
               model.ts * 1e6, model.twPerByte * 1e9,
               static_cast<long long>(model.machine.cores));
  if (fit.fanoutSteps > 0)
    os << strf("  rank 0 sending %s to the %d others at once: %.2f ring "
               "steps, so %s (copies: %s)\n",
               formatBytes(static_cast<long long>(fit.fanoutBytes)).c_str(),
               calRanks.getValue() - 1, fit.fanoutSteps,
               model.machine.copies == CopyModel::Receiver
                   ? "each receiver copies its own"
                   : "the sender's port moves them in turn",
               model.machine.copies == CopyModel::Receiver ? "receiver"
                                                           : "sender");
  if (model.machine.serve > 0)
    os << strf("  serving each receiver costs the sender's memory %.3f of "
               "a word (serve: the steps over %d)\n",
               model.machine.serve, calRanks.getValue() - 1);
  if (copy) {
    // The largest size's rate, not the fit's: small copies run in cache.
    const auto &[m, st] = fit.points.back();
    const double rate = 2 * m / (st.median * 1e-6) / 1e9;
    os << strf("  memory: %.1f GB/s a rank, %.1f GB/s for %d ranks together "
               "(at %s; bytes read and written: 2 m per copy)\n",
               rate, rate * calRanks, calRanks.getValue(),
               formatBytes(static_cast<long long>(m)).c_str());
  }
  os << strf("  residual: %.1f%% RMS relative error, %.1f%% worst "
             "(weighted least squares over %zu sizes, %zu segment%s)\n",
             fit.rms * 100, fit.worst * 100, fit.points.size(), segments.size(),
             segments.size() == 1 ? "" : "s");
  os << fit.block << "\n";
}

/// Writes the model block of `fit` to --output with its two comment lines,
/// keeping the file's other text and replacing a block calibrated before
/// under the same name.
llvm::Error writeModelBlock(const Calibration &fit, const char *patternName) {
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::string entry;
  llvm::raw_string_ostream e(entry);
  e << "# Measured by collc calibrate on " << date << ": " << patternName
    << " on " << calRanks << " ranks, " << fit.points.size() << " sizes "
    << formatBytes(static_cast<long long>(fit.points.front().first)) << " .. "
    << formatBytes(static_cast<long long>(fit.points.back().first)) << ".\n"
    << strf("# Residual of the fit: %.1f%% RMS relative, %.1f%% "
            "worst.\n",
            fit.rms * 100, fit.worst * 100)
    << fit.block << "\n";
  // An existing spec keeps its text; a block calibrated before under the
  // same name (with its two comment lines) is replaced, so the file stays
  // one that `collc cost FILE --model NAME` reads.
  std::string kept;
  if (llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> old =
          llvm::MemoryBuffer::getFile(calOut)) {
    llvm::SmallVector<llvm::StringRef, 64> lines;
    (*old)->getBuffer().split(lines, '\n');
    if (!lines.empty() && lines.back().empty())
      lines.pop_back();
    std::vector<std::string> out;
    const std::string self = "model " + calName.getValue();
    auto ours = [](llvm::StringRef line) {
      return line.startswith("# Measured by collc calibrate") ||
             line.startswith("# Residual of the fit");
    };
    for (llvm::StringRef line : lines) {
      if (line.startswith(self + " ") || line.startswith(self + "=")) {
        while (!out.empty() && ours(out.back()))
          out.pop_back();
        continue;
      }
      out.push_back(line.str());
    }
    for (const std::string &line : out)
      kept += line + "\n";
  }
  std::error_code ec;
  llvm::raw_fd_ostream file(calOut, ec);
  if (ec)
    return llvm::createStringError(ec, "cannot write '%s': %s", calOut.c_str(),
                                   ec.message().c_str());
  file << kept << e.str();
  llvm::outs() << (kept.empty() ? "wrote " : "updated ") << calOut << "\n";
  return llvm::Error::success();
}

int runCalibrate() {
  llvm::raw_ostream &errs = llvm::errs();
  const int fewest = calPattern == Pattern::Copy ? 1 : 2;
  if (calRanks < fewest || calRanks > 1024) {
    errs << "collc: error: --ranks must be in " << fewest << "..1024\n";
    return ExitInputError;
  }
  if (!validName(calName)) {
    errs << "collc: error: --name must be an identifier, got '" << calName
         << "'\n";
    return ExitInputError;
  }
  // Powers of two, so that each segment of the fit (at least three sizes)
  // spans a factor of four, and a change at 4 MiB can be followed.
  std::vector<long long> sizes;
  for (long long b = 8; b <= 16 << 20; b *= 2)
    sizes.push_back(b);
  if (!calBytes.empty()) {
    std::optional<std::vector<long long>> parsed = parseList(calBytes);
    if (!parsed || parsed->size() < 2) {
      errs << "collc: error: --bytes needs at least two positive sizes, "
              "comma-separated, got '"
           << calBytes << "'\n";
      return ExitInputError;
    }
    sizes = *parsed;
  }
  llvm::Expected<Calibration> fit =
      calibrate(calRanks, calPattern, sizes, calIterations, calName);
  if (!fit) {
    errs << "collc: error: " << llvm::toString(fit.takeError()) << "\n";
    return ExitInputError;
  }
  const char *patternName = calPattern == Pattern::Ring   ? "ring"
                            : calPattern == Pattern::Copy ? "copy"
                                                          : "ping-pong";
  printCalibration(llvm::outs(), *fit, patternName);
  if (!calOut.empty())
    if (llvm::Error e = writeModelBlock(*fit, patternName)) {
      errs << "collc: error: " << llvm::toString(std::move(e)) << "\n";
      return ExitInputError;
    }
  return ExitOk;
}

CommandRegistration registration(
    calibrateCommand, runCalibrate,
    "collc calibrate [--ranks 2] [-o FILE]   measure t_s, t_w: a model block");

} // namespace
