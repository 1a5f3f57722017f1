// Instantiation, collective semantics and the exact simulator, on schedules
// built directly as Schedule IR (the seed figures and equations they come
// from are named in each test).

#include "ExprOps.h"
#include "ir/Instantiate.h"
#include "simulate/ChunkRuns.h"
#include "simulate/RangeEval.h"
#include "simulate/Semantics.h"
#include "simulate/Simulator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <set>

using namespace collc;
using namespace collc::ir;
using namespace collc::simulate;
using verify::Property;
using verify::Status;
using verify::TransferRef;

namespace {

// --- Expression and schedule builders --------------------------------------

ExprRef c(int64_t v) { return Expr::constant(v); }
ExprRef rank() { return Expr::var("r", SlotRank); }
ExprRef size() { return Expr::var("p", SlotSize); }
ExprRef origin() { return Expr::var("origin", SlotOrigin); }
ExprRef dest() { return Expr::var("dest", SlotDest); }
ExprRef bin(ExprOp op, ExprRef a, ExprRef b) {
  return Expr::binary(op, std::move(a), std::move(b));
}
ExprRef add(ExprRef a, ExprRef b) { return bin(ExprOp::Add, a, b); }
ExprRef sub(ExprRef a, ExprRef b) { return bin(ExprOp::Sub, a, b); }
ExprRef mod(ExprRef a, ExprRef b) { return bin(ExprOp::Mod, a, b); }
ExprRef eq(ExprRef a, ExprRef b) { return bin(ExprOp::Eq, a, b); }
ExprRef land(ExprRef a, ExprRef b) { return bin(ExprOp::And, a, b); }
ExprRef bxor(ExprRef a, ExprRef b) { return bin(ExprOp::BitXor, a, b); }
ExprRef shl(ExprRef a, ExprRef b) { return bin(ExprOp::Shl, a, b); }

struct Send {
  int64_t from, to;
};

/// A schedule under construction: fixed slots named, one result buffer.
struct Builder {
  Schedule s;

  Builder(CollectiveKind kind, TopologyKind topo, std::vector<ExprRef> dims) {
    s.name = "test";
    s.collective.kind = kind;
    s.topology.kind = topo;
    s.topology.dims = std::move(dims);
    s.slotNames = {"r", "p", "origin", "dest", "index"};
    s.buffers = {Buffer{"result"}};
  }

  ExprRef param(const std::string &name) {
    unsigned slot = s.numSlots();
    s.slotNames.push_back(name);
    s.params.push_back(Parameter{name, slot, {}, std::nullopt});
    return Expr::var(name, slot);
  }

  /// A loop variable; the loop itself is returned for its body.
  std::shared_ptr<Loop> loop(const std::string &var, ExprRef lo, ExprRef hi,
                             bool reverse, ExprRef &varRef) {
    auto l = std::make_shared<Loop>();
    l->slot = s.numSlots();
    l->var = var;
    l->lo = std::move(lo);
    l->hi = std::move(hi);
    l->reverse = reverse;
    s.slotNames.push_back(var);
    varRef = Expr::var(var, l->slot);
    s.body.push_back(l);
    return l;
  }

  /// A hand-written step: `a -> b; ...`, each the rule guard r == a, peer b.
  void step(std::initializer_list<Send> sends,
            TransferMode mode = TransferMode::Copy) {
    Step st;
    for (const Send &send : sends)
      st.rules.push_back(
          rule(eq(rank(), c(send.from)), c(send.to), nullptr, mode));
    s.body.push_back(std::move(st));
  }

