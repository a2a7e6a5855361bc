# An example custom rule file, written against smdebug's Rule API exactly as for SageMaker Debugger:
# it imports from smdebug.rules.rule and smdebug.core.modes, and runs unmodified both in
# `vigil evaluate` (RuleParameters source_s3_uri + rule_to_invoke, see python_rule_job.json) and in
# a Python process after vigil.compat.install() (see README.md).
import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.exceptions import TensorUnavailableForStep
from smdebug.rules.rule import Rule


class WeightUpdateTooSmall(Rule):
    """Met at a TRAIN step when, for a weight tensor, ||w(step) - w(previous TRAIN step)|| is below
    `threshold` times ||w(previous TRAIN step)||: the optimizer has (nearly) stopped moving it."""

    def __init__(self, base_trial, threshold="1e-3", weights_regex=".*weight"):
        super().__init__(base_trial, action_str="")
        self.threshold = float(threshold)
        self.weights_regex = weights_regex

    def _previous_train_step(self, name, step):
        mode, mode_step = self.base_trial.mode_modestep(step)
        if mode != ModeKeys.TRAIN:
            return None, None
        earlier = self.base_trial.tensor(name).prev_steps(mode_step, 2, mode=ModeKeys.TRAIN)
        if len(earlier) < 2 or earlier[-1] != mode_step:
            return None, None
        return mode_step, earlier[0]

    def set_required_tensors(self, step):
        for name in self.base_trial.tensor_names(regex=self.weights_regex):
            if name.startswith("gradient/"):
                continue
            current, previous = self._previous_train_step(name, step)
            if previous is not None:
                # Global steps of the two TRAIN mode steps: the host reads them before invoke_at_step.
                steps = [self.base_trial.global_step(ModeKeys.TRAIN, s) for s in (previous, current)]
                self.req_tensors.add(name, steps=steps)

    def invoke_at_step(self, step):
        met = False
        for name in self.req_tensors.get_names():
            current, previous = self._previous_train_step(name, step)
            tensor = self.base_trial.tensor(name)
            try:
                now = np.asarray(tensor.value(current, mode=ModeKeys.TRAIN), dtype=np.float64)
                before = np.asarray(tensor.value(previous, mode=ModeKeys.TRAIN), dtype=np.float64)
            except TensorUnavailableForStep:
                continue
            ratio = float(np.linalg.norm(now - before) / max(np.linalg.norm(before), 1e-30))
            self.logger.debug("%s: update ratio %.3g at step %d", name, ratio, step)
            if ratio < self.threshold:
                met = True
                if hasattr(self, "report_evidence"):  # Vigil only: shown in the status file's Triggers
                    self.report_evidence({"tensor": name, "update_ratio": ratio, "threshold": self.threshold})
        return met


class ActivationsMostlyOff(Rule):
    """Met at a step when the saved mean of a ReLU output (a reduction saved instead of the raw
    value) is below `threshold`."""

    def __init__(self, base_trial, threshold="0.15"):
        super().__init__(base_trial, action_str="")
        self.threshold = float(threshold)

    def invoke_at_step(self, step):
        met = False
        for name in self.base_trial.tensor_names(regex="relu"):
            mean = float(self.base_trial.tensor(name).reduction_value(step, "mean"))
            if mean < self.threshold:
                met = True
                if hasattr(self, "report_evidence"):
                    self.report_evidence({"tensor": name, "mean": mean, "threshold": self.threshold})
        return met
