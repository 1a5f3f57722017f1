// A library family specialised to a declared collective's topology, root,
// shift or permutation (library/Specialise.h).

#include "library/Specialise.h"

#include "ir/Instantiate.h"
#include "sema/Sema.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <algorithm>

using namespace collc;
using namespace collc::library;
using ir::CollectiveKind;
using ir::Expr;
using ir::ExprOp;
using ir::ExprRef;

namespace {

/// Whether every channel of `inner` is one of graph `outer`'s, ranks
/// numbered alike (the graph may have more).
bool graphContains(const Topology &outer, const Topology &inner) {
  if (inner.numNodes() != outer.numNodes() ||
      inner.numChannels() > outer.numChannels())
    return false;
  llvm::SmallVector<int64_t, 8> next;
  for (int64_t node = 0; node < inner.numNodes(); ++node) {
    next.clear();
    inner.neighbours(node, next);
    for (int64_t to : next)
      if (!outer.hasChannel(node, to))
        return false;
  }
  return true;
}

/// Every way to write n as an ordered product of `count` factors of at
/// least 2: the shapes a mesh or torus of n ranks may have.
void shapesOf(int64_t n, size_t count, std::vector<int64_t> &prefix,
              std::vector<std::vector<int64_t>> &out) {
  if (prefix.size() + 1 == count) {
    if (n >= 2) {
      prefix.push_back(n);
      out.push_back(prefix);
      prefix.pop_back();
    }
    return;
  }
  for (int64_t f = 2; f * 2 <= n; ++f)
    if (n % f == 0) {
      prefix.push_back(f);
      shapesOf(n / f, count, prefix, out);
      prefix.pop_back();
    }
}

/// The regular topologies of `family`'s kind that graph `target` contains
/// with the same ranks: their dimensions, each a candidate the family's
/// members are then solved against. The graph's own channels and routes
/// are what the member is simulated and proved on, not the regular
/// topology's, so nothing of the family's proof is assumed.
std::vector<std::vector<int64_t>>
dimsInGraph(const ir::TopologyTemplate &family, const Topology &target) {
  int64_t n = target.numRanks();
  std::vector<std::vector<int64_t>> shapes;
  switch (family.kind) {
  case TopologyKind::Ring:
  case TopologyKind::Linear:
  case TopologyKind::Full:
    shapes.push_back({n});
    break;
  case TopologyKind::Hypercube:
    if (llvm::isPowerOf2_64(static_cast<uint64_t>(n)))
      shapes.push_back({static_cast<int64_t>(llvm::Log2_64(n))});
    break;
  case TopologyKind::Mesh:
  case TopologyKind::Torus: {
    std::vector<int64_t> prefix;
    shapesOf(n, family.dims.size(), prefix, shapes);
    break;
  }
  case TopologyKind::Tree:  // its switches are nodes a graph of ranks lacks
  case TopologyKind::Graph: // compared edge for edge in specialise
    break;
  }
  std::vector<std::vector<int64_t>> out;
  for (std::vector<int64_t> &dims : shapes) {
    llvm::Expected<Topology> inner =
        Topology::make(family.kind, dims, {}, family.order);
    if (!inner) {
      llvm::consumeError(inner.takeError());
      continue;
    }
    if (graphContains(target, *inner))
      out.push_back(std::move(dims));
  }
  return out;
}

/// The dimensions a topology of kind `from` must have to sit inside
/// `target` with the same ranks: every channel of it is one of target's.
/// Several where `target` is a graph (dimsInGraph); none where it cannot.
std::vector<std::vector<int64_t>>
embeddedDims(const ir::TopologyTemplate &family, const Topology &target) {
  TopologyKind from = family.kind, to = target.kind();
  std::vector<int64_t> dims(target.dims().begin(), target.dims().end());
  int64_t n = target.numRanks();
  if (from == to)
    return family.order == target.order()
               ? std::vector<std::vector<int64_t>>{dims}
               : std::vector<std::vector<int64_t>>{};
  if (to == TopologyKind::Graph)
    return dimsInGraph(family, target);
  // 000 §4.6.2: in Gray-code order consecutive ranks of a cube are
  // neighbours, so it contains the ring and the linear array.
  if ((from == TopologyKind::Ring || from == TopologyKind::Linear) &&
      to == TopologyKind::Hypercube && target.order() == RankOrder::Gray)
    return {{n}};
  if (from == TopologyKind::Linear && to == TopologyKind::Ring)
    return {{n}};
  if (from == TopologyKind::Mesh && to == TopologyKind::Torus)
    return {dims};
  if (to == TopologyKind::Full) {
    if (from == TopologyKind::Ring || from == TopologyKind::Linear)
      return {{n}};
    if (from == TopologyKind::Hypercube && (n & (n - 1)) == 0) {
      int64_t d = 0;
      while ((int64_t(1) << d) < n)
        ++d;
      return {{d}};
    }
  }
  return {};
}

/// A renaming of ranks: sigma(x) and its inverse as expressions over x.
struct Relabelling {
  std::function<ExprRef(ExprRef)> forward, inverse;
  /// Whether it maps the topology's channels to channels and routes to
  /// routes, so that whatever holds of a schedule holds of it relabelled.
  bool symmetry = true;
};

ExprRef num(int64_t v) { return Expr::constant(v); }
ExprRef bin(ExprOp op, ExprRef a, ExprRef b) {
  return Expr::binary(op, std::move(a), std::move(b));
}

/// Rank x of a row-major array of `dims` with coordinate i replaced by
/// move(i, coordinate i).
ExprRef mapCoordinates(ExprRef x, llvm::ArrayRef<int64_t> dims,
                       llvm::function_ref<ExprRef(size_t, ExprRef)> move) {
  if (dims.size() == 1)
    return move(0, x);
  ExprRef sum;
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    // x is below the product of dims: the first coordinate needs no `%`,
    // the last no `/`.
    ExprRef coordinate = stride == 1 ? x : bin(ExprOp::Div, x, num(stride));
    if (i > 0)
      coordinate = bin(ExprOp::Mod, coordinate, num(dims[i]));
    ExprRef moved = move(i, coordinate);
    if (stride != 1)
      moved = bin(ExprOp::Mul, moved, num(stride));
    sum = sum ? bin(ExprOp::Add, moved, sum) : moved;
    stride *= dims[i];
  }
  return sum;
}

