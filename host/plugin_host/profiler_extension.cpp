#include "plugin_host/profiler_extension.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <optional>
#include <string>
#include <vector>

#include "plugin_host/abi_guard.h"
#include "profiler/system_metrics_reader.h"

namespace vigil::plugin_host {

namespace {

// Pushes in batches so a long window does not need one huge array of views.
constexpr size_t kBatch = 1024;

[[nodiscard]] vigil_status no_source(vigil_session* s, vigil_error* err) {
  return fail_with(Error::not_supported(fmt::format("{} is not run as a profiler rule (configure it in "
                                                    "ProfilerRuleConfigurations, or with --profiler-rule)",
                                                    s ? s->rule_name : std::string("this rule"))),
                   err);
}

[[nodiscard]] vigil_status cancelled(vigil_error* err) {
  return fail_with(Error{.code = ErrorCode::Cancelled, .message = "the evaluation is being stopped"}, err);
}

[[nodiscard]] vigil_status no_more_data(std::string message, vigil_error* err) {
  return fail_with(Error{.code = ErrorCode::NoMoreProfilerData, .message = std::move(message)}, err);
}

bool ended(ProfilerSource& src) { return !src.follow || src.trial.job_ended(); }

// Sleeps one poll interval; false when the evaluation is being stopped.
bool pause(vigil_session* s) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, s->stop, s->profiler->poll_interval, [] { return false; });
  return !s->stop.stop_requested();
}

// The latest file timestamp as smdebug's rules wait on it: the system files' latest, or the
// framework files' latest where that is smaller. Lists both kinds again first.
Result<std::optional<int64_t>> latest_file_timestamp(ProfilerSource& src) {
  auto& sys = src.trial.system_metrics();
  auto& fw = src.trial.framework_metrics();
  if (auto listed = sys.refresh(); !listed) return fail(listed.error());
  if (auto listed = fw.refresh(); !listed) return fail(listed.error());
  std::optional<int64_t> latest;
  if (!sys.files().empty()) latest = sys.files().back().timestamp_us;
  if (!fw.files().empty() && (!latest || fw.files().back().timestamp_us < *latest))
    latest = fw.files().back().timestamp_us;
  return latest;
}

// Where an ended job's data ends: its last system sample or its last framework file's last event.
// smdebug compares windows with the latest file's *name* (a system file is named by its first
// sample), which would give a job shorter than one file no window at all (docs/compatibility.md).
std::optional<int64_t> data_end_us(ProfilerSource& src) {
  std::optional<int64_t> end;
  auto& sys = src.trial.system_metrics();
  auto& fw = src.trial.framework_metrics();
  if (!sys.files().empty()) {
    const auto& last = sys.files().back();
    end = last.timestamp_us;
    if (auto rows = sys.read_file(last.relpath))
      for (const auto& r : *rows) end = std::max(*end, r.timestamp_ns() / 1000);
  }
  if (!fw.files().empty()) end = std::max(end.value_or(INT64_MIN), fw.files().back().timestamp_us);
  return end;
}

vigil_status VIGIL_CALL first_timestamp(vigil_session* s, int64_t* out_us, vigil_error* err) {
  if (!s || !out_us) return bad_argument("first_timestamp: NULL argument", err);
  if (!s->profiler) return no_source(s, err);
  return guarded(err, [&]() -> vigil_status {
    while (true) {
      {
        std::lock_guard lock(s->profiler->mu);
        auto t0 = s->profiler->trial.first_timestamp_us();
        if (!t0) return fail_with(t0.error(), err);
        if (*t0) {
          *out_us = **t0;
          return VIGIL_OK;
        }
        if (ended(*s->profiler))
          return no_more_data(fmt::format("no profiler data in {}", s->profiler->trial.location()), err);
      }
      if (!pause(s)) return cancelled(err);
    }
  });
}

