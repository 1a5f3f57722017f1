// The symbolic prover: ExprToSmt gives every operator evaluate()'s meaning;
// seed schedules are proved for whole parameter ranges; broken schedules get
// counterexamples that reproduce on the concrete topology; and on concrete
// topologies the prover's verdicts agree with brute-force enumeration.

#include "ExprOps.h"
#include "ir/Expr.h"
#include "ir/Schedule.h"
#include "prove/ExprToSmt.h"
#include "prove/MeshRanks.h"
#include "prove/Prover.h"
#include "prove/Width.h"
#include "smt/Solver.h"
#include "smt/Term.h"
#include "topology/Topology.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <functional>
#include <random>
#include <regex>
#include <set>

using namespace collc;
using namespace collc::ir;
using namespace collc::prove;
using verify::Property;
using verify::Status;

namespace {

ExprRef lit(int64_t v) { return Expr::constant(v); }
ExprRef bin(ExprOp op, ExprRef a, ExprRef b) {
  return Expr::binary(op, std::move(a), std::move(b));
}
ExprRef rankVar() { return Expr::var("r", SlotRank); }
ExprRef sizeVar() { return Expr::var("p", SlotSize); }

// --- ExprToSmt against evaluate() -------------------------------------------

const auto &binaryOps = test::binaryExprOps;
const auto &unaryOps = test::unaryExprOps;

/// Random expression trees over the slots x, y, z: a leaf with probability
/// 1/leafOneIn (or at depth 0), a constant from `constant` one time in
/// three, else a variable; inner nodes mostly binary operators.
class RandomExprs {
public:
  RandomExprs(std::mt19937_64 &rng, std::function<int64_t()> constant,
              unsigned leafOneIn)
      : rng(rng), constant(std::move(constant)), leafOneIn(leafOneIn) {}

