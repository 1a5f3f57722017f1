// collc bench's report: per collective and rank count the table of
// medians, ratios and the model's prediction, the choice check, the
// summaries over the run, and the CSV, SVG and JSON written.

#include "harness/BenchRun.h"
#include "tools/Commands.h"
#include "tools/Svg.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace collc;
using namespace collc::tools;
using namespace collc::tools::bench;

namespace {

/// A collective's rows by rank count, and the sizes and ratios the plot
/// must span.
struct PlotSeries {
  std::map<int, std::vector<const Row *>> series;
  long long minBytes = 0, maxBytes = 0;
  double minRatio = 0.5, maxRatio = 2;
};

/// Where a size and a ratio fall in the plot: both axes logarithmic.
struct PlotFrame {
  static constexpr double width = 640, height = 400, left = 60, right = 110,
                          top = 40, bottom = 50;
  double lx0 = 0, lx1 = 0, ly0 = 0, ly1 = 0, minRatio = 0;

  double x(long long b) const {
    return left + (std::log2(static_cast<double>(b)) - lx0) / (lx1 - lx0) *
                      (width - left - right);
  }
  double y(double ratio) const {
    return top + (ly1 - std::log2(std::max(ratio, minRatio))) / (ly1 - ly0) *
                     (height - top - bottom);
  }
};

/// `collective`'s rows of `rows`, grouped into a line per rank count.
PlotSeries seriesOf(llvm::StringRef collective, llvm::ArrayRef<Row> rows) {
  PlotSeries s;
  for (const Row &r : rows) {
    if (r.collective != collective)
      continue;
    s.series[r.ranks].push_back(&r);
    s.minBytes = s.minBytes ? std::min(s.minBytes, r.bytes) : r.bytes;
    s.maxBytes = std::max(s.maxBytes, r.bytes);
    if (r.ratio() > 0) {
      s.minRatio = std::min(s.minRatio, r.ratio());
      s.maxRatio = std::max(s.maxRatio, r.ratio());
    }
    if (r.paired.n > 0 && r.paired.low > 0) {
      s.minRatio = std::min(s.minRatio, r.paired.low);
      s.maxRatio = std::max(s.maxRatio, r.paired.high);
    }
  }
  return s;
}

/// The axes' ranges, whole powers of 2 of the ratio around every point.
PlotFrame frameOf(const PlotSeries &s) {
  PlotFrame f;
  f.ly0 = std::floor(std::log2(s.minRatio));
  f.ly1 = std::ceil(std::log2(s.maxRatio));
  f.lx0 = std::log2(static_cast<double>(std::max(1ll, s.minBytes)));
  f.lx1 = std::log2(static_cast<double>(std::max(s.minBytes + 1, s.maxBytes)));
  if (f.lx1 <= f.lx0)
    f.lx1 = f.lx0 + 1;
  f.minRatio = s.minRatio;
  return f;
}

/// The axes, the grid and their labels, and the targets' lines.
void drawAxes(svg::Writer &w, const PlotFrame &f, long long minBytes,
              long long maxBytes) {
  const double width = f.width, height = f.height, left = f.left,
               right = f.right;
  const double bottomRatio = std::exp2(f.ly0), topRatio = std::exp2(f.ly1);
  // Axes, grid and labels.
  w.line(left, f.y(bottomRatio), width - right, f.y(bottomRatio),
         "stroke=\"black\"");
  w.line(left, f.y(bottomRatio), left, f.y(topRatio), "stroke=\"black\"");
  for (double e = f.ly0; e <= f.ly1; ++e)
    w.text(left - 6, f.y(std::exp2(e)) + 4, strf("%g", std::exp2(e)),
           "text-anchor=\"end\"");
  for (long long b = 1; b <= maxBytes; b *= 4)
    if (b >= minBytes) {
      w.line(f.x(b), f.y(bottomRatio), f.x(b), f.y(topRatio),
             "stroke=\"#ddd\"");
      w.text(f.x(b), f.y(bottomRatio) + 16, formatBytes(b),
             "text-anchor=\"middle\" font-size=\"10\"");
    }
  w.text((left + width - right) / 2, height - 8, "message size m (log scale)",
         "text-anchor=\"middle\"");
  w.line(left, f.y(1.0), width - right, f.y(1.0), "stroke=\"#090\"");
  w.line(left, f.y(Row::smallTarget), width - right, f.y(Row::smallTarget),
         "stroke=\"#090\" stroke-dasharray=\"4 3\"");
}

/// One rank count's line in `color`, its points, whiskers and the legend's
/// entry, the `i`th.
void drawSeries(svg::Writer &w, const PlotFrame &f, int ranks,
                const std::vector<const Row *> &points,
                const std::string &color, size_t i) {
  std::vector<std::pair<double, double>> line;
  for (const Row *r : points)
    line.emplace_back(f.x(r->bytes), f.y(r->ratio()));
  w.polyline(line, "fill=\"none\" stroke-width=\"2\" stroke=\"" + color + "\"");
  // The per-call ratios' 95% interval, a whisker per point.
  for (const Row *r : points)
    if (r->paired.n > 0 && r->paired.low > 0)
      w.line(f.x(r->bytes), f.y(r->paired.low), f.x(r->bytes),
             f.y(r->paired.high),
             "stroke=\"" + color + "\" stroke-opacity=\"0.5\"");
  for (const Row *r : points)
    w.circle(f.x(r->bytes), f.y(r->ratio()), 3, "fill=\"" + color + "\"",
             strf("%s, %d ranks: %.2f", formatBytes(r->bytes).c_str(), ranks,
                  r->ratio()));
  w.text(f.width - f.right + 8, f.top + 16 + 18.0 * i,
         strf("%d ranks%s", ranks,
              points.front()->oversubscribed ? " (oversub.)" : ""),
         "fill=\"" + color + "\"");
}

} // namespace

