// The library search path a shared object carries for its own dependencies (DT_RPATH, DT_RUNPATH),
// read from its ELF dynamic section so that the plugin loader can check those folders before the
// dynamic loader searches them: a trusted plugin whose dependency sits in a folder another user may
// write runs that user's code.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"

namespace vigil::plugin_host {

// The ':'-separated entries of the file's DT_RPATH and DT_RUNPATH strings, as written ($ORIGIN not
// expanded); empty when it has neither. The reading is bounded: only headers, the dynamic section
// and the two strings are read, each checked against the file's size. InvalidArgument for anything
// that is not a well-formed 64-bit ELF shared object of this machine's byte order.
[[nodiscard]] Result<std::vector<std::string>> elf_library_search_path(const std::filesystem::path& file);

}  // namespace vigil::plugin_host
