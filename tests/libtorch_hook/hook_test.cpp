// vigil::torch::Hook: tiny models trained through the hook, their trials read back with vigil::Trial
// and compared bit for bit with copies of the tensors taken during training; and the hook's
// promise never to break training when it cannot write.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "test_support.h"
#include "trial/trial.h"
#include "vigil/torch/hook.h"

namespace {

namespace fs = std::filesystem;
using vigil::Mode;
using vigil::test::ScratchDir;
using vigil::torch::Hook;
using vigil::torch::HookOptions;
using Steps = std::vector<int64_t>;

struct TinyNet : torch::nn::Module {
  TinyNet() {
    fc1 = register_module("fc1", torch::nn::Linear(3, 4));
    fc2 = register_module("fc2", torch::nn::Linear(4, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc2->forward(torch::relu(fc1->forward(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

const std::vector<std::string> kParams = {"TinyNet_fc1.weight", "TinyNet_fc1.bias", "TinyNet_fc2.weight",
                                          "TinyNet_fc2.bias"};

std::unique_ptr<Hook> make_hook(HookOptions options) {
  auto hook = Hook::create(std::move(options));
  EXPECT_VIGIL_OK(hook);
  return hook ? std::move(*hook) : nullptr;
}

// Copies of what the hook should have saved, by name and global step.
using Captured = std::map<std::pair<std::string, int64_t>, torch::Tensor>;

// One training step through the hook; with `capture`, records the parameters as the step starts,
// the gradients and the loss.
void train_step(Hook& hook, TinyNet& net, torch::optim::SGD& opt, int64_t global_step, Captured* capture) {
  hook.begin_step();
  if (capture) {
    for (const auto& p : net.named_parameters()) (*capture)[{"TinyNet_" + p.key(), global_step}] = p.value().detach().clone();
  }
  opt.zero_grad();
  const torch::Tensor x = torch::randn({8, 3});
  torch::Tensor loss = torch::mse_loss(net.forward(x), x.sum(1, true));
  hook.record_loss(loss, "MSELoss");
  loss.backward();
  if (capture) {
    for (const auto& p : net.named_parameters())
      (*capture)[{"gradient/TinyNet_" + p.key(), global_step}] = p.value().grad().clone();
    (*capture)[{"MSELoss_output_0", global_step}] = loss.detach().clone();
  }
  opt.step();
  hook.end_step();
}

void expect_same(const vigil::TensorValue& v, const torch::Tensor& expected, const std::string& what) {
  const torch::Tensor t = expected.contiguous();
  EXPECT_EQ(v.shape(), std::vector<int64_t>(t.sizes().begin(), t.sizes().end())) << what;
  ASSERT_EQ(v.bytes().size(), t.nbytes()) << what;
  EXPECT_EQ(std::memcmp(v.bytes().data(), t.data_ptr(), t.nbytes()), 0) << what;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::ranges::sort(v);
  return v;
}

std::shared_ptr<vigil::Trial> open_trial(const fs::path& dir) {
  auto trial = vigil::Trial::open(dir);
  EXPECT_VIGIL_OK(trial);
  return trial ? *trial : nullptr;
}

TEST(LibtorchHook, SavesEveryOtherStepBitForBit) {
  ScratchDir dir;
  torch::manual_seed(1);
  auto net = std::make_shared<TinyNet>();
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05));
  auto hook = make_hook({.out_dir = dir.path(), .save_config = {.save_interval = 2}});
  ASSERT_TRUE(hook);
  hook->register_module(*net, "TinyNet");
  hook->set_mode(Mode::Train);
  Captured captured;
  for (int64_t step = 0; step < 5; ++step) train_step(*hook, *net, opt, step, step % 2 == 0 ? &captured : nullptr);
  EXPECT_FALSE(fs::exists(dir.path() / "training_job_end.ts"));
  hook->close();
  EXPECT_TRUE(hook->enabled());
  EXPECT_TRUE(fs::exists(dir.path() / "training_job_end.ts"));

  auto trial = open_trial(dir.path());
  ASSERT_TRUE(trial);
  EXPECT_TRUE(trial->training_ended());
  std::vector<std::string> expected_names = kParams;
  for (const auto& p : kParams) expected_names.push_back("gradient/" + p);
  expected_names.push_back("MSELoss_output_0");
  EXPECT_EQ(sorted(trial->tensor_names().value()), sorted(expected_names));
  EXPECT_EQ(trial->steps().value(), (Steps{0, 2, 4}));
  EXPECT_EQ(trial->steps(Mode::Train).value(), (Steps{0, 2, 4}));
  EXPECT_EQ(trial->modes(), (std::vector<Mode>{Mode::Train}));
  for (const auto& [key, tensor] : captured) {
    const auto& [name, step] = key;
    auto value = trial->value(name, step);
    ASSERT_TRUE(value) << name << " step " << step << ": " << value.error().message;
    EXPECT_EQ(value->dtype(), vigil::format::ElementType::Float32);
    expect_same(*value, tensor, name + " step " + std::to_string(step));
  }
  EXPECT_EQ(captured.size(), 3u * expected_names.size());

  auto members = [&](std::string_view collection) {
    const auto* c = trial->collection(collection);
    EXPECT_NE(c, nullptr) << collection;
    return c ? sorted(c->tensor_names) : std::vector<std::string>{};
  };
  EXPECT_EQ(members("weights"), (std::vector<std::string>{"TinyNet_fc1.weight", "TinyNet_fc2.weight"}));
  EXPECT_EQ(members("biases"), (std::vector<std::string>{"TinyNet_fc1.bias", "TinyNet_fc2.bias"}));
  EXPECT_EQ(members("gradients"), (std::vector<std::string>{"gradient/TinyNet_fc1.bias", "gradient/TinyNet_fc1.weight",
                                                            "gradient/TinyNet_fc2.bias", "gradient/TinyNet_fc2.weight"}));
  EXPECT_EQ(members("losses"), (std::vector<std::string>{"MSELoss_output_0"}));
}

TEST(LibtorchHook, ModesAndNoGradientsOutsideTraining) {
  ScratchDir dir;
  torch::manual_seed(2);
  auto net = std::make_shared<TinyNet>();
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05));
  // EVAL saves every step, TRAIN only its step 0.
  auto hook = make_hook({.out_dir = dir.path(),
                         .save_config = {.save_interval = 10},
                         .mode_save_configs = {{Mode::Eval, {.save_interval = 1}}}});
  ASSERT_TRUE(hook);
  hook->register_module(*net);  // the top name comes from the C++ type: "TinyNet"
  hook->set_mode(Mode::Train);
  Captured captured;
  for (int64_t step = 0; step < 3; ++step) train_step(*hook, *net, opt, step, &captured);
  hook->set_mode(Mode::Eval);
  for (int64_t step = 3; step < 5; ++step) train_step(*hook, *net, opt, step, &captured);  // backward too
  hook->close();

  auto trial = open_trial(dir.path());
  ASSERT_TRUE(trial);
  EXPECT_EQ(trial->modes(), (std::vector<Mode>{Mode::Train, Mode::Eval}));
  EXPECT_EQ(trial->steps().value(), (Steps{0, 3, 4}));
  EXPECT_EQ(trial->steps(Mode::Eval).value(), (Steps{0, 1}));
  EXPECT_EQ(trial->tensor_steps("gradient/TinyNet_fc1.weight").value(), (Steps{0}));
  EXPECT_EQ(trial->tensor_steps("TinyNet_fc1.weight", Mode::Eval).value(), (Steps{0, 1}));
  for (const std::string name : {"TinyNet_fc2.weight", "MSELoss_output_0"}) {
    auto v = trial->value(name, 1, Mode::Eval);
    ASSERT_VIGIL_OK(v);
    expect_same(*v, captured.at({name, 4}), name);
  }
}

TEST(LibtorchHook, IncludeCollectionsReductionsAndCustomTensors) {
  ScratchDir dir;
  torch::manual_seed(3);
  auto net = std::make_shared<TinyNet>();
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05));
  vigil::format::ReductionConfig reductions{.save_raw_tensor = false, .reductions = {{"mean", true}, {"l2", false}}};
  auto hook = make_hook({.out_dir = dir.path(),
                         .save_config = {.save_interval = 1},
                         .include_collections = {"gradients"},
                         .reductions = {{"gradients", reductions}}});
  ASSERT_TRUE(hook);
  hook->register_module(*net, "TinyNet");
  Captured captured;
  train_step(*hook, *net, opt, 0, &captured);
  hook->begin_step();
  // save_tensor ignores include_collections, like smdebug's; any layout and dtype it can store.
  const torch::Tensor matrix = torch::arange(6, torch::kDouble).reshape({2, 3});
  hook->save_tensor("custom/transposed", matrix.t());
  hook->save_tensor("custom/int64", torch::arange(4, torch::kLong));
  hook->save_tensor("custom/half", torch::full({3}, 0.5, torch::kHalf));
  hook->save_tensor("custom/bool", torch::tensor({true, false}));
  // bfloat16 keeps its dtype and its bits: the smallest normal, a subnormal, the largest finite.
  const torch::Tensor bf16 = torch::tensor({1.5, -1.1754943508222875e-38, 9.183549615799121e-41, 3.3895313892515355e+38},
                                           torch::kDouble).to(torch::kBFloat16);
  hook->save_tensor("custom/bf16", bf16);
  ::testing::internal::CaptureStderr();
  // A quantized tensor's scale is not in the event file: skipped, with one warning.
  const torch::Tensor quantized = torch::quantize_per_tensor(torch::ones({2}), 0.1, 0, torch::kQInt8);
  hook->save_tensor("custom/qint8", quantized);
  hook->save_tensor("custom/qint8", quantized);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  hook->close();
  EXPECT_TRUE(hook->enabled());
  EXPECT_EQ(warnings, "vigil::torch::Hook: custom/qint8 not saved: dtype QInt8 is not supported\n");

  auto trial = open_trial(dir.path());
  ASSERT_TRUE(trial);
  std::vector<std::string> expected = {"custom/bf16", "custom/bool", "custom/half", "custom/int64", "custom/transposed"};
  for (const auto& p : kParams) expected.push_back("gradient/" + p);
  EXPECT_EQ(sorted(trial->tensor_names().value()), sorted(expected));
  for (const auto& p : kParams) {
    const std::string name = "gradient/" + p;
    auto raw = trial->value(name, 0);  // reductions only
    ASSERT_FALSE(raw) << name;
    EXPECT_EQ(raw.error().code, vigil::ErrorCode::TensorUnavailableForStep) << name;
    const torch::Tensor grad = captured.at({name, 0}).to(torch::kDouble);
    auto mean = trial->reduction_value(name, 0, "mean", /*abs=*/true);
    auto l2 = trial->reduction_value(name, 0, "l2");
    ASSERT_TRUE(mean && l2) << name;
    EXPECT_NEAR(mean->value, grad.abs().mean().item<double>(), 1e-6) << name;
    EXPECT_NEAR(l2->value, grad.norm().item<double>(), 1e-6) << name;
  }
  auto transposed = trial->value("custom/transposed", 1);
  ASSERT_VIGIL_OK(transposed);
  EXPECT_EQ(transposed->dtype(), vigil::format::ElementType::Float64);
  expect_same(*transposed, matrix.t().contiguous(), "custom/transposed");
  EXPECT_EQ(trial->value("custom/int64", 1)->dtype(), vigil::format::ElementType::Int64);
  EXPECT_EQ(trial->value("custom/half", 1)->dtype(), vigil::format::ElementType::Float16);
  EXPECT_EQ(trial->value("custom/bool", 1)->dtype(), vigil::format::ElementType::Bool);
  expect_same(*trial->value("custom/half", 1), torch::full({3}, 0.5, torch::kHalf), "custom/half");
  EXPECT_EQ(trial->value("custom/bf16", 1)->dtype(), vigil::format::ElementType::BFloat16);
  expect_same(*trial->value("custom/bf16", 1), bf16, "custom/bf16");
  // Reduced in float64 from the exact values, as training had them.
  auto bf16_max = trial->reduction_value("custom/bf16", 1, "max");
  ASSERT_VIGIL_OK(bf16_max);
  EXPECT_EQ(bf16_max->value, bf16.to(torch::kDouble).max().item<double>());
}

TEST(LibtorchHook, TopNameOfALibtorchModule) {
  ScratchDir dir;
  torch::nn::Sequential seq(torch::nn::Linear(2, 2));
  auto hook = make_hook({.out_dir = dir.path(), .save_config = {.save_interval = 1}});
  ASSERT_TRUE(hook);
  hook->register_module(*seq);  // torch::nn::SequentialImpl -> "Sequential", as smdebug names it
  hook->begin_step();
  hook->close();
  auto trial = open_trial(dir.path());
  ASSERT_TRUE(trial);
  EXPECT_EQ(sorted(trial->tensor_names().value()), (std::vector<std::string>{"Sequential_0.bias", "Sequential_0.weight"}));
}

// The hook's own failures never reach the training loop: reported once, then the hook stays quiet.
TEST(LibtorchHookFaults, OutDirThatCannotBeCreated) {
  ScratchDir dir;
  std::ofstream(dir.path() / "file") << "not a folder";
  vigil::Result<std::unique_ptr<Hook>> hook;
  EXPECT_NO_THROW(hook = Hook::create({.out_dir = dir.path() / "file" / "trial"}));
  ASSERT_FALSE(hook);
  EXPECT_EQ(hook.error().code, vigil::ErrorCode::Io) << hook.error().message;
}

// Makes every write of the hook fail after it was created: out_dir becomes a plain file.
void break_out_dir(const fs::path& out_dir) {
  fs::remove_all(out_dir);
  std::ofstream(out_dir) << "not a folder";
}

size_t count(const std::string& text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(LibtorchHookFaults, WriteFailuresDisableTheHookOnceAndTrainingGoesOn) {
  // The writer thread fails at the first event file (weights in begin_step; with only gradients
  // included, those queued from autograd's tensor hook); the training thread never waits for it.
  for (const bool gradients_only : {false, true}) {
    SCOPED_TRACE(gradients_only ? "gradients only" : "all collections");
    ScratchDir dir;
    torch::manual_seed(4);
    auto net = std::make_shared<TinyNet>();
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05));
    HookOptions options{.out_dir = dir.path() / "trial", .save_config = {.save_interval = 1}};
    if (gradients_only) options.include_collections = {"gradients"};
    auto hook = make_hook(options);
    ASSERT_TRUE(hook);
    hook->register_module(*net, "TinyNet");
    break_out_dir(options.out_dir);

    const torch::Tensor before = net->fc1->weight.detach().clone();
    ::testing::internal::CaptureStderr();
    EXPECT_NO_THROW({
      for (int64_t step = 0; step < 3; ++step) train_step(*hook, *net, opt, step, nullptr);
      hook->save_tensor("custom", torch::ones({2}));
      hook->close();
    });
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(hook->enabled());
    EXPECT_EQ(count(err, "vigil::torch::Hook:"), 1u) << err;
    // The writer thread meets the broken folder; the hook says so when it next ends a step.
    EXPECT_NE(err.find("the trial could not be written: "), std::string::npos) << err;
    EXPECT_NE(err.find((options.out_dir / "events").string()), std::string::npos) << err;
    EXPECT_NE(err.find("the hook is disabled"), std::string::npos) << err;
    EXPECT_TRUE(net->fc1->weight.grad().defined());
    EXPECT_FALSE(torch::equal(before, net->fc1->weight.detach()));  // the optimizer kept training
  }
}

}  // namespace
