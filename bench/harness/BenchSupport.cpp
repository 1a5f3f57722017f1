#include "harness/BenchSupport.h"

#include "library/Library.h"

#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <thread>

extern char **environ;

using namespace collc;
using namespace collc::tools::bench;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str().c_str());
}

// Anchors getMainExecutable's lookup of collc's own path.
int anchor;

llvm::Expected<std::string> benchProgram() {
  if (const char *env = std::getenv("COLLC_BENCH_PROGRAM"))
    return std::string(env);
  // BUILD/collc and BUILD/bench/coll_bench, or PREFIX/bin/collc and
  // PREFIX/libexec/collc/coll_bench.
  std::string self = llvm::sys::fs::getMainExecutable("collc", &anchor);
  llvm::StringRef dir = llvm::sys::path::parent_path(self);
  llvm::SmallString<256> built(dir), installed(dir);
  llvm::sys::path::append(built, "bench", "coll_bench");
  llvm::sys::path::append(installed, "..", "libexec", "collc", "coll_bench");
  for (const llvm::SmallString<256> &path : {built, installed})
    if (llvm::sys::fs::can_execute(path))
      return std::string(path.str());
  return error("no timing program at " + built.str() + " or " +
               installed.str() +
               "; build it with `cmake --build BUILD --target coll_bench` "
               "(or set COLLC_BENCH_PROGRAM)");
}

llvm::Expected<std::string> mpiexec() {
  if (const char *env = std::getenv("COLLC_MPIEXEC"))
    return std::string(env);
  for (const char *name : {"mpirun", "mpiexec"})
    if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(name))
      return *path;
  return error("no mpirun or mpiexec on PATH (set COLLC_MPIEXEC)");
}

std::string readAll(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

} // namespace

unsigned collc::tools::bench::cores() {
  return std::max(1u, std::thread::hardware_concurrency());
}

llvm::Expected<Launch>
collc::tools::bench::launch(int ranks, llvm::ArrayRef<std::string> args,
                            llvm::ArrayRef<std::string> extraEnv,
                            llvm::StringRef dropPrefix) {
  llvm::Expected<std::string> program = benchProgram();
  if (!program)
    return program.takeError();
  llvm::Expected<std::string> runner = mpiexec();
  if (!runner)
    return runner.takeError();
  Launch result;
  result.oversubscribed = static_cast<unsigned>(ranks) > cores();
  std::vector<std::string> argv = {*runner, "-np", std::to_string(ranks)};
  argv.push_back(*program);
  argv.insert(argv.end(), args.begin(), args.end());
  for (llvm::ArrayRef<std::string> part : {extraEnv, llvm::ArrayRef(argv)})
    for (const std::string &a : part)
      result.commandLine += (result.commandLine.empty() ? "" : " ") + a;

  // Open MPI refuses root without these; other MPIs ignore them.
  // The extra settings replace any the environment has under their names.
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e) {
    llvm::StringRef name = llvm::StringRef(*e).split('=').first;
    if ((dropPrefix.empty() || !name.startswith(dropPrefix)) &&
        llvm::none_of(extraEnv, [&](const std::string &x) {
          return name == llvm::StringRef(x).split('=').first;
        }))
      env.emplace_back(*e);
  }
  env.push_back("OMPI_ALLOW_RUN_AS_ROOT=1");
  env.push_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  // More ranks than cores: Open MPI refuses them without this (as an
  // environment setting, which MPICH's launcher ignores, where it would
  // reject Open MPI's --oversubscribe).
  if (result.oversubscribed)
    env.push_back("OMPI_MCA_rmaps_base_oversubscribe=1");
  env.insert(env.end(), extraEnv.begin(), extraEnv.end());
  std::vector<llvm::StringRef> envRefs(env.begin(), env.end());
  std::vector<llvm::StringRef> argRefs(argv.begin(), argv.end());

  llvm::SmallString<128> outPath, errPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("collc-bench", "out", outPath))
    return error("cannot create a temporary file: " + ec.message());
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("collc-bench", "err", errPath))
    return error("cannot create a temporary file: " + ec.message());
  // stdin from /dev/null (the empty path), stdout and stderr to files.
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::StringRef(""),
                                                 outPath.str(), errPath.str()};
  std::string message;
  bool failed = false;
  // An hour at most: a run never hangs collc.
  result.exitCode = llvm::sys::ExecuteAndWait(
      *runner, argRefs, llvm::ArrayRef<llvm::StringRef>(envRefs), redirects,
      3600, 0, &message, &failed);
  result.out = readAll(outPath);
  result.err = readAll(errPath);
  llvm::sys::fs::remove(outPath);
  llvm::sys::fs::remove(errPath);
  if (failed)
    return error("cannot run " + *runner + ": " + message);
  if (result.exitCode < 0)
    return error(result.commandLine + ": " +
                 (message.empty() ? "timed out or crashed" : message) + "\n" +
                 result.err);
  return result;
}

