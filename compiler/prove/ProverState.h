#pragma once
// The prover's state, shared by Prover.cpp (the queries and their solving)
// and ProverCounterexamples.cpp (a model rebuilt concretely and explained).
// Private to compiler/prove.

#include "prove/Prover.h"
#include "prove/Width.h"
#include "smt/Solver.h"
#include "smt/Term.h"
#include "topology/Topology.h"

#include "llvm/ADT/SmallVector.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace collc::prove {

using ir::ExprRef;
using smt::Term;
using verify::Property;
using verify::PropertyResult;

/// An IR step with the loops around it, outermost first.
struct StepSite {
  const ir::Step *step = nullptr;
  std::vector<const ir::Loop *> loops;
  unsigned index = 0; // 1-based, in IR order, for messages
};

struct Prover::State {
  const ir::Schedule *schedule = nullptr;
  ProverOptions options;
  std::vector<StepSite> sites;
  unsigned numSlots = 0;
  std::vector<std::pair<int64_t, int64_t>> paramRange; // per Schedule::params
  /// Built when the dimensions do not depend on parameters.
  std::optional<Topology> topology;
  // Symbolic forms over extra slots past the schedule's own:
  // src, dst, from, to.
  unsigned srcSlot = 0, dstSlot = 0, fromSlot = 0, toSlot = 0;
  // Null where there is no closed form.
  ExprRef numRanks, numNodes, isChannel, onRoute;
  llvm::SmallVector<ExprRef, 4> routeLegs; // onRoute's (Topology.h)

  /// Tree and graph: for each channel of `topology`, the (src, dst) rank
  /// pairs whose route crosses it, first crosses it, last crosses it.
  struct RouteTable {
    std::vector<std::vector<std::pair<int64_t, int64_t>>> all, first, last;
  };
  std::optional<RouteTable> table;
  std::string tableProblem; // why there is no table, when there is none

  smt::Context ctx;
  smt::Solver solver{ctx};

  PropertyResult prove(Property property);

  // --- construction (Prover::create) -----------------------------------------
  /// The schedule's slots, its sites, and src/dst/from/to past them.
  void layOutSlots();
  /// Each parameter's range from the options.
  llvm::Error takeRanges();
  /// The topology where its dimensions are constants, and its symbolic
  /// forms (ranks, nodes, channels, routes) over the extra slots.
  llvm::Error describeTopology();

  // --- query construction ---------------------------------------------------
  /// The bit-vector width for the queries of `site` (see prove/Width.h):
  /// the narrowest at which every expression they translate, with the
  /// parameters, p, loop variables, ranks and channels within their
  /// ranges, fits; 64 when that cannot be shown.
  unsigned widthFor(const StepSite &site, bool routes,
                    llvm::ArrayRef<ExprRef> extra = {});
  /// Sets the intervals of the parameters, p and the site's loop variables
  /// in `w`; returns p's, and each loop variable's in `loops`.
  Interval boundSlots(WidthAnalysis &w, const StepSite &site,
                      std::vector<Interval> *loops = nullptr);

  struct Frame {
    unsigned width = smt::DefaultWidth; // of every bit-vector in the query
    std::vector<Term> base; // slot terms shared by every send of the step
    Term p;
    std::vector<Term> extents; // a mesh's or a torus's (prove/MeshRanks.h)
    std::vector<Term> paramVars;
    std::vector<Term> loopVars;
    std::vector<Term> paramAssumptions;
    std::vector<Term> loopAssumptions;
    Term boundsUndefined; // some enclosing loop's bounds are undefined
  };
  struct Send {
    Term rank, rule, peer;
    Term wellFormed; // the selected rule fires and matching accepts it
    Term bad;        // the selected rule breaks matching
    std::vector<Term> assumptions;
  };
  Frame frameFor(const StepSite &site, llvm::StringRef tag, unsigned width);
  Send sendFor(const Frame &frame, const StepSite &site, llvm::StringRef tag);
  /// Leg `leg` of the send's route holds channel (from -> to).
  Term routeHas(const Frame &frame, const Send &send, const Term &from,
                const Term &to, size_t leg);
  Term channelIsReal(const Frame &frame, const Term &from, const Term &to);
  /// Whether Z3 proves that every send of the step goes to a neighbour of
  /// its rank (asked once per step; false when it cannot say).
  bool sendsToNeighbours(const StepSite &site);
  std::map<size_t, bool> neighbourSteps; // by StepSite::index
  bool buildTable();

