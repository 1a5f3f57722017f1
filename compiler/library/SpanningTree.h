#pragma once
// Schedules built for one graph, where the library has nothing that fits:
// every collective but scan on a breadth-first spanning tree of the graph
// from the root (rank 0 for the collectives without one); scan along the
// ranks in order, and all-to-all also directly.
//
// The tree: each rank's parent is its lowest-numbered neighbour one hop
// closer to the root, the hop the graph's routing takes towards it, so
// every message crosses one link of the graph. Broadcast is the telephone
// schedule on that tree: a rank that has the message passes it to one child
// a step, the child whose subtree takes longest first, which is the fewest
// steps a single-port broadcast on the tree can take. Scatter runs the same
// steps, each child getting the blocks of its subtree; gather and reduce
// run them backwards, each rank sending its subtree's data up once its
// children have. The others are two of these: all-reduce is the reduction,
// then the broadcast (000 §4.3's simple method); all-gather the gather,
// then the broadcast; reduce-scatter the reduction, then the scatter;
// all-to-all and shift gather every block at rank 0, then scatter them by
// destination. Those pass everything through the root, so they are a
// fallback, not fast; all-to-all also has the direct exchange, where no
// two of a step's messages share a link. The schedules are concrete (one
// member, their transfers written out) and are proved like any other.

#include "ir/Schedule.h"
#include "library/Algorithms.h"
#include "topology/Topology.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SMLoc.h"

#include <string>

namespace collc::library {

/// `want` on graph `graph` over its spanning tree, named `name`; an error
/// for another collective or topology.
llvm::Expected<ir::Schedule> spanningTreeSchedule(const std::string &name,
                                                  const ir::Collective &want,
                                                  const Topology &graph,
                                                  llvm::SMLoc loc);

/// The linear array's scan (000 §4.3, `using linear_array`) over any
/// topology's routes (a graph's, or a mesh's, a torus's or a tree's, which
/// the library's scans do not run on): in step k rank k - 1 passes its
/// prefix to rank k, which folds in its own, lower ranks first, so it keeps
/// rank order (an operator that does not commute included). p - 1 steps of
/// one message; an exclusive scan passes the prefixes in a buffer of their
/// own, its result starting empty, and a suffix scan runs the chain from
/// rank p - 1 down. A tree's subtrees are not runs of
/// consecutive ranks, so the spanning tree has no scan.
llvm::Expected<ir::Schedule> chainScanSchedule(const std::string &name,
                                               const ir::Collective &want,
                                               const Topology &graph,
                                               llvm::SMLoc loc);
/// All-to-all on graph `graph` with no rank in between (000 §4.5.1's
/// direct exchange, 001's A1): in step s = 1 .. p - 1 each rank r sends its
/// block for (r + s) mod p straight there, along the graph's route. Each
/// rank sends and receives one message a step; where messages of a step
/// share a link, its simulation fails congestion and the resolution
/// refuses it, naming the channel.
///
/// A permutation on any topology goes the same way in one step (004 §4.4's
/// direct routing: e-cube routes on a cube): each rank whose block moves
/// sends it to π(r). Bit reversal on a cube of 4 dimensions or more
/// congests, and is refused so.
llvm::Expected<ir::Schedule> directExchangeSchedule(const std::string &name,
                                                    const ir::Collective &want,
                                                    const Topology &topology,
                                                    llvm::SMLoc loc);

} // namespace collc::library
