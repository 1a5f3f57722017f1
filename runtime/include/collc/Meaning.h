#pragma once
// What each collective means, written once (000 Table 4.1, 001 §3, 004
// §4.4-§5): which chunks it has, what each rank holds before the first step
// and what it must hold after the last. Every stage reads this table: the
// kinds' names (compiler/ir), the simulator (compiler/simulate/Semantics),
// the induction prover (compiler/prove/Induction), splitting a kind into
// two (compiler/library/Compose), the emitted signatures (compiler/emit/
// Bindings) and the runtime's buffers (runtime/src/Engine.cpp). Standard
// C++ only, so that both sides include it; docs/layout.md says how a kind
// is added.
//
// A chunk has coordinates (origin, dest, index). A condition names the
// chunks a rank x holds by one rule for each coordinate (every index
// always):
//
//                   before the first step  after the last step
//   kind            at    origin dest     at    origin  dest  carries
//   broadcast       root  root   0        every root    0     {o}
//   reduce          every 0      root     root  0       root  {0..p-1}
//   allreduce       every 0      0        every 0       0     {0..p-1}
//   allgather       every x      0        every each    0     {o}
//   reduce_scatter  every 0      each     every 0       x     {0..p-1}
//   scatter         root  root   each     every root    x     {o}
//   gather          every x      root     root  each    root  {o}
//   scan            every 0      0        every 0       0     {0..x}
//   exscan          every 0      0        x > 0 0       0     {0..x-1}
//   suffix_scan     every 0      0        every 0       0     {x..p-1}
//   alltoall(v)     every x      each     every each    x     {o}
//   shift, permute  every x      pi(o)    every pi^-1(x) x    {o}
//
// Before the first step each chunk a rank holds carries its own
// contribution, {x}. After the last, a required chunk carries exactly the
// contributions listed, each once ({o}: its origin's; for copies the origin
// is the value). pi is the collective's map of ranks: o + q mod p for
// shift(q), the permutation for permute(to: ...). A coordinate that is 0
// in both columns means nothing for the kind; the chunks that exist at all
// (the universe) are those some rank holds before the first step.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>

namespace collc::meaning {

/// One coordinate of the chunks a condition names, at rank x.
enum class Coord : unsigned char {
  Zero,   // 0: the kind gives the coordinate no meaning
  Root,   // the collective's root
  Self,   // x itself
  Each,   // one chunk for each rank 0..p-1
  Mapped, // dest only: pi(origin)
  Source, // origin only: pi^-1(x), whose block x ends with
};

/// Which ranks a condition is about.
enum class At : unsigned char {
  EveryRank,
  Root,
  AfterFirst, // every rank but 0 (exscan: rank 0's result is undefined)
};

/// The contributions a required chunk must carry.
enum class Carries : unsigned char {
  Origin,    // {o}: a copy of its origin's block
  EveryRank, // {0..p-1}: everyone's, folded
  Prefix,    // {0..x}: the ranks up to x's, folded (scan)
  Before,    // {0..x-1}: the ranks before x, folded (exscan)
  Suffix,    // {x..p-1}: the ranks from x up, folded (suffix_scan)
};

/// The chunks the ranks `at` hold: for each origin by `origin`, the dests
/// by `dest`, every index.
struct Holding {
  At at;
  Coord origin, dest;
};

struct Conditions {
  Holding initial;  // before the first step; each chunk carries {x}
  Holding required; // after the last step, in the result buffer
  Carries carries;  // what each required chunk carries

