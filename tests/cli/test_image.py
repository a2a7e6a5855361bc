"""The evaluator image (scripts/build-image.sh, docs/image.md): built from this build tree's install,
run with `buildah run --isolation chroot` over mounted folders (a trial written by smdebug's hook, a
third-party C plugin built here, the job, an output folder), it gives the statuses that the same job
gives outside the image: built-in rules, the Python rule plugin with a rule file, the third-party
plugin. The job also comes as VIGIL_JOB_JSON, and SIGTERM stops the rules (Stopped, exit 0).
Skipped only where buildah is missing (scripts/install-deps.sh installs it)."""
import glob
import json
import os
import shutil
import signal
import subprocess
import tarfile
import time

import pytest

from conftest import BUILD, REPO, expected, trial_dir
from rule_files import write_rule_file

pytestmark = pytest.mark.skipif(shutil.which("buildah") is None, reason="buildah is not installed")

FIXTURE = "loss_not_decreasing"


@pytest.fixture(scope="module")
def storage(tmp_path_factory):
    work = tmp_path_factory.mktemp("image")
    return ["--storage-driver", "vfs", "--root", str(work / "storage"), "--runroot", str(work / "run")], work


@pytest.fixture(scope="module")
def image(storage):
    args, work = storage
    archive = work / "vigil-evaluator.oci.tar"
    subprocess.run(["bash", os.path.join(REPO, "scripts", "build-image.sh"), "--output", str(archive),
                    "--build-dir", BUILD], check=True, timeout=900)
    return archive


@pytest.fixture()
def container(storage, image):
    args, _ = storage
    name = subprocess.run(["buildah", *args, "from", "--quiet", "oci-archive:" + str(image)], check=True,
                          capture_output=True, text=True).stdout.strip()
    yield name
    subprocess.run(["buildah", *args, "rm", name], capture_output=True)


def third_party_plugin(folder):
    """examples/c_minimal_rule built as a third party would, against the C ABI headers alone."""
    folder.mkdir()
    subprocess.run(["cc", "-std=c11", "-shared", "-fPIC", "-fvisibility=hidden", "-I",
                    os.path.join(REPO, "abi", "include"), os.path.join(REPO, "examples", "c_minimal_rule",
                                                                        "c_minimal_rule.c"),
                    "-o", str(folder / "libexample_c_minimal_rule.so"), "-lm"], check=True)
    return folder


def job_for(rule_file):
    rules = [("Loss", {"rule_to_invoke": "LossNotDecreasing"}), ("Gradient", {"rule_to_invoke": "VanishingGradient"})]
    for name, res in expected(FIXTURE)["rules"]["results"].items():
        params = dict(res["params"], start_step=str(res["start_step"]), end_step=str(res["end_step"]))
        rules.append((name + "File", dict(params, rule_to_invoke=name, source_s3_uri=rule_file)))
    rules.append(("LossAbove", {"rule_to_invoke": "LossAboveThreshold", "threshold": "0.5"}))
    return {"DebugRuleConfigurations": [{"RuleConfigurationName": n, "RuleParameters": p} for n, p in rules]}


def comparable(status_file):
    statuses = json.loads(status_file.read_text())["DebugRuleEvaluationStatuses"]
    return {s["RuleConfigurationName"]: (s["RuleEvaluationStatus"], [t["step"] for t in s.get("Triggers", [])],
                                         s.get("StatusDetails", "")) for s in statuses}


def mounts(trial, job_dir, plugins, output):
    return ["-v", trial + ":/opt/vigil/trial:ro", "-v", str(job_dir) + ":/opt/vigil/job:ro",
            "-v", str(plugins) + ":/opt/vigil/plugins:ro", "-v", str(output) + ":/opt/vigil/output"]


def output_folder(path):
    path.mkdir()
    path.chmod(0o777)  # the image's user (uid 10001) writes there
    return path


