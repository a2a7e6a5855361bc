// The step value cache behind the host services' tensor reads (host_services.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
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
  // A tensor at a step: its name and worker as ids of the cache's interned text (text()), so that a
  // lookup that hits allocates nothing. Made by key().
  struct Key {
    const vigil::Trial* trial = nullptr;
    uint32_t name = 0;
    uint32_t worker = 0;  // kDefaultWorker: the default worker
    int64_t step = 0;
    Mode mode = Mode::Global;
    friend bool operator==(const Key&, const Key&) = default;
  };
  static constexpr uint32_t kDefaultWorker = 0;  // the id of "" (no worker named)
  static constexpr size_t kDefaultBudgetBytes = size_t(256) << 20;
  static constexpr int kValue = -1;  // the reduction slot of a value in Access

  // What was read: a value (reduction == kValue) or a reduction (vigil_reduction, abs).
  struct Access {
    Key key;
    int reduction = kValue;
    bool abs = false;
  };

  explicit StepValueCache(size_t budget_bytes = kDefaultBudgetBytes);

  // The key of a tensor at a step; worker "" = the default worker. Interns the name and the worker
  // (kept for the cache's life: a trial's tensor names are few).
  Key key(const vigil::Trial* trial, std::string_view name, int64_t step, Mode mode, std::string_view worker = {});
  // The text of an interned id (stable for the cache's life).
  std::string_view text(uint32_t id);

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
  struct ReductionKey {
    Key key;
    int reduction;
    bool abs;
    friend bool operator==(const ReductionKey&, const ReductionKey&) = default;
  };
  // Hashed: every rule looks up every tensor it reads, at every step.
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept;
    size_t operator()(const ReductionKey& k) const noexcept;
  };
  uint32_t intern_locked(std::string_view text);
  std::deque<std::string> texts_;                      // by id; a deque keeps each string in place
  std::unordered_map<std::string_view, uint32_t> ids_;  // views of texts_
  std::unordered_map<Key, Entry<std::shared_ptr<const TensorValue>>, KeyHash> values_;
  std::unordered_map<ReductionKey, Entry<double>, KeyHash> reductions_;
};

}  // namespace vigil::plugin_host
