#include "topology/Topology.h"

#include "ir/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>
#include <map>

using namespace collc;

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The source spelling of a topology: "ring(8)", "mesh(4, 4)",
/// "hypercube(dim: 3)", "tree(leaves: 8)".
std::string spell(TopologyKind kind, llvm::ArrayRef<int64_t> dims) {
  std::string text = topologyKindName(kind).str() + "(";
  if (kind == TopologyKind::Hypercube)
    text += "dim: ";
  else if (kind == TopologyKind::Tree)
    text += "leaves: ";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i != 0)
      text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + ")";
}

llvm::Error tooLarge(TopologyKind kind, llvm::ArrayRef<int64_t> dims) {
  return fail(spell(kind, dims) + " has more than " + llvm::Twine(maxRanks) +
              " ranks, the most collc supports");
}

/// x mod n in 0..n-1 for n > 0, whatever the sign of x.
int64_t wrap(int64_t x, int64_t n) {
  int64_t r = x % n;
  return r < 0 ? r + n : r;
}

/// Row-major strides: stride[i] is the rank distance between neighbours along
/// dimension i; the last dimension varies fastest.
llvm::SmallVector<int64_t, 4> stridesOf(llvm::ArrayRef<int64_t> dims) {
  llvm::SmallVector<int64_t, 4> stride(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i)
    stride[i - 1] = stride[i] * dims[i];
  return stride;
}

/// Tree nodes in heap order: ranks (leaves) sit at heap positions
/// leaves..2*leaves-1, switches at 1..leaves-1 (see Topology.h).
int64_t treeHeapOf(int64_t node, int64_t leaves) {
  return node < leaves ? leaves + node : node - leaves + 1;
}
int64_t treeNodeOf(int64_t heap, int64_t leaves) {
  return heap >= leaves ? heap - leaves : leaves + heap - 1;
}

} // namespace

int64_t collc::grayRank(int64_t node) {
  int64_t k = node;
  for (int64_t shift = 1; shift < 64; shift <<= 1)
    k ^= k >> shift;
  return k;
}

namespace {

/// How many ranks and nodes `kind` with `dims` has, or why it cannot be
/// built: too few, too many (maxRanks), or a tree's leaves not a power of
/// two.
struct Size {
  int64_t ranks = 0, nodes = 0;
};
llvm::Expected<Size> sizeOf(TopologyKind kind, llvm::ArrayRef<int64_t> dims) {
  llvm::StringRef name = topologyKindName(kind);
  switch (kind) {
  case TopologyKind::Ring:
  case TopologyKind::Linear:
  case TopologyKind::Full:
  case TopologyKind::Graph: {
    int64_t n = dims[0];
    if (n < 2)
      return fail(name + " needs at least 2 " +
                  (kind == TopologyKind::Graph ? "nodes" : "ranks") + ", got " +
                  llvm::Twine(n));
    if (n > maxRanks)
      return tooLarge(kind, dims);
    return Size{n, n};
  }
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    // Every dimension is at most maxRanks before the multiplication, so the
    // product never overflows.
    int64_t product = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 1)
        return fail(name + " dimension " + llvm::Twine(i + 1) + " is " +
                    llvm::Twine(dims[i]) +
                    "; every dimension needs at least 1 node");
      if (dims[i] > maxRanks / product)
        return tooLarge(kind, dims);
      product *= dims[i];
    }
    if (product < 2)
      return fail(spell(kind, dims) + " has 1 rank; a " + name +
                  " needs at least 2");
    return Size{product, product};
  }
  case TopologyKind::Hypercube: {
    int64_t maxDim = llvm::Log2_64(maxRanks);
    if (dims[0] < 1 || dims[0] > maxDim)
      return fail("hypercube dimension must be between 1 and " +
                  llvm::Twine(maxDim) + ", got " + llvm::Twine(dims[0]));
    return Size{int64_t(1) << dims[0], int64_t(1) << dims[0]};
  }
  case TopologyKind::Tree: {
    int64_t leaves = dims[0];
    if (leaves < 2 || !llvm::isPowerOf2_64(static_cast<uint64_t>(leaves)))
      return fail("tree leaves must be a power of two >= 2, got " +
                  llvm::Twine(leaves));
    if (leaves > maxRanks)
      return tooLarge(kind, dims);
    return Size{leaves, 2 * leaves - 1}; // leaves - 1 switches
  }
  }
  return fail("unknown topology kind");
}

} // namespace