/// One SVG per collective: ours/MPI against size, both axes logarithmic (a
/// ratio of 2 is as far above 1 as 1/2 is below), a line per rank count,
/// with the targets (1.0, and Row::smallTarget below 64 KiB) marked and
/// each point's 95% interval.
std::string collc::tools::bench::svgPlot(llvm::StringRef collective,
                                         llvm::ArrayRef<Row> rows) {
  const PlotSeries s = seriesOf(collective, rows);
  const PlotFrame f = frameOf(s);
  svg::Writer w(f.width, f.height);
  w.text(f.left, 22,
         collective.str() +
             ": collc time / MPI time (median; whiskers: 95% interval)",
         "font-size=\"15\"");
  drawAxes(w, f, s.minBytes, s.maxBytes);
  const char *colors[] = {"#1f77b4", "#d62728", "#ff7f0e", "#9467bd",
                          "#8c564b"};
  size_t i = 0;
  for (const auto &[ranks, points] : s.series) {
    drawSeries(w, f, ranks, points, colors[i % 5], i);
    ++i;
  }
  w.text(f.width - f.right + 8, f.top + 16 + 18.0 * i,
         strf("1.0, %.2f: targets", Row::smallTarget),
         "fill=\"#090\" font-size=\"10\"");
  return w.finish();
}

std::string collc::tools::bench::csvOf(llvm::ArrayRef<Row> rows) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "collective,ranks,bytes,schedule,iterations,"
        "ours_median_us,ours_min_us,ours_q1_us,ours_q3_us,ours_max_us,"
        "mpi_median_us,mpi_min_us,mpi_q1_us,mpi_q3_us,mpi_max_us,"
        "ratio,predicted_us,bound_tw_m,ours_GBps,mpi_GBps,oversubscribed,"
        "mpi_algorithm,paired_ratio,ratio_ci_low,ratio_ci_high\n";
  for (const Row &r : rows)
    os << strf(
        "%s,%d,%lld,%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
        "%.4f,%.3f,%.4g,%.4f,%.4f,%s,%s,%.4f,%.4f,%.4f\n",
        r.collective.c_str(), r.ranks, r.bytes, r.schedule.c_str(),
        r.iterations, r.ours.median, r.ours.min, r.ours.q1, r.ours.q3,
        r.ours.max, r.mpi.median, r.mpi.min, r.mpi.q1, r.mpi.q3, r.mpi.max,
        r.ratio(), r.predictedUs, r.boundWords, r.gbps(r.ours.median),
        r.gbps(r.mpi.median), r.oversubscribed ? "yes" : "no",
        r.mpiAlgorithm.c_str(), r.paired.median, r.paired.low, r.paired.high);
  return os.str();
}

