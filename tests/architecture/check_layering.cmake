# cmake -DROOT=<source tree> -P check_layering.cmake
# The one-way arrows between the parts, checked on every #include "...": a part may include its own
# headers and those of the parts in its allowed_<part> list below, nothing else. These lists are the
# only statement of the arrows (docs/architecture.md points here); each carries why it holds what it does.
cmake_policy(VERSION 3.25)
set(host_parts common format storage trial writer plugin_host evaluate profiler remote_debug jobs cli)
set(allowed_common "")                                  # shared by every part: includes no part of the host
set(allowed_format common)                              # bytes <-> records: knows no storage and no trials
set(allowed_storage common format)                      # where trial bytes live (knows no trials); format for CRC32C, file names and TrialRoot
set(allowed_trial common format storage)                # the trial model reads every file through a storage::ObjectStore
set(allowed_writer common format storage trial)         # the capture side: writes trials (trial for their model), uploads through storage; never the rule side
set(allowed_plugin_host common format storage trial profiler)  # the host side of the ABI over trials; profiler for the extension vigil.profiler/1
set(allowed_evaluate common format storage trial plugin_host profiler)  # runs rules through plugin_host; profiler for a profiler rule's trial
set(allowed_profiler common format storage)             # capture side and readers of profiler data: never trials or rules
set(allowed_remote_debug common format)                # the job's control socket and remote-debug sessions: never the supervisor; format for JSON limits
set(allowed_jobs common format storage writer evaluate profiler remote_debug)  # training jobs: writer's uploader for outputs, evaluate for Debugger's unsupported setups (the evaluator itself runs as a process), profiler for the end markers of its output, remote_debug for the job's control socket
set(allowed_cli common format storage trial writer plugin_host evaluate profiler remote_debug jobs)  # the `vigil` command: every part
set(allowed_libtorch common format storage trial writer)  # hooks/libtorch: a training hook writes; it never evaluates
set(allowed_bindings ${host_parts})                     # bindings/src: the Python module offers every part
# sdk/include and plugins/ include no part of the host: they are built like any third-party plugin, on
# the ABI and the SDK alone. abi/include is plain C: its own vigil/*.h, <dlpack/dlpack.h>, <std*.h>.
# The host shares a few of the SDK's header-only pieces instead of keeping copies (one table per
# fact): host/, hooks/ and bindings/ may include <vigil/sdk/X.hpp> for X in sdk_shared_with_host.
list(JOIN host_parts "|" host_alternatives)
set(sdk_shared_with_host error error_record messages half text)
list(JOIN sdk_shared_with_host "|" sdk_shared_alternatives)

set(violations "")
set(checked 0)

# violation(<file> <text>): records `text` against `file` (a macro: it appends to the caller's list).
macro(violation file text)
  file(RELATIVE_PATH _rel "${ROOT}" "${file}")
  list(APPEND violations "${_rel}: ${text}")
endmacro()

# check(<files> <allowed host parts> <description>): every quoted include naming a host part must
# name one of <allowed>; quoted includes of "host/..." paths are never allowed.
function(check_files allowed)
  foreach(file ${ARGN})
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line ${lines})
      if(line MATCHES "\"(${host_alternatives})/" )
        set(part "${CMAKE_MATCH_1}")
        list(FIND allowed "${part}" at)
        if(at EQUAL -1)
          violation("${file}" "${line}")
        endif()
      elseif(line MATCHES "\"host/")
        violation("${file}" "${line}")
      endif()
    endforeach()
    if(check_sdk)
      file(STRINGS "${file}" sdk_lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]vigil/sdk")
      foreach(line ${sdk_lines})
        if(NOT line MATCHES "vigil/sdk/(${sdk_shared_alternatives})\\.hpp[>\"]")
          violation("${file}" "${line} (the host may share only vigil/sdk/{${sdk_shared_alternatives}}.hpp)")
        endif()
      endforeach()
    endif()
    math(EXPR checked "${checked} + 1")
  endforeach()
  set(violations "${violations}" PARENT_SCOPE)
  set(checked "${checked}" PARENT_SCOPE)
endfunction()

set(check_sdk TRUE)
foreach(part ${host_parts})
  file(GLOB files "${ROOT}/host/${part}/*.h" "${ROOT}/host/${part}/*.cpp")
  if(NOT files)
    message(FATAL_ERROR "host/${part}/ has no sources: update host_parts in check_layering.cmake")
  endif()
  # A part may always include itself.
  check_files("${allowed_${part}};${part}" ${files})
endforeach()
file(GLOB_RECURSE files "${ROOT}/hooks/libtorch/*.h" "${ROOT}/hooks/libtorch/*.cpp")
check_files("${allowed_libtorch}" ${files})
file(GLOB_RECURSE files "${ROOT}/bindings/src/*.h" "${ROOT}/bindings/src/*.cpp")
check_files("${allowed_bindings}" ${files})
set(check_sdk FALSE)
file(GLOB_RECURSE files "${ROOT}/sdk/include/*.hpp" "${ROOT}/plugins/*.h" "${ROOT}/plugins/*.cpp" "${ROOT}/plugins/*.c")
check_files("" ${files})

# The ABI headers: plain C, nothing but themselves, DLPack and the C standard headers.
file(GLOB files "${ROOT}/abi/include/vigil/*.h")
foreach(file ${files})
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include")
  foreach(line ${lines})
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*(\"vigil/[a-z_]+\\.h\"|<dlpack/dlpack\\.h>|<std[a-z]+\\.h>|<stddef\\.h>)")
      violation("${file}" "${line}")
    endif()
  endforeach()
  math(EXPR checked "${checked} + 1")
endforeach()

if(checked LESS 100)
  message(FATAL_ERROR "only ${checked} files checked: the globs no longer match the tree")
endif()
if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "includes against the arrows of check_layering.cmake:\n  ${text}")
endif()
message(STATUS "layering: ${checked} files follow the arrows")
