#pragma once
// What the runtime needs to know of a datatype, and user buffers as the
// contiguous bytes a schedule moves: a buffer whose layout has holes is
// packed into a copy before the call and unpacked after it, so every rank
// runs the same schedule whatever layout it passes (MPI requires only the
// type signatures to match).

#include "collc/KeptMemory.h"

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace collc::rt {

struct TypeInfo {
  int size = 0;                 // bytes of data in one element
  MPI_Aint lb = 0, extent = 0;  // one element's span, as MPI strides it
  MPI_Aint trueLb = 0, trueExtent = 0;
  bool named = false;           // a predefined type
  // The one predefined type every element is made of, and how many of it
  // an element holds; MPI_DATATYPE_NULL when the type mixes several.
  MPI_Datatype base = MPI_DATATYPE_NULL;
  int perElement = 0;
  // Every step it is built by places its blocks at ascending addresses, so
  // its data lies in memory in the order MPI_Pack reads it (an indexed
  // type may fill its span backwards).
  bool inOrder = false;
  /// Whether `count` elements lie in one piece at buf + trueLb, in the
  /// order they are packed.
  bool contiguous(int64_t count) const {
    return inOrder && trueExtent == size && (count <= 1 || extent == size);
  }
  /// Whether a buffer of data in this type may be MPI_BOTTOM, a null
  /// pointer in the MPIs we know: a derived type whose data starts at an
  /// absolute address (MPICH's test for a null buffer).
  bool fromBottom() const { return !named && trueLb != 0; }
  /// Whether `buf` is null though `count` elements of this type hold data,
  /// and is not MPI_BOTTOM: the user's error, seen by this rank alone.
  bool nullWithData(const void *buf, int64_t count) const {
    return !buf && count > 0 && size > 0 && !fromBottom();
  }
};

/// `buf` + `offset`, which may be MPI_BOTTOM + an absolute address.
inline char *addressAt(const void *buf, MPI_Aint offset) {
  return reinterpret_cast<char *>(reinterpret_cast<uintptr_t>(buf) +
                                  static_cast<uintptr_t>(offset));
}

/// MPI_Pack (`pack`) or MPI_Unpack of `count` elements at `at` from or
/// into `bytes` of `packed` at `position`; at MPI_BOTTOM too, which MPICH
/// refuses to pack from or into.
int packElements(bool pack, void *at, int count, MPI_Datatype type,
                 char *packed, int bytes, int *position, MPI_Comm comm);

/// Fills `info` from MPI; an MPI error code (an invalid handle).
int describe(MPI_Datatype type, TypeInfo &info);

/// Which of MPI's predefined operators `op` is, as the same number in
/// every process (its handle need not be), or -1 for a user's.
int predefinedOpIndex(MPI_Op op);
/// Whether `op` is one of MPI's predefined operators.
inline bool predefinedOp(MPI_Op op) { return predefinedOpIndex(op) >= 0; }

/// `count` elements of a user buffer as contiguous bytes: in place when
/// they are, else a packed copy (read in when `read`), written back by
/// finish() when `write`. A null buffer with data is left null, for the
/// schedule to refuse, unless the type makes it MPI_BOTTOM. A gather's p blocks
/// may be more elements than an int counts: the copy is packed and unpacked in
/// runs that MPI's int arguments hold.
class Staged {
public:
  int start(const void *buf, int64_t count, MPI_Datatype type,
            const TypeInfo &info, bool read, bool write, MPI_Comm comm);
  /// Writes the copy back: its first `elements` where given (an in-place
  /// reduce-scatter's result, not the input after it).
  int finish(MPI_Comm comm, int64_t elements = -1);
  char *bytes() const { return data; }

private:
  /// Packs (or unpacks) the copy from (into) the user's buffer, in runs.
  int move(bool pack, MPI_Comm comm);

  char *data = nullptr;
  void *user = nullptr;
  int64_t count = 0;
  int size = 0;
  MPI_Aint extent = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  bool writeBack = false;
  std::vector<char> copy;
};

/// One side of an irregular exchange (MPI_Alltoallv's) as bytes: p blocks
/// of `counts[j]` elements at `displs[j]` extents, each left where the user
/// put it when the type lies in one piece (the block's bytes and offset fit
/// an int), else packed one after another into a copy, read in when
/// `read`; finish() unpacks the copy when `write`, and frees it as
/// KeptBytes says (it is kept for the next call). `copy` asks for the copy
/// whatever the layout (a side the exchange overwrites while reading it).
class StagedBlocks {
public:
  /// An MPI error code, and `why`, for what only this rank can see: a
  /// negative count, a null buffer that should hold data, over 2 GiB.
  int start(const void *buf, const int *counts, const int *displs,
            MPI_Datatype type, const TypeInfo &info, int p, bool read,
            bool write, bool copy, MPI_Comm comm);
  int finish(MPI_Comm comm);

  char *base = nullptr;
  std::vector<int> byteCounts, byteDispls;
  const char *why = "";

private:
  char *block(int j) const;

  char *user = nullptr;
  const int *userCounts = nullptr, *userDispls = nullptr;
  MPI_Datatype userType = MPI_DATATYPE_NULL;
  MPI_Aint extent = 0;
  bool writeBack = false;
  std::vector<char> data;
  detail::KeptBytes kept;
};

} // namespace collc::rt
