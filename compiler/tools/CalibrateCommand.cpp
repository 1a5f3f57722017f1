// collc calibrate: measure t_s and t_w of the MPI backend on this machine.
// A ping-pong over message sizes (bench/coll_bench --pingpong, pairs of
// ranks at once), then a least-squares fit of t(m) = t_s + t_w·m (000
// §4.1.6's cost of one message with cut-through routing), weighted by 1/t²
// so that small and large messages count alike (the relative error is
// minimised). Writes a `model NAME = { ts: ..., tw: ... };` block for
// specs, `collc cost --model FILE` and `collc bench --model FILE`.

#include "tools/BenchSupport.h"
#include "tools/Commands.h"

#include "sema/Sema.h"
#include "support/Diagnostics.h"

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
cl::opt<std::string> calName("name", cl::desc("Model name (default measured)"),
                             cl::value_desc("NAME"), cl::init("measured"),
                             cl::sub(calibrateCommand), cl::cat(category()));
cl::opt<std::string> calOut("o", cl::desc("Write the model block to FILE"),
                            cl::value_desc("FILE"), cl::sub(calibrateCommand),
                            cl::cat(category()));
cl::opt<std::string> calBytes(
    "bytes",
    cl::desc("Message sizes in bytes (default 8 B to 16 MiB, powers of 4)"),
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

int runCalibrate() {
  llvm::raw_ostream &errs = llvm::errs();
  if (calRanks < 2 || calRanks > 1024) {
    errs << "collc: error: --ranks must be in 2..1024\n";
    return ExitInputError;
  }
  if (!validName(calName)) {
    errs << "collc: error: --name must be an identifier, got '" << calName
         << "'\n";
    return ExitInputError;
  }
  std::vector<long long> sizes = powersOfFour(16 << 20);
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
  std::string bytesArg;
  for (long long b : sizes)
    bytesArg += (bytesArg.empty() ? "" : ",") + std::to_string(b);
  std::vector<std::string> args = {"--pingpong", "--bytes", bytesArg};
  if (calIterations > 0) {
    args.push_back("--iterations");
    args.push_back(std::to_string(calIterations));
  }
  llvm::Expected<Launch> run = launch(calRanks, args);
  if (!run) {
    errs << "collc: error: " << llvm::toString(run.takeError()) << "\n";
    return ExitInputError;
  }
  if (run->exitCode != 0) {
    errs << run->err << "collc: error: " << run->commandLine << " failed (exit "
         << run->exitCode << ")\n";
    return ExitInputError;
  }

  // Median half round trip per size.
  std::vector<std::pair<double, Stats>> points; // (bytes, microseconds)
  llvm::SmallVector<llvm::StringRef, 32> lines;
  llvm::StringRef(run->out).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 3> f;
    line.split(f, '\t');
    long long bytes;
    if (f.size() == 3 && f[0] == "pingpong" && !f[1].getAsInteger(10, bytes))
      points.push_back({static_cast<double>(bytes),
                        summarize(parseSamples(f[2]))});
  }
  if (points.size() < 2) {
    errs << run->err << "collc: error: the ping-pong gave fewer than two "
                        "sizes\n";
    return ExitInputError;
  }

  // Weighted least squares: minimise sum ((ts + tw·m - t) / t)^2.
  double s00 = 0, s01 = 0, s11 = 0, b0 = 0, b1 = 0;
  for (const auto &[m, st] : points) {
    double t = st.median, w = 1 / (t * t);
    s00 += w;
    s01 += w * m;
    s11 += w * m * m;
    b0 += w * t;
    b1 += w * m * t;
  }
  double det = s00 * s11 - s01 * s01;
  double tsUs = (b0 * s11 - b1 * s01) / det;
  double twUs = (s00 * b1 - s01 * b0) / det;
  std::string clamped;
  // A negative coefficient is noise; refit the other alone.
  if (tsUs < 0) {
    tsUs = 0;
    twUs = b1 / s11;
    clamped = " (t_s fitted negative: set to 0, t_w refitted)";
  } else if (twUs < 0) {
    twUs = 0;
    tsUs = b0 / s00;
    clamped = " (t_w fitted negative: set to 0, t_s refitted)";
  }

  CostModel model;
  model.name = calName;
  model.ts = tsUs * 1e-6;
  model.twPerByte = twUs * 1e-6;
  std::string block = formatModelBlock(model);
  // The block must read back as the model it describes.
  {
    llvm::SourceMgr sourceMgr;
    DiagnosticEngine diags(sourceMgr, errs, false);
    llvm::Expected<Program> parsed = loadSource(
        llvm::MemoryBuffer::getMemBufferCopy(block, "<calibrated model>"),
        diags);
    if (!parsed || diags.hasErrors() || parsed->models.size() != 1) {
      if (!parsed)
        llvm::consumeError(parsed.takeError());
      errs << "collc: internal error: the model block does not parse: "
           << block << "\n";
      return ExitInputError;
    }
    model = parsed->models.front();
  }

  llvm::raw_ostream &os = llvm::outs();
  os << "collc calibrate: ping-pong on " << calRanks << " ranks ("
     << run->commandLine << ")";
  if (run->oversubscribed)
    os << "\n  --oversubscribe: " << calRanks << " ranks on " << cores()
       << " cores";
  os << "\n  each sample: half a round trip, the slowest pair's\n";
  os << strf("  %9s %6s %12s %12s %12s %8s\n", "m", "trips",
                     "measured us", "[min..max]", "model us", "model/meas");
  double sumSq = 0, worst = 0;
  for (const auto &[m, st] : points) {
    double predicted = (model.ts + model.twPerByte * m) * 1e6;
    double ratio = predicted / st.median;
    sumSq += (ratio - 1) * (ratio - 1);
    worst = std::max(worst, std::fabs(ratio - 1));
    std::string spread =
        strf("%.1f..%.1f", st.min, st.max);
    os << strf("  %9s %6zu %12.3f %12s %12.3f %8.2f\n",
                       formatBytes(static_cast<long long>(m)).c_str(), st.n,
                       st.median, spread.c_str(), predicted, ratio);
  }
  double rms = std::sqrt(sumSq / points.size());
  os << strf("  fit: t_s = %.3f us, t_w = %.4f ns/byte (%.2f GB/s)%s\n",
                     model.ts * 1e6, model.twPerByte * 1e9,
                     model.twPerByte > 0 ? 1e-9 / model.twPerByte : 0.0,
                     clamped.c_str());
  os << strf("  residual: %.1f%% RMS relative error, %.1f%% worst "
                     "(weighted least squares over %zu sizes)\n",
                     rms * 100, worst * 100, points.size());
  os << block << "\n";

  if (!calOut.empty()) {
    std::time_t now = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    std::string entry;
    llvm::raw_string_ostream e(entry);
    e << "# Measured by collc calibrate on " << date << ": ping-pong on "
      << calRanks << " ranks, " << points.size() << " sizes "
      << formatBytes(static_cast<long long>(points.front().first)) << " .. "
      << formatBytes(static_cast<long long>(points.back().first)) << ".\n"
      << strf("# Residual of the fit: %.1f%% RMS relative, %.1f%% "
                      "worst.\n",
                      rms * 100, worst * 100)
      << block << "\n";
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
    if (ec) {
      errs << "collc: error: cannot write '" << calOut << "': " << ec.message()
           << "\n";
      return ExitInputError;
    }
    file << kept << e.str();
    os << (kept.empty() ? "wrote " : "updated ") << calOut << "\n";
  }
  return ExitOk;
}

CommandRegistration registration(
    calibrateCommand, runCalibrate,
    "collc calibrate [--ranks 2] [-o FILE]   measure t_s, t_w: a model block");

} // namespace
