#include "library/SpanningTree.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace collc;
using namespace collc::library;
using ir::CollectiveKind;
using ir::Expr;
using ir::ExprOp;
using ir::ExprRef;

namespace {

/// The breadth-first spanning tree of a graph from `root`, and the step in
/// which each rank gets the broadcast's message (the root's is 0).
struct SpanningTree {
  std::vector<int64_t> parent;                // -1 at the root
  std::vector<std::vector<int64_t>> children; // in the order they are served
  std::vector<int64_t> step;
  int64_t steps = 0;
  /// Ranks in breadth-first order, the root first.
  std::vector<int64_t> order;
};

SpanningTree spanningTree(const Topology &graph, int64_t root) {
  int64_t n = graph.numRanks();
  SpanningTree t;
  t.parent.assign(n, -1);
  t.children.assign(n, {});
  t.step.assign(n, 0);
  std::vector<int64_t> depth(n, -1);
  depth[root] = 0;
  t.order.push_back(root);
  llvm::SmallVector<int64_t, 8> next;
  for (size_t head = 0; head < t.order.size(); ++head) {
    int64_t v = t.order[head];
    next.clear();
    graph.neighbours(v, next);
    for (int64_t w : next)
      if (depth[w] < 0) {
        depth[w] = depth[v] + 1;
        t.order.push_back(w);
      }
  }
  // The lowest-numbered neighbour one hop closer (neighbours ascend).
  for (int64_t v : t.order) {
    if (v == root)
      continue;
    next.clear();
    graph.neighbours(v, next);
    for (int64_t w : next)
      if (depth[w] == depth[v] - 1) {
        t.parent[v] = w;
        t.children[w].push_back(v);
        break;
      }
  }
  // Steps a subtree takes to hear from its root once it has the message;
  // serving the slowest child first minimises it (ties to the lower rank).
  std::vector<int64_t> takes(n, 0);
  for (int64_t v : llvm::reverse(t.order)) {
    std::vector<int64_t> &kids = t.children[v];
    std::stable_sort(kids.begin(), kids.end(),
                     [&](int64_t a, int64_t b) { return takes[a] > takes[b]; });
    for (size_t i = 0; i < kids.size(); ++i)
      takes[v] =
          std::max(takes[v], static_cast<int64_t>(i + 1) + takes[kids[i]]);
  }
  for (int64_t v : t.order)
    for (size_t i = 0; i < t.children[v].size(); ++i)
      t.step[t.children[v][i]] = t.step[v] + static_cast<int64_t>(i + 1);
  t.steps = takes[root];
  return t;
}

ExprRef num(int64_t v) { return Expr::constant(v); }
ExprRef bin(ExprOp op, ExprRef a, ExprRef b) {
  return Expr::binary(op, std::move(a), std::move(b));
}

/// `dest` is one of `ranks` (ascending), as runs of consecutive ranks
/// joined by a balanced `or`, so the expression stays shallow.
ExprRef destIn(llvm::ArrayRef<int64_t> ranks) {
  std::vector<ExprRef> runs;
  ExprRef dest = Expr::var("dest", ir::SlotDest);
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    runs.push_back(i == j
                       ? bin(ExprOp::Eq, dest, num(ranks[i]))
                       : bin(ExprOp::And, bin(ExprOp::Ge, dest, num(ranks[i])),
                             bin(ExprOp::Le, dest, num(ranks[j]))));
    i = j + 1;
  }
  while (runs.size() > 1) {
    std::vector<ExprRef> joined;
    for (size_t i = 0; i + 1 < runs.size(); i += 2)
      joined.push_back(bin(ExprOp::Or, runs[i], runs[i + 1]));
    if (runs.size() % 2)
      joined.push_back(runs.back());
    runs = std::move(joined);
  }
  return runs.front();
}

