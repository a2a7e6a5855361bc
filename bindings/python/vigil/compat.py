"""smdebug's import names for existing rule files and training scripts: after ``install()``, ``import smdebug...``
in this process resolves to Vigil. ``MODULES`` below is the one table of what each smdebug module
offers; docs/python.md lists it and tests/python/test_api_surface.py checks it against smdebug
1.0.34's public API (`../shared/spec/smdebug-api-surface.txt`), with the omissions it documents.
Any other smdebug module is not provided and its import fails with ModuleNotFoundError.

The framework hooks' modules (``smdebug.pytorch`` and its submodules, ``smdebug.xgboost``) import
their framework, so they are made when a script imports them, as smdebug's are: a missing framework
fails that import (ModuleNotFoundError), and no module in ``sys.modules`` is ever half made, with an
attribute lookup that imports (pickle, inspect and torch.compile's cache look names up on every
module there, and expect AttributeError at worst).
"""
import collections
import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from . import collection as _collection
from . import config_constants as _constants
from . import exceptions as _exceptions
from .capture import hook_config as _hook_config
from . import locations as _locations
from . import modes as _modes
from . import profiler as _profiler
from . import reduction_config as _reduction_config
from . import rules as _rules
from . import save_config as _save_config
from . import trials as _trials

_MARK = "__vigil_compat__"

# What of smdebug 1.0.34's public API (../shared/spec/smdebug-api-surface.txt) Vigil leaves out, on
# purpose, with the reason: fnmatch patterns over "module.Class.member" paths. The API-surface test
# checks everything else, and checks that each entry here is still missing (so an issue that adds
# one must remove its entry). docs/compatibility.md lists the same entries.
OMITTED = {
    "smdebug.profiler.system_metrics_reader.S3NumpySystemMetricsReader": "smdebug's numpy accumulator of system "
                                                                          "metrics into its own store files; "
                                                                          "S3SystemMetricsReader reads the same data",
    "smdebug.profiler.profiler_config_parser": "smdebug's in-hook config parser; Vigil's hooks read the profiler "
                                               "config through the C++ ProfilerConfig (vigil._vigil)",
    "smdebug.trials.local_trial.LocalIndexReader": "smdebug's Python index reader; Vigil's C++ host reads the "
                                                   "index (there is no reader object to hand out)",
    "smdebug.core.tensor.ModeSteps": "smdebug's in-memory step model; Vigil's lives in the C++ host",
    "smdebug.core.tensor.Step": "smdebug's in-memory step model; Vigil's lives in the C++ host",
    "smdebug.*.Tensor.add_step": "fills smdebug's in-memory model while it loads the index; the C++ host does "
                                 "that in Vigil",
    "smdebug.*.Tensor.add_reduction_step": "fills smdebug's in-memory model while it loads the index; the C++ "
                                           "host does that in Vigil",
}

# Signatures that differ on purpose: "module.Class.member" -> reason.
SIGNATURE_DIFFERENCES = {
    "smdebug.*.Rule": "action_str defaults to \"\": published rules written for earlier smdebug releases call "
                      "super().__init__(base_trial), which 1.0.34 rejects",
}


def _exception_names(*names):
    return {n: getattr(_exceptions, n) for n in names}


