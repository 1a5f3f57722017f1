#pragma once
// What the irregular all-to-all tests share (001 §3, §4): runtime plans from
// the proved patterns, the count matrices they run (Figure 14's Pattern 1
// and Pattern 2, random, all-zero, one huge pair), and each rank's buffers
// with a serial computation of what it must receive.

#include "alltoallv/Patterns.h"
#include "collc/Alltoallv.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace collc::a2av_test {

/// A runtime plan and the step tables it points into.
struct OwnedPlan {
  std::vector<std::vector<int>> tables;
  rt::AlltoallvPlan plan;

  OwnedPlan() = default;
  OwnedPlan(const OwnedPlan &) = delete; // plan points into tables
  OwnedPlan(OwnedPlan &&) = default;     // moving keeps the tables' storage
};

inline OwnedPlan toPlan(const alltoallv::Pattern &pattern) {
  OwnedPlan owned;
  const alltoallv::Layout &l = pattern.layout;
  owned.plan.p = static_cast<int>(l.p);
  owned.plan.columns = static_cast<int>(l.columns);
  owned.plan.rows = static_cast<int>(l.rows);
  owned.plan.r = static_cast<int>(l.r);
  for (const alltoallv::Stage &st : pattern.stages) {
    std::vector<int> table;
    for (const auto &step : st.sendTo)
      for (int64_t y : step)
        table.push_back(static_cast<int>(y));
    owned.tables.push_back(std::move(table));
  }
  for (size_t s = 0; s < pattern.stages.size(); ++s)
    owned.plan.stages.push_back(
        {static_cast<rt::AlltoallvStageKind>(pattern.stages[s].kind),
         static_cast<int>(pattern.stages[s].numSteps()),
         owned.tables[s].data()});
  return owned;
}

/// Figure 14's Pattern 2 partner of node i: j = (i % C) C + floor(i / C) on
/// the A4 array, or i itself where that is not a node (P not a square).
inline int transposeOf(int i, int p) {
  int c = static_cast<int>(alltoallv::layoutFor(p).columns);
  int j = (i % c) * c + i / c;
  return j < p ? j : i;
}

/// counts[i * p + j]: the elements node i sends node j; every rank computes
/// the same matrix from the same seed, times `unit` (001 §3.2.4 assumes
/// every M_ij divisible by P: unit = P gives that).
///   spike      Pattern 1: `spike` to one node chosen at random, up to
///              smallMax to each of the others
///   transpose  Pattern 2: `spike` to transposeOf(i), up to smallMax to the
///              others
///   random     0 .. 4 smallMax to each
///   zero       nothing at all
///   huge       2^20 from node P - 1 to node 0, nothing else
inline std::vector<int> countMatrix(const std::string &name, int p,
                                    int smallMax, int spike, int unit = 1) {
  std::vector<int> m(static_cast<size_t>(p) * p, 0);
  std::mt19937 rng(12345);
  for (int i = 0; i < p; ++i) {
    int spikeTo = -1;
    if (name == "spike")
      spikeTo = static_cast<int>(rng() % p);
    else if (name == "transpose")
      spikeTo = transposeOf(i, p);
    for (int j = 0; j < p; ++j) {
      int &v = m[static_cast<size_t>(i) * p + j];
      if (name == "random")
        v = static_cast<int>(rng() % (4 * smallMax + 1));
      else if (name == "huge")
        v = (i == p - 1 && j == 0) ? 1 << 20 : 0;
      else if (name != "zero")
        v = j == spikeTo ? spike : static_cast<int>(rng() % (smallMax + 1));
      v *= unit;
    }
  }
  return m;
}

/// L_max of 001 §3: the largest total a node sends or receives.
inline int64_t lmaxOf(const std::vector<int> &m, int p) {
  int64_t lmax = 0;
  for (int i = 0; i < p; ++i) {
    int64_t out = 0, in = 0;
    for (int j = 0; j < p; ++j) {
      out += m[static_cast<size_t>(i) * p + j];
      in += m[static_cast<size_t>(j) * p + i];
    }
    lmax = std::max({lmax, out, in});
  }
  return lmax;
}

/// Element k of what `origin` sends `dest`: unique per (origin, dest, k), so
/// a misplaced element cannot pass.
inline int64_t element(int origin, int dest, int k) {
  return (static_cast<int64_t>(origin) << 40) |
         (static_cast<int64_t>(dest) << 24) | k;
}
constexpr int64_t poison = -7;

/// One rank's MPI_Alltoallv arguments for count matrix m: counts, and
/// displacements with gaps between the blocks (so that a displacement
/// mistake shows), its send data, and a poisoned receive buffer.
struct RankBuffers {
  std::vector<int> sendcounts, sdispls, recvcounts, rdispls;
  std::vector<int64_t> send, recv;
};

inline RankBuffers buffersFor(const std::vector<int> &m, int p, int me) {
  RankBuffers b;
  b.sendcounts.resize(p);
  b.sdispls.resize(p);
  b.recvcounts.resize(p);
  b.rdispls.resize(p);
  int sendTotal = 0, recvTotal = 0;
  for (int j = 0; j < p; ++j) {
    b.sendcounts[j] = m[static_cast<size_t>(me) * p + j];
    b.sdispls[j] = sendTotal + 3 * j;
    sendTotal = b.sdispls[j] + b.sendcounts[j];
    b.recvcounts[j] = m[static_cast<size_t>(j) * p + me];
    b.rdispls[j] = recvTotal + 2 * j;
    recvTotal = b.rdispls[j] + b.recvcounts[j];
  }
  b.send.assign(static_cast<size_t>(sendTotal) + 1, poison);
  for (int j = 0; j < p; ++j)
    for (int k = 0; k < b.sendcounts[j]; ++k)
      b.send[static_cast<size_t>(b.sdispls[j] + k)] = element(me, j, k);
  b.recv.assign(static_cast<size_t>(recvTotal) + 1, poison);
  return b;
}

/// What rank `me` must hold after the all-to-all of count matrix m,
/// computed serially: block j is what node j sends it, at rdispls[j]; the
/// gaps keep their poison.
inline std::vector<int64_t> expectedRecv(const std::vector<int> &m, int p,
                                         int me) {
  RankBuffers b = buffersFor(m, p, me);
  for (int j = 0; j < p; ++j)
    for (int k = 0; k < b.recvcounts[j]; ++k)
      b.recv[static_cast<size_t>(b.rdispls[j] + k)] = element(j, me, k);
  return b.recv;
}

} // namespace collc::a2av_test