/// What a relabelling does to one coordinate c of n: nothing, a reflection
/// n - 1 - c, or a rotation (c + shift) % n.
struct CoordinateMove {
  bool flip = false;
  int64_t shift = 0;

  bool identity() const { return !flip && shift == 0; }
  CoordinateMove inverse(int64_t n) const { return {flip, (n - shift) % n}; }
};

ExprRef moveCoordinates(ExprRef x, llvm::ArrayRef<int64_t> dims,
                        llvm::ArrayRef<CoordinateMove> moves) {
  if (llvm::all_of(moves, [](const CoordinateMove &m) { return m.identity(); }))
    return x;
  return mapCoordinates(x, dims, [&](size_t i, ExprRef c) {
    if (moves[i].flip)
      return bin(ExprOp::Sub, num(dims[i] - 1), c);
    if (moves[i].shift != 0)
      return bin(ExprOp::Mod, bin(ExprOp::Add, c, num(moves[i].shift)),
                 num(dims[i]));
    return c;
  });
}

/// Row-major coordinates of `rank`.
std::vector<int64_t> coordinatesOf(int64_t rank, llvm::ArrayRef<int64_t> dims) {
  std::vector<int64_t> c(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    c[i] = rank % dims[i];
    rank /= dims[i];
  }
  return c;
}

