#include "fake_host.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>
#include <string_view>

namespace fake {

namespace {

const char* mode_text(vigil_mode m) {
  switch (m) {
    case VIGIL_MODE_TRAIN: return "TRAIN";
    case VIGIL_MODE_EVAL: return "EVAL";
    case VIGIL_MODE_PREDICT: return "PREDICT";
    default: return "GLOBAL";
  }
}

void put(vigil_error* err, size_t offset, size_t size, const std::string& s, bool& cut) {
  if (err->struct_size <= offset) return;
  const size_t cap = std::min<size_t>(size, err->struct_size - offset);
  char* dst = reinterpret_cast<char*>(err) + offset;
  const size_t n = std::min(s.size(), cap - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
  if (n < s.size()) cut = true;
}

struct ViewHolder {
  vigil_tensor view{};
  std::vector<unsigned char> bytes;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

void release_view(vigil_tensor* self) {
  auto* holder = static_cast<ViewHolder*>(self->manager_ctx);
  views_alive.fetch_sub(1);
  deleter_calls.fetch_add(1);
  delete holder;
}

vigil_status push_strings(const std::vector<std::string>& values, vigil_str_sink sink) {
  for (const auto& v : values)
    if (vigil_status s = sink.push(sink.ctx, v.data(), v.size()); s != VIGIL_OK) return s;
  return VIGIL_OK;
}

vigil_status push_i64(const std::vector<int64_t>& values, vigil_i64_sink sink) {
  if (values.empty()) return VIGIL_OK;
  // Two pushes when there are several values, to check that the SDK appends.
  const size_t half = values.size() / 2;
  if (half > 0)
    if (vigil_status s = sink.push(sink.ctx, values.data(), half); s != VIGIL_OK) return s;
  return sink.push(sink.ctx, values.data() + half, values.size() - half);
}

// The value at a key, or a status with err filled like the real host.
vigil_status find_value(vigil_trial* t, const vigil_tensor_key* key, const vigil_trial::Value** out, vigil_error* err) {
  if (!t || !key || !key->name) return fill_error(err, VIGIL_E_INVALID_ARGUMENT, "NULL argument");
  auto it = t->tensors.find(key->name);
  if (it == t->tensors.end())
    return fill_error(err, VIGIL_E_TENSOR_UNAVAILABLE, std::string("Tensor ") + key->name + " was not saved.", key->name);
  auto st = it->second.steps.find(key->step);
  if (st == it->second.steps.end()) {
    if (std::find(t->steps.begin(), t->steps.end(), key->step) == t->steps.end())
      return fill_error(err, VIGIL_E_STEP_UNAVAILABLE,
                        "Step " + std::to_string(key->step) + " of mode " + mode_text(key->mode) +
                            " is not available as it was not saved",
                        {}, key->step, key->mode);
    return fill_error(err, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP,
                      "Value for tensor " + std::string(key->name) + " is not available for step " +
                          std::to_string(key->step) + " with mode " + mode_text(key->mode) + " as it was not saved.",
                      key->name, key->step, key->mode, -1, it->second.has_reductions ? uint32_t{VIGIL_ERRF_HAS_REDUCTIONS} : 0u);
  }
  if (key->worker) {
    auto w = st->second.find(key->worker);
    if (w == st->second.end())
      return fill_error(err, VIGIL_E_INVALID_WORKER, std::string("Invalid Worker: ") + key->worker, {}, 0,
                        VIGIL_MODE_GLOBAL, -1, 0, key->worker);
    *out = &w->second;
  } else {
    *out = &st->second.begin()->second;
  }
  return VIGIL_OK;
}

// ---- the table's functions ----

const void* get_extension(const vigil_host_api*, const char* id) {
  static const int kFakeExtension = 42;
  return std::string_view(id) == "vigil.fake/1" ? &kFakeExtension : nullptr;
}

void log_fn(vigil_session* s, vigil_log_level level, const char* text) {
  if (s && text) s->logs.emplace_back(level, text);
}

bool is_cancelled(vigil_session* s) { return s && s->cancelled; }

vigil_status report_evidence(vigil_session* s, const char* json, vigil_error* err) {
  if (!s || !json || json[0] != '{') return fill_error(err, VIGIL_E_INVALID_ARGUMENT, "evidence must be a JSON object");
  s->evidence.emplace_back(json);
  return VIGIL_OK;
}

vigil_status tensor_names(vigil_trial* t, const vigil_name_query* q, vigil_str_sink out, vigil_error* err) {
  if (!t || !q) return fill_error(err, VIGIL_E_INVALID_ARGUMENT, "tensor_names: NULL argument");
  if (q->collection && q->regex_count > 0)
    return fill_error(err, VIGIL_E_INVALID_ARGUMENT, "Only one of `regex` or `collection` can be passed to this method");
  std::vector<std::string> names;
  for (const auto& [name, tensor] : t->tensors) {
    if (q->has_step && !tensor.steps.contains(q->step)) continue;
    if (q->collection) {
      auto c = t->collections.find(q->collection);
      if (c == t->collections.end() || std::find(c->second.begin(), c->second.end(), name) == c->second.end()) continue;
    }
    if (q->regex_count > 0) {
      bool any = false;
      for (size_t i = 0; i < q->regex_count; ++i)
        if (std::regex_search(name, std::regex(q->regex[i]))) any = true;
      if (!any) continue;
    }
    names.push_back(name);
  }
  return push_strings(names, out);
}

vigil_status has_tensor(vigil_trial* t, const char* name, bool* out, vigil_error* err) {
  if (!t || !name || !out) return fill_error(err, VIGIL_E_INVALID_ARGUMENT, "has_tensor: NULL argument");
  *out = t->tensors.contains(name);
  return VIGIL_OK;
}

vigil_status steps(vigil_trial* t, vigil_mode mode, bool, vigil_i64_sink out, vigil_error*) {
  if (mode == VIGIL_MODE_EVAL || mode == VIGIL_MODE_PREDICT) return VIGIL_OK;
  return push_i64(t->steps, out);
}

vigil_status modes(vigil_trial*, vigil_i64_sink out, vigil_error*) { return push_i64({VIGIL_MODE_TRAIN}, out); }

vigil_status workers(vigil_trial* t, vigil_str_sink out, vigil_error*) { return push_strings(t->workers, out); }

bool has_step(const vigil_trial* t, vigil_step s) { return std::find(t->steps.begin(), t->steps.end(), s) != t->steps.end(); }

vigil_status global_step(vigil_trial* t, vigil_mode, vigil_step mode_step, bool* found, vigil_step* out, vigil_error*) {
  *found = has_step(t, mode_step);
  *out = *found ? mode_step : 0;
  return VIGIL_OK;
}

vigil_status mode_modestep(vigil_trial* t, vigil_step g, bool* found, vigil_mode* mode, vigil_step* mode_step,
                           vigil_error*) {
  *found = has_step(t, g);
  if (*found) {
    *mode = VIGIL_MODE_TRAIN;
    *mode_step = g;
  }
  return VIGIL_OK;
}

vigil_status has_passed_step(vigil_trial* t, vigil_step step, vigil_mode, vigil_step_state* out, vigil_error*) {
  const vigil_step last = t->steps.empty() ? -1 : t->steps.back();
  if (has_step(t, step)) *out = VIGIL_STEP_AVAILABLE;
  else if (step > last && !t->ended) *out = VIGIL_STEP_NOT_YET_AVAILABLE;
  else *out = VIGIL_STEP_UNAVAILABLE;
  return VIGIL_OK;
}

vigil_status wait_for_steps(vigil_trial* t, const vigil_step* list, size_t count, vigil_mode mode, int64_t timeout_ms,
                            vigil_error* err) {
  const vigil_step last = t->steps.empty() ? -1 : t->steps.back();
  for (size_t i = 0; i < count; ++i) {
    const vigil_step s = list[i];
    if (has_step(t, s)) continue;
    if (!t->ended)
      return timeout_ms >= 0 ? fill_error(err, VIGIL_E_TIMEOUT, "timed out", {}, s, mode)
                             : fill_error(err, VIGIL_E_STEP_NOT_YET_AVAILABLE, "not yet", {}, s, mode);
    if (s < last)
      return fill_error(err, VIGIL_E_STEP_UNAVAILABLE,
                        "Step " + std::to_string(s) + " of mode " + mode_text(mode) + " is not available as it was not saved",
                        {}, s, mode);
    return fill_error(err, VIGIL_E_NO_MORE_DATA,
                      "Looking for step " + std::to_string(s) + " of mode " + mode_text(mode) +
                          " and reached end of training. Max step available is " + std::to_string(last),
                      {}, s, mode, last);
  }
  return VIGIL_OK;
}

vigil_status last_complete_step(vigil_trial* t, vigil_step* out, vigil_error*) {
  *out = t->last_complete;
  return VIGIL_OK;
}

vigil_status training_ended(vigil_trial* t, bool* out, vigil_error*) {
  *out = t->ended;
  return VIGIL_OK;
}

vigil_status tensor_steps(vigil_trial* t, const char* name, vigil_mode, bool, vigil_i64_sink out, vigil_error* err) {
  auto it = t->tensors.find(name);
  if (it == t->tensors.end())
    return fill_error(err, VIGIL_E_TENSOR_UNAVAILABLE, std::string("Tensor ") + name + " was not saved.", name);
  std::vector<int64_t> s;
  for (const auto& [step, _] : it->second.steps) s.push_back(step);
  return push_i64(s, out);
}

vigil_status tensor_workers(vigil_trial* t, const char* name, vigil_step step, vigil_mode mode, vigil_str_sink out,
                            vigil_error* err) {
  auto it = t->tensors.find(name);
  if (it == t->tensors.end())
    return fill_error(err, VIGIL_E_TENSOR_UNAVAILABLE, std::string("Tensor ") + name + " was not saved.", name);
  auto st = it->second.steps.find(step);
  if (st == it->second.steps.end())
    return fill_error(err, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP,
                      "Value for tensor " + std::string(name) + " is not available for step " + std::to_string(step) +
                          " with mode " + mode_text(mode) + " as it was not saved.",
                      name, step, mode);
  std::vector<std::string> w;
  for (const auto& [worker, _] : st->second) w.push_back(worker);
  return push_strings(w, out);
}

vigil_status tensor_shape(vigil_trial* t, const vigil_tensor_key* key, vigil_i64_sink dims, vigil_error* err) {
  const vigil_trial::Value* v = nullptr;
  if (vigil_status s = find_value(t, key, &v, err); s != VIGIL_OK) return s;
  return push_i64(v->shape, dims);
}

vigil_status tensor_value(vigil_trial* t, const vigil_tensor_key* key, vigil_tensor** out, vigil_error* err) {
  if (t && key && key->name && t->tensors.contains(key->name) && !t->tensors[key->name].strings.empty())
    return fill_error(err, VIGIL_E_TYPE_ERROR, std::string("tensor ") + key->name + " holds strings");
  const vigil_trial::Value* v = nullptr;
  if (vigil_status s = find_value(t, key, &v, err); s != VIGIL_OK) return s;
  *out = make_typed_view(v->data, v->shape, DLDataType{kDLFloat, 32, 1});
  return VIGIL_OK;
}

vigil_status tensor_strings(vigil_trial* t, const vigil_tensor_key* key, vigil_str_sink out, vigil_error* err) {
  auto it = t->tensors.find(key->name);
  if (it == t->tensors.end() || it->second.strings.empty())
    return fill_error(err, VIGIL_E_TYPE_ERROR, std::string("tensor ") + key->name + " does not hold strings");
  return push_strings(it->second.strings, out);
}

vigil_status reduction_value(vigil_trial* t, const vigil_tensor_key* key, vigil_reduction reduction, bool abs,
                             double* out, vigil_error* err) {
  if (reduction < VIGIL_RED_MIN || reduction > VIGIL_RED_L2)
    return fill_error(err, VIGIL_E_INVALID_ARGUMENT, "Invalid reduction type " + std::to_string(reduction));
  const vigil_trial::Value* v = nullptr;
  if (vigil_status s = find_value(t, key, &v, err); s != VIGIL_OK) return s;
  std::vector<double> x(v->data.begin(), v->data.end());
  if (abs)
    for (double& d : x) d = std::fabs(d);
  double r = 0;
  const double n = static_cast<double>(x.size());
  double sum = 0, sq = 0;
  for (double d : x) {
    sum += d;
    sq += d * d;
  }
  switch (reduction) {
    case VIGIL_RED_MIN: r = *std::min_element(x.begin(), x.end()); break;
    case VIGIL_RED_MAX: r = *std::max_element(x.begin(), x.end()); break;
    case VIGIL_RED_MEAN: r = sum / n; break;
    case VIGIL_RED_SUM: r = sum; break;
    case VIGIL_RED_VARIANCE: r = sq / n - (sum / n) * (sum / n); break;
    case VIGIL_RED_STD: r = std::sqrt(sq / n - (sum / n) * (sum / n)); break;
    case VIGIL_RED_PROD:
      r = 1;
      for (double d : x) r *= d;
      break;
    case VIGIL_RED_L1:
      for (double d : x) r += std::fabs(d);
      break;
    case VIGIL_RED_L2: r = std::sqrt(sq); break;
  }
  *out = r;
  return VIGIL_OK;
}

vigil_status collection_names(vigil_trial* t, vigil_str_sink out, vigil_error*) {
  std::vector<std::string> names;
  for (const auto& [name, _] : t->collections) names.push_back(name);
  return push_strings(names, out);
}

vigil_status collection_tensor_names(vigil_trial* t, const char* collection, vigil_str_sink out, vigil_error*) {
  auto c = t->collections.find(collection);
  if (c == t->collections.end()) return VIGIL_OK;  // smdebug quirk: unknown = empty
  return push_strings(c->second, out);
}

const char* output_directory(vigil_session* s) { return s && !s->output_dir.empty() ? s->output_dir.c_str() : nullptr; }

vigil_status step_wall_time(vigil_trial* t, vigil_step step, vigil_mode mode, double* out, vigil_error* err) {
  if (!has_step(t, step))
    return fill_error(err, VIGIL_E_STEP_UNAVAILABLE,
                      "Step " + std::to_string(step) + " of mode " + mode_text(mode) + " is not available as it was not saved",
                      {}, step, mode);
  *out = 1000.0 + static_cast<double>(step);
  return VIGIL_OK;
}

void not_judged(vigil_session* s, const char* reason) {
  if (s) s->not_judged.emplace_back(reason ? reason : "");
}

// The ABI 1.1 and 1.2 slots, where the headers have them.
template <class H>
void add_v1_1_slots(H& api) {
  if constexpr (requires { api.output_directory; }) api.output_directory = output_directory;
  if constexpr (requires { api.step_wall_time; }) api.step_wall_time = step_wall_time;
  if constexpr (requires { api.not_judged; }) api.not_judged = not_judged;
}

}  // namespace

vigil_status fill_error(vigil_error* err, vigil_status code, const std::string& message, const std::string& tensor,
                        vigil_step step, vigil_mode mode, vigil_step last_step, uint32_t flags,
                        const std::string& worker) {
  if (!err) return code;
  const auto fits = [&](size_t off, size_t size) { return err->struct_size >= off + size; };
  if (fits(offsetof(vigil_error, code), sizeof(err->code))) err->code = code;
  if (fits(offsetof(vigil_error, mode), sizeof(err->mode))) err->mode = mode;
  if (fits(offsetof(vigil_error, step), sizeof(err->step))) err->step = step;
  if (fits(offsetof(vigil_error, last_step), sizeof(err->last_step))) err->last_step = last_step;
  bool cut = false;
  put(err, offsetof(vigil_error, tensor), sizeof(err->tensor), tensor, cut);
  put(err, offsetof(vigil_error, worker), sizeof(err->worker), worker, cut);
  put(err, offsetof(vigil_error, rule), sizeof(err->rule), "", cut);
  put(err, offsetof(vigil_error, message), sizeof(err->message), message, cut);
  if (fits(offsetof(vigil_error, flags), sizeof(err->flags))) err->flags = flags | (cut ? uint32_t{VIGIL_ERRF_TRUNCATED} : 0u);
  return code;
}

vigil_tensor* make_view(std::vector<unsigned char> bytes, std::vector<int64_t> shape, DLDataType dtype,
                        std::vector<int64_t> strides) {
  auto* h = new ViewHolder;
  h->bytes = std::move(bytes);
  h->shape = std::move(shape);
  h->strides = std::move(strides);
  h->view.dlpack_version.major = 1;
  h->view.dlpack_version.minor = 0;
  h->view.manager_ctx = h;
  h->view.deleter = &release_view;
  h->view.flags = VIGIL_TENSOR_FLAG_READ_ONLY;
  h->view.dl_tensor.data = h->bytes.empty() ? nullptr : h->bytes.data();
  h->view.dl_tensor.device = DLDevice{kDLCPU, 0};
  h->view.dl_tensor.ndim = static_cast<int>(h->shape.size());
  h->view.dl_tensor.dtype = dtype;
  h->view.dl_tensor.shape = h->shape.empty() ? nullptr : h->shape.data();
  h->view.dl_tensor.strides = h->strides.empty() ? nullptr : h->strides.data();
  h->view.dl_tensor.byte_offset = 0;
  views_alive.fetch_add(1);
  return &h->view;
}

vigil_host_api host_api() {
  vigil_host_api api{};
  api.struct_size = sizeof(vigil_host_api);
  api.abi = vigil_version{VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR, VIGIL_ABI_PATCH};
  api.host_name = "fake";
  api.host_version = "0.0.1";
  api.get_extension = get_extension;
  api.log = log_fn;
  api.is_cancelled = is_cancelled;
  api.report_evidence = report_evidence;
  api.tensor_names = tensor_names;
  api.has_tensor = has_tensor;
  api.steps = steps;
  api.modes = modes;
  api.workers = workers;
  api.global_step = global_step;
  api.mode_modestep = mode_modestep;
  api.has_passed_step = has_passed_step;
  api.wait_for_steps = wait_for_steps;
  api.last_complete_step = last_complete_step;
  api.training_ended = training_ended;
  api.tensor_steps = tensor_steps;
  api.tensor_workers = tensor_workers;
  api.tensor_shape = tensor_shape;
  api.tensor_value = tensor_value;
  api.tensor_strings = tensor_strings;
  api.reduction_value = reduction_value;
  api.collection_names = collection_names;
  api.collection_tensor_names = collection_tensor_names;
  add_v1_1_slots(api);
  return api;
}

vigil_trial make_trial() {
  vigil_trial t;
  t.workers = {"worker_0", "worker_1"};
  t.steps = {0, 1, 2, 3, 4};
  t.last_complete = 4;
  t.ended = true;
  for (vigil_step s : t.steps) {
    auto& a = t.tensors["gradients/a"].steps[s];
    a["worker_0"] = {{0.5f, -0.5f, 0.5f, -0.5f}, {4}};
    a["worker_1"] = s == 2 ? vigil_trial::Value{{1e-9f, -1e-9f, 1e-9f, -1e-9f}, {4}}
                           : vigil_trial::Value{{0.5f, -0.5f, 0.5f, -0.5f}, {4}};
    if (s % 2 == 0) t.tensors["gradients/b"].steps[s]["worker_0"] = {{1.0f, 2.0f}, {2}};
    t.tensors["weights/w"].steps[s]["worker_0"] = {{1, 2, 3, 4, 5, 6}, {2, 3}};
  }
  t.tensors["gradients/b"].has_reductions = true;
  t.tensors["labels"].strings = {"cat", "dog"};
  t.tensors["labels"].steps[0]["worker_0"] = {{}, {2}};
  t.collections["gradients"] = {"gradients/a", "gradients/b"};
  t.collections["weights"] = {"weights/w"};
  return t;
}

}  // namespace fake
