// Vigil C++ SDK: Trial and Tensor, smdebug's read API over the host services table.
//
// Both are cheap, non-owning handles: the host owns the trial for the rule's lifetime. Every method
// returns Result<...>; Errors carry the host's smdebug-style fields (TensorUnavailableForStep, ...).
// Modes default to GLOBAL, as in smdebug.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vigil/sdk/error.hpp"
#include "vigil/sdk/host.hpp"
#include "vigil/sdk/tensor.hpp"

namespace vigil::sdk::inline v1 {

// smdebug's StepState.
enum class StepState : vigil_step_state {
  Unavailable = VIGIL_STEP_UNAVAILABLE,
  Available = VIGIL_STEP_AVAILABLE,
  NotYetAvailable = VIGIL_STEP_NOT_YET_AVAILABLE,
};

// smdebug's reduction names, as VIGIL_RED_* values.
enum class ReductionOp : vigil_reduction {
  min = VIGIL_RED_MIN,
  max = VIGIL_RED_MAX,
  mean = VIGIL_RED_MEAN,
  std = VIGIL_RED_STD,
  variance = VIGIL_RED_VARIANCE,
  sum = VIGIL_RED_SUM,
  prod = VIGIL_RED_PROD,
  l1 = VIGIL_RED_L1,
  l2 = VIGIL_RED_L2,
};

// "mean" -> ReductionOp::mean; SMDebugValueError ("Invalid reduction type ...") for other names.
[[nodiscard]] inline Result<ReductionOp> parse_reduction(std::string_view name) {
  constexpr std::pair<std::string_view, ReductionOp> kNames[] = {
      {"min", ReductionOp::min}, {"max", ReductionOp::max},   {"mean", ReductionOp::mean},
      {"std", ReductionOp::std}, {"variance", ReductionOp::variance}, {"sum", ReductionOp::sum},
      {"prod", ReductionOp::prod}, {"l1", ReductionOp::l1}, {"l2", ReductionOp::l2},
  };
  for (const auto& [n, op] : kNames)
    if (n == name) return op;
  return fail(Error::invalid_argument(fmt::format("Invalid reduction type {}", name)));
}

// trial.tensor_names(step=, mode=, regex=, collection=): trial.tensor_names({.regex = {"relu.*"}}).
struct NameQuery {
  std::optional<vigil_step> step;      // a global step (GLOBAL) or a mode step
  vigil_mode mode = VIGIL_MODE_GLOBAL;
  std::vector<std::string> regex;      // names matching any (re.search)
  std::optional<std::string> collection;  // not together with regex
};

// One tensor's reduction on one worker at a step (Trial::for_each_step_reduction). The strings are
// valid only during the callback that receives them.
struct StepReduction {
  std::string_view name;
  std::string_view worker;
  vigil_status status = VIGIL_OK;  // VIGIL_OK: `value` holds the reduction; else why there is none
  double value = 0;
};

namespace detail {

// Sink adapters: `f` is called synchronously by the host for each pushed item; whatever it throws
// becomes a status, because nothing may unwind through the host's frames.
template <class Body>
vigil_status sink_status(Body&& body) noexcept {
#if defined(__cpp_exceptions)
  try {
#endif
    std::forward<Body>(body)();
    return VIGIL_OK;
#if defined(__cpp_exceptions)
  } catch (const std::bad_alloc&) {
    return VIGIL_E_OUT_OF_MEMORY;
  } catch (...) {
    return VIGIL_E_INTERNAL;
  }
#endif
}

template <class F>
vigil_str_sink make_str_sink(F& f) noexcept {
  return vigil_str_sink{&f, [](void* ctx, const char* utf8, size_t len) noexcept -> vigil_status {
                          return sink_status(
                              [&] { (*static_cast<F*>(ctx))(std::string_view(utf8 ? utf8 : "", utf8 ? len : 0)); });
                        }};
}

template <class F>
vigil_i64_sink make_i64_sink(F& f) noexcept {
  return vigil_i64_sink{&f, [](void* ctx, const int64_t* values, size_t count) noexcept -> vigil_status {
                          return sink_status([&] {
                            if (values || count == 0)
                              (*static_cast<F*>(ctx))(std::span<const int64_t>(values, values ? count : 0));
                          });
                        }};
}

// f(vigil_reduction op, bool abs, double value) for each saved reduction (ABI 1.1 saved_reductions).
template <class F>
vigil_reduction_sink make_reduction_sink(F& f) noexcept {
  return vigil_reduction_sink{&f, [](void* ctx, vigil_reduction op, bool abs, double value) noexcept -> vigil_status {
                                return sink_status([&] { (*static_cast<F*>(ctx))(op, abs, value); });
                              }};
}

// f(const StepReduction&) for each result (ABI 1.5 step_reductions).
template <class F>
vigil_reduction_result_sink make_reduction_result_sink(F& f) noexcept {
  return vigil_reduction_result_sink{
      &f, [](void* ctx, const vigil_reduction_result* results, size_t count) noexcept -> vigil_status {
        return sink_status([&] {
          for (size_t i = 0; results && i < count; ++i) {
            const vigil_reduction_result& r = results[i];
            if (!VIGIL_HAS_FIELD(&r, vigil_reduction_result, value)) continue;  // not a result this SDK can read
            (*static_cast<F*>(ctx))(StepReduction{r.name ? r.name : "", r.worker ? r.worker : "", r.status,
                                                  r.status == VIGIL_OK ? r.value : 0.0});
          }
        });
      }};
}

// A value that is not there, which for_each_step_reduction reports instead of failing.
constexpr bool is_absent_value(vigil_status code) noexcept {
  return code == VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP || code == VIGIL_E_TENSOR_UNAVAILABLE ||
         code == VIGIL_E_STEP_UNAVAILABLE || code == VIGIL_E_TYPE_ERROR;
}

// Calls a host query whose result arrives through a string sink, as a vector.
template <class Fn, class... Args>
[[nodiscard]] Result<std::vector<std::string>> collect_strings(const Host& host, Fn vigil_host_api::*member, std::string_view what,
                                                 Args&&... args) {
  std::vector<std::string> out;
  auto push = [&out](std::string_view s) { out.emplace_back(s); };
  auto r = call_host(host, member, what, std::forward<Args>(args)..., make_str_sink(push));
  if (!r) return fail(std::move(r).error());
  return out;
}

template <class Fn, class... Args>
[[nodiscard]] Result<std::vector<int64_t>> collect_i64(const Host& host, Fn vigil_host_api::*member, std::string_view what,
                                         Args&&... args) {
  std::vector<int64_t> out;
  auto push = [&out](std::span<const int64_t> values) { out.insert(out.end(), values.begin(), values.end()); };
  auto r = call_host(host, member, what, std::forward<Args>(args)..., make_i64_sink(push));
  if (!r) return fail(std::move(r).error());
  return out;
}

// A vigil_name_query over a NameQuery's strings (which must outlive it).
struct NameQueryStorage {
  std::vector<const char*> regex;
  vigil_name_query query{};
  explicit NameQueryStorage(const NameQuery& q) {
    regex.reserve(q.regex.size());
    for (const auto& r : q.regex) regex.push_back(r.c_str());
    query.struct_size = sizeof(vigil_name_query);
    query.has_step = q.step.has_value();
    query.step = q.step.value_or(0);
    query.mode = q.mode;
    query.regex = regex.empty() ? nullptr : regex.data();
    query.regex_count = regex.size();
    query.collection = q.collection ? q.collection->c_str() : nullptr;
  }
  NameQueryStorage(const NameQueryStorage&) = delete;
  NameQueryStorage& operator=(const NameQueryStorage&) = delete;
};

// A vigil_tensor_key over owned strings (the C call needs NUL-terminated text).
struct KeyStorage {
  std::string worker;
  vigil_tensor_key key{};
  KeyStorage(const std::string& name, vigil_step step, vigil_mode mode, std::string_view w) : worker(w) {
    key.struct_size = sizeof(vigil_tensor_key);
    key.name = name.c_str();
    key.step = step;
    key.mode = mode;
    key.worker = worker.empty() ? nullptr : worker.c_str();
  }
  KeyStorage(const KeyStorage&) = delete;
  KeyStorage& operator=(const KeyStorage&) = delete;
};

}  // namespace detail

// smdebug's Tensor: one tensor name in one trial. Worker "" means the first worker (smdebug's None).
class Tensor {
 public:
  Tensor(Host host, vigil_trial* trial, std::string name) : host_(host), trial_(trial), name_(std::move(name)) {}

