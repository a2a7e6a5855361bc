#include "storage/object_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "common/file_read.h"
#include "common/published_file.h"
#include "common/sha256.h"

namespace vigil::storage {
namespace fs = std::filesystem;
namespace {

// The cache holds trial data: the folder is the user's own, owner-only (0700), and its files 0600. A
// folder another user owns (made in a shared place first) is not used: it could be read, or fed
// planted bytes.
bool make_private_folder(const fs::path& folder) {
  std::error_code ec;
  if (folder.has_parent_path()) fs::create_directories(folder.parent_path(), ec);
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) return false;
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) return false;
  return (st.st_mode & 077) == 0 || ::chmod(folder.c_str(), 0700) == 0;
}

// The files of the cache, named by the SHA-256 of what they hold: "<object>\n<version>" for a whole
// object, with "\n<offset>\n<length>" for a range.
class DiskCache {
 public:
  explicit DiskCache(CacheOptions options) : options_(std::move(options)), usable_(make_private_folder(options_.folder)) {}

  std::optional<std::string> get(const std::string& key) {
    if (!usable_) return std::nullopt;
    const fs::path file = path_of(key);
    auto bytes = read_whole_file(file);
    if (!bytes) {
      misses_.fetch_add(1);
      return std::nullopt;
    }
    ::utimensat(AT_FDCWD, file.c_str(), nullptr, 0);  // most recently used: evicted last
    hits_.fetch_add(1);
    return std::move(*bytes);
  }

  bool get_into(const std::string& key, std::span<std::byte> out) {
    auto bytes = get(key);
    if (!bytes) return false;
    if (bytes->size() != out.size()) {  // not what this key holds: drop it
      std::error_code ec;
      fs::remove(path_of(key), ec);
      return false;
    }
    std::copy_n(reinterpret_cast<const std::byte*>(bytes->data()), out.size(), out.data());
    return true;
  }

  void put(const std::string& key, std::string_view bytes) {
    if (!usable_ || bytes.size() > options_.max_bytes / 4) return;  // one object may not flush the cache
    const fs::path file = path_of(key);
    // A name of its own for each writer: processes sharing the cache may store the same key at once.
    static std::atomic<uint64_t> counter{0};
    fs::path tmp = file;
    tmp += fmt::format(".{}.{}.tmp", ::getpid(), counter.fetch_add(1));
    if (!publish_file(file, tmp, bytes, 0600)) return;
    std::lock_guard lock(mu_);
    if (!total_known_) {
      total_ = folder_usage().first;
      total_known_ = true;
    } else {
      total_ += bytes.size();
    }
    if (total_ > options_.max_bytes) evict_locked();
  }

  CacheStats stats() {
    std::lock_guard lock(mu_);
    return {.hits = hits_.load(), .misses = misses_.load(), .bytes_stored = total_, .evictions = evictions_};
  }

 private:
  fs::path path_of(const std::string& key) const {
    Sha256 h;
    h.update(key.data(), key.size());
    return options_.folder / h.finish_hex();
  }

  struct Entry {
    fs::file_time_type used;
    uint64_t size;
    fs::path path;
  };
  std::pair<uint64_t, std::vector<Entry>> folder_usage() const {
    uint64_t total = 0;
    std::vector<Entry> entries;
    std::error_code ec;
    for (auto it = fs::directory_iterator(options_.folder, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code fec;
      if (!it->is_regular_file(fec) || it->path().extension() == ".tmp") continue;
      const uint64_t size = it->file_size(fec);
      const auto used = it->last_write_time(fec);
      if (fec) continue;
      total += size;
      entries.push_back({used, size, it->path()});
    }
    return {total, std::move(entries)};
  }

  // Removes the least recently used files until the cache is at 3/4 of its budget, so that
  // eviction runs once per quarter of the budget stored, not at every store.
  void evict_locked() {
    auto [total, entries] = folder_usage();
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
    const uint64_t target = options_.max_bytes / 4 * 3;
    for (const Entry& e : entries) {
      if (total <= target) break;
      std::error_code ec;
      if (fs::remove(e.path, ec)) {
        total -= e.size;
        ++evictions_;
      }
    }
    total_ = total;
  }

  const CacheOptions options_;
  bool usable_ = false;
  std::atomic<uint64_t> hits_{0}, misses_{0};
  std::mutex mu_;  // guards what follows
  bool total_known_ = false;
  uint64_t total_ = 0;
  uint64_t evictions_ = 0;
};

std::string range_key(const StoredObject& object, uint64_t offset, size_t length) {
  return fmt::format("{}\n{}\n{}\n{}", object.description(), object.version(), offset, length);
}

class CachedObject final : public StoredObject {
 public:
  CachedObject(std::shared_ptr<const StoredObject> remote, std::shared_ptr<DiskCache> cache)
      : remote_(std::move(remote)), cache_(std::move(cache)) {}
  uint64_t size() const override { return remote_->size(); }
  const std::string& description() const override { return remote_->description(); }
  const std::string& version() const override { return remote_->version(); }
  Result<uint64_t> current_size() const override { return remote_->current_size(); }
  uint64_t bytes_held() const override { return remote_->bytes_held(); }

  Result<void> read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (version().empty()) return remote_->read_at(offset, out);  // no version, nothing to key by
    // Bytes the opening brought are in memory: a file per record there would cost a scan more
    // than the read (a step's small event file is all held) and save a re-open nothing (it GETs them again).
    if (const uint64_t held = remote_->bytes_held(); out.size() <= held && offset <= held - out.size())
      return remote_->read_at(offset, out);
    const std::string key = range_key(*remote_, offset, out.size());
    if (cache_->get_into(key, out)) return {};
    if (auto r = remote_->read_at(offset, out); !r) return r;
    cache_->put(key, {reinterpret_cast<const char*>(out.data()), out.size()});
    return {};
  }

