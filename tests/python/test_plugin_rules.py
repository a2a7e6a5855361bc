"""vigil.rules.load: plugin rules (C, C++, built-in, and the Python plugin itself) created through the
same host code as `vigil evaluate` (PluginRegistry, parameter validation, RuleInstance), driven by
smdebug's invoke_rule."""
import os
import subprocess
import json

import pytest

from conftest import BUILD, expected, trial_dir
from rule_files import write_rule_file

import vigil
from vigil import _vigil
from vigil.exceptions import RuleEvaluationConditionMet, SMDebugValueError
from vigil.rules import invoke_rule, list_plugin_rules, load
from vigil.trials import HostTrial, Trial

C_PLUGIN = os.path.join(BUILD, "examples", "plugins", "libexample_c_minimal_rule.so")


@pytest.fixture(scope="module")
def c_plugin():
    if not os.path.exists(C_PLUGIN):
        pytest.fail("example C plugin not built: " + C_PLUGIN)
    return C_PLUGIN


def test_list_rules(c_plugin, plugin_dir):
    rules = list_plugin_rules(c_plugin)
    assert rules[0][:2] == ("vigil.example.c.LossAboveThreshold", "LossAboveThreshold") and rules[0][3] == ["threshold"]
    names = [r[1] for r in list_plugin_rules(plugin_dir)]
    assert "PythonRule" in names


