"""smdebug's rule API (``smdebug.rules``): the ``Rule`` base class, ``RequiredTensors`` and
``invoke_rule``, with smdebug's semantics; plus ``load`` for Vigil's plugin rules (built-in or C/C++),
which gives an object ``invoke_rule`` runs like a Python rule.
"""
from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from typing import Any, Iterable, List, Optional, Tuple, Union

from . import _vigil
from .exceptions import (NoMoreProfilerData, RuleEvaluationConditionMet, StepUnavailable, TensorUnavailable,
                         TensorUnavailableForStep)
from .locations import get_logger
from .modes import ModeKeys
from .trials import Trial, no_refresh

logger = get_logger("vigil.rules")


class RequiredTensorsForTrial:
    """What a rule reads from one trial at a step: tensor names and, per name, the steps."""

    def __init__(self, trial):
        self.trial = trial
        self._tensor_steps = {}  # name -> [steps], in the order added
        self._tensors = {}  # name -> Tensor

    def add(self, name, steps, should_match_regex=False):
        steps = [int(s) for s in steps]
        if should_match_regex:
            names = self.trial.tensor_names(regex=[name])
        else:
            if not self.trial.has_tensor(name):
                raise TensorUnavailable(name)
            names = [name]
        for n in names:
            self._tensor_steps.setdefault(n, []).extend(steps)
            if n not in self._tensors:
                self._tensors[n] = self.trial.tensor(n)

    def get_names(self):
        return list(self._tensor_steps)

    def get_tensor_steps(self, name):
        return self._tensor_steps[name]

    def get(self):
        """The required Tensor objects."""
        return list(self._tensors.values())

    def clear(self):
        self._tensor_steps.clear()
        self._tensors.clear()

    def fetch(self):
        """Waits for the union of the requested steps, then reads every requested value (so a rule
        sees the exceptions those reads raise before invoke_at_step runs)."""
        steps = sorted({s for ss in self._tensor_steps.values() for s in ss})
        if steps:
            self.trial.wait_for_steps(steps)
        for name, ss in self._tensor_steps.items():
            t = self._tensors[name]
            for s in ss:
                t.value(s)


class RequiredTensors:
    """smdebug's RequiredTensors: what a rule reads at a step from its base and other trials, fetched
    before invoke_at_step. ``trial=None`` means the base trial."""

    def __init__(self, base_trial, other_trials):
        self.base_trial = base_trial
        self.other_trials = list(other_trials or [])
        self._per_trial = [(t, RequiredTensorsForTrial(t)) for t in [base_trial] + self.other_trials]

    def _for(self, trial):
        trial = self.base_trial if trial is None else trial
        for t, req in self._per_trial:
            if t is trial:
                return req
        for t, req in self._per_trial:
            if t == trial:
                return req
        req = RequiredTensorsForTrial(trial)
        self._per_trial.append((trial, req))
        return req

    def add(self, name, steps, trial=None, should_match_regex=False):
        self._for(trial).add(name, steps, should_match_regex=should_match_regex)

    def get_names(self, trial=None):
        return self._for(trial).get_names()

    def get_tensor_steps(self, name, trial=None):
        return self._for(trial).get_tensor_steps(name)

    def get(self, trial=None):
        return self._for(trial).get()

    def clear(self):
        for _, req in self._per_trial:
            req.clear()

    _clear = clear

    def _as_requests(self):
        """[(trial_index, name, is_regex, steps)] for the host's prefetch (the rule's own trials)."""
        trials = [self.base_trial] + self.other_trials
        out = []
        for trial, req in self._per_trial:
            index = next((i for i, t in enumerate(trials) if t is trial), None)
            if index is not None:
                out.extend((index, name, False, steps) for name, steps in req._tensor_steps.items())
        return out

    def fetch(self):
        for _, req in self._per_trial:
            req.fetch()


