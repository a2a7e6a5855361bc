// The profiler config file (format spec §8.4, sagemaker-api §7): every field, keys in any case,
// values as written, each refusal naming its field, the windows, and re-reading on change.
#include "profiler/profiler_config.h"

#include <stdlib.h>

#include <fstream>
#include <thread>

#include "profiler/profiling_window.h"
#include "test_support.h"

namespace vigil::profiler {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// The spec's example with every field set away from its default.
constexpr std::string_view kFullConfig = R"({
  "ProfilingParameters": {
    "ProfilerEnabled": true,
    "ProfilingIntervalInMilliseconds": 200,
    "LocalPath": "/Tmp/My Profiler",
    "RotateMaxFileSizeInBytes": 2048,
    "RotateFileCloseIntervalInSeconds": 1.5,
    "FileOpenFailThreshold": 7,
    "CPUProfilingDuration": 3600,
    "SMPFileRotationSecs": "600",
    "DetailedProfilingConfig":      "{\"StartStep\": 5, \"NumSteps\": 3}",
    "DataloaderProfilingConfig":    "{'StartStep': 7, 'MetricsRegex': 'DataLoader.*Iter'}",
    "PythonProfilingConfig":        "{\"StartStep\": 9, \"NumSteps\": 3, \"ProfilerName\": \"PyInstrument\", \"cProfileTimer\": \"cpu_time\"}",
    "HorovodProfilingConfig":       "{\"StartStep\": 13, }",
    "SMDataparallelProfilingConfig":"{\"StartTimeInSecSinceEpoch\": 1700000000.5, \"DurationInSeconds\": 5}"
  },
  "DisableProfiler": false
})";

TEST(ProfilerConfig, ReadsEveryField) {
  auto c = parse_profiler_config(kFullConfig);
  ASSERT_VIGIL_OK(c);
  EXPECT_TRUE(c->file_found);
  EXPECT_FALSE(c->disable_profiler);
  EXPECT_TRUE(c->profiler_enabled);
  EXPECT_TRUE(c->has_profiling_parameters);
  EXPECT_TRUE(c->system_monitor_enabled());
  EXPECT_TRUE(c->framework_profiling_enabled());
  EXPECT_EQ(c->interval_ms, 200);
  EXPECT_EQ(c->local_path, fs::path("/Tmp/My Profiler"));  // as written, capitals and all
  EXPECT_EQ(c->rotate_max_file_size_bytes, 2048u);
  EXPECT_DOUBLE_EQ(c->rotate_file_close_interval_s, 1.5);
  EXPECT_EQ(c->file_open_fail_threshold, 7);
  EXPECT_EQ(c->cpu_profiling_duration_s, 3600);
  EXPECT_EQ(c->smp_file_rotation_s, 600);

  EXPECT_TRUE(c->detailed.enabled);
  EXPECT_EQ(c->detailed.start_step, 5);
  EXPECT_EQ(c->detailed.num_steps, 3);
  EXPECT_FALSE(c->detailed.is_time_range());

  EXPECT_TRUE(c->dataloader.enabled);
  EXPECT_EQ(c->dataloader.start_step, 7);
  EXPECT_EQ(c->dataloader.num_steps, 1);  // the default
  EXPECT_EQ(c->dataloader.metrics_regex, "DataLoader.*Iter");  // as written

  EXPECT_TRUE(c->python.enabled);
  EXPECT_EQ(c->python.start_step, 9);
  EXPECT_EQ(c->python.num_steps, 3);
  EXPECT_EQ(c->python.profiler_name, "pyinstrument");
  EXPECT_EQ(c->python.cprofile_timer, "cpu_time");

  EXPECT_TRUE(c->horovod.enabled);
  EXPECT_EQ(c->horovod.start_step, 13);

  EXPECT_TRUE(c->smdataparallel.enabled);
  EXPECT_TRUE(c->smdataparallel.is_time_range());
  EXPECT_DOUBLE_EQ(*c->smdataparallel.start_time, 1700000000.5);
  EXPECT_DOUBLE_EQ(*c->smdataparallel.duration, 5);
  EXPECT_TRUE(c->problems.empty());
}

