// The step value cache behind the host services' tensor reads (host_services.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/mode.h"
#include "trial/tensor_value.h"

namespace vigil {
class Trial;
}

namespace vigil::plugin_host {

// Values and computed reductions read at a step, shared by every rule at that step: N rules read
// and reduce each tensor once. Entries carry the generation (the evaluator's global step) they were
// read for, so a readahead can fill the next step while the rules run on this one. Values are kept
// up to a memory budget (a value that would pass it is handed out but not kept); reductions are a
// few bytes each and always kept.
class StepValueCache {
 public:
  using Key = std::tuple<const vigil::Trial*, std::string, int64_t, Mode, std::string>;  // worker "" = default
  static constexpr size_t kDefaultBudgetBytes = size_t(256) << 20;
  static constexpr int kValue = -1;  // the reduction slot of a value in Access

  // What was read: a value (reduction == kValue) or a reduction (vigil_reduction, abs).
  struct Access {
    Key key;
    int reduction = kValue;
    bool abs = false;
  };

  explicit StepValueCache(size_t budget_bytes = kDefaultBudgetBytes) : budget_bytes_(budget_bytes) {}

  std::shared_ptr<const TensorValue> find(const Key& key);
  // Keeps `value` when it fits in the budget; returns it either way. Untagged: the current generation.
  std::shared_ptr<const TensorValue> put(const Key& key, TensorValue value, std::optional<int64_t> generation = {});
  std::optional<double> find_reduction(const Key& key, int reduction, bool abs);
  void put_reduction(const Key& key, int reduction, bool abs, double value, std::optional<int64_t> generation = {});

  // Starts `generation`: drops what earlier generations read, and returns what the previous
  // current generation read (the pattern a readahead repeats for the next step).
  std::vector<Access> advance(int64_t generation);
  void clear();  // everything, whatever its generation
  size_t size();
  size_t bytes();

 private:
  template <typename T>
  struct Entry {
    T value;
    int64_t generation;
  };
  std::mutex mu_;
  size_t budget_bytes_;
  size_t bytes_ = 0;
  int64_t generation_ = 0;
  // Hashed: every rule looks up every tensor it reads, at every step.
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept;
    size_t operator()(const std::tuple<Key, int, bool>& k) const noexcept;
  };
  std::unordered_map<Key, Entry<std::shared_ptr<const TensorValue>>, KeyHash> values_;
  std::unordered_map<std::tuple<Key, int, bool>, Entry<double>, KeyHash> reductions_;
};

}  // namespace vigil::plugin_host
