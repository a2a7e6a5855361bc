#include "profiler/trace_events.h"

#include <gtest/gtest.h>

#include "profiler/node_id.h"
#include "profiler/profiler_layout.h"
#include "profiler/trace_event_writer.h"
#include "test_support.h"

namespace vigil::profiler {
namespace {

using test::ScratchDir;
namespace fs = std::filesystem;

constexpr int64_t kBase = 1591160699000000;  // 2020-06-03 05:04:59 UTC

std::vector<TraceEvent> parse(std::string_view text, std::string_view node = "algo-1-0") {
  auto events = parse_trace_events(text, node, "test.json");
  EXPECT_TRUE(events) << events.error().message;
  return events ? *events : std::vector<TraceEvent>{};
}

// ---- names ---------------------------------------------------------------------------------------

TEST(NodeId, ThisProcessNodeIdReadsCurrentHost) {
  ScratchDir dir;
  const auto config = dir / "resourceconfig.json";
  test::ScratchDir none;
  EXPECT_EQ(this_process_node_id(7, none / "missing.json").substr(0, 2), "7-");
  std::FILE* f = std::fopen(config.c_str(), "w");
  std::fputs(R"({"current_host": "algo-3", "hosts": ["algo-1", "algo-3"]})", f);
  std::fclose(f);
  EXPECT_EQ(this_process_node_id(5, config), "5-algo-3");
  EXPECT_EQ(this_process_node_id(std::nullopt, config), fmt::format("{}-algo-3", ::getpid()));
}

TEST(ProfilerLayout, TraceFileNames) {
  EXPECT_EQ(utc_hour_folder(kBase), "2020060305");
  EXPECT_EQ(trace_file_relpath(kBase + 5, "0-algo-1"),
            "framework/pevents/2020060305/1591160699000005_0-algo-1_pythontimeline.json");
  EXPECT_EQ(trace_tmp_relpath("0-algo-1"), "framework/0-algo-1_pythontimeline.json.tmp");

  auto name = parse_trace_file_name("/r/framework/pevents/2020060305/1591160699000005_0-algo-1_pythontimeline.json");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->timestamp_us, 1591160699000005);
  EXPECT_EQ(name->node_id, "algo-1-0");
  name = parse_trace_file_name("framework/pevents/2020060305/17_1234-ip-10-0-0-1_model_timeline.json");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->node_id, "1234-ip-10-0-0-1");

  EXPECT_FALSE(parse_trace_file_name("framework/pevents/x/17_node.json"));                        // 2 fields
  EXPECT_FALSE(parse_trace_file_name("framework/other/17_node_pythontimeline.json"));             // no pevents
  EXPECT_FALSE(parse_trace_file_name("framework/pevents/x/17_node_pythontimeline.json.tmp"));     // not .json
  EXPECT_FALSE(parse_trace_file_name("framework/pevents/x/abc_node_pythontimeline.json"));        // no number
}

TEST(ProfilerLayout, NodeIdRewrite) {
  EXPECT_EQ(node_id_from_trace_file_name("a/1_0-algo-1_pythontimeline.json"), "algo-1-0");
  EXPECT_EQ(node_id_from_trace_file_name("a/1_12-algo-10_pythontimeline.json"), "algo-10-12");
  EXPECT_EQ(node_id_from_trace_file_name("a/1_algo-1_pythontimeline.json"), "algo-1");
  EXPECT_EQ(node_id_from_trace_file_name("a/1_0-algo-x_pythontimeline.json"), "0-algo-x");
}

TEST(ProfilerLayout, TimeUnits) {
  EXPECT_EQ(to_microseconds(1591160699.5, TimeUnit::Seconds), 1591160699500000);
  EXPECT_EQ(to_microseconds(1591160699500.0, TimeUnit::Milliseconds), 1591160699500000);
  EXPECT_EQ(to_microseconds(42, TimeUnit::Microseconds), 42);
  EXPECT_EQ(to_microseconds(42999, TimeUnit::Nanoseconds), 42);
}

// ---- reading -------------------------------------------------------------------------------------

// The records of spec §8.3, in its order.
constexpr std::string_view kSpecTrace = R"([
{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 1591160699000000}},
{"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}},
{"name":"process_name","ph":"M","pid":1,"args":{"name":"Step:ModeKeys.TRAIN"}},
{"name":"process_sort_index","ph":"M","pid":1,"args":{"sort_index":1}},
{"name": "Step:ModeKeys.TRAIN", "pid": 1, "ph": "X", "ts": 100, "dur": 25, "args": {"step_num": "3", "pid": 4242, "tid": 7}},
{"name": "marker", "pid": 1, "ph": "i", "ts": 130, "s": "p"}
])";