void BenchRun::printHeader() const {
  if (!text)
    return;
  os << "collc bench: collc's emitted collective vs the MPI library's, "
        "same run, interleaved, same buffers, after warm-up;\n"
        "  each sample is the slowest rank's time; every timed call's "
        "result is checksummed against MPI's.\n";
  // "NAME = { ... };", the block without its keyword.
  auto described = [](const CostModel &m) {
    return llvm::StringRef(formatModelBlock(m)).drop_front(6).str();
  };
  for (const auto &[ranks, m] : o.rankModels)
    os << strf("  model for %d ranks: %s\n", ranks, described(m).c_str());
  os << strf("  model%s: %s%s\n", o.rankModels.empty() ? "" : " for the others",
             described(o.baseModel).c_str(),
             o.modelMeasured ? ""
                             : ", not measured: give --model FILE "
                               "from collc calibrate");
  os << "  machine: " << cores() << " cores\n";
  if (o.sameAlgorithm)
    os << "  MPI: forced to its algorithm with the same steps and messages "
          "as the schedule run, where it has one (--same-algorithm)\n";
}

void BenchRun::printTable(const std::string &collective, int p,
                          const CostModel &model,
                          const std::vector<Candidate> &candidates,
                          const std::vector<Group> &groups, size_t firstRow,
                          const Launched &launched) const {
  os << "\n" << collective << " on " << p << " ranks";
  if (o.rankModels.count(p))
    os << ", model " << model.name;
  if (launched.oversubscribed)
    os << " (oversubscribed: " << p << " ranks on " << cores()
       << " cores; the ranks time-share, so the times include "
          "descheduling)";
  os << "\n";
  for (const Candidate &c : candidates) {
    bool used =
        llvm::any_of(groups, [&](const Group &g) { return g.first == &c; });
    os << "  " << (used ? "runs " : "  (priced, not chosen) ") << c.name << " ("
       << c.spec << "): " << c.cost.startups << "·t_s + " << c.cost.words.str()
       << "·m·t_w";
    if (model.machine.cores > 0 && p > model.machine.cores) {
      cost::ScheduleCost::Line l = c.cost.line(model.machine);
      os << "; on " << model.machine.cores << " cores " << l.startups.str()
         << "·t_s + " << l.words.str() << "·m·t_w";
    } else if (model.machine.copies == CopyModel::Receiver) {
      cost::ScheduleCost::Line l = c.cost.line(model.machine);
      os << "; receivers copying " << l.str();
    }
    if (!c.costSource.empty())
      os << " (" << c.costSource << ")";
    if (c.bound)
      os << "; bound " << c.bound->words.str() << "·m·t_w (" << c.bound->source
         << ")";
    if (used && o.sameAlgorithm)
      os << (c.mpiAlgorithm.empty()
                 ? "; MPI runs its default (no like algorithm)"
                 : "; MPI forced to " + c.mpiAlgorithm);
    os << "\n";
  }
  os << launched.commandLines;
  os << strf("  %9s %-19s %5s  %-26s %-26s %8s %-13s %10s %8s %8s %8s\n", "m",
             "schedule", "calls", "collc us: median [min..max]",
             "MPI us: median [min..max]", "ours/MPI", "95% interval",
             "model us", "GB/s ours", "GB/s MPI", "1/t_w");
  for (size_t i = firstRow; i < rows.size(); ++i) {
    const Row &r = rows[i];
    std::string ours = llvm::formatv("{0:f1} [{1:f1}..{2:f1}]", r.ours.median,
                                     r.ours.min, r.ours.max);
    std::string mpi = llvm::formatv("{0:f1} [{1:f1}..{2:f1}]", r.mpi.median,
                                    r.mpi.min, r.mpi.max);
    std::string interval =
        r.paired.n ? std::string(llvm::formatv("[{0:f2}..{1:f2}]", r.paired.low,
                                               r.paired.high))
                   : "-";
    os << strf("  %9s %-19s %5d  %-26s %-26s %7.2f%s %-13s %10.1f %8.3f "
               "%8.3f %8.3f\n",
               formatBytes(r.bytes).c_str(), r.schedule.c_str(), r.iterations,
               ours.c_str(), mpi.c_str(), r.ratio(), r.mark(), interval.c_str(),
               r.predictedUs, r.gbps(r.ours.median), r.gbps(r.mpi.median),
               1e-9 / model.twPerByte);
  }
  os << "  (* misses the target: ours/MPI <= 1.0 from 64 KiB, <= "
     << strf("%.2f", Row::smallTarget)
     << " below, by the ratio of the medians; ~ misses it, but the 95% "
        "interval of the per-call ratios (each call's pair timed in one "
        "iteration) reaches it, so this run cannot tell them apart. "
        "GB/s: the seed's bound, "
     << (rows.size() > firstRow ? rows[firstRow].boundSource : "")
     << ", in bytes per second of the median time; 1/t_w is the "
        "model's link bandwidth)\n";
}

