// Event / Summary / TensorProto decoding (host/format/event_proto.*) and the tensor values built
// from it (host/trial/tensor_value.*): the input is one record payload.
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "format/dtype.h"
#include "format/event_proto.h"
#include "fuzz_check.h"
#include "trial/tensor_value.h"

using namespace vigil;
using namespace vigil::format;

namespace {

bool has_fallback_values(const TensorProtoView& t) {
  return !t.float_val.empty() || !t.double_val.empty() || !t.int_val.empty() || !t.int64_val.empty() ||
         !t.half_val.empty() || !t.bool_val.empty();
}

// A tensor event as smdebug writes it must decode back to what was encoded.
void check_round_trip(const EventView& event, const SummaryValueView& value) {
  const TensorProtoView& t = value.tensor;
  if (has_fallback_values(t)) return;  // the encoder writes only tensor_content / string_val
  std::vector<std::string> strings(t.string_val.begin(), t.string_val.end());
  TensorEventSpec spec{.wall_time = event.wall_time,
                       .step = event.step,
                       .tag = value.tag,
                       .dtype = t.dtype,
                       .shape = t.shape,
                       .tensor_content = t.tensor_content,
                       .strings = strings,
                       .mode = event.mode,
                       .mode_step = event.mode_step};
  const std::string encoded = encode_tensor_event(spec);
  auto again = decode_event({reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size()});
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(std::bit_cast<uint64_t>(again->wall_time) == std::bit_cast<uint64_t>(event.wall_time));
  FUZZ_CHECK(again->step == event.step);
  FUZZ_CHECK(again->mode == event.mode && again->mode_step == event.mode_step);
  FUZZ_CHECK(again->values.size() == 1);
  const SummaryValueView& v = again->values.front();
  FUZZ_CHECK(v.kind == SummaryValueView::Kind::Tensor && v.tag == value.tag);
  FUZZ_CHECK(v.tensor.dtype == t.dtype && v.tensor.shape == t.shape);
  FUZZ_CHECK(v.tensor.tensor_content.size() == t.tensor_content.size());
  FUZZ_CHECK(t.tensor_content.empty() ||
             std::memcmp(v.tensor.tensor_content.data(), t.tensor_content.data(), t.tensor_content.size()) == 0);
  FUZZ_CHECK(v.tensor.string_val == t.string_val);
}

// What readers rely on: the element count agrees with the bytes or strings held.
void check_value(const TensorValue& v) {
  if (v.is_string()) {
    FUZZ_CHECK(v.size() == v.string_values().size());
    return;
  }
  FUZZ_CHECK(v.size() * element_type_info(v.dtype()).item_size == v.bytes().size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto event = decode_event({data, size});
  if (!event) {
    FUZZ_CHECK(!event.error().empty());
    return 0;
  }
  for (const auto& value : event->values) {
    for (const auto& [name, content] : value.plugin_data) {
      FUZZ_CHECK(name.empty() || (name.data() >= reinterpret_cast<const char*>(data) &&
                                  name.data() + name.size() <= reinterpret_cast<const char*>(data) + size));
      (void)content;
    }
    if (value.kind != SummaryValueView::Kind::Tensor) continue;
    if (auto decoded = decode_tensor_value(value.tensor, nullptr, "fuzz", 0)) check_value(*decoded);
  }
  // smdebug's readers use the first value only; round-trip that one.
  if (!event->values.empty() && event->values.front().kind == SummaryValueView::Kind::Tensor)
    check_round_trip(*event, event->values.front());
  return 0;
}
