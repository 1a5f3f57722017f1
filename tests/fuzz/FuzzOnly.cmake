# Included by the top-level CMakeLists when COLLC_FUZZ_ONLY is set: builds the
# front end, the simulator and the pricing with sanitizers and coverage
# instrumentation, and the fuzzers.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all)
add_link_options(-fsanitize=address,undefined)
add_subdirectory(compiler/support)
add_subdirectory(compiler/syntax)
add_subdirectory(compiler/ir)
add_subdirectory(compiler/topology)
add_subdirectory(compiler/library) # the algorithm families' table only
add_subdirectory(compiler/alltoallv) # the patterns' size check only
add_subdirectory(compiler/sema)
add_subdirectory(compiler/simulate)
add_subdirectory(compiler/cost)
add_executable(collc_frontend_fuzzer tests/fuzz/FrontendFuzzer.cpp)
target_link_libraries(collc_frontend_fuzzer PRIVATE collc_sema)
target_link_options(collc_frontend_fuzzer PRIVATE -fsanitize=fuzzer)
set_target_properties(collc_frontend_fuzzer PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/fuzz)
collc_target_options(collc_frontend_fuzzer)
add_executable(collc_pipeline_fuzzer tests/fuzz/PipelineFuzzer.cpp)
target_link_libraries(collc_pipeline_fuzzer PRIVATE collc_cost collc_sema)
target_link_options(collc_pipeline_fuzzer PRIVATE -fsanitize=fuzzer)
set_target_properties(collc_pipeline_fuzzer PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/fuzz)
collc_target_options(collc_pipeline_fuzzer)