llvm::Expected<Topology>
Topology::make(TopologyKind kind, llvm::ArrayRef<int64_t> dims,
               llvm::ArrayRef<std::pair<int64_t, int64_t>> edges,
               RankOrder order) {
  llvm::StringRef name = topologyKindName(kind);
  if (order == RankOrder::Gray && kind != TopologyKind::Hypercube)
    return fail("only a hypercube numbers its ranks in Gray-code order");
  if (kind != TopologyKind::Graph && !edges.empty())
    return fail(name + " takes no edge list; only graph does");
  if (kind == TopologyKind::Mesh || kind == TopologyKind::Torus) {
    if (dims.empty())
      return fail(name + " needs at least 1 dimension");
  } else if (dims.size() != 1) {
    return fail(name + " takes 1 parameter, got " + llvm::Twine(dims.size()));
  }
  llvm::Expected<Size> size = sizeOf(kind, dims);
  if (!size)
    return size.takeError();

  Topology topo;
  topo.kindValue = kind;
  topo.orderValue = order;
  topo.dimsValue.assign(dims.begin(), dims.end());
  topo.ranks = size->ranks;
  topo.nodes = size->nodes;
  if (kind == TopologyKind::Graph)
    if (llvm::Error error = topo.connect(edges))
      return error;
  topo.channelCache = std::make_shared<ChannelCache>();
  return topo;
}

llvm::Error
Topology::connect(llvm::ArrayRef<std::pair<int64_t, int64_t>> edges) {
  const int64_t n = nodes;
  std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> seen;
  adjacency.assign(n, {});
  for (const auto &[a, b] : edges) {
    std::string edgeText = std::to_string(a) + "-" + std::to_string(b);
    for (int64_t end : {a, b})
      if (end < 0 || end >= n)
        return fail("edge " + edgeText + " names node " + llvm::Twine(end) +
                    ", but " + spell(kindValue, dimsValue) + " has nodes 0.." +
                    llvm::Twine(n - 1));
    if (a == b)
      return fail("edge " + edgeText + " is a self-loop");
    auto [it, fresh] = seen.insert({{std::min(a, b), std::max(a, b)}, {a, b}});
    if (!fresh)
      return fail("edge " + edgeText + " repeats edge " +
                  llvm::Twine(it->second.first) + "-" +
                  llvm::Twine(it->second.second));
    adjacency[a].push_back(b);
    adjacency[b].push_back(a);
  }
  for (auto &list : adjacency)
    llvm::sort(list);

  // Connected iff a search from node 0 reaches every node.
  std::vector<bool> reached(n, false);
  std::vector<int64_t> queue{0};
  reached[0] = true;
  for (size_t head = 0; head < queue.size(); ++head)
    for (int64_t next : adjacency[queue[head]])
      if (!reached[next]) {
        reached[next] = true;
        queue.push_back(next);
      }
  for (int64_t node = 0; node < n; ++node)
    if (!reached[node])
      return fail(spell(kindValue, dimsValue) + " is not connected: node " +
                  llvm::Twine(node) + " cannot be reached from node 0");

  if (n <= maxTabulatedGraphNodes) {
    nextHop.assign(n * n, 0);
    std::vector<int32_t> hop;
    for (int64_t dst = 0; dst < n; ++dst) {
      graphNextHops(dst, hop);
      for (int64_t node = 0; node < n; ++node)
        nextHop[node * n + dst] = hop[node];
    }
  }
  return llvm::Error::success();
}

// Graph routing: distances from the destination by breadth-first search; at
// each node the next hop is the lowest-numbered neighbour one step closer to
// the destination. Every route is therefore a shortest path, and the choice
// among equally short paths is the lexicographically smallest sequence of
// nodes read from the source.
void Topology::graphNextHops(int64_t dst, std::vector<int32_t> &hop) const {
  std::vector<int32_t> dist(nodes, -1);
  std::vector<int64_t> queue{dst};
  dist[dst] = 0;
  for (size_t head = 0; head < queue.size(); ++head)
    for (int64_t next : adjacency[queue[head]])
      if (dist[next] < 0) {
        dist[next] = dist[queue[head]] + 1;
        queue.push_back(next);
      }
  hop.assign(nodes, static_cast<int32_t>(dst));
  for (int64_t node = 0; node < nodes; ++node) {
    if (node == dst)
      continue;
    for (int64_t next : adjacency[node])
      if (dist[next] == dist[node] - 1) {
        hop[node] = static_cast<int32_t>(next);
        break;
      }
  }
}

std::string Topology::describe() const {
  std::string text = spell(kindValue, dimsValue);
  if (orderValue == RankOrder::Gray)
    text.insert(text.size() - 1, ", order: gray");
  return text;
}

