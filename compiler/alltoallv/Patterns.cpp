// The static communication patterns of 001 §3: A1-A3 (§3.1) and the
// four-stage algorithm A4 with its priority schedule (§3.2.2).

#include "alltoallv/Patterns.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>

using namespace collc;
using namespace collc::alltoallv;

static int64_t floorSqrt(int64_t p) {
  int64_t s = static_cast<int64_t>(std::sqrt(static_cast<double>(p)));
  while (s * s > p)
    --s;
  while ((s + 1) * (s + 1) <= p)
    ++s;
  return s;
}

static Layout layoutWithColumns(int64_t p, int64_t c) {
  Layout l;
  l.p = p;
  l.columns = c;
  l.rows = (p + c - 1) / c;
  l.r = p % c;
  return l;
}

Layout alltoallv::layoutFor(int64_t p) {
  int64_t lo = floorSqrt(p);
  int64_t hi = lo * lo == p ? lo : lo + 1;
  Layout l = layoutWithColumns(p, hi);
  // §3.2.2(A): the additional messages need R - 1 >= r complete rows, which
  // fails exactly when P = ceil(sqrt P) floor(sqrt P) - 1; C = floor(sqrt P)
  // then gives r = floor(sqrt P) - 1 and R - 1 = ceil(sqrt P) - 1.
  if (l.r > 0 && l.rows - 1 < l.r) {
    l = layoutWithColumns(p, lo);
    l.rearranged = true;
  }
  return l;
}

int64_t Layout::rowPeer(int64_t sender, int64_t c) const {
  int64_t rw = row(sender);
  if (r > 0 && rw == rows - 1 && c >= r)
    return rank(column(sender), c); // a pseudo-node's stand-in
  return rank(rw, c);
}

llvm::StringRef alltoallv::algorithmName(Algorithm a) {
  switch (a) {
  case Algorithm::Direct:
    return "direct";
  case Algorithm::TwoStageRandom:
    return "two_stage_random";
  case Algorithm::TwoStageMesh:
    return "two_stage_mesh";
  case Algorithm::FourStage:
    return "four_stage";
  }
  return "?";
}

std::optional<Algorithm> alltoallv::parseAlgorithm(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Algorithm>>(name)
      .Case("direct", Algorithm::Direct)
      .Case("two_stage_random", Algorithm::TwoStageRandom)
      .Case("two_stage_mesh", Algorithm::TwoStageMesh)
      .Case("four_stage", Algorithm::FourStage)
      .Default(std::nullopt);
}

std::optional<Algorithm> alltoallv::algorithmFor(llvm::StringRef usingName) {
  return usingName.empty() ? Algorithm::FourStage : parseAlgorithm(usingName);
}

llvm::StringRef alltoallv::stageKindName(StageKind kind) {
  switch (kind) {
  case StageKind::RowDistribute:
    return "R-Distribute + R-Comm";
  case StageKind::ColumnDistribute:
    return "C-Distribute + C-Comm";
  case StageKind::RowCollect:
    return "C-Collect + R-Comm";
  case StageKind::ColumnCollect:
    return "R-Collect + C-Comm";
  case StageKind::Spread:
    return "spread";
  case StageKind::Direct:
    return "direct";
  }
  return "?";
}

std::vector<int64_t> alltoallv::revisedRowSenders(const Layout &l,
                                                  int64_t row) {
  std::vector<int64_t> senders;
  for (int64_t c = 0; c < l.columns && l.rank(row, c) < l.p; ++c)
    senders.push_back(l.rank(row, c));
  if (l.r > 0 && row < l.r)
    senders.push_back(l.rank(l.rows - 1, row));
  return senders;
}

std::vector<std::vector<int64_t>>
alltoallv::revisedRowSchedule(const Layout &l, int64_t m) {
  const int64_t c = l.columns;
  // Rows m < r receive the additional messages of the incomplete-row node
  // of column m; they need one step more.
  const bool extra = l.r > 0 && m < l.r;
  const int64_t steps = extra ? c + 1 : c;
  std::vector<int64_t> senders = revisedRowSenders(l, m);
  std::vector<std::vector<int64_t>> table(
      steps, std::vector<int64_t>(senders.size(), -1));
  for (size_t k = 0; k < senders.size(); ++k) {
    int64_t x = senders[k];
    int64_t col = l.column(x);
    // 1-based step at which column `col` of row m stalls, 0 for none. The
    // priority chain of §3.2.2(B): the additional message to column j goes
    // out in step j - m and has priority, so column m stalls first (step
    // r - m), then m - 1 one step later, and so on down to column r
    // (wrapping): column (m - q) mod C stalls in step r - m + q, q = 0 ..
    // C - r + m. (The paper's text says step r - m + 1 + q with 1-based
    // steps; its Figure 10 shows r - m + q, which is what is proved.)
    int64_t stall = 0;
    if (extra && l.row(x) == m) {
      int64_t q = ((m - col) % c + c) % c;
      if (q <= c - l.r + m)
        stall = l.r - m + q;
    }
    int64_t next = 1; // the next target offset in the plain R-Schedule
    for (int64_t s = 1; s <= steps; ++s) {
      if (s == stall || next > c)
        continue;
      table[s - 1][k] = l.rowPeer(x, (col + next) % c);
      ++next;
    }
  }
  return table;
}

