#include "trial/shard_assembly.h"

#include <cstring>
#include <set>

#include <fmt/format.h>

namespace vigil {

Result<TensorValue> assemble_shards(std::string_view name, const std::vector<Shard>& shards) {
  auto corrupt = [&](const std::string& why) {
    return fail(Error::corrupt(std::string(name), 0, fmt::format("the shards of {} do not make one tensor: {}", name, why)));
  };
  if (shards.empty()) return corrupt("there is no shard");
  const ElementType dtype = shards.front().value.dtype();
  if (shards.front().value.is_string())
    return fail(Error::not_supported(fmt::format("{}: string tensors are not put together from shards", name)));
  const std::vector<int64_t>& global = shards.front().placement.global_shape;
  const size_t rank = global.size();
  const size_t item = format::element_type_info(dtype).item_size;

  // The distinct shards (a replica's offsets and shape repeat another's), checked in bounds.
  std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> seen;
  std::vector<const Shard*> distinct;
  uint64_t covered = 0;
  for (const Shard& s : shards) {
    if (s.value.dtype() != dtype) return corrupt("the workers saved it with different dtypes");
    if (s.placement.global_shape != global) return corrupt("the workers disagree on its global shape");
    const auto& shape = s.value.shape();
    if (shape.size() != rank || s.placement.offsets.size() != rank) return corrupt("a shard's rank is not the tensor's");
    for (size_t d = 0; d < rank; ++d)
      if (s.placement.offsets[d] + shape[d] > global[d]) return corrupt(fmt::format("a shard passes the end of dimension {}", d));
    if (!seen.emplace(s.placement.offsets, shape).second) continue;
    distinct.push_back(&s);
    covered += s.value.size();
  }
  uint64_t total = 1;
  for (int64_t g : global) total *= uint64_t(g);
  // Checked before allocating: the whole tensor is no larger than the shards already read.
  if (covered != total) return corrupt(fmt::format("its shards hold {} elements, the tensor {}", covered, total));

  std::vector<std::byte> out(total * item);
  std::vector<uint8_t> written(total, 0);
  std::vector<int64_t> global_stride(rank, 1);
  for (size_t d = rank; d-- > 1;) global_stride[d - 1] = global_stride[d] * global[d];
  for (const Shard* s : distinct) {
    const auto& shape = s->value.shape();
    const auto bytes = s->value.bytes();
    if (s->value.size() == 0) continue;
    // Contiguous runs along the last dimension, the other indices counted like an odometer.
    const int64_t run = rank ? shape[rank - 1] : 1;
    std::vector<int64_t> index(rank ? rank - 1 : 0, 0);
    for (uint64_t src = 0; src < s->value.size(); src += uint64_t(run)) {
      int64_t dst = rank ? s->placement.offsets[rank - 1] : 0;
      for (size_t d = 0; d + 1 < rank; ++d) dst += (s->placement.offsets[d] + index[d]) * global_stride[d];
      for (int64_t k = 0; k < run; ++k) {
        if (written[size_t(dst + k)]++) return corrupt("two shards overlap");
      }
      std::memcpy(out.data() + size_t(dst) * item, bytes.data() + src * item, size_t(run) * item);
      for (size_t d = index.size(); d-- > 0;) {
        if (++index[d] < shape[d]) break;
        index[d] = 0;
      }
    }
  }
  return TensorValue::copy_of(dtype, global, out);
}

}  // namespace vigil