TEST(TraceEvents, SpecRecordsParse) {
  const auto events = parse(kSpecTrace);
  ASSERT_EQ(events.size(), 1u);  // the instant event is not an event for the reader
  const TraceEvent& e = events[0];
  EXPECT_EQ(e.name, "Step:ModeKeys.TRAIN");
  EXPECT_EQ(e.phase, "Step:ModeKeys.TRAIN");
  EXPECT_EQ(e.start_us, kBase + 100);
  EXPECT_EQ(e.end_us, kBase + 125);
  EXPECT_EQ(e.phase_pid, 1);
  EXPECT_EQ(e.pid, 4242);  // args.pid wins
  EXPECT_EQ(e.tid, 0);     // args.tid is not args.thread_id
  EXPECT_EQ(e.node_id, "algo-1-0");
  EXPECT_EQ(e.args["step_num"], "3");
}

TEST(TraceEvents, LastStartTimeIsTheBase) {
  const auto events = parse(R"([
{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 1000}},
{"name": "a", "pid": 0, "ph": "X", "ts": 1, "dur": 1},
{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 5000}},
{"name": "b", "pid": 0, "ph": "X", "ts": 1, "dur": 1, "args": {"thread_id": 99}}
])");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].start_us, 1001);
  EXPECT_EQ(events[1].start_us, 5001);
  EXPECT_EQ(events[1].tid, 99);
  EXPECT_EQ(events[1].pid, 0);
}

TEST(TraceEvents, BeginEndPairsMatchPerPid) {
  const auto events = parse(R"([
{"name": "outer", "pid": 1, "tid": 3, "ph": "B", "ts": 10},
{"name": "other", "pid": 2, "ph": "B", "ts": 11},
{"name": "inner", "pid": 1, "ph": "B", "ts": 12},
{"name": "ignored", "pid": 1, "ph": "E", "ts": 15},
{"name": "ignored", "pid": 1, "ph": "E", "ts": 20, "args": {"k": 1}},
{"name": "ignored", "pid": 2, "ph": "E", "ts": 30},
{"name": "unmatched", "pid": 3, "ph": "E", "ts": 31},
{"name": "backwards", "pid": 4, "ph": "B", "ts": 50},
{"name": "backwards", "pid": 4, "ph": "E", "ts": 40},
{"name": "counter", "pid": 1, "ph": "C", "ts": 5}
])");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].name, "inner");
  EXPECT_EQ(events[0].start_us, 12);
  EXPECT_EQ(events[0].end_us, 15);
  EXPECT_EQ(events[1].name, "outer");
  EXPECT_EQ(events[1].start_us, 10);
  EXPECT_EQ(events[1].end_us, 20);
  EXPECT_EQ(events[1].tid, 3);
  EXPECT_EQ(events[1].args["k"], 1);
  EXPECT_EQ(events[2].name, "other");
  EXPECT_EQ(events[2].pid, 2);
  EXPECT_EQ(events[2].end_us, 30);
}

