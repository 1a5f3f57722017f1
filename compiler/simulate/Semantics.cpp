#include "simulate/Semantics.h"

#include "ir/Instantiate.h"

#include <algorithm>

using namespace collc;
using namespace collc::simulate;
using ir::CollectiveKind;

Contributions Contributions::range(int64_t lo, int64_t hi) {
  Contributions c;
  if (lo <= hi)
    c.runList.push_back({lo, hi, 1});
  return c;
}

void Contributions::add(const Contributions &other) {
  if (other.runList.empty())
    return;
  if (runList.empty()) {
    runList = other.runList;
    return;
  }
  // The common fold of two adjacent intervals stays one run.
  if (isInterval() && other.isInterval()) {
    Run &a = runList[0];
    const Run &b = other.runList[0];
    if (a.hi + 1 == b.lo) {
      a.hi = b.hi;
      return;
    }
    if (b.hi + 1 == a.lo) {
      a.lo = b.lo;
      return;
    }
  }
  // General case: sweep the run boundaries of both, summing multiplicities.
  llvm::SmallVector<std::pair<int64_t, int64_t>, 8> events; // (rank, delta)
  for (llvm::ArrayRef<Run> list : {runs(), other.runs()})
    for (const Run &r : list) {
      events.push_back({r.lo, r.count});
      events.push_back({r.hi + 1, -r.count});
    }
  llvm::sort(events);
  llvm::SmallVector<Run, 1> merged;
  int64_t level = 0;
  for (size_t i = 0; i < events.size();) {
    int64_t at = events[i].first;
    for (; i < events.size() && events[i].first == at; ++i)
      level += events[i].second;
    if (i == events.size())
      break;
    int64_t next = events[i].first;
    if (level == 0)
      continue;
    if (!merged.empty() && merged.back().hi + 1 == at &&
        merged.back().count == level)
      merged.back().hi = next - 1;
    else
      merged.push_back({at, next - 1, level});
  }
  runList = std::move(merged);
}

int64_t Contributions::count(int64_t rank) const {
  for (const Run &r : runList)
    if (r.lo <= rank && rank <= r.hi)
      return r.count;
  return 0;
}

std::string Contributions::str() const {
  std::string s = "{";
  for (size_t i = 0; i < runList.size(); ++i) {
    const Run &r = runList[i];
    if (i)
      s += ", ";
    s += std::to_string(r.lo);
    if (r.hi != r.lo)
      s += ".." + std::to_string(r.hi);
    if (r.count != 1)
      s += " (x" + std::to_string(r.count) + ")";
  }
  return s + "}";
}

llvm::Expected<Semantics> Semantics::make(const ir::Collective &collective,
                                          int64_t p, int64_t chunks) {
  auto fail = [&](const std::string &why) {
    return llvm::make_error<ir::EvalFailure>(
        ir::collectiveKindName(collective.kind).str() + ": " + why,
        llvm::SMLoc());
  };
  if (p < 1 || p > maxRanks)
    return fail("number of ranks " + std::to_string(p) + " is outside 1.." +
                std::to_string(maxRanks));
  if (chunks < 1 || chunks > maxChunkIndices)
    return fail("chunk count " + std::to_string(chunks) + " is outside 1.." +
                std::to_string(maxChunkIndices));
  if (ir::isRooted(collective.kind) &&
      (collective.root < 0 || collective.root >= p))
    return fail("root " + std::to_string(collective.root) + " is outside 0.." +
                std::to_string(p - 1));
  // ir/Instantiate.h evaluates a permutation and refuses one that is no
  // bijection.
  if (collective.kind == CollectiveKind::Permute &&
      (!collective.permutation ||
       collective.permutation->size() != static_cast<size_t>(p)))
    return fail("its permutation is not evaluated for " + std::to_string(p) +
                " ranks");
  return Semantics(collective, p, chunks);
}

bool Semantics::usesOrigin() const { return !fixedOrigin(); }

bool Semantics::usesDest() const { return !fixedDest(); }

