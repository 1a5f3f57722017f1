// Runs the emitted schedules of one spec file under mpirun and compares
// every rank's result with the MPI library's own collective on the same
// input: exactly for integers, within rounding for floating point (and
// bit-identical on every rank for all-reduce). Data differs per rank, block
// and element, so a misplaced chunk cannot pass. A schedule whose topology
// has no member with this many ranks must refuse with MPI_ERR_SIZE; every
// schedule that runs must also refuse a non-contiguous type and a root it is
// not proved for. Repeated calls (which the runtime replays from a
// recording, runtime/src/Engine.cpp) get other data at other addresses each
// time. Exit status 0 when all agree.
//
//   mpirun -np N e2e_test SPEC      (SPEC: broadcast, hypercube, e2e, ...)

// specs/library
#include "all_port.h"
#include "allgather.h"
#include "allreduce_scan.h"
#include "alltoall.h"
#include "broadcast.h"
#include "ordered.h"
#include "permute.h"
#include "scatter_gather.h"
#include "shift.h"
#include "split.h"
// specs/ and tests/e2e/e2e.coll
#include "basics.h"
#include "e2e.h"
#include "hypercube.h"
#include "redistribute.h"
#include "ring.h"
#include "shuffle.h"
#include "twin.h"

#include "collc/Redistribute.h"
#include "collc/Runtime.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

int rank = 0, size = 1;
int failures = 0;

void check(bool ok, const std::string &what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
  }
}

// ---------------------------------------------------------------------------
// The schedules, one row each.

enum class Kind {
  Bcast,
  Reduce,
  Allreduce,
  Scan,
  Exscan,
  SuffixScan,
  ReduceScatter,
  Allgather,
  Alltoall,
  Scatter,
  Gather,
  Shift,
  ShiftBy, // a family over the amount: the function takes q
  Permute
};

using BcastFn = int (*)(void *, int, MPI_Datatype, int, MPI_Comm);
using ReduceFn = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, int,
                         MPI_Comm);
// Allreduce, scan and reduce-scatter (MPI_Reduce_scatter_block).
using AllreduceFn = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op,
                            MPI_Comm);
// Allgather and alltoall.
using ExchangeFn = int (*)(const void *, int, MPI_Datatype, void *, int,
                           MPI_Datatype, MPI_Comm);
// Scatter and gather.
using RootedFn = int (*)(const void *, int, MPI_Datatype, void *, int,
                         MPI_Datatype, int, MPI_Comm);
using ShiftFn = int (*)(const void *, void *, int, MPI_Datatype, MPI_Comm);
using ShiftByFn = int (*)(const void *, void *, int, MPI_Datatype, int,
                          MPI_Comm);

// The table stores every function as one pointer type; the overloads pick
// the MPI_Comm form of an emitted function by its signature.
using AnyFn = void (*)();
AnyFn erase(BcastFn f) { return reinterpret_cast<AnyFn>(f); }
AnyFn erase(ReduceFn f) { return reinterpret_cast<AnyFn>(f); }
AnyFn erase(AllreduceFn f) { return reinterpret_cast<AnyFn>(f); }
AnyFn erase(ExchangeFn f) { return reinterpret_cast<AnyFn>(f); }
AnyFn erase(RootedFn f) { return reinterpret_cast<AnyFn>(f); }
AnyFn erase(ShiftFn f) { return reinterpret_cast<AnyFn>(f); }
// MPICH's handles are ints, so there a shift by q has allreduce's type and
// that overload serves it; this one is only for MPIs where the types differ.
template <typename Same = std::is_same<ShiftByFn, AllreduceFn>>
  requires(!Same::value)
AnyFn erase(ShiftByFn f) { return reinterpret_cast<AnyFn>(f); }

// The rank counts a topology family has within the proved range.
using Fits = bool (*)(int p);
bool ranks2to8(int p) { return p >= 2 && p <= 8; }
bool ranks4to8(int p) { return p >= 4 && p <= 8; }
bool ranks2to16(int p) { return p >= 2 && p <= 16; }
bool ranks4to16(int p) { return p >= 4 && p <= 16; }
bool powerOfTwo(int p) { return p >= 2 && (p & (p - 1)) == 0; }
bool cube1to3(int p) { return powerOfTwo(p) && p <= 8; }
bool cube2to3(int p) { return powerOfTwo(p) && p >= 4 && p <= 8; }
bool cube1to8(int p) { return powerOfTwo(p) && p <= 256; }
bool cube3to8(int p) { return powerOfTwo(p) && p >= 8 && p <= 256; }
bool leaves2to16(int p) { return powerOfTwo(p) && p <= 16; }
// Whether p is a product of one value from each range {lo, hi}: the sizes
// of a mesh or torus family the build proves.
bool productOf(int p, std::initializer_list<std::pair<int, int>> ranges) {
  std::vector<int> sizes = {1};
  for (auto [lo, hi] : ranges) {
    std::vector<int> next;
    for (int n : sizes)
      for (int v = lo; v <= hi; ++v)
        next.push_back(n * v);
    sizes = std::move(next);
  }
  return std::find(sizes.begin(), sizes.end(), p) != sizes.end();
}
// mesh(a, b) with a in 1..4, b in 2..4; mesh(a, b, c) with a, b in 1..4,
// c in 2..3; torus(a, b) with a, b in 2..4 (torus_shift).
bool meshAB(int p) { return productOf(p, {{1, 4}, {2, 4}}); }
bool meshABC(int p) { return productOf(p, {{1, 4}, {1, 4}, {2, 3}}); }
bool torusAB(int p) { return productOf(p, {{2, 4}, {2, 4}}); }
bool exactly8(int p) { return p == 8; }
bool exactly16(int p) { return p == 16; }
bool exactly6(int p) { return p == 6; }

// Where a permutation sends rank r's block on p ranks: the reference's
// own spelling of the declared map.
using Map = int (*)(int r, int p);
int log2Of(int p) {
  int d = 0;
  while ((1 << d) < p)
    ++d;
  return d;
}
int bitReverse(int r, int p) {
  int out = 0;
  for (int i = 0, d = log2Of(p); i < d; ++i)
    out |= ((r >> i) & 1) << (d - 1 - i);
  return out;
}
int shuffleOne(int r, int p) {
  return ((r << 1) | (r >> (log2Of(p) - 1))) & (p - 1);
}
// The k-step shuffle with k = 2 (mod the dimension, as the family's map).
int shuffleTwo(int r, int p) {
  const int d = log2Of(p), k = d ? 2 % d : 0;
  return d ? ((r << k) | (r >> (d - k))) & (p - 1) : 0;
}
int unshuffleOne(int r, int p) {
  return (r >> 1) | ((r & 1) << (log2Of(p) - 1));
}
int grayOf(int r, int) { return r ^ (r >> 1); }
int grayInverse(int r, int) {
  int out = 0;
  for (; r; r >>= 1)
    out ^= r;
  return out;
}
int invert(int r, int p) { return r ^ (p - 1); }
// Bit inversion in the subcube 00..01xx..x holding r: its bits below the
// leading one inverted.
int subcubeInvert(int r, int) {
  if (r == 0)
    return 0;
  int lead = 1;
  while (lead * 2 <= r)
    lead *= 2;
  return r ^ (lead - 1);
}
int reverseOrder(int r, int p) { return p - 1 - r; }

struct Schedule {
  const char *spec;
  const char *name;
  Kind kind;
  AnyFn fn;
  Fits fits;
  int root = 0;            // rooted collectives
  int shift = 0;           // shift(q)
  bool keepsOrder = false; // folds in rank order: non-commutative ops work
  Map to = nullptr;        // permute(to: ...)
};

