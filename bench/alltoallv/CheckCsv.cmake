# ctest bench.alltoallv_csv: bench/alltoallv end to end on 4 ranks (a perfect
# square, so A3 and the emitted A2-A4 run too), two timed calls per case.
# Checks that every call matched MPI_Alltoallv (exit 0) and that the CSV has
# a row per pattern and algorithm with the columns it promises; no timing
# assertions.
#   cmake -DMPIEXEC=mpirun -DBENCH=alltoallv_bench -DWORK=dir -P CheckCsv.cmake
file(MAKE_DIRECTORY ${WORK})
execute_process(
  COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -np 4 ${BENCH} --runs 2 --mmax 64
          --csv ${WORK}/alltoallv.csv
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "alltoallv_bench exited ${rc}:\n${out}\n${err}")
endif()
file(STRINGS ${WORK}/alltoallv.csv lines)
list(GET lines 0 header)
if(NOT header STREQUAL "p,pattern,mmax_elements,element_bytes,algorithm,us_per_call,us_min,us_max,startups_per_node,largest_buffer_bytes,longest_message_bytes,lmax_bytes,model_us,model_source,theorem2_us")
  message(FATAL_ERROR "unexpected CSV header:\n${header}")
endif()
foreach(pattern regular spike transpose random)
  foreach(algorithm MPI_Alltoallv A1 A2 A3-b A3-n1 A4-b A4-n1 A4-n2 A2-ir
                    A3-ir A4-ir)
    set(found FALSE)
    foreach(line IN LISTS lines)
      if(line MATCHES "^4,${pattern},64,8,${algorithm},")
        set(found TRUE)
        # Start-ups and buffers are observable for collc's algorithms only;
        # A4 on 4 ranks (C = R = 2) sends 1 + 1 + 1 + 1 messages per node.
        if(algorithm STREQUAL "A4-n2" AND
           NOT line MATCHES "^4,${pattern},64,8,A4-n2,[0-9.]+,[0-9.]+,[0-9.]+,4,[0-9]+,[0-9]+,[0-9]+,[0-9.]+,001 Theorem 2 \\(A4\\),[0-9.]+$")
          message(FATAL_ERROR "unexpected A4 row:\n${line}")
        endif()
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "no row for ${pattern} ${algorithm}:\n${lines}")
    endif()
  endforeach()
endforeach()