def _modules():
    """{module name: {attribute: object}}; submodules are added as attributes of their parents."""
    M, T, C, L, P = _modes, _trials, _collection, _locations, _profiler
    configs = dict(ReductionConfig=_reduction_config.ReductionConfig, SaveConfig=_save_config.SaveConfig,
                   SaveConfigMode=_save_config.SaveConfigMode)
    return {
        "smdebug": dict(modes=M.ModeKeys, ModeKeys=M.ModeKeys, CollectionKeys=C.CollectionKeys,
                        create_trial=T.create_trial, **configs, __version__="1.0.34+vigil"),
        "smdebug.exceptions": dict(modes=M.ModeKeys,
                                   **{n: getattr(_exceptions, n) for n in _exceptions.__all__
                                      if isinstance(getattr(_exceptions, n), type)}),
        "smdebug.core": {},
        "smdebug.core.modes": dict(ModeKeys=M.ModeKeys, ALLOWED_MODES=M.ALLOWED_MODES,
                                   ALLOWED_MODE_NAMES=M.ALLOWED_MODE_NAMES,
                                   MODE_STEP_PLUGIN_NAME=M.MODE_STEP_PLUGIN_NAME, MODE_PLUGIN_NAME=M.MODE_PLUGIN_NAME,
                                   str_to_mode_keys=L.str_to_mode_keys),
        "smdebug.core.collection": dict(Collection=C.Collection, CollectionKeys=C.CollectionKeys, ModeKeys=M.ModeKeys,
                                        **configs, **_exception_names("SMDebugTypeError", "SMDebugValueError")),
        "smdebug.core.reduction_config": dict(ReductionConfig=_reduction_config.ReductionConfig,
                                              ALLOWED_REDUCTIONS=_reduction_config.ALLOWED_REDUCTIONS,
                                              ALLOWED_NORMS=_reduction_config.ALLOWED_NORMS,
                                              get_logger=L.get_logger, split=_reduction_config.split,
                                              **_exception_names("SMDebugValueError")),
        "smdebug.core.save_config": dict(SaveConfig=_save_config.SaveConfig, SaveConfigMode=_save_config.SaveConfigMode,
                                         ModeKeys=M.ModeKeys, step_in_range=_save_config.step_in_range,
                                         **_exception_names("SMDebugTypeError", "SMDebugValueError")),
        "smdebug.core.tensor": dict(Tensor=T.Tensor, StepState=T.StepState, ModeKeys=M.ModeKeys,
                                    TensorLocation=L.TensorLocation, get_numpy_reduction=T.get_numpy_reduction,
                                    **_exception_names("InvalidWorker", "NoMoreData", "SMDebugNotImplementedError",
                                                       "SMDebugRuntimeError", "SMDebugValueError",
                                                       "ShapeUnavailableForStep", "StepNotYetAvailable",
                                                       "StepUnavailable", "TensorUnavailableForStep")),
        "smdebug.core.config_constants": {n: v for n, v in vars(_constants).items() if n.isupper()},
        "smdebug.trials": dict(create_trial=T.create_trial, Trial=T.Trial, LocalTrial=T.LocalTrial, S3Trial=T.S3Trial, Tensor=T.Tensor,
                               StepState=T.StepState),
        "smdebug.trials.trial": dict(
            Trial=T.Trial, Tensor=T.Tensor, StepState=T.StepState, Collection=C.Collection,
            CollectionKeys=C.CollectionKeys, ModeKeys=M.ModeKeys, IndexFileLocationUtils=L.IndexFileLocationUtils,
            TensorLocation=L.TensorLocation, TensorShape=L.TensorShape, flatten=L.flatten, get_logger=L.get_logger,
            get_worker_name_from_collection_file=L.get_worker_name_from_collection_file,
            has_training_ended=L.has_training_ended, match_inc=C.match_inc, refresh=T.refresh,
            reverse_reduction_tensor_name=L.reverse_reduction_tensor_name, serialize_tf_device=L.serialize_tf_device,
            **_exception_names("MissingCollectionFiles", "NoMoreData", "StepUnavailable", "TensorUnavailable")),
        "smdebug.trials.local_trial": dict(LocalTrial=T.LocalTrial, Trial=T.Trial, CollectionManager=C.CollectionManager,
                                           get_path_to_collections=L.get_path_to_collections,
                                           list_collection_files_in_directory=L.list_collection_files_in_directory),
        "smdebug.trials.utils": dict(LocalTrial=T.LocalTrial, S3Trial=T.S3Trial, create_trial=T.create_trial, is_s3=L.is_s3,
                                     ProfilerTrial=P.ProfilerTrial),
        "smdebug.rules": dict(Rule=_rules.Rule, invoke_rule=_rules.invoke_rule, RequiredTensors=_rules.RequiredTensors,
                              RequiredTensorsForTrial=_rules.RequiredTensorsForTrial),
        "smdebug.rules.rule": dict(Rule=_rules.Rule, RequiredTensors=_rules.RequiredTensors, Actions=_rules.Actions,
                                   ModeKeys=M.ModeKeys, get_logger=L.get_logger, no_refresh=T.no_refresh,
                                   **_exception_names("RuleEvaluationConditionMet")),
        "smdebug.rules.rule_invoker": dict(invoke_rule=_rules.invoke_rule, get_logger=L.get_logger,
                                           **_exception_names("NoMoreProfilerData", "RuleEvaluationConditionMet",
                                                              "StepUnavailable", "TensorUnavailable",
                                                              "TensorUnavailableForStep")),
        "smdebug.rules.req_tensors": dict(RequiredTensors=_rules.RequiredTensors,
                                          RequiredTensorsForTrial=_rules.RequiredTensorsForTrial,
                                          **_exception_names("TensorUnavailable")),
        "smdebug.pytorch": _Framework("vigil.pytorch"),
        "smdebug.pytorch.hook": _Framework("vigil.pytorch", ("Hook",)),
        "smdebug.pytorch.collection": _Framework("vigil.pytorch", ("Collection", "CollectionManager")),
        "smdebug.pytorch.singleton_utils": _Framework("vigil.pytorch", ("get_hook", "set_hook", "del_hook")),
        "smdebug.core.collection_manager": dict(CollectionManager=C.CollectionManager, Collection=C.Collection),
        "smdebug.core.json_config": dict(create_hook_from_json_config=_hook_config.create_hook_from_json_config),
        "smdebug.xgboost": _Framework("vigil.xgboost"),
        "smdebug.profiler": dict(TimeUnits=P.TimeUnits),
        "smdebug.profiler.profiler_constants": dict(TimeUnits=P.TimeUnits),
        "smdebug.profiler.metrics_reader_base": dict(MetricsReaderBase=P.MetricsReaderBase, TimeUnits=P.TimeUnits),
        "smdebug.profiler.system_metrics_reader": dict(
            SystemMetricsReader=P.SystemMetricsReader, LocalSystemMetricsReader=P.LocalSystemMetricsReader,
            S3SystemMetricsReader=P.S3SystemMetricsReader, MetricsReaderBase=P.MetricsReaderBase,
            TimeUnits=P.TimeUnits),
        "smdebug.profiler.algorithm_metrics_reader": dict(
            AlgorithmMetricsReader=P.AlgorithmMetricsReader, LocalAlgorithmMetricsReader=P.LocalAlgorithmMetricsReader,
            S3AlgorithmMetricsReader=P.S3AlgorithmMetricsReader, MetricsReaderBase=P.MetricsReaderBase,
            TimeUnits=P.TimeUnits),
        "smdebug.profiler.trace_event_file_parser": dict(
            TraceEvent=P.TraceEvent, TraceEventParser=P.TraceEventParser, ProcessInfo=P.ProcessInfo,
            ThreadInfo=P.ThreadInfo, TimeUnits=P.TimeUnits),
        "smdebug.profiler.analysis": {},
        "smdebug.profiler.analysis.utils": {},
        "smdebug.profiler.analysis.utils.profiler_data_to_pandas": dict(PandasFrame=P.PandasFrame,
                                                                        TimeUnits=P.TimeUnits),
        "smdebug.analysis": {},
        "smdebug.analysis.utils": dict(no_refresh=T.no_refresh, refresh=T.refresh, parse_bool=_parse_bool,
                                       parse_list_from_str=_parse_list_from_str),
    }


