// The per-step index JSON (format spec §1.3).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/mode.h"
#include "common/regex_limits.h"

namespace vigil::format {

struct IndexTensorEntry {
  std::string tensorname;
  uint64_t start_idx = 0;  // offset of the record's first byte in the event file
  uint64_t length = 0;     // whole record: 8 + 4 + payload + 4
};

struct IndexShapeEntry {
  std::string tensorname;
  std::string originalname;
  std::vector<int64_t> shape;
};

struct StepIndex {
  Mode mode = Mode::Global;
  int64_t mode_step = 0;
  std::optional<std::string> event_file_name;  // relative to the trial root; absent for shapes only
  std::vector<IndexTensorEntry> tensor_payload;
  std::vector<IndexShapeEntry> shape_payload;
};

// The longest tensor name a trial's index may hold: names meet regexes (collections, queries), and
// std::regex recurses once per character of its subject (common/regex_limits.h).
inline constexpr size_t kMaxTensorNameLength = kMaxRegexSubjectLength;

// Validates like smdebug (IndexReaderException with smdebug's messages: "Empty/Corrupt Index File",
// "meta section is not present", "meta section is empty", ...) and additionally refuses what would
// be unsafe or meaningless: unknown mode names, negative offsets or lengths, an event_file_name
// that is absolute or escapes the trial (".."), a tensor name longer than kMaxTensorNameLength.  `file` names the index file in messages.
[[nodiscard]] Result<StepIndex> parse_index_json(std::string_view text, std::string_view file);

// The two ways parse_index_json reads, apart for tests and the fuzzer: the one-pass reader of the
// exact layout smdebug writes (nullopt for anything else), and the full JSON parser that decides
// everything the first leaves. Whatever both accept, they read the same.
std::optional<StepIndex> parse_canonical_index_json(std::string_view text);
[[nodiscard]] Result<StepIndex> parse_index_json_generic(std::string_view text, std::string_view file);

// Byte-compatible with smdebug's writer (single line, Python json.dumps defaults, meta key order).
std::string serialize_index_json(const StepIndex& index);

}  // namespace vigil::format
