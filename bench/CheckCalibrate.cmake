# ctest bench.calibrate_model: `collc calibrate` writes a model block that
# collc reads back: `collc check` accepts the file on its own, and added to
# a spec, `collc cost SPEC --model measured` prices with it.
#   cmake -DCOLLC=path/to/collc -DWORK=dir -DSPECS=specs -P CheckCalibrate.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN} exited ${rc}:\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

run(${COLLC} calibrate --bytes 8,1024,65536 --iterations 5
    -o ${WORK}/model.coll)
if(NOT out MATCHES "residual: [0-9.]+% RMS" OR
   NOT out MATCHES "model measured = { ts: [0-9.]+ns, tw: [0-9.]+ps/byte")
  message(FATAL_ERROR "calibrate printed no fit:\n${out}")
endif()
run(${COLLC} check ${WORK}/model.coll)
if(NOT out MATCHES "1 model")
  message(FATAL_ERROR "collc check did not see the model:\n${out}")
endif()

# Into an existing spec; a second run replaces the first block.
file(COPY ${SPECS}/library/allreduce_scan.coll DESTINATION ${WORK})
foreach(i 1 2)
  run(${COLLC} calibrate --bytes 8,65536 --iterations 3
      -o ${WORK}/allreduce_scan.coll)
endforeach()
file(STRINGS ${WORK}/allreduce_scan.coll blocks REGEX "^model measured ")
list(LENGTH blocks nblocks)
if(NOT nblocks EQUAL 1)
  message(FATAL_ERROR "expected one model block, got ${nblocks}")
endif()
run(${COLLC} cost ${WORK}/allreduce_scan.coll --schedule hypercube_allreduce
    --p 8 --model measured --bytes 1024)
if(NOT out MATCHES "time: [0-9.e+-]+ s \\(model measured, m = 1024 bytes\\)")
  message(FATAL_ERROR "collc cost did not use the model:\n${out}")
endif()

# A ring of 3 ranks (a step of a schedule on 3 ranks) beside it, and
# `collc bench` pricing 3 ranks by it and 2 by the ping-pong's.
run(${COLLC} calibrate --pattern ring --ranks 3 --name ring_3
    --bytes 8,1024,65536 --iterations 5 -o ${WORK}/model.coll)
if(NOT out MATCHES "ring on 3 ranks" OR
   NOT out MATCHES "model ring_3 = { ts: [0-9.]+ns, tw: [0-9.]+ps/byte")
  message(FATAL_ERROR "calibrate --pattern ring printed no fit:\n${out}")
endif()
# With more ranks than cores the model says how many cores there are, and
# keeps what one message costs a core (a step's figures over ranks / cores).
if(out MATCHES "oversubscribed: 3 ranks on ([0-9]+) cores")
  set(cores ${CMAKE_MATCH_1})
  if(NOT out MATCHES "ports: single, cores: ${cores} };" OR
     NOT out MATCHES "a step of 3 messages on ${cores} cores: one message costs a core")
    message(FATAL_ERROR "an oversubscribed ring's model has no cores:\n${out}")
  endif()
elseif(out MATCHES "cores:")
  message(FATAL_ERROR "a ring with a core per rank says cores:\n${out}")
endif()
run(${COLLC} check ${WORK}/model.coll)
if(NOT out MATCHES "2 models")
  message(FATAL_ERROR "collc check did not see both models:\n${out}")
endif()
run(${COLLC} bench --collective broadcast --ranks 2,3 --bytes 8 --iterations 3
    --model ${WORK}/model.coll:measured,3=${WORK}/model.coll:ring_3)
if(NOT out MATCHES "model for 3 ranks: ring_3 " OR
   NOT out MATCHES "model for the others: measured " OR
   NOT out MATCHES "broadcast on 3 ranks, model ring_3" OR
   NOT out MATCHES "broadcast on 2 ranks\n")
  message(FATAL_ERROR "collc bench did not take a model per rank count:\n${out}")
endif()
