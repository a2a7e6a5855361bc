"""smdebug's read API (``smdebug.trials``): ``create_trial``, ``Trial`` and ``Tensor``.

A ``Trial`` is a thin Python layer over a C++ core that does the work with the GIL released:
  * ``_vigil.TrialCore`` reads a trial directory with Vigil's host (``create_trial``);
  * ``_vigil.ApiTrialCore`` calls back into a running host through the plugin ABI's
    ``vigil_host_api`` table (how Python rules see their trials inside ``vigil evaluate``).
Both offer the same primitive methods, so ``Trial`` and ``Tensor`` behave the same over either.
"""
import bisect
import contextlib
import os
import re
from enum import Enum

from . import _vigil
from .exceptions import SMDebugNotImplementedError, TensorUnavailable
from .modes import ModeKeys, to_mode


class StepState(Enum):
    UNAVAILABLE = 0
    AVAILABLE = 1
    NOT_YET_AVAILABLE = 2


def _flatten_regex(regex):
    """smdebug accepts a str or a (possibly nested) list of str."""
    if regex is None:
        return None
    if isinstance(regex, str):
        return [regex]
    out = []
    for item in regex:
        flat = _flatten_regex(item)
        if flat:
            out.extend(flat)
    return out


def _mode_arg(mode):
    return int(to_mode(mode))


class ReductionConfig:
    """The reduction configuration of a collection (smdebug's ReductionConfig fields)."""

    def __init__(self, reductions=None, abs_reductions=None, norms=None, abs_norms=None, save_raw_tensor=True,
                 save_shape=False):
        self.reductions = list(reductions or [])
        self.abs_reductions = list(abs_reductions or [])
        self.norms = list(norms or [])
        self.abs_norms = list(abs_norms or [])
        self.save_raw_tensor = save_raw_tensor
        self.save_shape = save_shape

    def __repr__(self):
        return ("<ReductionConfig reductions={} abs_reductions={} norms={} abs_norms={} save_raw_tensor={} "
                "save_shape={}>".format(self.reductions, self.abs_reductions, self.norms, self.abs_norms,
                                        self.save_raw_tensor, self.save_shape))


class SaveConfigMode:
    def __init__(self, save_interval=500, start_step=0, end_step=None, save_steps=None):
        self.save_interval = save_interval
        self.start_step = start_step
        self.end_step = end_step
        self.save_steps = list(save_steps or [])

    def __repr__(self):
        return "<SaveConfigMode save_interval={} start_step={} end_step={} save_steps={}>".format(
            self.save_interval, self.start_step, self.end_step, self.save_steps)


class Collection:
    """A collection as the trial's collection file describes it (smdebug's Collection fields)."""

    def __init__(self, name, include_regex=None, tensor_names=None, reduction_config=None, save_config=None,
                 save_histogram=True):
        self.name = name
        self.include_regex = list(include_regex or [])
        self.tensor_names = set(tensor_names or [])
        self.reduction_config = reduction_config
        self.save_config = save_config  # {ModeKeys: SaveConfigMode} or None
        self.save_histogram = save_histogram

    @classmethod
    def _from_core(cls, d):
        rc = d.get("reduction_config")
        if rc is not None:
            kinds = {"reductions": [], "abs_reductions": [], "norms": [], "abs_norms": []}
            for op, is_abs in rc["reductions"]:
                norm = op in ("l1", "l2")
                kinds[("abs_" if is_abs else "") + ("norms" if norm else "reductions")].append(op)
            rc = ReductionConfig(save_raw_tensor=rc["save_raw_tensor"], save_shape=rc["save_shape"], **kinds)
        sc = d.get("save_config")
        if sc is not None:
            sc = {ModeKeys(m): SaveConfigMode(**v) for m, v in sc.items() if v is not None}
        return cls(d["name"], d.get("include_regex"), d.get("tensor_names"), rc, sc, d.get("save_histogram", True))

    def __repr__(self):
        return "<Collection {} include_regex={} tensor_names={}>".format(
            self.name, self.include_regex, sorted(self.tensor_names))