TEST(ProfilerConfig, Defaults) {
  auto c = parse_profiler_config(R"({"ProfilingParameters": {"ProfilerEnabled": true}})");
  ASSERT_VIGIL_OK(c);
  EXPECT_EQ(c->interval_ms, 500);
  EXPECT_EQ(c->local_path, fs::path("/opt/ml/output/profiler"));
  EXPECT_EQ(c->rotate_max_file_size_bytes, 10485760u);
  EXPECT_DOUBLE_EQ(c->rotate_file_close_interval_s, 60);
  EXPECT_EQ(c->file_open_fail_threshold, 50);
  EXPECT_FALSE(c->detailed.enabled);
  EXPECT_FALSE(c->python.enabled);
  EXPECT_EQ(c->python.profiler_name, "cprofile");
  EXPECT_EQ(c->python.cprofile_timer, "total_time");
  EXPECT_EQ(c->dataloader.metrics_regex, ".*");
  EXPECT_FALSE(c->cpu_profiling_duration_s);
}

TEST(ProfilerConfig, KeysInAnyCaseValuesAsWritten) {
  auto c = parse_profiler_config(R"({
    "profilingparameters": {
      "LOCALPATH": "/Data/Out",
      "profilingintervalinmilliseconds": "1000",
      "pythonprofilingconfig": "{'startstep': 2, 'NUMSTEPS': 4, 'profilername': 'cProfile'}"
    },
    "DISABLEPROFILER": "False"
  })");
  ASSERT_VIGIL_OK(c);
  EXPECT_EQ(c->local_path, fs::path("/Data/Out"));
  EXPECT_EQ(c->interval_ms, 1000);
  EXPECT_EQ(c->python.start_step, 2);
  EXPECT_EQ(c->python.num_steps, 4);
  EXPECT_EQ(c->python.profiler_name, "cprofile");
  EXPECT_FALSE(c->disable_profiler);
}

TEST(ProfilerConfig, IntervalBesideProfilingParametersAsInTheApi) {
  auto c = parse_profiler_config(R"({"ProfilingIntervalInMilliseconds": 5000, "ProfilingParameters": {}})");
  ASSERT_VIGIL_OK(c);
  EXPECT_EQ(c->interval_ms, 5000);
  EXPECT_FALSE(c->has_profiling_parameters);
  EXPECT_FALSE(c->framework_profiling_enabled());  // empty ProfilingParameters: smdebug's rule
  EXPECT_TRUE(c->system_monitor_enabled());
}

TEST(ProfilerConfig, EveryAllowedInterval) {
  for (int ms : {100, 200, 500, 1000, 5000, 60000}) {
    auto c = parse_profiler_config(fmt::format(R"({{"ProfilingParameters": {{"ProfilingIntervalInMilliseconds": {}}}}})", ms));
    ASSERT_VIGIL_OK(c) << ms;
    EXPECT_EQ(c->interval_ms, ms);
  }
}

TEST(ProfilerConfig, DisableProfilerTurnsEverythingOff) {
  auto c = parse_profiler_config(R"({"ProfilingParameters": {"LocalPath": "/x"}, "DisableProfiler": true})");
  ASSERT_VIGIL_OK(c);
  EXPECT_TRUE(c->disable_profiler);
  EXPECT_FALSE(c->system_monitor_enabled());
  EXPECT_FALSE(c->framework_profiling_enabled());
  auto off = parse_profiler_config(R"({"ProfilingParameters": {"ProfilerEnabled": "false", "LocalPath": "/x"}})");
  ASSERT_VIGIL_OK(off);
  EXPECT_FALSE(off->system_monitor_enabled());
}

TEST(ProfilerConfig, EmptyMetricsStringIsNotConfigured) {
  auto c = parse_profiler_config(R"({"ProfilingParameters": {"DetailedProfilingConfig": "  ", "PythonProfilingConfig": "{}"}})");
  ASSERT_VIGIL_OK(c);
  EXPECT_FALSE(c->detailed.enabled);
  EXPECT_FALSE(c->python.enabled);
}

