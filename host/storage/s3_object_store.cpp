#include "storage/s3_object_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

#include "common/parallel.h"

namespace vigil::storage {
namespace {

// How much of an object opening it reads: a step's event file of small tensors whole, in the one
// request that opening costs anyway (the event-file cache keeps at most 64 files open).
constexpr uint64_t kOpenedStartBytes = 256 * 1024;

class S3StoredObject final : public StoredObject {
 public:
  S3StoredObject(std::shared_ptr<const S3Client> client, std::string bucket, std::string key, S3ObjectStart start)
      : client_(std::move(client)),
        bucket_(std::move(bucket)),
        key_(std::move(key)),
        head_(std::move(start.head)),
        start_(std::move(start.bytes)),
        description_(fmt::format("s3://{}/{}", bucket_, key_)) {}

  uint64_t size() const override { return head_.size; }
  const std::string& description() const override { return description_; }
  const std::string& version() const override { return head_.etag; }
  uint64_t bytes_held() const override { return start_.size(); }

  Result<void> read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (offset > head_.size || out.size() > head_.size - offset)
      return fail(Error::io(description_, fmt::format("{} bytes at offset {} run past the end ({} bytes when opened)",
                                                      out.size(), offset, head_.size)));
    if (offset + out.size() <= start_.size()) {  // within the bytes read when it was opened
      std::memcpy(out.data(), start_.data() + offset, out.size());
      return {};
    }
    return client_->get_range(bucket_, key_, offset, out, head_.etag);
  }

  Result<uint64_t> current_size() const override {
    auto head = client_->head_object(bucket_, key_);
    if (!head) return fail(head.error());
    if (!*head) return fail(Error::io(description_, "no such file (it was removed since it was opened)"));
    return (*head)->size;
  }

 private:
  std::shared_ptr<const S3Client> client_;
  std::string bucket_;
  std::string key_;
  S3ObjectHead head_;
  std::string start_;  // the object's first bytes, read when it was opened
  std::string description_;
};

class S3ObjectStore final : public ObjectStore {
 public:
  S3ObjectStore(S3Uri uri, std::shared_ptr<const S3Client> client) : uri_(std::move(uri)), client_(std::move(client)) {}

  std::string location() const override { return uri_.to_string(); }
  std::string describe(std::string_view relpath) const override {
    return fmt::format("s3://{}/{}", uri_.bucket, uri_.key(relpath));
  }
  bool is_local() const override { return false; }

  Result<std::vector<ObjectInfo>> list(std::string_view folder, std::string_view start_after) const override {
    // Keys under the trial's prefix start with "<prefix>/": a bare prefix would also match
    // "<prefix>-other/...", and a folder without its '/' the folders that extend its name.
    const std::string root = uri_.prefix.empty() ? std::string() : uri_.prefix + "/";
    std::string prefix = root + std::string(folder);
    if (!folder.empty() && !folder.ends_with('/')) prefix += '/';
    auto listed = client_->list_objects(uri_.bucket, prefix, start_after.empty() ? std::string() : uri_.key(start_after));
    if (!listed) return fail(listed.error());
    std::vector<ObjectInfo> out;
    out.reserve(listed->size());
    for (auto& object : *listed) {
      if (object.key.ends_with('/') || !object.key.starts_with(root)) continue;  // folder markers
      out.push_back({object.key.substr(root.size()), std::move(object.etag)});
    }
    std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.relpath < b.relpath; });
    return out;
  }

  Result<bool> folder_exists(std::string_view folder) const override {
    std::string prefix = uri_.key(folder);
    if (!prefix.empty() && !prefix.ends_with('/')) prefix += '/';
    auto listed = client_->list_objects(uri_.bucket, prefix, {}, /*max_objects=*/1);
    if (!listed) return fail(listed.error());
    return !listed->empty();
  }

  Result<std::string> read(std::string_view relpath) const override {
    return client_->get_object(uri_.bucket, uri_.key(relpath));
  }

  // Each file one GET, as read() makes it; kMaxReadsInFlight of them at once, each on a thread
  // of its own (the client is thread safe and keeps a connection per handle).
  std::vector<Result<std::string>> read_many(std::span<const std::string> relpaths) const override {
    std::vector<std::optional<Result<std::string>>> got(relpaths.size());
    for_each_in_parallel(relpaths.size(), kMaxReadsInFlight, [&](size_t i) {
      try {
        got[i].emplace(read(relpaths[i]));
      } catch (const std::bad_alloc&) {
        got[i].emplace(fail(Error::io(describe(relpaths[i]), "out of memory")));
      }
    });
    std::vector<Result<std::string>> out;
    out.reserve(got.size());
    for (auto& r : got) out.push_back(std::move(*r));
    return out;
  }

  Result<std::shared_ptr<const StoredObject>> open(std::string_view relpath) const override {
    std::string key = uri_.key(relpath);
    // One request: the first bytes tell the size and ETag, and hold every record of a small file.
    auto start = client_->get_start(uri_.bucket, key, kOpenedStartBytes);
    if (!start) return fail(start.error());
    if (!*start) return fail(Error::io(describe(relpath), "no such file"));
    return std::make_shared<const S3StoredObject>(client_, uri_.bucket, std::move(key), std::move(**start));
  }

  Result<bool> exists(std::string_view relpath) const override {
    auto head = client_->head_object(uri_.bucket, uri_.key(relpath));
    if (!head) return fail(head.error());
    return head->has_value();
  }

  Result<void> write(std::string_view relpath, std::string_view bytes) const override {
    return client_->put_object(uri_.bucket, uri_.key(relpath), bytes);
  }

  S3Stats stats() const { return client_->stats(); }

 private:
  S3Uri uri_;
  std::shared_ptr<const S3Client> client_;
};

}  // namespace

Result<std::shared_ptr<ObjectStore>> open_s3_store(const S3Uri& uri, S3Config config) {
  auto client = S3Client::create(std::move(config));
  if (!client) return fail(client.error());
  return std::make_shared<S3ObjectStore>(uri, std::move(*client));
}

std::optional<S3Stats> s3_stats(const ObjectStore& store) {
  const ObjectStore* inner = &store;
  while (inner->wrapped() != nullptr) inner = inner->wrapped();
  const auto* s3 = dynamic_cast<const S3ObjectStore*>(inner);
  if (s3 == nullptr) return std::nullopt;
  return s3->stats();
}

}  // namespace vigil::storage
