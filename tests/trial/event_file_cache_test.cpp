// The trial's open event files: a rule that reads each tensor of a step from every worker in turn
// opens each of the step's W event files once, however many workers there are (up to a quarter of
// the descriptor limit), not once per tensor when W is beyond the files kept open.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <string>

#include "common/os.h"
#include "trial/event_file_cache.h"

namespace vigil {
namespace {

// A store whose objects are all empty and that counts its openings.
class OpeningCounter final : public storage::ObjectStore {
 public:
  explicit OpeningCounter(bool local = true) : local_(local) {}
  mutable std::atomic<int> opened{0};

  std::string location() const override { return "/counted"; }
  std::string describe(std::string_view rel) const override { return "/counted/" + std::string(rel); }
  bool is_local() const override { return local_; }  // local: no readahead, every opening is the reader's
  Result<std::vector<storage::ObjectInfo>> list(std::string_view, std::string_view) const override { return {}; }
  Result<bool> folder_exists(std::string_view) const override { return true; }
  Result<std::string> read(std::string_view) const override { return std::string(); }
  Result<std::shared_ptr<const storage::StoredObject>> open(std::string_view rel) const override {
    ++opened;
    return std::shared_ptr<const storage::StoredObject>(std::make_shared<Empty>(describe(rel)));
  }
  Result<bool> exists(std::string_view) const override { return true; }
  Result<void> write(std::string_view rel, std::string_view) const override {
    return fail(Error::not_supported(std::string(rel)));
  }

 private:
  bool local_;
  struct Empty final : storage::StoredObject {
    explicit Empty(std::string name) : name(std::move(name)) {}
    std::string name, etag;
    uint64_t size() const override { return 0; }
    const std::string& description() const override { return name; }
    Result<void> read_at(uint64_t, std::span<std::byte> out) const override {
      if (out.empty()) return {};
      return fail(Error::io(name, "empty"));
    }
    Result<uint64_t> current_size() const override { return 0; }
    const std::string& version() const override { return etag; }
  };
};

// Opens a step's files (one per worker) once per tensor, as a rule judging every worker does.
int openings_of_a_step(EventFileCache& cache, const OpeningCounter& store, uint32_t workers, int tensors) {
  std::vector<uint32_t> ids;
  for (uint32_t w = 0; w < workers; ++w) ids.push_back(cache.intern(fmt::format("events/000000000007/000000000007_worker_{}.tfevents", w)));
  const int before = store.opened;
  for (int t = 0; t < tensors; ++t)
    for (uint32_t id : ids) EXPECT_TRUE(cache.open(id));
  return store.opened - before;
}

TEST(EventFileCache, AStepOfManyWorkersOpensEachFileOnceWhenToldHowManyAStepHas) {
  OpeningCounter store;
  EventFileCache cache(store);
  const uint32_t workers = 3 * EventFileCache::kMinOpenFiles;
  cache.keep_open_at_least(2 * workers);
  EXPECT_EQ(openings_of_a_step(cache, store, workers, 5), int(workers));
}

TEST(EventFileCache, WithinTheDefaultBoundEachFileIsOpenedOnce) {
  OpeningCounter store;
  EventFileCache cache(store);
  EXPECT_EQ(openings_of_a_step(cache, store, EventFileCache::kMinOpenFiles, 5), int(EventFileCache::kMinOpenFiles));
}

TEST(EventFileCache, FilesKeptOpenStayWithinAQuarterOfTheDescriptorLimit) {
  OpeningCounter store;
  EventFileCache cache(store);
  EXPECT_EQ(cache.max_open_files(), EventFileCache::kMinOpenFiles);
  cache.keep_open_at_least(size_t(1) << 40);  // a hostile collections file's num_workers
  EXPECT_EQ(cache.max_open_files(), std::max(EventFileCache::kMinOpenFiles, os::open_file_limit() / 4));
  cache.keep_open_at_least(10);  // never shrinks
  EXPECT_EQ(cache.max_open_files(), std::max(EventFileCache::kMinOpenFiles, os::open_file_limit() / 4));
}

TEST(EventFileCache, AnObjectStoresOpenFilesStayWithinTheirMemoryBound) {
  OpeningCounter store(/*local=*/false);  // each open object holds its first bytes
  EventFileCache cache(store);
  cache.keep_open_at_least(2 * 100);
  EXPECT_EQ(cache.max_open_files(), 200u);
  cache.keep_open_at_least(2 * 4096);
  EXPECT_EQ(cache.max_open_files(), EventFileCache::kMaxOpenObjects);
}

}  // namespace
}  // namespace vigil