// clang-format off
const Schedule schedules[] = {
  // spec          name                          kind                 function                                  sizes       root/q  order
  {"broadcast",    "linear_bc",                  Kind::Bcast,         erase(library::linear_bc),                ranks2to16},
  {"broadcast",    "linear_reduce",              Kind::Reduce,        erase(library::linear_reduce),            ranks2to16},
  {"broadcast",    "ring_bc",                    Kind::Bcast,         erase(library::ring_bc),                  ranks4to16, 3},
  {"broadcast",    "ring_reduce",                Kind::Reduce,        erase(library::ring_reduce),              ranks4to16, 3},
  {"broadcast",    "hypercube_bc",               Kind::Bcast,         erase(library::hypercube_bc),             cube1to8},
  {"broadcast",    "star_bc",                    Kind::Bcast,         erase(library::star_bc),                  cube1to8},
  {"broadcast",    "hypercube_bc_any_root",      Kind::Bcast,         erase(library::hypercube_bc_any_root),    cube3to8,   5},
  {"broadcast",    "hypercube_reduce",           Kind::Reduce,        erase(library::hypercube_reduce),         cube1to8},
  {"broadcast",    "hypercube_reduce_any_root",  Kind::Reduce,        erase(library::hypercube_reduce_any_root), cube3to8,  6},
  {"broadcast",    "mesh_bc",                    Kind::Bcast,         erase(library::mesh_bc),                  meshAB},
  {"broadcast",    "mesh_reduce",                Kind::Reduce,        erase(library::mesh_reduce),              meshAB},
  {"broadcast",    "mesh3d_bc",                  Kind::Bcast,         erase(library::mesh3d_bc),                meshABC},
  {"broadcast",    "mesh3d_reduce",              Kind::Reduce,        erase(library::mesh3d_reduce),            meshABC},
  {"broadcast",    "tree_bc",                    Kind::Bcast,         erase(library::tree_bc),                  leaves2to16},
  {"broadcast",    "tree_reduce",                Kind::Reduce,        erase(library::tree_reduce),              leaves2to16},
  {"allgather",    "ring_allgather",             Kind::Allgather,     erase(library::ring_allgather),           ranks2to8},
  {"allgather",    "ring_reduce_scatter",        Kind::ReduceScatter, erase(library::ring_reduce_scatter),      ranks2to8},
  {"allgather",    "linear_allgather",           Kind::Allgather,     erase(library::linear_allgather),         ranks2to8},
  {"allgather",    "full_allgather",             Kind::Allgather,     erase(library::full_allgather),           ranks2to8},
  {"allgather",    "full_reduce_scatter",        Kind::ReduceScatter, erase(library::full_reduce_scatter),      ranks2to8},
  {"allgather",    "linear_reduce_scatter",      Kind::ReduceScatter, erase(library::linear_reduce_scatter),    ranks2to8},
  {"allgather",    "mesh_allgather",             Kind::Allgather,     erase(library::mesh_allgather),           meshAB},
  {"allgather",    "mesh_reduce_scatter",        Kind::ReduceScatter, erase(library::mesh_reduce_scatter),      meshAB},
  {"allgather",    "hypercube_allgather",        Kind::Allgather,     erase(library::hypercube_allgather),      cube1to3},
  {"allgather",    "hypercube_reduce_scatter",   Kind::ReduceScatter, erase(library::hypercube_reduce_scatter), cube1to3},
  {"allreduce_scan", "hypercube_allreduce",      Kind::Allreduce,     erase(library::hypercube_allreduce),      cube1to3},
  {"allreduce_scan", "full_allreduce",           Kind::Allreduce,     erase(library::full_allreduce),           ranks2to8},
  {"allreduce_scan", "tree_allreduce",           Kind::Allreduce,     erase(library::tree_allreduce),           cube1to3},
  {"allreduce_scan", "hypercube_scan",           Kind::Scan,          erase(library::hypercube_scan),           cube1to3},
  {"allreduce_scan", "linear_scan",              Kind::Scan,          erase(library::linear_scan),              ranks2to8},
  {"allreduce_scan", "hypercube_exscan",         Kind::Exscan,        erase(library::hypercube_exscan),         cube1to3},
  {"allreduce_scan", "linear_exscan",            Kind::Exscan,        erase(library::linear_exscan),            ranks2to8},
  {"allreduce_scan", "full_scan",                Kind::Scan,          erase(library::full_scan),                ranks2to8},
  {"allreduce_scan", "full_exscan",              Kind::Exscan,        erase(library::full_exscan),              ranks2to8},
  {"allreduce_scan", "linear_suffix_scan",       Kind::SuffixScan,    erase(library::linear_suffix_scan),       ranks2to8},
  {"allreduce_scan", "hypercube_suffix_scan",    Kind::SuffixScan,    erase(library::hypercube_suffix_scan),    cube1to3},
  {"allreduce_scan", "full_suffix_scan",         Kind::SuffixScan,    erase(library::full_suffix_scan),         ranks2to8},
  // runtime/mpi/ordered.coll: declared commutative: false, proved to fold in
  // rank order, so non-commutative operators run them.
  {"ordered",      "linear_reduce_ordered",      Kind::Reduce,        erase(library::linear_reduce_ordered),    ranks2to8,  0, 0, true},
  {"ordered",      "linear_scan_ordered",        Kind::Scan,          erase(library::linear_scan_ordered),      ranks2to8,  0, 0, true},
  {"ordered",      "hypercube_allreduce_ordered", Kind::Allreduce,    erase(library::hypercube_allreduce_ordered), cube1to3, 0, 0, true},
  {"ordered",      "hypercube_scan_ordered",     Kind::Scan,          erase(library::hypercube_scan_ordered),   cube1to3,   0, 0, true},
  {"ordered",      "linear_exscan_ordered",      Kind::Exscan,        erase(library::linear_exscan_ordered),    ranks2to8,  0, 0, true},
  {"ordered",      "hypercube_exscan_ordered",   Kind::Exscan,        erase(library::hypercube_exscan_ordered), cube1to3,   0, 0, true},
  {"ordered",      "full_scan_ordered",          Kind::Scan,          erase(library::full_scan_ordered),        ranks2to8,  0, 0, true},
  {"ordered",      "full_exscan_ordered",        Kind::Exscan,        erase(library::full_exscan_ordered),      ranks2to8,  0, 0, true},
  {"alltoall",     "ring_alltoall",              Kind::Alltoall,      erase(library::ring_alltoall),            ranks2to8},
  {"alltoall",     "linear_alltoall",            Kind::Alltoall,      erase(library::linear_alltoall),          ranks2to8},
  {"alltoall",     "mesh_alltoall",              Kind::Alltoall,      erase(library::mesh_alltoall),            meshAB},
  {"alltoall",     "hypercube_alltoall",         Kind::Alltoall,      erase(library::hypercube_alltoall),       cube1to3},
  {"alltoall",     "pairwise_exchange",          Kind::Alltoall,      erase(library::pairwise_exchange),        cube1to3},
  {"scatter_gather", "hypercube_scatter",        Kind::Scatter,       erase(library::hypercube_scatter),        cube1to3},
  {"scatter_gather", "hypercube_gather",         Kind::Gather,        erase(library::hypercube_gather),         cube1to3},
  {"scatter_gather", "tree_scatter",             Kind::Scatter,       erase(library::tree_scatter),             cube1to3},
  {"scatter_gather", "tree_gather",              Kind::Gather,        erase(library::tree_gather),              cube1to3},
  {"scatter_gather", "mesh_scatter",             Kind::Scatter,       erase(library::mesh_scatter),             meshAB},
  {"scatter_gather", "mesh_gather",              Kind::Gather,        erase(library::mesh_gather),              meshAB},
  {"scatter_gather", "linear_scatter",           Kind::Scatter,       erase(library::linear_scatter),           ranks2to8},
  {"scatter_gather", "linear_gather",            Kind::Gather,        erase(library::linear_gather),            ranks2to8},
  {"scatter_gather", "star_scatter",             Kind::Scatter,       erase(library::star_scatter),             cube1to3},
  {"scatter_gather", "star_gather",              Kind::Gather,        erase(library::star_gather),              cube1to3},
  {"shift",        "ring_shift",                 Kind::ShiftBy,       erase(library::ring_shift),               ranks4to8, 0, 3},
  {"shift",        "ring_shift",                 Kind::ShiftBy,       erase(library::ring_shift),               ranks4to8, 0, 6},
  {"all_port",     "ring_alltoall_bidirectional", Kind::Alltoall,     erase(library::ring_alltoall_bidirectional), ranks2to8},
  {"all_port",     "hypercube_bc_trees",         Kind::Bcast,         erase(library::hypercube_bc_trees),       cube1to3},
  {"all_port",     "hypercube_allgather_gray_paths", Kind::Allgather, erase(library::hypercube_allgather_gray_paths), cube1to3},
  {"all_port",     "hypercube_scatter_trees",    Kind::Scatter,       erase(library::hypercube_scatter_trees),  cube1to3},
  {"all_port",     "hypercube_gather_trees",     Kind::Gather,        erase(library::hypercube_gather_trees),   cube1to3},
  {"all_port",     "hypercube_alltoall_trees",   Kind::Alltoall,      erase(library::hypercube_alltoall_trees), cube1to3},
  {"all_port",     "hypercube_bitreverse_sequences", Kind::Permute,   erase(library::hypercube_bitreverse_sequences), cube1to3, 0, 0, false, bitReverse},
  {"shift",        "torus_shift",                Kind::ShiftBy,       erase(library::torus_shift),              torusAB,    0, 5},
  {"shift",        "torus_shift",                Kind::ShiftBy,       erase(library::torus_shift),              torusAB,    0, 7},
  {"shift",        "hypercube_shift_ecube",      Kind::ShiftBy,       erase(library::hypercube_shift_ecube),    cube2to3,   0, 3},
  {"shift",        "hypercube_shift_gray",       Kind::ShiftBy,       erase(library::hypercube_shift_gray),     cube2to3,   0, 5},
  {"shift",        "hypercube_shift_gray",       Kind::ShiftBy,       erase(library::hypercube_shift_gray),     cube2to3,   0, 6},
  {"shift",        "hypercube_shift_gray_backward", Kind::ShiftBy,    erase(library::hypercube_shift_gray_backward), cube2to3, 0, 6},
  {"shift",        "hypercube_shift_gray_backward", Kind::ShiftBy,    erase(library::hypercube_shift_gray_backward), cube2to3, 0, 7},
  {"split",        "hypercube_bc_split",         Kind::Bcast,         erase(library::hypercube_bc_split),       cube1to3},
  {"split",        "hypercube_reduce_split",     Kind::Reduce,        erase(library::hypercube_reduce_split),   cube1to3},
  {"split",        "hypercube_allreduce_split",  Kind::Allreduce,     erase(library::hypercube_allreduce_split), cube1to3},
  {"split",        "ring_allreduce_split",       Kind::Allreduce,     erase(library::ring_allreduce_split),     ranks2to8},
  {"split",        "ring_bc_split",              Kind::Bcast,         erase(library::ring_bc_split),            ranks2to8},
  {"split",        "ring_reduce_split",          Kind::Reduce,        erase(library::ring_reduce_split),        ranks2to8},
  {"split",        "linear_allreduce_split",     Kind::Allreduce,     erase(library::linear_allreduce_split),   ranks2to8},
  {"split",        "linear_bc_split",            Kind::Bcast,         erase(library::linear_bc_split),          ranks2to8},
  {"split",        "linear_reduce_split",        Kind::Reduce,        erase(library::linear_reduce_split),      ranks2to8},
  {"split",        "mesh_bc_split",              Kind::Bcast,         erase(library::mesh_bc_split),            meshAB},
  {"split",        "mesh_reduce_split",          Kind::Reduce,        erase(library::mesh_reduce_split),        meshAB},
  {"split",        "mesh_allreduce_split",       Kind::Allreduce,     erase(library::mesh_allreduce_split),     meshAB},
  {"permute",      "hypercube_bitreverse_exchange", Kind::Permute,    erase(library::hypercube_bitreverse_exchange), cube1to3, 0, 0, false, bitReverse},
  {"permute",      "hypercube_shuffle_exchange", Kind::Permute,       erase(library::hypercube_shuffle_exchange), cube1to3, 0, 0, false, shuffleOne},
  {"permute",      "hypercube_unshuffle_exchange", Kind::Permute,     erase(library::hypercube_unshuffle_exchange), cube1to3, 0, 0, false, unshuffleOne},
  {"permute",      "hypercube_shuffle_fixed_exchange", Kind::Permute, erase(library::hypercube_shuffle_fixed_exchange), cube2to3, 0, 0, false, shuffleOne},
  // Compiled for k = 2 alone (a size does not set k).
  {"permute",      "hypercube_shuffle_k_exchange", Kind::Permute,     erase(library::hypercube_shuffle_k_exchange), cube1to3, 0, 0, false, shuffleTwo},
  {"permute",      "hypercube_gray_exchange",    Kind::Permute,       erase(library::hypercube_gray_exchange),  cube1to3,   0, 0, false, grayOf},
  {"permute",      "hypercube_gray_inverse_exchange", Kind::Permute,  erase(library::hypercube_gray_inverse_exchange), cube1to3, 0, 0, false, grayInverse},
  {"permute",      "hypercube_invert_direct",    Kind::Permute,       erase(library::hypercube_invert_direct),  cube1to3,   0, 0, false, invert},
  {"permute",      "hypercube_invert_exchange",  Kind::Permute,       erase(library::hypercube_invert_exchange), cube1to3,  0, 0, false, invert},
  {"permute",      "hypercube_subcube_invert_exchange", Kind::Permute, erase(library::hypercube_subcube_invert_exchange), cube1to3, 0, 0, false, subcubeInvert},
  // specs/basics.coll, specs/hypercube.coll, specs/ring.coll
  {"basics",       "ff",                         Kind::Bcast,         erase(collc_test::ff),                    exactly8},
  {"hypercube",    "one_to_all_bc",              Kind::Bcast,         erase(collc_test::one_to_all_bc),         cube1to3},
  {"hypercube",    "all_to_all_bc",              Kind::Allgather,     erase(collc_test::all_to_all_bc),         cube1to3},
  {"hypercube",    "prefix_sums",                Kind::Scan,          erase(collc_test::prefix_sums),           cube1to3,   0, 0, true},
  {"hypercube",    "scatter_halving",            Kind::Scatter,       erase(collc_test::scatter_halving),       cube1to3},
  {"hypercube",    "pairwise",                   Kind::Alltoall,      erase(collc_test::pairwise),              cube1to3},
  {"ring",         "ring_allgather",             Kind::Allgather,     erase(collc_test::ring_allgather),        ranks2to8},
  {"ring",         "ring_alltoall",              Kind::Alltoall,      erase(collc_test::ring_alltoall),         ranks2to8},
  // tests/e2e/e2e.coll: kinds and shapes the specs above lack
  {"twin",         "hypercube_bc",               Kind::Bcast,         erase(twin::hypercube_bc),                cube1to3},
  {"e2e",          "ar_doubling",                Kind::Allreduce,     erase(collc_test::ar_doubling),           cube1to3,   0, 0, true},
  {"e2e",          "reduce_to_0",                Kind::Reduce,        erase(collc_test::reduce_to_0),           cube1to3,   0, 0, true},
  {"e2e",          "gather_to_0",                Kind::Gather,        erase(collc_test::gather_to_0),           cube1to3},
  {"e2e",          "rs_halving",                 Kind::ReduceScatter, erase(collc_test::rs_halving),            cube1to3},
  {"e2e",          "bc_chunked",                 Kind::Bcast,         erase(collc_test::bc_chunked),            cube1to3},
  {"e2e",          "shift_one",                  Kind::Shift,         erase(collc_test::shift_one),             ranks2to8,  0, 1},
  {"e2e",          "mesh_corner_reduce",         Kind::Reduce,        erase(collc_test::mesh_corner_reduce),    exactly6,   5},
  {"e2e",          "mesh_inner_bcast",           Kind::Bcast,         erase(collc_test::mesh_inner_bcast),      exactly6,   4},
  {"e2e",          "linear_inner_gather",        Kind::Gather,        erase(collc_test::linear_inner_gather),   exactly6,   2},
  {"e2e",          "graph_ring_allgather",       Kind::Allgather,     erase(collc_test::graph_ring_allgather),  exactly6},
  {"e2e",          "graph_ring_bcast",           Kind::Bcast,         erase(collc_test::graph_ring_bcast),      exactly6,   2},
  {"e2e",          "graph_tree_bcast",           Kind::Bcast,         erase(collc_test::graph_tree_bcast),      exactly6,   4},
  {"e2e",          "graph_tree_reduce",          Kind::Reduce,        erase(collc_test::graph_tree_reduce),     exactly6,   1},
  {"e2e",          "graph_tree_scatter",         Kind::Scatter,       erase(collc_test::graph_tree_scatter),    exactly6,   5},
  {"e2e",          "graph_tree_gather",          Kind::Gather,        erase(collc_test::graph_tree_gather),     exactly6,   3},
  {"e2e",          "graph_tree_allreduce",       Kind::Allreduce,     erase(collc_test::graph_tree_allreduce),  exactly6},
  {"e2e",          "graph_tree_allgather",       Kind::Allgather,     erase(collc_test::graph_tree_allgather),  exactly6},
  {"e2e",          "graph_tree_reduce_scatter",  Kind::ReduceScatter, erase(collc_test::graph_tree_reduce_scatter), exactly6},
  {"e2e",          "graph_tree_alltoall",        Kind::Alltoall,      erase(collc_test::graph_tree_alltoall),   exactly6},
  {"e2e",          "graph_direct_alltoall",      Kind::Alltoall,      erase(collc_test::graph_direct_alltoall), exactly6},
  {"e2e",          "graph_tree_shift",           Kind::Shift,         erase(collc_test::graph_tree_shift),      exactly6,   0, 4},
  {"e2e",          "graph_chain_scan",           Kind::Scan,          erase(collc_test::graph_chain_scan),      exactly6},
  {"e2e",          "graph_chain_exscan",         Kind::Exscan,        erase(collc_test::graph_chain_exscan),    exactly6},
  {"e2e",          "graph_chain_suffix_scan",    Kind::SuffixScan,    erase(collc_test::graph_chain_suffix_scan), exactly6},
  {"e2e",          "cube_bitreverse",            Kind::Permute,       erase(collc_test::cube_bitreverse),       exactly8,   0, 0, false, bitReverse},
  {"e2e",          "full_reverse",               Kind::Permute,       erase(collc_test::full_reverse),          exactly6,   0, 0, false, reverseOrder},
  {"shuffle",      "cube_shuffle_2",             Kind::Permute,       erase(shuffle::cube_shuffle_2),           exactly16,  0, 0, false, shuffleTwo},
};
// clang-format on