  static TransferRule
  rule(ExprRef guard, ExprRef peer, ExprRef selector,
       TransferMode mode = TransferMode::Copy, unsigned from = 0,
       llvm::SmallVector<Delivery, 1> into = {Delivery{0, nullptr}}) {
    TransferRule r;
    r.guard = std::move(guard);
    r.peer = std::move(peer);
    r.selector = std::move(selector);
    r.mode = mode;
    r.fromBuffer = from;
    r.into = std::move(into);
    return r;
  }
};

Step stepOf(TransferRule rule) {
  Step st;
  st.rules.push_back(std::move(rule));
  return st;
}

SimulationResult sim(const Schedule &s, llvm::ArrayRef<int64_t> params = {},
                     PortModel ports = PortModel::Single) {
  SimulateOptions options;
  options.ports = ports;
  auto result = simulate::simulate(s, params, options);
  if (!result) {
    ADD_FAILURE() << llvm::toString(result.takeError());
    return {};
  }
  return std::move(*result);
}

/// The property's counterexample (a copy: callers pass temporaries).
verify::Counterexample cexOf(const SimulationResult &r, Property p) {
  const verify::PropertyResult &pr = r.result(p);
  EXPECT_EQ(pr.status, Status::Counterexample) << verify::propertyName(p);
  EXPECT_EQ(pr.method, "simulation");
  return pr.counterexample ? *pr.counterexample : verify::Counterexample();
}

void expectHolds(const SimulationResult &r, Property p) {
  const verify::PropertyResult &pr = r.result(p);
  EXPECT_EQ(pr.status, Status::Proved)
      << verify::propertyName(p) << ": "
      << (pr.counterexample ? pr.counterexample->message : "");
}

void expectAllHold(const SimulationResult &r) {
  ASSERT_EQ(r.properties.size(), 5u);
  for (Property p :
       {Property::Causality, Property::Contention, Property::Congestion,
        Property::Matching, Property::Correctness})
    expectHolds(r, p);
}

// --- Instantiation ----------------------------------------------------------

TEST(Instantiate, LoopsRunInclusiveDownwardsAndSkipEmptyRanges) {
  Builder b(CollectiveKind::Broadcast, TopologyKind::Ring, {c(4)});
  ExprRef i, j;
  auto down = b.loop("i", c(1), c(3), /*reverse=*/true, i);
  down->body.push_back(stepOf(Builder::rule(eq(rank(), c(0)), i, nullptr)));
  auto empty = b.loop("j", c(2), c(1), /*reverse=*/false, j);
  empty->body.push_back(stepOf(Builder::rule(nullptr, c(1), nullptr)));

  auto inst = instantiate(b.s, {});
  ASSERT_TRUE(!!inst) << llvm::toString(inst.takeError());
  EXPECT_EQ(inst->p, 4);
  ASSERT_EQ(inst->steps.size(), 3u);
  for (unsigned k = 0; k < 3; ++k) {
    const InstanceStep &st = inst->steps[k];
    EXPECT_EQ(st.number, k + 1);
    ASSERT_EQ(st.transfers.size(), 1u);
    EXPECT_EQ(st.transfers[0].src, 0);
    EXPECT_EQ(st.transfers[0].dst, 3 - int64_t(k)); // i = 3, 2, 1
    ASSERT_EQ(st.loopVars.size(), 1u);
    EXPECT_EQ(st.loopVars[0], std::make_pair(std::string("i"), 3 - int64_t(k)));
  }
}

TEST(Instantiate, TopologyDimensionsFollowParameters) {
  Builder b(CollectiveKind::Broadcast, TopologyKind::Hypercube, {});
  ExprRef d = b.param("d");
  b.s.topology.dims = {d};
  b.s.chunks = add(d, c(1));
  auto inst = instantiate(b.s, {5});
  ASSERT_TRUE(!!inst) << llvm::toString(inst.takeError());
  EXPECT_EQ(inst->p, 32);
  EXPECT_EQ(inst->chunks, 6);
  EXPECT_EQ(inst->dims, std::vector<int64_t>{5});
  EXPECT_EQ(inst->namedParams()[0],
            std::make_pair(std::string("d"), int64_t(5)));

  auto wrong = instantiate(b.s, {});
  ASSERT_FALSE(!!wrong);
  EXPECT_NE(llvm::toString(wrong.takeError()).find("1 parameter(s), got 0"),
            std::string::npos);
}

TEST(Instantiate, EvaluationErrorsNameTheExpressionAndLocation) {
  Builder b(CollectiveKind::Broadcast, TopologyKind::Ring, {c(4)});
  const char *source = "step { r -> r / (r - 2) }";
  ExprRef bad = Expr::binary(ExprOp::Div, rank(), sub(rank(), c(2)),
                             llvm::SMLoc::getFromPointer(source + 12));
  b.s.body.push_back(stepOf(Builder::rule(nullptr, bad, nullptr)));
  auto inst = instantiate(b.s, {});
  ASSERT_FALSE(!!inst);
  llvm::Error err = inst.takeError();
  bool sawLoc = false;
  std::string text;
  llvm::handleAllErrors(std::move(err), [&](const EvalFailure &f) {
    sawLoc = f.loc.getPointer() == source + 12;
    text = f.message;
  });
  EXPECT_TRUE(sawLoc);
  EXPECT_NE(text.find("r / (r - 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("division by zero"), std::string::npos) << text;
  EXPECT_NE(text.find("r = 2"), std::string::npos) << text;
}

// --- Semantics
// ----------------------------------------------------------------

TEST(Semantics, ContributionsAddAsMultisetsAndPrintCompactly) {
  Contributions a = Contributions::range(0, 2);
  a.add(Contributions::range(4, 7));
  EXPECT_EQ(a.str(), "{0..2, 4..7}");
  EXPECT_FALSE(a.isInterval());
  a.add(Contributions::single(3));
  EXPECT_EQ(a.str(), "{0..7}");
  EXPECT_TRUE(a.isInterval());
  a.add(Contributions::single(3));
  EXPECT_EQ(a.str(), "{0..2, 3 (x2), 4..7}");
  EXPECT_EQ(a.count(3), 2);
  EXPECT_EQ(a.count(9), 0);
  EXPECT_EQ(Contributions().str(), "{}");
}

TEST(Semantics, AlltoallUniverseAndConditions) {
  Collective coll;
  coll.kind = CollectiveKind::Alltoall;
  auto sem = Semantics::make(coll, 4, 2);
  ASSERT_TRUE(!!sem);
  EXPECT_EQ(sem->universeSize(), 32u);
  // Origin 1's index-0 chunks: one id per dest, in dest order.
  std::vector<IdRange> ids;
  sem->appendIds({1, 1, 0, 3, 0, 0}, ids);
  ASSERT_EQ(ids.size(), 4u);
  for (int64_t d = 0; d < 4; ++d) {
    EXPECT_EQ(ids[d].size(), 1u);
    ChunkKey k = sem->keyOf(ids[d].lo);
    EXPECT_EQ(chunkOrigin(k), 1);
    EXPECT_EQ(chunkDest(k), d);
    EXPECT_EQ(chunkIndex(k), 0);
  }
  // Rank 2 ends with (o, 2, k) from every o, each holding only o's data.
  std::vector<std::string> req;
  sem->required(2, [&](IdRange r, const Contributions &cs) {
    for (uint64_t id = r.lo; id <= r.hi; ++id)
      req.push_back(sem->describeChunk(sem->keyOf(id)) + cs.str());
  });
  ASSERT_EQ(req.size(), 8u);
  EXPECT_EQ(req[0], "(origin 0, dest 2, index 0){0}");
  EXPECT_EQ(req[7], "(origin 3, dest 2, index 1){3}");
}

// An exclusive scan (MPI_Exscan): rank x must end with the fold of the
// ranks before it, and rank 0, whose result MPI leaves undefined, with
// nothing required; every rank starts with its own contribution.
TEST(Semantics, ExscanRequiresTheRanksBeforeAndNothingAtRankZero) {
  Collective coll;
  coll.kind = CollectiveKind::Exscan;
  coll.op = "sum";
  auto sem = Semantics::make(coll, 4, 1);
  ASSERT_TRUE(!!sem);
  for (int64_t x = 0; x < 4; ++x) {
    std::vector<Contributions> required, initial;
    sem->required(
        x, [&](IdRange, const Contributions &c) { required.push_back(c); });
    sem->initial(
        x, [&](IdRange, const Contributions &c) { initial.push_back(c); });
    EXPECT_EQ(initial, std::vector<Contributions>{Contributions::single(x)});
    if (x == 0)
      EXPECT_TRUE(required.empty());
    else
      EXPECT_EQ(required,
                std::vector<Contributions>{Contributions::range(0, x - 1)})
          << "rank " << x;
  }
}

// collc/Meaning.h's table, read by the simulator, the induction prover and
// the engine: the facts derived from it, and the one block numbering all
// three use (a block of the universe out of order, or a held block outside
// it, would put the engine's data in another block's place).
TEST(Semantics, MeaningTableNumbersEveryHeldBlockInTheUniverse) {
  const int64_t p = 5, root = 3;
  const std::vector<int64_t> pi = {2, 0, 4, 1, 3};
  std::vector<std::string> rooted, reductions;
  for (int k = 0; k < static_cast<int>(meaning::kindCount); ++k) {
    const auto kind = static_cast<CollectiveKind>(k);
    const meaning::Conditions &m = meaningOf(kind);
    const std::string name = collectiveKindName(kind).str();
    if (m.rooted())
      rooted.push_back(name);
    if (m.reduction())
      reductions.push_back(name);
    auto destOf = [&](int64_t o) {
      return kind == CollectiveKind::Permute ? pi[o] : (o + 2) % p;
    };
    auto originOf = [&](int64_t d) {
      for (int64_t o = 0; o < p; ++o)
        if (destOf(o) == d)
          return o;
      return int64_t(-1);
    };
    meaning::Frame frame{p, root, destOf, originOf};
    // The universe, in blockIndex order, with no gaps.
    std::vector<std::pair<int64_t, int64_t>> universe;
    meaning::forEachUniverseBlock(
        m, frame, [&](int64_t o, int64_t lo, int64_t hi) {
          for (int64_t d = lo; d <= hi; ++d) {
            EXPECT_EQ(m.blockIndex(o, d, p),
                      static_cast<int64_t>(universe.size()))
                << name << " block (" << o << ", " << d << ")";
            universe.push_back({o, d});
          }
        });
    // The simulator numbers its chunks by the same blocks.
    Collective coll;
    coll.kind = kind;
    coll.root = root;
    coll.shift = 2;
    coll.permutation = std::make_shared<std::vector<int64_t>>(pi);
    auto sem = Semantics::make(coll, p, 2);
    ASSERT_TRUE(!!sem) << name;
    EXPECT_EQ(sem->universeSize(), 2 * universe.size()) << name;
    for (size_t b = 0; b < universe.size(); ++b)
      EXPECT_EQ(sem->idOf(universe[b].first, universe[b].second, 1), 2 * b + 1)
          << name;
    // Whatever a rank starts or ends with is a block of the universe, and
    // every block some rank must end with is one some rank starts with.
    std::set<std::pair<int64_t, int64_t>> all(universe.begin(), universe.end()),
        started;
    for (int64_t x = 0; x < p; ++x) {
      meaning::forEachBlock(m.initial, x, frame,
                            [&](int64_t o, int64_t lo, int64_t hi) {
                              for (int64_t d = lo; d <= hi; ++d) {
                                EXPECT_TRUE(all.count({o, d})) << name;
                                started.insert({o, d});
                              }
                            });
    }
    for (int64_t x = 0; x < p; ++x)
      meaning::forEachBlock(m.required, x, frame,
                            [&](int64_t o, int64_t lo, int64_t hi) {
                              for (int64_t d = lo; d <= hi; ++d)
                                EXPECT_TRUE(started.count({o, d}))
                                    << name << " must end with (" << o << ", "
                                    << d << ") at " << x;
                            });
  }
  EXPECT_EQ(rooted, (std::vector<std::string>{"broadcast", "reduce", "scatter",
                                              "gather"}));
  EXPECT_EQ(reductions,
            (std::vector<std::string>{"reduce", "allreduce", "reduce_scatter",
                                      "scan", "exscan", "suffix_scan"}));
}

// The split-message identities of 000 §4.7.1 (Eqs 4.13, 4.14), and no
// others, follow from the table: what the verifier proves a composition
// from its parts by.
TEST(Semantics, MeaningTableSplitsExactlyTheSectionsIdentities) {
  std::vector<std::string> found;
  const int count = static_cast<int>(meaning::kindCount);
  for (int w = 0; w < count; ++w)
    for (int a = 0; a < count; ++a)
      for (int b = 0; b < count; ++b) {
        auto whole = static_cast<CollectiveKind>(w),
             first = static_cast<CollectiveKind>(a),
             second = static_cast<CollectiveKind>(b);
        if (meaning::splitsInto(meaningOf(whole), meaningOf(first),
                                meaningOf(second)))
          found.push_back((collectiveKindName(whole) + " = " +
                           collectiveKindName(first) + " then " +
                           collectiveKindName(second))
                              .str());
      }
  EXPECT_EQ(found, (std::vector<std::string>{
                       "broadcast = scatter then allgather",
                       "reduce = reduce_scatter then gather",
                       "allreduce = reduce_scatter then allgather"}));
}

TEST(Semantics, ChunkIdRangesAndBoxesAreInverse) {
  for (CollectiveKind kind : {CollectiveKind::Alltoall, CollectiveKind::Gather,
                              CollectiveKind::Shift, CollectiveKind::Scan}) {
    Collective coll;
    coll.kind = kind;
    coll.root = 1;
    coll.shift = 2;
    auto sem = Semantics::make(coll, 5, 3);
    ASSERT_TRUE(!!sem);
    uint64_t n = sem->universeSize();
    for (uint64_t id = 0; id < n; ++id) {
      ChunkKey k = sem->keyOf(id);
      EXPECT_EQ(sem->idOf(chunkOrigin(k), chunkDest(k), chunkIndex(k)), id);
    }
    for (uint64_t lo = 0; lo < n; ++lo)
      for (uint64_t hi = lo; hi < n; ++hi) {
        std::vector<IdRange> out;
        sem->boxesOf({lo, hi}, [&](const Semantics::Box &box) {
          sem->appendIds(box, out);
        });
        ASSERT_EQ(out.size(), 1u) << lo << ".." << hi;
        EXPECT_EQ(out[0].lo, lo);
        EXPECT_EQ(out[0].hi, hi);
      }
    std::vector<IdRange> all;
    sem->appendIds(sem->universeBox(), all);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].size(), n);
  }
}

TEST(Semantics, ScanAndShiftPostConditions) {
  Collective scan;
  scan.kind = CollectiveKind::Scan;
  auto s = Semantics::make(scan, 8, 1);
  ASSERT_TRUE(!!s);
  std::string got;
  s->required(5, [&](IdRange ids, const Contributions &cs) {
    got = s->describeChunk(s->keyOf(ids.lo)) + " " + cs.str();
  });
  EXPECT_EQ(got, "chunk 0 {0..5}");

  Collective shift;
  shift.kind = CollectiveKind::Shift;
  shift.shift = 3;
  auto sh = Semantics::make(shift, 8, 1);
  ASSERT_TRUE(!!sh);
  sh->required(1, [&](IdRange ids, const Contributions &cs) {
    got = sh->describeChunk(sh->keyOf(ids.lo)) + " " + cs.str();
  });
  EXPECT_EQ(got, "(origin 6, dest 1) {6}");

  Collective bad;
  bad.kind = CollectiveKind::Broadcast;
  bad.root = 8;
  auto err = Semantics::make(bad, 8, 1);
  ASSERT_FALSE(!!err);
  EXPECT_NE(llvm::toString(err.takeError()).find("root 8 is outside 0..7"),
            std::string::npos);
}

// --- ChunkRuns and RangeEval: the simulator's representation -------------

// Random assigns, one at a time and in bulk, against a per-chunk map: the
// runs read back chunk for chunk, merged wherever neighbours agree.
TEST(ChunkRuns, AssignsMatchAPerChunkMapAndStayMerged) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    ChunkRuns runs;
    std::map<uint64_t, uint32_t> want;
    for (int op = 0; op < 60; ++op) {
      if (rng() % 4 == 0) { // a message of several runs
        std::vector<ChunkRuns::Run> batch;
        uint64_t at = rng() % 8;
        for (int k = 0; k < 12 && at < 300; ++k) {
          uint64_t hi = at + rng() % 9;
          batch.push_back({at, hi, static_cast<uint32_t>(rng() % 3)});
          at = hi + 1 + rng() % 6;
        }
        runs.assignAll(batch.data(), batch.size());
        for (const ChunkRuns::Run &r : batch)
          for (uint64_t id = r.lo; id <= r.hi; ++id)
            want[id] = r.value;
      } else {
        uint64_t lo = rng() % 300, hi = lo + rng() % 40;
        uint32_t v = static_cast<uint32_t>(rng() % 3);
        runs.assign(lo, hi, v);
        for (uint64_t id = lo; id <= hi; ++id)
          want[id] = v;
      }
    }
    std::map<uint64_t, uint32_t> got;
    uint64_t lastHi = 0;
    uint32_t lastValue = 0;
    bool first = true;
    runs.forEach([&](uint64_t lo, uint64_t hi, uint32_t v) {
      ASSERT_LE(lo, hi);
      if (!first) {
        ASSERT_GT(lo, lastHi);
        EXPECT_FALSE(lo == lastHi + 1 && v == lastValue) << "unmerged at " << lo;
      }
      first = false;
      lastHi = hi;
      lastValue = v;
      for (uint64_t id = lo; id <= hi; ++id)
        got[id] = v;
    });
    ASSERT_EQ(got, want) << "round " << round;
    EXPECT_EQ(runs.count(), want.size());
    // visit() covers a range with held pieces and gaps, in order.
    uint64_t next = 50;
    runs.visit(
        50, 250,
        [&](uint64_t lo, uint64_t hi, uint32_t v) {
          EXPECT_EQ(lo, next);
          for (uint64_t id = lo; id <= hi; ++id)
            EXPECT_EQ(want.count(id) ? want[id] : 99u, v);
          next = hi + 1;
        },
        [&](uint64_t lo, uint64_t hi) {
          EXPECT_EQ(lo, next);
          for (uint64_t id = lo; id <= hi; ++id)
            EXPECT_EQ(want.count(id), 0u);
          next = hi + 1;
        });
    EXPECT_EQ(next, 251u);
  }
}

