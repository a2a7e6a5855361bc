// Reading a whole file into memory: the one implementation (trial files, job files, a writer's own
// files).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/error.h"

namespace vigil {

// Everything left to read from an open descriptor, which stays the caller's. `path` names it in errors;
// `size_hint` (the size fstat gave, 0 when unknown) lets a regular file be read with one read().
[[nodiscard]] Result<std::string> read_all(int fd, const std::string& path, uint64_t size_hint = 0);

// Opens `path` and reads all of it.
[[nodiscard]] Result<std::string> read_whole_file(const std::filesystem::path& path);

// The same for a file another user may have planted (a job's records in a shared jobs folder): opened
// without waiting (a FIFO's open and read would block for ever) and without following a last-component
// symlink, and refused, InvalidArgument "<path>: not a regular file", unless it is a regular file.
[[nodiscard]] Result<std::string> read_regular_file(const std::filesystem::path& path);

}  // namespace vigil
