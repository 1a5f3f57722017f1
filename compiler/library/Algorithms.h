#pragma once
// The library's algorithm families, by the name `using NAME` gives them:
// the collectives each implements and the topologies it runs on. The
// library (specs/library's schedules, which each name their family, and the
// schedules built for a topology, library/SpanningTree.h) attaches the
// schedules; sema reads the table to check a `using` where it is written.

#include "ir/Schedule.h"
#include "ir/TopologyKind.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <vector>

namespace collc::library {

struct Algorithm {
  llvm::StringRef name;
  std::vector<ir::CollectiveKind> collectives;
  /// Where its schedules run (empty: any topology).
  std::vector<TopologyKind> topologies;
  llvm::StringRef source;               // the seed section it comes from
};

/// The families of the schedules built for a topology (SpanningTree.h), as
/// `using` names them.
constexpr llvm::StringLiteral spanningTreeAlgorithm = "spanning_tree";
/// The direct all-to-all (001 §3.1, A1) and permutation.
constexpr llvm::StringLiteral directExchangeAlgorithm = "direct";
/// The linear array's scan, built over any topology's routes.
constexpr llvm::StringLiteral chainScanAlgorithm = "linear_array";

/// Every family, in the order the library documents them.
llvm::ArrayRef<Algorithm> algorithms();

/// The family named `name`, or null.
const Algorithm *findAlgorithm(llvm::StringRef name);

/// Whether `algorithm` runs `kind` on a topology of kind `topology`: one of
/// its topologies, or any for a schedule built over the topology's routes
/// (the chain scan). A graph's is decided when the collective is resolved.
bool runsOn(const Algorithm &algorithm, ir::CollectiveKind kind,
            TopologyKind topology);

} // namespace collc::library
