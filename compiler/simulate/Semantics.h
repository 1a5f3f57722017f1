#pragma once
// Pre- and post-conditions of the collectives, as the simulator checks them.
//
// A chunk has coordinates (origin, dest, index) - the SlotOrigin, SlotDest
// and SlotIndex a selector reads. A value is a chunk plus its contributions:
// the multiset of ranks whose inputs it combines. Copies carry a value
// unchanged; a reduce folds two values (the multisets add up).
//
// Per kind, on p ranks with K chunk indices (k = 0..K-1), the chunks each
// rank starts and must end with are collc/Meaning.h's table. A coordinate
// the kind gives no meaning is 0; one fixed by the collective holds that
// rank.
//
// The post-condition constrains only the chunks listed: a rank may hold
// others (its own input, partial sums) in the result buffer. A required chunk
// must carry exactly the contributions listed, each once: a contribution
// missing or folded twice is a violation. alltoallv is checked as alltoall
// (the chunk model has no per-pair sizes).

#include "ir/Schedule.h"
#include "simulate/ChunkRuns.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collc::simulate {

/// Chunk coordinates packed into one word (origin and dest below 2^20 =
/// maxRanks, index below 2^23), ordered by origin, then dest, then index.
using ChunkKey = uint64_t;
constexpr int64_t maxChunkIndices = int64_t(1) << 23;

inline ChunkKey makeChunkKey(int64_t origin, int64_t dest, int64_t index) {
  return (static_cast<uint64_t>(origin) << 44) |
         (static_cast<uint64_t>(dest) << 24) | static_cast<uint64_t>(index);
}
inline int64_t chunkOrigin(ChunkKey k) { return static_cast<int64_t>(k >> 44); }
inline int64_t chunkDest(ChunkKey k) {
  return static_cast<int64_t>((k >> 24) & ((uint64_t(1) << 20) - 1));
}
inline int64_t chunkIndex(ChunkKey k) {
  return static_cast<int64_t>(k & ((uint64_t(1) << 24) - 1));
}

/// A multiset of ranks, as sorted disjoint runs of ranks with a multiplicity.
/// Adjacent runs with the same multiplicity are merged, so equal multisets
/// have equal representations.
class Contributions {
public:
  struct Run {
    int64_t lo = 0, hi = 0; // ranks lo..hi
    int64_t count = 1;      // each that many times
    friend bool operator==(const Run &, const Run &) = default;
  };

  Contributions() = default;
  static Contributions single(int64_t rank) { return range(rank, rank); }
  /// {lo..hi}, each once; empty when lo > hi.
  static Contributions range(int64_t lo, int64_t hi);

  /// Multiset sum: ranks in both are counted twice.
  void add(const Contributions &other);

  llvm::ArrayRef<Run> runs() const { return runList; }
  bool empty() const { return runList.empty(); }
  /// One run, each rank once: a value a non-commutative fold can extend.
  bool isInterval() const {
    return runList.size() == 1 && runList[0].count == 1;
  }
  int64_t count(int64_t rank) const;

  /// Compact form: "{0..7}", "{0..2, 4..7}", "{3}", "{}"; a rank held more
  /// than once is written "3 (x2)", a run "0..3 (x2)".
  std::string str() const;

  friend bool operator==(const Contributions &a, const Contributions &b) {
    return a.runList == b.runList;
  }

private:
  llvm::SmallVector<Run, 1> runList;
};

/// The chunk universe and the pre-/post-condition of one collective on p
/// ranks with K chunk indices.
class Semantics {
public:
  /// Errors: root outside 0..p-1, K outside 1..maxChunkIndices, p outside
  /// 1..maxRanks.
  static llvm::Expected<Semantics> make(const ir::Collective &collective,
                                        int64_t p, int64_t chunks);

  ir::CollectiveKind kind() const { return collective.kind; }
  int64_t numRanks() const { return p; }
  int64_t numChunkIndices() const { return chunks; }
  /// Whether chunks differ in origin / dest (else it is fixed by the kind).
  bool usesOrigin() const;
  bool usesDest() const;

