#include "plugin_host/host_services.h"

#include <fmt/format.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <exception>
#include <string_view>

#include <vigil/sdk/error.hpp>

#include "format/dtype.h"
#include "plugin_host/abi_guard.h"
#include "plugin_host/extensions.h"
#include "trial/element_access.h"

namespace vigil::plugin_host {

namespace {

Mode to_mode(vigil_mode m) { return mode_from_int(m).value_or(Mode::Global); }

[[nodiscard]] vigil_status push_strings(const std::vector<std::string>& values, vigil_str_sink sink) {
  if (!sink.push) return VIGIL_OK;
  for (const auto& v : values)
    if (vigil_status s = sink.push(sink.ctx, v.data(), v.size()); s != VIGIL_OK) return s;
  return VIGIL_OK;
}

[[nodiscard]] vigil_status push_i64(const std::vector<int64_t>& values, vigil_i64_sink sink) {
  if (!sink.push || values.empty()) return VIGIL_OK;
  return sink.push(sink.ctx, values.data(), values.size());
}

// ---- tensor views ----

struct ViewHolder {
  vigil_tensor view{};
  TensorValue value;                 // keeps the bytes alive
  std::vector<int64_t> shape;
  std::shared_ptr<std::atomic<int64_t>> outstanding;
};

void release_view(vigil_tensor* self) {
  if (!self) return;
  auto* holder = static_cast<ViewHolder*>(self->manager_ctx);
  if (holder->outstanding) holder->outstanding->fetch_sub(1);
  delete holder;
}


std::optional<std::string_view> worker_of(const vigil_tensor_key* key) {
  // NULL: the default worker; VIGIL_WORKER_WHOLE: the whole of a sharded tensor, which the trial
  // answers when no worker is named.
  if (key->worker && std::string_view(key->worker) != VIGIL_WORKER_WHOLE) return key->worker;
  return std::nullopt;
}

// The session's step cache (null when it has none) and a tensor key's place in it.
StepValueCache* step_cache(vigil_trial* t) { return t->session ? t->session->cache.get() : nullptr; }
StepValueCache::Key cache_key_of(StepValueCache& cache, vigil_trial* t, const vigil_tensor_key* key) {
  return cache.key(t->trial.get(), key->name, key->step, to_mode(key->mode), key->worker ? key->worker : "");
}

// The value at a key, through the session's per-step cache when there is one.
[[nodiscard]] Result<std::shared_ptr<const TensorValue>> read_value(vigil_trial* t, const vigil_tensor_key* key) {
  auto* cache = step_cache(t);
  StepValueCache::Key cache_key;
  if (cache) {
    cache_key = cache_key_of(*cache, t, key);
    if (auto hit = cache->find(cache_key)) return hit;
  }
  auto v = t->trial->value(key->name, key->step, to_mode(key->mode), worker_of(key));
  if (!v) return fail(v.error());
  if (cache) return cache->put(cache_key, std::move(*v));
  return std::make_shared<const TensorValue>(std::move(*v));
}

bool valid_key(const vigil_tensor_key* key) {
  return VIGIL_HAS_FIELD(key, vigil_tensor_key, worker) && key->name;
}

// ---- the table's functions ----

const void* VIGIL_CALL get_extension(const vigil_host_api*, const char* id) { return id ? find_extension(id) : nullptr; }

void VIGIL_CALL log_fn(vigil_session* s, vigil_log_level level, const char* utf8) {
  if (!s || !utf8 || !s->log) return;
  try {
    s->log(level, utf8);
  } catch (...) {
  }
}

bool VIGIL_CALL is_cancelled(vigil_session* s) { return s && s->stop.stop_requested(); }

const char* VIGIL_CALL output_directory(vigil_session* s) { return s ? s->output_directory.c_str() : nullptr; }

[[nodiscard]] vigil_status VIGIL_CALL step_wall_time(vigil_trial* t, vigil_step step, vigil_mode mode, double* out, vigil_error* err) {
  if (!t || !out) return bad_argument("step_wall_time: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    auto w = t->trial->step_wall_time(step, to_mode(mode));
    if (!w) return fail_with(w.error(), err);
    *out = *w;
    return VIGIL_OK;
  });
}

[[nodiscard]] vigil_status VIGIL_CALL report_evidence(vigil_session* s, const char* json, vigil_error* err) {
  if (!s || !json) return bad_argument("report_evidence: session and json are required", err);
  return guarded(err, [&]() -> vigil_status {
    std::lock_guard lock(s->evidence_mu);
    s->evidence.emplace_back(json);
    return VIGIL_OK;
  });
}

// A void slot: nothing may escape it, so a failure to copy the reason keeps the mark without it.
void VIGIL_CALL not_judged(vigil_session* s, const char* reason) {
  if (!s) return;
  std::lock_guard lock(s->evidence_mu);
  s->not_judged = true;
  try {
    s->not_judged_reason = reason ? reason : "";
  } catch (...) {
    s->not_judged_reason.clear();
  }
}

// The trial's query for a plugin's vigil_name_query (NULL: every name).
TensorNameQuery name_query_of(const vigil_name_query* q) {
  TensorNameQuery query;
  if (q) {
    if (q->has_step) query.step = q->step;
    if (q->mode != 0) query.mode = to_mode(q->mode);
    for (size_t i = 0; q->regex && i < q->regex_count; ++i)
      if (q->regex[i]) query.regex.emplace_back(q->regex[i]);
    if (q->collection) query.collection = q->collection;
  }
  return query;
}

[[nodiscard]] vigil_status VIGIL_CALL tensor_names(vigil_trial* t, const vigil_name_query* q, vigil_str_sink out, vigil_error* err) {
  if (!t) return bad_argument("tensor_names: trial is NULL", err);
  return guarded(err, [&]() -> vigil_status {
    auto names = t->trial->tensor_names(name_query_of(q));
    if (!names) return fail_with(names.error(), err);
    return push_strings(*names, out);
  });
}

[[nodiscard]] vigil_status VIGIL_CALL has_tensor(vigil_trial* t, const char* name, bool* out, vigil_error* err) {
  if (!t || !name || !out) return bad_argument("has_tensor: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    *out = t->trial->has_tensor(name);
    return VIGIL_OK;
  });
}

