// A local cache in front of a remote store: whole files and ranges read from objects, kept on disk
// under their object's name and version (ETag), within a size budget. Re-opening a trial then costs
// its listing: the index files it lists with the same ETags, and the record ranges it read before,
// come from disk. A changed object has a new ETag, so nothing stale is ever served.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "common/error.h"
#include "storage/object_store.h"

namespace vigil::storage {

struct CacheOptions {
  std::filesystem::path folder;
  uint64_t max_bytes = uint64_t(1) << 30;
};

// VIGIL_CACHE_DIR (default $XDG_CACHE_HOME/vigil/objects, else ~/.cache/vigil/objects) and
// VIGIL_CACHE_MAX_BYTES (default 1 GiB; 0 turns the cache off: nullopt). InvalidArgument for a
// budget that is not a number.
[[nodiscard]] Result<std::optional<CacheOptions>> cache_options_from_environment();

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t bytes_stored = 0;  // on disk now, as far as this process knows
  uint64_t evictions = 0;
};

// `remote` behind the cache. The folder is made when missing, owner-only (0700, files 0600: cached
// trial data is the user's own); one owned by another user, or that cannot be written, is passed
// by (reads go to `remote`), never an error.
[[nodiscard]] std::shared_ptr<ObjectStore> with_cache(std::shared_ptr<ObjectStore> remote, CacheOptions options);

// The cache's counters, when `store` is (or wraps) a cached store.
[[nodiscard]] std::optional<CacheStats> cache_stats(const ObjectStore& store);

}  // namespace vigil::storage
