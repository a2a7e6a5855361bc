"""`vigil train` and the training-job commands, end to end: real training processes (two hosts with
torch.distributed on 127.0.0.1), the rule evaluator beside them, rule actions, MaxRuntimeInSeconds,
SageMaker's refusals, the job's outputs at their destinations (a file:// folder and the S3 test
server of tests/support/s3_test_server.py), and remote debugging (`vigil attach`, driven under tmux)."""
import atexit
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from conftest import PYTHON_DIR, REPO, VIGIL_EXE
from real_readers import real_readers_agree  # noqa: F401 (a fixture)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from s3_test_server import S3TestServer  # noqa: E402

# Every trial a job's training processes capture (under the test's tmp_path) is read by the real
# smdebug 1.0.34 too, with Vigil's answers.
pytestmark = pytest.mark.usefixtures("real_readers_agree")

VIGIL = VIGIL_EXE
SCRIPT = os.path.join(REPO, "examples", "training_job", "train_ddp.py")
EXAMPLE_JOB = os.path.join(REPO, "examples", "training_job", "two_host_job.json")
COMMAND = [sys.executable, SCRIPT]


def job_request(name, **changes):
    with open(EXAMPLE_JOB) as f:
        job = json.load(f)
    job["TrainingJobName"] = name
    job["RemoteDebugConfig"] = {"EnableRemoteDebug": False}
    for key, value in changes.items():
        if value is None:
            job.pop(key, None)
        else:
            job[key] = value
    return job


def environment(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra or {})
    return env


