// Writes a copy of a trial through Vigil's TrialWriter, record by record (same steps, modes,
// workers, names, values, reductions, shapes and collections), so the conformance suite can check
// that trials written by Vigil read back with smdebug's answers too.
#pragma once

#include <filesystem>
#include <string>

namespace conf {

// Returns an empty string on success, else what went wrong.
std::string rewrite_with_writer(const std::filesystem::path& source, const std::filesystem::path& destination);

}  // namespace conf
