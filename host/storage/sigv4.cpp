#include "storage/sigv4.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "common/sha256.h"
#include <vigil/sdk/text.hpp>

namespace vigil::storage {
namespace {

constexpr size_t kShaBlock = 64;

std::string_view as_view(const std::array<uint8_t, 32>& digest) {
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

// Trims both ends and folds runs of spaces to one, as the canonical headers require.
std::string canonical_header_value(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::array<uint8_t, 32> hmac_sha256(std::string_view key, std::string_view message) {
  std::array<uint8_t, kShaBlock> block{};
  if (key.size() > kShaBlock) {
    Sha256 h;
    h.update(key.data(), key.size());
    const auto d = h.finish();
    std::copy(d.begin(), d.end(), block.begin());
  } else {
    std::copy(key.begin(), key.end(), block.begin());
  }
  std::array<uint8_t, kShaBlock> inner_pad{}, outer_pad{};
  for (size_t i = 0; i < kShaBlock; ++i) {
    inner_pad[i] = uint8_t(block[i] ^ 0x36);
    outer_pad[i] = uint8_t(block[i] ^ 0x5c);
  }
  Sha256 inner;
  inner.update(inner_pad.data(), inner_pad.size());
  inner.update(message.data(), message.size());
  const auto inner_digest = inner.finish();
  Sha256 outer;
  outer.update(outer_pad.data(), outer_pad.size());
  outer.update(inner_digest.data(), inner_digest.size());
  return outer.finish();
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.finish_hex();
}

std::string uri_encode(std::string_view text, bool keep_slash) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '_' || c == '.' || c == '~';
    if (unreserved || (keep_slash && c == '/'))
      out += char(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

Signature sign_v4(const RequestToSign& request, const SigningKeyParts& key, std::string_view amz_date) {
  Signature out;
  // Query: names and values encoded, then sorted by name, then value.
  std::vector<std::pair<std::string, std::string>> query;
  for (const auto& [k, v] : request.query) query.emplace_back(uri_encode(k, false), uri_encode(v, false));
  std::sort(query.begin(), query.end());
  std::string canonical_query;
  for (const auto& [k, v] : query) {
    if (!canonical_query.empty()) canonical_query += '&';
    canonical_query += k + "=" + v;
  }
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [k, v] : request.headers) headers.emplace_back(sdk::lower(k), canonical_header_value(v));
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers;
  for (const auto& [k, v] : headers) {
    canonical_headers += k + ":" + v + "\n";
    if (!out.signed_headers.empty()) out.signed_headers += ';';
    out.signed_headers += k;
  }
  out.canonical_request = fmt::format("{}\n{}\n{}\n{}\n{}\n{}", request.method, request.path.empty() ? "/" : request.path,
                                      canonical_query, canonical_headers, out.signed_headers, request.payload_sha256);
  const std::string_view date = amz_date.substr(0, 8);
  const std::string scope = fmt::format("{}/{}/{}/aws4_request", date, key.region, key.service);
  out.string_to_sign = fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope, sha256_hex(out.canonical_request));
  const auto k_date = hmac_sha256("AWS4" + key.secret_access_key, date);
  const auto k_region = hmac_sha256(as_view(k_date), key.region);
  const auto k_service = hmac_sha256(as_view(k_region), key.service);
  const auto k_signing = hmac_sha256(as_view(k_service), "aws4_request");
  out.signature = digest_hex(hmac_sha256(as_view(k_signing), out.string_to_sign));
  out.authorization = fmt::format("AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}",
                                  key.access_key_id, scope, out.signed_headers, out.signature);
  return out;
}

}  // namespace vigil::storage
