// The per-step index JSON (host/format/index_json.*): the input is an index file's text.
#include <cstdint>
#include <string_view>

#include "format/index_json.h"
#include "fuzz_check.h"

using namespace vigil::format;

namespace {

bool same(const StepIndex& a, const StepIndex& b) {
  if (a.mode != b.mode || a.mode_step != b.mode_step || a.event_file_name != b.event_file_name) return false;
  if (a.tensor_payload.size() != b.tensor_payload.size() || a.shape_payload.size() != b.shape_payload.size())
    return false;
  for (size_t i = 0; i < a.tensor_payload.size(); ++i) {
    const auto &x = a.tensor_payload[i], &y = b.tensor_payload[i];
    if (x.tensorname != y.tensorname || x.start_idx != y.start_idx || x.length != y.length) return false;
  }
  for (size_t i = 0; i < a.shape_payload.size(); ++i) {
    const auto &x = a.shape_payload[i], &y = b.shape_payload[i];
    if (x.tensorname != y.tensorname || x.originalname != y.originalname || x.shape != y.shape) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The one-pass reader of smdebug's layout accepts nothing the full parser refuses or reads otherwise.
  if (auto canonical = parse_canonical_index_json(text)) {
    auto generic = parse_index_json_generic(text, "fuzz.json");
    FUZZ_CHECK(generic.has_value());
    FUZZ_CHECK(same(*canonical, *generic));
  }
  auto index = parse_index_json(text, "fuzz.json");
  if (!index) {
    FUZZ_CHECK(!index.error().message.empty());
    return 0;
  }
  // What was accepted must never point outside the trial: relative, and no ".." component.
  if (index->event_file_name) {
    const std::string& name = *index->event_file_name;
    FUZZ_CHECK(!name.empty() && name.front() != '/');
    FUZZ_CHECK(name != ".." && !name.starts_with("../") && !name.ends_with("/..") &&
               name.find("/../") == std::string::npos);
  }
  // The writer's serialisation of an accepted index reads back to the same index.
  auto again = parse_index_json(serialize_index_json(*index), "fuzz.json");
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(same(*index, *again));
  return 0;
}
