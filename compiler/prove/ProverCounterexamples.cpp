// The prover's counterexamples: a model read back into ranks, loop values
// and sends, re-checked concretely, and explained as the message says.

#include "prove/ExprToSmt.h"
#include "prove/ProverState.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace collc;
using namespace collc::prove;
using verify::Status;

namespace {

/// Concrete sends are enumerated (to re-check a counterexample and to list
/// every message involved) only up to this many rule applications.
constexpr int64_t maxEnumeratedSends = int64_t(1) << 22;
/// Counting steps to number a counterexample's step stops here (step 0).
constexpr int64_t maxCountedSteps = int64_t(1) << 24;

std::string stepText(const verify::Counterexample &cex) {
  return (cex.step > 0 ? "step " + std::to_string(cex.step) : "a step") +
         verify::loopValuesText(cex.loopVars);
}

} // namespace

PropertyResult collc::prove::notReproduced(PropertyResult result,
                                           const std::string &why) {
  result.status = Status::Error;
  result.detail = "counterexample does not reproduce: " + why;
  return result;
}

// --- concrete re-checks -----------------------------------------------------

int64_t Prover::State::stepNumber(std::vector<int64_t> env,
                                  const StepSite &site,
                                  llvm::ArrayRef<int64_t> loopValues) const {
  int64_t count = 0;
  bool found = false, gaveUp = false;
  std::function<void(const std::vector<ir::BodyItem> &)> walk =
      [&](const std::vector<ir::BodyItem> &body) {
        for (const ir::BodyItem &item : body) {
          if (found || gaveUp)
            return;
          if (const auto *step = std::get_if<ir::Step>(&item)) {
            ++count;
            if (step == site.step) {
              found = true;
              for (size_t j = 0; j < site.loops.size(); ++j)
                found &= env[site.loops[j]->slot] == loopValues[j];
            }
            if (count >= maxCountedSteps)
              gaveUp = true;
            continue;
          }
          const ir::Loop &loop = *std::get<std::shared_ptr<ir::Loop>>(item);
          ir::EvalResult lo = ir::evaluate(*loop.lo, env);
          ir::EvalResult hi = ir::evaluate(*loop.hi, env);
          if (!lo.ok() || !hi.ok()) {
            gaveUp = true;
            return;
          }
          for (int64_t i = 0; lo.value + i <= hi.value; ++i) {
            env[loop.slot] = loop.reverse ? hi.value - i : lo.value + i;
            walk(loop.body);
            if (found || gaveUp)
              return;
          }
        }
      };
  walk(schedule->body);
  return found ? count : 0;
}

std::optional<int64_t> Prover::State::concretePeer(const StepSite &site,
                                                   std::vector<int64_t> env,
                                                   int64_t p, unsigned rule,
                                                   int64_t rank) {
  const ir::TransferRule &r = site.step->rules[rule];
  env[ir::SlotRank] = rank;
  if (r.guard) {
    ir::EvalResult g = ir::evaluate(*r.guard, env);
    if (!g.ok() || g.value == 0)
      return std::nullopt;
  }
  ir::EvalResult peer = ir::evaluate(*r.peer, env);
  if (!peer.ok() || peer.value < 0 || peer.value >= p || peer.value == rank)
    return std::nullopt;
  return peer.value;
}

std::optional<std::vector<Prover::State::ConcreteSend>>
Prover::State::enumerateSends(const StepSite &site, std::vector<int64_t> env,
                              int64_t p) {
  size_t numRules = site.step->rules.size();
  if (p * static_cast<int64_t>(numRules) > maxEnumeratedSends)
    return std::nullopt;
  std::vector<ConcreteSend> sends;
  for (unsigned k = 0; k < numRules; ++k)
    for (int64_t r = 0; r < p; ++r)
      if (auto peer = concretePeer(site, env, p, k, r))
        sends.push_back({r, *peer, k});
  return sends;
}

// Reads the parameters, p and the loop variables out of a model into a
// concrete environment and the counterexample's header fields. Returns a
// problem description when the instance cannot be rebuilt.
std::optional<std::string> Prover::State::concretize(const smt::Result &r,
                                                     const Frame &f,
                                                     const StepSite &site,
                                                     Concrete &out) {
  out.env.assign(numSlots + 4, 0);
  for (size_t i = 0; i < schedule->params.size(); ++i) {
    int64_t v = r.value(f.paramVars[i]);
    out.env[schedule->params[i].slot] = v;
    out.cex.params.push_back({schedule->params[i].name, v});
  }
  ir::EvalResult p = ir::evaluate(*numRanks, out.env);
  if (!p.ok() || p.value != r.value(f.p))
    return std::string("the solver's p does not match the topology's size");
  out.cex.p = p.value;
  out.env[ir::SlotSize] = p.value;
  std::vector<int64_t> loopValues;
  for (size_t j = 0; j < site.loops.size(); ++j) {
    int64_t v = r.value(f.loopVars[j]);
    loopValues.push_back(v);
    out.env[site.loops[j]->slot] = v;
    out.cex.loopVars.push_back({site.loops[j]->var, v});
  }
  out.cex.step = stepNumber(out.env, site, loopValues);

  std::vector<int64_t> dims;
  for (const ExprRef &dim : schedule->topology.dims) {
    ir::EvalResult v = ir::evaluate(*dim, out.env);
    if (!v.ok())
      return std::string("a topology dimension is undefined");
    dims.push_back(v.value);
  }
  // Only the route-based properties need the topology itself.
  auto made =
      Topology::make(schedule->topology.kind, dims, schedule->topology.edges,
                     schedule->topology.order);
  if (made)
    out.topology = std::move(*made);
  else
    out.topologyProblem = llvm::toString(made.takeError());
  return std::nullopt;
}