  ExprRef expr(int depth) {
    if (depth == 0 || rng() % leafOneIn == 0) {
      if (rng() % 3 == 0)
        return lit(constant());
      unsigned slot = rng() % 3;
      return Expr::var(std::string(1, "xyz"[slot]), slot);
    }
    unsigned pick = rng() % 16;
    if (pick == 0)
      return Expr::unary(unaryOps[rng() % std::size(unaryOps)],
                         expr(depth - 1));
    if (pick == 1)
      return Expr::select(expr(depth - 1), expr(depth - 1), expr(depth - 1));
    return bin(binaryOps[rng() % std::size(binaryOps)], expr(depth - 1),
               expr(depth - 1));
  }

private:
  std::mt19937_64 &rng;
  std::function<int64_t()> constant;
  unsigned leafOneIn;
};

/// Values that exercise C's corner cases: small, shift-sized, the edges of
/// int64, and large.
int64_t edgyValue(std::mt19937_64 &rng) {
  switch (rng() % 6) {
  case 0:
    return static_cast<int64_t>(rng() % 21) - 10; // small
  case 1:
    return static_cast<int64_t>(rng() % 70); // shift-sized
  case 2: {
    const int64_t edges[] = {0,         1,           -1,        63,
                             64,        INT64_MIN,   INT64_MAX, INT64_MIN + 1,
                             1LL << 32, -(1LL << 31)};
    return edges[rng() % std::size(edges)];
  }
  default:
    return static_cast<int64_t>(rng()); // large
  }
}

// Z3's model evaluation of toSmt equals evaluate() wherever evaluate
// succeeds, and `defined` is exactly evaluate's success.
TEST(ExprToSmt, RandomExpressionsAgreeWithEvaluate) {
  smt::Context ctx;
  smt::Solver solver(ctx);
  std::mt19937_64 rng(20240601);
  auto value = [&] { return edgyValue(rng); };
  RandomExprs gen(rng, value, 5);
  constexpr int numExprs = 600, envsPerExpr = 8;
  int checked = 0, undefined = 0;
  for (int n = 0; n < numExprs; ++n) {
    ExprRef e = gen.expr(4);
    // One query fixes the variables of every environment; the model then
    // evaluates each environment's translation.
    std::vector<smt::Term> facts;
    std::vector<SmtExpr> translated;
    std::vector<std::vector<int64_t>> envs;
    for (int k = 0; k < envsPerExpr; ++k) {
      std::vector<int64_t> env = {value(), value(), value()};
      std::vector<smt::Term> slots;
      for (int64_t v : env) {
        slots.push_back(ctx.bitVecVar("v"));
        facts.push_back(slots.back() == v);
      }
      translated.push_back(toSmtChecked(*e, slots));
      envs.push_back(env);
    }
    smt::Result r = solver.check("fix_env", facts, 0);
    ASSERT_TRUE(r.isSat());
    for (int k = 0; k < envsPerExpr; ++k) {
      EvalResult want = evaluate(*e, envs[k]);
      ASSERT_EQ(r.value(translated[k].defined), want.ok() ? 1 : 0)
          << print(*e) << " at x=" << envs[k][0] << " y=" << envs[k][1]
          << " z=" << envs[k][2];
      if (want.ok()) {
        ASSERT_EQ(r.value(translated[k].value), want.value)
            << print(*e) << " at x=" << envs[k][0] << " y=" << envs[k][1]
            << " z=" << envs[k][2];
      } else {
        ++undefined;
      }
      ++checked;

      // With constant slots everything folds, without Z3, to the same value.
      std::vector<smt::Term> constants;
      for (int64_t v : envs[k])
        constants.push_back(ctx.bitVec(v));
      SmtExpr folded = toSmtChecked(*e, constants);
      ASSERT_TRUE(folded.value.constant() && folded.defined.constant())
          << print(*e);
      ASSERT_EQ(*folded.defined.constant(), want.ok() ? 1 : 0) << print(*e);
      if (want.ok()) {
        ASSERT_EQ(*folded.value.constant(), want.value) << print(*e);
      }
    }
  }
  EXPECT_EQ(checked, numExprs * envsPerExpr);
  // The generator must exercise both sides of definedness.
  EXPECT_GT(undefined, checked / 50);
  EXPECT_LT(undefined, checked / 2);
}

// Every form of `**`: constant exponent, base 2 and 2^k (shifts), base 0/1/-1,
// a general constant base and a fully symbolic one, over exponents 0..70.
TEST(ExprToSmt, PowerInEveryForm) {
  smt::Context ctx;
  smt::Solver solver(ctx);
  ExprRef x = Expr::var("x", 0), y = Expr::var("y", 1);
  std::vector<ExprRef> forms = {
      bin(ExprOp::Pow, x, y),       bin(ExprOp::Pow, x, lit(5)),
      bin(ExprOp::Pow, lit(2), y),  bin(ExprOp::Pow, lit(8), y),
      bin(ExprOp::Pow, lit(0), y),  bin(ExprOp::Pow, lit(1), y),
      bin(ExprOp::Pow, lit(-1), y), bin(ExprOp::Pow, lit(3), y),
      bin(ExprOp::Pow, lit(-6), y)};
  for (int64_t base : {int64_t(3), int64_t(-2), int64_t(1) << 33}) {
    std::vector<smt::Term> facts;
    std::vector<std::pair<int64_t, std::vector<SmtExpr>>> cases;
    for (int64_t exponent = -2; exponent <= 70; ++exponent) {
      smt::Term xs = ctx.bitVecVar("x"), ys = ctx.bitVecVar("y");
      facts.push_back(xs == base);
      facts.push_back(ys == exponent);
      std::vector<SmtExpr> out;
      for (const ExprRef &f : forms)
        out.push_back(toSmtChecked(*f, {xs, ys}));
      cases.push_back({exponent, out});
    }
    smt::Result r = solver.check("pow", facts, 0);
    ASSERT_TRUE(r.isSat());
    for (auto &[exponent, out] : cases)
      for (size_t i = 0; i < forms.size(); ++i) {
        EvalResult want = evaluate(*forms[i], {base, exponent});
        ASSERT_EQ(r.value(out[i].defined), want.ok() ? 1 : 0)
            << print(*forms[i]) << " x=" << base << " y=" << exponent;
        if (want.ok()) {
          ASSERT_EQ(r.value(out[i].value), want.value)
              << print(*forms[i]) << " x=" << base << " y=" << exponent;
        }
      }
  }
}

// `and`, `or` and select evaluate lazily; definedness must follow.
TEST(ExprToSmt, DefinednessShortCircuits) {
  smt::Context ctx;
  smt::Term x = ctx.bitVecVar("x");
  ExprRef xv = Expr::var("x", 0);
  ExprRef divides = bin(ExprOp::Eq, bin(ExprOp::Div, lit(10), xv), lit(5));
  ExprRef guarded = bin(ExprOp::And, bin(ExprOp::Ne, xv, lit(0)), divides);
  ExprRef unguarded = bin(ExprOp::And, divides, bin(ExprOp::Ne, xv, lit(0)));
  smt::Solver solver(ctx);
  // guarded is defined everywhere; unguarded is not, at x = 0.
  EXPECT_TRUE(
      solver.check("g", {!toSmtChecked(*guarded, {x}).defined}, 0).isUnsat());
  smt::Result r =
      solver.check("u", {!toSmtChecked(*unguarded, {x}).defined}, 0);
  ASSERT_TRUE(r.isSat());
  EXPECT_EQ(r.value(x), 0);
}

// --- schedules
// ----------------------------------------------------------------

/// A schedule with parameters (slots 5..) and loop variables after them.
struct Builder {
  Schedule s;
  Builder(TopologyKind kind, std::vector<ExprRef> dims) {
    s.name = "test";
    s.topology.kind = kind;
    s.topology.dims = std::move(dims);
    s.buffers = {{"result"}};
    s.slotNames = {"r", "p", "origin", "dest", "index"};
  }
  ExprRef param(const std::string &name) {
    unsigned slot = s.numSlots();
    s.slotNames.push_back(name);
    Parameter param;
    param.name = name;
    param.slot = slot;
    s.params.push_back(param);
    return Expr::var(name, slot);
  }
  /// A fresh loop variable slot (the loop itself is made by `loop`).
  ExprRef loopVar(const std::string &name) {
    unsigned slot = s.numSlots();
    s.slotNames.push_back(name);
    return Expr::var(name, slot);
  }
  static TransferRule rule(ExprRef peer, ExprRef guard = nullptr) {
    TransferRule t;
    t.peer = std::move(peer);
    t.guard = std::move(guard);
    t.into.push_back({0, nullptr});
    return t;
  }
  static Step step(std::vector<TransferRule> rules) {
    Step st;
    st.rules = std::move(rules);
    return st;
  }
  static std::shared_ptr<Loop> loop(const ExprRef &var, ExprRef lo, ExprRef hi,
                                    std::vector<BodyItem> body,
                                    bool reverse = false) {
    auto l = std::make_shared<Loop>();
    l->slot = var->slot;
    l->var = var->name;
    l->lo = std::move(lo);
    l->hi = std::move(hi);
    l->reverse = reverse;
    l->body = std::move(body);
    return l;
  }
};

/// Algorithm 4.10 (seed 000, section 4.5): all-to-all personalized on a
/// d-dimensional hypercube, `for j in 1 .. 2**d - 1 { step { r -> r ^ j } }`.
Schedule pairwiseExchange(TopologyKind kind, bool ringOfHypercubeSize) {
  if (kind == TopologyKind::Hypercube || ringOfHypercubeSize) {
    Builder b(kind, {});
    ExprRef d = b.param("d");
    b.s.topology.dims = {
        kind == TopologyKind::Hypercube ? d : bin(ExprOp::Pow, lit(2), d)};
    ExprRef j = b.loopVar("j");
    b.s.body.push_back(Builder::loop(
        j, lit(1), bin(ExprOp::Sub, bin(ExprOp::Pow, lit(2), d), lit(1)),
        {Builder::step({Builder::rule(bin(ExprOp::BitXor, rankVar(), j))})}));
    return b.s;
  }
  Builder b(kind, {lit(8)});
  ExprRef j = b.loopVar("j");
  b.s.body.push_back(Builder::loop(
      j, lit(1), bin(ExprOp::Sub, sizeVar(), lit(1)),
      {Builder::step({Builder::rule(bin(ExprOp::BitXor, rankVar(), j))})}));
  return b.s;
}

/// Algorithm 4.1 (seed 000, section 4.1): one-to-all broadcast from node 0,
/// `for i in d-1 .. 0 { step { r -> r ^ (1 << i) when r & ((2 << i) - 1) == 0 }
/// }`.
Schedule hypercubeBroadcast() {
  Builder b(TopologyKind::Hypercube, {});
  ExprRef d = b.param("d");
  b.s.topology.dims = {d};
  b.s.collective.kind = CollectiveKind::Broadcast;
  ExprRef i = b.loopVar("i");
  ExprRef guard =
      bin(ExprOp::Eq,
          bin(ExprOp::BitAnd, rankVar(),
              bin(ExprOp::Sub, bin(ExprOp::Shl, lit(2), i), lit(1))),
          lit(0));
  ExprRef peer = bin(ExprOp::BitXor, rankVar(), bin(ExprOp::Shl, lit(1), i));
  b.s.body.push_back(
      Builder::loop(i, lit(0), bin(ExprOp::Sub, d, lit(1)),
                    {Builder::step({Builder::rule(peer, guard)})},
                    /*reverse=*/true));
  return b.s;
}

Prover makeProver(const Schedule &s, std::vector<ParamRange> ranges,
                  PortModel ports = PortModel::Single,
                  unsigned timeoutMs = 60000,
                  unsigned splitAfterWork = 4000000) {
  ProverOptions options;
  options.ranges = std::move(ranges);
  options.ports = ports;
  options.timeoutMs = timeoutMs;
  options.splitAfterWork = splitAfterWork;
  // PROVE_VERBOSE=1 prints every query and its time.
  if (getenv("PROVE_VERBOSE"))
    options.verbose = &llvm::errs();
  auto prover = Prover::create(s, options);
  EXPECT_TRUE(static_cast<bool>(prover)) << llvm::toString(prover.takeError());
  return std::move(*prover);
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

std::string describe(const verify::PropertyResult &r) {
  std::string s = std::string(verify::statusName(r.status)) + " " + r.detail;
  if (r.counterexample)
    s += ": " + r.counterexample->message;
  return s;
}

// --- seed algorithms, proved for every size in the range ---------------------

TEST(Prover, Alg4_10_PairwiseExchangeOnHypercubeIsProvedForDim1To16) {
  Schedule s = pairwiseExchange(TopologyKind::Hypercube, false);
  Prover prover = makeProver(s, {{"d", 1, 16}});
  auto start = std::chrono::steady_clock::now();
  for (Property property :
       {Property::Matching, Property::Contention, Property::Congestion}) {
    auto t = std::chrono::steady_clock::now();
    verify::PropertyResult r = prover.prove(property);
    std::printf("  Algorithm 4.10, d in 1..16, %s: %s in %.3f s\n",
                verify::propertyName(property), verify::statusName(r.status),
                secondsSince(t));
    EXPECT_EQ(r.status, Status::Proved)
        << verify::propertyName(property) << ": " << describe(r);
    EXPECT_EQ(r.method, "z3");
  }
  std::printf("  Algorithm 4.10 total: %.3f s\n", secondsSince(start));
  // One query per property: the loop's single step covers every j and d.
  const auto &stats = prover.solver().stats();
  for (const char *name : {"matching", "contention", "congestion"})
    EXPECT_EQ(stats.find(name)->second.queries, 1u) << name;

  // All-port: no two messages leave or enter a node over one channel.
  Prover allPort = makeProver(s, {{"d", 1, 16}}, PortModel::All);
  verify::PropertyResult r = allPort.prove(Property::Contention);
  EXPECT_EQ(r.status, Status::Proved) << describe(r);
}

TEST(Prover, Alg4_1_HypercubeBroadcastIsProvedForDim1To16) {
  Schedule s = hypercubeBroadcast();
  Prover prover = makeProver(s, {{"d", 1, 16}});
  auto start = std::chrono::steady_clock::now();
  for (const verify::PropertyResult &r : prover.proveAll())
    EXPECT_EQ(r.status, Status::Proved)
        << verify::propertyName(r.property) << ": " << describe(r);
  std::printf("  Algorithm 4.1, d in 1..16, three properties: %.3f s\n",
              secondsSince(start));
}

// --- named senders --------------------------------------------------------

/// The rule of a schedule with one step: the first rule of its first step,
/// inside any loops.
const TransferRule &onlyRule(const Schedule &s) {
  const BodyItem *item = &s.body.front();
  while (const auto *loop = std::get_if<std::shared_ptr<Loop>>(item))
    item = &(*loop)->body.front();
  return std::get<Step>(*item).rules.front();
}

// Emitted code evaluates the named senders at the receiving rank instead of
// scanning every rank: Algorithm 4.1's receiver in step i names r ^ (1 << i).
TEST(Prover, NamesTheSendersOfAlg4_1) {
  Schedule s = hypercubeBroadcast();
  Prover prover = makeProver(s, {{"d", 1, 16}});
  auto named = prover.namedSenders();
  const TransferRule &rule = onlyRule(s);
  ASSERT_EQ(named.count(&rule), 1u);
  const std::vector<ExprRef> &candidates = named.at(&rule);
  // d = 3, i = 1: rank 2 hears from rank 0, and rank 6 from rank 4.
  std::vector<int64_t> env(s.numSlots(), 0);
  env[SlotSize] = 8;
  env[s.params[0].slot] = 3;
  env[s.numSlots() - 1] = 1;
  for (auto [receiver, sender] : {std::pair<int64_t, int64_t>{2, 0}, {6, 4}}) {
    env[SlotRank] = receiver;
    EXPECT_TRUE(llvm::any_of(candidates,
                             [&](const ExprRef &c) {
                               EvalResult v = evaluate(*c, env);
                               return v.ok() && v.value == sender;
                             }))
        << "receiver " << receiver;
  }
}

// ir::sendersOf inverts (r + c) % p assuming r + c < 2p. With c = 5 on a
// ring of 4 that fails (rank 3 sends to (3 + 5) % 4 = 0, which neither
// 0 - 5 nor 0 - 5 + 4 names), so the receivers must scan; from 5 ranks on
// the inversion is exact.
TEST(Prover, SendersAreNamedOnlyWhereTheCandidatesMissNone) {
  for (auto [lo, named] : {std::pair<int64_t, bool>{4, false}, {5, true}}) {
    Builder b(TopologyKind::Ring, {});
    ExprRef n = b.param("n");
    b.s.topology.dims = {n};
    b.s.collective.kind = CollectiveKind::Shift;
    b.s.collective.shift = 5;
    b.s.body.push_back(Builder::step({Builder::rule(
        bin(ExprOp::Mod, bin(ExprOp::Add, rankVar(), lit(5)), sizeVar()))}));
    Prover prover = makeProver(b.s, {{"n", lo, 64}});
    EXPECT_EQ(prover.namedSenders().count(&onlyRule(b.s)), named ? 1u : 0u)
        << "ring of " << lo << " to 64";
  }
  // A peer the inversion cannot solve (r appears twice) has no candidates.
  Builder b(TopologyKind::Ring, {});
  ExprRef n = b.param("n");
  b.s.topology.dims = {n};
  b.s.collective.kind = CollectiveKind::Broadcast;
  b.s.body.push_back(Builder::step({Builder::rule(
      bin(ExprOp::Mod, bin(ExprOp::Add, rankVar(), rankVar()), sizeVar()),
      bin(ExprOp::Eq, rankVar(), lit(1)))}));
  Prover prover = makeProver(b.s, {{"n", 3, 64}});
  // The guard r == 1 names the one sender, though the peer is not inverted.
  EXPECT_EQ(prover.namedSenders().count(&onlyRule(b.s)), 1u);
}

// --- counterexamples
// ----------------------------------------------------------

/// Checks a congestion counterexample against the concrete topology: the
/// channel is on the route of every transfer listed, and there are `load`
/// of them, at least two.
void expectSharedChannel(const verify::Counterexample &cex,
                         const Topology &topo) {
  ASSERT_TRUE(cex.channel.has_value());
  Channel channel{cex.channel->first, cex.channel->second};
  EXPECT_TRUE(topo.hasChannel(channel.from, channel.to));
  ASSERT_GE(cex.transfers.size(), 2u);
  EXPECT_EQ(cex.load, static_cast<int64_t>(cex.transfers.size()));
  for (const verify::TransferRef &t : cex.transfers) {
    llvm::SmallVector<Channel, 16> route;
    topo.route(t.src, t.dst, route);
    EXPECT_TRUE(llvm::is_contained(route, channel))
        << t.src << "->" << t.dst << " avoids " << channel.from << "->"
        << channel.to;
  }
}

TEST(Prover, PairwiseExchangeOnRing8Congests) {
  Schedule s = pairwiseExchange(TopologyKind::Ring, false);
  Prover prover = makeProver(s, {});
  verify::PropertyResult r = prover.prove(Property::Congestion);
  ASSERT_EQ(r.status, Status::Counterexample) << describe(r);
  const verify::Counterexample &cex = *r.counterexample;
  EXPECT_EQ(cex.p, 8);
  ASSERT_EQ(cex.loopVars.size(), 1u);
  int64_t j = cex.loopVars[0].second;
  EXPECT_GE(j, 2);        // j = 1 pairs neighbours and never congests
  EXPECT_EQ(cex.step, j); // the loop starts at 1, one step per j
  EXPECT_GE(r.maxLoad, 2);
  auto ring = Topology::make(TopologyKind::Ring, {8});
  ASSERT_TRUE(static_cast<bool>(ring));
  expectSharedChannel(cex, *ring);
  for (const verify::TransferRef &t : cex.transfers)
    EXPECT_EQ(t.dst, t.src ^ j);
  EXPECT_NE(cex.message.find("carries"), std::string::npos) << cex.message;
  // Matching and single-port contention still hold.
  EXPECT_EQ(prover.prove(Property::Matching).status, Status::Proved);
  EXPECT_EQ(prover.prove(Property::Contention).status, Status::Proved);
}

TEST(Prover, PairwiseExchangeOnRingOfPowerOfTwoCongests) {
  Schedule s = pairwiseExchange(TopologyKind::Ring, true);
  Prover prover = makeProver(s, {{"d", 1, 4}});
  verify::PropertyResult r = prover.prove(Property::Congestion);
  ASSERT_EQ(r.status, Status::Counterexample) << describe(r);
  const verify::Counterexample &cex = *r.counterexample;
  ASSERT_EQ(cex.params.size(), 1u);
  int64_t d = cex.params[0].second;
  EXPECT_GE(d, 2); // a ring of 2 cannot congest
  EXPECT_EQ(cex.p, int64_t(1) << d);
  EXPECT_EQ(cex.step, cex.loopVars.at(0).second);
  auto ring = Topology::make(TopologyKind::Ring, {cex.p});
  ASSERT_TRUE(static_cast<bool>(ring));
  expectSharedChannel(cex, *ring);
}

TEST(Prover, SendingToRankPlusOneWithoutModBreaksMatching) {
  Builder b(TopologyKind::Ring, {});
  ExprRef n = b.param("n");
  b.s.topology.dims = {n};
  b.s.body.push_back(
      Builder::step({Builder::rule(bin(ExprOp::Add, rankVar(), lit(1)))}));
  Prover prover = makeProver(b.s, {{"n", 2, 64}});
  verify::PropertyResult r = prover.prove(Property::Matching);
  ASSERT_EQ(r.status, Status::Counterexample) << describe(r);
  const verify::Counterexample &cex = *r.counterexample;
  EXPECT_EQ(cex.step, 1);
  EXPECT_EQ(cex.p, cex.params.at(0).second);
  ASSERT_TRUE(cex.rank.has_value());
  EXPECT_EQ(*cex.rank, cex.p - 1);
  ASSERT_EQ(cex.transfers.size(), 1u);
  EXPECT_EQ(cex.transfers[0], (verify::TransferRef{cex.p - 1, cex.p}));
  EXPECT_NE(cex.message.find("outside 0.."), std::string::npos) << cex.message;

  // With the modulus it is matched for every n in range.
  Builder fixed(TopologyKind::Ring, {});
  ExprRef m = fixed.param("n");
  fixed.s.topology.dims = {m};
  fixed.s.body.push_back(Builder::step({Builder::rule(
      bin(ExprOp::Mod, bin(ExprOp::Add, rankVar(), lit(1)), sizeVar()))}));
  // (Congestion over a symbolic ring size is proved too, but its 64-bit
  // remainders by a symbolic n take Z3 half a minute.)
  Prover ok = makeProver(fixed.s, {{"n", 2, 64}});
  for (Property property : {Property::Matching, Property::Contention}) {
    verify::PropertyResult res = ok.prove(property);
    EXPECT_EQ(res.status, Status::Proved)
        << verify::propertyName(property) << ": " << describe(res);
  }
}

TEST(Prover, UndefinedPeerBreaksMatching) {
  // r -> (r + 1 + 0 * (8 / (r - 3))) % p: a fine peer everywhere, but
  // undefined at rank 3. Folding `0 * x` must not drop x's obligation.
  Builder b(TopologyKind::Full, {lit(8)});
  ExprRef undefinedAt3 =
      bin(ExprOp::Div, lit(8), bin(ExprOp::Sub, rankVar(), lit(3)));
  b.s.body.push_back(Builder::step(
      {Builder::rule(bin(ExprOp::Mod,
                         bin(ExprOp::Add, bin(ExprOp::Add, rankVar(), lit(1)),
                             bin(ExprOp::Mul, lit(0), undefinedAt3)),
                         sizeVar()))}));
  Prover prover = makeProver(b.s, {});
  verify::PropertyResult r = prover.prove(Property::Matching);
  ASSERT_EQ(r.status, Status::Counterexample) << describe(r);
  EXPECT_EQ(r.counterexample->rank, 3);
  EXPECT_NE(r.counterexample->message.find("division by zero"),
            std::string::npos)
      << r.counterexample->message;
}

TEST(Prover, SelfSendBreaksMatching) {
  // r -> r ^ (r & 1): odd ranks send to the even neighbour, even to itself.
  Builder b(TopologyKind::Hypercube, {lit(3)});
  b.s.body.push_back(Builder::step({Builder::rule(
      bin(ExprOp::BitXor, rankVar(), bin(ExprOp::BitAnd, rankVar(), lit(1))),
      bin(ExprOp::Lt, rankVar(), lit(5)))}));
  Prover prover = makeProver(b.s, {});
  verify::PropertyResult r = prover.prove(Property::Matching);
  ASSERT_EQ(r.status, Status::Counterexample) << describe(r);
  ASSERT_TRUE(r.counterexample->rank.has_value());
  int64_t rank = *r.counterexample->rank;
  EXPECT_EQ(rank % 2, 0);
  EXPECT_LT(rank, 5);
  EXPECT_NE(r.counterexample->message.find("itself"), std::string::npos);
}

// Two sends per rank in one step: single-port contention; all-port only
// where both leave over the same channel.
TEST(Prover, PortModelsDecideContention) {
  auto twoRules = [](int64_t second) {
    Builder b(TopologyKind::Ring, {lit(8)});
    auto shift = [](int64_t k) {
      return bin(ExprOp::Mod, bin(ExprOp::Add, rankVar(), lit(k)), sizeVar());
    };
    b.s.body.push_back(
        Builder::step({Builder::rule(shift(1)), Builder::rule(shift(second))}));
    return b.s;
  };
  Schedule opposite = twoRules(7), sameWay = twoRules(2);

  verify::PropertyResult single =
      makeProver(opposite, {}).prove(Property::Contention);
  ASSERT_EQ(single.status, Status::Counterexample) << describe(single);
  EXPECT_EQ(single.counterexample->load, 2);
  EXPECT_EQ(single.counterexample->transfers.size(), 2u);
  EXPECT_NE(single.counterexample->message.find("single-port"),
            std::string::npos);

  EXPECT_EQ(makeProver(opposite, {}, PortModel::All)
                .prove(Property::Contention)
                .status,
            Status::Proved);
  EXPECT_EQ(makeProver(opposite, {}).prove(Property::Congestion).status,
            Status::Proved);

  verify::PropertyResult all =
      makeProver(sameWay, {}, PortModel::All).prove(Property::Contention);
  ASSERT_EQ(all.status, Status::Counterexample) << describe(all);
  ASSERT_TRUE(all.counterexample->channel.has_value());
  // Either two messages leave `rank` over its forward channel, or two enter
  // it over the channel from its predecessor (r + 1 from r - 1, r + 2 from
  // r - 2 via r - 1).
  int64_t rank = *all.counterexample->rank;
  auto channel = *all.counterexample->channel;
  EXPECT_TRUE(channel == std::make_pair(rank, (rank + 1) % 8) ||
              channel == std::make_pair((rank + 7) % 8, rank))
      << channel.first << "->" << channel.second << " at rank " << rank;
  EXPECT_EQ(all.counterexample->load, 2);
}

// Sends to a neighbour cross one channel each (routes are shortest), so
// congestion and all-port contention ask only whether two sends are the same
// pair of ranks; the routes' coordinate circuits, which made these queries
// time out on tori up to 64 x 64, are not built.
TEST(Prover, SendsToNeighboursShareAChannelOnlyAsTheSamePair) {
  auto torus = [](bool twice) {
    Builder b(TopologyKind::Torus, {});
    ExprRef a = b.param("a"), w = b.param("b");
    b.s.topology.dims = {a, w};
    // The next rank round the row: r - r % b + (r % b + 1) % b.
    ExprRef col = bin(ExprOp::Mod, rankVar(), w);
    ExprRef next = bin(ExprOp::Add, bin(ExprOp::Sub, rankVar(), col),
                       bin(ExprOp::Mod, bin(ExprOp::Add, col, lit(1)), w));
    std::vector<TransferRule> rules{Builder::rule(next)};
    if (twice)
      rules.push_back(Builder::rule(next));
    b.s.body.push_back(Builder::step(std::move(rules)));
    return b.s;
  };
  std::vector<ParamRange> ranges{{"a", 3, 64}, {"b", 3, 64}};
  std::string verbose;
  llvm::raw_string_ostream os(verbose);
  ProverOptions options;
  options.ranges = ranges;
  options.verbose = &os;
  Schedule once = torus(false), twice = torus(true);
  auto prover = Prover::create(once, options);
  ASSERT_TRUE(static_cast<bool>(prover)) << llvm::toString(prover.takeError());
  verify::PropertyResult r = prover->prove(Property::Congestion);
  EXPECT_EQ(r.status, Status::Proved) << describe(r);
  os.flush();
  EXPECT_NE(verbose.find("query neighbours: unsat"), std::string::npos)
      << verbose;

  // The same message twice: both cross the channel to the next rank.
  for (PortModel ports : {PortModel::Single, PortModel::All}) {
    Property property =
        ports == PortModel::All ? Property::Contention : Property::Congestion;
    verify::PropertyResult same =
        makeProver(twice, ranges, ports).prove(property);
    ASSERT_EQ(same.status, Status::Counterexample) << describe(same);
    ASSERT_TRUE(same.counterexample->channel.has_value());
    auto [from, to] = *same.counterexample->channel;
    int64_t b = 0;
    for (const auto &[name, value] : same.counterexample->params)
      if (name == "b")
        b = value;
    ASSERT_GE(b, 3);
    EXPECT_EQ(to, from - from % b + (from % b + 1) % b);
    EXPECT_EQ(same.counterexample->load, 2);
  }
}

// A 1 ms budget on a query that bit-blasts 64-bit shifts and xors cannot
// finish: the result is Unknown with the timeout, never Proved.
TEST(Prover, TimeoutIsUnknown) {
  // Ring congestion for every ring up to 4096 ranks, sends two hops long:
  // remainders by a symbolic size, far more than a millisecond's work.
  Builder b(TopologyKind::Ring, {});
  ExprRef p = b.param("p");
  b.s.topology.dims = {p};
  b.s.body.push_back(Builder::step({Builder::rule(
      bin(ExprOp::Mod, bin(ExprOp::Add, rankVar(), lit(2)), sizeVar()))}));
  Prover prover = makeProver(b.s, {{"p", 2, 4096}}, PortModel::Single, 1);
  verify::PropertyResult r = prover.prove(Property::Congestion);
  EXPECT_EQ(r.status, Status::Unknown) << describe(r);
  EXPECT_EQ(r.detail.rfind("timeout after ", 0), 0u) << r.detail;
}

TEST(Prover, MissingParameterRangeIsAnError) {
  Schedule s = hypercubeBroadcast();
  auto prover = Prover::create(s, {});
  ASSERT_FALSE(static_cast<bool>(prover));
  EXPECT_NE(llvm::toString(prover.takeError()).find("'d'"), std::string::npos);
  auto empty = Prover::create(s, {{{"d", 5, 4}}});
  ASSERT_FALSE(static_cast<bool>(empty));
  llvm::consumeError(empty.takeError());
}

// A balanced tree of 2^h leaves is routed in closed form: one query covers
// every height. Pairs under one switch (r ^ 1) never share a channel; pairs
// two apart (r ^ 2) share the links of the switch above them.
TEST(Prover, TreeFamilyIsRoutedForEveryHeight) {
  for (int64_t apart : {1, 2}) {
    Builder b(TopologyKind::Tree, {});
    ExprRef h = b.param("h");
    b.s.topology.dims = {bin(ExprOp::Shl, lit(1), h)};
    b.s.body.push_back(Builder::step(
        {Builder::rule(bin(ExprOp::BitXor, rankVar(), lit(apart)))}));
    Prover prover = makeProver(b.s, {{"h", 2, 12}});
    verify::PropertyResult r = prover.prove(Property::Congestion);
    if (apart == 1) {
      EXPECT_EQ(r.status, Status::Proved) << describe(r);
      continue;
    }
    ASSERT_EQ(r.status, Status::Counterexample) << describe(r);
    const verify::Counterexample &cex = *r.counterexample;
    llvm::Expected<Topology> topo = Topology::make(TopologyKind::Tree, {cex.p});
    ASSERT_TRUE(static_cast<bool>(topo)) << llvm::toString(topo.takeError());
    expectSharedChannel(cex, *topo);
    // Between switches: nodes p and above.
    EXPECT_GE(cex.channel->first, cex.p);
    EXPECT_GE(cex.channel->second, cex.p);
  }
}

// --- prover against brute force on concrete topologies -----------------------

struct Pattern {
  const char *name;
  std::function<ExprRef(ExprRef j)> peer;
  std::function<ExprRef(ExprRef j)> guard; // may return null
};

/// The verdict by enumerating every step, sender and route.
Status bruteForce(const Schedule &s, const Topology &topo, Property property,
                  PortModel ports) {
  int64_t p = topo.numRanks();
  std::vector<int64_t> env(s.numSlots(), 0);
  env[SlotSize] = p;
  const Loop &loop = *std::get<std::shared_ptr<Loop>>(s.body[0]);
  const Step &step = std::get<Step>(loop.body[0]);
  int64_t lo = evaluate(*loop.lo, env).value,
          hi = evaluate(*loop.hi, env).value;
  for (int64_t j = lo; j <= hi; ++j) {
    env[loop.slot] = j;
    std::map<Channel, int> load, first, last;
    std::map<int64_t, int> sent, received;
    for (const TransferRule &rule : step.rules)
      for (int64_t r = 0; r < p; ++r) {
        env[SlotRank] = r;
        if (rule.guard && evaluate(*rule.guard, env).value == 0)
          continue;
        EvalResult peer = evaluate(*rule.peer, env);
        if (!peer.ok() || peer.value < 0 || peer.value >= p || peer.value == r)
          continue;
        llvm::SmallVector<Channel, 16> route;
        topo.route(r, peer.value, route);
        for (const Channel &c : route)
          ++load[c];
        ++first[route.front()];
        ++last[route.back()];
        ++sent[r];
        ++received[peer.value];
      }
    auto over = [](const auto &counts) {
      return llvm::any_of(counts, [](const auto &kv) { return kv.second > 1; });
    };
    bool bad = property == Property::Congestion ? over(load)
               : ports == PortModel::Single     ? over(sent) || over(received)
                                                : over(first) || over(last);
    if (bad)
      return Status::Counterexample;
  }
  return Status::Proved;
}

TEST(Prover, AgreesWithBruteForceOnConcreteTopologies) {
  std::vector<std::pair<TopologyKind, std::vector<int64_t>>> topologies = {
      {TopologyKind::Ring, {8}},      {TopologyKind::Linear, {6}},
      {TopologyKind::Mesh, {3, 4}},   {TopologyKind::Torus, {4, 4}},
      {TopologyKind::Hypercube, {3}}, {TopologyKind::Tree, {8}},
      {TopologyKind::Full, {6}},      {TopologyKind::Graph, {6}}};
  std::vector<std::pair<int64_t, int64_t>> graphEdges = {
      {0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}, {0, 3}};
  auto mod = [](ExprRef a) { return bin(ExprOp::Mod, a, sizeVar()); };
  std::vector<Pattern> patterns = {
      {"xor", [](ExprRef j) { return bin(ExprOp::BitXor, rankVar(), j); },
       nullptr},
      {"shift", [&](ExprRef j) { return mod(bin(ExprOp::Add, rankVar(), j)); },
       nullptr},
      {"unshift",
       [&](ExprRef j) {
         return mod(
             bin(ExprOp::Add, bin(ExprOp::Sub, rankVar(), j), sizeVar()));
       },
       nullptr},
      {"mirror",
       [](ExprRef) {
         return bin(ExprOp::Sub, bin(ExprOp::Sub, sizeVar(), lit(1)),
                    rankVar());
       },
       nullptr},
      {"even-shift",
       [&](ExprRef j) { return mod(bin(ExprOp::Add, rankVar(), j)); },
       [](ExprRef) {
         return bin(ExprOp::Eq, bin(ExprOp::BitAnd, rankVar(), lit(1)), lit(0));
       }},
      {"doubling",
       [](ExprRef j) {
         return bin(ExprOp::Add, rankVar(), bin(ExprOp::Shl, lit(1), j));
       },
       [](ExprRef j) {
         return bin(ExprOp::Lt, rankVar(), bin(ExprOp::Shl, lit(1), j));
       }}};
  int proved = 0, refuted = 0;
  for (auto &[kind, dims] : topologies) {
    auto topo =
        Topology::make(kind, dims,
                       kind == TopologyKind::Graph
                           ? llvm::ArrayRef(graphEdges)
                           : llvm::ArrayRef<std::pair<int64_t, int64_t>>());
    ASSERT_TRUE(static_cast<bool>(topo)) << llvm::toString(topo.takeError());
    for (const Pattern &pattern : patterns) {
      std::vector<ExprRef> dimExprs;
      for (int64_t d : dims)
        dimExprs.push_back(lit(d));
      Builder b(kind, dimExprs);
      if (kind == TopologyKind::Graph)
        b.s.topology.edges = graphEdges;
      ExprRef j = b.loopVar("j");
      ExprRef hi = pattern.name == std::string("doubling")
                       ? lit(2)
                       : bin(ExprOp::Sub, sizeVar(), lit(1));
      b.s.body.push_back(Builder::loop(
          j, lit(pattern.name == std::string("doubling") ? 0 : 1), hi,
          {Builder::step({Builder::rule(
              pattern.peer(j), pattern.guard ? pattern.guard(j) : nullptr)})}));
      for (auto [property, ports] :
           {std::pair(Property::Congestion, PortModel::Single),
            std::pair(Property::Contention, PortModel::Single),
            std::pair(Property::Contention, PortModel::All)}) {
        Status want = bruteForce(b.s, *topo, property, ports);
        // Whole queries, and queries split at once by the loop variable's
        // value and the route's legs: the same verdicts.
        for (unsigned splitAfterWork : {4000000u, 0u}) {
          Prover prover = makeProver(b.s, {}, ports, 60000, splitAfterWork);
          verify::PropertyResult r = prover.prove(property);
          EXPECT_EQ(r.status, want)
              << topo->describe() << " " << pattern.name << " "
              << verify::propertyName(property)
              << (ports == PortModel::All ? " all-port" : "")
              << (splitAfterWork ? "" : " split") << ": " << describe(r);
          if (r.status == Status::Counterexample &&
              property == Property::Congestion)
            expectSharedChannel(*r.counterexample, *topo);
          (r.status == Status::Proved ? proved : refuted)++;
        }
      }
    }
  }
  // Both verdicts must be exercised.
  EXPECT_GT(proved, 20);
  EXPECT_GT(refuted, 20);
}

// --- narrow bit-vectors (prove/Width.h)
// ---------------------------------------

/// The widths of the queries a prover's verbose output names ("N-bit").
std::vector<unsigned> queryWidths(const std::string &verbose) {
  std::vector<unsigned> widths;
  std::regex bits("([0-9]+)-bit");
  for (auto it = std::sregex_iterator(verbose.begin(), verbose.end(), bits);
       it != std::sregex_iterator(); ++it)
    widths.push_back(static_cast<unsigned>(std::stoul((*it)[1].str())));
  return widths;
}

// A shift's amount on a torus of a x b is made from digits (q / (a * b),
// then a row and a column) so that q % b and q / b % a need no divider.
// The digits must be those bvsdiv and bvsrem give wherever `exact` holds,
// and every amount in range must have them: a number the variable cannot
// take is an amount the proof would never try.
TEST(MeshRanks, AmountDividesAsZ3DoesAndTakesEveryValue) {
  smt::Context ctx;
  smt::Solver solver(ctx);
  const unsigned w = 10;
  smt::Term a = ctx.bitVecVar("a", w), b = ctx.bitVecVar("b", w);
  std::vector<smt::Term> extents{a, b};
  prove::DigitNumber q = prove::numberVariable(ctx, "q", w, extents);
  std::vector<smt::Term> range{q.exact,          sge(a, 1),  sle(a, 12),
                               sge(b, 1),        sle(b, 12), sge(q.value, 0),
                               sle(q.value, 500)};
  struct Case {
    std::string text;
    smt::Term mine;
    std::function<smt::Term(const smt::Term &)> z3;
  };
  std::vector<Case> cases = {
      {"q % b", srem(q.value, b), [&](auto &x) { return srem(x, b); }},
      {"q / b", sdiv(q.value, b), [&](auto &x) { return sdiv(x, b); }},
      {"q / b % a", srem(sdiv(q.value, b), a),
       [&](auto &x) { return srem(sdiv(x, b), a); }},
      {"q % (a * b)", srem(q.value, a * b),
       [&](auto &x) { return srem(x, a * b); }},
      {"q / (a * b)", sdiv(q.value, a * b),
       [&](auto &x) { return sdiv(x, a * b); }},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(c.mine.print().find("bvsdiv"), std::string::npos);
    EXPECT_EQ(c.mine.print().find("bvsrem"), std::string::npos);
    smt::Term same = ctx.bitVecVar("same", w);
    std::vector<smt::Term> query = range;
    query.push_back(same == q.value);
    query.push_back(c.z3(same) != c.mine);
    smt::Result r = solver.check("amount", query, 0);
    EXPECT_TRUE(r.isUnsat())
        << (r.isSat() ? "q = " + std::to_string(r.value(q.value)) +
                            ", a = " + std::to_string(r.value(a)) +
                            ", b = " + std::to_string(r.value(b))
                      : r.reason());
  }
  // Every amount in range, on tori small and large for the width.
  for (int64_t rows : {1, 3, 12})
    for (int64_t cols : {1, 5, 12})
      for (int64_t v : {0, 1, 11, 144, 300, 500}) {
        std::vector<smt::Term> query = range;
        query.push_back(a == rows);
        query.push_back(b == cols);
        query.push_back(q.value == v);
        EXPECT_TRUE(solver.check("taken", query, 0).isSat())
            << v << " on " << rows << " x " << cols;
      }
}

TEST(Width, RingArithmeticFitsEightBitsAndOverflowNeeds64) {
  WidthAnalysis w(NumFixedSlots + 1);
  w.setSlot(SlotSize, {2, 64});
  w.setSlot(SlotRank, {0, 63});
  ExprRef k = Expr::var("k", NumFixedSlots);
  w.setSlot(NumFixedSlots, {0, 62});
  // Algorithm 4.4's chunk selector, (r - k + p) % p: r - k + p reaches 127.
  Interval i = w.require(*bin(
      ExprOp::Mod, bin(ExprOp::Add, bin(ExprOp::Sub, rankVar(), k), sizeVar()),
      sizeVar()));
  EXPECT_EQ(i.hi, 63);
  EXPECT_GE(i.lo, -62);
  EXPECT_EQ(w.width(), 8u);
  // 63 * 2^20 needs 27 bits.
  w.require(*bin(ExprOp::Mul, rankVar(), lit(int64_t(1) << 20)));
  EXPECT_EQ(w.width(), 27u);
  // 63 << 58 wraps at 64 bits: no narrower width is equivalent.
  w.require(*bin(ExprOp::Shl, rankVar(), lit(58)));
  EXPECT_EQ(w.width(), 64u);
}

// A test the intervals decide takes one value: a > 64 is 0 for a in 1..64.
// The mesh gather's loop bound counts such tests to reach log a, so its
// step (1 << i) * b needs 14 bits for a, b up to 64, not the 20 that
// i up to 12 would.
TEST(Width, TestsTheIntervalsDecideTakeOneValue) {
  WidthAnalysis w(NumFixedSlots + 2);
  ExprRef a = Expr::var("a", NumFixedSlots),
          b = Expr::var("b", NumFixedSlots + 1);
  w.setSlot(NumFixedSlots, {1, 64});
  w.setSlot(NumFixedSlots + 1, {2, 64});
  EXPECT_EQ(w.require(*bin(ExprOp::Gt, a, lit(64))), Interval::point(0));
  EXPECT_EQ(w.require(*bin(ExprOp::Ge, a, lit(1))), Interval::point(1));
  EXPECT_EQ(w.require(*bin(ExprOp::Lt, a, lit(64))), (Interval{0, 1}));
  EXPECT_EQ(w.require(*bin(ExprOp::Eq, a, lit(0))), Interval::point(0));
  EXPECT_EQ(w.require(*bin(ExprOp::Ne, a, lit(65))), Interval::point(1));
  EXPECT_EQ(w.require(*bin(ExprOp::And, bin(ExprOp::Gt, a, lit(64)),
                           bin(ExprOp::Gt, b, lit(3)))),
            Interval::point(0));
  EXPECT_EQ(w.require(*bin(ExprOp::Or, bin(ExprOp::Gt, a, lit(0)),
                           bin(ExprOp::Gt, b, lit(3)))),
            Interval::point(1));
  EXPECT_EQ(w.require(*Expr::unary(ExprOp::Not, bin(ExprOp::Gt, a, lit(0)))),
            Interval::point(0));

  ExprRef log = lit(0);
  for (int64_t bound = 1; bound <= 2048; bound *= 2)
    log = bin(ExprOp::Add, log, bin(ExprOp::Gt, a, lit(bound)));
  EXPECT_EQ(w.require(*log), (Interval{0, 6}));
  w.require(*bin(ExprOp::Mul, bin(ExprOp::Shl, lit(1), log), b));
  EXPECT_EQ(w.width(), 14u);
}

// For random expressions over variables with random ranges, evaluated at and
// next to the ends of the ranges: the translation at the width the analysis
// picks has exactly the 64-bit translation's value and definedness (even
// where evaluate() fails), and the 64-bit value lies in the interval. One
// bit less than the picked width must break agreement somewhere, so the
// cases do reach the bounds.
TEST(Width, NarrowTranslationAgreesWith64BitsNearTheBounds) {
  smt::Context ctx;
  smt::Solver solver(ctx);
  std::mt19937_64 rng(20240917);
  auto smallConstant = [&]() -> int64_t {
    const int64_t special[] = {0, 1, -1, 2, 63, 64, -64, 100, -100};
    if (rng() % 3 == 0)
      return special[rng() % std::size(special)];
    return static_cast<int64_t>(rng() % 41) - 20;
  };
  RandomExprs gen(rng, smallConstant, 4);
  auto range = [&]() -> Interval {
    int64_t k = int64_t(1) << (rng() % 20);
    switch (rng() % 4) {
    case 0:
      return {0, k - 1};
    case 1:
      return {-k, k - 1};
    case 2:
      return {-k, 5};
    default:
      return {1, k};
    }
  };

  constexpr int numExprs = 1000, envsPerExpr = 6;
  int narrow = 0, wide = 0, undefined = 0, nearBound = 0, belowBreaks = 0;
  for (int n = 0; n < numExprs; ++n) {
    ExprRef e = gen.expr(4);
    std::vector<Interval> ranges = {range(), range(), range()};
    WidthAnalysis analysis(3);
    for (unsigned i = 0; i < 3; ++i)
      analysis.setSlot(i, ranges[i]);
    Interval interval = analysis.require(*e);
    unsigned width = analysis.width();
    if (width == 64) {
      ++wide;
      continue;
    }
    ++narrow;
    // The 64-bit translation, the one at `width`, and one at width - 1.
    unsigned below = width - 1 >= MinWidth ? width - 1 : 0;
    std::vector<smt::Term> facts;
    struct Case {
      std::vector<int64_t> env;
      SmtExpr exact, narrowed, under;
    };
    std::vector<Case> cases;
    for (int k = 0; k < envsPerExpr; ++k) {
      Case c;
      for (const Interval &r : ranges) {
        int64_t span = r.hi - r.lo;
        int64_t offset = static_cast<int64_t>(rng() % 2);
        int64_t v =
            k % 3 == 0 ? r.lo + std::min(offset, span)
            : k % 3 == 1
                ? r.hi - std::min(offset, span)
                : r.lo + static_cast<int64_t>(rng() % uint64_t(span + 1));
        c.env.push_back(v);
      }
      std::vector<smt::Term> exact, narrowed, under;
      for (int64_t v : c.env) {
        exact.push_back(ctx.bitVecVar("v"));
        narrowed.push_back(ctx.bitVecVar("w", width));
        facts.push_back(exact.back() == v);
        facts.push_back(narrowed.back() == v);
        if (below) {
          under.push_back(ctx.bitVecVar("u", below));
          facts.push_back(under.back() == v);
        }
      }
      c.exact = toSmtChecked(*e, exact);
      c.narrowed = toSmtChecked(*e, narrowed);
      if (below)
        c.under = toSmtChecked(*e, under);
      cases.push_back(std::move(c));
    }
    smt::Result r = solver.check("fix_env", facts, 0);
    ASSERT_TRUE(r.isSat());
    bool underDiffers = false;
    for (const Case &c : cases) {
      std::string where = print(*e) + " at " + std::to_string(width) +
                          " bits, x=" + std::to_string(c.env[0]) +
                          " y=" + std::to_string(c.env[1]) +
                          " z=" + std::to_string(c.env[2]);
      int64_t value = r.value(c.exact.value);
      ASSERT_EQ(r.value(c.narrowed.value), value) << where;
      ASSERT_EQ(r.value(c.narrowed.defined), r.value(c.exact.defined)) << where;
      ASSERT_TRUE(interval.contains(value)) << where;
      EvalResult want = evaluate(*e, c.env);
      ASSERT_EQ(r.value(c.exact.defined), want.ok() ? 1 : 0) << where;
      undefined += !want.ok();
      nearBound += !smt::fitsSigned(value, width - 1);
      if (below && (r.value(c.under.value) != value ||
                    r.value(c.under.defined) != r.value(c.exact.defined)))
        underDiffers = true;
    }
    belowBreaks += underDiffers;
  }
  std::printf("  %d narrow, %d at 64 bits; %d undefined cases, %d values "
              "needing the top bit, %d expressions wrong one bit below\n",
              narrow, wide, undefined, nearBound, belowBreaks);
  EXPECT_GT(narrow, numExprs / 3);
  EXPECT_GT(wide, numExprs / 20);
  EXPECT_GT(undefined, 20);
  EXPECT_GT(nearBound, 50);
  EXPECT_GT(belowBreaks, 20);
}

// A guard whose value leaves every narrow width, (r << 58) < 0 (bit 5 of r
// lands in the sign bit), is proved at 64 bits, where ranks 32.. send; the
// same guard written r >= 32 is proved narrow, with the same verdict.
TEST(Width, OverflowingGuardIsTranslatedAt64Bits) {
  for (bool overflowing : {true, false}) {
    Builder b(TopologyKind::Ring, {});
    ExprRef p = b.param("n");
    b.s.topology.dims = {p};
    ExprRef guard =
        overflowing
            ? bin(ExprOp::Lt, bin(ExprOp::Shl, rankVar(), lit(58)), lit(0))
            : bin(ExprOp::Ge, rankVar(), lit(32));
    b.s.body.push_back(Builder::step(
        {Builder::rule(bin(ExprOp::Add, rankVar(), lit(1)), guard)}));
    std::string verbose;
    llvm::raw_string_ostream os(verbose);
    ProverOptions options;
    options.ranges = {{"n", 2, 64}};
    options.verbose = &os;
    auto prover = Prover::create(b.s, options);
    ASSERT_TRUE(static_cast<bool>(prover))
        << llvm::toString(prover.takeError());
    verify::PropertyResult r = prover->prove(Property::Matching);
    os.flush();
    std::vector<unsigned> widths = queryWidths(verbose);
    ASSERT_EQ(widths.size(), 1u) << verbose;
    if (overflowing)
      EXPECT_EQ(widths[0], 64u);
    else
      EXPECT_LT(widths[0], 16u);
    ASSERT_EQ(r.status, Status::Counterexample) << describe(r);
    const verify::Counterexample &cex = *r.counterexample;
    EXPECT_GE(cex.p, 33);
    ASSERT_TRUE(cex.rank.has_value());
    EXPECT_EQ(*cex.rank, cex.p - 1); // the last rank sends to p
    // Contention holds either way: one send per rank, distinct receivers.
    EXPECT_EQ(prover->prove(Property::Contention).status, Status::Proved);
  }
}

// Algorithm 4.10 for d in 1..16 (2^16 ranks, j up to 2^16 - 1) is proved
// narrow: well below 64 bits, above the 17 bits that r ^ j needs.
TEST(Width, Alg4_10_IsProvedNarrowForDim1To16) {
  Schedule s = pairwiseExchange(TopologyKind::Hypercube, false);
  std::string verbose;
  llvm::raw_string_ostream os(verbose);
  ProverOptions options;
  options.ranges = {{"d", 1, 16}};
  options.verbose = &os;
  auto prover = Prover::create(s, options);
  ASSERT_TRUE(static_cast<bool>(prover)) << llvm::toString(prover.takeError());
  for (const verify::PropertyResult &r : prover->proveAll())
    EXPECT_EQ(r.status, Status::Proved) << describe(r);
  os.flush();
  std::vector<unsigned> widths = queryWidths(verbose);
  // Matching, contention, congestion, and whether every send goes to a
  // neighbour (they do not: ranks 2^d - 1 apart at the last step).
  ASSERT_EQ(widths.size(), 4u) << verbose;
  for (unsigned w : widths) {
    EXPECT_GT(w, 17u);
    EXPECT_LT(w, 32u);
  }
}

} // namespace
