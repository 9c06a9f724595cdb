# Runs TOOL with ARGS (a ;-list) RUNS times; every run must exit non-zero with an output
# matching REGEX: a planted fault killed on every run, not on most (the CI tests of
# backends/opencl/CMakeLists.txt, ff_opencl_mutant).
foreach(run RANGE 1 ${RUNS})
  execute_process(COMMAND ${TOOL} ${ARGS} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  string(REGEX MATCH "[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped" summary "${out}")
  string(REGEX MATCH "(FAIL|CRASH) [^\n]*" first "${out}")
  message("run ${run} of ${RUNS}: exit ${rc}, ${summary}\n  ${first}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "run ${run}: the mutant survived (exit status 0)\n${out}${err}")
  endif()
  if(NOT out MATCHES "${REGEX}")
    message(FATAL_ERROR "run ${run}: no failure matches ${REGEX}\n${out}${err}")
  endif()
endforeach()
