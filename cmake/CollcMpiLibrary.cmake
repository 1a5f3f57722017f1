# collc_add_mpi_library(NAME name SPECS a.coll [b.coll ...]
#                       [MAX_RANKS n] [OPTIONS collc-compile-options...]
#                       [PRICED_RANKS n] [MODEL file.coll] [GENERATED dir])
#
# A drop-in library (docs/dropin.md) built from your own specs: a shared
# library `name` whose MPI_Bcast, MPI_Allreduce, ... run the schedules of
# SPECS, proved for 2..MAX_RANKS ranks (default 64; hypercube dimensions
# up to its log), the cheapest for each call under the first model of MODEL
# (default: the repository's calibration) unless COLLC_MPI_MODEL names
# another at run time. Every schedule of a collective the drop-in runs is
# a candidate (candidates.py); each gets its price on every size from
# `collc compile`'s twin, `collc cost` (cost_table.py). Run a program with
# it preloaded (LD_PRELOAD), or link it before MPI. libcollc_mpi is this
# function on the library's specs (runtime/mpi/CMakeLists.txt).
# OPTIONS go to `collc compile` (a --param there narrows p or d below
# MAX_RANKS, too) and their ranges to `collc cost`.
# PRICED_RANKS (default 256): every size up to it is priced exactly;
# above it only 2^k and 3·2^(k-1), so that a MAX_RANKS of thousands builds
# in minutes (Choice.cpp prices a size between them as the one below,
# PricedSizes.h).
# GENERATED: the directory where another build of the same SPECS wrote
# their code, candidates and prices, taken as they are (nothing is compiled
# or priced again: none of it depends on the MPI), so that a build for a
# second MPI reuses the first's.
# Works inside collc's build and, after find_package(collc), in any project.
function(collc_add_mpi_library)
  cmake_parse_arguments(ARG "" "NAME;MAX_RANKS;PRICED_RANKS;MODEL;GENERATED"
                        "SPECS;OPTIONS" ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_SPECS)
    message(FATAL_ERROR "collc_add_mpi_library needs NAME and SPECS")
  endif()
  if(NOT ARG_MAX_RANKS)
    set(ARG_MAX_RANKS 64)
  endif()
  if(NOT ARG_PRICED_RANKS)
    set(ARG_PRICED_RANKS 256)
  endif()
  if(NOT ARG_MODEL)
    set(ARG_MODEL ${COLLC_DROPIN_MODEL})
  endif()
  set(dir ${COLLC_DROPIN_DIR})
  set(max_dim 0)
  set(ranks ${ARG_MAX_RANKS})
  while(ranks GREATER 1)
    math(EXPR ranks "${ranks} / 2")
    math(EXPR max_dim "${max_dim} + 1")
  endwhile()
  collc_executable(collc_exe collc_dep)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)

  set(gen ${CMAKE_CURRENT_BINARY_DIR}/collc_generated/${ARG_NAME})
  if(ARG_GENERATED)
    set(gen ${ARG_GENERATED})
  endif()
  set(headers)
  foreach(spec ${ARG_SPECS})
    get_filename_component(stem ${spec} NAME_WE)
    list(APPEND headers ${gen}/${stem}.h)
  endforeach()
  # The drop-in's receivers-copy prices are taken with its model's serve,
  # else 0.2 (0.17-0.21 measured on 16 cores).
  file(STRINGS ${ARG_MODEL} serve_line REGEX "^model ")
  list(GET serve_line 0 serve_line)
  set(serve 0.2)
  if(serve_line MATCHES "serve *: *([0-9.]+)")
    set(serve ${CMAKE_MATCH_1})
  endif()
  # The ranges the schedules are compiled and proved for, OPTIONS' first
  # (a name's first --param counts): collc cost takes the same, so that it
  # prices the member each size runs.
  set(ranges)
  set(value_next FALSE)
  foreach(option ${ARG_OPTIONS})
    if(value_next)
      list(APPEND ranges --param=${option})
      set(value_next FALSE)
    elseif(option MATCHES "^--?param=(.*)$")
      list(APPEND ranges --param=${CMAKE_MATCH_1})
    elseif(option MATCHES "^--?param$")
      set(value_next TRUE)
    endif()
  endforeach()
  list(APPEND ranges --param=p=2..${ARG_MAX_RANKS} --param=d=1..${max_dim})
  # The candidates, from the emitted headers; their prices, from collc cost.
  set(table ${gen}/DropinSchedules.cpp)
  set(costs ${gen}/DropinCosts.inc)
  if(NOT ARG_GENERATED)
    add_custom_command(
      OUTPUT ${table}
      COMMAND ${Python3_EXECUTABLE} ${dir}/candidates.py ${table} collc_mpi
              ${headers}
      DEPENDS ${headers} ${dir}/candidates.py ${dir}/generated.py
      COMMENT "${ARG_NAME}: the drop-in's candidates"
      VERBATIM)
    add_custom_command(
      OUTPUT ${costs}
      COMMAND ${Python3_EXECUTABLE} ${dir}/cost_table.py --serve=${serve}
              ${ranges} ${collc_exe} ${costs} ${ARG_MAX_RANKS} ${ARG_PRICED_RANKS} ${table}
            ${ARG_SPECS}
      DEPENDS ${table} ${ARG_SPECS} ${ARG_MODEL} ${collc_dep} ${dir}/cost_table.py
              ${dir}/generated.py
      COMMENT "${ARG_NAME}: the drop-in's price table"
      VERBATIM)
  endif()

  # The model it chooses by, unless COLLC_MPI_MODEL names another.
  file(STRINGS ${ARG_MODEL} model_line REGEX "^model ")
  list(GET model_line 0 model_line)
  if(NOT model_line MATCHES "ts *:" OR NOT model_line MATCHES "tw *:")
    message(FATAL_ERROR "${ARG_MODEL}: no model block with ts and tw")
  endif()
  # Choice.cpp reads it as COLLC_MPI_MODEL's blocks are read.
  file(CONFIGURE OUTPUT ${gen}/BuildModel.inc
       CONTENT "R\"(@model_line@)\"\n" @ONLY)

  add_library(${ARG_NAME} SHARED ${dir}/Interpose.cpp ${dir}/Reductions.cpp
              ${dir}/Exchanges.cpp ${dir}/Irregular.cpp ${dir}/Fold.cpp
              ${dir}/Fortran.cpp
              ${dir}/Choice.cpp ${dir}/Agreement.cpp
              ${dir}/HandedOn.cpp ${table} ${costs})
  target_include_directories(${ARG_NAME} PRIVATE ${dir} ${gen})
  target_compile_features(${ARG_NAME} PRIVATE cxx_std_20)
  # Its thread-local state is read several times a call (as the runtime's);
  # only MPI's names leave it (exports.map), so its own functions may be
  # inlined into each other although it is position-independent.
  target_compile_options(${ARG_NAME} PRIVATE -ftls-model=initial-exec
                                             -fno-semantic-interposition)
  if(ARG_GENERATED)
    string(REPLACE ".h" ".cpp" sources "${headers}")
    target_sources(${ARG_NAME} PRIVATE ${sources})
    target_include_directories(${ARG_NAME} PRIVATE ${gen})
    target_link_libraries(${ARG_NAME} PRIVATE collc::runtime)
  else()
    # A family over thousands of ranks has induction queries of up to a
    # minute on an idle core (full_reduce_scatter, p = 2..4096), more when
    # the build proves the library beside it; as the library's own verify,
    # 600 s each. The limit decides only whether the build stops, never
    # what code is written. OPTIONS may set another.
    set(timeout --timeout 600)
    if("${ARG_OPTIONS}" MATCHES "--timeout")
      set(timeout)
    endif()
    collc_add_spec(TARGET ${ARG_NAME} NAMESPACE collc_mpi
                   OPTIONS ${ARG_OPTIONS} --param=p=2..${ARG_MAX_RANKS}
                           --param=d=1..${max_dim} ${timeout}
                   SPECS ${ARG_SPECS})
  endif()
  # Nothing but MPI's names (C's and Fortran's) is exported: a program built with collc's
  # runtime of another version keeps its own.
  target_link_options(${ARG_NAME} PRIVATE
    -Wl,--version-script=${dir}/exports.map)
  set_target_properties(${ARG_NAME} PROPERTIES LINK_DEPENDS ${dir}/exports.map)
endfunction()