bool reduces(Kind k) {
  return k == Kind::Reduce || k == Kind::Allreduce || k == Kind::Scan ||
         k == Kind::Exscan || k == Kind::SuffixScan || k == Kind::ReduceScatter;
}
bool rooted(Kind k) {
  return k == Kind::Bcast || k == Kind::Reduce || k == Kind::Scatter ||
         k == Kind::Gather;
}

// ---------------------------------------------------------------------------
// Element types. Affine is a non-commutative monoid: (a, b) is x -> a x + b
// modulo 2^64, and composing in a different order gives a different map.

struct Affine {
  uint64_t a, b;
  bool operator==(const Affine &o) const { return a == o.a && b == o.b; }
};

// MPI's convention: inout = in o inout, `in` from the lower ranks.
void composeAffine(void *in, void *inout, int *len, MPI_Datatype *) {
  const Affine *x = static_cast<const Affine *>(in);
  Affine *y = static_cast<Affine *>(inout);
  for (int i = 0; i < *len; ++i)
    y[i] = Affine{x[i].a * y[i].a, y[i].a * x[i].b + y[i].b};
}

MPI_Datatype affineType = MPI_DATATYPE_NULL;
MPI_Op composeOp = MPI_OP_NULL;

template <typename T> MPI_Datatype mpiType() {
  if constexpr (std::is_same_v<T, int>)
    return MPI_INT;
  else if constexpr (std::is_same_v<T, double>)
    return MPI_DOUBLE;
  else if constexpr (std::is_same_v<T, float>)
    return MPI_FLOAT;
  else if constexpr (std::is_same_v<T, int8_t>)
    return MPI_INT8_T;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return MPI_UINT64_T;
  else
    return affineType;
}

