// The trial's event files: their names, interned to the ids that index entries carry, and the files
// themselves, kept open between reads (a full scan reads thousands of records from the same files;
// published event files are complete and never change): a local descriptor, or an S3 object's size
// and ETag from one HEAD.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "storage/object_store.h"

namespace vigil {

class EventFileCache {
 public:
  static constexpr size_t kMaxOpenFiles = 64;

  explicit EventFileCache(const storage::ObjectStore& store) : store_(store) {}

  // The id of an event file named relative to the trial root (the same id for the same name).
  uint32_t intern(const std::string& relpath);
  std::string relpath(uint32_t id) const;
  // The open file (opened and checked once, then kept while among the most recently used).
  Result<std::shared_ptr<const storage::StoredObject>> open(uint32_t id) const;

 private:
  const storage::ObjectStore& store_;
  mutable std::mutex mu_;  // guards everything below
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  mutable std::list<std::pair<uint32_t, std::shared_ptr<const storage::StoredObject>>> open_;  // most recent first
};

}  // namespace vigil