[[nodiscard]] vigil_status VIGIL_CALL steps(vigil_trial* t, vigil_mode mode, bool show_incomplete, vigil_i64_sink out,
                              vigil_error* err) {
  if (!t) return bad_argument("steps: trial is NULL", err);
  return guarded(err, [&]() -> vigil_status {
    auto s = t->trial->steps(to_mode(mode), show_incomplete);
    if (!s) return fail_with(s.error(), err);
    return push_i64(*s, out);
  });
}

[[nodiscard]] vigil_status VIGIL_CALL modes(vigil_trial* t, vigil_i64_sink out, vigil_error* err) {
  if (!t) return bad_argument("modes: trial is NULL", err);
  return guarded(err, [&]() -> vigil_status {
    std::vector<int64_t> values;
    for (Mode m : t->trial->modes()) values.push_back(int64_t(m));
    return push_i64(values, out);
  });
}

[[nodiscard]] vigil_status VIGIL_CALL workers(vigil_trial* t, vigil_str_sink out, vigil_error* err) {
  if (!t) return bad_argument("workers: trial is NULL", err);
  return guarded(err, [&]() -> vigil_status {
    auto w = t->trial->workers();
    if (!w) return fail_with(w.error(), err);
    return push_strings(*w, out);
  });
}

[[nodiscard]] vigil_status VIGIL_CALL global_step(vigil_trial* t, vigil_mode mode, vigil_step mode_step, bool* found,
                                    vigil_step* out, vigil_error* err) {
  if (!t || !found || !out) return bad_argument("global_step: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    auto g = t->trial->global_step(to_mode(mode), mode_step);
    *found = g.has_value();
    *out = g.value_or(0);
    return VIGIL_OK;
  });
}

[[nodiscard]] vigil_status VIGIL_CALL mode_modestep(vigil_trial* t, vigil_step global, bool* found, vigil_mode* mode,
                                      vigil_step* mode_step, vigil_error* err) {
  if (!t || !found || !mode || !mode_step) return bad_argument("mode_modestep: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    auto mm = t->trial->mode_modestep(global);
    *found = mm.has_value();
    *mode = mm ? vigil_mode(mm->first) : VIGIL_MODE_GLOBAL;
    *mode_step = mm ? mm->second : 0;
    return VIGIL_OK;
  });
}

