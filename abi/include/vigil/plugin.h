/* Vigil rule-plugin C ABI: what a plugin exports.
 *
 * A plugin is a shared library exporting exactly one symbol, vigil_plugin_entry_v1. It returns a
 * static vigil_plugin_entry; through it the host gets the rule factory, whose descriptors say
 * which rules the plugin offers and which parameters each takes. The host validates parameters
 * against the descriptor before create() is called, so a rule receives typed, in-range values.
 *
 * Ownership: the entry, the factory, descriptors and parameter specs are plugin-owned static data,
 * valid until deinit. A vigil_rule is plugin-owned until the host calls destroy() (once). The
 * rule context and parameter values are host-owned and valid only during create().
 *
 * Thread tags: [loader] init/deinit are serialized and never concurrent with other calls into the
 * library; [any-thread] may run concurrently; [rule-serial] calls on one rule instance never overlap.
 *
 * How the ABI grows: see host.h. The plugin's tables grow by appended fields and slots too; the host
 * asks a plugin for optional tables by id (get_factory), never by new symbols. */
#ifndef VIGIL_PLUGIN_H
#define VIGIL_PLUGIN_H

#include "vigil/host.h"

VIGIL_EXTERN_C_BEGIN

typedef int32_t vigil_param_type;
enum {
  VIGIL_PARAM_BOOL = 1,        /* "true"/"false" in any case, also "1"/"0" */
  VIGIL_PARAM_INT64 = 2,
  VIGIL_PARAM_DOUBLE = 3,
  VIGIL_PARAM_STRING = 4,
  VIGIL_PARAM_STRING_LIST = 5, /* comma-separated in RuleParameters */
  VIGIL_PARAM_REGEX = 6,       /* a string the host checks compiles */
  VIGIL_PARAM_ENUM = 7         /* one of `choices` */
};

enum { VIGIL_PARAMF_REQUIRED = 1u };

/* Parameter specs come as an array, so this struct never grows: struct_size must equal
 * sizeof(vigil_param_spec) (the host refuses other sizes); a richer spec would come as a new
 * descriptor field. The same holds for vigil_param_value. */
typedef struct vigil_param_spec {
  uint32_t struct_size;
  const char *name;          /* the RuleParameters key, exactly as SageMaker spells it */
  vigil_param_type type;
  uint32_t flags;            /* VIGIL_PARAMF_* */
  const char *default_text;  /* as SageMaker would pass it; NULL = no default */
  double min_value;          /* inclusive bounds for INT64/DOUBLE; NaN = unbounded */
  double max_value;
  const char *const *choices; /* NULL-terminated, for ENUM */
  const char *description;
} vigil_param_spec;

/* A validated parameter value, in the order of the descriptor's specs. */
typedef struct vigil_param_value {
  vigil_param_type type;
  bool is_set;      /* false: no value and no default (an optional parameter left out) */
  const char *text; /* the string as given (or the default) */
  union {
    bool b;
    int64_t i;
    double d;
    const char *s;  /* STRING, REGEX, ENUM: same as text */
  } v;
  const char *const *list; /* STRING_LIST: the items */
  size_t list_count;
} vigil_param_value;

enum {
  VIGIL_RULEF_MULTI_TRIAL = 1u,         /* takes other trials (context->trials[1..]) */
  VIGIL_RULEF_INSTANCE_THREADSAFE = 2u, /* calls on one instance may overlap. A permission the host
                                           does not use: it never overlaps calls on one instance
                                           (they stay [rule-serial]); kept for a host that would. */
  VIGIL_RULEF_EXTRA_PARAMS = 4u         /* ABI 1.1: parameters outside `params` are passed through as
                                           strings (context->extra_param_*) instead of refused */
};

/* ABI 1.2: rule profiles. A profile is a named set of parameter defaults that a job selects as a
 * whole (`vigil evaluate --profile calibrated`, or the reserved RuleParameters key vigil_profile).
 * Without one, a rule runs with its specs' default_text: SageMaker's defaults. Vigil knows these
 * profiles; a descriptor may give defaults for any of them, and a parameter it gives none for keeps
 * its default_text. */
#define VIGIL_PROFILE_SAGEMAKER "sagemaker"   /* the specs' default_text (the default profile) */
#define VIGIL_PROFILE_CALIBRATED "calibrated" /* defaults chosen against labelled runs (docs/verdict-quality.md) */
#define VIGIL_PROFILE_PARAM "vigil_profile"   /* the reserved RuleParameters key that selects one */

/* One parameter's default in one profile. Comes as an array, so it never grows: struct_size must
 * equal sizeof(vigil_profile_default) (the host refuses other sizes). */