void Topology::neighbours(int64_t node,
                          llvm::SmallVectorImpl<int64_t> &out) const {
  out.clear();
  if (node < 0 || node >= nodes)
    return;
  switch (kindValue) {
  case TopologyKind::Ring:
    out.push_back(wrap(node - 1, ranks));
    out.push_back(wrap(node + 1, ranks));
    break;
  case TopologyKind::Linear:
    if (node > 0)
      out.push_back(node - 1);
    if (node + 1 < ranks)
      out.push_back(node + 1);
    break;
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    llvm::SmallVector<int64_t, 4> stride = stridesOf(dimsValue);
    for (size_t i = 0; i < dimsValue.size(); ++i) {
      int64_t d = dimsValue[i];
      int64_t c = (node / stride[i]) % d;
      int64_t base = node - c * stride[i];
      if (kindValue == TopologyKind::Torus) {
        if (d >= 2) {
          out.push_back(base + wrap(c - 1, d) * stride[i]);
          out.push_back(base + wrap(c + 1, d) * stride[i]);
        }
      } else {
        if (c > 0)
          out.push_back(node - stride[i]);
        if (c + 1 < d)
          out.push_back(node + stride[i]);
      }
    }
    break;
  }
  case TopologyKind::Hypercube:
    for (int64_t k = 0; k < dimsValue[0]; ++k)
      out.push_back(rankOf(nodeOf(node) ^ (int64_t(1) << k)));
    break;
  case TopologyKind::Full:
    for (int64_t other = 0; other < ranks; ++other)
      if (other != node)
        out.push_back(other);
    break;
  case TopologyKind::Tree: {
    int64_t heap = treeHeapOf(node, ranks);
    if (heap > 1)
      out.push_back(treeNodeOf(heap / 2, ranks));
    if (heap < ranks) {
      out.push_back(treeNodeOf(2 * heap, ranks));
      out.push_back(treeNodeOf(2 * heap + 1, ranks));
    }
    break;
  }
  case TopologyKind::Graph:
    out.append(adjacency[node].begin(), adjacency[node].end());
    break;
  }
  llvm::sort(out);
  // A ring of 2 and a torus dimension of size 2 name the same neighbour twice.
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

llvm::ArrayRef<Channel> Topology::channels() const {
  if (!channelCache)
    return {};
  std::call_once(channelCache->built, [this] {
    std::vector<Channel> &list = channelCache->list;
    list.reserve(numChannels());
    llvm::SmallVector<int64_t, 8> next;
    for (int64_t node = 0; node < nodes; ++node) {
      neighbours(node, next);
      for (int64_t to : next)
        list.push_back({node, to});
    }
  });
  return channelCache->list;
}

std::vector<std::pair<int64_t, int64_t>> Topology::graphEdges() const {
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t from = 0; from < static_cast<int64_t>(adjacency.size()); ++from)
    for (int64_t to : adjacency[from])
      if (from < to)
        edges.emplace_back(from, to);
  return edges;
}

ir::TopologyTemplate collc::templateOf(const Topology &topology,
                                       llvm::SMLoc loc) {
  ir::TopologyTemplate t;
  t.kind = topology.kind();
  t.order = topology.order();
  for (int64_t d : topology.dims())
    t.dims.push_back(ir::Expr::constant(d));
  t.edges = topology.graphEdges();
  t.loc = loc;
  return t;
}

int64_t Topology::numChannels() const {
  switch (kindValue) {
  case TopologyKind::Ring:
    return ranks == 2 ? 2 : 2 * ranks;
  case TopologyKind::Linear:
    return 2 * (ranks - 1);
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    int64_t count = 0;
    for (int64_t d : dimsValue) {
      int64_t lines = ranks / d;
      if (kindValue == TopologyKind::Mesh || d <= 2)
        count += 2 * (d - 1) * lines;
      else
        count += 2 * d * lines;
    }
    return count;
  }
  case TopologyKind::Hypercube:
    return dimsValue[0] * ranks;
  case TopologyKind::Full:
    return ranks * (ranks - 1);
  case TopologyKind::Tree:
    return 2 * (nodes - 1);
  case TopologyKind::Graph: {
    int64_t count = 0;
    for (const auto &list : adjacency)
      count += static_cast<int64_t>(list.size());
    return count;
  }
  }
  llvm_unreachable("unknown topology kind");
}

bool Topology::hasChannel(int64_t from, int64_t to) const {
  if (from < 0 || from >= nodes || to < 0 || to >= nodes || from == to)
    return false;
  switch (kindValue) {
  case TopologyKind::Ring:
    return to == wrap(from + 1, ranks) || from == wrap(to + 1, ranks);
  case TopologyKind::Linear:
    return to == from + 1 || from == to + 1;
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    llvm::SmallVector<int64_t, 4> stride = stridesOf(dimsValue);
    int differing = 0;
    bool adjacent = true;
    for (size_t i = 0; i < dimsValue.size(); ++i) {
      int64_t d = dimsValue[i];
      int64_t a = (from / stride[i]) % d, b = (to / stride[i]) % d;
      if (a == b)
        continue;
      ++differing;
      if (kindValue == TopologyKind::Torus)
        adjacent &= b == wrap(a + 1, d) || a == wrap(b + 1, d);
      else
        adjacent &= b == a + 1 || a == b + 1;
    }
    return differing == 1 && adjacent;
  }
  case TopologyKind::Hypercube:
    return llvm::isPowerOf2_64(
        static_cast<uint64_t>(nodeOf(from) ^ nodeOf(to)));
  case TopologyKind::Full:
    return true;
  case TopologyKind::Tree: {
    int64_t a = treeHeapOf(from, ranks), b = treeHeapOf(to, ranks);
    return a / 2 == b || b / 2 == a;
  }
  case TopologyKind::Graph:
    return std::binary_search(adjacency[from].begin(), adjacency[from].end(),
                              to);
  }
  llvm_unreachable("unknown topology kind");
}