Semantics::Semantics(const ir::Collective &collective, int64_t p,
                     int64_t chunks)
    : collective(collective), p(p), chunks(chunks),
      means(&ir::meaningOf(collective.kind)) {
  originFixed = means->fixedOrigin(collective.root);
  destFixed = means->fixedDest(collective.root);
  destSlots = means->destsPerOrigin(p);
  if (collective.kind == CollectiveKind::Permute) {
    const std::vector<int64_t> &to = *collective.permutation;
    auto from = std::make_shared<std::vector<int64_t>>(to.size());
    for (size_t o = 0; o < to.size(); ++o)
      (*from)[static_cast<size_t>(to[o])] = static_cast<int64_t>(o);
    sourceOf = std::move(from);
  }
}

int64_t Semantics::destOf(int64_t origin) const {
  if (collective.kind == CollectiveKind::Permute)
    return (*collective.permutation)[static_cast<size_t>(origin)];
  int64_t q = collective.shift % p;
  return ((origin + q) % p + p) % p;
}

int64_t Semantics::originOf(int64_t dest) const {
  if (collective.kind == CollectiveKind::Permute)
    return (*sourceOf)[static_cast<size_t>(dest)];
  int64_t q = collective.shift % p;
  return ((dest - q) % p + p) % p;
}

uint64_t Semantics::universeSize() const {
  uint64_t origins = fixedOrigin() ? 1 : static_cast<uint64_t>(p);
  return origins * static_cast<uint64_t>(destsPerOrigin()) *
         static_cast<uint64_t>(chunks);
}

uint64_t Semantics::idOf(int64_t origin, int64_t dest, int64_t index) const {
  int64_t nd = destsPerOrigin();
  uint64_t slot = static_cast<uint64_t>(origin - originBase()) * nd +
                  static_cast<uint64_t>(nd == 1 ? 0 : dest);
  return slot * static_cast<uint64_t>(chunks) + static_cast<uint64_t>(index);
}

ChunkKey Semantics::keyOf(uint64_t id) const {
  uint64_t nd = static_cast<uint64_t>(destsPerOrigin());
  int64_t index = static_cast<int64_t>(id % chunks);
  uint64_t slot = id / chunks;
  int64_t origin = originBase() + static_cast<int64_t>(slot / nd);
  int64_t dest = nd != 1       ? static_cast<int64_t>(slot % nd)
                 : fixedDest() ? *fixedDest()
                               : destOf(origin);
  return makeChunkKey(origin, dest, index);
}

std::pair<int64_t, int64_t> Semantics::destBounds(int64_t oLo,
                                                  int64_t oHi) const {
  if (auto d = fixedDest())
    return {*d, *d};
  if (!destFromOrigin())
    return {0, p - 1};
  if (collective.kind == CollectiveKind::Permute)
    return oLo == oHi ? std::pair{destOf(oLo), destOf(oLo)}
                      : std::pair<int64_t, int64_t>{0, p - 1};
  int64_t lo = destOf(oLo), hi = destOf(oHi);
  // The dests are oLo+q .. oHi+q mod p: one range unless it wraps.
  if (hi - lo == oHi - oLo)
    return {lo, hi};
  return {0, p - 1};
}

Semantics::Box Semantics::universeBox() const {
  int64_t oLo = originBase(), oHi = fixedOrigin() ? oLo : p - 1;
  auto [dLo, dHi] = destBounds(oLo, oHi);
  return {oLo, oHi, dLo, dHi, 0, chunks - 1};
}

IdRange Semantics::block(int64_t o, int64_t dLo, int64_t dHi) const {
  return {idOf(o, dLo, 0), idOf(o, dHi, chunks - 1)};
}