class Jobs:
    """A jobs folder of the test's own, and the commands run against it."""

    def __init__(self, root):
        self.dir = str(root / "jobs")
        self.root = root

    def write(self, job):
        path = str(self.root / (job["TrainingJobName"] + ".json"))
        with open(path, "w") as f:
            json.dump(job, f)
        return path

    # vigil train runs in the test's folder: the example's relative file:// output path lands there.
    def train(self, job, *options, env=None, timeout=240):
        return subprocess.run([VIGIL, "train", self.write(job), "--jobs-dir", self.dir, *options, "--", *COMMAND],
                              capture_output=True, text=True, env=environment(env), timeout=timeout, cwd=self.root)

    def start(self, job, *options, env=None):
        return subprocess.Popen([VIGIL, "train", self.write(job), "--jobs-dir", self.dir, "--quiet", *options, "--",
                                 *COMMAND], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=environment(env), cwd=self.root)

    def outputs(self, name):
        """Where the example's file:// output path puts job `name`'s outputs."""
        return os.path.join(str(self.root), "build", "training-job-outputs", name)

    def vigil(self, *args, user=None, timeout=60):
        command = [VIGIL, *args, "--jobs-dir", self.dir]
        if user is not None:
            command = as_user(user, [vigil_for_others(), *args, "--jobs-dir", self.dir])
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd="/" if user is not None else None)

    def describe(self, name):
        out = self.vigil("describe-training-job", name, "--json")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    def host_root(self, name, host):
        return os.path.join(self.dir, name, "hosts", "algo-{}".format(host))

    def wait_training(self, name, hosts=2, timeout=120):
        """Until every host has started training (its environment file written)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if all(os.path.exists(os.path.join(self.host_root(name, h), "output", "data",
                                               "environment-algo-{}.json".format(h)))
                   for h in range(1, hosts + 1)):
                assert self.describe(name)["SecondaryStatus"] == "Training"
                return
            time.sleep(0.2)
        raise AssertionError("the job's hosts did not start training in time")


@pytest.fixture
def jobs(tmp_path):
    return Jobs(tmp_path)


def statuses(description, key="DebugRuleEvaluationStatuses"):
    return {r["RuleConfigurationName"]: r["RuleEvaluationStatus"] for r in description.get(key, [])}


def test_a_two_host_job_with_torch_distributed_runs_to_completed_with_its_rule_statuses(jobs):
    out = jobs.train(job_request("two-hosts"))
    assert out.returncode == 0, out.stderr
    d = jobs.describe("two-hosts")
    assert d["TrainingJobStatus"] == "Completed"
    assert d["SecondaryStatus"] == "Completed"
    assert [t["Status"] for t in d["SecondaryStatusTransitions"]] == \
        ["Starting", "Downloading", "Training", "Uploading", "Completed"]
    assert all("EndTime" in t for t in d["SecondaryStatusTransitions"])
    assert statuses(d) == {"LossNotDecreasing": "NoIssuesFound", "ExplodingTensor": "NoIssuesFound"}
    assert d["TrainingJobArn"].endswith(":training-job/two-hosts")
    assert d["HyperParameters"] == {"steps": "40", "step-delay": "0.02"}  # the request, echoed as sent

    # Each host ran in its own container's environment, and the two really formed one process group.
    for host in (1, 2):
        with open(os.path.join(jobs.host_root("two-hosts", host), "output", "data",
                               "environment-algo-{}.json".format(host))) as f:
            seen = json.load(f)
        assert seen["rank"] == host - 1 and seen["world_size"] == 2 and seen["rank_sum"] == 1.0
        assert seen["env"]["SM_CURRENT_HOST"] == "algo-{}".format(host)
        assert json.loads(seen["env"]["SM_HOSTS"]) == ["algo-1", "algo-2"]
        assert seen["env"]["TRAINING_JOB_NAME"] == "two-hosts"
        assert seen["env"]["MASTER_ADDR"] == "127.0.0.1"
        assert os.path.realpath(seen["cwd"]) == os.path.realpath(jobs.host_root("two-hosts", host))
    assert os.path.exists(os.path.join(jobs.host_root("two-hosts", 1), "model", "model.pt"))
    # Both workers' tensors are in the one trial the rules read (include_workers: all).
    trial = d["VigilLocalPaths"]["DebugOutput"]
    summary = json.loads(subprocess.run([VIGIL, "inspect", trial, "--json"], capture_output=True, text=True,
                                        check=True).stdout)
    assert len(summary["workers"]) == 2, summary["workers"]
    assert "[algo-2] rank 1 done after 40 steps" in out.stdout

    listed = json.loads(jobs.vigil("list-training-jobs", "--json").stdout)["TrainingJobSummaries"]
    assert [(j["TrainingJobName"], j["TrainingJobStatus"]) for j in listed] == [("two-hosts", "Completed")]

    # The outputs where the request's file:// path says (relative to where vigil train ran), as
    # SageMaker lays them out under <S3OutputPath>/<job>/.
    dest = jobs.outputs("two-hosts")
    assert sorted(os.listdir(dest)) == ["debug-output", "output", "rule-output"]
    assert files_under(os.path.join(dest, "debug-output")) == files_under(trial)
    assert os.path.isfile(os.path.join(dest, "debug-output", "training_job_end.ts"))
    assert d["ModelArtifacts"] == {"S3ModelArtifacts": "file://" + os.path.join(dest, "output", "model.tar.gz")}
    with tarfile.open(os.path.join(dest, "output", "model.tar.gz")) as t:
        assert t.getnames() == ["model.pt"]  # rank 0's alone
    with tarfile.open(os.path.join(dest, "output", "output.tar.gz")) as t:  # both hosts' output/data
        assert sorted(t.getnames()) == ["environment-algo-1.json", "environment-algo-2.json"]
    assert [(o["Name"], o["Status"], o["FilesLeft"]) for o in d["VigilOutputs"]] == [
        ("debug-output", "Uploaded", 0), ("rule-output/LossNotDecreasing", "Uploaded", 0),
        ("rule-output/ExplodingTensor", "Uploaded", 0), ("output", "Uploaded", 0)]
    assert d["VigilOutputs"][0]["Destination"] == "file://" + os.path.join(dest, "debug-output")
    text = jobs.vigil("describe-training-job", "two-hosts").stdout
    assert "  model: file://{}/output/model.tar.gz\n".format(dest) in text
    assert "  output debug-output: Uploaded, file://{}/debug-output\n".format(dest) in text


def files_under(root):
    """Every file under `root`, relative and sorted, with its size."""
    out = []
    for folder, _, names in os.walk(root):
        for n in names:
            path = os.path.join(folder, n)
            out.append((os.path.relpath(path, root), os.path.getsize(path)))
    return sorted(out)


class Webhook:
    """An HTTP sink on the loopback interface that keeps what is posted to it."""

    def __init__(self):
        received = self.received = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:{}/notify".format(self.server.server_port)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def test_a_rule_with_stop_training_stops_the_job_and_its_email_reaches_the_sinks(jobs, tmp_path):
    actions = '[{\\"name\\": \\"stoptraining\\"}, {\\"name\\": \\"email\\", \\"endpoint\\": \\"ops@example.com\\"}]'
    job = job_request(
        "flat-loss", HyperParameters={"steps": "100000", "step-delay": "0.02", "lr": "0"},
        DebugRuleConfigurations=[{"RuleConfigurationName": "LossFlat",
                                  "RuleEvaluatorImage": "895741380848.dkr.ecr.us-west-2.amazonaws.com/sagemaker-debugger-rules:latest",
                                  "RuleParameters": {"rule_to_invoke": "LossNotDecreasing", "num_steps": "4",
                                                     "action_json": actions}}])
    mail = tmp_path / "mail.txt"
    hook = Webhook()
    try:
        out = jobs.train(job, "--stop-grace", "5", env={
            "VIGIL_NOTIFY_COMMAND": "{{ echo \"$VIGIL_NOTIFY_ENDPOINT\"; cat; }} > '{}'".format(mail),
            "VIGIL_NOTIFY_WEBHOOK": hook.url})
    finally:
        hook.close()
    assert out.returncode != 0, out.stderr
    d = jobs.describe("flat-loss")
    assert d["TrainingJobStatus"] == "Stopped"
    assert d["SecondaryStatus"] == "Stopped"
    assert [t["Status"] for t in d["SecondaryStatusTransitions"]][-2:] == ["Stopping", "Stopped"]
    assert "StopTraining action of rule LossFlat" in d["VigilStopReason"]
    assert statuses(d) == {"LossFlat": "IssuesFound"}
    text = mail.read_text()
    assert text.startswith("ops@example.com\n")
    assert "SMDebugRule:LossNotDecreasing fired. RuleEvaluationConditionMet: Evaluation of the rule " \
           "LossNotDecreasing at step" in text
    assert [(m["Protocol"], m["Endpoint"], m["Subject"]) for m in hook.received] == \
        [("email", "ops@example.com", "SMDebugRule:LossNotDecreasing fired")]
    with open(os.path.join(jobs.dir, "flat-loss", "logs", "flat-loss", "rule-actions.log")) as f:
        audit = [json.loads(line) for line in f]
    assert [(a["Action"], a["Outcome"]) for a in audit if a["Action"] == "StopTraining"] == [("StopTraining", "stopping")]
    assert [a["Outcome"] for a in audit if a["Action"] == "Email"] == ["command delivered; webhook delivered"]


def test_max_runtime_in_seconds_stops_a_job_that_runs_too_long(jobs):
    job = job_request("too-long", HyperParameters={"steps": "2", "hang": "true"},
                      StoppingCondition={"MaxRuntimeInSeconds": 3}, ResourceConfig={"InstanceCount": 1})
    started = time.time()
    out = jobs.train(job, "--stop-grace", "2")
    assert out.returncode != 0
    d = jobs.describe("too-long")
    assert d["TrainingJobStatus"] == "Stopped"
    assert d["SecondaryStatus"] == "MaxRuntimeExceeded"
    assert d["SecondaryStatusTransitions"][-1]["StatusMessage"] == "Training job exceeded MaxRuntimeInSeconds provided"
    assert time.time() - started < 120


@pytest.mark.parametrize("change, message", [
    ({"TrainingJobName": "bad_name!"},
     "1 validation error detected: Value 'bad_name!' at 'trainingJobName' failed to satisfy constraint: Member must "
     "satisfy regular expression pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"),
    ({"RoleArn": None}, "at 'roleArn' failed to satisfy constraint: Member must not be null"),
    ({"CheckpointConfig": {"S3Uri": "s3://example-bucket/checkpoints"}},
     "SMDebug Does Not Currently Support Distributed Training Jobs With Checkpointing Enabled"),
    ({"DebugRuleConfigurations": [{"RuleConfigurationName": "Nope", "RuleEvaluatorImage": "x",
                                   "RuleParameters": {"rule_to_invoke": "NoSuchRule"}}]}, "NoSuchRule"),
    ({"OutputDataConfig": {"S3OutputPath": "https://example-bucket.s3.amazonaws.com/jobs"}},
     "Value 'https://example-bucket.s3.amazonaws.com/jobs' at 'outputDataConfig.s3OutputPath' failed to satisfy "
     "constraint: Member must be an s3://bucket/prefix or file://folder location"),
    ({"OutputDataConfig": {"S3OutputPath": "file://jobs/refused/output"}},  # into the job's own folder
     "overlaps the job's own folder"),
])
def test_bad_jobs_are_refused_with_sagemakers_messages_and_leave_no_job(jobs, change, message):
    job = job_request("refused")
    for key, value in change.items():
        if value is None:
            job.pop(key)
        else:
            job[key] = value
    out = jobs.train(job)
    assert out.returncode == 2
    assert message in out.stderr
    assert not os.path.exists(os.path.join(jobs.dir, job["TrainingJobName"]))


def test_a_second_job_with_the_same_name_is_refused(jobs):
    job = job_request("once", HyperParameters={"steps": "2"}, ResourceConfig={"InstanceCount": 1},
                      DebugRuleConfigurations=None, DebugHookConfig=None)
    assert jobs.train(job).returncode == 0
    out = jobs.train(job)
    assert out.returncode == 2
    assert "ResourceInUse: Training job names must be unique" in out.stderr
    assert jobs.describe("once")["TrainingJobStatus"] == "Completed"


# ---- outputs in S3 -----------------------------------------------------------------------------

BUCKET = "job-outputs"


@pytest.fixture(scope="module")
def s3():
    with S3TestServer(buckets=[BUCKET]) as server:  # fails the tests when it cannot start
        yield server


def s3_env(s3, **extra):
    """vigil train's environment for the server: its credentials (checked by its proxy), no read cache."""
    env = {k: v for k, v in s3.environment(through_proxy=True).items()}
    env.update({"VIGIL_CACHE_MAX_BYTES": "0", "VIGIL_S3_MAX_ATTEMPTS": "2"})
    env.update(extra)
    return env


