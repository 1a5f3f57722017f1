#pragma once
// What the IR says of a topology without building one: its kind, the order
// of ranks on a hypercube's nodes, and the largest number of ranks collc
// accepts. topology/ builds and routes topologies on top of these; the IR
// needs no more of it, so ir/ does not depend on topology/.

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace collc {

enum class TopologyKind {
  Ring,
  Linear,
  Mesh,
  Torus,
  Hypercube,
  Tree,
  Full,
  Graph
};

llvm::StringRef topologyKindName(TopologyKind kind);

/// Whether every member has a power of two ranks (a hypercube's 2^d), so
/// that `x % p` is `x`'s low bits (ir::sendersOf).
inline bool sizeIsPowerOfTwo(TopologyKind kind) {
  return kind == TopologyKind::Hypercube;
}

/// Whether a schedule for topologies of kind `part` runs on those of kind
/// `whole` of the same dimensions, ranks and channels included: the same
/// kind, or one whose channels are all the whole's (a linear array in a
/// ring, a mesh in a torus of its shape). There it takes the whole's routes.
inline bool runsInside(TopologyKind part, TopologyKind whole) {
  return part == whole ||
         (part == TopologyKind::Linear && whole == TopologyKind::Ring) ||
         (part == TopologyKind::Mesh && whole == TopologyKind::Torus);
}

/// Where the ranks sit. Natural: rank k is node k. Gray (hypercube only):
/// rank k is node G(k) = k ^ (k >> 1), the binary-reflected Gray code, so
/// ranks k and k + 1 (and p - 1 and 0) are neighbours: 000 §4.6.2 maps a
/// linear array onto the cube this way for the circular shift. Channels,
/// routes and coordinates are those of the nodes, named by their ranks.
enum class RankOrder { Natural, Gray };

/// Largest number of ranks collc accepts in one topology.
constexpr int64_t maxRanks = int64_t(1) << 20;

} // namespace collc
