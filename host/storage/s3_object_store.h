// The ObjectStore of an s3://bucket/prefix location: a trial's relpaths are keys under the prefix.
// Listing is ListObjectsV2, reading a whole file one GET, opening an object one GET of its first
// 256 KiB (its size, its ETag, and every record of a small file) and then ranged
// GETs pinned to its ETag (If-Match), writing one PUT with its CRC32C.
#pragma once

#include <memory>
#include <optional>

#include "common/error.h"
#include "storage/object_store.h"
#include "storage/s3_client.h"
#include "storage/s3_config.h"
#include "storage/s3_uri.h"

namespace vigil::storage {

// The store of `uri`, reached as `config` says (s3_config_from_environment for the usual places).
[[nodiscard]] Result<std::shared_ptr<ObjectStore>> open_s3_store(const S3Uri& uri, S3Config config);

// What the S3 client of `store` did so far (benchmarks and tests count requests); nullopt when
// `store` is not an S3 store.
[[nodiscard]] std::optional<S3Stats> s3_stats(const ObjectStore& store);

}  // namespace vigil::storage
