/* A rule plugin compiled ONLY against the frozen ABI 1.0 headers (tests/abi/frozen_v1_0/): it stands
 * for a third-party plugin built for Vigil 1.0 and never rebuilt. abi_tests loads it with the
 * current host and runs it, which proves the current host still honours the 1.0 contract.
 *
 * Rule "FrozenStepRule" (id "vigil.test.frozen.FrozenStepRule"): the condition is met at the global
 * step `fire_at` (int64, default 2). At every step it also goes through host services that a 1.0
 * plugin relies on, and fails (VIGIL_E_INTERNAL with a message) when an answer is not what 1.0
 * promised:
 *   - tensor_names with a vigil_name_query (step + regex) must find the loss at that step;
 *   - tensor_value must give a 1.0 DLPack view (version 1.x, read-only, CPU, C order, float),
 *     which is released through its deleter;
 *   - reduction_value(max) must agree with the maximum computed from that view.
 * When the condition is met it reports evidence (report_evidence) holding what it saw. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vigil/vigil.h>

#if VIGIL_ABI_MAJOR != 1 || VIGIL_ABI_MINOR != 0
#error "frozen_v1_0_plugin.c must be compiled against tests/abi/frozen_v1_0 (ABI 1.0) only, never abi/include"
#endif

#define LOSS_REGEX "[Ll]oss"

static const vigil_host_api *g_host;

typedef struct frozen_rule {
  vigil_rule base; /* first member: a vigil_rule * is a frozen_rule * */
  vigil_trial *trial;
  vigil_session *session;
  int64_t fire_at;
} frozen_rule;

static vigil_status fail(vigil_error *err, vigil_status code, vigil_step step, const char *message) {
  if (VIGIL_HAS_FIELD(err, vigil_error, message)) {
    err->code = code;
    err->step = step;
    snprintf(err->message, sizeof(err->message), "%s", message);
  }
  return code;
}

/* Keeps the first name the host pushes and counts them all. */
typedef struct first_name {
  char name[256];
  size_t count;
} first_name;

static vigil_status push_name(void *ctx, const char *utf8, size_t len) {
  first_name *out = (first_name *)ctx;
  if (out->count == 0 && len < sizeof(out->name)) {
    memcpy(out->name, utf8, len);
    out->name[len] = '\0';
  }
  out->count++;
  return VIGIL_OK;
}

/* The largest element of a float view; sets *problem when the view is not what ABI 1.0 promises. */
static double view_max(const vigil_tensor *view, const char **problem) {
  const DLTensor *t = &view->dl_tensor;
  *problem = NULL;
  if (view->dlpack_version.major != 1) *problem = "tensor_value: dlpack_version.major is not 1";
  else if (!(view->flags & VIGIL_TENSOR_FLAG_READ_ONLY)) *problem = "tensor_value: the view is not read-only";
  else if (!view->deleter) *problem = "tensor_value: the view has no deleter";
  else if (t->device.device_type != kDLCPU) *problem = "tensor_value: the view is not on the CPU";
  else if (t->strides != NULL) *problem = "tensor_value: the view has strides";
  else if (t->dtype.code != kDLFloat || t->dtype.lanes != 1 || (t->dtype.bits != 32 && t->dtype.bits != 64))
    *problem = "tensor_value: the loss is not float32/float64";
  else if (t->ndim < 0 || (t->ndim > 0 && t->shape == NULL)) *problem = "tensor_value: bad shape";
  if (*problem) return 0;

  size_t count = 1;
  for (int i = 0; i < t->ndim; ++i) count *= (size_t)t->shape[i];
  if (count == 0 || t->data == NULL) {
    *problem = "tensor_value: the loss has no elements";
    return 0;
  }
  const unsigned char *base = (const unsigned char *)t->data + t->byte_offset;
  double best = -INFINITY;
  for (size_t i = 0; i < count; ++i) {
    double x;
    if (t->dtype.bits == 32) {
      float f;
      memcpy(&f, base + i * sizeof(float), sizeof(float));
      x = f;
    } else {
      memcpy(&x, base + i * sizeof(double), sizeof(double));
    }
    if (x > best) best = x;
  }
  return best;
}

