#include "storage/s3_uri.h"

#include <fmt/format.h>

namespace vigil::storage {
namespace {

constexpr std::string_view kScheme = "s3://";

bool bucket_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'; }
bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

std::string S3Uri::to_string() const { return prefix.empty() ? fmt::format("s3://{}", bucket) : fmt::format("s3://{}/{}", bucket, prefix); }

std::string S3Uri::key(std::string_view relpath) const {
  if (prefix.empty()) return std::string(relpath);
  if (relpath.empty()) return prefix;
  return fmt::format("{}/{}", prefix, relpath);
}

std::string url_without_userinfo(std::string_view url) {
  const size_t at = url.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  const size_t scheme_end = url.find("://");
  const size_t start = scheme_end == std::string_view::npos || scheme_end > at ? 0 : scheme_end + 3;
  return fmt::format("{}***{}", url.substr(0, start), url.substr(at));
}

bool is_s3_uri(std::string_view text) { return text.starts_with(kScheme); }

Result<S3Uri> parse_s3_uri(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(Error::invalid_argument(fmt::format("'{}' is not an S3 location: {}", url_without_userinfo(text), why)));
  };
  if (!is_s3_uri(text)) return bad("it does not start with s3://");
  std::string_view rest = text.substr(kScheme.size());
  const size_t slash = rest.find('/');
  const std::string_view bucket = rest.substr(0, slash);
  std::string_view prefix = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
  if (bucket.size() < 3 || bucket.size() > 63) return bad("a bucket name has 3 to 63 characters");
  for (char c : bucket)
    if (!bucket_char(c)) return bad("a bucket name holds only lowercase letters, digits, '.' and '-'");
  if (!alnum(bucket.front()) || !alnum(bucket.back())) return bad("a bucket name starts and ends with a letter or digit");
  if (bucket.find("..") != std::string_view::npos) return bad("a bucket name has no two adjacent periods");
  if (prefix.ends_with('/')) prefix.remove_suffix(1);
  if (!prefix.empty()) {
    size_t start = 0;
    while (start <= prefix.size()) {
      size_t end = prefix.find('/', start);
      if (end == std::string_view::npos) end = prefix.size();
      const std::string_view segment = prefix.substr(start, end - start);
      if (segment.empty() || segment == "." || segment == "..")
        return bad("the key prefix has an empty, '.' or '..' segment");
      start = end + 1;
    }
    if (prefix.find('\0') != std::string_view::npos) return bad("the key prefix holds a NUL byte");
  }
  return S3Uri{std::string(bucket), std::string(prefix)};
}

}  // namespace vigil::storage
