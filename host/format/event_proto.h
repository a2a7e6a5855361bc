// Protobuf wire decoding and encoding of the smdebug Event / Summary / TensorProto messages
// (format spec §3) and of TensorBoard's scalar and histogram events (§1.7). Decoding is zero-copy:
// views point into the payload bytes.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mode.h"

namespace vigil::format {

struct TensorProtoView {
  int32_t dtype = 0;                       // raw DataType value
  std::vector<int64_t> shape;              // dim sizes, outermost first ([] = 0-d)
  std::span<const uint8_t> tensor_content; // raw little-endian bytes, C order
  std::vector<std::string_view> string_val;
  // Fallback value fields smdebug never writes but readers accept (packed or not).
  std::vector<float> float_val;
  std::vector<double> double_val;
  std::vector<int64_t> int_val;
  std::vector<int64_t> int64_val;
  std::vector<int64_t> half_val;
  std::vector<bool> bool_val;
};

// TensorBoard's HistogramProto (all doubles). Bucket i counts the values between bucket_limit[i-1]
// (or -DBL_MAX) and bucket_limit[i].
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;
  std::vector<double> bucket;
};

struct SummaryValueView {
  enum class Kind { None, Tensor, SimpleValue, Histogram, Other };
  std::string_view tag;
  Kind kind = Kind::None;
  TensorProtoView tensor;
  float simple_value = 0;
  Histogram histogram;  // Kind::Histogram
  std::vector<std::pair<std::string_view, std::string_view>> plugin_data;  // (plugin_name, content)
};

struct EventView {
  double wall_time = 0;
  int64_t step = 0;
  bool has_summary = false;
  std::vector<SummaryValueView> values;
  std::string_view file_version;  // TensorBoard's first event: "brain.Event:2"
  // From the plugin data of the first value (spec §3.3); defaults GLOBAL and Event.step.
  Mode mode = Mode::Global;
  int64_t mode_step = 0;
};

// Decodes one Event. On failure returns a short reason; the caller adds file and offset.
[[nodiscard]] std::expected<EventView, std::string> decode_event(std::span<const uint8_t> payload);

// One tensor record as smdebug's writer emits it (§3.6): fields in ascending order, proto3
// defaults omitted, dim names "<tag>_<size>", plugin data mode_step then mode.
struct TensorEventSpec {
  double wall_time = 0;
  int64_t step = 0;  // global step; omitted from the bytes when 0
  std::string_view tag;
  int32_t dtype = 0;  // 0 for strings
  std::span<const int64_t> shape;
  std::span<const uint8_t> tensor_content;  // numeric data
  std::span<const std::string> strings;     // string tensors (dtype 0)
  Mode mode = Mode::Global;
  int64_t mode_step = 0;
};
std::string encode_tensor_event(const TensorEventSpec& spec);

// The same bytes in pieces, so that a writer can send a large tensor_content from the caller's
// buffer without copying it: before + content + after == encode_tensor_event(spec).
struct EncodedTensorEvent {
  std::string before;
  std::span<const uint8_t> content;  // spec.tensor_content
  std::string after;
  size_t size() const { return before.size() + content.size() + after.size(); }
};
EncodedTensorEvent encode_tensor_event_pieces(const TensorEventSpec& spec);

// TensorBoard events (§1.7), under the same rules: ascending fields, proto3 defaults omitted
// (wall_time 0, step 0, empty tag, zero histogram statistics), oneof members always written.
std::string encode_file_version_event(double wall_time, std::string_view file_version);
std::string encode_scalar_event(double wall_time, int64_t step, std::string_view tag, float simple_value);
std::string encode_histogram_event(double wall_time, int64_t step, std::string_view tag, const Histogram& histogram);

}  // namespace vigil::format
