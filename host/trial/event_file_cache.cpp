#include "trial/event_file_cache.h"

#include <fmt/format.h>

#include <algorithm>
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

void EventFileCache::reserve_more(size_t more) {
  std::lock_guard lock(mu_);
  const size_t wanted = names_.size() + more;
  if (wanted <= names_.capacity()) return;
  // Geometric, as the tables would grow by themselves: a live trial's refreshes add a few at a time.
  const size_t room = std::max(wanted, 2 * names_.capacity());
  names_.reserve(room);
  ids_.reserve(room);
}

std::string EventFileCache::relpath(uint32_t id) const {
  std::lock_guard lock(mu_);
  return names_.at(id);
}

size_t EventFileCache::files_read_ahead() const {
  std::lock_guard lock(mu_);
  return read_ahead_;
}

void EventFileCache::keep_open_at_least(size_t files) {
  const size_t most = store_.is_local() ? std::max(kMinOpenFiles, os::open_file_limit() / 4) : kMaxOpenObjects;
  std::lock_guard lock(mu_);
  max_open_ = std::max(max_open_, std::min(files, most));
}

size_t EventFileCache::max_open_files() const {
  std::lock_guard lock(mu_);
  return max_open_;
}

std::shared_ptr<const storage::StoredObject> EventFileCache::find_open_locked(uint32_t id) const {
  auto at = open_by_id_.find(id);
  if (at == open_by_id_.end()) return nullptr;
  open_.splice(open_.begin(), open_, at->second);
  return at->second->second;
}

void EventFileCache::keep_locked(uint32_t id, std::shared_ptr<const storage::StoredObject> file) const {
  if (auto at = open_by_id_.find(id); at != open_by_id_.end()) {  // opened twice: keep the newer
    open_.erase(at->second);
    open_by_id_.erase(at);
  }
  open_.emplace_front(id, std::move(file));
  open_by_id_.emplace(id, open_.begin());
  if (open_.size() > max_open_) {  // readers keep their own reference
    open_by_id_.erase(open_.back().first);
    open_.pop_back();
  }
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
  keep_locked(id, file);
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
    if (open_by_id_.contains(n)) continue;
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
      keep_locked(id, std::move(file));
      ++read_ahead_;
    }
    pending_.erase(id);
    changed_.notify_all();
  }
}

}  // namespace vigil
