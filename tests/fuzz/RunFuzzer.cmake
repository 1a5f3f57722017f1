# Runs the fuzzer for SECONDS over a scratch copy of the corpus; any crash,
# timeout, leak or sanitizer report fails the test. Then, since the corpus
# run caps inputs at 4 KiB, long inputs made here (operator chains of
# hundreds of thousands of characters) run once each and seed a short
# run with no such cap.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts ${WORK}/long)
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048
          -max_len=4096 -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/
          ${WORK}/corpus ${CORPUS}
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "fuzzer found a problem (exit ${result}); the input is in ${WORK}/artifacts")
endif()

# step { 0 -> EXPR } with EXPR a chain: each once crashed ir::fold.
set(head "schedule s : broadcast(root: 0) on ring(2) {\n  step { 0 -> ")
set(tail " }\n}\n")
string(REPEAT "~" 50000 tildes)
string(REPEAT "-" 200000 minuses)
string(REPEAT "1+" 100000 sum)
string(REPEAT "1**" 100000 power)
string(REPEAT "not " 50000 nots)
string(REPEAT "(" 100 open)
string(REPEAT "1+" 2000 terms)
string(REPEAT ")+1" 100 close)
file(WRITE ${WORK}/long/tilde.coll "${head}${tildes}1${tail}")
file(WRITE ${WORK}/long/minus.coll "${head}${minuses}1${tail}")
file(WRITE ${WORK}/long/sum.coll "${head}${sum}1${tail}")
file(WRITE ${WORK}/long/power.coll "${head}${power}1${tail}")
file(WRITE ${WORK}/long/not.coll "${head}${nots}1${tail}")
file(WRITE ${WORK}/long/nested.coll "${head}${open}${terms}1${close}${tail}")
file(GLOB long_inputs ${WORK}/long/*.coll)
execute_process(COMMAND ${FUZZER} -rss_limit_mb=2048 ${long_inputs}
                RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "a long input fails the fuzzer (exit ${result})")
endif()
execute_process(
  COMMAND ${FUZZER} -max_total_time=${LONG_SECONDS} -timeout=20
          -rss_limit_mb=2048 -max_len=1000000 -print_final_stats=1
          -artifact_prefix=${WORK}/artifacts/ ${WORK}/long
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "fuzzer found a problem in a long input (exit ${result}); the input is in ${WORK}/artifacts")
endif()
