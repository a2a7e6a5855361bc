// The collections JSON (host/format/collections_json.*): the input is a collections file's text.
#include <cstdint>
#include <string_view>

#include "format/collections_json.h"
#include "fuzz_check.h"

using namespace vigil::format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto file = parse_collections_json(text, "fuzz_collections.json");
  if (!file) {
    FUZZ_CHECK(!file.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(file->num_workers >= 1);
  for (const auto& c : file->collections) {
    if (!c.save_config) continue;
    // Every step number is a valid question, including the extremes.
    for (const auto& mode : *c.save_config)
      if (mode)
        for (int64_t step : {INT64_MIN, int64_t(-1), int64_t(0), int64_t(1), int64_t(7), INT64_MAX})
          (void)mode->should_save_step(step);
  }
  // The writer's serialisation of an accepted file must be accepted again, with the same collections.
  // (Values are not compared: smdebug's `int(x or default)` maps a written 0 back to the default.)
  auto again = parse_collections_json(serialize_collections_json(*file), "fuzz_collections.json");
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->collections.size() == file->collections.size());
  for (size_t i = 0; i < file->collections.size(); ++i)
    FUZZ_CHECK(again->collections[i].name == file->collections[i].name);
  FUZZ_CHECK(again->num_workers == file->num_workers);
  return 0;
}
