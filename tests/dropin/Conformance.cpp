// Differential conformance of the drop-in (libcollc_mpi): every collective
// called through MPI_X (collc's schedule, or MPI's own with a reason) and
// through PMPI_X (MPI's own) on the same input, the results compared: bit
// for bit for integers, within rounding for floating point, and the same on
// every rank. Random sizes, roots, counts, types (predefined, contiguous and
// strided derived; Fortran's INTEGER, DOUBLE PRECISION and LOGICAL;
// buffers at MPI_BOTTOM of types at absolute addresses), every
// predefined operator on the types MPI allows it on (and the others, which
// must fail alike),
// user operators commutative or not, in place and not, on MPI_COMM_WORLD, a
// duplicate, a split and a reversed split; and that the program's attribute
// callbacks run only for its own copies and frees.
//
//   mpirun -np N dropin_conformance [ITERATIONS] [SEED]
//
// Prints "N passed, M failed" at rank 0 and exits non-zero on a mismatch.

#include "../support/AbsoluteInts.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" void collc_mpi_counts(unsigned long long *collc,
                                 unsigned long long *mpi);

namespace {

struct Type {
  const char *name;
  MPI_Datatype type;   // what the call passes
  MPI_Datatype base;   // its elements' basic type
  int perElement;      // basic elements per element
  bool floating;
  bool strided;        // holes between the basic elements
};

int passed = 0, failed = 0;
std::mt19937_64 rng;

int pick(int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); }

/// A 2x2 integer matrix product: associative, not commutative.
void matmul(void *in, void *inout, int *len, MPI_Datatype *) {
  auto *a = static_cast<int *>(in), *b = static_cast<int *>(inout);
  for (int i = 0; i + 3 < *len; i += 4) {
    int r0 = a[i] * b[i] + a[i + 1] * b[i + 2];
    int r1 = a[i] * b[i + 1] + a[i + 1] * b[i + 3];
    int r2 = a[i + 2] * b[i] + a[i + 3] * b[i + 2];
    int r3 = a[i + 2] * b[i + 1] + a[i + 3] * b[i + 3];
    b[i] = r0, b[i + 1] = r1, b[i + 2] = r2, b[i + 3] = r3;
  }
}
/// Integer sum as a user's commutative operator.
void usersum(void *in, void *inout, int *len, MPI_Datatype *) {
  auto *a = static_cast<int *>(in), *b = static_cast<int *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = static_cast<int>(static_cast<unsigned>(a[i]) +
                            static_cast<unsigned>(b[i]));
}

/// A value and its index (MPI_DOUBLE_INT's layout: 12 bytes in 16).
struct DoubleInt {
  double value;
  int index;
};
/// MAXLOC written by a user, over MPI_DOUBLE_INT.
void userMaxloc(void *in, void *inout, int *len, MPI_Datatype *) {
  auto *a = static_cast<DoubleInt *>(in), *b = static_cast<DoubleInt *>(inout);
  for (int i = 0; i < *len; ++i)
    if (a[i].value > b[i].value ||
        (a[i].value == b[i].value && a[i].index < b[i].index))
      b[i] = a[i];
}

/// The bytes of `n` elements of `t` in a buffer laid out for the type.
size_t span(const Type &t, int n) {
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(t.type, &lb, &extent);
  return static_cast<size_t>(extent) * static_cast<size_t>(n < 1 ? 1 : n) + 64;
}

/// Fills a buffer of `n` elements with values of `seed`; holes get 0x5a so
/// a write into one shows.
void fill(std::vector<char> &buf, const Type &t, int n, uint64_t seed) {
  std::fill(buf.begin(), buf.end(), 0x5a);
  int size = 0;
  MPI_Type_size(t.base, &size);
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(t.type, &lb, &extent);
  std::mt19937_64 g(seed);
  for (int e = 0; e < n; ++e)
    for (int k = 0; k < t.perElement; ++k) {
      // A strided element's basic values sit 2 apart (MPI_Type_vector).
      size_t at = static_cast<size_t>(e) * static_cast<size_t>(extent) +
                  static_cast<size_t>(k) * (t.strided ? 2u : 1u) *
                      static_cast<size_t>(size);
      char *p = buf.data() + at;
      int v = static_cast<int>(g() % 7) - 2; // small: products stay exact
      if (t.base == MPI_DOUBLE || t.base == MPI_DOUBLE_PRECISION) {
        double d = v;
        std::memcpy(p, &d, sizeof d);
      } else if (t.base == MPI_FLOAT) {
        float f = static_cast<float>(v);
        std::memcpy(p, &f, sizeof f);
      } else if (t.base == MPI_INT || t.base == MPI_INTEGER) {
        std::memcpy(p, &v, sizeof v);
      } else if (t.base == MPI_LOGICAL) { // 4 bytes, 0 or 1
        int l = v & 1;
        std::memcpy(p, &l, sizeof l);
      } else if (t.base == MPI_LONG) {
        long l = v;
        std::memcpy(p, &l, sizeof l);
      } else if (t.base == MPI_UNSIGNED_CHAR) {
        unsigned char c = static_cast<unsigned char>(v & 1);
        *p = static_cast<char>(c);
      }
    }
}

bool same(const std::vector<char> &a, const std::vector<char> &b,
          const Type &t) {
  if (!t.floating)
    return a == b;
  if (a.size() != b.size())
    return false;
  // Within rounding: compare as the floating type, bytes elsewhere equal.
  const size_t w =
      t.base == MPI_DOUBLE || t.base == MPI_DOUBLE_PRECISION ? 8 : 4;
  for (size_t i = 0; i + w <= a.size(); i += w) {
    double x = 0, y = 0;
    if (w == 8) {
      std::memcpy(&x, &a[i], 8);
      std::memcpy(&y, &b[i], 8);
    } else {
      float fx = 0, fy = 0;
      std::memcpy(&fx, &a[i], 4);
      std::memcpy(&fy, &b[i], 4);
      x = fx, y = fy;
    }
    if (std::memcmp(&a[i], &b[i], w) != 0 &&
        !(std::fabs(x - y) <= 1e-6 * (1 + std::fabs(y))))
      return false;
  }
  return true;
}

/// Whether two calls ended alike: MPICH returns a new code for each error,
/// so errors are compared by their class.
bool sameCode(int a, int b) {
  int ca = a, cb = b;
  MPI_Error_class(a, &ca);
  MPI_Error_class(b, &cb);
  return ca == cb;
}

/// Every rank's verdict, and that `result` is the same at every rank
/// (`everywhere`).
void check(const char *what, bool ok, MPI_Comm comm, int rank,
           const std::vector<char> *everywhere) {
  int good = ok ? 1 : 0, all = 0;
  PMPI_Allreduce(&good, &all, 1, MPI_INT, MPI_MIN, comm);
  if (everywhere) {
    unsigned long long h = 1469598103934665603ull;
    for (char c : *everywhere)
      h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    unsigned long long lo = 0, hi = 0;
    PMPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
    PMPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    if (lo != hi)
      all = 0;
  }
  if (all) {
    ++passed;
  } else {
    ++failed;
    if (rank == 0)
      std::printf("FAILED: %s\n", what);
  }
}

/// Counts a series of calls the drop-in may run: where it runs the first by
/// collc, it must run them all (the same choice for every root, every
/// communicator, in place or not).
struct AllOrNone {
  unsigned long long before = 0, first = 0, handed = 0;
  int calls = 0;
  AllOrNone() { collc_mpi_counts(&before, &handed); }
  void called() {
    if (++calls == 1)
      collc_mpi_counts(&first, &handed);
  }
  void check(const char *what, int rank) {
    unsigned long long after = 0;
    collc_mpi_counts(&after, &handed);
    if (first > before)
      ::check(what, after - before == static_cast<unsigned long long>(calls),
              MPI_COMM_WORLD, rank, nullptr);
  }
};

/// A user operator that does not commute: the product of 2 x 2 matrices.
MPI_Op matrixOp() {
  static MPI_Op matrix = MPI_OP_NULL;
  if (matrix == MPI_OP_NULL)
    MPI_Op_create(matmul, 0, &matrix);
  return matrix;
}

