// Runs one emitted collective under mpirun and compares every rank's result
// with the MPI library's own collective on the same input, for several counts,
// types and operators, in place and not. Data differs per rank and element,
// so a misplaced chunk cannot pass. Exit status 0 when all agree.
//
//   mpirun -np N e2e_test NAME

#include "basics.h"
#include "e2e.h"
#include "hypercube.h"
#include "ring.h"

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

int rank = 0, size = 1;
int failures = 0;

void check(bool ok, const std::string &what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
  }
}

// Element i of rank r's block b: distinct across ranks, blocks and elements;
// small enough that sums of up to 8 stay exact in double.
template <typename T> T value(int r, int b, int i) {
  return static_cast<T>((r * 7919 + b * 104729 + i * 31) % 100003 -
                        50000 + r);
}

template <typename T> std::vector<T> input(int blocks, int count) {
  std::vector<T> v(static_cast<size_t>(blocks) * count);
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < count; ++i)
      v[static_cast<size_t>(b) * count + i] = value<T>(rank, b, i);
  return v;
}

template <typename T>
void compare(const std::vector<T> &got, const std::vector<T> &want,
             const std::string &what) {
  bool ok = got.size() == want.size();
  for (size_t i = 0; ok && i < got.size(); ++i)
    ok = got[i] == want[i];
  check(ok, what);
}

template <typename T> MPI_Datatype mpiType();
template <> MPI_Datatype mpiType<int>() { return MPI_INT; }
template <> MPI_Datatype mpiType<double>() { return MPI_DOUBLE; }

using Case = std::function<void(int count, bool inPlace)>;

