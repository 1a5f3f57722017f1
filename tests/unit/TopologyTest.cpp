#include "topology/Topology.h"

#include "llvm/ADT/STLExtras.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace collc;
using ir::Expr;
using ir::ExprRef;

namespace {

using Edges = std::vector<std::pair<int64_t, int64_t>>;

Topology build(TopologyKind kind, std::vector<int64_t> dims,
               const Edges &edges = {},
               RankOrder order = RankOrder::Natural) {
  llvm::Expected<Topology> topo = Topology::make(kind, dims, edges, order);
  if (!topo) {
    ADD_FAILURE() << llvm::toString(topo.takeError());
    return llvm::cantFail(Topology::make(TopologyKind::Full, {2}));
  }
  return std::move(*topo);
}

/// The route as the list of nodes it visits, src first.
std::vector<int64_t> path(const Topology &topo, int64_t src, int64_t dst) {
  llvm::SmallVector<Channel, 16> channels;
  topo.route(src, dst, channels);
  std::vector<int64_t> nodes{src};
  for (const Channel &c : channels)
    nodes.push_back(c.to);
  return nodes;
}

/// Hop counts from every node to `dst` over channels(), by breadth-first
/// search: an independent measure of the shortest route.
std::vector<int64_t> hopsTo(const Topology &topo, int64_t dst) {
  std::vector<std::vector<int64_t>> into(topo.numNodes());
  for (const Channel &c : topo.channels())
    into[c.to].push_back(c.from);
  std::vector<int64_t> dist(topo.numNodes(), -1);
  std::vector<int64_t> queue{dst};
  dist[dst] = 0;
  for (size_t head = 0; head < queue.size(); ++head)
    for (int64_t prev : into[queue[head]])
      if (dist[prev] < 0) {
        dist[prev] = dist[queue[head]] + 1;
        queue.push_back(prev);
      }
  return dist;
}

//===----------------------------------------------------------------------===//
// Parameters and errors
//===----------------------------------------------------------------------===//

struct BadParameters {
  TopologyKind kind;
  std::vector<int64_t> dims;
  Edges edges;
  const char *error;
};

TEST(Topology, RejectsBadParametersWithExactText) {
  const int64_t big = int64_t(1) << 40;
  const BadParameters table[] = {
      {TopologyKind::Ring, {1}, {}, "ring needs at least 2 ranks, got 1"},
      {TopologyKind::Ring, {-3}, {}, "ring needs at least 2 ranks, got -3"},
      {TopologyKind::Ring, {4, 4}, {}, "ring takes 1 parameter, got 2"},
      {TopologyKind::Ring,
       {2000000},
       {},
       "ring(2000000) has more than 1048576 ranks, the most collc supports"},
      {TopologyKind::Linear, {0}, {}, "linear needs at least 2 ranks, got 0"},
      {TopologyKind::Full, {1}, {}, "full needs at least 2 ranks, got 1"},
      {TopologyKind::Hypercube,
       {0},
       {},
       "hypercube dimension must be between 1 and 20, got 0"},
      {TopologyKind::Hypercube,
       {21},
       {},
       "hypercube dimension must be between 1 and 20, got 21"},
      {TopologyKind::Mesh,
       {4, 0},
       {},
       "mesh dimension 2 is 0; every dimension needs at least 1 node"},
      {TopologyKind::Torus,
       {-1, 4},
       {},
       "torus dimension 1 is -1; every dimension needs at least 1 node"},
      {TopologyKind::Mesh, {}, {}, "mesh needs at least 1 dimension"},
      {TopologyKind::Mesh,
       {1, 1},
       {},
       "mesh(1, 1) has 1 rank; a mesh needs at least 2"},
      {TopologyKind::Torus,
       {1},
       {},
       "torus(1) has 1 rank; a torus needs at least 2"},
      {TopologyKind::Torus,
       {2048, 1024},
       {},
       "torus(2048, 1024) has more than 1048576 ranks, the most collc "
       "supports"},
      // 2^40 * 2^40 overflows int64_t; the check must come before it.
      {TopologyKind::Mesh,
       {big, big},
       {},
       "mesh(1099511627776, 1099511627776) has more than 1048576 ranks, the "
       "most collc supports"},
      {TopologyKind::Mesh,
       {INT64_MAX, 2},
       {},
       "mesh(9223372036854775807, 2) has more than 1048576 ranks, the most "
       "collc supports"},
      {TopologyKind::Tree,
       {6},
       {},
       "tree leaves must be a power of two >= 2, got 6"},
      {TopologyKind::Tree,
       {1},
       {},
       "tree leaves must be a power of two >= 2, got 1"},
      {TopologyKind::Tree,
       {int64_t(1) << 21},
       {},
       "tree(leaves: 2097152) has more than 1048576 ranks, the most collc "
       "supports"},
      {TopologyKind::Graph, {1}, {}, "graph needs at least 2 nodes, got 1"},
      {TopologyKind::Graph,
       {6},
       {{0, 1}, {3, 9}},
       "edge 3-9 names node 9, but graph(6) has nodes 0..5"},
      {TopologyKind::Graph,
       {6},
       {{-1, 2}},
       "edge -1-2 names node -1, but graph(6) has nodes 0..5"},
      {TopologyKind::Graph, {3}, {{0, 1}, {2, 2}}, "edge 2-2 is a self-loop"},
      {TopologyKind::Graph,
       {3},
       {{1, 2}, {0, 1}, {2, 1}},
       "edge 2-1 repeats edge 1-2"},
      {TopologyKind::Graph,
       {6},
       {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {4, 5}},
       "graph(6) is not connected: node 4 cannot be reached from node 0"},
      {TopologyKind::Ring,
       {4},
       {{0, 1}},
       "ring takes no edge list; only graph does"},
  };
  for (const BadParameters &row : table) {
    llvm::Expected<Topology> topo =
        Topology::make(row.kind, row.dims, row.edges);
    ASSERT_FALSE(static_cast<bool>(topo)) << row.error;
    EXPECT_EQ(llvm::toString(topo.takeError()), row.error);
  }
}

TEST(Topology, AcceptsLimitsAndDescribesItself) {
  struct Row {
    TopologyKind kind;
    std::vector<int64_t> dims;
    Edges edges;
    const char *text;
    int64_t ranks, nodes;
  } table[] = {
      {TopologyKind::Ring, {8}, {}, "ring(8)", 8, 8},
      {TopologyKind::Ring, {2}, {}, "ring(2)", 2, 2},
      {TopologyKind::Linear, {5}, {}, "linear(5)", 5, 5},
      {TopologyKind::Mesh, {4, 4}, {}, "mesh(4, 4)", 16, 16},
      {TopologyKind::Mesh, {2, 1}, {}, "mesh(2, 1)", 2, 2},
      {TopologyKind::Torus, {2, 3, 4}, {}, "torus(2, 3, 4)", 24, 24},
      {TopologyKind::Hypercube, {3}, {}, "hypercube(dim: 3)", 8, 8},
      {TopologyKind::Hypercube,
       {20},
       {},
       "hypercube(dim: 20)",
       1 << 20,
       1 << 20},
      {TopologyKind::Tree, {8}, {}, "tree(leaves: 8)", 8, 15},
      {TopologyKind::Full, {16}, {}, "full(16)", 16, 16},
      {TopologyKind::Graph,
       {6},
       {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}},
       "graph(6)",
       6,
       6},
  };
  for (const Row &row : table) {
    Topology topo = build(row.kind, row.dims, row.edges);
    EXPECT_EQ(topo.describe(), row.text);
    EXPECT_EQ(topo.numRanks(), row.ranks) << row.text;
    EXPECT_EQ(topo.numNodes(), row.nodes) << row.text;
  }
}

