"""Writes trials from numpy arrays, byte-compatible with smdebug's hooks (Vigil's TrialWriter).

    with vigil.writer.TrialWriter("/tmp/run", save_interval=1) as w:
        w.add_collection("gradients", include_regex=["^gradient/"], reductions=["mean", "abs_mean"])
        for step in range(10):
            w.begin_step(ModeKeys.TRAIN)
            w.save_tensor("gradient/fc.weight", grads)
            w.save_scalar("loss", loss)
            w.end_step()
    # leaving the block closes the trial and writes training_job_end.ts (not when it raised)
"""
from __future__ import annotations

import os
from types import TracebackType
from typing import Any, Callable, Dict, Iterable, Literal, Optional, Sequence, Type, Union

import numpy as np

from . import _vigil
from .modes import ModeKeys, to_mode


def _as_array(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__array__") or hasattr(value, "__dlpack__"):
        return np.asarray(value)
    return np.asarray(value)


def _save_config(save_interval: Optional[int], save_steps: Optional[Iterable[int]], start_step: Optional[int],
                 end_step: Optional[int]) -> Optional[Dict[str, Any]]:
    if save_interval is None and save_steps is None and start_step is None and end_step is None:
        return None
    return {"save_interval": 500 if save_interval is None else int(save_interval),
            "save_steps": [int(s) for s in (save_steps or [])],
            "start_step": 0 if start_step is None else int(start_step),
            "end_step": None if end_step is None else int(end_step)}


def _reduction_list(reductions: Union[str, Iterable[str], None]) -> Optional[str]:
    """A list (or comma-separated str) of smdebug reduction tokens: min max mean std variance sum
    prod l1 l2 (norms also as l1_norm/l2_norm), each optionally prefixed abs_."""
    if reductions is None:
        return None
    if isinstance(reductions, str):
        reductions = [r for r in reductions.split(",") if r.strip()]
    return ",".join(r.strip() for r in reductions)


class TrialWriter:
    """One worker of a training job writing a trial (see host/writer/trial_writer.h).

    ``save_interval`` (and ``save_steps``, ``start_step``, ``end_step``) set the hook-level save
    configuration of every mode, the default of each collection without its own."""

    def __init__(self, out_dir: Union[str, "os.PathLike[str]"], worker: str = "worker_0", num_workers: int = 1,
                 save_interval: Optional[int] = None, save_steps: Optional[Iterable[int]] = None,
                 start_step: Optional[int] = None, end_step: Optional[int] = None, builtin_collections: bool = True,
                 write_end_marker: bool = True, clock: Optional[Callable[[], float]] = None) -> None:
        self._w = _vigil.TrialWriter(str(out_dir), str(worker), int(num_workers),
                                     _save_config(save_interval, save_steps, start_step, end_step),
                                     bool(builtin_collections), bool(write_end_marker), clock)
        self.out_dir = str(out_dir)

    # ---- configuration ----
    def add_collection(self, name: str, include_regex: Optional[Sequence[str]] = None,
                       tensor_names: Optional[Sequence[str]] = None, reductions: Union[str, Iterable[str], None] = None,
                       save_raw_tensor: Optional[bool] = None, save_shape: Optional[bool] = None,
                       save_interval: Optional[int] = None, save_steps: Optional[Iterable[int]] = None,
                       start_step: Optional[int] = None, end_step: Optional[int] = None,
                       save_histogram: bool = True) -> None:
        """Adds (or replaces) a collection. ``reductions`` switches on smdebug's reduction config;
        ``save_raw_tensor`` (default True) and ``save_shape`` (default False) go with it."""
        has_rc = reductions is not None or save_raw_tensor is not None or save_shape is not None
        rc = None
        if has_rc:
            rc = {"reductions": _reduction_list(reductions) or "",
                  "save_raw_tensor": True if save_raw_tensor is None else bool(save_raw_tensor),
                  "save_shape": bool(save_shape)}
        self._w.add_collection(str(name), [str(r) for r in (include_regex or [])],
                               [str(t) for t in (tensor_names or [])], rc,
                               _save_config(save_interval, save_steps, start_step, end_step), bool(save_histogram))

    # ---- steps ----
    def begin_step(self, mode: Any = ModeKeys.GLOBAL) -> None:
        self._w.begin_step(int(to_mode(mode)))

    def begin_step_at(self, global_step: int, mode: Any = ModeKeys.GLOBAL, mode_step: Optional[int] = None) -> None:
        mode_step = global_step if mode_step is None else mode_step
        self._w.begin_step_at(int(global_step), int(to_mode(mode)), int(mode_step))

    def end_step(self) -> None:
        self._w.end_step()

    def close(self) -> None:
        self._w.close()

    # ---- saving ----
    def should_save(self, name: str) -> bool:
        return self._w.should_save(str(name))

    def save_tensor(self, name: str, value: Any, collections: Optional[Iterable[str]] = None) -> None:
        """Saves as the collections configure (raw value, reductions, shape), if the save
        configuration selects the current step. ``collections`` adds the name to those collections."""
        self._w.save_tensor(str(name), _as_array(value), [str(c) for c in (collections or [])])

    def write_tensor(self, name: str, value: Any) -> None:
        self._w.write_tensor(str(name), _as_array(value))

    def write_reduction(self, name: str, reduction: str, abs: bool = False, value: Any = None) -> None:
        """Writes a reduction record; ``value`` (default: computed with numpy from nothing) is required."""
        if value is None:
            raise ValueError("write_reduction needs the reduction's value")
        self._w.write_reduction(str(name), str(reduction), bool(abs), _as_array(value))

    def write_shape(self, name: str, shape: Iterable[int]) -> None:
        self._w.write_shape(str(name), [int(d) for d in shape])

    def save_scalar(self, name: str, value: float) -> None:
        self._w.save_scalar(str(name), float(value))

    # ---- state ----
    @property
    def global_step(self) -> int:
        return self._w.global_step()

    @property
    def mode(self) -> ModeKeys:
        return ModeKeys(self._w.mode())

    @property
    def mode_step(self) -> int:
        return self._w.mode_step()

    def __enter__(self) -> TrialWriter:
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> Literal[False]:
        if exc_type is None:
            self.close()
        else:
            self._w.abandon()  # a failed run: no end-of-training marker
        return False


__all__ = ["TrialWriter"]
