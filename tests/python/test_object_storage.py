"""Trials in object storage, end to end, against the loopback S3 server of tests/support/s3_test_server.py
(s3rver behind a proxy that checks every SigV4 signature, logs every request and injects faults):

* a live PyTorch job whose hook writes out_dir="s3://trials/live/debug-output" (staged locally and
  uploaded in the background), followed while it runs by `vigil evaluate --trial s3://...`: the
  statuses at the end are those of the same evaluate over the local staging folder, and `vigil
  inspect s3://...` prints what inspect prints for the folder, but for the trial's location;
* faults at trial level: throttling, resets and truncated bodies on index GETs change no value; a
  persistent 500 on an event file is an exception naming the s3:// object, bounded by
  VIGIL_S3_MAX_ATTEMPTS and VIGIL_S3_TIMEOUT_SECONDS; a short ranged body is never taken as a value;
  wrong credentials are a clear error without the secret;
* request counts: opening a trial reads its index objects and no event file; a refresh with nothing
  new is one request; a refresh after new steps reads just their index objects, side by side (at
  most 32 in flight); a scan over the steps opens the next event files ahead, side by side;
  re-reading a value is one ranged GET.

The AWS_* variables reach the process only for a test (monkeypatch) and its subprocesses (their env).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import vigil
from conftest import PYTHON_DIR, trial_dir
from vigil import _vigil
from vigil.exceptions import TensorUnavailableForStep

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from s3_test_server import S3TestServer  # noqa: E402

BUCKET = "trials"
MARKER = "training_job_end.ts"
FIXTURE = "mlp_healthy"  # 30 steps (TRAIN and EVAL), one worker, one event file per step


@pytest.fixture(scope="module")
def s3():
    with S3TestServer(buckets=[BUCKET]) as server:  # fails the tests when it cannot start
        yield server


@pytest.fixture
def s3env(s3, monkeypatch):
    """The server's AWS_* variables for this test only; no fault, an empty request log."""
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "VIGIL_S3_MAX_ATTEMPTS",
              "VIGIL_S3_TIMEOUT_SECONDS"):
        monkeypatch.delenv(k, raising=False)
    for k, v in s3.environment(through_proxy=True).items():
        monkeypatch.setenv(k, v)
    # The tests count what reaches the store: no cache in front of it (test_the_cache_... has one).
    monkeypatch.setenv("VIGIL_CACHE_MAX_BYTES", "0")
    s3.set_faults([])
    s3.clear_requests()
    yield s3
    s3.set_faults([])


def upload(local, location):
    """Every file of the folder `local` to `location`, through the store (_vigil.TrialUploader)."""
    up = _vigil.TrialUploader(str(local), location, 0.05)
    report = up.finish(120)
    assert report["error"] is None and report["files_left"] == [], report
    n = sum(len(files) for _, _, files in os.walk(local))
    assert report["files_uploaded"] == n, (report, n)
    return report


def copy_fixture(dest, keep_marker=True, steps_below=None):
    """The fixture's files in `dest`, optionally without the end marker or the index files of later steps."""
    shutil.copytree(trial_dir(FIXTURE), dest)
    if not keep_marker:
        os.remove(os.path.join(dest, MARKER))
    if steps_below is not None:
        index = os.path.join(dest, "index")
        for folder, _, names in os.walk(index):
            for n in names:
                if int(n.split("_", 1)[0]) >= steps_below:
                    os.remove(os.path.join(folder, n))
    return dest


def value_key(arr):
    return str(arr.dtype), tuple(arr.shape), hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def all_values(trial):
    """{(tensor, step, worker): (dtype, shape, sha256)} of every saved value of the trial."""
    out = {}
    for name in trial.tensor_names():
        t = trial.tensor(name)
        for step in t.steps():
            for w in t.workers(step):
                try:
                    out[(name, step, w)] = value_key(t.value(step, worker=w))
                except TensorUnavailableForStep:
                    pass  # a reduction or a shape only
    return out