[[nodiscard]] vigil_status VIGIL_CALL has_passed_step(vigil_trial* t, vigil_step step, vigil_mode mode, vigil_step_state* out,
                                        vigil_error* err) {
  if (!t || !out) return bad_argument("has_passed_step: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    auto s = t->trial->has_passed_step(step, to_mode(mode));
    if (!s) return fail_with(s.error(), err);
    *out = vigil_step_state(*s);
    return VIGIL_OK;
  });
}

[[nodiscard]] vigil_status VIGIL_CALL wait_for_steps(vigil_trial* t, const vigil_step* step_list, size_t count, vigil_mode mode,
                                       int64_t timeout_ms, vigil_error* err) {
  if (!t || (count > 0 && !step_list)) return bad_argument("wait_for_steps: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    std::vector<int64_t> wanted(step_list, step_list + count);
    std::optional<std::chrono::milliseconds> timeout;
    if (timeout_ms >= 0) timeout = std::chrono::milliseconds(timeout_ms);
    auto r = t->trial->wait_for_steps(wanted, to_mode(mode), t->session ? t->session->stop : std::stop_token{}, timeout);
    if (!r) return fail_with(r.error(), err);
    return VIGIL_OK;
  });
}

[[nodiscard]] vigil_status VIGIL_CALL last_complete_step(vigil_trial* t, vigil_step* out, vigil_error* err) {
  if (!t || !out) return bad_argument("last_complete_step: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    *out = t->trial->last_complete_step();
    return VIGIL_OK;
  });
}

[[nodiscard]] vigil_status VIGIL_CALL training_ended(vigil_trial* t, bool* out, vigil_error* err) {
  if (!t || !out) return bad_argument("training_ended: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    *out = t->trial->training_ended();
    return VIGIL_OK;
  });
}

[[nodiscard]] vigil_status VIGIL_CALL tensor_steps(vigil_trial* t, const char* name, vigil_mode mode, bool show_incomplete,
                                     vigil_i64_sink out, vigil_error* err) {
  if (!t || !name) return bad_argument("tensor_steps: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    auto s = t->trial->tensor_steps(name, to_mode(mode), show_incomplete);
    if (!s) return fail_with(s.error(), err);
    return push_i64(*s, out);
  });
}

// The workers a plugin sees for a tensor at a step: a sharded tensor is judged whole, one
// pseudo-worker standing for all its shards.
[[nodiscard]] Result<std::vector<std::string>> plugin_workers(vigil_trial* t, std::string_view name, vigil_step step,
                                                              Mode mode) {
  auto w = t->trial->tensor_workers(name, step, mode);
  if (!w) return fail(w.error());
  auto placements = t->trial->sharded(name);
  if (!placements) return fail(placements.error());
  if (*placements) return std::vector<std::string>{VIGIL_WORKER_WHOLE};
  return std::move(*w);
}

[[nodiscard]] vigil_status VIGIL_CALL tensor_workers(vigil_trial* t, const char* name, vigil_step step, vigil_mode mode,
                                       vigil_str_sink out, vigil_error* err) {
  if (!t || !name) return bad_argument("tensor_workers: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    auto w = plugin_workers(t, name, step, to_mode(mode));
    if (!w) return fail_with(w.error(), err);
    return push_strings(*w, out);
  });
}

[[nodiscard]] vigil_status VIGIL_CALL tensor_shape(vigil_trial* t, const vigil_tensor_key* key, vigil_i64_sink dims,
                                     vigil_error* err) {
  if (!t || !valid_key(key)) return bad_argument("tensor_shape: NULL or undersized argument", err);
  return guarded(err, [&]() -> vigil_status {
    auto s = t->trial->shape(key->name, key->step, to_mode(key->mode), worker_of(key));
    if (!s) return fail_with(s.error(), err);
    if (s->empty() || !dims.push) return VIGIL_OK;  // 0-d: no dims to push
    return dims.push(dims.ctx, s->data(), s->size());
  });
}

