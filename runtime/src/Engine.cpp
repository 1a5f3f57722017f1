// The schedule engine: each rank's chunks per buffer, self-describing
// messages, deliveries in the simulator's order (compiler/simulate/
// Simulator.h), and the collectives' inputs and outputs in MPI's layout.
//
// Message format (native byte order; both ends run the same binary layout):
//   uint64 n; n records {uint64 key, int64 lo, int64 hi, uint64 ordered};
//   then the n chunks' bytes, in record order. A chunk's length follows from
//   its index and the call's count, which every rank shares.

#include "collc/Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace collc::rt {

namespace {
constexpr int64_t maxChunkIndices = int64_t(1) << 23; // as the simulator
constexpr int tagLimit = 32767; // the least MPI_TAG_UB the standard allows

bool isReduction(Kind k) {
  return k == Kind::Reduce || k == Kind::Allreduce ||
         k == Kind::ReduceScatter || k == Kind::Scan;
}
bool isRooted(Kind k) {
  return k == Kind::Broadcast || k == Kind::Reduce || k == Kind::Scatter ||
         k == Kind::Gather;
}

template <typename T> void put(std::vector<char> &out, T v) {
  const char *b = reinterpret_cast<const char *>(&v);
  out.insert(out.end(), b, b + sizeof v);
}
template <typename T> T get(const char *&in) {
  T v;
  std::memcpy(&v, in, sizeof v);
  in += sizeof v;
  return v;
}
} // namespace

Engine::Engine() = default;
Engine::~Engine() = default;

int Engine::fail(int code, const char *message) const {
  std::fprintf(stderr, "collc: %s: %s\n", call.name, message);
  return code;
}

int Engine::connect(const Call &c) {
  call = c;
  if (call.count < 0)
    return fail(MPI_ERR_COUNT, "negative count");
  if (call.type == MPI_DATATYPE_NULL)
    return fail(MPI_ERR_TYPE, "null datatype");
  int typeSize = 0;
  MPI_Aint lb = 0, trueLb = 0, trueExtent = 0;
  if (MPI_Type_size(call.type, &typeSize) != MPI_SUCCESS ||
      MPI_Type_get_extent(call.type, &lb, &extent) != MPI_SUCCESS ||
      MPI_Type_get_true_extent(call.type, &trueLb, &trueExtent) !=
          MPI_SUCCESS)
    return fail(MPI_ERR_TYPE, "invalid datatype");
  // Chunks are moved as bytes: the type must be contiguous.
  if (lb != 0 || trueLb != 0 || typeSize != extent || trueExtent != extent ||
      extent == 0)
    return fail(MPI_ERR_TYPE,
                "only contiguous datatypes are supported (size == extent)");
  if (int rc = makeMpiBackend(call.comm, backend))
    return fail(rc, "cannot duplicate the communicator");
  me = backend->rank();
  p = backend->size();
  if (isRooted(call.kind) && (call.root < 0 || call.root >= p))
    return fail(MPI_ERR_ROOT, "root outside the communicator");
  if (isReduction(call.kind)) {
    if (call.op == MPI_OP_NULL)
      return fail(MPI_ERR_OP, "null reduction operator");
    int flag = 1;
    if (MPI_Op_commutative(call.op, &flag) != MPI_SUCCESS)
      return fail(MPI_ERR_OP, "invalid reduction operator");
    commutative = flag != 0;
  }
  return MPI_SUCCESS;
}

int64_t Engine::chunkBegin(int64_t k) const {
  int64_t base = call.count / chunks, extra = call.count % chunks;
  return k * base + std::min(k, extra);
}
int64_t Engine::chunkLength(int64_t k) const {
  return call.count / chunks + (k < call.count % chunks ? 1 : 0);
}

const char *Engine::inputBlock(int64_t origin, int64_t dest) const {
  const bool inPlace = call.send == MPI_IN_PLACE;
  const char *send = static_cast<const char *>(call.send);
  const char *recv = static_cast<const char *>(call.recv);
  const MPI_Aint block = extent * call.count;
  switch (call.kind) {
  case Kind::Broadcast:
    return recv;
  case Kind::Reduce:
  case Kind::Allreduce:
  case Kind::Scan:
  case Kind::Shift:
    return inPlace ? recv : send;
  case Kind::Allgather:
  case Kind::Gather:
    return inPlace ? recv + origin * block : send;
  case Kind::ReduceScatter:
  case Kind::Scatter:
  case Kind::Alltoall:
    return (inPlace ? recv : send) + dest * block;
  }
  return nullptr;
}

