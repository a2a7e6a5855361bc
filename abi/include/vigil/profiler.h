/* Vigil host extension "vigil.profiler/1": the profiler data of a training job (system metrics and
 * framework trace events, format spec §8) for profiler rules.
 *
 * A plugin gets the table with host->get_extension(host, VIGIL_PROFILER_EXTENSION_ID); a host without
 * profiler support returns NULL, and the rule should then report that it cannot judge instead of
 * failing. The core ABI is unchanged by this header: a plugin that never asks for the extension runs
 * on any host, and a host offers it to every plugin.
 *
 * How a profiler rule runs (builtin-rules §1.4). The evaluator runs the rules of a job's
 * ProfilerRuleConfigurations over the job's profiler output folder, not over a tensor trial: their
 * context has no trials (trial_count 0), and invoke_at_step is called with step = 0, 1, 2, ..., the
 * index k of the rule's time window, until the rule returns a stop status (VIGIL_E_NO_MORE_PROFILER_DATA
 * once the data has ended, which ends the rule normally). Window k is
 * [T0 + k*S, T0 + (k+1)*S] in microseconds since the epoch, with T0 = first_timestamp and S the rule's
 * own scan_interval_us; the rule computes it and calls wait_for_window before reading it. Functions
 * called for a session that the evaluator does not run as a profiler rule return VIGIL_E_NOT_SUPPORTED.
 *
 * Ownership: everything pushed to a sink is host-owned and valid only during that push call; copy what
 * you keep. Sinks may be pushed to several times per call (in batches). A push that returns an error
 * status stops the call, which returns that status.
 *
 * Thread tags as in host.h: every function is [any-thread]; [blocking] ones return VIGIL_E_CANCELLED
 * promptly once the evaluation is being stopped. */
#ifndef VIGIL_PROFILER_H
#define VIGIL_PROFILER_H

#include "vigil/host.h"

VIGIL_EXTERN_C_BEGIN

#define VIGIL_PROFILER_EXTENSION_ID "vigil.profiler/1"

/* One system metrics sample (a JSON line of system/incremental/...). Comes in arrays, so it never
 * grows: a richer sample would come as a new extension revision. */
typedef struct vigil_system_metric {
  const char *type;      /* "cpu", "gpu", "memory", "disk", "network" */
  const char *name;      /* "cpu0", "gpu1", "MemoryUsedPercent"; "" where the line has none */
  const char *dimension; /* "CPUUtilization", "GPUUtilization", "I/OWaitPercentage", ... */
  const char *node_id;   /* "algo-1" */
  double value;
  double timestamp_s;    /* seconds since the epoch */
} vigil_system_metric;

typedef struct vigil_system_metric_sink {
  void *ctx;
  vigil_status(VIGIL_CALL *push)(void *ctx, const vigil_system_metric *metrics, size_t count);
} vigil_system_metric_sink;

/* One framework event of a Chrome trace file (framework/pevents/...), as smdebug's TraceEventParser
 * reads it. Comes in arrays, so it never grows. */
typedef struct vigil_framework_event {
  const char *name;      /* the operation: "Step:ModeKeys.TRAIN", "DataLoaderIter.__next__", ... */
  const char *phase;     /* the training phase (the process_name of the record's pid); "" when none */
  const char *node_id;   /* from the file name */
  const char *args_json; /* the record's "args" as a JSON object text ("{}" when it has none) */
  int64_t start_us;      /* microseconds since the epoch */
  int64_t end_us;
  int64_t pid;           /* args.pid where present, else the record's pid */
  int64_t tid;           /* args.thread_id where present, else the record's tid, else 0 */
} vigil_framework_event;

typedef struct vigil_framework_event_sink {
  void *ctx;
  vigil_status(VIGIL_CALL *push)(void *ctx, const vigil_framework_event *events, size_t count);
} vigil_framework_event_sink;

typedef struct vigil_profiler_ext {
  uint32_t struct_size;
  /* [blocking] T0 in microseconds since the epoch: the smaller of the first system-metrics file's and
   * the first framework file's timestamps. Waits while neither exists; VIGIL_E_NO_MORE_PROFILER_DATA
   * when the job has ended without any. */
  vigil_status(VIGIL_CALL *first_timestamp)(vigil_session *session, int64_t *out_us, vigil_error *err);
  /* [blocking] Waits until the window [start_us, end_us] can be evaluated: VIGIL_OK once files dated
   * at or after end_us exist (or the job has ended while start_us is before its latest file);
   * VIGIL_E_NO_MORE_PROFILER_DATA when the job has ended and start_us is at or after its latest file. */
  vigil_status(VIGIL_CALL *wait_for_window)(vigil_session *session, int64_t start_us, int64_t end_us,
                                            vigil_error *err);
  /* The samples with start_us <= Timestamp <= end_us (compared in ns, as smdebug does), in file and
   * line order; of one Type only where `type` is not NULL. */
  vigil_status(VIGIL_CALL *system_metrics)(vigil_session *session, int64_t start_us, int64_t end_us,
                                           const char *type, vigil_system_metric_sink out, vigil_error *err);
  /* The events whose [start, end] overlaps [start_us, end_us], in file order. */
  vigil_status(VIGIL_CALL *framework_events)(vigil_session *session, int64_t start_us, int64_t end_us,
                                             vigil_framework_event_sink out, vigil_error *err);
} vigil_profiler_ext;

VIGIL_EXTERN_C_END

#endif /* VIGIL_PROFILER_H */