def test_c_rule_with_invoke_rule_matches_vigil_evaluate(c_plugin, vigil_exe, tmp_path):
    trial = vigil.create_trial(trial_dir("mlp_healthy"))
    rule = load(c_plugin, "LossAboveThreshold", trial, threshold=1.0)
    assert rule.rule_name == "LossAboveThreshold"
    invoke_rule(rule, end_step=30)
    assert rule.triggered_steps, "the loss starts above 1.0"
    assert rule.evidence[rule.triggered_steps[0]][0]["threshold"] == 1
    # The same rule through the evaluator triggers at the same steps.
    status = tmp_path / "status.json"
    proc = subprocess.run([vigil_exe, "evaluate", "--trial", trial_dir("mlp_healthy"), "--plugins",
                           os.path.dirname(c_plugin), "--rule", "LossAboveThreshold", "--param", "threshold=1.0",
                           "--status-file", str(status)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    s = json.loads(status.read_text())["DebugRuleEvaluationStatuses"][0]
    assert [t["step"] for t in s["Triggers"]] == rule.triggered_steps


def test_condition_met_and_errors(c_plugin):
    trial = vigil.create_trial(trial_dir("mlp_healthy"))
    rule = load(c_plugin, "lossabovethreshold", trial, threshold="1.0")  # names are case-insensitive
    with pytest.raises(RuleEvaluationConditionMet) as info:
        invoke_rule(rule, start_step=0, raise_eval_cond=True)
    assert info.value.step == 0 and info.value.rule_name == "LossAboveThreshold"
    with pytest.raises(SMDebugValueError, match="unknown rule 'Nope'"):
        load(c_plugin, "Nope", trial)
    with pytest.raises(SMDebugValueError, match="invalid value 'abc'"):
        load(c_plugin, "LossAboveThreshold", trial, threshold="abc")
    with pytest.raises(SMDebugValueError, match="unknown parameter|not a parameter|does not take"):
        load(c_plugin, "LossAboveThreshold", trial, threshold="1", colour="red")
    with pytest.raises(TypeError):
        load(c_plugin, "LossAboveThreshold", HostTrial("mlp_healthy", _vigil.open_api_trial(trial_dir("mlp_healthy"))))


def test_python_plugin_in_process(plugin_dir, tmp_path):
    """The Python rule plugin loaded into this Python process serves a rule file too."""
    path = write_rule_file("vanishing_gradient", tmp_path)
    trial = vigil.create_trial(trial_dir("vanishing_gradient"))
    rule = load(plugin_dir, "PythonRule", trial, source_s3_uri=path, rule_to_invoke="VanishingGradientLike",
                threshold="1e-7")
    invoke_rule(rule, end_step=39)
    res = expected("vanishing_gradient")["rules"]["results"]["VanishingGradientLike"]
    assert rule.triggered_steps == res["triggered_steps"]
    with pytest.raises(RuleEvaluationConditionMet) as info:
        invoke_rule(rule, raise_eval_cond=True)
    assert str(info.value) == res["raise_eval_cond_true"]["exception"]["message"]  # names the Python class


def test_python_rule_files_pass_the_plugin_trust_check_in_process(plugin_dir, tmp_path, monkeypatch):
    """Issue 28, item 4: vigil.rules.load runs a rule file only where vigil evaluate would: a relative
    path is refused (never resolved against the working directory), and so is a file others may write."""
    path = write_rule_file("vanishing_gradient", tmp_path)
    trial = vigil.create_trial(trial_dir("vanishing_gradient"))
    monkeypatch.chdir(os.path.dirname(path))
    with pytest.raises(SMDebugValueError, match="relative path"):
        load(plugin_dir, "PythonRule", trial, source_s3_uri=os.path.basename(path), rule_to_invoke="VanishingGradientLike")
    os.chmod(path, 0o666)
    with pytest.raises(SMDebugValueError, match="writ"):
        load(plugin_dir, "PythonRule", trial, source_s3_uri=path, rule_to_invoke="VanishingGradientLike")
    os.chmod(path, 0o644)
    load(plugin_dir, "PythonRule", trial, source_s3_uri=path, rule_to_invoke="VanishingGradientLike")


@pytest.mark.parametrize("fixture", ["vanishing_gradient", "mlp_healthy", "loss_not_decreasing"])
def test_builtin_rules_agree_with_vigil_evaluate(fixture, plugin_dir, vigil_exe, tmp_path):
    """Built-in rules with their defaults: invoke_rule in Python triggers where the evaluator does."""
    names = ["VanishingGradient", "ExplodingTensor", "LossNotDecreasing"]
    available = {r[1] for r in list_plugin_rules(plugin_dir)}
    assert set(names) <= available, available
    args = [vigil_exe, "evaluate", "--trial", trial_dir(fixture), "--status-file", str(tmp_path / "s.json")]
    for n in names:
        args += ["--rule", n]
    proc = subprocess.run(args, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    statuses = {s["RuleConfigurationName"]: s for s in
                json.loads((tmp_path / "s.json").read_text())["DebugRuleEvaluationStatuses"]}
    trial = vigil.create_trial(trial_dir(fixture))
    for n in names:
        rule = load(plugin_dir, n, trial)
        try:
            invoke_rule(rule)
        except Exception as e:  # noqa: BLE001
            assert type(e).__name__ == "NoMoreData", e  # the normal end of an unbounded run
        assert rule.triggered_steps == [t["step"] for t in statuses[n].get("Triggers", [])], n


def test_the_profile_key_chooses_the_defaults_as_in_vigil_evaluate(plugin_dir, vigil_exe, tmp_path):
    """vigil_profile in Python as in a job: the same triggers as `vigil evaluate --profile`, and on a
    healthy classifier Confusion's SageMaker defaults fire where the calibrated ones do not."""
    run = os.path.join(os.path.dirname(trial_dir("mlp_healthy")), "..", "pathologies", "healthy_mlp_s1")
    triggered = {}
    for profile in ("sagemaker", "calibrated"):
        status_file = tmp_path / f"{profile}.json"
        subprocess.run([vigil_exe, "evaluate", "--quiet", "--trial", run, "--rule", "Confusion", "--profile", profile,
                        "--status-file", str(status_file)], check=True, capture_output=True)
        status = json.loads(status_file.read_text())["DebugRuleEvaluationStatuses"][0]
        rule = load(plugin_dir, "Confusion", vigil.create_trial(run), vigil_profile=profile)
        try:
            invoke_rule(rule)
        except Exception as e:  # noqa: BLE001
            assert type(e).__name__ == "NoMoreData", e
        assert rule.triggered_steps == [t["step"] for t in status["Triggers"]], profile
        triggered[profile] = rule.triggered_steps
    assert triggered["sagemaker"] and not triggered["calibrated"]
    with pytest.raises(SMDebugValueError, match="unknown profile 'tuned'"):
        load(plugin_dir, "Confusion", vigil.create_trial(run), vigil_profile="tuned")
