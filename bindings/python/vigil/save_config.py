"""smdebug's ``SaveConfig`` and ``SaveConfigMode`` (``smdebug.core.save_config``): at which steps a
hook saves a collection, per mode. ``should_save_step`` takes the *mode* step; ``save_steps`` is a
union with the interval (smdebug-format §6.1), ``end_step`` is exclusive."""
from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple, Union

from .exceptions import SMDebugTypeError, SMDebugValueError
from .modes import ModeKeys, as_mode_key

DEFAULT_SAVE_CONFIG_INTERVAL = 500
DEFAULT_SAVE_CONFIG_START_STEP = 0
DEFAULT_SAVE_CONFIG_END_STEP: Optional[int] = None
DEFAULT_SAVE_CONFIG_SAVE_STEPS: List[int] = []
_KEYS = ("save_interval", "save_steps", "start_step", "end_step")


def step_in_range(range_steps: Optional[Tuple[Optional[int], Optional[int]]], step: int) -> bool:
    """Whether ``step`` lies in ``range_steps=(begin, end)`` (begin inclusive, end exclusive, None open)."""
    if range_steps is None:
        return True
    begin, end = range_steps
    if begin is not None and step < begin:
        return False
    if end is not None and step >= end:
        return False
    return True


def _as_int_list(steps: Union[str, Iterable[Any], None]) -> List[int]:
    if steps is None:
        return []
    if isinstance(steps, str):
        return [int(s) for s in steps.split(",") if s.strip()]
    return [int(s) for s in steps]


def _mode(mode: Any) -> ModeKeys:
    """Vigil's ModeKeys for a ModeKeys (Vigil's or smdebug's) or a mode number."""
    key = as_mode_key(mode)
    return key if key is not None else ModeKeys(mode)


class SaveConfigMode:
    """When one mode saves: every ``save_interval`` mode steps in ``[start_step, end_step)``, and at
    each of ``save_steps``. Strings are accepted for every field (the hook's JSON gives strings)."""

    def __init__(self, save_interval: Union[int, str, None] = None, start_step: Union[int, str, None] = None,
                 end_step: Union[int, str, None] = None, save_steps: Union[str, Iterable[Any], None] = None) -> None:
        self.save_interval = int(save_interval if save_interval is not None else DEFAULT_SAVE_CONFIG_INTERVAL)
        self.start_step = int(start_step if start_step is not None else DEFAULT_SAVE_CONFIG_START_STEP)
        self.end_step = int(end_step) if end_step is not None else None
        self.save_steps = _as_int_list(save_steps)
        if self.save_interval <= 0:
            raise SMDebugValueError("save_interval must be a positive integer (got {})".format(self.save_interval))

    def to_json_dict(self) -> Dict[str, Any]:
        return {"save_interval": self.save_interval, "save_steps": list(self.save_steps),
                "start_step": self.start_step, "end_step": self.end_step}

    @classmethod
    def from_dict(cls, params: Optional[Dict[str, Any]],
                  default_values: Optional[Mapping[str, Any]] = None) -> Optional[SaveConfigMode]:
        """From the JSON form; keys missing from ``params`` come from ``default_values``."""
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugTypeError("params={} must be a dict".format(params))
        default_values = default_values or {}
        unknown = sorted(set(params) - set(_KEYS))
        if unknown:
            raise SMDebugValueError("unknown save configuration key(s): {}".format(", ".join(unknown)))
        merged = {k: params.get(k, default_values.get(k)) for k in _KEYS}
        return cls(**merged)

    def should_save_step(self, step_num: int) -> bool:
        step_num = int(step_num)
        if self.save_steps and step_num in self.save_steps:
            return True
        return (self.start_step <= step_num and (self.end_step is None or step_num < self.end_step)
                and step_num % self.save_interval == 0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SaveConfigMode) and self.to_json_dict() == other.to_json_dict()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_json_dict()))

    def __repr__(self) -> str:
        return "<class SaveConfigMode: save_interval={}, save_steps={}, start_step={}, end_step={}>".format(
            self.save_interval, self.save_steps, self.start_step, self.end_step)


