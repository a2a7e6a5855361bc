// The object cache in front of a remote store: reads keyed by object and version, a size budget.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <mutex>

#include "storage/object_cache.h"
#include "test_support.h"

namespace vigil::storage {
namespace {

// A remote store in memory that counts what it is asked.
class CountingStore final : public ObjectStore {
 public:
  struct Object {
    std::string bytes;
    std::string etag;
  };
  std::map<std::string, Object> objects;
  mutable int reads = 0, range_reads = 0;
  uint64_t held_on_open = 0;  // the first bytes an opened object holds, as S3's opening GET brings them

  std::string location() const override { return "s3://fake/trial"; }
  std::string describe(std::string_view rel) const override { return "s3://fake/trial/" + std::string(rel); }
  bool is_local() const override { return false; }
  Result<std::vector<ObjectInfo>> list(std::string_view, std::string_view) const override {
    std::vector<ObjectInfo> out;
    for (const auto& [rel, o] : objects) out.push_back({rel, o.etag});
    return out;
  }
  Result<std::string> read(std::string_view rel) const override {
    ++reads;
    auto it = objects.find(std::string(rel));
    if (it == objects.end()) return fail(Error::io(describe(rel), "no such file"));
    return it->second.bytes;
  }
  Result<std::shared_ptr<const StoredObject>> open(std::string_view rel) const override {
    return std::shared_ptr<const StoredObject>(std::make_shared<Opened>(this, std::string(rel)));
  }
  Result<bool> exists(std::string_view rel) const override { return objects.contains(std::string(rel)); }
  Result<bool> folder_exists(std::string_view folder) const override {
    return std::any_of(objects.begin(), objects.end(), [&](const auto& o) { return o.first.starts_with(folder); });
  }
  Result<void> write(std::string_view rel, std::string_view bytes) const override {
    return fail(Error::not_supported(std::string(rel) + std::string(bytes.substr(0, 0))));
  }

