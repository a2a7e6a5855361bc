#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/published_file.h"
#include "format/trial_layout.h"
#include "writer/trial_uploader.h"
#include "test_support.h"
#include "writer/trial_writer.h"

namespace vigil::writer {
namespace {

using namespace std::chrono_literals;
using test::ScratchDir;
namespace fs = std::filesystem;

// The destination: records successful writes in order; can fail chosen files, or everything, a
// number of times, and can hang until released.
class FakeStore final : public storage::ObjectStore {
 public:
  std::string location() const override { return "fake://dest"; }
  std::string describe(std::string_view relpath) const override { return "fake://dest/" + std::string(relpath); }
  bool is_local() const override { return false; }
  Result<std::vector<storage::ObjectInfo>> list(std::string_view, std::string_view) const override { return std::vector<storage::ObjectInfo>{}; }
  Result<bool> folder_exists(std::string_view) const override { return false; }
  Result<std::string> read(std::string_view relpath) const override {
    std::lock_guard lock(mutex_);
    auto it = contents_.find(std::string(relpath));
    if (it == contents_.end()) return fail(Error::io(describe(relpath), "no such file"));
    return it->second;
  }
  Result<std::shared_ptr<const storage::StoredObject>> open(std::string_view) const override {
    return fail(Error::not_supported("fake"));
  }
  Result<bool> exists(std::string_view relpath) const override {
    std::lock_guard lock(mutex_);
    return contents_.contains(std::string(relpath));
  }
  Result<void> write(std::string_view relpath, std::string_view bytes) const override {
    const std::string rel(relpath);
    std::function<void(const std::string&)> before;
    {
      std::unique_lock lock(mutex_);
      ++attempts_;
      cv_.wait(lock, [&] { return !hung_; });
      before = before_write_;
    }
    if (before) before(rel);
    std::lock_guard lock(mutex_);
    if (fail_all_ > 0 || fail_times_[rel] > 0) {
      if (fail_all_ > 0) --fail_all_;
      else --fail_times_[rel];
      return fail(Error::io_write(describe(relpath), "503 Slow Down"));
    }
    order_.push_back(rel);
    contents_[rel] = std::string(bytes);
    cv_.notify_all();
    return {};
  }

