#pragma once
// Irregular all-to-all (001, "Portable and Scalable Algorithm for Irregular
// All-to-All Communication"): the static communication patterns of the
// four-stage algorithm A4 (§3.2) and of the baselines A1-A3 (§3.1).
//
// Message sizes are known only at run time, but who talks to whom in which
// step is not: it depends on P alone. This stage builds that pattern for a
// given P, as plain step tables (what the runtime executes) and as concrete
// Schedule IR (what verify proves: each stage contention-free and matched,
// the whole routing every block to its destination), so the table that is
// proved is the table that is emitted.

#include "ir/Schedule.h"
#include "topology/Topology.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace collc::alltoallv {

/// The logical C x R node array of §3.2 (row-major ranks). The first r
/// columns are complete (R nodes), the others incomplete (R - 1 nodes); the
/// last row is incomplete when r > 0 (r nodes, then C - r pseudo-nodes).
struct Layout {
  int64_t p = 0;
  int64_t columns = 0; // C
  int64_t rows = 0;    // R
  int64_t r = 0;       // P % C: nodes in the incomplete row (0: none)
  /// §3.2.2(A): C = floor(sqrt P) instead of ceil(sqrt P), taken when
  /// P = ceil(sqrt P) * floor(sqrt P) - 1 so that R - 1 >= r.
  bool rearranged = false;

  int64_t row(int64_t rank) const { return rank / columns; }
  int64_t column(int64_t rank) const { return rank % columns; }
  int64_t rank(int64_t row, int64_t column) const {
    return row * columns + column;
  }
  /// Nodes in column c: R for a complete column, R - 1 otherwise.
  int64_t columnSize(int64_t c) const {
    return r == 0 || c < r ? rows : rows - 1;
  }
  /// The node that receives what a row sends to column c in Stages I and
  /// III: the node of that row and column, or, from the incomplete row to a
  /// pseudo-node, node (sender's column, c) (§3.2.2(A), Figure 8).
  int64_t rowPeer(int64_t sender, int64_t c) const;
};

/// The array for P nodes; P >= 1.
Layout layoutFor(int64_t p);

/// The algorithms of 001 §3.
enum class Algorithm { Direct, TwoStageRandom, TwoStageMesh, FourStage };
llvm::StringRef algorithmName(Algorithm a); // the name `using` takes
std::optional<Algorithm> parseAlgorithm(llvm::StringRef name);
/// What `collective x = alltoallv on T [using NAME];` runs: NAME's pattern,
/// or without `using` A4, the paper's algorithm for any P (001 §3.2), since
/// the message sizes that would decide otherwise are known only at run time.
std::optional<Algorithm> algorithmFor(llvm::StringRef usingName);

/// What a stage's messages carry, so that the runtime can fill each bucket.
enum class StageKind {
  RowDistribute,    // A4 Stage I: R-Distribute, spread over the row (Fig. 11)
  ColumnDistribute, // A4 Stage II: C-Distribute, spread over the column
  RowCollect,       // A4 Stage III, A3 stage 1: to the destination's column
  ColumnCollect,    // A4 Stage IV, A3 stage 2: to the destination
  Spread,           // A2 stage 1: spread over every node
  Direct,           // A1, A2 stage 2: to the destination
};
llvm::StringRef stageKindName(StageKind kind);

/// One stage: in step s (0-based), rank x sends its bucket for sendTo[s][x]
/// (-1: none, a stall or an idle node). Self-messages are local copies and
/// are not in the table.
struct Stage {
  StageKind kind = StageKind::Direct;
  std::string name; // "I", "II", ...
  std::vector<std::vector<int64_t>> sendTo;

  size_t numSteps() const { return sendTo.size(); }
};

struct Pattern {
  Algorithm algorithm = Algorithm::FourStage;
  Layout layout;
  std::vector<Stage> stages;
};

/// The most sends the step tables of a pattern may hold, summed over its
/// stages: its stages' schedules are built from them and proved one
/// transfer each, and four_stage on 65,536 ranks would hold 2^26.
inline constexpr int64_t maxPatternSends = int64_t(1) << 25;

/// Whether `algorithm`'s pattern exists on P nodes and is small enough to
/// build: P >= 2, a perfect square for two_stage_mesh (A3, §3.1.3), and at
/// most maxPatternSends sends. Sema reports it at the declaration;
/// buildPattern refuses the same.
llvm::Error checkRanks(Algorithm algorithm, int64_t p);

/// The pattern of `algorithm` on P nodes; checkRanks's errors.
llvm::Expected<Pattern> buildPattern(Algorithm algorithm, int64_t p);

/// An algorithm's time in the flat model of 001 §2, A·T_s + B·(L_max/P)·t
/// (t per byte, L_max the largest total a node sends or receives): A4 by
/// Theorem 2, A1-A3 by Table 3's start-ups and total traffic. For a regular
/// all-to-all of m bytes per pair, L_max / P = m.
struct ModelCost {
  int64_t startups = 0; // A
  int64_t traffic = 0;  // B, in units of L_max / P
  const char *source = "";
};
/// The flat model assumes no two messages of a step share a link (§2.1).
/// Given each stage's most loaded channel on the topology (`stageLoads`, one
/// per stage; empty: 1 each), a stage's share of the traffic (Theorem 2
/// bounds the four stages alike; Table 3's totals split evenly) is taken that
/// many times: its longest step moves that many messages over one link.
ModelCost modelCost(Algorithm algorithm, int64_t p,
                    llvm::ArrayRef<int64_t> stageLoads = {});

/// The revised R-Schedule of §3.2.2(B) for one row of the array, as
/// Figure 10 prints it: entry [s][k] is the receiver of the k-th sender in
/// step s + 1, senders being the row's C nodes then (for rows m < r) the
/// incomplete-row node of column m; -1 is a stall. Self-messages included.
std::vector<std::vector<int64_t>> revisedRowSchedule(const Layout &layout,
                                                     int64_t row);

/// The senders of revisedRowSchedule's columns: the row's nodes, then the
/// incomplete-row node that sends it additional messages, if any.
std::vector<int64_t> revisedRowSenders(const Layout &layout, int64_t row);

/// A stage as concrete Schedule IR on `topology` (P ranks; full(P) when
/// null): step s holds one transfer `x -> sendTo[s][x]` per sender, each
/// carrying x's own block for that peer (so causality holds trivially), for
/// verify to prove contention-free and matched and to measure the links'
/// load. Where each element goes is patternSchedule's to prove.
ir::Schedule stageSchedule(const Pattern &pattern, size_t stage,
                           llvm::StringRef name,
                           const Topology *topology = nullptr);

/// The chunks of a block in patternSchedule: P where the pattern deals a
/// message's elements over intermediate nodes (A2, A4), one chunk per node;
/// else 1.
int64_t chunksPerBlock(const Pattern &pattern);

/// The whole pattern as one concrete Schedule IR on `topology`: its stages'
/// steps in order, each transfer x -> y carrying the chunks that x holds
/// before the stage and that the stage routes to y, as the runtime's
/// buckets do. A pattern that deals elements over intermediate nodes (A2,
/// A4) has P chunk indices per block, index m being the node a chunk's
/// elements pass through; so causality (a node forwards only what reached
/// it) and correctness (every block reaches its destination) are proved as
/// for any all-to-all.
ir::Schedule patternSchedule(const Pattern &pattern, llvm::StringRef name,
                             const Topology *topology = nullptr);

} // namespace collc::alltoallv
