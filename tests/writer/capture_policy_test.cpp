// The capture core: smdebug's hook policy, as the Python and libtorch hooks and TrialWriter use it.
#include "writer/capture_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_support.h"

namespace vigil::writer {
namespace {

using format::CollectionConfig;
using format::ReductionConfig;
using format::ReductionSpec;
using format::SaveConfigMode;
using Names = std::vector<std::string>;

CaptureDefaults every(int64_t interval) {
  CaptureDefaults d;
  d.save_config.fill(SaveConfigMode{.save_interval = interval});
  return d;
}

CapturePolicy make(std::vector<CollectionConfig> collections, Names include, CaptureDefaults defaults = every(1)) {
  auto p = CapturePolicy::create(std::move(collections), std::move(include), std::move(defaults));
  EXPECT_TRUE(p) << p.error().message;
  return std::move(*p);
}

TEST(CapturePolicy, NumbersStepsPerModeAsSmdebug) {
  CapturePolicy p = make({}, {});
  EXPECT_EQ(p.global_step(), -1);
  p.begin_step();
  EXPECT_EQ(p.global_step(), 0);
  EXPECT_EQ(p.mode_step(), 0);  // GLOBAL's mode step is the global step
  p.set_mode(Mode::Train);
  p.begin_step();
  p.begin_step();
  EXPECT_EQ(p.global_step(), 2);
  EXPECT_EQ(p.mode_step(Mode::Train), 1);
  p.set_mode(Mode::Eval);
  p.begin_step();
  EXPECT_EQ(p.global_step(), 3);
  EXPECT_EQ(p.mode_step(Mode::Eval), 0);
  EXPECT_EQ(p.mode_step(Mode::Train), 1);
  EXPECT_EQ(p.mode_step(Mode::Global), 3);
  p.set_step(10, 10);  // a framework's own round number
  EXPECT_EQ(p.global_step(), 10);
  EXPECT_EQ(p.mode_step(), 10);
}

TEST(CapturePolicy, DueCollectionsFollowTheirSaveConfigAndEvalNeverSavesGradients) {
  CollectionConfig weights{.name = "weights", .include_regex = {"weight"}};
  CollectionConfig gradients{.name = "gradients", .include_regex = {"^gradient"}};
  gradients.save_config.emplace();
  (*gradients.save_config)[0] = SaveConfigMode{.save_interval = 2};  // TRAIN only; other modes: the hook's
  CapturePolicy p = make({weights, gradients}, {"weights", "gradients"}, every(3));
  p.set_mode(Mode::Train);
  std::vector<Names> due;
  for (int i = 0; i < 4; ++i) {
    p.begin_step();
    due.push_back(p.due_collections());
  }
  EXPECT_EQ(due, (std::vector<Names>{{"gradients", "weights"}, {}, {"gradients"}, {"weights"}}));
  p.set_mode(Mode::Eval);
  p.begin_step();  // EVAL step 0: both configs say yes, but EVAL never saves gradients
  EXPECT_EQ(p.due_collections(), (Names{"weights"}));
}

TEST(CapturePolicy, MembershipIsAmongIncludedCollectionsAndIsRecorded) {
  CapturePolicy p = make({{.name = "weights", .include_regex = {"weight"}}, {.name = "biases", .include_regex = {"bias"}}},
                         {"weights"});
  p.begin_step();
  EXPECT_EQ(p.plan("fc1.weight").collections, (Names{"weights"}));
  EXPECT_TRUE(p.plan("fc1.bias").empty());  // biases is not included
  EXPECT_TRUE(p.plan("relu_output_0").empty());
  const auto file = p.collections_file(2);
  EXPECT_EQ(file.num_workers, 2);
  ASSERT_EQ(file.collections.size(), 2u);
  EXPECT_EQ(file.collections[0].tensor_names, (Names{"fc1.weight"}));
  EXPECT_TRUE(file.collections[1].tensor_names.empty());
}

TEST(CapturePolicy, PlansTheUnionOfReductionsInSmdebugsOrder) {
  CollectionConfig a{.name = "a", .include_regex = {"x"},
                     .reduction_config = ReductionConfig{.save_raw_tensor = false, .reductions = {{"l2", true}, {"mean", false}}}};
  CollectionConfig b{.name = "b", .include_regex = {"x"},
                     .reduction_config = ReductionConfig{.save_raw_tensor = false,
                                                         .reductions = {{"mean", false}, {"max", false}},
                                                         .save_shape = true}};
  CapturePolicy p = make({b, a}, {"all"});
  p.begin_step();
  const CapturePlan plan = p.plan("x");
  EXPECT_EQ(plan.collections, (Names{"a", "b"}));  // by name
  EXPECT_FALSE(plan.save_raw);
  EXPECT_TRUE(plan.save_shape);
  // a's, plain before abs norms; then what b adds.
  EXPECT_EQ(plan.reductions, (std::vector<ReductionSpec>{{"mean", false}, {"l2", true}, {"max", false}}));
  EXPECT_EQ(plan.histogram_collection, "a");
  EXPECT_FALSE(plan.scalar_summary);
}

TEST(CapturePolicy, ScalarCollectionsAreRawWithoutHistogramsAndMissingConfigTakesTheDefaults) {
  CaptureDefaults defaults = every(1);
  defaults.reduction_config = ReductionConfig{.save_raw_tensor = false, .reductions = {{"min", false}}};
  CapturePolicy p = make({{.name = "losses", .include_regex = {"loss"}}, {.name = "other", .include_regex = {"other"}}},
                         {"all"}, defaults);
  p.begin_step();
  const CapturePlan loss = p.plan("loss_output_0");
  EXPECT_TRUE(loss.save_raw);
  EXPECT_TRUE(loss.reductions.empty());
  EXPECT_FALSE(loss.histogram_collection);
  EXPECT_TRUE(loss.scalar_summary);
  const CapturePlan other = p.plan("other");
  EXPECT_FALSE(other.save_raw);
  EXPECT_EQ(other.reductions, (std::vector<ReductionSpec>{{"min", false}}));
  const auto file = p.collections_file(1);
  ASSERT_TRUE(file.collections[1].save_config);
  EXPECT_EQ((*file.collections[1].save_config)[3]->save_interval, 1);  // completed from the defaults
}

TEST(CapturePolicy, ExplicitCollectionsFallbackAndJoin) {
  CapturePolicy p = make({{.name = "weights", .include_regex = {"weight"}}}, {"weights"});
  p.begin_step();
  const Names losses{"losses"};
  EXPECT_EQ(p.plan("my_loss", losses).collections, losses);  // made with the defaults
  EXPECT_TRUE(p.plan("free").empty());
  EXPECT_EQ(p.plan("free", {}, true, "default").collections, (Names{"default"}));
  EXPECT_EQ(p.plan("fc.weight", {}, true, "default").collections, (Names{"weights"}));  // no fallback when held
  const Names late{"late"};
  EXPECT_TRUE(p.join("custom", late));  // made here: written raw
  const auto file = p.collections_file(1);
  auto names_of = [&](std::string_view c) {
    for (const auto& x : file.collections)
      if (x.name == c) return x.tensor_names;
    return Names{"<none>"};
  };
  EXPECT_EQ(names_of("late"), (Names{"custom"}));
  EXPECT_EQ(names_of("default"), (Names{"free"}));
  EXPECT_EQ(names_of("losses"), (Names{"my_loss"}));
}

TEST(CapturePolicy, RefusesBadConfiguration) {
  auto bad_regex = CapturePolicy::create({{.name = "c", .include_regex = {"(unclosed"}}}, {}, every(1));
  ASSERT_FALSE(bad_regex);
  EXPECT_EQ(bad_regex.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(bad_regex.error().message.find("collection c: include_regex"), std::string::npos) << bad_regex.error().message;
  auto bad_reduction = CapturePolicy::create(
      {{.name = "c", .reduction_config = ReductionConfig{.reductions = {{"median", false}}}}}, {}, every(1));
  ASSERT_FALSE(bad_reduction);
  EXPECT_NE(bad_reduction.error().message.find("unknown reduction median"), std::string::npos);
  EXPECT_FALSE(CapturePolicy::create({}, {}, every(0)));
}

}  // namespace
}  // namespace vigil::writer
