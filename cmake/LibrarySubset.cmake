# Writes OUT: the schedules of the library spec IN whose topology is a
# one-parameter family or fixed (ring, linear, hypercube, full), verbatim,
# with the comments above them. These are the ones coll_bench times and
# libcollc_mpi runs; the
# emitter does not yet compile multi-parameter families (mesh(a, b): the
# inner parameter is declared inside the search loop).
#   cmake -DIN=specs/library/x.coll -DOUT=x.coll -P LibrarySubset.cmake
# Lines as a list: `;` (a list separator to CMake) stands in as @SEMI@.
file(READ ${IN} text)
string(REPLACE ";" "@SEMI@" text "${text}")
string(REPLACE "\n" ";" lines "${text}")
set(out "# Generated from ${IN}: its schedules on one-parameter topologies.\n")
set(pending "")   # comment lines waiting for the next declaration
set(block "")
set(inside FALSE)
set(keep FALSE)
foreach(line IN LISTS lines)
  if(NOT inside AND line MATCHES "^schedule ")
    set(inside TRUE)
    set(block "${pending}")
    set(pending "")
    set(keep TRUE)
    if(line MATCHES " on (mesh|torus|tree)\\(")
      set(keep FALSE)
    endif()
  endif()
  if(inside)
    string(APPEND block "${line}\n")
    if(line MATCHES " on (mesh|torus|tree)\\(")
      set(keep FALSE)
    endif()
    if(line STREQUAL "}")
      set(inside FALSE)
      if(keep)
        string(APPEND out "\n${block}")
      endif()
    endif()
  elseif(line MATCHES "^#")
    string(APPEND pending "${line}\n")
  else()
    set(pending "")
  endif()
endforeach()
string(REPLACE "@SEMI@" ";" out "${out}")
file(WRITE ${OUT}.tmp "${out}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
