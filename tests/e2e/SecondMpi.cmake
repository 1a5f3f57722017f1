# The end-to-end tests, and the drop-in's conformance and error tests, again
# under the MPI this build is not for (MPICH for an Open MPI build and the
# reverse), where it is installed: a build tree of the runtime, the drop-in
# and those tests only (E2EOnly.cmake) with this build's collc and drop-in code,
# built with it, its tests part of this build's ctest as <mpi>.e2e.*
# (label <mpi>; scripts/test.sh --mpich runs them alone).
if(COLLC_MPI STREQUAL "openmpi")
  set(second mpich)
  set(second_wrapper mpicc.mpich)
else()
  set(second openmpi)
  set(second_wrapper mpicc.openmpi)
endif()
find_program(COLLC_SECOND_MPICC ${second_wrapper})
option(COLLC_E2E_SECOND_MPI "Also run the end-to-end tests under the other MPI" ON)
if(NOT COLLC_E2E_SECOND_MPI OR NOT COLLC_SECOND_MPICC)
  message(STATUS "collc: end-to-end tests not run under ${second} "
                 "(${second_wrapper} not found or COLLC_E2E_SECOND_MPI off)")
  return()
endif()

include(ExternalProject)
# The drop-in's code, candidates and prices as this build generated them
# (they do not depend on the MPI), built there against the other MPI.
get_target_property(dropin_dir collc_mpi BINARY_DIR)
set(dropin_generated ${dropin_dir}/collc_generated/collc_mpi)
set(second_build ${CMAKE_BINARY_DIR}/e2e-${second})
ExternalProject_Add(collc_e2e_${second}
  SOURCE_DIR ${PROJECT_SOURCE_DIR}
  BINARY_DIR ${second_build}
  CMAKE_ARGS -DCOLLC_E2E_ONLY=ON -DCOLLC_MPI=${second}
             -DCOLLC_EXECUTABLE=$<TARGET_FILE:collc>
             -DCOLLC_DROPIN_GENERATED=${dropin_generated}
             -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
             -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
             -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER} -G ${CMAKE_GENERATOR}
  BUILD_COMMAND ${CMAKE_COMMAND} --build ${second_build} --target e2e_test
                dropin_conformance dropin_errors dropin_threads
                dropin_finalize dropin_fortran dropin_memory
  INSTALL_COMMAND ""
  DEPENDS collc collc_mpi
  BUILD_ALWAYS ON
  USES_TERMINAL_BUILD ON)
# ctest reads that tree's tests along with this one's, once it is built.
set(second_tests)
foreach(dir e2e dropin)
  string(APPEND second_tests
         "if(EXISTS \"${second_build}/tests/${dir}/CTestTestfile.cmake\")\n"
         "  subdirs(\"${second_build}/tests/${dir}\")\n"
         "endif()\n")
endforeach()
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/second_mpi_tests.cmake "${second_tests}")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
             ${CMAKE_CURRENT_BINARY_DIR}/second_mpi_tests.cmake)