PropertyResult Prover::State::explainMatching(const SiteQuery &q,
                                              const smt::Result &r, Property,
                                              const StepSite &site, Concrete &c,
                                              PropertyResult result) {
  const Frame &f = q.f;
  verify::Counterexample &cex = c.cex;
  const int64_t p = cex.p;
  // Bounds first: no step instance exists when they are undefined.
  if (r.value(f.boundsUndefined)) {
    std::vector<int64_t> env = c.env;
    for (size_t j = 0; j < site.loops.size(); ++j) {
      const ir::Loop &loop = *site.loops[j];
      ir::EvalResult lo = ir::evaluate(*loop.lo, env);
      ir::EvalResult hi = ir::evaluate(*loop.hi, env);
      ir::EvalResult bad = !lo.ok() ? lo : hi;
      if (!bad.ok()) {
        cex.step = 0;
        cex.loopVars.resize(j);
        cex.message = "bounds of loop '" + loop.var +
                      "' are undefined: " + ir::describe(bad.error).str();
        result.status = Status::Counterexample;
        result.counterexample = cex;
        return result;
      }
      env[loop.slot] = r.value(f.loopVars[j]);
    }
    return notReproduced(result, "loop bounds evaluate");
  }
  int64_t rank = r.value(q.a.rank);
  unsigned k = static_cast<unsigned>(r.value(q.a.rule));
  if (k >= site.step->rules.size())
    return notReproduced(result, "rule index out of range");
  const ir::TransferRule &rule = site.step->rules[k];
  std::vector<int64_t> env = c.env;
  env[ir::SlotRank] = rank;
  cex.rank = rank;
  std::string who = "rank " + std::to_string(rank) + " in " + stepText(cex);
  if (site.step->rules.size() > 1)
    who += ", rule " + std::to_string(k + 1);
  if (rule.guard) {
    ir::EvalResult g = ir::evaluate(*rule.guard, env);
    if (!g.ok()) {
      cex.message =
          "guard undefined at " + who + ": " + ir::describe(g.error).str();
      result.status = Status::Counterexample;
      result.counterexample = cex;
      return result;
    }
    if (g.value == 0)
      return notReproduced(result, "the guard is false at " + who);
  }
  ir::EvalResult peer = ir::evaluate(*rule.peer, env);
  if (!peer.ok()) {
    cex.message =
        "peer undefined at " + who + ": " + ir::describe(peer.error).str();
  } else if (peer.value == rank) {
    cex.transfers.push_back({rank, peer.value});
    cex.message = who + " sends to itself";
  } else if (peer.value < 0 || peer.value >= p) {
    cex.transfers.push_back({rank, peer.value});
    cex.message = who + " sends to " + std::to_string(peer.value) +
                  ", outside 0.." + std::to_string(p - 1);
  } else {
    return notReproduced(result, who + " sends to " +
                                     std::to_string(peer.value) +
                                     ", which is fine");
  }
  result.status = Status::Counterexample;
  result.counterexample = cex;
  return result;
}

std::optional<std::string> Prover::State::concreteSends(const SiteQuery &q,
                                                        const smt::Result &r,
                                                        const StepSite &site,
                                                        const Concrete &c,
                                                        PairSends &out) {
  const int64_t p = c.cex.p;
  for (auto [send, into] :
       {std::pair(&q.a, &out.first), std::pair(&*q.b, &out.second)}) {
    into->src = r.value(send->rank);
    into->rule = static_cast<unsigned>(r.value(send->rule));
    if (into->rule >= site.step->rules.size())
      return "rule index out of range";
    auto peer = concretePeer(site, c.env, p, into->rule, into->src);
    if (!peer || *peer != r.value(send->peer))
      return "rank " + std::to_string(into->src) +
             " does not send as the solver says";
    into->dst = *peer;
  }
  if (out.first.src == out.second.src && out.first.rule == out.second.rule)
    return "the two sends are the same";
  if (!c.topology)
    return "the topology is invalid at this instance: " + c.topologyProblem;
  // Every send the step makes, to show all of those at fault.
  out.all = enumerateSends(site, c.env, p);
  return std::nullopt;
}

