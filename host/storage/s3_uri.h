// s3://bucket/prefix URIs: where a trial lives in an object store (sagemaker-api §3: a job's
// debug-output and profiler-output sit under <S3OutputPath>/<job>/).
#pragma once

#include <string>
#include <string_view>

#include "common/error.h"

namespace vigil::storage {

struct S3Uri {
  std::string bucket;
  std::string prefix;  // the key prefix, without a leading or trailing '/'; empty for a whole bucket

  // "s3://bucket/prefix": the form errors and messages name it by.
  [[nodiscard]] std::string to_string() const;
  // The full key of `relpath` (a path relative to the prefix).
  [[nodiscard]] std::string key(std::string_view relpath) const;
};

[[nodiscard]] bool is_s3_uri(std::string_view text);

// Parses "s3://bucket[/prefix[/]]". Bucket names follow S3's rules for new buckets (3 to 63 of
// lowercase letters, digits, '.' and '-', starting and ending with a letter or digit); the prefix
// may not hold empty, "." or ".." segments, so that it names one place.
[[nodiscard]] Result<S3Uri> parse_s3_uri(std::string_view text);

// `url` as a message may show it: a user name and password ("scheme://user:password@host") become
// "***", wherever the '@' is (a password may hold '/', and a text may lack the scheme).
[[nodiscard]] std::string url_without_userinfo(std::string_view url);

}  // namespace vigil::storage