template <typename T> const char *typeName() {
  if constexpr (std::is_same_v<T, int>)
    return "int";
  else if constexpr (std::is_same_v<T, double>)
    return "double";
  else if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, int8_t>)
    return "int8";
  else if constexpr (std::is_same_v<T, uint64_t>)
    return "uint64";
  else
    return "affine";
}

// Changes every value, for calls that repeat one another.
int salt = 0;

// Vectors whose data starts a varying number of elements into their
// memory, so that a repeated call's buffers lie elsewhere and apart by other
// distances than the last call's, even where malloc hands back the same
// blocks.
size_t allocations = 0;
template <typename T> struct Shifting {
  using value_type = T;
  Shifting() = default;
  template <typename U> Shifting(const Shifting<U> &) {}
  T *allocate(size_t n) {
    // Quadratic in the count, so that the distances between one call's
    // buffers change from call to call too.
    const size_t j = allocations++;
    const size_t shift = (j * j * 7 + j + static_cast<size_t>(salt) * 3) % 11;
    // The shift is kept in front of the data, for deallocate.
    const size_t front = sizeof(size_t) + 16 + shift * sizeof(T);
    char *raw = static_cast<char *>(::operator new(front + n * sizeof(T)));
    char *data = raw + front;
    const size_t offset = front;
    std::memcpy(data - sizeof offset, &offset, sizeof offset);
    return reinterpret_cast<T *>(data);
  }
  void deallocate(T *p, size_t) {
    if (!p)
      return;
    char *data = reinterpret_cast<char *>(p);
    size_t offset = 0;
    std::memcpy(&offset, data - sizeof offset, sizeof offset);
    ::operator delete(data - offset);
  }
  template <typename U> bool operator==(const Shifting<U> &) const {
    return true;
  }
};
template <typename T> using Vec = std::vector<T, Shifting<T>>;

// Element i of rank r's block b: distinct across ranks, blocks and elements.
// Floating values have a fractional part. int8 values stay within -15..15,
// so a sum over 8 ranks cannot overflow: Open MPI 4.1's vectorized int8 sum
// saturates where C wraps.
template <typename T> T value(int r, int b, int i) {
  const int64_t v =
      (r * 7919 + b * 104729 + i * 31 + salt * 613) % 100003 - 50000 + r;
  if constexpr (std::is_same_v<T, int8_t>)
    return static_cast<T>(v % 16);
  else if constexpr (std::is_same_v<T, Affine>)
    return Affine{static_cast<uint64_t>(2 * v + 1), static_cast<uint64_t>(v)};
  else if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(v) / 8;
  else
    return static_cast<T>(v);
}

template <typename T> bool close(T got, T want) {
  if constexpr (std::is_floating_point_v<T>)
    return std::fabs(got - want) <= (std::is_same_v<T, float> ? 1e-5 : 1e-12) *
                                        std::max<T>(1, std::fabs(want));
  else
    return got == want;
}

template <typename T> std::string show(T v) {
  if constexpr (std::is_same_v<T, Affine>)
    return "(" + std::to_string(v.a) + ", " + std::to_string(v.b) + ")";
  else
    return std::to_string(v);
}

template <typename T>
void compare(const Vec<T> &got, const Vec<T> &want, const std::string &what) {
  bool ok = got.size() == want.size();
  size_t bad = 0;
  for (size_t i = 0; ok && i < got.size(); ++i)
    if (!close(got[i], want[i])) {
      ok = false;
      bad = i;
    }
  check(ok, what + (ok ? ""
                       : " (element " + std::to_string(bad) + ": " +
                             show(got[bad]) + ", MPI gives " + show(want[bad]) +
                             ")"));
}

// ---------------------------------------------------------------------------
// One call of a schedule and of MPI's collective on copies of the same input.

