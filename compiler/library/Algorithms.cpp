#include "library/Algorithms.h"

#include "llvm/ADT/STLExtras.h"

using namespace collc;
using library::Algorithm;

llvm::ArrayRef<Algorithm> library::algorithms() {
  using CK = ir::CollectiveKind;
  using TK = TopologyKind;
  static const std::vector<Algorithm> table = {
      {"recursive_doubling",
       {CK::Broadcast, CK::Reduce, CK::Allgather, CK::ReduceScatter,
        CK::Allreduce, CK::Scan, CK::Exscan},
       {},
       "000 §4.1, §4.3"},
      {"ring",
       {CK::Allgather, CK::ReduceScatter, CK::Allreduce, CK::Alltoall,
        CK::Shift},
       {TK::Ring, TK::Torus, TK::Hypercube, TK::Full},
       "000 §4.2.1, §4.5.1, §4.6.1"},
      {"bidirectional_ring",
       {CK::Alltoall},
       {TK::Ring, TK::Torus, TK::Full},
       "000 §4.5.1"},
      {"mesh",
       {CK::Broadcast, CK::Reduce, CK::Allgather, CK::ReduceScatter,
        CK::Allreduce, CK::Alltoall, CK::Shift, CK::Scatter, CK::Gather},
       {TK::Mesh, TK::Torus},
       "000 §4.1.2, §4.2.2, §4.5.2, §4.6.1"},
      {"hypercube",
       {CK::Allgather, CK::ReduceScatter, CK::Allreduce, CK::Scan, CK::Exscan,
        CK::Alltoall},
       {TK::Hypercube, TK::Full},
       "000 Algs 4.7-4.9, §4.5.3"},
      {"binomial_tree", {CK::Scatter, CK::Gather}, {}, "000 §4.4"},
      {"sequential",
       {CK::Broadcast, CK::Scatter, CK::Gather},
       {},
       "000 §4.1's naive way, p - 1 messages from the source, one a rank; "
       "for scatter and gather §4.4's bound m(p - 1)"},
      {"reduce_broadcast", {CK::Allreduce}, {}, "000 §4.3"},
      {"linear_array",
       {CK::Allgather, CK::ReduceScatter, CK::Scan, CK::Exscan, CK::Alltoall,
        CK::SuffixScan},
       {TK::Linear, TK::Ring, TK::Hypercube, TK::Full, TK::Graph},
       "000 §4.2-4.3, §4.5.1 without wraparound (Problem 4.12)"},
      {"pairwise_exchange",
       {CK::Alltoall},
       {TK::Hypercube, TK::Full},
       "000 Alg 4.10"},
      {"scatter_allgather", {CK::Broadcast}, {}, "000 §4.7.1, Eq 4.13"},
      {"spanning_tree",
       {CK::Broadcast, CK::Reduce, CK::Scatter, CK::Gather, CK::Allreduce,
        CK::Allgather, CK::ReduceScatter, CK::Alltoall, CK::Shift},
       {TK::Graph},
       "a breadth-first spanning tree of the graph"},
      {"reduce_scatter_gather", {CK::Reduce}, {}, "000 §4.7.1"},
      {"reduce_scatter_allgather", {CK::Allreduce}, {}, "000 §4.7.1, Eq 4.14"},
      {"gray_code", {CK::Shift}, {TK::Hypercube}, "000 §4.6.2, Eq 4.11"},
      {"ecube", {CK::Shift}, {TK::Hypercube}, "000 §4.6.2, Eq 4.12"},
      {"spanning_binomial_trees", {CK::Broadcast}, {TK::Hypercube}, "004 §4.1"},
      {"rotated_gray_paths", {CK::Allgather}, {TK::Hypercube}, "004 §4.2"},
      {"rotated_spanning_trees",
       {CK::Scatter, CK::Gather, CK::Alltoall},
       {TK::Hypercube},
       "004 §4.4, 000 §4.7.2"},
      {"direct",
       {CK::Alltoall, CK::Alltoallv, CK::Permute},
       {},
       "001 §3.1 (A1); 004 §4.4's direct routing of a permutation"},
      {"dimension_exchange",
       {CK::Permute},
       {TK::Hypercube},
       "004 §4.4, §5: a sequence of pairwise dimension exchanges"},
      {"multiple_exchange",
       {CK::Permute},
       {TK::Hypercube},
       "004 §4.5, §5: several exchange sequences at once, all ports"},
      {"two_stage_random", {CK::Alltoallv}, {}, "001 §3.1 (A2)"},
      {"two_stage_mesh", {CK::Alltoallv}, {}, "001 §3.1 (A3)"},
      {"four_stage", {CK::Alltoallv}, {}, "001 §3.2 (A4)"},
  };
  return table;
}

const library::Algorithm *library::findAlgorithm(llvm::StringRef name) {
  for (const Algorithm &a : algorithms())
    if (a.name == name)
      return &a;
  return nullptr;
}

bool library::runsOn(const Algorithm &algorithm, ir::CollectiveKind kind,
                     TopologyKind topology) {
  if (algorithm.topologies.empty() || topology == TopologyKind::Graph ||
      llvm::is_contained(algorithm.topologies, topology))
    return true;
  return algorithm.name == chainScanAlgorithm &&
         meaning::conditionsOf(kind).scans();
}
