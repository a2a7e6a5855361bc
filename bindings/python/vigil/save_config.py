"""smdebug's ``SaveConfig`` and ``SaveConfigMode`` (``smdebug.core.save_config``): at which steps a
hook saves a collection, per mode. ``should_save_step`` takes the *mode* step; ``save_steps`` is a
union with the interval (smdebug-format §6.1), ``end_step`` is exclusive."""
import json

from .exceptions import SMDebugTypeError, SMDebugValueError
from .modes import ModeKeys, as_mode_key

DEFAULT_SAVE_CONFIG_INTERVAL = 500
DEFAULT_SAVE_CONFIG_START_STEP = 0
DEFAULT_SAVE_CONFIG_END_STEP = None
DEFAULT_SAVE_CONFIG_SAVE_STEPS = []
_KEYS = ("save_interval", "save_steps", "start_step", "end_step")


def step_in_range(range_steps, step):
    """Whether ``step`` lies in ``range_steps=(begin, end)`` (begin inclusive, end exclusive, None open)."""
    if range_steps is None:
        return True
    begin, end = range_steps
    if begin is not None and step < begin:
        return False
    if end is not None and step >= end:
        return False
    return True


def _as_int_list(steps):
    if steps is None:
        return []
    if isinstance(steps, str):
        return [int(s) for s in steps.split(",") if s.strip()]
    return [int(s) for s in steps]


def _mode(mode):
    """Vigil's ModeKeys for a ModeKeys (Vigil's or smdebug's) or a mode number."""
    key = as_mode_key(mode)
    return key if key is not None else ModeKeys(mode)


class SaveConfigMode:
    """When one mode saves: every ``save_interval`` mode steps in ``[start_step, end_step)``, and at
    each of ``save_steps``. Strings are accepted for every field (the hook's JSON gives strings)."""

    def __init__(self, save_interval=None, start_step=None, end_step=None, save_steps=None):
        self.save_interval = int(save_interval if save_interval is not None else DEFAULT_SAVE_CONFIG_INTERVAL)
        self.start_step = int(start_step if start_step is not None else DEFAULT_SAVE_CONFIG_START_STEP)
        self.end_step = int(end_step) if end_step is not None else None
        self.save_steps = _as_int_list(save_steps)
        if self.save_interval <= 0:
            raise SMDebugValueError("save_interval must be a positive integer (got {})".format(self.save_interval))

    def to_json_dict(self):
        return {"save_interval": self.save_interval, "save_steps": list(self.save_steps),
                "start_step": self.start_step, "end_step": self.end_step}

    @classmethod
    def from_dict(cls, params, default_values=None):
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

    def should_save_step(self, step_num):
        step_num = int(step_num)
        if self.save_steps and step_num in self.save_steps:
            return True
        return (self.start_step <= step_num and (self.end_step is None or step_num < self.end_step)
                and step_num % self.save_interval == 0)

    def __eq__(self, other):
        return isinstance(other, SaveConfigMode) and self.to_json_dict() == other.to_json_dict()

    def __hash__(self):
        return hash(json.dumps(self.to_json_dict()))

    def __repr__(self):
        return "<class SaveConfigMode: save_interval={}, save_steps={}, start_step={}, end_step={}>".format(
            self.save_interval, self.save_steps, self.start_step, self.end_step)


class SaveConfig:
    """One ``SaveConfigMode`` per mode. ``mode_save_configs`` gives some modes explicitly; the others
    are built from the keyword arguments. Modes not given explicitly are taken from another config by
    ``merge_default_save_config`` (how a collection's config falls back on the hook's)."""

    def __init__(self, mode_save_configs=None, save_interval=None, start_step=None, end_step=None, save_steps=None):
        given = {}
        for mode, cfg in (mode_save_configs or {}).items():
            if as_mode_key(mode) is None or not (cfg is None or isinstance(cfg, SaveConfigMode)):
                raise SMDebugValueError("mode_save_configs must map ModeKeys to SaveConfigMode, got {!r}: {!r}"
                                        .format(mode, cfg))
            given[as_mode_key(mode)] = cfg
        self._explicit = {m for m, cfg in given.items() if cfg is not None}
        self.mode_save_configs = {}
        for mode in ModeKeys:
            cfg = given.get(mode)
            if cfg is None:
                cfg = SaveConfigMode(save_interval=save_interval, start_step=start_step, end_step=end_step,
                                     save_steps=save_steps)
            self.mode_save_configs[mode] = cfg
        if any(v is not None for v in (save_interval, start_step, end_step, save_steps)):
            self._explicit = set(ModeKeys)

    def get_save_config(self, mode):
        cfg = self.mode_save_configs[_mode(mode)]
        if cfg is None:  # a mode a trial's collection file leaves null, as smdebug's reader keeps it
            raise SMDebugValueError("SaveConfig={} is not ready. Call SaveManager.prepare() first.".format(self))
        return cfg

    def set_save_config(self, mode, save_config_mode):
        if not isinstance(save_config_mode, SaveConfigMode):
            raise SMDebugValueError("save_config_mode={} must be a SaveConfigMode".format(save_config_mode))
        self.mode_save_configs[_mode(mode)] = save_config_mode
        self._explicit.add(_mode(mode))

    def should_save_step(self, mode, step_num):
        return self.get_save_config(mode).should_save_step(step_num)

    def merge_default_save_config(self, default_save_config):
        """Modes this config did not set explicitly take ``default_save_config``'s."""
        for mode in ModeKeys:
            if mode not in self._explicit:
                self.mode_save_configs[mode] = default_save_config.mode_save_configs[mode] or SaveConfigMode()

    def to_json_dict(self):
        return {mode.name: cfg.to_json_dict() if cfg is not None else None
                for mode, cfg in self.mode_save_configs.items()}

    def to_json(self):
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_dict(cls, params, default_values=None):
        """From ``{ModeKeys or mode name: {save keys} or SaveConfigMode or None}``."""
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugTypeError("params={} must be a dict".format(params))
        modes = {}
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
    def from_json(cls, json_str):
        return cls.from_dict(json.loads(json_str))

    @classmethod
    def from_save_config_mode(cls, save_config_mode):
        return cls(mode_save_configs={mode: save_config_mode for mode in ModeKeys})

    @classmethod
    def parse(cls, obj):
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
            return cls.from_dict(obj)
        raise SMDebugTypeError("obj={} cannot be parsed into a SaveConfig object".format(obj))

    def __eq__(self, other):
        return isinstance(other, SaveConfig) and self.to_json_dict() == other.to_json_dict()

    def __hash__(self):
        return hash(self.to_json())

    def __repr__(self):
        return "<class SaveConfig: {}>".format(self.to_json_dict())


__all__ = ["SaveConfig", "SaveConfigMode", "step_in_range", "DEFAULT_SAVE_CONFIG_INTERVAL"]
