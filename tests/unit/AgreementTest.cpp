// The prover and the simulator, two independent checkers, against each other
// on random schedules: random topologies of every kind, 1-4 steps of
// hand-written transfers (including out-of-range peers and self-sends) and
// symbolic rules. For matching, contention (single-port and all-port) and
// congestion both must prove or both must refute, and every counterexample
// the prover gives must violate the property on the concrete topology.

#include "ir/Expr.h"
#include "ir/Schedule.h"
#include "prove/Prover.h"
#include "simulate/Simulator.h"
#include "topology/Topology.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace collc;
using namespace collc::ir;
using verify::Property;
using verify::PropertyResult;
using verify::Status;

namespace {

ExprRef lit(int64_t v) { return Expr::constant(v); }
ExprRef rank() { return Expr::var("r", SlotRank); }
ExprRef size() { return Expr::var("p", SlotSize); }
ExprRef bin(ExprOp op, ExprRef a, ExprRef b) {
  return Expr::binary(op, std::move(a), std::move(b));
}

TransferRule rule(ExprRef peer, ExprRef guard) {
  TransferRule t;
  t.peer = std::move(peer);
  t.guard = std::move(guard);
  t.into.push_back({0, nullptr});
  return t;
}

/// A random schedule on a random concrete topology, and its text for
/// failure messages.
struct Case {
  Schedule schedule;
  Topology topology;
  std::string text;
};

class Generator {
public:
  explicit Generator(uint64_t seed) : rng(seed) {}

  Case next() {
    Schedule s;
    s.name = "random";
    s.collective.kind = CollectiveKind::Broadcast; // one chunk: cheap
    s.buffers = {{"result"}};
    s.slotNames = {"r", "p", "origin", "dest", "index"};
    std::string text = topology(s.topology);
    auto made = Topology::make(s.topology.kind, dimValues(s.topology),
                               s.topology.edges);
    EXPECT_TRUE(static_cast<bool>(made)) << text;
    Topology topo = std::move(*made);
    int64_t p = topo.numRanks();
    unsigned numSteps = 1 + rng() % 4;
    for (unsigned k = 0; k < numSteps; ++k) {
      Step &st = std::get<Step>(s.body.emplace_back(Step{}));
      text += "\n  step {";
      if (chance(3, 5))
        handWritten(st, p, text);
      else
        symbolic(st, p, text);
      text += " }";
    }
    return {std::move(s), std::move(topo), std::move(text)};
  }

private:
  bool chance(unsigned k, unsigned n) { return rng() % n < k; }
  int64_t pick(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % uint64_t(hi - lo + 1));
  }
  /// Mostly small sizes, sometimes up to `large`.
  int64_t sizeUpTo(int64_t small, int64_t large) {
    return chance(6, 7) ? pick(2, small) : pick(2, large);
  }

  static std::vector<int64_t> dimValues(const TopologyTemplate &t) {
    std::vector<int64_t> v;
    for (const ExprRef &d : t.dims)
      v.push_back(d->value);
    return v;
  }

  std::string topology(TopologyTemplate &t) {
    std::vector<int64_t> dims;
    switch (rng() % 8) {
    case 0:
      t.kind = TopologyKind::Ring;
      dims = {sizeUpTo(12, 64)};
      break;
    case 1:
      t.kind = TopologyKind::Linear;
      dims = {sizeUpTo(12, 64)};
      break;
    case 2:
    case 3: {
      t.kind = rng() % 2 ? TopologyKind::Mesh : TopologyKind::Torus;
      int64_t limit = chance(6, 7) ? 16 : 64, product = 1;
      unsigned n = 1 + rng() % 3;
      for (unsigned i = 0; i < n; ++i) {
        int64_t d = pick(
            1, std::max<int64_t>(1, std::min<int64_t>(6, limit / product)));
        dims.push_back(d);
        product *= d;
      }
      if (product < 2)
        dims.back() += 1;
      break;
    }
    case 4:
      t.kind = TopologyKind::Hypercube;
      dims = {chance(6, 7) ? pick(1, 4) : pick(5, 6)};
      break;
    case 5:
      t.kind = TopologyKind::Tree;
      dims = {int64_t(1) << (chance(6, 7) ? pick(1, 3) : pick(4, 5))};
      break;
    case 6:
      t.kind = TopologyKind::Full;
      dims = {sizeUpTo(10, 64)};
      break;
    default: {
      // A random spanning tree plus a few more edges: connected.
      t.kind = TopologyKind::Graph;
      int64_t n = sizeUpTo(10, 20);
      dims = {n};
      std::map<std::pair<int64_t, int64_t>, bool> have;
      auto add = [&](int64_t a, int64_t b) {
        if (a == b || have[{std::min(a, b), std::max(a, b)}])
          return;
        have[{std::min(a, b), std::max(a, b)}] = true;
        t.edges.push_back({a, b});
      };
      for (int64_t v = 1; v < n; ++v)
        add(v, pick(0, v - 1));
      for (int64_t extra = pick(0, n / 2); extra > 0; --extra)
        add(pick(0, n - 1), pick(0, n - 1));
      break;
    }
    }
    std::string text = topologyKindName(t.kind).str() + "(";
    for (size_t i = 0; i < dims.size(); ++i) {
      t.dims.push_back(lit(dims[i]));
      text += (i ? ", " : "") + std::to_string(dims[i]);
    }
    text += ")";
    if (!t.edges.empty()) {
      text += " {";
      for (auto [a, b] : t.edges)
        text += " " + std::to_string(a) + "-" + std::to_string(b);
      text += " }";
    }
    return text;
  }