def bounded(fn, seconds):
    """fn() on a thread, failing the test when it has not returned within `seconds` (a hang bound)."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            box["error"] = e

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(seconds)
    if th.is_alive():
        pytest.fail("still running after %d s: it hangs" % seconds)
    if "error" in box:
        raise box["error"]
    return box["value"]


def requests_matching(server, text, method=None):
    return [r for r in server.requests() if text in r["path"] and method in (None, r["method"])]


@pytest.fixture(scope="module")
def local_values():
    return all_values(vigil.create_trial(trial_dir(FIXTURE)))


# ---- a live job through the hook, followed by vigil evaluate ---------------------------------------------

TRAINER = """
    import os, sys, time, torch
    import vigil.pytorch as smd
    out, go, steps, gate = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    crit = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model); hook.register_loss(crit)
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    for step in range(steps):
        if step == gate:  # the test lets the job go on once vigil evaluate has read a step of it
            deadline = time.time() + 240
            while not os.path.exists(go):
                if time.time() > deadline:
                    sys.exit("the test never said go")
                time.sleep(0.05)
        opt.zero_grad(); loss = crit(model(x), y); loss.backward(); opt.step()
        time.sleep(0.02)
    hook.close()
    print("TRAINING FINISHED", float(loss))
"""

RULES = ["--rule", "LossNotDecreasing", "--param", "num_steps=3",
         "--rule", "AllZero", "--param", "collection_names=weights,gradients",
         "--rule", "VanishingGradient",
         "--rule", "ExplodingTensor"]


def comparable(statuses):
    out = []
    for s in statuses:
        s = dict(s)
        s.pop("LastModifiedTime", None)
        out.append(s)
    return out


def read_statuses(path):
    with open(path) as f:
        return json.load(f)["DebugRuleEvaluationStatuses"]


def test_a_live_job_writing_to_s3_is_followed_by_evaluate_and_judged_as_its_local_copy(s3env, vigil_exe, tmp_path):
    location = "s3://%s/live/debug-output" % BUCKET
    staging_root = tmp_path / "staging"
    go = tmp_path / "go"
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, OMP_NUM_THREADS="1", VIGIL_STAGING_DIR=str(staging_root))
    staging_root.mkdir()
    # evaluate first: it waits for the trial to appear in the bucket
    status_s3 = tmp_path / "status-s3.json"
    evaluate = subprocess.Popen([vigil_exe, "evaluate", "--trial", location, *RULES, "--status-file", str(status_s3),
                                 "--idle-timeout", "120"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    progress = []
    readers = [threading.Thread(target=lambda: progress.extend(evaluate.stderr), daemon=True)]
    out_lines = []
    readers.append(threading.Thread(target=lambda: out_lines.extend(evaluate.stdout), daemon=True))
    for r in readers:
        r.start()
    steps, gate = 30, 10
    trainer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(TRAINER), location, str(go), str(steps),
                                str(gate)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = "vigil: %s: step " % location
        deadline = time.time() + 180
        while not any(line.startswith(first) for line in progress):
            assert trainer.poll() is None, "the job ended before evaluate read a step: " + trainer.stderr.read()
            assert evaluate.poll() is None, "evaluate ended early: %s" % "".join(progress)
            assert time.time() < deadline, "evaluate read no step of the live trial: %s" % "".join(progress)
            time.sleep(0.05)
        assert not status_s3.exists() or all(s["RuleEvaluationStatus"] == "InProgress"
                                              for s in read_statuses(status_s3))
        go.write_text("go")
        out, err = trainer.communicate(timeout=300)
        assert trainer.returncode == 0 and "TRAINING FINISHED" in out, err
        assert "vigil hook disabled" not in err and "vigil upload" not in err, err
        evaluate.wait(timeout=300)
    finally:
        for p in (trainer, evaluate):
            if p.poll() is None:
                p.kill()
                p.wait()
    for r in readers:
        r.join(10)
    assert evaluate.returncode == 0, "".join(progress + out_lines)
    s3_statuses = read_statuses(status_s3)

    [staging] = os.listdir(staging_root)
    local = str(staging_root / staging)
    assert os.path.exists(os.path.join(local, MARKER))
    status_local = tmp_path / "status-local.json"
    done = subprocess.run([vigil_exe, "evaluate", "--trial", local, *RULES, "--status-file", str(status_local),
                           "--quiet"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    local_statuses = read_statuses(status_local)
    assert [s["RuleConfigurationName"] for s in s3_statuses] == [
        "LossNotDecreasing", "AllZero", "VanishingGradient", "ExplodingTensor"]
    for s in s3_statuses:
        assert s["RuleEvaluationStatus"] in ("IssuesFound", "NoIssuesFound"), s
        assert s["CurrentStep"] == steps - 1, s  # every step judged, to the last
    assert comparable(s3_statuses) == comparable(local_statuses)

    # The bucket holds what was staged, byte for byte, and reads as the same trial.
    trial = vigil.create_trial(location)
    assert trial.training_ended and trial.steps() == list(range(steps))
    assert all_values(trial) == all_values(vigil.create_trial(local))

    # vigil inspect of the bucket is inspect of the folder, but for the trial's location (a copy of the
    # staging folder named as the trial is, for the trial's name is its last path segment).
    local = shutil.copytree(local, str(tmp_path / "copy" / "debug-output"))
    for extra in ([], ["--values"], ["--json", "--values"]):
        remote = subprocess.run([vigil_exe, "inspect", location, *extra], env=env, capture_output=True, text=True,
                                timeout=120)
        here = subprocess.run([vigil_exe, "inspect", local, *extra], env=env, capture_output=True, text=True,
                              timeout=120)
        assert remote.returncode == 0 and here.returncode == 0, remote.stderr + here.stderr
        assert location in remote.stdout and local not in remote.stdout
        assert local in here.stdout
        assert remote.stdout.replace(location, "<trial>") == here.stdout.replace(local, "<trial>"), extra

    # libcurl is loaded by the first S3 request (storage/curl_library.h), never for a local trial: the
    # ~28 libraries it needs were 3.3 ms of every process start
    traced = dict(env, LD_DEBUG="libs")
    remote = subprocess.run([vigil_exe, "inspect", location], env=traced, capture_output=True, text=True, timeout=120)
    here = subprocess.run([vigil_exe, "inspect", local], env=traced, capture_output=True, text=True, timeout=120)
    assert remote.returncode == 0 and here.returncode == 0, remote.stderr[-2000:] + here.stderr[-2000:]
    assert "libcurl.so" in remote.stderr and "libcurl.so" not in here.stderr


# ---- faults -------------------------------------------------------------------------------------------------

CLOSE_UNDER_CTRL_C = r"""
import json, logging, os, sys
from vigil.capture.upload import StagedUpload
upload = StagedUpload(sys.argv[1], logging.getLogger("hook"), scan_interval_s=0.05)
with open(os.path.join(upload.local_dir, "a.json"), "w") as f:
    f.write("{}")
