// Helpers of the reliability tests beyond test_support.h: counts from the environment, and a look at the
// published files of a trial that does not go through Trial (what any reader could find on disk).
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "format/event_proto.h"
#include "format/index_json.h"
#include "format/tfrecord.h"
#include "format/trial_layout.h"
#include "test_support.h"
#include "torture_trial.h"

namespace vigil::torture {

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// A count the environment can raise for long runs (e.g. VIGIL_TORTURE_KILLS=5000).
inline int64_t count_from_env(const char* name, int64_t fallback) {
  if (const char* v = std::getenv(name)) {
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    if (end != v && *end == '\0' && n > 0) return n;
  }
  return fallback;
}

// The seed of a run: VIGIL_TORTURE_SEED reproduces one, otherwise a fresh one (printed by the tests).
inline uint64_t seed_from_env() {
  if (const char* v = std::getenv("VIGIL_TORTURE_SEED")) return std::strtoull(v, nullptr, 10);
  return std::random_device{}();
}

// Identifies one version of a file: a rename over it or a rewrite changes one of these.
struct FileVersion {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileVersion&) const = default;
};

inline std::optional<FileVersion> file_version(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  return FileVersion{st.st_dev, st.st_ino, st.st_size, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

// The published state of a trial as found on disk, checked on the way: every published index
// parses, names its own step's event file and mode, and each of its entries covers exactly one
// whole, valid record with that tensor's tag. Files checked once are only compared with the
// version seen then: a published file must never change.
class PublishedFiles {
 public:
  PublishedFiles(fs::path root, int workers) : root_(std::move(root)), workers_(workers) {}

  // Scans the trial; adds a test failure for anything that breaks the rules above.
  void scan() {
    published_.assign(size_t(workers_), {});
    referenced_events_.clear();
    for (const auto& rel : test::list_files(root_)) {
      if (!rel.starts_with("index/") || rel.ends_with(format::kTmpSuffix)) continue;
      auto name = format::parse_step_file_name(rel);
      ASSERT_TRUE(name) << "unexpected file " << rel;
      const int w = worker_index(name->worker);
      ASSERT_GE(w, 0) << "unknown worker in " << rel;
      ASSERT_EQ(rel, format::index_file_relpath(name->global_step, name->worker));
      published_[size_t(w)].push_back(name->global_step);
      const std::string event_rel = format::event_file_relpath(name->global_step, name->worker);
      referenced_events_.insert(event_rel);
      auto index_version = file_version(root_ / rel);
      auto event_version = file_version(root_ / event_rel);
      ASSERT_TRUE(index_version && event_version) << rel << " or its event file vanished";
      if (auto seen = checked_.find(rel); seen != checked_.end()) {
        ASSERT_EQ(seen->second.first, *index_version) << rel << " changed after it was published";
        ASSERT_EQ(seen->second.second, *event_version) << event_rel << " changed after its index was published";
        continue;
      }
      ASSERT_NO_FATAL_FAILURE(check_index(rel, event_rel, name->global_step));
      checked_[rel] = {*index_version, *event_version};
    }
    for (auto& steps : published_) {
      std::sort(steps.begin(), steps.end());
      // A worker publishes its steps in order, one at a time: always a prefix 0..k.
      for (size_t i = 0; i < steps.size(); ++i) ASSERT_EQ(steps[i], int64_t(i)) << "published steps have a gap";
    }
  }

  // The last step worker `w` published; -1 when none.
  int64_t last_published(int w) const {
    const auto& steps = published_[size_t(w)];
    return steps.empty() ? -1 : steps.back();
  }
  const std::set<std::string>& referenced_event_files() const { return referenced_events_; }

 private:
  int worker_index(const std::string& worker) const {
    for (int w = 0; w < workers_; ++w)
      if (worker == worker_name(w)) return w;
    return -1;
  }

  void check_index(const std::string& rel, const std::string& event_rel, int64_t step) {
    auto index = format::parse_index_json(test::read_file_if_present(root_ / rel), rel);
    ASSERT_TRUE(index) << rel << ": " << index.error().message;
    ASSERT_EQ(index->mode, mode_of(step)) << rel;
    ASSERT_EQ(index->mode_step, mode_step_of(step)) << rel;
    ASSERT_EQ(index->event_file_name.value_or(""), event_rel) << rel;
    const std::string events = test::read_file_if_present(root_ / event_rel);
    std::set<std::string> tags;
    uint64_t covered = 0;
    for (const auto& entry : index->tensor_payload) {
      ASSERT_EQ(entry.start_idx, covered) << rel << ": records are not back to back";
      ASSERT_LE(entry.start_idx + entry.length, events.size()) << rel << ": " << entry.tensorname << " is cut off";
      std::span<const uint8_t> bytes{reinterpret_cast<const uint8_t*>(events.data()) + entry.start_idx, entry.length};
      auto record = format::parse_record(bytes);
      ASSERT_TRUE(record) << rel << ": " << entry.tensorname << ": " << record.error();
      ASSERT_EQ(record->record_size(), entry.length) << rel << ": " << entry.tensorname;
      auto event = format::decode_event(record->payload);
      ASSERT_TRUE(event) << rel << ": " << entry.tensorname << ": " << event.error();
      ASSERT_FALSE(event->values.empty()) << rel;
      ASSERT_EQ(event->values.front().tag, entry.tensorname) << rel;
      tags.insert(entry.tensorname);
      covered += entry.length;
    }
    ASSERT_EQ(covered, events.size()) << event_rel << " holds bytes no index entry names";
    const std::set<std::string> expected{"scalar/loss", "layer/bias", "smdebug/reductions/max/layer/bias", "labels",
                                         "big/weight", "tokens"};
    ASSERT_EQ(tags, expected) << rel;
    ASSERT_EQ(index->shape_payload.size(), 1u) << rel;
  }

  fs::path root_;
  int workers_;
  std::vector<std::vector<int64_t>> published_;
  std::set<std::string> referenced_events_;
  std::map<std::string, std::pair<FileVersion, FileVersion>> checked_;  // index -> (index, event file)
};

}  // namespace vigil::torture
