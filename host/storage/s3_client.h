// The S3 REST calls a trial needs (ListObjectsV2, GET whole or ranged, HEAD, PUT) over libcurl
// (loaded when the first client is made: storage/curl_library.h),
// each signed with SigV4, retried with full-jitter backoff on throttling, server errors, broken
// connections and short bodies, and bounded in time. Every error names the s3:// object and never
// a credential or a signature. Thread safe: calls may come from many threads at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "storage/s3_config.h"
#include "storage/s3_xml.h"

namespace vigil::storage {

struct CurlLibrary;  // storage/curl_library.h

struct S3ObjectHead {
  uint64_t size = 0;
  std::string etag;  // quotes kept, as S3 sends it
};

// The first bytes of an object, with what a HEAD would say of it.
struct S3ObjectStart {
  S3ObjectHead head;
  std::string bytes;  // the first min(size, max_bytes) bytes
};

// What the client did, counted over its life: requests are HTTP requests sent, retries included.
struct S3Stats {
  uint64_t list_requests = 0;
  uint64_t get_requests = 0;    // whole-object GETs
  uint64_t range_requests = 0;  // ranged GETs
  uint64_t head_requests = 0;
  uint64_t put_requests = 0;
  uint64_t retries = 0;         // requests sent again after a retryable failure
  uint64_t bytes_received = 0;  // response bodies
  uint64_t bytes_sent = 0;      // request bodies

  [[nodiscard]] uint64_t requests() const {
    return list_requests + get_requests + range_requests + head_requests + put_requests;
  }
};

// Every response body is bounded before it is held (docs/object-storage.md, "Limits"): a hostile
// endpoint cannot grow the process (the uploader runs inside training).
inline constexpr uint64_t kWholeObjectLimit = uint64_t(1) << 30;      // a whole-object GET
inline constexpr size_t kListPageLimit = size_t(16) << 20;            // one ListObjectsV2 page
inline constexpr uint64_t kListingBytesLimit = uint64_t(1) << 30;     // the pages of one listing together
inline constexpr size_t kSmallBodyLimit = size_t(64) << 10;           // any other body (PUT, HEAD, errors)

class S3Client {
 public:
  // Fails (InvalidArgument) when the configuration's endpoint is not a usable URL.
  [[nodiscard]] static Result<std::shared_ptr<S3Client>> create(S3Config config);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  // Every object whose key starts with `prefix` and sorts after `start_after` (when not empty),
  // in S3's order (byte order of the keys), all pages; only the first `max_objects` when that is not
  // 0 (a number within one page is one request). Io past the configuration's page and time limits,
  // or past kListingBytesLimit of listing documents.
  [[nodiscard]] Result<std::vector<S3ListedObject>> list_objects(std::string_view bucket, std::string_view prefix,
                                                                 std::string_view start_after = {},
                                                                 size_t max_objects = 0) const;
  // The whole object; a missing one is an Io error "no such file", one larger than `max_bytes` an Io
  // error (the transfer stops there: the body is never held past the bound).
  [[nodiscard]] Result<std::string> get_object(std::string_view bucket, std::string_view key,
                                               uint64_t max_bytes = kWholeObjectLimit) const;
  // Exactly out.size() bytes at `offset` (a 206 whose Content-Range is the range asked for, and all
  // of it), or Io. With `if_match_etag`, Corrupt when the object is no longer that version.
  [[nodiscard]] Result<void> get_range(std::string_view bucket, std::string_view key, uint64_t offset,
                                       std::span<std::byte> out, std::string_view if_match_etag = {}) const;
  // One GET of the first `max_bytes` bytes (Range: bytes=0-…), which also gives the object's size
  // (Content-Range) and ETag: an object opened this way costs one request, and a small one is then
  // whole. nullopt when there is no such object.
  [[nodiscard]] Result<std::optional<S3ObjectStart>> get_start(std::string_view bucket, std::string_view key,
                                                               uint64_t max_bytes) const;
  // Size and ETag; nullopt when there is no such object.
  [[nodiscard]] Result<std::optional<S3ObjectHead>> head_object(std::string_view bucket, std::string_view key) const;
  // One PUT, carrying the payload's SHA-256 (signed) and CRC32C (x-amz-checksum-crc32c, which S3 checks).
  [[nodiscard]] Result<void> put_object(std::string_view bucket, std::string_view key, std::string_view bytes) const;

  [[nodiscard]] S3Stats stats() const;
  [[nodiscard]] const S3Config& config() const { return config_; }

  // The implementation's own (s3_client.cpp), declared here so that its helpers can name them.
  struct Request;
  struct Response;
  enum class Kind { List, Get, Range, Head, Put };

 private:
  S3Client(S3Config config, S3Endpoint endpoint, const CurlLibrary& curl);
  // Sends `request` until it gets an answer that is not worth retrying (returned, whatever its
  // status), or fails with the last retryable failure once attempts or time run out.
  [[nodiscard]] Result<Response> execute(const Request& request) const;
  [[nodiscard]] void* take_handle() const;
  void return_handle(void* handle) const;

  S3Config config_;
  S3Endpoint endpoint_;
  const CurlLibrary* curl_;  // loaded by create(), kept for the process (storage/curl_library.h)
  // Idle easy handles, kept for their open connections (keep-alive) between calls.
  mutable std::mutex pool_mutex_;
  mutable std::vector<void*> pool_;

  struct Counters {
    std::atomic<uint64_t> list{0}, get{0}, range{0}, head{0}, put{0}, retries{0}, received{0}, sent{0};
  };
  mutable Counters counters_;
};

}  // namespace vigil::storage
