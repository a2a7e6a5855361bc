// ABI 1.5's step_reductions through the host's table: one call gives what tensor_names, then
// tensor_workers and reduction_value per name and worker give one at a time (the SDK's
// Trial::for_each_step_reduction walks those on an older host, and both must agree), values that are
// not there come back as results with their status, and anything else fails the call.
#include <gtest/gtest.h>

#include <fstream>
#include <stop_token>
#include <string>
#include <vector>

#include <vigil/sdk/trial.hpp>
#include <vigil/vigil.h>

#include "plugin_host/host_services.h"
#include "test_support.h"
#include "trial/trial.h"

namespace vigil {
namespace {

using namespace test;

struct Seen {
  std::string name, worker;
  vigil_status status;
  double value;
  bool operator==(const Seen&) const = default;
};

void PrintTo(const Seen& s, std::ostream* os) {
  *os << s.name << "@" << s.worker << " status " << s.status << " value " << s.value;
}

// Two workers; at step 0 every kind of gradient (values, a saved abs-mean only, a shape only, strings)
// and a weight outside the collection; at step 1 one gradient on one worker.
class StepReductions : public ::testing::Test {
 protected:
  void SetUp() override {
    write_trial(dir.path(),
                {{0, Mode::Train, -1,
                  {{"gradient/b", {0.5, -0.5}},
                   {"gradient/a", {1, -3}},
                   {"weight/w", {5}},
                   {.name = "gradient/s", .dtype = format::ElementType::String, .strings = {"x"}}},
                  {{"gradient/r", "mean", true, 0.25}},
                  {"gradient/c"}},
                 {1, Mode::Train, -1, {{"gradient/a", {0, 0}}}}},
                {.num_workers = 2, .end_marker = false});
    write_trial(dir.path(), {{0, Mode::Train, -1, {{"gradient/a", {2, 2}}, {"gradient/b", {4}}}}},
                {.worker = "worker_1", .num_workers = 2});
  }

  void open() {
    auto trial = Trial::open(dir.path());
    ASSERT_VIGIL_OK(trial);
    handle.trial = *trial;
    handle.session = &session;
  }

  // for_each_step_reduction through `table` (the host's, or a copy of it).
  Result<std::vector<Seen>> walk(const vigil_host_api* table, vigil_step step) {
    sdk::Trial trial(sdk::Host(table), &handle);
    std::vector<Seen> seen;
    auto r = trial.for_each_step_reduction({.step = step, .collection = "gradients"}, sdk::ReductionOp::mean, true,
                                           [&](const sdk::StepReduction& s) {
                                             seen.push_back({std::string(s.name), std::string(s.worker), s.status, s.value});
                                           });
    if (!r) return fail(Error{.code = ErrorCode(r.error().code), .message = r.error().message});
    return seen;
  }

  // The host's table without step_reductions: what an ABI 1.4 host offers.
  vigil_host_api older_host() const {
    vigil_host_api older = *plugin_host::host_api();
    older.struct_size = offsetof(vigil_host_api, step_reductions);
    return older;
  }

  // The gradients collection, at step 0 when `with_step`, as a plugin would ask.
  static vigil_name_query gradients(bool with_step) {
    vigil_name_query query{};
    query.struct_size = sizeof query;
    query.has_step = with_step;
    query.collection = "gradients";
    return query;
  }

  // step_reductions through the host's table, on this fixture's trial.
  vigil_status call(const vigil_name_query* query, vigil_reduction reduction, vigil_reduction_result_sink sink) {
    vigil_error err{};
    err.struct_size = sizeof err;
    return plugin_host::host_api()->step_reductions(&handle, query, reduction, true, sink, &err);
  }