class SaveConfig:
    """One ``SaveConfigMode`` per mode. ``mode_save_configs`` gives some modes explicitly; the others
    are built from the keyword arguments. Modes not given explicitly are taken from another config by
    ``merge_default_save_config`` (how a collection's config falls back on the hook's)."""

    def __init__(self, mode_save_configs: Optional[Mapping[Any, Optional[SaveConfigMode]]] = None,
                 save_interval: Union[int, str, None] = None, start_step: Union[int, str, None] = None,
                 end_step: Union[int, str, None] = None, save_steps: Union[str, Iterable[Any], None] = None) -> None:
        given: Dict[ModeKeys, Optional[SaveConfigMode]] = {}
        for mode, cfg in (mode_save_configs or {}).items():
            key = as_mode_key(mode)
            if key is None or not (cfg is None or isinstance(cfg, SaveConfigMode)):
                raise SMDebugValueError("mode_save_configs must map ModeKeys to SaveConfigMode, got {!r}: {!r}"
                                        .format(mode, cfg))
            given[key] = cfg
        self._explicit: Set[ModeKeys] = {m for m, cfg in given.items() if cfg is not None}
        # A mode is None only where a trial's collection file leaves it null.
        self.mode_save_configs: Dict[ModeKeys, Optional[SaveConfigMode]] = {}
        for mode in ModeKeys:
            cfg = given.get(mode)
            if cfg is None:
                cfg = SaveConfigMode(save_interval=save_interval, start_step=start_step, end_step=end_step,
                                     save_steps=save_steps)
            self.mode_save_configs[mode] = cfg
        if any(v is not None for v in (save_interval, start_step, end_step, save_steps)):
            self._explicit = set(ModeKeys)

    def get_save_config(self, mode: Any) -> SaveConfigMode:
        cfg = self.mode_save_configs[_mode(mode)]
        if cfg is None:  # a mode a trial's collection file leaves null, as smdebug's reader keeps it
            raise SMDebugValueError("SaveConfig={} is not ready. Call SaveManager.prepare() first.".format(self))
        return cfg

    def set_save_config(self, mode: Any, save_config_mode: SaveConfigMode) -> None:
        if not isinstance(save_config_mode, SaveConfigMode):
            raise SMDebugValueError("save_config_mode={} must be a SaveConfigMode".format(save_config_mode))
        self.mode_save_configs[_mode(mode)] = save_config_mode
        self._explicit.add(_mode(mode))

    def should_save_step(self, mode: Any, step_num: int) -> bool:
        return self.get_save_config(mode).should_save_step(step_num)

    def merge_default_save_config(self, default_save_config: SaveConfig) -> None:
        """Modes this config did not set explicitly take ``default_save_config``'s."""
        for mode in ModeKeys:
            if mode not in self._explicit:
                self.mode_save_configs[mode] = default_save_config.mode_save_configs[mode] or SaveConfigMode()

    def to_json_dict(self) -> Dict[str, Any]:
        return {mode.name: cfg.to_json_dict() if cfg is not None else None
                for mode, cfg in self.mode_save_configs.items()}

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_dict(cls, params: Optional[Dict[Any, Any]],
                  default_values: Optional[Mapping[str, Any]] = None) -> Optional[SaveConfig]:
        """From ``{ModeKeys or mode name: {save keys} or SaveConfigMode or None}``."""
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugTypeError("params={} must be a dict".format(params))
        modes: Dict[ModeKeys, Optional[SaveConfigMode]] = {}
        for key, value in params.items():
            try:
                mode = ModeKeys[key.strip().upper()] if isinstance(key, str) else _mode(key)
            except (KeyError, ValueError):
                raise SMDebugValueError("unknown mode {!r} in a save configuration".format(key)) from None
            if isinstance(value, dict) or value is None:
                value = SaveConfigMode.from_dict(value, default_values) if value is not None else None
            modes[mode] = value
        return cls(mode_save_configs=modes)

    @classmethod
    def from_json(cls, json_str: str) -> Optional[SaveConfig]:
        return cls.from_dict(json.loads(json_str))

    @classmethod
    def from_save_config_mode(cls, save_config_mode: Optional[SaveConfigMode]) -> SaveConfig:
        return cls(mode_save_configs={mode: save_config_mode for mode in ModeKeys})

    @classmethod
    def parse(cls, obj: Union[SaveConfig, SaveConfigMode, Dict[Any, Any], None]) -> SaveConfig:
        """A SaveConfig from None (the defaults), a SaveConfig, a SaveConfigMode (every mode), a dict of
        save keys (every mode) or a dict by mode."""
        if obj is None:
            return cls()
        if isinstance(obj, cls):
            return obj
        if isinstance(obj, SaveConfigMode):
            return cls.from_save_config_mode(obj)
        if isinstance(obj, dict):
            if any(k in _KEYS for k in obj):
                return cls.from_save_config_mode(SaveConfigMode.from_dict(obj))
            parsed = cls.from_dict(obj)
            assert parsed is not None  # a dict gives a config
            return parsed
        raise SMDebugTypeError("obj={} cannot be parsed into a SaveConfig object".format(obj))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SaveConfig) and self.to_json_dict() == other.to_json_dict()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __repr__(self) -> str:
        return "<class SaveConfig: {}>".format(self.to_json_dict())


__all__ = ["SaveConfig", "SaveConfigMode", "step_in_range", "DEFAULT_SAVE_CONFIG_INTERVAL"]
