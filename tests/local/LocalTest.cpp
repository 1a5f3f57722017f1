// The emitted collectives on the local backend: each rank a thread of this
// process (collc/Local.h), no mpirun. Every collective of the end-to-end
// test runs on every rank count its topology allows from 2 to 64, with counts
// 0, 1, 7 and 1000, and each rank's result is compared with a serial
// computation from all ranks' inputs. Data differs per rank, block and
// element, so a misplaced chunk cannot pass.

#include "basics.h"
#include "e2e.h"
#include "hypercube.h"
#include "ring.h"
// specs/library
#include "all_port.h"
#include "allgather.h"
#include "allreduce_scan.h"
#include "alltoall.h"
#include "broadcast.h"
#include "scatter_gather.h"
#include "shift.h"
#include "split.h"

#include "collc/Local.h"

#include "../support/AbsoluteInts.h"

#include <gtest/gtest.h>

#include <complex>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>
#include <vector>

namespace {

using collc::rt::LocalComm;
namespace gen = collc_local::local;
namespace lib = collc_library::local;

const int counts[] = {0, 1, 7, 1000};
const std::vector<int> hypercubeSizes = {2, 4, 8, 16, 32, 64};
const std::vector<int> ringSizes = {2, 3, 5, 8, 13, 31, 64};

// Element i of rank r's block b.
int value(int r, int b, int i) {
  return (r * 7919 + b * 104729 + i * 31) % 100003 - 50000 + r;
}
std::vector<int> input(int r, int blocks, int count) {
  std::vector<int> v(static_cast<size_t>(blocks) * count);
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < count; ++i)
      v[static_cast<size_t>(b) * count + i] = value(r, b, i);
  return v;
}

// One collective on p ranks: `run` calls the emitted function at rank `me`
// and returns what it output there (empty where the collective outputs
// nothing); `expect` computes that serially.
struct Collective {
  std::function<std::vector<int>(LocalComm &, int count, int &rc)> run;
  std::function<std::vector<int>(int me, int p, int count)> expect;
};

void check(const std::string &name, const Collective &c,
           const std::vector<int> &sizes) {
  for (int p : sizes)
    for (int count : counts) {
      std::vector<std::vector<int>> got(static_cast<size_t>(p));
      std::vector<int> codes(static_cast<size_t>(p), -1);
      ASSERT_EQ(collc::rt::local::run(p,
                                      [&](LocalComm &comm) {
                                        const size_t me =
                                            static_cast<size_t>(comm.rank());
                                        got[me] = c.run(comm, count, codes[me]);
                                      }),
                MPI_SUCCESS);
      for (int me = 0; me < p; ++me) {
        SCOPED_TRACE(name + " on " + std::to_string(p) + " ranks, count " +
                     std::to_string(count) + ", rank " + std::to_string(me));
        EXPECT_EQ(codes[static_cast<size_t>(me)], MPI_SUCCESS);
        EXPECT_EQ(got[static_cast<size_t>(me)], c.expect(me, p, count));
      }
    }
}

using BcastFn = int (*)(void *, int, MPI_Datatype, int, LocalComm &);
using ReduceFn = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, int,
                         LocalComm &);
using AllreduceFn = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op,
                            LocalComm &);
using GatherFn = int (*)(const void *, int, MPI_Datatype, void *, int,
                         MPI_Datatype, int, LocalComm &);
using AllgatherFn = int (*)(const void *, int, MPI_Datatype, void *, int,
                            MPI_Datatype, LocalComm &);
using ShiftFn = int (*)(const void *, void *, int, MPI_Datatype, LocalComm &);
/// A family over the amount (`shift(q: q)`) takes it as an argument.
using ShiftByFn = int (*)(const void *, void *, int, MPI_Datatype, int,
                          LocalComm &);

Collective broadcast(BcastFn fn, int root) {
  return {[=](LocalComm &comm, int n, int &rc) {
            std::vector<int> buf = input(comm.rank(), 1, n);
            rc = fn(buf.data(), n, MPI_INT, root, comm);
            return buf;
          },
          [=](int, int, int n) { return input(root, 1, n); }};
}

std::vector<int> sum(int from, int to, int block, int n) {
  std::vector<int> s(static_cast<size_t>(n), 0);
  for (int r = from; r <= to; ++r)
    for (int i = 0; i < n; ++i)
      s[static_cast<size_t>(i)] += value(r, block, i);
  return s;
}

Collective reduce(ReduceFn fn, int root) {
  return {[=](LocalComm &comm, int n, int &rc) {
            std::vector<int> send = input(comm.rank(), 1, n), recv(n, 7);
            rc = fn(send.data(), recv.data(), n, MPI_INT, MPI_SUM, root, comm);
            return comm.rank() == root ? recv : std::vector<int>();
          },
          [=](int me, int p, int n) {
            return me == root ? sum(0, p - 1, 0, n) : std::vector<int>();
          }};
}

// Allreduce, or the inclusive prefix sums of a scan.
Collective allreduce(AllreduceFn fn, bool scan, bool inPlace) {
  return {
      [=](LocalComm &comm, int n, int &rc) {
        std::vector<int> send = input(comm.rank(), 1, n), recv(n, 7);
        if (inPlace) {
          rc = fn(MPI_IN_PLACE, send.data(), n, MPI_INT, MPI_SUM, comm);
          return send;
        }
        rc = fn(send.data(), recv.data(), n, MPI_INT, MPI_SUM, comm);
        return recv;
      },
      [=](int me, int p, int n) { return sum(0, scan ? me : p - 1, 0, n); }};
}

// An exclusive scan: rank r ends with the ranks below it. Rank 0's result
// is not significant (MPI 4.0 §6.11.2), so it is not compared.
Collective exscan(AllreduceFn fn, bool inPlace) {
  return {[=](LocalComm &comm, int n, int &rc) {
            std::vector<int> send = input(comm.rank(), 1, n), recv(n, 7);
            if (inPlace)
              rc = fn(MPI_IN_PLACE, send.data(), n, MPI_INT, MPI_SUM, comm);
            else
              rc = fn(send.data(), recv.data(), n, MPI_INT, MPI_SUM, comm);
            if (comm.rank() == 0)
              return std::vector<int>();
            return inPlace ? send : recv;
          },
          [=](int me, int, int n) {
            return me == 0 ? std::vector<int>() : sum(0, me - 1, 0, n);
          }};
}