/// A relabelling of `target`'s ranks that maps rank `to` to rank `from`.
/// Where the topology has a symmetry that does it, that one:
/// - XOR on a hypercube in natural order (000 Alg 4.1's "any source"), and
///   on the leaves of a balanced binary tree (it swaps the two subtrees of
///   the switches at the levels of k's bits);
/// - a rotation of each coordinate on a ring, torus or full network;
/// - on a mesh or linear array, a reflection of each coordinate where `to`'s
///   is `from`'s mirror image; it keeps dimension-ordered routes (each route
///   is reflected with its ends).
/// Otherwise a mesh's or linear array's other coordinates are rotated as if
/// they wrapped around, as 000 §4.1.1 does for a ring. That is no symmetry:
/// a message that would cross the wraparound travels the long way back along
/// its line. In recursive doubling at most one message of a step does, in
/// the direction the others do not use; the relabelled schedule is checked
/// on the target before it is priced, and proved again when verified. The
/// ranks of a hypercube in Gray order, a ring embedded in the cube, are
/// rotated the same way and checked the same way.
std::optional<Relabelling> relabellingTo(const Topology &target, int64_t to,
                                         int64_t from) {
  if ((target.kind() == TopologyKind::Hypercube &&
       target.order() == RankOrder::Natural) ||
      target.kind() == TopologyKind::Tree) {
    int64_t k = to ^ from;
    auto x = [k](ExprRef e) { return bin(ExprOp::BitXor, e, num(k)); };
    return Relabelling{x, x, true};
  }
  // The others act on each coordinate of the ranks, row-major (a ring, full
  // network or linear array has one).
  bool wraps;
  switch (target.kind()) {
  case TopologyKind::Ring:
  case TopologyKind::Full:
  case TopologyKind::Torus:
  case TopologyKind::Hypercube: // Gray order: its ranks go round a ring
    wraps = true;
    break;
  case TopologyKind::Linear:
  case TopologyKind::Mesh:
    wraps = false;
    break;
  default:
    return std::nullopt;
  }
  bool grid = target.kind() == TopologyKind::Torus ||
              target.kind() == TopologyKind::Mesh;
  std::vector<int64_t> dims =
      grid ? std::vector<int64_t>(target.dims().begin(), target.dims().end())
           : std::vector<int64_t>{target.numRanks()};
  std::vector<int64_t> a = coordinatesOf(to, dims),
                       b = coordinatesOf(from, dims);
  std::vector<CoordinateMove> forward(dims.size()), backward(dims.size());
  // Rotations are symmetries of what wraps round, except the ring a Gray
  // code threads through a cube; reflections are of a mesh.
  bool symmetry = target.kind() != TopologyKind::Hypercube;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (a[i] == b[i])
      continue;
    if (!wraps && a[i] == dims[i] - 1 - b[i]) {
      forward[i].flip = true;
    } else {
      forward[i].shift = ((b[i] - a[i]) % dims[i] + dims[i]) % dims[i];
      symmetry &= wraps;
    }
    backward[i] = forward[i].inverse(dims[i]);
  }
  return Relabelling{
      [dims, forward](ExprRef e) { return moveCoordinates(e, dims, forward); },
      [dims, backward](ExprRef e) {
        return moveCoordinates(e, dims, backward);
      },
      symmetry};
}

/// Renames the ranks of `s`: rank x of the result does what rank sigma(x)
/// does in `s`.
void relabel(ir::Schedule &s, const Relabelling &sigma) {
  CollectiveKind kind = s.collective.kind;
  ExprRef rank = Expr::var("r", ir::SlotRank);
  ExprRef sigmaRank = sigma.forward(rank);
  auto ofRank = [&](const ExprRef &e) {
    return ir::substitute(e, [&](const Expr &v) -> ExprRef {
      return v.slot == ir::SlotRank ? sigmaRank : nullptr;
    });
  };
  auto ofChunk = [&](const ExprRef &e) {
    return ir::substitute(e, [&](const Expr &v) -> ExprRef {
      if (v.slot == ir::SlotRank)
        return sigmaRank;
      if (v.slot == ir::SlotOrigin && ir::meaningOf(kind).originIsRank())
        return sigma.forward(Expr::var("origin", ir::SlotOrigin));
      if (v.slot == ir::SlotDest && ir::meaningOf(kind).destIsRank())
        return sigma.forward(Expr::var("dest", ir::SlotDest));
      return nullptr;
    });
  };
  // An invariant's `contributor` is a rank too.
  auto ofState = [&](const ExprRef &e) {
    ExprRef chunk = ofChunk(e);
    if (!s.contributorSlot)
      return chunk;
    return ir::substitute(chunk, [&](const Expr &v) -> ExprRef {
      return v.slot == *s.contributorSlot
                 ? sigma.forward(Expr::var("contributor", v.slot))
                 : nullptr;
    });
  };
  // A relabelled peer sigma^-1(peer(sigma(r))) is seldom one the prover can
  // solve for its sender, so each rule keeps the senders of the original,
  // relabelled the same way.
  ir::rewriteBody(
      s.body,
      [&](const ExprRef &e, ir::ExprRole role) {
        switch (role) {
        case ir::ExprRole::Peer:
        case ir::ExprRole::Sender:
          return sigma.inverse(ofRank(e));
        case ir::ExprRole::Selector:
          return ofChunk(e);
        case ir::ExprRole::Invariant:
          return ofState(e);
        default:
          return ofRank(e);
        }
      },
      nullptr,
      [](ir::TransferRule &rule) { rule.senders = ir::sendersOf(rule); });
  s.chunks = ofRank(s.chunks);
}
/// An error that says why a schedule does not fit.
llvm::Error failure(const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                 why.str().c_str());
}

