/* Vigil rule-plugin C ABI: status codes, the error record, and the shared classifiers.
 *
 * Every fallible call returns a vigil_status and takes a caller-owned vigil_error *err last (may
 * be NULL). The callee fills what fits in err (by err->struct_size) and copies every string in, so
 * nothing dangles and nothing is allocated across the boundary. Codes 100..119 stand one-to-one
 * for smdebug's exception classes. */
#ifndef VIGIL_STATUS_H
#define VIGIL_STATUS_H

#include "vigil/version.h"

VIGIL_EXTERN_C_BEGIN

typedef int32_t vigil_status;
typedef int32_t vigil_mode; /* = smdebug ModeKeys */
typedef int64_t vigil_step;

enum {
  VIGIL_MODE_TRAIN = 1,
  VIGIL_MODE_EVAL = 2,
  VIGIL_MODE_PREDICT = 3,
  VIGIL_MODE_GLOBAL = 4
};

/* Append only; values never change. Unknown codes must be treated as failures. */
enum {
  VIGIL_OK = 0,
  VIGIL_E_INVALID_ARGUMENT = 1,            /* SMDebugValueError */
  VIGIL_E_OUT_OF_MEMORY = 2,
  VIGIL_E_NOT_SUPPORTED = 3,               /* SMDebugNotImplementedError */
  VIGIL_E_VERSION_MISMATCH = 4,
  VIGIL_E_CANCELLED = 5,
  VIGIL_E_TIMEOUT = 6,
  VIGIL_E_INTERNAL = 7,                    /* SMDebugRuntimeError; any escaped exception */
  VIGIL_E_PLUGIN_FAILURE = 8,              /* a rule's own failure (e.g. a Python exception) */
  VIGIL_E_CORRUPT_DATA = 9,                /* damaged bytes; message names file and offset */
  VIGIL_E_IO = 10,                         /* the file system refused */
  VIGIL_E_TYPE_ERROR = 11,                 /* SMDebugTypeError */
  VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP = 100,
  VIGIL_E_TENSOR_UNAVAILABLE = 101,
  VIGIL_E_STEP_UNAVAILABLE = 102,
  VIGIL_E_STEP_NOT_YET_AVAILABLE = 103,
  VIGIL_E_NO_MORE_DATA = 104,
  VIGIL_E_INDEX_READER = 105,              /* IndexReaderException */
  VIGIL_E_INVALID_WORKER = 106,
  VIGIL_S_RULE_CONDITION_MET = 107,        /* RuleEvaluationConditionMet: a signal, not a failure */
  VIGIL_E_INSUFFICIENT_INFORMATION = 108,  /* InsufficientInformationForRuleInvocation */
  VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP = 109,
  VIGIL_E_NO_MORE_PROFILER_DATA = 110,
  VIGIL_E_MISSING_COLLECTION_FILES = 111,
  VIGIL_E_INVALID_COLLECTION_CONFIGURATION = 112
};

enum {
  VIGIL_ERRF_HAS_REDUCTIONS = 1u, /* TensorUnavailableForStep.has_reductions */
  VIGIL_ERRF_END_OF_RULE = 2u,    /* RuleEvaluationConditionMet.end_of_rule */
  VIGIL_ERRF_TRUNCATED = 4u       /* a string did not fit and was cut */
};

typedef struct vigil_error {
  uint32_t struct_size; /* set by the caller: sizeof(vigil_error) it was built with */
  vigil_status code;
  uint32_t flags;       /* VIGIL_ERRF_* */
  vigil_mode mode;
  vigil_step step;
  vigil_step last_step; /* NoMoreData */
  char tensor[256];     /* UTF-8, NUL-terminated */
  char worker[128];
  char rule[128];
  char message[1024];   /* str(e) in smdebug's wording where smdebug has the class */
} vigil_error;

