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
  std::vector<TopologyKind> topologies; // empty: any topology
  llvm::StringRef source;               // the seed section it comes from
};

/// Every family, in the order the library documents them.
llvm::ArrayRef<Algorithm> algorithms();

/// The family named `name`, or null.
const Algorithm *findAlgorithm(llvm::StringRef name);

} // namespace collc::library
