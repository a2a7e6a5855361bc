#include "plugin_host/step_value_cache.h"

#include <functional>
#include <iterator>

namespace vigil::plugin_host {

StepValueCache::StepValueCache(size_t budget_bytes) : budget_bytes_(budget_bytes) {
  intern_locked("");  // kDefaultWorker
}

uint32_t StepValueCache::intern_locked(std::string_view text) {
  if (auto it = ids_.find(text); it != ids_.end()) return it->second;
  const auto id = uint32_t(texts_.size());
  const std::string& kept = texts_.emplace_back(text);
  ids_.emplace(kept, id);
  return id;
}

StepValueCache::Key StepValueCache::key(const vigil::Trial* trial, std::string_view name, int64_t step, Mode mode,
                                        std::string_view worker) {
  std::lock_guard lock(mu_);
  return Key{.trial = trial, .name = intern_locked(name), .worker = intern_locked(worker), .step = step, .mode = mode};
}

std::string_view StepValueCache::text(uint32_t id) {
  std::lock_guard lock(mu_);
  return texts_.at(id);
}

size_t StepValueCache::KeyHash::operator()(const Key& k) const noexcept {
  size_t h = std::hash<const void*>{}(k.trial);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(k.name);
  mix(std::hash<int64_t>{}(k.step));
  mix(size_t(k.mode));
  mix(k.worker);
  return h;
}

size_t StepValueCache::KeyHash::operator()(const ReductionKey& k) const noexcept {
  return (*this)(k.key) * 31 + size_t(k.reduction) * 2 + size_t(k.abs);
}

std::shared_ptr<const TensorValue> StepValueCache::find(const Key& key) {
  std::lock_guard lock(mu_);
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : it->second.value;
}

std::shared_ptr<const TensorValue> StepValueCache::put(const Key& key, TensorValue value,
                                                       std::optional<int64_t> generation) {
  auto shared = std::make_shared<const TensorValue>(std::move(value));
  const size_t size = shared->bytes().size();
  std::lock_guard lock(mu_);
  if (bytes_ + size > budget_bytes_) return shared;
  auto [it, added] = values_.try_emplace(key, Entry<std::shared_ptr<const TensorValue>>{shared, generation.value_or(generation_)});
  if (added) bytes_ += size;
  return it->second.value;
}

std::optional<double> StepValueCache::find_reduction(const Key& key, int reduction, bool abs) {
  std::lock_guard lock(mu_);
  auto it = reductions_.find({key, reduction, abs});
  if (it == reductions_.end()) return std::nullopt;
  return it->second.value;
}

void StepValueCache::put_reduction(const Key& key, int reduction, bool abs, double value,
                                   std::optional<int64_t> generation) {
  std::lock_guard lock(mu_);
  reductions_.try_emplace({key, reduction, abs}, Entry<double>{value, generation.value_or(generation_)});
}

std::vector<StepValueCache::Access> StepValueCache::advance(int64_t generation) {
  std::lock_guard lock(mu_);
  std::vector<Access> read;
  read.reserve(values_.size() + reductions_.size());  // one allocation per step, not one per doubling
  for (auto it = values_.begin(); it != values_.end();) {
    if (it->second.generation == generation_) read.push_back({.key = it->first});
    if (it->second.generation < generation) {
      bytes_ -= it->second.value->bytes().size();
      it = values_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = reductions_.begin(); it != reductions_.end();) {
    const auto& [key, reduction, abs] = it->first;
    if (it->second.generation == generation_) read.push_back({.key = key, .reduction = reduction, .abs = abs});
    it = it->second.generation < generation ? reductions_.erase(it) : std::next(it);
  }
  generation_ = generation;
  return read;
}

void StepValueCache::clear() {
  std::lock_guard lock(mu_);
  values_.clear();
  reductions_.clear();
  bytes_ = 0;
}

size_t StepValueCache::size() {
  std::lock_guard lock(mu_);
  return values_.size();
}

size_t StepValueCache::bytes() {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace vigil::plugin_host
