// File names inside a trial directory (format spec §1): events, index, collections, end marker.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/os.h"

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

// The trial folder, held open: every file the trial reads is opened through it. Files are refused
// with an IndexReader error for an unsafe relpath (above), for resolving (after symlinks) outside the
// trial root, and for not being a regular file (a FIFO would block the reader); Io errors when a file
// cannot be opened or read.
class TrialRoot {
 public:
  // Resolves `path` (fs::canonical) and keeps a descriptor on the folder.
  [[nodiscard]] static Result<TrialRoot> open(const std::filesystem::path& path);

  const std::filesystem::path& canonical() const { return canonical_; }
  // The folder's descriptor (O_PATH): for openat() of names already checked relative.
  int fd() const { return fd_.get(); }

  struct OpenedFile {
    os::UniqueFd fd;  // the caller's
    uint64_t size;  // at opening
  };
  // Opens `relpath` read-only. Usually one openat2 (the kernel keeps it beneath the root) and one
  // fstat; a path the kernel will not resolve that way (an absolute symlink, or no openat2) is
  // opened by name and checked through /proc/self/fd.
  [[nodiscard]] Result<OpenedFile> open_file(std::string_view relpath) const;
  // The whole file: open_file, one read (more only if the file grew since), close.
  [[nodiscard]] Result<std::string> read_file(std::string_view relpath) const;

 private:
  TrialRoot(std::filesystem::path canonical, os::UniqueFd fd) : canonical_(std::move(canonical)), fd_(std::move(fd)) {}
  [[nodiscard]] Result<OpenedFile> open_by_name(std::string_view relpath) const;

  std::filesystem::path canonical_;
  os::UniqueFd fd_;
};

}  // namespace vigil::format