def s3_keys(s3, prefix):
    """The keys under `prefix`, read from s3rver directly (it checks no signature)."""
    query = urllib.parse.urlencode({"list-type": "2", "prefix": prefix})
    with urllib.request.urlopen("{}/{}?{}".format(s3.endpoint, BUCKET, query)) as r:
        root = ET.fromstring(r.read())
    ns = {"s3": root.tag.split("}")[0][1:]} if root.tag.startswith("{") else {}
    keys = [e.text for e in root.iter("{%s}Key" % ns["s3"] if ns else "Key")]
    return sorted(k[len(prefix):] for k in keys)


def s3_get(s3, key):
    with urllib.request.urlopen("{}/{}/{}".format(s3.endpoint, BUCKET, key)) as r:
        return r.read()


def test_outputs_reach_s3_while_the_job_runs_and_a_stopped_jobs_model_at_its_end(jobs, s3):
    base = "s3://{}/runs/".format(BUCKET)
    example = job_request("x")
    job = job_request("to-s3", HyperParameters={"steps": "20", "step-delay": "0.02", "hang": "true"},
                      OutputDataConfig={"S3OutputPath": base},
                      DebugHookConfig=dict(example["DebugHookConfig"], S3OutputPath=base),
                      ProfilerConfig={"ProfilingIntervalInMilliseconds": 500},  # beside the others: OutputDataConfig's
                      ProfilerRuleConfigurations=[{"RuleConfigurationName": "ProfilerReport", "RuleEvaluatorImage": "local",
                                                   "RuleParameters": {"rule_to_invoke": "ProfilerReport"}}])
    process = jobs.start(job, "--stop-grace", "2", env=s3_env(s3))
    try:
        jobs.wait_training("to-s3")
        # Both workers' steps reach S3 while the job still runs (the hosts hang after training).
        deadline = time.time() + 60
        while time.time() < deadline:
            keys = s3_keys(s3, "runs/to-s3/debug-output/")
            if sum(k.startswith("index/") and k.endswith("_worker_1.json") for k in keys) >= 10:
                break
            time.sleep(0.2)
        assert jobs.describe("to-s3")["TrainingJobStatus"] == "InProgress"
        assert sum(k.startswith("index/") for k in keys) >= 10, keys
        assert s3_keys(s3, "runs/to-s3/output/") == []  # the archives come at the end
        assert jobs.vigil("stop-training-job", "to-s3").returncode == 0
        out, err = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, err
    d = jobs.describe("to-s3")
    assert d["TrainingJobStatus"] == "Stopped", d.get("FailureReason")
    # SageMaker uploads a stopped job's model too.
    assert d["ModelArtifacts"] == {"S3ModelArtifacts": "s3://{}/runs/to-s3/output/model.tar.gz".format(BUCKET)}
    with tarfile.open(fileobj=io.BytesIO(s3_get(s3, "runs/to-s3/output/model.tar.gz"))) as t:
        assert t.getnames() == ["model.pt"]
    with tarfile.open(fileobj=io.BytesIO(s3_get(s3, "runs/to-s3/output/output.tar.gz"))) as t:
        assert sorted(t.getnames()) == ["environment-algo-1.json", "environment-algo-2.json"]
    assert [(o["Name"], o["Status"]) for o in d["VigilOutputs"]] == [
        ("debug-output", "Uploaded"), ("profiler-output", "Uploaded"), ("rule-output/LossNotDecreasing", "Uploaded"),
        ("rule-output/ExplodingTensor", "Uploaded"), ("rule-output/ProfilerReport", "Uploaded"), ("output", "Uploaded")]
    # Every file of the job folder's copies is in S3 under the layout of sagemaker-api §3.1 and §4.6.
    local = d["VigilLocalPaths"]
    for name, folder in [("debug-output", local["DebugOutput"]), ("profiler-output", local["ProfilerOutput"]),
                         ("rule-output/ProfilerReport", os.path.join(local["RuleOutput"], "ProfilerReport"))]:
        assert s3_keys(s3, "runs/to-s3/{}/".format(name)) == [f for f, _ in files_under(folder)], name
    assert "training_job_end.ts" in s3_keys(s3, "runs/to-s3/debug-output/")
    assert "profiler-output/profiler-report.html" in s3_keys(s3, "runs/to-s3/rule-output/ProfilerReport/")
    # The trial in S3 reads as the local one, both workers and the end marker.
    env = environment(s3_env(s3))
    remote = subprocess.run([VIGIL, "inspect", "s3://{}/runs/to-s3/debug-output".format(BUCKET), "--json"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert remote.returncode == 0, remote.stderr
    here = json.loads(subprocess.run([VIGIL, "inspect", local["DebugOutput"], "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    there = json.loads(remote.stdout)
    assert there["workers"] == here["workers"] and len(there["workers"]) == 2
    assert there["steps"] == here["steps"]
    # Nothing of the credentials in what the job wrote (the server's key and secret are "S3RVER").
    logs = os.path.join(jobs.dir, "to-s3", "logs")
    for folder, _, names in os.walk(logs):
        for n in names:
            with open(os.path.join(folder, n), errors="replace") as f:
                assert "S3RVER" not in f.read(), n
    assert "S3RVER" not in err


def test_an_output_that_cannot_be_uploaded_fails_the_job_as_sagemaker_does_and_the_files_stay(jobs, s3):
    base = "s3://{}/denied/".format(BUCKET)
    job = job_request("denied", HyperParameters={"steps": "4"}, ResourceConfig={"InstanceCount": 1},
                      DebugRuleConfigurations=None, DebugHookConfig=None, OutputDataConfig={"S3OutputPath": base})
    s3.set_faults([{"match": "/denied/denied/output/model.tar.gz", "method": "PUT", "times": 1000, "action": "status",
                    "status": 403, "code": "AccessDenied"}])
    try:
        out = jobs.train(job, env=s3_env(s3, VIGIL_UPLOAD_TIMEOUT_SECONDS="2"))
    finally:
        s3.set_faults([])
    assert out.returncode == 4, out.stderr
    d = jobs.describe("denied")
    assert d["TrainingJobStatus"] == "Failed"
    assert [t["Status"] for t in d["SecondaryStatusTransitions"]][-2:] == ["Uploading", "Failed"]
    assert d["FailureReason"].startswith("ClientError: Artifact upload failed:"), d["FailureReason"]
    assert "AccessDenied" in d["FailureReason"] and "S3RVER" not in d["FailureReason"]
    assert "ModelArtifacts" not in d
    # The job folder keeps the model; the output data made it.
    assert os.path.isfile(os.path.join(d["VigilLocalPaths"]["Artifacts"], "model.tar.gz"))
    assert s3_keys(s3, "denied/denied/output/") == ["output.tar.gz"]
    assert "AccessDenied" in out.stderr


def test_an_output_location_that_cannot_be_used_is_refused_before_the_job(jobs, s3, tmp_path):
    base = "s3://{}/refused/".format(BUCKET)
    job = job_request("refused", ResourceConfig={"InstanceCount": 1}, DebugRuleConfigurations=None,
                      DebugHookConfig=None, OutputDataConfig={"S3OutputPath": base})
    # No credentials anywhere: said before anything runs, naming where they were looked for.
    no_credentials = {k: "" for k in s3.environment()}
    no_credentials.update({"HOME": str(tmp_path), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                           "AWS_CONFIG_FILE": str(tmp_path / "none")})
    out = jobs.train(job, env=no_credentials)
    assert out.returncode == 2
    assert "vigil train: cannot upload to s3://{}/refused/refused/output:".format(BUCKET) in out.stderr, out.stderr
    assert "AWS_ACCESS_KEY_ID" in out.stderr
    assert not os.path.exists(os.path.join(jobs.dir, "refused"))
    # Another job's outputs at the destination: never mixed.
    urllib.request.urlopen(urllib.request.Request("{}/{}/refused/refused/output/model.tar.gz".format(s3.endpoint, BUCKET),
                                                  data=b"an earlier job's", method="PUT")).read()
    out = jobs.train(job, env=s3_env(s3))
    assert out.returncode == 2
    assert "s3://{}/refused/refused/output already holds files".format(BUCKET) in out.stderr, out.stderr
    assert not os.path.exists(os.path.join(jobs.dir, "refused"))


# ---- remote debugging --------------------------------------------------------------------------

class Tmux:
    """A terminal the test types into and reads, as a person at `vigil attach` would."""

    def __init__(self, name, command):
        self.name = name
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "160", "-y", "40", command], check=True)
        subprocess.run(["tmux", "set-option", "-t", name, "remain-on-exit", "on"], check=True)

    def send(self, text):
        subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", text], check=True)
        subprocess.run(["tmux", "send-keys", "-t", self.name, "Enter"], check=True)

    def screen(self):
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name, "-S", "-200"], capture_output=True,
                              text=True).stdout

    def wait_for(self, text, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text in self.screen():
                return
            time.sleep(0.1)
        raise AssertionError("{!r} never appeared on the terminal:\n{}".format(text, self.screen()))

    def close(self):
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def start_debug_job(jobs):
    """A two-host job with remote debugging on that trains until stopped."""
    job = job_request("debug-me", HyperParameters={"steps": "2", "hang": "true"}, DebugRuleConfigurations=None,
                      RemoteDebugConfig={"EnableRemoteDebug": True})
    process = jobs.start(job, "--stop-grace", "2")
    try:
        jobs.wait_training("debug-me")
    except BaseException:
        process.kill()
        raise
    return process


def end_debug_job(jobs, process):
    jobs.vigil("stop-training-job", "debug-me")
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="module")
def running_job(tmp_path_factory):
    """One such job for the tests that leave it running as they found it (remote debugging on)."""
    jobs = Jobs(tmp_path_factory.mktemp("debug-job"))
    process = start_debug_job(jobs)
    yield jobs
    end_debug_job(jobs, process)


@pytest.fixture
def own_debug_job(jobs):
    """A job of the test's own, for a test that ends it."""
    process = start_debug_job(jobs)
    yield jobs
    end_debug_job(jobs, process)


def test_attach_opens_a_shell_in_algo_2s_environment_and_the_session_log_keeps_it(running_job):
    jobs = running_job
    term = Tmux("vigil-attach-{}".format(os.getpid()),
                "{} attach debug-me_algo-2 --jobs-dir {}".format(VIGIL, jobs.dir))
    try:
        term.wait_for("Starting session with SessionId: ")
        term.send("echo host=$SM_CURRENT_HOST rank=$RANK; pwd; test -t 0 && echo on-a-tty")
        term.wait_for("host=algo-2 rank=1")
        term.wait_for("on-a-tty")
        assert jobs.host_root("debug-me", 2) in term.screen()
        term.send("exit")
        term.wait_for("Exiting session with sessionId: ")
    finally:
        term.close()
    logs = os.path.join(jobs.dir, "debug-me", "logs", "debug-me")
    [stream] = [d for d in os.listdir(logs) if d.startswith("algo-2-") and os.path.isdir(os.path.join(logs, d))]
    with open(os.path.join(logs, stream, "ssm.log"), errors="replace") as f:
        log = f.read()
    assert "echo host=$SM_CURRENT_HOST rank=$RANK" in log
    assert "host=algo-2 rank=1" in log


def test_attach_command_runs_one_command_and_gives_its_status(running_job):
    out = running_job.vigil("attach", "sagemaker-training-job:debug-me_algo-1", "--command",
                            "echo $SM_CURRENT_HOST; exit 7")
    assert out.returncode == 7, out.stderr
    assert out.stdout.strip() == "algo-1"
    assert "Starting session with SessionId: " in out.stderr


def test_remote_debug_can_be_turned_off_and_on_while_training(running_job):
    jobs = running_job
    assert jobs.vigil("update-training-job", "debug-me", "--remote-debug", "off").returncode == 0
    assert jobs.describe("debug-me")["RemoteDebugConfig"] == {"EnableRemoteDebug": False}
    refused = jobs.vigil("attach", "debug-me_algo-1", "--command", "true")
    assert refused.returncode != 0 and "remote debugging is not enabled" in refused.stderr
    assert jobs.vigil("update-training-job", "debug-me", "--remote-debug", "on").returncode == 0
    assert jobs.vigil("attach", "debug-me_algo-1", "--command", "true").returncode == 0
    refused = jobs.vigil("attach", "debug-me_algo-3", "--command", "true")
    assert refused.returncode != 0 and "InvalidTarget" in refused.stderr


def test_attach_and_update_are_refused_once_the_job_has_ended(own_debug_job):
    jobs = own_debug_job
    assert jobs.vigil("stop-training-job", "debug-me").returncode == 0
    deadline = time.time() + 60
    while jobs.describe("debug-me")["TrainingJobStatus"] != "Stopped" and time.time() < deadline:
        time.sleep(0.2)
    assert jobs.describe("debug-me")["TrainingJobStatus"] == "Stopped"
    attach = jobs.vigil("attach", "debug-me_algo-1", "--command", "true")
    assert attach.returncode != 0 and "TargetNotConnected" in attach.stderr
    update = jobs.vigil("update-training-job", "debug-me", "--remote-debug", "off")
    assert update.returncode != 0 and "ValidationException" in update.stderr and "Stopped" in update.stderr


def test_update_is_refused_when_the_job_completed(jobs):
    job = job_request("done", HyperParameters={"steps": "2"}, ResourceConfig={"InstanceCount": 1},
                      DebugRuleConfigurations=None)
    assert jobs.train(job).returncode == 0
    update = jobs.vigil("update-training-job", "done", "--remote-debug", "on")
    assert update.returncode != 0
    assert "ValidationException: The request was rejected because the training job is in status Completed." in update.stderr


def test_attach_is_refused_under_network_isolation(jobs):
    job = job_request("isolated", HyperParameters={"steps": "2", "hang": "true"}, DebugRuleConfigurations=None,
                      ResourceConfig={"InstanceCount": 1}, EnableNetworkIsolation=True,
                      RemoteDebugConfig={"EnableRemoteDebug": True})
    process = jobs.start(job, "--stop-grace", "2")
    try:
        jobs.wait_training("isolated", hosts=1)
        out = jobs.vigil("attach", "isolated_algo-1", "--command", "true")
        assert out.returncode != 0 and "network isolation" in out.stderr
    finally:
        jobs.vigil("stop-training-job", "isolated")
        process.wait(timeout=60)


# ---- who may attach: the kernel's word on the peer, and the access policy -----------------------

NOBODY, OTHER, DENIED = 65534, 65533, 65532  # uids with no rights of their own on this machine
_copy_for_others = []


def vigil_for_others():
    """The vigil binary where every user may run it (the build folder may sit in root's home)."""
    if not _copy_for_others:
        import tempfile
        folder = tempfile.mkdtemp(prefix="vigil-bin-")
        os.chmod(folder, 0o755)
        shutil.copy2(VIGIL, os.path.join(folder, "vigil"))
        _copy_for_others.append(os.path.join(folder, "vigil"))
        atexit.register(shutil.rmtree, folder, True)
    return _copy_for_others[0]


def as_user(uid, command):
    return ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups", *command]
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="running a client as another user needs root (CI runs as root)")