TEST(Topology, CoordinatesAreRowMajorAndBitsLeastSignificantFirst) {
  Topology mesh = build(TopologyKind::Mesh, {2, 3});
  EXPECT_EQ(mesh.coordinates(4), (llvm::SmallVector<int64_t, 4>{1, 1}));
  EXPECT_EQ(mesh.coordinates(2), (llvm::SmallVector<int64_t, 4>{0, 2}));
  Topology cube = build(TopologyKind::Hypercube, {3});
  EXPECT_EQ(cube.coordinates(6), (llvm::SmallVector<int64_t, 4>{0, 1, 1}));
}

//===----------------------------------------------------------------------===//
// Specific routes
//===----------------------------------------------------------------------===//

using Path = std::vector<int64_t>;

TEST(Topology, RingTakesShorterWayAndBreaksTiesClockwise) {
  Topology ring = build(TopologyKind::Ring, {8});
  EXPECT_EQ(path(ring, 0, 4), (Path{0, 1, 2, 3, 4}));
  EXPECT_EQ(path(ring, 0, 5), (Path{0, 7, 6, 5}));
  EXPECT_EQ(path(ring, 6, 1), (Path{6, 7, 0, 1}));
  EXPECT_EQ(path(ring, 5, 1), (Path{5, 6, 7, 0, 1})); // tie, across 7 -> 0
  EXPECT_EQ(path(ring, 3, 3), (Path{3}));
  Topology two = build(TopologyKind::Ring, {2});
  EXPECT_EQ(path(two, 1, 0), (Path{1, 0}));
  EXPECT_EQ(two.channels().size(), 2u); // one link, not two parallel ones
}