static void destroy_rule(vigil_rule *rule) { free(rule->rule_data); }

static vigil_status required_tensors(vigil_rule *rule, vigil_step step, const vigil_required_sink *sink,
                                     vigil_error *err) {
  (void)rule;
  (void)err;
  const vigil_step steps[1] = {step};
  return sink->add(sink->ctx, 0, LOSS_REGEX, true, steps, 1);
}

static vigil_status invoke_at_step(vigil_rule *rule, vigil_step step, bool *condition_met, vigil_error *err) {
  frozen_rule *self = (frozen_rule *)rule->rule_data;
  char message[512];
  *condition_met = false;

  /* tensor_names(step=step, mode=GLOBAL, regex=[LOSS_REGEX]) */
  const char *const regex[1] = {LOSS_REGEX};
  vigil_name_query query;
  memset(&query, 0, sizeof(query));
  query.struct_size = sizeof(query);
  query.has_step = true;
  query.step = step;
  query.mode = VIGIL_MODE_GLOBAL;
  query.regex = regex;
  query.regex_count = 1;
  query.collection = NULL;
  first_name names;
  memset(&names, 0, sizeof(names));
  vigil_str_sink sink = {&names, push_name};
  vigil_status st = g_host->tensor_names(self->trial, &query, sink, err);
  if (st != VIGIL_OK) return st;
  if (names.count == 0 || names.name[0] == '\0') {
    snprintf(message, sizeof(message), "tensor_names found no tensor matching %s at step %lld", LOSS_REGEX,
             (long long)step);
    return fail(err, VIGIL_E_INTERNAL, step, message);
  }

  /* tensor_value, read, then release through the view's own deleter */
  vigil_tensor_key key;
  memset(&key, 0, sizeof(key));
  key.struct_size = sizeof(key);
  key.name = names.name;
  key.step = step;
  key.mode = VIGIL_MODE_GLOBAL;
  key.worker = NULL;
  vigil_tensor *view = NULL;
  st = g_host->tensor_value(self->trial, &key, &view, err);
  if (st != VIGIL_OK) return st;
  if (view == NULL) return fail(err, VIGIL_E_INTERNAL, step, "tensor_value returned OK but no view");
  const char *problem = NULL;
  const double value_max = view_max(view, &problem);
  if (view->deleter) view->deleter(view);
  if (problem) return fail(err, VIGIL_E_INTERNAL, step, problem);

  /* reduction_value(max) must agree with the view */
  double reduced = NAN;
  st = g_host->reduction_value(self->trial, &key, VIGIL_RED_MAX, false, &reduced, err);
  if (st != VIGIL_OK) return st;
  if (!(fabs(reduced - value_max) <= 1e-6 * fmax(1.0, fabs(value_max)))) {
    snprintf(message, sizeof(message), "reduction_value(max) of %s at step %lld is %.17g, the view says %.17g",
             names.name, (long long)step, reduced, value_max);
    return fail(err, VIGIL_E_INTERNAL, step, message);
  }

  if (step != self->fire_at) return VIGIL_OK;
  char evidence[768];
  snprintf(evidence, sizeof(evidence),
           "{\"step\": %lld, \"tensor\": \"%s\", \"names\": %llu, \"value_max\": %.17g, \"reduction_max\": %.17g}",
           (long long)step, names.name, (unsigned long long)names.count, value_max, reduced);
  st = g_host->report_evidence(self->session, evidence, err);
  if (st != VIGIL_OK) return st;
  g_host->log(self->session, VIGIL_LOG_DEBUG, "FrozenStepRule: condition met");
  *condition_met = true;
  return VIGIL_OK;
}