// Each collective's test for one element type T: run collc's function and
// MPI's on copies of the same input, compare.
template <typename T> std::map<std::string, Case> cases(MPI_Op op) {
  const MPI_Datatype t = mpiType<T>();
  const std::string ty = (t == MPI_INT ? "int" : "double");
  std::map<std::string, Case> m;
  auto tag = [=](const char *name, int count, bool inPlace) {
    return std::string(name) + " " + ty + " count " + std::to_string(count) +
           (inPlace ? " in place" : "");
  };
  auto bcast = [=](auto fn, const char *name) {
    return [=](int count, bool) {
      std::vector<T> got = input<T>(1, count), want = got;
      check(fn(got.data(), count, t, 0, MPI_COMM_WORLD) == MPI_SUCCESS,
            tag(name, count, false) + " returned an error");
      MPI_Bcast(want.data(), count, t, 0, MPI_COMM_WORLD);
      compare(got, want, tag(name, count, false));
    };
  };
  m["ff"] = bcast(collc_test::ff, "ff");
  m["one_to_all_bc"] = bcast(collc_test::one_to_all_bc, "one_to_all_bc");
  m["bc_chunked"] = bcast(collc_test::bc_chunked, "bc_chunked");

  auto allgather = [=](auto fn, const char *name) {
    return [=](int count, bool inPlace) {
      std::vector<T> mine = input<T>(1, count);
      std::vector<T> got(static_cast<size_t>(size) * count), want = got;
      if (inPlace)
        std::copy(mine.begin(), mine.end(), got.begin() + rank * count);
      check(fn(inPlace ? MPI_IN_PLACE : mine.data(), count, t, got.data(),
               count, t, MPI_COMM_WORLD) == MPI_SUCCESS,
            tag(name, count, inPlace) + " returned an error");
      MPI_Allgather(mine.data(), count, t, want.data(), count, t,
                    MPI_COMM_WORLD);
      compare(got, want, tag(name, count, inPlace));
    };
  };
  m["all_to_all_bc"] = allgather(collc_test::all_to_all_bc, "all_to_all_bc");
  m["ring_allgather"] = allgather(collc_test::ring_allgather, "ring_allgather");

  auto alltoall = [=](auto fn, const char *name) {
    return [=](int count, bool inPlace) {
      std::vector<T> mine = input<T>(size, count);
      std::vector<T> got(mine.size()), want(mine.size());
      if (inPlace)
        got = mine;
      check(fn(inPlace ? MPI_IN_PLACE : mine.data(), count, t, got.data(),
               count, t, MPI_COMM_WORLD) == MPI_SUCCESS,
            tag(name, count, inPlace) + " returned an error");
      MPI_Alltoall(mine.data(), count, t, want.data(), count, t,
                   MPI_COMM_WORLD);
      compare(got, want, tag(name, count, inPlace));
    };
  };
  m["pairwise"] = alltoall(collc_test::pairwise, "pairwise");
  m["ring_alltoall"] = alltoall(collc_test::ring_alltoall, "ring_alltoall");

  m["scatter_halving"] = [=](int count, bool inPlace) {
    std::vector<T> mine = input<T>(size, count);
    std::vector<T> got(count), want(count);
    bool rootInPlace = inPlace && rank == 0;
    check(collc_test::scatter_halving(mine.data(), count, t,
                                      rootInPlace ? MPI_IN_PLACE : got.data(),
                                      count, t, 0,
                                      MPI_COMM_WORLD) == MPI_SUCCESS,
          tag("scatter_halving", count, inPlace) + " returned an error");
    MPI_Scatter(mine.data(), count, t, want.data(), count, t, 0,
                MPI_COMM_WORLD);
    if (!rootInPlace)
      compare(got, want, tag("scatter_halving", count, inPlace));
  };
  m["gather_to_0"] = [=](int count, bool) {
    std::vector<T> mine = input<T>(1, count);
    std::vector<T> got(static_cast<size_t>(size) * count), want = got;
    check(collc_test::gather_to_0(mine.data(), count, t, got.data(), count, t,
                                  0, MPI_COMM_WORLD) == MPI_SUCCESS,
          tag("gather_to_0", count, false) + " returned an error");
    MPI_Gather(mine.data(), count, t, want.data(), count, t, 0,
               MPI_COMM_WORLD);
    if (rank == 0)
      compare(got, want, tag("gather_to_0", count, false));
  };

  auto allreduce = [=](auto fn, auto reference, const char *name) {
    return [=](int count, bool inPlace) {
      std::vector<T> mine = input<T>(1, count);
      std::vector<T> got(count), want(count);
      if (inPlace)
        got = mine;
      check(fn(inPlace ? MPI_IN_PLACE : mine.data(), got.data(), count, t, op,
               MPI_COMM_WORLD) == MPI_SUCCESS,
            tag(name, count, inPlace) + " returned an error");
      reference(mine.data(), want.data(), count, t, op, MPI_COMM_WORLD);
      compare(got, want, tag(name, count, inPlace));
    };
  };
  m["ar_doubling"] = allreduce(collc_test::ar_doubling, MPI_Allreduce,
                               "ar_doubling");
  m["prefix_sums"] = allreduce(collc_test::prefix_sums, MPI_Scan,
                               "prefix_sums");
  m["reduce_to_0"] = [=](int count, bool inPlace) {
    std::vector<T> mine = input<T>(1, count);
    std::vector<T> got(count), want(count);
    bool rootInPlace = inPlace && rank == 0;
    if (rootInPlace)
      got = mine;
    check(collc_test::reduce_to_0(rootInPlace ? MPI_IN_PLACE : mine.data(),
                                  got.data(), count, t, op, 0,
                                  MPI_COMM_WORLD) == MPI_SUCCESS,
          tag("reduce_to_0", count, inPlace) + " returned an error");
    MPI_Reduce(mine.data(), want.data(), count, t, op, 0, MPI_COMM_WORLD);
    if (rank == 0)
      compare(got, want, tag("reduce_to_0", count, inPlace));
  };
  m["rs_halving"] = [=](int count, bool inPlace) {
    std::vector<T> mine = input<T>(size, count);
    std::vector<T> got(inPlace ? mine : std::vector<T>(count)), want(count);
    check(collc_test::rs_halving(inPlace ? MPI_IN_PLACE : mine.data(),
                                 got.data(), count, t, op,
                                 MPI_COMM_WORLD) == MPI_SUCCESS,
          tag("rs_halving", count, inPlace) + " returned an error");
    MPI_Reduce_scatter_block(mine.data(), want.data(), count, t, op,
                             MPI_COMM_WORLD);
    got.resize(count);
    compare(got, want, tag("rs_halving", count, inPlace));
  };
  m["shift_one"] = [=](int count, bool) {
    std::vector<T> mine = input<T>(1, count);
    std::vector<T> got(count), want(count);
    check(collc_test::shift_one(mine.data(), got.data(), count, t,
                                MPI_COMM_WORLD) == MPI_SUCCESS,
          tag("shift_one", count, false) + " returned an error");
    MPI_Sendrecv(mine.data(), count, t, (rank + 1) % size, 0, want.data(),
                 count, t, (rank + size - 1) % size, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    compare(got, want, tag("shift_one", count, false));
  };
  return m;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (argc != 2) {
    std::fprintf(stderr, "usage: e2e_test NAME\n");
    MPI_Finalize();
    return 2;
  }
  const std::string name = argv[1];
  bool known = false;
  for (MPI_Op op : {MPI_SUM, MPI_MAX}) {
    auto ints = cases<int>(op);
    auto doubles = cases<double>(op);
    if (!ints.count(name))
      break;
    known = true;
    for (int count : {0, 1, 7, 1000, 1 << 17})
      for (bool inPlace : {false, true}) {
        ints[name](count, inPlace);
        doubles[name](count, inPlace);
      }
  }
  if (!known && rank == 0)
    std::fprintf(stderr, "e2e_test: unknown collective '%s'\n", name.c_str());

  // Error path: a communicator size outside the proved range returns an
  // error code instead of running (a hypercube needs a power of two).
  if (known && name == "one_to_all_bc" && size == 4) {
    MPI_Comm three;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 3 ? 0 : MPI_UNDEFINED, rank, &three);
    if (three != MPI_COMM_NULL) {
      int v = 1;
      check(collc_test::one_to_all_bc(&v, 1, MPI_INT, 0, three) ==
                MPI_ERR_SIZE,
            "3 ranks on a hypercube schedule must fail with MPI_ERR_SIZE");
      check(collc_test::one_to_all_bc(&v, 1, MPI_INT, 1, three) != 0,
            "a root the schedule is not proved for must fail");
      MPI_Comm_free(&three);
    }
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("%s on %d ranks: %s\n", name.c_str(), size,
                total == 0 && known ? "all results match MPI" : "FAILED");
  MPI_Finalize();
  return total == 0 && known ? 0 : 1;
}
