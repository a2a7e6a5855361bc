// The deterministic trial the reliability tests write and check: every value is a function of
// (global step, worker index, tensor name), so a checker recomputes what must be on disk without
// knowing what the writer managed to do before it was killed.
//
// Each step holds, in this order: "scalar/loss" (save_scalar), "layer/bias" (float64 [32]) with a
// saved "max" reduction, "labels" (int32 [4, 8]), "big/weight" (float32 [big_elements], several MB
// in the crash tests so that kills land inside its record), "tokens" (3 strings) and a shape-only
// entry "activations" [8, 16]. Every fifth step (4, 9, ...) is an EVAL step, the others TRAIN.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "trial/trial.h"
#include "writer/trial_writer.h"

namespace vigil::torture {

inline Mode mode_of(int64_t step) { return step % 5 == 4 ? Mode::Eval : Mode::Train; }

// Steps of the same mode before this one: EVAL steps 4, 9, ... are g / 5 before g.
inline int64_t mode_step_of(int64_t step) { return mode_of(step) == Mode::Eval ? step / 5 : step - step / 5; }

inline std::string worker_name(int worker_index) { return fmt::format("worker_{}", worker_index); }

inline double loss_of(int64_t step, int w) { return double(step) * 0.5 + w * 1000 + 0.25; }
inline double bias_of(int64_t step, int w, int64_t i) { return double(step) + double(i) / 64 + w * 100; }
inline double bias_max_of(int64_t step, int w) { return bias_of(step, w, 31); }
inline int32_t label_of(int64_t step, int w, int64_t i) { return int32_t(step * 1000 + i * 3 - w); }
// Below 2^24, so exact in a float; a multiplicative hash so that misplaced bytes show.
inline float big_of(int64_t step, int w, uint64_t i) {
  return float((i * 2654435761u + uint64_t(step) * 40503u + uint64_t(w) * 97u) & 0xFFFFFFu);
}
inline std::string token_of(int64_t step, int w, int j) { return fmt::format("w{}-s{}-t{}", w, step, j); }

constexpr int64_t kBiasElements = 32;
constexpr std::array<int64_t, 2> kLabelShape{4, 8};
constexpr std::array<int64_t, 2> kActivationShape{8, 16};
constexpr int kTokens = 3;

// Every tensor name a step has, as Trial::tensor_names reports them.
inline std::set<std::string> tensor_names() {
  return {"scalar/loss", "layer/bias", "labels", "big/weight", "tokens", "activations"};
}

// Writes the records of `step` into the open step of `writer`.
inline Result<void> write_step(writer::TrialWriter& writer, int64_t step, int w, int64_t big_elements) {
  using format::ElementType;
  if (auto r = writer.save_scalar("loss", loss_of(step, w)); !r) return r;

  std::vector<double> bias(kBiasElements);
  for (int64_t i = 0; i < kBiasElements; ++i) bias[size_t(i)] = bias_of(step, w, i);
  if (auto r = writer.write_tensor("layer/bias", {ElementType::Float64, {kBiasElements}, std::as_bytes(std::span(bias)), {}}); !r)
    return r;
  const double bias_max = bias_max_of(step, w);
  if (auto r = writer.write_reduction("layer/bias", "max", false,
                                      {ElementType::Float64, {}, std::as_bytes(std::span(&bias_max, 1)), {}});
      !r)
    return r;

  std::vector<int32_t> labels(size_t(kLabelShape[0] * kLabelShape[1]));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = label_of(step, w, int64_t(i));
  if (auto r = writer.write_tensor("labels", {ElementType::Int32, {kLabelShape.begin(), kLabelShape.end()},
                                              std::as_bytes(std::span(labels)), {}});
      !r)
    return r;

  std::vector<float> big(static_cast<size_t>(big_elements));
  for (size_t i = 0; i < big.size(); ++i) big[i] = big_of(step, w, i);
  if (auto r = writer.write_tensor("big/weight", {ElementType::Float32, {big_elements}, std::as_bytes(std::span(big)), {}}); !r)
    return r;

  std::vector<std::string> tokens;
  for (int j = 0; j < kTokens; ++j) tokens.push_back(token_of(step, w, j));
  if (auto r = writer.write_tensor("tokens", {ElementType::String, {kTokens}, {}, tokens}); !r) return r;

  return writer.write_shape("activations", kActivationShape);
}

// What is wrong with worker `w`'s data at `step` as `trial` returns it; nullopt when every tensor,
// the saved reduction, the shape and the step's mode are exactly as written.
inline std::optional<std::string> check_step(Trial& trial, int64_t step, int w, int64_t big_elements) {
  const std::string worker = worker_name(w);
  auto where = [&](std::string_view what) { return fmt::format("step {} {}: {}", step, worker, what); };

  const auto mode = trial.mode_modestep(step);
  if (!mode || mode->first != mode_of(step) || mode->second != mode_step_of(step)) return where("wrong mode or mode step");

  auto loss = trial.value("scalar/loss", step, Mode::Global, worker);
  if (!loss) return where("scalar/loss: " + loss.error().message);
  if (loss->dtype() != format::ElementType::Float64 || loss->shape() != std::vector<int64_t>{1} ||
      loss->as<double>()[0] != loss_of(step, w))
    return where("scalar/loss has the wrong value");

  auto bias = trial.value("layer/bias", step, Mode::Global, worker);
  if (!bias) return where("layer/bias: " + bias.error().message);
  if (bias->dtype() != format::ElementType::Float64 || bias->shape() != std::vector<int64_t>{kBiasElements})
    return where("layer/bias has the wrong dtype or shape");
  for (int64_t i = 0; i < kBiasElements; ++i)
    if (bias->as<double>()[size_t(i)] != bias_of(step, w, i)) return where(fmt::format("layer/bias[{}] is wrong", i));
  auto bias_max = trial.reduction_value("layer/bias", step, "max", false, Mode::Global, worker);
  if (!bias_max) return where("layer/bias max: " + bias_max.error().message);
  if (!bias_max->saved || bias_max->value != bias_max_of(step, w)) return where("layer/bias max is wrong");

  auto labels = trial.value("labels", step, Mode::Global, worker);
  if (!labels) return where("labels: " + labels.error().message);
  if (labels->dtype() != format::ElementType::Int32 ||
      labels->shape() != std::vector<int64_t>(kLabelShape.begin(), kLabelShape.end()))
    return where("labels have the wrong dtype or shape");
  for (size_t i = 0; i < labels->size(); ++i)
    if (labels->as<int32_t>()[i] != label_of(step, w, int64_t(i))) return where(fmt::format("labels[{}] is wrong", i));

  auto big = trial.value("big/weight", step, Mode::Global, worker);
  if (!big) return where("big/weight: " + big.error().message);
  if (big->dtype() != format::ElementType::Float32 || big->shape() != std::vector<int64_t>{big_elements})
    return where("big/weight has the wrong dtype or shape");
  const auto values = big->as<float>();
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] != big_of(step, w, i)) return where(fmt::format("big/weight[{}] is wrong", i));

  auto tokens = trial.value("tokens", step, Mode::Global, worker);
  if (!tokens) return where("tokens: " + tokens.error().message);
  if (!tokens->is_string() || tokens->string_values().size() != size_t(kTokens)) return where("tokens have the wrong type");
  for (int j = 0; j < kTokens; ++j)
    if (tokens->string_values()[size_t(j)] != token_of(step, w, j)) return where(fmt::format("tokens[{}] is wrong", j));

  auto shape = trial.shape("activations", step, Mode::Global, worker);
  if (!shape) return where("activations shape: " + shape.error().message);
  if (*shape != std::vector<int64_t>(kActivationShape.begin(), kActivationShape.end()))
    return where("activations has the wrong shape");
  return std::nullopt;
}

}  // namespace vigil::torture
