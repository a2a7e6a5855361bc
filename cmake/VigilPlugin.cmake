# vigil_add_rule_plugin(): builds a Vigil rule plugin (a MODULE library exporting only
# vigil_plugin_entry_v1). Works in the Vigil tree (include(cmake/VigilPlugin.cmake)) and for third
# parties after find_package(Vigil), which includes the installed copy of this file.
#
#   vigil_add_rule_plugin(<target>
#     [SOURCES] src1.cpp ...            # the plugin's sources (the SOURCES keyword is optional)
#     [LINK_LIBRARIES lib ...]          # extra PRIVATE link libraries
#     [EIGEN]                           # also find and link Eigen3::Eigen (for tensor_eigen.hpp)
#     [C_ONLY]                          # a plain C plugin: links vigil::abi alone (C11, no SDK, no fmt)
#     [OUTPUT_NAME name]                # file lib<name>.so instead of lib<target>.so
#     [ALLOW_UNDEFINED])                # drop -Wl,-z,defs (not recommended)
#
# The library gets: C++23 (C11 with C_ONLY), -fvisibility=hidden, -fvisibility-inlines-hidden, the linker version
# script abi/plugin.version (global: vigil_plugin_entry_v1; local: *), -Wl,--exclude-libs,ALL (so
# bundled static libraries stay private) and -Wl,-z,defs (a reference to a host symbol fails at link
# time, never at load time). It links vigil::sdk (abi headers, SDK headers, fmt::fmt), or with C_ONLY
# vigil::abi (the C headers and DLPack's).
include_guard(GLOBAL)

# The version script: next to this file once installed, in abi/ in the source tree.
if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/plugin.version")
  set(VIGIL_PLUGIN_VERSION_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/plugin.version" CACHE INTERNAL "")
else()
  get_filename_component(_vigil_script "${CMAKE_CURRENT_LIST_DIR}/../abi/plugin.version" ABSOLUTE)
  set(VIGIL_PLUGIN_VERSION_SCRIPT "${_vigil_script}" CACHE INTERNAL "")
  unset(_vigil_script)
endif()
if(NOT EXISTS "${VIGIL_PLUGIN_VERSION_SCRIPT}")
  message(FATAL_ERROR "VigilPlugin.cmake: linker version script not found: ${VIGIL_PLUGIN_VERSION_SCRIPT}")
endif()

function(vigil_add_rule_plugin target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "EIGEN;ALLOW_UNDEFINED;C_ONLY" "OUTPUT_NAME" "SOURCES;LINK_LIBRARIES")
  set(sources ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  if(NOT sources)
    message(FATAL_ERROR "vigil_add_rule_plugin(${target}): no SOURCES given")
  endif()

  add_library(${target} MODULE ${sources})
  if(ARG_C_ONLY)
    if(ARG_EIGEN)
      message(FATAL_ERROR "vigil_add_rule_plugin(${target}): EIGEN needs the C++ SDK, not C_ONLY")
    endif()
    target_link_libraries(${target} PRIVATE vigil::abi ${ARG_LINK_LIBRARIES})
    set_target_properties(${target} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON LINKER_LANGUAGE C)
  else()
    if(NOT TARGET fmt::fmt)
      message(FATAL_ERROR "vigil_add_rule_plugin(${target}): the C++ SDK needs fmt (install libfmt-dev), "
                          "or pass C_ONLY for a plain C plugin")
    endif()
    target_link_libraries(${target} PRIVATE vigil::sdk ${ARG_LINK_LIBRARIES})
    set_target_properties(${target} PROPERTIES CXX_STANDARD 23 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
  endif()
  if(ARG_EIGEN)
    if(NOT TARGET Eigen3::Eigen)
      find_package(Eigen3 3.3 REQUIRED NO_MODULE)
    endif()
    target_link_libraries(${target} PRIVATE Eigen3::Eigen)
  endif()

  set_target_properties(${target} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_NAME)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME "${ARG_OUTPUT_NAME}")
  endif()

  if(NOT APPLE AND NOT WIN32)
    target_link_options(${target} PRIVATE
      "LINKER:--version-script=${VIGIL_PLUGIN_VERSION_SCRIPT}"
      "LINKER:--exclude-libs,ALL")
    if(NOT ARG_ALLOW_UNDEFINED)
      target_link_options(${target} PRIVATE "LINKER:-z,defs")
    endif()
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${VIGIL_PLUGIN_VERSION_SCRIPT}")
  endif()
endfunction()
