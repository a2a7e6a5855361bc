// vigil::torch::Hook: libtorch tensors into TrialWriter (format spec §3.8, §6.1, §6.2).
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

#include "writer/trial_uploader.h"
#include "writer/trial_writer.h"

namespace vigil::torch {

namespace fs = std::filesystem;
using writer::ElementType;
using writer::TensorData;
using writer::TrialWriter;

namespace {

std::optional<ElementType> element_type(c10::ScalarType t) {
  switch (t) {
    case c10::kHalf: return ElementType::Float16;
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
    bool save_value = false;
    std::optional<unsigned> grad_hook;
  };

  std::mutex mutex;  // the gradient hooks may run on autograd's threads
  std::unique_ptr<TrialWriter> writer;
  fs::path out_dir;  // as the user named it (an s3:// location stays one)
  // An s3:// out_dir: the writer writes a staging folder, which this uploads (close() finishes it).
  std::unique_ptr<writer::TrialUploader> uploader;
  std::chrono::milliseconds upload_timeout{0};
  std::set<std::string, std::less<>> include;
  std::vector<Param> params;
  std::set<std::string, std::less<>> warned;  // names skipped for their dtype
  Mode mode = Mode::Global;
  bool step_open = false;
  std::atomic<bool> disabled = false;  // read by enabled() without the lock
  bool closed = false;

  bool included(std::string_view collection) const { return include.contains(collection) || include.contains("all"); }
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

  void check(const Result<void>& r, std::string_view what) {
    if (!r) disable(fmt::format("{}: {}", what, r.error().message));
  }

  // Hands the tensor's bytes to the writer, which decides from the collections whether and how
  // (raw, reductions) it is saved at this step.
  void save(const std::string& name, const at::Tensor& value, std::span<const std::string> collections) {
    at::Tensor t = value.detach();
    if (t.layout() != c10::kStrided) t = t.to_dense();
    auto dtype = element_type(t.scalar_type());
    if (!dtype) {
      if (warned.insert(name).second)
        std::fprintf(stderr, "vigil::torch::Hook: %s not saved: dtype %s is not supported\n", name.c_str(),
                     c10::toString(t.scalar_type()));
      return;
    }
    if (!t.device().is_cpu()) t = t.cpu();
    t = t.contiguous();  // itself when already contiguous: no copy
    const TensorData data{.dtype = *dtype,
                          .shape = {t.sizes().begin(), t.sizes().end()},
                          .bytes = {static_cast<const std::byte*>(t.data_ptr()), t.nbytes()}};
    if (auto r = writer->save_tensor(name, data, collections); !r)
      disable(fmt::format("cannot save {}: {}", name, r.error().message));
  }

  void on_gradient(const std::string& name, const at::Tensor& grad) noexcept {
    guarded("saving a gradient", [&] {
      if (step_open && grad.defined() && writer->should_save(name)) save(name, grad, {});
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
    writer::WriterOptions wo;
    wo.worker = options.worker;
    wo.num_workers = options.num_workers;
    for (Mode m : kAllModes) {
      auto it = options.mode_save_configs.find(m);
      wo.save_config[static_cast<size_t>(m) - 1] = it != options.mode_save_configs.end() ? it->second : options.save_config;
    }
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
    auto w = TrialWriter::create(local_dir, std::move(wo));
    if (!w) return fail(w.error());
    for (auto& [name, reduction] : options.reductions) {
      format::CollectionConfig c{.name = name, .reduction_config = reduction};
      // A built-in collection re-added with reductions keeps its regex, so its members and its
      // collections-file entry stay smdebug's.
      for (const auto& b : writer::kPyTorchCollections)
        if (b.name == name && !b.regex.empty()) c.include_regex.emplace_back(b.regex);
      if (auto r = (*w)->add_collection(std::move(c)); !r) return fail(r.error());
    }
    auto state = std::make_shared<State>();
    state->writer = std::move(*w);
    state->out_dir = options.out_dir;
    state->uploader = std::move(uploader);
    state->upload_timeout = upload_timeout;
    state->include.insert(options.include_collections.begin(), options.include_collections.end());
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
    const bool weights = s.included("weights"), biases = s.included("biases"), all = s.included("all");
    for (const auto& item : module.named_parameters(/*recurse=*/true)) {
      State::Param p{.name = fmt::format("{}_{}", top_name, item.key()), .tensor = item.value()};
      // The weights and biases collections' regexes (§6.2): ^(?!gradient).*weight, ^(?!gradient).*bias.
      const bool named = !p.name.starts_with("gradient");
      p.save_value = all || (named && weights && p.name.find("weight") != std::string::npos) ||
                     (named && biases && p.name.find("bias") != std::string::npos);
      if (s.included("gradients") && p.tensor.requires_grad()) {
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
  state_->guarded("set_mode", [&] { state_->mode = mode; });
}

void Hook::begin_step() noexcept {
  state_->guarded("begin_step", [&] {
    auto& s = *state_;
    s.step_open = false;
    s.check(s.writer->begin_step(s.mode), "cannot start a step");
    if (!s.active()) return;
    s.step_open = true;
    for (const auto& p : s.params)
      if (p.save_value && s.active() && s.writer->should_save(p.name)) s.save(p.name, p.tensor, {});
  });
}

void Hook::end_step() noexcept {
  state_->guarded("end_step", [&] {
    auto& s = *state_;
    s.step_open = false;
    s.check(s.writer->end_step(), "cannot publish the step");
  });
}

void Hook::record_loss(const at::Tensor& loss, std::string_view name) noexcept {
  state_->guarded("record_loss", [&] {
    auto& s = *state_;
    if (!s.step_open || !s.included("losses")) return;
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
    s.step_open = false;
    auto closed = s.writer->close();
    s.writer.reset();
    s.closed = true;
    s.check(closed, "cannot finish the trial");
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
