#include <filesystem>

#include "storage/local_folder_store.h"
#include "storage/object_cache.h"
#include "storage/object_store.h"
#include "storage/s3_config.h"
#include "storage/s3_object_store.h"
#include "storage/s3_uri.h"

namespace vigil::storage {

Result<std::shared_ptr<ObjectStore>> open_object_store(std::string_view location, bool create) {
  if (is_s3_uri(location)) {
    auto uri = parse_s3_uri(location);
    if (!uri) return fail(uri.error());
    auto config = s3_config_from_environment();
    if (!config) return fail(config.error());
    auto cache = cache_options_from_environment();
    if (!cache) return fail(cache.error());
    auto store = open_s3_store(*uri, std::move(*config));  // an S3 prefix needs no creating
    if (!store || !*cache) return store;
    return with_cache(std::move(*store), std::move(**cache));
  }
  return open_local_folder_store(std::filesystem::path(location), create);
}

}  // namespace vigil::storage