TEST(Topology, LinearHasNoWraparound) {
  Topology line = build(TopologyKind::Linear, {6});
  EXPECT_EQ(path(line, 5, 0), (Path{5, 4, 3, 2, 1, 0}));
  EXPECT_FALSE(line.hasChannel(5, 0));
}

TEST(Topology, MeshRoutesAlongTheRowThenTheColumn) {
  Topology mesh = build(TopologyKind::Mesh, {4, 4});
  // Rank = row * 4 + column. 0 = (0, 0) -> 9 = (2, 1): column first.
  EXPECT_EQ(path(mesh, 0, 9), (Path{0, 1, 5, 9}));
  EXPECT_EQ(path(mesh, 15, 0), (Path{15, 14, 13, 12, 8, 4, 0}));
  EXPECT_FALSE(mesh.hasChannel(3, 0)); // no wraparound
  Topology cube = build(TopologyKind::Mesh, {2, 2, 2});
  EXPECT_EQ(path(cube, 0, 7), (Path{0, 1, 3, 7}));
}

TEST(Topology, TorusWrapsAroundAndBreaksTiesUpwards) {
  Topology torus = build(TopologyKind::Torus, {4, 4});
  EXPECT_EQ(path(torus, 0, 3), (Path{0, 3}));       // wraparound in a row
  EXPECT_EQ(path(torus, 0, 12), (Path{0, 12}));     // and in a column
  EXPECT_EQ(path(torus, 0, 2), (Path{0, 1, 2}));    // tie: upwards
  EXPECT_EQ(path(torus, 3, 1), (Path{3, 0, 1}));    // tie: upwards, wrapping
  EXPECT_EQ(path(torus, 13, 2), (Path{13, 14, 2})); // (3,1)->(0,2): row, wrap
  EXPECT_EQ(torus.distance(0, 10), 4);
  // A dimension of size 2: the wraparound link is the direct one.
  Topology thin = build(TopologyKind::Torus, {2, 3});
  EXPECT_EQ(thin.numChannels(), 6 + 12);
  EXPECT_EQ(path(thin, 4, 0), (Path{4, 3, 0}));
}