def test_image_gives_the_statuses_of_the_same_job_outside(storage, container, vigil_exe, tmp_path):
    args, _ = storage
    plugins = third_party_plugin(tmp_path / "plugins")
    outside_job, inside_job = tmp_path / "outside", tmp_path / "job"
    outside_job.mkdir()
    inside_job.mkdir()
    rule_name = os.path.basename(write_rule_file(FIXTURE, outside_job))
    shutil.copy(outside_job / rule_name, inside_job / rule_name)
    (outside_job / "job.json").write_text(json.dumps(job_for(str(outside_job / rule_name))))
    job = job_for("/opt/vigil/job/" + rule_name)
    (inside_job / "job.json").write_text(json.dumps(job))

    outside_status = tmp_path / "outside-status.json"
    proc = subprocess.run([vigil_exe, "evaluate", "--job", str(outside_job / "job.json"), "--trial",
                           trial_dir(FIXTURE), "--plugins", str(plugins), "--status-file", str(outside_status),
                           "--no-follow"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    want = comparable(outside_status)
    assert want["LossAbove"][0] in ("IssuesFound", "NoIssuesFound"), want  # the third-party plugin ran
    assert all(s[0] != "Error" for s in want.values()), want

    out = output_folder(tmp_path / "out")
    run = ["buildah", *args, "run", "--isolation", "chroot", *mounts(trial_dir(FIXTURE), inside_job, plugins, out)]
    proc = subprocess.run([*run, container, "--", "vigil", "evaluate", "--job", "/opt/vigil/job/job.json",
                           "--trial", "/opt/vigil/trial", "--status-file", "/opt/vigil/output/rule-statuses.json",
                           "--no-follow"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert comparable(out / "rule-statuses.json") == want
    assert "LossAbove" in proc.stdout  # the statuses go to stdout too

    # The job as a variable, as a manifest may pass it.
    out2 = output_folder(tmp_path / "out2")
    proc = subprocess.run(["buildah", *args, "run", "--isolation", "chroot", "--env", "VIGIL_JOB_JSON=" + json.dumps(job),
                           *mounts(trial_dir(FIXTURE), inside_job, plugins, out2), container, "--",
                           "vigil", "evaluate", "--trial", "/opt/vigil/trial",
                           "--status-file", "/opt/vigil/output/rule-statuses.json", "--no-follow"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert comparable(out2 / "rule-statuses.json") == want


def test_image_runs_as_vigil_with_its_labels(storage, container):
    args, _ = storage
    config = json.loads(subprocess.run(["buildah", *args, "inspect", container],
                                       check=True, capture_output=True, text=True).stdout)["OCIv1"]["config"]
    header = open(os.path.join(REPO, "abi", "include", "vigil", "version.h")).read()
    field = {k: header.split("#define VIGIL_ABI_" + k + " ")[1].split()[0] for k in ("MAJOR", "MINOR", "PATCH")}
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["vigil"]
    assert config["Labels"]["org.opencontainers.image.version"] == "{MAJOR}.{MINOR}.{PATCH}".format(**field)
    assert config["Labels"]["dev.vigil.abi-version"] == "{MAJOR}.{MINOR}".format(**field)
    assert "VIGIL_PLUGIN_PATH=/opt/vigil/plugins" in config["Env"]


def test_the_archive_is_the_image_the_kubernetes_manifests_run(image):
    """The reference the archive carries (what `podman load`/`ctr import` tag it as) is the image
    every evaluator container of deploy/kubernetes names, so the manifests run what the script built."""
    import yaml  # kubernetes-validate's dependency, in .venv with it

    with tarfile.open(image) as archive:
        index = json.load(archive.extractfile("index.json"))
    refs = {m.get("annotations", {}).get("org.opencontainers.image.ref.name") for m in index["manifests"]}
    header = open(os.path.join(REPO, "abi", "include", "vigil", "version.h")).read()
    version = ".".join(header.split("#define VIGIL_ABI_" + k + " ")[1].split()[0] for k in ("MAJOR", "MINOR", "PATCH"))
    assert refs == {"vigil-evaluator:" + version}, refs
    named = set()
    for path in glob.glob(os.path.join(REPO, "deploy", "kubernetes", "*.yaml")):
        for doc in yaml.safe_load_all(open(path)):
            text = json.dumps(doc)
            named.update(part.split('"')[0] for part in text.split('"image": "')[1:])
    evaluator_images = {n for n in named if n.split("/")[-1].startswith("vigil-evaluator")}
    assert evaluator_images == refs, (evaluator_images, refs)


def descendant_named(pid, name):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open("/proc/%s/comm" % entry) as f:
                    children.setdefault(int(fields[1]), []).append((int(entry), f.read().strip()))
            except OSError:
                continue
    todo = [pid]
    while todo:
        for child, comm in children.get(todo.pop(), []):
            if comm == name:
                return child
            todo.append(child)
    pytest.fail("no %s process under %d" % (name, pid))


def test_sigterm_in_the_image_stops_the_rules(storage, container, tmp_path):
    args, _ = storage
    trial = tmp_path / "trial"  # a training job still running: no end-of-training marker
    shutil.copytree(trial_dir(FIXTURE), trial, ignore=shutil.ignore_patterns("training_job_end.ts"))
    out = output_folder(tmp_path / "out")
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "job.json").write_text(json.dumps({"DebugRuleConfigurations": [
        {"RuleConfigurationName": "Loss", "RuleParameters": {"rule_to_invoke": "LossNotDecreasing"}}]}))
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    proc = subprocess.Popen(["buildah", *args, "run", "--isolation", "chroot", *mounts(str(trial), job_dir, plugins, out),
                             container, "--", "vigil", "evaluate", "--job", "/opt/vigil/job/job.json", "--trial",
                             "/opt/vigil/trial", "--status-file", "/opt/vigil/output/rule-statuses.json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status = out / "rule-statuses.json"
    deadline = time.monotonic() + 120
    while not status.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    # A container runtime signals the entrypoint; buildah run would SIGKILL it, so signal vigil itself
    # (chroot isolation shares this PID namespace).
    os.kill(descendant_named(proc.pid, "vigil"), signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stdout + stderr
    assert [s["RuleEvaluationStatus"] for s in json.loads(status.read_text())["DebugRuleEvaluationStatuses"]] == ["Stopped"]