/// `from -> to`, as sema lowers a hand-written transfer.
ir::TransferRule transfer(int64_t from, int64_t to, ExprRef selector,
                          ir::TransferMode mode) {
  ir::TransferRule rule;
  rule.guard = bin(ExprOp::Eq, Expr::var("r", ir::SlotRank), num(from));
  rule.peer = num(to);
  rule.selector = std::move(selector);
  rule.into.push_back({0, nullptr});
  rule.mode = mode;
  return rule;
}

/// Appends the tree's steps, towards the leaves (down) or the root: a step
/// for each of the broadcast's, in its order or reversed, with the
/// transfer each edge makes in it, senders ascending.
void appendSteps(const SpanningTree &t, bool down, ir::TransferMode mode,
                 const std::vector<ExprRef> &selectors,
                 std::vector<ir::BodyItem> &body) {
  // The rank below each edge that moves in each step.
  std::vector<std::vector<int64_t>> edges(t.steps);
  for (int64_t v : t.order)
    if (t.parent[v] >= 0)
      edges[down ? t.step[v] - 1 : t.steps - t.step[v]].push_back(v);
  for (std::vector<int64_t> &below : edges) {
    auto sender = [&](int64_t v) { return down ? t.parent[v] : v; };
    llvm::sort(below,
               [&](int64_t a, int64_t b) { return sender(a) < sender(b); });
    ir::Step step;
    for (int64_t v : below)
      step.rules.push_back(down ? transfer(t.parent[v], v, selectors[v], mode)
                                : transfer(v, t.parent[v], nullptr, mode));
    body.push_back(std::move(step));
  }
}

/// An empty schedule of `want` on `graph`, by `algorithm`, one result
/// buffer, as sema makes a hand-written one.
ir::Schedule builtSchedule(const std::string &name, llvm::StringRef algorithm,
                           const ir::Collective &want, const Topology &graph,
                           llvm::SMLoc loc) {
  ir::Schedule s;
  s.name = name;
  s.algorithm = algorithm.str();
  s.collective = want;
  s.topology = collc::templateOf(graph, loc);
  s.slotNames = {"r", "p", "origin", "dest", "index"};
  s.buffers.push_back({"result"});
  s.loc = loc;
  return s;
}

} // namespace

llvm::Expected<ir::Schedule>
library::spanningTreeSchedule(const std::string &name,
                              const ir::Collective &want, const Topology &graph,
                              llvm::SMLoc loc) {
  auto fail = [](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   why.str().c_str());
  };
  if (graph.kind() != TopologyKind::Graph)
    return fail("a spanning tree is built for a graph only");
  // Each collective in phases on the tree: up, towards the root, each rank
  // sending all it holds once its children have (copied or folded); then
  // down, from the root, all it has or the blocks of the receiver's subtree
  // (by `dest`), always copied.
  enum class Down { None, All, Subtree };
  bool up = false, folds = false;
  Down down = Down::None;
  bool rooted = false;
  switch (want.kind) {
  case CollectiveKind::Broadcast:
    down = Down::All, rooted = true;
    break;
  case CollectiveKind::Scatter:
    down = Down::Subtree, rooted = true;
    break;
  case CollectiveKind::Gather:
    up = true, rooted = true;
    break;
  case CollectiveKind::Reduce:
    up = folds = true, rooted = true;
    break;
  case CollectiveKind::Allreduce: // 000 §4.3's simple method
    up = folds = true, down = Down::All;
    break;
  case CollectiveKind::Allgather: // gather, then broadcast
    up = true, down = Down::All;
    break;
  case CollectiveKind::ReduceScatter: // reduce, then scatter
    up = folds = true, down = Down::Subtree;
    break;
  case CollectiveKind::Alltoall: // every block to the root, then by dest
  case CollectiveKind::Shift:
    up = true, down = Down::Subtree;
    break;
  default:
    return fail("a spanning tree gives no " +
                ir::collectiveKindName(want.kind));
  }
  SpanningTree t = spanningTree(graph, rooted ? want.root : 0);

  ir::Schedule s = builtSchedule(name, spanningTreeAlgorithm, want, graph, loc);

  std::vector<ExprRef> selectors(graph.numRanks());
  if (down == Down::Subtree) {
    std::vector<std::vector<int64_t>> subtree(graph.numRanks());
    for (int64_t v : llvm::reverse(t.order)) {
      subtree[v].push_back(v);
      llvm::sort(subtree[v]);
      if (t.parent[v] >= 0)
        llvm::append_range(subtree[t.parent[v]], subtree[v]);
      selectors[v] = destIn(subtree[v]);
    }
  }
  using ir::TransferMode;
  if (up)
    appendSteps(t, false, folds ? TransferMode::Reduce : TransferMode::Copy,
                selectors, s.body);
  if (down != Down::None)
    appendSteps(t, true, TransferMode::Copy, selectors, s.body);
  return s;
}