Collective reduceScatter(AllreduceFn fn) {
  return {[=](LocalComm &comm, int n, int &rc) {
            std::vector<int> send = input(comm.rank(), comm.size(), n),
                             recv(n, 7);
            rc = fn(send.data(), recv.data(), n, MPI_INT, MPI_SUM, comm);
            return recv;
          },
          [=](int me, int p, int n) { return sum(0, p - 1, me, n); }};
}

Collective scatter(GatherFn fn, int root) {
  return {
      [=](LocalComm &comm, int n, int &rc) {
        std::vector<int> send = input(comm.rank(), comm.size(), n), recv(n, 7);
        rc = fn(send.data(), n, MPI_INT, recv.data(), n, MPI_INT, root, comm);
        return recv;
      },
      [=](int me, int, int n) {
        std::vector<int> all = input(root, me + 1, n);
        return std::vector<int>(all.end() - n, all.end());
      }};
}

// Block o of the result is rank o's block `block(me)`.
std::vector<int> blocksFromAll(int p, int n, int block) {
  std::vector<int> out;
  for (int o = 0; o < p; ++o)
    for (int i = 0; i < n; ++i)
      out.push_back(value(o, block, i));
  return out;
}

Collective gather(GatherFn fn, int root) {
  return {[=](LocalComm &comm, int n, int &rc) {
            std::vector<int> send = input(comm.rank(), 1, n),
                             recv(static_cast<size_t>(comm.size()) * n, 7);
            rc = fn(send.data(), n, MPI_INT, recv.data(), n, MPI_INT, root,
                    comm);
            return comm.rank() == root ? recv : std::vector<int>();
          },
          [=](int me, int p, int n) {
            return me == root ? blocksFromAll(p, n, 0) : std::vector<int>();
          }};
}

// Allgather (each rank's one block) or all-to-all (block `me` of each rank).
Collective allToAll(AllgatherFn fn, bool personalized, bool inPlace) {
  return {[=](LocalComm &comm, int n, int &rc) {
            const int p = comm.size();
            std::vector<int> send = input(comm.rank(), personalized ? p : 1, n),
                             recv(static_cast<size_t>(p) * n, 7);
            if (inPlace) {
              // Allgather: the own block already in place; all-to-all: the
              // whole input.
              if (personalized)
                recv = send;
              else
                std::copy(send.begin(), send.end(),
                          recv.begin() + static_cast<long>(comm.rank()) * n);
              rc = fn(MPI_IN_PLACE, n, MPI_INT, recv.data(), n, MPI_INT, comm);
              return recv;
            }
            rc = fn(send.data(), n, MPI_INT, recv.data(), n, MPI_INT, comm);
            return recv;
          },
          [=](int me, int p, int n) {
            return blocksFromAll(p, n, personalized ? me : 0);
          }};
}

Collective shift(std::function<int(const void *, void *, int, LocalComm &)> fn,
                 int q) {
  return {[=](LocalComm &comm, int n, int &rc) {
            std::vector<int> send = input(comm.rank(), 1, n), recv(n, 7);
            rc = fn(send.data(), recv.data(), n, comm);
            return recv;
          },
          [=](int me, int p, int n) {
            return input(((me - q) % p + p) % p, 1, n);
          }};
}
Collective shift(ShiftFn fn, int q) {
  return shift(
      [fn](const void *send, void *recv, int n, LocalComm &comm) {
        return fn(send, recv, n, MPI_INT, comm);
      },
      q);
}
Collective shiftBy(ShiftByFn fn, int q) {
  return shift(
      [fn, q](const void *send, void *recv, int n, LocalComm &comm) {
        return fn(send, recv, n, MPI_INT, q, comm);
      },
      q);
}

TEST(Local, Broadcast) {
  check("ff", broadcast(gen::ff, 0), {8});
  check("bc", broadcast(gen::bc, 0), {8});
  check("b5", broadcast(gen::b5, 5), {8});
  check("one_to_all_bc", broadcast(gen::one_to_all_bc, 0), hypercubeSizes);
  check("bc_chunked", broadcast(gen::bc_chunked, 0), hypercubeSizes);
}

TEST(Local, Reductions) {
  check("reduce_to_0", reduce(gen::reduce_to_0, 0), hypercubeSizes);
  check("ar", allreduce(gen::ar, false, false), {8});
  check("ar_doubling", allreduce(gen::ar_doubling, false, false),
        hypercubeSizes);
  check("ar_doubling in place", allreduce(gen::ar_doubling, false, true),
        hypercubeSizes);
  check("prefix_sums", allreduce(gen::prefix_sums, true, false),
        hypercubeSizes);
  check("prefix_sums in place", allreduce(gen::prefix_sums, true, true),
        hypercubeSizes);
  check("rs_halving", reduceScatter(gen::rs_halving), hypercubeSizes);
}

TEST(Local, ScatterGather) {
  check("scatter_halving", scatter(gen::scatter_halving, 0), hypercubeSizes);
  check("gather_to_0", gather(gen::gather_to_0, 0), hypercubeSizes);
}

TEST(Local, Allgather) {
  check("ag", allToAll(gen::ag, false, false), {8});
  check("all_to_all_bc", allToAll(gen::all_to_all_bc, false, false),
        hypercubeSizes);
  check("ring_allgather", allToAll(gen::ring_allgather, false, false),
        ringSizes);
  check("ring_allgather in place", allToAll(gen::ring_allgather, false, true),
        ringSizes);
}

TEST(Local, Alltoall) {
  check("a2a", allToAll(gen::a2a, true, false), {8});
  // Chosen by message size: 1000 ints take the other schedule.
  check("a2a_auto", allToAll(gen::a2a_auto, true, false), {8});
  check("pairwise", allToAll(gen::pairwise, true, false), hypercubeSizes);
  check("pairwise in place", allToAll(gen::pairwise, true, true),
        hypercubeSizes);
  check("ring_alltoall", allToAll(gen::ring_alltoall, true, false), ringSizes);
}

TEST(Local, Shift) {
  check("sh", shift(gen::sh, 3), {8});
  check("shift_one", shift(gen::shift_one, 1), ringSizes);
}