  ScratchDir dir;
  vigil_session session;
  vigil_trial handle;
};

TEST_F(StepReductions, OneCallGivesWhatTheCallsOneByOneGive) {
  open();
  auto batched = walk(plugin_host::host_api(), 0);
  ASSERT_VIGIL_OK(batched);
  const std::vector<Seen> expected = {
      {"gradient/a", "worker_0", VIGIL_OK, 2.0},
      {"gradient/a", "worker_1", VIGIL_OK, 2.0},
      {"gradient/b", "worker_0", VIGIL_OK, 0.5},
      {"gradient/b", "worker_1", VIGIL_OK, 4.0},
      {"gradient/c", "worker_0", VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP, 0.0},  // its shape only
      {"gradient/r", "worker_0", VIGIL_OK, 0.25},                             // its saved abs-mean
      {"gradient/s", "worker_0", VIGIL_E_TYPE_ERROR, 0.0},                    // strings
  };
  EXPECT_EQ(*batched, expected);

  const vigil_host_api older = older_host();
  auto one_by_one = walk(&older, 0);
  ASSERT_VIGIL_OK(one_by_one);
  EXPECT_EQ(*one_by_one, *batched);

  // Step 1: only worker_0 saved gradient/a; no other name is there (no result for it at all).
  auto later = walk(plugin_host::host_api(), 1);
  ASSERT_VIGIL_OK(later);
  EXPECT_EQ(*later, (std::vector<Seen>{{"gradient/a", "worker_0", VIGIL_OK, 0.0}}));
  auto later_older = walk(&older, 1);
  ASSERT_VIGIL_OK(later_older);
  EXPECT_EQ(*later_older, *later);
}

TEST_F(StepReductions, ADamagedEventFileFailsTheCallWithTheReadersError) {
  // Step 1's event file, its records' bytes changed after the fact: its CRCs no longer hold.
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() / "events"))
    if (e.is_regular_file() && e.path().string().find("000000000001_worker_0") != std::string::npos)
      files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  const auto size = fs::file_size(files[0]);
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(size - 12));
    f.write("\xff\xff\xff\xff", 4);
  }
  open();
  auto batched = walk(plugin_host::host_api(), 1);
  ASSERT_FALSE(batched);
  const vigil_host_api older = older_host();
  auto one_by_one = walk(&older, 1);
  ASSERT_FALSE(one_by_one);
  EXPECT_EQ(batched.error().code, one_by_one.error().code);
  EXPECT_EQ(batched.error().message, one_by_one.error().message);
  EXPECT_FALSE(sdk::detail::is_absent_value(vigil_status(batched.error().code))) << batched.error().message;
}

TEST_F(StepReductions, RefusesAQueryWithoutAStepAndAnUnknownReduction) {
  open();
  const vigil_reduction_result_sink none{nullptr, nullptr};
  vigil_name_query query = gradients(false);
  EXPECT_EQ(call(&query, VIGIL_RED_MEAN, none), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(call(nullptr, VIGIL_RED_MEAN, none), VIGIL_E_INVALID_ARGUMENT);
  query = gradients(true);
  EXPECT_EQ(call(&query, 0, none), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(call(&query, VIGIL_RED_L2 + 1, none), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(call(&query, VIGIL_RED_MEAN, none), VIGIL_OK);  // no sink: fine
}

TEST_F(StepReductions, ASinkThatRefusesStopsTheCallAndStoppingTheEvaluationCancelsIt) {
  open();
  const vigil_name_query query = gradients(true);
  int pushes = 0;
  vigil_reduction_result_sink refusing{&pushes, [](void* ctx, const vigil_reduction_result*, size_t) -> vigil_status {
                                         ++*static_cast<int*>(ctx);
                                         return VIGIL_E_OUT_OF_MEMORY;
                                       }};
  EXPECT_EQ(call(&query, VIGIL_RED_MEAN, refusing), VIGIL_E_OUT_OF_MEMORY);
  EXPECT_EQ(pushes, 1);  // gradient/a's two results, then nothing more

  std::stop_source stop;
  session.stop = stop.get_token();
  stop.request_stop();
  pushes = 0;
  vigil_reduction_result_sink counting{&pushes, [](void* ctx, const vigil_reduction_result*, size_t) -> vigil_status {
                                         ++*static_cast<int*>(ctx);
                                         return VIGIL_OK;
                                       }};
  EXPECT_EQ(call(&query, VIGIL_RED_MEAN, counting), VIGIL_E_CANCELLED);
  EXPECT_EQ(pushes, 0);
}

}  // namespace
}  // namespace vigil
