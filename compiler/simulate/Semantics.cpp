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
  switch (collective.kind) {
  case CollectiveKind::Broadcast:
  case CollectiveKind::Reduce:
  case CollectiveKind::Scatter:
  case CollectiveKind::Gather:
    if (collective.root < 0 || collective.root >= p)
      return fail("root " + std::to_string(collective.root) +
                  " is outside 0.." + std::to_string(p - 1));
    break;
  default:
    break;
  }
  return Semantics(collective, p, chunks);
}

bool Semantics::usesOrigin() const { return !fixedOrigin(); }

bool Semantics::usesDest() const { return !fixedDest(); }

std::optional<int64_t> Semantics::fixedOrigin() const {
  switch (collective.kind) {
  case CollectiveKind::Broadcast:
  case CollectiveKind::Scatter:
    return collective.root;
  case CollectiveKind::Reduce:
  case CollectiveKind::Allreduce:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::Scan:
    return 0;
  default:
    return std::nullopt;
  }
}

std::optional<int64_t> Semantics::fixedDest() const {
  switch (collective.kind) {
  case CollectiveKind::Reduce:
  case CollectiveKind::Gather:
    return collective.root;
  case CollectiveKind::Broadcast:
  case CollectiveKind::Allreduce:
  case CollectiveKind::Allgather:
  case CollectiveKind::Scan:
    return 0;
  default:
    return std::nullopt;
  }
}

int64_t Semantics::shiftDest(int64_t origin) const {
  int64_t q = collective.shift % p;
  return ((origin + q) % p + p) % p;
}

void Semantics::forEachChunk(std::optional<int64_t> origin,
                             std::optional<int64_t> dest,
                             std::optional<int64_t> index,
                             llvm::function_ref<void(ChunkKey)> fn) const {
  auto inRanks = [&](int64_t v) { return v >= 0 && v < p; };
  int64_t kLo = 0, kHi = chunks - 1;
  if (index) {
    if (*index < 0 || *index >= chunks)
      return;
    kLo = kHi = *index;
  }
  int64_t oLo = 0, oHi = p - 1;
  if (auto fixed = fixedOrigin()) {
    if (origin && *origin != *fixed)
      return;
    oLo = oHi = *fixed;
  } else if (origin) {
    if (!inRanks(*origin))
      return;
    oLo = oHi = *origin;
  }
  bool isShift = collective.kind == CollectiveKind::Shift;
  std::optional<int64_t> fixedD = fixedDest();
  for (int64_t o = oLo; o <= oHi; ++o) {
    int64_t dLo = 0, dHi = p - 1;
    if (isShift) {
      dLo = dHi = shiftDest(o);
    } else if (fixedD) {
      dLo = dHi = *fixedD;
    }
    if (dest) {
      if (*dest < dLo || *dest > dHi)
        continue;
      dLo = dHi = *dest;
    }
    for (int64_t d = dLo; d <= dHi; ++d)
      for (int64_t k = kLo; k <= kHi; ++k)
        fn(makeChunkKey(o, d, k));
  }
}

uint64_t Semantics::universeSize() const {
  uint64_t origins = fixedOrigin() ? 1 : static_cast<uint64_t>(p);
  uint64_t dests = (fixedDest() || collective.kind == CollectiveKind::Shift)
                       ? 1
                       : static_cast<uint64_t>(p);
  return origins * dests * static_cast<uint64_t>(chunks);
}

void Semantics::initial(
    int64_t rank,
    llvm::function_ref<void(ChunkKey, const Contributions &)> fn) const {
  Contributions mine = Contributions::single(rank);
  auto all = [&](int64_t o, int64_t d) {
    for (int64_t k = 0; k < chunks; ++k)
      fn(makeChunkKey(o, d, k), mine);
  };
  switch (collective.kind) {
  case CollectiveKind::Broadcast:
    if (rank == collective.root)
      all(rank, 0);
    return;
  case CollectiveKind::Reduce:
    all(0, collective.root);
    return;
  case CollectiveKind::Allreduce:
  case CollectiveKind::Scan:
    all(0, 0);
    return;
  case CollectiveKind::Allgather:
    all(rank, 0);
    return;
  case CollectiveKind::ReduceScatter:
    for (int64_t t = 0; t < p; ++t)
      all(0, t);
    return;
  case CollectiveKind::Scatter:
    if (rank == collective.root)
      for (int64_t t = 0; t < p; ++t)
        all(rank, t);
    return;
  case CollectiveKind::Gather:
    all(rank, collective.root);
    return;
  case CollectiveKind::Alltoall:
  case CollectiveKind::Alltoallv:
    for (int64_t t = 0; t < p; ++t)
      all(rank, t);
    return;
  case CollectiveKind::Shift:
    all(rank, shiftDest(rank));
    return;
  }
}

void Semantics::required(
    int64_t rank,
    llvm::function_ref<void(ChunkKey, const Contributions &)> fn) const {
  auto each = [&](int64_t o, int64_t d, const Contributions &c) {
    for (int64_t k = 0; k < chunks; ++k)
      fn(makeChunkKey(o, d, k), c);
  };
  Contributions everyone = Contributions::range(0, p - 1);
  switch (collective.kind) {
  case CollectiveKind::Broadcast:
    each(collective.root, 0, Contributions::single(collective.root));
    return;
  case CollectiveKind::Reduce:
    if (rank == collective.root)
      each(0, rank, everyone);
    return;
  case CollectiveKind::Allreduce:
    each(0, 0, everyone);
    return;
  case CollectiveKind::Allgather:
    for (int64_t o = 0; o < p; ++o)
      each(o, 0, Contributions::single(o));
    return;
  case CollectiveKind::ReduceScatter:
    each(0, rank, everyone);
    return;
  case CollectiveKind::Scatter:
    each(collective.root, rank, Contributions::single(collective.root));
    return;
  case CollectiveKind::Gather:
    if (rank == collective.root)
      for (int64_t o = 0; o < p; ++o)
        each(o, rank, Contributions::single(o));
    return;
  case CollectiveKind::Scan:
    each(0, 0, Contributions::range(0, rank));
    return;
  case CollectiveKind::Alltoall:
  case CollectiveKind::Alltoallv:
    for (int64_t o = 0; o < p; ++o)
      each(o, rank, Contributions::single(o));
    return;
  case CollectiveKind::Shift: {
    // The block that lands here came from rank - q.
    int64_t q = collective.shift % p;
    int64_t o = ((rank - q) % p + p) % p;
    each(o, rank, Contributions::single(o));
    return;
  }
  }
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
