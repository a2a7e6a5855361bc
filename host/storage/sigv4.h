// AWS Signature Version 4 (the request signing S3 and every AWS API take): canonical request,
// string to sign, signing key and the Authorization header. Pure computation: no clock, no I/O, so
// the published examples are reproduced exactly by the tests.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vigil::storage {

// The hex SHA-256 of an empty payload (x-amz-content-sha256 of a GET).
inline constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

[[nodiscard]] std::array<uint8_t, 32> hmac_sha256(std::string_view key, std::string_view message);
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters stay, every other byte is %XX
// (uppercase); '/' stays only when `keep_slash` (an object key in a path).
[[nodiscard]] std::string uri_encode(std::string_view text, bool keep_slash);

struct SigningKeyParts {
  std::string access_key_id;
  std::string secret_access_key;
  std::string region;   // "us-east-1"
  std::string service;  // "s3"
};

struct RequestToSign {
  std::string method;                                         // "GET"
  std::string path;                                           // already encoded, as sent ("/bucket/a%20b")
  std::vector<std::pair<std::string, std::string>> query;     // decoded names and values
  std::vector<std::pair<std::string, std::string>> headers;   // every header that is signed (host included)
  std::string payload_sha256;                                 // hex, or "UNSIGNED-PAYLOAD"
};

struct Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  // "host;range;x-amz-content-sha256;x-amz-date"
  std::string signature;       // hex
  std::string authorization;   // the Authorization header's value
};

// `amz_date`: "YYYYMMDDTHHMMSSZ", the same value the request carries in x-amz-date.
[[nodiscard]] Signature sign_v4(const RequestToSign& request, const SigningKeyParts& key, std::string_view amz_date);

}  // namespace vigil::storage
