"""The Python side of the evaluator's Python rule plugin (plugins/python/).

The plugin embeds CPython, imports this module, and for each rule configuration with a
``source_s3_uri`` calls ``prepare_rule`` as soon as the job is known (the host's ABI 1.4 preparation,
before the trials exist), then ``create_rule`` once they do: the rule file is run as a module (with smdebug's import
names resolving to Vigil), the class ``rule_to_invoke`` is instantiated on trials that call back
into the host through the plugin ABI (``_vigil.ApiTrialCore``), and the returned ``RuleRunner``
serves the plugin's required_tensors / invoke_at_step. Exceptions map to host status codes through
``vigil.exceptions.error_record``.
"""
import importlib.util
import logging
import os
import sys
import threading

from . import _vigil, compat
from .exceptions import RuleEvaluationConditionMet, error_record
from .trials import HostTrial

compat.install()

class _HostLogHandler(logging.Handler):
    """Sends a rule's log records to the host (vigil_host_api.log) for its session."""

    def __init__(self, sink):
        super().__init__(logging.DEBUG)
        self._sink = sink

    def emit(self, record):
        try:
            self._sink(int(record.levelno), self.format(record))
        except Exception:  # logging must never fail a rule
            pass


def _local_path(uri):
    uri = str(uri).strip()
    if uri.startswith("file://"):
        uri = uri[len("file://"):]
    if uri.startswith("s3://"):
        raise FileNotFoundError("Vigil runs local rule files only: " + uri)
    return os.path.abspath(os.path.expanduser(uri))


_loaded_files: dict = {}  # (path, mtime) -> the rule file run as a module, or the exception it raised
_load_lock = threading.Lock()  # a file is run once, whichever thread (preparation, creation) asks first


def _load_module(path):
    key = (path, os.stat(path).st_mtime_ns)
    with _load_lock:
        loaded = _loaded_files.get(key)
        if loaded is None:
            loaded = _run_file(path, "vigil_rule_file_{}".format(len(_loaded_files)))
            _loaded_files[key] = loaded
    if isinstance(loaded, BaseException):
        raise loaded  # the same error for every rule of the file, without running it again
    return loaded


def _run_file(path, name):
    """The module, or the exception running the file raised."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return ImportError("cannot load rule file " + path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        return e
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _rule_class(source, class_name):
    module = _load_module(_local_path(source))
    cls = getattr(module, class_name, None)
    if cls is None:
        raise AttributeError("rule file {} has no class {}".format(source, class_name))
    return cls


def prepare_rule(source, class_name):
    """The plugin's preparation (ABI 1.4), before the trials exist: runs the rule file and finds the
    class, raising what create_rule would raise; create_rule then reuses the file's module."""
    _rule_class(source, class_name)


class RuleRunner:
    """One rule instance: smdebug's Rule.invoke after the evaluator's wait for the step."""

    def __init__(self, rule):
        self.rule = rule
        self._prepared_step = None
        self._prepare_error = None

    def required_tensors(self, step):
        """Runs set_required_tensors(step); returns [(trial_index, name, is_regex, steps)]."""
        self._prepared_step = step
        self._prepare_error = None
        req = getattr(self.rule, "req_tensors", None)
        try:
            if req is not None:
                req._clear()
            self.rule.set_required_tensors(step)
        except BaseException as e:
            self._prepare_error = e
            raise
        return req._as_requests() if req is not None else []

    def invoke(self, step):
        """Fetches the required tensors and runs invoke_at_step; a true result raises
        RuleEvaluationConditionMet like smdebug's Rule.invoke."""
        rule = self.rule
        req = getattr(rule, "req_tensors", None)
        if self._prepared_step == step:
            error, self._prepare_error, self._prepared_step = self._prepare_error, None, None
            if error is not None:
                raise error
        else:
            if req is not None:
                req._clear()
            rule.set_required_tensors(step)
        if req is not None:
            req.fetch()
        val = rule.invoke_at_step(step)
        if val:
            if hasattr(rule, "run_actions"):
                rule.run_actions()
            raise RuleEvaluationConditionMet(getattr(rule, "rule_name", type(rule).__name__), step)
        return False


def host_trial(host_capsule, trial_capsule, name=""):
    return HostTrial(name, _vigil.ApiTrialCore(host_capsule, trial_capsule, True))


def create_rule(source, class_name, trials, params, instance_name, log_sink=None, evidence_sink=None):
    """Loads ``class_name`` from the rule file ``source`` and instantiates it as SageMaker's rule
    container does: ``cls(base_trial, [other_trials=...], **params)`` with string parameters."""
    cls = _rule_class(source, class_name)
    kwargs = dict(params)
    if len(trials) > 1:
        kwargs["other_trials"] = list(trials[1:])
    rule = cls(trials[0], **kwargs)
    logger = getattr(rule, "logger", None)
    if log_sink is not None and isinstance(logger, logging.Logger):
        logger.addHandler(_HostLogHandler(log_sink))
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
    if evidence_sink is not None and hasattr(rule, "_evidence_sink"):
        rule._evidence_sink = evidence_sink
    return RuleRunner(rule)


__all__ = ["create_rule", "prepare_rule", "host_trial", "RuleRunner", "error_record"]
