// vigil::torch::Hook: saves a libtorch training loop's tensors as an smdebug trial (format spec §6),
// the way smdebug's PyTorch hook does for Python, so Vigil's rules can watch a C++ training job.
//
//   auto created = vigil::torch::Hook::create({.out_dir = "/tmp/trial"});
//   if (!created) { /* created.error().message */ }
//   auto& hook = **created;
//   hook.register_module(*model, "Net");
//   hook.set_mode(vigil::Mode::Train);
//   for (...) {
//     hook.begin_step();                     // saves weights and biases when the step is due
//     optimizer.zero_grad();
//     auto loss = torch::mse_loss(model->forward(x), y);
//     hook.record_loss(loss, "MSELoss");     // "MSELoss_output_0", collection "losses"
//     loss.backward();                       // gradients are saved as autograd computes them
//     optimizer.step();
//     hook.end_step();                       // the step's files are published by the writer thread
//   }
//   hook.close();                            // writes training_job_end.ts
//
// Tensor names follow smdebug PyTorch (§6.2): parameters "<top>_<path>" (Net_fc1.weight), their
// gradients "gradient/<top>_<path>". What is saved follows the save configuration of each tensor's
// collections at the current mode step (§6.1); in EVAL and PREDICT steps gradients are never saved.
// Those decisions are the capture core's (host/writer/capture_policy.h), the same as the Python hooks'.
//
// Saved dtypes: float, double, half, int8/16/32/64, uint8, bool; others are skipped with one warning
// per name. A tensor on another device or not contiguous is copied to a contiguous CPU tensor first;
// its bytes are then copied once into the writer's bounded queue (256 MiB; a step that would go past
// it is dropped and marked, writer/queued_writer.h), and the writer thread computes the reductions
// and writes, so the training thread never waits for the disk.
//
// The hook never harms training: no method throws. The first libtorch or writer error is printed
// once to stderr (a writer error when the hook next ends a step) and disables the hook, which then
// saves nothing more; training goes on.
// Methods and the gradient hooks may run on different threads (autograd's device threads).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "common/error.h"
#include "common/mode.h"
#include "format/collections_json.h"

namespace vigil::torch {

// smdebug's SaveConfigMode: mode step s is saved when it is in save_steps, or when
// start_step <= s < end_step (end_step unset: no end) and s % save_interval == 0.
using SaveConfig = format::SaveConfigMode;

struct HookOptions {
  // A folder, or an s3:// location: the trial is then written to a local staging folder
  // ($VIGIL_STAGING_DIR or the temp folder) and uploaded as it grows; close() waits for the last
  // uploads up to $VIGIL_UPLOAD_TIMEOUT_SECONDS (60).
  std::filesystem::path out_dir;
  SaveConfig save_config;                    // every mode, unless overridden below
  std::map<Mode, SaveConfig> mode_save_configs;
  // What the hook saves by itself; "all" selects everything. save_tensor() ignores this, like smdebug.
  std::vector<std::string> include_collections = {"weights", "biases", "gradients", "losses"};
  // Per collection: reductions instead of (save_raw_tensor = false) or besides the raw tensor (§3.10).
  std::map<std::string, format::ReductionConfig> reductions;
  std::string worker = "worker_0";
  int num_workers = 1;
};

class Hook {
 public:
  // Creates out_dir (s3://: its staging folder and uploader). Errors (never exceptions):
  // InvalidArgument for bad options, Io when out_dir cannot be created or its store opened,
  // Internal when it holds a finished trial.
  static Result<std::unique_ptr<Hook>> create(HookOptions options);
  // Publishes the open step but writes no end marker (the run did not finish): call close().
  ~Hook();
  Hook(const Hook&) = delete;
  Hook& operator=(const Hook&) = delete;

  // Watches every parameter of `module` (recursively): the values at the start of each saved step,
  // and their gradients through tensor hooks. `top_name` is smdebug's top-module class name; empty
  // takes libtorch's type name without namespaces and without a trailing "Impl" (NetImpl -> Net).
  void register_module(::torch::nn::Module& module, std::string top_name = {}) noexcept;

  // The mode of the steps begun from now on; GLOBAL until set, as in smdebug.
  void set_mode(Mode mode) noexcept;
  // Starts the next step (ending the open one) and saves the due weights and biases. Tensors
  // recorded outside a step (before the first begin_step(), after end_step()) are not saved.
  void begin_step() noexcept;
  // Publishes the open step; optional, begin_step() and close() do it too.
  void end_step() noexcept;

  // A C++ loop has no loss module to hook, so the loss is given here and saved as smdebug names a
  // loss module's output: "<name>_output_0" in the collection "losses".
  void record_loss(const at::Tensor& loss, std::string_view name = "loss") noexcept;
  // Saves any tensor at the current step, as its collection's save configuration says.
  void save_tensor(std::string_view name, const at::Tensor& tensor, std::string_view collection = "default") noexcept;

  // Ends the open step, writes the collections file and training_job_end.ts, and removes the
  // gradient hooks; for an s3:// out_dir, then waits for the upload. Later calls do nothing.
  void close() noexcept;

  // False once an error has disabled the hook.
  bool enabled() const noexcept;
  const std::filesystem::path& out_dir() const noexcept;  // as given (s3:// too)

 private:
  struct State;
  explicit Hook(std::shared_ptr<State> state);
  // Shared with the gradient hooks (as weak references), which may outlive the Hook.
  std::shared_ptr<State> state_;
};

}  // namespace vigil::torch
