#include "trial/event_file_cache.h"

#include <fmt/format.h>

namespace vigil {

uint32_t EventFileCache::intern(const std::string& relpath) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = ids_.try_emplace(relpath, uint32_t(names_.size()));
  if (inserted) names_.push_back(relpath);
  return it->second;
}

std::string EventFileCache::relpath(uint32_t id) const {
  std::lock_guard lock(mu_);
  return names_.at(id);
}

Result<std::shared_ptr<const storage::StoredObject>> EventFileCache::open(uint32_t id) const {
  std::string rel;
  {
    std::lock_guard lock(mu_);
    for (auto it = open_.begin(); it != open_.end(); ++it)
      if (it->first == id) {
        open_.splice(open_.begin(), open_, it);
        return it->second;
      }
    rel = names_.at(id);
  }
  if (rel.empty())
    return fail(Error::index_reader(
        fmt::format("{}: the index of this step has an empty meta.event_file_name, so its values cannot be read",
                    store_.location())));
  auto opened = store_.open(rel);
  if (!opened) return fail(opened.error());
  auto file = std::move(*opened);
  std::lock_guard lock(mu_);
  open_.emplace_front(id, file);
  if (open_.size() > kMaxOpenFiles) open_.pop_back();  // readers keep their own reference
  return file;
}

}  // namespace vigil
