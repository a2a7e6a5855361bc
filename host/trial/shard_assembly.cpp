#include "trial/shard_assembly.h"

#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace vigil {

namespace {

Error not_one_tensor(std::string_view name, const std::string& why) {
  return Error::corrupt(std::string(name), 0, fmt::format("the shards of {} do not make one tensor: {}", name, why));
}

// Two boxes share an element when their ranges meet in every dimension (an empty box meets none).
bool overlap(const ShardExtent& a, const ShardExtent& b) {
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (a.offsets[d] >= b.offsets[d] + b.shape[d] || b.offsets[d] >= a.offsets[d] + a.shape[d]) return false;
  return true;
}

// The element count of a shape, nullopt past 2^63 (a layout file is untrusted: its global shape
// must not wrap into a small count).
std::optional<uint64_t> element_count(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, uint64_t(d), &n) || n > (uint64_t(1) << 63)) return std::nullopt;
  return n;
}

}  // namespace

std::vector<int64_t> shard_space(const format::ShardPlacement& placement) {
  if (!placement.flat_offset) return placement.global_shape;
  int64_t n = 1;
  for (int64_t d : placement.global_shape) n *= d;  // bounded when the layout was parsed
  return {n};
}

ShardExtent shard_extent(const format::ShardPlacement& placement, const std::vector<int64_t>& shard_shape) {
  if (!placement.flat_offset) return {placement.offsets, shard_shape};
  int64_t n = 1;
  for (int64_t d : shard_shape) n *= d;
  return {{*placement.flat_offset}, {n}};
}

Result<std::vector<size_t>> distinct_shards(std::string_view name, const std::vector<int64_t>& global,
                                            const std::vector<ShardExtent>& shards) {
  if (shards.empty()) return fail(not_one_tensor(name, "there is no shard"));
  const auto total = element_count(global);
  if (!total) return fail(not_one_tensor(name, "its global shape is too large"));
  const size_t rank = global.size();
  std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> seen;
  std::vector<size_t> distinct;
  uint64_t covered = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const ShardExtent& s = shards[i];
    if (s.shape.size() != rank || s.offsets.size() != rank) return fail(not_one_tensor(name, "a shard's rank is not the tensor's"));
    for (size_t d = 0; d < rank; ++d)
      if (s.offsets[d] < 0 || s.shape[d] < 0 || s.offsets[d] > global[d] || s.shape[d] > global[d] - s.offsets[d])
        return fail(not_one_tensor(name, fmt::format("a shard passes the end of dimension {}", d)));
    const uint64_t size = *element_count(s.shape);  // no larger than the global shape's
    if (!seen.emplace(s.offsets, s.shape).second) continue;
    for (size_t j : distinct)
      if (size && overlap(s, shards[j])) return fail(not_one_tensor(name, "two shards overlap"));
    distinct.push_back(i);
    covered += size;
  }
  if (covered != *total) return fail(not_one_tensor(name, fmt::format("its shards hold {} elements, the tensor {}", covered, *total)));
  return distinct;
}

Result<TensorValue> assemble_shards(std::string_view name, const std::vector<Shard>& shards) {
  if (shards.empty()) return fail(not_one_tensor(name, "there is no shard"));
  const ElementType dtype = shards.front().value.dtype();
  if (shards.front().value.is_string())
    return fail(Error::not_supported(fmt::format("{}: string tensors are not put together from shards", name)));
  const std::vector<int64_t>& global = shards.front().placement.global_shape;
  const std::vector<int64_t> space = shard_space(shards.front().placement);
  const size_t rank = space.size();
  const size_t item = format::element_type_info(dtype).item_size;

  std::vector<ShardExtent> extents;
  for (const Shard& s : shards) {
    if (s.value.dtype() != dtype) return fail(not_one_tensor(name, "the workers saved it with different dtypes"));
    if (s.placement.global_shape != global || shard_space(s.placement) != space)
      return fail(not_one_tensor(name, "the workers disagree on its global shape"));
    if (!s.placement.shape.empty() && s.placement.shape != s.value.shape())
      return fail(not_one_tensor(name, "a worker's shard is not the shape its layout gives"));
    extents.push_back(shard_extent(s.placement, s.value.shape()));
  }
  // Checked before allocating: the whole tensor is no larger than the shards already read.
  auto distinct = distinct_shards(name, space, extents);
  if (!distinct) return fail(distinct.error());
  const uint64_t total = *element_count(space);

  std::vector<std::byte> out(total * item);
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * space[d];
  for (size_t i : *distinct) {
    const ShardExtent& e = extents[i];
    const auto bytes = shards[i].value.bytes();
    if (shards[i].value.size() == 0) continue;
    // Contiguous runs along the last dimension, the other indices counted like an odometer.
    const int64_t run = rank ? e.shape[rank - 1] : 1;
    std::vector<int64_t> index(rank ? rank - 1 : 0, 0);
    for (uint64_t src = 0; src < shards[i].value.size(); src += uint64_t(run)) {
      int64_t dst = rank ? e.offsets[rank - 1] : 0;
      for (size_t d = 0; d + 1 < rank; ++d) dst += (e.offsets[d] + index[d]) * stride[d];
      std::memcpy(out.data() + size_t(dst) * item, bytes.data() + src * item, size_t(run) * item);
      for (size_t d = index.size(); d-- > 0;) {
        if (++index[d] < e.shape[d]) break;
        index[d] = 0;
      }
    }
  }
  return TensorValue::copy_of(dtype, global, out);
}

}  // namespace vigil
