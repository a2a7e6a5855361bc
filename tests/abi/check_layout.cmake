# Runs the layout printer and compares its output with the golden file; prints a diff on mismatch.
#   cmake -DPRINT_LAYOUT=<exe> -DGOLDEN=<abi/abi-layout.v1.txt> -DOUTPUT=<file> [-DDIFF=<diff>] -P check_layout.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var PRINT_LAYOUT GOLDEN OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_layout.cmake: ${var} is not set")
  endif()
endforeach()

execute_process(COMMAND "${PRINT_LAYOUT}" OUTPUT_FILE "${OUTPUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PRINT_LAYOUT} failed: ${rc}")
endif()
if(NOT EXISTS "${GOLDEN}")
  message(FATAL_ERROR "The golden layout file ${GOLDEN} is missing. Generate it with:\n  ${PRINT_LAYOUT} > ${GOLDEN}")
endif()

execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${GOLDEN}" "${OUTPUT}" RESULT_VARIABLE same)
if(same EQUAL 0)
  message(STATUS "The ABI layout matches ${GOLDEN}")
  return()
endif()

if(DIFF)
  execute_process(COMMAND "${DIFF}" -u "${GOLDEN}" "${OUTPUT}" OUTPUT_VARIABLE delta)
else()
  file(READ "${OUTPUT}" delta)
  set(delta "(no diff program; the current layout is)\n${delta}")
endif()
message(NOTICE "The ABI layout differs from the golden file (--- golden, +++ current headers):\n${delta}")
message(NOTICE
  "A layout change is allowed only when it appends (new fields after a struct's last field, new structs or\n"
  "constants) and VIGIL_ABI_MINOR is bumped; abi.layout_append_only checks that. After such a change,\n"
  "regenerate the golden file:\n  ${PRINT_LAYOUT} > ${GOLDEN}")
message(FATAL_ERROR "The ABI layout differs from ${GOLDEN}")