/// The program's attribute callbacks run for the program's own copies and
/// frees only, never for what the drop-in makes behind a collective.
int copiesMade = 0, valuesFreed = 0, collectivesInCopy = 0;
int freeValue(MPI_Comm, int, void *value, void *) {
  ++valuesFreed;
  std::free(value);
  return MPI_SUCCESS;
}
int refuseCopy(MPI_Comm, int, void *, void *, void *, int *) {
  ++copiesMade;
  return MPI_ERR_OTHER;
}
int copyAfterAllreduce(MPI_Comm old, int, void *, void *value, void *copy,
                       int *flag) {
  ++copiesMade;
  int one = 1, sum = 0;
  int size = 0;
  MPI_Comm_size(old, &size);
  if (MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, old) == MPI_SUCCESS &&
      sum == size)
    ++collectivesInCopy;
  *static_cast<void **>(copy) = value;
  *flag = 1;
  return MPI_SUCCESS;
}

void attributeCallbacks(int rank) {
  // A value the delete callback frees, copied by pointer (MPI_COMM_DUP_FN):
  // a copy the program did not ask for would free it twice.
  int shared = MPI_KEYVAL_INVALID, refusing = MPI_KEYVAL_INVALID,
      calling = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_DUP_FN, freeValue, &shared, nullptr);
  MPI_Comm_create_keyval(refuseCopy, MPI_COMM_NULL_DELETE_FN, &refusing,
                         nullptr);
  MPI_Comm_create_keyval(copyAfterAllreduce, MPI_COMM_NULL_DELETE_FN, &calling,
                         nullptr);
  MPI_Comm comm = MPI_COMM_NULL, copy = MPI_COMM_NULL;
  PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_attr(comm, shared, std::malloc(16));
  MPI_Comm_set_attr(comm, refusing, nullptr);
  std::vector<long> in(4, rank + 1), a(4, -1), b(4, -1);
  int rc1 = MPI_Allreduce(in.data(), a.data(), 4, MPI_LONG, MPI_SUM, comm);
  int rc2 = PMPI_Allreduce(in.data(), b.data(), 4, MPI_LONG, MPI_SUM, comm);
  check("an allreduce on a communicator with attributes calls no callback",
        rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS && a == b && copiesMade == 0 &&
            valuesFreed == 0,
        MPI_COMM_WORLD, rank, nullptr);
  MPI_Comm_free(&comm);
  check("freeing it calls the delete callback once", valuesFreed == 1,
        MPI_COMM_WORLD, rank, nullptr);

  // A copy callback that calls a collective on the communicator being
  // duplicated, its first: the drop-in makes its own there, unseen.
  PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_attr(comm, calling, nullptr);
  const int rc = MPI_Comm_dup(comm, &copy);
  check("a copy callback's collective runs once, within the program's dup",
        rc == MPI_SUCCESS && copiesMade == 1 && collectivesInCopy == 1,
        MPI_COMM_WORLD, rank, nullptr);
  if (rc == MPI_SUCCESS)
    MPI_Comm_free(&copy);
  MPI_Comm_free(&comm);
  MPI_Comm_free_keyval(&shared);
  MPI_Comm_free_keyval(&refusing);
  MPI_Comm_free_keyval(&calling);
}