CostModel collc::tools::bench::defaultModel() {
  // The same guess `using auto` prices with when a spec declares no model.
  return library::defaultModel();
}

std::string collc::tools::bench::formatModelBlock(const CostModel &model) {
  char text[256];
  std::snprintf(text, sizeof text,
                "model %s = { ts: %.1fns, tw: %.3fps/byte, ports: %s",
                model.name.c_str(), model.ts * 1e9, model.twPerByte * 1e12,
                model.ports == PortModel::All ? "all" : "single");
  std::string block = text;
  if (model.machine.cores > 0)
    block += ", cores: " + std::to_string(model.machine.cores);
  if (model.machine.copies == CopyModel::Receiver)
    block += ", copies: receiver";
  if (model.machine.serve > 0)
    block += strf(", serve: %.3f", model.machine.serve);
  if (model.to)
    block += strf(", to: %.1fns", *model.to * 1e9);
  for (const MessageCost &seg : model.larger) {
    long long size = seg.fromBytes;
    const char *unit = "B";
    for (const char *larger : {"KiB", "MiB", "GiB"})
      if (size % 1024 == 0)
        size /= 1024, unit = larger;
    block += strf(", segment: %lld%s, ts: %.1fns, tw: %.3fps/byte", size, unit,
                  seg.ts * 1e9, seg.twPerByte * 1e12);
  }
  return block + " };";
}

std::optional<std::vector<long long>>
collc::tools::bench::parseList(llvm::StringRef text) {
  std::vector<long long> out;
  llvm::SmallVector<llvm::StringRef, 16> parts;
  text.split(parts, ',');
  for (llvm::StringRef part : parts) {
    long long v;
    if (part.trim().getAsInteger(10, v) || v <= 0)
      return std::nullopt;
    out.push_back(v);
  }
  if (out.empty())
    return std::nullopt;
  return out;
}

std::vector<long long> collc::tools::bench::powersOfFour(long long maxBytes) {
  std::vector<long long> out;
  for (long long b = 8; b <= maxBytes; b *= 4)
    out.push_back(b);
  if (out.empty() || out.back() != maxBytes)
    out.push_back(maxBytes); // 16 MiB is not 8·4^k: the range ends there
  return out;
}

