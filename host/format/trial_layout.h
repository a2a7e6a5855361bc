// File names inside a trial directory (format spec §1): events, index, collections, end marker.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace vigil::format {

inline constexpr std::string_view kEndOfTrainingMarker = "training_job_end.ts";
inline constexpr std::string_view kTmpSuffix = ".tmp";

// "events/000000000007/000000000007_worker_0.tfevents"
std::string event_file_relpath(int64_t global_step, std::string_view worker);
// "index/000000000/000000000007_worker_0.json" (folder = global_step / 1000, 9 digits)
std::string index_file_relpath(int64_t global_step, std::string_view worker);
// "collections/000000000/worker_0_collections.json"
std::string collections_file_relpath(std::string_view worker);

// TF device-name (de)serialisation for file names (§1.8): '/' <-> '_', ':' <-> '-'.
std::string serialize_worker_name(std::string_view worker);
std::string deserialize_worker_name(std::string_view serialized);

struct StepFileName {
  int64_t global_step;
  std::string worker;
};
// Parses an index ("…/<step12>_<worker>.json") or event ("…/<step12>_<worker>.tfevents") path.
// The worker is deserialised when the path contains "__", as smdebug does. nullopt if the name does
// not match (smdebug: "Invalid File Found").
std::optional<StepFileName> parse_step_file_name(std::string_view path);

// Parses "<worker>_collections.json" (a basename); the worker is deserialised if it starts with '_'.
std::optional<std::string> parse_collections_file_name(std::string_view basename);

// ---- Untrusted paths: every file a trial reads is named relative to the trial root. ----

// Why `relpath` cannot name a file inside the trial (it is empty, absolute, has a ".." component
// or a NUL byte), or nullopt when it is safe to join to the trial root.
std::optional<std::string> unsafe_relative_path(std::string_view relpath);

// Opens `relpath` read-only inside the trial whose root is `canonical_root` (fs::canonical of the
// trial folder); the caller closes the descriptor. Refused with an IndexReader error: an unsafe
// relpath (above), a file that, after symlinks, lies outside the trial root, and anything that is not
// a regular file (a FIFO would block the reader). Io errors when the file cannot be opened.
[[nodiscard]] Result<int> open_trial_file(const std::filesystem::path& canonical_root, std::string_view relpath);

}  // namespace vigil::format