// tests/e2e/e2e.coll's collectives on graphs: a ring with a chord, and a
// graph with no library topology in it, whose schedules run on its spanning
// tree.
TEST(Local, Graphs) {
  check("graph_ring_allgather",
        allToAll(gen::graph_ring_allgather, false, false), {6});
  check("graph_ring_bcast", broadcast(gen::graph_ring_bcast, 2), {6});
  check("graph_tree_bcast", broadcast(gen::graph_tree_bcast, 4), {6});
  check("graph_tree_reduce", reduce(gen::graph_tree_reduce, 1), {6});
  check("graph_tree_scatter", scatter(gen::graph_tree_scatter, 5), {6});
  check("graph_tree_gather", gather(gen::graph_tree_gather, 3), {6});
  check("graph_tree_allreduce",
        allreduce(gen::graph_tree_allreduce, false, false), {6});
  check("graph_tree_allreduce in place",
        allreduce(gen::graph_tree_allreduce, false, true), {6});
  check("graph_tree_allgather",
        allToAll(gen::graph_tree_allgather, false, false), {6});
  check("graph_tree_reduce_scatter",
        reduceScatter(gen::graph_tree_reduce_scatter), {6});
  check("graph_tree_alltoall", allToAll(gen::graph_tree_alltoall, true, false),
        {6});
  check("graph_tree_shift", shift(gen::graph_tree_shift, 4), {6});
}

// Every schedule of specs/library the runtime runs (alltoallv has its own
// tests), on the rank counts its proved ranges give, up to 32.
TEST(Local, Library) {
  const std::vector<int> line = {2, 3, 5, 8, 13, 16};
  const std::vector<int> ring4 = {4, 5, 8, 13, 16};
  const std::vector<int> cube = {2, 4, 8, 16, 32};
  const std::vector<int> cube3 = {8, 16, 32};
  const std::vector<int> cube2 = {4, 8, 16};
  const std::vector<int> mesh = {2, 3, 4, 6, 8, 9, 12, 16}; // a 1..4, b 2..4
  const std::vector<int> mesh3d = {2, 3, 4, 6, 8, 9, 12, 18};
  check("linear_bc", broadcast(lib::linear_bc, 0), line);
  check("linear_reduce", reduce(lib::linear_reduce, 0), line);
  check("ring_bc", broadcast(lib::ring_bc, 3), ring4);
  check("ring_reduce", reduce(lib::ring_reduce, 3), ring4);
  check("mesh_bc", broadcast(lib::mesh_bc, 0), mesh);
  check("mesh_reduce", reduce(lib::mesh_reduce, 0), mesh);
  check("mesh3d_bc", broadcast(lib::mesh3d_bc, 0), mesh3d);
  check("mesh3d_reduce", reduce(lib::mesh3d_reduce, 0), mesh3d);
  check("hypercube_bc", broadcast(lib::hypercube_bc, 0), cube);
  check("star_bc", broadcast(lib::star_bc, 0), cube);
  check("hypercube_bc_any_root", broadcast(lib::hypercube_bc_any_root, 5),
        cube3);
  check("hypercube_reduce", reduce(lib::hypercube_reduce, 0), cube);
  check("hypercube_reduce_any_root", reduce(lib::hypercube_reduce_any_root, 6),
        cube3);
  check("tree_bc", broadcast(lib::tree_bc, 0), {2, 4, 8, 16, 32});
  check("tree_reduce", reduce(lib::tree_reduce, 0), {2, 4, 8, 16, 32});
  check("ring_allgather", allToAll(lib::ring_allgather, false, false), line);
  check("ring_reduce_scatter", reduceScatter(lib::ring_reduce_scatter), line);
  check("linear_allgather", allToAll(lib::linear_allgather, false, false),
        line);
  check("full_allgather", allToAll(lib::full_allgather, false, false), line);
  check("full_reduce_scatter", reduceScatter(lib::full_reduce_scatter), line);
  check("linear_reduce_scatter", reduceScatter(lib::linear_reduce_scatter),
        line);
  check("mesh_allgather", allToAll(lib::mesh_allgather, false, false), mesh);
  check("mesh_reduce_scatter", reduceScatter(lib::mesh_reduce_scatter), mesh);
  check("hypercube_allgather", allToAll(lib::hypercube_allgather, false, false),
        cube);
  check("hypercube_reduce_scatter",
        reduceScatter(lib::hypercube_reduce_scatter), cube);
  check("tree_allreduce", allreduce(lib::tree_allreduce, false, false),
        {2, 4, 8, 16, 32});
  check("hypercube_allreduce",
        allreduce(lib::hypercube_allreduce, false, false), cube);
  check("full_allreduce", allreduce(lib::full_allreduce, false, false), line);
  check("full_allreduce in place", allreduce(lib::full_allreduce, false, true),
        line);
  check("hypercube_scan", allreduce(lib::hypercube_scan, true, false), cube);
  check("linear_scan", allreduce(lib::linear_scan, true, false), line);
  // The cube's result starts empty: in place, the input it overwrites must
  // have been taken for the buffer that does not.
  check("hypercube_exscan", exscan(lib::hypercube_exscan, false), cube);
  check("hypercube_exscan in place", exscan(lib::hypercube_exscan, true), cube);
  check("linear_exscan", exscan(lib::linear_exscan, false), line);
  check("linear_exscan in place", exscan(lib::linear_exscan, true), line);
  check("full_scan", allreduce(lib::full_scan, true, false), line);
  check("full_scan in place", allreduce(lib::full_scan, true, true), line);
  check("full_exscan", exscan(lib::full_exscan, false), line);
  check("full_exscan in place", exscan(lib::full_exscan, true), line);
  check("ring_alltoall", allToAll(lib::ring_alltoall, true, false), line);
  check("linear_alltoall", allToAll(lib::linear_alltoall, true, false), line);
  check("ring_alltoall_bidirectional",
        allToAll(lib::ring_alltoall_bidirectional, true, false), line);
  check("hypercube_bc_trees", broadcast(lib::hypercube_bc_trees, 0), cube);
  check("hypercube_allgather_gray_paths",
        allToAll(lib::hypercube_allgather_gray_paths, false, false), cube);
  check("hypercube_scatter_trees", scatter(lib::hypercube_scatter_trees, 0),
        cube);
  check("hypercube_gather_trees", gather(lib::hypercube_gather_trees, 0), cube);
  check("hypercube_alltoall_trees",
        allToAll(lib::hypercube_alltoall_trees, true, false), cube);
  check("mesh_alltoall", allToAll(lib::mesh_alltoall, true, false), mesh);
  check("hypercube_alltoall", allToAll(lib::hypercube_alltoall, true, false),
        cube);
  check("pairwise_exchange", allToAll(lib::pairwise_exchange, true, false),
        cube);
  check("hypercube_scatter", scatter(lib::hypercube_scatter, 0), cube);
  check("hypercube_gather", gather(lib::hypercube_gather, 0), cube);
  check("tree_scatter", scatter(lib::tree_scatter, 0), {2, 4, 8, 16, 32});
  check("tree_gather", gather(lib::tree_gather, 0), {2, 4, 8, 16, 32});
  check("linear_scatter", scatter(lib::linear_scatter, 0), line);
  check("linear_gather", gather(lib::linear_gather, 0), line);
  check("star_scatter", scatter(lib::star_scatter, 0), cube);
  check("star_gather", gather(lib::star_gather, 0), cube);
  check("mesh_scatter", scatter(lib::mesh_scatter, 0), mesh);
  check("mesh_gather", gather(lib::mesh_gather, 0), mesh);
  // Families over the amount: each takes q, and is proved for every q in
  // its range, p and more included.
  for (int q : {3, 6, 11}) {
    check("ring_shift", shiftBy(lib::ring_shift, q), ring4);
    check("torus_shift", shiftBy(lib::torus_shift, q), {4, 6, 8, 9, 12, 16});
    check("hypercube_shift_ecube", shiftBy(lib::hypercube_shift_ecube, q),
          cube2);
    check("hypercube_shift_gray", shiftBy(lib::hypercube_shift_gray, q), cube2);
    check("hypercube_shift_gray_backward",
          shiftBy(lib::hypercube_shift_gray_backward, q), cube2);
  }
  // 000 §4.7.1: the compositions of specs/library/split.coll.
  check("hypercube_bc_split", broadcast(lib::hypercube_bc_split, 0), cube);
  check("hypercube_reduce_split", reduce(lib::hypercube_reduce_split, 0), cube);
  check("hypercube_allreduce_split",
        allreduce(lib::hypercube_allreduce_split, false, false), cube);
  check("ring_allreduce_split",
        allreduce(lib::ring_allreduce_split, false, false), line);
  check("linear_allreduce_split",
        allreduce(lib::linear_allreduce_split, false, false), line);
  check("ring_bc_split", broadcast(lib::ring_bc_split, 0), line);
  check("ring_reduce_split", reduce(lib::ring_reduce_split, 0), line);
  check("linear_bc_split", broadcast(lib::linear_bc_split, 0), line);
  check("linear_reduce_split", reduce(lib::linear_reduce_split, 0), line);
  check("mesh_bc_split", broadcast(lib::mesh_bc_split, 0), mesh);
  check("mesh_reduce_split", reduce(lib::mesh_reduce_split, 0), mesh);
  check("mesh_allreduce_split",
        allreduce(lib::mesh_allreduce_split, false, false), mesh);
}