Stats collc::tools::bench::summarize(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  // Linear interpolation between order statistics.
  auto quantile = [&](double q) {
    double pos = q * (v.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (pos - lo) * (v[hi] - v[lo]);
  };
  s.min = v.front();
  s.max = v.back();
  s.median = quantile(0.5);
  s.q1 = quantile(0.25);
  s.q3 = quantile(0.75);
  return s;
}

collc::tools::bench::PairedRatio
collc::tools::bench::pairedRatio(llvm::ArrayRef<double> ours,
                                 llvm::ArrayRef<double> theirs) {
  std::vector<double> ratios;
  for (size_t i = 0; i < ours.size() && i < theirs.size(); ++i)
    if (theirs[i] > 0)
      ratios.push_back(ours[i] / theirs[i]);
  PairedRatio r;
  r.n = ratios.size();
  if (ratios.empty())
    return r;
  std::sort(ratios.begin(), ratios.end());
  r.median = summarize(ratios).median;
  // 1-based ranks of the interval's ends, clamped to the samples.
  const double n = static_cast<double>(ratios.size());
  const double half = 1.96 * std::sqrt(n) / 2;
  const long lo = std::max(1l, static_cast<long>(std::floor(n / 2 - half)));
  const long hi = std::min(static_cast<long>(n),
                           static_cast<long>(std::ceil(n / 2 + 1 + half)));
  r.low = ratios[static_cast<size_t>(lo - 1)];
  r.high = ratios[static_cast<size_t>(hi - 1)];
  return r;
}

std::vector<double> collc::tools::bench::parseSamples(llvm::StringRef text) {
  std::vector<double> out;
  llvm::SmallVector<llvm::StringRef, 64> parts;
  text.split(parts, ',', -1, false);
  for (llvm::StringRef part : parts)
    out.push_back(std::strtod(part.str().c_str(), nullptr));
  return out;
}

std::string collc::tools::bench::formatBytes(long long bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0)
    return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string collc::tools::bench::strf(const char *format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0)
    std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

namespace {
/// One line t_s + t_w·m through points, by least squares weighted by 1/t²
/// (the relative error is minimised).
FittedSegment fitLine(llvm::ArrayRef<std::pair<double, Stats>> points) {
  double s00 = 0, s01 = 0, s11 = 0, b0 = 0, b1 = 0;
  for (const auto &[m, st] : points) {
    double t = st.median, w = 1 / (t * t);
    s00 += w;
    s01 += w * m;
    s11 += w * m * m;
    b0 += w * t;
    b1 += w * m * t;
  }
  FittedSegment f;
  f.fromBytes = static_cast<int64_t>(points.front().first);
  double det = s00 * s11 - s01 * s01;
  f.tsUs = (b0 * s11 - b1 * s01) / det;
  f.twUs = (s00 * b1 - s01 * b0) / det;
  // A negative coefficient is noise; refit the other alone.
  if (f.tsUs < 0 || !std::isfinite(f.tsUs)) {
    f.tsUs = 0;
    f.twUs = b1 / s11;
    f.clamped = strf(" (t_s from %s fitted negative: set to 0, t_w refitted)",
                     formatBytes(f.fromBytes).c_str());
  } else if (f.twUs < 0 || !std::isfinite(f.twUs)) {
    f.twUs = 0;
    f.tsUs = b0 / s00;
    f.clamped = strf(" (t_w from %s fitted negative: set to 0, t_s refitted)",
                     formatBytes(f.fromBytes).c_str());
  }
  for (const auto &[m, st] : points) {
    double ratio = (f.tsUs + f.twUs * m) / st.median;
    f.sumSquares += (ratio - 1) * (ratio - 1);
  }
  return f;
}
} // namespace

std::vector<FittedSegment> collc::tools::bench::fitSegments(
    llvm::ArrayRef<std::pair<double, Stats>> points) {
  // Every split of the sizes into k runs of at least minPoints, for k = 1,
  // 2, ...: the first k whose best split meets the target, else the best
  // of all. Exhaustive: a calibration has a few dozen sizes at most.
  constexpr size_t minPoints = 3, maxSegments = 4;
  constexpr double targetRms = 0.10;
  const size_t n = points.size();
  std::vector<FittedSegment> best;
  double bestRms = 0;
  for (size_t k = 1; k <= maxSegments && (k == 1 || k * minPoints <= n); ++k) {
    std::vector<FittedSegment> bestOfK;
    double bestOfKSum = 0;
    std::vector<size_t> starts(k, 0);
    // starts[i]: the first point of segment i; recursively enumerated.
    auto visit = [&](auto &&self, size_t i) -> void {
      if (i == k) {
        std::vector<FittedSegment> fit;
        double sum = 0;
        for (size_t j = 0; j < k; ++j) {
          size_t end = j + 1 < k ? starts[j + 1] : n;
          fit.push_back(fitLine(points.slice(starts[j], end - starts[j])));
          sum += fit.back().sumSquares;
        }
        if (bestOfK.empty() || sum < bestOfKSum)
          bestOfK = std::move(fit), bestOfKSum = sum;
        return;
      }
      for (size_t s = starts[i - 1] + minPoints; s + (k - i) * minPoints <= n;
           ++s) {
        starts[i] = s;
        self(self, i + 1);
      }
    };
    visit(visit, 1);
    const double rms = std::sqrt(bestOfKSum / n);
    if (best.empty() || rms < bestRms * 0.999)
      best = std::move(bestOfK), bestRms = rms;
    if (bestRms <= targetRms)
      break;
  }
  best.front().fromBytes = 0;
  return best;
}

namespace {
using Points = std::vector<std::pair<double, Stats>>;

const char *patternFlag(Pattern pattern) {
  return pattern == Pattern::Ring   ? "ring"
         : pattern == Pattern::Copy ? "copy"
                                    : "pingpong";
}

std::string joinSizes(llvm::ArrayRef<long long> sizes) {
  std::string bytesArg;
  for (long long b : sizes)
    bytesArg += (bytesArg.empty() ? "" : ",") + std::to_string(b);
  return bytesArg;
}

/// coll_bench's `PATTERN\tBYTES\tSAMPLES` lines, summarised per size.
Points parsePoints(llvm::StringRef out, const char *pattern) {
  Points points;
  llvm::SmallVector<llvm::StringRef, 32> lines;
  out.split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 3> f;
    line.split(f, '\t');
    long long n;
    if (f.size() == 3 && f[0] == pattern && !f[1].getAsInteger(10, n))
      points.push_back({static_cast<double>(n), summarize(parseSamples(f[2]))});
  }
  return points;
}

// coll_bench's samples of one pattern, summarised per size.
llvm::Expected<std::pair<Launch, Points>> measure(int ranks, int iterations,
                                                  const char *pattern,
                                                  const std::string &bytes) {
  std::vector<std::string> args = {std::string("--") + pattern, "--bytes",
                                   bytes};
  if (iterations > 0) {
    args.push_back("--iterations");
    args.push_back(std::to_string(iterations));
  }
  llvm::Expected<Launch> run = launch(ranks, args);
  if (!run)
    return run.takeError();
  if (run->exitCode != 0)
    return error(run->err + run->commandLine + " failed (exit " +
                 std::to_string(run->exitCode) + ")");
  Points points = parsePoints(run->out, pattern);
  return std::make_pair(std::move(*run), std::move(points));
}

/// Times rank 0 sending the ring's largest size to every other rank at once,
/// in ring steps, and sets the copy model that implies.
llvm::Error measureFanout(int ranks, int iterations, Calibration &c,
                          CostModel &model) {
  const auto &[m, ringStep] = *std::max_element(
      c.points.begin(), c.points.end(),
      [](const auto &a, const auto &b) { return a.first < b.first; });
  if (m >= 256 * 1024) {
    auto fanout = measure(ranks, iterations, "fanout",
                          std::to_string(static_cast<long long>(m)));
    if (!fanout)
      return fanout.takeError();
    if (fanout->second.empty())
      return error(fanout->first.err + "the fanout gave no sample");
    c.fanoutBytes = m;
    c.fanoutSteps = fanout->second.front().second.median / ringStep.median;
    if (c.fanoutSteps < (ranks - 1) / 2.0) {
      model.machine.copies = CopyModel::Receiver;
      model.machine.serve = std::min(1.0, c.fanoutSteps / (ranks - 1));
    }
  }
  return llvm::Error::success();
}

/// The fitted segments as the model's costs of one message.
void setSegmentCosts(CostModel &model, llvm::ArrayRef<FittedSegment> segments,
                     double messagesPerSample) {
  for (size_t i = 0; i < segments.size(); ++i) {
    const MessageCost cost{segments[i].fromBytes,
                           segments[i].tsUs * 1e-6 / messagesPerSample,
                           segments[i].twUs * 1e-6 / messagesPerSample};
    if (i == 0)
      model.ts = cost.ts, model.twPerByte = cost.twPerByte;
    else
      model.larger.push_back(cost);
  }
}

// The block must read back as the model it describes.
llvm::Expected<CostModel> readBackModel(const std::string &block) {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), false);
  llvm::Expected<Program> parsed = loadSource(
      llvm::MemoryBuffer::getMemBufferCopy(block, "<calibrated model>"), diags);
  if (!parsed)
    return parsed.takeError();
  if (diags.hasErrors() || parsed->models.size() != 1)
    return error("internal error: the model block does not parse: " + block);
  return parsed->models.front();
}