/// Stage I / III: every row's revised R-Schedule, side by side; the
/// incomplete row's nodes are the extra senders of rows 0 .. r - 1.
static Stage rowStage(const Layout &l, StageKind kind, std::string name) {
  Stage stage{kind, std::move(name), {}};
  int64_t completeRows = l.r > 0 ? l.rows - 1 : l.rows;
  for (int64_t m = 0; m < completeRows; ++m) {
    std::vector<int64_t> senders = revisedRowSenders(l, m);
    std::vector<std::vector<int64_t>> table = revisedRowSchedule(l, m);
    if (stage.sendTo.size() < table.size())
      stage.sendTo.resize(table.size(), std::vector<int64_t>(l.p, -1));
    for (size_t s = 0; s < table.size(); ++s)
      for (size_t k = 0; k < senders.size(); ++k)
        if (table[s][k] != senders[k]) // a self-message is a local copy
          stage.sendTo[s][senders[k]] = table[s][k];
  }
  // Without an incomplete row the last step holds only self-messages.
  llvm::erase_if(stage.sendTo, [](const std::vector<int64_t> &step) {
    return llvm::all_of(step, [](int64_t y) { return y < 0; });
  });
  return stage;
}

/// Stage II / IV: the C-Schedule in every column, N = the column's size:
/// in step k the node of row i sends to row (i + k) mod N.
static Stage columnStage(const Layout &l, StageKind kind, std::string name) {
  Stage stage{kind, std::move(name), {}};
  stage.sendTo.assign(l.rows - 1, std::vector<int64_t>(l.p, -1));
  for (int64_t x = 0; x < l.p; ++x) {
    int64_t n = l.columnSize(l.column(x));
    for (int64_t k = 1; k < n; ++k)
      stage.sendTo[k - 1][x] = l.rank((l.row(x) + k) % n, l.column(x));
  }
  return stage;
}

/// A1's schedule (§3.1.1): in step k node x sends to (x + k) mod P.
static Stage shiftStage(int64_t p, StageKind kind, std::string name) {
  Stage stage{kind, std::move(name), {}};
  stage.sendTo.assign(p - 1, std::vector<int64_t>(p, -1));
  for (int64_t k = 1; k < p; ++k)
    for (int64_t x = 0; x < p; ++x)
      stage.sendTo[k - 1][x] = (x + k) % p;
  return stage;
}

/// An upper bound on the sends in `algorithm`'s tables on P nodes: P per
/// step, a row stage taking at most C + 1 steps and a column stage R - 1.
static int64_t sendsBound(Algorithm algorithm, int64_t p) {
  switch (algorithm) {
  case Algorithm::Direct:
    return p * (p - 1);
  case Algorithm::TwoStageRandom:
    return 2 * p * (p - 1);
  case Algorithm::TwoStageMesh:
    return p * (2 * floorSqrt(p));
  case Algorithm::FourStage: {
    const Layout l = layoutFor(p);
    return 2 * p * (l.columns + l.rows);
  }
  }
  return 0;
}

llvm::Error alltoallv::checkRanks(Algorithm algorithm, int64_t p) {
  if (p < 2)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "irregular all-to-all needs at least 2 "
                                   "ranks, not %lld",
                                   static_cast<long long>(p));
  if (algorithm == Algorithm::TwoStageMesh && floorSqrt(p) * floorSqrt(p) != p)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "two_stage_mesh (001 §3.1.3, A3) needs a perfect square number "
        "of ranks, not %lld; four_stage (A4) runs on any number",
        static_cast<long long>(p));
  if (const int64_t sends = sendsBound(algorithm, p); sends > maxPatternSends)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "%s on %lld ranks sends up to %lld messages in its steps, more than "
        "the %lld a pattern is built and proved with",
        algorithmName(algorithm).str().c_str(), static_cast<long long>(p),
        static_cast<long long>(sends), static_cast<long long>(maxPatternSends));
  return llvm::Error::success();
}