  void fail_file(const std::string& rel, int times) {
    std::lock_guard lock(mutex_);
    fail_times_[rel] = times;
  }
  void fail_everything(int times) {
    std::lock_guard lock(mutex_);
    fail_all_ = times;
  }
  void hang(bool on) {
    std::lock_guard lock(mutex_);
    hung_ = on;
    cv_.notify_all();
  }
  void before_write(std::function<void(const std::string&)> f) {
    std::lock_guard lock(mutex_);
    before_write_ = std::move(f);
  }
  std::vector<std::string> order() const {
    std::lock_guard lock(mutex_);
    return order_;
  }
  std::string content(const std::string& rel) const {
    std::lock_guard lock(mutex_);
    auto it = contents_.find(rel);
    return it == contents_.end() ? std::string() : it->second;
  }
  int attempts() const {
    std::lock_guard lock(mutex_);
    return attempts_;
  }
  // Waits (up to 10 s) until `done(order)` holds.
  bool wait_for(const std::function<bool(const std::vector<std::string>&)>& done) const {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, 10s, [&] { return done(order_); });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  mutable std::vector<std::string> order_;
  mutable std::map<std::string, std::string> contents_;
  mutable std::map<std::string, int> fail_times_;
  mutable int fail_all_ = 0;
  mutable int attempts_ = 0;
  bool hung_ = false;
  std::function<void(const std::string&)> before_write_;
};

// Publishes `rel` in `root` the way the writer does: "<rel>.tmp", then renamed.
void publish(const fs::path& root, const std::string& rel, std::string_view content) {
  const fs::path path = root / rel;
  fs::create_directories(path.parent_path());
  fs::path tmp = path;
  tmp += format::kTmpSuffix;
  ASSERT_VIGIL_OK(publish_file(path, tmp, content));
}

const std::string kEvent0 = "events/000000000000/000000000000_worker_0.tfevents";
const std::string kEvent1 = "events/000000000001/000000000001_worker_0.tfevents";
const std::string kIndex0 = "index/000000000/000000000000_worker_0.json";
const std::string kIndex1 = "index/000000000/000000000001_worker_0.json";
const std::string kCollections = "collections/000000000/worker_0_collections.json";
const std::string kMarker(format::kEndOfTrainingMarker);

// A small trial plus profiler and TensorBoard files, ended.
void stage_trial(const fs::path& root) {
  publish(root, kEvent0, "event 0");
  publish(root, kEvent1, "event 1");
  publish(root, kIndex1, "index 1");
  publish(root, kIndex0, "index 0");
  publish(root, kCollections, "{}");
  publish(root, "framework/pytorch/trace.json", "[]");
  publish(root, "system/1/host.json", "{}");
  publish(root, "tensorboard/train/events.out.tfevents.1.host", "tb");
  publish(root, kMarker, "");
}

size_t position(const std::vector<std::string>& order, const std::string& rel) {
  auto it = std::find(order.begin(), order.end(), rel);
  EXPECT_NE(it, order.end()) << rel << " was not uploaded";
  return size_t(it - order.begin());
}

bool is_data(const std::string& rel) { return !rel.starts_with("index/") && rel != kMarker; }

struct Logged {
  std::mutex mutex;
  std::vector<std::string> messages;
  UploaderOptions options(std::chrono::milliseconds interval) {
    UploaderOptions o;
    o.scan_interval = interval;
    o.log = [this](std::string_view m) {
      std::lock_guard lock(mutex);
      messages.emplace_back(m);
    };
    return o;
  }
  std::vector<std::string> take() {
    std::lock_guard lock(mutex);
    return messages;
  }
};

std::unique_ptr<TrialUploader> start(const fs::path& root, std::shared_ptr<FakeStore> store, UploaderOptions options) {
  auto up = TrialUploader::start(root, std::move(store), std::move(options));
  EXPECT_TRUE(up.has_value()) << up.error().message;
  return up ? std::move(*up) : nullptr;
}

TEST(TrialUploader, DataFilesFirstThenIndexSortedThenTheMarker) {
  ScratchDir staging;
  stage_trial(staging.path());
  auto store = std::make_shared<FakeStore>();
  Logged log;
  const size_t threads_before = test::threads_named("vigil-upload");
  auto up = start(staging.path(), store, log.options(1h));
  ASSERT_TRUE(up);
  EXPECT_TRUE(test::wait_for_threads_named("vigil-upload", threads_before + 1, 30s));
  auto report = up->finish(10s);
  EXPECT_EQ(test::threads_named("vigil-upload"), threads_before);  // finished: joined
  ASSERT_VIGIL_OK(report);
  EXPECT_TRUE(report->complete());
  EXPECT_FALSE(report->first_error.has_value());
  EXPECT_EQ(report->files_uploaded, 9u);

  const auto order = store->order();
  ASSERT_EQ(order.size(), 9u);
  EXPECT_EQ(order.back(), kMarker);
  EXPECT_EQ(order[order.size() - 3], kIndex0);
  EXPECT_EQ(order[order.size() - 2], kIndex1);
  for (size_t i = 0; i + 3 < order.size(); ++i) EXPECT_TRUE(is_data(order[i])) << order[i];
  EXPECT_EQ(store->content(kEvent1), "event 1");
  EXPECT_EQ(store->content("tensorboard/train/events.out.tfevents.1.host"), "tb");
  EXPECT_EQ(up->counters().files, 9u);
  EXPECT_EQ(up->counters().failures, 0u);
  EXPECT_TRUE(log.take().empty());
}

TEST(TrialUploader, TheMarkerAndTheIndexWaitWhileTheirEventFileKeepsFailing) {
  ScratchDir staging;
  stage_trial(staging.path());
  auto store = std::make_shared<FakeStore>();
  store->fail_file(kEvent0, 1'000'000);
  Logged log;
  auto up = start(staging.path(), store, log.options(10ms));
  ASSERT_TRUE(up);
  // Several scans: everything else arrives, step 0's index and the marker never do.
  ASSERT_TRUE(store->wait_for([](const auto& order) { return std::count(order.begin(), order.end(), kIndex1) == 1; }));
  while (up->counters().scans < 5) std::this_thread::sleep_for(5ms);
  const auto order = store->order();
  EXPECT_EQ(std::count(order.begin(), order.end(), kEvent0), 0);
  EXPECT_EQ(std::count(order.begin(), order.end(), kIndex0), 0);
  EXPECT_EQ(std::count(order.begin(), order.end(), kMarker), 0);
  EXPECT_EQ(order.size(), 6u);  // all but event 0, index 0 and the marker; none twice
  EXPECT_GE(up->counters().failures, 5u);

  auto report = up->finish(300ms);
  ASSERT_VIGIL_OK(report);
  EXPECT_FALSE(report->complete());
  EXPECT_EQ(report->files_left, (std::vector<std::string>{kEvent0, kIndex0, kMarker}));
  ASSERT_TRUE(report->first_error.has_value());
  EXPECT_NE(report->first_error->message.find("503 Slow Down"), std::string::npos) << report->first_error->message;
  EXPECT_NE(report->first_error->message.find(kEvent0), std::string::npos) << report->first_error->message;
}

// A profiler output (format spec §8.6) has its markers in system/ and framework/: they too wait for
// a scan in which everything else made it, so a reader never sees one before the files it ends.
TEST(TrialUploader, TheProfilerOutputsMarkersComeLastToo) {
  ScratchDir staging;
  const std::string system_file = "system/incremental/2026120402/1764813600.algo-1.json";
  const std::string trace = "framework/pevents/2026120402/1764813600000000_0-algo-1_pythontimeline.json";
  const std::string system_marker = std::string("system/") + kMarker;
  const std::string framework_marker = std::string("framework/") + kMarker;
  publish(staging.path(), system_file, "{}");
  publish(staging.path(), trace, "[]");
  publish(staging.path(), system_marker, "");
  publish(staging.path(), framework_marker, "");
  auto store = std::make_shared<FakeStore>();
  store->fail_file(system_file, 3);
  Logged log;
  auto up = start(staging.path(), store, log.options(10ms));
  ASSERT_TRUE(up);
  auto report = up->finish(10s);
  ASSERT_VIGIL_OK(report);
  EXPECT_TRUE(report->complete());
  const auto order = store->order();
  ASSERT_EQ(order.size(), 4u);
  // The trace went at the first scan; the markers only after the system file got through.
  EXPECT_EQ(order[0], trace);
  EXPECT_EQ(order[1], system_file);
  EXPECT_EQ(std::set<std::string>(order.begin() + 2, order.end()), (std::set<std::string>{system_marker, framework_marker}));
}

TEST(TrialUploader, FailedFilesAreRetriedAtTheNextScan) {
  ScratchDir staging;
  stage_trial(staging.path());
  auto store = std::make_shared<FakeStore>();
  store->fail_file(kEvent0, 2);
  store->fail_file(kCollections, 1);
  Logged log;
  auto up = start(staging.path(), store, log.options(20ms));
  ASSERT_TRUE(up);
  ASSERT_TRUE(store->wait_for([](const auto& order) { return !order.empty() && order.back() == kMarker; }));
  auto report = up->finish(10s);
  ASSERT_VIGIL_OK(report);
  EXPECT_TRUE(report->complete());
  EXPECT_EQ(up->counters().failures, 3u);
  EXPECT_GE(up->counters().scans, 3u);  // event 0 made it at the third
  const auto order = store->order();
  EXPECT_EQ(order.size(), 9u);
  EXPECT_LT(position(order, kEvent0), position(order, kIndex0));
  EXPECT_EQ(order.back(), kMarker);
}

TEST(TrialUploader, AFileThatChangesIsUploadedAgainAndOnlyThen) {
  ScratchDir staging;
  const std::string trace = "framework/pytorch/trace.json";
  publish(staging.path(), trace, "[1]");
  auto store = std::make_shared<FakeStore>();
  Logged log;
  auto up = start(staging.path(), store, log.options(10ms));
  ASSERT_TRUE(up);
  ASSERT_TRUE(store->wait_for([&](const auto& order) { return order.size() == 1; }));
  const uint64_t scans = up->counters().scans;
  while (up->counters().scans < scans + 3) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(store->order().size(), 1u);  // unchanged: not uploaded again

  publish(staging.path(), trace, "[1, 2]");  // renamed over it (another inode, size, mtime)
  ASSERT_TRUE(store->wait_for([&](const auto& order) { return order.size() == 2; }));
  EXPECT_EQ(store->content(trace), "[1, 2]");
  {
    // Rewritten in place, same size: the mtime tells.
    std::this_thread::sleep_for(20ms);
    FILE* f = std::fopen((staging / trace).c_str(), "r+");
    ASSERT_NE(f, nullptr);
    std::fputs("[3, 4]", f);
    std::fclose(f);
  }
  ASSERT_TRUE(store->wait_for([&](const auto& order) { return order.size() == 3; }));
  EXPECT_EQ(store->content(trace), "[3, 4]");
  auto report = up->finish(5s);
  ASSERT_VIGIL_OK(report);
  EXPECT_TRUE(report->complete());
  EXPECT_EQ(report->files_uploaded, 3u);
}

TEST(TrialUploader, TmpFilesSymlinksAndSpecialFilesStayBehind) {
  ScratchDir staging, outside;
  publish(staging.path(), kEvent0, "event 0");
  fs::create_directories(staging / "framework");
  fs::create_directories((staging / kEvent1).parent_path());
  { std::ofstream(staging / (kEvent1 + std::string(format::kTmpSuffix))) << "half written"; }
  { std::ofstream(staging / "framework" / "node_1.tmp") << "trace being written"; }
  { std::ofstream(outside / "secret") << "not the trial's"; }
  fs::create_symlink(outside / "secret", staging / "linked_file");
  fs::create_directory_symlink(outside.path(), staging / "linked_folder");
  ASSERT_EQ(::mkfifo((staging / "fifo").c_str(), 0600), 0);

  auto store = std::make_shared<FakeStore>();
  Logged log;
  auto up = start(staging.path(), store, log.options(1h));
  ASSERT_TRUE(up);
  auto report = up->finish(5s);
  ASSERT_VIGIL_OK(report);
  EXPECT_TRUE(report->complete());
  EXPECT_EQ(store->order(), std::vector<std::string>{kEvent0});
  EXPECT_TRUE(log.take().empty());
}

TEST(TrialUploader, FinishReturnsByItsTimeoutWhenTheStoreHangs) {
  ScratchDir staging;
  stage_trial(staging.path());
  auto store = std::make_shared<FakeStore>();
  store->hang(true);
  Logged log;
  auto up = start(staging.path(), store, log.options(10ms));
  ASSERT_TRUE(up);
  while (store->attempts() == 0) std::this_thread::sleep_for(1ms);  // the thread is in the store
  const auto t0 = std::chrono::steady_clock::now();
  auto report = up->finish(200ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 2s);
  ASSERT_VIGIL_OK(report);
  EXPECT_FALSE(report->complete());
  EXPECT_EQ(report->files_left.size(), 9u);
  ASSERT_TRUE(report->first_error.has_value());
  EXPECT_NE(report->first_error->message.find("no answer within 200 ms"), std::string::npos)
      << report->first_error->message;
  // The same report again, and the destructor does not wait for the store either.
  auto again = up->finish(10s);
  ASSERT_VIGIL_OK(again);
  EXPECT_EQ(again->files_left, report->files_left);
  const auto t1 = std::chrono::steady_clock::now();
  up.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 1s);
  // Released, the abandoned thread ends after the write it was in, uploading nothing more.
  const size_t threads_hung = test::threads_named("vigil-upload");
  EXPECT_GE(threads_hung, 1u);  // detached, still in the store
  store->hang(false);
  EXPECT_TRUE(test::wait_for_threads_named("vigil-upload", threads_hung - 1, 10s));
  EXPECT_LE(store->order().size(), 1u);
}

TEST(TrialUploader, EachKindOfFaultIsLoggedOnce) {
  ScratchDir staging;
  stage_trial(staging.path());
  auto store = std::make_shared<FakeStore>();
  store->fail_everything(1'000'000);
  Logged log;
  auto up = start(staging.path(), store, log.options(5ms));
  ASSERT_TRUE(up);
  while (up->counters().scans < 4) std::this_thread::sleep_for(2ms);
  auto messages = log.take();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("503 Slow Down"), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("fake://dest"), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("write faults are not logged"), std::string::npos) << messages[0];
  EXPECT_GE(up->counters().failures, 4u * 6u);  // every data file, every scan; index and marker wait
  EXPECT_TRUE(store->order().empty());
  auto report = up->finish(50ms);
  ASSERT_VIGIL_OK(report);
  EXPECT_EQ(report->files_left.size(), 9u);
  EXPECT_EQ(log.take().size(), 1u);
}

