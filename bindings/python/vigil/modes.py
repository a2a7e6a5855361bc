"""Training modes, numbered exactly like smdebug's ``smdebug.core.modes.ModeKeys``."""
from __future__ import annotations

from enum import Enum, IntEnum
from typing import Any, Optional


class ModeKeys(IntEnum):
    TRAIN = 1
    EVAL = 2
    PREDICT = 3
    GLOBAL = 4


ALLOWED_MODES = [ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, ModeKeys.GLOBAL]
ALLOWED_MODE_NAMES = [m.name for m in ALLOWED_MODES]
MODE_STEP_PLUGIN_NAME = "mode_step"
MODE_PLUGIN_NAME = "mode"


def as_mode_key(mode: Any) -> Optional[ModeKeys]:
    """The ModeKeys ``mode`` names, or None: Vigil's ModeKeys, or another ``ModeKeys`` enum whose member
    has a name and value of ours (smdebug's own, imported side by side with Vigil's hook). Plain ints
    and strings are not modes here, as in smdebug's hook."""
    if isinstance(mode, ModeKeys):
        return mode
    if isinstance(mode, Enum) and type(mode).__name__ == "ModeKeys":
        ours = ModeKeys.__members__.get(mode.name)
        if ours is not None and ours.value == mode.value:
            return ours
    return None


def to_mode(mode: Any) -> ModeKeys:
    """A ModeKeys from a ModeKeys, an int 1..4 or a mode name ("TRAIN"); None is GLOBAL."""
    if mode is None:
        return ModeKeys.GLOBAL
    key = as_mode_key(mode)
    if key is not None:
        return key
    if isinstance(mode, str):
        try:
            return ModeKeys[mode.strip().upper()]
        except KeyError:
            raise ValueError("Invalid mode: {!r}".format(mode)) from None
    if hasattr(mode, "value") and not isinstance(mode, int):  # another enum with the same numbers
        mode = mode.value
    return ModeKeys(int(mode))


def mode_name(mode: Any) -> str:
    """"TRAIN", "EVAL", ... as smdebug's messages spell a mode."""
    try:
        return to_mode(mode).name
    except (ValueError, TypeError):
        return str(mode)
