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
#   share/collc/specs/                the shipped specs and algorithm library
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