void Topology::route(int64_t src, int64_t dst,
                     llvm::SmallVectorImpl<Channel> &out) const {
  assert(src >= 0 && src < ranks && dst >= 0 && dst < ranks &&
         "route between ranks outside the topology");
  out.clear();
  if (src == dst)
    return;
  switch (kindValue) {
  case TopologyKind::Ring:
    return routeRing(src, dst, out);
  case TopologyKind::Linear:
    return routeLinear(src, dst, out);
  case TopologyKind::Mesh:
  case TopologyKind::Torus:
    return routeMeshOrTorus(src, dst, out);
  case TopologyKind::Hypercube:
    return routeHypercube(src, dst, out);
  case TopologyKind::Full:
    out.push_back({src, dst});
    return;
  case TopologyKind::Tree:
    return routeTree(src, dst, out);
  case TopologyKind::Graph:
    return routeGraph(src, dst, out);
  }
}

void Topology::routeRing(int64_t src, int64_t dst,
                         llvm::SmallVectorImpl<Channel> &out) const {
  // The shorter direction; on a tie (dst opposite src on an even ring) the
  // message goes clockwise, towards increasing rank. Under this rule the
  // four messages of Figure 4.12 (seed 000, section 4.2) all cross 3 -> 4.
  int64_t forward = wrap(dst - src, ranks);
  int64_t dir = 2 * forward <= ranks ? 1 : -1;
  for (int64_t at = src; at != dst;) {
    int64_t next = wrap(at + dir, ranks);
    out.push_back({at, next});
    at = next;
  }
}

void Topology::routeLinear(int64_t src, int64_t dst,
                           llvm::SmallVectorImpl<Channel> &out) const {
  int64_t dir = dst > src ? 1 : -1;
  for (int64_t at = src; at != dst; at += dir)
    out.push_back({at, at + dir});
}

void Topology::routeMeshOrTorus(int64_t src, int64_t dst,
                                llvm::SmallVectorImpl<Channel> &out) const {
  // Dimension-ordered (XY) routing: the last coordinate is corrected first,
  // i.e. along the row, then the next one towards the first, as the mesh
  // procedures of seed 000 (sections 4.1-4.3) move data along rows before
  // columns. On a torus each dimension goes the shorter way round, a tie
  // towards increasing index.
  llvm::SmallVector<int64_t, 4> stride = stridesOf(dimsValue);
  int64_t at = src;
  for (size_t i = dimsValue.size(); i-- > 0;) {
    int64_t d = dimsValue[i];
    int64_t c = (at / stride[i]) % d, target = (dst / stride[i]) % d;
    if (c == target)
      continue;
    int64_t dir = target > c ? 1 : -1;
    if (kindValue == TopologyKind::Torus)
      dir = 2 * wrap(target - c, d) <= d ? 1 : -1;
    while (c != target) {
      int64_t nextC =
          kindValue == TopologyKind::Torus ? wrap(c + dir, d) : c + dir;
      int64_t next = at + (nextC - c) * stride[i];
      out.push_back({at, next});
      at = next;
      c = nextC;
    }
  }
}

void Topology::routeHypercube(int64_t src, int64_t dst,
                              llvm::SmallVectorImpl<Channel> &out) const {
  // E-cube routing (seed 000, section 4.5): cross the dimensions in which
  // src and dst differ in ascending order, least significant bit first.
  // Between nodes; each named by its rank.
  int64_t at = nodeOf(src), to = nodeOf(dst);
  for (int64_t k = 0; k < dimsValue[0]; ++k) {
    int64_t bit = int64_t(1) << k;
    if ((at ^ to) & bit) {
      out.push_back({rankOf(at), rankOf(at ^ bit)});
      at ^= bit;
    }
  }
}

void Topology::routeTree(int64_t src, int64_t dst,
                         llvm::SmallVectorImpl<Channel> &out) const {
  // Up to the lowest common ancestor switch, then down. All leaves sit at
  // the same depth, so the ancestor is `levels` steps up from both, where
  // `levels` is the bit length of the heap positions' difference.
  int64_t hs = treeHeapOf(src, ranks), hd = treeHeapOf(dst, ranks);
  int64_t levels = 64 - llvm::countLeadingZeros(static_cast<uint64_t>(hs ^ hd));
  for (int64_t j = 0; j < levels; ++j)
    out.push_back(
        {treeNodeOf(hs >> j, ranks), treeNodeOf(hs >> (j + 1), ranks)});
  for (int64_t j = levels; j > 0; --j)
    out.push_back(
        {treeNodeOf(hd >> j, ranks), treeNodeOf(hd >> (j - 1), ranks)});
}