  /// `a -> b` as the sema builds it: guard r == a, peer b. Most peers are
  /// fine; some are outside 0..p-1 and some are the sender itself.
  void handWritten(Step &st, int64_t p, std::string &text) {
    unsigned n = 1 + rng() % std::min<int64_t>(p, 6);
    for (unsigned k = 0; k < n; ++k) {
      int64_t a = pick(0, p - 1), b;
      unsigned kind = rng() % 20;
      if (kind == 0)
        b = a; // self-send
      else if (kind == 1)
        b = chance(1, 2) ? p + pick(0, 2) : -1; // outside the topology
      else
        b = pick(0, p - 1) == a ? (a + 1) % p : pick(0, p - 1);
      if (b == a && kind != 0)
        b = (a + 1) % p;
      st.rules.push_back(rule(lit(b), bin(ExprOp::Eq, rank(), lit(a))));
      text += " " + std::to_string(a) + " -> " + std::to_string(b) + ";";
    }
  }

  /// One or two rules `r -> peer when guard` of the textbook's shapes.
  void symbolic(Step &st, int64_t p, std::string &text) {
    unsigned n = chance(4, 5) ? 1 : 2;
    for (unsigned k = 0; k < n; ++k) {
      ExprRef peer, guard;
      std::string peerText, guardText;
      int64_t c = pick(1, std::max<int64_t>(1, p - 1));
      switch (rng() % 6) {
      case 0: // (r + c) % p
        peer = bin(ExprOp::Mod, bin(ExprOp::Add, rank(), lit(c)), size());
        peerText = "(r + " + std::to_string(c) + ") % p";
        break;
      case 1: // (r - c + p) % p
        peer = bin(ExprOp::Mod,
                   bin(ExprOp::Add, bin(ExprOp::Sub, rank(), lit(c)), size()),
                   size());
        peerText = "(r - " + std::to_string(c) + " + p) % p";
        break;
      case 2: { // r ^ m: outside 0..p-1 unless p is a power of two
        int64_t m = int64_t(1) << pick(0, 5);
        if (chance(1, 3))
          m = pick(1, 63);
        peer = bin(ExprOp::BitXor, rank(), lit(m));
        peerText = "r ^ " + std::to_string(m);
        break;
      }
      case 3: // r + c: the last ranks send outside
        peer = bin(ExprOp::Add, rank(), lit(c));
        peerText = "r + " + std::to_string(c);
        break;
      case 4: // p - 1 - r: a self-send at the middle of an odd p
        peer = bin(ExprOp::Sub, bin(ExprOp::Sub, size(), lit(1)), rank());
        peerText = "p - 1 - r";
        break;
      default: // (2 * r) % p
        peer = bin(ExprOp::Mod, bin(ExprOp::Mul, lit(2), rank()), size());
        peerText = "(2 * r) % p";
        break;
      }
      switch (rng() % 6) {
      case 0:
      case 1:
        break; // every rank
      case 2: {
        int64_t m = pick(2, 4), v = pick(0, m - 1);
        guard = bin(ExprOp::Eq, bin(ExprOp::Mod, rank(), lit(m)), lit(v));
        guardText = "r % " + std::to_string(m) + " == " + std::to_string(v);
        break;
      }
      case 3:
        guard = bin(ExprOp::Lt, rank(), bin(ExprOp::Div, size(), lit(2)));
        guardText = "r < p / 2";
        break;
      case 4: {
        int64_t m = pick(1, 7);
        guard = bin(ExprOp::Eq, bin(ExprOp::BitAnd, rank(), lit(m)), lit(0));
        guardText = "r & " + std::to_string(m) + " == 0";
        break;
      }
      default: {
        int64_t a = pick(0, p - 1);
        guard = bin(ExprOp::Eq, rank(), lit(a));
        guardText = "r == " + std::to_string(a);
        break;
      }
      }
      st.rules.push_back(rule(peer, guard));
      text += " r -> " + peerText + (guard ? " when " + guardText : "") + ";";
    }
  }