class Tensor:
    """One tensor of a trial (smdebug's Tensor). Steps are global steps in GLOBAL mode, else mode steps."""

    def __init__(self, name, trial):
        self._name = name
        self.trial = trial
        self._core = trial._core

    @property
    def name(self):
        return self._name

    def __repr__(self):
        return "<vigil Tensor {!r}>".format(self._name)

    def steps(self, mode=ModeKeys.GLOBAL, show_incomplete_steps=False):
        return self._core.tensor_steps(self._name, _mode_arg(mode), bool(show_incomplete_steps))

    def value(self, step_num, mode=ModeKeys.GLOBAL, worker=None):
        """A read-only numpy array (zero-copy over the host's buffer where the core allows)."""
        return self._core.value(self._name, int(step_num), _mode_arg(mode), worker)

    def buffer(self, step_num, mode=ModeKeys.GLOBAL, worker=None):
        """The host buffer behind value(): supports __dlpack__, __dlpack_device__, __array__."""
        return self._core.buffer(self._name, int(step_num), _mode_arg(mode), worker)

    def reduction_value(self, step_num, reduction_name, mode=ModeKeys.GLOBAL, worker=None, abs=False):
        return self._core.reduction_value(self._name, int(step_num), str(reduction_name), bool(abs), _mode_arg(mode),
                                          worker)

    def reduction_values(self, step_num, mode=ModeKeys.GLOBAL, worker=None):
        """{(reduction_name, abs): value} for the reductions saved at the step (none computed)."""
        return {(op, is_abs): v for op, is_abs, v in
                self._core.reduction_values(self._name, int(step_num), _mode_arg(mode), worker)}

    def shape(self, step_num, mode=ModeKeys.GLOBAL, worker=None):
        return tuple(self._core.shape(self._name, int(step_num), _mode_arg(mode), worker))

    def values(self, mode=ModeKeys.GLOBAL, worker=None):
        return {s: self.value(s, mode=mode, worker=worker) for s in self.steps(mode=mode)}

    def workers(self, step_num, mode=ModeKeys.GLOBAL):
        return self._core.tensor_workers(self._name, int(step_num), _mode_arg(mode))

    def prev_steps(self, step, n=None, mode=ModeKeys.GLOBAL):
        steps = self.steps(mode=mode)
        i = bisect.bisect_right(steps, step)
        prev = steps[:i]
        return prev if n is None else prev[-n:] if n > 0 else []

    def step(self, step_num, mode=ModeKeys.GLOBAL, worker=None):
        raise SMDebugNotImplementedError("Tensor.step is not implemented")


class Trial:
    """A trial (smdebug's Trial API). Create one with ``create_trial(path)``."""

    def __init__(self, core, name=None):
        self._core = core
        self.name = name if name is not None else os.path.basename(os.path.normpath(core.path)) if core.path else ""
        self._collections = None
        self._tensors = {}

    def __repr__(self):
        return "<vigil Trial {!r} at {!r}>".format(self.name, self.path)

    @property
    def path(self):
        return self._core.path

    # ---- state ----
    @property
    def last_complete_step(self):
        return self._core.last_complete_step()

    @property
    def loaded_all_steps(self):
        return self._core.loaded_all_steps()

    @property
    def num_workers(self):
        return self._core.num_workers()

    @property
    def training_ended(self):
        return self._core.training_ended()

    def refresh(self):
        """Look for new steps and the end-of-training marker now."""
        self._core.refresh()

    maybe_refresh = refresh

    # ---- tensors ----
    def tensor_names(self, *, step=None, mode=ModeKeys.GLOBAL, regex=None, collection=None):
        regex = _flatten_regex(regex)
        if collection is not None and not isinstance(collection, str):
            collection = collection.name
        return self._core.tensor_names(None if step is None else int(step), _mode_arg(mode), regex, collection)

    def tensor(self, tname):
        t = self._tensors.get(tname)
        if t is None:
            if not self._core.has_tensor(tname):
                raise TensorUnavailable(tname)
            t = self._tensors[tname] = Tensor(tname, self)
        return t

    def has_tensor(self, tname):
        return self._core.has_tensor(tname)

    # ---- steps and modes ----
    def steps(self, mode=ModeKeys.GLOBAL, show_incomplete_steps=False):
        return self._core.steps(_mode_arg(mode), bool(show_incomplete_steps))

    def modes(self):
        return [ModeKeys(m) for m in self._core.modes()]

    def mode_modestep(self, global_step):
        r = self._core.mode_modestep(int(global_step))
        if r is None:
            return None, None
        return ModeKeys(r[0]), r[1]

    def mode(self, global_step):
        return self.mode_modestep(global_step)[0]

    def mode_step(self, global_step):
        return self.mode_modestep(global_step)[1]

    def global_step(self, mode, mode_step):
        return self._core.global_step(_mode_arg(mode), int(mode_step))

    def workers(self):
        return self._core.workers()

    def has_passed_step(self, step, mode=ModeKeys.GLOBAL):
        return StepState(self._core.has_passed_step(int(step), _mode_arg(mode)))

    def wait_for_steps(self, required_steps, mode=ModeKeys.GLOBAL):
        self._core.wait_for_steps([int(s) for s in required_steps], _mode_arg(mode))

    # ---- collections ----
    def collections(self):
        if self._collections is None:
            self._collections = {d["name"]: Collection._from_core(d) for d in self._core.collections()}
        return self._collections

    def collection(self, coll_name):
        """smdebug quirk kept: an unknown name gives a new, empty collection."""
        colls = self.collections()
        if coll_name not in colls:
            colls[coll_name] = Collection(coll_name)
        return colls[coll_name]

    # ---- smdebug helpers over collections / regexes ----
    def _sorted_by_suffix(self, names):
        def key(n):
            m = re.search(r"_(\d+)$", n)
            return (int(m.group(1)) if m else -1, n)
        return sorted(names, key=key)

    def inputs(self, step, mode=ModeKeys.GLOBAL):
        names = self.tensor_names(step=step, mode=mode, collection="inputs")
        return [self.tensor(n).value(step, mode=mode) for n in self._sorted_by_suffix(names)]

    def labels(self, step, mode=ModeKeys.GLOBAL):
        names = self.tensor_names(step=step, mode=mode, regex="labels*")
        return [self.tensor(n).value(step, mode=mode) for n in self._sorted_by_suffix(names)]

    def predictions(self, step, mode=ModeKeys.GLOBAL):
        names = self.tensor_names(step=step, mode=mode, regex="predictions*")
        return [self.tensor(n).value(step, mode=mode) for n in self._sorted_by_suffix(names)]

    # ---- smdebug's no_refresh ----
    def _hold_refresh(self):
        self._core.hold_refresh()

    def _release_refresh(self):
        self._core.release_refresh()