void Topology::routeGraph(int64_t src, int64_t dst,
                          llvm::SmallVectorImpl<Channel> &out) const {
  std::vector<int32_t> hop;
  if (nextHop.empty())
    graphNextHops(dst, hop);
  for (int64_t at = src; at != dst;) {
    int64_t next = nextHop.empty() ? hop[at] : nextHop[at * nodes + dst];
    out.push_back({at, next});
    at = next;
  }
}

int64_t Topology::distance(int64_t src, int64_t dst) const {
  assert(src >= 0 && src < ranks && dst >= 0 && dst < ranks &&
         "distance between ranks outside the topology");
  switch (kindValue) {
  case TopologyKind::Ring: {
    int64_t forward = wrap(dst - src, ranks);
    return std::min(forward, ranks - forward);
  }
  case TopologyKind::Linear:
    return src > dst ? src - dst : dst - src;
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    llvm::SmallVector<int64_t, 4> stride = stridesOf(dimsValue);
    int64_t total = 0;
    for (size_t i = 0; i < dimsValue.size(); ++i) {
      int64_t d = dimsValue[i];
      int64_t a = (src / stride[i]) % d, b = (dst / stride[i]) % d;
      if (kindValue == TopologyKind::Torus)
        total += std::min(wrap(b - a, d), wrap(a - b, d));
      else
        total += a > b ? a - b : b - a;
    }
    return total;
  }
  case TopologyKind::Hypercube:
    return llvm::countPopulation(
        static_cast<uint64_t>(nodeOf(src) ^ nodeOf(dst)));
  case TopologyKind::Full:
    return src == dst ? 0 : 1;
  case TopologyKind::Tree: {
    int64_t hs = treeHeapOf(src, ranks), hd = treeHeapOf(dst, ranks);
    return 2 * (64 - llvm::countLeadingZeros(static_cast<uint64_t>(hs ^ hd)));
  }
  case TopologyKind::Graph: {
    llvm::SmallVector<Channel, 16> path;
    route(src, dst, path);
    return static_cast<int64_t>(path.size());
  }
  }
  llvm_unreachable("unknown topology kind");
}

llvm::SmallVector<int64_t, 4> Topology::coordinates(int64_t rank) const {
  llvm::SmallVector<int64_t, 4> coords;
  switch (kindValue) {
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    llvm::SmallVector<int64_t, 4> stride = stridesOf(dimsValue);
    for (size_t i = 0; i < dimsValue.size(); ++i)
      coords.push_back((rank / stride[i]) % dimsValue[i]);
    break;
  }
  case TopologyKind::Hypercube:
    for (int64_t k = 0; k < dimsValue[0]; ++k)
      coords.push_back((nodeOf(rank) >> k) & 1);
    break;
  default:
    coords.push_back(rank);
    break;
  }
  return coords;
}

//===----------------------------------------------------------------------===//
// Symbolic routing
//===----------------------------------------------------------------------===//

