# `cmake --install` lays out collc for an outside project:
#
#   bin/collc                         the compiler
#   lib/libcollc_runtime.a            the runtime emitted code links against
#   lib/libcollc_mpi.so               the drop-in: MPI_Bcast ... run by proved
#                                     schedules (LD_PRELOAD it)
#   include/collc/                    its headers
#   lib/cmake/collc/                  find_package(collc): collc::runtime,
#                                     collc::mpi, collc::collc,
#                                     collc_add_spec()
#   share/collc/specs/                the shipped specs and algorithm library,
#                                     with the queries its proofs asked Z3
#                                     when the collc_library_proofs target
#                                     was built (COLLC_PROVE_LIBRARY)
#   libexec/collc/coll_bench          the timing program of `collc bench` and
#   share/collc/bench/                `collc calibrate`, and the spec it runs
#                                     beside the library
#
# collc looks for its shared libraries in PREFIX/lib first, so a folder
# installed with --strip and libz3 copied into lib/ (scripts/bundle.sh) runs
# the benchmark on a machine that has MPI and nothing else of ours.
#
# so that `find_package(collc REQUIRED)` and `collc_add_spec(...)` work as
# they do inside this build.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(COLLC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/collc)

set_target_properties(collc_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(collc_mpi PROPERTIES EXPORT_NAME mpi)
install(TARGETS collc_runtime collc_mpi EXPORT collcTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/collc
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set_target_properties(collc PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS collc EXPORT collcTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS coll_bench RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/collc)
install(FILES ${PROJECT_SOURCE_DIR}/bench/alltoallv.coll
              ${PROJECT_SOURCE_DIR}/bench/copy_bound.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/collc/bench)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/specs/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/collc/specs
        FILES_MATCHING PATTERN "*.coll")

# The library's proofs (compiler/library/Library.h, provedQueriesFile):
# `collc verify` over every library file at its declared ranges, each query
# Z3 answers unsat kept as the digest of its text. An installed collc reads
# them before proving, so a user's `collc compile` of a library spec (or a
# collc_add_spec of one) asks Z3 only what differs; any change to a
# schedule, the prover or a topology changes the queries, which are then
# proved again. A schedule left unproved (see library/verify.txt) is only
# not kept.
file(GLOB collc_library_specs CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/specs/library/*.coll)
set(collc_library_proofs ${PROJECT_BINARY_DIR}/library/proved-queries.txt)
add_custom_command(
  OUTPUT ${collc_library_proofs}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/library
  COMMAND ${CMAKE_COMMAND} -E rm -f ${collc_library_proofs}
  COMMAND sh -c "exe=$0 out=$1 log=$2; shift 2; \"$exe\" verify --jobs 0 --timeout 600 --proved-queries \"$out\" \"$@\" > \"$log\" 2>&1 || echo \"collc: not every library schedule was proved: see $log\""
          $<TARGET_FILE:collc> ${collc_library_proofs}
          ${PROJECT_BINARY_DIR}/library/verify.txt ${collc_library_specs}
  DEPENDS collc ${collc_library_specs}
  COMMENT "collc verify specs/library/*.coll: the library's proofs"
  VERBATIM)
if(COLLC_PROVE_LIBRARY)
  add_custom_target(collc_library_proofs ALL DEPENDS ${collc_library_proofs})
else()
  add_custom_target(collc_library_proofs DEPENDS ${collc_library_proofs})
endif()
install(FILES ${collc_library_proofs}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/collc/specs/library OPTIONAL)

install(EXPORT collcTargets NAMESPACE collc::
        DESTINATION ${COLLC_INSTALL_CMAKEDIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/collcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/collcConfig.cmake
  INSTALL_DESTINATION ${COLLC_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/collcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/collcConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/collcConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/CollcAddSpec.cmake
              ${CMAKE_CURRENT_LIST_DIR}/CollcMpiLibrary.cmake
        DESTINATION ${COLLC_INSTALL_CMAKEDIR})
