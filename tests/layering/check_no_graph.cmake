# The core knows no graph: graph capture sees the kernel layer only through the kernel
# observer it installs (core/ff_impl.h). Run as
#   cmake -DDIR=<core dir> -DOBJECTS=<objects;...> -DOBJECT_DIR=<core> -DNM=<nm> -P check_no_graph.cmake
# Fails, naming file and line, if a source in DIR includes a graph header or a .c file
# names ff_graph anything, or if an object under OBJECT_DIR/ defines or references an
# ff_graph symbol (which catches a name a macro hides). tests/CMakeLists.txt also runs it
# on graph/ itself, where it must fail, so the check is known to bite.
foreach(var DIR OBJECTS OBJECT_DIR NM)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_no_graph: -D${var}= is missing")
  endif()
endforeach()

set(bad "")
file(GLOB sources ${DIR}/*.c ${DIR}/*.h)
if(NOT sources)
  message(FATAL_ERROR "check_no_graph: no sources under ${DIR}")
endif()
foreach(src ${sources})
  file(STRINGS ${src} lines)
  get_filename_component(name ${src} NAME)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]*graph[^>\"]*)[>\"]")
      string(APPEND bad "  ${name}:${n}: includes ${CMAKE_MATCH_1}\n")
    elseif(name MATCHES "\\.c$" AND line MATCHES "(ff_graph[A-Za-z0-9_]*)")
      string(APPEND bad "  ${name}:${n}: names ${CMAKE_MATCH_1}\n")
    endif()
  endforeach()
endforeach()

set(checked 0)
foreach(obj ${OBJECTS})
  if(NOT obj MATCHES "/${OBJECT_DIR}/")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  execute_process(COMMAND ${NM} ${obj} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_no_graph: ${NM} ${obj} failed (${rc})")
  endif()
  string(REGEX MATCHALL "[ \t]ff_graph[A-Za-z0-9_]*" hits "${syms}")
  foreach(h ${hits})
    string(STRIP "${h}" h)
    get_filename_component(oname ${obj} NAME)
    string(APPEND bad "  ${oname}: symbol ${h}\n")
  endforeach()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "check_no_graph: no object under /${OBJECT_DIR}/ among ${OBJECTS}")
endif()

if(bad)
  message(FATAL_ERROR "check_no_graph: ${DIR} knows the graph; report through the kernel observer "
                      "(FF_OBSERVE, core/ff_impl.h) instead:\n${bad}")
endif()
message(STATUS "check_no_graph: ${DIR} and ${checked} objects name no graph")
