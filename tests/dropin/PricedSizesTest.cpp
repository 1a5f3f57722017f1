// Which priced size stands for a communicator's (runtime/mpi/PricedSizes.h),
// on the sizes collc_add_mpi_library priced for dropin_own: every size up to
// its PRICED_RANKS of 4, then 2^k and 3·2^(k-1) up to its MAX_RANKS of 8.

#include "PricedSizes.h"

#include <gtest/gtest.h>

#include <span>
#include <vector>

namespace {

using collc::mpi::pricedSizeFor;
using collc::mpi::priceFor;

const int ownPricedSizes[] = {
#define COLLC_PRICED_SIZES
#include "DropinCosts.inc"
#undef COLLC_PRICED_SIZES
};
const std::span<const int> priced(ownPricedSizes);

TEST(PricedSizes, EverySizeUpToPricedRanksThenTwoToTheKAndThreeHalvesOfIt) {
  EXPECT_EQ(std::vector<int>(priced.begin(), priced.end()),
            (std::vector<int>{2, 3, 4, 6, 8}));
}

TEST(PricedSizes, ASizeBetweenIsPricedAsThePricedSizeBelowIt) {
  EXPECT_EQ(pricedSizeFor(priced, 1), 0);
  EXPECT_EQ(pricedSizeFor(priced, 2), 2);
  EXPECT_EQ(pricedSizeFor(priced, 4), 4);
  EXPECT_EQ(pricedSizeFor(priced, 5), 4);
  EXPECT_EQ(pricedSizeFor(priced, 6), 6);
  EXPECT_EQ(pricedSizeFor(priced, 7), 6);
  EXPECT_EQ(pricedSizeFor(priced, 8), 8);
}

// A schedule collc cost could price on 4 ranks but not on 6 has no price on
// 7: the one on 4 would say it does far less than it does there.
TEST(PricedSizes, AScheduleUnpricedOnThatSizeIsNotPricedFromASmallerOne) {
  const int onFour = 4;
  std::vector<const int *> bySize(9, nullptr);
  bySize[4] = &onFour;
  EXPECT_EQ(priceFor(bySize, priced, 4), &onFour);
  EXPECT_EQ(priceFor(bySize, priced, 5), &onFour);
  EXPECT_EQ(priceFor(bySize, priced, 6), nullptr);
  EXPECT_EQ(priceFor(bySize, priced, 7), nullptr);
  EXPECT_EQ(priceFor(bySize, priced, 1), nullptr);
}

} // namespace
