#pragma once
// The irregular all-to-all of a `collective x = alltoallv on T using ALGO;`
// as C++: the pattern of ALGO for T's size is proved stage by stage (verify,
// as any schedule), then printed as step tables with a function of
// MPI_Alltoallv's signature that runs them on collc_runtime
// (runtime/include/collc/Alltoallv.h).

#include "alltoallv/Patterns.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace collc::alltoallv {

struct EmittedCollective {
  std::string declaration; // for the header
  std::string definition;  // for the source
  // The same function on the local backend (collc/Local.h), taking a
  // collc::rt::LocalComm & for the MPI_Comm: for namespace `local` in the
  // header and the source, as every emitted function has.
  std::string localDeclaration;
  std::string localDefinition;
};

/// Proves every stage of `algorithm`'s pattern on p ranks (contention,
/// matching, congestion on full(p)) and prints the function `name`.
/// Errors: an algorithm that does not apply (two_stage_mesh off a perfect
/// square), a stage that is not proved (with the verifier's verdict).
llvm::Expected<EmittedCollective>
emitCollective(llvm::StringRef name, Algorithm algorithm, int64_t p,
               llvm::StringRef where, unsigned timeoutSeconds);

} // namespace collc::alltoallv
