// Vigil C++ SDK: the Rule base class, its RuleContext and RequiredTensors.
//
//   class MyRule : public vigil::sdk::Rule {
//    public:
//     explicit MyRule(vigil::sdk::RuleContext ctx) : Rule(std::move(ctx)) {}
//     vigil::sdk::Result<bool> invoke_at_step(vigil_step step) override { ... }
//   };
//
// A rule instance is created by the host through the plugin's factory (see plugin.hpp) and its calls
// never overlap ([rule-serial]) unless the rule declares VIGIL_RULEF_INSTANCE_THREADSAFE.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vigil/sdk/error.hpp"
#include "vigil/sdk/host.hpp"
#include "vigil/sdk/params.hpp"
#include "vigil/sdk/trial.hpp"

namespace vigil::sdk::inline v1 {

// What a rule instance is built from: a copy of the host's vigil_rule_context (which lives only
// during create) plus the descriptor's names.
struct RuleContext {
  Host host;
  vigil_session* session = nullptr;
  std::vector<Trial> trials;  // trials[0] is the base trial
  Params params;
  std::string instance_name;  // the RuleConfigurationName
  std::string rule_name;      // the descriptor's name (rule_to_invoke)
  std::string rule_id;        // the descriptor's id
};

// smdebug's RequiredTensors: what invoke_at_step will read at a step, so the host can read each
// tensor once for all rules. Wraps the host's vigil_required_sink.
class RequiredTensors {
 public:
  explicit RequiredTensors(const vigil_required_sink* sink) noexcept : sink_(sink) {}

  // Adds a tensor name (or, with is_regex, every name matching the regex) for `steps` of trial
  // `trial_index` (0 = the base trial). TensorUnavailable when the trial lacks the tensor.
  [[nodiscard]] Result<void> add(std::string_view name_or_regex, std::span<const vigil_step> steps, uint32_t trial_index = 0,
                   bool is_regex = false) {
    if (!sink_ || !sink_->add) return fail(Error::not_supported("the host gave no required-tensors sink"));
    const std::string name(name_or_regex);
    const vigil_status s =
        sink_->add(sink_->ctx, trial_index, name.c_str(), is_regex, steps.empty() ? nullptr : steps.data(), steps.size());
    if (s == VIGIL_OK) return {};
    if (s == VIGIL_E_TENSOR_UNAVAILABLE) return fail(Error::tensor_unavailable(name));
    Error e = Error::make(s, fmt::format("required tensor {} was refused: {}", name, status_name(s)));
    e.tensor = name;
    return fail(std::move(e));
  }
  [[nodiscard]] Result<void> add(std::string_view name_or_regex, std::initializer_list<vigil_step> steps, uint32_t trial_index = 0,
                   bool is_regex = false) {
    return add(name_or_regex, std::span<const vigil_step>(steps.begin(), steps.size()), trial_index, is_regex);
  }
  // The same for a given trial (its index in the rule context).
  [[nodiscard]] Result<void> add(const Trial& trial, std::string_view name_or_regex, std::span<const vigil_step> steps,
                   bool is_regex = false) {
    return add(name_or_regex, steps, trial.index(), is_regex);
  }
  [[nodiscard]] Result<void> add(const Trial& trial, std::string_view name_or_regex, std::initializer_list<vigil_step> steps,
                   bool is_regex = false) {
    return add(name_or_regex, std::span<const vigil_step>(steps.begin(), steps.size()), trial.index(), is_regex);
  }

 private:
  const vigil_required_sink* sink_;
};

// Base class of C++ rules. Derived classes are constructed from a RuleContext (or provide
// `static Result<std::unique_ptr<Derived>> create(RuleContext)`), and may declare
//   static constexpr vigil::sdk::ParamSpec kParams[] = {...};   // parameters (params.hpp)
//   static constexpr uint32_t kFlags = VIGIL_RULEF_MULTI_TRIAL;  // optional descriptor flags
//   static constexpr const char* kVersion = "1.2.0";              // optional, else the plugin's version
//   static Result<void> on_plugin_init(const Host&, std::string_view plugin_path);  // optional
//   static void on_plugin_deinit() noexcept;                                         // optional
class Rule {
 public:
  explicit Rule(RuleContext ctx) : ctx_(std::move(ctx)) {}
  virtual ~Rule() = default;
  Rule(const Rule&) = delete;
  Rule& operator=(const Rule&) = delete;

  // smdebug's set_required_tensors(step): declare what invoke_at_step(step) will read. Default: nothing.
  [[nodiscard]] virtual Result<void> required_tensors(vigil_step step, RequiredTensors& req) {
    (void)step;
    (void)req;
    return {};
  }

