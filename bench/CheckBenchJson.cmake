# ctest bench.allreduce_json: `collc bench` end to end on 2 ranks, two
# sizes, three timed calls each. Checks the JSON rows the interface
# promises (scripts read them) and that every call's checksum matched; no
# timing assertions.
#   cmake -DCOLLC=path/to/collc -DWORK=dir -P CheckBenchJson.cmake
file(MAKE_DIRECTORY ${WORK})
execute_process(
  COMMAND ${COLLC} bench --collective allreduce --ranks 2 --bytes 8,4096
          --format json --iterations 3 --csv ${WORK}/bench.csv
          --svg ${WORK}/allreduce.svg
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "collc bench exited ${rc}:\n${out}\n${err}")
endif()
string(JSON n ERROR_VARIABLE jerr LENGTH "${out}")
if(jerr)
  message(FATAL_ERROR "not JSON (${jerr}):\n${out}")
endif()
if(NOT n EQUAL 2)
  message(FATAL_ERROR "expected 2 rows (8 and 4096 bytes), got ${n}:\n${out}")
endif()
set(expected_bytes 8 4096)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  foreach(key collective ranks bytes ours_us mpi_us ratio predicted_us)
    string(JSON value ERROR_VARIABLE jerr GET "${out}" ${i} ${key})
    if(jerr)
      message(FATAL_ERROR "row ${i} has no '${key}':\n${out}")
    endif()
    set(${key} ${value})
  endforeach()
  list(GET expected_bytes ${i} want)
  if(NOT collective STREQUAL "allreduce" OR NOT ranks EQUAL 2 OR
     NOT bytes EQUAL want)
    message(FATAL_ERROR "row ${i}: ${collective} ${ranks} ${bytes}:\n${out}")
  endif()
  foreach(key ours_us mpi_us ratio predicted_us)
    if(NOT ${key} GREATER 0)
      message(FATAL_ERROR "row ${i}: ${key} = ${${key}} is not positive")
    endif()
  endforeach()
  string(JSON checksum GET "${out}" ${i} checksum)
  if(NOT checksum STREQUAL "ok")
    message(FATAL_ERROR "row ${i}: checksum ${checksum}")
  endif()
endforeach()
file(READ ${WORK}/bench.csv csv)
if(NOT csv MATCHES "^collective,ranks,bytes,schedule" OR
   NOT csv MATCHES "\nallreduce,2,4096,hypercube_allreduce,3,")
  message(FATAL_ERROR "unexpected CSV:\n${csv}")
endif()
file(READ ${WORK}/allreduce.svg svg)
if(NOT svg MATCHES "^<svg " OR NOT svg MATCHES "<polyline")
  message(FATAL_ERROR "unexpected SVG:\n${svg}")
endif()