  std::mt19937_64 rng;
};

/// The sends of IR step `stepNumber` (1-based; the schedules have no loops)
/// that matching accepts, with their multiplicity.
std::map<std::pair<int64_t, int64_t>, int>
acceptedSends(const Schedule &s, int64_t p, int64_t stepNumber) {
  std::map<std::pair<int64_t, int64_t>, int> sends;
  if (stepNumber < 1 || stepNumber > static_cast<int64_t>(s.body.size()))
    return sends;
  const Step &st = std::get<Step>(s.body[stepNumber - 1]);
  std::vector<int64_t> env(s.numSlots(), 0);
  env[SlotSize] = p;
  for (const TransferRule &rule : st.rules)
    for (int64_t r = 0; r < p; ++r) {
      env[SlotRank] = r;
      if (rule.guard && evaluate(*rule.guard, env).value == 0)
        continue;
      int64_t dst = evaluate(*rule.peer, env).value;
      if (dst >= 0 && dst < p && dst != r)
        ++sends[{r, dst}];
    }
  return sends;
}

/// Why the prover's counterexample does not violate `property` on the
/// concrete topology, or "" when it does.
std::string recheck(const Case &c, Property property, PortModel ports,
                    const verify::Counterexample &cex) {
  const Topology &topo = c.topology;
  int64_t p = topo.numRanks();
  if (cex.p != p)
    return "p = " + std::to_string(cex.p);
  if (property == Property::Matching) {
    // Rule applications, accepted or not: one must send to itself or
    // outside the topology.
    if (cex.transfers.size() != 1 || !cex.rank)
      return "no single offending transfer";
    auto [src, dst] = std::pair(cex.transfers[0].src, cex.transfers[0].dst);
    if (src != *cex.rank || (dst >= 0 && dst < p && dst != src))
      return "transfer " + std::to_string(src) + "->" + std::to_string(dst) +
             " is fine";
    const Step &st = std::get<Step>(c.schedule.body.at(cex.step - 1));
    std::vector<int64_t> env(c.schedule.numSlots(), 0);
    env[SlotSize] = p;
    env[SlotRank] = src;
    for (const TransferRule &rule : st.rules)
      if ((!rule.guard || evaluate(*rule.guard, env).value != 0) &&
          evaluate(*rule.peer, env).value == dst)
        return "";
    return "no rule of the step sends " + std::to_string(src) + "->" +
           std::to_string(dst);
  }

  // The listed transfers: at least two, all sent in the step, sharing a
  // port (contention) or a channel (congestion).
  auto sends = acceptedSends(c.schedule, p, cex.step);
  if (cex.transfers.size() < 2)
    return "fewer than two transfers";
  std::map<std::pair<int64_t, int64_t>, int> listed;
  for (const verify::TransferRef &t : cex.transfers)
    if (++listed[{t.src, t.dst}] > sends[{t.src, t.dst}])
      return "transfer " + std::to_string(t.src) + "->" +
             std::to_string(t.dst) + " is not sent in step " +
             std::to_string(cex.step);
  auto routeOf = [&](const verify::TransferRef &t) {
    llvm::SmallVector<Channel, 16> route;
    topo.route(t.src, t.dst, route);
    return route;
  };
  if (property == Property::Contention && ports == PortModel::Single) {
    bool sameSender = llvm::all_of(cex.transfers, [&](const auto &t) {
      return t.src == cex.transfers[0].src;
    });
    bool sameReceiver = llvm::all_of(cex.transfers, [&](const auto &t) {
      return t.dst == cex.transfers[0].dst;
    });
    return sameSender || sameReceiver ? "" : "no shared sender or receiver";
  }
  if (!cex.channel || !topo.hasChannel(cex.channel->first, cex.channel->second))
    return "no channel of the topology named";
  Channel ch{cex.channel->first, cex.channel->second};
  if (property == Property::Contention) {
    bool leaving = llvm::all_of(
        cex.transfers, [&](const auto &t) { return routeOf(t).front() == ch; });
    bool entering = llvm::all_of(
        cex.transfers, [&](const auto &t) { return routeOf(t).back() == ch; });
    return leaving || entering ? "" : "channel is not a shared first/last hop";
  }
  for (const verify::TransferRef &t : cex.transfers)
    if (!llvm::is_contained(routeOf(t), ch))
      return "route " + std::to_string(t.src) + "->" + std::to_string(t.dst) +
             " avoids the channel";
  return "";
}

