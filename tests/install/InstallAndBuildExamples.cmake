# cmake -P script for the install test: install BUILD_DIR into
# WORK_DIR/prefix, configure EXAMPLES_DIR against it alone, build one
# example, run it under MPIEXEC.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${command}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/examples)
file(REMOVE_RECURSE ${WORK_DIR})

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(installed bin/collc include/collc/Runtime.h
        lib/cmake/collc/collcConfig.cmake
        lib/cmake/collc/collcConfigVersion.cmake
        lib/cmake/collc/CollcAddSpec.cmake
        share/collc/specs/library/alltoall.coll)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "not installed: ${installed}")
  endif()
endforeach()

# Only the installed tree: no path into the build or source tree.
run(${CMAKE_COMMAND} -S ${EXAMPLES_DIR} -B ${build} -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER})
file(STRINGS ${build}/CMakeCache.txt collc_dir REGEX "^collc_DIR:")
if(NOT collc_dir MATCHES "${prefix}/")
  message(FATAL_ERROR "found collc outside the install prefix: ${collc_dir}")
endif()
# and a drop-in of its own, from an installed collc (collc_add_mpi_library).
run(${CMAKE_COMMAND} --build ${build} --target transpose_example dropin_chain)
run(${MPIEXEC} ${MPIEXEC_FLAGS} -np 4 ${build}/transpose/transpose_example)

# A project that enables only CXX finds collc too (its runtime needs MPI C).
set(cxx_only ${WORK_DIR}/cxx_only)
file(WRITE ${cxx_only}/CMakeLists.txt
     "cmake_minimum_required(VERSION 3.20)\n"
     "project(cxx_only LANGUAGES CXX)\n"
     "find_package(collc REQUIRED)\n"
     "add_library(uses_runtime INTERFACE)\n"
     "target_link_libraries(uses_runtime INTERFACE collc::runtime)\n")
run(${CMAKE_COMMAND} -S ${cxx_only} -B ${cxx_only}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER})