  // Evaluate at a global step: true = the condition is met. Errors with smdebug's classes (returned
  // or thrown) steer the host's loop: TensorUnavailableForStep / StepUnavailable / TensorUnavailable
  // skip the step, NoMoreData ends the rule normally, RuleEvaluationConditionMet(end_of_rule) is a
  // signal, anything else fails the rule.
  [[nodiscard]] virtual Result<bool> invoke_at_step(vigil_step step) = 0;

  // ABI 1.2: a wall-clock tick while the host waits for the next step of a live trial (plugin.h's
  // invoke_at_time): `wall_time` in seconds since the epoch, `last_step` the last step invoked (-1
  // before the first). true = the condition is met. Only rules that override it are ticked.
  [[nodiscard]] virtual Result<bool> invoke_at_time(double wall_time, vigil_step last_step) {
    (void)wall_time;
    (void)last_step;
    return false;
  }

  // An extension table of this rule instance by id, or nullptr.
  virtual const void* get_extension(std::string_view id) const noexcept {
    (void)id;
    return nullptr;
  }

  // ---- what the rule sees ----
  const Trial& base_trial() const noexcept { return ctx_.trials.front(); }
  std::span<const Trial> other_trials() const noexcept { return std::span<const Trial>(ctx_.trials).subspan(1); }
  std::span<const Trial> trials() const noexcept { return ctx_.trials; }
  const Params& params() const noexcept { return ctx_.params; }
  const Host& host() const noexcept { return ctx_.host; }
  vigil_session* session() const noexcept { return ctx_.session; }
  const std::string& instance_name() const noexcept { return ctx_.instance_name; }
  const std::string& rule_name() const noexcept { return ctx_.rule_name; }
  const std::string& rule_id() const noexcept { return ctx_.rule_id; }

  // ---- host services for this instance ----

  // Logs a line attributed to this rule, fmt-formatted: log(VIGIL_LOG_INFO, "step {}: {}", step, v).
  // Never throws: a message that cannot be built is dropped.
  template <class... Args>
  void log(vigil_log_level level, fmt::format_string<Args...> format, Args&&... args) const noexcept {
#if defined(__cpp_exceptions)
    try {
#endif
      log_raw(level, fmt::format(format, std::forward<Args>(args)...));
#if defined(__cpp_exceptions)
    } catch (...) {
    }
#endif
  }
  // Logs `message` as is.
  void log_raw(vigil_log_level level, std::string_view message) const noexcept {
    auto f = ctx_.host.fn(&vigil_host_api::log);
    if (!f) return;
#if defined(__cpp_exceptions)
    try {
#endif
      const std::string text(message);
      f(ctx_.session, level, text.c_str());
#if defined(__cpp_exceptions)
    } catch (...) {
    }
#endif
  }

  // True once the evaluation is being stopped: long loops should check it and return
  // Error::cancelled() (or let a [blocking] host call report VIGIL_E_CANCELLED).
  bool is_cancelled() const noexcept {
    auto f = ctx_.host.fn(&vigil_host_api::is_cancelled);
    return f && f(ctx_.session);
  }

  // ABI 1.1: the folder where this rule may write reports (absolute, UTF-8). VIGIL_E_NOT_SUPPORTED
  // from an ABI 1.0 host, or when the host has no such folder for this session.
  template <class H = vigil_host_api>
  [[nodiscard]] Result<std::string> output_directory() const {
    if constexpr (requires { &H::output_directory; }) {
      auto f = ctx_.host.fn(&H::output_directory);
      const char* dir = f ? f(ctx_.session) : nullptr;
      if (dir && *dir) return std::string(dir);
    }
    return fail(Error::not_supported("the host provides no output directory for this rule"));
  }

  // ABI 1.2: says that this call did not judge, for want of data (host.h's not_judged): fewer samples
  // than the rule needs, say. A rule that never judges is then reported as not having had enough
  // data. Does nothing on an older host.
  template <class H = vigil_host_api>
  void not_judged(std::string_view reason) const noexcept {
    if constexpr (requires { &H::not_judged; }) {
      auto f = ctx_.host.fn(&H::not_judged);
      if (!f) return;
#if defined(__cpp_exceptions)
      try {
#endif
        const std::string text(reason);
        f(ctx_.session, text.c_str());
#if defined(__cpp_exceptions)
      } catch (...) {
      }
#endif
    } else {
      (void)reason;
    }
  }

  // Attaches evidence to this step's verdict: a UTF-8 JSON object (see JsonObject in json.hpp).
  [[nodiscard]] Result<void> report_evidence(std::string_view json_object) const {
    const std::string text(json_object);
    return detail::call_host(ctx_.host, &vigil_host_api::report_evidence, "report_evidence", ctx_.session,
                             text.c_str());
  }

 private:
  RuleContext ctx_;
};

}  // namespace vigil::sdk::inline v1