  const std::string& name() const noexcept { return name_; }

  [[nodiscard]] Result<std::vector<vigil_step>> steps(vigil_mode mode = VIGIL_MODE_GLOBAL, bool show_incomplete = false) const {
    return detail::collect_i64(host_, &vigil_host_api::tensor_steps, "tensor_steps", trial_, name_.c_str(), mode,
                               show_incomplete);
  }

  // The workers that hold this tensor at `step`.
  [[nodiscard]] Result<std::vector<std::string>> workers(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL) const {
    return detail::collect_strings(host_, &vigil_host_api::tensor_workers, "tensor_workers", trial_, name_.c_str(),
                                   step, mode);
  }

  [[nodiscard]] Result<std::vector<int64_t>> shape(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL,
                                     std::string_view worker = {}) const {
    detail::KeyStorage k(name_, step, mode, worker);
    return detail::collect_i64(host_, &vigil_host_api::tensor_shape, "tensor_shape", trial_, &k.key);
  }

  // [blocking] The value as a read-only view (string tensors: VIGIL_E_TYPE_ERROR; use strings()).
  [[nodiscard]] Result<TensorView> value(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL, std::string_view worker = {}) const {
    detail::KeyStorage k(name_, step, mode, worker);
    vigil_tensor* out = nullptr;
    auto r = detail::call_host(host_, &vigil_host_api::tensor_value, "tensor_value", trial_, &k.key, &out);
    if (!r) return fail(std::move(r).error());
    if (!out) return fail(Error::internal(fmt::format("tensor_value({}) returned OK without a tensor", name_)));
    return TensorView(out);
  }

