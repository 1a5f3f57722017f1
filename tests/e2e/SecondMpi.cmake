# The end-to-end tests again under the MPI this build is not for (MPICH for
# an Open MPI build and the reverse), where it is installed: a build tree of
# the runtime and e2e_test only (E2EOnly.cmake) with this build's collc,
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
set(second_build ${CMAKE_BINARY_DIR}/e2e-${second})
ExternalProject_Add(collc_e2e_${second}
  SOURCE_DIR ${PROJECT_SOURCE_DIR}
  BINARY_DIR ${second_build}
  CMAKE_ARGS -DCOLLC_E2E_ONLY=ON -DCOLLC_MPI=${second}
             -DCOLLC_EXECUTABLE=$<TARGET_FILE:collc>
             -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
             -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
             -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER} -G ${CMAKE_GENERATOR}
  BUILD_COMMAND ${CMAKE_COMMAND} --build ${second_build} --target e2e_test
  INSTALL_COMMAND ""
  DEPENDS collc
  BUILD_ALWAYS ON
  USES_TERMINAL_BUILD ON)
# ctest reads that tree's tests along with this one's, once it is built.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/second_mpi_tests.cmake
     "if(EXISTS \"${second_build}/tests/e2e/CTestTestfile.cmake\")\n"
     "  subdirs(\"${second_build}/tests/e2e\")\n"
     "endif()\n")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
             ${CMAKE_CURRENT_BINARY_DIR}/second_mpi_tests.cmake)
