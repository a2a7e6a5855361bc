"""vigil.fleet: rules over many trials on a dask.distributed LocalCluster of 2 worker processes (one
thread each), over 50 small trials written by vigil.writer (a third with vanishing gradients, a
quarter with a flat loss, so the statuses differ), in a local folder and on the S3 test server
(tests/support/s3_test_server.py):

* each trial's rows are what `vigil evaluate` run on that trial alone reports;
* a corrupt trial (a garbage index file) and a missing one are each one row with status Error and the
  reason, and the fleet goes on;
* an s3:// pattern lists the bucket and finds the trials; a task whose evaluation failed on a
  transient S3 error (the evaluator's retries spent) is run again (Dask's retries=), and without
  retries its row says what happened.

About 40 s on 2 cores (a LocalCluster starts in ~3 s; an evaluation is a subprocess of ~0.1 s).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import dask.distributed  # noqa: F401 (in .venv: scripts/python-envs.sh; a missing one fails the suite)

from vigil import _vigil, fleet  # noqa: E402
from vigil.modes import ModeKeys  # noqa: E402
from vigil.writer import TrialWriter  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from s3_test_server import S3TestServer  # noqa: E402

N_TRIALS = 50
STEPS = 8
BUCKET = "trials"
RULES = [{"rule": "VanishingGradient"},
         {"rule": "LossNotDecreasing", "params": {"num_steps": "3", "diff_percent": "5"}}]


def rule_args():
    args = []
    for r in RULES:
        args += ["--rule", r["rule"]]
        for k, v in r.get("params", {}).items():
            args += ["--param", "{}={}".format(k, v)]
    return args


def write_trial(out, index):
    """A small ended trial: vanishing gradients when index % 3 == 0, a flat loss when index % 4 == 0."""
    w = TrialWriter(str(out), save_interval=1)
    rng = np.random.default_rng(index)
    scale = 1e-9 if index % 3 == 0 else 1.0
    for step in range(STEPS):
        w.begin_step(ModeKeys.TRAIN)
        loss = 1.0 if index % 4 == 0 else 1.0 / (1 + step)
        w.save_tensor("loss", np.array([loss], dtype=np.float32), collections=["losses"])
        w.save_tensor("fc.weight_grad", (rng.standard_normal(32) * scale).astype(np.float32), collections=["gradients"])
        w.end_step()
    w.close()
    return str(out)


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    paths = [write_trial(root / "job{:02d}".format(i) / "debug-output", i) for i in range(N_TRIALS)]
    corrupt = shutil.copytree(paths[1], str(root / "corrupt" / "debug-output"))
    index_dir = os.path.join(corrupt, "index")
    first = sorted(os.path.join(d, f) for d, _, files in os.walk(index_dir) for f in files)[0]
    with open(first, "w") as f:
        f.write("{ this is not an index")
    return root, paths, corrupt


def alone(vigil_exe, trial, tmp_path):
    """The statuses of `vigil evaluate` on one trial by itself: (name, rule, status, step) sorted."""
    status_file = str(tmp_path / "alone-{}.json".format(abs(hash(trial))))
    subprocess.run([vigil_exe, "evaluate", "--trial", trial, "--no-follow", "--quiet", "--status-file", status_file,
                    "--output-dir", str(tmp_path / "alone-out")] + rule_args(),
                   check=True, capture_output=True, timeout=120)
    with open(status_file) as f:
        statuses = json.load(f)["DebugRuleEvaluationStatuses"]
    return sorted((s["RuleConfigurationName"], s["RuleToInvoke"], s["RuleEvaluationStatus"], s.get("CurrentStep"))
                  for s in statuses)


def fleet_rows(table, trial):
    rows = table[table["trial"] == trial]
    return sorted((r.rule_configuration_name, r.rule, r.status, None if pd.isna(r.last_step) else int(r.last_step))
                  for r in rows.itertuples(index=False))


def check_fleet(table, expected_trials, vigil_exe, tmp_path):
    assert list(dict.fromkeys(table["trial"])) == expected_trials
    seen = set()
    for trial in expected_trials:
        got = fleet_rows(table, trial)
        assert got == alone(vigil_exe, trial, tmp_path), trial
        seen.update(status for _, _, status, _ in got)
    assert {"IssuesFound", "NoIssuesFound"} <= seen, seen


def test_fifty_local_trials_on_two_workers_equal_each_alone_and_bad_trials_are_rows(trials, vigil_exe, tmp_path):
    root, paths, corrupt = trials
    missing = str(root / "absent" / "debug-output")
    out = tmp_path / "out"
    # the healthy trials through a local glob, then the corrupt and the missing one by their paths
    table = fleet.run([str(root / "job*" / "debug-output"), corrupt, missing], rules=RULES, output_dir=str(out),
                      n_workers=2)
    check_fleet(table[table["trial"].isin(paths)], paths, vigil_exe, tmp_path)
    assert len(table) == 2 * N_TRIALS + 2
    bad = table[~table["trial"].isin(paths)].set_index("trial")
    assert list(bad.index) == [corrupt, missing]
    assert bad.loc[missing, "status"] == "Error" and bad.loc[missing, "error"].startswith("missing"), bad.loc[missing]
    assert bad.loc[corrupt, "status"] == "Error" and "corrupt index" in bad.loc[corrupt, "error"].lower(), bad.loc[corrupt]
    # every evaluated trial has its own folder with its status file, which the summary page links
    page = (out / "index.html").read_text()
    for d in table["output_dir"].unique():
        rel = os.path.relpath(d, str(out))
        if d != table.set_index("trial").loc[missing, "output_dir"]:
            assert os.path.exists(os.path.join(d, "statuses.json")) or d.endswith("corrupt-debug-output"), d
            assert 'href="{}/evaluate.log"'.format(rel) in page
    assert "<td>VanishingGradient</td>" in page


@pytest.fixture(scope="module")
def s3():
    with S3TestServer(buckets=[BUCKET]) as server:
        yield server


@pytest.fixture
def s3env(s3, monkeypatch):
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "VIGIL_S3_MAX_ATTEMPTS",
              "VIGIL_S3_TIMEOUT_SECONDS"):
        monkeypatch.delenv(k, raising=False)
    for k, v in s3.environment(through_proxy=True).items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("VIGIL_CACHE_MAX_BYTES", "0")
    s3.set_faults([])
    yield s3
    s3.set_faults([])


@pytest.fixture(scope="module")
def s3_trials(trials, s3):
    """The local trials uploaded to s3://trials/sweep/jobNN/debug-output (and the corrupt one)."""
    _, paths, corrupt = trials
    env = s3.environment(through_proxy=True)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        locations = []
        for path in paths + [corrupt]:
            location = "s3://{}/sweep/{}/debug-output".format(BUCKET, os.path.basename(os.path.dirname(path)))
            report = _vigil.TrialUploader(path, location, 0.05).finish(120)
            assert report["error"] is None and report["files_left"] == [], report
            locations.append(location)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return locations[:-1], locations[-1]


