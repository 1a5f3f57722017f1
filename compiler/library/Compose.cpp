#include "library/Compose.h"

#include "verify/Verifier.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <map>
#include <optional>

using namespace collc;
using ir::CollectiveKind;
using ir::Expr;
using ir::ExprOp;
using ir::ExprRef;

namespace {

/// The chunk coordinate that names whose block a chunk is, in the kinds a
/// composition is made of (collc/Meaning.h's table): the piece a scatter
/// or reduce-scatter leaves at rank x is the one with dest x; an all-gather
/// or gather starts from the one with origin x. A kind with both (an
/// all-to-all, a permutation) or neither has none.
std::optional<unsigned> blockSlot(CollectiveKind kind) {
  const meaning::Conditions &m = ir::meaningOf(kind);
  const bool endsByDest = m.required.dest == meaning::Coord::Self;
  const bool startsByOrigin = m.initial.origin == meaning::Coord::Self;
  if (endsByDest == startsByOrigin)
    return std::nullopt;
  return endsByDest ? ir::SlotDest : ir::SlotOrigin;
}

/// The chunks per block of `part`, over the composite's slots (null: 1).
ExprRef partChunks(const ir::Schedule &composite, const ir::Schedule &part) {
  if (!part.chunks)
    return nullptr;
  std::map<unsigned, ExprRef> bound =
      ir::partParameters(composite.topology, part);
  return ir::fold(ir::substitute(part.chunks, [&](const Expr &v) -> ExprRef {
    auto it = bound.find(v.slot);
    return it == bound.end() ? nullptr : it->second;
  }));
}

std::string chunkText(const ExprRef &k) { return k ? ir::print(*k) : "1"; }

/// An error naming `part` and saying why it cannot be a part of a
/// composition.
llvm::Error partError(const ir::Schedule &part, const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                 ("'" + part.name + "' " + why).str().c_str());
}

/// Whether `part`'s collective can be a part of `composite`'s split
/// message, with its root; or why not.
llvm::Error checkPartKind(const ir::Schedule &composite,
                          const ir::Schedule &part) {
  auto fail = [&](const llvm::Twine &why) { return partError(part, why); };
  CollectiveKind kind = part.collective.kind;
  if (!part.parts.empty())
    return fail("is itself a composition; compose its parts directly");
  if (!ir::isSplitPart(kind) || !blockSlot(kind))
    return fail("is a " + ir::collectiveKindName(kind) +
                "; the parts of a split message are " +
                ir::collectiveKindList(ir::isSplitPart) +
                " schedules (000 §4.7.1)");
  if (ir::isRooted(kind) && part.collective.root != composite.collective.root)
    return fail("has root " + llvm::Twine(part.collective.root) +
                ", the composition " + llvm::Twine(composite.collective.root));
  return llvm::Error::success();
}

/// Whether `part` runs on `composite`'s topology, dimension for dimension;
/// or why not.
llvm::Error checkPartTopology(const ir::Schedule &composite,
                              const ir::Schedule &part) {
  auto fail = [&](const llvm::Twine &why) { return partError(part, why); };
  const ir::TopologyTemplate &want = composite.topology, &have = part.topology;
  if (!runsInside(have.kind, want.kind) ||
      have.dims.size() != want.dims.size() ||
      have.edges != want.edges || have.order != want.order)
    return fail("runs on " + verify::describeTopology(have) +
                ", the composition on " + verify::describeTopology(want));
  std::map<unsigned, std::string> boundTo;
  for (size_t i = 0; i < have.dims.size(); ++i) {
    const Expr &d = *have.dims[i];
    std::string wanted = ir::print(*want.dims[i]);
    if (d.isConst()) {
      if (ir::print(d) != wanted)
        return fail("has dimension " + llvm::Twine(i + 1) + " = " +
                    ir::print(d) + ", the composition " + wanted);
      continue;
    }
    auto [it, fresh] = boundTo.emplace(d.slot, wanted);
    if (!fresh && it->second != wanted)
      return fail("needs its dimensions " + d.name +
                  " equal, and the composition's are " + it->second + " and " +
                  wanted);
  }
  return llvm::Error::success();
}

/// The first rule in `items`, loops included, that names no chunks (sends
/// everything its rank holds); null if every rule names them.
const ir::TransferRule *unnamedRule(const std::vector<ir::BodyItem> &items) {
  const ir::TransferRule *unnamed = nullptr;
  ir::forEachRule(items, [&](const ir::TransferRule &rule) {
    if (!unnamed && !rule.selector)
      unnamed = &rule;
  });
  return unnamed;
}

} // namespace

llvm::Error library::checkPart(const ir::Schedule &composite,
                               const ir::Schedule &part, size_t position,
                               llvm::SMLoc *where) {
  if (where)
    *where = part.loc;
  auto fail = [&](const llvm::Twine &why) { return partError(part, why); };
  if (llvm::Error e = checkPartKind(composite, part))
    return e;
  if (llvm::Error e = checkPartTopology(composite, part))
    return e;
  if (part.buffers.size() != 1)
    return fail("keeps buffers besides 'result', which would start with the "
                "composition's input rather than its own");
  if (part.startsEmpty(0))
    return fail("starts its result empty, where a part starts from what "
                "the part before it left");

  // After the first part a rank may hold more pieces than the next part
  // would on its own (a scatter leaves the root holding everything), so
  // "everything it holds" would send too much: later parts name the chunks.
  if (position > 0) {
    if (const ir::TransferRule *rule = unnamedRule(part.body)) {
      if (where && rule->loc.isValid())
        *where = rule->loc;
      return fail("sends everything a rank holds in some step; after the "
                  "first part a rank can hold more than that part expects, "
                  "so a later part must name its chunks ('r -> peer : "
                  "origin == ...')");
    }
  }
  return llvm::Error::success();
}

