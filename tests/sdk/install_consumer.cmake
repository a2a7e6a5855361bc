# cmake -DBUILD_DIR=... -DWORK_DIR=... -DEXAMPLE_DIR=... -DC_EXAMPLE_DIR=... -DGENERATOR=... -DCXX=... -DCC=...
#       -DCMAKE_INSTALL_LIBDIR=... -DCMAKE_INSTALL_DATADIR=... -DVIGIL_VERSION=...
#       [-DNM=...] [-DPKG_CONFIG=...] -P install_consumer.cmake
# A third party's view: install the SDK component of the build to a scratch prefix, then build
# against it alone: examples/cpp_rule with find_package(Vigil 1), examples/c_minimal_rule with
# find_package(Vigil 1) and C_ONLY while fmt cannot be found, and the C example once more with
# nothing but a C compiler and `pkg-config --cflags vigil-abi`. Each plugin's exports are checked.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --component vigil_sdk --prefix "${prefix}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed:\n${out}")
endif()
# The install folders of the build (GNUInstallDirs), passed in: script mode has no project to ask.
foreach(v LIBDIR DATADIR)
  if(NOT CMAKE_INSTALL_${v})
    message(FATAL_ERROR "install_consumer.cmake needs -DCMAKE_INSTALL_${v}=...")
  endif()
endforeach()
set(package_dir "${CMAKE_INSTALL_LIBDIR}/cmake/Vigil")
foreach(f include/vigil/vigil.h include/vigil/sdk.hpp include/vigil/sdk/plugin.hpp
          ${package_dir}/VigilConfig.cmake ${package_dir}/VigilConfigVersion.cmake ${package_dir}/VigilTargets.cmake
          ${package_dir}/VigilPlugin.cmake ${package_dir}/VigilDependencies.cmake ${package_dir}/plugin.version
          ${CMAKE_INSTALL_DATADIR}/pkgconfig/vigil-abi.pc)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

function(check_exports lib)
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
endfunction()

# build_example(<name> <source dir> <cmake args...>): configure and build a standalone example.
function(build_example name dir)
  execute_process(COMMAND "${CMAKE_COMMAND}" -S "${dir}" -B "${WORK_DIR}/${name}" -G "${GENERATOR}"
                          "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_BUILD_TYPE=Release ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring ${name} against the installed SDK failed:\n${out}")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}/${name}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building ${name} against the installed SDK failed:\n${out}")
  endif()
endfunction()

build_example(cpp_rule "${EXAMPLE_DIR}" "-DCMAKE_CXX_COMPILER=${CXX}"
              "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Wpedantic -Wno-missing-field-initializers -Werror")
check_exports("${WORK_DIR}/cpp_rule/libexample_cpp_rule.so")

# C_ONLY: fmt (the C++ SDK's dependency) is made unfindable, and the project enables C alone.
build_example(c_rule "${C_EXAMPLE_DIR}" "-DCMAKE_C_COMPILER=${CC}" -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON
              "-DCMAKE_C_FLAGS=-Wall -Wextra -Wpedantic -Werror")
check_exports("${WORK_DIR}/c_rule/libexample_c_minimal_rule.so")

if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} "${prefix}/${CMAKE_INSTALL_DATADIR}/pkgconfig")
  execute_process(COMMAND "${PKG_CONFIG}" --cflags vigil-abi RESULT_VARIABLE rc OUTPUT_VARIABLE cflags
                  ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0 OR NOT cflags MATCHES "-I")
    message(FATAL_ERROR "pkg-config --cflags vigil-abi failed (${rc}): ${cflags} ${err}")
  endif()
  execute_process(COMMAND "${PKG_CONFIG}" --modversion vigil-abi OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT version STREQUAL VIGIL_VERSION)
    message(FATAL_ERROR "vigil-abi.pc says version '${version}', the build is ${VIGIL_VERSION}")
  endif()
  separate_arguments(cflag_list UNIX_COMMAND "${cflags}")
  set(lib "${WORK_DIR}/pkg-config/libexample_c_minimal_rule.so")
  file(MAKE_DIRECTORY "${WORK_DIR}/pkg-config")
  execute_process(COMMAND "${CC}" -std=c11 -Wall -Wextra -Wpedantic -Werror -shared -fPIC -fvisibility=hidden
                          ${cflag_list} "${C_EXAMPLE_DIR}/c_minimal_rule.c" -o "${lib}" -lm
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building the C example with pkg-config's flags failed:\n${out}")
  endif()
  check_exports("${lib}")
endif()
message(STATUS "built the C++ and C examples against the installed SDK in ${prefix}")
