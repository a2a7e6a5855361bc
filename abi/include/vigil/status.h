/* Vigil rule-plugin C ABI: status codes, the error record, and the shared classifiers.
 *
 * Every fallible call returns a vigil_status and takes a caller-owned vigil_error *err last (may
 * be NULL). On a failure the callee fills what fits in err (by err->struct_size), err->code equal
 * to the returned status, and copies every string in, so nothing dangles and nothing is allocated
 * across the boundary; a string that does not fit is cut at a UTF-8 character boundary and sets
 * VIGIL_ERRF_TRUNCATED. The returned status decides: on VIGIL_OK the callee sets err->code to
 * VIGIL_OK and nothing else (the other fields keep whatever they held), so read err only after a
 * failure. Codes 100..119 stand one-to-one for smdebug's exception classes. */
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

/* Every status code, one row each: VIGIL_STATUS_LIST(X) calls X(name, cpp_name, value, cls, exception,
 * origin) once per code, in value order. It is the one table of the codes: the enum below, the
 * classifier, the name lookups here and every table in the host, the C++ SDK and the Python bindings
 * are generated from it.
 *   name       the C constant;
 *   cpp_name   its C++ spelling (the host's vigil::ErrorCode);
 *   value      the number: append only, a value never changes; unknown codes must be treated as failures;
 *   cls        how the invoke loop treats it (VIGIL_CLASS_<cls>, below);
 *   exception  the exception class it stands for (in Python's vigil.exceptions; the C++ SDK has the
 *              smdebug ones and throws SMDebugError for the others);
 *   origin     SMDEBUG when that class is smdebug's (smdebug.exceptions), VIGIL when it is Vigil's own.
 * Append a row for a new code; the helper macros a consumer defines for X should end in _ and be
 * #undef'd after use, as here. */
#define VIGIL_STATUS_LIST(X)                                                                                      \
  X(VIGIL_OK, Ok, 0, OK, OK, VIGIL)                                                                              \
  X(VIGIL_E_INVALID_ARGUMENT, InvalidArgument, 1, FAILURE, SMDebugValueError, SMDEBUG)                           \
  X(VIGIL_E_OUT_OF_MEMORY, OutOfMemory, 2, FAILURE, MemoryError, VIGIL)                                          \
  X(VIGIL_E_NOT_SUPPORTED, NotSupported, 3, FAILURE, SMDebugNotImplementedError, SMDEBUG)                        \
  X(VIGIL_E_VERSION_MISMATCH, VersionMismatch, 4, FAILURE, VersionMismatch, VIGIL)                               \
  X(VIGIL_E_CANCELLED, Cancelled, 5, STOP, Cancelled, VIGIL)                                                     \
  X(VIGIL_E_TIMEOUT, Timeout, 6, FAILURE, Timeout, VIGIL)                                                        \
  /* any escaped exception */                                                                                   \
  X(VIGIL_E_INTERNAL, Internal, 7, FAILURE, SMDebugRuntimeError, SMDEBUG)                                        \
  /* a rule's own failure (e.g. a Python exception) */                                                          \
  X(VIGIL_E_PLUGIN_FAILURE, PluginFailure, 8, FAILURE, PluginFailure, VIGIL)                                     \
  /* damaged bytes; the message names file and offset */                                                       \
  X(VIGIL_E_CORRUPT_DATA, CorruptData, 9, FAILURE, SMDebugRuntimeError, SMDEBUG)                                 \
  /* the file system refused */                                                                                 \
  X(VIGIL_E_IO, Io, 10, FAILURE, SMDebugRuntimeError, SMDEBUG)                                                   \
  X(VIGIL_E_TYPE_ERROR, TypeError, 11, FAILURE, SMDebugTypeError, SMDEBUG)                                       \
  X(VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP, TensorUnavailableForStep, 100, SKIP, TensorUnavailableForStep, SMDEBUG) \
  X(VIGIL_E_TENSOR_UNAVAILABLE, TensorUnavailable, 101, SKIP, TensorUnavailable, SMDEBUG)                        \
  X(VIGIL_E_STEP_UNAVAILABLE, StepUnavailable, 102, SKIP, StepUnavailable, SMDEBUG)                              \
  X(VIGIL_E_STEP_NOT_YET_AVAILABLE, StepNotYetAvailable, 103, WAIT, StepNotYetAvailable, SMDEBUG)                \
  X(VIGIL_E_NO_MORE_DATA, NoMoreData, 104, STOP, NoMoreData, SMDEBUG)                                            \
  X(VIGIL_E_INDEX_READER, IndexReader, 105, FAILURE, IndexReaderException, SMDEBUG)                              \
  X(VIGIL_E_INVALID_WORKER, InvalidWorker, 106, FAILURE, InvalidWorker, SMDEBUG)                                 \
  /* a signal, not a failure */                                                                                 \
  X(VIGIL_S_RULE_CONDITION_MET, RuleConditionMet, 107, SIGNAL, RuleEvaluationConditionMet, SMDEBUG)              \
  X(VIGIL_E_INSUFFICIENT_INFORMATION, InsufficientInformation, 108, FAILURE,                                     \
    InsufficientInformationForRuleInvocation, SMDEBUG)                                                           \
  X(VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP, ShapeUnavailableForStep, 109, FAILURE, ShapeUnavailableForStep, SMDEBUG) \
  X(VIGIL_E_NO_MORE_PROFILER_DATA, NoMoreProfilerData, 110, STOP, NoMoreProfilerData, SMDEBUG)                   \
  X(VIGIL_E_MISSING_COLLECTION_FILES, MissingCollectionFiles, 111, FAILURE, MissingCollectionFiles, SMDEBUG)     \
  X(VIGIL_E_INVALID_COLLECTION_CONFIGURATION, InvalidCollectionConfiguration, 112, FAILURE,                      \
    InvalidCollectionConfiguration, SMDEBUG)

