# COLLC_MPI (openmpi or mpich): the MPI the runtime, examples, bench and
# end-to-end tests build against and run under. Debian installs both side by
# side, their wrappers and launchers named after them (mpicc.mpich,
# mpiexec.mpich); the unsuffixed ones follow update-alternatives, so they are
# only a fallback. Sets, for the rest of the build:
#   MPI::MPI_C             the chosen MPI's C library (FindMPI)
#   COLLC_MPIEXEC          its launcher
#   COLLC_MPIEXEC_FLAGS    what every launch needs: Open MPI refuses more
#                          ranks than cores without --oversubscribe, which
#                          MPICH's hydra does not know
#   COLLC_TEST_MPIEXEC     the launcher as tests call it: each launch with a
#                          TMPDIR of its own. Open MPI keeps a launch's
#                          session directory in $TMPDIR/ompi.HOST.UID and
#                          removes it when empty as the launch ends, so under
#                          ctest -j one launch's end could remove it as
#                          another's start made its pid.N inside ("mkdir ...:
#                          No such file or directory", before any rank ran)
#   COLLC_TEST_ENV         what a test under the launcher needs in its
#                          environment: Open MPI run as root (containers) and
#                          more ranks than cores, in launches made by collc
#                          bench and scripts too
set(COLLC_MPI openmpi CACHE STRING "MPI to build and run against: openmpi or mpich")
set_property(CACHE COLLC_MPI PROPERTY STRINGS openmpi mpich)
if(COLLC_MPI STREQUAL "openmpi")
  set(wrappers mpicc.openmpi mpicc)
  set(launchers mpirun.openmpi mpirun mpiexec)
  set(COLLC_MPIEXEC_FLAGS --oversubscribe)
elseif(COLLC_MPI STREQUAL "mpich")
  set(wrappers mpicc.mpich)
  set(launchers mpiexec.mpich mpirun.mpich)
  set(COLLC_MPIEXEC_FLAGS)
else()
  message(FATAL_ERROR "COLLC_MPI is '${COLLC_MPI}'; openmpi or mpich")
endif()
# FindMPI caches what it found for the first MPI; switching in place would
# mix the two.
if(DEFINED COLLC_MPI_CONFIGURED AND NOT COLLC_MPI_CONFIGURED STREQUAL COLLC_MPI)
  message(FATAL_ERROR "this build tree was configured with COLLC_MPI="
                      "${COLLC_MPI_CONFIGURED}; configure a new one for ${COLLC_MPI}")
endif()
set(COLLC_MPI_CONFIGURED ${COLLC_MPI} CACHE INTERNAL "COLLC_MPI of this build tree")

find_program(COLLC_MPICC NAMES ${wrappers} REQUIRED
             DOC "C compiler wrapper of the MPI named by COLLC_MPI")
find_program(COLLC_MPIEXEC NAMES ${launchers} REQUIRED
             DOC "launcher of the MPI named by COLLC_MPI")
set(MPI_C_COMPILER ${COLLC_MPICC} CACHE FILEPATH "MPI C compiler wrapper (COLLC_MPI)")
set(MPIEXEC_EXECUTABLE ${COLLC_MPIEXEC} CACHE FILEPATH "MPI launcher (COLLC_MPI)")
find_package(MPI REQUIRED COMPONENTS C)
message(STATUS "collc: MPI ${COLLC_MPI} (${MPI_C_LIBRARIES}), launched by ${COLLC_MPIEXEC}")

configure_file(${CMAKE_CURRENT_LIST_DIR}/mpiexec-own-tmpdir.in
               ${CMAKE_BINARY_DIR}/mpiexec-own-tmpdir @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
                                GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(COLLC_TEST_MPIEXEC ${CMAKE_BINARY_DIR}/mpiexec-own-tmpdir)
set(COLLC_TEST_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