vigil_status VIGIL_CALL wait_for_window(vigil_session* s, int64_t start_us, int64_t end_us, vigil_error* err) {
  if (!s) return bad_argument("wait_for_window: NULL session", err);
  if (!s->profiler) return no_source(s, err);
  if (end_us < start_us) return bad_argument("wait_for_window: end_us is before start_us", err);
  return guarded(err, [&]() -> vigil_status {
    for (bool first = true;; first = false) {
      {
        std::lock_guard lock(s->profiler->mu);
        auto& src = *s->profiler;
        const auto listed = latest_file_timestamp(src);
        if (!listed) return fail_with(listed.error(), err);
        const std::optional<int64_t>& latest = *listed;
        // Data past the window's end exists: it is complete (smdebug: end < latest, then end <= latest).
        if (latest && (first ? end_us < *latest : end_us <= *latest)) return VIGIL_OK;
        if (ended(src)) {
          const auto data_end = data_end_us(src);
          if (!data_end || start_us > *data_end)
            return no_more_data(fmt::format("the job has ended: no profiler data after {} us", data_end.value_or(0)),
                                err);
          return VIGIL_OK;
        }
      }
      if (!pause(s)) return cancelled(err);
    }
  });
}

vigil_status VIGIL_CALL system_metrics(vigil_session* s, int64_t start_us, int64_t end_us, const char* type,
                                       vigil_system_metric_sink out, vigil_error* err) {
  if (!s) return bad_argument("system_metrics: NULL session", err);
  if (!s->profiler) return no_source(s, err);
  if (!out.push) return bad_argument("system_metrics: the sink has no push", err);
  return guarded(err, [&]() -> vigil_status {
    std::vector<profiler::SystemMetric> rows;
    {
      std::lock_guard lock(s->profiler->mu);
      auto got = s->profiler->trial.system_metrics().events(
          start_us, end_us, type ? std::optional<std::string>(type) : std::nullopt);
      if (!got) return fail_with(got.error(), err);
      rows = std::move(*got);
    }
    std::vector<vigil_system_metric> batch;
    batch.reserve(std::min(rows.size(), kBatch));
    for (size_t i = 0; i < rows.size(); i += kBatch) {
      batch.clear();
      for (size_t j = i; j < std::min(rows.size(), i + kBatch); ++j) {
        const auto& r = rows[j];
        batch.push_back(vigil_system_metric{r.type.c_str(), r.name.c_str(), r.dimension.c_str(), r.node_id.c_str(),
                                            r.value, r.timestamp_s});
      }
      if (vigil_status st = out.push(out.ctx, batch.data(), batch.size()); st != VIGIL_OK)
        return fail_with(Error{.code = static_cast<ErrorCode>(st), .message = "the rule's sink refused the samples"}, err);
    }
    return VIGIL_OK;
  });
}

vigil_status VIGIL_CALL framework_events(vigil_session* s, int64_t start_us, int64_t end_us,
                                         vigil_framework_event_sink out, vigil_error* err) {
  if (!s) return bad_argument("framework_events: NULL session", err);
  if (!s->profiler) return no_source(s, err);
  if (!out.push) return bad_argument("framework_events: the sink has no push", err);
  return guarded(err, [&]() -> vigil_status {
    std::vector<profiler::TraceEvent> events;
    {
      std::lock_guard lock(s->profiler->mu);
      auto got = s->profiler->trial.framework_metrics().events(start_us, end_us);
      if (!got) return fail_with(got.error(), err);
      events = std::move(*got);
    }
    std::vector<std::string> args(std::min(events.size(), kBatch));
    std::vector<vigil_framework_event> batch;
    batch.reserve(args.size());
    for (size_t i = 0; i < events.size(); i += kBatch) {
      batch.clear();
      for (size_t j = i; j < std::min(events.size(), i + kBatch); ++j) {
        const auto& e = events[j];
        std::string& a = args[j - i];
        a = e.args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        batch.push_back(vigil_framework_event{e.name.c_str(), e.phase.c_str(), e.node_id.c_str(), a.c_str(),
                                              e.start_us, e.end_us, e.pid, e.tid});
      }
      if (vigil_status st = out.push(out.ctx, batch.data(), batch.size()); st != VIGIL_OK)
        return fail_with(Error{.code = static_cast<ErrorCode>(st), .message = "the rule's sink refused the events"}, err);
    }
    return VIGIL_OK;
  });
}

constexpr vigil_profiler_ext kTable = {
    .struct_size = sizeof(vigil_profiler_ext),
    .first_timestamp = first_timestamp,
    .wait_for_window = wait_for_window,
    .system_metrics = system_metrics,
    .framework_events = framework_events,
};

}  // namespace

const vigil_profiler_ext* profiler_extension() { return &kTable; }

}  // namespace vigil::plugin_host
