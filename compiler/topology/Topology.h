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
// numRanks().. numNodes()-1 (ranks are its leaves).

#include "ir/Expr.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace collc {

enum class TopologyKind { Ring, Linear, Mesh, Torus, Hypercube, Tree, Full, Graph };

llvm::StringRef topologyKindName(TopologyKind kind);

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
};

/// Largest number of ranks collc accepts in one topology.
constexpr int64_t maxRanks = int64_t(1) << 20;

class Topology {
public:
  /// Builds a topology, checking its parameters. The error text is a complete
  /// sentence fragment suitable after `error: ` (e.g. "ring needs at least 2
  /// ranks, got 1"); the caller attaches the source location.
  ///   Ring, Linear, Full: dims = {n}
  ///   Mesh, Torus:        dims = {d0, d1, ...} (any number of dimensions >= 1)
  ///   Hypercube:          dims = {dim} (1..20; 2^dim ranks)
  ///   Tree:               dims = {leaves} (a power of two >= 2)
  ///   Graph:              dims = {n}, edges = undirected pairs
  static llvm::Expected<Topology>
  make(TopologyKind kind, llvm::ArrayRef<int64_t> dims,
       llvm::ArrayRef<std::pair<int64_t, int64_t>> edges = {});

  TopologyKind kind() const { return kindValue; }
  llvm::ArrayRef<int64_t> dims() const { return dimsValue; }
  int64_t numRanks() const { return ranks; }
  int64_t numNodes() const { return nodes; }

  /// e.g. "ring(8)", "torus(4, 4)", "hypercube(dim: 3)".
  std::string describe() const;

  /// Every directed channel, sorted.
  llvm::ArrayRef<Channel> channels() const { return channelList; }
  bool hasChannel(int64_t from, int64_t to) const;

  /// The channels a message from rank `src` to rank `dst` crosses, in order.
  /// Empty when src == dst.
  void route(int64_t src, int64_t dst, llvm::SmallVectorImpl<Channel> &out) const;
  /// Number of channels on route(src, dst).
  int64_t distance(int64_t src, int64_t dst) const;

  /// Mesh/torus/hypercube coordinates of a rank (row-major; for hypercube the
  /// bits, least significant first).
  llvm::SmallVector<int64_t, 4> coordinates(int64_t rank) const;

private:
  TopologyKind kindValue = TopologyKind::Full;
  std::vector<int64_t> dimsValue;
  int64_t ranks = 0;
  int64_t nodes = 0;
  std::vector<Channel> channelList;
  std::vector<std::vector<int64_t>> adjacency; // sorted neighbours, per node
  // Graph and tree: next hop towards each destination, per node
  // (nextHop[node * numNodes + dst]); empty for the regular topologies,
  // which route arithmetically.
  std::vector<int32_t> nextHop;
};

/// The symbolic form of the same routing, for the prover: expressions over
/// ir::Expr operands (constants or variables), so one query covers every rank
/// and, where the dimensions are variables, every size. `dims` are as for
/// Topology::make. Only the regular topologies (ring, linear, mesh, torus,
/// hypercube, full) have closed forms; for tree and graph these return null
/// and the prover enumerates the concrete routes instead.
namespace symbolic {
/// Number of ranks.
ir::ExprRef numRanks(TopologyKind kind, llvm::ArrayRef<ir::ExprRef> dims);
/// Nonzero iff (from -> to) is a channel (both ranks assumed in range).
ir::ExprRef isChannel(TopologyKind kind, llvm::ArrayRef<ir::ExprRef> dims,
                      ir::ExprRef from, ir::ExprRef to);
/// Nonzero iff channel (from -> to) lies on route(src, dst) (all four ranks
/// assumed in range and (from -> to) assumed to be a channel).
ir::ExprRef onRoute(TopologyKind kind, llvm::ArrayRef<ir::ExprRef> dims,
                    ir::ExprRef src, ir::ExprRef dst, ir::ExprRef from,
                    ir::ExprRef to);
} // namespace symbolic

} // namespace collc