class Actions:
    """smdebug's rule actions (``action_str``: a JSON list of ``{"name": "StopTraining" | "Email" |
    "SMS", ...}``). They need AWS services; Vigil logs what it would do."""

    def __init__(self, actions_str, rule_name):
        self.rule_name = rule_name
        self.actions = self._parse(actions_str)
        self._logger = get_logger("vigil.rules")

    @staticmethod
    def _parse(actions_str):
        if not actions_str:
            return []
        try:
            parsed = json.loads(actions_str)
        except (TypeError, ValueError):
            return []
        return parsed if isinstance(parsed, list) else [parsed]

    def invoke(self, message=""):
        for action in self.actions:
            self._logger.info("Rule %s would run action %s%s", self.rule_name, action,
                              ": " + message if message else "")


class Rule(ABC):
    """smdebug's Rule base class. Subclasses implement ``invoke_at_step(step)`` (a global step) and
    may implement ``set_required_tensors(step)`` with ``self.req_tensors.add(...)``. ``action_str``
    may be left out (smdebug 1.0.34 requires it; rules written for earlier releases do not pass it)."""

    def __init__(self, base_trial: Trial, action_str: str = "", other_trials: Optional[Iterable[Trial]] = None) -> None:
        self.base_trial = base_trial
        self.other_trials = list(other_trials or [])
        self.trials = [base_trial] + self.other_trials
        self.req_tensors = RequiredTensors(self.base_trial, self.other_trials)
        self.logger = get_logger("vigil.rules." + type(self).__name__)
        self.rule_name = self.__class__.__name__
        self.action_str = action_str
        self.actions = Actions(action_str, self.rule_name)
        self._evidence_sink = None  # set by the evaluator's Python plugin
        self.evidence: List[str] = []

    def set_required_tensors(self, step: int) -> None:
        pass

    @abstractmethod
    def invoke_at_step(self, step: int) -> bool:
        """True when the rule's condition is met at global step ``step``."""

    def report_evidence(self, evidence: Any) -> None:
        """Vigil extension: attach a JSON-serialisable object to the current step's verdict (shown in
        the evaluator's status file when the condition is met at this step)."""
        text = evidence if isinstance(evidence, str) else json.dumps(evidence)
        if self._evidence_sink is not None:
            self._evidence_sink(text)
        else:
            self.evidence.append(text)

    def run_actions(self) -> None:
        self.actions.invoke()

    def _invoke_prepared(self, step):
        """What Rule.invoke does after the base trial's wait: the caller holds no_refresh."""
        self.req_tensors.clear()
        self.set_required_tensors(step)
        self.req_tensors.fetch()
        return self.invoke_at_step(step)

    def invoke(self, step: int) -> None:
        self.base_trial.wait_for_steps([step])
        with no_refresh(self.trials):
            val = self._invoke_prepared(step)
        if val:
            self.run_actions()
            raise RuleEvaluationConditionMet(self.rule_name, step)


def invoke_rule(rule_obj: Union[Rule, PluginRule], start_step: int = 0, end_step: Optional[int] = None,
                raise_eval_cond: bool = False) -> None:
    """smdebug's invoke_rule: invokes the rule at each global step from start_step while
    ``end_step is None or step < end_step``. TensorUnavailableForStep, StepUnavailable and
    TensorUnavailable skip the step; RuleEvaluationConditionMet is raised if raise_eval_cond, else
    logged (the loop ends if end_of_rule); NoMoreProfilerData ends the loop; everything else
    propagates (NoMoreData is the normal end of a run without end_step)."""
    step = start_step if start_step is not None else 0
    name = getattr(rule_obj, "rule_name", type(rule_obj).__name__)
    logger.info("Started execution of rule %s at step %s", name, step)
    while (end_step is None) or (step < end_step):
        try:
            rule_obj.invoke(step)
        except (TensorUnavailableForStep, StepUnavailable, TensorUnavailable) as e:
            logger.debug(str(e))
        except RuleEvaluationConditionMet as e:
            if raise_eval_cond:
                raise e
            logger.debug(str(e))
            if e.end_of_rule:
                break
        except NoMoreProfilerData as e:
            logger.info("No more profiler data for rule %s at timestamp %s", name, e.timestamp)
            break
        step += 1
    logger.info("Ending execution of rule %s with step=%s", name, step - 1)


