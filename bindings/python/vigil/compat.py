"""smdebug's import names for existing rule files: after ``install()``, ``import smdebug...`` in this
process resolves to Vigil. Covered modules (see docs/python.md):

    smdebug                      ModeKeys, create_trial, exceptions, rules, trials, core, analysis
    smdebug.exceptions           every smdebug exception class
    smdebug.core, smdebug.core.modes           ModeKeys, ALLOWED_MODES, ALLOWED_MODE_NAMES
    smdebug.trials, smdebug.trials.trial       create_trial, Trial, Tensor, StepState
    smdebug.rules                Rule, invoke_rule, RequiredTensors
    smdebug.rules.rule           Rule
    smdebug.rules.rule_invoker   invoke_rule
    smdebug.rules.req_tensors    RequiredTensors
    smdebug.analysis, smdebug.analysis.utils   no_refresh, refresh

Any other smdebug module (hooks, profiler, built-in rules as Python classes) is not provided and its
import fails with ModuleNotFoundError.
"""
import sys
import types

from . import exceptions as _exceptions
from . import modes as _modes
from . import rules as _rules
from . import trials as _trials

_MARK = "__vigil_compat__"


def _module(name, doc, package=False, **attrs):
    m = types.ModuleType(name, doc)
    if package:
        m.__path__ = []
    m.__dict__.update(attrs)
    setattr(m, _MARK, True)
    return m


def _public(module):
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    return {n: getattr(module, n) for n in names if hasattr(module, n)}


def _build():
    exceptions = _module("smdebug.exceptions", "Vigil's smdebug exceptions", **_public(_exceptions))
    core_modes = _module("smdebug.core.modes", "Vigil's ModeKeys", ModeKeys=_modes.ModeKeys,
                         ALLOWED_MODES=_modes.ALLOWED_MODES, ALLOWED_MODE_NAMES=_modes.ALLOWED_MODE_NAMES,
                         MODE_STEP_PLUGIN_NAME=_modes.MODE_STEP_PLUGIN_NAME, MODE_PLUGIN_NAME=_modes.MODE_PLUGIN_NAME)
    core = _module("smdebug.core", "Vigil's smdebug.core (modes only)", package=True, modes=core_modes)
    trial_mod = _module("smdebug.trials.trial", "Vigil's Trial", Trial=_trials.Trial, Tensor=_trials.Tensor,
                        StepState=_trials.StepState)
    trials = _module("smdebug.trials", "Vigil's trials", package=True, trial=trial_mod, **_public(_trials))
    rule = _module("smdebug.rules.rule", "Vigil's Rule", Rule=_rules.Rule, RequiredTensors=_rules.RequiredTensors,
                   RuleEvaluationConditionMet=_exceptions.RuleEvaluationConditionMet, ModeKeys=_modes.ModeKeys)
    rule_invoker = _module("smdebug.rules.rule_invoker", "Vigil's invoke_rule", invoke_rule=_rules.invoke_rule)
    req_tensors = _module("smdebug.rules.req_tensors", "Vigil's RequiredTensors",
                          RequiredTensors=_rules.RequiredTensors)
    rules = _module("smdebug.rules", "Vigil's rules", package=True, Rule=_rules.Rule, invoke_rule=_rules.invoke_rule,
                    RequiredTensors=_rules.RequiredTensors, rule=rule, rule_invoker=rule_invoker,
                    req_tensors=req_tensors)
    analysis_utils = _module("smdebug.analysis.utils", "Vigil's no_refresh / refresh",
                             no_refresh=_trials.no_refresh, refresh=_trials.refresh)
    analysis = _module("smdebug.analysis", "Vigil's smdebug.analysis (utils only)", package=True,
                       utils=analysis_utils)
    top = _module("smdebug", "Vigil's implementation of smdebug's read and rule API", package=True,
                  ModeKeys=_modes.ModeKeys, create_trial=_trials.create_trial, exceptions=exceptions, core=core,
                  trials=trials, rules=rules, analysis=analysis, __version__="vigil")
    return {m.__name__: m for m in (top, exceptions, core, core_modes, trials, trial_mod, rules, rule, rule_invoker,
                                    req_tensors, analysis, analysis_utils)}


def install():
    """Makes ``smdebug`` and the submodules above resolve to Vigil in this process (sys.modules)."""
    if is_installed():
        return
    for name in [n for n in sys.modules if n == "smdebug" or n.startswith("smdebug.")]:
        del sys.modules[name]  # a real smdebug imported earlier: Vigil's names win from now on
    sys.modules.update(_build())


def uninstall():
    for name in [n for n in sys.modules if n == "smdebug" or n.startswith("smdebug.")]:
        if getattr(sys.modules[name], _MARK, False):
            del sys.modules[name]


def is_installed():
    m = sys.modules.get("smdebug")
    return m is not None and getattr(m, _MARK, False)


__all__ = ["install", "uninstall", "is_installed"]
