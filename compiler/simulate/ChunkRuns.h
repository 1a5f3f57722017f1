#pragma once
// What a buffer holds, as runs of consecutive chunk ids (Semantics::idOf)
// that carry the same value. A schedule moves blocks, not single chunks, so
// a rank's holdings are a few runs however many chunks they cover: in the
// ring all-to-all at p = 1024 a rank ends with a million chunks in about 2p
// runs.
//
// The runs are kept sorted in blocks of at most maxBlock (a two-level
// B-tree): a lookup is a binary search over the blocks and one within a
// block, and an update moves at most a block's runs, which stays in cache
// where a node-per-run tree would not.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace collc::simulate {

/// Chunk ids lo..hi (inclusive).
struct IdRange {
  uint64_t lo = 0, hi = 0;
  uint64_t size() const { return hi - lo + 1; }
};

/// A map from chunk ids to values (uint32_t handles), stored as maximal runs:
/// adjacent runs with the same value are merged.
class ChunkRuns {
public:
  struct Run {
    uint64_t lo, hi;
    uint32_t value;
  };

  bool empty() const { return blocks.empty(); }
  /// Chunks held.
  uint64_t count() const { return held; }

  /// Every run in id order: fn(lo, hi, value).
  template <typename Fn> void forEach(Fn fn) const {
    for (const std::vector<Run> &block : blocks)
      for (const Run &r : block)
        fn(r.lo, r.hi, r.value);
  }

  /// The pieces of lo..hi in id order: fn(lo, hi, value) for held pieces and
  /// gap(lo, hi) for the rest.
  template <typename Fn, typename Gap>
  void visit(uint64_t lo, uint64_t hi, Fn fn, Gap gap) const {
    uint64_t at = lo;
    for (Pos p = find(lo); p.block < blocks.size(); ++p.block, p.index = 0) {
      const std::vector<Run> &block = blocks[p.block];
      for (; p.index < block.size(); ++p.index) {
        const Run &r = block[p.index];
        if (r.lo > hi)
          break;
        if (r.lo > at)
          gap(at, r.lo - 1);
        uint64_t end = std::min(hi, r.hi);
        fn(std::max(at, r.lo), end, r.value);
        if (end == hi)
          return;
        at = end + 1;
      }
      if (p.index < block.size())
        break;
    }
    gap(at, hi);
  }

  /// Holds `value` at lo..hi, replacing what was there.
  void assign(uint64_t lo, uint64_t hi, uint32_t value) {
    // The runs lo..hi touches, [first, last), widened by a neighbour that
    // carries the same value and meets it.
    Pos first = find(lo);
    Run fresh{lo, hi, value};
    Run left{}, right{};
    bool keepLeft = false, keepRight = false;
    if (Pos before = prev(first); before.block != npos) {
      const Run &r = at(before);
      if (r.hi + 1 == lo && r.value == value) {
        fresh.lo = r.lo;
        first = before;
      }
    }
    Pos last = first;
    for (; !isEnd(last) && at(last).lo <= hi + 1; last = next(last)) {
      const Run &r = at(last);
      if (r.lo > hi) { // meets lo..hi from above
        if (r.value != value)
          break;
        fresh.hi = r.hi;
        continue;
      }
      if (r.lo < fresh.lo) { // straddles lo
        if (r.value == value)
          fresh.lo = r.lo;
        else {
          left = {r.lo, lo - 1, r.value};
          keepLeft = true;
        }
      }
      if (r.hi > hi) { // straddles hi
        if (r.value == value)
          fresh.hi = r.hi;
        else {
          right = {hi + 1, r.hi, r.value};
          keepRight = true;
        }
      }
    }
    Run replacement[3];
    size_t n = 0;
    if (keepLeft)
      replacement[n++] = left;
    replacement[n++] = fresh;
    if (keepRight)
      replacement[n++] = right;
    splice(first, last, replacement, n);
  }

  /// Runs held.
  size_t numRuns() const {
    size_t n = 0;
    for (const std::vector<Run> &block : blocks)
      n += block.size();
    return n;
  }

