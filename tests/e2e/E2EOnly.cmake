# COLLC_E2E_ONLY: a build tree of the runtime and the end-to-end test only,
# against the MPI named by COLLC_MPI, compiling the specs with a collc built
# elsewhere (COLLC_EXECUTABLE). The main build makes one for its second MPI
# (SecondMpi.cmake), so both MPIs run the same comparisons without building
# the compiler twice. Its tests are named and labelled after the MPI. With
# COLLC_DROPIN_GENERATED (the main build's generated drop-in code), the
# drop-in and its conformance and error tests too.
if(NOT COLLC_EXECUTABLE)
  message(FATAL_ERROR "COLLC_E2E_ONLY needs COLLC_EXECUTABLE, a built collc")
endif()
enable_testing()
add_subdirectory(runtime)
set(COLLC_E2E_TEST_PREFIX ${COLLC_MPI}.)
set(COLLC_E2E_LABELS ${COLLC_MPI})
add_subdirectory(tests/e2e)
if(COLLC_DROPIN_GENERATED)
  add_subdirectory(tests/dropin)
endif()
