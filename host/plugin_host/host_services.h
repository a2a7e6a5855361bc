// The host services table (vigil_host_api) that adapts the trial API to the C ABI, and the
// host-side objects behind the ABI's opaque handles (vigil_trial, vigil_session).
#pragma once

#include <vigil/vigil.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "trial/trial.h"

// The opaque ABI handles are defined here, on the host side only.
// A rule instance's handle on one trial: each rule gets its own handles, pointing at the trial
// shared by every rule that reads it and at the rule's session.
struct vigil_trial {
  std::shared_ptr<vigil::Trial> trial;
  vigil_session* session = nullptr;
};

namespace vigil::plugins {

// The DLPack dtype of an element type (kDLOpaqueHandle for strings), as tensor views carry it.
[[nodiscard]] DLDataType dl_type(ElementType t);

// Copies a host Error into a caller's vigil_error, filling only what its struct_size allows
// (sdk::write_error_record).
void fill_abi_error(const Error& e, vigil_error* err);
// The reverse, for errors a plugin reports (sdk::Error::from_abi).
[[nodiscard]] Error error_from_abi(vigil_status status, const vigil_error& err);

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

}  // namespace vigil::plugins

// One per rule instance: what host functions called on the rule's behalf need to know.
struct vigil_session {
  std::string rule_name;                              // the RuleConfigurationName
  std::string output_directory;                       // where the rule may write reports
  std::function<void(vigil_log_level, const std::string&)> log;
  std::stop_token stop;                               // requested when the evaluation is being stopped
  std::shared_ptr<vigil::plugins::StepValueCache> cache;  // may be null
  // Views handed out and not yet released; shared with the views so a late release stays safe.
  std::shared_ptr<std::atomic<int64_t>> outstanding_views = std::make_shared<std::atomic<int64_t>>(0);
  std::mutex evidence_mu;
  std::vector<std::string> evidence;                  // JSON objects reported at the current step
};

namespace vigil::plugins {

// The table handed to plugins. Static, valid for the life of the process.
const vigil_host_api* host_api();

}  // namespace vigil::plugins