 private:
  struct Opened final : StoredObject {
    Opened(const CountingStore* s, std::string rel)
        : store(s), rel(rel), name(s->describe(rel)), etag(s->objects.at(rel).etag) {}
    const CountingStore* store;
    std::string rel, name, etag;
    uint64_t size() const override { return store->objects.at(rel).bytes.size(); }
    const std::string& description() const override { return name; }
    const std::string& version() const override { return etag; }
    Result<uint64_t> current_size() const override { return size(); }
    uint64_t bytes_held() const override { return std::min<uint64_t>(store->held_on_open, size()); }
    Result<void> read_at(uint64_t offset, std::span<std::byte> out) const override {
      if (offset + out.size() > bytes_held()) ++store->range_reads;  // a request
      const std::string& b = store->objects.at(rel).bytes;
      std::copy_n(reinterpret_cast<const std::byte*>(b.data()) + offset, out.size(), out.data());
      return {};
    }
  };
};

struct Cached {
  std::shared_ptr<CountingStore> remote = std::make_shared<CountingStore>();
  std::shared_ptr<ObjectStore> store;
  Cached(const std::filesystem::path& folder, uint64_t budget) {
    store = with_cache(remote, CacheOptions{.folder = folder, .max_bytes = budget});
  }
};

TEST(ObjectCache, AListedFileIsReadFromTheStoreOnceThenFromDiskEvenByANewProcess) {
  test::ScratchDir dir;
  Cached first(dir.path(), 1 << 20);
  first.remote->objects["index/000000000/000000000001_worker_0.json"] = {"{\"a\": 1}", "\"e1\""};
  ASSERT_TRUE(first.store->list("index/", ""));
  EXPECT_EQ(*first.store->read("index/000000000/000000000001_worker_0.json"), "{\"a\": 1}");
  EXPECT_EQ(*first.store->read("index/000000000/000000000001_worker_0.json"), "{\"a\": 1}");
  EXPECT_EQ(first.remote->reads, 1);

  Cached second(dir.path(), 1 << 20);  // another store on the same cache: a new process
  second.remote->objects = first.remote->objects;
  ASSERT_TRUE(second.store->list("index/", ""));
  EXPECT_EQ(*second.store->read("index/000000000/000000000001_worker_0.json"), "{\"a\": 1}");
  EXPECT_EQ(second.remote->reads, 0);
  EXPECT_EQ(cache_stats(*second.store)->hits, 1u);
}

// Issue 29: a trial's index files are read many at once; those listed and cached come from disk,
// the others from the store, each answer its own (a missing file loses none of the others).
TEST(ObjectCache, ReadManyTakesWhatItHoldsFromDiskAndTheRestFromTheStoreEachOnItsOwn) {
  test::ScratchDir dir;
  Cached c(dir.path(), 1 << 20);
  c.remote->objects["index/000000000/000000000001_worker_0.json"] = {"one", "\"e1\""};
  c.remote->objects["index/000000000/000000000002_worker_0.json"] = {"two", "\"e2\""};
  ASSERT_TRUE(c.store->list("index/", ""));
  ASSERT_TRUE(c.store->read("index/000000000/000000000001_worker_0.json"));
  ASSERT_EQ(c.remote->reads, 1);
  const std::vector<std::string> names = {"index/000000000/000000000001_worker_0.json",
                                          "index/000000000/000000000009_worker_0.json",  // not there
                                          "index/000000000/000000000002_worker_0.json"};
  auto got = c.store->read_many(names);
  ASSERT_EQ(got.size(), 3u);
  ASSERT_VIGIL_OK(got[0]);
  EXPECT_EQ(*got[0], "one");
  ASSERT_FALSE(got[1]);
  EXPECT_NE(got[1].error().message.find("000000000009_worker_0.json"), std::string::npos) << got[1].error().message;
  ASSERT_VIGIL_OK(got[2]);
  EXPECT_EQ(*got[2], "two");
  EXPECT_EQ(c.remote->reads, 3);  // the first came from disk
  auto again = c.store->read_many(names);
  EXPECT_EQ(*again[0], "one");
  EXPECT_EQ(*again[2], "two");
  EXPECT_EQ(c.remote->reads, 4);  // only the missing one is asked for again
}

// Issue 28, item 12: cached trial data is the user's own. The folder is made 0700 (and one already
// there, readable by others, is closed) and its files 0600, whatever the umask lets through.
TEST(ObjectCache, TheCacheIsReadableByItsOwnerOnly) {
  test::ScratchDir dir;
  const mode_t old_umask = ::umask(0);  // the most permissive umask: the modes must come from the cache
  const std::filesystem::path made = dir.path() / "made" / "objects";
  const std::filesystem::path open_before = dir.path() / "open";
  ASSERT_EQ(::mkdir(open_before.c_str(), 0755), 0);
  for (const auto& folder : {made, open_before}) {
    Cached cached(folder, 1 << 20);
    cached.remote->objects["index/a.json"] = {"{\"secret\": 1}", "\"e1\""};
    ASSERT_TRUE(cached.store->list("index/", ""));
    ASSERT_TRUE(cached.store->read("index/a.json"));
    struct stat st {};
    ASSERT_EQ(::stat(folder.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u) << folder;
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      ASSERT_EQ(::stat(entry.path().c_str(), &st), 0);
      EXPECT_EQ(st.st_mode & 077, 0u) << entry.path();
      ++files;
    }
    EXPECT_EQ(files, 1) << folder;  // the read was cached: the modes above were checked on a real file
  }
  ::umask(old_umask);
}

TEST(ObjectCache, ANewVersionIsReadAgainAndAnUnlistedFileIsNeverCached) {
  test::ScratchDir dir;
  Cached c(dir.path(), 1 << 20);
  c.remote->objects["collections/000000000/worker_0_collections.json"] = {"old", "\"v1\""};
  ASSERT_TRUE(c.store->list("", ""));
  EXPECT_EQ(*c.store->read("collections/000000000/worker_0_collections.json"), "old");
  c.remote->objects["collections/000000000/worker_0_collections.json"] = {"new", "\"v2\""};
  ASSERT_TRUE(c.store->list("", ""));
  EXPECT_EQ(*c.store->read("collections/000000000/worker_0_collections.json"), "new");
  EXPECT_EQ(c.remote->reads, 2);

  c.remote->objects["training_job_end.ts"] = {"", "\"m\""};  // not listed since: read through
  EXPECT_TRUE(c.store->read("training_job_end.ts"));
  EXPECT_TRUE(c.store->read("training_job_end.ts"));
  EXPECT_EQ(c.remote->reads, 4);
}

TEST(ObjectCache, RangesAreKeyedByVersionOffsetAndLength) {
  test::ScratchDir dir;
  Cached c(dir.path(), 1 << 20);
  c.remote->objects["events/a.tfevents"] = {"0123456789", "\"v1\""};
  auto object = c.store->open("events/a.tfevents");
  ASSERT_TRUE(object);
  std::array<std::byte, 4> out{};
  ASSERT_TRUE((*object)->read_at(2, out));
  ASSERT_TRUE((*object)->read_at(2, out));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), 4), "2345");
  EXPECT_EQ(c.remote->range_reads, 1);
  std::array<std::byte, 3> shorter{};
  ASSERT_TRUE((*object)->read_at(2, shorter));
  EXPECT_EQ(c.remote->range_reads, 2);

  c.remote->objects["events/a.tfevents"] = {"abcdefghij", "\"v2\""};
  auto reopened = c.store->open("events/a.tfevents");
  ASSERT_TRUE((*reopened)->read_at(2, out));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), 4), "cdef");
  EXPECT_EQ(c.remote->range_reads, 3);
}