// On non-negative ranges, &, | and ^ of two variables are bounded exactly
// for & and | (Hacker's Delight §4-3) and soundly for ^, against every
// pair of values of every pair of ranges within 0..15, and for ranges
// with high bits (up to 2^40) against a sample of their pairs.
TEST(RangeEval, BitwiseBoundsAreExact) {
  const ExprRef x = Expr::var("o", SlotOrigin), y = Expr::var("d", SlotDest);
  auto check = [&](ExprOp op, int64_t a, int64_t b, int64_t cc, int64_t d,
                   int64_t step) {
    std::vector<int64_t> lo(NumFixedSlots, 0), hi(NumFixedSlots, 0);
    lo[SlotOrigin] = a, hi[SlotOrigin] = b, lo[SlotDest] = cc, hi[SlotDest] = d;
    ValueRange range = evaluateRange(*bin(op, x, y), lo, hi);
    int64_t least = INT64_MAX, most = INT64_MIN;
    for (int64_t u = a; u <= b; u += step)
      for (int64_t v = cc; v <= d; v += step) {
        for (int64_t w : {u, b}) // each range's top too, whatever the step
          for (int64_t z : {v, d}) {
            int64_t r = op == ExprOp::BitAnd  ? (w & z)
                        : op == ExprOp::BitOr ? (w | z)
                                              : (w ^ z);
            least = std::min(least, r), most = std::max(most, r);
          }
      }
    ASSERT_FALSE(range.mayFail);
    ASSERT_LE(range.lo, least) << a << ".." << b << " " << cc << ".." << d;
    ASSERT_GE(range.hi, most) << a << ".." << b << " " << cc << ".." << d;
    if (op != ExprOp::BitXor && step == 1) {
      EXPECT_EQ(range.lo, least) << a << ".." << b << " " << cc << ".." << d;
      EXPECT_EQ(range.hi, most) << a << ".." << b << " " << cc << ".." << d;
    }
  };
  for (ExprOp op : {ExprOp::BitAnd, ExprOp::BitOr, ExprOp::BitXor})
    for (int64_t a = 0; a < 16; ++a)
      for (int64_t b = a; b < 16; ++b)
        for (int64_t cc = 0; cc < 16; ++cc)
          for (int64_t d = cc; d < 16; ++d)
            check(op, a, b, cc, d, 1);
  std::mt19937_64 rng(20261205);
  for (int n = 0; n < 2000; ++n) {
    const int64_t a = rng() % (int64_t(1) << 40), cc = rng() % (1 << 20);
    const int64_t width = 1 + rng() % 40;
    for (ExprOp op : {ExprOp::BitAnd, ExprOp::BitOr, ExprOp::BitXor})
      check(op, a, a + width, cc, cc + width * 3, 1);
  }
}

