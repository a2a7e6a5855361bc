// vigil::torch::Hook: libtorch tensors, chosen by the capture core (writer/capture_policy.h), into
// the queued writer (writer/queued_writer.h), whose thread does the reductions and the I/O
// (format spec §3.8, §6.1, §6.2).
#include "vigil/torch/hook.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <utility>

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include "writer/capture_policy.h"
#include "writer/queued_writer.h"
#include "writer/trial_uploader.h"

namespace vigil::torch {

namespace fs = std::filesystem;
using writer::CapturePlan;
using writer::ElementType;
using writer::QueuedWriter;
using writer::TensorData;

namespace {

std::optional<ElementType> element_type(c10::ScalarType t) {
  switch (t) {
    case c10::kHalf: return ElementType::Float16;
    case c10::kBFloat16: return ElementType::BFloat16;
#if TORCH_VERSION_MAJOR >= 2  // float8 came with torch 2.1; Debian's libtorch is 1.13
    case c10::ScalarType::Float8_e4m3fn: return ElementType::Float8E4M3FN;
    case c10::ScalarType::Float8_e5m2: return ElementType::Float8E5M2;
#endif
    case c10::kFloat: return ElementType::Float32;
    case c10::kDouble: return ElementType::Float64;
    case c10::kChar: return ElementType::Int8;
    case c10::kShort: return ElementType::Int16;
    case c10::kInt: return ElementType::Int32;
    case c10::kLong: return ElementType::Int64;
    case c10::kByte: return ElementType::UInt8;
    case c10::kBool: return ElementType::Bool;
    default: return std::nullopt;
  }
}

// smdebug uses the top module's Python class name; libtorch's Module::name() is the demangled C++
// type ("torch::nn::SequentialImpl", "(anonymous namespace)::NetImpl").
std::string class_name(const ::torch::nn::Module& module) {
  std::string name = module.name();
  if (auto colon = name.rfind("::"); colon != std::string::npos) name.erase(0, colon + 2);
  if (name.size() > 4 && name.ends_with("Impl")) name.resize(name.size() - 4);
  return name;
}

}  // namespace

struct Hook::State {
  struct Param {
    std::string name;  // "<top>_<path>"
    at::Tensor tensor;
    std::optional<unsigned> grad_hook;
  };

  std::mutex mutex;  // the gradient hooks may run on autograd's threads
  writer::CapturePolicy policy;
  std::unique_ptr<QueuedWriter> writer;
  int64_t num_workers = 1;
  fs::path out_dir;  // as the user named it (an s3:// location stays one)
  // An s3:// out_dir: the writer writes a staging folder, which this uploads (close() finishes it).
  std::unique_ptr<writer::TrialUploader> uploader;
  std::chrono::milliseconds upload_timeout{0};
  std::vector<Param> params;
  std::set<std::string, std::less<>> warned;  // names skipped for their dtype
  bool step_open = false;
  bool saved_any = false;              // a step of this hook had something to write
  bool collections_published = false;  // after the first saved step, as smdebug's hook
  std::atomic<bool> disabled = false;  // read by enabled() without the lock
  bool closed = false;

  bool active() const { return writer && !disabled && !closed; }

  void disable(const std::string& why) {
    if (disabled.exchange(true)) return;
    std::fprintf(stderr, "vigil::torch::Hook: %s; the hook is disabled and saves nothing more (training goes on)\n",
                 why.c_str());
    writer.reset();  // publishes what it can, reports nothing more
  }

  // Runs `body` under the lock while the hook is active; any exception disables the hook.
  template <typename F>
  void guarded(std::string_view what, F&& body) noexcept {
    try {
      std::lock_guard lock(mutex);
      if (!active()) return;
      try {
        body();
      } catch (const c10::Error& e) {
        disable(fmt::format("{}: libtorch error: {}", what, e.what_without_backtrace()));
      } catch (const std::exception& e) {
        disable(fmt::format("{}: {}", what, e.what()));
      } catch (...) {
        disable(fmt::format("{}: unknown exception", what));
      }
    } catch (...) {
      // Locking or formatting the message failed; there is nothing safe left to do.
    }
  }

  // The writer thread stops at its first error; the hook then steps aside.
  void check_writer() {
    if (!writer) return;
    if (auto e = writer->error()) disable(fmt::format("the trial could not be written: {}", e->message));
  }

  void publish_collections() {
    writer->publish_collections(format::serialize_collections_json(policy.collections_file(num_workers)));
    collections_published = true;
  }