// s3client: what the opening GET brought is read from memory; only the ranges past it (a request
// each) are kept on disk. A scan of small event files stored a file per record before.
TEST(ObjectCache, RangesWithinWhatTheOpenedObjectHoldsAreNotCached) {
  test::ScratchDir dir;
  Cached c(dir.path(), 1 << 20);
  c.remote->held_on_open = 6;
  c.remote->objects["events/a.tfevents"] = {"0123456789", "\"v1\""};
  auto object = c.store->open("events/a.tfevents");
  ASSERT_TRUE(object);
  EXPECT_EQ((*object)->bytes_held(), 6u);
  std::array<std::byte, 4> out{};
  ASSERT_TRUE((*object)->read_at(2, out));  // bytes 2-5: held
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), 4), "2345");
  EXPECT_EQ(cache_stats(*c.store)->misses, 0u);
  EXPECT_EQ(cache_stats(*c.store)->bytes_stored, 0u);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  ASSERT_TRUE((*object)->read_at(3, out));  // bytes 3-6: one past what is held, a request, kept
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), 4), "3456");
  EXPECT_EQ(c.remote->range_reads, 1);
  EXPECT_EQ(cache_stats(*c.store)->bytes_stored, 4u);
  ASSERT_TRUE((*object)->read_at(3, out));
  EXPECT_EQ(c.remote->range_reads, 1);
}

TEST(ObjectCache, StaysWithinItsBudgetByDroppingTheLeastRecentlyUsed) {
  test::ScratchDir dir;
  constexpr uint64_t kBudget = 40'000;
  Cached c(dir.path(), kBudget);
  for (int i = 0; i < 40; ++i)
    c.remote->objects[fmt::format("index/000000000/{:012d}_worker_0.json", i)] = {std::string(5'000, char('a' + i % 26)),
                                                                                 fmt::format("\"e{}\"", i)};
  ASSERT_TRUE(c.store->list("index/", ""));
  for (const auto& [rel, o] : c.remote->objects) ASSERT_EQ(*c.store->read(rel), o.bytes);
  const CacheStats stats = *cache_stats(*c.store);
  EXPECT_LE(stats.bytes_stored, kBudget);
  EXPECT_GT(stats.evictions, 0u);
  uint64_t on_disk = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) on_disk += f.file_size();
  EXPECT_LE(on_disk, kBudget);
  // The newest file is still there; the oldest was dropped.
  const int before = c.remote->reads;
  EXPECT_TRUE(c.store->read("index/000000000/000000000039_worker_0.json"));
  EXPECT_EQ(c.remote->reads, before);
  EXPECT_TRUE(c.store->read("index/000000000/000000000000_worker_0.json"));
  EXPECT_EQ(c.remote->reads, before + 1);
}

}  // namespace
}  // namespace vigil::storage
