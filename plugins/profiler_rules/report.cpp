#include "report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <set>

#include "report_html.h"

namespace vigil::profiler_rules {

namespace {

bool is_step(const sdk::FrameworkEvent& e) { return e.name.find("Step:ModeKeys") != std::string::npos; }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

Result<std::map<std::string, TextParams>> parse_report_overrides(
    std::span<const std::pair<std::string, std::string>> keys) {
  std::vector<std::string> names;
  for (const EngineType& t : engine_types())
    if (t.configurable) names.emplace_back(t.name);
  std::map<std::string, TextParams> out;
  for (const auto& [key, value] : keys) {
    const size_t underscore = key.find('_');
    if (underscore == std::string::npos || underscore == 0 || underscore + 1 == key.size())
      return sdk::fail(Error::invalid_argument(
          fmt::format("Key {} does not follow naming scheme: <rule_name>_<parameter_name>", key)));
    const std::string rule = key.substr(0, underscore), param = key.substr(underscore + 1);
    const EngineType* t = find_engine_type(rule);
    if (!t || !t->configurable)
      return sdk::fail(Error::invalid_argument(
          fmt::format("{} is an invalid rule name! (key {}) Accepted case insensitive rule names are: {}", rule, key,
                      join(names))));
    out[t->name][param] = value;
  }
  // Every rule's values pass its own checks (this also refuses unknown parameters).
  for (const auto& [rule, given] : out) {
    const EngineType* t = find_engine_type(rule);
    auto checked = ParamValues::parse(t->name, t->params, given);
    if (!checked) {
      sdk::Error e = std::move(checked).error();
      // Name the key as the user wrote the parameter.
      for (const auto& [param, value] : given) {
        (void)value;
        if (e.message.find(param) != std::string::npos) {
          e.message += fmt::format(" (key {}_{})", rule, param);
          break;
        }
      }
      return sdk::fail(std::move(e));
    }
  }
  return out;
}

Result<ProfilerReportEngine> ProfilerReportEngine::create(const std::map<std::string, TextParams>& overrides,
                                                          std::string title, Logger log) {
  ProfilerReportEngine r;
  r.title_ = std::move(title);
  r.log_ = std::move(log);
  for (const EngineType& t : engine_types()) {
    const auto it = overrides.find(t.name);
    VIGIL_TRY(const auto p, ParamValues::parse(t.name, t.params, it == overrides.end() ? TextParams{} : it->second));
    if (std::string_view(t.name) == StepOutlier::kName) r.step_mode_ = p.text("mode");
    r.subs_.push_back(Sub{t.make(p, /*inside_report=*/true)});
  }
  return r;
}

const Engine* ProfilerReportEngine::engine(std::string_view name) const {
  for (const Sub& s : subs_)
    if (!s.failed && s.engine->name() == name) return s.engine.get();
  return nullptr;
}

bool ProfilerReportEngine::invoke(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  judged_last_ = false;
  fired_last_.clear();
  for (Sub& s : subs_) {
    if (s.failed) continue;
    try {
      if (s.engine->invoke(w, events)) {
        fired_ = true;
        fired_last_.emplace_back(s.engine->name());
      }
      judged_last_ = judged_last_ || !s.engine->not_judged_reason();
    } catch (const std::exception& e) {
      // The original's handler crashes the whole rule (§3.13); Vigil leaves the sub-rule out.
      s.failed = true;
      failed_.emplace_back(s.engine->name());
      if (log_) log_(fmt::format("{} failed in window {} and is left out of the report: {}", s.engine->name(), w.index,
                                 e.what()));
    }
  }
  collect(w, events);
  return fired_;
}

BoundedSeries<double>& ProfilerReportEngine::series(std::map<std::string, BoundedSeries<double>>& m,
                                                    const std::string& label) {
  return m.try_emplace(label, kMaxPoints).first->second;
}

void ProfilerReportEngine::collect(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  if (!previous_end_us_) first_timestamp_us_ = w.first_timestamp_us;
  const auto x_of = [&](double ts_s) { return ts_s - static_cast<double>(first_timestamp_us_) / 1e6; };
  // A sample exactly on the boundary and an event spanning it came with the previous window too.
  const auto seen_system = [&](const sdk::SystemMetric& m) {
    return previous_end_us_ && std::llround(m.timestamp_s * 1e6) <= *previous_end_us_;
  };
  // Per node and timestamp: sums and counts of the metrics averaged over cores.
  struct Acc {
    double sum = 0;
    int n = 0;
  };
  std::map<std::string, std::map<double, Acc>> cpu, io, net;
  for (const sdk::SystemMetric& m : events.system) {
    if (seen_system(m)) continue;
    const double x = x_of(m.timestamp_s);
    if (m.dimension == "CPUUtilization") {
      auto& a = cpu[m.node_id][m.timestamp_s];
      a.sum += m.value, ++a.n;
    } else if (m.dimension == "GPUUtilization") {
      series(gpu_, m.node_id + " " + m.name).add(x, m.value);
    } else if (m.dimension == "GPUMemoryUtilization") {
      series(gpu_memory_, m.node_id + " " + m.name).add(x, m.value);
    } else if (m.name == "MemoryUsedPercent") {
      series(memory_, m.node_id + " memory").add(x, m.value);
    } else if (m.dimension == "I/OWaitPercentage") {
      auto& a = io[m.node_id][m.timestamp_s];
      a.sum += m.value, ++a.n;
    } else if (m.dimension == "Algorithm") {
      auto& a = net[m.node_id][m.timestamp_s];
      a.sum += m.value, ++a.n;
    }
  }
  for (const auto& [node, by_ts] : cpu)
    for (const auto& [ts, a] : by_ts) series(cpu_, node + " cpu (all cores)").add(x_of(ts), a.sum / a.n);
  for (const auto& [node, by_ts] : io)
    for (const auto& [ts, a] : by_ts) series(io_wait_, node + " I/O wait").add(x_of(ts), a.sum / a.n);
  for (const auto& [node, by_ts] : net)
    for (const auto& [ts, a] : by_ts) series(network_, node + " network").add(x_of(ts), a.sum);

  for (const sdk::FrameworkEvent& e : events.framework) {
    if (previous_end_us_ && e.start_us <= *previous_end_us_) continue;
    const auto dur = static_cast<double>(e.duration_us());
    phase_time_us_[e.phase.empty() ? "(no phase)" : e.phase] += dur;
    if (operator_time_us_.contains(e.name) || operator_time_us_.size() < kMaxOperators) operator_time_us_[e.name] += dur;
    else operator_time_us_["(other operators)"] += dur;
    if (is_step(e) || (step_mode_ && e.name == *step_mode_)) {
      steps_.try_emplace(e.node_id + " " + e.name, kMaxPoints, /*keep_max=*/true)
          .first->second.add(event_step_num(e).value_or(-1), dur / 1e6);
    }
    if (e.phase == "DataLoaderWorker" || e.phase == "DataLoaderIter") {
      // Decimated when full: every other value is dropped and later ones are kept as sparsely.
      if (dataloader_seen_++ % dataloader_stride_ == 0) dataloader_s_.push_back(dur / 1e6);
      if (dataloader_s_.size() >= kMaxDataloader) {
        std::vector<double> kept;
        for (size_t i = 0; i < dataloader_s_.size(); i += 2) kept.push_back(dataloader_s_[i]);
        dataloader_s_ = std::move(kept);
        dataloader_stride_ *= 2;
      }
    }
  }
  previous_end_us_ = w.end_us;
}

std::vector<RuleSummary> ProfilerReportEngine::summaries() const {
  std::vector<RuleSummary> out;
  for (const Sub& s : subs_)
    if (!s.failed) out.push_back(s.engine->summary());
  return out;
}

ReportData ProfilerReportEngine::report_data(const std::string& verdict) const {
  ReportData d;
  d.title = title_;
  d.verdict = verdict;
  if (const auto* m = dynamic_cast<const MaxInitializationTime*>(engine(MaxInitializationTime::kName))) {
    d.job_start_s = m->job_start_s();
    d.job_end_s = m->job_end_s();
    if (m->first_step_start_us()) d.first_step_start_s = static_cast<double>(*m->first_step_start_us()) / 1e6;
    if (m->last_step_end_us()) d.last_step_end_s = static_cast<double>(*m->last_step_end_us()) / 1e6;
  }
  d.rules = summaries();
  const auto timelines = [](const std::map<std::string, BoundedSeries<double>>& m) {
    std::vector<TimeSeries> out;
    for (const auto& [label, s] : m) out.push_back(TimeSeries{label, s.points()});
    return out;
  };
  d.cpu = timelines(cpu_);
  d.gpu = timelines(gpu_);
  d.gpu_memory = timelines(gpu_memory_);
  d.memory = timelines(memory_);
  d.io_wait = timelines(io_wait_);
  d.network = timelines(network_);
  for (const auto& [key, s] : steps_) d.step_durations[key] = s.points();
  if (const auto* so = dynamic_cast<const StepOutlier*>(engine(StepOutlier::kName))) {
    for (const auto& [key, steps] : so->outlier_steps()) {
      auto& out = d.outlier_steps[key];
      // Bounded like the series: the latest ones.
      const size_t from = steps.size() > kMaxPoints ? steps.size() - kMaxPoints : 0;
      out.assign(steps.begin() + static_cast<std::ptrdiff_t>(from), steps.end());
    }
  }
  d.dataloader_durations_s = dataloader_s_;
  d.phase_time_us = phase_time_us_;
  d.operator_time_us = operator_time_us_;
  return d;
}

Result<void> write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return sdk::fail(Error::make(VIGIL_E_IO, fmt::format("cannot create {}: {}", path.parent_path().string(),
                                                               ec.message())));
  const auto tmp = path.parent_path() / fmt::format(".{}.{}.tmp", path.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return sdk::fail(Error::make(VIGIL_E_IO, fmt::format("cannot write {}", tmp.string())));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return sdk::fail(Error::make(VIGIL_E_IO, fmt::format("cannot rename {} to {}", tmp.string(), path.string())));
  }
  return {};
}

Result<void> ProfilerReportEngine::write(const std::filesystem::path& profiler_output, const std::string& verdict) const {
  for (const RuleSummary& s : summaries()) {
    const nlohmann::json j = {{"RuleTriggered", s.triggered},
                              {"Violations", s.violations},
                              {"Datapoints", s.datapoints},
                              {"RuleParameters", s.parameters},
                              {"Details", s.details}};
    VIGIL_TRY_VOID(write_file_atomically(profiler_output / "profiler-reports" / (s.name + ".json"),
                                         j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
  }
  return write_file_atomically(profiler_output / "profiler-report.html", render_profiler_report_html(report_data(verdict)));
}

}  // namespace vigil::profiler_rules
