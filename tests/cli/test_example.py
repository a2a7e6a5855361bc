"""examples/python_rule: the example rule file runs in `vigil evaluate` with the example job against
the example trial, and through vigil.rules.invoke_rule in Python with the same triggers."""
import importlib.util
import json
import os
import subprocess

from conftest import REPO
from real_readers import check_trials

import vigil
import vigil.compat
from vigil.rules import invoke_rule

EXAMPLE = os.path.join(REPO, "examples", "python_rule")


class Recorder:
    """Wraps a rule to record the steps where invoke_rule saw its condition met."""

    def __init__(self, rule):
        self.rule = rule
        self.rule_name = rule.rule_name
        self.triggered = []

    def invoke(self, step):
        from vigil.exceptions import RuleEvaluationConditionMet

        try:
            self.rule.invoke(step)
        except RuleEvaluationConditionMet:
            self.triggered.append(step)
            raise


def test_example_job(vigil_exe, example_trial, tmp_path):
    status = tmp_path / "status.json"
    proc = subprocess.run([vigil_exe, "evaluate", "--trial", example_trial, "--job",
                           os.path.join(EXAMPLE, "python_rule_job.json"), "--status-file", str(status)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    statuses = {s["RuleConfigurationName"]: s for s in json.loads(status.read_text())["DebugRuleEvaluationStatuses"]}
    with open(os.path.join(EXAMPLE, "python_rule_job.json")) as f:
        job = json.load(f)["DebugRuleConfigurations"]

    vigil.compat.install()
    spec = importlib.util.spec_from_file_location("training_rules", os.path.join(EXAMPLE, "training_rules.py"))
    rules = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rules)
    trial = vigil.create_trial(example_trial)
    for config in job:
        params = dict(config["RuleParameters"])
        cls = getattr(rules, params.pop("rule_to_invoke"))
        params.pop("source_s3_uri")
        start = int(params.pop("start_step", "0"))
        rec = Recorder(cls(trial, **params))
        invoke_rule(rec, start_step=start, end_step=trial.steps()[-1] + 1)
        s = statuses[config["RuleConfigurationName"]]
        assert rec.triggered, config["RuleConfigurationName"]
        assert [t["step"] for t in s["Triggers"]] == rec.triggered
        assert s["RuleEvaluationStatus"] == "IssuesFound"
        assert all(t["evidence"] for t in s["Triggers"])
    assert [t["step"] for t in statuses["WeightsStoppedMoving"]["Triggers"]] == [8, 11, 12, 13]
    assert [t["step"] for t in statuses["ReluMostlyOff"]["Triggers"]] == [10]


def test_the_real_smdebug_reads_the_example_trial_as_vigil_does(example_trial, smdebug_python):
    """The example trial, written by Vigil's C++ writer (write_example_trial), read by smdebug 1.0.34
    and by Vigil."""
    check_trials([example_trial], smdebug_python)