namespace {

using ir::Expr;
using ir::ExprOp;
using ir::ExprRef;

ExprRef lit(int64_t value) { return Expr::constant(value); }

bool isZeroOrOne(const Expr &e) {
  switch (e.op) {
  case ExprOp::Const:
    return e.value == 0 || e.value == 1;
  case ExprOp::Not:
  case ExprOp::Eq:
  case ExprOp::Ne:
  case ExprOp::Lt:
  case ExprOp::Le:
  case ExprOp::Gt:
  case ExprOp::Ge:
  case ExprOp::And:
  case ExprOp::Or:
    return true;
  default:
    return false;
  }
}

/// Expr::binary with the folding that keeps constant-size queries small:
/// constant operands, the identities x+0, x-0, x*1, x/1, x%1 and logic with a
/// constant side. The result evaluates exactly as the unfolded expression.
ExprRef op(ExprOp kind, ExprRef a, ExprRef b) {
  if (a->isConst() && b->isConst()) {
    ExprRef whole = Expr::binary(kind, a, b);
    ir::EvalResult value = ir::evaluate(*whole, {});
    return value.ok() ? lit(value.value) : whole;
  }
  auto isConst = [](const ExprRef &e, int64_t v) {
    return e->isConst() && e->value == v;
  };
  switch (kind) {
  case ExprOp::Add:
    if (isConst(a, 0))
      return b;
    [[fallthrough]];
  case ExprOp::Sub:
    if (isConst(b, 0))
      return a;
    break;
  case ExprOp::Mul:
    if (isConst(a, 1))
      return b;
    [[fallthrough]];
  case ExprOp::Div:
    if (isConst(b, 1))
      return a;
    break;
  case ExprOp::Mod:
    if (isConst(b, 1))
      return lit(0);
    break;
  case ExprOp::And:
  case ExprOp::Or: {
    // With one side constant, the result is the other side (when it is
    // already 0 or 1) or the constant's verdict.
    bool isAnd = kind == ExprOp::And;
    for (int side = 0; side < 2; ++side) {
      const ExprRef &c = side == 0 ? a : b;
      const ExprRef &other = side == 0 ? b : a;
      if (!c->isConst())
        continue;
      bool truth = c->value != 0;
      if (truth != isAnd)
        return lit(isAnd ? 0 : 1);
      if (isZeroOrOne(*other))
        return other;
    }
    break;
  }
  default:
    break;
  }
  return Expr::binary(kind, a, b);
}

ExprRef bitNot(ExprRef a) {
  return a->isConst() ? lit(~a->value) : Expr::unary(ExprOp::BitNot, a);
}

ExprRef ceilLog2(ExprRef a) {
  return a->isConst() ? lit(ir::ceilLog2(a->value))
                      : Expr::unary(ExprOp::CeilLog2, a);
}

ExprRef select(ExprRef c, ExprRef a, ExprRef b) {
  if (c->isConst())
    return c->value != 0 ? a : b;
  return Expr::select(c, a, b);
}

ExprRef add(ExprRef a, ExprRef b) { return op(ExprOp::Add, a, b); }
ExprRef sub(ExprRef a, ExprRef b) { return op(ExprOp::Sub, a, b); }
ExprRef mul(ExprRef a, ExprRef b) { return op(ExprOp::Mul, a, b); }
ExprRef div(ExprRef a, ExprRef b) { return op(ExprOp::Div, a, b); }
ExprRef mod(ExprRef a, ExprRef b) { return op(ExprOp::Mod, a, b); }
ExprRef eq(ExprRef a, ExprRef b) { return op(ExprOp::Eq, a, b); }
ExprRef ne(ExprRef a, ExprRef b) { return op(ExprOp::Ne, a, b); }
ExprRef lt(ExprRef a, ExprRef b) { return op(ExprOp::Lt, a, b); }
ExprRef le(ExprRef a, ExprRef b) { return op(ExprOp::Le, a, b); }
ExprRef both(ExprRef a, ExprRef b) { return op(ExprOp::And, a, b); }
ExprRef either(ExprRef a, ExprRef b) { return op(ExprOp::Or, a, b); }

/// (x + 1) mod n and x - a mod n for x, a in 0..n-1: each wraps at most
/// once, so a comparison does it, not a divider.
ExprRef succMod(ExprRef x, ExprRef n) {
  ExprRef next = add(x, lit(1));
  return select(lt(next, n), next, lit(0));
}
ExprRef diffMod(ExprRef x, ExprRef a, ExprRef n) {
  ExprRef diff = sub(x, a);
  return select(lt(diff, lit(0)), add(diff, n), diff);
}

/// One dimension of a torus (a ring of `n` positions): channel x -> y lies on
/// the route a -> b. Mirrors Topology::route: the shorter direction, a tie
/// forwards (increasing index); forward hops are x -> x+1 with x at most
/// f-1 steps past a.
ExprRef ringSegment(ExprRef a, ExprRef b, ExprRef x, ExprRef y, ExprRef n) {
  ExprRef forward = diffMod(b, a, n);
  ExprRef goesForward = le(mul(lit(2), forward), n);
  ExprRef onForward = both(eq(y, succMod(x, n)), lt(diffMod(x, a, n), forward));
  ExprRef onBackward =
      both(eq(x, succMod(y, n)), lt(diffMod(a, x, n), sub(n, forward)));
  return both(ne(a, b), select(goesForward, onForward, onBackward));
}

/// One dimension of a mesh (a line): channel x -> y lies on the route a -> b.
ExprRef lineSegment(ExprRef a, ExprRef b, ExprRef x, ExprRef y) {
  ExprRef up = both(eq(y, add(x, lit(1))), both(le(a, x), lt(x, b)));
  ExprRef down = both(eq(x, add(y, lit(1))), both(lt(b, x), le(x, a)));
  return select(lt(a, b), up, down);
}

/// Row-major strides as expressions (see stridesOf).
llvm::SmallVector<ExprRef, 4> strideExprs(llvm::ArrayRef<ExprRef> dims) {
  llvm::SmallVector<ExprRef, 4> stride(dims.size(), lit(1));
  for (size_t i = dims.size() - 1; i > 0; --i)
    stride[i - 1] = mul(stride[i], dims[i]);
  return stride;
}

ExprRef coordinate(ExprRef rank, llvm::ArrayRef<ExprRef> dims,
                   llvm::ArrayRef<ExprRef> stride, size_t i) {
  ExprRef above = div(rank, stride[i]);
  // The first coordinate needs no remainder: rank < stride[0] * dims[0].
  return i == 0 ? above : mod(above, dims[i]);
}

bool hasArity(TopologyKind kind, llvm::ArrayRef<ExprRef> dims) {
  switch (kind) {
  case TopologyKind::Mesh:
  case TopologyKind::Torus:
    return !dims.empty();
  case TopologyKind::Graph:
    return false;
  default:
    return dims.size() == 1;
  }
}

} // namespace

