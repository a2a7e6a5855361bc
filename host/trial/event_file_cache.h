// The trial's event files: their names, interned to the ids that index entries carry, and the files
// themselves, kept open between reads (a full scan reads thousands of records from the same files;
// published event files are complete and never change): a local descriptor, or an S3 object's size
// and ETag with its first bytes, from one GET.
//
// Readahead: ids are interned in the order of the index files (step, then worker), so a reader that
// walks the steps in order opens the files in id order. Once it has opened three files in a row
// (ids n-2, n-1, n) of an object store, the next kReadaheadFiles files are opened in the background,
// kReadaheadThreads at a time, and kept with the open files: a scan then waits for one round trip
// per kReadaheadThreads steps rather than one per step. A reader that jumps about starts none.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "storage/object_store.h"

namespace vigil {

class EventFileCache {
 public:
  // Files kept open at least; more when a step has more (keep_open_at_least).
  static constexpr size_t kMinOpenFiles = 64;
  // An object store's open file holds its first bytes (one GET): at most this many, ≤ 64 MiB.
  static constexpr size_t kMaxOpenObjects = 256;
  static constexpr size_t kReadaheadFiles = 32;    // files opened ahead of an in-order reader
  static constexpr size_t kReadaheadThreads = 16;  // of those, opened at once (requests in flight)
  static_assert(kReadaheadFiles < kMinOpenFiles);

  explicit EventFileCache(const storage::ObjectStore& store) : store_(store) {}
  ~EventFileCache();  // waits for the openings in flight
  EventFileCache(const EventFileCache&) = delete;
  EventFileCache& operator=(const EventFileCache&) = delete;

  // The id of an event file named relative to the trial root (the same id for the same name).
  uint32_t intern(const std::string& relpath);
  // Room for `more` names beyond those interned (a listing's new index files name about one each):
  // the tables grow once instead of rehashing as they fill.
  void reserve_more(size_t more);
  std::string relpath(uint32_t id) const;
  // The open file (opened and checked once, then kept while among the most recently used).
  Result<std::shared_ptr<const storage::StoredObject>> open(uint32_t id) const;

  // Keeps at least `files` open (local files: within a quarter of the process's descriptor limit;
  // object stores: within kMaxOpenObjects): a trial of W
  // workers has W event files per step, and a rule reads each tensor of a step from every worker
  // in turn, so fewer than W kept open would reopen every file once per tensor.
  void keep_open_at_least(size_t files);
  size_t max_open_files() const;

  // Files opened by the readahead so far (for tests and benchmarks).
  size_t files_read_ahead() const;

 private:
  std::shared_ptr<const storage::StoredObject> find_open_locked(uint32_t id) const;
  void keep_locked(uint32_t id, std::shared_ptr<const storage::StoredObject> file) const;
  void read_ahead_locked(uint32_t id) const;
  void readahead_work() const;

  const storage::ObjectStore& store_;
  mutable std::mutex mu_;  // guards everything below
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  using OpenList = std::list<std::pair<uint32_t, std::shared_ptr<const storage::StoredObject>>>;
  mutable OpenList open_;                                                // most recent first
  mutable std::unordered_map<uint32_t, OpenList::iterator> open_by_id_;  // the same files, by id
  size_t max_open_ = kMinOpenFiles;
  // The readahead.
  mutable std::optional<uint32_t> last_id_;  // the file opened last
  mutable size_t in_order_ = 0;              // files opened before it, each the one before the next
  mutable std::deque<uint32_t> wanted_;                 // to open, in order
  mutable std::set<uint32_t> pending_;                  // wanted or being opened
  mutable std::condition_variable changed_;             // wanted_ grew, an opening ended, or stopping_
  mutable bool stopping_ = false;
  mutable size_t read_ahead_ = 0;
  mutable std::vector<std::thread> readers_;  // started when first needed
};

}  // namespace vigil
