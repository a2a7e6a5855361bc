"""Python rule files in `vigil evaluate`: the fixtures' reference rules run UNMODIFIED as custom rule
files (RuleParameters source_s3_uri + rule_to_invoke + their own parameters) through the embedded
Python plugin, and the status file's Triggers are exactly smdebug's triggered_steps. A rule that
raises, and a file that does not compile, give that rule Error with the traceback's last line; the
other rules go on."""
import json
import os
import shutil
import subprocess
import textwrap
import time

import pytest

from conftest import expected, fixture_names, trial_dir
from rule_files import write_rule_file


IMAGE = "759209512951.dkr.ecr.us-west-2.amazonaws.com/sagemaker-debugger-rule-evaluator:latest"


def evaluate(vigil_exe, trial, rules, tmp_path, extra_args=()):
    job = {"DebugRuleConfigurations": [
        {"RuleConfigurationName": name,
         "RuleEvaluatorImage": IMAGE,
         "RuleParameters": params} for name, params in rules]}
    job_path = tmp_path / "job.json"
    status_path = tmp_path / "status.json"
    job_path.write_text(json.dumps(job))
    proc = subprocess.run([vigil_exe, "evaluate", "--trial", trial, "--job", str(job_path), "--status-file",
                           str(status_path), *extra_args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    statuses = json.loads(status_path.read_text())["DebugRuleEvaluationStatuses"]
    return {s["RuleConfigurationName"]: s for s in statuses}, proc


@pytest.mark.parametrize("fixture", fixture_names())
def test_reference_rules_as_rule_files(fixture, vigil_exe, tmp_path):
    path = write_rule_file(fixture, tmp_path)
    results = expected(fixture)["rules"]["results"]
    rules = []
    for name, res in results.items():
        params = {"source_s3_uri": path if len(rules) % 2 == 0 else "file://" + path, "rule_to_invoke": name}
        params.update(res["params"])
        params["start_step"] = str(res["start_step"])
        params["end_step"] = str(res["end_step"])
        rules.append((name + "Config", params))
    statuses, proc = evaluate(vigil_exe, trial_dir(fixture), rules, tmp_path)
    for name, res in results.items():
        s = statuses[name + "Config"]
        steps = [t["step"] for t in s.get("Triggers", [])]
        assert steps == res["triggered_steps"], (name, s, proc.stderr[-2000:])
        assert s.get("RuleToInvoke") == name
        if res["triggered_steps"]:
            assert s["RuleEvaluationStatus"] == "IssuesFound", s
            first = res["triggered_steps"][0]
            assert s["StatusDetails"].startswith(
                "RuleEvaluationConditionMet: Evaluation of the rule %s at step %d resulted in the condition being met"
                % (name, first)), s
        else:
            assert s["RuleEvaluationStatus"] == "NoIssuesFound", (s, proc.stderr[-2000:])


@pytest.mark.parametrize("fixture", fixture_names())
def test_reference_rules_without_end_step(fixture, vigil_exe, tmp_path):
    """No end_step: the walk ends with NoMoreData, which ends each rule normally (smdebug's
    end_step=None run raised NoMoreData after the same triggers)."""
    path = write_rule_file(fixture, tmp_path)
    results = expected(fixture)["rules"]["results"]
    rules = [(name, dict(res["params"], source_s3_uri=path, rule_to_invoke=name)) for name, res in results.items()]
    statuses, _ = evaluate(vigil_exe, trial_dir(fixture), rules, tmp_path)
    for name, res in results.items():
        variant = res.get("end_step_none", res)
        assert [t["step"] for t in statuses[name].get("Triggers", [])] == variant["triggered_steps"]


FAILING_RULES = textwrap.dedent('''
    from smdebug.rules.rule import Rule
    from smdebug.exceptions import TensorUnavailableForStep


    class Boom(Rule):
        def __init__(self, base_trial, at="4"):
            super().__init__(base_trial, action_str="")
            self.at = int(at)

        def invoke_at_step(self, step):
            if step >= self.at:
                return 1 / 0
            return False


    class SkipsThenFires(Rule):
        """smdebug exceptions keep their meaning: TensorUnavailableForStep skips the step."""
        def __init__(self, base_trial):
            super().__init__(base_trial, action_str="")

        def invoke_at_step(self, step):
            if step < 10:
                raise TensorUnavailableForStep("x", step)
            self.report_evidence({"step": step, "why": "test"})
            self.logger.info("fired at %d", step)
            return step in (10, 12)


    class NeedsTensors(Rule):
        def __init__(self, base_trial):
            super().__init__(base_trial, action_str="")

        def set_required_tensors(self, step):
            self.req_tensors.add("MSELoss_output_0", steps=[step])

        def invoke_at_step(self, step):
            return float(self.base_trial.tensor("MSELoss_output_0").value(step)) < 0
''')


def test_failing_rules_get_error_and_others_go_on(vigil_exe, tmp_path):
    good = tmp_path / "rules.py"
    good.write_text(FAILING_RULES)
    broken = tmp_path / "broken.py"
    broken.write_text("from smdebug.rules.rule import Rule\n\nclass Broken(Rule)\n    pass\n")
    vg = write_rule_file("vanishing_gradient", tmp_path)
    rules = [
        ("Boom", {"source_s3_uri": str(good), "rule_to_invoke": "Boom"}),
        ("Broken", {"source_s3_uri": str(broken), "rule_to_invoke": "Broken"}),
        ("NoClass", {"source_s3_uri": str(good), "rule_to_invoke": "NoSuchRule"}),
        ("NoFile", {"source_s3_uri": str(tmp_path / "missing.py"), "rule_to_invoke": "X"}),
        ("Skips", {"source_s3_uri": str(good), "rule_to_invoke": "SkipsThenFires"}),
        ("Needs", {"source_s3_uri": str(good), "rule_to_invoke": "NeedsTensors"}),
        ("VG", {"source_s3_uri": vg, "rule_to_invoke": "VanishingGradientLike", "threshold": "1e-7"}),
    ]
    statuses, proc = evaluate(vigil_exe, trial_dir("vanishing_gradient"), rules, tmp_path)
    assert statuses["Boom"]["RuleEvaluationStatus"] == "Error"
    assert statuses["Boom"]["StatusDetails"] == "ZeroDivisionError: division by zero"
    assert statuses["Broken"]["RuleEvaluationStatus"] == "Error"
    assert statuses["Broken"]["StatusDetails"] == "SyntaxError: expected ':'"
    assert statuses["NoClass"]["RuleEvaluationStatus"] == "Error"
    assert statuses["NoClass"]["StatusDetails"].startswith("AttributeError: ")
    assert statuses["NoFile"]["RuleEvaluationStatus"] == "Error"
    assert statuses["NoFile"]["StatusDetails"].startswith("FileNotFoundError: ")
    skips = statuses["Skips"]
    assert skips["RuleEvaluationStatus"] == "IssuesFound"
    assert [t["step"] for t in skips["Triggers"]] == [10, 12]
    assert skips["Triggers"][0]["evidence"] == [{"step": 10, "why": "test"}]
    assert "fired at 10" in proc.stdout + proc.stderr
    assert statuses["Needs"]["RuleEvaluationStatus"] == "NoIssuesFound"
    vg_expected = expected("vanishing_gradient")["rules"]["results"]["VanishingGradientLike"]["triggered_steps"]
    assert [t["step"] for t in statuses["VG"]["Triggers"]] == vg_expected


def test_rule_with_other_trials(vigil_exe, tmp_path):
    src = tmp_path / "multi.py"
    src.write_text(textwrap.dedent('''
        from smdebug.rules.rule import Rule

        class SameSteps(Rule):
            def __init__(self, base_trial, other_trials=None):
                super().__init__(base_trial, action_str="", other_trials=other_trials)

            def invoke_at_step(self, step):
                other = self.other_trials[0]
                return step not in other.steps() and step == max(self.base_trial.steps())
    '''))
    rules = [("Multi", {"source_s3_uri": str(src), "rule_to_invoke": "SameSteps",
                        "other_trial_0": trial_dir("mixed_dtypes")})]
    statuses, proc = evaluate(vigil_exe, trial_dir("vanishing_gradient"), rules, tmp_path)
    assert [t["step"] for t in statuses["Multi"].get("Triggers", [])] == [38], (statuses, proc.stderr)


def test_python_rules_under_isolate_give_the_same_statuses(vigil_exe, tmp_path):
    """--isolate runs the embedded-Python plugin's rules in their own process: the same verdicts,
    triggers and error messages as in-process, next to a built-in rule in another process."""
    good = tmp_path / "rules.py"
    good.write_text(FAILING_RULES)
    vg = write_rule_file("vanishing_gradient", tmp_path)
    rules = [
        ("Boom", {"source_s3_uri": str(good), "rule_to_invoke": "Boom"}),
        ("Skips", {"source_s3_uri": str(good), "rule_to_invoke": "SkipsThenFires"}),
        ("VG", {"source_s3_uri": vg, "rule_to_invoke": "VanishingGradientLike", "threshold": "1e-7"}),
        ("BuiltinVG", {"rule_to_invoke": "VanishingGradient", "threshold": "1e-7"}),
    ]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain, _ = evaluate(vigil_exe, trial_dir("vanishing_gradient"), rules, tmp_path / "a")
    isolated, _ = evaluate(vigil_exe, trial_dir("vanishing_gradient"), rules, tmp_path / "b", ["--isolate"])

    def comparable(s):
        return {k: v for k, v in s.items() if k != "LastModifiedTime"}

    assert {n: comparable(s) for n, s in isolated.items()} == {n: comparable(s) for n, s in plain.items()}
    assert isolated["Boom"]["StatusDetails"] == "ZeroDivisionError: division by zero"
    assert [t["step"] for t in isolated["Skips"]["Triggers"]] == [10, 12]
    assert isolated["VG"]["RuleEvaluationStatus"] == isolated["BuiltinVG"]["RuleEvaluationStatus"] == "IssuesFound"


def publish_trial(source, trial):
    """Copies a finished trial into a followed folder as a writer publishes it: each file whole (by
    rename), event files first, then index files, then the collection files the trial opens with,
    then the end marker."""
    def rank(rel):
        for i, top in enumerate(("events", "index", "collections")):
            if rel.startswith(top + os.sep):
                return i
        return 3
    files = [os.path.relpath(os.path.join(d, f), source) for d, _, names in os.walk(source) for f in names]
    for rel in sorted(files, key=lambda r: (rank(r), r)):
        dst = os.path.join(str(trial), rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(os.path.join(source, rel), dst + ".part")
        os.replace(dst + ".part", dst)


def test_python_rule_files_are_imported_before_the_trial_exists(vigil_exe, tmp_path):
    """The Python plugin's preparation (ABI 1.4): `vigil evaluate` runs each rule file, and finds its
    class, as soon as it knows the job, while the trial folder is still empty; each file runs once,
    and a file that raises gives every rule of it the same Error as without preparation."""
    imported = tmp_path / "imported.txt"
    good = tmp_path / "marker_rule.py"
    good.write_text(textwrap.dedent('''
        from smdebug.rules.rule import Rule

        with open({marker!r}, "a") as f:
            f.write("marker_rule\\n")

        class FiresAtTwo(Rule):
            def __init__(self, base_trial):
                super().__init__(base_trial, action_str="")

            def invoke_at_step(self, step):
                return step == 2
    ''').format(marker=str(imported)))
    raising = tmp_path / "raising_rule.py"
    raising.write_text(textwrap.dedent('''
        with open({marker!r}, "a") as f:
            f.write("raising_rule\\n")
        raise ValueError("this rule file cannot be used")
    ''').format(marker=str(imported)))
    trial = tmp_path / "trial"
    trial.mkdir()
    job = {"DebugRuleConfigurations": [
        {"RuleConfigurationName": name, "RuleEvaluatorImage": IMAGE, "RuleParameters": params} for name, params in [
            ("Fires", {"source_s3_uri": str(good), "rule_to_invoke": "FiresAtTwo"}),
            ("Raising1", {"source_s3_uri": str(raising), "rule_to_invoke": "X"}),
            ("Raising2", {"source_s3_uri": str(raising), "rule_to_invoke": "Y"}),
        ]]}
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job))
    status_path = tmp_path / "status.json"
    proc = subprocess.Popen([vigil_exe, "evaluate", "--trial", str(trial), "--job", str(job_path), "--status-file",
                             str(status_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # Both files run while the trial is empty (a guard against a hang, not a speed check: without
        # the preparation no rule file runs before the trial has its collection files).
        deadline = time.monotonic() + 120
        while not (imported.exists() and sorted(imported.read_text().split()) == ["marker_rule", "raising_rule"]):
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "the rule files were not run before the trial existed"
            time.sleep(0.05)
        assert list(trial.iterdir()) == []
        publish_trial(trial_dir("vanishing_gradient"), trial)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    statuses = {s["RuleConfigurationName"]: s for s in json.loads(status_path.read_text())["DebugRuleEvaluationStatuses"]}
    assert statuses["Fires"]["RuleEvaluationStatus"] == "IssuesFound", statuses
    assert [t["step"] for t in statuses["Fires"]["Triggers"]] == [2]
    for name in ("Raising1", "Raising2"):
        assert statuses[name]["RuleEvaluationStatus"] == "Error"
        assert statuses[name]["StatusDetails"] == "ValueError: this rule file cannot be used"
    assert sorted(imported.read_text().split()) == ["marker_rule", "raising_rule"]  # each file ran once
