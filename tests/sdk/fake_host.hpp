// A fake Vigil host for the SDK tests: an in-memory trial (a few tensors, steps, workers,
// collections) served through a real vigil_host_api table. Written against the C ABI only, and it
// fills vigil_error by hand (not through the SDK), so the SDK's own error code is tested against an
// independent writer.
#pragma once

#include <vigil/vigil.h>

#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

// The opaque ABI handles, defined here for the fake host only.
struct vigil_trial {
  struct Value {
    std::vector<float> data;
    std::vector<int64_t> shape;
  };
  struct Tensor {
    std::map<vigil_step, std::map<std::string, Value>> steps;  // step -> worker -> value
    bool has_reductions = false;
    std::vector<std::string> strings;  // a string tensor when non-empty
  };
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::vector<std::string>> collections;
  std::vector<std::string> workers;
  std::vector<vigil_step> steps;  // global steps that exist (TRAIN mode steps are the same numbers)
  vigil_step last_complete = -1;
  bool ended = true;
};

struct vigil_session {
  std::string output_dir;  // ABI 1.1 output_directory ("" = none)
  std::vector<std::pair<vigil_log_level, std::string>> logs;
  std::vector<std::string> evidence;
  std::vector<std::string> not_judged;  // ABI 1.2 not_judged reasons
  bool cancelled = false;
};

namespace fake {

using Trial = vigil_trial;
using Session = vigil_session;

// Tensor views handed out and not yet released, and deleter calls, over the whole process.
inline std::atomic<int> views_alive{0};
inline std::atomic<int> deleter_calls{0};

// Whether the ABI headers have the ABI 1.1 slots (they are filled when present).
template <class H = vigil_host_api>
inline constexpr bool kHasOutputDirectory = requires { &H::output_directory; };
template <class H = vigil_host_api>
inline constexpr bool kHasStepWallTime = requires { &H::step_wall_time; };

// The table (a fresh copy each call, so a test may null slots or shrink struct_size).
vigil_host_api host_api();

// A small trial: steps 0..4, workers "worker_0" and "worker_1", collection "gradients" with
// gradients/a (mean |x| = 1e-9 on worker_1 at step 2, else 0.5) and gradients/b (only steps 0, 2, 4),
// "weights/w" (float, 2x3) and "labels" (a string tensor at step 0).
vigil_trial make_trial();

// Fills err by hand, as a host would (only what fits in err->struct_size).
vigil_status fill_error(vigil_error* err, vigil_status code, const std::string& message, const std::string& tensor = {},
                        vigil_step step = 0, vigil_mode mode = VIGIL_MODE_GLOBAL, vigil_step last_step = -1,
                        uint32_t flags = 0, const std::string& worker = {});

// A host-owned vigil_tensor over a copy of `data`, counted in views_alive / deleter_calls.
vigil_tensor* make_view(std::vector<unsigned char> bytes, std::vector<int64_t> shape, DLDataType dtype,
                        std::vector<int64_t> strides = {});

template <class T>
vigil_tensor* make_typed_view(const std::vector<T>& values, std::vector<int64_t> shape, DLDataType dtype) {
  std::vector<unsigned char> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return make_view(std::move(bytes), std::move(shape), dtype);
}

}  // namespace fake
