# collc_library_subsets(OUT_VAR): the library specs' schedules on
# one-parameter topologies (LibrarySubset.cmake), written at build time
# into this directory's library/, as a list of files in OUT_VAR: what
# coll_bench times and libcollc_mpi runs.
function(collc_library_subsets out_var)
  set(subsets)
  foreach(name broadcast allgather allreduce_scan scatter_gather alltoall)
    set(in ${PROJECT_SOURCE_DIR}/specs/library/${name}.coll)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/library/${name}.coll)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -DIN=${in} -DOUT=${out}
              -P ${PROJECT_SOURCE_DIR}/cmake/LibrarySubset.cmake
      DEPENDS ${in} ${PROJECT_SOURCE_DIR}/cmake/LibrarySubset.cmake
      VERBATIM)
    list(APPEND subsets ${out})
  endforeach()
  set(${out_var} ${subsets} PARENT_SCOPE)
endfunction()