  // Saves `value` as the capture core plans it at this step (nothing when no collection of it is
  // due): the bytes are copied into the writer's queue; reductions and I/O happen on its thread.
  void save(const std::string& name, const at::Tensor& value, std::span<const std::string> collections) {
    const CapturePlan plan = policy.plan(name, collections);
    if (plan.empty()) return;
    at::Tensor t = value.detach();
    if (t.layout() != c10::kStrided) t = t.to_dense();
    auto dtype = element_type(t.scalar_type());
    if (!dtype) {
      if (warned.insert(name).second)
        std::fprintf(stderr, "vigil::torch::Hook: %s not saved: dtype %s is not supported\n", name.c_str(),
                     c10::toString(t.scalar_type()));
      return;
    }
    if (t.numel() == 0) return;  // smdebug lists the name but writes nothing for zero-size values
    if (!t.device().is_cpu()) t = t.cpu();
    t = t.contiguous();  // itself when already contiguous: no copy here; the writer copies once
    const TensorData data{.dtype = *dtype,
                          .shape = {t.sizes().begin(), t.sizes().end()},
                          .bytes = {static_cast<const std::byte*>(t.data_ptr()), t.nbytes()}};
    writer->write({.name = name, .save_shape = plan.save_shape, .reductions = plan.reductions, .save_raw = plan.save_raw},
                  data);
    saved_any = true;
  }

  void end_step() {
    if (!step_open) return;
    step_open = false;
    writer->end_step();
    check_writer();
  }

  void on_gradient(const std::string& name, const at::Tensor& grad) noexcept {
    guarded("saving a gradient", [&] {
      if (step_open && grad.defined()) save(name, grad, {});
    });
  }