void BenchRun::printChoiceCheck(size_t firstRow,
                                const std::vector<Row> &others) {
  // Each candidate runs in a launch of its own, and one launch's state
  // (placement, memory) moved a schedule's own median by up to 1.4x against
  // another's on 16 cores; MPI's call, timed in the same launch, is the
  // yardstick that cancels it. The two launches of one schedule (where it
  // was chosen, and over every size) still differed by up to 1.24 on 16
  // cores, so every candidate is judged from the launch over every size.
  os << "  choice check: each candidate's median over MPI's, in a launch "
        "of its own over every size: the chosen schedule's against the "
        "fastest candidate's (* over 5% slower)\n";
  os << strf("  %9s %-26s %10s %-26s %10s %8s\n", "m", "chosen", "ours/MPI",
             "fastest", "ours/MPI", "ratio");
  auto relative = [](const Row &row) {
    return row.mpi.median > 0 ? row.ours.median / row.mpi.median
                              : std::numeric_limits<double>::infinity();
  };
  for (size_t i = firstRow; i < rows.size(); ++i) {
    const Row *chosen = &rows[i];
    for (const Row &other : others)
      if (other.bytes == chosen->bytes && other.schedule == chosen->schedule)
        chosen = &other;
    const Row &r = *chosen;
    const Row *fastest = &r;
    for (const Row &other : others)
      if (other.bytes == r.bytes && relative(other) < relative(*fastest))
        fastest = &other;
    // No MPI time to compare by: a miss, not a silent pass.
    double ratio = relative(r) / relative(*fastest);
    if (!std::isfinite(ratio))
      ratio = std::numeric_limits<double>::infinity();
    ++choiceCells;
    choiceMissed += ratio > 1.05;
    os << strf("  %9s %-26s %10.2f %-26s %10.2f %7.2f%s\n",
               formatBytes(r.bytes).c_str(), r.schedule.c_str(), relative(r),
               fastest->schedule.c_str(), relative(*fastest), ratio,
               ratio > 1.05 ? "*" : " ");
  }
}

void BenchRun::printSummaries() const {
  if (text && o.checkChoice)
    os << strf("\nchoice check: the chosen schedule is within 5%% of the "
               "fastest candidate measured in %d of %d cells\n",
               choiceCells - choiceMissed, choiceCells);
  if (text && !rows.empty())
    printRatios();
  if (!o.text)
    printJson();
}

