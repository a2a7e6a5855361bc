#include <filesystem>

#include "storage/local_folder_store.h"
#include "storage/object_store.h"
#include "storage/s3_uri.h"

namespace vigil::storage {

Result<std::shared_ptr<ObjectStore>> open_object_store(std::string_view location, bool create) {
  if (is_s3_uri(location)) {
    auto uri = parse_s3_uri(location);
    if (!uri) return fail(uri.error());
    return fail(Error::not_supported("S3 client not built yet: " + uri->to_string()));
  }
  return open_local_folder_store(std::filesystem::path(location), create);
}

}  // namespace vigil::storage
