/* Vigil rule-plugin C ABI: the host services table.
 *
 * The host hands this table to the plugin (init) and to every rule instance (its context); plugins
 * never link against host symbols. The table is static: valid from init until the plugin's deinit
 * returns.
 *
 * How the ABI grows (docs/plugin-abi.md, "Extending the ABI"):
 * - Core queries, the ones every host has, grow by slots appended at the end of this table; a plugin
 *   checks VIGIL_HAS_FIELD(host, vigil_host_api, fn) (and non-NULL) before calling one newer than its
 *   ABI minor.
 * - Optional services are extensions: get_extension(host, "vigil.<name>/<revision>") returns the
 *   service's own table or NULL. See get_extension.
 *
 * Thread tags: [any-thread] may be called from any thread, concurrently with any other call.
 * [blocking] may wait for data (never call it while holding a lock the host might need); it returns
 * VIGIL_E_CANCELLED promptly once the evaluation is being stopped. [in-call] means something only
 * while one of the session's rule calls runs (create, required_tensors, invoke_at_step), from
 * whichever thread the rule uses. During one invoke_at_step the host shows the rule a frozen view of
 * the trial (smdebug's no_refresh), so answers within one invocation agree. */
#ifndef VIGIL_HOST_H
#define VIGIL_HOST_H

#include "vigil/tensor.h"

VIGIL_EXTERN_C_BEGIN

typedef struct vigil_trial vigil_trial;     /* opaque, host-owned, valid for the rule's lifetime */
typedef struct vigil_session vigil_session; /* opaque, host-owned: one per rule instance */

/* ABI 1.3: the worker name tensor_workers lists for a sharded tensor, standing for the whole tensor. */
#define VIGIL_WORKER_WHOLE "*"

typedef int32_t vigil_step_state; /* smdebug StepState */
enum { VIGIL_STEP_UNAVAILABLE = 0, VIGIL_STEP_AVAILABLE = 1, VIGIL_STEP_NOT_YET_AVAILABLE = 2 };

typedef int32_t vigil_log_level; /* Python logging levels */
enum {
  VIGIL_LOG_DEBUG = 10,
  VIGIL_LOG_INFO = 20,
  VIGIL_LOG_WARNING = 30,
  VIGIL_LOG_ERROR = 40,
  VIGIL_LOG_PLUGIN_MISBEHAVING = 50 /* for a plugin (or the SDK) that caught the contract being broken;
                                       the host shows it as it shows ERROR, and reports its own
                                       findings about a plugin as the rule's Error instead */
};

/* trial.tensor_names(step=, mode=, regex=, collection=). Caller-owned, read during the call. */
typedef struct vigil_name_query {
  uint32_t struct_size;
  bool has_step;
  vigil_step step;            /* when has_step: a global step (GLOBAL) or a mode step */
  vigil_mode mode;            /* 0 is read as GLOBAL */
  const char *const *regex;   /* names matching any (Python re.search); may be NULL */
  size_t regex_count;
  const char *collection;     /* NULL = none; with regex too: VIGIL_E_INVALID_ARGUMENT */
} vigil_name_query;