char *Engine::outputBlock(int64_t origin, int64_t dest) const {
  char *recv = static_cast<char *>(call.recv);
  const MPI_Aint block = extent * call.count;
  switch (call.kind) {
  case Kind::Broadcast:
  case Kind::Reduce:
  case Kind::Allreduce:
  case Kind::Scan:
  case Kind::Shift:
  case Kind::ReduceScatter:
    return recv;
  case Kind::Scatter:
    // The root's own block stays in place under MPI_IN_PLACE.
    return call.recv == MPI_IN_PLACE ? nullptr : recv;
  case Kind::Allgather:
  case Kind::Gather:
  case Kind::Alltoall:
    return recv + origin * block;
  }
  (void)dest;
  return nullptr;
}

int Engine::start(int numBuffers, int64_t numChunks) {
  if (numChunks < 1 || numChunks > maxChunkIndices)
    return fail(MPI_ERR_ARG, "chunk count outside 1..2^23");
  chunks = numChunks;
  buffers.assign(static_cast<size_t>(numBuffers), {});
  // Pre-condition per kind: compiler/simulate/Semantics.h's table.
  std::vector<std::pair<int64_t, int64_t>> blocks; // (origin, dest)
  const int64_t root = call.root;
  switch (call.kind) {
  case Kind::Broadcast:
    if (me == root)
      blocks.push_back({root, 0});
    break;
  case Kind::Reduce:
    blocks.push_back({0, root});
    break;
  case Kind::Allreduce:
  case Kind::Scan:
    blocks.push_back({0, 0});
    break;
  case Kind::Allgather:
    blocks.push_back({me, 0});
    break;
  case Kind::ReduceScatter:
    for (int64_t t = 0; t < p; ++t)
      blocks.push_back({0, t});
    break;
  case Kind::Scatter:
    if (me == root)
      for (int64_t t = 0; t < p; ++t)
        blocks.push_back({root, t});
    break;
  case Kind::Gather:
    blocks.push_back({me, root});
    break;
  case Kind::Alltoall:
    for (int64_t t = 0; t < p; ++t)
      blocks.push_back({me, t});
    break;
  case Kind::Shift:
    blocks.push_back({me, ((me + call.shift) % p + p) % p});
    break;
  }
  for (auto [origin, dest] : blocks) {
    const char *block = inputBlock(origin, dest);
    for (int64_t k = 0; k < chunks; ++k) {
      Value v;
      v.lo = v.hi = me;
      const char *data = block ? block + chunkBegin(k) * extent : nullptr;
      if (data)
        v.bytes.assign(data, data + chunkLength(k) * extent);
      for (auto &buffer : buffers)
        buffer[chunkKey(origin, dest, k)] = v;
    }
  }
  return MPI_SUCCESS;
}

void Engine::sendAll(int64_t peer, int fromBuffer) {
  std::vector<ChunkKey> keys;
  for (const auto &entry : buffers[fromBuffer])
    keys.push_back(entry.first);
  sendChunks(peer, fromBuffer, keys);
}

void Engine::sendChunks(int64_t peer, int fromBuffer,
                        const std::vector<ChunkKey> &keys) {
  OutMessage m;
  m.peer = static_cast<int>(peer);
  size_t dataBytes = 0;
  for (ChunkKey key : keys)
    dataBytes += buffers[fromBuffer].at(key).bytes.size();
  m.bytes.reserve(8 + keys.size() * 32 + dataBytes);
  put<uint64_t>(m.bytes, keys.size());
  for (ChunkKey key : keys) {
    const Value &v = buffers[fromBuffer].at(key);
    put<uint64_t>(m.bytes, key);
    put<int64_t>(m.bytes, v.lo);
    put<int64_t>(m.bytes, v.hi);
    put<uint64_t>(m.bytes, v.ordered ? 1 : 0);
  }
  for (ChunkKey key : keys) {
    const auto &bytes = buffers[fromBuffer].at(key).bytes;
    m.bytes.insert(m.bytes.end(), bytes.begin(), bytes.end());
  }
  sends.push_back(std::move(m));
}

void Engine::receive(int64_t sender, uint64_t intoMask, bool reduce) {
  receives.push_back({sender, intoMask, reduce});
}

