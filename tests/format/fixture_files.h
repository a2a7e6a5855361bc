// Helpers for tests that read the shared smdebug fixtures in place (never copied into the project).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace vigil::test {

inline std::filesystem::path shared_dir() { return std::filesystem::path(VIGIL_SHARED_DIR); }
inline std::filesystem::path real_fixtures() { return shared_dir() / "fixtures" / "smdebug-real"; }
inline std::filesystem::path pathology_fixtures() { return shared_dir() / "fixtures" / "pathologies"; }

// Every regular file under `root` whose path (relative to root, '/'-separated) satisfies `keep`,
// sorted so that test output is stable.
template <typename Keep>
std::vector<std::filesystem::path> files_under(const std::filesystem::path& root, Keep keep) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(root)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = std::filesystem::relative(e.path(), root).generic_string();
    if (keep(rel)) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline bool has_component(const std::string& rel, const std::string& dir) {
  return rel.starts_with(dir + "/") || rel.find("/" + dir + "/") != std::string::npos;
}

}  // namespace vigil::test