def test_an_s3_pattern_finds_the_trials_and_they_equal_each_alone(s3env, s3_trials, vigil_exe, tmp_path):
    locations, corrupt = s3_trials
    missing = "s3://{}/elsewhere/debug-output".format(BUCKET)
    table = fleet.run(["s3://{}/sweep/*/debug-output".format(BUCKET), missing], rules=RULES,
                      output_dir=str(tmp_path / "out"), n_workers=2)
    found = list(dict.fromkeys(table["trial"]))
    assert found == sorted(locations + [corrupt]) + [missing]
    check_fleet(table[table["trial"].isin(locations)], locations, vigil_exe, tmp_path)
    bad = table[table["trial"].isin([corrupt, missing])].set_index("trial")
    assert (bad["status"] == "Error").all() and bad["error"].notna().all(), bad
    assert bad.loc[missing, "error"].startswith("missing"), bad.loc[missing]


def test_a_transient_s3_failure_is_retried_and_without_retries_reported(s3env, s3_trials, monkeypatch, vigil_exe,
                                                                       tmp_path):
    locations, _ = s3_trials
    picked = locations[:3]
    monkeypatch.setenv("VIGIL_S3_MAX_ATTEMPTS", "2")
    target = "/sweep/job01/debug-output/events/000000000003/"
    # How many GETs of that event file one evaluation makes when each answers 503 SlowDown (the
    # client's two attempts, and whatever the reader tries above it) before its rules end in Error
    s3env.set_faults([{"match": target, "method": "GET", "times": 100000, "action": "status", "status": 503,
                       "code": "SlowDown"}])
    s3env.clear_requests()
    assert alone(vigil_exe, picked[1], tmp_path)[0][2] == "Error"
    failing = sum(1 for r in s3env.requests() if target in r["path"] and r["method"] == "GET")
    assert failing >= 2
    # that many: the task's first evaluation fails on the transient error, its second run succeeds
    fault = [{"match": target, "method": "GET", "times": failing, "action": "status", "status": 503, "code": "SlowDown"}]
    s3env.set_faults(fault)
    table = fleet.run(picked, rules=RULES, output_dir=str(tmp_path / "retried"), n_workers=2, retries=1)
    s3env.set_faults([])
    check_fleet(table, picked, vigil_exe, tmp_path)
    s3env.set_faults(fault)
    table = fleet.run(picked, rules=RULES, output_dir=str(tmp_path / "not-retried"), n_workers=2, retries=0)
    s3env.set_faults([])
    row = table[table["trial"] == picked[1]]
    assert len(row) == 1 and row.iloc[0]["status"] == "Error", row
    assert "TransientS3Error" in row.iloc[0]["error"] and "503" in row.iloc[0]["error"], row.iloc[0]["error"]
    assert fleet_rows(table, picked[0]) == alone(vigil_exe, picked[0], tmp_path)


def test_patterns(tmp_path):
    keys = ["a/debug-output/index/1.json", "a/debug-output/events/x", "b/other/index/1.json",
            "c/debug-output/training_job_end.ts", "c"]
    assert fleet.expand_trials(["s3://bkt/p/*/debug-output"], list_files=lambda prefix: keys) == [
        "s3://bkt/p/a/debug-output", "s3://bkt/p/c/debug-output"]
    assert fleet.expand_trials(["s3://bkt/p/a/", "/x/y"], list_files=None) == ["s3://bkt/p/a", "/x/y"]
    with pytest.raises(fleet.UsageError, match="matches no trial"):
        fleet.expand_trials([str(tmp_path / "*" / "debug-output")])
