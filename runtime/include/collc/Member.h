#pragma once
// Which member of a family runs on p ranks, written once: `collc cost`,
// `show` and `draw` with `--p N` (cost::paramsForRanks) and every emitted
// family function take it. Of the parameter values within their ranges
// that give the topology p ranks, the member whose values lie closest
// together (mesh(4, 4) for 16 ranks rather than mesh(1, 16), whose rows
// take 15 steps where the square's rows and columns take 6); of those
// that tie, the first in order, the last parameter counting fastest.
// Standard C++ only, so that both sides include it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace collc::member {

/// A parameter's range, both ends included.
struct Range {
  int64_t lo = 0;
  int64_t hi = -1;
};

/// How many members `ranges` span (saturating at INT64_MAX): what a search
/// evaluates.
inline int64_t span(const Range *ranges, size_t n) {
  int64_t total = 1;
  for (size_t i = 0; i < n; ++i) {
    if (ranges[i].hi < ranges[i].lo)
      return 0;
    const uint64_t width = static_cast<uint64_t>(ranges[i].hi) -
                           static_cast<uint64_t>(ranges[i].lo) + 1;
    if (width == 0 || width > static_cast<uint64_t>(INT64_MAX / total))
      return INT64_MAX;
    total *= static_cast<int64_t>(width);
  }
  return total;
}

/// Writes to values[0..n) the member of p ranks described above and
/// returns true, or returns false when no member within `ranges` has p
/// ranks. ranksOf(const int64_t *values) is a member's rank count (any
/// value other than p where the topology is not one).
template <class RanksOf>
bool closest(const Range *ranges, size_t n, int64_t p, const RanksOf &ranksOf,
             int64_t *values) {
  if (span(ranges, n) == 0)
    return false;
  std::vector<int64_t> at(n);
  for (size_t i = 0; i < n; ++i)
    at[i] = ranges[i].lo;
  bool found = false;
  int64_t bestSpread = 0;
  for (;;) {
    if (ranksOf(static_cast<const int64_t *>(at.data())) == p) {
      const auto [low, high] = std::minmax_element(at.begin(), at.end());
      const int64_t spread = n == 0 ? 0 : *high - *low;
      if (!found || spread < bestSpread) {
        std::copy(at.begin(), at.end(), values);
        bestSpread = spread;
        found = true;
      }
    }
    size_t i = n;
    while (i > 0 && at[i - 1] == ranges[i - 1].hi) {
      at[i - 1] = ranges[i - 1].lo;
      --i;
    }
    if (i == 0)
      return found;
    ++at[i - 1];
  }
}

} // namespace collc::member