// Every rank gets the error code, and nothing waits for a message.
void expectError(int p, int code, const std::function<int(LocalComm &)> &call) {
  std::vector<int> codes(static_cast<size_t>(p), MPI_SUCCESS);
  std::mutex m;
  ASSERT_EQ(collc::rt::local::run(p,
                                  [&](LocalComm &comm) {
                                    int rc = call(comm);
                                    std::lock_guard<std::mutex> lock(m);
                                    codes[static_cast<size_t>(comm.rank())] =
                                        rc;
                                  }),
            MPI_SUCCESS);
  for (int rc : codes)
    EXPECT_EQ(rc, code);
}

TEST(Local, Errors) {
  std::vector<int> buf(64, 1), out(64 * 64, 0);
  // Figure 4.2 is proved for exactly 8 ranks; a hypercube needs 2^d.
  expectError(4, MPI_ERR_SIZE, [&](LocalComm &comm) {
    std::vector<int> b(4);
    return gen::ff(b.data(), 4, MPI_INT, 0, comm);
  });
  expectError(6, MPI_ERR_SIZE, [&](LocalComm &comm) {
    std::vector<int> b(4);
    return gen::one_to_all_bc(b.data(), 4, MPI_INT, 0, comm);
  });
  expectError(1, MPI_ERR_SIZE, [&](LocalComm &comm) {
    std::vector<int> b(4);
    return gen::ring_allgather(b.data(), 1, MPI_INT, b.data() + 1, 1, MPI_INT,
                               comm);
  });
  // The schedule is proved for root 0 only; a root outside the ranks.
  expectError(4, MPI_ERR_ROOT, [&](LocalComm &comm) {
    std::vector<int> b(4);
    return gen::one_to_all_bc(b.data(), 4, MPI_INT, 1, comm);
  });
  expectError(4, MPI_ERR_ROOT, [&](LocalComm &comm) {
    std::vector<int> b(4);
    return gen::one_to_all_bc(b.data(), 4, MPI_INT, 4, comm);
  });
  // Send and receive sides of different sizes.
  expectError(4, MPI_ERR_TRUNCATE, [&](LocalComm &comm) {
    std::vector<int> s(2), r(8);
    return gen::ring_allgather(s.data(), 2, MPI_INT, r.data(), 1, MPI_INT,
                               comm);
  });
  // As many send elements as the receive side has bytes: still different.
  expectError(4, MPI_ERR_TRUNCATE, [&](LocalComm &comm) {
    std::vector<int> s(24), r(24);
    return gen::ring_allgather(s.data(), 24, MPI_INT, r.data(), 6, MPI_INT,
                               comm);
  });
  // A side whose type is MPI_DATATYPE_NULL, not in place: the send side's
  // type is the user's, however the receive side reads.
  expectError(4, MPI_ERR_TYPE, [&](LocalComm &comm) {
    std::vector<int> s(1), r(4);
    return gen::ring_allgather(s.data(), 1, MPI_DATATYPE_NULL, r.data(), 1,
                               MPI_INT, comm);
  });
  // MPI_IN_PLACE where MPI allows none (MPI 4.0 §6.2.1): an all-reduce's
  // receive buffer, a broadcast's one buffer, a scatter's at a rank that
  // is not its root (whose send buffer cannot be in place too).
  for (int count : {0, 4})
    expectError(4, MPI_ERR_BUFFER, [&](LocalComm &comm) {
      std::vector<int> b(4);
      return gen::ar_doubling(b.data(), MPI_IN_PLACE, count, MPI_INT, MPI_SUM,
                              comm);
    });
  expectError(4, MPI_ERR_BUFFER, [&](LocalComm &comm) {
    return gen::one_to_all_bc(MPI_IN_PLACE, 4, MPI_INT, 0, comm);
  });
  expectError(4, MPI_ERR_BUFFER, [&](LocalComm &comm) {
    return gen::scatter_halving(MPI_IN_PLACE, 4, MPI_INT, MPI_IN_PLACE, 4,
                                MPI_INT, 0, comm);
  });
  // Both buffers in place.
  expectError(4, MPI_ERR_BUFFER, [&](LocalComm &comm) {
    return gen::prefix_sums(MPI_IN_PLACE, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM,
                            comm);
  });
  // One address as both buffers, which MPI_IN_PLACE would say (an
  // all-gather's result would overwrite its input before it is sent).
  expectError(4, MPI_ERR_BUFFER, [&](LocalComm &comm) {
    std::vector<int> b(16);
    return gen::ring_allgather(b.data(), 4, MPI_INT, b.data(), 4, MPI_INT,
                               comm);
  });
}

