#pragma once
// Network topologies, their directed channels, and one deterministic route for
// every ordered pair of ranks. Routing rules (each documented where it is
// implemented in Topology.cpp):
//   ring      the shorter direction; a tie goes towards increasing rank
//   linear    the only path
//   mesh      dimension-ordered: the last coordinate first (along the row),
//             then the next one, ...; rank = row-major index
//   torus     as mesh, the shorter direction in each dimension, ties towards
//             increasing index
//   hypercube e-cube: correct differing bits from the least significant up
//   full      the direct link
//   tree      up to the lowest common ancestor switch, then down
//   graph     a shortest path; ties broken towards lower-numbered nodes
//
// Nodes 0..numRanks()-1 are the ranks. A tree's switches are nodes
// numRanks().. numNodes()-1 (ranks are its leaves), numbered in heap order:
// the switch at heap position h (root h = 1, children of h at 2h and 2h + 1)
// is node numRanks() + h - 1, so the root is node numRanks() and the switch
// directly above ranks 2j and 2j + 1 is node 3 * numRanks() / 2 + j - 1.
//
// A torus dimension of size 2 has one link between its two nodes, not two
// parallel ones: the wraparound link coincides with the direct link. A
// dimension of size 1 has no links.

#include "ir/Expr.h"
#include "ir/Schedule.h"
#include "ir/TopologyKind.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace collc {

/// A directed channel: one direction of a bidirectional link.
struct Channel {
  int64_t from = 0;
  int64_t to = 0;
  friend bool operator==(const Channel &a, const Channel &b) {
    return a.from == b.from && a.to == b.to;
  }
  friend bool operator<(const Channel &a, const Channel &b) {
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  }
  /// "3->4", as messages name it.
  std::string text() const {
    return std::to_string(from) + "->" + std::to_string(to);
  }
};

/// The port model (000 §4.1, §4.7.2): single-port ranks send at most one
/// message and receive at most one per step; all-port ranks use every link
/// at once, one message per channel.
enum class PortModel { Single, All };

/// Who moves a message's bytes. Sender: its sender's port, as on a network
/// (the port model). Receiver: its receiver, copying from the sender's
/// memory, as MPI libraries do on shared memory above their eager size
/// (Open MPI's CMA/XPMEM single copy), so that a rank starting several
/// messages at once pays a start-up for each but their words once, at
/// their receivers (cost::ScheduleCost::line).
enum class CopyModel { Sender, Receiver };

/// What a machine's ranks share, as a cost model states it: how a schedule
/// is priced there (cost::ScheduleCost::line).
struct Machine {
  int64_t cores = 0; // the cores the ranks share (0: a core each)
  CopyModel copies = CopyModel::Sender;
  /// Where receivers copy: what a word costs its sender's memory for each
  /// receiver copying it at once, in words (0: nothing). A rank serving k
  /// at once takes at least k·serve of their words' time.
  double serve = 0;
};

/// What one message costs from a size up, t_s + m·t_w: a model's segment
/// (sema's CostModel). One line does not follow a machine across its eager
/// limit and out of its caches, so a model may give several, fromBytes
/// ascending, the first from 0.
struct MessageCost {
  int64_t fromBytes = 0;
  double ts = 0;        // seconds per message (start-up)
  double twPerByte = 0; // seconds per byte
};

/// The segment of `segments` (non-empty, ascending) a message of `bytes`
/// falls in.
inline MessageCost segmentOf(llvm::ArrayRef<MessageCost> segments,
                             double bytes) {
  MessageCost c = segments.front();
  for (const MessageCost &s : segments)
    if (bytes >= static_cast<double>(s.fromBytes))
      c = s;
  return c;
}

/// The binary-reflected Gray code and its inverse.
inline int64_t grayCode(int64_t k) { return k ^ (k >> 1); }
int64_t grayRank(int64_t node);

class Topology {
public:
  /// Graphs up to this many nodes precompute their next-hop table.
  static constexpr int64_t maxTabulatedGraphNodes = 1024;