TEST(TraceEvents, BadFilesAreErrorsNamingTheFile) {
  auto r = parse_trace_events("[{\"ph\": \"X\", \"ts\": 1}]", "n", "f.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("f.json"), std::string::npos);
  EXPECT_NE(r.error().message.find("dur"), std::string::npos);
  r = parse_trace_events("[\n{\"ph\": \"X\"},\n", "n", "g.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().file, "g.json");
  r = parse_trace_events("{}", "n", "h.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::CorruptData);
}

// ---- writing -------------------------------------------------------------------------------------

struct FakeClock {
  int64_t now = kBase;
  std::function<int64_t()> fn() {
    return [this] { return now; };
  }
};

TraceWriterOptions options_for(const fs::path& root, FakeClock& clock) {
  TraceWriterOptions o;
  o.root = root;
  o.node_id = "0-algo-1";
  o.start_time_us = kBase;
  o.now_us = clock.fn();
  return o;
}

TEST(TraceEventWriter, ExactBytesOfASmallFile) {
  ScratchDir dir;
  FakeClock clock;
  TraceEventWriter writer(options_for(dir.path(), clock));
  ASSERT_VIGIL_OK(writer.write({.training_phase = "Step:ModeKeys.TRAIN", .name = "Step:ModeKeys.TRAIN",
                                .start_us = kBase + 10, .duration_us = 5, .args = {{"step_num", "1"}}}));
  EXPECT_TRUE(fs::exists(dir / "framework/0-algo-1_pythontimeline.json.tmp"));
  ASSERT_VIGIL_OK(writer.write({.training_phase = "Forward", .name = "conv1", .start_us = kBase + 12, .duration_us = 2}));
  ASSERT_VIGIL_OK(writer.write({.training_phase = "Step:ModeKeys.TRAIN", .name = "Step:ModeKeys.TRAIN",
                                .start_us = kBase + 20, .duration_us = 3}));
  ASSERT_VIGIL_OK(writer.close());
  EXPECT_FALSE(fs::exists(dir / "framework/0-algo-1_pythontimeline.json.tmp"));
  ASSERT_EQ(writer.published(), std::vector<std::string>{
                                    "framework/pevents/2020060305/1591160699000023_0-algo-1_pythontimeline.json"});
  EXPECT_EQ(test::read_file(dir / writer.published()[0]),
            "[\n"
            R"({"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 1591160699000000}},)" "\n"
            R"({"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}},)" "\n"
            R"({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "Step:ModeKeys.TRAIN"}},)" "\n"
            R"({"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}},)" "\n"
            R"({"name": "Step:ModeKeys.TRAIN", "pid": 0, "ph": "X", "ts": 10, "dur": 5, "args": {"step_num": "1"}},)" "\n"
            R"({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Forward"}},)" "\n"
            R"({"name": "process_sort_index", "ph": "M", "pid": 1, "args": {"sort_index": 1}},)" "\n"
            R"({"name": "conv1", "pid": 1, "ph": "X", "ts": 12, "dur": 2},)" "\n"
            R"({"name": "Step:ModeKeys.TRAIN", "pid": 0, "ph": "X", "ts": 20, "dur": 3})" "\n]");
}

TEST(TraceEventWriter, RoundTripKeepsEveryField) {
  ScratchDir dir;
  FakeClock clock;
  TraceEventWriter writer(options_for(dir.path(), clock));
  const TraceRecord step{.training_phase = "Step:ModeKeys.TRAIN", .name = "Step:ModeKeys.TRAIN", .start_us = kBase + 100,
                         .duration_us = 900, .args = {{"step_num", 4}, {"pid", 4242}, {"thread_id", 77}, {"device", "cpu"}}};
  const TraceRecord forward{.training_phase = "Forward", .name = "linear", .start_us = kBase + 200, .duration_us = 50,
                            .args = {{"tid", "x"}}};
  ASSERT_VIGIL_OK(writer.write(step));
  ASSERT_VIGIL_OK(writer.write(forward));
  ASSERT_VIGIL_OK(writer.write({.training_phase = "Forward", .name = "tick", .ph = 'i', .start_us = kBase + 300, .scope = "p"}));
  ASSERT_VIGIL_OK(writer.close());
  ASSERT_EQ(writer.published().size(), 1u);
  auto events = read_trace_file(dir / writer.published()[0]);
  ASSERT_VIGIL_OK(events);
  ASSERT_EQ(events->size(), 2u);
  const TraceEvent& a = (*events)[0];
  EXPECT_EQ(a.name, "Step:ModeKeys.TRAIN");
  EXPECT_EQ(a.phase, "Step:ModeKeys.TRAIN");
  EXPECT_EQ(a.start_us, kBase + 100);
  EXPECT_EQ(a.end_us, kBase + 1000);
  EXPECT_EQ(a.phase_pid, 0);
  EXPECT_EQ(a.pid, 4242);
  EXPECT_EQ(a.tid, 77);
  EXPECT_EQ(a.node_id, "algo-1-0");
  EXPECT_EQ(a.args, nlohmann::json(step.args));
  const TraceEvent& b = (*events)[1];
  EXPECT_EQ(b.name, "linear");
  EXPECT_EQ(b.phase, "Forward");
  EXPECT_EQ(b.start_us, kBase + 200);
  EXPECT_EQ(b.end_us, kBase + 250);
  EXPECT_EQ(b.phase_pid, 1);
  EXPECT_EQ(b.pid, 1);
  EXPECT_EQ(b.args, nlohmann::json(forward.args));
  // The instant event is written with its scope and no duration.
  const std::string text = test::read_file(dir / writer.published()[0]);
  EXPECT_NE(text.find(R"({"name": "tick", "pid": 1, "ph": "i", "ts": 300, "s": "p"})"), std::string::npos) << text;
}

