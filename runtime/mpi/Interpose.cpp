// What every intercepted call of libcollc_mpi shares (Interpose.h), and
// MPI_Init and MPI_Finalize, which arm and print the report.

#include "Interpose.h"
#include "Agreement.h"
#include "collc/Meaning.h"

#include <climits>
#include <cstdio>

namespace collc::mpi {

constinit thread_local Remembered rememberedCalls[scheduledColls]
                                                 [rememberedWays];
namespace {
/// The way of each kind that the next remembered call takes.
constinit thread_local unsigned rememberedNext[scheduledColls];
} // namespace

Reason screen(Coll coll, MPI_Comm comm, Comm &c) {
  if (comm == MPI_COMM_NULL)
    return Reason::Invalid;
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
    return Reason::Invalid;
  if (inter)
    return Reason::Intercomm;
  PMPI_Comm_size(comm, &c.size);
  PMPI_Comm_rank(comm, &c.rank);
  if (pinnedToMpi(coll))
    return Reason::Pinned;
  if (c.size == 1)
    return Reason::OneRank;
  return Reason::Count;
}

int misplacedInPlace(Coll coll, const Comm &c, int root, const void *send,
                     const void *recv, MPI_Comm comm) {
  const char *fault = collc::meaning::inPlaceFault(
      collc::meaning::conditionsOf(kindOf(coll)), c.rank, root,
      send == MPI_IN_PLACE, recv == MPI_IN_PLACE);
  if (!fault)
    return MPI_SUCCESS;
  char what[160];
  std::snprintf(what, sizeof what, "%s: %s", collName(coll), fault);
  return localFailure(comm, MPI_ERR_BUFFER, what);
}

Reason blockBytes(int count, MPI_Datatype type, rt::TypeInfo &info,
                  int64_t &bytes) {
  if (count < 0 || type == MPI_DATATYPE_NULL ||
      rt::describe(type, info) != MPI_SUCCESS)
    return Reason::Invalid;
  bytes = static_cast<int64_t>(count) * info.size;
  if (bytes == 0)
    return Reason::Empty;
  if (bytes > INT_MAX)
    return Reason::TooLarge;
  return Reason::Count;
}

int ran(MPI_Comm comm, int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return rc;
  return localFailure(comm, rc, what);
}

int runRemembered(const Remembered &r, const void *send, void *recv) {
  Args a;
  a.send = r.passSend ? send : (r.inPlace ? MPI_IN_PLACE : nullptr);
  a.recv = r.passRecv ? recv : (r.inPlace ? MPI_IN_PLACE : nullptr);
  a.count = r.count;
  a.type = r.type;
  a.op = r.op;
  a.root = r.root;
  a.comm = r.key.comm;
  add(*r.calls, uint64_t{1});
  if (int rc = r.candidate->run(a))
    return ran(a.comm, rc, r.failure);
  return MPI_SUCCESS;
}

void remember(Coll coll, const CallKey &key, const Args &a, bool passSend,
              bool passRecv, bool inPlace, const Candidate &k,
              const char *failure) {
  if (reporting() || checking() || !collc::rt::hasMpiBackend(key.comm))
    return;
  unsigned &next = rememberedNext[static_cast<int>(coll)];
  Remembered &r = rememberedCalls[static_cast<int>(coll)][next];
  next = (next + 1) % rememberedWays;
  r.key = key;
  r.freed = collc::rt::mpiDuplicatesFreed();
  r.count = a.count;
  r.root = a.root;
  r.type = a.type;
  r.op = a.op;
  r.passSend = passSend;
  r.passRecv = passRecv;
  r.inPlace = inPlace;
  r.candidate = &k;
  r.calls = &callsOf(coll, k);
  r.failure = failure;
}

} // namespace collc::mpi

using namespace collc::mpi;

extern "C" {

int MPI_Init(int *argc, char ***argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS && reporting())
    armReport();
  return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && reporting())
    armReport();
  return rc;
}

int MPI_Finalize(void) {
  if (reporting())
    reportBeforeFinalize();
  return PMPI_Finalize();
}

} // extern "C"