namespace {
/// G(x) = x ^ (x >> 1): the node of rank x in Gray order.
ExprRef gray(ExprRef x) {
  return op(ExprOp::BitXor, x, op(ExprOp::Shr, x, lit(1)));
}

/// The heap position of tree node x of a tree with n leaves (treeHeapOf).
ExprRef treeHeap(ExprRef x, ExprRef n) {
  return select(lt(x, n), add(n, x), add(sub(x, n), lit(1)));
}

/// The node at heap position x's depth on the way up from leaf position
/// `leaf`, in a tree of n leaves (a power of two, all at one depth): x, at
/// depth floor(log2 x) = ceil_log2(x + 1) - 1, sits above the leaves whose
/// positions shifted right by log2 n - that depth are x. x is the leaf or
/// one of its ancestors (x covers the leaf) iff this is x. Shifts, not a
/// divider: the route's queries stay cheap at 2^16 leaves.
ExprRef treeAncestorAtDepthOf(ExprRef x, ExprRef leaf, ExprRef n) {
  ExprRef depth = sub(ceilLog2(add(x, lit(1))), lit(1));
  return op(ExprOp::Shr, leaf, sub(ceilLog2(n), depth));
}
ExprRef treeCovers(ExprRef x, ExprRef leaf, ExprRef n) {
  return eq(treeAncestorAtDepthOf(x, leaf, n), x);
}
ExprRef treeMisses(ExprRef x, ExprRef leaf, ExprRef n) {
  return ne(treeAncestorAtDepthOf(x, leaf, n), x);
}
} // namespace

ExprRef symbolic::numNodes(TopologyKind kind, llvm::ArrayRef<ExprRef> dims) {
  ExprRef ranks = numRanks(kind, dims);
  if (ranks && kind == TopologyKind::Tree)
    return sub(mul(lit(2), ranks), lit(1)); // leaves - 1 switches
  return ranks;
}

ExprRef symbolic::numRanks(TopologyKind kind, llvm::ArrayRef<ExprRef> dims) {
  if (!hasArity(kind, dims))
    return nullptr;
  switch (kind) {
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    ExprRef product = dims[0];
    for (size_t i = 1; i < dims.size(); ++i)
      product = mul(product, dims[i]);
    return product;
  }
  case TopologyKind::Hypercube:
    return op(ExprOp::Shl, lit(1), dims[0]);
  default:
    return dims[0];
  }
}

ExprRef symbolic::isChannel(TopologyKind kind, llvm::ArrayRef<ExprRef> dims,
                            ExprRef from, ExprRef to, RankOrder order) {
  if (!hasArity(kind, dims))
    return nullptr;
  if (order == RankOrder::Gray)
    return isChannel(kind, dims, gray(from), gray(to));
  switch (kind) {
  case TopologyKind::Ring:
    return either(eq(to, succMod(from, dims[0])),
                  eq(from, succMod(to, dims[0])));
  case TopologyKind::Linear:
    return either(eq(to, add(from, lit(1))), eq(from, add(to, lit(1))));
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    // A channel changes one coordinate i by one (mod dims[i] on a torus),
    // which moves the rank by a multiple of stride[i].
    llvm::SmallVector<ExprRef, 4> stride = strideExprs(dims);
    ExprRef any = lit(0);
    for (size_t i = 0; i < dims.size(); ++i) {
      ExprRef c = coordinate(from, dims, stride, i);
      ExprRef alongI;
      if (kind == TopologyKind::Mesh) {
        alongI = either(
            both(eq(to, add(from, stride[i])), lt(add(c, lit(1)), dims[i])),
            both(eq(add(to, stride[i]), from), lt(lit(0), c)));
      } else {
        // One stride on, or back, and round by dims[i] strides (the
        // stride of the coordinate above) at the ends: sums of the products
        // the rank count is made of, never a coordinate times a stride,
        // which Z3 would have to multiply out.
        ExprRef round = i == 0 ? mul(stride[0], dims[0]) : stride[i - 1];
        ExprRef up = select(lt(add(c, lit(1)), dims[i]), add(from, stride[i]),
                            sub(add(from, stride[i]), round));
        ExprRef down = select(lt(lit(0), c), sub(from, stride[i]),
                              add(sub(from, stride[i]), round));
        alongI = either(eq(to, up), eq(to, down));
      }
      any = either(any, alongI);
    }
    // A torus dimension of size 1 would otherwise connect a rank to itself.
    return kind == TopologyKind::Torus ? both(ne(from, to), any) : any;
  }
  case TopologyKind::Hypercube: {
    ExprRef x = op(ExprOp::BitXor, from, to);
    return both(ne(x, lit(0)),
                eq(op(ExprOp::BitAnd, x, sub(x, lit(1))), lit(0)));
  }
  case TopologyKind::Full:
    return ne(from, to);
  case TopologyKind::Tree: {
    // Between a node and its parent, in heap positions.
    ExprRef f = treeHeap(from, dims[0]), t = treeHeap(to, dims[0]);
    return either(eq(t, div(f, lit(2))), eq(f, div(t, lit(2))));
  }
  default:
    return nullptr;
  }
}