/// The model's relative error over the measured points: c.rms and c.worst.
void rateFit(Calibration &c) {
  double sumSq = 0;
  for (const auto &[m, st] : c.points) {
    const MessageCost seg = c.model.at(m);
    double ratio =
        (seg.ts + seg.twPerByte * m) * c.messagesPerSample * 1e6 / st.median;
    sumSq += (ratio - 1) * (ratio - 1);
    c.worst = std::max(c.worst, std::fabs(ratio - 1));
  }
  c.rms = std::sqrt(sumSq / c.points.size());
}
} // namespace

llvm::Expected<Calibration>
collc::tools::bench::calibrate(int ranks, Pattern pattern,
                               llvm::ArrayRef<long long> sizes, int iterations,
                               llvm::StringRef name) {
  const char *flag = patternFlag(pattern);
  auto measured = measure(ranks, iterations, flag, joinSizes(sizes));
  if (!measured)
    return measured.takeError();
  Launch &run = measured->first;
  Calibration c;
  c.commandLine = run.commandLine;
  c.oversubscribed = run.oversubscribed;
  c.points = std::move(measured->second);
  if (c.points.size() < 2)
    return error(run.err + "the " + flag + " gave fewer than two sizes");

  llvm::sort(c.points,
             [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<FittedSegment> segments = fitSegments(c.points);
  for (const FittedSegment &seg : segments)
    c.clamped += seg.clamped;
  CostModel model;
  model.name = name.str();
  // A ring step of more ranks than cores is `ranks` messages run on the
  // cores in turn (cost::ScheduleCost::line): the model keeps what one
  // message costs a core, and says how many cores there are.
  if (pattern == Pattern::Ring && static_cast<unsigned>(ranks) > cores()) {
    model.machine.cores = cores();
    c.messagesPerSample = static_cast<double>(ranks) / cores();
  }
  // Who copies a large message: rank 0 sending it to every other rank at
  // once, against a ring's step of the same size. About one step: each
  // receiver copies its own (single copy on shared memory), and the steps
  // over p - 1 are what serving each costs the sender's memory (`serve`);
  // p - 1: the sender's port moves them in turn. Only with a core per
  // rank, where a step is not the cores' turns. (t_o is left to t_s: a
  // small fan-out by MPI alone, 0.13 us a message on 16 cores, made
  // `using auto` take stars the runtime runs at 0.2 us a message,
  // bench/results/16-cores.)
  if (pattern == Pattern::Ring && ranks >= 3 && !c.oversubscribed)
    if (llvm::Error err = measureFanout(ranks, iterations, c, model))
      return err;
  setSegmentCosts(model, segments, c.messagesPerSample);
  c.block = formatModelBlock(model);
  llvm::Expected<CostModel> readBack = readBackModel(c.block);
  if (!readBack)
    return readBack.takeError();
  c.model = std::move(*readBack);
  rateFit(c);
  return c;
}
