/* Vigil rule-plugin C ABI: tensor views (DLPack), tensor keys, reductions and result sinks.
 *
 * A vigil_tensor has exactly the layout of DLPack 1.x's DLManagedTensorVersioned, so it can be
 * handed to any DLPack consumer. The host owns it; the plugin releases it by calling
 * view->deleter(view) exactly once, from any thread, before the rule call that obtained it returns.
 * The host counts the views of each rule around every invoke_at_step and fails (Error) a rule that
 * returns still holding one. The data is read-only (VIGIL_TENSOR_FLAG_READ_ONLY is always set). */
#ifndef VIGIL_TENSOR_H
#define VIGIL_TENSOR_H

#include <dlpack/dlpack.h>

#include "vigil/status.h"

VIGIL_EXTERN_C_BEGIN

/* DLPack type codes newer than Debian's dlpack 0.6 header, under our own names, with DLPack 1.1's
 * values. The float8 tensors (bits 8, lanes 1) reach plugins built against ABI 1.3 or later; a
 * plugin of an older minor gets them widened to float32 (kDLFloat, 32), which holds them exactly. */
enum {
  VIGIL_DL_BOOL = 6,
  VIGIL_DL_FLOAT8_E4M3FN = 10, /* ABI 1.3: torch.float8_e4m3fn (bias 7, NaN, no infinity) */
  VIGIL_DL_FLOAT8_E5M2 = 12    /* ABI 1.3: torch.float8_e5m2 (IEEE-like, bias 15) */
};

enum {
  VIGIL_TENSOR_FLAG_READ_ONLY = 1u, /* = DLPACK_FLAG_BITMASK_READ_ONLY */
  VIGIL_TENSOR_FLAG_IS_COPIED = 2u  /* = DLPACK_FLAG_BITMASK_IS_COPIED */
};

typedef struct vigil_tensor {
  struct {
    uint32_t major;
    uint32_t minor;
  } dlpack_version;                          /* the host writes {1, 0} */
  void *manager_ctx;                         /* host-private */
  void (*deleter)(struct vigil_tensor *self); /* [any-thread] exactly once */
  uint64_t flags;                            /* VIGIL_TENSOR_FLAG_* */
  DLTensor dl_tensor;                        /* kDLCPU; strides NULL (C order); shape valid until deleter */
} vigil_tensor;

/* Which value: (name, step, mode, worker). Caller-owned, read only during the call. */
typedef struct vigil_tensor_key {
  uint32_t struct_size;
  const char *name;
  vigil_step step;    /* a global step for GLOBAL, else a mode step */
  vigil_mode mode;
  const char *worker; /* NULL = the first worker (smdebug's default) */
} vigil_tensor_key;

/* smdebug's reduction names, in order: min max mean std variance sum prod l1 l2. */
typedef int32_t vigil_reduction;
enum {
  VIGIL_RED_MIN = 1,
  VIGIL_RED_MAX = 2,
  VIGIL_RED_MEAN = 3,
  VIGIL_RED_STD = 4,
  VIGIL_RED_VARIANCE = 5,
  VIGIL_RED_SUM = 6,
  VIGIL_RED_PROD = 7,
  VIGIL_RED_L1 = 8,
  VIGIL_RED_L2 = 9
};

/* Result sinks: the callee calls push() synchronously, before it returns; what push() receives
 * lives only during that call (copy what you keep). A push() returning non-OK stops the callee,
 * which returns that status. */
typedef struct vigil_str_sink {
  void *ctx;
  vigil_status(VIGIL_CALL *push)(void *ctx, const char *utf8, size_t len);
} vigil_str_sink;

typedef struct vigil_i64_sink {
  void *ctx;
  vigil_status(VIGIL_CALL *push)(void *ctx, const int64_t *values, size_t count);
} vigil_i64_sink;

/* ABI 1.1: receives saved reductions (reduction id, abs, value as a double). */
typedef struct vigil_reduction_sink {
  void *ctx;
  vigil_status(VIGIL_CALL *push)(void *ctx, vigil_reduction reduction, bool abs, double value);
} vigil_reduction_sink;

/* ABI 1.5: one tensor's reduction on one worker at a step, as step_reductions (host.h) pushes it.
 * The strings are the callee's, valid only during the push() that receives them. */
typedef struct vigil_reduction_result {
  uint32_t struct_size;
  const char *name;    /* the tensor */
  const char *worker;  /* the worker that saved it; VIGIL_WORKER_WHOLE for a sharded tensor (host.h) */
  vigil_status status; /* VIGIL_OK: value holds the reduction; else why this one has none (see step_reductions) */
  double value;
} vigil_reduction_result;

/* ABI 1.5: receives step_reductions' results, several at a time, in order. */
typedef struct vigil_reduction_result_sink {
  void *ctx;
  vigil_status(VIGIL_CALL *push)(void *ctx, const vigil_reduction_result *results, size_t count);
} vigil_reduction_result_sink;

VIGIL_EXTERN_C_END

#endif /* VIGIL_TENSOR_H */