/// Whether member `env` of permutation family `family` sends as `want`
/// declares on every rank of `target`.
bool permutesAsDeclared(const ir::Schedule &family, const ir::Collective &want,
                        const Topology &target,
                        const std::vector<int64_t> &env) {
  const int64_t p = target.numRanks();
  std::vector<int64_t> member = env, declared(ir::NumFixedSlots, 0);
  member[ir::SlotSize] = declared[ir::SlotSize] = p;
  for (int64_t r = 0; r < p; ++r) {
    member[ir::SlotRank] = declared[ir::SlotRank] = r;
    ir::EvalResult ours = ir::evaluate(*family.collective.permuteTo, member);
    ir::EvalResult theirs = ir::evaluate(*want.permuteTo, declared);
    if (!ours.ok() || !theirs.ok() || ours.value != theirs.value)
      return false;
  }
  return true;
}

/// Sets each parameter that is itself a dimension of `family`'s topology;
/// false where two such dimensions would set it differently.
bool bindDimParams(const ir::Schedule &family, const std::vector<int64_t> &dims,
                   std::vector<int64_t> &env, std::vector<bool> &bound) {
  for (size_t i = 0; i < dims.size(); ++i) {
    const Expr &d = *family.topology.dims[i];
    if (d.op == ExprOp::Var) {
      if (bound[d.slot] && env[d.slot] != dims[i])
        return false;
      env[d.slot] = dims[i];
      bound[d.slot] = true;
    }
  }
  return true;
}

/// Sets the one parameter not yet set that dimension `d` reads, if it has a
/// range, to a value at which `d` is `dim`; false where no value gives it.
bool solveFromDim(const ir::Schedule &family, const Expr &d, int64_t dim,
                  std::vector<int64_t> &env, std::vector<bool> &bound) {
  std::vector<const ir::Parameter *> unset;
  for (const ir::Parameter &param : family.params)
    if (!bound[param.slot] && ir::reads(d, param.slot))
      unset.push_back(&param);
  if (unset.size() != 1 || !unset[0]->range)
    return true;
  const ir::Parameter &param = *unset[0];
  auto gives = [&](int64_t v) {
    env[param.slot] = v;
    ir::EvalResult value = ir::evaluate(d, env);
    return value.ok() && value.value == dim;
  };
  auto [lo, hi] = *param.range;
  for (int64_t v = lo; v <= hi && !bound[param.slot]; ++v)
    bound[param.slot] = gives(v);
  for (int64_t v = 0; v <= maxRanks && !bound[param.slot]; ++v)
    bound[param.slot] = (v < lo || v > hi) && gives(v);
  return bound[param.slot];
}

/// Sets the last parameter still unset, where it has a range and the map of
/// permutation family `family` reads it, to the first value that makes the
/// map `want`'s; or why none does.
llvm::Error bindPermuteParams(const ir::Schedule &family,
                              const ir::Collective &want,
                              const Topology &target, std::vector<int64_t> &env,
                              std::vector<bool> &bound) {
  const ir::ExprRef &to = family.collective.permuteTo;
  for (const ir::Parameter &param : family.params) {
    if (bound[param.slot] || !param.range || !ir::reads(*to, param.slot) ||
        llvm::any_of(family.params, [&](const ir::Parameter &other) {
          return other.slot != param.slot && !bound[other.slot];
        }))
      continue;
    for (int64_t v = param.range->first;
         v <= param.range->second && !bound[param.slot]; ++v) {
      env[param.slot] = v;
      bound[param.slot] = permutesAsDeclared(family, want, target, env);
    }
    if (!bound[param.slot])
      return failure("it permutes by " + family.collective.permutationText() +
                     ", which no " + param.name + " in " +
                     llvm::Twine(param.range->first) + ".." +
                     llvm::Twine(param.range->second) + " makes " +
                     want.permutationText());
  }
  return llvm::Error::success();
}

/// Sets each parameter still unset to its range's one value; or why one
/// has no single value.
llvm::Error bindFixedParams(const ir::Schedule &family,
                            std::vector<int64_t> &env,
                            const std::vector<bool> &bound) {
  for (const ir::Parameter &param : family.params) {
    if (bound[param.slot])
      continue;
    if (!param.range || param.range->first != param.range->second)
      return failure("its parameter '" + param.name +
                     "' is not set by the topology");
    env[param.slot] = param.range->first;
  }
  return llvm::Error::success();
}

