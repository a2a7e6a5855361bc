// A libtorch training loop that saves a trial through vigil::torch::Hook: a deep sigmoid MLP with a
// tiny initialisation, trained with SGD on synthetic regression data for 20 steps, every step saved.
// Sigmoid's slope (at most 1/4) times the tiny weights shrinks the gradient at every layer, so the
// first layers' gradients vanish on purpose: `vigil evaluate --trial OUT_DIR --rule VanishingGradient`
// finds them.
//
//   libtorch_training_example OUT_DIR
#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "vigil/torch/hook.h"

namespace {

constexpr int kInputs = 16, kWidth = 32, kDepth = 8, kBatch = 64, kSteps = 20;

struct Net : torch::nn::Module {
  Net() {
    for (int i = 0; i < kDepth; ++i)
      hidden.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(i == 0 ? kInputs : kWidth, kWidth)));
    out = register_module("out", torch::nn::Linear(kWidth, 1));
    torch::NoGradGuard no_grad;
    for (auto& p : parameters()) p.normal_(0.0, 0.01);
  }
  torch::Tensor forward(torch::Tensor x) {
    for (auto& layer : hidden) x = torch::sigmoid(layer->forward(x));
    return out->forward(x);
  }
  std::vector<torch::nn::Linear> hidden;
  torch::nn::Linear out{nullptr};
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fprintf(argc == 2 ? stdout : stderr, "usage: libtorch_training_example OUT_DIR\n\n"
                 "Trains a deep sigmoid MLP with libtorch for %d steps, saving every step into OUT_DIR.\n", kSteps);
    return argc == 2 ? 0 : 2;
  }
  auto created = vigil::torch::Hook::create({.out_dir = argv[1], .save_config = {.save_interval = 1}});
  if (!created) {
    std::fprintf(stderr, "libtorch_training_example: %s\n", created.error().message.c_str());
    return 1;
  }
  vigil::torch::Hook& hook = **created;

  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({kBatch, kInputs});
  const torch::Tensor y = torch::sin(x).sum(1, /*keepdim=*/true);
  auto net = std::make_shared<Net>();
  hook.register_module(*net, "Net");
  hook.set_mode(vigil::Mode::Train);
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.1));

  double last_loss = 0;
  for (int step = 0; step < kSteps; ++step) {
    hook.begin_step();
    optimizer.zero_grad();
    torch::Tensor loss = torch::mse_loss(net->forward(x), y);
    hook.record_loss(loss, "MSELoss");
    loss.backward();
    optimizer.step();
    hook.end_step();
    last_loss = loss.item<double>();
  }
  hook.close();
  if (!hook.enabled()) return 1;  // the hook has said why on stderr
  std::printf("trained %d steps (final loss %.4f), trial in %s\n", kSteps, last_loss, argv[1]);
  return 0;
}