// Derived types move packed, whatever layout each rank passes (MPI requires
// only the type signatures to match): here the odd ranks pass an int spaced
// by a hole of 4 bytes, the even ones MPI_INT, and every result is as with
// MPI_INT everywhere. An operator that reads the layout cannot take holes.
TEST(Local, DerivedTypesPacked) {
  // local::run starts MPI (as a singleton) for the types.
  ASSERT_EQ(collc::rt::local::run(1, [](LocalComm &) {}), MPI_SUCCESS);
  MPI_Datatype spaced, strided;
  MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spaced);
  MPI_Type_commit(&spaced);
  MPI_Type_vector(2, 1, 2, MPI_INT, &strided); // 2 ints over 3
  MPI_Type_commit(&strided);
  MPI_Datatype pair, reversed;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  const int ones[] = {1, 1}, backwards[] = {1, 0};
  MPI_Type_indexed(2, ones, backwards, MPI_INT, &reversed);
  MPI_Type_commit(&reversed);
  const int p = 4, count = 5;
  // The emitted call on `count` ints laid out for this rank's type.
  auto spread = [](const std::vector<int> &v, bool holes) {
    std::vector<int> s(v.size() * (holes ? 2 : 1), -7);
    for (size_t i = 0; i < v.size(); ++i)
      s[holes ? 2 * i : i] = v[i];
    return s;
  };
  auto gatherBack = [](const std::vector<int> &s, bool holes) {
    std::vector<int> v(s.size() / (holes ? 2 : 1));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = s[holes ? 2 * i : i];
    return v;
  };
  std::mutex m;
  std::vector<std::string> wrong;
  auto expectSame = [&](int me, const char *what, const std::vector<int> &got,
                        const std::vector<int> &want, int rc) {
    if (rc != MPI_SUCCESS || got != want) {
      std::lock_guard<std::mutex> lock(m);
      wrong.push_back(std::string(what) + " at rank " + std::to_string(me) +
                      (rc != MPI_SUCCESS ? ": error " + std::to_string(rc)
                                         : ": wrong result"));
    }
  };
  // Spaced ints at the odd ranks: an all-gather, an all-reduce (in place at
  // rank 1), and a broadcast of strided pairs.
  auto spacedAtOddRanks = [&](LocalComm &comm) {
    const int me = comm.rank();
    const bool holes = me % 2 == 1;
    const MPI_Datatype t = holes ? spaced : MPI_INT;
    // All-gather.
    std::vector<int> in = spread(input(me, 1, count), holes),
                     out(static_cast<size_t>(p * count) * (holes ? 2 : 1), -1);
    int rc =
        gen::ring_allgather(in.data(), count, t, out.data(), count, t, comm);
    std::vector<int> want;
    for (int r = 0; r < p; ++r) {
      std::vector<int> v = input(r, 1, count);
      want.insert(want.end(), v.begin(), v.end());
    }
    expectSame(me, "ring_allgather", gatherBack(out, holes), want, rc);
    // All-reduce, in place at rank 1.
    std::vector<int> sum(static_cast<size_t>(count), 0);
    for (int r = 0; r < p; ++r)
      for (int i = 0; i < count; ++i)
        sum[static_cast<size_t>(i)] += value(r, 0, i);
    std::vector<int> acc = spread(input(me, 1, count), holes),
                     res(acc.size(), -1);
    rc = me == 1 ? gen::ar_doubling(MPI_IN_PLACE, acc.data(), count, t, MPI_SUM,
                                    comm)
                 : gen::ar_doubling(acc.data(), res.data(), count, t, MPI_SUM,
                                    comm);
    expectSame(me, "ar_doubling", gatherBack(me == 1 ? acc : res, holes), sum,
               rc);
    // Broadcast: the root's strided pairs.
    std::vector<int> b(3 * count, -1);
    if (me == 0)
      for (int i = 0; i < 3 * count; ++i)
        b[static_cast<size_t>(i)] = value(0, 0, i);
    rc = gen::one_to_all_bc(b.data(), count, strided, 0, comm);
    std::vector<int> pairs, wantPairs;
    for (int i = 0; i < count; ++i) {
      pairs.push_back(b[static_cast<size_t>(3 * i)]);
      pairs.push_back(b[static_cast<size_t>(3 * i + 2)]);
      wantPairs.push_back(value(0, 0, 3 * i));
      wantPairs.push_back(value(0, 0, 3 * i + 2));
    }
    expectSame(me, "one_to_all_bc", pairs, wantPairs, rc);
  };
  // Sides of their own, of one signature: the odd ranks send pairs of ints
  // (in order, or their ints reversed); a gather's root receives pairs; a
  // scatter's root sends spaced ints; a broadcast in chunks of 4 ints or 2
  // pairs.
  auto sidesOfTheirOwn = [&](LocalComm &comm) {
    const int me = comm.rank();
    const bool holes = me % 2 == 1;
    const std::vector<int> two = input(me, 1, 2 * count);
    std::vector<int> all, got(static_cast<size_t>(p * 2 * count), -1);
    for (int r = 0; r < p; ++r) {
      std::vector<int> v = input(r, 1, 2 * count);
      all.insert(all.end(), v.begin(), v.end());
    }
    int rc = gen::ring_allgather(two.data(), holes ? count : 2 * count,
                                 holes ? pair : MPI_INT, got.data(), 2 * count,
                                 MPI_INT, comm);
    expectSame(me, "ring_allgather of pairs", got, all, rc);
    // Pairs whose ints lie in reverse order, which MPI_Pack
    // reads in order: packed, not sent as they lie.
    auto swapped = [](const std::vector<int> &v) {
      std::vector<int> w(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        w[i ^ 1] = v[i];
      return w;
    };
    std::fill(got.begin(), got.end(), -1);
    rc = gen::ring_allgather(
        holes ? swapped(two).data() : two.data(), holes ? count : 2 * count,
        holes ? reversed : MPI_INT, got.data(), 2 * count, MPI_INT, comm);
    expectSame(me, "ring_allgather of reversed pairs", got, all, rc);
    std::fill(got.begin(), got.end(), -1);
    rc = gen::gather_to_0(two.data(), 2 * count, MPI_INT, got.data(),
                          me == 0 ? count : 2 * count,
                          me == 0 ? reversed : MPI_INT, 0, comm);
    expectSame(me, "gather_to_0 into reversed pairs",
               me == 0 ? swapped(got) : all, all, rc);
    std::fill(got.begin(), got.end(), -1);
    rc = gen::gather_to_0(two.data(), 2 * count, MPI_INT, got.data(),
                          me == 0 ? count : 2 * count, me == 0 ? pair : MPI_INT,
                          0, comm);
    expectSame(me, "gather_to_0 into pairs", me == 0 ? got : all, all, rc);
    std::vector<int> root = spread(all, true),
                     block(static_cast<size_t>(2 * count), -1);
    rc =
        gen::scatter_halving(root.data(), 2 * count, me == 0 ? spaced : MPI_INT,
                             block.data(), 2 * count, MPI_INT, 0, comm);
    expectSame(me, "scatter_halving from spaced ints", block, two, rc);
    // Three chunks of a block of 4 ints or 2 pairs: split as
    // bytes, alike at every rank.
    std::vector<int> four(4, -1);
    if (me == 0)
      for (int i = 0; i < 4; ++i)
        four[static_cast<size_t>(i)] = value(0, 0, i);
    rc = gen::bc_chunked(four.data(), holes ? 2 : 4, holes ? pair : MPI_INT, 0,
                         comm);
    expectSame(me, "bc_chunked of pairs", four,
               {value(0, 0, 0), value(0, 0, 1), value(0, 0, 2), value(0, 0, 3)},
               rc);
  };
  ASSERT_EQ(collc::rt::local::run(p,
                                  [&](LocalComm &comm) {
                                    spacedAtOddRanks(comm);
                                    sidesOfTheirOwn(comm);
                                  }),
            MPI_SUCCESS);
  for (const std::string &w : wrong)
    ADD_FAILURE() << w;
  // A user's operator reads its type's layout, so holes are refused.
  MPI_Op user;
  MPI_Op_create(
      [](void *in, void *inout, int *len, MPI_Datatype *) {
        for (int i = 0; i < *len; ++i)
          static_cast<int *>(inout)[2 * i] += static_cast<int *>(in)[2 * i];
      },
      1, &user);
  expectError(p, MPI_ERR_TYPE, [&](LocalComm &comm) {
    std::vector<int> in(2 * count, 1), out(2 * count);
    return gen::ar_doubling(in.data(), out.data(), count, spaced, user, comm);
  });
  MPI_Op_free(&user);
  MPI_Type_free(&reversed);
  MPI_Type_free(&pair);
  MPI_Type_free(&strided);
  MPI_Type_free(&spaced);
}

