// Where a trial's files live: a local folder or an S3 prefix, behind one interface, so the trial,
// the profiler trial and the uploader read and write both the same way. Every name is a path
// relative to the trial root ("index/000000000/000000000007_worker_0.json"); messages name the
// whole location (describe()), never credentials.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace vigil::storage {

// One listed file. No size: no reader needs it, and a local folder would pay a system call per file
// for it (StoredObject::size gives it once the file is opened).
struct ObjectInfo {
  std::string relpath;  // relative to the trial root, '/'-separated
  std::string etag;     // S3's ETag (quotes kept); local: empty
};

// One object, opened once: its size and version are fixed at opening (S3: one HEAD, and every read
// asks for that ETag with If-Match; local: an open descriptor). Reads may come from many threads.
class StoredObject {
 public:
  virtual ~StoredObject() = default;
  virtual uint64_t size() const = 0;                  // at opening
  virtual const std::string& description() const = 0;  // "/data/trial/events/…" or "s3://b/p/events/…"
  // Exactly out.size() bytes at `offset`: Io when fewer come (a short body is never taken),
  // Corrupt when the object changed since it was opened.
  [[nodiscard]] virtual Result<void> read_at(uint64_t offset, std::span<std::byte> out) const = 0;
  // The size now, for a writer that appends (local: fstat; S3: HEAD).
  [[nodiscard]] virtual Result<uint64_t> current_size() const = 0;
  // The version read_at reads (S3: the ETag); empty when the store has none (local files).
  virtual const std::string& version() const = 0;
  // How many of the object's first bytes it holds in memory since it was opened (S3: those of the
  // opening GET): reads within them cost no request, so a cache in front keeps none of them.
  virtual uint64_t bytes_held() const { return 0; }
};

class ObjectStore {
 public:
  // The most requests read_many keeps in flight.
  static constexpr size_t kMaxReadsInFlight = 32;

  virtual ~ObjectStore() = default;
  // The location as the user named it: "/data/trial" or "s3://bucket/prefix".
  virtual std::string location() const = 0;
  // The full name of one file, for messages.
  virtual std::string describe(std::string_view relpath) const = 0;
  virtual bool is_local() const = 0;
  // The store this one adds to (a cache in front of S3), or nullptr.
  virtual const ObjectStore* wrapped() const { return nullptr; }

  // Files under `folder` ("index/", "collections/", "" for all), at any depth, sorted by relpath,
  // only those sorting after `start_after` when it is not empty. A missing folder lists nothing.
  [[nodiscard]] virtual Result<std::vector<ObjectInfo>> list(std::string_view folder,
                                                             std::string_view start_after = {}) const = 0;
  // Whether `folder` ("profiler-output/") exists: a local folder, or an S3 prefix with any key under
  // it (S3 has no folders). One request of an object store, however much is under it.
  [[nodiscard]] virtual Result<bool> folder_exists(std::string_view folder) const = 0;
  // The whole file. A missing file is an Io error ("no such file"); `exists` is the test for that.
  [[nodiscard]] virtual Result<std::string> read(std::string_view relpath) const = 0;
  // Many whole files: out[i] is what read(relpaths[i]) gives, each its own Result (one failure
  // loses none of the others). An object store keeps several requests in flight, at most
  // kMaxReadsInFlight; a local folder reads the files in turn.
  [[nodiscard]] virtual std::vector<Result<std::string>> read_many(std::span<const std::string> relpaths) const {
    std::vector<Result<std::string>> out;
    out.reserve(relpaths.size());
    for (const auto& relpath : relpaths) out.push_back(read(relpath));
    return out;
  }
  [[nodiscard]] virtual Result<std::shared_ptr<const StoredObject>> open(std::string_view relpath) const = 0;
  [[nodiscard]] virtual Result<bool> exists(std::string_view relpath) const = 0;
  // Writes the whole file (S3: one PUT with its CRC32C; local: a published file, renamed into place).
  [[nodiscard]] virtual Result<void> write(std::string_view relpath, std::string_view bytes) const = 0;
};

// The store a trial location names: "s3://bucket/prefix" (credentials, region and endpoint from the
// environment as AWS tools find them: s3_config.h) or a local folder. A local folder must exist
// unless `create`.
[[nodiscard]] Result<std::shared_ptr<ObjectStore>> open_object_store(std::string_view location, bool create = false);

}  // namespace vigil::storage
