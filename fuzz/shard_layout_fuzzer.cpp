// A worker's shard layout (host/format/shard_layout.*, shards/<worker>.json) and what the trial does
// with the extents it describes (host/trial/shard_assembly.*): the input is a layout file's text.
// Its tensors that share the first one's global shape (and kind: boxes or flat runs) are taken as the
// shards of one tensor, checked
// by extent (as the reduction merge does, without values), then put together from zero-filled
// values when the whole is small.
#include <cstdint>
#include <string_view>
#include <vector>

#include "format/shard_layout.h"
#include "fuzz_check.h"
#include "trial/shard_assembly.h"

using namespace vigil;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto layout = format::parse_shard_layout(text, "shards/fuzz.json");
  if (!layout) {
    FUZZ_CHECK(!layout.error().message.empty());
    return 0;
  }
  // What the writer makes of an accepted layout is accepted again, unchanged.
  auto again = format::parse_shard_layout(format::shard_layout_json(*layout), "shards/fuzz.json");
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->worker == layout->worker && again->tensors == layout->tensors);
  if (layout->tensors.empty()) return 0;

  const format::ShardPlacement& first = layout->tensors.begin()->second;
  const std::vector<int64_t> global = first.global_shape, space = shard_space(first);
  std::vector<const format::ShardPlacement*> placements;
  std::vector<ShardExtent> extents;
  for (const auto& [name, p] : layout->tensors)
    if (p.global_shape == global && shard_space(p) == space && p.shape.size() == space.size() &&
        p.flat_offset.has_value() == first.flat_offset.has_value()) {
      placements.push_back(&p);
      extents.push_back(shard_extent(p, p.shape));
    }
  if (extents.empty()) return 0;
  auto distinct = distinct_shards("fuzz", space, extents);
  if (!distinct) {
    FUZZ_CHECK(!distinct.error().message.empty());
    return 0;
  }
  // Accepted shards cover the whole tensor once: put together when it is small enough to allocate.
  uint64_t total = 1;
  for (int64_t g : space) total *= uint64_t(g);
  if (total > 4096) return 0;
  std::vector<Shard> shards;
  for (const format::ShardPlacement* p : placements) {
    uint64_t n = 1;
    for (int64_t d : p->shape) n *= uint64_t(d);
    const std::vector<std::byte> zeros(n * sizeof(float));
    shards.push_back({TensorValue::copy_of(ElementType::Float32, p->shape, zeros), *p});
  }
  auto whole = assemble_shards("fuzz", shards);
  FUZZ_CHECK(whole.has_value());
  FUZZ_CHECK(whole->size() == total);
  return 0;
}