  // [blocking] The elements of a string tensor, in C order.
  [[nodiscard]] Result<std::vector<std::string>> strings(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL,
                                           std::string_view worker = {}) const {
    detail::KeyStorage k(name_, step, mode, worker);
    return detail::collect_strings(host_, &vigil_host_api::tensor_strings, "tensor_strings", trial_, &k.key);
  }

  // [blocking] The saved reduction, or one computed from the value.
  [[nodiscard]] Result<double> reduction_value(vigil_step step, ReductionOp op, bool abs = false, vigil_mode mode = VIGIL_MODE_GLOBAL,
                                 std::string_view worker = {}) const {
    detail::KeyStorage k(name_, step, mode, worker);
    double out = 0;
    auto r = detail::call_host(host_, &vigil_host_api::reduction_value, "reduction_value", trial_, &k.key,
                               static_cast<vigil_reduction>(op), abs, &out);
    if (!r) return fail(std::move(r).error());
    return out;
  }
  // reduction_value(step, "mean", /*abs=*/true)
  [[nodiscard]] Result<double> reduction_value(vigil_step step, std::string_view reduction_name, bool abs = false,
                                 vigil_mode mode = VIGIL_MODE_GLOBAL, std::string_view worker = {}) const {
    auto op = parse_reduction(reduction_name);
    if (!op) return fail(std::move(op).error());
    return reduction_value(step, *op, abs, mode, worker);
  }

 private:
  Host host_;
  vigil_trial* trial_;
  std::string name_;
};

// smdebug's Trial. `index` is the trial's position in the rule context (0 = the base trial).
class Trial {
 public:
  Trial() = default;
  Trial(Host host, vigil_trial* trial, uint32_t index = 0) noexcept : host_(host), trial_(trial), index_(index) {}

  vigil_trial* get() const noexcept { return trial_; }
  const Host& host() const noexcept { return host_; }
  uint32_t index() const noexcept { return index_; }
  explicit operator bool() const noexcept { return trial_ != nullptr; }

