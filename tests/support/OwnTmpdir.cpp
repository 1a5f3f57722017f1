// Linked into the test programs that start MPI as a singleton (the local
// backend's MPI_Reduce_local): each process gets a TMPDIR of its own before
// MPI starts, removed at exit. Open MPI keeps its session directory in
// $TMPDIR/ompi.HOST.UID and removes it when empty as a process ends, so two
// processes under ctest -j could race, as launches did (cmake/CollcMpi.cmake,
// COLLC_TEST_MPIEXEC).

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

struct OwnTmpdir {
  std::string dir;

  OwnTmpdir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/collc-test.XXXXXX";
    if (mkdtemp(pattern.data())) {
      dir = pattern;
      setenv("TMPDIR", dir.c_str(), 1);
    }
  }
  // Constructed before main, so destroyed after the exit handler that
  // finalizes MPI (registered by local::run).
  ~OwnTmpdir() {
    std::error_code ignored;
    if (!dir.empty())
      std::filesystem::remove_all(dir, ignored);
  }
};

OwnTmpdir ownTmpdir;

} // namespace
