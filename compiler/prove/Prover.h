#pragma once
// The symbolic prover: properties 2-4 of docs/proofs.md ("What is proved")
// for a Schedule IR over a whole parameter range, with Z3.
//
// One query per (IR step, property). Ranks, loop variables and parameters
// are all solver variables, so a step inside `for j in 1 .. 2**d - 1` is
// proved for every j, every rank and every d in the range at once. Each
// query asks for a violation; unsat is a proof, sat a counterexample, which
// is re-evaluated concretely (ir::evaluate and Topology::route) before it is
// reported, so a counterexample always reproduces.
//
//   matching    every guard-true rule sends to a rank in 0..p-1 other than
//               itself, and guard and peer are defined (no division by zero,
//               shifts within 0..63); loop bounds must be defined as well.
//   contention  single-port: no two distinct sends (rule, rank) of one step
//               share a sender or a receiver; all-port: no two share their
//               first channel (leaving the sender) or their last.
//   congestion  no two distinct sends of one step share a channel of their
//               routes.
// Contention and congestion consider the sends that matching accepts.
//
// Routes come from topology/Topology.h's symbolic forms (ring, linear, mesh,
// torus, hypercube, full, and the balanced tree). A graph has none: for it
// the concrete route table (Topology::route for every pair of ranks) is
// encoded as a finite disjunction, which needs concrete dimensions; a
// topology without a closed form whose dimensions depend on a parameter
// gets Unknown for the properties that need routes.

#include "ir/Schedule.h"
#include "topology/Topology.h"
#include "ir/Verdict.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace collc::smt {
class Context;
class ProvedQueries;
class Solver;
} // namespace collc::smt

namespace collc::prove {

using ir::ParamRange;

struct ProverOptions {
  std::vector<ParamRange> ranges; // one per Schedule::params entry, by name
  PortModel ports = PortModel::Single;
  unsigned timeoutMs = 60000;           // per query; 0: no limit
  llvm::raw_ostream *verbose = nullptr; // one line per query
  bool dumpSmt = false;                 // with verbose: each query in SMT-LIB
  /// Largest route table (sum of route lengths over all rank pairs) that
  /// tree and graph topologies may encode; larger gives Unknown.
  int64_t maxRouteTableEntries = int64_t(1) << 18;
  /// A query that has not answered after this much of Z3's work (its
  /// resource units, smt::Solver::check; about half a second here) is asked
  /// again once per value of a loop variable that takes few values (0: at
  /// once); see Prover.cpp's checkSplit. Work, not time, so the way a
  /// query is asked does not depend on the machine.
  unsigned splitAfterWork = 4000000;
  /// Queries proved before, shared between provers (smt::ProvedQueries);
  /// null: every query goes to Z3.
  smt::ProvedQueries *provedQueries = nullptr;
};

class Prover {
public:
  /// Checks that every parameter has a non-empty range and that a concrete
  /// topology (no parameters) can be built.
  static llvm::Expected<Prover> create(const ir::Schedule &schedule,
                                       ProverOptions options);
  Prover(Prover &&);
  Prover &operator=(Prover &&);
  ~Prover();

  /// Matching, contention or congestion (method "z3"); any other property
  /// gives Status::Error.
  verify::PropertyResult prove(verify::Property property);
  /// Matching, contention and congestion, in that order.
  std::vector<verify::PropertyResult> proveAll();

  /// The rules (by address) whose receivers can name their senders: for
  /// each, the candidates of ir::sendersOf(rule), shown to include every
  /// rank that sends to a receiver under the rule and to be defined at
  /// every receiver, for every parameter and loop value in range. Emitted
  /// code then evaluates a few candidates per step instead of scanning
  /// all p ranks. A rule whose query is sat or does not answer is absent.
  std::map<const ir::TransferRule *, std::vector<ir::ExprRef>> namedSenders();

  /// The solver's per-query statistics.
  const smt::Solver &solver() const;

  struct State; // the schedule's steps, the solver and the topology

private:
  explicit Prover(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

} // namespace collc::prove