  [[nodiscard]] Result<std::vector<std::string>> tensor_names(const NameQuery& query = {}) const {
    detail::NameQueryStorage q(query);
    return detail::collect_strings(host_, &vigil_host_api::tensor_names, "tensor_names", trial_,
                                   static_cast<const vigil_name_query*>(&q.query));
  }

  // [blocking] The reduction `op` of every tensor tensor_names(query) gives at query.step (which is
  // required), on every worker that saved it there: f(const StepReduction&) for each, in name order
  // and each name's workers sorted (a sharded tensor once, as VIGIL_WORKER_WHOLE). A value that is
  // not there comes with its status (TensorUnavailable*, StepUnavailable; TypeError for strings) and
  // no value; any other error ends the walk with that error. An ABI 1.5 host answers in one call
  // (step_reductions); an older one through tensor_names, tensor_workers and reduction_value, with
  // the same results.
  template <class F, class H = vigil_host_api>
  [[nodiscard]] Result<void> for_each_step_reduction(const NameQuery& query, ReductionOp op, bool abs, F&& f) const {
    if (!query.step) return fail(Error::invalid_argument("for_each_step_reduction: the query needs a step"));
    if constexpr (requires { &H::step_reductions; }) {
      if (host_.has(&H::step_reductions)) {
        detail::NameQueryStorage q(query);
        auto push = [&f](const StepReduction& r) { f(r); };
        return detail::call_host(host_, &H::step_reductions, "step_reductions", trial_,
                                 static_cast<const vigil_name_query*>(&q.query), static_cast<vigil_reduction>(op), abs,
                                 detail::make_reduction_result_sink(push));
      }
    }
    auto names = tensor_names(query);
    if (!names) return fail(std::move(names).error());
    for (const std::string& name : *names) {
      auto workers = tensor(name).workers(*query.step, query.mode);
      if (!workers) {
        if (detail::is_absent_value(workers.error().code)) continue;
        return fail(std::move(workers).error());
      }
      std::sort(workers->begin(), workers->end());
      for (const std::string& worker : *workers) {
        auto r = tensor(name).reduction_value(*query.step, op, abs, query.mode, worker);
        if (!r && !detail::is_absent_value(r.error().code)) return fail(std::move(r).error());
        f(StepReduction{name, worker, r ? VIGIL_OK : r.error().code, r ? *r : 0.0});
      }
    }
    return {};
  }

  [[nodiscard]] Result<bool> has_tensor(std::string_view name) const {
    const std::string n(name);
    bool out = false;
    auto r = detail::call_host(host_, &vigil_host_api::has_tensor, "has_tensor", trial_, n.c_str(), &out);
    if (!r) return fail(std::move(r).error());
    return out;
  }

  // A handle on one tensor (no host call; the tensor's methods report TensorUnavailable).
  Tensor tensor(std::string name) const { return Tensor(host_, trial_, std::move(name)); }

  [[nodiscard]] Result<std::vector<vigil_step>> steps(vigil_mode mode = VIGIL_MODE_GLOBAL, bool show_incomplete = false) const {
    return detail::collect_i64(host_, &vigil_host_api::steps, "steps", trial_, mode, show_incomplete);
  }

  [[nodiscard]] Result<std::vector<vigil_mode>> modes() const {
    auto raw = detail::collect_i64(host_, &vigil_host_api::modes, "modes", trial_);
    if (!raw) return fail(std::move(raw).error());
    std::vector<vigil_mode> out;
    out.reserve(raw->size());
    for (int64_t m : *raw) out.push_back(static_cast<vigil_mode>(m));
    return out;
  }

  [[nodiscard]] Result<std::vector<std::string>> workers() const {
    return detail::collect_strings(host_, &vigil_host_api::workers, "workers", trial_);
  }

  // The global step of a mode step; nullopt when unknown (smdebug's None).
  [[nodiscard]] Result<std::optional<vigil_step>> global_step(vigil_mode mode, vigil_step mode_step) const {
    bool found = false;
    vigil_step out = 0;
    auto r = detail::call_host(host_, &vigil_host_api::global_step, "global_step", trial_, mode, mode_step, &found,
                               &out);
    if (!r) return fail(std::move(r).error());
    return found ? std::optional<vigil_step>(out) : std::nullopt;
  }

