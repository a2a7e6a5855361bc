"""smdebug's read API (``smdebug.trials``): ``create_trial``, ``Trial`` and ``Tensor``.

A ``Trial`` is a thin Python layer over a C++ core that does the work with the GIL released:
  * ``_vigil.TrialCore`` reads a trial directory with Vigil's host (``create_trial``);
  * ``_vigil.ApiTrialCore`` calls back into a running host through the plugin ABI's
    ``vigil_host_api`` table (how Python rules see their trials inside ``vigil evaluate``).
Both offer the same primitive methods, so ``Trial`` and ``Tensor`` behave the same over either.
"""
from __future__ import annotations

import bisect
import contextlib
import os
import re
from abc import ABC, abstractmethod
from enum import Enum
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union, overload

import numpy as np

from . import _vigil
from .collection import Collection, CollectionKeys, CollectionManager, match_inc
from .exceptions import SMDebugNotImplementedError, SMDebugValueError, TensorUnavailable
from .locations import IndexFileLocationUtils, flatten, get_logger, is_s3, serialize_tf_device
from .modes import ModeKeys, to_mode
from .reduction_config import ReductionConfig
from .save_config import SaveConfig, SaveConfigMode

if TYPE_CHECKING:
    from typing import Literal

    from .profiler import ProfilerTrial

# A mode as the read API takes it: a ModeKeys, its number or its name.
Mode = Union[ModeKeys, int, str]


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
    return [r for r in flatten(list(regex)) if r]


def _mode_arg(mode):
    return int(to_mode(mode))


def get_numpy_reduction(reduction_name, numpy_data, abs=False):
    """smdebug's reader-side reduction with numpy (l1/l2 element-wise at every rank, as Vigil's host
    computes them: docs/compatibility.md)."""
    import numpy as np

    data = np.abs(numpy_data) if abs else np.asarray(numpy_data)
    ops = {"min": np.amin, "max": np.amax, "mean": np.mean, "prod": np.prod, "sum": np.sum, "std": np.std,
           "variance": np.var, "l1": lambda x: np.sum(np.abs(x)), "l2": lambda x: np.sqrt(np.sum(np.square(x)))}
    if reduction_name not in ops:
        raise SMDebugValueError("Invalid reduction type {}".format(reduction_name))
    return ops[reduction_name](data)


def _collection_from_core(d):
    """A Collection from the host's reading of a collection file."""
    rc = d.get("reduction_config")
    if rc is not None:
        kinds = {"reductions": [], "abs_reductions": [], "norms": [], "abs_norms": []}
        for op, is_abs in rc["reductions"]:
            norm = op in ("l1", "l2")
            kinds[("abs_" if is_abs else "") + ("norms" if norm else "reductions")].append(op)
        rc = ReductionConfig(save_raw_tensor=rc["save_raw_tensor"], save_shape=rc["save_shape"], **kinds)
    sc = d.get("save_config")
    if sc is not None:
        given = {ModeKeys(m): SaveConfigMode(**v) for m, v in sc.items() if v is not None}
        sc = SaveConfig(mode_save_configs=given)
        # A mode the file leaves null stays None, as in smdebug's reader (its SaveConfig.from_dict):
        # get_save_config(mode) then raises SMDebugValueError, no defaults are made up.
        for mode in ModeKeys:
            if mode not in given:
                sc.mode_save_configs[mode] = None
    return Collection(d["name"], d.get("include_regex"), d.get("tensor_names"), rc, sc, d.get("save_histogram", True))