typedef struct vigil_host_api {
  uint32_t struct_size;
  vigil_version abi;        /* the host's ABI version */
  const char *host_name;    /* "vigil" */
  const char *host_version;

  /* [any-thread] An extension by id, "vigil.<name>/<revision>" (Vigil's own; a third party's host
   * would use its reverse-DNS name): a pointer to that revision's table, or NULL when the host lacks
   * it (or id is NULL). The table starts with uint32_t struct_size; within one revision it only grows
   * by appended fields (VIGIL_HAS_FIELD), an incompatible change is a new revision, and a host may
   * offer several revisions at once. The table is static and valid until the plugin's deinit returns,
   * so a plugin may ask once (in init) and keep the pointer; its functions carry their own thread
   * tags. Each extension declares its id and table in a header of its own (vigil/profiler.h). */
  const void *(VIGIL_CALL *get_extension)(const struct vigil_host_api *host, const char *id);

  /* ---- per rule instance ---- */
  /* [any-thread] Logs a UTF-8 line attributed to the session's rule. */
  void(VIGIL_CALL *log)(vigil_session *session, vigil_log_level level, const char *utf8);
  /* [any-thread] True once the evaluation is being stopped (SIGINT/SIGTERM, timeout). */
  bool(VIGIL_CALL *is_cancelled)(vigil_session *session);
  /* [any-thread] [in-call] Attaches evidence to the current step's verdict: a UTF-8 JSON object
   * (tensor(s), observed values, thresholds). The host copies it and adds it to the status file when
   * the rule's condition is met at this step; evidence reported outside invoke_at_step goes to the
   * next step's. */
  vigil_status(VIGIL_CALL *report_evidence)(vigil_session *session, const char *json_object, vigil_error *err);

  /* ---- trial queries (smdebug Trial): [any-thread] each; [blocking] where marked ---- */
  vigil_status(VIGIL_CALL *tensor_names)(vigil_trial *trial, const vigil_name_query *query, vigil_str_sink out,
                                         vigil_error *err);
  vigil_status(VIGIL_CALL *has_tensor)(vigil_trial *trial, const char *name, bool *out, vigil_error *err);
  vigil_status(VIGIL_CALL *steps)(vigil_trial *trial, vigil_mode mode, bool show_incomplete, vigil_i64_sink out,
                                  vigil_error *err);
  vigil_status(VIGIL_CALL *modes)(vigil_trial *trial, vigil_i64_sink out, vigil_error *err);
  vigil_status(VIGIL_CALL *workers)(vigil_trial *trial, vigil_str_sink out, vigil_error *err);
  /* *found = false (and VIGIL_OK) when the step is unknown, like smdebug's None. */
  vigil_status(VIGIL_CALL *global_step)(vigil_trial *trial, vigil_mode mode, vigil_step mode_step, bool *found,
                                        vigil_step *out, vigil_error *err);
  vigil_status(VIGIL_CALL *mode_modestep)(vigil_trial *trial, vigil_step global_step, bool *found,
                                          vigil_mode *mode, vigil_step *mode_step, vigil_error *err);
  vigil_status(VIGIL_CALL *has_passed_step)(vigil_trial *trial, vigil_step step, vigil_mode mode,
                                            vigil_step_state *out, vigil_error *err);
  /* [blocking] timeout_ms < 0: until the steps arrive, the data ends, or cancellation. */
  vigil_status(VIGIL_CALL *wait_for_steps)(vigil_trial *trial, const vigil_step *steps, size_t count,
                                           vigil_mode mode, int64_t timeout_ms, vigil_error *err);
  vigil_status(VIGIL_CALL *last_complete_step)(vigil_trial *trial, vigil_step *out, vigil_error *err);
  vigil_status(VIGIL_CALL *training_ended)(vigil_trial *trial, bool *out, vigil_error *err);

  /* ---- tensor queries (smdebug Tensor): [any-thread] each; [blocking] where marked ---- */
  vigil_status(VIGIL_CALL *tensor_steps)(vigil_trial *trial, const char *name, vigil_mode mode, bool show_incomplete,
                                         vigil_i64_sink out, vigil_error *err);
  /* The workers that saved the tensor at the step. A sharded tensor (FSDP2, tensor parallelism: each
   * worker saved its shard) lists one entry, VIGIL_WORKER_WHOLE (ABI 1.3), which as a key's worker
   * gives the whole tensor, put together from the shards, and its reductions: rules that judge each
   * worker's value judge the whole tensor once. */
  vigil_status(VIGIL_CALL *tensor_workers)(vigil_trial *trial, const char *name, vigil_step step, vigil_mode mode,
                                           vigil_str_sink out, vigil_error *err);
  vigil_status(VIGIL_CALL *tensor_shape)(vigil_trial *trial, const vigil_tensor_key *key, vigil_i64_sink dims,
                                         vigil_error *err);
  /* [blocking] A read-only view of the value; release it with (*out)->deleter(*out).
   * String tensors give VIGIL_E_TYPE_ERROR: read them with tensor_strings. */
  vigil_status(VIGIL_CALL *tensor_value)(vigil_trial *trial, const vigil_tensor_key *key, vigil_tensor **out,
                                         vigil_error *err);
  /* [blocking] The elements of a string tensor, in C order. */
  vigil_status(VIGIL_CALL *tensor_strings)(vigil_trial *trial, const vigil_tensor_key *key, vigil_str_sink out,
                                           vigil_error *err);
  /* [blocking] The saved reduction if there is one, else computed from the value (element-wise l1/l2). */
  vigil_status(VIGIL_CALL *reduction_value)(vigil_trial *trial, const vigil_tensor_key *key, vigil_reduction reduction,
                                            bool abs, double *out, vigil_error *err);

  /* ---- collections: [any-thread] ---- */
  vigil_status(VIGIL_CALL *collection_names)(vigil_trial *trial, vigil_str_sink out, vigil_error *err);
  /* The names of the collection's tensors that the trial holds (tensor_names(collection=...)). */
  vigil_status(VIGIL_CALL *collection_tensor_names)(vigil_trial *trial, const char *collection, vigil_str_sink out,
                                                    vigil_error *err);

  /* ---- ABI 1.1+ slots are appended below this line; never insert above ---- */

  /* ABI 1.1. [any-thread] The folder where the session's rule may write reports (next to the evaluator's
   * status file), as an absolute UTF-8 path owned by the host and valid for the session's life. */
  const char *(VIGIL_CALL *output_directory)(vigil_session *session);
  /* ABI 1.1. [blocking] The wall-clock time (seconds since the epoch) at which a step was saved: the
   * largest Event.wall_time among the step's records, over all workers. StepUnavailable (and the
   * other step errors) as tensor_value. */
  vigil_status(VIGIL_CALL *step_wall_time)(vigil_trial *trial, vigil_step step, vigil_mode mode, double *out,
                                           vigil_error *err);
  /* ABI 1.1. [blocking] smdebug's Tensor.reduction_values: the reductions SAVED at the key (none
   * computed), each pushed once. Step errors as tensor_value. */
  vigil_status(VIGIL_CALL *saved_reductions)(vigil_trial *trial, const vigil_tensor_key *key,
                                             vigil_reduction_sink out, vigil_error *err);

  /* ABI 1.2. [any-thread] [in-call] Says that the current call did not judge, because the rule lacks
   * the data it needs so far (fewer samples than it requires, one class only, ...); `reason_utf8`
   * (copied) says what is missing. The host counts judged and unjudged calls, and a rule that never
   * judged is reported as not having had enough data (its "Judgement" beside RuleEvaluationStatus)
   * instead of a bare NoIssuesFound. A call that returns a skip status did not judge either. */
  void(VIGIL_CALL *not_judged)(vigil_session *session, const char *reason_utf8);

  /* ABI 1.5. [blocking] One reduction of every tensor that tensor_names(query) gives, on every worker
   * that saved it at the query's step (query->has_step is required): what tensor_names, then
   * tensor_workers and reduction_value for each name and worker give one call at a time, in one call
   * (names in tensor_names' order, each name's workers sorted; a sharded tensor once, as
   * VIGIL_WORKER_WHOLE). A value that is not there is a result, not a failure: its status is
   * VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP, VIGIL_E_TENSOR_UNAVAILABLE or VIGIL_E_STEP_UNAVAILABLE (saved
   * without a value or that reduction), or VIGIL_E_TYPE_ERROR (a string tensor). Any other error
   * fails the call with reduction_value's error and message, results pushed before it included. */
  vigil_status(VIGIL_CALL *step_reductions)(vigil_trial *trial, const vigil_name_query *query,
                                            vigil_reduction reduction, bool abs, vigil_reduction_result_sink out,
                                            vigil_error *err);
} vigil_host_api;

VIGIL_EXTERN_C_END

#endif /* VIGIL_HOST_H */
