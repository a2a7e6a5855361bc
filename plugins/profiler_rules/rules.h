// The profiler rules as sdk::ProfilerRule classes: thin adapters from the host's windows to the
// engines (engines.h), and ProfilerReport (report.h).
#pragma once

#include <vigil/sdk.hpp>
#include <vigil/sdk/profiler.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "engines.h"
#include "report.h"

namespace vigil::profiler_rules {

// The time window of a firing, as evidence.
nlohmann::json window_json(const sdk::TimeWindow& w);

// A rule run on its own: the engine with the rule's parameters.
template <class E>
class EngineRule final : public sdk::ProfilerRule {
 public:
  static constexpr std::span<const sdk::ParamSpec> kParams = E::kParams;

  static Result<std::unique_ptr<EngineRule>> create(sdk::RuleContext ctx) {
    VIGIL_TRY(const auto p, ParamValues::from_params(E::kName, E::kParams, ctx.params));
    return std::unique_ptr<EngineRule>(new EngineRule(std::move(ctx), build_engine<E>(p, /*inside_report=*/false)));
  }

  Result<bool> invoke_for_timerange(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override {
    const bool fired = engine_.invoke(w, events);
    if (!fired && engine_.not_judged_reason()) not_judged(*engine_.not_judged_reason());
    if (fired) {
      nlohmann::json e = engine_.evidence();
      e["window"] = window_json(w);
      VIGIL_TRY_VOID(report_evidence(e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    }
    return fired;
  }

  const E& engine() const { return engine_; }

 private:
  EngineRule(sdk::RuleContext ctx, E engine) : ProfilerRule(std::move(ctx)), engine_(std::move(engine)) {}
  E engine_;
};

class ProfilerReport final : public sdk::ProfilerRule {
 public:
  static constexpr uint32_t kFlags = VIGIL_RULEF_EXTRA_PARAMS;  // the <RuleName>_<param> keys
  static constexpr sdk::ParamSpec kParams[] = {
      kScanInterval,
      sdk::param_bool("opt_out_telemetry", "False", "Accepted and ignored: Vigil sends no telemetry."),
  };
  static constexpr const char* kName = "ProfilerReport";

  static Result<std::unique_ptr<ProfilerReport>> create(sdk::RuleContext ctx);
  Result<bool> invoke_for_timerange(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override;
  Result<bool> on_data_end(vigil_step next) override;

  // <dir>/<configuration name>/profiler-output, as CreateXgboostReport names its report after the
  // configuration in the rule's output folder.
  static std::filesystem::path profiler_output(const std::filesystem::path& dir, const std::string& configuration_name);

 private:
  ProfilerReport(sdk::RuleContext ctx, ProfilerReportEngine engine)
      : ProfilerRule(std::move(ctx)), engine_(std::move(engine)) {}
  void write(const std::string& verdict);
  ProfilerReportEngine engine_;
};

}  // namespace vigil::profiler_rules