  // (mode, mode step) of a global step; nullopt when unknown.
  [[nodiscard]] Result<std::optional<std::pair<vigil_mode, vigil_step>>> mode_modestep(vigil_step global_step) const {
    bool found = false;
    vigil_mode mode = 0;
    vigil_step mode_step = 0;
    auto r = detail::call_host(host_, &vigil_host_api::mode_modestep, "mode_modestep", trial_, global_step, &found,
                               &mode, &mode_step);
    if (!r) return fail(std::move(r).error());
    if (!found) return std::nullopt;
    return std::optional<std::pair<vigil_mode, vigil_step>>(std::in_place, mode, mode_step);
  }

  [[nodiscard]] Result<StepState> has_passed_step(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL) const {
    vigil_step_state out = VIGIL_STEP_UNAVAILABLE;
    auto r = detail::call_host(host_, &vigil_host_api::has_passed_step, "has_passed_step", trial_, step, mode, &out);
    if (!r) return fail(std::move(r).error());
    return static_cast<StepState>(out);
  }

  // [blocking] Waits until every step is available: StepUnavailable / NoMoreData / VIGIL_E_CANCELLED
  // / VIGIL_E_TIMEOUT otherwise. A negative timeout waits without limit.
  [[nodiscard]] Result<void> wait_for_steps(std::span<const vigil_step> steps, vigil_mode mode = VIGIL_MODE_GLOBAL,
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) const {
    return detail::call_host(host_, &vigil_host_api::wait_for_steps, "wait_for_steps", trial_,
                             steps.empty() ? nullptr : steps.data(), steps.size(), mode,
                             static_cast<int64_t>(timeout.count()));
  }
  [[nodiscard]] Result<void> wait_for_steps(std::initializer_list<vigil_step> steps, vigil_mode mode = VIGIL_MODE_GLOBAL,
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) const {
    return wait_for_steps(std::span<const vigil_step>(steps.begin(), steps.size()), mode, timeout);
  }

  [[nodiscard]] Result<vigil_step> last_complete_step() const {
    vigil_step out = -1;
    auto r = detail::call_host(host_, &vigil_host_api::last_complete_step, "last_complete_step", trial_, &out);
    if (!r) return fail(std::move(r).error());
    return out;
  }

  [[nodiscard]] Result<bool> training_ended() const {
    bool out = false;
    auto r = detail::call_host(host_, &vigil_host_api::training_ended, "training_ended", trial_, &out);
    if (!r) return fail(std::move(r).error());
    return out;
  }

  // [blocking] ABI 1.1: the wall-clock time (seconds since the epoch) at which a step was saved.
  // VIGIL_E_NOT_SUPPORTED from an ABI 1.0 host (or with ABI headers that lack the slot).
  template <class H = vigil_host_api>
  [[nodiscard]] Result<double> step_wall_time(vigil_step step, vigil_mode mode = VIGIL_MODE_GLOBAL) const {
    if constexpr (requires { &H::step_wall_time; }) {
      double out = 0;
      auto r = detail::call_host(host_, &H::step_wall_time, "step_wall_time", trial_, step, mode, &out);
      if (!r) return fail(std::move(r).error());
      return out;
    } else {
      (void)step;
      (void)mode;
      return fail(Error::not_supported("the host does not provide step_wall_time"));
    }
  }

  [[nodiscard]] Result<std::vector<std::string>> collection_names() const {
    return detail::collect_strings(host_, &vigil_host_api::collection_names, "collection_names", trial_);
  }

  // The names of the collection's tensors this trial holds (tensor_names(collection=...)).
  [[nodiscard]] Result<std::vector<std::string>> collection_tensor_names(std::string_view collection) const {
    const std::string c(collection);
    return detail::collect_strings(host_, &vigil_host_api::collection_tensor_names, "collection_tensor_names", trial_,
                                   c.c_str());
  }

 private:
  Host host_;
  vigil_trial* trial_ = nullptr;
  uint32_t index_ = 0;
};

}  // namespace vigil::sdk::inline v1