LYING_CLIENT = r"""
import json, socket, struct, sys
request = json.dumps({"ProtocolVersion": 1, "Action": "StartSession", "Target": sys.argv[2], "Command": "id -u",
                      "User": "root", "Uid": 0, "UserName": "root"}).encode()
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"Q" + struct.pack(">I", len(request)) + request)
header = s.recv(5)
print(s.recv(struct.unpack(">I", header[1:])[0]).decode())
"""


@pytest.fixture
def shared_jobs_dir():
    """A jobs folder other users may pass through (a pytest tmp_path is its owner's alone)."""
    import tempfile
    path = tempfile.mkdtemp(prefix="vigil-shared-jobs-")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@as_root
def test_without_a_policy_another_user_cannot_reach_the_job(running_job):
    out = running_job.vigil("attach", "debug-me_algo-1", "--command", "true", user=NOBODY)
    assert out.returncode != 0 and "AccessDeniedException" in out.stderr
    with open(os.path.join(running_job.dir, "debug-me", "state.json")) as f:
        socket_path = json.load(f)["Vigil"]["ControlSocket"]
    assert os.stat(os.path.dirname(socket_path)).st_mode & 0o777 == 0o700
    raw = subprocess.run(as_user(NOBODY, ["/usr/bin/python3", "-c", LYING_CLIENT, socket_path, "debug-me_algo-1"]),
                         capture_output=True, text=True, cwd="/")
    assert raw.returncode != 0 and "PermissionError" in raw.stderr


