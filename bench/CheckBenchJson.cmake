# ctest bench.allreduce_json (and bench.alltoallv_json): `collc bench` end to
# end on 2 ranks (RANKS), two sizes, three timed calls each. Checks the JSON
# rows the interface promises (scripts read them) and that every call's
# checksum matched; no timing assertions.
# With MPI_ALGORITHM it runs `--same-algorithm` and checks that every row
# says MPI was forced to that algorithm; without, that MPI ran its default.
#   cmake -DCOLLC=path/to/collc -DWORK=dir [-DCOLLECTIVE=allreduce]
#         [-DRANKS=2] [-DSCHEDULE=hypercube_allreduce] [-DMPI_ALGORITHM=NAME]
#         -P CheckBenchJson.cmake
if(NOT COLLECTIVE)
  set(COLLECTIVE allreduce)
endif()
if(NOT RANKS)
  set(RANKS 2)
endif()
if(NOT SCHEDULE)
  set(SCHEDULE hypercube_allreduce)
endif()
set(same_algorithm)
set(want_algorithm default)
file(MAKE_DIRECTORY ${WORK})
if(MPI_ALGORITHM)
  set(same_algorithm --same-algorithm)
  set(want_algorithm ${MPI_ALGORITHM})
  # mpirun through a script that notes the coll_tuned settings it is given,
  # to check that they reach the MPI processes' launcher.
  set(mpirun $ENV{COLLC_MPIEXEC})
  if(NOT mpirun)
    find_program(mpirun NAMES mpirun mpiexec REQUIRED)
  endif()
  file(REMOVE ${WORK}/mca.txt)
  file(WRITE ${WORK}/mpirun.sh "#!/bin/sh\n"
       "env | grep '^OMPI_MCA_coll_tuned' >> '${WORK}/mca.txt'\n"
       "exec '${mpirun}' \"$@\"\n")
  file(CHMOD ${WORK}/mpirun.sh PERMISSIONS OWNER_READ OWNER_WRITE
       OWNER_EXECUTE)
  set(ENV{COLLC_MPIEXEC} ${WORK}/mpirun.sh)
endif()
execute_process(
  COMMAND ${COLLC} bench --collective ${COLLECTIVE} --ranks ${RANKS}
          --bytes 8,4096 --format json --iterations 3 --csv ${WORK}/bench.csv
          --svg ${WORK}/${COLLECTIVE}.svg ${same_algorithm}
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
  if(NOT collective STREQUAL "${COLLECTIVE}" OR NOT ranks EQUAL ${RANKS} OR
     NOT bytes EQUAL want)
    message(FATAL_ERROR "row ${i}: ${collective} ${ranks} ${bytes}:\n${out}")
  endif()
  foreach(key ours_us mpi_us ratio predicted_us)
    if(NOT ${key} GREATER 0)
      message(FATAL_ERROR "row ${i}: ${key} = ${${key}} is not positive")
    endif()
  endforeach()
  # The per-call ratios' median lies inside its 95% interval.
  foreach(key paired_ratio ratio_ci_low ratio_ci_high)
    string(JSON ${key} ERROR_VARIABLE jerr GET "${out}" ${i} ${key})
    if(jerr)
      message(FATAL_ERROR "row ${i} has no '${key}':\n${out}")
    endif()
  endforeach()
  if(NOT ratio_ci_low GREATER 0 OR ratio_ci_low GREATER paired_ratio OR
     paired_ratio GREATER ratio_ci_high)
    message(FATAL_ERROR "row ${i}: paired ratio ${paired_ratio} outside "
                        "[${ratio_ci_low}, ${ratio_ci_high}]")
  endif()
  string(JSON checksum GET "${out}" ${i} checksum)
  if(NOT checksum STREQUAL "ok")
    message(FATAL_ERROR "row ${i}: checksum ${checksum}")
  endif()
  string(JSON algorithm GET "${out}" ${i} mpi_algorithm)
  if(NOT algorithm STREQUAL want_algorithm)
    message(FATAL_ERROR "row ${i}: MPI ran ${algorithm}, expected "
                        "${want_algorithm}:\n${out}")
  endif()
endforeach()
if(MPI_ALGORITHM)
  file(READ ${WORK}/mca.txt mca)
  if(NOT mca MATCHES "OMPI_MCA_coll_tuned_use_dynamic_rules=1\n" OR
     NOT mca MATCHES "OMPI_MCA_coll_tuned_${COLLECTIVE}_algorithm=${MPI_ALGORITHM}\n")
    message(FATAL_ERROR "mpirun was given:\n${mca}")
  endif()
endif()
file(READ ${WORK}/bench.csv csv)
if(NOT csv MATCHES "^collective,ranks,bytes,schedule" OR
   NOT csv MATCHES "\n${COLLECTIVE},${RANKS},4096,${SCHEDULE},3,[^\n]*,${want_algorithm},[0-9.]+,[0-9.]+,[0-9.]+\n")
  message(FATAL_ERROR "unexpected CSV:\n${csv}")
endif()
file(READ ${WORK}/${COLLECTIVE}.svg svg)
if(NOT svg MATCHES "^<svg " OR NOT svg MATCHES "<polyline")
  message(FATAL_ERROR "unexpected SVG:\n${svg}")
endif()
# Well formed, where xmllint is installed (setup.sh installs it).
find_program(XMLLINT xmllint)
if(XMLLINT)
  execute_process(COMMAND ${XMLLINT} --noout ${WORK}/${COLLECTIVE}.svg
                  RESULT_VARIABLE lint ERROR_VARIABLE lint_errors)
  if(NOT lint EQUAL 0)
    message(FATAL_ERROR "the plot is not well-formed XML:\n${lint_errors}")
  endif()
endif()