/// The slots of `family`'s member on topology dimensions `dims` that runs
/// `def`'s collective, every parameter set; or why no member does.
llvm::Expected<std::vector<int64_t>>
solveMember(const ir::Schedule &family, const CollectiveDef &def,
            const std::vector<int64_t> &dims) {
  auto fail = failure;
  const Topology &target = def.topology;
  const ir::Collective &want = def.collective;
  const ir::ExprRef &amount = family.collective.shiftOf;
  // Solve the parameters from the dimensions: a dimension that is a
  // parameter sets it; one that is an expression of a single parameter not
  // yet set (`tree(leaves: 1 << h)`) sets it to a value that gives the
  // dimension, from its range first; like a size beyond the range, one
  // beyond it is proved again for the member. checkMember evaluates every
  // dimension.
  std::vector<int64_t> env(family.numSlots(), 0);
  std::vector<bool> bound(family.numSlots(), false);
  if (!bindDimParams(family, dims, env, bound))
    return fail("no member has dimensions " + target.describe());
  for (size_t i = 0; i < dims.size(); ++i)
    if (!solveFromDim(family, *family.topology.dims[i], dims[i], env, bound))
      return fail("no member has dimensions " + target.describe());
  // A family over the shift amount (`shift(q: q)`) has the declared one.
  // Like a size beyond a family's range, an amount beyond it is proved
  // again for the one member.
  if (amount && amount->op == ExprOp::Var && !bound[amount->slot]) {
    env[amount->slot] = want.shift;
    bound[amount->slot] = true;
  }
  // A permutation family implements the declared map when the two agree
  // on every rank of this member (the library's proof is of its own). A
  // parameter of the map alone (`shuffle(r, k % d, d)`'s k) takes the
  // first value of its range that gives the declared map.
  if (family.collective.permuteTo && want.permuteTo)
    if (llvm::Error e = bindPermuteParams(family, want, target, env, bound))
      return e;
  if (llvm::Error e = bindFixedParams(family, env, bound))
    return e;
  return env;
}

/// Whether member `env` of `family` is on `def`'s topology (dimensions
/// `dims`, and a graph's or tree's links) and runs its collective (shift
/// amount, permutation); or why not.
llvm::Error checkMember(const ir::Schedule &family, const CollectiveDef &def,
                        const std::vector<int64_t> &dims,
                        std::vector<int64_t> env) {
  auto fail = failure;
  const Topology &target = def.topology;
  const ir::Collective &want = def.collective;
  const ir::ExprRef &amount = family.collective.shiftOf;
  for (size_t i = 0; i < dims.size(); ++i) {
    ir::EvalResult v = ir::evaluate(*family.topology.dims[i], env);
    if (!v.ok() || v.value != dims[i])
      return fail("no member has dimensions " + target.describe());
  }
  if (amount) {
    env[ir::SlotSize] = target.numRanks();
    ir::EvalResult q = ir::evaluate(*amount, env);
    if (!q.ok() ||
        (q.value % env[ir::SlotSize] + env[ir::SlotSize]) % env[ir::SlotSize] !=
            want.shift)
      return fail("it shifts by " + ir::print(*amount));
  }
  if (family.collective.permuteTo &&
      !permutesAsDeclared(family, want, target, env))
    return fail("it permutes by " + family.collective.permutationText());
  if (family.topology.kind == target.kind() &&
      (target.kind() == TopologyKind::Graph ||
       target.kind() == TopologyKind::Tree)) {
    llvm::Expected<Topology> own =
        Topology::make(family.topology.kind, dims, family.topology.edges,
                       family.topology.order);
    if (!own) {
      llvm::consumeError(own.takeError());
      return fail("its topology is not " + target.describe());
    }
    // Trees of the same leaves are the same; graphs may differ in edges.
    if (own->graphEdges() != target.graphEdges())
      return fail("its " + own->describe() + " has other links than " +
                  target.describe());
  }
  return llvm::Error::success();
}

