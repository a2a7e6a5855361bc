"""The real smdebug reads every trial the tests capture through Vigil's hooks and writer (issue 26,
item 4), and must give Vigil's answers: tensor names (per mode and step), steps per mode, the mode
and mode step of every global step, workers, collections, and every value, shape and saved reduction
bit for bit (dtype, shape and bytes).

`describe()` turns one trial into plain JSON through smdebug's read API, which Vigil's mirrors, so
the same code describes a trial opened by either reader. smdebug 1.0.34 runs in its own interpreter
(conftest's `smdebug_python`) as one long-lived process (this file run with --serve), started at the
first check and asked once per check, so a test costs the reading of its trials and not smdebug's
start-up; Vigil reads the same folders in this process.

Use: import the fixture `real_readers_agree` into a test module and name it in `pytestmark` (or on
single tests); after each test it checks every trial folder under the test's tmp_path. Trials made
in other places (module-scoped folders) are checked with `check_trials(find_trials(root), python)`.
Where smdebug is known to answer differently, `_documented()` accepts exactly that difference and
names the line of docs/compatibility.md that records it; anything else fails with a readable diff.
"""
import atexit
import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

MODE_NAMES = ("TRAIN", "EVAL", "PREDICT", "GLOBAL")
# smdebug would poll for files it is missing (collection files, an event file named by an index):
# past this many sleeps in one trial, the answer is "it waits" (its sleeps are skipped, not slept).
MAX_SLEEPS = 200
VIGIL_OPEN_TIMEOUT_S = 3

# ---- describing a trial (runs under both readers) ---------------------------------------------------


def _error(e):
    return {"error": type(e).__name__}


def _array(v):
    """dtype, shape and content of a value: the bytes themselves when short, else their sha256."""
    import numpy as np

    a = np.asarray(v)
    out = {"dtype": a.dtype.str, "shape": list(a.shape)}
    if a.dtype.kind in "OUS":
        out["strings"] = [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in a.ravel().tolist()]
        return out
    raw = np.ascontiguousarray(a).tobytes()
    out["bytes"] = ("b64:" + base64.b64encode(raw).decode()) if len(raw) <= 48 else \
        "sha256:{}:{}".format(len(raw), hashlib.sha256(raw).hexdigest())
    return out


def _call(f, encode=lambda x: x):
    try:
        return encode(f())
    except Exception as e:  # the exception class is part of the answer
        return _error(e)


def _sorted_names(names):
    return sorted(str(n) for n in names)


def describe(trial, ModeKeys):
    """The answers of `trial` (an smdebug or a Vigil Trial; ModeKeys the enum of its package)."""
    modes = {name: getattr(ModeKeys, name) for name in MODE_NAMES}
    d = {}
    d["loaded_all_steps"] = bool(trial.loaded_all_steps)
    d["last_complete_step"] = trial.last_complete_step
    d["num_workers"] = trial.num_workers
    d["workers"] = _call(lambda: _sorted_names(trial.workers()))
    d["modes"] = sorted(m.name for m in trial.modes())
    d["steps"] = {m: _call(lambda: list(trial.steps(mode=modes[m]))) for m in MODE_NAMES}
    d["steps_with_incomplete"] = {m: _call(lambda: list(trial.steps(mode=modes[m], show_incomplete_steps=True)))
                                  for m in MODE_NAMES}
    global_steps = trial.steps(mode=ModeKeys.GLOBAL, show_incomplete_steps=True)

    def mode_modestep(g):
        mode, mode_step = trial.mode_modestep(g)
        return [mode.name if mode is not None else None, mode_step]

    d["mode_modestep"] = {str(g): _call(lambda: mode_modestep(g)) for g in global_steps}
    d["tensor_names"] = _call(lambda: _sorted_names(trial.tensor_names()))
    # Per mode only for the modes the trial has: smdebug raises a raw KeyError for a mode never seen
    # (docs/compatibility.md, "Trial queries": `tensor_names(mode=M)` for a mode never seen).
    d["tensor_names_by_mode"] = {m.name: _call(lambda: _sorted_names(trial.tensor_names(mode=m)))
                                 for m in trial.modes()}
    d["tensor_names_by_step"] = {}
    for m in list(trial.modes()) + [ModeKeys.GLOBAL]:
        for s in trial.steps(mode=m, show_incomplete_steps=True):
            d["tensor_names_by_step"]["{}:{}".format(m.name, s)] = _call(
                lambda: _sorted_names(trial.tensor_names(step=s, mode=m)))
    collections = {}
    for name, c in sorted(trial.collections().items()):
        cd = c.to_json_dict()
        cd["tensor_names"] = sorted(cd["tensor_names"] or [])
        cd["in_trial"] = _call(lambda: _sorted_names(trial.tensor_names(collection=name)))
        collections[name] = cd
    d["collections"] = collections
    tensors = {}
    for name in (d["tensor_names"] if isinstance(d["tensor_names"], list) else []):
        t = trial.tensor(name)
        td = {"steps": {m: _call(lambda: list(t.steps(mode=modes[m]))) for m in MODE_NAMES}}
        at = {}
        for g in t.steps(mode=ModeKeys.GLOBAL, show_incomplete_steps=True):
            workers = _call(lambda: _sorted_names(t.workers(g)))
            per_worker = {"workers": workers}
            for w in workers if isinstance(workers, list) else []:
                per_worker[w] = {
                    "value": _call(lambda: t.value(g, worker=w), _array),
                    "shape": _call(lambda: [int(x) for x in t.shape(g, worker=w)]),
                    "reductions": _call(lambda: {("abs_" if is_abs else "") + op: _array(v)
                                                 for (op, is_abs), v in t.reduction_values(g, worker=w).items()}),
                }
            at[str(g)] = per_worker
        td["at"] = at
        tensors[name] = td
    d["tensors"] = tensors
    d["loaded_all_steps_at_the_end"] = bool(trial.loaded_all_steps)  # after every query's refresh
    return json.loads(json.dumps(d))  # tuples as lists, as they come back from the other process