  /// Builds a topology, checking its parameters. The error text is a complete
  /// sentence fragment suitable after `error: ` (e.g. "ring needs at least 2
  /// ranks, got 1"); the caller attaches the source location.
  ///   Ring, Linear, Full: dims = {n}
  ///   Mesh, Torus:        dims = {d0, d1, ...} (any number of dimensions >= 1)
  ///   Hypercube:          dims = {dim} (1..20; 2^dim ranks)
  ///   Tree:               dims = {leaves} (a power of two >= 2)
  ///   Graph:              dims = {n}, edges = undirected pairs
  ///   order: Gray only for a hypercube.
  static llvm::Expected<Topology>
  make(TopologyKind kind, llvm::ArrayRef<int64_t> dims,
       llvm::ArrayRef<std::pair<int64_t, int64_t>> edges = {},
       RankOrder order = RankOrder::Natural);

  TopologyKind kind() const { return kindValue; }
  RankOrder order() const { return orderValue; }
  llvm::ArrayRef<int64_t> dims() const { return dimsValue; }
  int64_t numRanks() const { return ranks; }
  int64_t numNodes() const { return nodes; }

  /// e.g. "ring(8)", "torus(4, 4)", "hypercube(dim: 3)".
  std::string describe() const;

  /// Every directed channel, sorted. Built on the first call and shared by
  /// copies. Nothing in collc needs the list of a regular topology: full(n)
  /// has n(n - 1) channels, so its users ask hasChannel(), neighbours() and
  /// channelKey() instead, which cost nothing to hold at any size.
  llvm::ArrayRef<Channel> channels() const;
  /// A graph's undirected edges (from < to), sorted; empty for the other
  /// kinds, whose links follow from their dimensions.
  std::vector<std::pair<int64_t, int64_t>> graphEdges() const;
  /// A number naming channel (from -> to) among all node pairs, below
  /// numNodes()^2, for tables keyed by channel (the ends need not be a
  /// channel; hasChannel() says whether they are).
  uint64_t channelKey(int64_t from, int64_t to) const {
    return static_cast<uint64_t>(from) * static_cast<uint64_t>(nodes) +
           static_cast<uint64_t>(to);
  }
  Channel channelOfKey(uint64_t key) const {
    return {static_cast<int64_t>(key / static_cast<uint64_t>(nodes)),
            static_cast<int64_t>(key % static_cast<uint64_t>(nodes))};
  }
  /// channels().size(), computed without building the list.
  int64_t numChannels() const;
  bool hasChannel(int64_t from, int64_t to) const;
  /// The nodes `node` has a channel to, ascending.
  void neighbours(int64_t node, llvm::SmallVectorImpl<int64_t> &out) const;

  /// The channels a message from rank `src` to rank `dst` crosses, in order.
  /// Empty when src == dst.
  void route(int64_t src, int64_t dst,
             llvm::SmallVectorImpl<Channel> &out) const;
  /// Number of channels on route(src, dst).
  int64_t distance(int64_t src, int64_t dst) const;

  /// Mesh/torus/hypercube coordinates of a rank (row-major; for hypercube the
  /// bits, least significant first).
  llvm::SmallVector<int64_t, 4> coordinates(int64_t rank) const;

private:
  TopologyKind kindValue = TopologyKind::Full;
  RankOrder orderValue = RankOrder::Natural;
  std::vector<int64_t> dimsValue;
  /// The hypercube node rank k sits at, and back (the identity unless Gray).
  int64_t nodeOf(int64_t rank) const {
    return orderValue == RankOrder::Gray ? grayCode(rank) : rank;
  }
  int64_t rankOf(int64_t node) const {
    return orderValue == RankOrder::Gray ? grayRank(node) : node;
  }
  int64_t ranks = 0;
  int64_t nodes = 0;
  struct ChannelCache {
    std::once_flag built;
    std::vector<Channel> list;
  };
  std::shared_ptr<ChannelCache> channelCache;
  // Graph only: sorted neighbours, per node. The other kinds compute their
  // neighbours arithmetically (a tree from heap positions).
  std::vector<std::vector<int64_t>> adjacency;
  // Graph only: next hop towards each destination, per node
  // (nextHop[node * numNodes + dst]), for graphs of at most
  // maxTabulatedGraphNodes nodes; larger graphs run the same breadth-first
  // search per route instead of holding a quadratic table. Tree routes are
  // computed from heap positions in O(log n), which needs no table.
  std::vector<int32_t> nextHop;