[[nodiscard]] vigil_status VIGIL_CALL tensor_value(vigil_trial* t, const vigil_tensor_key* key, vigil_tensor** out,
                                     vigil_error* err) {
  if (!t || !valid_key(key) || !out) return bad_argument("tensor_value: NULL or undersized argument", err);
  *out = nullptr;
  return guarded(err, [&]() -> vigil_status {
    auto v = read_value(t, key);
    if (!v) return fail_with(v.error(), err);
    const TensorValue& value = **v;
    if (value.is_string())
      return fail_with(Error{.code = ErrorCode::TypeError,
                             .message = fmt::format("tensor {} holds strings: read it with tensor_strings", key->name)},
                       err);
    auto holder = std::make_unique<ViewHolder>();
    // A plugin built before ABI 1.3 knows no float8 code: it gets the values as float32 (exact).
    const bool knows_float8 = t->session && t->session->plugin_abi_minor >= 3;
    holder->value = format::is_float8(value.dtype()) && !knows_float8 ? detail::widened_to_float32(value) : value;
    holder->shape = value.shape();
    if (t->session) holder->outstanding = t->session->outstanding_views;
    vigil_tensor& view = holder->view;
    view.dlpack_version = {1, 0};
    view.deleter = release_view;
    view.flags = VIGIL_TENSOR_FLAG_READ_ONLY;
    view.dl_tensor.data = const_cast<std::byte*>(holder->value.bytes().data());
    view.dl_tensor.device = {kDLCPU, 0};
    view.dl_tensor.ndim = int32_t(holder->shape.size());
    view.dl_tensor.dtype = dl_type(holder->value.dtype());
    view.dl_tensor.shape = holder->shape.data();
    view.dl_tensor.strides = nullptr;
    view.dl_tensor.byte_offset = 0;
    view.manager_ctx = holder.get();
    if (holder->outstanding) holder->outstanding->fetch_add(1);
    *out = &holder.release()->view;
    return VIGIL_OK;
  });
}

[[nodiscard]] vigil_status VIGIL_CALL tensor_strings(vigil_trial* t, const vigil_tensor_key* key, vigil_str_sink out,
                                       vigil_error* err) {
  if (!t || !valid_key(key)) return bad_argument("tensor_strings: NULL or undersized argument", err);
  return guarded(err, [&]() -> vigil_status {
    auto v = read_value(t, key);
    if (!v) return fail_with(v.error(), err);
    if (!(*v)->is_string())
      return fail_with(Error{.code = ErrorCode::TypeError,
                             .message = fmt::format("tensor {} is numeric: read it with tensor_value", key->name)},
                       err);
    return push_strings((*v)->string_values(), out);
  });
}

bool known_reduction(vigil_reduction reduction) { return reduction >= VIGIL_RED_MIN && reduction <= VIGIL_RED_L2; }

// smdebug's refusal; inside guarded(), as formatting may throw.
[[nodiscard]] vigil_status unknown_reduction(vigil_reduction reduction, vigil_error* err) {
  return fail_with(Error::invalid_argument(fmt::format("Invalid reduction type {}", reduction)), err);
}

// A reduction at a key, through the step's cache: rules asking for the same reduction share one
// computation. `reduction` is in range.
[[nodiscard]] Result<double> reduction_at(vigil_trial* t, const vigil_tensor_key* key, vigil_reduction reduction, bool abs) {
  auto* cache = step_cache(t);
  StepValueCache::Key cache_key;
  if (cache) {
    cache_key = cache_key_of(*cache, t, key);
    if (auto hit = cache->find_reduction(cache_key, reduction, abs)) return *hit;
  }
  const auto op = kAllReductionOps[reduction - VIGIL_RED_MIN];
  auto r = t->trial->reduction_value(key->name, key->step, reduction_name(op), abs, to_mode(key->mode), worker_of(key));
  if (!r) return fail(r.error());
  if (cache) cache->put_reduction(cache_key, reduction, abs, r->value);
  return r->value;
}

[[nodiscard]] vigil_status VIGIL_CALL reduction_value(vigil_trial* t, const vigil_tensor_key* key, vigil_reduction reduction,
                                        bool abs, double* out, vigil_error* err) {
  if (!t || !valid_key(key) || !out) return bad_argument("reduction_value: NULL or undersized argument", err);
  return guarded(err, [&]() -> vigil_status {
    if (!known_reduction(reduction)) return unknown_reduction(reduction, err);
    auto r = reduction_at(t, key, reduction, abs);
    if (!r) return fail_with(r.error(), err);
    *out = *r;
    return VIGIL_OK;
  });
}