llvm::Expected<Pattern> alltoallv::buildPattern(Algorithm algorithm,
                                                int64_t p) {
  if (llvm::Error e = checkRanks(algorithm, p))
    return e;
  Pattern pattern;
  pattern.algorithm = algorithm;
  switch (algorithm) {
  case Algorithm::Direct:
    pattern.layout = layoutWithColumns(p, p);
    pattern.stages.push_back(shiftStage(p, StageKind::Direct, "A1"));
    break;
  case Algorithm::TwoStageRandom:
    pattern.layout = layoutWithColumns(p, p);
    pattern.stages.push_back(shiftStage(p, StageKind::Spread, "1"));
    pattern.stages.push_back(shiftStage(p, StageKind::Direct, "2"));
    break;
  case Algorithm::TwoStageMesh: {
    pattern.layout = layoutWithColumns(p, floorSqrt(p));
    pattern.stages.push_back(rowStage(pattern.layout, StageKind::RowCollect,
                                      "1"));
    pattern.stages.push_back(
        columnStage(pattern.layout, StageKind::ColumnCollect, "2"));
    break;
  }
  case Algorithm::FourStage:
    pattern.layout = layoutFor(p);
    pattern.stages.push_back(
        rowStage(pattern.layout, StageKind::RowDistribute, "I"));
    pattern.stages.push_back(
        columnStage(pattern.layout, StageKind::ColumnDistribute, "II"));
    pattern.stages.push_back(
        rowStage(pattern.layout, StageKind::RowCollect, "III"));
    pattern.stages.push_back(
        columnStage(pattern.layout, StageKind::ColumnCollect, "IV"));
    break;
  }
  return pattern;
}

static ModelCost flatCost(Algorithm algorithm, int64_t p) {
  const int64_t c = floorSqrt(p) * floorSqrt(p) == p ? floorSqrt(p)
                                                     : floorSqrt(p) + 1;
  switch (algorithm) {
  case Algorithm::Direct: // P start-ups, L_max of traffic
    return {p, p, "001 Table 3 (A1)"};
  case Algorithm::TwoStageRandom: // 2P start-ups, 2 L_max
    return {2 * p, 2 * p, "001 Table 3 (A2)"};
  case Algorithm::TwoStageMesh: // 2 sqrt(P) start-ups, 2 L_max
    return {2 * floorSqrt(p), 2 * p, "001 Table 3 (A3)"};
  case Algorithm::FourStage:
    // (4 ceil(sqrt P) + 2) T_d + 4 (ceil(sqrt P) + 1) ceil(sqrt P) L_max / P
    // (t_m + t_c + t_d).
    return {4 * c + 2, 4 * (c + 1) * c, "001 Theorem 2 (A4)"};
  }
  return {};
}

ModelCost alltoallv::modelCost(Algorithm algorithm, int64_t p,
                               llvm::ArrayRef<int64_t> stageLoads) {
  ModelCost cost = flatCost(algorithm, p);
  if (stageLoads.empty())
    return cost;
  // Every total above divides evenly among the stages (4, 2, 2 or 1).
  const int64_t share = cost.traffic / static_cast<int64_t>(stageLoads.size());
  cost.traffic = 0;
  for (int64_t load : stageLoads)
    cost.traffic += std::max<int64_t>(load, 1) * share;
  return cost;
}

/// A schedule of the pattern's collective on `topology` (full(P) when
/// null), without steps.
static ir::Schedule emptySchedule(const Pattern &pattern, llvm::StringRef name,
                                  const Topology *topology) {
  ir::Schedule s;
  s.name = name.str();
  s.collective.kind = ir::CollectiveKind::Alltoallv;
  if (topology) {
    s.topology = collc::templateOf(*topology);
  } else {
    s.topology.kind = TopologyKind::Full;
    s.topology.dims.push_back(ir::Expr::constant(pattern.layout.p));
  }
  s.buffers.push_back({"result"});
  s.slotNames = {"r", "p", "origin", "dest", "index"};
  return s;
}

/// Appends `st`'s steps to `s`: one transfer x -> sendTo[s][x] per sender,
/// carrying the chunks `selector(x, y)` names.
static void
appendSteps(ir::Schedule &s, const Stage &st, int64_t p,
            llvm::function_ref<ir::ExprRef(int64_t x, int64_t y)> selector) {
  using ir::Expr;
  ir::ExprRef rank = Expr::var("r", ir::SlotRank);
  for (size_t i = 0; i < st.numSteps(); ++i) {
    ir::Step step;
    step.name = st.name + "." + std::to_string(i + 1);
    for (int64_t x = 0; x < p; ++x) {
      int64_t y = st.sendTo[i][x];
      if (y < 0)
        continue;
      ir::TransferRule rule;
      rule.guard = Expr::binary(ir::ExprOp::Eq, rank, Expr::constant(x));
      rule.peer = Expr::constant(y);
      rule.selector = selector(x, y);
      rule.into.push_back({0, nullptr});
      step.rules.push_back(std::move(rule));
    }
    s.body.push_back(std::move(step));
  }
}