// Types whose data fills their span without holes, but not in the order
// MPI_Pack reads it: an int read twice (its copies overlap), and two
// copies of a type with a hole laid into each other's hole, by hindexed
// and by a subarray of it resized. Each rank's all-gathered block must be
// what MPI_Pack makes of its buffer.
TEST(Local, TypesOutOfOrderPacked) {
  // local::run starts MPI (as a singleton) for the types.
  ASSERT_EQ(collc::rt::local::run(1, [](LocalComm &) {}), MPI_SUCCESS);
  MPI_Datatype overlap, gapped, interleaved, narrowed, subarray;
  const int ones[] = {1, 1, 1}, twice[] = {0, 0, 2}, apart[] = {0, 2};
  const MPI_Aint into[] = {0, sizeof(int)};
  MPI_Type_indexed(3, ones, twice, MPI_INT, &overlap);
  MPI_Type_indexed(2, ones, apart, MPI_INT, &gapped);
  MPI_Type_create_hindexed(2, ones, into, gapped, &interleaved);
  MPI_Type_create_resized(gapped, 0, sizeof(int), &narrowed);
  const int two = 2, first = 0;
  MPI_Type_create_subarray(1, &two, &two, &first, MPI_ORDER_C, narrowed,
                           &subarray);
  MPI_Type_commit(&overlap);
  MPI_Type_commit(&interleaved);
  MPI_Type_commit(&subarray);
  const int p = 4;
  for (auto [type, ints] : {std::pair{overlap, 3}, std::pair{interleaved, 4},
                            std::pair{subarray, 4}}) {
    std::vector<int> want;
    for (int r = 0; r < p; ++r) {
      std::vector<int> in = input(r, 1, 4), packed(static_cast<size_t>(ints));
      int position = 0;
      MPI_Pack(in.data(), 1, type, packed.data(), ints * sizeof(int), &position,
               MPI_COMM_SELF);
      want.insert(want.end(), packed.begin(), packed.end());
    }
    std::vector<std::vector<int>> got(p);
    std::mutex m;
    expectError(p, MPI_SUCCESS, [&, type = type, ints = ints](LocalComm &comm) {
      std::vector<int> in = input(comm.rank(), 1, 4), out(p * ints, -1);
      const int rc = gen::ring_allgather(in.data(), 1, type, out.data(), ints,
                                         MPI_INT, comm);
      std::lock_guard<std::mutex> lock(m);
      got[static_cast<size_t>(comm.rank())] = out;
      return rc;
    });
    for (const std::vector<int> &out : got)
      EXPECT_EQ(out, want) << (ints == 3 ? "overlapping" : "interleaved");
  }
  MPI_Type_free(&subarray);
  MPI_Type_free(&narrowed);
  MPI_Type_free(&interleaved);
  MPI_Type_free(&gapped);
  MPI_Type_free(&overlap);
}