class PluginRule:
    """A rule served by a Vigil plugin (built-in, C or C++), created through the same host code as
    ``vigil evaluate``. Usable with ``invoke_rule``: ``invoke(step)`` waits for the step on the base
    trial, lets the rule declare and prefetch its tensors, invokes it, and raises the smdebug
    exception its status stands for (RuleEvaluationConditionMet when its condition is met)."""

    def __init__(self, instance, base_trial, other_trials):
        self._instance = instance
        self.base_trial = base_trial
        self.other_trials = list(other_trials)
        self.trials = [base_trial] + self.other_trials
        self.rule_name = instance.rule_name
        self.triggered_steps = []
        self.evidence = {}

    def invoke(self, step: int) -> None:
        self.base_trial.wait_for_steps([step])
        with no_refresh(self.trials):
            met, evidence, reported_name = self._instance.invoke(int(step))
        if evidence:
            self.evidence[step] = [json.loads(e) if _is_json(e) else e for e in evidence]
        if met:
            self.triggered_steps.append(step)
            raise RuleEvaluationConditionMet(reported_name or self.rule_name, step)

    def __repr__(self):
        return "<vigil PluginRule {}>".format(self.rule_name)


def _is_json(text):
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def _plugins(plugin_dir_or_file):
    """The plugin file or folder to use: the one given, else the installation's built-in plugins."""
    if plugin_dir_or_file is not None:
        return str(plugin_dir_or_file)
    from . import installation
    found = installation.plugin_dir()
    if found is None:
        raise FileNotFoundError("this vigil installation has no built-in plugin folder (lib/vigil/plugins above {}); "
                                "give a plugin file or folder".format(os.path.dirname(os.path.abspath(__file__))))
    return found


def list_plugin_rules(plugin_dir_or_file: Optional[str] = None) -> List[Tuple[str, str, str, List[str]]]:
    """[(id, name, description, [parameter names])] of the rules a plugin file or folder offers (by
    default, the installation's built-in plugins)."""
    return _vigil.plugin_rules(_plugins(plugin_dir_or_file))


def load(plugin_dir_or_file: Optional[str], rule_name: str, base_trial: Trial,
         other_trials: Optional[Iterable[Trial]] = None, configuration_name: Optional[str] = None,
         **params: Any) -> PluginRule:
    """Creates rule ``rule_name`` (its name, case-insensitive, or its id) from a plugin file or a
    folder of plugins (None: the installation's built-in plugins), on ``base_trial`` (and
    ``other_trials``), with ``params`` given as RuleParameters (converted with str(); validated by the
    host like ``vigil evaluate`` does). ``vigil_profile="calibrated"`` takes the calibrated profile's
    defaults (docs/verdict-quality.md)."""
    plugin_dir_or_file = _plugins(plugin_dir_or_file)
    other_trials = list(other_trials or [])
    for t in [base_trial] + other_trials:
        if not isinstance(t, Trial) or not isinstance(t._core, _vigil.TrialCore):
            raise TypeError("vigil.rules.load needs trials opened with vigil.create_trial")
    text_params = {k: _param_text(v) for k, v in params.items()}
    instance = _vigil.create_plugin_rule(plugin_dir_or_file, str(rule_name),
                                         [base_trial._core] + [t._core for t in other_trials], text_params,
                                         configuration_name or str(rule_name))
    return PluginRule(instance, base_trial, other_trials)


def _param_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


__all__ = ["Rule", "RequiredTensors", "RequiredTensorsForTrial", "Actions", "invoke_rule", "load", "list_plugin_rules", "PluginRule", "ModeKeys"]
