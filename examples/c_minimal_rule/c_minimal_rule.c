/* A rule plugin in plain C (C11), against the C ABI alone: it proves no C++ leaks into the ABI.
 *
 * Rule "LossAboveThreshold": the condition is met at a step when any tensor of the "losses"
 * collection has a value above `threshold` there (its max reduction).
 *
 * How a C plugin meets structs of another ABI minor: what it builds (descriptors, the entry, keys)
 * uses designated initializers with struct_size = sizeof, so fields it does not name are zero; what
 * it receives (the host table, an error record, the rule context) may come from an older or newer
 * writer, so it checks VIGIL_HAS_FIELD before reading or writing a field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vigil/vigil.h>

static const vigil_host_api *g_host;

typedef struct loss_rule {
  vigil_rule base; /* first member: a vigil_rule* is a loss_rule* */
  vigil_trial *trial;
  vigil_session *session;
  double threshold;
} loss_rule;

/* Collects names pushed by the host into a fixed-capacity list. */
typedef struct name_list {
  char names[64][256];
  size_t count;
} name_list;

static vigil_status push_name(void *ctx, const char *utf8, size_t len) {
  name_list *list = (name_list *)ctx;
  if (list->count == 64 || len >= 256) return VIGIL_OK; /* this small example keeps the first 64 */
  memcpy(list->names[list->count], utf8, len);
  list->names[list->count][len] = '\0';
  list->count++;
  return VIGIL_OK;
}

static void destroy_rule(vigil_rule *rule) { free(rule); }

/* Fills the caller's error record with what its struct_size has room for. */
static void set_error(vigil_error *err, vigil_status code, const char *what, const char *detail) {
  if (VIGIL_HAS_FIELD(err, vigil_error, code)) err->code = code;
  if (VIGIL_HAS_FIELD(err, vigil_error, message)) snprintf(err->message, sizeof(err->message), "%s%s", what, detail);
}

static vigil_status invoke_at_step(vigil_rule *rule, vigil_step step, bool *condition_met, vigil_error *err) {
  loss_rule *self = (loss_rule *)rule;
  name_list losses;
  losses.count = 0;
  vigil_str_sink sink = {.ctx = &losses, .push = push_name};
  vigil_status st = g_host->collection_tensor_names(self->trial, "losses", sink, err);
  if (st != VIGIL_OK) return st;
  *condition_met = false;
  for (size_t i = 0; i < losses.count; ++i) {
    vigil_tensor_key key = {.struct_size = sizeof(key), .name = losses.names[i], .step = step, .mode = VIGIL_MODE_GLOBAL};
    double max_value = 0;
    st = g_host->reduction_value(self->trial, &key, VIGIL_RED_MAX, false, &max_value, err);
    if (vigil_status_is_skip(st)) continue; /* not saved at this step */
    if (st != VIGIL_OK) return st;
    if (max_value > self->threshold) {
      char evidence[512];
      snprintf(evidence, sizeof(evidence), "{\"tensor\": \"%s\", \"value\": %.17g, \"threshold\": %.17g}",
               losses.names[i], max_value, self->threshold);
      g_host->report_evidence(self->session, evidence, NULL);
      *condition_met = true;
    }
  }
  return VIGIL_OK;
}

static const vigil_param_spec k_params[] = {
    {.struct_size = sizeof(vigil_param_spec),
     .name = "threshold",
     .type = VIGIL_PARAM_DOUBLE,
     .default_text = "10",
     .min_value = NAN,
     .max_value = NAN,
     .description = "the condition is met when a loss exceeds this value"},
};

static const vigil_rule_descriptor k_rule = {
    .struct_size = sizeof(vigil_rule_descriptor),
    .id = "vigil.example.c.LossAboveThreshold",
    .name = "LossAboveThreshold",
    .version = "1.0.0",
    .description = "Met when a tensor of the losses collection exceeds a threshold (an example written in C).",
    .params = k_params,
    .param_count = sizeof(k_params) / sizeof(k_params[0]),
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
  if (strcmp(rule_id, k_rule.id) != 0) {
    set_error(err, VIGIL_E_INVALID_ARGUMENT, "unknown rule ", rule_id);
    return VIGIL_E_INVALID_ARGUMENT;
  }
  if (!VIGIL_HAS_FIELD(context, vigil_rule_context, param_count) || context->trial_count < 1 ||
      context->param_count < 1) {
    set_error(err, VIGIL_E_INVALID_ARGUMENT, "the rule needs a base trial and its parameter", "");
    return VIGIL_E_INVALID_ARGUMENT;
  }
  loss_rule *self = (loss_rule *)calloc(1, sizeof(loss_rule));
  if (!self) return VIGIL_E_OUT_OF_MEMORY;
  self->base = (vigil_rule){
      .struct_size = sizeof(vigil_rule), .rule_data = self, .destroy = destroy_rule, .invoke_at_step = invoke_at_step};
  self->trial = context->trials[0];
  self->session = context->session;
  self->threshold = context->params[0].v.d; /* validated by the host against k_params */
  *out = &self->base;
  return VIGIL_OK;
}

static const vigil_rule_factory k_factory = {
    .struct_size = sizeof(vigil_rule_factory),
    .count = factory_count,
    .descriptor = factory_descriptor,
    .create = factory_create,
};

static vigil_status plugin_init(const vigil_host_api *host, const char *plugin_path, vigil_error *err) {
  (void)plugin_path;
  /* The last host slot this plugin calls; a host table too old to hold it is declined. */
  if (!VIGIL_HAS_FIELD(host, vigil_host_api, collection_tensor_names)) {
    set_error(err, VIGIL_E_VERSION_MISMATCH, "the host's table lacks collection_tensor_names", "");
    return VIGIL_E_VERSION_MISMATCH;
  }
  g_host = host;
  return VIGIL_OK;
}

static void plugin_deinit(void) { g_host = NULL; }

static const void *plugin_get_factory(const char *factory_id) {
  return strcmp(factory_id, VIGIL_RULE_FACTORY_ID) == 0 ? &k_factory : NULL;
}

static const vigil_plugin_entry k_entry = {
    .struct_size = sizeof(vigil_plugin_entry),
    .abi = {.major = VIGIL_ABI_MAJOR, .minor = VIGIL_ABI_MINOR, .patch = VIGIL_ABI_PATCH},
    .plugin_id = "vigil.example.c",
    .plugin_version = "1.0.0",
    .build_info = "plain C11 example",
    .init = plugin_init,
    .deinit = plugin_deinit,
    .get_factory = plugin_get_factory,
};

VIGIL_EXPORT const vigil_plugin_entry *vigil_plugin_entry_v1(uint32_t host_major, uint32_t host_minor) {
  (void)host_minor;
  return host_major == VIGIL_ABI_MAJOR ? &k_entry : NULL;
}
