// The trial's event files: their names, interned to the ids that index entries carry, and their
// descriptors, kept open between reads (a full scan reads thousands of records from the same files;
// published event files are complete and never change).
#pragma once

#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "format/trial_layout.h"

namespace vigil {

class EventFileCache {
 public:
  struct OpenFile {
    OpenFile(int fd, uint64_t size, std::string path) : fd(fd), size(size), path(std::move(path)) {}
    ~OpenFile();
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;
    int fd;
    uint64_t size;     // when opened
    std::string path;  // for messages
  };
  static constexpr size_t kMaxOpenFiles = 64;

  // `path`: the trial folder as the caller named it, for messages.
  EventFileCache(const format::TrialRoot& root, std::filesystem::path path) : root_(root), path_(std::move(path)) {}

  // The id of an event file named relative to the trial root (the same id for the same name).
  uint32_t intern(const std::string& relpath);
  std::string relpath(uint32_t id) const;
  // The open file (opened and checked once, then kept while among the most recently used).
  Result<std::shared_ptr<const OpenFile>> open(uint32_t id) const;

 private:
  const format::TrialRoot& root_;
  const std::filesystem::path path_;
  mutable std::mutex mu_;  // guards everything below
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  mutable std::list<std::pair<uint32_t, std::shared_ptr<const OpenFile>>> open_;  // most recent first
};

}  // namespace vigil