// For random expressions over three variables and random boxes, every
// value evaluate() gives inside the box lies in evaluateRange()'s range,
// and where the range says the evaluation cannot fail, it does not. A
// specialised RangePredicate gives the same ranges.
TEST(RangeEval, BoundsEveryPointOfTheBox) {
  std::mt19937_64 rng(20241122);
  const auto &binary = test::binaryExprOps;
  const auto &unary = test::unaryExprOps;
  std::function<ExprRef(int)> gen = [&](int depth) -> ExprRef {
    if (depth == 0 || rng() % 4 == 0) {
      if (rng() % 3 == 0) {
        const int64_t special[] = {0, 1, -1, 2, 3, 7, 8, 63, 64, INT64_MIN,
                                   INT64_MAX};
        return rng() % 2 ? c(special[rng() % std::size(special)])
                         : c(static_cast<int64_t>(rng() % 33) - 16);
      }
      unsigned slot = SlotOrigin + rng() % 3;
      return Expr::var(std::string(1, "odk"[slot - SlotOrigin]), slot);
    }
    switch (rng() % 12) {
    case 0:
      return Expr::unary(unary[rng() % std::size(unary)], gen(depth - 1));
    case 1:
      return Expr::select(gen(depth - 1), gen(depth - 1), gen(depth - 1));
    default:
      return bin(binary[rng() % std::size(binary)], gen(depth - 1),
                 gen(depth - 1));
    }
  };
  int decided = 0, checked = 0;
  for (int n = 0; n < 3000; ++n) {
    ExprRef e = gen(4);
    std::vector<int64_t> lo(NumFixedSlots, 0), hi(NumFixedSlots, 0);
    for (unsigned s = SlotOrigin; s <= SlotIndex; ++s) {
      int64_t base = rng() % 3 == 0 ? static_cast<int64_t>(rng() % 2000) - 1000
                                    : static_cast<int64_t>(rng() % 64);
      lo[s] = base;
      hi[s] = base + static_cast<int64_t>(rng() % (rng() % 2 ? 4 : 40));
    }
    ValueRange range = evaluateRange(*e, lo, hi);
    RangePredicate specialised(*e);
    // The same with the index pinned to its low end and specialised on.
    std::vector<int64_t> pinnedHi = hi;
    pinnedHi[SlotIndex] = lo[SlotIndex];
    specialised.specialise(lo, 1 | 2);
    ValueRange viaPredicate = specialised.evaluate(lo, pinnedHi);
    if (!range.mayFail && range.lo == range.hi)
      ++decided;
    std::vector<int64_t> env(NumFixedSlots, 0);
    for (env[SlotOrigin] = lo[SlotOrigin]; env[SlotOrigin] <= hi[SlotOrigin];
         ++env[SlotOrigin])
      for (env[SlotDest] = lo[SlotDest]; env[SlotDest] <= hi[SlotDest];
           ++env[SlotDest])
        for (env[SlotIndex] = lo[SlotIndex]; env[SlotIndex] <= hi[SlotIndex];
             ++env[SlotIndex]) {
          EvalResult r = evaluate(*e, env);
          ++checked;
          if (!r.ok()) {
            ASSERT_TRUE(range.mayFail) << print(*e);
            if (env[SlotIndex] == lo[SlotIndex]) {
              ASSERT_TRUE(viaPredicate.mayFail) << print(*e);
            }
            continue;
          }
          ASSERT_GE(r.value, range.lo) << print(*e);
          ASSERT_LE(r.value, range.hi) << print(*e);
          if (env[SlotIndex] != lo[SlotIndex])
            continue;
          ASSERT_GE(r.value, viaPredicate.lo) << print(*e);
          ASSERT_LE(r.value, viaPredicate.hi) << print(*e);
        }
  }
  EXPECT_GT(decided, 300); // the ranges are not trivially everything
  EXPECT_GT(checked, 100000);
}

// --- Broadcast on a ring (section 4.1.1) ------------------------------------

