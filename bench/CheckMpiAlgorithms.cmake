# ctest bench.mpi_algorithms: every algorithm coll_bench names as the MPI
# library's like one (`collc bench --same-algorithm`) is a value Open MPI's
# coll_tuned parameter accepts, as ompi_info lists them. Open MPI only warns
# of a value it does not know and runs its default, so a misspelt name would
# otherwise show at benchmark time only.
#   cmake -DMPIEXEC=mpirun -DBENCH=path/to/coll_bench -DOMPI_INFO=ompi_info
#         -P CheckMpiAlgorithms.cmake
execute_process(COMMAND ${MPIEXEC} -np 1 ${BENCH} --list
                OUTPUT_VARIABLE listed ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "coll_bench --list exited ${rc}:\n${err}")
endif()
execute_process(COMMAND ${OMPI_INFO} --param coll tuned --level 9
                OUTPUT_VARIABLE info RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ompi_info exited ${rc}")
endif()
string(REPLACE "\n" ";" lines "${listed}")
set(checked 0)
foreach(line IN LISTS lines)
  if(NOT line MATCHES "^schedule\t[^\t]+\t([^\t]+)\t[^\t]+\t(.+)$")
    continue()
  endif()
  set(schedule ${CMAKE_MATCH_1})
  set(setting ${CMAKE_MATCH_2})
  if(setting STREQUAL "-")
    continue()
  endif()
  if(NOT setting MATCHES "^(coll_tuned_[a-z_]+_algorithm)=([a-z_]+)$")
    message(FATAL_ERROR "${schedule}: not PARAMETER=VALUE: '${setting}'")
  endif()
  set(parameter ${CMAKE_MATCH_1})
  set(value ${CMAKE_MATCH_2})
  # The first list of valid values after the parameter's name.
  string(FIND "${info}" "parameter \"${parameter}\"" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${schedule}: ompi_info has no ${parameter}")
  endif()
  string(SUBSTRING "${info}" ${at} -1 entry)
  if(NOT entry MATCHES "Valid values: ([^\n]*)")
    message(FATAL_ERROR "${schedule}: ompi_info lists no values of ${parameter}")
  endif()
  set(valid "${CMAKE_MATCH_1}")
  if(NOT valid MATCHES "[0-9]+:\"${value}\"")
    message(FATAL_ERROR "${schedule}: ${parameter} has no value '${value}' "
                        "(valid: ${valid})")
  endif()
  math(EXPR checked "${checked} + 1")
endforeach()
if(checked LESS 20)
  message(FATAL_ERROR "only ${checked} settings checked:\n${listed}")
endif()
message(STATUS "${checked} settings are values Open MPI accepts")