/// Every collective with its buffers at MPI_BOTTOM (MPI 4.0 §5.1.12): each
/// rank sends pairs of ints second first and receives ints in order. The
/// reference: MPI's own call on plain ints, the pairs swapped beforehand.
/// Where both sides are pairs (a reduction's one type), they read and write
/// alike, and the reference takes the ints as they are.
void bottomBuffers(MPI_Comm comm, int rank, int p) {
  const int n = 3, ints = 2 * n * p, root = p - 1;
  std::vector<int> send(static_cast<size_t>(ints)), swapped(send.size());
  std::vector<int> recv(send.size()), ref(send.size());
  MPI_Datatype pairs = collc::test::absoluteInts(send.data(), true);
  MPI_Datatype inOrder = collc::test::absoluteInts(recv.data(), false);
  MPI_Datatype pairsIn = collc::test::absoluteInts(recv.data(), true);
  std::vector<int> counts(static_cast<size_t>(p), 2 * n), displs(counts);
  std::vector<int> pairCounts(counts.size(), n), pairDispls(counts);
  std::vector<int> backwards(counts.size());
  for (int j = 0; j < p; ++j) {
    displs[static_cast<size_t>(j)] = 2 * n * j;
    pairDispls[static_cast<size_t>(j)] = n * j;
    backwards[static_cast<size_t>(j)] = 2 * n * (p - 1 - j);
  }
  const int *c = counts.data(), *d = displs.data(), *bd = backwards.data();
  const int *pc = pairCounts.data(), *pd = pairDispls.data();
  const bool atRoot = rank == root;
  void *bottom = MPI_BOTTOM;
  // `send` as a buffer of pairsIn, whose addresses are `recv`'s: a
  // reduction's send and receive buffers in one absolute type.
  MPI_Aint sendAt = 0, recvAt = 0;
  MPI_Get_address(send.data(), &sendAt);
  MPI_Get_address(recv.data(), &recvAt);
  const void *sendByOffset =
      reinterpret_cast<const void *>(static_cast<uintptr_t>(sendAt - recvAt));
  unsigned long long collcBefore = 0, handed = 0;
  collc_mpi_counts(&collcBefore, &handed);
  // Ours at MPI_BOTTOM, theirs on plain ints; each writes `recv` or `ref`
  // (a reduction in place: `send` or `ref`), compared over the first
  // `compared` ints at the ranks where the result is `defined`.
  auto run = [&](const char *name, auto ours, auto theirs, bool folds,
                 int compared = -1, bool defined = true) {
    for (int i = 0; i < ints; ++i) {
      send[static_cast<size_t>(i)] = rank * 1000 + i;
      swapped[static_cast<size_t>(i)] = rank * 1000 + (i ^ 1);
    }
    std::fill(recv.begin(), recv.end(), -1);
    std::fill(ref.begin(), ref.end(), -1);
    if (folds)
      ref = send;
    const int rc1 = ours(), rc2 = theirs();
    char what[128];
    std::snprintf(what, sizeof what, "%s at MPI_BOTTOM, %d ranks", name, p);
    const std::vector<int> &got = folds ? send : recv;
    const size_t upTo = compared < 0 ? got.size() : size_t(compared);
    check(what,
          rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS &&
              (!defined ||
               std::equal(got.begin(), got.begin() + upTo, ref.begin())),
          comm, rank, nullptr);
  };
  int *sw = swapped.data(), *rf = ref.data();
  run(
      "bcast",
      [&] {
        return MPI_Bcast(bottom, atRoot ? n : 2 * n, atRoot ? pairs : inOrder,
                         root, comm);
      },
      [&] { return PMPI_Bcast(atRoot ? sw : rf, 2 * n, MPI_INT, root, comm); },
      false);
  run(
      "allgather",
      [&] {
        return MPI_Allgather(bottom, n, pairs, bottom, 2 * n, inOrder, comm);
      },
      [&] {
        return PMPI_Allgather(sw, 2 * n, MPI_INT, rf, 2 * n, MPI_INT, comm);
      },
      false);
  run(
      "gather",
      [&] {
        return MPI_Gather(bottom, n, pairs, bottom, 2 * n, inOrder, root, comm);
      },
      [&] {
        return PMPI_Gather(sw, 2 * n, MPI_INT, rf, 2 * n, MPI_INT, root, comm);
      },
      false);
  run(
      "scatter",
      [&] {
        return MPI_Scatter(bottom, n, pairs, bottom, 2 * n, inOrder, root,
                           comm);
      },
      [&] {
        return PMPI_Scatter(sw, 2 * n, MPI_INT, rf, 2 * n, MPI_INT, root, comm);
      },
      false);
  run(
      "alltoall",
      [&] {
        return MPI_Alltoall(bottom, n, pairs, bottom, 2 * n, inOrder, comm);
      },
      [&] {
        return PMPI_Alltoall(sw, 2 * n, MPI_INT, rf, 2 * n, MPI_INT, comm);
      },
      false);
  run(
      "alltoallv",
      [&] {
        return MPI_Alltoallv(bottom, pc, pd, pairs, bottom, c, d, inOrder,
                             comm);
      },
      [&] {
        return PMPI_Alltoallv(sw, c, d, MPI_INT, rf, c, d, MPI_INT, comm);
      },
      false);
  run(
      "allgatherv",
      [&] {
        return MPI_Allgatherv(bottom, n, pairs, bottom, c, d, inOrder, comm);
      },
      [&] {
        return PMPI_Allgatherv(sw, 2 * n, MPI_INT, rf, c, d, MPI_INT, comm);
      },
      false);
  run(
      "gatherv",
      [&] {
        return MPI_Gatherv(bottom, n, pairs, bottom, c, d, inOrder, root, comm);
      },
      [&] {
        return PMPI_Gatherv(sw, 2 * n, MPI_INT, rf, c, d, MPI_INT, root, comm);
      },
      false);
  run(
      "scatterv",
      [&] {
        return MPI_Scatterv(bottom, pc, pd, pairs, bottom, 2 * n, inOrder, root,
                            comm);
      },
      [&] {
        return PMPI_Scatterv(sw, c, d, MPI_INT, rf, 2 * n, MPI_INT, root, comm);
      },
      false);
  run(
      "allreduce in place",
      [&] {
        return MPI_Allreduce(MPI_IN_PLACE, bottom, n * p, pairs, MPI_SUM, comm);
      },
      [&] {
        return PMPI_Allreduce(MPI_IN_PLACE, rf, ints, MPI_INT, MPI_SUM, comm);
      },
      true);
  run(
      "reduce in place",
      [&] {
        return MPI_Reduce(atRoot ? MPI_IN_PLACE : bottom, bottom, n * p, pairs,
                          MPI_SUM, root, comm);
      },
      [&] {
        return PMPI_Reduce(atRoot ? MPI_IN_PLACE : rf, rf, ints, MPI_INT,
                           MPI_SUM, root, comm);
      },
      true);
  run(
      "scan in place",
      [&] {
        return MPI_Scan(MPI_IN_PLACE, bottom, n * p, pairs, MPI_SUM, comm);
      },
      [&] { return PMPI_Scan(MPI_IN_PLACE, rf, ints, MPI_INT, MPI_SUM, comm); },
      true);
  run(
      "alltoallv, both sides packed",
      [&] {
        return MPI_Alltoallv(bottom, pc, pd, pairs, bottom, pc, pd, pairsIn,
                             comm);
      },
      [&] {
        return PMPI_Alltoallv(send.data(), c, d, MPI_INT, rf, c, d, MPI_INT,
                              comm);
      },
      false);
  run(
      "allgatherv, blocks in reverse order",
      [&] {
        return MPI_Allgatherv(bottom, n, pairs, bottom, c, bd, inOrder, comm);
      },
      [&] {
        return PMPI_Allgatherv(sw, 2 * n, MPI_INT, rf, c, bd, MPI_INT, comm);
      },
      false);
  run(
      "reduce_scatter_block in place",
      [&] {
        return MPI_Reduce_scatter_block(MPI_IN_PLACE, bottom, n, pairs, MPI_SUM,
                                        comm);
      },
      [&] {
        return PMPI_Reduce_scatter_block(MPI_IN_PLACE, rf, 2 * n, MPI_INT,
                                         MPI_SUM, comm);
      },
      true, 2 * n);
  run(
      "allreduce",
      [&] {
        return MPI_Allreduce(sendByOffset, bottom, n * p, pairsIn, MPI_SUM,
                             comm);
      },
      [&] {
        return PMPI_Allreduce(send.data(), rf, ints, MPI_INT, MPI_SUM, comm);
      },
      false);
  run(
      "reduce",
      [&] {
        return MPI_Reduce(sendByOffset, bottom, n * p, pairsIn, MPI_SUM, root,
                          comm);
      },
      [&] {
        return PMPI_Reduce(send.data(), rf, ints, MPI_INT, MPI_SUM, root, comm);
      },
      false);
  run(
      "exscan",
      [&] {
        return MPI_Exscan(sendByOffset, bottom, n * p, pairsIn, MPI_SUM, comm);
      },
      [&] {
        return PMPI_Exscan(send.data(), rf, ints, MPI_INT, MPI_SUM, comm);
      },
      false, -1, rank != 0);
  // Near-equal counts (the odd ranks' blocks a pair short): blocks padded
  // alike and copied by the drop-in.
  std::vector<int> nearPairs(counts.size()), nearInts(counts.size()),
      nearDispls(counts.size());
  for (int j = 0, at = 0; j < p; ++j) {
    nearPairs[static_cast<size_t>(j)] = n - j % 2;
    nearInts[static_cast<size_t>(j)] = 2 * (n - j % 2);
    nearDispls[static_cast<size_t>(j)] = at;
    at += 2 * (n - j % 2);
  }
  const int *ni = nearInts.data(), *nd = nearDispls.data();
  const int mine = nearPairs[static_cast<size_t>(rank)];
  run(
      "allgatherv, near-equal counts",
      [&] {
        return MPI_Allgatherv(bottom, mine, pairs, bottom, ni, nd, inOrder,
                              comm);
      },
      [&] {
        return PMPI_Allgatherv(sw, 2 * mine, MPI_INT, rf, ni, nd, MPI_INT,
                               comm);
      },
      false);
  run(
      "reduce_scatter in place, near-equal counts",
      [&] {
        return MPI_Reduce_scatter(MPI_IN_PLACE, bottom, nearPairs.data(), pairs,
                                  MPI_SUM, comm);
      },
      [&] {
        return PMPI_Reduce_scatter(MPI_IN_PLACE, rf, ni, MPI_INT, MPI_SUM,
                                   comm);
      },
      true, 2 * mine);
  // Not all handed to MPI (16 of the 18 calls run by collc on 2 to 9 ranks
  // when this was written; gatherv and scatterv go to MPI by rule).
  unsigned long long collcAfter = 0;
  collc_mpi_counts(&collcAfter, &handed);
  check("calls at MPI_BOTTOM run by collc", p == 1 || collcAfter > collcBefore,
        comm, rank, nullptr);
  MPI_Type_free(&pairs);
  MPI_Type_free(&inOrder);
  MPI_Type_free(&pairsIn);
}