/* How the invoke loop treats a status (smdebug's invoke_rule): one table for host, SDK and Python. */
typedef enum vigil_status_class {
  VIGIL_CLASS_OK = 0,
  VIGIL_CLASS_SKIP = 1,    /* skip this step, go on with the next */
  VIGIL_CLASS_WAIT = 2,    /* not there yet: wait and retry */
  VIGIL_CLASS_STOP = 3,    /* normal end of the rule's data */
  VIGIL_CLASS_SIGNAL = 4,  /* the rule's condition was met */
  VIGIL_CLASS_FAILURE = 5  /* the rule fails with Error */
} vigil_status_class;

static inline vigil_status_class vigil_status_classify(vigil_status s) {
  switch (s) {
    case VIGIL_OK: return VIGIL_CLASS_OK;
    case VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP:
    case VIGIL_E_TENSOR_UNAVAILABLE:
    case VIGIL_E_STEP_UNAVAILABLE: return VIGIL_CLASS_SKIP;
    case VIGIL_E_STEP_NOT_YET_AVAILABLE: return VIGIL_CLASS_WAIT;
    case VIGIL_E_NO_MORE_DATA:
    case VIGIL_E_NO_MORE_PROFILER_DATA:
    case VIGIL_E_CANCELLED: return VIGIL_CLASS_STOP;
    case VIGIL_S_RULE_CONDITION_MET: return VIGIL_CLASS_SIGNAL;
    default: return VIGIL_CLASS_FAILURE;
  }
}

static inline bool vigil_status_is_skip(vigil_status s) { return vigil_status_classify(s) == VIGIL_CLASS_SKIP; }
static inline bool vigil_status_is_wait(vigil_status s) { return vigil_status_classify(s) == VIGIL_CLASS_WAIT; }
static inline bool vigil_status_is_stop(vigil_status s) { return vigil_status_classify(s) == VIGIL_CLASS_STOP; }
static inline bool vigil_status_is_signal(vigil_status s) { return vigil_status_classify(s) == VIGIL_CLASS_SIGNAL; }
static inline bool vigil_status_is_failure(vigil_status s) { return vigil_status_classify(s) == VIGIL_CLASS_FAILURE; }

/* The smdebug exception class a code stands for ("TensorUnavailableForStep", ...); NULL if none. */
static inline const char *vigil_status_smdebug_class(vigil_status s) {
  switch (s) {
    case VIGIL_E_INVALID_ARGUMENT: return "SMDebugValueError";
    case VIGIL_E_NOT_SUPPORTED: return "SMDebugNotImplementedError";
    case VIGIL_E_INTERNAL:
    case VIGIL_E_CORRUPT_DATA:
    case VIGIL_E_IO: return "SMDebugRuntimeError";
    case VIGIL_E_TYPE_ERROR: return "SMDebugTypeError";
    case VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP: return "TensorUnavailableForStep";
    case VIGIL_E_TENSOR_UNAVAILABLE: return "TensorUnavailable";
    case VIGIL_E_STEP_UNAVAILABLE: return "StepUnavailable";
    case VIGIL_E_STEP_NOT_YET_AVAILABLE: return "StepNotYetAvailable";
    case VIGIL_E_NO_MORE_DATA: return "NoMoreData";
    case VIGIL_E_INDEX_READER: return "IndexReaderException";
    case VIGIL_E_INVALID_WORKER: return "InvalidWorker";
    case VIGIL_S_RULE_CONDITION_MET: return "RuleEvaluationConditionMet";
    case VIGIL_E_INSUFFICIENT_INFORMATION: return "InsufficientInformationForRuleInvocation";
    case VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP: return "ShapeUnavailableForStep";
    case VIGIL_E_NO_MORE_PROFILER_DATA: return "NoMoreProfilerData";
    case VIGIL_E_MISSING_COLLECTION_FILES: return "MissingCollectionFiles";
    case VIGIL_E_INVALID_COLLECTION_CONFIGURATION: return "InvalidCollectionConfiguration";
    default: return NULL;
  }
}

VIGIL_EXTERN_C_END

#endif /* VIGIL_STATUS_H */
