// Trial / Tensor against the fake host: sinks, optional results, error fields, missing host slots.
#include <gtest/gtest.h>
#include <vigil/sdk/trial.hpp>

#include <string>
#include <vector>

#include "fake_host.hpp"

namespace sdk = vigil::sdk;

namespace {

class TrialTest : public ::testing::Test {
 protected:
  vigil_host_api api = fake::host_api();
  vigil_trial data = fake::make_trial();
  sdk::Trial trial{sdk::Host(&api), &data};
};

using Names = std::vector<std::string>;
using Steps = std::vector<vigil_step>;

}  // namespace

TEST_F(TrialTest, TensorNamesWithEveryFilter) {
  EXPECT_EQ(trial.tensor_names().value(), (Names{"gradients/a", "gradients/b", "labels", "weights/w"}));
  EXPECT_EQ(trial.tensor_names({.collection = "gradients"}).value(), (Names{"gradients/a", "gradients/b"}));
  EXPECT_EQ(trial.tensor_names({.regex = {"^w", "labels"}}).value(), (Names{"labels", "weights/w"}));
  EXPECT_EQ(trial.tensor_names({.step = 1, .collection = "gradients"}).value(), (Names{"gradients/a"}));
  auto both = trial.tensor_names({.regex = {"a"}, .collection = "gradients"});
  ASSERT_FALSE(both.has_value());
  EXPECT_EQ(both.error().code, VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(both.error().message, "Only one of `regex` or `collection` can be passed to this method");
}

TEST_F(TrialTest, TrialQueries) {
  EXPECT_TRUE(trial.has_tensor("weights/w").value());
  EXPECT_FALSE(trial.has_tensor("nope").value());
  EXPECT_EQ(trial.steps().value(), (Steps{0, 1, 2, 3, 4}));  // arrives in two pushes: appended
  EXPECT_TRUE(trial.steps(VIGIL_MODE_EVAL).value().empty());
  EXPECT_EQ(trial.modes().value(), (std::vector<vigil_mode>{VIGIL_MODE_TRAIN}));
  EXPECT_EQ(trial.workers().value(), (Names{"worker_0", "worker_1"}));
  EXPECT_EQ(trial.global_step(VIGIL_MODE_TRAIN, 3).value(), std::optional<vigil_step>(3));
  EXPECT_EQ(trial.global_step(VIGIL_MODE_TRAIN, 30).value(), std::nullopt);
  auto mm = trial.mode_modestep(2).value();
  ASSERT_TRUE(mm.has_value());
  EXPECT_EQ(mm->first, VIGIL_MODE_TRAIN);
  EXPECT_EQ(mm->second, 2);
  EXPECT_FALSE(trial.mode_modestep(99).value().has_value());
  EXPECT_EQ(trial.has_passed_step(2).value(), sdk::StepState::Available);
  EXPECT_EQ(trial.has_passed_step(9).value(), sdk::StepState::Unavailable);
  EXPECT_EQ(trial.last_complete_step().value(), 4);
  EXPECT_TRUE(trial.training_ended().value());
  EXPECT_EQ(trial.collection_names().value(), (Names{"gradients", "weights"}));
  EXPECT_EQ(trial.collection_tensor_names("weights").value(), (Names{"weights/w"}));
  EXPECT_TRUE(trial.collection_tensor_names("unknown").value().empty());
}

TEST_F(TrialTest, WaitForStepsReportsSmdebugErrors) {
  EXPECT_TRUE(trial.wait_for_steps({0, 4}).has_value());
  const Steps wanted{1, 2};
  EXPECT_TRUE(trial.wait_for_steps(wanted).has_value());
  auto end = trial.wait_for_steps({7});
  ASSERT_FALSE(end.has_value());
  EXPECT_EQ(end.error().code, VIGIL_E_NO_MORE_DATA);
  EXPECT_EQ(end.error().step, 7);
  EXPECT_EQ(end.error().last_step, 4);
  EXPECT_EQ(end.error().class_name(), "NoMoreData");
  EXPECT_THROW(sdk::value_or_throw(trial.wait_for_steps({7})), sdk::NoMoreData);
  data.ended = false;
  EXPECT_EQ(trial.wait_for_steps({7}, VIGIL_MODE_GLOBAL, std::chrono::milliseconds(10)).error().code, VIGIL_E_TIMEOUT);
  EXPECT_EQ(trial.has_passed_step(9).value(), sdk::StepState::NotYetAvailable);
}

TEST_F(TrialTest, TensorQueries) {
  const sdk::Tensor b = trial.tensor("gradients/b");
  EXPECT_EQ(b.name(), "gradients/b");
  EXPECT_EQ(b.steps().value(), (Steps{0, 2, 4}));
  EXPECT_EQ(trial.tensor("gradients/a").workers(2).value(), (Names{"worker_0", "worker_1"}));
  EXPECT_EQ(trial.tensor("weights/w").shape(1).value(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(trial.tensor("labels").strings(0).value(), (Names{"cat", "dog"}));
}

TEST_F(TrialTest, ValueGivesAViewReleasedOnce) {
  const int before = fake::deleter_calls.load();
  {
    auto v = trial.tensor("weights/w").value(3);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->size(), 6);
    const auto values = v->values<float>();
    EXPECT_EQ(values[5], 6.0f);
    sdk::TensorView moved = std::move(*v);
    EXPECT_EQ(fake::deleter_calls.load(), before);
  }
  EXPECT_EQ(fake::deleter_calls.load(), before + 1);
  EXPECT_EQ(fake::views_alive.load(), 0);
}

TEST_F(TrialTest, ValueErrorsCarryTheirFields) {
  auto missing_step = trial.tensor("gradients/b").value(1);
  ASSERT_FALSE(missing_step.has_value());
  const sdk::Error& e = missing_step.error();
  EXPECT_EQ(e.code, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
  EXPECT_EQ(e.tensor, "gradients/b");
  EXPECT_EQ(e.step, 1);
  EXPECT_TRUE(e.has_reductions);
  EXPECT_TRUE(e.is_skip());
  try {
    sdk::value_or_throw(trial.tensor("gradients/b").value(1));
    FAIL();
  } catch (const sdk::TensorUnavailableForStep& ex) {
    EXPECT_EQ(ex.tname(), "gradients/b");
    EXPECT_TRUE(ex.has_reductions());
  }

  EXPECT_EQ(trial.tensor("nope").value(0).error().code, VIGIL_E_TENSOR_UNAVAILABLE);
  EXPECT_EQ(trial.tensor("nope").value(0).error().message, "Tensor nope was not saved.");
  EXPECT_EQ(trial.tensor("weights/w").value(9).error().code, VIGIL_E_STEP_UNAVAILABLE);
  auto bad_worker = trial.tensor("weights/w").value(0, VIGIL_MODE_GLOBAL, "worker_9");
  EXPECT_EQ(bad_worker.error().code, VIGIL_E_INVALID_WORKER);
  EXPECT_EQ(bad_worker.error().worker, "worker_9");
  EXPECT_EQ(trial.tensor("labels").value(0).error().code, VIGIL_E_TYPE_ERROR);
  EXPECT_EQ(fake::views_alive.load(), 0);
}

TEST_F(TrialTest, ReductionValueByNameAndOp) {
  const sdk::Tensor a = trial.tensor("gradients/a");
  EXPECT_DOUBLE_EQ(a.reduction_value(1, "mean", true).value(), 0.5);
  EXPECT_DOUBLE_EQ(a.reduction_value(1, "mean").value(), 0.0);
  EXPECT_DOUBLE_EQ(a.reduction_value(1, sdk::ReductionOp::max).value(), 0.5);
  EXPECT_NEAR(a.reduction_value(2, "mean", true, VIGIL_MODE_GLOBAL, "worker_1").value(), 1e-9, 1e-15);
  EXPECT_DOUBLE_EQ(a.reduction_value(2, "l1", false, VIGIL_MODE_GLOBAL, "worker_0").value(), 2.0);
  auto bad = a.reduction_value(1, "median");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(bad.error().message, "Invalid reduction type median");
  EXPECT_EQ(trial.tensor("gradients/b").reduction_value(3, "mean").error().code, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
}

TEST_F(TrialTest, MissingHostSlotsAreNotSupported) {
  api.reduction_value = nullptr;
  auto r = trial.tensor("gradients/a").reduction_value(1, "mean");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, VIGIL_E_NOT_SUPPORTED);
  EXPECT_NE(r.error().message.find("reduction_value"), std::string::npos);

  // An older (smaller) host table: slots past its struct_size are not called, even if not NULL.
  api = fake::host_api();
  api.struct_size = offsetof(vigil_host_api, collection_names);
  EXPECT_EQ(trial.collection_names().error().code, VIGIL_E_NOT_SUPPORTED);
  EXPECT_FALSE(trial.host().has(&vigil_host_api::collection_tensor_names));
  EXPECT_TRUE(trial.host().has(&vigil_host_api::reduction_value));
  EXPECT_TRUE(trial.tensor("gradients/a").reduction_value(1, "mean").has_value());

  const sdk::Trial no_host;
  EXPECT_EQ(no_host.steps().error().code, VIGIL_E_NOT_SUPPORTED);
}

TEST_F(TrialTest, HostMetadataAndExtensions) {
  const sdk::Host& h = trial.host();
  EXPECT_EQ(h.name(), "fake");
  EXPECT_EQ(h.version(), "0.0.1");
  EXPECT_EQ(h.abi().major, VIGIL_ABI_MAJOR);
  ASSERT_NE(h.get_extension("vigil.fake/1"), nullptr);
  EXPECT_EQ(*static_cast<const int*>(h.get_extension("vigil.fake/1")), 42);
  EXPECT_EQ(h.get_extension("vigil.other/1"), nullptr);
}

namespace {
// A host whose sink consumer fails: the SDK's sink must turn the exception into a status.
vigil_status throwing_push_host(vigil_trial*, vigil_str_sink out, vigil_error*) {
  const std::string huge(1, 'x');
  return out.push(out.ctx, huge.data(), huge.size());
}
}  // namespace

TEST_F(TrialTest, SinkFailuresBecomeStatuses) {
  api.workers = throwing_push_host;
  EXPECT_EQ(trial.workers().value(), (Names{"x"}));
  // A consumer that throws: make_str_sink catches and reports VIGIL_E_INTERNAL to the host.
  auto consumer = [](std::string_view) { throw std::runtime_error("consumer failed"); };
  const vigil_str_sink sink = sdk::detail::make_str_sink(consumer);
  EXPECT_EQ(sink.push(sink.ctx, "a", 1), VIGIL_E_INTERNAL);
  auto oom = [](std::string_view) { throw std::bad_alloc(); };
  const vigil_str_sink sink2 = sdk::detail::make_str_sink(oom);
  EXPECT_EQ(sink2.push(sink2.ctx, "a", 1), VIGIL_E_OUT_OF_MEMORY);
}

TEST_F(TrialTest, StepWallTimeNeedsAnAbi11Host) {
  if constexpr (fake::kHasStepWallTime<>) {
    EXPECT_DOUBLE_EQ(trial.step_wall_time(3).value(), 1003.0);
    EXPECT_EQ(trial.step_wall_time(9).error().code, VIGIL_E_STEP_UNAVAILABLE);
    api.struct_size = offsetof(vigil_host_api, collection_tensor_names) + sizeof(api.collection_tensor_names);  // 1.0
  }
  EXPECT_EQ(trial.step_wall_time(3).error().code, VIGIL_E_NOT_SUPPORTED);
}