/// A rank's buffers as the schedule gets them: with `holes`, each element
/// followed by a hole of its size (spacedType), copied back after the call,
/// so that a type's layout is this rank's own as MPI allows.
template <typename T> struct Spread {
  bool holes = false;
  std::deque<std::pair<Vec<T> *, Vec<T>>> copies;
  T *operator()(Vec<T> &v) {
    if (!holes)
      return v.data();
    Vec<T> spread(2 * v.size(), T{});
    for (size_t i = 0; i < v.size(); ++i)
      spread[2 * i] = v[i];
    copies.emplace_back(&v, std::move(spread));
    return copies.back().second.data();
  }
  int after(int rc) {
    for (auto &[v, spread] : copies)
      for (size_t i = 0; i < v->size(); ++i)
        (*v)[i] = spread[2 * i];
    copies.clear();
    return rc;
  }
};

template <typename T> MPI_Datatype spacedType() {
  static MPI_Datatype spaced = [] {
    MPI_Datatype t;
    MPI_Type_create_resized(mpiType<T>(), 0, 2 * sizeof(T), &t);
    MPI_Type_commit(&t);
    return t;
  }();
  return spaced;
}

template <typename T> MPI_Datatype pairType() {
  static MPI_Datatype pair = [] {
    MPI_Datatype t;
    MPI_Type_contiguous(2, mpiType<T>(), &t);
    MPI_Type_commit(&t);
    return t;
  }();
  return pair;
}

/// One call of schedule `s` against MPI's own collective on the same input.
/// `spaced`: the odd ranks' buffers have holes. `pairs`: an exchange's side
/// has a type of its own (MPI requires only the signatures to match): the
/// odd ranks send their all-gather or all-to-all blocks as pairs, a
/// gather's root receives pairs and a scatter's root sends them (`count`
/// even).
template <typename T>
void runCase(const Schedule &s, int count, MPI_Op op, bool inPlace,
             const std::string &what, bool spaced = false, bool pairs = false) {
  const MPI_Datatype t = mpiType<T>();
  // The schedule's buffers: spaced at the odd ranks (MPI's stay as they are).
  Spread<T> at;
  at.holes = spaced && rank % 2 == 1;
  const MPI_Datatype ct = at.holes ? spacedType<T>() : t;
  struct Side {
    int count;
    MPI_Datatype type;
  };
  auto side = [&](bool ofPairs) {
    return ofPairs ? Side{count / 2, pairType<T>()} : Side{count, ct};
  };
  const MPI_Comm comm = MPI_COMM_WORLD;
  const size_t n = static_cast<size_t>(count), np = static_cast<size_t>(size);
  const bool isRoot = rank == s.root;
  Vec<T> got, want;
  int rc = MPI_SUCCESS;
  switch (s.kind) {
  case Kind::Bcast: {
    got.assign(n, T{});
    if (isRoot)
      for (int i = 0; i < count; ++i)
        got[i] = value<T>(rank, 0, i);
    want = got;
    rc = at.after(
        reinterpret_cast<BcastFn>(s.fn)(at(got), count, ct, s.root, comm));
    MPI_Bcast(want.data(), count, t, s.root, comm);
    break;
  }
  case Kind::Reduce:
  case Kind::Allreduce:
  case Kind::Scan:
  case Kind::Exscan:
  case Kind::SuffixScan:
  case Kind::ReduceScatter: {
    const int blocks = s.kind == Kind::ReduceScatter ? size : 1;
    Vec<T> mine(blocks * n);
    for (int b = 0; b < blocks; ++b)
      for (int i = 0; i < count; ++i)
        mine[b * n + i] = value<T>(rank, b, i);
    const bool here = inPlace && (s.kind != Kind::Reduce || isRoot);
    got = here ? mine : Vec<T>(n);
    want.assign(n, T{});
    const void *send = here ? MPI_IN_PLACE : at(mine);
    if (s.kind == Kind::Reduce) {
      rc = at.after(reinterpret_cast<ReduceFn>(s.fn)(send, at(got), count, ct,
                                                     op, s.root, comm));
      MPI_Reduce(mine.data(), want.data(), count, t, op, s.root, comm);
      if (!isRoot)
        got = want; // only the root's output is defined
    } else {
      rc = at.after(reinterpret_cast<AllreduceFn>(s.fn)(send, at(got), count,
                                                        ct, op, comm));
      if (s.kind == Kind::Allreduce)
        MPI_Allreduce(mine.data(), want.data(), count, t, op, comm);
      else if (s.kind == Kind::Scan)
        MPI_Scan(mine.data(), want.data(), count, t, op, comm);
      else if (s.kind == Kind::Exscan)
        MPI_Exscan(mine.data(), want.data(), count, t, op, comm);
      else if (s.kind == Kind::SuffixScan) {
        // MPI's scan over the ranks in reverse order folds r .. p - 1.
        MPI_Comm reversed;
        MPI_Comm_split(comm, 0, size - 1 - rank, &reversed);
        MPI_Scan(mine.data(), want.data(), count, t, op, reversed);
        MPI_Comm_free(&reversed);
      } else
        MPI_Reduce_scatter_block(mine.data(), want.data(), count, t, op, comm);
      got.resize(n);
      if (s.kind == Kind::Exscan && rank == 0)
        got = want; // undefined at rank 0 (MPI 4.0 §6.11.2)
    }
    break;
  }
  case Kind::Allgather:
  case Kind::Alltoall: {
    const int blocks = s.kind == Kind::Alltoall ? size : 1;
    Vec<T> mine(blocks * n);
    for (int b = 0; b < blocks; ++b)
      for (int i = 0; i < count; ++i)
        mine[b * n + i] = value<T>(rank, b, i);
    got.assign(np * n, T{});
    want = got;
    if (inPlace)
      std::copy(mine.begin(), mine.end(),
                got.begin() + (s.kind == Kind::Allgather ? rank * n : 0));
    const Side in = side(pairs && rank % 2 == 1);
    rc = at.after(reinterpret_cast<ExchangeFn>(s.fn)(
        inPlace ? MPI_IN_PLACE : at(mine), in.count, in.type, at(got), count,
        ct, comm));
    if (s.kind == Kind::Allgather)
      MPI_Allgather(mine.data(), count, t, want.data(), count, t, comm);
    else
      MPI_Alltoall(mine.data(), count, t, want.data(), count, t, comm);
    break;
  }
  case Kind::Scatter: {
    Vec<T> mine(np * n);
    for (int b = 0; b < size; ++b)
      for (int i = 0; i < count; ++i)
        mine[b * n + i] = value<T>(rank, b, i);
    const bool here = inPlace && isRoot;
    got.assign(n, T{});
    want = got;
    const Side in = side(pairs && isRoot);
    rc = at.after(reinterpret_cast<RootedFn>(s.fn)(
        at(mine), in.count, in.type, here ? MPI_IN_PLACE : at(got), count, ct,
        s.root, comm));
    MPI_Scatter(mine.data(), count, t, want.data(), count, t, s.root, comm);
    if (here) // the root's block stays where it was
      got.assign(mine.begin() + s.root * n, mine.begin() + (s.root + 1) * n);
    break;
  }
  case Kind::Gather: {
    Vec<T> mine(n);
    for (int i = 0; i < count; ++i)
      mine[i] = value<T>(rank, 0, i);
    const bool here = inPlace && isRoot;
    got.assign(np * n, T{});
    want = got;
    if (here)
      std::copy(mine.begin(), mine.end(), got.begin() + rank * n);
    const Side out = side(pairs && isRoot);
    rc = at.after(reinterpret_cast<RootedFn>(s.fn)(
        here ? MPI_IN_PLACE : at(mine), count, ct, at(got), out.count, out.type,
        s.root, comm));
    MPI_Gather(mine.data(), count, t, want.data(), count, t, s.root, comm);
    if (!isRoot)
      got = want;
    break;
  }
  case Kind::Shift:
  case Kind::ShiftBy:
  case Kind::Permute: {
    Vec<T> mine(n);
    for (int i = 0; i < count; ++i)
      mine[i] = value<T>(rank, 0, i);
    got.assign(n, T{});
    want = got;
    rc = s.kind == Kind::ShiftBy
             ? at.after(reinterpret_cast<ShiftByFn>(s.fn)(
                   at(mine), at(got), count, ct, s.shift, comm))
             : at.after(reinterpret_cast<ShiftFn>(s.fn)(at(mine), at(got),
                                                        count, ct, comm));
    // The reference: the block straight to its destination, point to point.
    auto dest = [&](int r) {
      return s.to ? s.to(r, size) : (r + s.shift) % size;
    };
    int from = 0;
    while (dest(from) != rank)
      ++from;
    MPI_Sendrecv(mine.data(), count, t, dest(rank), 0, want.data(), count, t,
                 from, 0, comm, MPI_STATUS_IGNORE);
    break;
  }
  }
  check(rc == MPI_SUCCESS, what + " returned an error");
  compare(got, want, what);
  // An all-reduce gives every rank the same bits, whatever the type.
  if (s.kind == Kind::Allreduce) {
    Vec<T> first = got;
    MPI_Bcast(first.data(), static_cast<int>(first.size() * sizeof(T)),
              MPI_BYTE, 0, comm);
    check(got.empty() || std::memcmp(first.data(), got.data(),
                                     got.size() * sizeof(T)) == 0,
          what + " differs between ranks");
  }
}