class _WouldWait(Exception):
    """The reader would wait (for files a live training job has still to write)."""


def describe_path(path, create_trial, ModeKeys):
    try:
        trial = create_trial(path)
    except _WouldWait:
        return {"open": {"error": "waits"}}
    except Exception as e:
        return {"open": _error(e)}
    return {"open": "ok", "trial": _call(lambda: describe(trial, ModeKeys))}


# ---- the smdebug side: a long-lived process in smdebug's interpreter ----------------------------------


def _serve():
    """Reads one JSON request a line ({"paths": [...], "out": file}) and answers "done" when `out`
    holds {path: description}. smdebug logs on stdout: the protocol keeps the original stdout."""
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    # smdebug's default waits 1 s after seeing the end marker (docs/compatibility.md, "Trial queries":
    # `SMDEBUG_TRAINING_END_DELAY_REFRESH`); the wait changes no answer.
    os.environ["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    from smdebug.core.modes import ModeKeys
    from smdebug.trials import create_trial

    sleeps = [0]

    def counted_sleep(_seconds):
        sleeps[0] += 1
        if sleeps[0] > MAX_SLEEPS:
            raise _WouldWait()

    time.sleep = counted_sleep  # smdebug polls with time.sleep; nothing else runs in this process
    for line in sys.stdin:
        request = json.loads(line)
        answers = {}
        for path in request["paths"]:
            sleeps[0] = 0
            answers[path] = describe_path(path, create_trial, ModeKeys)
        with open(request["out"], "w") as f:
            json.dump(answers, f)
        proto.write("done\n")
        proto.flush()


class _SmdebugReader:
    """The --serve process, started on first use, restarted if it died."""

    def __init__(self):
        self.proc = None
        self.log = None
        self.lock = threading.Lock()

    def _log_tail(self):
        try:
            with open(self.log.name, errors="replace") as f:
                return f.read()[-3000:]
        except (OSError, AttributeError):
            return ""

    def describe(self, paths, python, timeout=600):
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                env = dict(os.environ)
                env.pop("PYTHONPATH", None)  # smdebug's own packages only, not Vigil's build
                env["SMDEBUG_LOG_LEVEL"] = "error"  # its warnings ("No tensors from the collection") are noise here
                self.log = tempfile.NamedTemporaryFile("w", prefix="smdebug-reader-", suffix=".log", delete=False)
                self.proc = subprocess.Popen([python, os.path.abspath(__file__), "--serve"], env=env,
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                             text=True)
            with tempfile.NamedTemporaryFile("r", suffix=".json", prefix="smdebug-answers-") as out:
                self.proc.stdin.write(json.dumps({"paths": paths, "out": out.name}) + "\n")
                self.proc.stdin.flush()
                done = []
                reader = threading.Thread(target=lambda: done.append(self.proc.stdout.readline()), daemon=True)
                reader.start()
                reader.join(timeout)
                if not done or done[0].strip() != "done":
                    self.proc.kill()
                    self.proc = None
                    raise AssertionError("smdebug's reader died or hung reading {}:\n{}".format(
                        paths, self._log_tail()))
                return json.load(out)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.log is not None:
            self.log.close()
            os.unlink(self.log.name)


_SMDEBUG = _SmdebugReader()
atexit.register(_SMDEBUG.close)


# ---- the Vigil side, and the comparison -----------------------------------------------------------------


def _vigil_describe(path):
    import vigil
    from vigil.modes import ModeKeys

    # Vigil waits for missing collection files as smdebug does (interruptibly): a bounded wait here
    # stands for smdebug's polling.
    def alarm(*_):
        raise _WouldWait()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, VIGIL_OPEN_TIMEOUT_S)
    try:
        trial = vigil.create_trial(path)
    except _WouldWait:
        return {"open": {"error": "waits"}}
    except Exception as e:
        return {"open": _error(e)}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return {"open": "ok", "trial": _call(lambda: describe(trial, ModeKeys))}