static const vigil_param_spec k_params[1] = {
    {sizeof(vigil_param_spec), "fire_at", VIGIL_PARAM_INT64, 0, "2", NAN, NAN, NULL,
     "the global step at which the condition is met"},
};

static const vigil_rule_descriptor k_rule = {
    sizeof(vigil_rule_descriptor),
    "vigil.test.frozen.FrozenStepRule",
    "FrozenStepRule",
    "1.0.0",
    "Met at the step fire_at; checks tensor_names, tensor_value and reduction_value on the way (ABI 1.0 plugin).",
    k_params,
    1,
    0,
};

static uint32_t factory_count(const vigil_rule_factory *factory) {
  (void)factory;
  return 1;
}

static const vigil_rule_descriptor *factory_descriptor(const vigil_rule_factory *factory, uint32_t index) {
  (void)factory;
  return index == 0 ? &k_rule : NULL;
}

static vigil_status factory_create(const vigil_rule_factory *factory, const char *rule_id,
                                   const vigil_rule_context *context, vigil_rule **out, vigil_error *err) {
  (void)factory;
  if (rule_id == NULL || strcmp(rule_id, k_rule.id) != 0)
    return fail(err, VIGIL_E_INVALID_ARGUMENT, 0, "FrozenStepRule: unknown rule id");
  if (!VIGIL_HAS_FIELD(context, vigil_rule_context, instance_name) || context->trial_count < 1 ||
      context->param_count < 1 || context->params[0].type != VIGIL_PARAM_INT64 || !context->params[0].is_set)
    return fail(err, VIGIL_E_INVALID_ARGUMENT, 0, "FrozenStepRule: the rule context is not what ABI 1.0 promises");
  frozen_rule *self = (frozen_rule *)calloc(1, sizeof(frozen_rule));
  if (self == NULL) return VIGIL_E_OUT_OF_MEMORY;
  self->base.struct_size = sizeof(vigil_rule);
  self->base.rule_data = self;
  self->base.destroy = destroy_rule;
  self->base.required_tensors = required_tensors;
  self->base.invoke_at_step = invoke_at_step;
  self->base.get_extension = NULL;
  self->trial = context->trials[0];
  self->session = context->session;
  self->fire_at = context->params[0].v.i;
  *out = &self->base;
  return VIGIL_OK;
}

static const vigil_rule_factory k_factory = {sizeof(vigil_rule_factory), factory_count, factory_descriptor,
                                             factory_create};

static vigil_status plugin_init(const vigil_host_api *host, const char *plugin_path, vigil_error *err) {
  (void)plugin_path;
  /* A host must offer at least the whole 1.0 table; a newer one may offer more. */
  if (host == NULL || host->struct_size < sizeof(vigil_host_api) || host->abi.major != VIGIL_ABI_MAJOR)
    return fail(err, VIGIL_E_VERSION_MISMATCH, 0, "FrozenStepRule needs a host with the full ABI 1.x table");
  g_host = host;
  return VIGIL_OK;
}

static void plugin_deinit(void) { g_host = NULL; }

static const void *plugin_get_factory(const char *factory_id) {
  return factory_id != NULL && strcmp(factory_id, VIGIL_RULE_FACTORY_ID) == 0 ? &k_factory : NULL;
}

static const vigil_plugin_entry k_entry = {
    sizeof(vigil_plugin_entry),
    {VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR, VIGIL_ABI_PATCH},
    0,
    "vigil.test.frozen-v1-0",
    "1.0.0",
    "plain C11 against the frozen ABI 1.0 headers",
    plugin_init,
    plugin_deinit,
    plugin_get_factory,
};

VIGIL_EXPORT const vigil_plugin_entry *VIGIL_CALL vigil_plugin_entry_v1(uint32_t host_major, uint32_t host_minor) {
  (void)host_minor; /* any 1.x host will do: 1.0 is the oldest table */
  return host_major == VIGIL_ABI_MAJOR ? &k_entry : NULL;
}
