// What `collc bench` concludes from its samples (compiler/tools/
// BenchSupport.cpp): the per-call ratio of collc's time to MPI's and the
// interval that says whether a miss of the target is more than noise.

#include "harness/BenchSupport.h"

#include <gtest/gtest.h>

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
