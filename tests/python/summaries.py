"""Value summaries with the conventions of the fixtures' expected.json (see its `conventions`), and
reference reductions / tolerances for Vigil's deliberate differences from smdebug."""
import hashlib
import math

import numpy as np


def json_number(v):
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def as_float(j):
    if isinstance(j, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[j]
    return float(j)


def summarize(value):
    a = np.asarray(value)
    s = {"dtype": "str" if a.dtype.kind == "U" else a.dtype.name, "dtype_str": a.dtype.str,
         "shape": list(a.shape), "size": int(a.size)}
    if a.dtype.kind == "U":
        h = hashlib.sha256()
        for x in a.ravel(order="C").tolist():
            h.update(x.encode("utf-8") + b"\0")
        s["sha256"] = h.hexdigest()
    else:
        s["sha256"] = hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
    kind = a.dtype.kind
    if kind == "f" and a.size:
        f = a.astype(np.float64)
        s.update(sum=json_number(f.sum()), min=json_number(f.min()), max=json_number(f.max()),
                 mean=json_number(f.mean()), mean_abs=json_number(np.abs(f).mean()), n_nan=int(np.isnan(f).sum()),
                 n_posinf=int(np.isposinf(f).sum()), n_neginf=int(np.isneginf(f).sum()))
    elif kind in "iu" and a.size:
        s.update(sum=int(a.astype(np.int64 if kind == "i" else np.uint64).sum()), min=int(a.min()), max=int(a.max()),
                 mean=float(a.astype(np.float64).mean()))
    elif kind == "b":
        s["n_true"] = int(a.sum())
    if a.size <= 16:
        vals = a.ravel(order="C").tolist()
        s["values"] = [json_number(v) if isinstance(v, float) else v for v in vals]
    return s


def _scalar_equal(e, a):
    if isinstance(e, bool) or isinstance(a, bool):
        return e is a or (isinstance(e, bool) and isinstance(a, bool) and e == a)
    if isinstance(e, str) or isinstance(a, str):
        return e == a
    if isinstance(e, int) != isinstance(a, int):
        return False
    return e == a


def close(expected, actual, tol):
    e, a = as_float(expected), as_float(actual)
    if math.isnan(e) or math.isnan(a):
        return math.isnan(e) and math.isnan(a)
    if math.isinf(e) or math.isinf(a):
        return e == a
    return abs(e - a) <= tol


def compare_summary(expected, actual):
    """A list of mismatch descriptions (empty when equal under the fixture's conventions)."""
    problems = []
    if set(expected) != set(actual):
        problems.append("keys: expected %s, got %s" % (sorted(expected), sorted(actual)))
    scale = 0.0
    for k in ("min", "max"):
        if k in expected and not isinstance(expected[k], str) and math.isfinite(float(expected[k])):
            scale = max(scale, abs(float(expected[k])))
    int_dtype = expected.get("dtype", "").startswith(("int", "uint"))
    size = expected.get("size", 1)
    for k, e in expected.items():
        if k not in actual:
            continue
        a = actual[k]
        if k == "values":
            if len(e) != len(a) or not all(_scalar_equal(x, y) for x, y in zip(e, a)):
                problems.append("values: expected %s, got %s" % (e, a))
        elif k in ("sum", "mean", "mean_abs") and not (k == "sum" and int_dtype):
            tol = 1e-6 * abs(as_float(e)) if not isinstance(e, str) else 0
            tol += 1e-12 * (size if k == "sum" else 1) * scale + 1e-300
            if isinstance(e, str) != isinstance(a, str) or not close(e, a, tol):
                problems.append("%s: expected %r, got %r" % (k, e, a))
        elif isinstance(e, list):
            if len(e) != len(a) or not all(_scalar_equal(x, y) for x, y in zip(e, a)):
                problems.append("%s: expected %s, got %s" % (k, e, a))
        elif not _scalar_equal(e, a):
            problems.append("%s: expected %r, got %r" % (k, e, a))
    return problems


def reference_reduction(value, op, abs_):
    """numpy's reduction on a correctly decoded value with numpy's result dtype, computed exactly
    (float64) for float inputs and then rounded, with l1/l2 element-wise at every rank (Vigil's
    documented choices)."""
    x = np.asarray(value)
    if abs_:
        x = np.absolute(x)
    if op in ("min", "max"):
        return np.min(x) if op == "min" else np.max(x)
    if x.dtype.kind == "f":
        f = x.astype(np.float64).ravel()
        exact = {"mean": lambda: f.mean(), "std": lambda: f.std(), "variance": lambda: f.var(),
                 "sum": lambda: f.sum(), "prod": lambda: np.prod(f), "l1": lambda: np.abs(f).sum(),
                 "l2": lambda: np.sqrt((f * f).sum())}[op]()
        with np.errstate(over="ignore"):
            return x.dtype.type(exact)
    if op == "mean":
        return np.mean(x)
    if op == "std":
        return np.std(x)
    if op == "variance":
        return np.var(x)
    if op == "sum":
        return np.sum(x)
    if op == "prod":
        return np.prod(x)
    if op == "l1":
        return np.linalg.norm(x.ravel(), ord=1)
    if op == "l2":
        return np.linalg.norm(x.ravel())
    raise ValueError(op)


def reduction_tolerance(op, dtype, expected, value):
    """Tolerance for a float reduction of dtype `dtype` (numpy computes in the tensor's precision,
    Vigil may accumulate more precisely); 0 for integer and bool results and for min/max."""
    if dtype not in ("float16", "float32", "float64"):
        return 0.0
    x = np.asarray(value).astype(np.float64).ravel() if value is not None else np.zeros(1)
    n = max(float(x.size), 1.0)
    sum_abs = float(np.abs(x).sum()) if x.size else 0.0
    mean_sq = float((x * x).mean()) if x.size else 0.0
    if dtype == "float16":
        eps, rel, denorm, tiny = 2.0 ** -10, 1e-2, 2.0 ** -24, 2.0 ** -14
    elif dtype == "float32":
        eps, rel, denorm, tiny = 2.0 ** -23, 1e-5, float(np.finfo(np.float32).smallest_subnormal), \
            float(np.finfo(np.float32).tiny)
    else:
        eps, rel, denorm, tiny = 2.0 ** -52, 1e-9, 5e-324, float(np.finfo(np.float64).tiny)
    e = abs(as_float(expected))
    if not math.isfinite(e):
        return 0.0
    if op in ("min", "max"):
        return 0.0
    if op == "sum":
        return rel * e + 8 * eps * sum_abs + tiny
    if op == "mean":
        return rel * e + 8 * eps * sum_abs / n + tiny
    if op == "prod":
        return (rel + 2 * n * eps) * e + tiny
    if op == "l1":
        return (rel + 8 * eps) * e + tiny
    var_abs = 32 * eps * mean_sq + 16 * denorm
    if op == "variance":
        return rel * e + var_abs + denorm
    if op == "std":
        return rel * e + (min(math.sqrt(var_abs), var_abs / e) if e > 0 else math.sqrt(var_abs)) + denorm
    if op == "l2":
        sq_abs = 4 * n * denorm
        return (rel + 8 * eps) * e + (min(math.sqrt(sq_abs), sq_abs / e) if e > 0 else math.sqrt(sq_abs)) + denorm
    return rel * e