#define VIGIL_STATUS_ENUMERATOR_(name, cpp_name, value, cls, exception, origin) name = value,
enum { VIGIL_STATUS_LIST(VIGIL_STATUS_ENUMERATOR_) };
#undef VIGIL_STATUS_ENUMERATOR_

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

#define VIGIL_STATUS_CASE_(name, cpp_name, value, cls, exception, origin) \
  case name:                                                                   \
    return VIGIL_CLASS_##cls;
static inline vigil_status_class vigil_status_classify(vigil_status s) {
  switch (s) {
    VIGIL_STATUS_LIST(VIGIL_STATUS_CASE_)
    default: return VIGIL_CLASS_FAILURE;
  }
}
#undef VIGIL_STATUS_CASE_

static inline bool vigil_status_is_skip(vigil_status s) { return vigil_status_classify(s) == VIGIL_CLASS_SKIP; }
static inline bool vigil_status_is_wait(vigil_status s) { return vigil_status_classify(s) == VIGIL_CLASS_WAIT; }
static inline bool vigil_status_is_stop(vigil_status s) { return vigil_status_classify(s) == VIGIL_CLASS_STOP; }
static inline bool vigil_status_is_signal(vigil_status s) { return vigil_status_classify(s) == VIGIL_CLASS_SIGNAL; }
static inline bool vigil_status_is_failure(vigil_status s) { return vigil_status_classify(s) == VIGIL_CLASS_FAILURE; }

/* The C name of a code ("VIGIL_E_CANCELLED"); NULL for a code this header does not define. */
#define VIGIL_STATUS_CASE_(name, cpp_name, value, cls, exception, origin) \
  case name:                                                                   \
    return #name;
static inline const char *vigil_status_name(vigil_status s) {
  switch (s) {
    VIGIL_STATUS_LIST(VIGIL_STATUS_CASE_)
    default: return NULL;
  }
}
#undef VIGIL_STATUS_CASE_

/* The smdebug exception class a code stands for ("TensorUnavailableForStep", ...); NULL if none. */
#define VIGIL_STATUS_SMDEBUG_SMDEBUG_(exception) #exception
#define VIGIL_STATUS_SMDEBUG_VIGIL_(exception) NULL
#define VIGIL_STATUS_CASE_(name, cpp_name, value, cls, exception, origin) \
  case name:                                                                   \
    return VIGIL_STATUS_SMDEBUG_##origin##_(exception);
static inline const char *vigil_status_smdebug_class(vigil_status s) {
  switch (s) {
    VIGIL_STATUS_LIST(VIGIL_STATUS_CASE_)
    default: return NULL;
  }
}
#undef VIGIL_STATUS_CASE_
#undef VIGIL_STATUS_SMDEBUG_SMDEBUG_
#undef VIGIL_STATUS_SMDEBUG_VIGIL_

VIGIL_EXTERN_C_END

#endif /* VIGIL_STATUS_H */