print(upload.local_dir, flush=True)
report = upload.finish()  # what hook.close() calls; $VIGIL_UPLOAD_TIMEOUT_SECONDS is far off
print(json.dumps(report), flush=True)
"""


def test_the_first_ctrl_c_ends_the_upload_wait_of_close_and_leaves_the_files_staged(s3env, tmp_path):
    """Issue 28, item 17: an endpoint that accepts connections and never answers; the wait for the
    last uploads (600 s here) ends at the first SIGINT, close() returns, the data stays staged."""
    import signal
    import socket
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, VIGIL_STAGING_DIR=str(tmp_path), VIGIL_UPLOAD_TIMEOUT_SECONDS="600",
               VIGIL_S3_TIMEOUT_SECONDS="600", AWS_ENDPOINT_URL_S3="http://127.0.0.1:%d" % silent.getsockname()[1])
    proc = subprocess.Popen([sys.executable, "-c", CLOSE_UNDER_CTRL_C, "s3://%s/ctrl-c" % BUCKET], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        local_dir = proc.stdout.readline().strip()
        silent.settimeout(60)
        conn, _ = silent.accept()  # the PUT is in flight and will never be answered
        time.sleep(0.5)  # the script has gone from its print into finish()'s wait
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)  # a harness bound only: before the fix, 600 s
    finally:
        if proc.poll() is None:
            proc.kill()
        silent.close()
    conn.close()
    assert proc.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["interrupted"] is True, report
    assert report["files_left"] == ["a.json"], report
    assert "interrupted" in report["error"], report
    assert os.path.exists(os.path.join(local_dir, "a.json"))  # staged, as documented
    assert local_dir in err, err  # the log says where the files left are


def test_faults_on_index_gets_change_no_value(s3env, tmp_path, local_values):
    location = "s3://%s/faults/index" % BUCKET
    upload(trial_dir(FIXTURE), location)
    plain = all_values(vigil.create_trial(location))
    assert plain == local_values
    rules = [
        {"match": "/index/000000000/000000000003_worker_0.json", "method": "GET", "times": 2, "action": "status",
         "status": 503, "code": "SlowDown"},
        {"match": "/index/000000000/000000000005_worker_0.json", "method": "GET", "times": 1, "action": "reset"},
        {"match": "/index/000000000/000000000007_worker_0.json", "method": "GET", "times": 1, "action": "truncate",
         "keep_bytes": 10},
    ]
    s3env.set_faults(rules)
    s3env.clear_requests()
    trial = bounded(lambda: vigil.create_trial(location), 120)
    with s3env.plan.lock:
        assert [r["times"] for r in s3env.plan.rules] == [0, 0, 0]  # every fault was met
    statuses = [r["status"] for r in requests_matching(s3env, "000000000003_worker_0.json", "GET")]
    assert statuses == [503, 503, 200]
    assert [r["status"] for r in requests_matching(s3env, "000000000005_worker_0.json", "GET")] == ["reset", 200]
    assert len(requests_matching(s3env, "000000000007_worker_0.json", "GET")) == 2  # truncated, then whole
    assert trial.steps() == list(range(30)) and trial.training_ended
    assert all_values(trial) == local_values


EVENT_3 = "events/000000000003/000000000003_worker_0.tfevents"
EVENT_5 = "events/000000000005/000000000005_worker_0.tfevents"


def test_a_persistent_500_on_an_event_file_is_an_error_naming_the_object_within_the_attempts(
        s3env, tmp_path, monkeypatch, local_values):
    location = "s3://%s/faults/event500" % BUCKET
    upload(trial_dir(FIXTURE), location)
    monkeypatch.setenv("VIGIL_S3_MAX_ATTEMPTS", "3")
    monkeypatch.setenv("VIGIL_S3_TIMEOUT_SECONDS", "5")
    trial = vigil.create_trial(location)
    name = "gradient/MLP_fc1.weight"
    assert (name, 4, "worker_0") in local_values and (name, 5, "worker_0") in local_values
    s3env.set_faults([{"match": EVENT_5, "method": "GET", "times": 10 ** 6, "action": "status", "status": 500,
                       "code": "InternalError"}])
    s3env.clear_requests()
    started = time.monotonic()
    with pytest.raises(Exception) as info:
        bounded(lambda: trial.tensor(name).value(5), 90)
    elapsed = time.monotonic() - started
    message = str(info.value)
    assert "s3://%s/faults/event500/%s" % (BUCKET, EVENT_5) in message, message
    assert "500" in message or "InternalError" in message, message
    assert len(requests_matching(s3env, EVENT_5, "GET")) == 3  # VIGIL_S3_MAX_ATTEMPTS, then it gives up
    assert elapsed < 60, elapsed  # a hang bound, not a speed check
    # The trial is not broken by it: other steps read, and step 5 reads once the server recovers.
    s3env.set_faults([])
    assert value_key(trial.tensor(name).value(4)) == local_values[(name, 4, "worker_0")]
    assert value_key(trial.tensor(name).value(5)) == local_values[(name, 5, "worker_0")]


def test_a_short_ranged_body_is_never_taken_as_a_value(s3env, tmp_path, monkeypatch, local_values):
    location = "s3://%s/faults/short" % BUCKET
    upload(trial_dir(FIXTURE), location)
    names = sorted({n for (n, step, _) in local_values if step == 6})
    # Once: retried, the value is right.
    trial = vigil.create_trial(location)
    s3env.set_faults([{"match": "events/000000000006/", "method": "GET", "times": 1, "action": "short_length",
                       "keep_bytes": 10}])
    s3env.clear_requests()
    got = {n: value_key(trial.tensor(n).value(6)) for n in names}
    assert got == {n: local_values[(n, 6, "worker_0")] for n in names}
    with s3env.plan.lock:
        assert s3env.plan.rules[0]["times"] == 0
    # Always: an error, never a value.
    monkeypatch.setenv("VIGIL_S3_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("VIGIL_S3_TIMEOUT_SECONDS", "5")
    trial = vigil.create_trial(location)
    s3env.set_faults([{"match": "events/000000000006/", "method": "GET", "times": 10 ** 6, "action": "short_length",
                       "keep_bytes": 10}])
    for n in names:
        with pytest.raises(Exception) as info:
            bounded(lambda: trial.tensor(n).value(6), 90)
        assert "s3://%s/faults/short/events/000000000006/" % BUCKET in str(info.value), str(info.value)


def test_wrong_credentials_are_a_clear_error_without_the_secret(s3env, tmp_path, monkeypatch, vigil_exe):
    location = "s3://%s/faults/credentials" % BUCKET
    upload(trial_dir(FIXTURE), location)
    secret = "wrong-secret-7f3a9c21d"
    token = "session-token-b81e4d"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    monkeypatch.setenv("VIGIL_S3_TIMEOUT_SECONDS", "5")
    with pytest.raises(Exception) as info:
        bounded(lambda: vigil.create_trial(location), 90)
    message = str(info.value)
    assert "403" in message and "SignatureDoesNotMatch" in message, message
    assert "s3://%s/faults/credentials" % BUCKET in message, message
    assert secret not in message and token not in message, message
    # vigil inspect says the same, also without the secret
    r = subprocess.run([vigil_exe, "inspect", location],
                       env=dict(os.environ), capture_output=True, text=True, timeout=90)
    assert r.returncode != 0 and "SignatureDoesNotMatch" in r.stderr, r.stdout + r.stderr
    assert secret not in r.stdout + r.stderr and token not in r.stdout + r.stderr


# ---- request counts -----------------------------------------------------------------------------------------

def test_opening_a_trial_reads_its_index_objects_and_no_event_file(s3env, tmp_path):
    location = "s3://%s/counts/ended" % BUCKET
    upload(trial_dir(FIXTURE), location)
    n_index = sum(len(f) for _, _, f in os.walk(os.path.join(trial_dir(FIXTURE), "index")))
    s3env.clear_requests()
    trial = vigil.create_trial(location)
    log = s3env.requests()
    assert [r for r in log if "/events/" in r["path"]] == []
    index_gets = [r["path"] for r in log if "/index/" in r["path"] and r["method"] == "GET"]
    assert len(index_gets) == n_index == len(set(index_gets))  # each index object once
    assert all(r["status"] == 200 for r in log), log
    # O(steps): besides the index objects, the collections (a listing, a GET), the marker (a HEAD)
    # and the listing of index/
    assert len(log) - n_index <= 4, [r["path"] for r in log if "/index/" not in r["path"]]
    # The first query finds the end marker (smdebug's open reads no end of training): one listing, and one
    # more for what was published before it.
    s3env.clear_requests()
    assert trial.steps() == list(range(30)) and trial.training_ended
    log = s3env.requests()
    assert 1 <= len(log) <= 2 and all("list-type=2" in r["path"] for r in log), log
    # An ended trial is read whole: a query costs nothing more.
    s3env.clear_requests()
    trial.refresh()
    trial.steps()
    assert s3env.requests() == []


def test_a_refresh_with_nothing_new_is_one_request_and_new_steps_cost_their_index_objects(s3env, tmp_path):
    location = "s3://%s/counts/live" % BUCKET
    upload(copy_fixture(str(tmp_path / "first"), keep_marker=False, steps_below=20), location)
    trial = vigil.create_trial(location)
    assert trial.steps(show_incomplete_steps=True) == list(range(20)) and not trial.training_ended
    for query in (trial.refresh, trial.steps, lambda: trial.tensor_names()):
        s3env.clear_requests()
        query()
        log = s3env.requests()
        assert len(log) == 1 and log[0]["method"] == "GET" and "list-type=2" in log[0]["path"], log
        assert "start-after=" in log[0]["path"], log  # only what sorts after the steps read
    # Ten more steps (their event files are there already: index objects only, no marker yet).
    rest = tmp_path / "rest"
    for name in sorted(os.listdir(os.path.join(trial_dir(FIXTURE), "index", "000000000"))):
        if int(name.split("_", 1)[0]) >= 20:
            os.makedirs(rest / "index" / "000000000", exist_ok=True)
            shutil.copy(os.path.join(trial_dir(FIXTURE), "index", "000000000", name), rest / "index" / "000000000")
    upload(rest, location)
    s3env.clear_requests()
    assert trial.steps(show_incomplete_steps=True) == list(range(30))
    log = s3env.requests()
    index_gets = [r for r in log if "/index/" in r["path"] and r["method"] == "GET"]
    assert len(index_gets) == 10 and [r for r in log if "/events/" in r["path"]] == []
    assert len(log) - len(index_gets) <= 2, [r["path"] for r in log]  # one listing, and one to confirm it
    assert not trial.training_ended
    # The end marker: the next refresh sees it and the trial is read whole.
    marker_dir = tmp_path / "marker"
    marker_dir.mkdir()
    (marker_dir / MARKER).write_text("")
    upload(marker_dir, location)
    trial.refresh()
    assert trial.training_ended and trial.loaded_all_steps and trial.steps() == list(range(30))


def write_steps(out, steps):
    """A trial of `steps` steps of three small tensors, one event file per step, ended."""
    from vigil.modes import ModeKeys
    from vigil.writer import TrialWriter
    w = TrialWriter(str(out), save_interval=1)
    for step in range(steps):
        w.begin_step(ModeKeys.TRAIN)
        w.save_tensor("loss", np.array([1.0 / (1 + step)], dtype=np.float32), collections=["losses"])
        w.save_tensor("w", np.full(64, step, dtype=np.float32), collections=["weights"])
        w.save_tensor("g", np.arange(64, dtype=np.float32) * step, collections=["gradients"])
        w.end_step()
    w.close()
    return out


def delayed(match, seconds=0.2):
    """Every GET whose path holds `match` answered after `seconds`: requests made side by side overlap
    (held long enough that the test server's own speed does not decide how many meet: with 50 ms the
    C++ test of the same bound saw as few as 7 at once)."""
    return [{"action": "delay", "seconds": seconds, "method": "GET", "match": match, "times": 100000}]


def test_opening_reads_the_index_objects_side_by_side_at_most_32_at_once(s3env, tmp_path):
    # Issue 29: the same requests as one after another (each index object once), but several in
    # flight at once, never more than 32.
    location = "s3://%s/counts/parallel-open" % BUCKET
    upload(write_steps(tmp_path / "t", 80), location)
    s3env.set_faults(delayed("/parallel-open/index/"))
    s3env.clear_requests()
    trial = vigil.create_trial(location)
    assert trial.steps() == list(range(80)) and trial.training_ended
    log = s3env.requests()
    index_gets = [r for r in log if "/index/" in r["path"] and r["method"] == "GET" and "list-type" not in r["path"]]
    assert len(index_gets) == 80 == len({r["path"] for r in index_gets})
    # besides them, as test_opening_... counts: open's at most 4, and steps()'s one or two listings
    assert len(log) - 80 <= 6, [r["path"] for r in log if r not in index_gets]
    most = max(r["in_flight"] for r in index_gets)
    assert 8 <= most <= 32, most


def test_a_scan_over_the_steps_opens_the_next_event_files_ahead_side_by_side(s3env, tmp_path):
    # Issue 29: reading the steps in order, the next steps' event files are opened ahead (each
    # with its one GET, which holds all of its step's records): one request per event file as
    # before, never one per value, never a file twice, and several in flight at once.
    local = write_steps(tmp_path / "t", 80)
    location = "s3://%s/counts/scan" % BUCKET
    upload(local, location)
    trial = vigil.create_trial(location)
    expected = vigil.create_trial(str(local))
    names = trial.tensor_names()
    assert names == ["g", "loss", "w"]
    s3env.set_faults(delayed("/scan/events/"))
    s3env.clear_requests()
    values = 0
    for step in trial.steps():
        for name in names:
            assert value_key(trial.tensor(name).value(step)) == value_key(expected.tensor(name).value(step))
            values += 1
    log = s3env.requests()
    event_gets = [r for r in log if "/events/" in r["path"]]
    assert len(log) == len(event_gets) == 80 == len({r["path"] for r in event_gets}), len(log)
    assert values == 3 * len(event_gets)
    most = max(r["in_flight"] for r in event_gets)
    assert 4 <= most <= 16, most


def test_re_reading_a_value_is_one_ranged_get(s3env, tmp_path, local_values):
    location = "s3://%s/counts/values" % BUCKET
    upload(trial_dir(FIXTURE), location)
    trial = vigil.create_trial(location)
    name = next(n for (n, step, _) in sorted(local_values) if step == 3)
    s3env.clear_requests()
    assert value_key(trial.tensor(name).value(3)) == local_values[(name, 3, "worker_0")]
    first = s3env.requests()
    assert all(EVENT_3 in r["path"] for r in first), first
    assert len(first) <= 2, first  # the event file opened (a GET of its start), then its record if beyond it
    for _ in range(3):
        s3env.clear_requests()
        assert value_key(trial.tensor(name).value(3)) == local_values[(name, 3, "worker_0")]
        again = s3env.requests()
        assert len(again) <= 1 and all(r["method"] == "GET" and r["status"] == 206 for r in again), again


def test_the_cache_serves_a_reopened_trial_its_index_and_records_by_etag(s3env, tmp_path, monkeypatch, local_values):
    monkeypatch.setenv("VIGIL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VIGIL_CACHE_MAX_BYTES", str(64 << 20))
    location = "s3://%s/cached/run" % BUCKET
    upload(trial_dir(FIXTURE), location)
    n_index = sum(len(f) for _, _, f in os.walk(os.path.join(trial_dir(FIXTURE), "index")))
    s3env.clear_requests()
    first = vigil.create_trial(location)
    assert all_values(first) == local_values
    cold = s3env.requests()
    assert len([r for r in cold if "/index/" in r["path"] and r["method"] == "GET"]) == n_index
    # A second open (a new trial, as a new process would): the listing says nothing changed, so the
    # index objects come from the cache; only listings, the marker and the event files' openings reach S3.
    s3env.clear_requests()
    second = vigil.create_trial(location)
    assert all_values(second) == local_values
    warm = s3env.requests()
    assert [r for r in warm if "/index/" in r["path"] and "list-type" not in r["path"]] == [], warm
    assert len(warm) <= len(cold) - n_index, (len(warm), len(cold))
    # A changed object has a new ETag: read again, never the cached bytes.
    index_rel = sorted(os.listdir(os.path.join(trial_dir(FIXTURE), "index", "000000000")))[0]
    changed = tmp_path / "changed" / "index" / "000000000"
    changed.mkdir(parents=True)
    with open(os.path.join(trial_dir(FIXTURE), "index", "000000000", index_rel)) as f:
        text = f.read()
    (changed / index_rel).write_text(text + " ")  # the same index, another ETag
    upload(tmp_path / "changed", location)
    s3env.clear_requests()
    third = vigil.create_trial(location)
    third.steps()
    gets = [r["path"] for r in s3env.requests() if "/index/" in r["path"] and "list-type" not in r["path"]]
    assert len(gets) == 1 and index_rel in gets[0], gets
