#pragma once
// How an intercepted call runs once decided: by its schedule, or by MPI's
// own call, counted (and timed, when reporting) under its collective.

#include "Choice.h"

#include <cstdio>
#include <new>

namespace collc::mpi {

/// Runs the schedule `k`. An allocation that fails there (the packed copy
/// of a huge buffer) is this rank's failure, and the others are in the
/// schedule: it aborts with a message, not with an exception through C.
template <typename Ours>
int runOurs(Coll coll, const Candidate &k, Ours &ours) {
  try {
    return ours(k);
  } catch (const std::bad_alloc &) {
    char what[96];
    std::snprintf(what, sizeof what, "%s: out of memory", collName(coll));
    return localFailure(MPI_COMM_WORLD, MPI_ERR_NO_MEM, what);
  }
}

/// Times and counts the call (when reporting) and runs it.
template <typename Ours, typename Theirs>
int route(Coll coll, const Choice &choice, Ours &&ours, Theirs &&theirs) {
  if (!reporting()) {
    count(coll, choice, 0);
    return choice.candidate ? runOurs(coll, *choice.candidate, ours) : theirs();
  }
  const double start = PMPI_Wtime();
  const int rc =
      choice.candidate ? runOurs(coll, *choice.candidate, ours) : theirs();
  count(coll, choice, PMPI_Wtime() - start);
  return rc;
}

inline Choice refuse(Reason r) {
  Choice c;
  c.reason = r;
  return c;
}

/// A call no library schedule runs: MPI's own, counted with `why` (or as
/// pinned, when the environment sends the collective to MPI anyway).
template <typename Theirs> int handOn(Coll coll, Reason why, Theirs &&theirs) {
  return route(
      coll, refuse(pinnedToMpi(coll) ? Reason::Pinned : why),
      [](const Candidate &) { return MPI_ERR_INTERN; }, theirs);
}

} // namespace collc::mpi
