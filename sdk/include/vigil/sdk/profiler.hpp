// Vigil C++ SDK: profiler rules, over the host extension "vigil.profiler/1" (vigil/profiler.h).
//
//   class MyRule : public vigil::sdk::ProfilerRule {
//    public:
//     static constexpr vigil::sdk::ParamSpec kParams[] = {
//         vigil::sdk::param_int("scan_interval_us", "60000000", "The window length in µs.").min(1), ...};
//     explicit MyRule(vigil::sdk::RuleContext ctx) : ProfilerRule(std::move(ctx)) {}
//     vigil::sdk::Result<bool> invoke_for_timerange(const vigil::sdk::TimeWindow& w,
//                                                   const vigil::sdk::ProfilerEvents& events) override;
//   };
//
// The host invokes a profiler rule at step k = 0, 1, 2, ...; ProfilerRule turns k into the time window
// [T0 + k*S, T0 + (k+1)*S] (builtin-rules §1.4), waits for its data, reads it once and hands it over.
// Data that has ended ends the rule normally (NoMoreProfilerData); on a host without the extension the
// rule says it had no data to judge and ends.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <vigil/profiler.h>

#include "vigil/sdk/error.hpp"
#include "vigil/sdk/host.hpp"
#include "vigil/sdk/rule.hpp"

namespace vigil::sdk::inline v1 {

// One system metrics sample (vigil_system_metric, owned).
struct SystemMetric {
  std::string type;       // "cpu", "gpu", ...
  std::string name;       // "cpu0", "gpu1", "MemoryUsedPercent"; "" where none
  std::string dimension;  // "CPUUtilization", ...
  std::string node_id;
  double value = 0;
  double timestamp_s = 0;  // seconds since the epoch
};

// One framework trace event (vigil_framework_event, owned).
struct FrameworkEvent {
  std::string name;
  std::string phase;
  std::string node_id;
  std::string args_json = "{}";  // the record's args, a JSON object
  int64_t start_us = 0;
  int64_t end_us = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  int64_t duration_us() const noexcept { return end_us - start_us; }
};

// One time window of a profiler rule: invocation `index` covers [start_us, end_us] (µs since the epoch).
struct TimeWindow {
  vigil_step index = 0;
  int64_t start_us = 0;
  int64_t end_us = 0;
  int64_t first_timestamp_us = 0;  // T0
};

// A window's data, read once.
struct ProfilerEvents {
  std::vector<SystemMetric> system;
  std::vector<FrameworkEvent> framework;
};

// The profiler extension for one session: a typed view of vigil_profiler_ext.
class ProfilerData {
 public:
  ProfilerData() = default;
  ProfilerData(const Host& host, vigil_session* session) noexcept
      : ext_(static_cast<const vigil_profiler_ext*>(host.get_extension(VIGIL_PROFILER_EXTENSION_ID))),
        session_(session) {}

  // False on a host without the extension.
  bool available() const noexcept { return ext_ != nullptr; }
  const vigil_profiler_ext* get() const noexcept { return ext_; }

  [[nodiscard]] Result<int64_t> first_timestamp() const {
    auto f = slot(&vigil_profiler_ext::first_timestamp);
    if (!f) return missing("first_timestamp");
    int64_t out = 0;
    vigil_error err = fresh_error();
    const vigil_status s = f(session_, &out, &err);
    if (s != VIGIL_OK) return fail(Error::from_abi(s, &err));
    return out;
  }

  [[nodiscard]] Result<void> wait_for_window(int64_t start_us, int64_t end_us) const {
    auto f = slot(&vigil_profiler_ext::wait_for_window);
    if (!f) return missing("wait_for_window");
    vigil_error err = fresh_error();
    const vigil_status s = f(session_, start_us, end_us, &err);
    if (s != VIGIL_OK) return fail(Error::from_abi(s, &err));
    return {};
  }

  // The samples with start_us <= Timestamp <= end_us, of `type` only where given.
  [[nodiscard]] Result<std::vector<SystemMetric>> system_metrics(int64_t start_us, int64_t end_us,
                                                                 std::optional<std::string_view> type = {}) const {
    auto f = slot(&vigil_profiler_ext::system_metrics);
    if (!f) return missing("system_metrics");
    std::vector<SystemMetric> out;
    const vigil_system_metric_sink sink{&out, &push_system};
    const std::string type_text = type ? std::string(*type) : std::string();
    vigil_error err = fresh_error();
    const vigil_status s = f(session_, start_us, end_us, type ? type_text.c_str() : nullptr, sink, &err);
    if (s != VIGIL_OK) return fail(Error::from_abi(s, &err));
    return out;
  }

  // The events whose [start, end] overlaps [start_us, end_us].
  [[nodiscard]] Result<std::vector<FrameworkEvent>> framework_events(int64_t start_us, int64_t end_us) const {
    auto f = slot(&vigil_profiler_ext::framework_events);
    if (!f) return missing("framework_events");
    std::vector<FrameworkEvent> out;
    const vigil_framework_event_sink sink{&out, &push_framework};
    vigil_error err = fresh_error();
    const vigil_status s = f(session_, start_us, end_us, sink, &err);
    if (s != VIGIL_OK) return fail(Error::from_abi(s, &err));
    return out;
  }