  /// Combines contributions: takes `op:` and `commutative:`.
  constexpr bool reduction() const { return carries != Carries::Origin; }
  /// Each rank's result folds a run of ranks that starts or ends at it
  /// (scan, exscan, suffix_scan): a chain along the ranks computes it.
  constexpr bool scans() const {
    return carries == Carries::Prefix || carries == Carries::Before ||
           carries == Carries::Suffix;
  }
  /// Takes `root:`.
  constexpr bool rooted() const {
    return initial.at == At::Root || required.at == At::Root ||
           initial.origin == Coord::Root || initial.dest == Coord::Root;
  }
  /// The coordinates that name ranks: where a chunk starts, where it ends.
  constexpr bool originIsRank() const { return initial.origin != Coord::Zero; }
  constexpr bool destIsRank() const { return initial.dest != Coord::Zero; }
  /// Every chunk has this origin / dest (0 or the root), or each its own.
  constexpr bool originFixed() const {
    return initial.origin == Coord::Zero || initial.origin == Coord::Root;
  }
  constexpr bool destFixed() const {
    return initial.dest == Coord::Zero || initial.dest == Coord::Root;
  }
  /// The origin / dest every chunk has where the kind fixes it (0 or
  /// `root`); none where each chunk has its own.
  constexpr std::optional<int64_t> fixedOrigin(int64_t root) const {
    return fixedValue(initial.origin, root);
  }
  constexpr std::optional<int64_t> fixedDest(int64_t root) const {
    return fixedValue(initial.dest, root);
  }
  /// MPI's buffers (MPI 4.0 §6), as the chunks lie: the send buffer holds
  /// a block per dest (MPI_Scatter's, MPI_Alltoall's), the receive buffer
  /// one per origin (MPI_Gather's, MPI_Allgather's); a copy that ends where
  /// it starts has one buffer, in and out (MPI_Bcast's).
  constexpr bool sendPerDest() const { return initial.dest == Coord::Each; }
  constexpr bool recvPerOrigin() const {
    return required.origin == Coord::Each;
  }
  constexpr bool oneBuffer() const {
    return !reduction() && initial.origin == required.origin &&
           initial.dest == required.dest;
  }
  /// A rank's input is in its receive buffer: one buffer, or MPI_IN_PLACE
  /// as the send buffer.
  constexpr bool inputInReceive(bool sendInPlace) const {
    return oneBuffer() || sendInPlace;
  }
  /// MPI_IN_PLACE (MPI 4.0 §6.2.1): as the receive buffer, the root's of a
  /// kind whose root alone starts, with a block per dest (MPI_Scatter's:
  /// its own block stays in its send buffer); as the send buffer, where
  /// every rank starts, at a rank that receives (its input lies in its
  /// receive buffer: the root's of MPI_Reduce, every rank's of MPI_Scan).
  constexpr bool mayReceiveInPlace(bool atRoot) const {
    return initial.at == At::Root && sendPerDest() && atRoot;
  }
  constexpr bool maySendInPlace(bool atRoot) const {
    return initial.at == At::EveryRank && (required.at != At::Root || atRoot);
  }
  /// Each origin has the one dest pi(origin) (shift, permute).
  constexpr bool destFromOrigin() const {
    return initial.dest == Coord::Mapped;
  }
  /// Dests per origin in the universe: 1 where the dest is fixed or mapped.
  constexpr int64_t destsPerOrigin(int64_t p) const {
    return destFixed() || destFromOrigin() ? 1 : p;
  }
  static constexpr std::optional<int64_t> fixedValue(Coord c, int64_t root) {
    if (c == Coord::Zero)
      return 0;
    if (c == Coord::Root)
      return root;
    return std::nullopt;
  }
  /// The chunk block (origin, dest) numbered densely over the universe, in
  /// (origin, dest) order: what the simulator's chunk ids and the engine's
  /// blocks count by.
  constexpr int64_t blockIndex(int64_t origin, int64_t dest, int64_t p) const {
    const int64_t o = originFixed() ? 0 : origin;
    const int64_t perOrigin = destsPerOrigin(p);
    return o * perOrigin + (perOrigin == 1 ? 0 : dest);
  }
};

/// The kinds of collective, for the compiler (ir::CollectiveKind) and the
/// runtime (rt::Kind) alike. Emitted code names them and is compiled
/// against an installed runtime, so a new kind goes at the end (and in
/// kindCount), leaving the values of the others as they were.
enum class Kind {
  Broadcast,
  Reduce,
  Allreduce,
  Allgather,
  ReduceScatter,
  Scatter,
  Gather,
  Scan,
  Exscan,
  Alltoall,
  Alltoallv,
  Shift,
  Permute,
  SuffixScan,
};
inline constexpr size_t kindCount = static_cast<size_t>(Kind::SuffixScan) + 1;

/// One kind: its name in the language (and, written in CamelCase, its
/// rt::Kind), what it means, and whether each pair of ranks trades its own
/// number of elements (MPI_Alltoallv's counts, given at run time).
struct KindRow {
  Kind kind;
  const char *name;
  Conditions means;
  bool perPairSizes = false;
};

/// shift(q) and permute(to: ...): only the map pi differs.
inline constexpr Conditions mapped{{At::EveryRank, Coord::Self, Coord::Mapped},
                                   {At::EveryRank, Coord::Source, Coord::Self},
                                   Carries::Origin};
/// An all-to-all; alltoallv is checked as one too (no per-pair sizes).
inline constexpr Conditions alltoall{{At::EveryRank, Coord::Self, Coord::Each},
                                     {At::EveryRank, Coord::Each, Coord::Self},
                                     Carries::Origin};

// The table above, one row a kind.
inline constexpr KindRow kinds[] = {
    {Kind::Broadcast,
     "broadcast",
     {{At::Root, Coord::Root, Coord::Zero},
      {At::EveryRank, Coord::Root, Coord::Zero},
      Carries::Origin}},
    {Kind::Reduce,
     "reduce",
     {{At::EveryRank, Coord::Zero, Coord::Root},
      {At::Root, Coord::Zero, Coord::Root},
      Carries::EveryRank}},
    {Kind::Allreduce,
     "allreduce",
     {{At::EveryRank, Coord::Zero, Coord::Zero},
      {At::EveryRank, Coord::Zero, Coord::Zero},
      Carries::EveryRank}},
    {Kind::Allgather,
     "allgather",
     {{At::EveryRank, Coord::Self, Coord::Zero},
      {At::EveryRank, Coord::Each, Coord::Zero},
      Carries::Origin}},
    {Kind::ReduceScatter,
     "reduce_scatter",
     {{At::EveryRank, Coord::Zero, Coord::Each},
      {At::EveryRank, Coord::Zero, Coord::Self},
      Carries::EveryRank}},
    {Kind::Scatter,
     "scatter",
     {{At::Root, Coord::Root, Coord::Each},
      {At::EveryRank, Coord::Root, Coord::Self},
      Carries::Origin}},
    {Kind::Gather,
     "gather",
     {{At::EveryRank, Coord::Self, Coord::Root},
      {At::Root, Coord::Each, Coord::Root},
      Carries::Origin}},
    {Kind::Scan,
     "scan",
     {{At::EveryRank, Coord::Zero, Coord::Zero},
      {At::EveryRank, Coord::Zero, Coord::Zero},
      Carries::Prefix}},
    {Kind::Exscan,
     "exscan",
     {{At::EveryRank, Coord::Zero, Coord::Zero},
      {At::AfterFirst, Coord::Zero, Coord::Zero},
      Carries::Before}},
    {Kind::Alltoall, "alltoall", alltoall},
    {Kind::Alltoallv, "alltoallv", alltoall, true},
    {Kind::Shift, "shift", mapped},
    {Kind::Permute, "permute", mapped},
    {Kind::SuffixScan,
     "suffix_scan",
     {{At::EveryRank, Coord::Zero, Coord::Zero},
      {At::EveryRank, Coord::Zero, Coord::Zero},
      Carries::Suffix}},
};

static_assert(
    [] {
      for (size_t i = 0; i < std::size(kinds); ++i)
        if (kinds[i].kind != Kind(i))
          return false;
      return std::size(kinds) == kindCount;
    }(),
    "one row a kind, in the order of enum Kind");

/// The row of kind `k`.
constexpr const KindRow &rowOf(Kind k) { return kinds[static_cast<size_t>(k)]; }

/// What a collective of kind `k` means: its line of the table above.
constexpr const Conditions &conditionsOf(Kind k) { return rowOf(k).means; }

/// The contributions a required chunk of origin `origin` at rank x must
/// carry, each once: the ranks lo..hi (`Carries`). `last` is p - 1; T is a
/// rank number or a solver's term for one.
template <typename T> struct Span { T lo, hi; };
template <typename T>
constexpr Span<T> carried(Carries c, const T &x, const T &origin, const T &zero,
                          const T &last) {
  switch (c) {
  case Carries::Origin:
    return {origin, origin};
  case Carries::EveryRank:
    return {zero, last};
  case Carries::Prefix:
    return {zero, x};
  case Carries::Suffix:
    return {x, last};
  case Carries::Before:
    break;
  }
  return {zero, x - 1};
}

/// Whether `first` then `second`, run on the p pieces of a message (piece x
/// as the block of rank x), is `whole` (000 §4.7.1, Eqs 4.13, 4.14): the
/// first ends with rank x holding block x (its dest is x) and the second
/// starts from exactly that (its origin is x) and only moves it, so what
/// the first left in each piece is what the second delivers. The whole
/// starts as the first does and ends as the second does, with the block
/// coordinate read as the piece.
constexpr bool splitsInto(const Conditions &whole, const Conditions &first,
                          const Conditions &second) {
  auto fixed = [](Coord c) { return c == Coord::Zero || c == Coord::Root; };
  return first.initial.dest == Coord::Each &&
         first.required.at == At::EveryRank &&
         first.required.dest == Coord::Self &&
         second.initial.at == At::EveryRank &&
         second.initial.origin == Coord::Self &&
         second.carries == Carries::Origin &&
         second.required.origin == Coord::Each &&
         whole.initial.at == first.initial.at &&
         whole.initial.origin == first.initial.origin &&
         fixed(whole.initial.dest) && whole.required.at == second.required.at &&
         whole.required.dest == second.required.dest &&
         fixed(whole.required.origin) && whole.carries == first.carries;
}

/// Whether a holding names any chunk at rank x.
constexpr bool holdsAny(const Holding &h, int64_t x, int64_t root) {
  return !(h.at == At::Root && x != root) &&
         !(h.at == At::AfterFirst && x == 0);
}

/// Which of a call's buffers rank x reads or writes: the send buffer where
/// x starts with blocks that are not in its receive buffer, the receive
/// buffer where x ends with blocks or its input is there.
struct BuffersUsed {
  bool starts; // x holds blocks before the call
  bool send, recv;
};
constexpr BuffersUsed buffersUsed(const Conditions &m, int64_t x, int64_t root,
                                  bool sendInPlace) {
  const bool starts = holdsAny(m.initial, x, root);
  const bool inputInRecv = m.inputInReceive(sendInPlace);
  return {starts, starts && !inputInRecv,
          inputInRecv || holdsAny(m.required, x, root)};
}

/// What is wrong with MPI_IN_PLACE (MPI 4.0 §6.2.1) as the send or the
/// receive buffer of a call of meaning `m` at rank x, or null: in place
/// where the call allows none, in a buffer the call reads or writes there.
/// The runtime's engine and the drop-in both refuse by it.
constexpr const char *inPlaceFault(const Conditions &m, int64_t x, int64_t root,
                                   bool sendInPlace, bool recvInPlace) {
  const bool atRoot = x == root;
  const BuffersUsed used = buffersUsed(m, x, root, sendInPlace);
  if (sendInPlace && used.starts && recvInPlace)
    return "MPI_IN_PLACE as both the send and the receive buffer";
  if (sendInPlace && used.starts && !m.maySendInPlace(atRoot))
    return "MPI_IN_PLACE as the send buffer, where this rank's input is not "
           "in its receive buffer";
  if (recvInPlace && used.recv && !m.mayReceiveInPlace(atRoot))
    return "MPI_IN_PLACE as the receive buffer, which only a scatter's root "
           "may pass";
  return nullptr;
}

/// Where a collective of `p` ranks is, as a holding's rules read it: its
/// root and its map pi (shift, permute) and back.
template <typename DestOf, typename OriginOf> struct Frame {
  int64_t p, root;
  DestOf destOf;     // pi(origin)
  OriginOf originOf; // pi^-1(dest)
};
template <typename DestOf, typename OriginOf>
Frame(int64_t, int64_t, DestOf, OriginOf) -> Frame<DestOf, OriginOf>;

/// The blocks `h` names at rank x, as fn(origin, dLo, dHi): the dests dLo..dHi
/// of one origin (a dest of Each is one call for 0..p-1, an origin of Each
/// one call per origin). None where `h` is about the root and x is not it.
template <typename F, typename Fn>
void forEachBlock(const Holding &h, int64_t x, const F &frame, Fn &&fn) {
  if (!holdsAny(h, x, frame.root))
    return;
  auto value = [&](Coord c) -> int64_t {
    switch (c) {
    case Coord::Root:
      return frame.root;
    case Coord::Self:
      return x;
    case Coord::Source:
      return frame.originOf(x);
    default:
      return 0;
    }
  };
  auto dests = [&](int64_t o) {
    if (h.dest == Coord::Each)
      fn(o, int64_t(0), frame.p - 1);
    else if (h.dest == Coord::Mapped)
      fn(o, frame.destOf(o), frame.destOf(o));
    else
      fn(o, value(h.dest), value(h.dest));
  };
  if (h.origin == Coord::Each)
    for (int64_t o = 0; o < frame.p; ++o)
      dests(o);
  else
    dests(value(h.origin));
}

/// Every block of the collective (its universe), as fn(origin, dLo, dHi).
template <typename F, typename Fn>
void forEachUniverseBlock(const Conditions &c, const F &frame, Fn &&fn) {
  Holding all = c.initial;
  all.at = At::EveryRank;
  if (all.origin == Coord::Self)
    all.origin = Coord::Each;
  forEachBlock(all, 0, frame, fn);
}

} // namespace collc::meaning
