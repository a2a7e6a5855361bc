// S3's XML documents, parsed without libcurl (and fuzzed: fuzz/s3_listing_fuzzer.cpp): the text of
// an element, and a ListObjectsV2 page. The documents come from the endpoint, which is not trusted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace vigil::storage {

struct S3ListedObject {
  std::string key;
  uint64_t size = 0;
  std::string etag;
};

struct S3ListingPage {
  std::vector<S3ListedObject> objects;
  bool truncated = false;  // IsTruncated: more pages follow
  std::string next_token;  // NextContinuationToken
};

// The text of the first <tag>…</tag> in `xml`, unescaped (&amp; and the others, &#…; as UTF-8).
// S3's documents are flat enough (and escape every '<' in values) for a search to find the element.
[[nodiscard]] std::optional<std::string> xml_text(std::string_view xml, std::string_view tag);

// One ListObjectsV2 result; InvalidArgument (saying what is wrong) when it is not one, is cut
// short, or lists an object without a Key or a Size.
[[nodiscard]] Result<S3ListingPage> parse_list_objects_v2(std::string_view xml);

}  // namespace vigil::storage
