// COLLC_MPI_CHECK: the ranks of a call compare its arguments (Agreement.h).

#include "Agreement.h"

#include "collc/Datatype.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <thread>

namespace collc::mpi {

bool checking() {
  static const bool on = [] {
    const char *v = std::getenv("COLLC_MPI_CHECK");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

namespace {

/// FNV-1a, kept non-negative so that its negation is a number too.
struct Digest {
  uint64_t h = 1469598103934665603ull;
  void add(int64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= static_cast<uint64_t>(v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  int64_t value() const { return static_cast<int64_t>(h >> 1); }
};

// The numbers compared, in the order their differences are reported.
enum Field { Collective, Root, Operator, Base, Bytes, Counts, Fields };
constexpr const char *fieldText[Fields] = {
    "call different collectives",     "pass different roots",
    "pass different operators",       "pass types of different basic types",
    "pass blocks of different sizes", "pass different counts"};

/// Sleeps long enough for a message to be forwarded before an abort.
void letMessageOut() {
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

int failEverywhere(MPI_Comm comm) {
  letMessageOut();
  PMPI_Comm_call_errhandler(comm, MPI_ERR_ARG);
  return MPI_ERR_ARG;
}

/// MPI's pair types (for MINLOC and MAXLOC): a signature of two basic
/// types, which another rank may pass as those two.
bool isPair(MPI_Datatype type) {
  for (MPI_Datatype pair :
       {MPI_2INT, MPI_SHORT_INT, MPI_LONG_INT, MPI_FLOAT_INT, MPI_DOUBLE_INT,
        MPI_LONG_DOUBLE_INT, MPI_2REAL, MPI_2DOUBLE_PRECISION, MPI_2INTEGER})
    if (type == pair)
      return true;
  return false;
}

/// An operator as the same number at every rank (nullopt: a user's).
std::optional<int64_t> opNumber(MPI_Op op) {
  const int i = collc::rt::predefinedOpIndex(op);
  if (i < 0)
    return std::nullopt;
  return i;
}

/// A type's signature as numbers: the basic type its elements are made of
/// (nullopt where several, or a pair type such as MPI_2INT, whose
/// signature is also that of two ints) and the bytes of `count` elements
/// (nullopt for an invalid count or type: MPI reports it).
void typeNumbers(int count, MPI_Datatype type, std::optional<int64_t> &base,
                 std::optional<int64_t> &bytes) {
  collc::rt::TypeInfo info;
  base.reset();
  bytes.reset();
  if (count < 0 || type == MPI_DATATYPE_NULL ||
      collc::rt::describe(type, info) != MPI_SUCCESS)
    return;
  bytes = int64_t{count} * info.size;
  // A predefined type's name is the same in every process; its handle
  // need not be. An empty signature has no basic type, and a pair type's
  // is left undecided.
  char name[MPI_MAX_OBJECT_NAME] = {};
  int length = 0;
  if (*bytes > 0 && info.base != MPI_DATATYPE_NULL && !isPair(info.base) &&
      PMPI_Type_get_name(info.base, name, &length) == MPI_SUCCESS &&
      length > 0) {
    Digest d;
    for (int i = 0; i < length; ++i)
      d.add(name[i]);
    base = d.value();
  }
}

} // namespace

bool checkable(MPI_Comm comm) {
  int inter = 0;
  return comm != MPI_COMM_NULL &&
         PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter;
}

int64_t bytesOf(int count, MPI_Datatype type) {
  collc::rt::TypeInfo info;
  if (count < 0 || type == MPI_DATATYPE_NULL ||
      collc::rt::describe(type, info) != MPI_SUCCESS)
    return -1;
  return int64_t{count} * info.size;
}

Agreed agreed(Coll coll, int root, MPI_Op op, int count, MPI_Datatype type) {
  Agreed a;
  a.coll = coll;
  a.root = root;
  a.op = opNumber(op);
  typeNumbers(count, type, a.base, a.bytes);
  // The basic type matters where a predefined operator folds it; elsewhere
  // the bytes are the signature's measure (MPI_PACKED may stand for any).
  if (!a.op)
    a.base.reset();
  return a;
}

std::optional<int64_t> countsDigest(int p, const int *counts,
                                    MPI_Datatype type) {
  collc::rt::TypeInfo info;
  if (!counts || type == MPI_DATATYPE_NULL ||
      collc::rt::describe(type, info) != MPI_SUCCESS)
    return std::nullopt;
  Digest d;
  for (int j = 0; j < p; ++j) {
    if (counts[j] < 0)
      return std::nullopt;
    d.add(int64_t{counts[j]} * info.size);
  }
  return d.value();
}

int agree(MPI_Comm comm, const Agreed &a) {
  if (!checkable(comm))
    return MPI_SUCCESS;
  const std::optional<int64_t> values[Fields] = {
      static_cast<int64_t>(a.coll), a.root, a.op, a.base, a.bytes, a.counts};
  // Each field as its largest and its negated smallest: one MAX finds
  // both. A value this rank cannot tell stands aside in both.
  int64_t mine[2 * Fields + 1], all[2 * Fields + 1];
  for (int f = 0; f < Fields; ++f) {
    mine[2 * f] = values[f] ? *values[f] : INT64_MIN;
    mine[2 * f + 1] = values[f] ? -*values[f] : INT64_MIN;
  }
  mine[2 * Fields] = a.fault != nullptr;
  if (int rc =
          PMPI_Allreduce(mine, all, 2 * Fields + 1, MPI_INT64_T, MPI_MAX, comm))
    return rc;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  for (int f = 0; f < Fields; ++f) {
    const int64_t hi = all[2 * f], lo = -all[2 * f + 1];
    if (hi == INT64_MIN || hi == lo)
      continue;
    if (rank == 0) {
      char detail[96] = "";
      if (f == Collective)
        std::snprintf(detail, sizeof detail, " (%s and %s)",
                      collName(static_cast<Coll>(lo)),
                      collName(static_cast<Coll>(hi)));
      else if (f == Root || f == Bytes)
        std::snprintf(detail, sizeof detail, " (%lld to %lld)",
                      static_cast<long long>(lo), static_cast<long long>(hi));
      std::fprintf(stderr,
                   "collc_mpi: %s: the ranks %s%s; MPI requires the same at "
                   "every rank (COLLC_MPI_CHECK)\n",
                   collName(a.coll), fieldText[f], detail);
    }
    return failEverywhere(comm);
  }
  if (all[2 * Fields]) {
    if (a.fault)
      std::fprintf(stderr, "collc_mpi: %s at rank %d: %s (COLLC_MPI_CHECK)\n",
                   collName(a.coll), rank, a.fault);
    return failEverywhere(comm);
  }
  return MPI_SUCCESS;
}

int agreePairwise(MPI_Comm comm, Coll coll, int root, const PairBytes &sends,
                  const PairBytes &receives) {
  Agreed a;
  a.coll = coll;
  a.root = root;
  if (!checkable(comm))
    return MPI_SUCCESS;
  if (int rc = agree(comm, a))
    return rc;
  int rank = 0, p = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &p);
  std::vector<int64_t> mine(static_cast<size_t>(p)), got(mine.size());
  for (int j = 0; j < p; ++j)
    mine[static_cast<size_t>(j)] = sends(rank, j);
  if (int rc = PMPI_Alltoall(mine.data(), 1, MPI_INT64_T, got.data(), 1,
                             MPI_INT64_T, comm))
    return rc;
  thread_local char fault[128];
  for (int j = 0; j < p && !a.fault; ++j) {
    const int64_t sent = got[static_cast<size_t>(j)],
                  expected = receives(rank, j);
    if (sent >= 0 && expected >= 0 && sent != expected) {
      std::snprintf(fault, sizeof fault,
                    "it expects %lld bytes from rank %d, which sends it %lld",
                    static_cast<long long>(expected), j,
                    static_cast<long long>(sent));
      a.fault = fault;
    }
  }
  return agree(comm, a);
}

} // namespace collc::mpi
