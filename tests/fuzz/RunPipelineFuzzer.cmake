# Runs the pipeline fuzzer RUNS times from a fixed seed over SEEDS (folders
# of specs, separated by |), so that the run here is the run CI makes; any
# crash, timeout, leak or sanitizer report fails the test.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
string(REPLACE "|" ";" seed_folders "${SEEDS}")
execute_process(
  COMMAND ${FUZZER} -seed=1 -runs=${RUNS} -timeout=30 -rss_limit_mb=4096
          -max_len=8192 -print_final_stats=1
          -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus ${seed_folders}
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "fuzzer found a problem (exit ${result}); the input is in ${WORK}/artifacts")
endif()