  /// assign() of every run in runs[0..n) (sorted, disjoint) in one pass
  /// over the holdings: for a message that carries many runs.
  void assignAll(const Run *runs, size_t n) {
    std::vector<Run> out;
    out.reserve(numRuns() + 2 * n);
    auto emit = [&](uint64_t lo, uint64_t hi, uint32_t value) {
      if (!out.empty() && out.back().hi + 1 == lo && out.back().value == value)
        out.back().hi = hi;
      else
        out.push_back({lo, hi, value});
    };
    size_t j = 0;
    for (const std::vector<Run> &block : blocks)
      for (const Run &e : block) {
        for (; j < n && runs[j].hi < e.lo; ++j)
          emit(runs[j].lo, runs[j].hi, runs[j].value);
        // The incoming runs that meet e; `at` is e's first id not yet out.
        uint64_t at = e.lo;
        for (; j < n && runs[j].lo <= e.hi; ++j) {
          if (runs[j].lo > at)
            emit(at, runs[j].lo - 1, e.value);
          if (runs[j].hi >= e.hi) { // covers the rest of e, maybe more
            at = e.hi + 1;
            break;
          }
          emit(runs[j].lo, runs[j].hi, runs[j].value);
          at = runs[j].hi + 1;
        }
        if (at <= e.hi)
          emit(at, e.hi, e.value);
      }
    for (; j < n; ++j)
      emit(runs[j].lo, runs[j].hi, runs[j].value);
    rebuild(out);
  }

private:
  /// Holdings from a sorted list of runs.
  void rebuild(const std::vector<Run> &all) {
    blocks.clear();
    blockHi.clear();
    held = 0;
    for (size_t i = 0; i < all.size(); i += maxBlock / 2) {
      size_t end = std::min(all.size(), i + maxBlock / 2);
      blocks.emplace_back(all.begin() + i, all.begin() + end);
      blockHi.push_back(all[end - 1].hi);
    }
    for (const Run &r : all)
      held += r.hi - r.lo + 1;
  }

  static constexpr size_t npos = ~size_t(0);
  static constexpr size_t maxBlock = 64;
  struct Pos {
    size_t block, index;
  };

  const Run &at(Pos p) const { return blocks[p.block][p.index]; }
  bool isEnd(Pos p) const { return p.block >= blocks.size(); }
  Pos next(Pos p) const {
    if (++p.index < blocks[p.block].size())
      return p;
    return {p.block + 1, 0};
  }
  /// The run before p, or block == npos.
  Pos prev(Pos p) const {
    if (p.index > 0)
      return {p.block, p.index - 1};
    if (p.block == 0)
      return {npos, 0};
    return {p.block - 1, blocks[p.block - 1].size() - 1};
  }
  /// The first run whose hi is at least id (the end if none).
  Pos find(uint64_t id) const {
    size_t b = static_cast<size_t>(
        std::partition_point(blockHi.begin(), blockHi.end(),
                             [&](uint64_t hi) { return hi < id; }) -
        blockHi.begin());
    if (b == blocks.size())
      return {b, 0};
    const std::vector<Run> &block = blocks[b];
    auto r = std::partition_point(block.begin(), block.end(),
                                  [&](const Run &run) { return run.hi < id; });
    return {b, static_cast<size_t>(r - block.begin())};
  }

  /// Replaces the runs [first, last) with runs[0..n).
  void splice(Pos first, Pos last, const Run *runs, size_t n);

  std::vector<std::vector<Run>> blocks; // each sorted and non-empty
  std::vector<uint64_t> blockHi;        // each block's last id, for find()
  uint64_t held = 0;
};

inline void ChunkRuns::splice(Pos first, Pos last, const Run *runs,
                              size_t n) {
  for (Pos p = first; !isEnd(p) && (p.block != last.block || p.index != last.index);
       p = next(p))
    held -= at(p).hi - at(p).lo + 1;
  for (size_t i = 0; i < n; ++i)
    held += runs[i].hi - runs[i].lo + 1;
  if (blocks.empty()) {
    blocks.emplace_back(runs, runs + n);
    blockHi.push_back(runs[n - 1].hi);
    return;
  }
  // The end is the position after the last block's last run.
  auto normalise = [&](Pos &p) {
    if (isEnd(p))
      p = {blocks.size() - 1, blocks.back().size()};
  };
  normalise(first);
  normalise(last);
  // Empties a block that lost its runs; halves one that grew past maxBlock.
  auto fix = [&](size_t b) {
    if (blocks[b].empty()) {
      blocks.erase(blocks.begin() + b);
      blockHi.erase(blockHi.begin() + b);
      return;
    }
    if (blocks[b].size() > maxBlock) {
      std::vector<Run> upper(blocks[b].begin() + blocks[b].size() / 2,
                             blocks[b].end());
      blocks[b].resize(blocks[b].size() / 2);
      blockHi.insert(blockHi.begin() + b + 1, upper.back().hi);
      blocks.insert(blocks.begin() + b + 1, std::move(upper));
    }
    blockHi[b] = blocks[b].back().hi;
  };
  if (first.block == last.block) {
    std::vector<Run> &b = blocks[first.block];
    b.erase(b.begin() + first.index, b.begin() + last.index);
    b.insert(b.begin() + first.index, runs, runs + n);
    fix(first.block);
    return;
  }
  std::vector<Run> &head = blocks[first.block];
  head.erase(head.begin() + first.index, head.end());
  head.insert(head.end(), runs, runs + n);
  std::vector<Run> &tail = blocks[last.block];
  tail.erase(tail.begin(), tail.begin() + last.index);
  blocks.erase(blocks.begin() + first.block + 1, blocks.begin() + last.block);
  blockHi.erase(blockHi.begin() + first.block + 1,
                blockHi.begin() + last.block);
  fix(first.block + 1);
  fix(first.block);
}

} // namespace collc::simulate