void Semantics::appendIds(const Box &box, std::vector<IdRange> &out) const {
  auto push = [&](uint64_t lo, uint64_t hi) {
    if (!out.empty() && out.back().hi + 1 == lo)
      out.back().hi = hi;
    else
      out.push_back({lo, hi});
  };
  bool allIndices = box.kLo == 0 && box.kHi == chunks - 1;
  bool allDests =
      destFollowsOrigin() || (box.dLo == 0 && box.dHi == p - 1);
  if (allIndices && allDests) {
    push(idOf(box.oLo, box.dLo, 0), idOf(box.oHi, box.dHi, chunks - 1));
    return;
  }
  for (int64_t o = box.oLo; o <= box.oHi; ++o) {
    if (allIndices) {
      push(idOf(o, box.dLo, 0), idOf(o, box.dHi, chunks - 1));
      continue;
    }
    int64_t dLo = destFollowsOrigin() ? 0 : box.dLo;
    int64_t dHi = destFollowsOrigin() ? 0 : box.dHi;
    for (int64_t d = dLo; d <= dHi; ++d)
      push(idOf(o, d, box.kLo), idOf(o, d, box.kHi));
  }
}

void Semantics::boxesOf(IdRange ids,
                        llvm::function_ref<void(const Box &)> fn) const {
  uint64_t k = static_cast<uint64_t>(chunks);
  uint64_t nd = static_cast<uint64_t>(destsPerOrigin());
  auto dest = [&](int64_t o, uint64_t slot) {
    return nd == 1 ? destBounds(o, o).first : static_cast<int64_t>(slot);
  };
  uint64_t at = ids.lo;
  while (at <= ids.hi) {
    uint64_t left = ids.hi - at + 1;
    int64_t index = static_cast<int64_t>(at % k);
    uint64_t slot = at / k;
    int64_t o = originBase() + static_cast<int64_t>(slot / nd);
    uint64_t di = slot % nd;
    if (index != 0 || left < k) { // part of one (origin, dest)'s indices
      int64_t last =
          static_cast<int64_t>(std::min<uint64_t>(k - 1, index + left - 1));
      int64_t d = dest(o, di);
      fn({o, o, d, d, index, last});
      at += static_cast<uint64_t>(last - index) + 1;
      continue;
    }
    uint64_t blocks = left / k; // whole (origin, dest) blocks left
    if (di != 0 || blocks < nd) { // part of one origin's dests
      uint64_t lastSlot = std::min<uint64_t>(nd - 1, di + blocks - 1);
      fn({o, o, dest(o, di), dest(o, lastSlot), 0, chunks - 1});
      at += (lastSlot - di + 1) * k;
      continue;
    }
    int64_t origins = static_cast<int64_t>(left / (nd * k));
    auto [dLo, dHi] = destBounds(o, o + origins - 1);
    fn({o, o + origins - 1, dLo, dHi, 0, chunks - 1});
    at += static_cast<uint64_t>(origins) * nd * k;
  }
}

void Semantics::initial(
    int64_t rank,
    llvm::function_ref<void(IdRange, const Contributions &)> fn) const {
  Contributions mine = Contributions::single(rank);
  meaning::forEachBlock(means->initial, rank, frame(),
                        [&](int64_t o, int64_t dLo, int64_t dHi) {
                          fn(block(o, dLo, dHi), mine);
                        });
}

void Semantics::required(
    int64_t rank,
    llvm::function_ref<void(IdRange, const Contributions &)> fn) const {
  meaning::forEachBlock(
      means->required, rank, frame(), [&](int64_t o, int64_t dLo, int64_t dHi) {
        meaning::Span<int64_t> from =
            meaning::carried(means->carries, rank, o, int64_t(0), p - 1);
        fn(block(o, dLo, dHi), Contributions::range(from.lo, from.hi));
      });
}

std::string Semantics::describeChunk(ChunkKey key) const {
  bool o = usesOrigin(), d = usesDest();
  if (!o && !d)
    return "chunk " + std::to_string(chunkIndex(key));
  std::string s = "(";
  if (o)
    s += "origin " + std::to_string(chunkOrigin(key));
  if (d)
    s += std::string(o ? ", " : "") + "dest " + std::to_string(chunkDest(key));
  if (chunks > 1)
    s += ", index " + std::to_string(chunkIndex(key));
  return s + ")";
}