// A value that is not there (step_reductions reports it in its result instead of failing).
bool is_absent(ErrorCode code) {
  return code == ErrorCode::TensorUnavailableForStep || code == ErrorCode::TensorUnavailable ||
         code == ErrorCode::StepUnavailable || code == ErrorCode::TypeError;
}

[[nodiscard]] vigil_status VIGIL_CALL step_reductions(vigil_trial* t, const vigil_name_query* q, vigil_reduction reduction,
                                                      bool abs, vigil_reduction_result_sink out, vigil_error* err) {
  if (!t || !VIGIL_HAS_FIELD(q, vigil_name_query, collection) || !q->has_step)
    return bad_argument("step_reductions: NULL trial, or a query that is undersized or has no step", err);
  return guarded(err, [&]() -> vigil_status {
    if (!known_reduction(reduction)) return unknown_reduction(reduction, err);
    auto names = t->trial->tensor_names(name_query_of(q));
    if (!names) return fail_with(names.error(), err);
    const Mode mode = to_mode(q->mode);
    std::vector<vigil_reduction_result> results;
    for (const std::string& name : *names) {
      if (t->session && t->session->stop.stop_requested())
        return fail_with(Error{.code = ErrorCode::Cancelled, .message = "the evaluation is being stopped"}, err);
      auto workers = plugin_workers(t, name, q->step, mode);
      if (!workers) {
        if (is_absent(workers.error().code)) continue;  // not saved at this step: no result, as no worker
        return fail_with(workers.error(), err);
      }
      std::sort(workers->begin(), workers->end());
      results.clear();
      for (const std::string& worker : *workers) {
        const vigil_tensor_key key{.struct_size = sizeof(vigil_tensor_key), .name = name.c_str(), .step = q->step,
                                   .mode = q->mode, .worker = worker.c_str()};
        auto r = reduction_at(t, &key, reduction, abs);
        if (!r && !is_absent(r.error().code)) return fail_with(r.error(), err);
        results.push_back({.struct_size = sizeof(vigil_reduction_result), .name = name.c_str(),
                           .worker = worker.c_str(), .status = r ? VIGIL_OK : status_of(r.error()),
                           .value = r ? *r : 0.0});
      }
      // One push per name: the names and workers the results point to live until it returns.
      if (out.push && !results.empty())
        if (vigil_status s = out.push(out.ctx, results.data(), results.size()); s != VIGIL_OK) return s;
    }
    return VIGIL_OK;
  });
}

[[nodiscard]] vigil_status VIGIL_CALL collection_names(vigil_trial* t, vigil_str_sink out, vigil_error* err) {
  if (!t) return bad_argument("collection_names: trial is NULL", err);
  return guarded(err, [&]() -> vigil_status {
    std::vector<std::string> names;
    for (const auto& c : t->trial->collections()) names.push_back(c.name);
    return push_strings(names, out);
  });
}

[[nodiscard]] vigil_status VIGIL_CALL collection_tensor_names(vigil_trial* t, const char* collection, vigil_str_sink out,
                                                vigil_error* err) {
  if (!t || !collection) return bad_argument("collection_tensor_names: NULL argument", err);
  return guarded(err, [&]() -> vigil_status {
    auto names = t->trial->tensor_names(TensorNameQuery{.collection = std::string(collection)});
    if (!names) return fail_with(names.error(), err);
    return push_strings(*names, out);
  });
}

[[nodiscard]] vigil_status VIGIL_CALL saved_reductions(vigil_trial* t, const vigil_tensor_key* key, vigil_reduction_sink out,
                                         vigil_error* err) {
  if (!t || !valid_key(key)) return bad_argument("saved_reductions: NULL or undersized argument", err);
  return guarded(err, [&]() -> vigil_status {
    auto saved = t->trial->reduction_values(key->name, key->step, to_mode(key->mode), worker_of(key));
    if (!saved) return fail_with(saved.error(), err);
    if (!out.push) return VIGIL_OK;
    for (const auto& r : *saved) {
      double value = 0;
      detail::for_each_as_double(r.value, [&](double x) { value = x; });  // a saved reduction holds one element
      const auto id = vigil_reduction(VIGIL_RED_MIN + (std::find(std::begin(kAllReductionOps), std::end(kAllReductionOps), r.op) -
                                                       std::begin(kAllReductionOps)));
      if (vigil_status s = out.push(out.ctx, id, r.abs, value); s != VIGIL_OK) return s;
    }
    return VIGIL_OK;
  });
}