void library::compose(ir::Schedule &composite,
                      llvm::ArrayRef<const ir::Schedule *> parts) {
  ExprRef index = Expr::var("index", ir::SlotIndex);
  ExprRef size = Expr::var("p", ir::SlotSize);
  ExprRef perBlock = partChunks(composite, *parts.front());
  composite.chunks =
      perBlock ? Expr::binary(ExprOp::Mul, size, perBlock) : size;
  // Piece k * K' + j of the composite is chunk j of rank k's block.
  ExprRef block = perBlock ? Expr::binary(ExprOp::Div, index, perBlock) : index;
  ExprRef within =
      perBlock ? Expr::binary(ExprOp::Mod, index, perBlock) : Expr::constant(0);

  composite.body.clear();
  for (size_t i = 0; i < parts.size() && i < composite.parts.size(); ++i)
    composite.parts[i].schedule = std::make_shared<ir::Schedule>(*parts[i]);
  for (const ir::Schedule *part : parts) {
    std::map<unsigned, ExprRef> bound =
        ir::partParameters(composite.topology, *part);
    // Loop variables get fresh slots after the composite's own.
    std::map<unsigned, unsigned> moved;
    // The parts' `contributor` (a reduce-scatter's invariant reads it) is
    // the composite's.
    if (part->contributorSlot) {
      if (!composite.contributorSlot) {
        composite.contributorSlot = composite.numSlots();
        composite.slotNames.push_back("contributor");
      }
      moved.emplace(*part->contributorSlot, *composite.contributorSlot);
    }
    auto slotFor = [&](unsigned slot) {
      auto [it, fresh] = moved.emplace(slot, composite.numSlots());
      if (fresh)
        composite.slotNames.push_back(part->slotNames[slot]);
      return it->second;
    };
    unsigned blockOf = *blockSlot(part->collective.kind);
    auto rename = [&](const ExprRef &e, ir::ExprRole role) {
      return ir::substitute(e, [&](const Expr &v) -> ExprRef {
        if (v.slot < ir::NumFixedSlots) {
          if (role != ir::ExprRole::Selector &&
              role != ir::ExprRole::Invariant)
            return nullptr;
          if (v.slot == blockOf)
            return block;
          if (v.slot == ir::SlotIndex)
            return within;
          return nullptr;
        }
        if (auto it = bound.find(v.slot); it != bound.end())
          return it->second;
        return Expr::var(v.name, slotFor(v.slot), v.loc);
      });
    };
    std::vector<ir::BodyItem> body = part->body;
    // A part's invariants carry over with its blocks read as pieces, so the
    // composite is proved by induction wherever its parts are. (A copy
    // part of a reduction says which ranks hold a piece's final value;
    // prove/Induction.h reads it so.)
    ir::rewriteBody(body, rename,
                    [&](ir::Loop &loop) { loop.slot = slotFor(loop.slot); });
    for (ir::BodyItem &item : body)
      composite.body.push_back(std::move(item));
  }
}

bool library::composeAll(
    Program &program,
    llvm::function_ref<const ir::Schedule *(llvm::StringRef)> findElsewhere,
    DiagnosticEngine &diags) {
  bool ok = true;
  for (ir::Schedule &composite : program.schedules) {
    if (composite.parts.empty() || !composite.body.empty())
      continue;
    if (!ir::hasSplit(composite.collective.kind)) {
      diags.error(composite.parts.front().loc,
                  "a composition cuts the message into a piece per rank, "
                  "which makes a " +
                      ir::collectiveKindList(ir::hasSplit) +
                      " (000 §4.7.1); '" + composite.name + "' is " +
                      ir::collectiveKindName(composite.collective.kind));
      ok = false;
      continue;
    }
    std::vector<const ir::Schedule *> parts;
    for (size_t i = 0; i < composite.parts.size(); ++i) {
      const ir::PartRef &ref = composite.parts[i];
      const ir::Schedule *part =
          ref.name == composite.name ? nullptr : program.findSchedule(ref.name);
      if (!part && ref.name != composite.name)
        part = findElsewhere(ref.name);
      if (!part) {
        diags.error(ref.loc,
                    ref.name == composite.name
                        ? "a schedule cannot be a part of itself"
                        : "unknown schedule '" + ref.name +
                              "'; a part names a schedule of this file or "
                              "of the library");
        break;
      }
      llvm::SMLoc where;
      if (llvm::Error e = checkPart(composite, *part, i, &where)) {
        diags.error(ref.loc, llvm::toString(std::move(e)));
        if (where.isValid())
          diags.note(where, where == part->loc
                                ? "'" + part->name + "' declared here"
                                : llvm::Twine("this transfer"));
        break;
      }
      if (!parts.empty() &&
          chunkText(partChunks(composite, *part)) !=
              chunkText(partChunks(composite, *parts.front()))) {
        diags.error(ref.loc,
                    "'" + ref.name + "' cuts a block into " +
                        chunkText(partChunks(composite, *part)) +
                        " chunks and '" + parts.front()->name + "' into " +
                        chunkText(partChunks(composite, *parts.front())) +
                        "; the parts of a composition must agree");
        break;
      }
      parts.push_back(part);
    }
    if (parts.size() != composite.parts.size()) {
      ok = false;
      continue;
    }
    compose(composite, parts);
  }
  return ok;
}