TEST(ProfilerConfig, BothKindsOfRangeDisableThatConfigWithAProblem) {
  auto c = parse_profiler_config(R"({"ProfilingParameters": {
      "DetailedProfilingConfig": "{'StartStep': 1, 'StartTimeInSecSinceEpoch': 1700000000}",
      "PythonProfilingConfig": "{'StartStep': 3}"}})");
  ASSERT_VIGIL_OK(c);
  EXPECT_FALSE(c->detailed.enabled);
  EXPECT_TRUE(c->python.enabled);
  ASSERT_EQ(c->problems.size(), 1u);
  EXPECT_TRUE(c->problems[0].starts_with("ProfilingParameters.DetailedProfilingConfig: ")) << c->problems[0];
}

// Each bad value is refused with a message that starts with the field it is in.
TEST(ProfilerConfig, RefusalsNameTheField) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"ProfilingParameters": {"ProfilingIntervalInMilliseconds": 300}})",
       "ProfilingParameters.ProfilingIntervalInMilliseconds: 300 is not one of 100, 200, 500, 1000, 5000, 60000"},
      {R"({"ProfilingIntervalInMilliseconds": "fast"})", "ProfilingIntervalInMilliseconds: \"fast\" is not an integer"},
      {R"({"ProfilingParameters": {"LocalPath": 3}})", "ProfilingParameters.LocalPath: 3 is not a non-empty path"},
      {R"({"ProfilingParameters": {"LocalPath": ""}})", "ProfilingParameters.LocalPath: "},
      {R"({"ProfilingParameters": {"RotateMaxFileSizeInBytes": 0}})",
       "ProfilingParameters.RotateMaxFileSizeInBytes: 0 must be at least 1"},
      {R"({"ProfilingParameters": {"RotateMaxFileSizeInBytes": 1.5}})",
       "ProfilingParameters.RotateMaxFileSizeInBytes: 1.5 is not an integer"},
      {R"({"ProfilingParameters": {"RotateFileCloseIntervalInSeconds": -1}})",
       "ProfilingParameters.RotateFileCloseIntervalInSeconds: -1 must be positive"},
      {R"({"ProfilingParameters": {"FileOpenFailThreshold": "many"}})",
       "ProfilingParameters.FileOpenFailThreshold: \"many\" is not an integer"},
      {R"({"ProfilingParameters": {"ProfilerEnabled": "yes"}})",
       "ProfilingParameters.ProfilerEnabled: \"yes\" is not true or false"},
      {R"({"DisableProfiler": 1})", "DisableProfiler: 1 is not true or false"},
      {R"({"ProfilingParameters": {"DetailedProfilingConfig": {"StartStep": 1}}})",
       "ProfilingParameters.DetailedProfilingConfig: {\"StartStep\":1} is not a string holding a dict literal"},
      {R"({"ProfilingParameters": {"DetailedProfilingConfig": "{\"StartStep\": true}"}})",
       "ProfilingParameters.DetailedProfilingConfig: expected a string, a number, True, False or None at character 15"},
      {R"({"ProfilingParameters": {"DetailedProfilingConfig": "{'StartStep': -1}"}})",
       "ProfilingParameters.DetailedProfilingConfig.StartStep: -1 must not be negative"},
      {R"({"ProfilingParameters": {"DetailedProfilingConfig": "{'StartStep': 1.5}"}})",
       "ProfilingParameters.DetailedProfilingConfig.StartStep: 1.5 is not an integer"},
      {R"({"ProfilingParameters": {"DataloaderProfilingConfig": "{'NumSteps': 0}"}})",
       "ProfilingParameters.DataloaderProfilingConfig.NumSteps: 0 must be at least 1"},
      {R"({"ProfilingParameters": {"DataloaderProfilingConfig": "{'MetricsRegex': 5}"}})",
       "ProfilingParameters.DataloaderProfilingConfig.MetricsRegex: 5 is not a string"},
      {R"({"ProfilingParameters": {"PythonProfilingConfig": "{'ProfilerName': 'yappi'}"}})",
       "ProfilingParameters.PythonProfilingConfig.ProfilerName: 'yappi' is not one of cprofile, pyinstrument"},
      {R"({"ProfilingParameters": {"PythonProfilingConfig": "{'cProfileTimer': 'wall'}"}})",
       "ProfilingParameters.PythonProfilingConfig.cProfileTimer: 'wall' is not one of total_time, cpu_time, off_cpu_time, default"},
      {R"({"ProfilingParameters": {"SMDataparallelProfilingConfig": "{'StartTimeInSecSinceEpoch': 'soon'}"}})",
       "ProfilingParameters.SMDataparallelProfilingConfig.StartTimeInSecSinceEpoch: 'soon' is not a number"},
      {R"({"ProfilingParameters": {"SMDataparallelProfilingConfig": "{'StartTimeInSecSinceEpoch': 1, 'DurationInSeconds': 0}"}})",
       "ProfilingParameters.SMDataparallelProfilingConfig.DurationInSeconds: 0 must be positive"},
      {R"({"ProfilingParameters": {"LocalPath": "/a", "localpath": "/b"}})",
       "ProfilingParameters: LocalPath is given twice (keys differ only in case)"},
      {R"({"ProfilingParameters": []})", "ProfilingParameters: [] is not an object"},
      {R"([1])", "the profiler config is not a JSON object"},
      {R"({"ProfilingParameters": )", "the profiler config is not valid JSON"},
  };
  for (const auto& [text, message] : cases) {
    auto c = parse_profiler_config(text);
    ASSERT_FALSE(c) << text;
    EXPECT_EQ(c.error().code, ErrorCode::InvalidArgument);
    EXPECT_TRUE(c.error().message.starts_with(message)) << "got: " << c.error().message << "\nwanted: " << message;
  }
}

