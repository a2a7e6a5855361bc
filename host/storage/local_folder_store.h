// The ObjectStore of a local trial folder: every file is opened through format::TrialRoot, so a
// name from an untrusted index cannot reach outside the folder.
#pragma once

#include <filesystem>
#include <memory>

#include "common/error.h"
#include "storage/object_store.h"

namespace vigil::storage {

// `path` must be a folder; with `create` it is made first (with its parents).
[[nodiscard]] Result<std::shared_ptr<ObjectStore>> open_local_folder_store(const std::filesystem::path& path,
                                                                           bool create = false);

}  // namespace vigil::storage