TEST(Topology, HypercubeUsesECubeRouting) {
  Topology cube = build(TopologyKind::Hypercube, {3});
  EXPECT_EQ(path(cube, 0, 7), (Path{0, 1, 3, 7}));
  EXPECT_EQ(path(cube, 6, 1), (Path{6, 7, 5, 1}));
  EXPECT_EQ(path(cube, 5, 4), (Path{5, 4}));
}

// 000 §4.6.2, Figure 4.23: in Gray-code order rank k sits on node
// k ^ (k >> 1), so consecutive ranks (and the last and the first) are
// neighbours, ranks 2^i apart are two links apart, and routes are e-cube
// routes between the nodes.
TEST(Topology, GrayOrderPutsTheRingOnTheCube) {
  Topology cube = build(TopologyKind::Hypercube, {3}, {}, RankOrder::Gray);
  EXPECT_EQ(cube.describe(), "hypercube(dim: 3, order: gray)");
  for (int64_t k = 0; k < 8; ++k) {
    EXPECT_TRUE(cube.hasChannel(k, (k + 1) % 8)) << k;
    EXPECT_EQ(cube.distance(k, (k + 2) % 8), 2) << k;
    EXPECT_EQ(cube.distance(k, (k + 4) % 8), 2) << k;
    EXPECT_EQ(grayRank(grayCode(k)), k);
  }
  // Rank 5 is node 7: e-cube 0 -> 1 -> 3 -> 7 is ranks 0 -> 1 -> 2 -> 5.
  EXPECT_EQ(path(cube, 0, 5), (std::vector<int64_t>{0, 1, 2, 5}));
  EXPECT_EQ(cube.coordinates(5), (llvm::SmallVector<int64_t, 4>{1, 1, 1}));
  llvm::Expected<Topology> ring =
      Topology::make(TopologyKind::Ring, {8}, {}, RankOrder::Gray);
  ASSERT_FALSE(bool(ring));
  EXPECT_EQ(llvm::toString(ring.takeError()),
            "only a hypercube numbers its ranks in Gray-code order");
}

TEST(Topology, FullIsOneHop) {
  Topology full = build(TopologyKind::Full, {5});
  EXPECT_EQ(path(full, 4, 1), (Path{4, 1}));
  EXPECT_EQ(full.numChannels(), 20);
}

TEST(Topology, TreeGoesUpToTheCommonSwitchAndDown) {
  Topology tree = build(TopologyKind::Tree, {8});
  // Switches in heap order: root 8; 9, 10; 11 (above 0,1), 12, 13, 14.
  EXPECT_EQ(path(tree, 0, 7), (Path{0, 11, 9, 8, 10, 14, 7}));
  EXPECT_EQ(path(tree, 0, 1), (Path{0, 11, 1}));
  EXPECT_EQ(path(tree, 5, 2), (Path{5, 13, 10, 8, 9, 12, 2}));
  EXPECT_EQ(path(tree, 2, 3), (Path{2, 12, 3}));
  EXPECT_EQ(tree.distance(3, 4), 6);
  EXPECT_EQ(tree.numChannels(), 28);
  llvm::SmallVector<int64_t, 4> next;
  tree.neighbours(9, next);
  EXPECT_EQ(next, (llvm::SmallVector<int64_t, 4>{8, 11, 12}));
}

TEST(Topology, GraphTakesShortestPathLowestNeighbourFirst) {
  // The graph of docs/language.md: a 6-cycle with the chord 0-3.
  Topology net =
      build(TopologyKind::Graph, {6},
            {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}, {0, 3}});
  EXPECT_EQ(path(net, 1, 4), (Path{1, 0, 3, 4})); // 1->2->3->4 ties; 0 < 2
  EXPECT_EQ(path(net, 0, 4), (Path{0, 3, 4}));    // 0->5->4 ties; 3 < 5
  EXPECT_EQ(path(net, 2, 5), (Path{2, 1, 0, 5}));
  EXPECT_EQ(path(net, 4, 1), (Path{4, 3, 0, 1}));
  EXPECT_EQ(net.distance(2, 5), 3);
}

