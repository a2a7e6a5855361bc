// Writes a small example trial with Vigil's writer, as a training job's hook would: a two-layer
// model trained for 12 TRAIN steps with an EVAL step after every 4, saving weights, gradients,
// the loss, a ReLU output as reductions only, and a learning-rate scalar.
//
//   write_example_trial OUT_DIR
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "writer/trial_writer.h"

using vigil::Mode;
using vigil::writer::TensorData;
using vigil::writer::TrialWriter;

namespace {

TensorData floats(const std::vector<float>& v, std::vector<int64_t> shape) {
  return TensorData{.dtype = vigil::format::ElementType::Float32,
                    .shape = std::move(shape),
                    .bytes = std::as_bytes(std::span<const float>(v))};
}

int report(const vigil::Error& e) {
  std::fprintf(stderr, "write_example_trial: %s\n", e.message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fprintf(argc == 2 ? stdout : stderr, "usage: write_example_trial OUT_DIR\n\n"
                 "Writes a small smdebug-format trial (weights, gradients, loss, reductions) into OUT_DIR.\n");
    return argc == 2 ? 0 : 2;
  }
  vigil::writer::WriterOptions options;
  for (auto& mode_config : options.save_config) mode_config.save_interval = 1;
  auto writer = TrialWriter::create(argv[1], options);
  if (!writer) return report(writer.error());
  TrialWriter& w = **writer;

  vigil::format::CollectionConfig relu;
  relu.name = "relu_reductions";
  relu.include_regex = {"relu\\d*_output"};
  relu.reduction_config = vigil::format::ReductionConfig{
      .save_raw_tensor = false, .reductions = {{"mean", false}, {"max", false}, {"l2", false}}, .save_shape = false};
  if (auto r = w.add_collection(relu); !r) return report(r.error());

  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> weight(4 * 8), bias(4);
  for (auto& x : weight) x = normal(rng);

  float loss = 2.0f;
  for (int step = 0; step < 15; ++step) {
    const bool eval = step % 5 == 4;
    if (auto r = w.begin_step(eval ? Mode::Eval : Mode::Train); !r) return report(r.error());
    std::vector<float> loss_v{loss};
    if (auto r = w.save_tensor("CrossEntropyLoss_output_0", floats(loss_v, {})); !r) return report(r.error());
    std::vector<float> relu_out(16);
    for (auto& x : relu_out) x = std::max(0.0f, normal(rng));
    if (auto r = w.save_tensor("relu1_output_0", floats(relu_out, {2, 8})); !r) return report(r.error());
    if (!eval) {
      std::vector<float> grad(weight.size());
      for (size_t i = 0; i < grad.size(); ++i) grad[i] = 0.1f * loss * normal(rng);
      if (auto r = w.save_tensor("Net_fc1.weight", floats(weight, {4, 8})); !r) return report(r.error());
      if (auto r = w.save_tensor("Net_fc1.bias", floats(bias, {4})); !r) return report(r.error());
      if (auto r = w.save_tensor("gradient/Net_fc1.weight", floats(grad, {4, 8})); !r) return report(r.error());
      if (auto r = w.save_scalar("learning_rate", 0.01); !r) return report(r.error());
      for (size_t i = 0; i < weight.size(); ++i) weight[i] -= 0.01f * grad[i];
      loss *= 0.9f;
    }
  }
  if (auto r = w.close(); !r) return report(r.error());
  std::printf("wrote example trial to %s\n", argv[1]);
  return 0;
}
