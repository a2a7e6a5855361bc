# cmake -DROOT=<source tree> -P check_layering.cmake
# The one-way arrows between the parts (docs/architecture.md), checked on every #include "...":
# a part may include its own headers and those of the parts listed for it, nothing else. The table
# below is the only statement of the arrows; the architecture document points here.
#
#   host/common       -> (nothing of the host)
#   host/format       -> common
#   host/storage      -> common format                      (where trial bytes live: s3:// locations, SigV4, the S3 client; knows no trials; format for CRC32C)
#   host/trial        -> common format
#   host/writer       -> common format trial
#   host/plugin_host  -> common format trial profiler        (profiler: the extension vigil.profiler/1)
#   host/evaluate     -> common format trial plugin_host
#   host/profiler     -> common format                      (capture side: never trials or rules)
#   host/remote_debug -> common format                      (the job's control socket and remote-debug sessions: never the supervisor)
#   host/jobs         -> common format storage writer evaluate profiler remote_debug  (training jobs run locally: the supervisor starts the evaluator as a process; evaluate for Debugger's unsupported setups; profiler for the end markers of the profiler output)
#   host/cli          -> common format trial writer plugin_host evaluate profiler remote_debug jobs
#   hooks/libtorch    -> common format trial writer          (a training hook writes; it never evaluates)
#   bindings/src      -> every host part
#   abi/include       -> vigil/*.h of the ABI itself          (plain C: also <dlpack/dlpack.h>, <std*.h>)
#   sdk/include       -> the ABI and the SDK                   (never the host)
#   plugins/          -> the ABI, the SDK, the plugin's own files   (built like any third-party plugin)
#
# The host shares a few of the SDK's header-only pieces instead of keeping copies (one table per
# fact): host/, hooks/ and bindings/ may include <vigil/sdk/X.hpp> for X in sdk_shared_with_host.
cmake_policy(VERSION 3.25)
set(host_parts common format storage trial writer plugin_host evaluate profiler remote_debug jobs cli)
set(allowed_common "")
set(allowed_format common)
set(allowed_storage common format)
set(allowed_trial common format storage)
set(allowed_writer common format storage trial)
set(allowed_plugin_host common format storage trial profiler)
set(allowed_evaluate common format storage trial plugin_host profiler)
set(allowed_profiler common format storage)
set(allowed_remote_debug common format)
set(allowed_jobs common format storage writer evaluate profiler remote_debug)
set(allowed_cli common format storage trial writer plugin_host evaluate profiler remote_debug jobs)
set(allowed_libtorch common format storage trial writer)
set(allowed_bindings ${host_parts})
list(JOIN host_parts "|" host_alternatives)
set(sdk_shared_with_host error error_record messages half)
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
    message(FATAL_ERROR "host/${part}/ has no sources: update the table in check_layering.cmake")
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
  message(FATAL_ERROR "includes against the layering of docs/architecture.md:\n  ${text}")
endif()
message(STATUS "layering: ${checked} files follow the arrows")
