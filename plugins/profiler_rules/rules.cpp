#include "rules.h"

#include <cctype>

namespace vigil::profiler_rules {

nlohmann::json window_json(const sdk::TimeWindow& w) {
  return {{"index", w.index},
          {"start_us", w.start_us},
          {"end_us", w.end_us},
          {"start_s", static_cast<double>(w.start_us) / 1e6},
          {"end_s", static_cast<double>(w.end_us) / 1e6}};
}

std::filesystem::path ProfilerReport::profiler_output(const std::filesystem::path& dir,
                                                      const std::string& configuration_name) {
  std::string name;
  for (char c : configuration_name)
    name.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_');
  if (name.empty() || name.find_first_not_of('.') == std::string::npos) name = kName;
  return dir / name / "profiler-output";
}

Result<std::unique_ptr<ProfilerReport>> ProfilerReport::create(sdk::RuleContext ctx) {
  VIGIL_TRY(const auto overrides, parse_report_overrides(ctx.params.extra()));
  const std::string title = ctx.instance_name.empty() ? std::string(kName) : ctx.instance_name;
  // The engine's logger needs the rule, which does not exist yet: it forwards through a holder.
  auto holder = std::make_shared<const ProfilerReport*>(nullptr);
  VIGIL_TRY(auto engine, ProfilerReportEngine::create(overrides, title, [holder](std::string_view m) {
              if (*holder) (*holder)->log(VIGIL_LOG_WARNING, "{}", m);
            }));
  auto rule = std::unique_ptr<ProfilerReport>(new ProfilerReport(std::move(ctx), std::move(engine)));
  *holder = rule.get();
  return rule;
}

void ProfilerReport::write(const std::string& verdict) {
  std::filesystem::path dir;
  if (auto d = output_directory()) {
    dir = *d;
  } else {
    std::error_code ec;
    dir = std::filesystem::current_path(ec);
  }
  const auto out = profiler_output(dir, instance_name());
  // A report that cannot be written does not change the verdict: it is logged.
  if (auto ok = engine_.write(out, verdict); !ok) log(VIGIL_LOG_WARNING, "report not written: {}", ok.error().message);
}

Result<bool> ProfilerReport::invoke_for_timerange(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) {
  engine_.invoke(w, events);
  for (const auto& name : engine_.fired_last_window()) log(VIGIL_LOG_INFO, "window {}: {} fired", w.index, name);
  if (!engine_.judged_last_window()) not_judged("no sub-rule had the data to judge this window");
  write("InProgress");
  // Never a verdict mid-run: the single one comes when the data ends (§3.13).
  return false;
}

Result<bool> ProfilerReport::on_data_end(vigil_step next) {
  const bool fired = engine_.any_fired();
  write(fired ? "IssuesFound" : "NoIssuesFound");
  if (!fired) return ProfilerRule::on_data_end(next);
  nlohmann::json e = nlohmann::json::object();
  nlohmann::json rules = nlohmann::json::array();
  for (const RuleSummary& s : engine_.summaries())
    if (s.triggered > 0) rules.push_back({{"rule", s.name}, {"triggered", s.triggered}, {"violations", s.violations}});
  e["metric"] = "sub-rules that fired";
  e["observed"] = rules.size();
  e["threshold"] = 0;
  e["rules"] = std::move(rules);
  if (auto ok = report_evidence(e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)); !ok)
    log(VIGIL_LOG_WARNING, "evidence not reported: {}", ok.error().message);
  return sdk::fail(Error::condition_met(rule_name(), next - 1, /*end_of_rule=*/true));
}

}  // namespace vigil::profiler_rules
