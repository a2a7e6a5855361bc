// What ProfilerReport's HTML page shows (builtin-rules §3.13), gathered by the ProfilerReport rule
// and rendered by render_profiler_report_html (report_html.h): the contract between the two.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vigil::profiler_rules {

// One sub-rule's report, as written to profiler-reports/<RuleName>.json.
struct RuleSummary {
  std::string name;        // "CPUBottleneck"
  std::string description; // one sentence: what the rule checks
  int64_t triggered = 0;   // RuleTriggered: windows in which it fired
  int64_t violations = 0;  // Violations
  int64_t datapoints = 0;  // Datapoints
  std::string parameters;  // RuleParameters: "name:value" lines
  nlohmann::json details = nlohmann::json::object();  // Details (rule-specific)
  std::optional<std::string> no_data_reason;  // set when the rule never had the data to judge
};

// A line of a timeline chart; x is seconds since the job's first timestamp.
struct TimeSeries {
  std::string label;  // "algo-1 cpu (all cores)", "algo-1 gpu0"
  std::vector<std::pair<double, double>> points;
};

struct ReportData {
  std::string title;  // the rule configuration's name ("ProfilerReport")
  std::string verdict;  // "IssuesFound" / "NoIssuesFound" / "InProgress"
  // Training job summary (from MaxInitializationTime's details), seconds since the epoch.
  std::optional<double> job_start_s, job_end_s, first_step_start_s, last_step_end_s;
  std::vector<RuleSummary> rules;  // in ProfilerReport's sub-rule order
  // Timelines, downsampled by the renderer as it needs.
  std::vector<TimeSeries> cpu, gpu, gpu_memory, memory, io_wait, network, disk;
  // Step durations: (step number, seconds), per node and phase key ("algo-1 Step:ModeKeys.TRAIN").
  std::map<std::string, std::vector<std::pair<int64_t, double>>> step_durations;
  std::map<std::string, std::vector<int64_t>> outlier_steps;  // same keys
  std::vector<double> dataloader_durations_s;
  std::map<std::string, double> phase_time_us;  // training phase -> total time in its events
  std::map<std::string, double> operator_time_us;  // framework event name -> total time
};

}  // namespace vigil::profiler_rules
