// A ListObjectsV2 page from the endpoint (host/storage/s3_xml.*): the input is the response body, as
// an untrusted S3-compatible endpoint may send it. Accepted or refused with a message, never more
// objects than the body could describe, and every listed key unescaped from text that was there.
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "storage/s3_xml.h"

using namespace vigil;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  auto page = storage::parse_list_objects_v2(xml);
  if (!page) {
    FUZZ_CHECK(!page.error().message.empty());
    return 0;
  }
  // Each object is a "<Contents>" of its own: the list can be no longer than the body allows.
  FUZZ_CHECK(page->objects.size() * std::string_view("<Contents>").size() <= size);
  for (const auto& object : page->objects) {
    FUZZ_CHECK(object.key.size() <= size);  // unescaping never makes text longer
    FUZZ_CHECK(object.etag.size() <= size);
  }
  FUZZ_CHECK(page->next_token.size() <= size);
  return 0;
}
