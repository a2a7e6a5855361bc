// Reading a whole file into memory: the one implementation (trial files, job files, a writer's own
// files).
#pragma once

#include <filesystem>
#include <string>

#include "common/error.h"

namespace vigil {

// Everything left to read from an open descriptor, which stays the caller's. `path` names it in errors.
[[nodiscard]] Result<std::string> read_all(int fd, const std::string& path);

// Opens `path` and reads all of it.
[[nodiscard]] Result<std::string> read_whole_file(const std::filesystem::path& path);

}  // namespace vigil