const vigil_host_api kHostApi = {
    .struct_size = sizeof(vigil_host_api),
    .abi = {VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR, VIGIL_ABI_PATCH},
    .host_name = "vigil",
    .host_version = VIGIL_HOST_VERSION,
    .get_extension = get_extension,
    .log = log_fn,
    .is_cancelled = is_cancelled,
    .report_evidence = report_evidence,
    .tensor_names = tensor_names,
    .has_tensor = has_tensor,
    .steps = steps,
    .modes = modes,
    .workers = workers,
    .global_step = global_step,
    .mode_modestep = mode_modestep,
    .has_passed_step = has_passed_step,
    .wait_for_steps = wait_for_steps,
    .last_complete_step = last_complete_step,
    .training_ended = training_ended,
    .tensor_steps = tensor_steps,
    .tensor_workers = tensor_workers,
    .tensor_shape = tensor_shape,
    .tensor_value = tensor_value,
    .tensor_strings = tensor_strings,
    .reduction_value = reduction_value,
    .collection_names = collection_names,
    .collection_tensor_names = collection_tensor_names,
    .output_directory = output_directory,
    .step_wall_time = step_wall_time,
    .saved_reductions = saved_reductions,
    .not_judged = not_judged,
    .step_reductions = step_reductions,
};

}  // namespace

const vigil_host_api* host_api() { return &kHostApi; }

DLDataType dl_type(ElementType t) {
  using ET = ElementType;
  switch (t) {
    case ET::Float16: return {kDLFloat, 16, 1};
    case ET::BFloat16: return {kDLBfloat, 16, 1};
    case ET::Float32: return {kDLFloat, 32, 1};
    case ET::Float64: return {kDLFloat, 64, 1};
    case ET::Int8: return {kDLInt, 8, 1};
    case ET::Int16: return {kDLInt, 16, 1};
    case ET::Int32: return {kDLInt, 32, 1};
    case ET::Int64: return {kDLInt, 64, 1};
    case ET::UInt8: return {kDLUInt, 8, 1};
    case ET::UInt16: return {kDLUInt, 16, 1};
    case ET::UInt32: return {kDLUInt, 32, 1};
    case ET::UInt64: return {kDLUInt, 64, 1};
    case ET::Bool: return {VIGIL_DL_BOOL, 8, 1};
    case ET::Complex64: return {kDLComplex, 64, 1};
    case ET::Complex128: return {kDLComplex, 128, 1};
    case ET::Float8E4M3FN: return {VIGIL_DL_FLOAT8_E4M3FN, 8, 1};
    case ET::Float8E5M2: return {VIGIL_DL_FLOAT8_E5M2, 8, 1};
    case ET::String: break;
  }
  return {kDLOpaqueHandle, 0, 1};
}

void fill_abi_error(const Error& e, vigil_error* err) {
  sdk::write_error_record(err, sdk::ErrorRecord{.code = static_cast<vigil_status>(e.code),
                                                .flags = e.has_reductions ? uint32_t{VIGIL_ERRF_HAS_REDUCTIONS} : 0u,
                                                .mode = static_cast<vigil_mode>(e.mode),
                                                .step = e.step,
                                                .last_step = e.last_step,
                                                .tensor = e.tensor,
                                                .worker = e.worker,
                                                .rule = e.rule,
                                                .message = e.message});
}

Error error_from_abi(vigil_status status, const vigil_error& err) {
  sdk::Error r = sdk::Error::from_abi(status, &err);
  return Error{.code = static_cast<ErrorCode>(r.code),
               .message = std::move(r.message),
               .tensor = std::move(r.tensor),
               .worker = std::move(r.worker),
               .rule = std::move(r.rule),
               .step = r.step,
               .mode = mode_from_int(r.mode).value_or(Mode::Global),
               .last_step = r.last_step,
               .has_reductions = r.has_reductions};
}

}  // namespace vigil::plugin_host