TEST(TrialUploader, ALoggerThatThrowsChangesNothing) {
  ScratchDir staging;
  stage_trial(staging.path());
  auto store = std::make_shared<FakeStore>();
  store->fail_file(kEvent0, 1);
  UploaderOptions options;
  options.scan_interval = 10ms;
  std::atomic<int> calls = 0;
  options.log = [&](std::string_view) {
    ++calls;
    throw std::runtime_error("logger broke");
  };
  auto up = start(staging.path(), store, std::move(options));
  ASSERT_TRUE(up);
  auto report = up->finish(10s);
  ASSERT_VIGIL_OK(report);
  EXPECT_TRUE(report->complete());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(store->order().back(), kMarker);
}

TEST(TrialUploader, FilesPublishedDuringAScanKeepTheOrder) {
  ScratchDir staging;
  publish(staging.path(), kEvent0, "event 0");
  publish(staging.path(), kIndex0, "index 0");
  auto store = std::make_shared<FakeStore>();
  // While the first file is being uploaded, the writer publishes step 1 and ends the trial.
  std::atomic<bool> published = false;
  store->before_write([&](const std::string&) {
    if (published.exchange(true)) return;
    publish(staging.path(), kEvent1, "event 1");
    publish(staging.path(), kIndex1, "index 1");
    publish(staging.path(), kMarker, "");
  });
  Logged log;
  auto up = start(staging.path(), store, log.options(20ms));
  ASSERT_TRUE(up);
  auto report = up->finish(10s);
  ASSERT_VIGIL_OK(report);
  EXPECT_TRUE(report->complete());
  const auto order = store->order();
  ASSERT_EQ(order.size(), 5u);
  EXPECT_LT(position(order, kEvent0), position(order, kIndex0));
  EXPECT_LT(position(order, kEvent1), position(order, kIndex1));
  EXPECT_EQ(order.back(), kMarker);
}