struct Tally {
  int proved = 0, refuted = 0;
};

TEST(Agreement, ProverAndSimulatorAgreeOnRandomSchedules) {
  constexpr int numSchedules = 1000;
  Generator gen(0xC011C);
  const std::pair<Property, PortModel> checks[] = {
      {Property::Matching, PortModel::Single},
      {Property::Contention, PortModel::Single},
      {Property::Contention, PortModel::All},
      {Property::Congestion, PortModel::Single}};
  const char *checkNames[] = {"matching", "contention (single-port)",
                              "contention (all-port)", "congestion"};
  Tally tally[4];
  std::map<std::string, int> byTopology;
  auto start = std::chrono::steady_clock::now();

  for (int n = 0; n < numSchedules; ++n) {
    Case c = gen.next();
    ++byTopology[topologyKindName(c.schedule.topology.kind).str()];
    std::optional<simulate::SimulationResult> simulated[2];
    std::optional<prove::Prover> provers[2];
    for (int i = 0; i < 4; ++i) {
      auto [property, ports] = checks[i];
      int pm = ports == PortModel::All;
      if (!simulated[pm]) {
        simulate::SimulateOptions so;
        so.ports = ports;
        auto sim = simulate::simulate(c.schedule, {}, so);
        ASSERT_TRUE(static_cast<bool>(sim))
            << llvm::toString(sim.takeError()) << "\n"
            << c.text;
        simulated[pm] = std::move(*sim);
      }
      if (!provers[pm]) {
        prove::ProverOptions po;
        po.ports = ports;
        auto prover = prove::Prover::create(c.schedule, po);
        ASSERT_TRUE(static_cast<bool>(prover))
            << llvm::toString(prover.takeError()) << "\n"
            << c.text;
        provers[pm].emplace(std::move(*prover));
      }
      Status want = simulated[pm]->result(property).status;
      PropertyResult got = provers[pm]->prove(property);
      std::string context = std::string(checkNames[i]) + " on " + c.text;
      ASSERT_EQ(got.status, want)
          << context << "\nprover: " << got.detail
          << (got.counterexample ? got.counterexample->message : "");
      if (got.status == Status::Proved) {
        ++tally[i].proved;
        continue;
      }
      ++tally[i].refuted;
      ASSERT_TRUE(got.counterexample.has_value()) << context;
      std::string why = recheck(c, property, ports, *got.counterexample);
      EXPECT_EQ(why, "") << context << "\nprover's counterexample: "
                         << got.counterexample->message;
    }
  }

  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("  %d random schedules in %.1f s; topologies:", numSchedules,
              seconds);
  for (const auto &[kind, count] : byTopology)
    std::printf(" %s %d", kind.c_str(), count);
  std::printf("\n");
  for (int i = 0; i < 4; ++i) {
    std::printf("  %-26s %4d proved, %4d refuted (prover "
                "= simulator)\n",
                checkNames[i], tally[i].proved, tally[i].refuted);
    // Both verdicts must be exercised for every property.
    EXPECT_GT(tally[i].proved, numSchedules / 20) << checkNames[i];
    EXPECT_GT(tally[i].refuted, numSchedules / 20) << checkNames[i];
  }
  EXPECT_EQ(byTopology.size(), 8u);
}

} // namespace
