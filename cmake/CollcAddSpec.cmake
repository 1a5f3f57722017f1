# collc_executable(EXE DEP): the compiler to run at build time, and what a
# command that runs it depends on.
function(collc_executable exe dep)
  if(TARGET collc)
    # Inside collc's own build: the compiler target, rebuilt first.
    set(${exe} $<TARGET_FILE:collc> PARENT_SCOPE)
    set(${dep} collc PARENT_SCOPE)
  elseif(TARGET collc::collc)
    # An installed collc (find_package(collc)): the imported executable.
    set(${exe} $<TARGET_FILE:collc::collc> PARENT_SCOPE)
    set(${dep} $<TARGET_FILE:collc::collc> PARENT_SCOPE)
  elseif(COLLC_EXECUTABLE)
    set(${exe} ${COLLC_EXECUTABLE} PARENT_SCOPE)
    set(${dep} ${COLLC_EXECUTABLE} PARENT_SCOPE)
  else()
    message(FATAL_ERROR "no collc; use find_package(collc)")
  endif()
endfunction()

# collc_add_spec(TARGET target SPECS a.coll [b.coll ...]
#                [NAMESPACE ns] [OPTIONS collc-compile-options...])
#
# Runs `collc compile` on each spec at build time (after proving it), adds the
# generated source to `target`, puts the generated header on its include path
# and links the collc runtime. Re-runs when a spec or the compiler changes.
# The specs of a build share one file of proved queries
# (collc_proved_queries.txt in the build's top directory), so a schedule an
# edit leaves alone is proved again at once.
# Works inside collc's build and, after find_package(collc), in any project.
function(collc_add_spec)
  cmake_parse_arguments(ARG "" "TARGET;NAMESPACE" "SPECS;OPTIONS" ${ARGN})
  if(NOT ARG_TARGET OR NOT ARG_SPECS)
    message(FATAL_ERROR "collc_add_spec needs TARGET and SPECS")
  endif()
  collc_executable(collc_exe collc_dep)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/collc_generated/${ARG_TARGET})
  set(ns)
  if(ARG_NAMESPACE)
    set(ns --namespace ${ARG_NAMESPACE})
  endif()
  foreach(spec ${ARG_SPECS})
    get_filename_component(spec ${spec} ABSOLUTE)
    get_filename_component(stem ${spec} NAME_WE)
    add_custom_command(
      OUTPUT ${gen}/${stem}.h ${gen}/${stem}.cpp
      COMMAND ${collc_exe} compile ${spec} -o ${gen} ${ns}
              --proved-queries ${CMAKE_BINARY_DIR}/collc_proved_queries.txt
              ${ARG_OPTIONS}
      DEPENDS ${spec} ${collc_dep}
      COMMENT "collc compile ${stem}.coll"
      VERBATIM)
    target_sources(${ARG_TARGET} PRIVATE ${gen}/${stem}.cpp)
  endforeach()
  target_include_directories(${ARG_TARGET} PRIVATE ${gen})
  target_link_libraries(${ARG_TARGET} PRIVATE collc::runtime)
endfunction()
