// A profiler rule built with the SDK (sdk/profiler.hpp over the extension vigil.profiler/1): fires in
// a window where a core's CPUUtilization exceeds `threshold`, and says it did not judge a window
// without samples.
#include <vigil/sdk.hpp>

namespace {

namespace sdk = vigil::sdk;

class HotCpu final : public sdk::ProfilerRule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("threshold", "90", "CPUUtilization (%) above which a window fires.").range(0, 100),
      sdk::param_double("scan_interval_us", "1000000", "The window length in µs.").min(1),
  };
  explicit HotCpu(sdk::RuleContext ctx) : ProfilerRule(std::move(ctx)), threshold_(params().get_double("threshold")) {}

  sdk::Result<bool> invoke_for_timerange(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override {
    const sdk::SystemMetric* hottest = nullptr;
    size_t cpu_samples = 0;
    for (const auto& m : events.system) {
      if (m.dimension != "CPUUtilization") continue;
      ++cpu_samples;
      if (!hottest || m.value > hottest->value) hottest = &m;
    }
    log(VIGIL_LOG_DEBUG, "window {}: {} cpu samples, {} framework events", w.index, cpu_samples, events.framework.size());
    if (!hottest) {
      not_judged(fmt::format("window {} has no CPUUtilization samples", w.index));
      return false;
    }
    if (hottest->value <= threshold_) return false;
    auto evidence = sdk::JsonObject()
                        .add("window_start_us", w.start_us)
                        .add("window_end_us", w.end_us)
                        .add("metric", hottest->dimension)
                        .add("name", hottest->name)
                        .add("node_id", hottest->node_id)
                        .add("value", hottest->value)
                        .add("threshold", threshold_)
                        .add("framework_events", static_cast<int64_t>(events.framework.size()))
                        .str();
    if (auto r = report_evidence(evidence); !r) return sdk::fail(std::move(r).error());
    return true;
  }

 private:
  double threshold_;
};

}  // namespace

VIGIL_PLUGIN("vigil.test.profiler-rules", "1.0.0",
             VIGIL_RULE(HotCpu, "vigil.test.HotCpu", "HotCpu", "Fires in a window with a core above the threshold."));