def find_trials(root):
    """Every trial folder under root: one holding index/ or events/ (smdebug-format §1.1)."""
    found = []
    for folder, dirs, _ in os.walk(str(root)):
        if "index" in dirs or "events" in dirs:
            found.append(folder)
            dirs[:] = []  # a trial's own folders hold no trial
        else:
            dirs.sort()
    return sorted(found)


def _index_entry_kinds(trial_path, step, worker, name):
    """Which payloads of step's index file (of `worker`) name `name`: {"tensor", "shape"} or a part."""
    path = os.path.join(trial_path, "index", "%09d" % (step // 1000), "%012d_%s.json" % (step, worker))
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return set()
    kinds = set()
    if any(e.get("tensorname") == name for e in doc.get("tensor_payload", [])):
        kinds.add("tensor")
    if any(e.get("tensorname") == name for e in doc.get("shape_payload", [])):
        kinds.add("shape")
    return kinds


# DataTypes smdebug's reader has no numpy type for (docs/compatibility.md, "Values": "DT_INT16,
# DT_UINT16/32/64, DT_COMPLEX64, DT_BFLOAT16 raise KeyError"); Vigil decodes them.
_SMDEBUG_UNKNOWN_DTYPES = {"<i2", "<u2", "<u4", "<u8", "<c8", "<V2", "bfloat16"}
# The same for the float8 DataTypes (24, 25) Vigil writes for torch's float8 tensors.
_SMDEBUG_UNKNOWN_FLOAT8 = {"float8_e4m3fn", "float8_e5m2"}


def _stored_dtype(trial_path, name, step, worker, answered):
    """The element type Vigil decoded: value() answers bfloat16 and float8 as float32 (exact), its
    buffer() names the type the event file holds."""
    if answered != "<f4":
        return answered
    import vigil
    try:
        return vigil.create_trial(trial_path).tensor(name).buffer(step, worker=worker).dtype
    except Exception:  # noqa: BLE001 - no buffer: the answer stands
        return answered


def _at(tree, keys):
    for k in keys:
        if not isinstance(tree, dict) or k not in tree:
            return None
        tree = tree[k]
    return tree


def _documented(where, vigil_answer, smdebug_answer, vigil_tree, trial_path):
    """The line of docs/compatibility.md that records this difference, or None."""
    keys = where.split("/")
    # tensors/<name>/at/<step>/<worker>/<what>, where a name may hold slashes ("gradient/fc.weight").
    if not (len(keys) >= 6 and keys[0] == "tensors" and keys[-4] == "at"):
        return None
    name, step, worker, what = "/".join(keys[1:-4]), int(keys[-3]), keys[-2], keys[-1]
    value = _at(vigil_tree, ["tensors", name, "at", keys[-3], worker, "value"])
    if not isinstance(value, dict) or "dtype" not in value:
        return None
    v, s = vigil_answer, smdebug_answer
    if what == "value" and isinstance(s, dict):
        # "Values": "DT_INT8 is read back as uint8": the same bytes under the unsigned type.
        if v["dtype"] == "|i1" and s.get("dtype") == "|u1" and dict(v, dtype="|u1") == s:
            return "compatibility.md, Values: DT_INT8 is read back as uint8"
        # "Values": "a step that saved both the value and the shape of a tensor keeps only the
        # shape" (smdebug-format §3.11), only where this step's index names the tensor in both.
        if s == {"error": "TensorUnavailableForStep"} and \
                _index_entry_kinds(trial_path, step, worker, name) == {"tensor", "shape"}:
            return "compatibility.md, Values: a step that saved both the value and the shape keeps only the shape"
    # "Values": "DT_INT16, DT_UINT16/32/64, DT_COMPLEX64, DT_BFLOAT16 raise KeyError"; smdebug's
    # shape() reads the value when no shape was saved, so it raises the same KeyError.
    if what in ("value", "shape") and s == {"error": "KeyError"}:
        stored = _stored_dtype(trial_path, name, step, worker, value["dtype"])
        if stored in _SMDEBUG_UNKNOWN_DTYPES:
            return "compatibility.md, Values: DT_INT16, DT_UINT16/32/64, DT_COMPLEX64, DT_BFLOAT16 raise KeyError"
        if stored in _SMDEBUG_UNKNOWN_FLOAT8:
            return "compatibility.md, Values: DT_FLOAT8_E5M2 and DT_FLOAT8_E4M3FN raise KeyError like DT_BFLOAT16"
    return None


def _leaf(x):
    """A value or an error: compared whole."""
    return isinstance(x, dict) and ("dtype" in x or "error" in x)


def _diff(a, b, where=""):
    """[(path, a's answer, b's answer)] where the two JSON answers differ."""
    if isinstance(a, dict) and isinstance(b, dict) and not _leaf(a) and not _leaf(b):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            p = "{}/{}".format(where, k) if where else str(k)
            if k not in a:
                out.append((p, "<absent>", b[k]))
            elif k not in b:
                out.append((p, a[k], "<absent>"))
            else:
                out.extend(_diff(a[k], b[k], p))
        return out
    return [] if a == b else [(where, a, b)]


def _short(x, n=200):
    s = json.dumps(x) if not isinstance(x, str) else x
    return s if len(s) <= n else s[:n] + "..."


def compare(path, vigil_answer, smdebug_answer):
    """The differences between the two readers' answers that no document accounts for, as text."""
    problems, accepted = [], []
    for where, v, s in _diff(vigil_answer, smdebug_answer):
        rel = where[len("trial/"):] if where.startswith("trial/") else where
        reason = _documented(rel, v, s, vigil_answer.get("trial"), path)
        if reason:
            accepted.append((rel, reason))
        else:
            problems.append("  {}:\n    Vigil:   {}\n    smdebug: {}".format(rel, _short(v), _short(s)))
    return problems, accepted


# Every documented difference accepted so far, with its reason (for whoever debugs a check).
ACCEPTED = []


def check_trials(paths, smdebug_python):
    """Asserts that smdebug 1.0.34 and Vigil give the same answers for every trial of `paths`."""
    paths = [os.path.abspath(str(p)) for p in paths]
    if not paths:
        return
    theirs = _SMDEBUG.describe(paths, smdebug_python)
    failures = []
    for path in paths:
        ours = _vigil_describe(path)
        for who, answer in (("Vigil", ours), ("smdebug", theirs[path])):
            # describe() answers each query, errors included: its own failure would make the two
            # readers agree on nothing but the failure.
            assert not (isinstance(answer.get("trial"), dict) and "error" in answer["trial"]), \
                "describing {} with {} failed: {}".format(path, who, answer["trial"])
        problems, accepted = compare(path, ours, theirs[path])
        ACCEPTED.extend((path, where, reason) for where, reason in accepted)
        if problems:
            shown = problems[:30] + (["  ... {} more".format(len(problems) - 30)] if len(problems) > 30 else [])
            failures.append("{}: {} difference(s) between Vigil and smdebug 1.0.34:\n{}".format(
                path, len(problems), "\n".join(shown)))
    assert not failures, "\n".join(failures)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        _serve()
    else:
        sys.exit("usage: real_readers.py --serve (run by the tests, in smdebug's interpreter)")
else:
    import pytest

    @pytest.fixture
    def real_readers_agree(tmp_path, smdebug_python):
        """After the test: smdebug 1.0.34 and Vigil read every trial under tmp_path alike."""
        yield
        check_trials(find_trials(tmp_path), smdebug_python)