void runOne(MPI_Comm comm, const std::vector<Type> &types, int iteration) {
  int rank = 0, p = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &p);
  const int counts[] = {0, 1, 2, 7, 13, 64, 1031, 4099};
  const Type &t = types[static_cast<size_t>(pick(static_cast<int>(types.size())))];
  const int n = counts[pick(8)];
  const int root = pick(p);
  const bool inPlace = pick(3) == 0;
  const int which = pick(15);
  char what[256];
  std::vector<char> a, b, ina, inb;
  auto alloc = [&](std::vector<char> &v, int elements) {
    v.assign(span(t, elements), 0);
  };
  const uint64_t seed = rng() ^ static_cast<uint64_t>(rank) * 7919u;
  if (which <= 4) { // reductions
    const MPI_Op intOps[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND,
                             MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
    const MPI_Op floatOps[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    static MPI_Op user[2] = {MPI_OP_NULL, MPI_OP_NULL};
    if (user[0] == MPI_OP_NULL) {
      MPI_Op_create(usersum, 1, &user[0]);
      user[1] = matrixOp();
    }
    MPI_Op op = t.floating ? floatOps[pick(4)] : intOps[pick(10)];
    const char *opName = "predefined";
    // User operators on int-based types only (their functions read ints);
    // the matrix product needs a multiple of 4 ints.
    if (t.type == MPI_INT && pick(3) == 0) {
      const bool matrix = pick(2) == 0;
      op = user[matrix ? 1 : 0];
      opName = matrix ? "user non-commutative" : "user commutative";
    }
    int cnt = n;
    if (op == user[1])
      cnt = (n / 4) * 4 / t.perElement * t.perElement;
    const int blocks = which == 3 ? p : 1; // reduce_scatter_block: p blocks in
    alloc(ina, cnt * blocks);
    fill(ina, t, cnt * blocks, seed);
    inb = ina;
    alloc(a, cnt * blocks);
    fill(a, t, cnt * blocks, seed ^ 1);
    b = a;
    if (inPlace) {
      a = ina;
      b = inb;
    }
    const void *sa = inPlace ? MPI_IN_PLACE : ina.data();
    const void *sb = inPlace ? MPI_IN_PLACE : inb.data();
    const char *names[] = {"reduce", "allreduce", "scan",
                           "reduce_scatter_block", "exscan"};
    std::snprintf(what, sizeof what,
                  "%s %s op (%s) of %d x %s, root %d, %s, %d ranks, #%d",
                  names[which], opName, "", cnt, t.name, root,
                  inPlace ? "in place" : "not in place", p, iteration);
    int rc1 = 0, rc2 = 0;
    // A predefined operator folds a derived type as its basic type (MPICH
    // does; Open MPI 4.1 refuses). The reference: MPI's own on the basic
    // type, the buffers packed and the result unpacked.
    std::vector<char> packedIn, packedOut;
    MPI_Datatype refType = t.type;
    int refCount = cnt;
    if (t.type != t.base && op != user[0] && op != user[1]) {
      auto pack = [&](const std::vector<char> &from, int elements) {
        int bytes = 0, at = 0;
        MPI_Pack_size(elements, t.type, comm, &bytes);
        std::vector<char> to(static_cast<size_t>(bytes) + 1);
        MPI_Pack(from.data(), elements, t.type, to.data(), bytes, &at, comm);
        return to;
      };
      packedIn = pack(inb, cnt * blocks);
      packedOut = pack(b, cnt * blocks);
      refType = t.base;
      refCount = cnt * t.perElement;
      sb = inPlace ? MPI_IN_PLACE : packedIn.data();
    }
    char *refOut = packedOut.empty() ? b.data() : packedOut.data();
    const char *refIn = packedIn.empty() ? inb.data() : packedIn.data();
    switch (which) {
    case 0: {
      const bool ip = inPlace && rank == root;
      rc1 = MPI_Reduce(ip ? MPI_IN_PLACE : ina.data(), a.data(), cnt, t.type,
                       op, root, comm);
      // The reference not in place: MPICH 4.0 (Debian 12) reads from
      // MPI_IN_PLACE itself in a reduce in place to root 1 of 2 ranks.
      const size_t outBytes = packedOut.empty() ? b.size() : packedOut.size();
      std::vector<char> rootIn(refOut, refOut + outBytes);
      rc2 = PMPI_Reduce(ip ? rootIn.data() : refIn, refOut, refCount, refType,
                        op, root, comm);
      if (rank != root) // not significant there
        a = b;
      break;
    }
    case 1:
      rc1 = MPI_Allreduce(sa, a.data(), cnt, t.type, op, comm);
      rc2 = PMPI_Allreduce(sb, refOut, refCount, refType, op, comm);
      break;
    case 2:
      rc1 = MPI_Scan(sa, a.data(), cnt, t.type, op, comm);
      rc2 = PMPI_Scan(sb, refOut, refCount, refType, op, comm);
      break;
    case 3:
      rc1 = MPI_Reduce_scatter_block(sa, a.data(), cnt, t.type, op, comm);
      rc2 = PMPI_Reduce_scatter_block(sb, refOut, refCount, refType, op, comm);
      // In place, only the first block is the result.
      if (inPlace) {
        a.resize(span(t, cnt) - 64);
        b.resize(span(t, cnt) - 64);
      }
      break;
    case 4:
      rc1 = MPI_Exscan(sa, a.data(), cnt, t.type, op, comm);
      rc2 = PMPI_Exscan(sb, refOut, refCount, refType, op, comm);
      break;
    }
    // Rank 0's exclusive scan is undefined (MPI 4.0 §6.11.2).
    const bool undefinedHere = which == 4 && rank == 0;
    if (undefinedHere)
      a = b;
    if (!packedOut.empty() && !(which == 0 && rank != root) && !undefinedHere) {
      int at = 0;
      MPI_Unpack(packedOut.data(), static_cast<int>(packedOut.size()), &at,
                 b.data(), cnt, t.type, comm);
    }
    // An operator MPI does not define on the type fails alike, the buffers
    // as they were (each rank's own).
    check(what, sameCode(rc1, rc2) && same(a, b, t), comm, rank,
          which == 1 && rc1 == MPI_SUCCESS ? &a : nullptr);
    return;
  }
  // Data movement.
  const char *names[] = {"bcast",      "allgather", "gather",
                         "scatter",    "alltoall",  "reduce_scatter",
                         "allgatherv", "gatherv",   "scatterv",
                         "alltoallv"};
  const int kind = which - 5;
  std::snprintf(what, sizeof what, "%s of %d x %s, root %d, %s, %d ranks, #%d",
                names[kind], n, t.name, root,
                inPlace ? "in place" : "not in place", p, iteration);
  int rc1 = 0, rc2 = 0;
  switch (kind) {
  case 0: {
    alloc(a, n);
    fill(a, t, n, rank == root ? 42 : seed);
    b = a;
    rc1 = MPI_Bcast(a.data(), n, t.type, root, comm);
    rc2 = PMPI_Bcast(b.data(), n, t.type, root, comm);
    check(what, sameCode(rc1, rc2) && same(a, b, t), comm, rank, &a);
    return;
  }
  case 1: {
    alloc(ina, n);
    fill(ina, t, n, seed);
    alloc(a, n * p);
    fill(a, t, n * p, seed ^ 3);
    b = a;
    if (inPlace) { // own block in place
      MPI_Aint lb = 0, extent = 0;
      MPI_Type_get_extent(t.type, &lb, &extent);
      std::memcpy(a.data() + static_cast<size_t>(rank) * n * extent,
                  ina.data(), static_cast<size_t>(n) * extent);
      b = a;
    }
    rc1 = MPI_Allgather(inPlace ? MPI_IN_PLACE : ina.data(), n, t.type,
                        a.data(), n, t.type, comm);
    rc2 = PMPI_Allgather(inPlace ? MPI_IN_PLACE : ina.data(), n, t.type,
                         b.data(), n, t.type, comm);
    check(what, sameCode(rc1, rc2) && same(a, b, t), comm, rank, &a);
    return;
  }
  case 2: {
    const bool ip = inPlace && rank == root;
    alloc(ina, n);
    fill(ina, t, n, seed);
    alloc(a, n * p);
    fill(a, t, n * p, seed ^ 5);
    b = a;
    rc1 = MPI_Gather(ip ? MPI_IN_PLACE : ina.data(), n, t.type, a.data(), n,
                     t.type, root, comm);
    rc2 = PMPI_Gather(ip ? MPI_IN_PLACE : ina.data(), n, t.type, b.data(), n,
                      t.type, root, comm);
    check(what, sameCode(rc1, rc2) && same(a, b, t), comm, rank, nullptr);
    return;
  }
  case 3: {
    const bool ip = inPlace && rank == root;
    alloc(ina, n * p);
    fill(ina, t, n * p, seed);
    alloc(a, n);
    fill(a, t, n, seed ^ 9);
    b = a;
    rc1 = MPI_Scatter(ina.data(), n, t.type, ip ? MPI_IN_PLACE : a.data(), n,
                      t.type, root, comm);
    rc2 = PMPI_Scatter(ina.data(), n, t.type, ip ? MPI_IN_PLACE : b.data(), n,
                       t.type, root, comm);
    check(what, sameCode(rc1, rc2) && same(a, b, t), comm, rank, nullptr);
    return;
  }
  case 4: {
    alloc(ina, n * p);
    fill(ina, t, n * p, seed);
    alloc(a, n * p);
    fill(a, t, n * p, seed ^ 11);
    if (inPlace)
      a = ina;
    b = a;
    rc1 = MPI_Alltoall(inPlace ? MPI_IN_PLACE : ina.data(), n, t.type,
                       a.data(), n, t.type, comm);
    rc2 = PMPI_Alltoall(inPlace ? MPI_IN_PLACE : ina.data(), n, t.type,
                        b.data(), n, t.type, comm);
    check(what, sameCode(rc1, rc2) && same(a, b, t), comm, rank, nullptr);
    return;
  }
  case 6: { // MPI_Allgatherv: equal counts, counts that differ by one (the
            // drop-in pads them), or one rank's far larger (handed on, but
            // for a few bytes in all); blocks in reverse with gaps
    const int shape = pick(3);
    std::vector<int> cnts(static_cast<size_t>(p), n),
        displs(static_cast<size_t>(p));
    for (int j = 0; j < p; ++j) {
      int &c = cnts[static_cast<size_t>(j)];
      if (shape == 1)
        c = n / p + (j < n % p);
      else if (shape == 2)
        c = j == p - 1 ? n * p + p : n % 2;
    }
    int total = 0;
    for (int j = p - 1; j >= 0; --j) {
      displs[static_cast<size_t>(j)] = total;
      total += cnts[static_cast<size_t>(j)] + 1;
    }
    const int own = cnts[static_cast<size_t>(rank)];
    std::snprintf(what, sizeof what,
                  "allgatherv, %s counts (%d here) of %s, %s, %d ranks, #%d",
                  shape == 0   ? "equal"
                  : shape == 1 ? "near-equal"
                               : "skewed",
                  own, t.name, inPlace ? "in place" : "not in place", p,
                  iteration);
    alloc(ina, own);
    fill(ina, t, own, seed);
    alloc(a, total);
    fill(a, t, total, seed ^ 13);
    if (inPlace) { // own block where displs puts it
      MPI_Aint lb = 0, extent = 0;
      MPI_Type_get_extent(t.type, &lb, &extent);
      std::memcpy(a.data() +
                      static_cast<size_t>(displs[static_cast<size_t>(rank)]) *
                          extent,
                  ina.data(), static_cast<size_t>(own) * extent);
    }
    b = a;
    rc1 = MPI_Allgatherv(inPlace ? MPI_IN_PLACE : ina.data(), own, t.type,
                         a.data(), cnts.data(), displs.data(), t.type, comm);
    rc2 = PMPI_Allgatherv(inPlace ? MPI_IN_PLACE : ina.data(), own, t.type,
                          b.data(), cnts.data(), displs.data(), t.type, comm);
    // (The gaps keep each rank's own bytes: compared with MPI's, not
    // across ranks.)
    check(what, sameCode(rc1, rc2) && same(a, b, t), comm, rank, nullptr);
    return;
  }
  case 7:   // MPI_Gatherv
  case 8: { // MPI_Scatterv
    // Equal counts, or each rank's own; blocks in reverse with gaps.
    const bool equal = pick(2) == 0;
    std::vector<int> cnts(static_cast<size_t>(p)), displs(static_cast<size_t>(p));
    int total = 0;
    for (int j = 0; j < p; ++j) {
      cnts[static_cast<size_t>(j)] = equal ? n : n + j % 3;
      total += cnts[static_cast<size_t>(j)] + 1;
    }
    for (int j = p - 1, at = 0; j >= 0; --j) {
      displs[static_cast<size_t>(j)] = at;
      at += cnts[static_cast<size_t>(j)] + 1;
    }
    const int own = cnts[static_cast<size_t>(rank)];
    const bool ip = inPlace && rank == root;
    std::snprintf(what, sizeof what, "%s, %s counts of %d x %s, root %d, %s, "
                  "%d ranks, #%d", names[kind], equal ? "equal" : "unequal", n,
                  t.name, root, ip ? "in place" : "not in place", p, iteration);
    if (kind == 7) {
      alloc(ina, own);
      fill(ina, t, own, seed);
      alloc(a, total);
      fill(a, t, total, seed ^ 17);
      if (ip) { // the root's own block where displs puts it
        MPI_Aint lb = 0, extent = 0;
        MPI_Type_get_extent(t.type, &lb, &extent);
        std::memcpy(a.data() + static_cast<size_t>(displs[static_cast<size_t>(rank)]) * extent,
                    ina.data(), static_cast<size_t>(own) * extent);
      }
      b = a;
      rc1 = MPI_Gatherv(ip ? MPI_IN_PLACE : ina.data(), own, t.type, a.data(),
                        cnts.data(), displs.data(), t.type, root, comm);
      rc2 = PMPI_Gatherv(ip ? MPI_IN_PLACE : ina.data(), own, t.type,
                         b.data(), cnts.data(), displs.data(), t.type, root,
                         comm);
    } else {
      alloc(ina, total);
      fill(ina, t, total, seed);
      alloc(a, own);
      fill(a, t, own, seed ^ 19);
      b = a;
      rc1 = MPI_Scatterv(ina.data(), cnts.data(), displs.data(), t.type,
                         ip ? MPI_IN_PLACE : a.data(), own, t.type, root, comm);
      rc2 = PMPI_Scatterv(ina.data(), cnts.data(), displs.data(), t.type,
                          ip ? MPI_IN_PLACE : b.data(), own, t.type, root,
                          comm);
    }
    check(what, sameCode(rc1, rc2) && same(a, b, t), comm, rank, nullptr);
    return;
  }
  case 9: { // MPI_Alltoallv: counts per pair, some 0; blocks with gaps
    // What i sends j, known to every rank. In place, MPI takes both sides
    // from recvcounts, so what i sends j is what j sends i.
    auto pair = [&](int from, int to) {
      const int lo = inPlace ? std::min(from, to) : from;
      const int hi = inPlace ? std::max(from, to) : to;
      return (n + 3 * lo + 5 * hi + iteration) % (n + 4) == 0
                 ? 0
                 : (n * (lo + 1) + hi) % (n + 3);
    };
    std::vector<int> sc(static_cast<size_t>(p)), sd(sc), rcv(sc), rd(sc);
    int sendTotal = 0, recvTotal = 0;
    for (int j = p - 1; j >= 0; --j) { // sent blocks in reverse, 2 apart
      sc[static_cast<size_t>(j)] = pair(rank, j);
      sd[static_cast<size_t>(j)] = sendTotal;
      sendTotal += sc[static_cast<size_t>(j)] + 2;
    }
    for (int j = 0; j < p; ++j) { // received blocks in order, 1 apart
      rcv[static_cast<size_t>(j)] = pair(j, rank);
      rd[static_cast<size_t>(j)] = recvTotal;
      recvTotal += rcv[static_cast<size_t>(j)] + 1;
    }
    alloc(ina, sendTotal);
    fill(ina, t, sendTotal, seed);
    alloc(a, recvTotal);
    fill(a, t, recvTotal, seed ^ 23);
    b = a;
    rc1 = MPI_Alltoallv(inPlace ? MPI_IN_PLACE : ina.data(), sc.data(),
                        sd.data(), t.type, a.data(), rcv.data(), rd.data(),
                        t.type, comm);
    rc2 = PMPI_Alltoallv(inPlace ? MPI_IN_PLACE : ina.data(), sc.data(),
                         sd.data(), t.type, b.data(), rcv.data(), rd.data(),
                         t.type, comm);
    check(what, sameCode(rc1, rc2) && same(a, b, t), comm, rank, nullptr);
    return;
  }
  case 5: { // MPI_Reduce_scatter: equal counts, counts that differ by one
            // (the drop-in pads them), or one rank's far larger (handed on,
            // but for a few bytes in all)
    const int shape = pick(3);
    if (t.floating || t.type != t.base) // the block variant has those
      return;
    std::vector<int> cnts(static_cast<size_t>(p), n);
    int total = 0;
    for (int j = 0; j < p; ++j) {
      int &c = cnts[static_cast<size_t>(j)];
      if (shape == 1)
        c = n / p + (j < n % p);
      else if (shape == 2)
        c = j == 0 ? n * p + p : n % 2;
      total += c;
    }
    const int own = cnts[static_cast<size_t>(rank)];
    std::snprintf(
        what, sizeof what,
        "reduce_scatter, %s counts (%d here) of %s, %s, %d ranks, #%d",
        shape == 0   ? "equal"
        : shape == 1 ? "near-equal"
                     : "skewed",
        own, t.name, inPlace ? "in place" : "not in place", p, iteration);
    alloc(ina, total);
    fill(ina, t, total, seed);
    if (inPlace) {
      a = ina;
    } else {
      alloc(a, own);
      fill(a, t, own, seed ^ 29);
    }
    b = a;
    rc1 = MPI_Reduce_scatter(inPlace ? MPI_IN_PLACE : ina.data(), a.data(),
                             cnts.data(), t.type, MPI_SUM, comm);
    rc2 = PMPI_Reduce_scatter(inPlace ? MPI_IN_PLACE : ina.data(), b.data(),
                              cnts.data(), t.type, MPI_SUM, comm);
    // In place, the result is the buffer's first block; MPI leaves the rest
    // undefined.
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(t.type, &lb, &extent);
    a.resize(static_cast<size_t>(own * extent));
    b.resize(a.size());
    check(what, sameCode(rc1, rc2) && same(a, b, t), comm, rank, nullptr);
    return;
  }
  }
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  int rank = 0, p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);

  std::vector<Type> types = {
      {"int", MPI_INT, MPI_INT, 1, false, false},
      {"double", MPI_DOUBLE, MPI_DOUBLE, 1, true, false},
      {"float", MPI_FLOAT, MPI_FLOAT, 1, true, false},
      {"long", MPI_LONG, MPI_LONG, 1, false, false},
      {"unsigned char", MPI_UNSIGNED_CHAR, MPI_UNSIGNED_CHAR, 1, false, false},
  };
  // Fortran's types, where the MPI has them with the usual sizes (4, 8, 4
  // bytes): the C buffers here hold the same values.
  auto sized = [](MPI_Datatype type, int bytes) {
    int size = 0;
    return type != MPI_DATATYPE_NULL &&
           MPI_Type_size(type, &size) == MPI_SUCCESS && size == bytes;
  };
  if (sized(MPI_INTEGER, 4))
    types.push_back({"INTEGER", MPI_INTEGER, MPI_INTEGER, 1, false, false});
  if (sized(MPI_DOUBLE_PRECISION, 8))
    types.push_back({"DOUBLE PRECISION", MPI_DOUBLE_PRECISION,
                     MPI_DOUBLE_PRECISION, 1, true, false});
  if (sized(MPI_LOGICAL, 4))
    types.push_back({"LOGICAL", MPI_LOGICAL, MPI_LOGICAL, 1, false, false});
  MPI_Datatype contig3, vec2;
  MPI_Type_contiguous(3, MPI_INT, &contig3);
  MPI_Type_commit(&contig3);
  // Two doubles with a double's hole between them: strided, 24-byte extent.
  MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &vec2);
  MPI_Type_commit(&vec2);
  types.push_back({"contiguous(3, int)", contig3, MPI_INT, 3, false, false});
  types.push_back({"vector(2, 1, 2, double)", vec2, MPI_DOUBLE, 2, true, true});

  // The communicators: the world, a duplicate, halves by parity, and the
  // world in reverse order.
  MPI_Comm dup, half, reversed;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Comm_split(MPI_COMM_WORLD, 0, p - rank, &reversed);
  const MPI_Comm comms[] = {MPI_COMM_WORLD, dup, half, reversed};
  // Errors come back as codes, compared between the two calls.
  for (MPI_Comm c : comms)
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);

  rng.seed(seed);
  for (int i = 0; i < iterations; ++i) {
    // The same draws at every rank: a communicator's ranks all call.
    MPI_Comm comm = comms[i % 4];
    if (comm == half) {
      // Each half draws its own, so the two halves call different things.
      std::mt19937_64 saved = rng;
      rng.seed(seed * 31 + static_cast<uint64_t>(rank % 2) + i);
      runOne(comm, types, i);
      rng = saved;
      rng();
      continue;
    }
    runOne(comm, types, i);
  }
  {
    // A type of size 0 (MPICH's alltoallw_zeros): one element to every
    // rank, in place and not, is no data at all.
    MPI_Datatype empty;
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    std::vector<int> ones(static_cast<size_t>(p), 1), zeros(ones.size(), 0);
    int sendbuf = 0, recvbuf = 7;
    int rc1 = MPI_Alltoallv(&sendbuf, ones.data(), zeros.data(), empty,
                            &recvbuf, ones.data(), zeros.data(), empty,
                            MPI_COMM_WORLD);
    int rc2 = MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL,
                            &recvbuf, ones.data(), zeros.data(), empty,
                            MPI_COMM_WORLD);
    check("alltoallv of a type of size 0", rc1 == MPI_SUCCESS &&
          rc2 == MPI_SUCCESS && recvbuf == 7, MPI_COMM_WORLD, rank, nullptr);
    MPI_Type_free(&empty);
  }
  {
    // In place, a type with padding (MPI_DOUBLE_INT, 12 bytes in 16),
    // unequal counts: checked against the answer every rank knows, since
    // MPICH 4.0.2's own call fails here ("Message truncated").
    const int n = 300;
    std::vector<int> counts(static_cast<size_t>(p)), displs(counts);
    int total = 0;
    for (int j = 0; j < p; ++j) {
      counts[static_cast<size_t>(j)] = n * (1 + (rank + j) % 3);
      displs[static_cast<size_t>(j)] = total;
      total += counts[static_cast<size_t>(j)] + 2;
    }
    auto element = [](int from, int to, int k) {
      return DoubleInt{from * 1e6 + to * 1e4 + k,
                       -(from * 100000 + to * 1000 + k)};
    };
    std::vector<DoubleInt> buf(static_cast<size_t>(total), DoubleInt{-1, -1});
    for (int j = 0; j < p; ++j)
      for (int k = 0; k < counts[static_cast<size_t>(j)]; ++k)
        buf[static_cast<size_t>(displs[static_cast<size_t>(j)] + k)] =
            element(rank, j, k);
    const int rc = MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr,
                                 MPI_DATATYPE_NULL, buf.data(), counts.data(),
                                 displs.data(), MPI_DOUBLE_INT, MPI_COMM_WORLD);
    bool right = rc == MPI_SUCCESS;
    for (int j = 0; j < p; ++j)
      for (int k = 0; k < counts[static_cast<size_t>(j)]; ++k) {
        const DoubleInt got =
            buf[static_cast<size_t>(displs[static_cast<size_t>(j)] + k)];
        const DoubleInt want = element(j, rank, k);
        right &= got.value == want.value && got.index == want.index;
      }
    check("alltoallv in place of MPI_DOUBLE_INT, unequal counts", right,
          MPI_COMM_WORLD, rank, nullptr);
  }
  {
    // In place, a strided type (packed by the drop-in): the result is the
    // first block, and the input after it and every hole stay as they were.
    // MPI does not say what is left there (Open MPI's own call writes other
    // ranks' results there), so this is checked against the answer, not
    // against PMPI_.
    MPI_Datatype strided;
    MPI_Type_vector(2, 1, 2, MPI_INT, &strided); // 2 ints in 3
    MPI_Type_commit(&strided);
    const int count = 5, ints = 3 * count * p + 1;
    std::vector<int> buf(static_cast<size_t>(ints)), before;
    for (int i = 0; i < ints; ++i)
      buf[static_cast<size_t>(i)] = (rank + 1) * 1000 + i;
    before = buf;
    const int rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, buf.data(), count,
                                            strided, MPI_SUM, MPI_COMM_WORLD);
    bool right = rc == MPI_SUCCESS;
    for (int i = 0; i < ints; ++i) {
      const bool data = i < 3 * count && i % 3 != 1;
      // This rank's block of every rank's input, summed: the ints at
      // 3 * count * rank + i.
      const int want = data
                           ? p * (p + 1) / 2 * 1000 + p * (3 * count * rank + i)
                           : before[static_cast<size_t>(i)];
      right &= buf[static_cast<size_t>(i)] == want;
    }
    check("reduce-scatter in place of a strided type: the rest untouched",
          right, MPI_COMM_WORLD, rank, nullptr);
    MPI_Type_free(&strided);
  }
  for (MPI_Comm comm : {MPI_COMM_WORLD, reversed}) {
    int me = 0;
    MPI_Comm_rank(comm, &me);
    bottomBuffers(comm, me, p);
  }
