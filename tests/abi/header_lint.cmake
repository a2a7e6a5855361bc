# Layout hazards in the public ABI headers (abi-notes §7.14.1, §8.8), outside comments:
#   - #pragma pack (never pack);
#   - bit-fields (their layout is implementation-defined);
#   - `long` (4 bytes on Windows, 8 on Linux: use the <stdint.h> types);
#   - enum types as struct fields or variables (their size is implementation-defined: use the
#     int32_t typedefs, like vigil_status).
#   cmake -DHEADER_DIR=<abi/include/vigil> -P header_lint.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED HEADER_DIR)
  message(FATAL_ERROR "header_lint.cmake: HEADER_DIR is not set")
endif()
file(GLOB headers "${HEADER_DIR}/*.h")
if(NOT headers)
  message(FATAL_ERROR "no headers in ${HEADER_DIR}")
endif()

set(ident "[A-Za-z_][A-Za-z0-9_]*")
set(problems)
foreach(h IN LISTS headers)
  get_filename_component(name "${h}" NAME)
  file(READ "${h}" text)
  string(REPLACE ";" "@SEMI@" text "${text}")  # CMake lists split on ";"
  # Drop comments (block comments may span lines).
  string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " text "${text}")
  string(REGEX REPLACE "//[^\n]*" "" text "${text}")

  # Names of enum types: typedef enum [tag] { ... } NAME;
  set(enum_types)
  string(REGEX MATCHALL "typedef[ \t\n]+enum[^{]*{[^}]*}[ \t\n]*${ident}" typedef_enums "${text}")
  foreach(t IN LISTS typedef_enums)
    string(REGEX MATCH "${ident}$" n "${t}")
    list(APPEND enum_types "${n}")
  endforeach()

  string(REPLACE "\n" ";" lines "${text}")
  foreach(line IN LISTS lines)
    if(line MATCHES "#[ \t]*pragma[ \t]+pack")
      list(APPEND problems "${name}: #pragma pack: '${line}'")
    endif()
    if(line MATCHES "^[ \t]*${ident}[A-Za-z0-9_ \t*]*[ \t]${ident}[ \t]*:[ \t]*[0-9]+[ \t]*@SEMI@")
      list(APPEND problems "${name}: a bit-field: '${line}'")
    endif()
    if(line MATCHES "(^|[^A-Za-z0-9_])long([^A-Za-z0-9_]|$)")
      list(APPEND problems "${name}: 'long' (use int32_t/int64_t): '${line}'")
    endif()
    # A declaration whose type is an enum: "[const] enum tag name;" or "[const] EnumType name;".
    if(line MATCHES "^[ \t]*(const[ \t]+)?enum[ \t]+${ident}[ \t*]+${ident}[ \t]*(\\[[^]]*\\])?[ \t]*@SEMI@")
      list(APPEND problems "${name}: an enum type as a field or variable: '${line}'")
    endif()
    foreach(e IN LISTS enum_types)
      if(line MATCHES "^[ \t]*(const[ \t]+)?${e}[ \t*]+${ident}[ \t]*(\\[[^]]*\\])?[ \t]*@SEMI@")
        list(APPEND problems "${name}: the enum type ${e} as a field or variable: '${line}'")
      endif()
    endforeach()
  endforeach()
endforeach()

if(problems)
  list(JOIN problems "\n  " text)
  string(REPLACE "@SEMI@" ";" text "${text}")
  message(NOTICE "Layout hazards in the ABI headers:\n  ${text}")
  message(FATAL_ERROR "Layout hazards in the ABI headers")
endif()
list(LENGTH headers n)
message(STATUS "${n} ABI headers: no #pragma pack, bit-fields, long, or enum-typed fields")
