// sdk/profiler.hpp: ProfilerRule's windows over a host's vigil.profiler/1 table, the end of the data,
// and a host without the extension; the factory creates profiler rules without a tensor trial.
#include <gtest/gtest.h>
#include <vigil/sdk.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "fake_host.hpp"

namespace {

namespace sdk = vigil::sdk;

// Records the windows and data it is given; fires when a window holds a sample above 150.
class Windows final : public sdk::ProfilerRule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("scan_interval_us", "1000", "window length").min(1),
  };
  explicit Windows(sdk::RuleContext ctx) : ProfilerRule(std::move(ctx)) {}
  sdk::Result<bool> invoke_for_timerange(const sdk::TimeWindow& w, const sdk::ProfilerEvents& events) override {
    windows.push_back(w);
    seen.push_back(events);
    for (const auto& m : events.system)
      if (m.value > 150) return true;
    return false;
  }
  sdk::Result<bool> on_data_end(vigil_step next) override {
    ended_at = next;
    return ProfilerRule::on_data_end(next);
  }
  std::vector<sdk::TimeWindow> windows;
  std::vector<sdk::ProfilerEvents> seen;
  vigil_step ended_at = -1;
};

class NotAProfilerRule final : public sdk::Rule {
 public:
  using Rule::Rule;
  sdk::Result<bool> invoke_at_step(vigil_step) override { return false; }
};

// A host's extension table over fixed data: samples at T0 + 100 µs * i with value i * 10, one event.
struct FakeProfilerData {
  static constexpr int64_t kT0 = 5'000'000;
  static inline int64_t data_end = kT0 + 2500;
  static inline std::vector<std::pair<int64_t, int64_t>> waits;

  static vigil_status VIGIL_CALL first(vigil_session*, int64_t* out, vigil_error*) {
    *out = kT0;
    return VIGIL_OK;
  }
  static vigil_status VIGIL_CALL wait(vigil_session*, int64_t start, int64_t end, vigil_error* err) {
    waits.emplace_back(start, end);
    if (start > data_end) return fake::fill_error(err, VIGIL_E_NO_MORE_PROFILER_DATA, "the job has ended");
    return VIGIL_OK;
  }
  static vigil_status VIGIL_CALL system(vigil_session*, int64_t start, int64_t end, const char*,
                                        vigil_system_metric_sink out, vigil_error*) {
    for (int i = 0; i < 30; ++i) {
      const int64_t t = kT0 + 100 * i;
      if (t < start || t > end) continue;
      const vigil_system_metric m{"cpu", "cpu0", "CPUUtilization", "algo-1", i * 10.0, t / 1e6};
      if (vigil_status s = out.push(out.ctx, &m, 1); s != VIGIL_OK) return s;
    }
    return VIGIL_OK;
  }
  static vigil_status VIGIL_CALL framework(vigil_session*, int64_t start, int64_t end, vigil_framework_event_sink out,
                                           vigil_error*) {
    const vigil_framework_event e{"Step:ModeKeys.TRAIN", "Step:ModeKeys.TRAIN", "algo-1", "{\"step_num\": 3}",
                                  kT0 + 200, kT0 + 1200, 7, 8};
    if (e.end_us < start || e.start_us > end) return VIGIL_OK;
    return out.push(out.ctx, &e, 1);
  }
  static inline const vigil_profiler_ext table = {sizeof(vigil_profiler_ext), first, wait, system, framework};
  static const void* VIGIL_CALL get_extension(const vigil_host_api*, const char* id) {
    return std::strcmp(id, VIGIL_PROFILER_EXTENSION_ID) == 0 ? &table : nullptr;
  }
};

// Creates `R` through the SDK's factory path with no trials and the spec defaults as values.
template <class R>
vigil_status create_without_trials(const vigil_host_api* api, vigil_session* session, vigil_rule** out, vigil_error* err) {
  static const auto specs = [] {
    std::vector<vigil_param_spec> v;
    for (const auto& p : sdk::detail::rule_params<R>()) v.push_back(p.spec());
    return v;
  }();
  std::vector<vigil_param_value> values;
  for (const auto& s : specs) {
    vigil_param_value v{s.type, s.default_text != nullptr, s.default_text, {}, nullptr, 0};
    if (s.type == VIGIL_PARAM_DOUBLE) v.v.d = std::strtod(s.default_text, nullptr);
    values.push_back(v);
  }
  vigil_rule_descriptor desc{};
  desc.struct_size = sizeof(desc);
  desc.id = "vigil.test.Windows";
  desc.name = "Windows";
  desc.params = specs.data();
  desc.param_count = static_cast<uint32_t>(specs.size());
  vigil_rule_context ctx{};
  ctx.struct_size = sizeof(ctx);
  ctx.host = api;
  ctx.session = session;
  ctx.trials = nullptr;
  ctx.trial_count = 0;
  ctx.params = values.empty() ? nullptr : values.data();
  ctx.param_count = static_cast<uint32_t>(values.size());
  ctx.instance_name = "w";
  return sdk::detail::create_rule<R>(&desc, &ctx, out, err);
}