@as_root
def test_the_access_policy_decides_for_other_users_and_a_lying_client_is_still_refused(tmp_path, shared_jobs_dir):
    jobs = Jobs(tmp_path)
    jobs.dir = shared_jobs_dir
    allow_all = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    policy = {"Bindings": [
        {"Users": ["root"], "Policy": allow_all},
        # nobody: sessions on host 1 only (the seed's StringLike condition), and may switch remote debugging off only.
        {"Users": [str(NOBODY)], "Policy": {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": ["ssm:StartSession", "ssm:TerminateSession"], "Resource": "*",
             "Condition": {"StringLike": {"ssm:resourceTag/aws:ssmmessages:target-id":
                                          ["sagemaker-training-job:guarded_algo-1"]}}},
            {"Effect": "Allow", "Action": "sagemaker:UpdateTrainingJob", "Resource": "*",
             "Condition": {"BoolIfExists": {"sagemaker:EnableRemoteDebug": False}}}]}},
        {"Users": [str(DENIED)], "Policy": {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "ssm:*", "Resource": "*"},
            {"Sid": "NoShells", "Effect": "Deny", "Action": "ssm:StartSession", "Resource": "*"}]}},
    ]}
    policy_file = tmp_path / "access-policy.json"
    policy_file.write_text(json.dumps(policy))
    job = job_request("guarded", HyperParameters={"steps": "2", "hang": "true"}, DebugRuleConfigurations=None,
                      RemoteDebugConfig={"EnableRemoteDebug": True})
    runtime = tmp_path / "runtime"  # the owner's runtime folder, as on a desktop session: 0700
    runtime.mkdir(mode=0o700)
    process = jobs.start(job, "--stop-grace", "2", "--access-policy", str(policy_file),
                         env={"XDG_RUNTIME_DIR": str(runtime)})
    try:
        jobs.wait_training("guarded")
        allowed = jobs.vigil("attach", "guarded_algo-1", "--command", "id -u; echo $SM_CURRENT_HOST", user=NOBODY)
        assert allowed.returncode == 0, allowed.stderr
        assert allowed.stdout.split() == [str(os.geteuid()), "algo-1"]  # the session runs as the job's user
        conditioned_out = jobs.vigil("attach", "guarded_algo-2", "--command", "true", user=NOBODY)
        assert conditioned_out.returncode != 0
        assert "AccessDeniedException: User: nobody (uid 65534) is not authorized to perform: ssm:StartSession" \
            in conditioned_out.stderr
        # A user no binding names is closed at accept, without a reply (issue 28, items 1 and 6).
        unbound = jobs.vigil("attach", "guarded_algo-1", "--command", "true", user=OTHER)
        assert unbound.returncode != 0
        assert f"access policy allows your user (uid {OTHER}) nothing" in unbound.stderr, unbound.stderr
        with open(os.path.join(jobs.dir, "guarded", "state.json")) as f:
            state = json.load(f)["Vigil"]
        # XDG_RUNTIME_DIR is the owner's (0700): a job that grants others keeps its socket out of it (item 15).
        assert state["ControlSocket"].startswith("/tmp/vigil-job-"), state
        denied = jobs.vigil("attach", "guarded_algo-1", "--command", "true", user=DENIED)
        assert denied.returncode != 0 and "with an explicit deny" in denied.stderr
        # The protocol carries no identity: a client claiming to be root is judged as who it is.
        with open(os.path.join(jobs.dir, "guarded", "state.json")) as f:
            socket_path = json.load(f)["Vigil"]["ControlSocket"]
        lying = subprocess.run(as_user(NOBODY, ["/usr/bin/python3", "-c", LYING_CLIENT, socket_path, "guarded_algo-2"]),
                               capture_output=True, text=True, cwd="/")
        reply = json.loads(lying.stdout)
        assert reply["Ok"] is False and "User: nobody (uid 65534)" in reply["Error"], reply
        # UpdateTrainingJob under the seed's BoolIfExists condition: off is allowed, on is not.
        on = jobs.vigil("update-training-job", "guarded", "--remote-debug", "on", user=NOBODY)
        assert on.returncode != 0 and "sagemaker:UpdateTrainingJob" in on.stderr
        off = jobs.vigil("update-training-job", "guarded", "--remote-debug", "off", user=NOBODY)
        assert off.returncode == 0, off.stderr
        stop = jobs.vigil("stop-training-job", "guarded", user=NOBODY)
        assert stop.returncode != 0 and "sagemaker:StopTrainingJob" in stop.stderr
    finally:
        jobs.vigil("stop-training-job", "guarded")
        process.wait(timeout=60)
    assert jobs.describe("guarded")["RemoteDebugConfig"] == {"EnableRemoteDebug": False}