/// `a == v and b == w`.
static ir::ExprRef bothEqual(const ir::ExprRef &a, int64_t v,
                             const ir::ExprRef &b, int64_t w) {
  using ir::Expr;
  using ir::ExprOp;
  return Expr::binary(ExprOp::And,
                      Expr::binary(ExprOp::Eq, a, Expr::constant(v)),
                      Expr::binary(ExprOp::Eq, b, Expr::constant(w)));
}

ir::Schedule alltoallv::stageSchedule(const Pattern &pattern, size_t stage,
                                      llvm::StringRef name,
                                      const Topology *topology) {
  ir::Schedule s = emptySchedule(pattern, name, topology);
  ir::ExprRef origin = ir::Expr::var("origin", ir::SlotOrigin);
  ir::ExprRef dest = ir::Expr::var("dest", ir::SlotDest);
  appendSteps(
      s, pattern.stages[stage], pattern.layout.p,
      [&](int64_t x, int64_t y) { return bothEqual(origin, x, dest, y); });
  return s;
}

namespace {
/// Expressions over a chunk's coordinates for the pattern's routes.
struct RouteExprs {
  const Layout &l;
  ir::ExprRef origin = ir::Expr::var("origin", ir::SlotOrigin);
  ir::ExprRef dest = ir::Expr::var("dest", ir::SlotDest);
  ir::ExprRef index = ir::Expr::var("index", ir::SlotIndex);

  static ir::ExprRef k(int64_t v) { return ir::Expr::constant(v); }
  static ir::ExprRef bin(ir::ExprOp op, ir::ExprRef a, ir::ExprRef b) {
    return ir::Expr::binary(op, std::move(a), std::move(b));
  }
  /// Layout::rowPeer over expressions: the node of h's row and column c,
  /// or a pseudo-node's stand-in (h's column, c).
  ir::ExprRef rowPeer(const ir::ExprRef &h, const ir::ExprRef &c) const {
    using ir::ExprOp;
    ir::ExprRef own = bin(
        ExprOp::Add,
        bin(ExprOp::Mul, bin(ExprOp::Div, h, k(l.columns)), k(l.columns)), c);
    if (l.r == 0)
      return own;
    ir::ExprRef standIn = bin(
        ExprOp::Add,
        bin(ExprOp::Mul, bin(ExprOp::Mod, h, k(l.columns)), k(l.columns)), c);
    ir::ExprRef pseudo =
        bin(ExprOp::And,
            bin(ExprOp::Eq, bin(ExprOp::Div, h, k(l.columns)), k(l.rows - 1)),
            bin(ExprOp::Ge, c, k(l.r)));
    return ir::Expr::select(pseudo, standIn, own);
  }
  /// Who holds a chunk after a stage of `kind`, given who held it before:
  /// what the runtime's buckets do (runtime/src/AlltoallvPlan.cpp, Exchange::
  /// distribute). The chunk index is the node a Distribute or Spread deals
  /// the chunk's elements to: its column in Stage I, its row in Stage II.
  ir::ExprRef holderAfter(StageKind kind, const ir::ExprRef &before) const {
    using ir::ExprOp;
    switch (kind) {
    case StageKind::RowDistribute:
      return rowPeer(before, bin(ExprOp::Mod, index, k(l.columns)));
    case StageKind::ColumnDistribute:
    case StageKind::Spread:
      return index;
    case StageKind::RowCollect:
      return rowPeer(before, bin(ExprOp::Mod, dest, k(l.columns)));
    case StageKind::ColumnCollect:
    case StageKind::Direct:
      return dest;
    }
    return dest;
  }
};
} // namespace

int64_t alltoallv::chunksPerBlock(const Pattern &pattern) {
  const bool deals = llvm::any_of(pattern.stages, [](const Stage &s) {
    return s.kind == StageKind::RowDistribute ||
           s.kind == StageKind::ColumnDistribute || s.kind == StageKind::Spread;
  });
  return deals ? pattern.layout.p : 1;
}

ir::Schedule alltoallv::patternSchedule(const Pattern &pattern,
                                        llvm::StringRef name,
                                        const Topology *topology) {
  ir::Schedule s = emptySchedule(pattern, name, topology);
  if (chunksPerBlock(pattern) > 1)
    s.chunks = ir::Expr::constant(chunksPerBlock(pattern));
  RouteExprs route{pattern.layout};
  ir::ExprRef holder = route.origin;
  for (const Stage &st : pattern.stages) {
    ir::ExprRef next = route.holderAfter(st.kind, holder);
    // The chunks x holds before the stage whose next holder is y.
    appendSteps(s, st, pattern.layout.p, [&](int64_t x, int64_t y) {
      return bothEqual(holder, x, next, y);
    });
    holder = next;
  }
  return s;
}
