"""One `vigil evaluate` job with every built-in rule that applies to a deep-learning run, on each real
smdebug fixture, through the status file:

* VanishingGradient, ExplodingTensor and LossNotDecreasing (comparison=window_mean, the reference
  rule's reading) fire at exactly the steps of the fixture's reference rules (expected.json);
* AllZero, UnchangedTensor and DeadRelu fire at exactly the steps a numpy oracle computes from the
  values;
* SimilarAcrossRuns of a run against itself, TensorVariance without thresholds, and the rules whose
  inputs the run never saved (tanh/sigmoid outputs, labels/predictions) find nothing;
* every rule of the job, including those without an oracle here (their logic is checked by the
  pathology labels and the per-rule tests), gives the same status and triggers as when it runs alone:
  the shared trial and value cache change nothing.
"""
import json
import re
import subprocess

import numpy as np
import pytest

import vigil
from conftest import expected, fixture_names, trial_dir

IMAGE = "759209512951.dkr.ecr.us-west-2.amazonaws.com/sagemaker-debugger-rule-evaluator:latest"
PARAMS_TENSORS = "weights,biases,gradients"


def job_rules(trial):
    """(RuleConfigurationName, RuleParameters) of the job."""
    return [
        ("VanishingGradient", {"rule_to_invoke": "VanishingGradient", "threshold": "1e-7"}),
        ("ExplodingTensor", {"rule_to_invoke": "ExplodingTensor"}),
        ("LossNotDecreasingLike", {"rule_to_invoke": "LossNotDecreasing", "num_steps": "5", "diff_percent": "0",
                                   "mode": "TRAIN", "comparison": "window_mean"}),
        ("LossNotDecreasing", {"rule_to_invoke": "LossNotDecreasing"}),
        ("AllZero", {"rule_to_invoke": "AllZero", "collection_names": PARAMS_TENSORS}),
        ("UnchangedTensor", {"rule_to_invoke": "UnchangedTensor", "collection_names": PARAMS_TENSORS}),
        ("TensorVariance", {"rule_to_invoke": "TensorVariance", "collection_names": PARAMS_TENSORS}),
        ("WeightUpdateRatio", {"rule_to_invoke": "WeightUpdateRatio"}),
        ("PoorWeightInitialization", {"rule_to_invoke": "PoorWeightInitialization"}),
        ("Overfit", {"rule_to_invoke": "Overfit"}),
        ("Overtraining", {"rule_to_invoke": "Overtraining"}),
        ("StalledTrainingRule", {"rule_to_invoke": "StalledTrainingRule"}),
        ("SimilarAcrossRuns", {"rule_to_invoke": "SimilarAcrossRuns", "other_trials": trial}),
        ("DeadRelu", {"rule_to_invoke": "DeadRelu"}),
        ("SaturatedActivation", {"rule_to_invoke": "SaturatedActivation"}),
        ("ClassImbalance", {"rule_to_invoke": "ClassImbalance"}),
        ("Confusion", {"rule_to_invoke": "Confusion"}),
    ]