int Engine::deliver(int into, ChunkKey key, Value value, bool reduce) {
  auto &buffer = buffers[static_cast<size_t>(into)];
  auto it = buffer.find(key);
  if (!reduce || it == buffer.end()) {
    buffer[key] = std::move(value);
    return MPI_SUCCESS;
  }
  Value &held = it->second;
  const bool adjacent = value.ordered && held.ordered &&
                        (value.hi + 1 == held.lo || held.hi + 1 == value.lo);
  if (!commutative && !adjacent)
    return fail(MPI_ERR_OP, "this schedule cannot fold a non-commutative "
                            "operator in rank order");
  // Rank order whenever the operands allow it, so every rank computes the
  // same floating-point value.
  const bool incomingIsLower = value.lo < held.lo;
  const int64_t n = chunkLength(index(key));
  if (held.bytes.size() != value.bytes.size())
    return fail(MPI_ERR_INTERN, "chunk sizes differ");
  if (int rc = reduceInto(value.bytes.data(), held.bytes.data(),
                          static_cast<int>(n), call.type, call.op,
                          incomingIsLower))
    return fail(rc, "reduction failed");
  held.ordered = adjacent;
  held.lo = std::min(held.lo, value.lo);
  held.hi = std::max(held.hi, value.hi);
  return MPI_SUCCESS;
}

int Engine::endStep(int64_t step, const char *name) {
  std::vector<int> sources;
  for (const Expected &e : receives)
    sources.push_back(static_cast<int>(e.sender));
  std::vector<std::vector<char>> received;
  int rc = backend->exchange(static_cast<int>(step % tagLimit), sends, sources,
                             received);
  sends.clear();
  std::vector<Expected> expected;
  expected.swap(receives);
  if (rc != MPI_SUCCESS) {
    std::string why = std::string("communication failed in ") + name;
    return fail(rc, why.c_str());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::vector<char> &message = received[i];
    const char *in = message.data();
    const char *end = in + message.size();
    if (message.size() < 8)
      return fail(MPI_ERR_INTERN, "truncated message");
    uint64_t n = get<uint64_t>(in);
    if (static_cast<uint64_t>(end - in) / 32 < n)
      return fail(MPI_ERR_INTERN, "truncated message");
    const char *data = in + n * 32;
    for (uint64_t c = 0; c < n; ++c) {
      ChunkKey key = get<uint64_t>(in);
      Value v;
      v.lo = get<int64_t>(in);
      v.hi = get<int64_t>(in);
      v.ordered = get<uint64_t>(in) != 0;
      size_t bytes = static_cast<size_t>(chunkLength(index(key)) * extent);
      if (static_cast<size_t>(end - data) < bytes)
        return fail(MPI_ERR_INTERN, "truncated message");
      v.bytes.assign(data, data + bytes);
      data += bytes;
      for (int b = 0; b < 64; ++b)
        if (expected[i].intoMask >> b & 1)
          if (int rc = deliver(b, key, v, expected[i].reduce))
            return rc;
    }
  }
  return MPI_SUCCESS;
}

int Engine::finish() {
  // Post-condition per kind: compiler/simulate/Semantics.h's table.
  std::vector<std::pair<int64_t, int64_t>> blocks;
  const int64_t root = call.root;
  switch (call.kind) {
  case Kind::Broadcast:
    blocks.push_back({root, 0});
    break;
  case Kind::Reduce:
    if (me == root)
      blocks.push_back({0, root});
    break;
  case Kind::Allreduce:
  case Kind::Scan:
    blocks.push_back({0, 0});
    break;
  case Kind::Allgather:
    for (int64_t o = 0; o < p; ++o)
      blocks.push_back({o, 0});
    break;
  case Kind::ReduceScatter:
    blocks.push_back({0, me});
    break;
  case Kind::Scatter:
    blocks.push_back({root, me});
    break;
  case Kind::Gather:
    if (me == root)
      for (int64_t o = 0; o < p; ++o)
        blocks.push_back({o, root});
    break;
  case Kind::Alltoall:
    for (int64_t o = 0; o < p; ++o)
      blocks.push_back({o, me});
    break;
  case Kind::Shift:
    blocks.push_back({((me - call.shift) % p + p) % p, me});
    break;
  }
  const auto &result = buffers.front();
  for (auto [origin, dest] : blocks) {
    char *block = outputBlock(origin, dest);
    if (!block)
      continue;
    for (int64_t k = 0; k < chunks; ++k) {
      auto it = result.find(chunkKey(origin, dest, k));
      if (it == result.end())
        return fail(MPI_ERR_INTERN, "a result chunk never arrived");
      if (!it->second.bytes.empty())
        std::memmove(block + chunkBegin(k) * extent, it->second.bytes.data(),
                     it->second.bytes.size());
    }
  }
  buffers.clear();
  return MPI_SUCCESS;
}

} // namespace collc::rt