typedef struct vigil_profile_default {
  uint32_t struct_size;
  const char *profile;      /* VIGIL_PROFILE_CALIBRATED */
  const char *param;        /* a name among the descriptor's params */
  const char *default_text; /* as SageMaker would pass it; validated like a given value */
} vigil_profile_default;

typedef struct vigil_rule_descriptor {
  uint32_t struct_size;
  const char *id;          /* unique: "vigil.builtin.VanishingGradient", "com.acme.MyRule" */
  const char *name;        /* the rule_to_invoke value: "VanishingGradient" */
  const char *version;
  const char *description;
  const vigil_param_spec *params;
  uint32_t param_count;
  uint32_t flags;          /* VIGIL_RULEF_* */
  /* ---- ABI 1.2: check VIGIL_HAS_FIELD(desc, vigil_rule_descriptor, profile_default_count) ---- */
  const vigil_profile_default *profile_defaults; /* plugin-owned static data; may be NULL */
  uint32_t profile_default_count;
} vigil_rule_descriptor;

typedef struct vigil_rule_context {
  uint32_t struct_size;
  const vigil_host_api *host;
  vigil_session *session;
  vigil_trial *const *trials; /* trials[0] is the base trial */
  uint32_t trial_count;
  const vigil_param_value *params; /* same order as the descriptor's params */
  uint32_t param_count;
  const char *instance_name; /* the RuleConfigurationName */
  /* ---- ABI 1.1: check VIGIL_HAS_FIELD(context, vigil_rule_context, extra_param_count) ---- */
  /* With VIGIL_RULEF_EXTRA_PARAMS: the given parameters the descriptor does not declare, as
   * (name, value) string pairs in name order. */
  const char *const *extra_param_names;
  const char *const *extra_param_values;
  uint32_t extra_param_count;
  /* Fields appended after 1.1 start at offset 88 or beyond (past this struct's tail padding), so
   * VIGIL_HAS_FIELD never mistakes padding written by a 1.1 host for a newer field. */
} vigil_rule_context;

/* smdebug's RequiredTensors.add: the host reads these once per step for every rule before
 * invoke_at_step, so N rules over one trial read each tensor once. */
typedef struct vigil_required_sink {
  void *ctx;
  vigil_status(VIGIL_CALL *add)(void *ctx, uint32_t trial_index, const char *name_or_regex, bool is_regex,
                      const vigil_step *steps, size_t step_count);
} vigil_required_sink;

typedef struct vigil_rule {
  uint32_t struct_size;
  void *rule_data; /* plugin-private */
  /* [rule-serial] Called once by the host; the instance is gone afterwards. */
  void(VIGIL_CALL *destroy)(struct vigil_rule *rule);
  /* [rule-serial] Optional (may be NULL): declare the tensors invoke_at_step will read at `step`. */
  vigil_status(VIGIL_CALL *required_tensors)(struct vigil_rule *rule, vigil_step step,
                                             const vigil_required_sink *sink, vigil_error *err);
  /* [rule-serial] Evaluate at a global step. VIGIL_OK with *condition_met = true means the
   * condition is met; skip/stop statuses (see vigil_status_classify) are smdebug's exceptions. */
  vigil_status(VIGIL_CALL *invoke_at_step)(struct vigil_rule *rule, vigil_step step, bool *condition_met,
                                           vigil_error *err);
  /* Reserved, may be NULL: for rule-side extensions the host would ask for by id, like the host's
   * get_extension. None is defined, so the host never calls it; it stays so that the first one needs
   * no new slot. */
  const void *(VIGIL_CALL *get_extension)(const struct vigil_rule *rule, const char *id);
  /* ---- ABI 1.2: check VIGIL_HAS_FIELD(rule, vigil_rule, invoke_at_time) ---- */
  /* [rule-serial] Optional (may be NULL): a wall-clock tick. While the host waits for the next step
   * of a live trial it calls this about once a second with the time (seconds since the epoch) and
   * the last global step it invoked the rule at (-1 before the first), so that a rule about time
   * (a stalled job) can judge while no step arrives. *condition_met = true is reported as at
   * `last_step` (the first step when none was seen); statuses as invoke_at_step. */
  vigil_status(VIGIL_CALL *invoke_at_time)(struct vigil_rule *rule, double wall_time, vigil_step last_step,
                                           bool *condition_met, vigil_error *err);
} vigil_rule;

typedef struct vigil_rule_factory {
  uint32_t struct_size;
  uint32_t(VIGIL_CALL *count)(const struct vigil_rule_factory *factory);                    /* [any-thread] */
  const vigil_rule_descriptor *(VIGIL_CALL *descriptor)(const struct vigil_rule_factory *factory,
                                                        uint32_t index);                    /* [any-thread] */
  vigil_status(VIGIL_CALL *create)(const struct vigil_rule_factory *factory, const char *rule_id,
                                   const vigil_rule_context *context, vigil_rule **out,
                                   vigil_error *err); /* [any-thread] */
} vigil_rule_factory;