#if MPI_VERSION >= 4
  {
    // A type made by MPI 4.0's large-count constructor (whose envelope
    // MPICH gives by no int counts) at the odd ranks, ints at the even ones:
    // the same signature, so every rank must take the same path.
    MPI_Datatype four;
    MPI_Type_contiguous_c(4, MPI_INT, &four);
    MPI_Type_commit(&four);
    const bool odd = rank % 2 == 1;
    std::vector<int> mine(4), a(static_cast<size_t>(4 * p), -1), b(a);
    for (int i = 0; i < 4; ++i)
      mine[static_cast<size_t>(i)] = rank * 10 + i;
    int rc1 = MPI_Allgather(mine.data(), odd ? 1 : 4, odd ? four : MPI_INT,
                            a.data(), 4, MPI_INT, MPI_COMM_WORLD);
    int rc2 = PMPI_Allgather(mine.data(), 4, MPI_INT, b.data(), 4, MPI_INT,
                             MPI_COMM_WORLD);
    check("allgather of a large-count type at the odd ranks",
          rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS && a == b, MPI_COMM_WORLD,
          rank, nullptr);
    std::vector<int> c(4, -1), d(4, -1);
    if (rank == 0)
      c = d = mine;
    rc1 = MPI_Bcast(c.data(), odd ? 1 : 4, odd ? four : MPI_INT, 0,
                    MPI_COMM_WORLD);
    rc2 = PMPI_Bcast(d.data(), 4, MPI_INT, 0, MPI_COMM_WORLD);
    check("bcast of a large-count type at the odd ranks",
          rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS && c == d, MPI_COMM_WORLD,
          rank, nullptr);
    MPI_Type_free(&four);
  }
