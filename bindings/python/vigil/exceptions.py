"""smdebug's exception classes (``smdebug.exceptions``), with its names, hierarchy, constructor
signatures, attributes and messages.

As in smdebug 1.0.34, every class derives from ``SMDebugError`` (an ``Exception``), so
``except SMDebugError:`` catches them all; the generic ``SMDebug*Error`` classes also derive from the
matching builtin (``ValueError``, ...).

Vigil's host reports every failure as a status code (``abi/include/vigil/status.h``); each code
stands for one of these classes. ``from_status`` and ``status_of`` convert in both directions through
one table, the host's own (``_vigil.status_classes()``), so Python, the C ABI and the C++ host agree.
An exception built from a host error carries ``status`` (the code) and, for damaged data, ``file``
and ``offset``; ``str(e)`` is the host's message, which is smdebug's text.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple, Type

from .modes import ModeKeys, mode_name


class _Message:
    """str(e): the host's message when the exception came from the host, else smdebug's format."""

    _vigil_message = None
    status = None

    def __str__(self):
        if self._vigil_message is not None:
            return self._vigil_message
        return self._format()

    def _format(self):
        return Exception.__str__(self)


# ---- generic errors -------------------------------------------------------------------------------

class SMDebugError(_Message, Exception):
    """The base of every smdebug exception."""


class SMDebugRuntimeError(SMDebugError, RuntimeError):
    pass


class SMDebugTypeError(SMDebugError, TypeError):
    pass


class SMDebugValueError(SMDebugError, ValueError):
    pass


class SMDebugNotImplementedError(SMDebugError, NotImplementedError):
    pass


class SMDebugCustomerError(SMDebugError):
    """smdebug's error for a mistake in the user's own configuration or code."""


# ---- trial and rule exceptions -------------------------------------------------------------------

class StepNotYetAvailable(SMDebugError):
    def __init__(self, step: int, mode: Any) -> None:
        super().__init__(step, mode)
        self.step = step
        self.mode = mode

    def _format(self) -> str:
        return "Step {} of mode {} not yet available".format(self.step, mode_name(self.mode))


class MissingCollectionFiles(SMDebugError):
    def __init__(self) -> None:
        super().__init__()

    def _format(self) -> str:
        return "Training job has ended. All the collection files could not be loaded"


class IndexReaderException(SMDebugError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def _format(self) -> str:
        return str(self.message)


class StepUnavailable(SMDebugError):
    def __init__(self, step: int, mode: Any) -> None:
        super().__init__(step, mode)
        self.step = step
        self.mode = mode

    def _format(self) -> str:
        return "Step {} of mode {} is not available as it was not saved".format(self.step, mode_name(self.mode))


class TensorUnavailableForStep(SMDebugError):
    def __init__(self, tname: str, step: int, mode: Any = ModeKeys.GLOBAL, has_reductions: bool = False) -> None:
        super().__init__(tname, step, mode, has_reductions)
        self.step = step
        self.mode = mode
        self.tname = tname
        self.has_reductions = has_reductions

    def _format(self) -> str:
        msg = "Value for tensor {} is not available for step {} with mode {} as it was not saved.".format(
            self.tname, self.step, mode_name(self.mode))
        if self.has_reductions:
            msg += ("This tensor has reductions saved for this step. "
                    "You might want to query for the reductions.")
        return msg


class ShapeUnavailableForStep(SMDebugError):
    def __init__(self, tname: str, step: int, mode: Any = ModeKeys.GLOBAL) -> None:
        super().__init__(tname, step, mode)
        self.step = step
        self.mode = mode
        self.tname = tname

    def _format(self) -> str:
        return "Shape for tensor {} is not available for step {} with mode {} as it was not saved.".format(
            self.tname, self.step, mode_name(self.mode))


class TensorUnavailable(SMDebugError):
    def __init__(self, tname: str) -> None:
        super().__init__(tname)
        self.tname = tname

    def _format(self) -> str:
        return "Tensor {} was not saved.".format(self.tname)


class InvalidWorker(SMDebugError):
    def __init__(self, worker: str) -> None:
        super().__init__(worker)
        self.worker = worker

    def _format(self) -> str:
        return "Invalid Worker: {}".format(self.worker)


class NoMoreProfilerData(SMDebugError):
    def __init__(self, timestamp: int) -> None:
        super().__init__(timestamp)
        self.timestamp = timestamp

    def _format(self) -> str:
        return "Looking for timestamp {} and reached end of training.".format(self.timestamp)


class NoMoreData(SMDebugError):
    def __init__(self, step: int, mode: Any, last_step: int) -> None:
        super().__init__(step, mode, last_step)
        self.step = step
        self.mode = mode
        self.last_step = last_step

    def _format(self) -> str:
        return ("Looking for step {} of mode {} and reached end of training. Max step available is {}"
                .format(self.step, mode_name(self.mode), self.last_step))


class RuleEvaluationConditionMet(SMDebugError):
    def __init__(self, rule_name: str, step: int, end_of_rule: bool = False) -> None:
        super().__init__(rule_name, step, end_of_rule)
        self.rule_name = rule_name
        self.step = step
        self.end_of_rule = end_of_rule

    def _format(self) -> str:
        return "Evaluation of the rule {} at step {} resulted in the condition being met".format(
            self.rule_name, self.step)


class InsufficientInformationForRuleInvocation(SMDebugError):
    def __init__(self, rule_name: str, message: str) -> None:
        super().__init__(rule_name, message)
        self.rule_name = rule_name
        self.message = message

    def _format(self) -> str:
        return "Insufficient information to invoke rule {}: {}".format(self.rule_name, self.message)


class InvalidCollectionConfiguration(SMDebugError):
    def __init__(self, c_name: str) -> None:
        super().__init__(c_name)
        self.c_name = c_name

    def _format(self) -> str:
        return ("Collection {} has not been configured. Please ensure collection configuration exists with "
                "include_regex, tensor_names or reductions".format(self.c_name))


# ---- Vigil's own statuses without an smdebug class -------------------------------------------------

class VersionMismatch(SMDebugRuntimeError):
    """A plugin built for another ABI."""


class Cancelled(SMDebugRuntimeError):
    """The evaluation is being stopped."""


class Timeout(SMDebugRuntimeError):
    """A wait ran out of time."""


class PluginFailure(SMDebugRuntimeError):
    """A rule's own failure (the host's RuleError)."""


# ---- one table: host status code <-> class ---------------------------------------------------------

def _code_table():
    from . import _vigil  # the host's table (vigil::smdebug_class_name over every status code)
    return dict(_vigil.status_classes())


_CODE_TO_NAME = _code_table()
_NAME_TO_CODE: dict = {}
for _code, _name in sorted(_CODE_TO_NAME.items()):
    _NAME_TO_CODE.setdefault(_name, _code)  # SMDebugRuntimeError <- VIGIL_E_INTERNAL (the first)
del _code, _name

STATUS_OK = 0
STATUS_PLUGIN_FAILURE = _NAME_TO_CODE["PluginFailure"]


def _class_named(name):
    if name == "MemoryError":
        return MemoryError
    return globals().get(name, SMDebugRuntimeError)


def class_of_status(code: int) -> Type[BaseException]:
    """The exception class a host status code stands for."""
    return _class_named(_CODE_TO_NAME.get(int(code), "SMDebugRuntimeError"))


def _mode_or_int(mode):
    try:
        return ModeKeys(int(mode))
    except (ValueError, TypeError):
        return mode


def from_status(code: int, message: str, step: int = 0, mode: Any = ModeKeys.GLOBAL, tensor: str = "", worker: str = "",
                rule: str = "", last_step: int = -1, has_reductions: bool = False, end_of_rule: bool = False,
                file: Optional[str] = None, offset: Optional[int] = None) -> BaseException:
    """The exception for a host status code and its error record, with smdebug's fields filled."""
    e: Any  # an smdebug class, given the host's fields below
    cls = class_of_status(code)
    mode = _mode_or_int(mode)
    if cls is TensorUnavailableForStep:
        e = cls(tensor, step, mode, bool(has_reductions))
    elif cls is ShapeUnavailableForStep:
        e = cls(tensor, step, mode)
    elif cls is TensorUnavailable:
        e = cls(tensor)
    elif cls in (StepUnavailable, StepNotYetAvailable):
        e = cls(step, mode)
    elif cls is NoMoreData:
        e = cls(step, mode, last_step)
    elif cls is InvalidWorker:
        e = cls(worker)
    elif cls is RuleEvaluationConditionMet:
        e = cls(rule, step, bool(end_of_rule))
    elif cls is InsufficientInformationForRuleInvocation:
        e = cls(rule, message)
    elif cls is NoMoreProfilerData:
        e = cls(step)
    elif cls is MissingCollectionFiles:
        e = cls()
    elif cls is InvalidCollectionConfiguration:
        e = cls(tensor)
    elif cls is MemoryError:
        e = MemoryError(message)
        return e
    else:
        e = cls(message)
    e._vigil_message = message
    e.status = int(code)
    if file:
        e.file = file
    if offset is not None:
        e.offset = offset
    return e