// Seed 000, section 4.2, Figure 4.12: the third step of the hypercube
// all-to-all broadcast (Fig. 4.11(c), every node exchanging with node i ^ 4)
// mapped onto an 8-node ring sends four messages over one channel.
TEST(Topology, Fig4_12_HypercubeStepOnRingCongests) {
  Topology ring = build(TopologyKind::Ring, {8});
  std::map<Channel, int> load;
  llvm::SmallVector<Channel, 8> hops;
  for (int64_t src : {0, 1, 2, 3}) {
    ring.route(src, src + 4, hops);
    for (const Channel &c : hops)
      ++load[c];
  }
  EXPECT_EQ(load[(Channel{3, 4})], 4);
  int busiest = 0;
  for (const auto &entry : load)
    busiest = std::max(busiest, entry.second);
  EXPECT_EQ(busiest, 4);

  // The same step on the hypercube itself uses each channel at most once.
  Topology cube = build(TopologyKind::Hypercube, {3});
  std::set<Channel> used;
  for (int64_t src = 0; src < 8; ++src) {
    cube.route(src, src ^ 4, hops);
    for (const Channel &c : hops)
      EXPECT_TRUE(used.insert(c).second) << c.from << "->" << c.to;
  }
}

//===----------------------------------------------------------------------===//
// Properties over all pairs
//===----------------------------------------------------------------------===//

struct Shape {
  TopologyKind kind;
  std::vector<int64_t> dims;
  Edges edges = {};
  RankOrder order = RankOrder::Natural;
};

std::vector<Shape> allShapes() {
  std::vector<Shape> shapes;
  for (int64_t n = 2; n <= 9; ++n)
    shapes.push_back({TopologyKind::Ring, {n}});
  for (int64_t n = 2; n <= 6; ++n) {
    shapes.push_back({TopologyKind::Linear, {n}});
    shapes.push_back({TopologyKind::Full, {n}});
  }
  for (auto dims : std::vector<std::vector<int64_t>>{
           {2, 3}, {3, 3}, {2, 2, 2}, {4, 4}, {5}, {3, 1, 2}, {1, 4}}) {
    shapes.push_back({TopologyKind::Mesh, dims});
    shapes.push_back({TopologyKind::Torus, dims});
  }
  for (auto dims :
       std::vector<std::vector<int64_t>>{{3, 4}, {2, 3, 4}, {5, 5}, {2, 2}})
    shapes.push_back({TopologyKind::Torus, dims});
  for (int64_t d = 1; d <= 4; ++d) {
    shapes.push_back({TopologyKind::Hypercube, {d}});
    shapes.push_back({TopologyKind::Hypercube, {d}, {}, RankOrder::Gray});
  }
  for (int64_t leaves : {2, 4, 8, 16})
    shapes.push_back({TopologyKind::Tree, {leaves}});
  shapes.push_back({TopologyKind::Graph,
                    {6},
                    {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}, {0, 3}}});
  // A 4x4 grid as a graph with extra diagonals: many equal-length paths.
  Edges grid;
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      int64_t v = r * 4 + c;
      if (c + 1 < 4)
        grid.push_back({v, v + 1});
      if (r + 1 < 4)
        grid.push_back({v + 4, v});
      if (r + 1 < 4 && c + 1 < 4 && (r + c) % 2 == 0)
        grid.push_back({v, v + 5});
    }
  shapes.push_back({TopologyKind::Graph, {16}, grid});
  return shapes;
}

