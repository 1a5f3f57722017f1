// What `collc bench` concludes from its samples (compiler/tools/
// BenchSupport.cpp): the per-call ratio of collc's time to MPI's and the
// interval that says whether a miss of the target is more than noise.

#include "harness/BenchSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace collc::tools::bench;

TEST(PairedRatio, MedianAndInterval) {
  // 100 pairs, ratios 1..100 in shuffled order: the median is 50.5, and the
  // 95% interval runs from the 40th to the 61st smallest (n/2 ± 1.96·√n/2).
  std::vector<double> ours, theirs;
  for (int i = 0; i < 100; ++i) {
    ours.push_back(((i * 37) % 100 + 1) * 2.0);
    theirs.push_back(2.0);
  }
  PairedRatio r = pairedRatio(ours, theirs);
  EXPECT_EQ(r.n, 100u);
  EXPECT_DOUBLE_EQ(r.median, 50.5);
  EXPECT_DOUBLE_EQ(r.low, 40);
  EXPECT_DOUBLE_EQ(r.high, 61);
}

TEST(PairedRatio, PairsNotMedians) {
  // Each pair's calls took the same time, however much that moved between
  // iterations: the ratio is exactly 1 with no spread, where the ratio of
  // the two medians alone could not say so.
  std::vector<double> ours = {1, 5, 2, 9, 3}, theirs = {1, 5, 2, 9, 3};
  PairedRatio r = pairedRatio(ours, theirs);
  EXPECT_DOUBLE_EQ(r.median, 1);
  EXPECT_DOUBLE_EQ(r.low, 1);
  EXPECT_DOUBLE_EQ(r.high, 1);
}

TEST(PairedRatio, FewPairsSpanAll) {
  // With 5 pairs (the bench's fewest at 16 MiB) the interval is the whole
  // range of the ratios (94% coverage); a pair with no MPI time is left out.
  std::vector<double> ours = {1.2, 0.9, 1.0, 1.5, 1.1, 7},
                      theirs = {1, 1, 1, 1, 1, 0};
  PairedRatio r = pairedRatio(ours, theirs);
  EXPECT_EQ(r.n, 5u);
  EXPECT_DOUBLE_EQ(r.median, 1.1);
  EXPECT_DOUBLE_EQ(r.low, 0.9);
  EXPECT_DOUBLE_EQ(r.high, 1.5);
}

namespace {
std::vector<std::pair<double, Stats>> timings(const std::vector<double> &bytes,
                                              double (*time)(double)) {
  std::vector<std::pair<double, Stats>> points;
  for (double m : bytes) {
    Stats st;
    st.median = time(m);
    points.push_back({m, st});
  }
  return points;
}
const std::vector<double> calibrationSizes = {
    8,     32,     128,    512,     2048,    8192,
    32768, 131072, 524288, 2097152, 8388608, 16777216};
} // namespace

// A machine that is one line is fitted by one segment, exactly.
TEST(FitSegments, OneLineIsOneSegment) {
  auto fit = fitSegments(
      timings(calibrationSizes, [](double m) { return 2 + 0.001 * m; }));
  ASSERT_EQ(fit.size(), 1u);
  EXPECT_EQ(fit[0].fromBytes, 0);
  EXPECT_NEAR(fit[0].tsUs, 2, 1e-9);
  EXPECT_NEAR(fit[0].twUs, 0.001, 1e-12);
  EXPECT_NEAR(fit[0].sumSquares, 0, 1e-12);
}

// The ping-pong of bench/results/calibrate.txt, in shape: cheap eager
// messages, a start-up jump at 8 KiB, and memory-bound ones from 4 MiB,
// timed at calibrate's sizes (powers of two). One line misses it by far
// more than 10%; the segments start where the machine changes and meet
// the target.
TEST(FitSegments, SplitsWhereTheMachineChanges) {
  auto machine = [](double m) {
    return m < 8192        ? 0.16 + 0.00004 * m
           : m < 4194304.0 ? 2.2 + 0.00007 * m
                           : 0.00012 * m;
  };
  std::vector<double> sizes;
  for (double b = 8; b <= 16 << 20; b *= 2)
    sizes.push_back(b);
  auto points = timings(sizes, machine);
  auto fit = fitSegments(points);
  ASSERT_EQ(fit.size(), 3u);
  EXPECT_EQ(fit[0].fromBytes, 0);
  EXPECT_EQ(fit[1].fromBytes, 8192);
  EXPECT_EQ(fit[2].fromBytes, 4194304);
  double sum = 0;
  for (const FittedSegment &s : fit)
    sum += s.sumSquares;
  EXPECT_LT(std::sqrt(sum / points.size()), 0.01);
  // With only two sizes, one line through them.
  auto two = fitSegments(timings({8, 65536}, machine));
  ASSERT_EQ(two.size(), 1u);
  EXPECT_NEAR(two[0].sumSquares, 0, 1e-12);
}

// Each segment has at least three sizes, so no segment is a line drawn
// through two points; the fewest segments that meet 10% are taken.
TEST(FitSegments, FewestSegmentsOfThreeSizesOrMore) {
  auto fit = fitSegments(timings(calibrationSizes, [](double m) {
    return m < 100 ? 1.0 : 1.5 + 0.0001 * m; // 8 B and 32 B alone below
  }));
  ASSERT_GE(fit.size(), 1u);
  for (size_t i = 1; i < fit.size(); ++i)
    EXPECT_GE(fit[i].fromBytes, 128);
  auto steps = fitSegments(timings(calibrationSizes, [](double m) {
    return std::pow(m, 0.5); // no line fits: the best of four
  }));
  EXPECT_GT(steps.size(), 1u);
  EXPECT_LE(steps.size(), 4u);
  // Three sizes a segment, four times apart: the second starts at the
  // fourth size (512 B) or later, each next one 64 times further.
  for (size_t i = 1; i < steps.size(); ++i)
    EXPECT_GE(steps[i].fromBytes, i == 1 ? 512 : 64 * steps[i - 1].fromBytes);
}