class Tensor:
    """One tensor of a trial (smdebug's Tensor). Steps are global steps in GLOBAL mode, else mode steps.
    ``cache`` is taken like smdebug's and changes nothing: the host keeps its own cache."""

    def __init__(self, name: str, trial: Trial, cache: bool) -> None:
        self._name = name
        self.trial = trial
        self.cache = cache
        self._core = trial._core

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return "<vigil Tensor {!r}>".format(self._name)

    def steps(self, mode: Mode = ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> List[int]:
        return self._core.tensor_steps(self._name, _mode_arg(mode), bool(show_incomplete_steps))

    def value(self, step_num: int, mode: Mode = ModeKeys.GLOBAL, worker: Optional[str] = None) -> np.ndarray:
        """A read-only numpy array (zero-copy over the host's buffer where the core allows)."""
        return self._core.value(self._name, int(step_num), _mode_arg(mode), worker)

    def buffer(self, step_num: int, mode: Mode = ModeKeys.GLOBAL, worker: Optional[str] = None) -> Any:
        """The host buffer behind value(): supports __dlpack__, __dlpack_device__, __array__."""
        return self._core.buffer(self._name, int(step_num), _mode_arg(mode), worker)

    def reduction_value(self, step_num: int, reduction_name: str, mode: Mode = ModeKeys.GLOBAL,
                        worker: Optional[str] = None, abs: bool = False) -> Any:
        return self._core.reduction_value(self._name, int(step_num), str(reduction_name), bool(abs), _mode_arg(mode),
                                          worker)

    def reduction_values(self, step_num: int, mode: Mode = ModeKeys.GLOBAL,
                         worker: Optional[str] = None) -> Dict[Tuple[str, bool], Any]:
        """{(reduction_name, abs): value} for the reductions saved at the step (none computed)."""
        return {(op, is_abs): v for op, is_abs, v in
                self._core.reduction_values(self._name, int(step_num), _mode_arg(mode), worker)}

    def shape(self, step_num: int, mode: Mode = ModeKeys.GLOBAL, worker: Optional[str] = None) -> Tuple[int, ...]:
        return tuple(self._core.shape(self._name, int(step_num), _mode_arg(mode), worker))

    def values(self, mode: Mode = ModeKeys.GLOBAL, worker: Optional[str] = None) -> Dict[int, np.ndarray]:
        return {s: self.value(s, mode=mode, worker=worker) for s in self.steps(mode=mode)}

    def workers(self, step_num: int, mode: Mode = ModeKeys.GLOBAL) -> List[str]:
        return self._core.tensor_workers(self._name, int(step_num), _mode_arg(mode))

    def prev_steps(self, step: int, n: Optional[int] = None, mode: Mode = ModeKeys.GLOBAL) -> List[int]:
        steps = self.steps(mode=mode)
        i = bisect.bisect_right(steps, step)
        prev = steps[:i]
        return prev if n is None else prev[-n:] if n > 0 else []

    def step(self, step_num: int, mode: Mode = ModeKeys.GLOBAL, worker: Optional[str] = None) -> Any:
        raise SMDebugNotImplementedError("Tensor.step is not implemented")


class Trial(ABC):
    """smdebug's Trial: a trial's steps, modes, workers, tensors and collections. Open one with
    ``create_trial(path)`` or ``LocalTrial(name, dirname)``. Subclasses give the host core."""

    def __init__(self, name: Optional[str], range_steps: Optional[Tuple[Optional[int], Optional[int]]] = None,
                 parallel: bool = True, check: bool = False, index_mode: bool = True, cache: bool = False) -> None:
        if range_steps is not None:
            begin, end = range_steps
            assert begin is None or (isinstance(begin, int) and begin >= 0), "range_steps begin must be None or >= 0"
            assert end is None or (isinstance(end, int) and end >= 0), "range_steps end must be None or >= 0"
            assert begin is None or end is None or end > begin, (
                "range_steps should be of the form (begin, end) where begin is less than end")
        self.name = name
        self.range_steps = range_steps
        self.parallel = parallel
        self.check = check
        self.index_mode = index_mode
        self.cache = cache
        self.logger = get_logger()
        self._collection_manager: Optional[CollectionManager] = None
        self._tensors: Dict[str, Tensor] = {}
        self._step_maps: Any = None  # (number of steps, global_to_mode, mode_to_global)
        self._core = self._open_core()
        if self.name is None:
            self.name = os.path.basename(os.path.normpath(self.path)) if self.path else ""

    @abstractmethod
    def _open_core(self) -> Any:
        """The host object that answers the queries (_vigil.TrialCore or _vigil.ApiTrialCore)."""

    def __repr__(self) -> str:
        return "<vigil Trial {!r} at {!r}>".format(self.name, self.path)

    def __hash__(self) -> int:
        return hash((self.name, self.path))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trial) and (self.name, self.path) == (other.name, other.path)

    @property
    def path(self) -> str:
        return self._core.path

    # ---- state ----
    @property
    def last_complete_step(self) -> int:
        return self._core.last_complete_step()

    @property
    def loaded_all_steps(self) -> bool:
        return self._core.loaded_all_steps()

    @property
    def num_workers(self) -> int:
        return self._core.num_workers()

    @property
    def training_ended(self) -> bool:
        return self._core.training_ended()

    @property
    def last_index_token(self):
        """smdebug's refresh token: the index key of the last complete step (None until a step after
        step 0 is complete), from which a refresh lists new index files."""
        last = self.last_complete_step
        workers = self.workers()
        if last is None or last <= 0 or not workers:
            return None
        return IndexFileLocationUtils.get_index_key_for_step(self.path, last, serialize_tf_device(workers[-1]))

    def refresh(self) -> None:
        """Look for new steps and the end-of-training marker now."""
        self._core.refresh()

    def maybe_refresh(self, name=None):
        self._core.refresh()

    def refresh_data(self):
        self._core.refresh()

    def refresh_tensor(self, tname, steps=None):
        self._core.refresh()

    # ---- tensors ----
    def tensor_names(self, show_prefixed_tensors: bool = False, *, step: Optional[int] = None,
                     mode: Mode = ModeKeys.GLOBAL, regex: Union[str, List[str], None] = None,
                     collection: Union[Collection, str, None] = None) -> List[str]:
        """smdebug's tensor_names; regexes (and a collection's) are matched with Python's re.search,
        and a collection is the trial's Python object of that name, with any changes made to it."""
        regex = _flatten_regex(regex)
        if regex is not None and collection is not None:
            raise SMDebugValueError("Only one of `regex` or `collection` can be passed to this method")
        names = self._core.tensor_names(None if step is None else int(step), _mode_arg(mode), None, None)
        if regex is not None:
            names = [n for n in names if match_inc(n, regex)]
        elif collection is not None:
            if isinstance(collection, Collection):
                collection = collection.name
            elif not isinstance(collection, str):
                raise TypeError("Invalid argument type for collection {}".format(collection.__class__))
            coll = self.collection(collection)
            names = [n for n in names if coll.matches(n)]
        else:
            return sorted(names)
        if not names:
            self.logger.debug("No tensors matching regex=%s collection=%s were saved", regex, collection)
        return sorted(names)

    def tensor(self, tname: str) -> Tensor:
        t = self._tensors.get(tname)
        if t is None:
            if not self._core.has_tensor(tname):
                raise TensorUnavailable(tname)
            t = self._tensors[tname] = Tensor(tname, self, cache=self.cache)
        return t

    def has_tensor(self, tname: str) -> bool:
        return self._core.has_tensor(tname)

    # ---- steps and modes ----
    def steps(self, mode: Mode = ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> List[int]:
        return self._core.steps(_mode_arg(mode), bool(show_incomplete_steps))

    def modes(self) -> List[ModeKeys]:
        return [ModeKeys(m) for m in self._core.modes()]

    def mode_modestep(self, global_step: int) -> Tuple[Optional[ModeKeys], Optional[int]]:
        r = self._core.mode_modestep(int(global_step))
        if r is None:
            return None, None
        return ModeKeys(r[0]), r[1]

    def mode(self, global_step: int) -> Optional[ModeKeys]:
        return self.mode_modestep(global_step)[0]

    def mode_step(self, global_step: int) -> Optional[int]:
        return self.mode_modestep(global_step)[1]

    def global_step(self, mode: Mode, mode_step: int) -> int:
        return self._core.global_step(_mode_arg(mode), int(mode_step))

    def workers(self) -> List[str]:
        return self._core.workers()

    def has_passed_step(self, step: int, mode: Mode = ModeKeys.GLOBAL) -> StepState:
        return StepState(self._core.has_passed_step(int(step), _mode_arg(mode)))

    def wait_for_steps(self, required_steps: List[int], mode: Mode = ModeKeys.GLOBAL) -> None:
        self._core.wait_for_steps([int(s) for s in required_steps], _mode_arg(mode))

    # ---- smdebug's private step maps, which published rules read ----
    def _maps(self):
        steps = self._core.steps(int(ModeKeys.GLOBAL), True)
        if self._step_maps is None or self._step_maps[0] != len(steps):
            g2m, m2g = {}, {}
            for g in steps:
                mode, mode_step = self.mode_modestep(g)
                g2m[g] = (mode, mode_step)
                if mode is not None and mode != ModeKeys.GLOBAL:
                    m2g.setdefault(mode, {})[mode_step] = g
            self._step_maps = (len(steps), g2m, m2g)
        return self._step_maps

    @property
    def _global_to_mode(self):
        """{global step: (ModeKeys, mode step)} for every step seen (smdebug's private dict)."""
        return self._maps()[1]

    @property
    def _mode_to_global(self):
        """{ModeKeys: {mode step: global step}} for the modes other than GLOBAL (smdebug's private dict)."""
        return self._maps()[2]

    # ---- collections ----
    @property
    def collection_manager(self):
        if self._collection_manager is None:
            cm = CollectionManager()
            cm.add([_collection_from_core(d) for d in self._core.collections()])
            cm.set_num_workers(self.num_workers)
            self._collection_manager = cm
        return self._collection_manager

    def collections(self) -> Dict[str, Collection]:
        return self.collection_manager.collections

    def collection(self, coll_name: str) -> Collection:
        """smdebug quirk kept: an unknown name creates a new, empty collection in the trial."""
        return self.collection_manager.get(coll_name)

    # ---- smdebug helpers over collections / regexes ----
    def _sorted_by_suffix(self, names):
        def key(n):
            m = re.search(r"_(\d+)$", n)
            return (int(m.group(1)) if m else -1, n)
        return sorted(names, key=key)

    def inputs(self, step, mode=ModeKeys.GLOBAL):
        names = self.tensor_names(step=step, mode=mode, collection=CollectionKeys.INPUTS)
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


def _local_path(path):
    path = str(path).strip()
    if path.startswith("file://"):
        path = path[len("file://"):]
    return os.path.expanduser(path)


class LocalTrial(Trial):
    """A trial in a local folder (smdebug's LocalTrial). ``parallel`` and ``check`` are unused, as
    in smdebug; ``index_mode=False`` loads no step; ``cache`` changes nothing (the host caches)."""

    def __init__(self, name, dirname, range_steps=None, parallel=True, check=False, index_mode=True, cache=False):
        self._dirname = _local_path(dirname)
        super().__init__(name, range_steps=range_steps, parallel=parallel, check=check, index_mode=index_mode,
                         cache=cache)

    def _open_core(self):
        begin, end = self.range_steps if self.range_steps is not None else (None, None)
        if not self.index_mode:
            begin, end = None, 0  # smdebug loads no index file then
        return _vigil.open_trial(self._dirname, begin, end)


class S3Trial(Trial):
    """A trial under ``s3://bucket_name/prefix_name`` (smdebug's S3Trial), read through the host's S3
    client: credentials, region and endpoint as AWS tools find them (``AWS_*`` variables,
    ``~/.aws/credentials`` and ``config``; docs/object-storage.md)."""

    def __init__(self, name, bucket_name, prefix_name, range_steps=None, check=False, index_mode=True, cache=False):
        self.bucket_name = bucket_name
        self.prefix_name = str(prefix_name).strip("/")
        self._location = "s3://{}/{}".format(bucket_name, self.prefix_name) if self.prefix_name \
            else "s3://{}".format(bucket_name)
        super().__init__(name, range_steps=range_steps, check=check, index_mode=index_mode, cache=cache)

    def _open_core(self):
        begin, end = self.range_steps if self.range_steps is not None else (None, None)
        if not self.index_mode:
            begin, end = None, 0
        return _vigil.open_trial(self._location, begin, end)


class HostTrial(Trial):
    """A trial of a running evaluator, read through the plugin ABI (how Python rules see theirs)."""

    def __init__(self, name, core):
        self._given_core = core
        super().__init__(name)

    def _open_core(self):
        return self._given_core


def _as_list(trials):
    if trials is None:
        return []
    if isinstance(trials, (list, tuple, set)):
        return list(trials)
    return [trials]


@contextlib.contextmanager
def no_refresh(trials):
    """smdebug's no_refresh: inside the block the trials show a frozen index; yields ``trials``.
    Unlike smdebug, the previous state comes back even when the block raises."""
    held = []
    try:
        for t in _as_list(trials):
            t._hold_refresh()
            held.append(t)
        yield trials
    finally:
        for t in reversed(held):
            t._release_refresh()


@contextlib.contextmanager
def refresh(trials):
    """smdebug's refresh: refresh now, then run the block; yields ``trials`` (Vigil refreshes on every
    query anyway)."""
    for t in _as_list(trials):
        t.refresh()
    yield trials


@overload
def create_trial(path: Union[str, os.PathLike[str]], name: Optional[str] = None, profiler: Literal[False] = False,
                 output_dir: str = ..., **kwargs: Any) -> Trial: ...
@overload
def create_trial(path: Union[str, os.PathLike[str]], name: Optional[str] = None, *, profiler: Literal[True],
                 output_dir: str = ..., **kwargs: Any) -> ProfilerTrial: ...
@overload
def create_trial(path: Union[str, os.PathLike[str]], name: Optional[str], profiler: Literal[True],
                 output_dir: str = ..., **kwargs: Any) -> ProfilerTrial: ...


def create_trial(path: Union[str, os.PathLike[str]], name: Optional[str] = None, profiler: bool = False,
                 output_dir: str = "/opt/ml/processing/outputs/", **kwargs: Any) -> Union[Trial, ProfilerTrial]:
    """Opens a trial (smdebug's create_trial): an ``S3Trial`` for ``s3://bucket/prefix``, else a
    ``LocalTrial`` for a local folder (``file://`` and ``~`` allowed), with ``range_steps=(begin, end)``
    (global steps, end exclusive, either None), ``index_mode``, ``cache``, ``check`` and ``parallel``
    as LocalTrial takes them; with ``profiler=True`` a ``vigil.profiler.ProfilerTrial`` over a profiler
    output folder or prefix."""
    path = str(path).strip()
    s3, bucket, prefix = is_s3(path)
    if s3:
        if name is None:
            name = os.path.basename(prefix.rstrip("/")) or bucket
        if profiler:
            from .profiler import ProfilerTrial
            return ProfilerTrial(name=name, trial_dir=path, output_dir=output_dir)
        kwargs.pop("parallel", None)  # S3Trial takes no `parallel`, as in smdebug
        return S3Trial(name=name, bucket_name=bucket, prefix_name=prefix, **kwargs)
    local = _local_path(path)
    if name is None:
        name = os.path.basename(os.path.normpath(local))
    if profiler:
        from .profiler import ProfilerTrial
        return ProfilerTrial(name=name, trial_dir=local, output_dir=output_dir)
    return LocalTrial(name=name, dirname=local, **kwargs)


__all__ = ["create_trial", "Trial", "LocalTrial", "S3Trial", "HostTrial", "Tensor", "Collection", "ReductionConfig",
           "SaveConfigMode", "SaveConfig", "StepState", "no_refresh", "refresh", "get_numpy_reduction"]