// Buffers at MPI_BOTTOM, their data at absolute addresses (MPI 4.0
// §5.1.12): each rank sends pairs of ints second first (packed) and
// receives ints in order (used where they lie). A null buffer of a type
// that is not absolute is still refused (on the local backend, returned).
TEST(Local, BuffersAtBottom) {
  // local::run starts MPI (as a singleton) for the types.
  ASSERT_EQ(collc::rt::local::run(1, [](LocalComm &) {}), MPI_SUCCESS);
  const int p = 4, n = 3;
  std::vector<std::vector<int>> send(p), recv(p);
  std::vector<MPI_Datatype> pairs(p), ints(p);
  std::vector<int> swapped; // every rank's first 2n ints, pairs swapped
  for (int r = 0; r < p; ++r) {
    send[r] = input(r, 1, 2 * n);
    recv[r].assign(static_cast<size_t>(2 * n * p), -1);
    pairs[r] = collc::test::absoluteInts(send[r].data(), true);
    ints[r] = collc::test::absoluteInts(recv[r].data(), false);
    for (int i = 0; i < 2 * n; ++i)
      swapped.push_back(send[r][static_cast<size_t>(i ^ 1)]);
  }
  std::vector<int> sums(static_cast<size_t>(2 * n), 0);
  for (int r = 0; r < p; ++r)
    for (int i = 0; i < 2 * n; ++i)
      sums[static_cast<size_t>(i)] += send[r][static_cast<size_t>(i)];
  const std::vector<int> fromRoot(swapped.begin(), swapped.begin() + 2 * n);
  std::vector<std::vector<int>> gathered(p), broadcast(p), gatheredAtRoot(p);
  std::vector<int> codes(static_cast<size_t>(p) * 4, -1);
  ASSERT_EQ(
      collc::rt::local::run(
          p,
          [&](LocalComm &comm) {
            const size_t me = static_cast<size_t>(comm.rank());
            int *rc = &codes[me * 4];
            std::vector<int> &out = recv[me];
            rc[0] = gen::ring_allgather(MPI_BOTTOM, n, pairs[me], MPI_BOTTOM,
                                        2 * n, ints[me], comm);
            gathered[me] = out;
            std::fill(out.begin(), out.end(), -1);
            rc[1] = gen::gather_to_0(MPI_BOTTOM, n, pairs[me], MPI_BOTTOM,
                                     2 * n, ints[me], 0, comm);
            gatheredAtRoot[me] = out;
            std::fill(out.begin(), out.end(), -1);
            rc[2] = me == 0
                        ? gen::bc_chunked(MPI_BOTTOM, n, pairs[me], 0, comm)
                        : gen::bc_chunked(MPI_BOTTOM, 2 * n, ints[me], 0, comm);
            broadcast[me] = out;
            rc[3] = gen::ar_doubling(MPI_IN_PLACE, MPI_BOTTOM, n, pairs[me],
                                     MPI_SUM, comm);
          }),
      MPI_SUCCESS);
  for (int r = 0; r < p; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(codes[static_cast<size_t>(r * 4 + k)], MPI_SUCCESS);
    EXPECT_EQ(gathered[r], swapped);
    EXPECT_EQ(gatheredAtRoot[r],
              r == 0 ? swapped : std::vector<int>(swapped.size(), -1));
    std::vector<int> bcast = broadcast[r];
    if (r != 0)
      bcast.resize(2 * n);
    EXPECT_EQ(bcast, r == 0 ? std::vector<int>(swapped.size(), -1) : fromRoot);
    EXPECT_EQ(send[r], sums) << "the all-reduce in place";
  }
  for (int r = 0; r < p; ++r) {
    MPI_Type_free(&pairs[r]);
    MPI_Type_free(&ints[r]);
  }
  // A null buffer of ints has no absolute address: refused.
  expectError(4, MPI_ERR_BUFFER, [&](LocalComm &comm) {
    std::vector<int> r(8);
    return gen::ring_allgather(nullptr, 2, MPI_INT, r.data(), 2, MPI_INT, comm);
  });
}

// Elements of a type of size 0 and no elements have the same (empty) type
// signature, so ranks may pass either to one collective that folds
// nothing: every rank runs the call as an empty one, and none waits.
TEST(Local, EmptySignaturesAlike) {
  // local::run starts MPI (as a singleton) for the type.
  ASSERT_EQ(collc::rt::local::run(1, [](LocalComm &) {}), MPI_SUCCESS);
  MPI_Datatype nothing;
  MPI_Type_contiguous(0, MPI_INT, &nothing);
  MPI_Type_commit(&nothing);
  const int p = 4;
  auto count = [](LocalComm &comm) { return comm.rank() % 2 ? 3 : 0; };
  auto type = [&](LocalComm &comm) {
    return comm.rank() % 2 ? nothing : MPI_INT;
  };
  std::vector<std::vector<int>> untouched(p);
  std::mutex m;
  expectError(p, MPI_SUCCESS, [&](LocalComm &comm) {
    std::vector<int> in(4, 5), out(4 * p, -1);
    int rc = gen::ring_allgather(in.data(), count(comm), type(comm), out.data(),
                                 count(comm), type(comm), comm);
    if (rc == MPI_SUCCESS)
      rc = gen::one_to_all_bc(out.data(), count(comm), type(comm), 0, comm);
    std::lock_guard<std::mutex> lock(m);
    untouched[static_cast<size_t>(comm.rank())] = out;
    return rc;
  });
  for (const std::vector<int> &out : untouched)
    EXPECT_EQ(out, std::vector<int>(4 * p, -1));
  MPI_Type_free(&nothing);
}

// The runtime's reduction loops (runtime/src/Reduce.cpp: typed loops, built
// for each instruction set) give what MPI's own operator gives, for every
// predefined operator on every basic type it applies to, in every version
// this processor can run and through combine() (the widest), whichever
// operand the result overwrites, at lengths around the vector widths and at
// an address no vector is aligned to.
template <typename T, typename Value>
void checkFolds(MPI_Datatype type, std::initializer_list<MPI_Op> ops,
                Value value) {
  using collc::rt::FoldIsa;
  // -1: combine(); else the FoldIsa.
  for (int version :
       {-1, int(FoldIsa::Baseline), int(FoldIsa::Avx2), int(FoldIsa::Avx512)}) {
    const auto isa = static_cast<FoldIsa>(version);
    if (version >= 0 && !collc::rt::foldIsaSupported(isa))
      continue;
    for (MPI_Op op : ops)
      for (int n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 129, 1000})
        for (int placement = 0; placement < 3; ++placement) {
          // One element in, so the vector loops start unaligned. (Arrays,
          // as std::vector<bool> has no data().)
          const size_t length = static_cast<size_t>(n) + 1;
          auto lower = std::make_unique<T[]>(length),
               upper = std::make_unique<T[]>(length),
               apart = std::make_unique<T[]>(length),
               expected = std::make_unique<T[]>(length);
          for (int i = 0; i < n; ++i) {
            lower[static_cast<size_t>(i) + 1] = value(i);
            upper[static_cast<size_t>(i) + 1] = value(3 * i + 1);
            expected[static_cast<size_t>(i) + 1] = value(3 * i + 1);
          }
          // MPI computes inout = in op inout.
          ASSERT_EQ(MPI_Reduce_local(lower.get() + 1, expected.get() + 1, n,
                                     type, op),
                    MPI_SUCCESS);
          T *out = placement == 0   ? lower.get() + 1
                   : placement == 1 ? upper.get() + 1
                                    : apart.get() + 1;
          if (version < 0) {
            ASSERT_EQ(collc::rt::combine(lower.get() + 1, upper.get() + 1, out,
                                         n, type, op),
                      MPI_SUCCESS);
          } else {
            collc::rt::FoldFn fold = collc::rt::foldFunction(type, op, isa);
            ASSERT_NE(fold, nullptr) << "instruction set " << version;
            fold(lower.get() + 1, upper.get() + 1, out, static_cast<size_t>(n));
          }
          for (int i = 0; i < n; ++i)
            ASSERT_TRUE(out[i] == expected[static_cast<size_t>(i) + 1])
                << "element " << i << " of " << n << ", placement " << placement
                << ", instruction set " << version << ", type "
                << typeid(T).name() << ", value " << +out[i] << ", MPI "
                << +expected[static_cast<size_t>(i) + 1];
        }
  }
}