  /// Chunks are numbered densely, in key order: id = (origin slot * dests
  /// per origin + dest slot) * K + index, where an origin or dest the kind
  /// fixes (or shift's dest, which follows from the origin) takes one slot.
  /// Ids run 0..universeSize()-1.
  uint64_t idOf(int64_t origin, int64_t dest, int64_t index) const;
  ChunkKey keyOf(uint64_t id) const;
  /// Number of chunks in the universe.
  uint64_t universeSize() const;

  /// A box of chunk coordinates: origins oLo..oHi, dests dLo..dHi, indices
  /// kLo..kHi. Where the kind fixes the dest, or derives it from the origin
  /// (shift), dLo..dHi bounds the dests of the box's origins.
  struct Box {
    int64_t oLo, oHi, dLo, dHi, kLo, kHi;
  };
  /// The whole universe as one box.
  Box universeBox() const;
  /// Whether the dest follows from the origin (shift; a fixed dest counts),
  /// so a box is split by origin and index only.
  bool destFollowsOrigin() const { return destsPerOrigin() == 1; }
  /// The dests of origins oLo..oHi, as a range that holds them.
  std::pair<int64_t, int64_t> destBounds(int64_t oLo, int64_t oHi) const;
  /// Appends the ids of the box's chunks to `out` as ranges, merging with the
  /// last range where they meet.
  void appendIds(const Box &box, std::vector<IdRange> &out) const;
  /// The boxes whose chunks are the ids lo..hi, in id order.
  void boxesOf(IdRange ids, llvm::function_ref<void(const Box &)> fn) const;

  /// Pre-condition: the chunks `rank` holds before the first step.
  void initial(int64_t rank,
               llvm::function_ref<void(IdRange, const Contributions &)> fn) const;
  /// Post-condition: the chunks `rank` must hold in the result buffer after
  /// the last step, with their contributions, in id order.
  void required(int64_t rank,
                llvm::function_ref<void(IdRange, const Contributions &)> fn) const;

  /// "chunk 3" when only the index has meaning (broadcast, reductions), else
  /// the coordinates that do: "(origin 2, dest 5)", "(origin 2)",
  /// "(dest 5, index 1)" (the index shown when K > 1).
  std::string describeChunk(ChunkKey key) const;

private:
  Semantics(const ir::Collective &collective, int64_t p, int64_t chunks);
  /// The fixed origin / dest of every chunk, if the kind fixes one.
  std::optional<int64_t> fixedOrigin() const { return originFixed; }
  std::optional<int64_t> fixedDest() const { return destFixed; }
  /// Whether each origin has one dest, a function of it (shift, permute).
  bool destFromOrigin() const { return means->destFromOrigin(); }
  /// The collective as its meaning's rules read it.
  auto frame() const {
    return meaning::Frame{p, collective.root,
                          [this](int64_t o) { return destOf(o); },
                          [this](int64_t d) { return originOf(d); }};
  }
  /// Where a shift or a permutation takes origin's block, and back.
  int64_t destOf(int64_t origin) const;
  int64_t originOf(int64_t dest) const;
  int64_t originBase() const { return originFixed.value_or(0); }
  int64_t destsPerOrigin() const { return destSlots; }
  /// The ids of origin o's chunks for dests dLo..dHi (one dest where the
  /// kind fixes it), every index.
  IdRange block(int64_t o, int64_t dLo, int64_t dHi) const;

  ir::Collective collective;
  int64_t p = 0;
  int64_t chunks = 1;
  const meaning::Conditions *means;
  std::optional<int64_t> originFixed, destFixed;
  int64_t destSlots = 1; // dests per origin in the id numbering
  /// A permutation's inverse: the origin of the block each rank ends with.
  std::shared_ptr<const std::vector<int64_t>> sourceOf;
};

} // namespace collc::simulate