/// A non-commutative operator on a schedule not proved to fold in rank
/// order: every rank refuses it alike (MPI_ERR_OP), before any message.
void runRefusal(const Schedule &s) {
  const int count = 7, blocks = s.kind == Kind::ReduceScatter ? size : 1;
  Vec<Affine> mine(static_cast<size_t>(blocks * count), Affine{1, 1}),
      got(static_cast<size_t>(blocks * count));
  const int rc =
      s.kind == Kind::Reduce
          ? reinterpret_cast<ReduceFn>(s.fn)(mine.data(), got.data(), count,
                                             affineType, composeOp, s.root,
                                             MPI_COMM_WORLD)
          : reinterpret_cast<AllreduceFn>(s.fn)(mine.data(), got.data(),
                                                count, affineType, composeOp,
                                                MPI_COMM_WORLD);
  int refused = rc == MPI_ERR_OP, everyRank = 0;
  MPI_Allreduce(&refused, &everyRank, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  check(everyRank == 1, std::string(s.name) +
                            " affine compose: not refused with MPI_ERR_OP "
                            "on every rank");
}

std::string describe(const Schedule &s, const char *type, const char *op,
                     int count, bool inPlace) {
  return std::string(s.name) + " " + type + (op ? std::string(" ") + op : "") +
         " count " + std::to_string(count) + (inPlace ? " in place" : "");
}

bool hasInPlace(Kind k) {
  return k != Kind::Shift && k != Kind::ShiftBy && k != Kind::Bcast &&
         k != Kind::Permute;
}

template <typename T>
void runCounts(const Schedule &s, MPI_Op op, const char *opName,
               std::initializer_list<int> counts, bool bothPlaces) {
  for (int count : counts)
    for (bool inPlace : {false, true}) {
      if (inPlace && !(bothPlaces && hasInPlace(s.kind)))
        continue;
      runCase<T>(s, count, op, inPlace,
                 describe(s, typeName<T>(), reduces(s.kind) ? opName : nullptr,
                          count, inPlace));
    }
}

// Every count on int, in place and not; the other types on a few counts.
// The operators only where the collective reduces.
void runSchedule(const Schedule &s) {
  runCounts<int>(s, MPI_SUM, "sum", {0, 1, 7, 1000}, true);
  runCounts<double>(s, MPI_SUM, "sum", {1, 1000}, true);
  runCounts<int8_t>(s, MPI_SUM, "sum", {7, 1000}, false);
  runCounts<uint64_t>(s, MPI_SUM, "sum", {1000}, false);
  runCounts<float>(s, MPI_SUM, "sum", {1000}, false);
  if (reduces(s.kind)) {
    runCounts<int>(s, MPI_MAX, "max", {7, 1000}, true);
    runCounts<double>(s, MPI_MAX, "max", {1000}, false);
    if (s.keepsOrder)
      runCounts<Affine>(s, composeOp, "compose", {1, 7, 1000}, true);
    else
      runRefusal(s);
  }
  // A type with holes at the odd ranks, contiguous at the even ones: the
  // same signature, so the same results (the schedule moves it packed).
  for (bool inPlace : {false, true})
    if (!inPlace || hasInPlace(s.kind))
      runCase<int>(s, 7, MPI_SUM, inPlace,
                   describe(s, "int spaced at odd ranks",
                            reduces(s.kind) ? "sum" : nullptr, 7, inPlace),
                   true);
  runCase<double>(s, 1000, MPI_SUM, false,
                  describe(s, "double spaced at odd ranks",
                           reduces(s.kind) ? "sum" : nullptr, 1000, false),
                  true);
  // One large message, on four ranks (or the fewest the topology allows),
  // twice: the second call posts its receives from the first one's headers.
  if (size == 4 || (size == 8 && !s.fits(4)) || (size == 16 && !s.fits(8)))
    runCounts<int>(s, MPI_SUM, "sum", {1 << 20, 1 << 20}, false);
}

// An exchange's sides with types of their own, of one signature (MPI
// requires no more): runCase's `pairs`, 6 ints a block.
void runSides(const Schedule &s) {
  if (s.kind == Kind::Allgather || s.kind == Kind::Alltoall ||
      s.kind == Kind::Gather || s.kind == Kind::Scatter)
    runCase<int>(s, 6, MPI_SUM, false,
                 s.name + std::string(" with pairs of ints on one side"), false,
                 true);
}

// The same call again and again, as a program calls its collectives: from
// the third like call on, the runtime replays the second one's recorded
// sends, receives, copies and folds on the new call's buffers. Each call
// has other values at other addresses; in place and not alternate, and so
// do two operators, each of which must be recorded apart.
void runRepeats(const Schedule &s) {
  const uint64_t replaysBefore = collc::rt::Engine::replays();
  for (int count : {7, 1000})
    for (int call = 0; call < 8; ++call) {
      salt = call + 1;
      const bool inPlace = hasInPlace(s.kind) && call >= 5;
      const bool max = reduces(s.kind) && call >= 3 && call < 5;
      runCase<int>(s, count, max ? MPI_MAX : MPI_SUM, inPlace,
                   describe(s, "int",
                            reduces(s.kind) ? (max ? "max" : "sum") : nullptr,
                            count, inPlace) +
                       ", repeated call " + std::to_string(call + 1));
    }
  if (s.keepsOrder)
    for (int call = 0; call < 4; ++call) {
      salt = call + 1;
      runCase<Affine>(s, 7, composeOp, false,
                      describe(s, "affine", "compose", 7, false) +
                          ", repeated call " + std::to_string(call + 1));
    }
  salt = 0;
  check(collc::rt::Engine::replays() > replaysBefore,
        std::string(s.name) + " was never replayed from a recording");
  // Every request and datatype of the calls is released by their end.
  check(collc::rt::mpiBackendHeld(MPI_COMM_WORLD) == 0,
        std::string(s.name) + " left requests or datatypes behind");
}

// Two schedules named alike (library::hypercube_bc, twin::hypercube_bc)
// called in turn on one communicator, small and large: the runtime
// remembers each one's messages apart.
void runTwins() {
  for (int count : {4, 1 << 14})
    for (int call = 0; call < 6; ++call) {
      std::vector<int> buf(static_cast<size_t>(count));
      for (int i = 0; i < count; ++i)
        buf[static_cast<size_t>(i)] = rank == 0 ? i * 7 + call : -1;
      const bool library = call % 2 == 0;
      const int rc = library ? library::hypercube_bc(buf.data(), count,
                                                     MPI_INT, 0, MPI_COMM_WORLD)
                             : twin::hypercube_bc(buf.data(), count, MPI_INT,
                                                  0, MPI_COMM_WORLD);
      bool ok = rc == MPI_SUCCESS;
      for (int i = 0; i < count && ok; ++i)
        ok = buf[static_cast<size_t>(i)] == i * 7 + call;
      check(ok, std::string(library ? "library" : "twin") +
                    "::hypercube_bc in turn with its twin, count " +
                    std::to_string(count));
    }
}

// A communicator freed and another made (Open MPI gives it the freed one's
// handle), a few times, each called on until its calls replay: the runtime
// must not replay what it learnt on the freed one, whose duplicate is gone.
void runFreedCommunicators() {
  for (int round = 0; round < 4; ++round) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int call = 0; call < 4; ++call) {
      std::vector<int> buf(4);
      for (int i = 0; i < 4; ++i)
        buf[static_cast<size_t>(i)] = rank == 0 ? i + 10 * round + call : -1;
      const int rc = library::hypercube_bc(buf.data(), 4, MPI_INT, 0, comm);
      bool ok = rc == MPI_SUCCESS;
      for (int i = 0; i < 4 && ok; ++i)
        ok = buf[static_cast<size_t>(i)] == i + 10 * round + call;
      check(ok, "library::hypercube_bc on communicator " +
                    std::to_string(round + 1) + " of 4, call " +
                    std::to_string(call + 1));
    }
    MPI_Comm_free(&comm);
  }
}