def run_job(vigil_exe, trial, rules, tmp_path, tag):
    job = {"DebugRuleConfigurations": [
        {"RuleConfigurationName": name, "RuleEvaluatorImage": IMAGE, "RuleParameters": params}
        for name, params in rules]}
    job_path = tmp_path / ("job-%s.json" % tag)
    status_path = tmp_path / ("status-%s.json" % tag)
    job_path.write_text(json.dumps(job))
    proc = subprocess.run([vigil_exe, "evaluate", "--trial", trial, "--job", str(job_path), "--status-file",
                           str(status_path), "--quiet"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    statuses = json.loads(status_path.read_text())["DebugRuleEvaluationStatuses"]
    assert [s["RuleConfigurationName"] for s in statuses] == [name for name, _ in rules]
    return {s["RuleConfigurationName"]: s for s in statuses}


def trigger_steps(status):
    return [t["step"] for t in status.get("Triggers", [])]


def verdict(status):
    return status["RuleEvaluationStatus"], trigger_steps(status)


def expect_steps(status, steps):
    assert trigger_steps(status) == steps, status
    assert status["RuleEvaluationStatus"] == ("IssuesFound" if steps else "NoIssuesFound"), status
    if steps:
        assert status["StatusDetails"].startswith(
            "RuleEvaluationConditionMet: Evaluation of the rule %s at step %d resulted in the condition being met"
            % (status["RuleToInvoke"], steps[0])), status
        assert all(t["evidence"] for t in status["Triggers"]), status


def selected(trial):
    names = set()
    for c in PARAMS_TENSORS.split(","):
        names.update(trial.tensor_names(collection=c))
    return sorted(names)


def saved_values(trial, name, step):
    """{worker: value} of the tensor at the global step, for the workers that saved its value."""
    t = trial.tensor(name)
    if step not in t.steps():
        return {}
    out = {}
    for w in t.workers(step):
        try:
            out[w] = np.asarray(t.value(step, worker=w))
        except vigil.exceptions.TensorUnavailableForStep:
            pass  # reductions or shape only
    return out


def all_zero_oracle(trial):
    """Steps where some selected tensor is 100 % zeros (threshold_percentage default 100)."""
    fired = []
    for step in trial.steps():
        for name in selected(trial):
            if any(v.size and np.count_nonzero(v == 0) == v.size for v in saved_values(trial, name, step).values()):
                fired.append(step)
                break
    return fired


def dead_relu_oracle(trial, threshold_inactivity=1.0, threshold_layer=50.0):
    """Steps where, for some tensor matching .*relu_output and worker, more than threshold_layer % of
    the units (positions past the batch axis) are active (> 0) in fewer than threshold_inactivity %
    of the samples."""
    fired = []
    for step in trial.steps():
        for name in trial.tensor_names(regex=[".*relu_output"]):
            for v in saved_values(trial, name, step).values():
                if not v.size:
                    continue
                batch = v.reshape(v.shape[0], -1) if v.ndim >= 2 else v.reshape(1, -1)
                activity = 100.0 * np.count_nonzero(batch > 0, axis=0) / batch.shape[0]
                if 100.0 * np.count_nonzero(activity < threshold_inactivity) / activity.size > threshold_layer:
                    fired.append(step)
                    break
            if fired and fired[-1] == step:
                break
    return fired


def unchanged_oracle(trial, num_steps=3, rtol=1e-5, atol=1e-8):
    """Steps where, for some selected tensor and worker, the values at the last num_steps saved steps
    (the step included) are all numpy.allclose to the value at the step."""
    fired = []
    for step in trial.steps():
        hit = False
        for name in selected(trial):
            history = [s for s in trial.tensor(name).steps() if s <= step]
            if step not in history or len(history) < num_steps:
                continue
            window = history[-num_steps:]
            for worker, cur in saved_values(trial, name, step).items():
                prev = [saved_values(trial, name, p).get(worker) for p in window]
                if all(p is not None and p.shape == cur.shape and np.allclose(p, cur, rtol=rtol, atol=atol)
                       for p in prev):
                    hit = True
        if hit:
            fired.append(step)
    return fired


@pytest.mark.parametrize("fixture", fixture_names())
def test_one_job_with_every_applicable_rule(fixture, vigil_exe, tmp_path):
    trial_path = trial_dir(fixture)
    rules = job_rules(trial_path)
    statuses = run_job(vigil_exe, trial_path, rules, tmp_path, "all")
    assert all(s["RuleEvaluationStatus"] in ("IssuesFound", "NoIssuesFound") for s in statuses.values()), statuses

    reference = expected(fixture)["rules"]["results"]
    expect_steps(statuses["VanishingGradient"], reference["VanishingGradientLike"]["triggered_steps"])
    expect_steps(statuses["ExplodingTensor"], reference["ExplodingTensorLike"]["triggered_steps"])
    expect_steps(statuses["LossNotDecreasingLike"], reference["LossNotDecreasingLike"]["triggered_steps"])

    trial = vigil.create_trial(trial_path)
    expect_steps(statuses["AllZero"], all_zero_oracle(trial))
    expect_steps(statuses["UnchangedTensor"], unchanged_oracle(trial))

    expect_steps(statuses["SimilarAcrossRuns"], [])  # a run is similar to itself
    expect_steps(statuses["TensorVariance"], [])     # no max_threshold/min_threshold: can never fire
    expect_steps(statuses["DeadRelu"], dead_relu_oracle(trial))
    names = trial.tensor_names()
    assert not [n for n in names if re.search(r"tanh|sigmoid", n, re.IGNORECASE) and "output" in n]
    assert not [n for n in names if re.search(r"label|prediction", n, re.IGNORECASE)]
    for name in ("SaturatedActivation", "ClassImbalance", "Confusion"):
        expect_steps(statuses[name], [])  # their inputs were never saved

    # Each rule alone gives the same verdict as in the job.
    for name, params in rules:
        alone = run_job(vigil_exe, trial_path, [(name, params)], tmp_path, name)[name]
        assert verdict(alone) == verdict(statuses[name]), (name, alone, statuses[name])
        assert alone.get("Triggers", []) == statuses[name].get("Triggers", []), name