llvm::Expected<ir::Schedule>
library::directExchangeSchedule(const std::string &name,
                                const ir::Collective &want,
                                const Topology &graph, llvm::SMLoc loc) {
  if (want.kind == CollectiveKind::Permute && want.permuteTo) {
    ir::Schedule s =
        builtSchedule(name, directExchangeAlgorithm, want, graph, loc);
    // r -> to(r) when to(r) != r
    ir::TransferRule rule;
    rule.peer = want.permuteTo;
    rule.guard = bin(ExprOp::Ne, want.permuteTo, Expr::var("r", ir::SlotRank));
    rule.into.push_back({0, nullptr});
    ir::Step step;
    step.rules.push_back(std::move(rule));
    s.body.push_back(std::move(step));
    return s;
  }
  if (graph.kind() != TopologyKind::Graph ||
      want.kind != CollectiveKind::Alltoall)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the direct exchange is an all-to-all on "
                                   "a graph, or a permutation");
  ir::Schedule s =
      builtSchedule(name, directExchangeAlgorithm, want, graph, loc);
  const int64_t p = graph.numRanks();
  const ExprRef r = Expr::var("r", ir::SlotRank);
  for (int64_t k = 1; k < p; ++k) {
    // r -> (r + k) % p : origin == r and dest == (r + k) % p
    ExprRef peer = bin(ExprOp::Mod, bin(ExprOp::Add, r, num(k)), num(p));
    ir::TransferRule rule;
    rule.peer = peer;
    rule.selector = bin(ExprOp::And,
                        bin(ExprOp::Eq, Expr::var("origin", ir::SlotOrigin), r),
                        bin(ExprOp::Eq, Expr::var("dest", ir::SlotDest), peer));
    rule.into.push_back({0, nullptr});
    ir::Step step;
    step.rules.push_back(std::move(rule));
    s.body.push_back(std::move(step));
  }
  return s;
}

llvm::Expected<ir::Schedule>
library::chainScanSchedule(const std::string &name, const ir::Collective &want,
                           const Topology &graph, llvm::SMLoc loc) {
  const meaning::Conditions &m = meaning::conditionsOf(want.kind);
  if (!m.scans())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the chain is a scan");
  const bool exclusive = m.carries == meaning::Carries::Before;
  // A suffix scan runs the chain from the top rank down.
  const bool down = m.carries == meaning::Carries::Suffix;
  ir::Schedule s = builtSchedule(name, chainScanAlgorithm, want, graph, loc);
  // An exclusive scan: the prefixes pass along the chain in msg, and the
  // result, starting empty, takes only what comes from below (the library's
  // linear_exscan): p - 1 steps, as the scan's.
  if (exclusive) {
    s.buffers.front().startsEmpty = true;
    s.buffers.push_back({"msg"});
  }
  const int64_t p = graph.numRanks();
  for (int64_t k = 1; k < p; ++k) {
    ir::TransferRule rule =
        down ? transfer(p - k, p - k - 1, nullptr, ir::TransferMode::Reduce)
             : transfer(k - 1, k, nullptr, ir::TransferMode::Reduce);
    if (exclusive) {
      rule.fromBuffer = 1;
      rule.into = {{1, nullptr}, {0, nullptr}};
    }
    ir::Step step;
    step.rules.push_back(std::move(rule));
    s.body.push_back(std::move(step));
  }
  return s;
}