TEST(ProfilerConfig, DeepNestingIsRefusedCheaply) {
  std::string text = R"({"x": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_FALSE(parse_profiler_config(text));
}

TEST(ProfilerConfig, MissingFileIsTheDefaultWithProfilingOff) {
  test::ScratchDir dir;
  auto c = load_profiler_config(dir / "absent.json");
  ASSERT_VIGIL_OK(c);
  EXPECT_FALSE(c->file_found);
  EXPECT_FALSE(c->system_monitor_enabled());
  EXPECT_FALSE(c->framework_profiling_enabled());
}

TEST(ProfilerConfig, LoadErrorsNameTheFile) {
  test::ScratchDir dir;
  write_text(dir / "bad.json", R"({"ProfilingParameters": {"ProfilingIntervalInMilliseconds": 7}})");
  auto c = load_profiler_config(dir / "bad.json");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, (dir / "bad.json").string() +
                                   ": ProfilingParameters.ProfilingIntervalInMilliseconds: 7 is not one of 100, "
                                   "200, 500, 1000, 5000, 60000");
}

TEST(ProfilerConfig, PathFromTheEnvironment) {
  ::unsetenv("SMPROFILER_CONFIG_PATH");
  EXPECT_EQ(profiler_config_path_from_environment(), fs::path("/opt/ml/input/config/profilerconfig.json"));
  ::setenv("SMPROFILER_CONFIG_PATH", "/tmp/elsewhere.json", 1);
  EXPECT_EQ(profiler_config_path_from_environment(), fs::path("/tmp/elsewhere.json"));
  ::unsetenv("SMPROFILER_CONFIG_PATH");
}

TEST(ProfilerConfigWatcher, RereadsWhenTheFileChanges) {
  test::ScratchDir dir;
  const fs::path path = dir / "profilerconfig.json";
  ProfilerConfigWatcher watcher(path);
  auto first = watcher.refresh();  // no file yet: the defaults
  ASSERT_VIGIL_OK(first);
  EXPECT_TRUE(*first);
  EXPECT_FALSE(watcher.current().file_found);
  EXPECT_FALSE(*watcher.refresh());

  write_text(path, R"({"ProfilingParameters": {"ProfilingIntervalInMilliseconds": 100}})");
  auto created = watcher.refresh();
  ASSERT_VIGIL_OK(created);
  EXPECT_TRUE(*created);
  EXPECT_EQ(watcher.current().interval_ms, 100);
  EXPECT_FALSE(*watcher.refresh());  // unchanged: not read again

  // UpdateTrainingJob rewrites the file by rename: a new inode.
  write_text(dir / "next.json", R"({"ProfilingParameters": {"ProfilingIntervalInMilliseconds": 1000}})");
  fs::rename(dir / "next.json", path);
  auto updated = watcher.refresh();
  ASSERT_VIGIL_OK(updated);
  EXPECT_TRUE(*updated);
  EXPECT_EQ(watcher.current().interval_ms, 1000);

  // A refused update keeps the last good config and is reported once.
  write_text(path, R"({"ProfilingParameters": {"ProfilingIntervalInMilliseconds": 123}})");
  auto refused = watcher.refresh();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("ProfilingIntervalInMilliseconds: 123"), std::string::npos);
  EXPECT_EQ(watcher.current().interval_ms, 1000);
  auto again = watcher.refresh();
  ASSERT_VIGIL_OK(again);
  EXPECT_FALSE(*again);

  write_text(path, R"({"DisableProfiler": true, "ProfilingParameters": {"ProfilingIntervalInMilliseconds": 5000}})");
  ASSERT_VIGIL_OK(watcher.refresh());
  EXPECT_TRUE(watcher.current().disable_profiler);
  EXPECT_EQ(watcher.current().interval_ms, 5000);
}