/// Checks that each step of route(src, dst) goes to the lowest-numbered
/// neighbour one hop closer to dst (the graph tie rule).
void expectGraphTieRule(const Topology &topo, int64_t src, int64_t dst,
                        const std::vector<int64_t> &dist) {
  std::vector<int64_t> nodes = path(topo, src, dst);
  llvm::SmallVector<int64_t, 8> next;
  for (size_t i = 0; i + 1 < nodes.size(); ++i) {
    topo.neighbours(nodes[i], next);
    int64_t expected = -1;
    for (int64_t n : next)
      if (dist[n] == dist[nodes[i]] - 1) {
        expected = n;
        break;
      }
    ASSERT_EQ(nodes[i + 1], expected)
        << topo.describe() << " " << src << "->" << dst << " at " << nodes[i];
  }
}

TEST(Topology, ChannelsAreSortedSymmetricAndMatchHasChannel) {
  for (const Shape &shape : allShapes()) {
    Topology topo = build(shape.kind, shape.dims, shape.edges, shape.order);
    std::string name = topo.describe();
    llvm::ArrayRef<Channel> channels = topo.channels();
    EXPECT_EQ(static_cast<int64_t>(channels.size()), topo.numChannels())
        << name;
    EXPECT_TRUE(std::is_sorted(channels.begin(), channels.end())) << name;
    std::set<Channel> all(channels.begin(), channels.end());
    EXPECT_EQ(all.size(), channels.size()) << name << " repeats a channel";
    for (const Channel &c : channels)
      EXPECT_TRUE(all.count({c.to, c.from})) << name << " one-way link";
    for (int64_t a = -1; a <= topo.numNodes(); ++a)
      for (int64_t b = -1; b <= topo.numNodes(); ++b)
        EXPECT_EQ(topo.hasChannel(a, b), all.count({a, b}) == 1)
            << name << " " << a << "->" << b;
    // A copy shares the same channels.
    Topology copy = topo;
    EXPECT_EQ(copy.channels(), channels) << name;
  }
}

TEST(Topology, RoutesAreShortestChainsOfChannels) {
  for (const Shape &shape : allShapes()) {
    Topology topo = build(shape.kind, shape.dims, shape.edges, shape.order);
    std::string name = topo.describe();
    llvm::SmallVector<Channel, 16> hops;
    for (int64_t dst = 0; dst < topo.numRanks(); ++dst) {
      std::vector<int64_t> dist = hopsTo(topo, dst);
      for (int64_t src = 0; src < topo.numRanks(); ++src) {
        topo.route(src, dst, hops);
        std::string pair =
            name + " " + std::to_string(src) + "->" + std::to_string(dst);
        int64_t at = src;
        for (const Channel &c : hops) {
          ASSERT_EQ(c.from, at) << pair << " is not a chain";
          ASSERT_TRUE(topo.hasChannel(c.from, c.to)) << pair;
          at = c.to;
        }
        EXPECT_EQ(at, dst) << pair;
        EXPECT_EQ(static_cast<int64_t>(hops.size()), topo.distance(src, dst))
            << pair;
        // Every rule here promises a shortest route (dimension-ordered and
        // e-cube routes are shortest; a tree path is the only one).
        EXPECT_EQ(static_cast<int64_t>(hops.size()), dist[src]) << pair;
        if (shape.kind == TopologyKind::Graph)
          expectGraphTieRule(topo, src, dst, dist);
      }
    }
  }
}

TEST(Topology, LargeGraphRoutesWithoutATable) {
  // A 1100-node cycle with chords: above maxTabulatedGraphNodes, so routes
  // come from a search per call; they must follow the same rule.
  const int64_t n = 1100;
  ASSERT_GT(n, Topology::maxTabulatedGraphNodes);
  Edges edges;
  for (int64_t v = 0; v < n; ++v)
    edges.push_back({v, (v + 1) % n});
  for (int64_t v = 0; v < n; v += 50)
    edges.push_back({v, (v + 275) % n});
  Topology topo = build(TopologyKind::Graph, {n}, edges);
  for (int64_t dst : {0, 1, 549, 550, 1099}) {
    std::vector<int64_t> dist = hopsTo(topo, dst);
    for (int64_t src = 0; src < n; src += 7) {
      EXPECT_EQ(topo.distance(src, dst), dist[src]);
      expectGraphTieRule(topo, src, dst, dist);
    }
  }
}