// A call replayed, then enough calls unlike it that its communicator
// forgets it (the runtime keeps the last 8 kinds of call), then the same
// call again: it must not replay the recording it had.
void runForgottenCall() {
  auto broadcast = [&](int count, int value, const std::string &what) {
    std::vector<int> buf(static_cast<size_t>(count), rank == 0 ? value : -1);
    const int rc =
        library::hypercube_bc(buf.data(), count, MPI_INT, 0, MPI_COMM_WORLD);
    check(rc == MPI_SUCCESS &&
              buf == std::vector<int>(static_cast<size_t>(count), value),
          "library::hypercube_bc, " + what);
  };
  for (int call = 0; call < 3; ++call)
    broadcast(4, call, "4 elements, call " + std::to_string(call + 1));
  for (int count = 5; count < 14; ++count)
    broadcast(count, count, std::to_string(count) + " elements");
  for (int call = 0; call < 3; ++call)
    broadcast(4, 100 + call,
              "4 elements again, call " + std::to_string(call + 1));
}

// A replayed pairwise exchange starts its p - 1 receives and sends at
// once, as MPI's linear all-to-all does, and so does a star gather's root
// its receives; each step of a ring all-gather waits on the one before,
// and nothing starts early. (runRepeats checks their results.)
void runIndependentMessages() {
  std::vector<int> in(static_cast<size_t>(4 * size), rank),
      out(static_cast<size_t>(4 * size), -1);
  auto startedBy = [&](const std::string &name, auto call) {
    const uint64_t before = collc::rt::Engine::startedEarly();
    for (int i = 0; i < 4; ++i)
      check(call() == MPI_SUCCESS, name + ", call " + std::to_string(i + 1));
    return static_cast<int>(collc::rt::Engine::startedEarly() - before);
  };
  const int pairwise = startedBy("library::pairwise_exchange", [&] {
    return library::pairwise_exchange(in.data(), 4, MPI_INT, out.data(), 4,
                                      MPI_INT, MPI_COMM_WORLD);
  });
  const int star = startedBy("library::star_gather", [&] {
    return library::star_gather(in.data(), 4, MPI_INT, out.data(), 4, MPI_INT,
                                0, MPI_COMM_WORLD);
  });
  const int ring = startedBy("library::ring_allgather", [&] {
    return library::ring_allgather(in.data(), 4, MPI_INT, out.data(), 4,
                                   MPI_INT, MPI_COMM_WORLD);
  });
  // One message alone gains nothing and is left as it was.
  const int many = size > 2 ? size - 1 : 0;
  check(pairwise == many, "pairwise_exchange started " +
                              std::to_string(pairwise) + " exchanges early, not " +
                              std::to_string(many));
  check(star == (rank == 0 ? many : 0),
        "star_gather started " + std::to_string(star) + " messages early");
  check(ring == 0, "ring_allgather started " + std::to_string(ring) +
                       " messages early, whose data it had not received");
}

// The refusals, which every rank must see alike (no hang).
void runErrors(const Schedule &s) {
  std::vector<int> buf(static_cast<size_t>(4) * size, 1);
  auto call = [&](MPI_Datatype t, int root) {
    switch (s.kind) {
    case Kind::Bcast:
      return reinterpret_cast<BcastFn>(s.fn)(buf.data(), 1, t, root,
                                             MPI_COMM_WORLD);
    case Kind::Reduce:
      return reinterpret_cast<ReduceFn>(s.fn)(buf.data(), buf.data() + size, 1,
                                              t, MPI_SUM, root, MPI_COMM_WORLD);
    case Kind::Allreduce:
    case Kind::Scan:
    case Kind::Exscan:
    case Kind::SuffixScan:
    case Kind::ReduceScatter:
      return reinterpret_cast<AllreduceFn>(s.fn)(buf.data(), buf.data() + size,
                                                 1, t, MPI_SUM, MPI_COMM_WORLD);
    case Kind::Allgather:
    case Kind::Alltoall:
      return reinterpret_cast<ExchangeFn>(s.fn)(
          buf.data(), 1, t, buf.data() + 2 * size, 1, t, MPI_COMM_WORLD);
    case Kind::Scatter:
    case Kind::Gather:
      return reinterpret_cast<RootedFn>(s.fn)(
          buf.data(), 1, t, buf.data() + 2 * size, 1, t, root, MPI_COMM_WORLD);
    case Kind::Shift:
    case Kind::Permute:
      return reinterpret_cast<ShiftFn>(s.fn)(buf.data(), buf.data() + size, 1,
                                             t, MPI_COMM_WORLD);
    case Kind::ShiftBy:
      return reinterpret_cast<ShiftByFn>(s.fn)(buf.data(), buf.data() + size, 1,
                                               t, s.shift, MPI_COMM_WORLD);
    }
    return MPI_SUCCESS;
  };
  const std::string name = s.name;
  const int root = s.root < size ? s.root : 0;
  if (!s.fits(size)) {
    int rc = call(MPI_INT, root);
    check(rc != MPI_SUCCESS && (s.root >= size || rc == MPI_ERR_SIZE),
          name + " on " + std::to_string(size) +
              " ranks must refuse with MPI_ERR_SIZE");
    return;
  }
  if (rooted(s.kind))
    check(call(MPI_INT, (s.root + 1) % size) == MPI_ERR_ROOT,
          name + " must refuse another root with MPI_ERR_ROOT");
}

} // namespace