ExprRef symbolic::onRoute(TopologyKind kind, llvm::ArrayRef<ExprRef> dims,
                          ExprRef src, ExprRef dst, ExprRef from, ExprRef to,
                          RankOrder order) {
  llvm::SmallVector<ExprRef, 4> legs =
      onRouteLegs(kind, dims, src, dst, from, to, order);
  if (legs.empty())
    return nullptr;
  ExprRef any = lit(0);
  for (const ExprRef &leg : legs)
    any = either(any, leg);
  return any;
}

llvm::SmallVector<ExprRef, 4>
symbolic::onRouteLegs(TopologyKind kind, llvm::ArrayRef<ExprRef> dims,
                      ExprRef src, ExprRef dst, ExprRef from, ExprRef to,
                      RankOrder order) {
  if (!hasArity(kind, dims))
    return {};
  // The nodes' routes: G is a bijection, so a rank is on a route exactly
  // when its node is.
  if (order == RankOrder::Gray)
    return onRouteLegs(kind, dims, gray(src), gray(dst), gray(from), gray(to));
  switch (kind) {
  case TopologyKind::Ring:
    return {ringSegment(src, dst, from, to, dims[0])};
  case TopologyKind::Linear:
    return {lineSegment(src, dst, from, to)};
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    // Dimension-ordered, last dimension first: while dimension i is being
    // corrected, the dimensions after i (the rank's remainder below
    // stride[i]) already hold dst's coordinates and those before i (the
    // quotient by stride[i-1]) still hold src's. A channel moves along
    // exactly one dimension, so the segment test on coordinate i, which
    // needs from and to to differ there, picks the dimension: leg i.
    llvm::SmallVector<ExprRef, 4> stride = strideExprs(dims);
    llvm::SmallVector<ExprRef, 4> legs;
    for (size_t i = 0; i < dims.size(); ++i) {
      ExprRef placed = eq(mod(from, stride[i]), mod(dst, stride[i]));
      if (i > 0)
        placed =
            both(eq(div(from, stride[i - 1]), div(src, stride[i - 1])), placed);
      ExprRef a = coordinate(src, dims, stride, i);
      ExprRef b = coordinate(dst, dims, stride, i);
      ExprRef x = coordinate(from, dims, stride, i);
      ExprRef y = coordinate(to, dims, stride, i);
      ExprRef segment = kind == TopologyKind::Torus
                            ? ringSegment(a, b, x, y, dims[i])
                            : lineSegment(a, b, x, y);
      legs.push_back(both(placed, segment));
    }
    return legs;
  }
  case TopologyKind::Hypercube: {
    // E-cube (seed 000, section 4.5): channel u -> u ^ 2^k is crossed iff bit
    // k differs between src and dst, and u holds dst's bits below k (already
    // corrected) and src's bits from k up (not yet corrected).
    ExprRef x = op(ExprOp::BitXor, from, to);
    ExprRef below = sub(x, lit(1));
    ExprRef crossesK =
        ne(op(ExprOp::BitAnd, op(ExprOp::BitXor, src, dst), x), lit(0));
    ExprRef lowDone =
        eq(op(ExprOp::BitAnd, op(ExprOp::BitXor, from, dst), below), lit(0));
    ExprRef highPending =
        eq(op(ExprOp::BitAnd, op(ExprOp::BitXor, from, src), bitNot(below)),
           lit(0));
    return {both(crossesK, both(lowDone, highPending))};
  }
  case TopologyKind::Full:
    return {both(eq(from, src), eq(to, dst))};
  case TopologyKind::Tree: {
    // Up from src to below the lowest common ancestor, then down to dst
    // (Topology::route): an upward channel leaves a node above src and not
    // above dst, a downward one enters a node above dst and not above src.
    ExprRef n = dims[0];
    ExprRef s = add(n, src), d = add(n, dst);
    ExprRef f = treeHeap(from, n), t = treeHeap(to, n);
    ExprRef up = both(eq(t, div(f, lit(2))),
                      both(treeCovers(f, s, n), treeMisses(f, d, n)));
    ExprRef down = both(eq(f, div(t, lit(2))),
                        both(treeCovers(t, d, n), treeMisses(t, s, n)));
    return {either(up, down)};
  }
  default:
    return {};
  }
}