def _as_list(trials):
    if trials is None:
        return []
    if isinstance(trials, (list, tuple, set)):
        return list(trials)
    return [trials]


@contextlib.contextmanager
def no_refresh(trials):
    """smdebug's no_refresh: inside the block the trials show a frozen index. Unlike smdebug, the
    previous state comes back even when the block raises."""
    held = []
    try:
        for t in _as_list(trials):
            t._hold_refresh()
            held.append(t)
        yield
    finally:
        for t in reversed(held):
            t._release_refresh()


@contextlib.contextmanager
def refresh(trials):
    """smdebug's refresh: refresh now, then run the block (Vigil refreshes on every query anyway)."""
    for t in _as_list(trials):
        t.refresh()
    yield


def create_trial(path, name=None, profiler=False, output_dir=None, **kwargs):
    """Opens a trial directory (smdebug's create_trial). Keywords: ``range_steps=(begin, end)``
    (global steps, end exclusive, either may be None); ``cache`` and ``index_mode``, ``check`` and
    ``parallel`` are accepted and ignored (Vigil streams values and always indexes)."""
    if profiler:
        raise SMDebugNotImplementedError("Vigil reads debugger trials only (profiler=True is not supported)")
    path = str(path).strip()
    if path.startswith("s3://"):
        raise SMDebugNotImplementedError("Vigil reads local trials only: " + path)
    if path.startswith("file://"):
        path = path[len("file://"):]
    path = os.path.expanduser(path)
    begin = end = None
    range_steps = kwargs.pop("range_steps", None)
    if range_steps is not None:
        begin, end = range_steps
        assert begin is None or (isinstance(begin, int) and begin >= 0), "range_steps begin must be None or >= 0"
        assert end is None or (isinstance(end, int) and end >= 0), "range_steps end must be None or >= 0"
        assert begin is None or end is None or end > begin, "range_steps end must be > begin"
    for ignored in ("cache", "index_mode", "check", "parallel"):
        kwargs.pop(ignored, None)
    if kwargs:
        raise TypeError("create_trial() got unexpected keyword arguments: {}".format(", ".join(sorted(kwargs))))
    core = _vigil.open_trial(path, begin, end)
    return Trial(core, name=name if name is not None else os.path.basename(os.path.normpath(path)))


LocalTrial = Trial

__all__ = ["create_trial", "Trial", "LocalTrial", "Tensor", "Collection", "ReductionConfig", "SaveConfigMode",
           "StepState", "no_refresh", "refresh"]
