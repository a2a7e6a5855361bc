// Wakes waiters when a trial changes on disk: inotify watches on the trial folder, index/ and each
// index/<step9>/ folder (new index files and the end marker appear there by rename), collections/ and
// its folders (the collection files a trial opens with). Without inotify it degrades to waiting for
// the poll interval.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>

#include "common/os.h"

namespace vigil {

class TrialWatcher {
 public:
  explicit TrialWatcher(std::filesystem::path trial_root);
  ~TrialWatcher();
  TrialWatcher(const TrialWatcher&) = delete;
  TrialWatcher& operator=(const TrialWatcher&) = delete;

  // A counter that moves whenever a change was seen; pass it back to wait_for_change.
  uint64_t generation();
  // Returns when a change newer than `seen` happens, `timeout` passes, or `stop` is requested.
  // With inotify unavailable it simply waits `timeout`.
  void wait_for_change(uint64_t seen, std::chrono::milliseconds timeout, std::stop_token stop);
  bool event_driven() const { return bool(fd_); }
  // Whether the trial folder itself is watched: false while it does not exist (each wait_for_change
  // tries again), and then nothing inside it can wake a waiter.
  bool watching_root();

 private:
  void add_watches();  // caller holds mu_
  bool drain();        // reads pending events; true if any. Caller holds mu_.

  std::filesystem::path root_;
  os::UniqueFd fd_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  bool reader_active_ = false;
  uint64_t generation_ = 0;
  std::set<std::string> watched_;
};

}  // namespace vigil
