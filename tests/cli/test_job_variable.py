"""`vigil evaluate` takes the job JSON from VIGIL_JOB_JSON when it is given no --job, --rule or
--group (how a container gets it: docs/image.md): the same statuses as the same job in a file; bad
JSON is refused (exit 2) naming the variable; --job wins over the variable."""
import json
import os
import subprocess

from conftest import trial_dir

FIXTURE = "loss_not_decreasing"
JOB = {"DebugRuleConfigurations": [
    {"RuleConfigurationName": "Loss", "RuleParameters": {"rule_to_invoke": "LossNotDecreasing"}},
    {"RuleConfigurationName": "Gradient", "RuleParameters": {"rule_to_invoke": "VanishingGradient"}}]}


def evaluate(vigil_exe, args, job_json=None):
    env = dict(os.environ)
    env.pop("VIGIL_JOB_JSON", None)
    if job_json is not None:
        env["VIGIL_JOB_JSON"] = job_json
    return subprocess.run([vigil_exe, "evaluate", "--trial", trial_dir(FIXTURE), "--no-follow", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def statuses(path):
    return [(s["RuleConfigurationName"], s["RuleEvaluationStatus"], s.get("Triggers"))
            for s in json.loads(path.read_text())["DebugRuleEvaluationStatuses"]]


def test_job_from_the_variable_equals_the_job_file(vigil_exe, tmp_path):
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(JOB))
    from_file = evaluate(vigil_exe, ["--job", str(job_file), "--status-file", str(tmp_path / "file.json")])
    assert from_file.returncode == 0, from_file.stderr
    from_env = evaluate(vigil_exe, ["--status-file", str(tmp_path / "env.json")], json.dumps(JOB))
    assert from_env.returncode == 0, from_env.stderr
    assert [s[0] for s in statuses(tmp_path / "env.json")] == ["Loss", "Gradient"]
    assert statuses(tmp_path / "env.json") == statuses(tmp_path / "file.json")


def test_bad_job_json_in_the_variable_is_refused(vigil_exe):
    proc = evaluate(vigil_exe, [], '{"DebugRuleConfigurations": [')
    assert proc.returncode == 2
    assert "invalid job in VIGIL_JOB_JSON" in proc.stderr


def test_no_job_at_all_names_the_variable(vigil_exe):
    proc = evaluate(vigil_exe, [])
    assert proc.returncode == 2
    assert "VIGIL_JOB_JSON" in proc.stderr


def test_job_file_wins_over_the_variable(vigil_exe, tmp_path):
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(JOB))
    proc = evaluate(vigil_exe, ["--job", str(job_file), "--status-file", str(tmp_path / "s.json")], "not json")
    assert proc.returncode == 0, proc.stderr
    assert [s[0] for s in statuses(tmp_path / "s.json")] == ["Loss", "Gradient"]
