#pragma once
// The algorithm library and how a collective declaration finds its schedule.
//
// The library is the schedules of the .coll files shipped in specs/library,
// each naming the algorithm it implements (`schedule s : C on T using ALGO`).
// A declaration `collective x = C on T [using ALGO];` resolves to a schedule
// named x: the library family member (or the file's own schedule) that fits,
// specialised to T's size. `using ALGO` picks among the schedules that
// implement ALGO; `using auto`, or no `using`, picks the cheapest under the
// file's cost model, and where the cheapest depends on the message size
// (Table 4.1's min of two costs) records the sizes at which it changes.
//
// Fitting is exact, never approximate:
// - the family's topology must be T itself, or one T contains with the same
//   ranks and channels (a linear array in a ring, a mesh in a torus of the
//   same shape, anything in full(n), a ring, linear array, hypercube, mesh
//   or torus in a graph that has its links; the member then runs on the
//   graph's routes, and is checked and proved there, not on its own);
// - its parameters are solved from T's dimensions;
// - a different root is reached by relabelling ranks so that the library's
//   root becomes the declared one: with a symmetry of T where there is one
//   (rotation on a ring, torus or full network, XOR on a hypercube, 000 Alg
//   4.1's "any source", reflection on a mesh or linear array), which maps
//   channels to channels, so what the schedule sends on which link is the
//   same up to names; else, on a mesh or linear array, by rotating
//   coordinates as if they wrapped around, which keeps the steps and their
//   sizes but sends some messages the long way; the relabelled schedule must
//   then simulate correctly on T (no contention, no congestion) to fit.
// The result is a schedule with a single member, proved again like any other
// before it is priced or emitted: resolution chooses, verification decides.

#include "sema/Program.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collc::library {

/// The shipped schedules. Their sources live in the SourceMgr they were
/// loaded through, so diagnostics and counterexamples point into them.
struct Library {
  std::vector<Program> files;
  std::vector<const ir::Schedule *> schedules() const;
  /// The schedule named `name` in any file, or null.
  const ir::Schedule *find(llvm::StringRef name) const;
};

/// Where collc's data lives, laid out as the repository lays it out
/// (specs/library/, bench/alltoallv.coll): PREFIX/share/collc beside an
/// installed collc (`argv0` locates it), else the source tree this collc was
/// built from.
std::string dataDirectory(const char *argv0);

/// The library directory: $COLLC_LIBRARY when set, else dataDirectory's
/// specs/library.
std::string defaultDirectory(const char *argv0);
/// The file of query digests the library's schedules were proved with, in
/// its directory (smt::ProvedQueries; `cmake --build --target
/// collc_library_proofs` writes it, `cmake --install` ships it).
inline constexpr const char *provedQueriesFile = "proved-queries.txt";

/// Loads every .coll file of `directory` (sorted by name) through `diags`,
/// and composes its compositions (library/Compose.h), whose parts may live
/// in any of its files.
llvm::Expected<Library> load(llvm::StringRef directory,
                             DiagnosticEngine &diags);

/// The cost model `using auto` prices with when a file declares none: one
/// node's shared memory, roughly (t_s = 1 µs, t_w = 0.25 ns/byte).
const CostModel &defaultModel();

/// One schedule a collective resolved to.
struct Choice {
  ir::Schedule schedule;   // named after the collective; a single member
  std::string source;      // the schedule it was specialised from
  bool fromLibrary = true; // false: a schedule of the file itself
  /// Built for the topology (library/SpanningTree.h), not a family's member.
  bool built = false;
  std::string relabelling; // "" or how ranks were renamed, e.g. "r ^ 5"
  /// `using auto`: this choice applies to messages of at least this many
  /// bytes (per block, as the cost model's m) up to the next choice's.
  int64_t fromBytes = 0;
  int64_t startups = 0;    // A of A·t_s + B·m·t_w
  std::string words;       // B, exact
  /// Whether what proves the schedule it was specialised from proves this
  /// member: its topology's routes are the family's (or it is a full
  /// network), and a renaming of ranks is a symmetry of them.
  bool keepsProof = true;
  /// Empty when the cost was simulated; else the proof that pricing it from
  /// its rules relied on (cost::ScheduleCost::reliesOn).
  std::string reliesOn;
};

/// "from library schedule 'ring_bc' (recursive_doubling, 000 §4.1), rank r
/// plays (r + 3) % 8".
std::string describe(const Choice &c);

/// Resolves `def` against the file's own schedules and the library. With
/// `using auto` the choices are ordered by fromBytes (the first from 0);
/// otherwise there is one. Errors explain what the library has instead.
llvm::Expected<std::vector<Choice>> resolve(const CollectiveDef &def,
                                            const Program &file,
                                            const Library &library,
                                            const CostModel &model);

/// Resolves every collective of `program`, appends the chosen schedules to
/// program.schedules and lists them in the declaration's `resolved` (one
/// choice is named after the collective; choices that change with the
/// message size are named x_from_N_bytes). Problems are reported at the
/// declaration; returns false if there were any.
bool resolveAll(Program &program, const Library &library,
                DiagnosticEngine &diags,
                std::vector<std::pair<std::string, std::vector<Choice>>>
                    *choices = nullptr);

} // namespace collc::library