# A framework hook's module: `names` of the Vigil module `source` (None: its __all__), made when a
# script imports it (_FrameworkModules), since `source` imports the framework.
_Framework = collections.namedtuple("_Framework", "source names", defaults=(None,))


def _parse_bool(arg, default):
    """smdebug's rule-parameter boolean: a bool, or "true"/"false" in any case; None gives ``default``."""
    if arg is None:
        return default
    if isinstance(arg, bool):
        return arg
    text = str(arg).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ValueError("Invalid boolean value: {!r}".format(arg))


def _parse_list_from_str(arg, delimiter=","):
    """"a, b" -> ["a", "b"]; a list is returned as it is; None or "" give []."""
    if arg is None or arg == "":
        return []
    if isinstance(arg, (list, tuple)):
        return list(arg)
    return [x.strip() for x in str(arg).split(delimiter) if x.strip()]


def _build():
    """The modules made at install() (the framework hooks' are made on import), and the table of
    the framework hooks' modules."""
    table = _modules()
    framework = {name: spec for name, spec in table.items() if isinstance(spec, _Framework)}
    modules = {}
    for name, attrs in table.items():
        if name not in framework:
            m = types.ModuleType(name, "Vigil's {}".format(name))
            m.__dict__.update(attrs)
            setattr(m, _MARK, True)
            modules[name] = m
    for name in table:  # packages, and their submodules made now
        parent, _, leaf = name.rpartition(".")
        if parent in modules:
            modules[parent].__path__ = []
            if name in modules:
                setattr(modules[parent], leaf, modules[name])
    return modules, framework


class _FrameworkModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes a framework hook's module when a script imports it. The import machinery does the
    rest as for any module: the parent first, sys.modules, the parent's attribute, and nothing left
    behind when the framework is missing (its ModuleNotFoundError is the import's)."""

    def __init__(self):
        self.modules = {}  # name -> _Framework, set by install()

    def find_spec(self, fullname, path=None, target=None):
        spec = self.modules.get(fullname)  # called for every import of the process: a lookup only
        if spec is None or not is_installed():
            return None
        package = any(n.startswith(fullname + ".") for n in self.modules)
        return importlib.machinery.ModuleSpec(fullname, self, origin=spec.source, loader_state=spec,
                                              is_package=package)

    def create_module(self, spec):
        return None  # a plain module

    def exec_module(self, module):
        spec = module.__spec__.loader_state
        source = importlib.import_module(spec.source)
        module.__dict__.update({n: getattr(source, n) for n in spec.names or source.__all__})
        setattr(module, _MARK, True)


_FINDER = _FrameworkModules()


def install() -> None:
    """Makes ``smdebug`` and the submodules above resolve to Vigil in this process (sys.modules)."""
    if is_installed():
        return
    for name in [n for n in sys.modules if n == "smdebug" or n.startswith("smdebug.")]:
        del sys.modules[name]  # a real smdebug imported earlier: Vigil's names win from now on
    modules, _FINDER.modules = _build()
    sys.modules.update(modules)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == "smdebug" or n.startswith("smdebug.")]:
        if getattr(sys.modules[name], _MARK, False):
            del sys.modules[name]


def is_installed() -> bool:
    m = sys.modules.get("smdebug")
    return m is not None and bool(getattr(m, _MARK, False))


__all__ = ["install", "uninstall", "is_installed", "OMITTED", "SIGNATURE_DIFFERENCES"]
