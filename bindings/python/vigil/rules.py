"""smdebug's rule API (``smdebug.rules``): the ``Rule`` base class, ``RequiredTensors`` and
``invoke_rule``, with smdebug's semantics; plus ``load`` for Vigil's plugin rules (built-in or C/C++),
which gives an object ``invoke_rule`` runs like a Python rule.
"""
import json
import logging

from . import _vigil
from .exceptions import (NoMoreProfilerData, RuleEvaluationConditionMet, StepUnavailable, TensorUnavailable,
                         TensorUnavailableForStep)
from .modes import ModeKeys
from .trials import Trial, no_refresh

logger = logging.getLogger("vigil.rules")


class RequiredTensors:
    """smdebug's RequiredTensors: what a rule reads at a step, fetched before invoke_at_step."""

    def __init__(self, base_trial, other_trials=None):
        self.base_trial = base_trial
        self.other_trials = list(other_trials or [])
        self._requests = []  # (trial, name, steps, should_match_regex)

    def _clear(self):
        self._requests = []

    clear = _clear

    def add(self, name, steps, trial=None, should_match_regex=False):
        trial = self.base_trial if trial is None else trial
        steps = [int(s) for s in steps]
        if should_match_regex:
            for n in trial.tensor_names(regex=[name]):
                self._requests.append((trial, n, steps, False))
        else:
            if not trial.has_tensor(name):
                raise TensorUnavailable(name)
            self._requests.append((trial, name, steps, False))

    def get_names(self, trial=None):
        trial = self.base_trial if trial is None else trial
        return sorted({n for t, n, _, _ in self._requests if t is trial})

    def _trial_index(self, trial):
        if trial is self.base_trial:
            return 0
        for i, t in enumerate(self.other_trials):
            if t is trial:
                return i + 1
        return None

    def _as_requests(self):
        """[(trial_index, name, is_regex, steps)] for the host's prefetch."""
        out = []
        for trial, name, steps, is_regex in self._requests:
            i = self._trial_index(trial)
            if i is not None:
                out.append((i, name, is_regex, steps))
        return out

    def fetch(self):
        """Waits for the requested steps of each trial, then reads every requested value (so a rule
        sees the exceptions those reads raise before invoke_at_step runs)."""
        by_trial = {}
        for trial, name, steps, _ in self._requests:
            by_trial.setdefault(id(trial), (trial, set()))[1].update(steps)
        for trial, steps in by_trial.values():
            if steps:
                trial.wait_for_steps(sorted(steps))
        for trial, name, steps, _ in self._requests:
            t = trial.tensor(name)
            for s in steps:
                t.value(s)


class Rule:
    """smdebug's Rule base class. Subclasses implement ``invoke_at_step(step)`` (a global step) and
    may implement ``set_required_tensors(step)`` with ``self.req_tensors.add(...)``."""

    def __init__(self, base_trial, action_str="", other_trials=None):
        self.base_trial = base_trial
        self.other_trials = list(other_trials or [])
        self.trials = [base_trial] + self.other_trials
        self.req_tensors = RequiredTensors(self.base_trial, self.other_trials)
        self.logger = logging.getLogger("vigil.rules." + type(self).__name__)
        self.rule_name = self.__class__.__name__
        self.action_str = action_str
        self.actions = self._parse_actions(action_str)
        self._evidence_sink = None  # set by the evaluator's Python plugin
        self.evidence = []

    @staticmethod
    def _parse_actions(action_str):
        if not action_str:
            return []
        try:
            parsed = json.loads(action_str)
        except (TypeError, ValueError):
            return []
        return parsed if isinstance(parsed, list) else [parsed]

    def set_required_tensors(self, step):
        pass

    def invoke_at_step(self, step):
        raise NotImplementedError

    def report_evidence(self, evidence):
        """Vigil extension: attach a JSON-serialisable object to the current step's verdict (shown in
        the evaluator's status file when the condition is met at this step)."""
        text = evidence if isinstance(evidence, str) else json.dumps(evidence)
        if self._evidence_sink is not None:
            self._evidence_sink(text)
        else:
            self.evidence.append(text)

    def run_actions(self):
        """Actions (email, SMS, stop training) need AWS; Vigil logs what it would do."""
        for action in self.actions:
            self.logger.info("Rule %s would run action %s", self.rule_name, action)

    def _invoke_prepared(self, step):
        """What Rule.invoke does after the base trial's wait: the caller holds no_refresh."""
        self.req_tensors._clear()
        self.set_required_tensors(step)
        self.req_tensors.fetch()
        return self.invoke_at_step(step)

    def invoke(self, step):
        self.base_trial.wait_for_steps([step])
        with no_refresh(self.trials):
            val = self._invoke_prepared(step)
        if val:
            self.run_actions()
            raise RuleEvaluationConditionMet(self.rule_name, step)


def invoke_rule(rule_obj, start_step=0, end_step=None, raise_eval_cond=False):
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

    def invoke(self, step):
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


def list_plugin_rules(plugin_dir_or_file):
    """[(id, name, description, [parameter names])] of the rules a plugin file or folder offers."""
    return _vigil.plugin_rules(str(plugin_dir_or_file))


def load(plugin_dir_or_file, rule_name, base_trial, other_trials=None, configuration_name=None, **params):
    """Creates rule ``rule_name`` (its name, case-insensitive, or its id) from a plugin file or a
    folder of plugins, on ``base_trial`` (and ``other_trials``), with ``params`` given as
    RuleParameters (converted with str(); validated by the host like ``vigil evaluate`` does)."""
    other_trials = list(other_trials or [])
    for t in [base_trial] + other_trials:
        if not isinstance(t, Trial) or not isinstance(t._core, _vigil.TrialCore):
            raise TypeError("vigil.rules.load needs trials opened with vigil.create_trial")
    text_params = {k: _param_text(v) for k, v in params.items()}
    instance = _vigil.create_plugin_rule(str(plugin_dir_or_file), str(rule_name),
                                         [base_trial._core] + [t._core for t in other_trials], text_params,
                                         configuration_name or str(rule_name))
    return PluginRule(instance, base_trial, other_trials)


def _param_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


__all__ = ["Rule", "RequiredTensors", "invoke_rule", "load", "list_plugin_rules", "PluginRule", "ModeKeys"]