TEST(TraceEventWriter, RotatesBySizeWithStablePhaseIndices) {
  ScratchDir dir;
  FakeClock clock;
  auto options = options_for(dir.path(), clock);
  options.rotate_max_file_size = 400;
  TraceEventWriter writer(options);
  // Each file: "[\n" 2 + metadata 110 + 74 = 186, a phase's two records about 150, an event about 60.
  for (int i = 0; i < 6; ++i) {
    const std::string phase = i % 2 == 0 ? "Step:ModeKeys.TRAIN" : "Forward";
    ASSERT_VIGIL_OK(writer.write({.training_phase = phase, .name = "e" + std::to_string(i), .start_us = kBase + 1000 * i,
                                  .duration_us = 10}));
  }
  ASSERT_VIGIL_OK(writer.close());
  ASSERT_GE(writer.published().size(), 2u);
  std::vector<std::string> names;
  int64_t expected_index = 0;
  for (const auto& rel : writer.published()) {
    auto events = read_trace_file(dir / rel);
    ASSERT_VIGIL_OK(events);
    ASSERT_FALSE(events->empty());
    // Named by the end of the file's latest event.
    EXPECT_EQ(rel, trace_file_relpath(events->back().end_us, "0-algo-1")) << rel;
    for (const auto& e : *events) {
      names.push_back(e.name);
      // The phase index does not restart in a new file, and each file names its phases.
      EXPECT_EQ(e.phase_pid, e.phase == "Forward" ? 1 : 0) << rel;
      EXPECT_FALSE(e.phase.empty()) << rel;
      EXPECT_EQ(e.start_us, kBase + 1000 * (expected_index++));
    }
    const std::string text = test::read_file(dir / rel);
    EXPECT_TRUE(text.starts_with("[\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": "
                                 "{\"start_time_since_epoch_in_micros\": 1591160699000000}},\n"));
    EXPECT_TRUE(text.ends_with("}\n]"));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"e0", "e1", "e2", "e3", "e4", "e5"}));
  // Only a file that grew past the limit was closed: every file but the last is over it.
  for (size_t i = 0; i + 1 < writer.published().size(); ++i)
    EXPECT_GT(fs::file_size(dir / writer.published()[i]) + 2, 400u);
}

TEST(TraceEventWriter, RotatesByInterval) {
  ScratchDir dir;
  FakeClock clock;
  TraceEventWriter writer(options_for(dir.path(), clock));  // 60 s
  auto at = [&](int64_t seconds) {
    return TraceRecord{.training_phase = "p", .name = "s" + std::to_string(seconds), .start_us = kBase + seconds * 1'000'000,
                       .duration_us = 1000};
  };
  ASSERT_VIGIL_OK(writer.write(at(0)));
  ASSERT_VIGIL_OK(writer.write(at(59)));  // 59 s after the start: same file
  ASSERT_VIGIL_OK(writer.write(at(60)));  // ends 60.001 s after: rounds to 60, not more than 60
  EXPECT_TRUE(writer.published().empty());
  clock.now = kBase + 61'500'000;  // when the first file closes
  ASSERT_VIGIL_OK(writer.write(at(61)));  // 61 s: the first file closes before this event
  ASSERT_EQ(writer.published().size(), 1u);
  EXPECT_EQ(writer.published()[0], "framework/pevents/2020060305/1591160759001000_0-algo-1_pythontimeline.json");
  // The interval now runs from the close, dated by the clock.
  ASSERT_VIGIL_OK(writer.rotate_if_due(kBase + 121'500'000));  // 60 s after the close: not yet
  EXPECT_EQ(writer.published().size(), 1u);
  ASSERT_VIGIL_OK(writer.rotate_if_due(kBase + 122'500'000));
  ASSERT_EQ(writer.published().size(), 2u);
  EXPECT_EQ(writer.published()[1], "framework/pevents/2020060305/1591160760001000_0-algo-1_pythontimeline.json");
  // Into a later UTC hour folder by the event's end.
  ASSERT_VIGIL_OK(writer.write(at(3700)));
  ASSERT_VIGIL_OK(writer.close());
  ASSERT_EQ(writer.published().size(), 3u);
  EXPECT_EQ(writer.published()[2], "framework/pevents/2020060306/1591164399001000_0-algo-1_pythontimeline.json");
  auto last = read_trace_file(dir / writer.published()[2]);
  ASSERT_VIGIL_OK(last);
  ASSERT_EQ(last->size(), 1u);
  EXPECT_EQ((*last)[0].phase, "p");
}

}  // namespace
}  // namespace vigil::profiler