  // --- counterexamples
  // --------------------------------------------------------
  struct Concrete {
    std::vector<int64_t> env;
    verify::Counterexample cex;
    std::optional<Topology> topology;
    std::string topologyProblem; // why there is no topology
  };
  std::optional<std::string> concretize(const smt::Result &r, const Frame &f,
                                        const StepSite &site, Concrete &out);
  int64_t stepNumber(std::vector<int64_t> env, const StepSite &site,
                     llvm::ArrayRef<int64_t> loopValues) const;
  struct ConcreteSend {
    int64_t src = 0, dst = 0;
    unsigned rule = 0;
  };
  /// Every send matching accepts at the step, or none when there are too
  /// many to enumerate.
  std::optional<std::vector<ConcreteSend>>
  enumerateSends(const StepSite &site, std::vector<int64_t> env, int64_t p);
  /// Rule `rule` at rank `rank`: the peer, if the rule fires and matching
  /// accepts it.
  std::optional<int64_t> concretePeer(const StepSite &site,
                                      std::vector<int64_t> env, int64_t p,
                                      unsigned rule, int64_t rank);

  /// One property at one step: its obligation's query asked, and a model
  /// (a violation) explained by the obligation.
  PropertyResult proveSite(Property property, const StepSite &site,
                           smt::Result &result);

  // --- the obligations, as data (Alive2's style)
  // ------------------------------
  /// A property's query at one step (sat: a violation) and the terms its
  /// explanation reads back from the model.
  struct SiteQuery {
    Frame f;
    Send a;
    std::optional<Send> b; // the second send of a pair
    Term from, to;         // the shared channel, on a closed-form route
    Term chanIndex;        // the shared channel, by the route table
    std::vector<Term> query;
    std::vector<Term> cases; // alternatives the query needs one of
  };
  struct Obligation {
    bool routes; // the query reads routes (the width must hold channels)
    void (State::*build)(SiteQuery &q, Property property, const StepSite &site);
    PropertyResult (State::*explain)(const SiteQuery &q, const smt::Result &r,
                                     Property property, const StepSite &site,
                                     Concrete &c, PropertyResult result);
  };
  const Obligation &obligationFor(Property property) const;
  void buildMatching(SiteQuery &q, Property property, const StepSite &site);
  void buildPair(SiteQuery &q, Property property, const StepSite &site);
  PropertyResult explainMatching(const SiteQuery &q, const smt::Result &r,
                                 Property property, const StepSite &site,
                                 Concrete &c, PropertyResult result);
  PropertyResult explainSharedPort(const SiteQuery &q, const smt::Result &r,
                                   Property property, const StepSite &site,
                                   Concrete &c, PropertyResult result);
  PropertyResult explainSharedChannel(const SiteQuery &q, const smt::Result &r,
                                      Property property, const StepSite &site,
                                      Concrete &c, PropertyResult result);
  /// The two sends of a pair's model, concretely, and every send of the
  /// step (none when too many to enumerate).
  struct PairSends {
    ConcreteSend first, second;
    std::optional<std::vector<ConcreteSend>> all;
    /// The sends `pick` accepts (the model's two when not enumerated).
    std::vector<verify::TransferRef>
    involved(const std::function<bool(const ConcreteSend &)> &pick) const;
  };
  /// Fills `out`; or why the model does not reproduce.
  std::optional<std::string> concreteSends(const SiteQuery &q,
                                           const smt::Result &r,
                                           const StepSite &site,
                                           const Concrete &c, PairSends &out);
  std::string portsText() const;
  /// Prover::namedSenders for rule `k` of `site`.
  bool sendersNamed(const StepSite &site, unsigned k,
                    const std::vector<ExprRef> &candidates);
  /// Checks `query` and one of `cases` (none: just `query`), a case at a
  /// time, each split by the value of a loop variable that takes few values
  /// when it does not answer at once. `at` names the case and value of a
  /// query that did not answer.
  smt::Result checkSplit(const char *name, std::vector<Term> query,
                         llvm::ArrayRef<Term> cases, const Frame &f,
                         const StepSite &site, std::string &at);
};

/// A model the prover could not rebuild concretely: never a counterexample.
PropertyResult notReproduced(PropertyResult result, const std::string &why);

} // namespace collc::prove