 private:
  std::shared_ptr<const StoredObject> remote_;
  std::shared_ptr<DiskCache> cache_;
};

class CachedStore final : public ObjectStore {
 public:
  CachedStore(std::shared_ptr<ObjectStore> remote, CacheOptions options)
      : remote_(std::move(remote)), cache_(std::make_shared<DiskCache>(std::move(options))) {}

  std::string location() const override { return remote_->location(); }
  std::string describe(std::string_view relpath) const override { return remote_->describe(relpath); }
  bool is_local() const override { return remote_->is_local(); }
  const ObjectStore* wrapped() const override { return remote_.get(); }

  // Listings go to the store (they are what says what changed); the versions they give key reads.
  Result<std::vector<ObjectInfo>> list(std::string_view folder, std::string_view start_after) const override {
    auto listed = remote_->list(folder, start_after);
    if (!listed) return listed;
    std::lock_guard lock(mu_);
    for (const auto& o : *listed)
      if (!o.etag.empty()) listed_versions_[o.relpath] = o.etag;
    return listed;
  }

  Result<std::string> read(std::string_view relpath) const override {
    const std::string key = cache_key(relpath);
    if (key.empty()) return remote_->read(relpath);
    if (auto hit = cache_->get(key)) return std::move(*hit);
    auto bytes = remote_->read(relpath);
    // The GET may have read a version newer than the one listed; it is still kept under the listed
    // one: only a listing older than that newer version names the listed ETag, and a GET made after
    // such a listing would read the newer bytes too.
    if (bytes) cache_->put(key, *bytes);
    return bytes;
  }

  // The listed files found in the cache come from disk; the others are read by the store at once
  // (in parallel where it can), and kept.
  std::vector<Result<std::string>> read_many(std::span<const std::string> relpaths) const override {
    std::vector<std::optional<Result<std::string>>> got(relpaths.size());
    std::vector<std::string> keys(relpaths.size());
    std::vector<std::string> missing;
    std::vector<size_t> missing_at;
    for (size_t i = 0; i < relpaths.size(); ++i) {
      keys[i] = cache_key(relpaths[i]);
      if (!keys[i].empty()) {
        if (auto hit = cache_->get(keys[i])) {
          got[i].emplace(std::move(*hit));
          continue;
        }
      }
      missing.push_back(relpaths[i]);
      missing_at.push_back(i);
    }
    auto fetched = remote_->read_many(missing);
    for (size_t k = 0; k < fetched.size(); ++k) {
      const size_t i = missing_at[k];
      if (fetched[k] && !keys[i].empty()) cache_->put(keys[i], *fetched[k]);  // as read() keeps it
      got[i].emplace(std::move(fetched[k]));
    }
    std::vector<Result<std::string>> out;
    out.reserve(got.size());
    for (auto& r : got) out.push_back(std::move(*r));
    return out;
  }

  Result<std::shared_ptr<const StoredObject>> open(std::string_view relpath) const override {
    auto opened = remote_->open(relpath);
    if (!opened) return opened;
    return std::shared_ptr<const StoredObject>(std::make_shared<CachedObject>(std::move(*opened), cache_));
  }

  Result<bool> exists(std::string_view relpath) const override { return remote_->exists(relpath); }
  Result<bool> folder_exists(std::string_view folder) const override { return remote_->folder_exists(folder); }
  Result<void> write(std::string_view relpath, std::string_view bytes) const override {
    return remote_->write(relpath, bytes);
  }

  CacheStats stats() const { return cache_->stats(); }

 private:
  // A whole file's entry: its name and the version the last listing gave; empty when no listing
  // gave one (nothing to key it by: it is read from the store every time).
  std::string cache_key(std::string_view relpath) const {
    std::lock_guard lock(mu_);
    auto it = listed_versions_.find(std::string(relpath));
    if (it == listed_versions_.end() || it->second.empty()) return {};
    return fmt::format("{}\n{}", describe(relpath), it->second);
  }

  std::shared_ptr<ObjectStore> remote_;
  std::shared_ptr<DiskCache> cache_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::string> listed_versions_;  // relpath -> ETag
};

}  // namespace

Result<std::optional<CacheOptions>> cache_options_from_environment() {
  CacheOptions options;
  if (const char* budget = std::getenv("VIGIL_CACHE_MAX_BYTES"); budget && *budget) {
    const std::string_view text(budget);
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
      return fail(Error::invalid_argument(fmt::format("VIGIL_CACHE_MAX_BYTES must be a number of bytes, not '{}'", text)));
    if (value == 0) return std::optional<CacheOptions>{};
    options.max_bytes = value;
  }
  if (const char* dir = std::getenv("VIGIL_CACHE_DIR"); dir && *dir) {
    options.folder = dir;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    options.folder = fs::path(xdg) / "vigil" / "objects";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    options.folder = fs::path(home) / ".cache" / "vigil" / "objects";
  } else {
    return std::optional<CacheOptions>{};  // nowhere to keep it
  }
  return std::optional<CacheOptions>(std::move(options));
}

std::shared_ptr<ObjectStore> with_cache(std::shared_ptr<ObjectStore> remote, CacheOptions options) {
  return std::make_shared<CachedStore>(std::move(remote), std::move(options));
}

std::optional<CacheStats> cache_stats(const ObjectStore& store) {
  for (const ObjectStore* s = &store; s != nullptr; s = s->wrapped())
    if (const auto* cached = dynamic_cast<const CachedStore*>(s)) return cached->stats();
  return std::nullopt;
}

}  // namespace vigil::storage