def status_of(exc: BaseException) -> int:
    """The host status code for an exception: its own ``status`` when it came from the host, the
    code of its smdebug class (or the nearest smdebug base class), else PluginFailure."""
    code = getattr(exc, "status", None)
    if isinstance(code, int) and code in _CODE_TO_NAME:
        return code
    for klass in type(exc).__mro__:
        if klass.__module__ == __name__ and klass.__name__ in _NAME_TO_CODE:
            return _NAME_TO_CODE[klass.__name__]
    return STATUS_PLUGIN_FAILURE


def error_record(exc: BaseException) -> Tuple[int, int, int, int, int, str, str, str, str]:
    """(code, flags, mode, step, last_step, tensor, worker, rule, message) of an exception, as the C
    ABI's vigil_error holds them. Any exception without an smdebug class is PluginFailure with the
    last line of its traceback as the message ("ZeroDivisionError: division by zero")."""
    import traceback

    code = status_of(exc)
    if code == STATUS_PLUGIN_FAILURE and not isinstance(exc, PluginFailure):
        lines = traceback.format_exception_only(type(exc), exc)
        message = lines[-1].strip() if lines else type(exc).__name__
    else:
        message = str(exc)
    flags = 0
    if getattr(exc, "has_reductions", False):
        flags |= 1
    if getattr(exc, "end_of_rule", False):
        flags |= 2

    def as_int(value: Any, default: int) -> int:
        try:
            return int(value)
        except (TypeError, ValueError):
            return default

    mode = as_int(getattr(exc, "mode", ModeKeys.GLOBAL), int(ModeKeys.GLOBAL))
    step = as_int(getattr(exc, "step", 0), 0)
    last_step = as_int(getattr(exc, "last_step", -1), -1)
    tensor = getattr(exc, "tname", None) or getattr(exc, "c_name", None) or ""
    worker = getattr(exc, "worker", None) or ""
    rule = getattr(exc, "rule_name", None) or ""
    return (code, flags, mode, step, last_step, str(tensor), str(worker), str(rule), message)


__all__ = [
    "SMDebugError", "SMDebugRuntimeError", "SMDebugTypeError", "SMDebugValueError", "SMDebugNotImplementedError",
    "SMDebugCustomerError",
    "StepNotYetAvailable", "MissingCollectionFiles", "IndexReaderException", "StepUnavailable",
    "TensorUnavailableForStep", "ShapeUnavailableForStep", "TensorUnavailable", "InvalidWorker",
    "NoMoreProfilerData", "NoMoreData", "RuleEvaluationConditionMet", "InsufficientInformationForRuleInvocation",
    "InvalidCollectionConfiguration", "VersionMismatch", "Cancelled", "Timeout", "PluginFailure",
    "from_status", "status_of", "error_record", "class_of_status",
]