Windows& as_windows(vigil_rule* r) {
  return static_cast<Windows&>(*static_cast<sdk::detail::RuleHandle*>(r->rule_data)->rule);
}

TEST(ProfilerRule, WindowsFollowTheFirstTimestampAndTheDataReachesTheRule) {
  vigil_host_api api = fake::host_api();
  api.get_extension = FakeProfilerData::get_extension;
  vigil_session session;
  vigil_rule* rule = nullptr;
  vigil_error err{sizeof(vigil_error)};
  ASSERT_EQ(create_without_trials<Windows>(&api, &session, &rule, &err), VIGIL_OK) << err.message;
  FakeProfilerData::waits.clear();
  std::vector<bool> met;
  vigil_status last = VIGIL_OK;
  for (vigil_step k = 0; k < 10; ++k) {
    bool m = false;
    last = rule->invoke_at_step(rule, k, &m, &err);
    if (last != VIGIL_OK) break;
    met.push_back(m);
  }
  // 1000 µs windows from T0; data ends at T0 + 2500, so window 3 (starting at T0 + 3000) ends the rule.
  EXPECT_EQ(last, VIGIL_E_NO_MORE_PROFILER_DATA);
  EXPECT_EQ(met, (std::vector<bool>{false, true, true}));  // values above 150 from sample 16 (T0 + 1600)
  auto& w = as_windows(rule);
  ASSERT_EQ(w.windows.size(), 3u);
  EXPECT_EQ(w.windows[1].start_us, FakeProfilerData::kT0 + 1000);
  EXPECT_EQ(w.windows[1].end_us, FakeProfilerData::kT0 + 2000);
  EXPECT_EQ(w.windows[1].first_timestamp_us, FakeProfilerData::kT0);
  EXPECT_EQ(w.ended_at, 3);
  EXPECT_EQ(FakeProfilerData::waits.size(), 4u);
  // Window 0 is [T0, T0 + 1000]: samples 0..10 (bounds inclusive), and the step event.
  ASSERT_EQ(w.seen[0].system.size(), 11u);
  EXPECT_EQ(w.seen[0].system[3].name, "cpu0");
  EXPECT_EQ(w.seen[0].system[3].node_id, "algo-1");
  EXPECT_DOUBLE_EQ(w.seen[0].system[3].value, 30);
  ASSERT_EQ(w.seen[0].framework.size(), 1u);
  EXPECT_EQ(w.seen[0].framework[0].args_json, "{\"step_num\": 3}");
  EXPECT_EQ(w.seen[0].framework[0].duration_us(), 1000);
  EXPECT_EQ(w.seen[0].framework[0].pid, 7);
  EXPECT_EQ(w.seen[2].framework.size(), 0u);
  rule->destroy(rule);
}

TEST(ProfilerRule, OnAHostWithoutTheExtensionItSaysItCouldNotJudgeAndEnds) {
  vigil_host_api api = fake::host_api();  // offers only "vigil.fake/1"
  vigil_session session;
  vigil_rule* rule = nullptr;
  vigil_error err{sizeof(vigil_error)};
  ASSERT_EQ(create_without_trials<Windows>(&api, &session, &rule, &err), VIGIL_OK) << err.message;
  bool met = true;
  EXPECT_EQ(rule->invoke_at_step(rule, 0, &met, &err), VIGIL_E_NO_MORE_PROFILER_DATA);
  EXPECT_FALSE(met);
  ASSERT_EQ(session.not_judged.size(), 1u);
  EXPECT_NE(session.not_judged[0].find(VIGIL_PROFILER_EXTENSION_ID), std::string::npos);
  EXPECT_TRUE(as_windows(rule).windows.empty());
  rule->destroy(rule);
}

TEST(ProfilerRule, OnlyProfilerRulesAreCreatedWithoutATrial) {
  vigil_host_api api = fake::host_api();
  vigil_session session;
  vigil_rule* rule = nullptr;
  vigil_error err{sizeof(vigil_error)};
  EXPECT_EQ(create_without_trials<NotAProfilerRule>(&api, &session, &rule, &err), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(rule, nullptr);
  EXPECT_NE(std::string(err.message).find("no base trial"), std::string::npos) << err.message;
}

}  // namespace