// The real writer and the uploader at once: at every moment, each index in the store has its event
// file there, and the marker comes last.
TEST(TrialUploader, AWriterAtWorkNeverShowsAnIndexBeforeItsEventFile) {
  ScratchDir staging;
  auto store = std::make_shared<FakeStore>();
  std::mutex m;
  std::vector<std::string> violations;
  store->before_write([&](const std::string& rel) {
    if (rel.starts_with("index/")) {
      const std::string base = rel.substr(rel.rfind('/') + 1);
      const std::string event = "events/" + base.substr(0, 12) + "/" + base.substr(0, base.size() - 5) + ".tfevents";
      if (!store->exists(event).value_or(false)) {
        std::lock_guard lock(m);
        violations.push_back(rel);
      }
    }
  });
  Logged log;
  auto up = start(staging.path(), store, log.options(1ms));
  ASSERT_TRUE(up);
  writer::WriterOptions options;
  for (auto& mode : options.save_config) mode.save_interval = 1;
  auto w = writer::TrialWriter::create(staging.path(), std::move(options));
  ASSERT_VIGIL_OK(w);
  const std::vector<float> values{1, 2, 3};
  for (int step = 0; step < 60; ++step) {
    ASSERT_VIGIL_OK((*w)->begin_step());
    ASSERT_VIGIL_OK((*w)->save_tensor("gradient/x", test::float_data(values, {3})));
    ASSERT_VIGIL_OK((*w)->end_step());
    up->scan_now();
  }
  ASSERT_VIGIL_OK((*w)->close());
  auto report = up->finish(20s);
  ASSERT_VIGIL_OK(report);
  EXPECT_TRUE(report->complete()) << report->files_left.size();
  EXPECT_TRUE(violations.empty()) << violations.front();
  const auto order = store->order();
  ASSERT_FALSE(order.empty());
  EXPECT_EQ(order.back(), kMarker);
  EXPECT_EQ(std::count_if(order.begin(), order.end(), [](const std::string& r) { return r.starts_with("index/"); }), 60);
  EXPECT_EQ(test::list_files(staging.path()).size(), std::set<std::string>(order.begin(), order.end()).size());
}

TEST(TrialUploader, RefusesWhatIsNotAFolder) {
  ScratchDir scratch;
  auto store = std::make_shared<FakeStore>();
  EXPECT_FALSE(TrialUploader::start(scratch / "missing", store).has_value());
  EXPECT_FALSE(TrialUploader::start(scratch.path(), nullptr).has_value());
}

}  // namespace
}  // namespace vigil::writer