TEST(Simulate, Fig4_2_FarthestFirstBroadcastOnRingHolds) {
  Builder b(CollectiveKind::Broadcast, TopologyKind::Ring, {c(8)});
  b.step({{0, 4}});
  b.step({{0, 2}, {4, 6}});
  b.step({{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  SimulationResult r = sim(b.s);
  expectAllHold(r);
  EXPECT_EQ(r.maxLoad, 1);
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[2].messageChunks, (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(Simulate, Sec4_1_1_NearestFirstBroadcastCongestsLink1To2) {
  // "if node 0 sent the message to node 1 in the first step and then nodes 0
  // and 1 attempted to send messages to nodes 2 and 3, respectively, in the
  // second step, the link between nodes 1 and 2 would be congested".
  Builder b(CollectiveKind::Broadcast, TopologyKind::Ring, {c(8)});
  b.step({{0, 1}});
  b.step({{0, 2}, {1, 3}});
  b.step({{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  SimulationResult r = sim(b.s);
  const auto &cex = cexOf(r, Property::Congestion);
  EXPECT_EQ(cex.step, 2);
  EXPECT_EQ(cex.channel, std::make_pair(int64_t(1), int64_t(2)));
  EXPECT_EQ(cex.load, 2);
  EXPECT_EQ(cex.transfers, (std::vector<TransferRef>{{0, 2}, {1, 3}}));
  EXPECT_EQ(cex.message, "channel 1->2 carries 2 messages");
  EXPECT_EQ(cex.p, 8);
  // The data still arrives everywhere: only the timing is wrong.
  expectHolds(r, Property::Correctness);
  expectHolds(r, Property::Causality);
}

TEST(Simulate, Fig4_12_HypercubeStepOnRingLoadsALinkFourTimes) {
  // The messages of Figure 4.11(c) (partners differ in bit 2) on ring(8),
  // as the figure draws them: all four cross 3 -> 4.
  Builder b(CollectiveKind::Allgather, TopologyKind::Ring, {c(8)});
  b.step({{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  SimulationResult r = sim(b.s);
  const auto &cex = cexOf(r, Property::Congestion);
  EXPECT_EQ(cex.step, 1);
  EXPECT_EQ(cex.channel, std::make_pair(int64_t(3), int64_t(4)));
  EXPECT_EQ(cex.load, 4);
  EXPECT_EQ(cex.transfers,
            (std::vector<TransferRef>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(cex.message, "channel 3->4 carries 4 messages");
  EXPECT_EQ(r.maxLoad, 4);
  EXPECT_EQ(r.steps[0].maxChannelChunks, 4);
  // The step keeps the channel the counterexample names (collc draw marks it).
  ASSERT_TRUE(r.steps[0].worstChannel.has_value());
  EXPECT_EQ(*r.steps[0].worstChannel, (Channel{3, 4}));
}

TEST(Simulate, Fig4_12_FullExchangeLoadsEveryClockwiseLinkFourTimes) {
  // Both directions of the exchange: the returning messages tie too and go
  // clockwise (ring routing), so every clockwise link carries four.
  Builder b(CollectiveKind::Allgather, TopologyKind::Ring, {c(8)});
  b.step({{0, 4}, {4, 0}, {1, 5}, {5, 1}, {2, 6}, {6, 2}, {3, 7}, {7, 3}});
  SimulationResult r = sim(b.s, {}, PortModel::All);
  const auto &cex = cexOf(r, Property::Congestion);
  EXPECT_EQ(cex.load, 4);
  EXPECT_EQ(cex.transfers.size(), 4u);
  EXPECT_EQ(r.steps[0].maxLoad, 4);
  expectHolds(r, Property::Contention); // one send, one receive per rank
}

TEST(Simulate, Fig4_11_AllgatherOnHypercubeHoldsAndDoublesMessages) {
  // Section 4.2: exchange along dimension i, sending everything held.
  Builder b(CollectiveKind::Allgather, TopologyKind::Hypercube, {c(3)});
  ExprRef i;
  auto l = b.loop("i", c(0), c(2), false, i);
  l->body.push_back(
      stepOf(Builder::rule(nullptr, bxor(rank(), shl(c(1), i)), nullptr)));
  SimulationResult r = sim(b.s);
  expectAllHold(r);
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0].maxMessageChunks, 1);
  EXPECT_EQ(r.steps[1].maxMessageChunks, 2);
  EXPECT_EQ(r.steps[2].maxMessageChunks, 4);
  EXPECT_EQ(r.maxLoad, 1);
  // Every channel of the last step carries one message; the first in
  // channel order is the one kept.
  ASSERT_TRUE(r.steps[2].worstChannel.has_value());
  EXPECT_EQ(*r.steps[2].worstChannel, (Channel{0, 4}));
}

// --- Algorithm 4.1: hypercube broadcast, symbolic in d ----------------------

Schedule hypercubeBroadcast() {
  Builder b(CollectiveKind::Broadcast, TopologyKind::Hypercube, {});
  ExprRef d = b.param("d");
  b.s.topology.dims = {d};
  ExprRef i;
  auto l = b.loop("i", c(0), sub(d, c(1)), /*reverse=*/true, i);
  // r & ((2 << i) - 1) == 0  =>  r -> r ^ (1 << i)
  ExprRef guard =
      eq(bin(ExprOp::BitAnd, rank(), sub(shl(c(2), i), c(1))), c(0));
  l->body.push_back(
      stepOf(Builder::rule(guard, bxor(rank(), shl(c(1), i)), nullptr)));
  return std::move(b.s);
}

TEST(Simulate, Alg4_1_HypercubeBroadcastHoldsForDim1To10) {
  Schedule s = hypercubeBroadcast();
  for (int64_t d = 1; d <= 10; ++d) {
    SCOPED_TRACE("d = " + std::to_string(d));
    SimulationResult r = sim(s, {d});
    expectAllHold(r);
    ASSERT_EQ(r.steps.size(), size_t(d));
    EXPECT_EQ(r.maxLoad, 1);
    // Step k (1-based) doubles the number of senders.
    EXPECT_EQ(r.steps.back().messageChunks.size(), size_t(1) << (d - 1));
  }
}

TEST(Simulate, Alg4_1_WrongDimensionOrderIsCaughtWithParameters) {
  // Counting i upwards with the same guard: at i = 0 every even rank
  // qualifies, and rank 2 holds nothing yet.
  Schedule s = hypercubeBroadcast();
  std::get<std::shared_ptr<Loop>>(s.body[0])->reverse = false;
  SimulationResult r = sim(s, {3});
  const auto &cex = cexOf(r, Property::Causality);
  EXPECT_EQ(cex.step, 1);
  EXPECT_EQ(cex.rank, 2);
  EXPECT_EQ(cex.message, "rank 2 sends to 3 at step 1 but holds nothing");
  EXPECT_EQ(cex.params,
            (std::vector<std::pair<std::string, int64_t>>{{"d", 3}}));
  EXPECT_EQ(cex.loopVars,
            (std::vector<std::pair<std::string, int64_t>>{{"i", 0}}));
}

// --- All-to-all personalized on a ring (section 4.5.1) ----------------------

/// Figure 4.18: every node forwards to r + 1 the packets not yet delivered.
/// At step i rank r forwards the packet that originated at r - i + 1, less
/// the pieces already delivered: those with (dest - origin) mod p >= i.
Schedule ringAlltoall(int64_t p) {
  Builder b(CollectiveKind::Alltoall, TopologyKind::Ring, {c(p)});
  ExprRef i;
  auto l = b.loop("i", c(1), sub(size(), c(1)), false, i);
  ExprRef from = mod(add(sub(rank(), i), add(c(1), size())), size());
  ExprRef remaining =
      bin(ExprOp::Ge, mod(add(sub(dest(), origin()), size()), size()), i);
  ExprRef selector = land(eq(origin(), from), remaining);
  l->body.push_back(
      stepOf(Builder::rule(nullptr, mod(add(rank(), c(1)), size()), selector)));
  return std::move(b.s);
}

TEST(Simulate, Eq4_7_RingAlltoallPersonalizedMessagesShrinkByOne) {
  for (int64_t p : {6, 64}) {
    SCOPED_TRACE("p = " + std::to_string(p));
    Schedule s = ringAlltoall(p);
    SimulationResult r = sim(s);
    expectAllHold(r);
    ASSERT_EQ(r.steps.size(), size_t(p - 1));
    // Step i carries m(p - i) words per node (equation 4.7).
    int64_t total = 0;
    for (int64_t i = 1; i < p; ++i) {
      const StepStats &st = r.steps[i - 1];
      EXPECT_EQ(st.maxMessageChunks, p - i);
      EXPECT_EQ(st.maxChannelChunks, p - i);
      EXPECT_EQ(st.maxLoad, 1);
      total += st.maxChannelChunks;
    }
    EXPECT_EQ(total, p * (p - 1) / 2);
  }
}

TEST(Simulate, RingAlltoallWithOneStepTooFewLosesAChunk) {
  Schedule s = ringAlltoall(6);
  auto l = std::get<std::shared_ptr<Loop>>(s.body[0]);
  l->hi = sub(size(), c(2));
  SimulationResult r = sim(s);
  const auto &cex = cexOf(r, Property::Correctness);
  // The pieces that travel p - 1 hops never arrive: (1, 0) is the first.
  EXPECT_EQ(cex.rank, 0);
  EXPECT_EQ(cex.chunk, "(origin 1, dest 0)");
  EXPECT_EQ(cex.actual, "nothing");
  EXPECT_EQ(cex.expected, "{1}");
  EXPECT_EQ(cex.message, "rank 0 does not hold chunk (origin 1, dest 0)");
}

TEST(Simulate, DirectAlltoallOnRingAtP1024) {
  // The direct variant: at step i rank r sends its piece for r + i straight
  // there (p - 1 steps, p(p - 1) transfers). Timed, not asserted.
  const int64_t p = 1024;
  Builder b(CollectiveKind::Alltoall, TopologyKind::Ring, {c(p)});
  ExprRef i;
  auto l = b.loop("i", c(1), sub(size(), c(1)), false, i);
  ExprRef peer = mod(add(rank(), i), size());
  l->body.push_back(stepOf(Builder::rule(
      nullptr, peer, land(eq(origin(), rank()), eq(dest(), peer)))));

  auto start = std::chrono::steady_clock::now();
  auto inst = instantiate(b.s, {});
  ASSERT_TRUE(!!inst) << llvm::toString(inst.takeError());
  auto mid = std::chrono::steady_clock::now();
  auto topo = Topology::make(TopologyKind::Ring, inst->dims);
  ASSERT_TRUE(!!topo) << llvm::toString(topo.takeError());
  auto result = simulate::simulate(*inst, *topo);
  ASSERT_TRUE(!!result) << llvm::toString(result.takeError());
  auto end = std::chrono::steady_clock::now();
  auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  std::printf("[ timing ] alltoall ring(1024): %zu transfers, instantiate %lld "
              "ms, simulate %lld ms\n",
              inst->numTransfers(), static_cast<long long>(ms(mid - start)),
              static_cast<long long>(ms(end - mid)));

  EXPECT_EQ(inst->numTransfers(), size_t(p * (p - 1)));
  expectHolds(*result, Property::Correctness);
  expectHolds(*result, Property::Causality);
  expectHolds(*result, Property::Matching);
  // Sending straight across a ring shares links: at step i, i messages
  // cross each clockwise channel (up to p / 2).
  const auto &cex = cexOf(*result, Property::Congestion);
  EXPECT_EQ(cex.step, 2);
  EXPECT_EQ(result->maxLoad, p / 2);
  EXPECT_EQ(result->steps[9].maxLoad, 10);
}

TEST(Simulate, ArcCountingAgreesWithRoutingHopByHop) {
  // Ring and linear loads are counted as arcs; a one-dimensional torus and
  // mesh route the same way but are counted hop by hop.
  for (auto [arcs, hops] :
       {std::pair{TopologyKind::Ring, TopologyKind::Torus},
        std::pair{TopologyKind::Linear, TopologyKind::Mesh}}) {
    for (int64_t p : {5, 12}) {
      SCOPED_TRACE(std::string(topologyKindName(arcs)) + " " +
                   std::to_string(p));
      std::vector<SimulationResult> runs;
      for (TopologyKind kind : {arcs, hops}) {
        Builder b(CollectiveKind::Alltoall, kind, {c(p)});
        ExprRef i;
        auto l = b.loop("i", c(1), sub(size(), c(1)), false, i);
        ExprRef peer = mod(add(rank(), i), size());
        l->body.push_back(stepOf(Builder::rule(
            nullptr, peer, land(eq(origin(), rank()), eq(dest(), peer)))));
        runs.push_back(sim(b.s, {}, PortModel::All));
      }
      ASSERT_EQ(runs[0].steps.size(), runs[1].steps.size());
      for (size_t k = 0; k < runs[0].steps.size(); ++k) {
        EXPECT_EQ(runs[0].steps[k].maxLoad, runs[1].steps[k].maxLoad);
        EXPECT_EQ(runs[0].steps[k].maxChannelChunks,
                  runs[1].steps[k].maxChannelChunks);
      }
      for (Property prop : {Property::Contention, Property::Congestion}) {
        const auto &a = runs[0].result(prop), &h = runs[1].result(prop);
        EXPECT_EQ(a.status, h.status);
        if (a.counterexample && h.counterexample) {
          EXPECT_EQ(a.counterexample->message, h.counterexample->message);
          EXPECT_EQ(a.counterexample->transfers, h.counterexample->transfers);
        }
      }
    }
  }
}

TEST(Simulate, Fig4_24_EcubeShiftOnHypercubeIsCongestionFree) {
  // Problem 4.22: with E-cube routing every circular q-shift on a hypercube
  // is congestion-free; on a ring the same shift loads a link q times.
  for (int64_t q = 1; q < 16; ++q) {
    SCOPED_TRACE("q = " + std::to_string(q));
    for (TopologyKind kind : {TopologyKind::Hypercube, TopologyKind::Ring}) {
      Builder b(CollectiveKind::Shift, kind,
                {c(kind == TopologyKind::Hypercube ? 4 : 16)});
      b.s.collective.shift = q;
      b.s.body.push_back(stepOf(
          Builder::rule(nullptr, mod(add(rank(), c(q)), size()), nullptr)));
      SimulationResult r = sim(b.s);
      expectHolds(r, Property::Correctness);
      if (kind == TopologyKind::Hypercube)
        expectAllHold(r);
      else
        EXPECT_EQ(r.maxLoad, std::min(q, 16 - q));
    }
  }
}

// --- Reductions
// ---------------------------------------------------------------

Builder ringReduce(bool commutative) {
  Builder b(CollectiveKind::Reduce, TopologyKind::Ring, {c(4)});
  b.s.collective.commutative = commutative;
  b.s.collective.op = commutative ? "sum" : "concat";
  return b;
}

TEST(Simulate, ReductionAlongRingHolds) {
  Builder b = ringReduce(true);
  b.step({{3, 2}}, TransferMode::Reduce);
  b.step({{2, 1}}, TransferMode::Reduce);
  b.step({{1, 0}}, TransferMode::Reduce);
  expectAllHold(sim(b.s));
}

TEST(Simulate, ReductionFoldingAContributionTwiceIsRefuted) {
  Builder b = ringReduce(true);
  b.step({{3, 2}}, TransferMode::Reduce);
  b.step({{2, 1}}, TransferMode::Reduce);
  b.step({{1, 0}}, TransferMode::Reduce);
  b.step({{3, 0}}, TransferMode::Reduce);
  SimulationResult r = sim(b.s);
  const auto &cex = cexOf(r, Property::Correctness);
  EXPECT_EQ(cex.rank, 0);
  EXPECT_EQ(cex.chunk, "chunk 0");
  EXPECT_EQ(cex.expected, "{0..3}");
  EXPECT_EQ(cex.actual, "{0..2, 3 (x2)}");
  EXPECT_EQ(cex.message, "chunk 0 at rank 0 holds rank 3's contribution twice");
}

TEST(Simulate, ReductionLosingAContributionIsRefuted) {
  Builder b = ringReduce(true);
  b.step({{2, 1}}, TransferMode::Reduce); // rank 3 never sends
  b.step({{1, 0}}, TransferMode::Reduce);
  SimulationResult r = sim(b.s);
  const auto &cex = cexOf(r, Property::Correctness);
  EXPECT_EQ(cex.expected, "{0..3}");
  EXPECT_EQ(cex.actual, "{0..2}");
  EXPECT_EQ(cex.message, "chunk 0 at rank 0 lacks rank 3's contribution");
}

TEST(Simulate, CopyInsteadOfReduceOverwritesAndLosesContributions) {
  Builder b = ringReduce(true);
  b.step({{3, 2}}, TransferMode::Reduce);
  b.step({{2, 1}}, TransferMode::Reduce);
  b.step({{1, 0}}, TransferMode::Copy); // replaces rank 0's own value
  const auto &cex = cexOf(sim(b.s), Property::Correctness);
  EXPECT_EQ(cex.actual, "{1..3}");
  EXPECT_EQ(cex.message, "chunk 0 at rank 0 lacks rank 0's contribution");
}

TEST(Simulate, NonCommutativeReductionMustFoldNeighbours) {
  Builder inOrder = ringReduce(false);
  inOrder.step({{3, 2}}, TransferMode::Reduce);
  inOrder.step({{2, 1}}, TransferMode::Reduce);
  inOrder.step({{1, 0}}, TransferMode::Reduce);
  expectAllHold(sim(inOrder.s));

  // Same contributions in the end, but rank 0 folds {2} into {0} first.
  Builder b = ringReduce(false);
  b.step({{2, 0}}, TransferMode::Reduce);
  b.step({{1, 0}}, TransferMode::Reduce);
  b.step({{3, 0}}, TransferMode::Reduce);
  SimulationResult r = sim(b.s, {}, PortModel::All);
  const auto &cex = cexOf(r, Property::Correctness);
  EXPECT_EQ(cex.step, 1);
  EXPECT_EQ(cex.actual, "{0..3}");
  EXPECT_EQ(cex.message, "chunk 0 at rank 0 combines contributions out of "
                         "rank order at step 1 ('concat' is not commutative)");

  b.s.collective.commutative = true;
  expectHolds(sim(b.s, {}, PortModel::All), Property::Correctness);
}

TEST(Simulate, Sec4_3_HypercubeAllreduceHoldsEvenNonCommutative) {
  Builder b(CollectiveKind::Allreduce, TopologyKind::Hypercube, {c(4)});
  b.s.collective.commutative = false;
  ExprRef i;
  auto l = b.loop("i", c(0), c(3), false, i);
  l->body.push_back(stepOf(Builder::rule(nullptr, bxor(rank(), shl(c(1), i)),
                                         nullptr, TransferMode::Reduce)));
  SimulationResult r = sim(b.s);
  expectAllHold(r);
  EXPECT_EQ(r.steps[3].maxMessageChunks, 1); // numbers add, do not concatenate
}

TEST(Simulate, Alg4_9_HypercubePrefixSumsWithResultBuffer) {
  // Figure 4.13: the outgoing message (buffer 1) absorbs every incoming
  // message; the result (buffer 0) only those from lower-labelled nodes.
  for (bool commutative : {true, false}) {
    Builder b(CollectiveKind::Scan, TopologyKind::Hypercube, {c(3)});
    b.s.collective.commutative = commutative;
    b.s.buffers.push_back(Buffer{"msg"});
    ExprRef i;
    auto l = b.loop("i", c(0), c(2), false, i);
    ExprRef partner = bxor(rank(), shl(c(1), i));
    l->body.push_back(stepOf(Builder::rule(
        nullptr, partner, nullptr, TransferMode::Reduce, /*from=*/1,
        {Delivery{1, nullptr},
         Delivery{0, bin(ExprOp::Lt, rank(), partner)}})));
    expectAllHold(sim(b.s));

    // Adding every message to the result computes the all-reduce instead.
    auto &rule = std::get<Step>(l->body[0]).rules[0];
    rule.into[1].when = nullptr;
    const auto &cex = cexOf(sim(b.s), Property::Correctness);
    EXPECT_EQ(cex.rank, 0);
    EXPECT_EQ(cex.expected, "{0}");
    EXPECT_EQ(cex.actual, "{0..7}");
    EXPECT_EQ(cex.message,
              "chunk 0 at rank 0 holds rank 1's contribution, which is not in "
              "{0}");
  }
}

// --- Causality, matching, contention
// ------------------------------------------

TEST(Simulate, SendingBeforeHoldingIsACausalityViolation) {
  Builder b(CollectiveKind::Broadcast, TopologyKind::Ring, {c(8)});
  b.step({{0, 1}, {2, 3}});
  SimulationResult r = sim(b.s);
  const auto &cex = cexOf(r, Property::Causality);
  EXPECT_EQ(cex.step, 1);
  EXPECT_EQ(cex.rank, 2);
  EXPECT_EQ(cex.transfers, (std::vector<TransferRef>{{2, 3}}));
  EXPECT_EQ(cex.message, "rank 2 sends to 3 at step 1 but holds nothing");
}

TEST(Simulate, SelectorNamingAChunkNotHeldIsACausalityViolation) {
  // Each rank tries to send its right neighbour's piece for the neighbour.
  Builder b(CollectiveKind::Alltoall, TopologyKind::Ring, {c(4)});
  ExprRef right = mod(add(rank(), c(1)), size());
  b.s.body.push_back(stepOf(Builder::rule(
      nullptr, right, land(eq(origin(), right), eq(dest(), right)))));
  const auto &cex = cexOf(sim(b.s), Property::Causality);
  EXPECT_EQ(cex.rank, 0);
  EXPECT_EQ(cex.chunk, "(origin 1, dest 1)");
  EXPECT_EQ(cex.message, "rank 0 sends chunk (origin 1, dest 1) to 1 at step 1 "
                         "but does not hold it");
}

// Allreduce on three ranks, all-port: 0 folds into 1, 1 into 2, and rank 2
// copies the total back. In the racy version rank 1 also copies its partial
// sum {0, 1} to rank 0 in the same step as rank 2's total: which one rank 0
// keeps depends on arrival order, though transfer order happens to end well.
Builder allreduceOnThree(bool racy) {
  Builder b(CollectiveKind::Allreduce, TopologyKind::Full, {c(3)});
  b.step({{0, 1}}, TransferMode::Reduce);
  b.step({{1, 2}}, TransferMode::Reduce);
  if (racy)
    b.step({{1, 0}, {2, 0}, {2, 1}});
  else
    b.step({{2, 0}, {2, 1}});
  return b;
}

TEST(Simulate, TwoCopiesOfDifferentValuesIntoOneChunkAreARace) {
  SimulationResult fine = sim(allreduceOnThree(false).s, {}, PortModel::All);
  EXPECT_TRUE(fine.allHold());

  SimulationResult racy = sim(allreduceOnThree(true).s, {}, PortModel::All);
  expectHolds(racy, Property::Contention);
  expectHolds(racy, Property::Causality);
  const auto &cex = cexOf(racy, Property::Correctness);
  EXPECT_EQ(cex.step, 3);
  EXPECT_EQ(cex.rank, 0);
  EXPECT_EQ(cex.transfers, (std::vector<TransferRef>{{1, 0}, {2, 0}}));
  EXPECT_EQ(cex.message, "ranks 1 and 2 copy different values of chunk 0 into "
                         "rank 0 at step 3: the result depends on which "
                         "arrives first");
}

TEST(Simulate, CopiesOfTheSameValueAndACopyRacingAFoldAreTold) {
  // Broadcast, all-port: ranks 0 and 1 both copy the root's block to 2.
  Builder same(CollectiveKind::Broadcast, TopologyKind::Full, {c(3)});
  same.step({{0, 1}});
  same.step({{0, 2}, {1, 2}});
  EXPECT_TRUE(sim(same.s, {}, PortModel::All).allHold());

  // Rank 1 copies into rank 0 what rank 2 folds into it.
  Builder mixed(CollectiveKind::Allreduce, TopologyKind::Full, {c(3)});
  mixed.step({{0, 1}}, TransferMode::Reduce);
  Step st;
  st.rules.push_back(Builder::rule(eq(rank(), c(1)), c(0), nullptr));
  st.rules.push_back(Builder::rule(eq(rank(), c(2)), c(0), nullptr,
                                   TransferMode::Reduce));
  mixed.s.body.push_back(std::move(st));
  const auto &cex =
      cexOf(sim(mixed.s, {}, PortModel::All), Property::Correctness);
  EXPECT_EQ(cex.step, 2);
  EXPECT_EQ(cex.message, "ranks 1 and 2 both deliver chunk 0 into rank 0 at "
                         "step 2, one a copy and one a fold: the result "
                         "depends on which arrives first");
}

TEST(Simulate, ASelectorThatNamesNoChunkIsWarnedAbout) {
  // Rank r sends r + 1 its piece, without the wrap-around in the selector:
  // rank 3's message to 0 selects dest 4, which no chunk has.
  Builder b(CollectiveKind::Alltoall, TopologyKind::Ring, {c(4)});
  ExprRef right = mod(add(rank(), c(1)), size());
  b.s.body.push_back(stepOf(Builder::rule(
      nullptr, right, land(eq(origin(), rank()), eq(dest(), add(rank(), c(1)))))));
  SimulationResult r = sim(b.s);
  expectHolds(r, Property::Causality);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].step, 1);
  EXPECT_EQ(r.warnings[0].rank, 3);
  EXPECT_EQ(r.warnings[0].transfers, (std::vector<TransferRef>{{3, 0}}));
  EXPECT_NE(r.warnings[0].message.find(
                "rank 3 sends 0 an empty message at step 1: `"),
            std::string::npos)
      << r.warnings[0].message;
  EXPECT_NE(r.warnings[0].message.find("` selects no chunk"),
            std::string::npos);

  // With the wrap-around every message carries its chunk.
  Builder fixed(CollectiveKind::Alltoall, TopologyKind::Ring, {c(4)});
  fixed.s.body.push_back(stepOf(Builder::rule(
      nullptr, right, land(eq(origin(), rank()), eq(dest(), right)))));
  EXPECT_TRUE(sim(fixed.s).warnings.empty());
}

TEST(Simulate, SelfSendAndOutOfRangePeerAreMatchingViolations) {
  Builder self(CollectiveKind::Broadcast, TopologyKind::Ring, {c(8)});
  self.step({{0, 0}});
  const auto &cex = cexOf(sim(self.s), Property::Matching);
  EXPECT_EQ(cex.rank, 0);
  EXPECT_EQ(cex.message, "rank 0 sends to itself");

  // r -> r + 1 without the wrap-around.
  Builder out(CollectiveKind::Allgather, TopologyKind::Ring, {c(8)});
  out.s.body.push_back(
      stepOf(Builder::rule(nullptr, add(rank(), c(1)), nullptr)));
  SimulationResult r = sim(out.s);
  const auto &cex2 = cexOf(r, Property::Matching);
  EXPECT_EQ(cex2.rank, 7);
  EXPECT_EQ(cex2.transfers, (std::vector<TransferRef>{{7, 8}}));
  EXPECT_EQ(cex2.message, "rank 7 sends to 8, outside ring(8)");
  expectHolds(r, Property::Congestion); // the other seven are fine
}

TEST(Simulate, TwoSendsFromOneRankContendUnderSinglePortOnly) {
  Builder b(CollectiveKind::Broadcast, TopologyKind::Ring, {c(8)});
  b.step({{0, 1}, {0, 7}});
  const auto &cex =
      cexOf(sim(b.s, {}, PortModel::Single), Property::Contention);
  EXPECT_EQ(cex.rank, 0);
  EXPECT_EQ(cex.transfers, (std::vector<TransferRef>{{0, 1}, {0, 7}}));
  EXPECT_EQ(cex.message, "rank 0 sends 2 messages at step 1 (single-port)");
  // All-port: the two leave on different links.
  expectHolds(sim(b.s, {}, PortModel::All), Property::Contention);

  // All-port still allows one message per outgoing link: 0->1 and 0->2 both
  // leave on 0->1.
  Builder same(CollectiveKind::Broadcast, TopologyKind::Ring, {c(8)});
  same.step({{0, 1}, {0, 2}});
  const auto &cex2 =
      cexOf(sim(same.s, {}, PortModel::All), Property::Contention);
  EXPECT_EQ(cex2.channel, std::make_pair(int64_t(0), int64_t(1)));
  EXPECT_EQ(cex2.message,
            "rank 0 sends 2 messages over 0->1 at step 1 (all-port)");
}

TEST(Simulate, TwoReceivesAtOneRankContend) {
  Builder b(CollectiveKind::Gather, TopologyKind::Ring, {c(4)});
  b.step({{1, 0}, {3, 0}});
  const auto &cex = cexOf(sim(b.s), Property::Contention);
  EXPECT_EQ(cex.rank, 0);
  EXPECT_EQ(cex.message, "rank 0 receives 2 messages at step 1 (single-port)");
}

TEST(Simulate, SelectorEvaluationErrorIsAnError) {
  Builder b(CollectiveKind::Alltoall, TopologyKind::Ring, {c(4)});
  b.s.body.push_back(stepOf(
      Builder::rule(nullptr, mod(add(rank(), c(1)), size()),
                    eq(bin(ExprOp::Div, c(1), sub(dest(), c(2))), c(0)))));
  auto r = simulate::simulate(b.s, {});
  ASSERT_FALSE(!!r);
  std::string text = llvm::toString(r.takeError());
  EXPECT_NE(text.find("selector `1 / (dest - 2) == 0`"), std::string::npos)
      << text;
  EXPECT_NE(text.find("(origin 0, dest 2)"), std::string::npos) << text;
}

} // namespace