TEST(Local, FoldsMatchMpi) {
  // local::run starts MPI (as a singleton) for MPI_Reduce_local.
  ASSERT_EQ(collc::rt::local::run(1, [](LocalComm &) {}), MPI_SUCCESS);
  const auto arithmetic = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
  const auto integer = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX, MPI_LAND,
                        MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
  // Small values of both signs (and zeros, for the logical operators), so
  // no product overflows.
  auto small = [](int i) { return (i % 11) - 5; };
  auto positive = [](int i) { return (i % 13) + 1; };
  checkFolds<int>(MPI_INT, integer, small);
  checkFolds<long>(MPI_LONG, integer, small);
  checkFolds<long long>(MPI_LONG_LONG, integer, small);
  checkFolds<short>(MPI_SHORT, integer, small);
  checkFolds<signed char>(MPI_SIGNED_CHAR, integer, small);
  checkFolds<unsigned char>(MPI_UNSIGNED_CHAR, integer, positive);
  checkFolds<unsigned short>(MPI_UNSIGNED_SHORT, integer, positive);
  checkFolds<unsigned>(MPI_UNSIGNED, integer, positive);
  checkFolds<unsigned long>(MPI_UNSIGNED_LONG, integer, positive);
  checkFolds<uint64_t>(MPI_UINT64_T, integer, positive);
  checkFolds<int8_t>(MPI_INT8_T, integer, small);
  checkFolds<int16_t>(MPI_INT16_T, integer, small);
  checkFolds<int32_t>(MPI_INT32_T, integer, small);
  checkFolds<int64_t>(MPI_INT64_T, integer, small);
  checkFolds<uint8_t>(MPI_UINT8_T, integer, positive);
  checkFolds<uint16_t>(MPI_UINT16_T, integer, positive);
  checkFolds<uint32_t>(MPI_UINT32_T, integer, positive);
  checkFolds<unsigned long long>(MPI_UNSIGNED_LONG_LONG, integer, positive);
  checkFolds<long long>(MPI_LONG_LONG_INT, integer, small);
  // Sums and products that overflow wrap around, as MPI's do for int (for
  // 8- and 16-bit types Open MPI's vector loops saturate instead, its issue
  // 8045; FoldsWrapAround below checks those against the definition).
  checkFolds<int>(MPI_INT, {MPI_SUM, MPI_PROD},
                  [](int i) { return INT32_MAX - i; });
  auto real = [](int i) { return ((i % 17) - 8) * 0.37; };
  checkFolds<double>(MPI_DOUBLE, arithmetic, real);
  checkFolds<float>(MPI_FLOAT, arithmetic, real);
  checkFolds<long double>(MPI_LONG_DOUBLE, arithmetic, real);
  checkFolds<std::complex<double>>(
      MPI_C_DOUBLE_COMPLEX, {MPI_SUM, MPI_PROD},
      [&](int i) { return std::complex<double>(real(i), real(i + 5)); });
  checkFolds<std::complex<long double>>(
      MPI_C_LONG_DOUBLE_COMPLEX, {MPI_SUM, MPI_PROD},
      [&](int i) { return std::complex<long double>(real(i), real(i + 5)); });
  checkFolds<std::complex<float>>(
      MPI_C_FLOAT_COMPLEX, {MPI_SUM, MPI_PROD},
      [&](int i) { return std::complex<float>(real(i), real(i + 5)); });
  checkFolds<bool>(MPI_C_BOOL, {MPI_LAND, MPI_LOR, MPI_LXOR},
                   [](int i) { return i % 3 == 0; });
}

// Integer sums and products wrap around modulo 2^bits in every version of
// the loops (C++ defines the conversion of the wider result; the loops must
// not overflow a signed type on the way).
template <typename T> void checkWrapping(MPI_Datatype type, int64_t base) {
  using collc::rt::FoldIsa;
  for (FoldIsa isa : {FoldIsa::Baseline, FoldIsa::Avx2, FoldIsa::Avx512}) {
    if (!collc::rt::foldIsaSupported(isa))
      continue;
    for (bool product : {false, true}) {
      std::vector<T> lower(100), upper(100), out(100);
      for (int i = 0; i < 100; ++i) {
        lower[static_cast<size_t>(i)] = T(base + i);
        upper[static_cast<size_t>(i)] = T(base + 3 * i);
      }
      collc::rt::FoldFn fold =
          collc::rt::foldFunction(type, product ? MPI_PROD : MPI_SUM, isa);
      ASSERT_NE(fold, nullptr);
      fold(lower.data(), upper.data(), out.data(), out.size());
      for (size_t i = 0; i < out.size(); ++i) {
        const int64_t a = lower[i], b = upper[i];
        ASSERT_EQ(out[i], T(product ? a * b : a + b))
            << "element " << i << (product ? " of the product" : " of the sum")
            << ", instruction set " << int(isa);
      }
    }
  }
}

TEST(Local, FoldsWrapAround) {
  checkWrapping<short>(MPI_SHORT, 30000);
  checkWrapping<unsigned short>(MPI_UNSIGNED_SHORT, 65000);
  checkWrapping<signed char>(MPI_SIGNED_CHAR, 120);
  checkWrapping<uint8_t>(MPI_UINT8_T, 250);
  checkWrapping<int>(MPI_INT, INT32_MAX - 200);
}

} // namespace
