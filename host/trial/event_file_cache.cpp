#include "trial/event_file_cache.h"

#include <fmt/format.h>

#include <system_error>

#include "common/os.h"

namespace vigil {

EventFileCache::~EventFileCache() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& t : readers_) t.join();
}

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

size_t EventFileCache::files_read_ahead() const {
  std::lock_guard lock(mu_);
  return read_ahead_;
}

std::shared_ptr<const storage::StoredObject> EventFileCache::find_open_locked(uint32_t id) const {
  for (auto it = open_.begin(); it != open_.end(); ++it)
    if (it->first == id) {
      open_.splice(open_.begin(), open_, it);
      return it->second;
    }
  return nullptr;
}

Result<std::shared_ptr<const storage::StoredObject>> EventFileCache::open(uint32_t id) const {
  std::string rel;
  {
    std::unique_lock lock(mu_);
    if (id != last_id_) {
      in_order_ = last_id_ && id == *last_id_ + 1 ? in_order_ + 1 : 0;
      last_id_ = id;
      if (in_order_ >= 2 && !store_.is_local()) read_ahead_locked(id);
    }
    // Being opened by the readahead: its answer, not a second request.
    changed_.wait(lock, [&] { return !pending_.contains(id) || stopping_; });
    if (auto file = find_open_locked(id)) return file;
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

// Called with mu_ held when the reader went on to file `id` from id-1, and to that from id-2: that
// file and those after it not open nor on their way are asked for, up to kReadaheadFiles waiting.
// `id` itself is among them, so that the reader waits for the readahead rather than open it beside
// kReadaheadThreads openings.
void EventFileCache::read_ahead_locked(uint32_t id) const {
  const uint64_t end = std::min<uint64_t>(uint64_t(id) + 1 + kReadaheadFiles, names_.size());
  for (uint64_t next = id; next < end && wanted_.size() < kReadaheadFiles; ++next) {
    const auto n = uint32_t(next);
    if (pending_.contains(n) || names_[n].empty()) continue;
    bool is_open = false;
    for (const auto& [open_id, file] : open_) is_open = is_open || open_id == n;
    if (is_open) continue;
    wanted_.push_back(n);
    pending_.insert(n);
  }
  while (readers_.size() < std::min(kReadaheadThreads, wanted_.size())) {
    try {
      readers_.emplace_back([this] { readahead_work(); });
    } catch (const std::system_error&) {
      break;  // no thread now: those running, or the reader itself, open the rest
    }
  }
  if (readers_.empty()) {  // nobody to open them: the reader opens each itself
    for (uint32_t n : wanted_) pending_.erase(n);
    wanted_.clear();
  }
  changed_.notify_all();
}

void EventFileCache::readahead_work() const {
  os::block_sigpipe_on_this_thread();
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !wanted_.empty(); });
    if (stopping_) return;
    const uint32_t id = wanted_.front();
    wanted_.pop_front();
    const std::string rel = names_[id];
    lock.unlock();
    // A failure is left to the reader, who opens the file again and reports what it gets.
    std::shared_ptr<const storage::StoredObject> file;
    try {
      if (auto opened = store_.open(rel)) file = std::move(*opened);
    } catch (...) {
    }
    lock.lock();
    if (file) {
      open_.emplace_front(id, std::move(file));
      if (open_.size() > kMaxOpenFiles) open_.pop_back();
      ++read_ahead_;
    }
    pending_.erase(id);
    changed_.notify_all();
  }
}

}  // namespace vigil