  void remove_gradient_hooks() noexcept {
    for (auto& p : params) {
      if (!p.grad_hook) continue;
      try {
        p.tensor.remove_hook(*p.grad_hook);
      } catch (...) {
        // The parameter no longer takes hooks; the weak reference keeps its hook harmless.
      }
      p.grad_hook.reset();
    }
  }
};

Hook::Hook(std::shared_ptr<State> state) : state_(std::move(state)) {}

Hook::~Hook() {
  try {
    std::lock_guard lock(state_->mutex);
    state_->remove_gradient_hooks();
    state_->writer.reset();
  } catch (...) {
  }
}

Result<std::unique_ptr<Hook>> Hook::create(HookOptions options) {
  try {
    writer::CaptureDefaults defaults;
    for (Mode m : kAllModes) {
      auto it = options.mode_save_configs.find(m);
      defaults.save_config[static_cast<size_t>(m) - 1] =
          it != options.mode_save_configs.end() ? it->second : options.save_config;
    }
    // smdebug PyTorch's collections; with "all" included, its "all" collection holds every tensor
    // (as the Python hook's save_all). A collection given reductions keeps its regex, so its members
    // and its collections-file entry stay smdebug's.
    std::vector<format::CollectionConfig> collections = writer::pytorch_builtin_collections();
    const bool all = std::ranges::find(options.include_collections, "all") != options.include_collections.end();
    for (auto& c : collections)
      if (c.name == "all" && all) c.include_regex = {".*"};
    for (auto& [name, reduction] : options.reductions) {
      auto same = std::ranges::find(collections, name, &format::CollectionConfig::name);
      if (same != collections.end())
        same->reduction_config = reduction;
      else
        collections.push_back({.name = name, .reduction_config = reduction});
    }
    auto policy = writer::CapturePolicy::create(std::move(collections), options.include_collections, defaults);
    if (!policy) return fail(policy.error());

    std::unique_ptr<writer::TrialUploader> uploader;
    fs::path local_dir = options.out_dir;
    std::chrono::milliseconds upload_timeout{0};
    if (writer::needs_staging(options.out_dir.string())) {
      auto timeout = writer::upload_timeout_from_environment();
      if (!timeout) return fail(timeout.error());
      upload_timeout = *timeout;
      auto staging = writer::make_staging_folder();
      if (!staging) return fail(staging.error());
      auto store = storage::open_object_store(options.out_dir.string(), /*create=*/true);
      if (!store) return fail(store.error());
      auto started = writer::TrialUploader::start(*staging, std::move(*store));
      if (!started) return fail(started.error());
      uploader = std::move(*started);
      local_dir = *staging;
    }
    writer::QueuedWriterOptions wo;
    wo.writer.worker = options.worker;
    wo.writer.num_workers = options.num_workers;
    wo.writer.write_collections = false;  // the hook publishes its policy's collections
    auto w = QueuedWriter::create(local_dir, std::move(wo));
    if (!w) return fail(w.error());
    auto state = std::make_shared<State>();
    state->policy = std::move(*policy);
    state->writer = std::move(*w);
    state->num_workers = options.num_workers;
    state->out_dir = options.out_dir;
    state->uploader = std::move(uploader);
    state->upload_timeout = upload_timeout;
    return std::unique_ptr<Hook>(new Hook(std::move(state)));
  } catch (const std::exception& e) {
    return fail(Error::internal(fmt::format("vigil::torch::Hook::create: {}", e.what())));
  } catch (...) {
    return fail(Error::internal("vigil::torch::Hook::create: unknown exception"));
  }
}

void Hook::register_module(::torch::nn::Module& module, std::string top_name) noexcept {
  state_->guarded("register_module", [&] {
    auto& s = *state_;
    if (top_name.empty()) top_name = class_name(module);
    for (const auto& item : module.named_parameters(/*recurse=*/true)) {
      State::Param p{.name = fmt::format("{}_{}", top_name, item.key()), .tensor = item.value()};
      if (s.policy.includes("gradients") && p.tensor.requires_grad()) {
        p.grad_hook = p.tensor.register_hook(
            [weak = std::weak_ptr<State>(state_), name = "gradient/" + p.name](const at::Tensor& grad) {
              if (auto locked = weak.lock()) locked->on_gradient(name, grad);
            });
      }
      s.params.push_back(std::move(p));
    }
  });
}

void Hook::set_mode(Mode mode) noexcept {
  state_->guarded("set_mode", [&] { state_->policy.set_mode(mode); });
}

void Hook::begin_step() noexcept {
  state_->guarded("begin_step", [&] {
    auto& s = *state_;
    s.end_step();
    if (!s.active()) return;
    if (s.saved_any && !s.collections_published) s.publish_collections();
    s.policy.begin_step();
    s.writer->begin_step(s.policy.global_step(), s.policy.mode(), s.policy.mode_step());
    s.step_open = true;
    for (const auto& p : s.params) s.save(p.name, p.tensor, {});
  });
}

void Hook::end_step() noexcept {
  state_->guarded("end_step", [&] { state_->end_step(); });
}

void Hook::record_loss(const at::Tensor& loss, std::string_view name) noexcept {
  state_->guarded("record_loss", [&] {
    auto& s = *state_;
    if (!s.step_open || !s.policy.includes("losses")) return;
    const std::string collection = "losses";
    s.save(fmt::format("{}_output_0", name), loss, {&collection, 1});
  });
}

void Hook::save_tensor(std::string_view name, const at::Tensor& tensor, std::string_view collection) noexcept {
  state_->guarded("save_tensor", [&] {
    auto& s = *state_;
    if (!s.step_open) return;
    const std::string c(collection);
    s.save(std::string(name), tensor, {&c, 1});
  });
}

void Hook::close() noexcept {
  try {
    std::lock_guard lock(state_->mutex);
    state_->remove_gradient_hooks();
  } catch (...) {
  }
  state_->guarded("close", [&] {
    auto& s = *state_;
    s.end_step();
    if (!s.active()) return;
    if (!s.collections_published) s.publish_collections();
    auto closed = s.writer->close(/*end_marker=*/true);
    s.writer.reset();
    s.closed = true;
    if (!closed) s.disable(fmt::format("the trial could not be written: {}", closed.error().message));
  });
  // Also after a fault disabled the hook: what was published still goes up.
  try {
    std::unique_ptr<writer::TrialUploader> uploader;
    std::chrono::milliseconds timeout{0};
    {
      std::lock_guard lock(state_->mutex);
      uploader = std::move(state_->uploader);
      timeout = state_->upload_timeout;
    }
    if (!uploader) return;
    auto report = uploader->finish(timeout);
    if (!report || !report->complete())
      std::fprintf(stderr, "vigil::torch::Hook: the trial staged in %s was not all uploaded to %s: %s\n",
                   uploader->staging().c_str(), state_->out_dir.c_str(),
                   !report ? report.error().message.c_str()
                           : report->first_error ? report->first_error->message.c_str() : "files left");
  } catch (...) {
  }
}

bool Hook::enabled() const noexcept { return !state_->disabled; }

const fs::path& Hook::out_dir() const noexcept { return state_->out_dir; }

}  // namespace vigil::torch