#endif
  {
    // An operator that does not commute, reduced to every root, in place
    // and not, on the world and on the world reversed. Where the library
    // runs it to root 0 (an order-keeping reduce), it runs every root alike:
    // the reduce to rank 0, then a move.
    const MPI_Op matrix = matrixOp();
    AllOrNone series;
    for (MPI_Comm comm : {MPI_COMM_WORLD, reversed})
      for (int root = 0; root < p; ++root)
        for (bool inPlace : {false, true}) {
          int me = 0;
          MPI_Comm_rank(comm, &me);
          std::vector<int> in(12), a(12, -1), b(12, -1);
          for (size_t i = 0; i < in.size(); ++i)
            in[i] =
                static_cast<int>((static_cast<size_t>(me) * 7 + i * 3) % 5) - 2;
          const bool ip = inPlace && me == root;
          if (ip)
            a = b = in;
          int rc1 = MPI_Reduce(ip ? MPI_IN_PLACE : in.data(), a.data(), 12,
                               MPI_INT, matrix, root, comm);
          int rc2 = PMPI_Reduce(ip ? MPI_IN_PLACE : in.data(), b.data(), 12,
                                MPI_INT, matrix, root, comm);
          series.called();
          char what[128];
          std::snprintf(what, sizeof what,
                        "non-commutative reduce to root %d, %s, %d ranks%s",
                        root, inPlace ? "in place" : "not in place", p,
                        comm == reversed ? ", reversed" : "");
          check(what, rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS && a == b, comm,
                rank, nullptr);
        }
    series.check("every root's non-commutative reduce run by collc", rank);
  }
  {
    // The all-reduce, scan and exclusive scan of an operator that does not
    // commute, in place and not, on the world and reversed: rank r gets
    // in_0 * ... * in_r in that order (all of them for the all-reduce,
    // those before r for the exclusive scan). Where the library runs the
    // first of a call (an order-keeping schedule for this size), it runs
    // them all.
    const MPI_Op matrix = matrixOp();
    using Fold =
        int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
    struct Call {
      const char *name;
      Fold ours, theirs;
    };
    for (const Call &call : {Call{"allreduce", MPI_Allreduce, PMPI_Allreduce},
                             Call{"scan", MPI_Scan, PMPI_Scan},
                             Call{"exscan", MPI_Exscan, PMPI_Exscan}}) {
      AllOrNone series;
      const bool exclusive = call.theirs == PMPI_Exscan;
      for (MPI_Comm comm : {MPI_COMM_WORLD, reversed})
        for (bool inPlace : {false, true}) {
          int me = 0;
          MPI_Comm_rank(comm, &me);
          std::vector<int> in(8), a(8, -1), b(8, -1);
          for (size_t i = 0; i < in.size(); ++i)
            in[i] =
                static_cast<int>((static_cast<size_t>(me) * 5 + i * 3) % 7) - 3;
          if (inPlace)
            a = b = in;
          int rc1 = call.ours(inPlace ? MPI_IN_PLACE : in.data(), a.data(), 8,
                              MPI_INT, matrix, comm);
          int rc2 = call.theirs(inPlace ? MPI_IN_PLACE : in.data(), b.data(), 8,
                                MPI_INT, matrix, comm);
          if (exclusive && me == 0) // undefined there
            a = b;
          series.called();
          char what[128];
          std::snprintf(what, sizeof what, "non-commutative %s, %s, %d ranks%s",
                        call.name, inPlace ? "in place" : "not in place", p,
                        comm == reversed ? ", reversed" : "");
          check(what, rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS && a == b, comm,
                rank, nullptr);
        }
      char what[96];
      std::snprintf(what, sizeof what, "every non-commutative %s run by collc",
                    call.name);
      series.check(what, rank);
    }
    // Rank 0's receive buffer is not significant: it may be null.
    if (p >= 2) {
      int me = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &me);
      std::vector<int> in(8, me + 1), a(8, -1), b(8, -1);
      int rc1 = MPI_Exscan(in.data(), me == 0 ? nullptr : a.data(), 8, MPI_INT,
                           MPI_SUM, MPI_COMM_WORLD);
      int rc2 =
          PMPI_Exscan(in.data(), b.data(), 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      if (me == 0)
        a = b;
      check("exscan with a null receive buffer at rank 0",
            rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS && a == b, MPI_COMM_WORLD,
            rank, nullptr);
    }
  }
  {
    // MAXLOC over value-index pairs, one by one and two to an element, by
    // MPI's operator and by a user's: the padded ones (double and int, 12
    // bytes in 16) pack closer than their structs, so two of them are no
    // array of the pair, and a user's function reads the structs. The
    // drop-in agrees with MPI's own on whether the call is legal and, where
    // it is, on the result.
    MPI_Datatype twoPairs;
    MPI_Type_contiguous(2, MPI_DOUBLE_INT, &twoPairs);
    MPI_Type_commit(&twoPairs);
    MPI_Op users;
    MPI_Op_create(userMaxloc, 1, &users);
    for (MPI_Datatype type : {MPI_DOUBLE_INT, twoPairs})
      for (MPI_Op op : {MPI_MAXLOC, users}) {
        if (op == users && type != MPI_DOUBLE_INT) // it reads single pairs
          continue;
        const int perElement = type == twoPairs ? 2 : 1, count = 3;
        const size_t pairs = static_cast<size_t>(count * perElement);
        std::vector<DoubleInt> in(pairs), a(pairs), b(pairs);
        for (size_t i = 0; i < pairs; ++i)
          in[i] = {
              static_cast<double>((rank * 5 + static_cast<int>(i) * 3) % 7),
              rank};
        int rc1 =
            MPI_Allreduce(in.data(), a.data(), count, type, op, MPI_COMM_WORLD);
        int rc2 = PMPI_Allreduce(in.data(), b.data(), count, type, op,
                                 MPI_COMM_WORLD);
        bool same = (rc1 == MPI_SUCCESS) == (rc2 == MPI_SUCCESS);
        for (size_t i = 0; same && rc1 == MPI_SUCCESS && i < pairs; ++i)
          same = a[i].value == b[i].value && a[i].index == b[i].index;
        char what[128];
        std::snprintf(what, sizeof what, "%s all-reduce of %s, %d ranks",
                      op == users ? "a user's MAXLOC" : "MAXLOC",
                      type == twoPairs ? "contiguous(2, MPI_DOUBLE_INT)"
                                       : "MPI_DOUBLE_INT",
                      p);
        check(what, same, MPI_COMM_WORLD, rank, nullptr);
      }
    MPI_Op_free(&users);
    MPI_Type_free(&twoPairs);
  }
  if (p >= 3) {
    // A negative count among counts that would otherwise be padded: the
    // error MPI's own call gives, at every rank, never a copy of -1 bytes.
    std::vector<int> cnts(static_cast<size_t>(p), 2);
    cnts[0] = -1;
    std::vector<int> in(static_cast<size_t>(2 * p)), a(2, -1), b(2, -1);
    const int rc1 = MPI_Reduce_scatter(in.data(), a.data(), cnts.data(),
                                       MPI_INT, MPI_SUM, dup);
    const int rc2 = PMPI_Reduce_scatter(in.data(), b.data(), cnts.data(),
                                        MPI_INT, MPI_SUM, dup);
    check("reduce_scatter with a negative count among near-equal counts",
          rc1 != MPI_SUCCESS && sameCode(rc1, rc2), dup, rank, nullptr);
  }
  if (p >= 2) {
    // Which path: counts split as n / p and n / p + 1 take the path equal
    // counts take (collc's, padded, where the library has the schedule);
    // one rank's far larger go to MPI (the results are compared above).
    const int n = 8 * p + 1; // n % p == 1: unequal
    std::vector<int> equal(static_cast<size_t>(p), 8),
        even(static_cast<size_t>(p)), skewed(static_cast<size_t>(p), 0),
        displs(static_cast<size_t>(p));
    for (int j = 0, at = 0; j < p; at += even[static_cast<size_t>(j++)]) {
      even[static_cast<size_t>(j)] = n / p + (j < n % p);
      displs[static_cast<size_t>(j)] = at;
    }
    skewed[0] = n;
    std::vector<int> in(static_cast<size_t>(n), rank),
        out(static_cast<size_t>(n));
    for (const bool gathers : {true, false}) {
      unsigned long long byCollc[3] = {}, theirs = 0;
      int rc = MPI_SUCCESS, shape = 0;
      for (const std::vector<int> *counts : {&equal, &even, &skewed}) {
        unsigned long long before = 0, after = 0;
        collc_mpi_counts(&before, &theirs);
        if (gathers) {
          for (int j = 0, at = 0; j < p;
               at += (*counts)[static_cast<size_t>(j++)])
            displs[static_cast<size_t>(j)] = at;
          rc |= MPI_Allgatherv(in.data(), (*counts)[static_cast<size_t>(rank)],
                               MPI_INT, out.data(), counts->data(),
                               displs.data(), MPI_INT, MPI_COMM_WORLD);
        } else {
          rc |= MPI_Reduce_scatter(in.data(), out.data(), counts->data(),
                                   MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        }
        collc_mpi_counts(&after, &theirs);
        byCollc[shape++] = after - before;
      }
      char what[128];
      std::snprintf(what, sizeof what,
                    "%s: near-equal counts as equal ones (by collc: %llu, "
                    "%llu), skewed ones by MPI (%llu)",
                    gathers ? "allgatherv" : "reduce_scatter", byCollc[0],
                    byCollc[1], byCollc[2]);
      check(what,
            rc == MPI_SUCCESS && byCollc[1] == byCollc[0] && byCollc[2] == 0,
            MPI_COMM_WORLD, rank, nullptr);
    }
  }
  {
    // The collective calls no schedule runs go to MPI and are counted as
    // handed on, one each: a barrier, and nonblocking calls, which must
    // progress while the program works.
    unsigned long long ours0 = 0, theirs0 = 0, ours1 = 0, theirs1 = 0;
    collc_mpi_counts(&ours0, &theirs0);
    std::vector<int> in(4, rank + 1), sum(4, 0), root(4, rank == 0 ? 7 : 0);
    MPI_Request requests[2];
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    rc |= MPI_Iallreduce(in.data(), sum.data(), 4, MPI_INT, MPI_SUM,
                         MPI_COMM_WORLD, &requests[0]);
    rc |= MPI_Ibcast(root.data(), 4, MPI_INT, 0, MPI_COMM_WORLD, &requests[1]);
    rc |= MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    collc_mpi_counts(&ours1, &theirs1);
    check("a barrier and nonblocking calls, handed on and counted",
          rc == MPI_SUCCESS && sum[3] == p * (p + 1) / 2 && root[0] == 7 &&
              ours1 == ours0 && theirs1 - theirs0 == 3,
          MPI_COMM_WORLD, rank, nullptr);
  }
  {
    // MPI_Allgatherv whose receive type differs by rank, its signature not:
    // odd ranks receive pairs of ints as contiguous(2, int), so their
    // counts are half the others'. Whether the blocks are padded is decided
    // in bytes, alike at every rank.
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    const bool pairs = rank % 2 == 1;
    const int per = pairs ? 2 : 1;
    std::vector<int> cnts(static_cast<size_t>(p)),
        displs(static_cast<size_t>(p));
    int ints = 0;
    for (int j = 0; j < p; ++j) {
      const int n = 2 * (4 + (j < p / 2)); // ints, near-equal
      cnts[static_cast<size_t>(j)] = n / per;
      displs[static_cast<size_t>(j)] = ints / per;
      ints += n;
    }
    const int own = 2 * (4 + (rank < p / 2));
    std::vector<int> in(static_cast<size_t>(own)),
        a(static_cast<size_t>(ints), -1);
    for (int i = 0; i < own; ++i)
      in[static_cast<size_t>(i)] = rank * 100 + i;
    const int rc =
        MPI_Allgatherv(in.data(), own, MPI_INT, a.data(), cnts.data(),
                       displs.data(), pairs ? pair : MPI_INT, MPI_COMM_WORLD);
    bool right = rc == MPI_SUCCESS;
    for (int j = 0, at = 0; j < p; ++j)
      for (int i = 0; right && i < 2 * (4 + (j < p / 2)); ++i)
        right = a[static_cast<size_t>(at++)] == j * 100 + i;
    check("allgatherv of near-equal blocks, received as int or as pairs", right,
          MPI_COMM_WORLD, rank, nullptr);
    MPI_Type_free(&pair);
  }
  {
    // MPI_Reduce_scatter of a derived type, equal counts, by whichever path
    // (one rank hands it to MPI, as its basic type): rank r gets the sum of
    // every rank's block r. MPI's own is no reference (Open MPI 4.1 refuses
    // a predefined operator on a derived type).
    MPI_Datatype triple;
    MPI_Type_contiguous(3, MPI_INT, &triple);
    MPI_Type_commit(&triple);
    const int count = 5, ints = 3 * count;
    std::vector<int> counts(static_cast<size_t>(p), count);
    std::vector<int> in(static_cast<size_t>(p * ints)), out(ints, -1);
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = rank * 1000 + static_cast<int>(i);
    const int rc = MPI_Reduce_scatter(in.data(), out.data(), counts.data(),
                                      triple, MPI_SUM, MPI_COMM_WORLD);
    bool right = rc == MPI_SUCCESS;
    for (int j = 0; right && j < ints; ++j)
      right = out[static_cast<size_t>(j)] ==
              1000 * p * (p - 1) / 2 + p * (rank * ints + j);
    check("reduce_scatter of contiguous(3, int), equal counts", right,
          MPI_COMM_WORLD, rank, nullptr);
    MPI_Type_free(&triple);
  }
  // A communicator freed where the drop-in cannot see it (PMPI_Comm_free, as
  // a tool or another library may free one): the next, of another size, may
  // get its handle, and must not run what was remembered for the old one.
  if (p >= 3) {
    int reused = 0;
    MPI_Comm before = MPI_COMM_NULL;
    for (int round = 0; round < 6; ++round) {
      const int size = round % 2 == 0 ? p : p - 1;
      MPI_Comm sub = MPI_COMM_NULL;
      PMPI_Comm_split(MPI_COMM_WORLD, rank < size ? 0 : MPI_UNDEFINED, rank,
                      &sub);
      reused += sub != MPI_COMM_NULL && sub == before;
      // Each call three times, the later ones remembered, on new buffers.
      for (int again = 0; sub != MPI_COMM_NULL && again < 3; ++again) {
        std::vector<long> in(5, rank + 1 + again), a(5, -1), b(5, -1);
        int rc1 = MPI_Allreduce(in.data(), a.data(), 5, MPI_LONG, MPI_SUM, sub);
        int rc2 =
            PMPI_Allreduce(in.data(), b.data(), 5, MPI_LONG, MPI_SUM, sub);
        std::vector<long> c(5, rank == 1 ? 7 + again : -1), d = c;
        rc1 |= MPI_Bcast(c.data(), 5, MPI_LONG, 1, sub);
        rc2 |= PMPI_Bcast(d.data(), 5, MPI_LONG, 1, sub);
        std::vector<long> e(3 * size, -1), f = e;
        rc1 |=
            MPI_Allgather(in.data(), 3, MPI_LONG, e.data(), 3, MPI_LONG, sub);
        rc2 |=
            PMPI_Allgather(in.data(), 3, MPI_LONG, f.data(), 3, MPI_LONG, sub);
        char what[128];
        std::snprintf(what, sizeof what,
                      "allreduce, bcast and allgather on %d of %d ranks, "
                      "after an unseen free",
                      size, p);
        check(what,
              rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS && a == b && c == d &&
                  e == f,
              sub, rank, nullptr);
      }
      before = sub;
      if (sub != MPI_COMM_NULL)
        PMPI_Comm_free(&sub);
      PMPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0)
      std::printf("a freed communicator's handle came back %d times\n", reused);
  }
  attributeCallbacks(rank);
  unsigned long long ours = 0, theirs = 0;
  collc_mpi_counts(&ours, &theirs);
  unsigned long long sums[2] = {ours, theirs}, totals[2] = {0, 0};
  PMPI_Reduce(sums, totals, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
              MPI_COMM_WORLD);
  int fails = failed, anyFail = 0;
  PMPI_Allreduce(&fails, &anyFail, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("%d ranks: collc ran %llu rank-calls, MPI %llu\n", p,
                totals[0], totals[1]);
    // With two ranks or more, collc must have run some of it: a drop-in
    // that hands everything on would pass the comparison trivially.
    if (p >= 2 && totals[0] == 0) {
      std::printf("FAILED: collc ran no call\n");
      anyFail = 1;
      ++failed;
    }
    std::printf("%d passed, %d failed\n", passed, failed);
  }
  MPI_Type_free(&contig3);
  MPI_Type_free(&vec2);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&half);
  MPI_Comm_free(&reversed);
  MPI_Finalize();
  return anyFail ? 1 : 0;
}
