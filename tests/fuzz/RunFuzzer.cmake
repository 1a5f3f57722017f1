# Runs the fuzzer for SECONDS over a scratch copy of the corpus; any crash,
# timeout, leak or sanitizer report fails the test.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048
          -max_len=4096 -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/
          ${WORK}/corpus ${CORPUS}
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "fuzzer found a problem (exit ${result}); the input is in ${WORK}/artifacts")
endif()