def processes_running(argv):
    """The pids of live processes whose command line is `argv` (a zombie's is empty)."""
    wanted = ("\0".join(argv) + "\0").encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/{}/cmdline".format(pid), "rb") as f:
                if f.read() == wanted:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def started_process(argv, polls=200):
    """The pids of `argv` once it runs (a detached child execs after its parent has returned)."""
    for _ in range(polls):
        found = processes_running(argv)
        if found:
            return found
        time.sleep(0.05)
    return []


@as_root
def test_what_a_granted_session_detaches_ends_with_revocation_and_with_the_job_and_state_stays_the_owners(
        tmp_path, shared_jobs_dir):
    """Issue 28, items 8 and 14: a setsid'd process of a session does not outlive `--remote-debug off`
    or the job; state.json is the owner's, and the granted user still reaches the job."""
    jobs = Jobs(tmp_path)
    jobs.dir = shared_jobs_dir
    policy = {"Bindings": [
        {"Users": ["root"], "Policy": {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "*", "Resource": "*"}]}},
        {"Users": [str(NOBODY)], "Policy": {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": ["ssm:StartSession", "sagemaker:UpdateTrainingJob"], "Resource": "*"}]}}]}
    policy_file = tmp_path / "access-policy.json"
    policy_file.write_text(json.dumps(policy))
    job = job_request("detaching", HyperParameters={"steps": "2", "hang": "true"}, DebugRuleConfigurations=None,
                      RemoteDebugConfig={"EnableRemoteDebug": True})
    process = jobs.start(job, "--stop-grace", "2", "--access-policy", str(policy_file))
    state_file = os.path.join(jobs.dir, "detaching", "state.json")
    escapes = [["sleep", "9876.{}".format(os.getpid())], ["sleep", "9877.{}".format(os.getpid())]]
    try:
        jobs.wait_training("detaching")
        for user in (NOBODY, OTHER):  # granted, and named nowhere: neither reads the owner's record
            read = subprocess.run(as_user(user, ["cat", state_file]), capture_output=True, text=True, cwd="/")
            assert read.returncode != 0 and "Permission denied" in read.stderr, (user, read.stdout)
        # The session waits until the detached process runs: ended before its child has called
        # setsid, the session would take the child with it (seen on a loaded machine).
        detach_command = "setsid -f {0} </dev/null >/dev/null 2>&1; until pgrep -x -f '{0}' >/dev/null; do sleep 0.05; done; " \
                         "echo detached"
        detach = detach_command.format(" ".join(escapes[0]))
        out = jobs.vigil("attach", "detaching_algo-1", "--command", detach, user=NOBODY)
        assert out.returncode == 0 and out.stdout.strip() == "detached", out.stderr
        assert len(started_process(escapes[0])) == 1  # the session ended; what it detached did not
        off = jobs.vigil("update-training-job", "detaching", "--remote-debug", "off", user=NOBODY)
        assert off.returncode == 0, off.stderr
        assert processes_running(escapes[0]) == []

        assert jobs.vigil("update-training-job", "detaching", "--remote-debug", "on").returncode == 0
        detach = detach_command.format(" ".join(escapes[1]))
        out = jobs.vigil("attach", "detaching_algo-1", "--command", detach, user=NOBODY)
        assert out.returncode == 0, out.stderr
        assert len(started_process(escapes[1])) == 1
    finally:
        jobs.vigil("stop-training-job", "detaching")
        process.wait(timeout=60)
        survivors = [pid for escape in escapes for pid in processes_running(escape)]
        for pid in survivors:
            os.kill(pid, 9)
    assert survivors == []  # the job's end ended what the second session detached
