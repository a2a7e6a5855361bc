# cmake -DBUILD_DIR=... -DWORK_DIR=... -DEXAMPLE_DIR=... -DGENERATOR=... -DCXX=... [-DNM=...] -P install_consumer.cmake
# A third party's view: install the SDK component of the build to a scratch prefix, then configure
# and build examples/cpp_rule against it with find_package(Vigil) alone, and check its exports.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --component vigil_sdk --prefix "${prefix}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed:\n${out}")
endif()
foreach(f include/vigil/vigil.h include/vigil/sdk.hpp include/vigil/sdk/plugin.hpp
          lib/cmake/Vigil/VigilConfig.cmake lib/cmake/Vigil/VigilConfigVersion.cmake
          lib/cmake/Vigil/VigilTargets.cmake lib/cmake/Vigil/VigilPlugin.cmake lib/cmake/Vigil/plugin.version)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

execute_process(COMMAND "${CMAKE_COMMAND}" -S "${EXAMPLE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
                        "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX}" -DCMAKE_BUILD_TYPE=Release
                        "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Wpedantic -Wno-missing-field-initializers -Werror"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the example against the installed SDK failed:\n${out}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}/build"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the example against the installed SDK failed:\n${out}")
endif()
set(lib "${WORK_DIR}/build/libexample_cpp_rule.so")
if(NOT EXISTS "${lib}")
  message(FATAL_ERROR "not built: ${lib}")
endif()
if(NM)
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DNM=${NM}" "-DPLUGINS=${lib}" -P "${CMAKE_CURRENT_LIST_DIR}/check_exports.cmake"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${out}")
  endif()
endif()
message(STATUS "built ${lib} against the installed SDK in ${prefix}")