#define VIGIL_RULE_FACTORY_ID "vigil.rule-factory/1"

/* ABI 1.4: rule preparation, an optional table a plugin offers through
 * get_factory(VIGIL_RULE_PREPARER_ID) (NULL: it has none). A rule whose create() must do slow work
 * that needs no trial (start an interpreter, import a rule file) can do it here: the host calls
 * prepare() as soon as it knows the job, before the trials exist, on a thread of its own, so that
 * the rule is ready when the first step arrives. The host asks only plugins built against ABI 1.4 or
 * later (entry->abi.minor >= 4), so an older plugin's get_factory never sees this id.
 *
 * The host calls prepare() at most once per rule configuration, and calls create() for that
 * configuration only after prepare() returned. prepare() is a head start, not a check: whatever it
 * returns, the host goes on to create() as it would have without it (a failure is only logged, at
 * debug level), so a plugin reports a problem found while preparing from create(), with the status
 * and message create() would have given. */
typedef struct vigil_prepare_context {
  uint32_t struct_size;
  const vigil_host_api *host;
  const vigil_param_value *params; /* same order as the descriptor's params, as create() gets them */
  uint32_t param_count;
  const char *instance_name;       /* the RuleConfigurationName */
  const char *const *extra_param_names; /* as vigil_rule_context's, with VIGIL_RULEF_EXTRA_PARAMS */
  const char *const *extra_param_values;
  uint32_t extra_param_count;
} vigil_prepare_context;

typedef struct vigil_rule_preparer {
  uint32_t struct_size;
  /* [any-thread] Gets rule `rule_id` ready for a create() with these parameters. The context is
   * host-owned and valid only during the call. May take long (the host does not wait for it before
   * rules of other plugins run); must not call the host's trial queries (there is no trial yet). */
  vigil_status(VIGIL_CALL *prepare)(const struct vigil_rule_preparer *preparer, const char *rule_id,
                                    const vigil_prepare_context *context, vigil_error *err);
} vigil_rule_preparer;

#define VIGIL_RULE_PREPARER_ID "vigil.rule-preparer/1"

enum {
  VIGIL_PLUGINF_NO_UNLOAD = 1u,     /* never dlclose the library (e.g. an embedded interpreter) */
  VIGIL_PLUGINF_NOT_FORK_SAFE = 2u  /* the library must not be used in a child forked (without exec)
                                       from a process that initialised it. The host honours it for
                                       every plugin: it never forks without exec (--isolate starts
                                       `vigil` again, which loads the plugin afresh) */
};

typedef struct vigil_plugin_entry {
  uint32_t struct_size;
  vigil_version abi;          /* the ABI the plugin was built against: VIGIL_ABI_MAJOR/MINOR; the
                                 host decides on its major (version.h) */
  uint32_t flags;             /* VIGIL_PLUGINF_* */
  const char *plugin_id;      /* reverse-DNS: "vigil.builtin.tensor-rules" */
  const char *plugin_version;
  const char *build_info;     /* compiler, SDK version (`vigil rules` shows it); may be NULL */
  /* [loader] Called once per load of the library, before anything else; may fail with a message. A
   * library that is already loaded and initialised (loaded again by another registry, or through
   * another path to the same file) is not initialised again. */
  vigil_status(VIGIL_CALL *init)(const vigil_host_api *host, const char *plugin_path, vigil_error *err);
  /* [loader] Called once, after the last rule and the last user of the library are gone and before
   * it is unloaded; not called when init failed. */
  void(VIGIL_CALL *deinit)(void);
  /* [any-thread] A factory by id (VIGIL_RULE_FACTORY_ID), or NULL. */
  const void *(VIGIL_CALL *get_factory)(const char *factory_id);
} vigil_plugin_entry;

/* The one exported symbol. Returns static data, does no work and allocates nothing. It gets the
 * host's ABI version and returns NULL to decline a host it cannot work with (version.h). */
typedef const vigil_plugin_entry *(VIGIL_CALL *vigil_plugin_entry_fn)(uint32_t host_major, uint32_t host_minor);
#define VIGIL_PLUGIN_ENTRY_SYMBOL "vigil_plugin_entry_v1"

VIGIL_EXPORT const vigil_plugin_entry *VIGIL_CALL vigil_plugin_entry_v1(uint32_t host_major, uint32_t host_minor);

VIGIL_EXTERN_C_END

#endif /* VIGIL_PLUGIN_H */
