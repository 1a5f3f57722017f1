#include "collc/Datatype.h"
#include "collc/KeptMemory.h"

#include <algorithm>
#include <climits>
#include <cstddef>

namespace collc::rt {
namespace {

/// Copies of inner types, block after block, as a type's step lays them
/// out: whether the data of each lies past the data of the one before
/// (true spans, so neither overlap nor interleaving passes), which is the
/// order MPI_Pack reads them in.
class AscendingCopies {
public:
  /// `length` copies of `inner`, the first at byte `at`.
  void block(MPI_Aint at, int64_t length, MPI_Datatype inner) {
    MPI_Aint lb = 0, extent = 0, trueLb = 0, trueExtent = 0;
    if (PMPI_Type_get_extent(inner, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(inner, &trueLb, &trueExtent) != MPI_SUCCESS) {
      ascending = false;
      return;
    }
    if (length <= 0 || trueExtent == 0)
      return;
    if ((length > 1 && extent < trueExtent) || (started && at + trueLb < end))
      ascending = false;
    started = true;
    end = at + (length - 1) * extent + trueLb + trueExtent;
  }
  bool ascending = true;

private:
  bool started = false;
  MPI_Aint end = 0;
};

/// Whether a step of combiner `combiner`, with these contents, lays its
/// data out in the order MPI_Pack reads it (its inner types' own order
/// aside). (Contiguous data, which describe() also asks for, is then in
/// order.)
bool keepsOrder(int combiner, const std::vector<int> &ints,
                const std::vector<MPI_Aint> &addrs,
                const std::vector<MPI_Datatype> &inner) {
  // One copy: predefined types of no inner type (Fortran's parameterized
  // ones), a duplicate, a type resized (its extent is checked where it is
  // repeated).
  if (combiner == MPI_COMBINER_F90_REAL ||
      combiner == MPI_COMBINER_F90_COMPLEX ||
      combiner == MPI_COMBINER_F90_INTEGER || combiner == MPI_COMBINER_DUP ||
      combiner == MPI_COMBINER_RESIZED)
    return true;
  if (ints.empty() || inner.empty() || ints[0] < 0)
    return false;
  const size_t count = static_cast<size_t>(ints[0]);
  // The contents' lengths for each combiner (MPI 4.0 §5.1.13); anything
  // else (a large-count type, say) is not taken to be in order.
  auto sizes = [&](size_t i, size_t a, size_t t) {
    return ints.size() == i && addrs.size() == a && inner.size() == t;
  };
  AscendingCopies copies;
  MPI_Aint lb = 0, extent = 0;
  if (PMPI_Type_get_extent(inner[0], &lb, &extent) != MPI_SUCCESS)
    return false;
  switch (combiner) {
  case MPI_COMBINER_SUBARRAY: // copies in array order, an extent apart
  case MPI_COMBINER_DARRAY:
    copies.block(0, 2, inner[0]);
    break;
  case MPI_COMBINER_CONTIGUOUS:
    if (!sizes(1, 0, 1))
      return false;
    copies.block(0, ints[0], inner[0]);
    break;
  case MPI_COMBINER_VECTOR: // count, blocklength, stride: every stride alike
    if (!sizes(3, 0, 1))
      return false;
    for (int64_t b = 0; b < std::min<int64_t>(ints[0], 2); ++b)
      copies.block(b * ints[2] * extent, ints[1], inner[0]);
    break;
  case MPI_COMBINER_HVECTOR: // count, blocklength; stride in bytes
    if (!sizes(2, 1, 1))
      return false;
    for (int64_t b = 0; b < std::min<int64_t>(ints[0], 2); ++b)
      copies.block(b * addrs[0], ints[1], inner[0]);
    break;
  case MPI_COMBINER_INDEXED: // count, blocklengths, displacements
    if (!sizes(1 + 2 * count, 0, 1))
      return false;
    for (size_t b = 0; b < count; ++b)
      copies.block(ints[1 + count + b] * extent, ints[1 + b], inner[0]);
    break;
  case MPI_COMBINER_INDEXED_BLOCK: // count, blocklength, displacements
    if (!sizes(2 + count, 0, 1))
      return false;
    for (size_t b = 0; b < count; ++b)
      copies.block(ints[2 + b] * extent, ints[1], inner[0]);
    break;
  case MPI_COMBINER_HINDEXED: // count, blocklengths; bytes
    if (!sizes(1 + count, count, 1))
      return false;
    for (size_t b = 0; b < count; ++b)
      copies.block(addrs[b], ints[1 + b], inner[0]);
    break;
  case MPI_COMBINER_HINDEXED_BLOCK: // count, blocklength; bytes
    if (!sizes(2, count, 1))
      return false;
    for (size_t b = 0; b < count; ++b)
      copies.block(addrs[b], ints[1], inner[0]);
    break;
  case MPI_COMBINER_STRUCT: // count, blocklengths; bytes; a type a block
    if (!sizes(1 + count, count, count))
      return false;
    for (size_t b = 0; b < count; ++b)
      copies.block(addrs[b], ints[1 + b], inner[b]);
    break;
  default:
    return false;
  }
  return copies.ascending;
}

/// The predefined types `type` is built of, up to two (more says nothing
/// new: the type mixes), and whether every step it is built by keeps its
/// data in packing order (`inOrder`, left false by one that does not).
/// MPI_Type_get_contents returns new handles for the derived ones, which
/// are freed here. A step MPI does not describe by int counts (an MPI 4.0
/// large-count type, whose envelope MPICH refuses) is taken to mix types
/// out of order: such a type is packed, by MPI_Pack, like any other.
void leaves(MPI_Datatype type, MPI_Datatype found[2], int &n, bool &inOrder) {
  int integers = 0, addresses = 0, types = 0, combiner = 0;
  if (PMPI_Type_get_envelope(type, &integers, &addresses, &types, &combiner) !=
      MPI_SUCCESS) {
    n = 3;
    inOrder = false;
    return;
  }
  if (combiner == MPI_COMBINER_NAMED) {
    for (int i = 0; i < std::min(n, 2); ++i)
      if (found[i] == type)
        return;
    if (n < 2)
      found[n] = type;
    n = n < 2 ? n + 1 : 3;
    return;
  }
  std::vector<int> ints(static_cast<size_t>(integers));
  std::vector<MPI_Aint> addrs(static_cast<size_t>(addresses));
  std::vector<MPI_Datatype> inner(static_cast<size_t>(types));
  if (PMPI_Type_get_contents(type, integers, addresses, types, ints.data(),
                             addrs.data(), inner.data()) != MPI_SUCCESS) {
    n = 3;
    inOrder = false;
    return;
  }
  inOrder = inOrder && keepsOrder(combiner, ints, addrs, inner);
  for (MPI_Datatype t : inner) {
    if (n <= 2 || inOrder)
      leaves(t, found, n, inOrder);
    // Predefined types, the Fortran parameterized ones included, are not
    // freed (MPI 4.0 §5.1.13).
    int ti = 0, ta = 0, tt = 0, tc = 0;
    if (PMPI_Type_get_envelope(t, &ti, &ta, &tt, &tc) != MPI_SUCCESS ||
        (tc != MPI_COMBINER_NAMED && tc != MPI_COMBINER_F90_REAL &&
         tc != MPI_COMBINER_F90_COMPLEX && tc != MPI_COMBINER_F90_INTEGER))
      PMPI_Type_free(&t);
  }
}

} // namespace

int describe(MPI_Datatype type, TypeInfo &info) {
  // A predefined type never changes: what was learnt of the last few
  // holds (a program alternates a few, a result's type and a checksum's).
  struct Known {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    TypeInfo info;
  };
  thread_local Known known[4];
  thread_local unsigned next = 0;
  for (const Known &k : known)
    if (k.type == type && type != MPI_DATATYPE_NULL) {
      info = k.info;
      return MPI_SUCCESS;
    }
  if (type == MPI_DATATYPE_NULL)
    return MPI_ERR_TYPE;
  info = TypeInfo();
  if (int rc = PMPI_Type_size(type, &info.size))
    return rc;
  if (info.size < 0) // MPI_UNDEFINED: an element of over 2 GiB
    return MPI_ERR_TYPE;
  if (int rc = PMPI_Type_get_extent(type, &info.lb, &info.extent))
    return rc;
  if (int rc = PMPI_Type_get_true_extent(type, &info.trueLb, &info.trueExtent))
    return rc;
  MPI_Datatype found[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
  int n = 0;
  info.inOrder = true;
  leaves(type, found, n, info.inOrder);
  int integers = 0, addresses = 0, types = 0, combiner = 0;
  info.named = PMPI_Type_get_envelope(type, &integers, &addresses, &types,
                                      &combiner) == MPI_SUCCESS &&
               combiner == MPI_COMBINER_NAMED;
  if (n == 1) {
    int baseSize = 0;
    MPI_Aint baseLb = 0, baseExtent = 0;
    PMPI_Type_size(found[0], &baseSize);
    PMPI_Type_get_extent(found[0], &baseLb, &baseExtent);
    // A pair type with padding (MPI_DOUBLE_INT: 12 bytes in 16) packs
    // closer than its C struct, which a fold over it steps by: only as
    // itself is it its own basic type.
    if (baseSize > 0 && info.size % baseSize == 0 &&
        (info.named || baseExtent == baseSize)) {
      info.base = found[0];
      info.perElement = info.size / baseSize;
    }
  }
  if (info.named) {
    known[next] = {type, info};
    next = (next + 1) % 4;
  }
  return MPI_SUCCESS;
}

int predefinedOpIndex(MPI_Op op) {
  int i = 0;
  for (MPI_Op named : {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR,
                       MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC,
                       MPI_MAXLOC, MPI_REPLACE, MPI_NO_OP}) {
    if (op == named)
      return i;
    ++i;
  }
  return -1;
}

int packElements(bool pack, void *at, int count, MPI_Datatype type,
                 char *packed, int bytes, int *position, MPI_Comm comm) {
  MPI_Aint trueLb = 0, trueExtent = 0;
  if (!at &&
      PMPI_Type_get_true_extent(type, &trueLb, &trueExtent) == MPI_SUCCESS &&
      trueLb != 0) {
    // At MPI_BOTTOM: from the data's first byte, by a type that places the
    // elements as far before it.
    const MPI_Aint back = -trueLb;
    MPI_Datatype shifted = MPI_DATATYPE_NULL;
    if (int rc = PMPI_Type_create_hindexed(1, &count, &back, type, &shifted))
      return rc;
    int rc = PMPI_Type_commit(&shifted);
    if (rc == MPI_SUCCESS)
      rc = packElements(pack, addressAt(nullptr, trueLb), 1, shifted, packed,
                        bytes, position, comm);
    PMPI_Type_free(&shifted);
    return rc;
  }
  return pack ? PMPI_Pack(at, count, type, packed, bytes, position, comm)
              : PMPI_Unpack(packed, bytes, position, at, count, type, comm);
}

int Staged::start(const void *buf, int64_t n, MPI_Datatype t,
                  const TypeInfo &info, bool read, bool write, MPI_Comm comm) {
  user = const_cast<void *>(buf);
  count = n;
  size = info.size;
  extent = info.extent;
  type = t;
  writeBack = false;
  // Nothing to move: the caller's pointer, as MPI would be given it (a
  // null one with data too, which the schedule refuses).
  if (n <= 0 || info.size == 0 || info.nullWithData(buf, n)) {
    data = static_cast<char *>(user);
    return MPI_SUCCESS;
  }
  if (info.contiguous(n)) {
    data = addressAt(user, info.trueLb);
    return MPI_SUCCESS;
  }
  copy.resize(static_cast<size_t>(info.size) * static_cast<size_t>(n));
  data = copy.data();
  writeBack = write;
  return read ? move(true, comm) : MPI_SUCCESS;
}

int Staged::move(bool pack, MPI_Comm comm) {
  // Elements per run: as many as fit MPI's int count of packed bytes.
  const int64_t run = std::max<int64_t>(1, INT_MAX / size);
  for (int64_t done = 0; done < count; done += run) {
    const int elements = static_cast<int>(std::min(run, count - done));
    int position = 0;
    if (int rc = packElements(pack, addressAt(user, done * extent), elements,
                              type, copy.data() + done * size, elements * size,
                              &position, comm))
      return rc;
  }
  return MPI_SUCCESS;
}

int Staged::finish(MPI_Comm comm, int64_t elements) {
  if (elements >= 0)
    count = std::min(count, elements);
  return writeBack ? move(false, comm) : MPI_SUCCESS;
}

int StagedBlocks::start(const void *buf, const int *counts, const int *displs,
                        MPI_Datatype type, const TypeInfo &info, int p,
                        bool read, bool write, bool copy, MPI_Comm comm) {
  user = static_cast<char *>(const_cast<void *>(buf));
  userCounts = counts;
  userDispls = displs;
  userType = type;
  extent = info.extent;
  bool packed = copy || !info.contiguous(2);
  writeBack = false;
  byteCounts.resize(static_cast<size_t>(p));
  byteDispls.resize(static_cast<size_t>(p));
  int64_t total = 0;
  for (int j = 0; j < p; ++j) {
    if (counts[j] < 0) {
      why = "a negative count";
      return MPI_ERR_COUNT;
    }
    const int64_t bytes = static_cast<int64_t>(counts[j]) * info.size;
    const int64_t at = static_cast<int64_t>(displs[j]) * info.extent;
    if (bytes > INT_MAX) {
      why = "a block over 2 GiB";
      return MPI_ERR_COUNT;
    }
    if (at < 0 || at > INT_MAX)
      packed = true;
    byteCounts[static_cast<size_t>(j)] = static_cast<int>(bytes);
    byteDispls[static_cast<size_t>(j)] = static_cast<int>(at);
    total += bytes;
  }
  if (info.nullWithData(user, total)) {
    why = "a null buffer where this rank has data";
    return MPI_ERR_BUFFER;
  }
  if (!packed) {
    base = addressAt(user, info.trueLb);
    data.clear(); // this call needs no copy
    return MPI_SUCCESS;
  }
  if (total > INT_MAX) {
    why = "over 2 GiB on one side of a rank";
    return MPI_ERR_COUNT;
  }
  data.resize(static_cast<size_t>(total));
  base = data.data();
  for (int j = 0, at = 0; j < p; ++j) {
    byteDispls[static_cast<size_t>(j)] = at;
    at += byteCounts[static_cast<size_t>(j)];
  }
  writeBack = write;
  for (int j = 0; read && j < p; ++j) {
    int position = byteDispls[static_cast<size_t>(j)];
    // Nothing to pack for no data (a type of size 0 included).
    if (byteCounts[static_cast<size_t>(j)] > 0 &&
        packElements(true, block(j), counts[j], type, base,
                     static_cast<int>(total), &position, comm) != MPI_SUCCESS) {
      why = "cannot pack a block";
      return MPI_ERR_INTERN;
    }
  }
  return MPI_SUCCESS;
}

int StagedBlocks::finish(MPI_Comm comm) {
  int rc = MPI_SUCCESS;
  for (size_t j = 0; writeBack && rc == MPI_SUCCESS && j < byteCounts.size();
       ++j) {
    int position = byteDispls[j];
    if (byteCounts[j] > 0 &&
        packElements(false, block(static_cast<int>(j)), userCounts[j], userType,
                     base, static_cast<int>(data.size()), &position,
                     comm) != MPI_SUCCESS)
      rc = MPI_ERR_INTERN;
  }
  if (kept.release(data.size(), data.capacity()))
    std::vector<char>().swap(data);
  return rc;
}

char *StagedBlocks::block(int j) const {
  return addressAt(user, static_cast<MPI_Aint>(userDispls[j]) * extent);
}

} // namespace collc::rt