  // Breadth-first search from `dst`; hop[node] is the next node towards dst.
  void graphNextHops(int64_t dst, std::vector<int32_t> &hop) const;
  /// route() on a ring: the shorter direction, a tie clockwise.
  void routeRing(int64_t src, int64_t dst,
                 llvm::SmallVectorImpl<Channel> &out) const;
  /// route() on a linear array: the only path.
  void routeLinear(int64_t src, int64_t dst,
                   llvm::SmallVectorImpl<Channel> &out) const;
  /// route() on a mesh or torus: dimension-ordered, the last dimension first.
  void routeMeshOrTorus(int64_t src, int64_t dst,
                        llvm::SmallVectorImpl<Channel> &out) const;
  /// route() on a hypercube: e-cube, the least significant bit first.
  void routeHypercube(int64_t src, int64_t dst,
                      llvm::SmallVectorImpl<Channel> &out) const;
  /// route() on a tree: up to the lowest common ancestor, then down.
  void routeTree(int64_t src, int64_t dst,
                 llvm::SmallVectorImpl<Channel> &out) const;
  /// route() on a graph: next hops from the table, or one search if untabled.
  void routeGraph(int64_t src, int64_t dst,
                  llvm::SmallVectorImpl<Channel> &out) const;
  // A graph's adjacency and next hops from its edges, or why they make no
  // connected graph (a node out of range, a self-loop, a repeated edge).
  llvm::Error connect(llvm::ArrayRef<std::pair<int64_t, int64_t>> edges);
};

/// The IR's template of one concrete topology: its dimensions as constants.
ir::TopologyTemplate templateOf(const Topology &topology, llvm::SMLoc loc = {});

/// The symbolic form of the same routing, for the prover: expressions over
/// ir::Expr operands (constants or variables), so one query covers every rank
/// and, where the dimensions are variables, every size. `dims` are as for
/// Topology::make. The regular topologies (ring, linear, mesh, torus,
/// hypercube, full) and the balanced tree have closed forms; for a graph
/// (and for a wrong number of dims) these return null and the prover
/// enumerates the concrete routes instead. Constant sub-expressions are
/// folded as they are built.
namespace symbolic {
/// Number of ranks.
ir::ExprRef numRanks(TopologyKind kind, llvm::ArrayRef<ir::ExprRef> dims);
/// Number of nodes, the ends of channels: the ranks, and a tree's switches.
ir::ExprRef numNodes(TopologyKind kind, llvm::ArrayRef<ir::ExprRef> dims);
/// Nonzero iff (from -> to) is a channel (both nodes assumed in range).
ir::ExprRef isChannel(TopologyKind kind, llvm::ArrayRef<ir::ExprRef> dims,
                      ir::ExprRef from, ir::ExprRef to,
                      RankOrder order = RankOrder::Natural);
/// Nonzero iff channel (from -> to) lies on route(src, dst) (src and dst
/// ranks, from and to nodes, all in range, and (from -> to) assumed to be a
/// channel).
ir::ExprRef onRoute(TopologyKind kind, llvm::ArrayRef<ir::ExprRef> dims,
                    ir::ExprRef src, ir::ExprRef dst, ir::ExprRef from,
                    ir::ExprRef to, RankOrder order = RankOrder::Natural);
/// onRoute in legs, onRoute being their disjunction: a channel lies on leg
/// k of one route and leg k' of another only when k = k'. A mesh's or
/// torus's legs are its dimensions (a channel moves along one); the other
/// topologies have one leg. Empty where onRoute is null.
llvm::SmallVector<ir::ExprRef, 4>
onRouteLegs(TopologyKind kind, llvm::ArrayRef<ir::ExprRef> dims,
            ir::ExprRef src, ir::ExprRef dst, ir::ExprRef from, ir::ExprRef to,
            RankOrder order = RankOrder::Natural);
} // namespace symbolic

} // namespace collc