TEST(Topology, LargestTopologiesRouteWithoutBuildingChannels) {
  Topology cube = build(TopologyKind::Hypercube, {20});
  EXPECT_EQ(cube.numChannels(), 20 * (int64_t(1) << 20));
  EXPECT_EQ(cube.distance(0, (1 << 20) - 1), 20);
  EXPECT_TRUE(cube.hasChannel(1 << 19, 0));
  Topology tree = build(TopologyKind::Tree, {int64_t(1) << 20});
  EXPECT_EQ(tree.distance(0, (1 << 20) - 1), 40);
  llvm::SmallVector<Channel, 64> hops;
  tree.route(0, (1 << 20) - 1, hops);
  ASSERT_EQ(hops.size(), 40u);
  EXPECT_EQ(hops[19].to, tree.numRanks()); // the root switch
  Topology full = build(TopologyKind::Full, {int64_t(1) << 20});
  EXPECT_EQ(full.numChannels(), (int64_t(1) << 20) * ((int64_t(1) << 20) - 1));
  EXPECT_EQ(full.distance(7, 123456), 1);
}

//===----------------------------------------------------------------------===//
// Symbolic routing agrees with the concrete one
//===----------------------------------------------------------------------===//

int64_t eval(const ExprRef &e, llvm::ArrayRef<int64_t> env) {
  ir::EvalResult r = ir::evaluate(*e, env);
  EXPECT_TRUE(r.ok()) << ir::print(*e);
  return r.value;
}

/// Builds the symbolic forms over variables src=0, dst=1, from=2, to=3 and
/// the dimensions either as variables (slots 4..) or as constants, then
/// compares them with the concrete topology on every src, dst and channel.
void expectSymbolicAgrees(const Topology &topo, bool dimsAsVariables) {
  std::string name = topo.describe() + (dimsAsVariables ? " (variable dims)"
                                                        : " (constant dims)");
  std::vector<ExprRef> dims;
  std::vector<int64_t> env(4, 0);
  for (size_t i = 0; i < topo.dims().size(); ++i) {
    if (dimsAsVariables) {
      dims.push_back(Expr::var("d" + std::to_string(i), 4 + i));
      env.push_back(topo.dims()[i]);
    } else {
      dims.push_back(Expr::constant(topo.dims()[i]));
    }
  }
  ExprRef src = Expr::var("s", 0), dst = Expr::var("t", 1);
  ExprRef from = Expr::var("u", 2), to = Expr::var("v", 3);
  ExprRef ranks = symbolic::numRanks(topo.kind(), dims);
  ExprRef nodes = symbolic::numNodes(topo.kind(), dims);
  ExprRef isChannel =
      symbolic::isChannel(topo.kind(), dims, from, to, topo.order());
  ExprRef onRoute =
      symbolic::onRoute(topo.kind(), dims, src, dst, from, to, topo.order());
  ASSERT_TRUE(ranks && nodes && isChannel && onRoute) << name;

  EXPECT_EQ(eval(ranks, env), topo.numRanks()) << name;
  EXPECT_EQ(eval(nodes, env), topo.numNodes()) << name;
  // Every pair of nodes, a tree's switches included.
  for (int64_t u = 0; u < topo.numNodes(); ++u)
    for (int64_t v = 0; v < topo.numNodes(); ++v) {
      env[2] = u;
      env[3] = v;
      EXPECT_EQ(eval(isChannel, env) != 0, topo.hasChannel(u, v))
          << name << " channel " << u << "->" << v;
    }
  llvm::SmallVector<Channel, 16> hops;
  for (int64_t s = 0; s < topo.numRanks(); ++s)
    for (int64_t t = 0; t < topo.numRanks(); ++t) {
      topo.route(s, t, hops);
      env[0] = s;
      env[1] = t;
      for (const Channel &c : topo.channels()) {
        env[2] = c.from;
        env[3] = c.to;
        bool concrete = llvm::is_contained(hops, c);
        ASSERT_EQ(eval(onRoute, env) != 0, concrete)
            << name << " route " << s << "->" << t << " channel " << c.from
            << "->" << c.to;
      }
    }
}