// The runtime's error rule on an emitted function (ring_allreduce_split,
// which folds in no fixed order): a failure that only some ranks see ends
// the job with the message, where the others used to wait forever; a
// contiguous derived type under a predefined operator is reduced as its
// basic type. Returns main's exit code.
int runErrorRule(const std::string &which) {
  std::vector<int> in(12), out(12, 0), expected(12, 0);
  for (int i = 0; i < 12; ++i) {
    in[i] = rank * 100 + i;
    for (int r = 0; r < size; ++r)
      expected[i] += r * 100 + i;
  }
  int rc = MPI_SUCCESS;
  if (which == "noncommutative") {
    // The operator is the same at every rank: refused alike, up front.
    std::vector<Affine> a(12, Affine{1, 1}), b(12);
    rc = library::ring_allreduce_split(a.data(), b.data(), 12, affineType,
                                       composeOp, MPI_COMM_WORLD);
    int refused = rc == MPI_ERR_OP, everyRank = 0;
    MPI_Allreduce(&refused, &everyRank, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("non-commutative operator: %s\n",
                  everyRank ? "refused with MPI_ERR_OP on every rank"
                            : "NOT refused on every rank");
    MPI_Finalize();
    return everyRank ? 0 : 1;
  } else if (which == "null_buffer") {
    rc = library::ring_allreduce_split(in.data(), rank == 1 ? nullptr
                                                            : out.data(),
                                       12, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  } else if (which == "contiguous_sum") {
    MPI_Datatype three;
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    rc = library::ring_allreduce_split(in.data(), out.data(), 4, three,
                                       MPI_SUM, MPI_COMM_WORLD);
    MPI_Type_free(&three);
    int wrong = rc != MPI_SUCCESS || out != expected, any = 0;
    MPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("contiguous(3, int) sum: %s\n",
                  any ? "FAILED" : "matches the sum of the ints");
    MPI_Finalize();
    return any ? 1 : 0;
  } else if (which == "sides") {
    // MPI allows each side its own count and type, so only rank 2 can see
    // that it sends two ints per block where it receives one.
    rc = library::ring_allgather(in.data(), rank == 2 ? 2 : 1, MPI_INT,
                                 out.data(), 1, MPI_INT, MPI_COMM_WORLD);
  }
  // Reached only where the call returned at this rank.
  std::printf("rank %d: returned %d\n", rank, rc);
  std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 1;
}

// ---------------------------------------------------------------------------
// Redistributions declared in the language (tests/e2e/redistribute.coll):
// element i of the array is a value of i alone, so each rank knows what its
// part must hold after the move; MPI's own all-to-all under the same packing
// (collc::rt::redistribute without an exchange) must agree too. Sizes where
// every pair trades as many elements, or nearly, take the proved exchange,
// the others MPI_Alltoallv. At a size the collective is not declared for, every
// rank gets MPI_ERR_SIZE. Returns the collectives that ran and were refused.

namespace {

using collc::rt::Distribution;

struct Redistributing {
  const char *name;
  int (*move)(const void *, void *, long long, MPI_Datatype, MPI_Comm);
  Distribution from, to;
  int ranks;
};

const Redistributing redistributions[] = {
    {"cube_block_to_cyclic", redistribution::cube_block_to_cyclic,
     Distribution::consecutive(), Distribution::cyclic(), 4},
    {"cube_cyclic_to_block", redistribution::cube_cyclic_to_block,
     Distribution::cyclic(), Distribution::consecutive(), 4},
    {"cube_block_to_threes", redistribution::cube_block_to_threes,
     Distribution::consecutive(), Distribution::blockCyclic(3), 4},
    {"six_block_to_cyclic", redistribution::six_block_to_cyclic,
     Distribution::consecutive(), Distribution::cyclic(), 6},
    {"six_twos_to_block", redistribution::six_twos_to_block,
     Distribution::blockCyclic(2), Distribution::consecutive(), 6},
};

double elementValue(int64_t i) { return 0.25 * static_cast<double>(i) + 3; }

// MPI's own exchanges, counted: which one a move took.
int regularCalls = 0, irregularCalls = 0;
int countedAlltoall(const void *send, int sendCount, MPI_Datatype sendType,
                    void *recv, int recvCount, MPI_Datatype recvType,
                    MPI_Comm comm) {
  ++regularCalls;
  return MPI_Alltoall(send, sendCount, sendType, recv, recvCount, recvType,
                      comm);
}
int countedAlltoallv(const void *send, const int *sendCounts,
                     const int *sendDispls, MPI_Datatype sendType, void *recv,
                     const int *recvCounts, const int *recvDispls,
                     MPI_Datatype recvType, MPI_Comm comm) {
  ++irregularCalls;
  return MPI_Alltoallv(send, sendCounts, sendDispls, sendType, recv, recvCounts,
                       recvDispls, recvType, comm);
}

/// This rank's part of the n-element array under `d`.
std::vector<double> partOf(const Distribution &d, int64_t n) {
  std::vector<double> part(static_cast<size_t>(d.count(rank, n, size)));
  d.forEachOwned(rank, n, size, [&](int64_t i) {
    part[static_cast<size_t>(d.local(i, n, size))] = elementValue(i);
  });
  return part;
}

std::pair<int, int> runRedistributions() {
  int ran = 0, refused = 0;
  const int64_t p = size;
  for (const Redistributing &r : redistributions) {
    if (r.ranks != size) {
      std::vector<double> in(4), out(64);
      check(r.move(in.data(), out.data(), 4, MPI_DOUBLE, MPI_COMM_WORLD) ==
                MPI_ERR_SIZE,
            std::string(r.name) + " refuses " + std::to_string(size) +
                " ranks");
      ++refused;
      continue;
    }
    // Every pair alike (p^2 divides n, and for blocks of 3, 3 p^2 does),
    // pairs unlike, fewer elements than ranks, none.
    for (int64_t n : {48 * p * p, 48 * p * p + 5, p - 1, int64_t(0)}) {
      const std::string what =
          std::string(r.name) + " of " + std::to_string(n) + " elements";
      const std::vector<double> in = partOf(r.from, n), want = partOf(r.to, n);
      std::vector<double> out(want.size() + 1, -1.0), mpi(want.size() + 1);
      check(r.move(in.data(), out.data(), n, MPI_DOUBLE, MPI_COMM_WORLD) ==
                MPI_SUCCESS,
            what + " returns MPI_SUCCESS");
      check(std::equal(want.begin(), want.end(), out.begin()) &&
                out.back() == -1.0,
            what + " leaves each element where `to` puts it, and no more");
      check(collc::rt::redistribute(in.data(), r.from, mpi.data(), r.to, n,
                                    MPI_DOUBLE,
                                    MPI_COMM_WORLD) == MPI_SUCCESS &&
                std::equal(want.begin(), want.end(), mpi.begin()),
            what + " agrees with MPI's all-to-all");
      // Block to cyclic with p^2 not dividing n: each pair trades floor or
      // ceil of n/p^2, so the regular exchange runs, shares padded; with
      // fewer elements than ranks the padding would outweigh them.
      const bool dealt = r.from.kind == Distribution::Kind::Block &&
                         r.to.kind == Distribution::Kind::Cyclic;
      if (dealt && (n == 48 * p * p + 5 || n == p - 1) && p > 2) {
        regularCalls = irregularCalls = 0;
        std::fill(mpi.begin(), mpi.end(), -1.0);
        const int rc = collc::rt::redistribute(
            in.data(), r.from, mpi.data(), r.to, n, MPI_DOUBLE, MPI_COMM_WORLD,
            countedAlltoall, countedAlltoallv);
        const bool padded = n != p - 1;
        check(rc == MPI_SUCCESS &&
                  std::equal(want.begin(), want.end(), mpi.begin()) &&
                  regularCalls == (padded ? 1 : 0) &&
                  irregularCalls == (padded ? 0 : 1),
              what + (padded ? " pads the shares into the regular exchange"
                             : " takes the irregular exchange"));
      }
    }
    // One rank alone passes a type that is not contiguous: every rank
    // returns the same error, agreed before any message.
    MPI_Datatype strided;
    MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    std::vector<double> in(64 * p * p), out(64 * p * p);
    const int rc =
        r.move(in.data(), out.data(), 16 * p * p,
               rank == size - 1 ? strided : MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Type_free(&strided);
    check(rc == MPI_ERR_TYPE, std::string(r.name) +
                                  " with one rank's type strided returns "
                                  "MPI_ERR_TYPE, not " +
                                  std::to_string(rc));
    ++ran;
  }
  return {ran, refused};
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (argc != 2) {
    std::fprintf(stderr, "usage: e2e_test SPEC\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Type_contiguous(2, MPI_UINT64_T, &affineType);
  MPI_Type_commit(&affineType);
  MPI_Op_create(composeAffine, /*commute=*/0, &composeOp);

  const std::string spec = argv[1];
  if (spec.rfind("errors:", 0) == 0)
    return runErrorRule(spec.substr(7));
  int ran = 0, refused = 0;
  if (spec == "redistribute")
    std::tie(ran, refused) = runRedistributions();
  for (const Schedule &s : schedules) {
    if (spec != s.spec)
      continue;
    runErrors(s);
    if (s.fits(size)) {
      runSchedule(s);
      runSides(s);
      runRepeats(s);
      ++ran;
    } else {
      ++refused;
    }
  }

  if (spec == "twin" && cube1to3(size)) {
    runTwins();
    runFreedCommunicators();
    runForgottenCall();
    runIndependentMessages();
  }

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const bool ok = total == 0 && ran + refused > 0;
  if (rank == 0)
    std::printf("%s on %d ranks: %d schedules %s, %d refused the size\n",
                spec.c_str(), size, ran, ok ? "match MPI" : "FAILED", refused);
  MPI_Op_free(&composeOp);
  MPI_Type_free(&affineType);
  MPI_Finalize();
  return ok ? 0 : 1;
}
