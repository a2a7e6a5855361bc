#include "trial/trial_watcher.h"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace vigil {

namespace fs = std::filesystem;

namespace {
constexpr uint32_t kEvents = IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF;
// The longest a reader blocks in poll() before looking at `stop` again.
constexpr std::chrono::milliseconds kSlice{100};
}  // namespace

TrialWatcher::TrialWatcher(fs::path trial_root) : root_(std::move(trial_root)) {
  fd_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  std::lock_guard lock(mu_);
  add_watches();
}

TrialWatcher::~TrialWatcher() = default;

void TrialWatcher::add_watches() {
  if (!fd_) return;
  auto watch = [&](const fs::path& p) {
    std::string key = p.string();
    if (watched_.contains(key)) return;
    if (::inotify_add_watch(fd_.get(), key.c_str(), kEvents | IN_ONLYDIR) >= 0) watched_.insert(key);
  };
  std::error_code ec;
  watch(root_);
  for (const char* folder : {"collections", "index"}) {
    const fs::path dir = root_ / folder;
    if (!fs::is_directory(dir, ec)) continue;
    watch(dir);
    for (const auto& d : fs::directory_iterator(dir, ec))
      if (d.is_directory(ec)) watch(d.path());
  }
}

bool TrialWatcher::watching_root() {
  std::lock_guard lock(mu_);
  return watched_.contains(root_.string());
}

bool TrialWatcher::drain() {
  alignas(inotify_event) char buf[8192];
  bool any = false;
  while (true) {
    if (os::read_some(fd_.get(), buf).bytes == 0) break;
    any = true;
  }
  if (any) add_watches();  // a new index/<step9>/ folder may have appeared
  return any;
}

uint64_t TrialWatcher::generation() {
  std::lock_guard lock(mu_);
  return generation_;
}

void TrialWatcher::wait_for_change(uint64_t seen, std::chrono::milliseconds timeout, std::stop_token stop) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mu_);
  if (!fd_) {
    cv_.wait_until(lock, stop, deadline, [] { return false; });
    return;
  }
  if (!watched_.contains(root_.string())) add_watches();  // the trial folder may have appeared since
  while (generation_ == seen && !stop.stop_requested()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return;
    if (reader_active_) {
      // Another thread is reading events; it will wake us.
      cv_.wait_until(lock, stop, std::min(deadline, now + kSlice), [&] { return generation_ != seen; });
      continue;
    }
    reader_active_ = true;
    lock.unlock();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    pollfd p{fd_.get(), POLLIN, 0};
    const int r = os::poll(std::span(&p, 1), std::min(left, kSlice) + std::chrono::milliseconds(1));
    lock.lock();
    reader_active_ = false;
    if (r > 0 && drain()) ++generation_;
    cv_.notify_all();
  }
}

}  // namespace vigil