/// Every shape but graphs: those with a closed form.
std::vector<Shape> regularShapes() {
  std::vector<Shape> shapes;
  for (const Shape &shape : allShapes())
    if (shape.kind != TopologyKind::Graph)
      shapes.push_back(shape);
  return shapes;
}

TEST(Symbolic, AgreesWithConcreteRoutingOverVariableDims) {
  for (const Shape &shape : regularShapes())
    expectSymbolicAgrees(build(shape.kind, shape.dims, {}, shape.order),
                         true);
}

TEST(Symbolic, AgreesWithConcreteRoutingOverConstantDims) {
  for (const Shape &shape : regularShapes())
    expectSymbolicAgrees(build(shape.kind, shape.dims, {}, shape.order),
                         false);
}

// The tree's route names a node's depth by ceil_log2 and shifts, which only
// holds for a power of two of leaves at one depth: every such size up to 32.
TEST(Symbolic, TreeRoutesAgreeAtEveryHeight) {
  for (int64_t leaves : {2, 4, 8, 16, 32})
    expectSymbolicAgrees(build(TopologyKind::Tree, {leaves}), true);
}

TEST(Symbolic, FoldsToTheConcreteAnswerWithConstantOperands) {
  auto c = [](int64_t v) { return Expr::constant(v); };
  for (const Shape &shape :
       {Shape{TopologyKind::Ring, {6}}, Shape{TopologyKind::Torus, {3, 4}},
        Shape{TopologyKind::Mesh, {2, 3}},
        Shape{TopologyKind::Hypercube, {3}}}) {
    Topology topo = build(shape.kind, shape.dims);
    std::vector<ExprRef> dims;
    for (int64_t d : shape.dims)
      dims.push_back(c(d));
    llvm::SmallVector<Channel, 16> hops;
    for (int64_t s = 0; s < topo.numRanks(); ++s)
      for (int64_t t = 0; t < topo.numRanks(); ++t) {
        topo.route(s, t, hops);
        for (const Channel &ch : topo.channels()) {
          ExprRef e = symbolic::onRoute(shape.kind, dims, c(s), c(t),
                                        c(ch.from), c(ch.to));
          ASSERT_TRUE(e->isConst()) << ir::print(*e);
          EXPECT_EQ(e->value != 0, llvm::is_contained(hops, ch))
              << topo.describe() << " " << s << "->" << t;
        }
      }
  }
}

TEST(Symbolic, Fig4_12_RingChannelThreeToFourOnAllFourRoutes) {
  std::vector<ExprRef> dims{Expr::var("p", 4)};
  ExprRef e = symbolic::onRoute(TopologyKind::Ring, dims, Expr::var("s", 0),
                                Expr::var("t", 1), Expr::constant(3),
                                Expr::constant(4));
  for (int64_t s = 0; s < 4; ++s)
    EXPECT_NE(eval(e, {s, s + 4, 0, 0, 8}), 0) << s;
  EXPECT_EQ(eval(e, {4, 0, 0, 0, 8}), 0); // 4 -> 0 goes 4,5,6,7,0
}

TEST(Symbolic, NoClosedFormForAGraph) {
  std::vector<ExprRef> dims{Expr::constant(8)};
  ExprRef x = Expr::var("x", 0);
  EXPECT_EQ(symbolic::numRanks(TopologyKind::Graph, dims), nullptr);
  EXPECT_EQ(symbolic::isChannel(TopologyKind::Graph, dims, x, x), nullptr);
  EXPECT_EQ(symbolic::onRoute(TopologyKind::Graph, dims, x, x, x, x), nullptr);
}

} // namespace