void BenchRun::printRatios() const {
  std::vector<std::pair<std::string, int>> columns;
  for (const Row &r : rows)
    if (llvm::find(columns, std::make_pair(r.collective, r.ranks)) ==
        columns.end())
      columns.push_back({r.collective, r.ranks});
  if (columns.size() <= 1)
    return;
  // A line per collective and rank count, a column per size.
  os << "\nours/MPI (median"
     << (o.sameAlgorithm ? ", MPI forced to the like algorithm" : "")
     << "); * misses the target (<= 1.0 from 64 KiB, <= "
     << strf("%.2f", Row::smallTarget)
     << " below), "
        "~ misses it within this run's noise (the per-call ratios' 95% "
        "interval reaches it)\n";
  os << strf("  %-20s", "collective@ranks");
  for (long long bytes : o.sizes)
    os << strf(" %7s", formatBytes(bytes).c_str());
  os << "\n";
  for (const auto &col : columns) {
    os << strf("  %-20s",
               (col.first + "@" + std::to_string(col.second)).c_str());
    for (long long bytes : o.sizes) {
      auto r = llvm::find_if(rows, [&](const Row &x) {
        return x.collective == col.first && x.ranks == col.second &&
               x.bytes == bytes;
      });
      if (r == rows.end())
        os << strf(" %7s", "-");
      else
        os << strf(" %6.2f%s", r->ratio(), r->mark());
    }
    os << "\n";
  }
  // Per rank count: the geometric mean of every cell's ratio (target
  // <= 0.9) and how many cells miss their target.
  std::map<int, std::pair<double, int>> logSum; // ranks -> (sum, cells)
  std::map<int, int> missed;
  for (const Row &r : rows)
    if (r.ratio() > 0) {
      logSum[r.ranks].first += std::log(r.ratio());
      ++logSum[r.ranks].second;
      missed[r.ranks] += r.ratio() > r.target();
    }
  for (const auto &[ranks, sum] : logSum)
    os << strf("  %d ranks: geometric mean %.3f (target <= 0.9), %d of "
               "%d cells miss their target\n",
               ranks, std::exp(sum.first / sum.second), missed.at(ranks),
               sum.second);
  if (o.sameAlgorithm) {
    std::string unforced;
    for (const auto &col : columns)
      if (llvm::any_of(rows, [&](const Row &x) {
            return x.collective == col.first && x.ranks == col.second &&
                   x.mpiAlgorithm == "default";
          }))
        unforced += " " + col.first + "@" + std::to_string(col.second);
    if (!unforced.empty())
      os << "  MPI ran its default at some sizes (no like algorithm):"
         << unforced << "\n";
  }
}

void BenchRun::printJson() const {
  llvm::json::Array out;
  for (const Row &r : rows)
    out.push_back(llvm::json::Object{{"collective", r.collective},
                                     {"ranks", r.ranks},
                                     {"bytes", r.bytes},
                                     {"ours_us", r.ours.median},
                                     {"mpi_us", r.mpi.median},
                                     {"ratio", r.ratio()},
                                     {"predicted_us", r.predictedUs},
                                     {"schedule", r.schedule},
                                     {"iterations", r.iterations},
                                     {"ours_min_us", r.ours.min},
                                     {"ours_max_us", r.ours.max},
                                     {"mpi_min_us", r.mpi.min},
                                     {"mpi_max_us", r.mpi.max},
                                     {"checksum", "ok"},
                                     {"oversubscribed", r.oversubscribed},
                                     {"mpi_algorithm", r.mpiAlgorithm},
                                     {"paired_ratio", r.paired.median},
                                     {"ratio_ci_low", r.paired.low},
                                     {"ratio_ci_high", r.paired.high}});
  os << llvm::formatv("{0:2}\n", llvm::json::Value(std::move(out)));
  for (const std::string &note : notes)
    errs << "collc: note: " << note << "\n";
}

bool BenchRun::writeFiles() const {
  llvm::SourceMgr outputSources;
  DiagnosticEngine diags(outputSources, errs, errs.has_colors());
  if (!o.csv.empty() && !writeFile(o.csv, csvOf(rows), diags))
    return false;
  if (!o.svg.empty() &&
      !writeFile(o.svg, svgPlot(o.collectives[0], rows), diags))
    return false;
  if (!o.svgDir.empty()) {
    llvm::sys::fs::create_directories(o.svgDir);
    for (const std::string &c : o.collectives) {
      if (llvm::none_of(rows, [&](const Row &r) { return r.collective == c; }))
        continue;
      llvm::SmallString<128> path(o.svgDir);
      llvm::sys::path::append(path, c + ".svg");
      if (!writeFile(path, svgPlot(c, rows), diags))
        return false;
    }
  }
  return true;
}