std::vector<verify::TransferRef> Prover::State::PairSends::involved(
    const std::function<bool(const ConcreteSend &)> &pick) const {
  std::vector<verify::TransferRef> refs;
  if (!all)
    return {{first.src, first.dst}, {second.src, second.dst}};
  for (const ConcreteSend &s : *all)
    if (pick(s))
      refs.push_back({s.src, s.dst});
  return refs;
}

std::string Prover::State::portsText() const {
  return options.ports == PortModel::Single ? "single-port" : "all-port";
}

PropertyResult Prover::State::explainSharedPort(const SiteQuery &q,
                                                const smt::Result &r, Property,
                                                const StepSite &site,
                                                Concrete &c,
                                                PropertyResult result) {
  PairSends sends;
  if (auto problem = concreteSends(q, r, site, c, sends))
    return notReproduced(result, *problem);
  const ConcreteSend &s1 = sends.first, &s2 = sends.second;
  verify::Counterexample &cex = c.cex;
  bool sameSender = s1.src == s2.src;
  int64_t rank = sameSender ? s1.src : s1.dst;
  if (!sameSender && s1.dst != s2.dst)
    return notReproduced(result,
                         "the two sends share neither sender nor receiver");
  cex.rank = rank;
  cex.transfers = sends.involved([&](const ConcreteSend &s) {
    return sameSender ? s.src == rank : s.dst == rank;
  });
  cex.load = static_cast<int64_t>(cex.transfers.size());
  cex.message = "rank " + std::to_string(rank) +
                (sameSender ? " sends " : " receives ") +
                std::to_string(cex.load) + " messages in " + stepText(cex) +
                " (" + portsText() + ")";
  result.status = Status::Counterexample;
  result.counterexample = cex;
  result.maxLoad = cex.load;
  return result;
}

PropertyResult
Prover::State::explainSharedChannel(const SiteQuery &q, const smt::Result &r,
                                    Property property, const StepSite &site,
                                    Concrete &c, PropertyResult result) {
  PairSends sends;
  if (auto problem = concreteSends(q, r, site, c, sends))
    return notReproduced(result, *problem);
  verify::Counterexample &cex = c.cex;
  const Topology &topo = *c.topology;
  auto routeOf = [&](const ConcreteSend &s) {
    llvm::SmallVector<Channel, 16> route;
    topo.route(s.src, s.dst, route);
    return route;
  };
  Channel channel;
  if (onRoute) {
    channel = {r.value(q.from), r.value(q.to)};
  } else {
    int64_t k = r.value(q.chanIndex);
    if (k < 0 || k >= static_cast<int64_t>(topo.channels().size()))
      return notReproduced(result, "channel index out of range");
    channel = topo.channels()[k];
  }
  auto r1 = routeOf(sends.first), r2 = routeOf(sends.second);
  if (property == Property::Congestion) {
    if (!llvm::is_contained(r1, channel) || !llvm::is_contained(r2, channel))
      return notReproduced(result, "channel " + channel.text() +
                                       " is not on both routes");
    // The model names some shared channel; the report (and the cost) wants
    // the most loaded one, which the enumerated sends give.
    if (sends.all) {
      std::map<std::pair<int64_t, int64_t>, int64_t> load;
      for (const ConcreteSend &s : *sends.all)
        for (const Channel &ch : routeOf(s))
          ++load[{ch.from, ch.to}];
      int64_t most = load[{channel.from, channel.to}];
      for (const auto &[ch, n] : load)
        if (n > most) {
          most = n;
          channel = {ch.first, ch.second};
        }
    }
    cex.channel = {channel.from, channel.to};
    cex.transfers = sends.involved([&](const ConcreteSend &s) {
      return llvm::is_contained(routeOf(s), channel);
    });
    cex.load = static_cast<int64_t>(cex.transfers.size());
    cex.message = cex.channelLoad() + " in " + stepText(cex);
  } else {
    bool leaving = r1.front() == channel && r2.front() == channel;
    bool entering = r1.back() == channel && r2.back() == channel;
    if (!leaving && !entering)
      return notReproduced(result,
                           "channel " + channel.text() +
                               " is not the first or last channel of both "
                               "routes");
    cex.rank = leaving ? channel.from : channel.to;
    cex.channel = {channel.from, channel.to};
    cex.transfers = sends.involved([&](const ConcreteSend &s) {
      auto route = routeOf(s);
      return leaving ? route.front() == channel : route.back() == channel;
    });
    cex.load = static_cast<int64_t>(cex.transfers.size());
    cex.message = "rank " + std::to_string(*cex.rank) +
                  (leaving ? " sends " : " receives ") +
                  std::to_string(cex.load) + " messages over channel " +
                  channel.text() + " in " + stepText(cex) + " (" + portsText() +
                  ")";
  }
  result.status = Status::Counterexample;
  result.counterexample = cex;
  result.maxLoad = cex.load;
  return result;
}
