"""Verdict quality: both rule profiles scored against the labelled runs' ground truth
(scripts/verdict_quality.py, the figures of docs/verdict-quality.md).

The SageMaker-faithful profile must score exactly what the labels' README says SageMaker's defaults
score (per rule: a change there means a default behaviour changed); the calibrated profile must stay
within the issue's target of at most 2 false verdicts in all. On a healthy real run written by
smdebug itself, no calibrated rule may report issues.
"""
import importlib.util
import json
import os
import re
import subprocess

import pytest

from conftest import REPO, SHARED, VIGIL_EXE, trial_dir

RUNS = os.path.join(SHARED, "fixtures", "pathologies")
CALIBRATED_TARGET = 2  # false positives + false negatives, over every rule the labels judge


def load_scorer():
    spec = importlib.util.spec_from_file_location("verdict_quality", os.path.join(REPO, "scripts", "verdict_quality.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scorer = load_scorer()
VIGIL = VIGIL_EXE


def readme_table():
    """The labels' own per-rule table of SageMaker's defaults against the ground truth."""
    with open(os.path.join(RUNS, "README.md")) as f:
        text = f.read()
    section = text.split("## Default-parameter verdicts against the ground truth, per rule", 1)[1]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*(\w+) \(\w+\)\s*\|" + r"\s*(\d+)\s*\|" * 7, line)
        if m:
            tp, fn, fp, tn, arguable_fired, arguable_silent, no_data = map(int, m.groups()[1:])
            rows[m.group(1)] = dict(tp=tp, fn=fn, fp=fp, tn=tn + no_data, arguable_fired=arguable_fired,
                                    arguable_silent=arguable_silent)
    assert len(rows) >= 15, "the labels' README table was not found"
    return rows


@pytest.fixture(scope="module")
def sagemaker_score():
    return scorer.score(VIGIL, RUNS, "sagemaker")


@pytest.fixture(scope="module")
def calibrated_score():
    return scorer.score(VIGIL, RUNS, "calibrated")


def test_the_sagemaker_profile_scores_what_the_labels_say_sagemaker_scores(sagemaker_score):
    table, wrong = sagemaker_score
    expected = readme_table()
    for rule, counts in expected.items():
        assert table[rule] == counts, f"{rule}: {table[rule]} != the labels' {counts}"
    for rule in set(table) - set(expected):  # rules the README does not list judge no run of these
        assert table[rule]["fp"] == table[rule]["fn"] == 0, (rule, table[rule])
    assert scorer.total_errors(table) == sum(r["fp"] + r["fn"] for r in expected.values())


def test_the_calibrated_profile_meets_the_target(calibrated_score, sagemaker_score):
    table, wrong = calibrated_score
    total = scorer.total_errors(table)
    print(scorer.markdown("calibrated", table, wrong))
    assert total <= CALIBRATED_TARGET, "\n".join(f"{w['kind']} {w['rule']} on {w['run']}" for w in wrong)
    assert total < scorer.total_errors(sagemaker_score[0])


def test_the_calibrated_profile_keeps_every_true_positive_of_the_defaults(calibrated_score, sagemaker_score):
    calibrated, _ = calibrated_score
    sagemaker, _ = sagemaker_score
    for rule, counts in sagemaker.items():
        assert calibrated[rule]["tp"] >= counts["tp"], (rule, calibrated[rule], counts)


def test_every_calibrated_rule_stays_quiet_on_a_healthy_real_run(tmp_path):
    rules = json.loads(subprocess.run([VIGIL, "rules", "--json"], capture_output=True, text=True, check=True).stdout)
    # Every debug rule a job can run on one trial without naming anything (not SimilarAcrossRuns,
    # which compares two runs, nor PythonRule, which needs a rule file; profiler rules read profiler
    # data, which a debugger trial does not hold).
    names = [r["name"] for r in rules["rules"] if r["kind"] == "debug"
             and not r.get("multi_trial") and not any(p["required"] for p in r["parameters"])]
    assert len(names) >= 20
    statuses = []
    for chunk in range(0, len(names), 10):
        status_file = tmp_path / f"status{chunk}.json"
        command = [VIGIL, "evaluate", "--quiet", "--no-follow", "--profile", "calibrated", "--trial",
                   trial_dir("mlp_healthy"), "--status-file", str(status_file)]
        for name in names[chunk:chunk + 10]:
            command += ["--rule", name]
        subprocess.run(command, capture_output=True, text=True, check=True, cwd=tmp_path)
        statuses += json.loads(status_file.read_text())["DebugRuleEvaluationStatuses"]
    assert len(statuses) == len(names)
    for s in statuses:
        assert s["Profile"] == "calibrated"
        assert s["RuleEvaluationStatus"] == "NoIssuesFound", s  # no Error either: every rule has its selection
    judged = [s for s in statuses if s["RuleEvaluationStatus"] == "NoIssuesFound" and s["Judgement"]["EnoughData"]]
    assert len(judged) >= 8, [s["RuleConfigurationName"] for s in judged]  # the run holds what most rules read


def test_a_rule_without_its_data_says_so_beside_no_issues_found(tmp_path):
    """CheckInputImages on a run without images: NoIssuesFound in SageMaker's shape, but the
    Judgement (and the printed status) say it never judged."""
    status_file = tmp_path / "status.json"
    done = subprocess.run([VIGIL, "evaluate", "--no-follow", "--trial", trial_dir("mlp_healthy"), "--rule",
                           "CheckInputImages", "--rule", "VanishingGradient", "--status-file", str(status_file)],
                          capture_output=True, text=True, check=True)
    statuses = {s["RuleConfigurationName"]: s for s in
                json.loads(status_file.read_text())["DebugRuleEvaluationStatuses"]}
    images = statuses["CheckInputImages"]
    assert images["RuleEvaluationStatus"] == "NoIssuesFound"
    assert images["Judgement"]["EnoughData"] is False
    assert images["Judgement"]["StepsJudged"] == 0 and images["Judgement"]["StepsNotJudged"] > 0
    assert "hybridsequential0_input_0" in images["Judgement"]["NotJudgedReason"]
    assert "[CheckInputImages] NoIssuesFound (never had the data to judge: " in done.stdout
    gradients = statuses["VanishingGradient"]
    assert gradients["Judgement"]["EnoughData"] is True and gradients["Judgement"]["StepsJudged"] > 0
    assert "[VanishingGradient] NoIssuesFound\n" in done.stdout