 private:
  // The slot if the host's table has it (the table only grows by appended slots).
  template <class Fn>
  Fn slot(Fn vigil_profiler_ext::*member) const noexcept {
    if (!ext_) return nullptr;
    const auto offset = static_cast<size_t>(reinterpret_cast<const char*>(&(ext_->*member)) -
                                            reinterpret_cast<const char*>(ext_));
    if (static_cast<size_t>(ext_->struct_size) < offset + sizeof(Fn)) return nullptr;
    return ext_->*member;
  }
  static std::unexpected<Error> missing(std::string_view what) {
    return fail(Error::not_supported(fmt::format("the host's {} has no {}", VIGIL_PROFILER_EXTENSION_ID, what)));
  }
  static vigil_error fresh_error() noexcept {
    vigil_error err{};
    err.struct_size = sizeof(vigil_error);
    return err;
  }
  static std::string text(const char* s) { return s ? std::string(s) : std::string(); }

  static vigil_status VIGIL_CALL push_system(void* ctx, const vigil_system_metric* metrics, size_t count) noexcept {
#if defined(__cpp_exceptions)
    try {
#endif
      auto& out = *static_cast<std::vector<SystemMetric>*>(ctx);
      for (size_t i = 0; i < count; ++i) {
        const vigil_system_metric& m = metrics[i];
        out.push_back(SystemMetric{text(m.type), text(m.name), text(m.dimension), text(m.node_id), m.value, m.timestamp_s});
      }
      return VIGIL_OK;
#if defined(__cpp_exceptions)
    } catch (...) {
      return VIGIL_E_OUT_OF_MEMORY;
    }
#endif
  }
  static vigil_status VIGIL_CALL push_framework(void* ctx, const vigil_framework_event* events, size_t count) noexcept {
#if defined(__cpp_exceptions)
    try {
#endif
      auto& out = *static_cast<std::vector<FrameworkEvent>*>(ctx);
      for (size_t i = 0; i < count; ++i) {
        const vigil_framework_event& e = events[i];
        out.push_back(FrameworkEvent{text(e.name), text(e.phase), text(e.node_id),
                                     e.args_json && *e.args_json ? std::string(e.args_json) : std::string("{}"),
                                     e.start_us, e.end_us, e.pid, e.tid});
      }
      return VIGIL_OK;
#if defined(__cpp_exceptions)
    } catch (...) {
      return VIGIL_E_OUT_OF_MEMORY;
    }
#endif
  }

  const vigil_profiler_ext* ext_ = nullptr;
  vigil_session* session_ = nullptr;
};

// Base class of profiler rules. Derived classes implement invoke_for_timerange; the window length is
// the parameter scan_interval_us (every profiler rule has it, as in SageMaker) unless they override
// scan_interval_us().
class ProfilerRule : public Rule {
 public:
  // The SDK's factory lets rules with this marker be created without a tensor trial.
  static constexpr bool kReadsProfilerData = true;

  explicit ProfilerRule(RuleContext ctx) : Rule(std::move(ctx)), data_(host(), session()) {}

  // The window's verdict: true = the condition is met in window `w` (smdebug's
  // invoke_for_timerange). Called once per window, in order.
  [[nodiscard]] virtual Result<bool> invoke_for_timerange(const TimeWindow& w, const ProfilerEvents& events) = 0;

  // Called once the data has ended (the window `next` starts after the last data): return the
  // rule's final word. The default ends the rule normally (NoMoreProfilerData). ProfilerReport
  // returns Error::condition_met(..., end_of_rule = true) when a sub-rule fired.
  [[nodiscard]] virtual Result<bool> on_data_end(vigil_step next) {
    return fail(Error::no_more_profiler_data(fmt::format("no profiler data after window {}", next - 1)));
  }

  // The window length in µs: the parameter scan_interval_us.
  [[nodiscard]] virtual Result<int64_t> scan_interval_us() const {
    auto v = params().get<double>("scan_interval_us");
    if (!v) return fail(std::move(v).error());
    if (!(*v >= 1)) return fail(Error::invalid_argument("scan_interval_us must be at least 1"));
    return static_cast<int64_t>(*v);
  }

  [[nodiscard]] Result<bool> invoke_at_step(vigil_step step) final {
    if (!data_.available()) {
      not_judged("the host offers no profiler data (" VIGIL_PROFILER_EXTENSION_ID ")");
      return fail(Error::no_more_profiler_data("the host offers no profiler data"));
    }
    if (!first_timestamp_us_) {
      auto t0 = data_.first_timestamp();
      if (!t0) {
        if (t0.error().code == VIGIL_E_NO_MORE_PROFILER_DATA) not_judged("the job wrote no profiler data");
        return fail(std::move(t0).error());
      }
      first_timestamp_us_ = *t0;
    }
    auto interval = scan_interval_us();
    if (!interval) return fail(std::move(interval).error());
    const TimeWindow w{step, *first_timestamp_us_ + step * *interval, *first_timestamp_us_ + (step + 1) * *interval,
                       *first_timestamp_us_};
    if (auto ready = data_.wait_for_window(w.start_us, w.end_us); !ready) {
      if (ready.error().code == VIGIL_E_NO_MORE_PROFILER_DATA) return on_data_end(step);
      return fail(std::move(ready).error());
    }
    ProfilerEvents events;
    auto system = data_.system_metrics(w.start_us, w.end_us);
    if (!system) return fail(std::move(system).error());
    events.system = std::move(*system);
    auto framework = data_.framework_events(w.start_us, w.end_us);
    if (!framework) return fail(std::move(framework).error());
    events.framework = std::move(*framework);
    return invoke_for_timerange(w, events);
  }

  const ProfilerData& profiler_data() const noexcept { return data_; }
  // T0, once the first window has been invoked.
  std::optional<int64_t> first_timestamp_us() const noexcept { return first_timestamp_us_; }

 private:
  ProfilerData data_;
  std::optional<int64_t> first_timestamp_us_;
};

}  // namespace vigil::sdk::inline v1