// ---- windows ----------------------------------------------------------------------------------

MetricsConfig step_range(std::optional<int64_t> start, int64_t num) {
  MetricsConfig c;
  c.enabled = true;
  c.start_step = start;
  c.num_steps = num;
  return c;
}

TEST(ProfilingWindow, StepRangeIsHalfOpen) {
  ProfilingWindow w(step_range(5, 3));
  std::vector<int64_t> active;
  for (int64_t step = 0; step < 12; ++step)
    if (w.is_active(step, 0)) active.push_back(step);
  EXPECT_EQ(active, (std::vector<int64_t>{5, 6, 7}));
  EXPECT_FALSE(w.has_ended(7, 0));
  EXPECT_TRUE(w.has_ended(8, 0));
}

TEST(ProfilingWindow, OmittedStartIsTheStepOfTheFirstCheck) {
  ProfilingWindow w(step_range(std::nullopt, 2));
  EXPECT_FALSE(w.has_ended(100, 0));
  EXPECT_TRUE(w.is_active(40, 0));
  EXPECT_TRUE(w.is_active(41, 0));
  EXPECT_FALSE(w.is_active(42, 0));
  EXPECT_FALSE(w.is_active(39, 0));
  EXPECT_TRUE(w.has_ended(42, 0));
}

TEST(ProfilingWindow, TimeRangeWithDuration) {
  MetricsConfig c;
  c.enabled = true;
  c.start_time = 1000;
  c.duration = 5;
  ProfilingWindow w(c);
  EXPECT_FALSE(w.is_active(1, 999.9));
  EXPECT_TRUE(w.is_active(2, 1000));
  EXPECT_TRUE(w.is_active(3, 1004.9));
  EXPECT_FALSE(w.is_active(4, 1005));
  EXPECT_TRUE(w.has_ended(4, 1005));
}

TEST(ProfilingWindow, TimeRangeWithoutDurationIsOneStep) {
  MetricsConfig c;
  c.enabled = true;
  c.start_time = 1000;
  ProfilingWindow w(c);
  EXPECT_FALSE(w.is_active(1, 500));
  EXPECT_TRUE(w.is_active(2, 1001));
  EXPECT_TRUE(w.is_active(2, 1002));  // the same step, checked again
  EXPECT_FALSE(w.is_active(3, 1003));
  EXPECT_TRUE(w.has_ended(3, 1003));
}

TEST(ProfilingWindow, DisabledIsNeverActive) {
  ProfilingWindow w(MetricsConfig{});
  EXPECT_FALSE(w.is_active(0, 0));
  EXPECT_TRUE(w.has_ended(0, 0));
}

TEST(ProfilingWindow, FromAParsedConfig) {
  auto c = parse_profiler_config(R"({"ProfilingParameters": {"PythonProfilingConfig": "{'StartStep': '9', 'NumSteps': '3'}"}})");
  ASSERT_VIGIL_OK(c);
  ProfilingWindow w(c->python);
  EXPECT_FALSE(w.is_active(8, 0));
  EXPECT_TRUE(w.is_active(9, 0));
  EXPECT_TRUE(w.is_active(11, 0));
  EXPECT_FALSE(w.is_active(12, 0));
}

}  // namespace
}  // namespace vigil::profiler