/// `family` specialised to `def` on its topology of dimensions `dims`, one
/// that `def`'s contains (embeddedDims), or why not.
llvm::Expected<Choice> specialiseTo(const ir::Schedule &family,
                                    const CollectiveDef &def,
                                    const std::vector<int64_t> &dims) {
  auto fail = failure;
  const Topology &target = def.topology;
  const ir::Collective &want = def.collective;
  if (dims.size() != family.topology.dims.size())
    return fail("its topology has " + llvm::Twine(family.topology.dims.size()) +
                " dimensions");
  llvm::Expected<std::vector<int64_t>> env = solveMember(family, def, dims);
  if (!env)
    return env.takeError();
  if (llvm::Error e = checkMember(family, def, dims, *env))
    return e;
  std::vector<int64_t> params;
  for (const ir::Parameter &param : family.params)
    params.push_back((*env)[param.slot]);

  Choice choice;
  choice.source = family.name;
  ir::Schedule &s = choice.schedule;
  s = family;
  s.name = def.name;
  s.loc = def.loc;
  // The member is proved as itself: a composition's parts are the
  // family's, before the renaming and the move to `target` below.
  for (ir::PartRef &part : s.parts)
    part.schedule.reset();
  for (size_t i = 0; i < s.params.size(); ++i)
    s.params[i].range = std::make_pair(params[i], params[i]);
  s.topology = collc::templateOf(target, def.loc);

  if (ir::isRooted(want.kind) && family.collective.root != want.root) {
    // On a graph, the renamings of the regular topology found in it: they
    // are no symmetry of the graph's routes, so the member must simulate
    // there to fit, and is proved there.
    std::optional<Relabelling> sigma;
    if (target.kind() == TopologyKind::Graph &&
        family.topology.kind != TopologyKind::Graph) {
      llvm::Expected<Topology> inner =
          Topology::make(family.topology.kind, dims, {}, family.topology.order);
      if (!inner)
        return inner.takeError();
      sigma = relabellingTo(*inner, want.root, family.collective.root);
      if (sigma)
        sigma->symmetry = false;
    } else {
      sigma = relabellingTo(target, want.root, family.collective.root);
    }
    if (!sigma)
      return fail("its root is " + llvm::Twine(family.collective.root) +
                  " and " + target.describe() +
                  " has no relabelling that moves it to " +
                  llvm::Twine(want.root));
    relabel(s, *sigma);
    choice.relabelling =
        "rank r plays " +
        ir::print(*sigma->forward(Expr::var("r", ir::SlotRank)));
    choice.keepsProof = sigma->symmetry;
  }
  // On a full network a route is its one link, shared only by messages
  // between the same two ranks, which share every link elsewhere too: any
  // schedule that holds on its own topology holds there, renamed or not.
  if (target.kind() == TopologyKind::Full)
    choice.keepsProof = true;
  else if (family.topology.kind != target.kind())
    choice.keepsProof = false;
  s.collective = want;
  return choice;
}
} // namespace

/// `family` specialised to `def`, one member for each shape of its topology
/// that `def`'s contains (a graph may contain mesh(2, 8) and mesh(4, 4)),
/// or why none fits.
llvm::Expected<std::vector<Choice>>
library::detail::specialise(const ir::Schedule &family,
                            const CollectiveDef &def) {
  auto fail = failure;
  const Topology &target = def.topology;
  const ir::Collective &want = def.collective;
  if (family.collective.kind != want.kind)
    return fail("it implements " +
                ir::collectiveKindName(family.collective.kind));
  const ir::ExprRef &amount = family.collective.shiftOf;
  if (want.kind == CollectiveKind::Shift && !amount &&
      family.collective.shift != want.shift)
    return fail("it shifts by " + llvm::Twine(family.collective.shift));

  std::vector<std::vector<int64_t>> shapes =
      embeddedDims(family.topology, target);
  if (shapes.empty() && family.topology.kind == target.kind())
    return fail(
        llvm::Twine("it numbers the ranks in ") +
        (family.topology.order == RankOrder::Gray ? "Gray-code" : "natural") +
        " order, unlike " + target.describe());
  if (shapes.empty())
    return fail("it runs on " +
                llvm::StringRef(topologyKindName(family.topology.kind)) +
                ", which " + target.describe() + " does not contain");
  std::vector<Choice> members;
  llvm::Error why = llvm::Error::success();
  for (const std::vector<int64_t> &shape : shapes) {
    llvm::Expected<Choice> c = specialiseTo(family, def, shape);
    if (c) {
      members.push_back(std::move(*c));
    } else {
      llvm::consumeError(std::move(why));
      why = c.takeError();
    }
  }
  if (members.empty())
    return why;
  llvm::consumeError(std::move(why));
  return members;
}
/// The first of `members`: a schedule of the file is run as its first fit.
llvm::Expected<Choice>
library::detail::first(llvm::Expected<std::vector<Choice>> members) {
  if (!members)
    return members.takeError();
  return std::move(members->front());
}
