#pragma once
// Which priced size stands for a communicator's: cost_table.py prices every
// size up to PRICED_RANKS, and above it only 2^k and 3·2^(k-1), so that a
// build for thousands of ranks takes minutes. The sizes it priced are
// written with the prices (DropinCosts.inc, COLLC_PRICED_SIZES).

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace collc::mpi {

/// p where it was priced, else the largest priced size below it; 0 where
/// none is. `priced` ascends.
inline int pricedSizeFor(std::span<const int> priced, int p) {
  auto above = std::upper_bound(priced.begin(), priced.end(), p);
  return above == priced.begin() ? 0 : *(above - 1);
}

/// A schedule's price on p ranks from its prices by size (null where it has
/// none): the one on the priced size that stands for p, or null where that
/// size has no price. Never a smaller size's: a schedule that could not be
/// priced there is not priced from a size where it does far less.
template <typename Price>
const Price *priceFor(const std::vector<const Price *> &bySize,
                      std::span<const int> priced, int p) {
  const auto at = static_cast<std::size_t>(pricedSizeFor(priced, p));
  return at > 0 && at < bySize.size() ? bySize[at] : nullptr;
}

} // namespace collc::mpi
