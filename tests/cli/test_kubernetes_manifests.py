"""deploy/kubernetes/: the evaluator's manifests (docs/kubernetes.md) checked against what they name.

* every manifest is valid against the Kubernetes API's JSON schemas, strictly (no unknown field),
  for the oldest Kubernetes the manifests support and the newest the validator knows. The schemas are
  the ones the PyPI package kubernetes-validate ships (no download at test time), installed into .venv
  by scripts/python-envs.sh. They do not hold the API's enumerations or cross-field rules, so the few
  of those the manifests rely on are checked here too;
* every evaluator container runs the image scripts/build-image.sh builds, `vigil-evaluator:VERSION`
  with VERSION from abi/include/vigil/version.h (docs: the image contract), as a non-root user with a
  read-only root file system and no capabilities, with the contract's mount points;
* every `vigil` flag a container passes is in the installed command's `--help`, and the container's
  own arguments (its paths moved into a temporary folder, the job from the ConfigMap) pass
  `vigil evaluate --check`;
* the sidecar's evaluator, run with its own arguments, ends by itself when the training's trial gets
  its end-of-training marker, with every rule judged.
"""
import glob
import json
import os
import re
import shlex
import subprocess

import kubernetes_validate
import pytest
import yaml

from conftest import REPO, trial_dir
from test_evaluate import publish_trial

DEPLOY = os.path.join(REPO, "deploy", "kubernetes")
MANIFESTS = sorted(glob.glob(os.path.join(DEPLOY, "*.yaml")))
# The oldest Kubernetes the manifests are written for (docs/kubernetes.md): Job podFailurePolicy is
# on by default from 1.26 and generally available from 1.31; 1.29 is the oldest release still kept
# by the major managed services. The newest: the latest schemas the validator ships.
KUBERNETES_VERSIONS = ["1.29", kubernetes_validate.utils.latest_version()]
EVALUATOR = "vigil-evaluator"
TRAINING = "training"
# The image contract's mount points.
JOB_DIR, OUTPUT_DIR, TRIAL_DIR = "/opt/vigil/job", "/opt/vigil/output", "/opt/vigil/trial"


def documents(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def all_documents():
    return [(os.path.basename(p), d) for p in MANIFESTS for d in documents(p)]


def pod_specs():
    """(manifest, pod spec) of every workload: the Jobs' pod templates."""
    specs = [(name, d["spec"]["template"]["spec"]) for name, d in all_documents() if d["kind"] == "Job"]
    assert specs, "no Job in deploy/kubernetes"
    return specs


def containers(kind):
    """(manifest, pod spec, container) of every container named `kind`."""
    found = [(name, pod, c) for name, pod in pod_specs() for c in pod["containers"] + pod.get("initContainers", [])
             if c["name"] == kind]
    assert found, "no {} container in deploy/kubernetes".format(kind)
    return found


def config_map(name):
    maps = [d for _, d in all_documents() if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name]
    assert len(maps) == 1, "ConfigMap {} is defined {} times in deploy/kubernetes".format(name, len(maps))
    return maps[0]


def project_version():
    with open(os.path.join(REPO, "abi", "include", "vigil", "version.h")) as f:
        text = f.read()
    parts = [re.search(r"#define VIGIL_ABI_{} (\d+)".format(p), text) for p in ("MAJOR", "MINOR", "PATCH")]
    assert all(parts), "abi/include/vigil/version.h lost its VIGIL_ABI_MAJOR/MINOR/PATCH"
    return ".".join(m.group(1) for m in parts)


def option_value(args, flag):
    values = [args[i + 1] for i, a in enumerate(args[:-1]) if a == flag]
    assert len(values) <= 1, (flag, args)
    return values[0] if values else None


def vigil_arguments(container):
    """The vigil command line a container runs (without the program): the evaluator image's
    ENTRYPOINT is vigil, so its args are vigil's; another container runs vigil through its command."""
    if container["name"] == EVALUATOR:
        assert "command" not in container, "the evaluator keeps the image's ENTRYPOINT (vigil)"
        return list(container["args"])
    command = list(container.get("command", [])) + list(container.get("args", []))
    assert command and command[0] == "vigil", "container {} does not run vigil: {}".format(container["name"], command)
    return command[1:]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("manifest", [os.path.basename(p) for p in MANIFESTS])
def test_manifest_is_valid_against_the_kubernetes_schemas(manifest, version):
    docs = documents(os.path.join(DEPLOY, manifest))
    assert docs, manifest
    for doc in docs:
        # Raises ValidationError on a wrong or unknown field, SchemaNotFoundError on an unknown kind.
        kubernetes_validate.validate(doc, version, strict=True)


def test_manifests_are_the_documented_ones():
    names = sorted(os.path.basename(p) for p in MANIFESTS)
    assert names == ["evaluator-job.yaml", "training-with-evaluator.yaml", "vigil-job-configmap.yaml"], names
    with open(os.path.join(REPO, "docs", "kubernetes.md")) as f:
        doc = f.read()
    for name in names:
        assert "deploy/kubernetes/" + name in doc, name


def test_jobs_satisfy_what_the_schemas_do_not_hold():
    """The API server's rules for Jobs that the JSON schemas lack (enumerations, cross-field checks)."""
    for name, doc in all_documents():
        if doc["kind"] != "Job":
            continue
        spec = doc["spec"]
        pod = spec["template"]["spec"]
        assert pod["restartPolicy"] in ("Never", "OnFailure"), name
        for rule in spec.get("podFailurePolicy", {}).get("rules", []):
            assert pod["restartPolicy"] == "Never", "podFailurePolicy needs restartPolicy Never: " + name
            assert rule["action"] in ("FailJob", "Ignore", "Count", "FailIndex"), name
            on_codes = rule.get("onExitCodes")
            if on_codes:
                assert on_codes["operator"] in ("In", "NotIn"), name
                assert on_codes.get("containerName") in [c["name"] for c in pod["containers"]], name
        assert isinstance(spec.get("ttlSecondsAfterFinished"), int), "finished Jobs are left behind: " + name
        volumes = {v["name"] for v in pod.get("volumes", [])}
        for c in pod["containers"] + pod.get("initContainers", []):
            for m in c.get("volumeMounts", []):
                assert m["name"] in volumes, (name, c["name"], m)
            assert len({m["mountPath"] for m in c.get("volumeMounts", [])}) == len(c.get("volumeMounts", [])), c["name"]
        for v in pod.get("volumes", []):
            assert "hostPath" not in v, (name, v["name"])
            if "configMap" in v:
                config_map(v["configMap"]["name"])


def test_every_evaluator_runs_the_image_the_script_builds():
    """`vigil-evaluator:VERSION` (the contract), VERSION from version.h; when scripts/build-image.sh is
    there, it must name that image and take its version from version.h too."""
    expected = "vigil-evaluator:" + project_version()
    for name, _, c in containers(EVALUATOR):
        assert c["image"] == expected, (name, c["image"])
        assert c.get("imagePullPolicy") == "IfNotPresent", "a loaded image without a registry is never pulled: " + name
    for name, pod in pod_specs():
        for c in pod["containers"] + pod.get("initContainers", []):
            assert c["name"] in (EVALUATOR, TRAINING), (name, c["name"])
            if c["name"] != EVALUATOR:
                assert not c["image"].split("/")[-1].startswith("vigil-evaluator"), (name, c["name"])
    script = os.path.join(REPO, "scripts", "build-image.sh")
    if os.path.exists(script):
        with open(script) as f:
            text = f.read()
        assert re.search(r"\bvigil-evaluator\b", text), "scripts/build-image.sh does not name the image vigil-evaluator"
        assert "abi/include/vigil/version.h" in text, "scripts/build-image.sh does not take VERSION from version.h"


def test_evaluators_run_as_the_contract_user_without_privileges():
    for name, pod, c in containers(EVALUATOR):
        sc = c["securityContext"]
        assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 10001 and sc["runAsGroup"] == 10001, name
        assert sc["readOnlyRootFilesystem"] is True, name
        assert sc["allowPrivilegeEscalation"] is False, name
        assert sc["capabilities"]["drop"] == ["ALL"] and not sc["capabilities"].get("add"), name
        assert not sc.get("privileged"), name
        assert sc["seccompProfile"]["type"] == "RuntimeDefault", name
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC"), name
        # With a read-only root, every folder the evaluator writes is a volume of its own.
        args = vigil_arguments(c)
        writable = [m["mountPath"] for m in c["volumeMounts"] if not m.get("readOnly")]
        assert "/tmp" in writable, name
        for flag in ("--status-file", "--output-dir"):
            value = option_value(args, flag)
            assert any(value == w or value.startswith(w + "/") for w in writable), (name, flag, value)
        cache = {e["name"]: e.get("value") for e in c.get("env", [])}.get("VIGIL_CACHE_DIR")
        if option_value(args, "--trial").startswith("s3://"):
            assert cache in writable, "S3 reads are cached on disk: VIGIL_CACHE_DIR must be a volume ({})".format(name)


def test_evaluators_have_requests_and_limits():
    for name, _, c in containers(EVALUATOR):
        res = c["resources"]
        for key in ("cpu", "memory"):
            assert key in res["requests"] and key in res["limits"], (name, key)
        mib = {"Mi": 1, "Gi": 1024}
        memory = {k: int(res[k]["memory"][:-2]) * mib[res[k]["memory"][-2:]] for k in ("requests", "limits")}
        assert memory["requests"] <= memory["limits"], name
        # docs/kubernetes.md, "Resources": the step cache's budget (256 MiB) and the index tables of a
        # 100,000-step trial (218 MiB) must fit under the limit.
        assert memory["limits"] >= 256 + 218, name


def test_evaluators_use_the_contract_mount_points():
    for name, pod, c in containers(EVALUATOR):
        args = vigil_arguments(c)
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert args[0] == "evaluate", name
        assert option_value(args, "--job") == JOB_DIR + "/job.json", name
        job_volume = volumes[mounts[JOB_DIR]["name"]]
        assert mounts[JOB_DIR].get("readOnly") is True, name
        assert "job.json" in config_map(job_volume["configMap"]["name"])["data"], name
        assert option_value(args, "--status-file") == OUTPUT_DIR + "/rule-statuses.json", name
        assert option_value(args, "--output-dir") == OUTPUT_DIR, name
        assert OUTPUT_DIR in mounts and not mounts[OUTPUT_DIR].get("readOnly"), name
        assert "--no-follow" not in args, "both patterns follow the training live: " + name
        trial = option_value(args, "--trial")
        assert trial.startswith("s3://") or trial == TRIAL_DIR, (name, trial)
        if trial == TRIAL_DIR:
            # The sidecar: the training writes the same volume the evaluator reads.
            trial_volume = mounts[TRIAL_DIR]["name"]
            assert "emptyDir" in volumes[trial_volume], name
            training = [t for t in pod["containers"] if t["name"] == TRAINING]
            assert len(training) == 1, name
            out = option_value(vigil_arguments(training[0]), "--out")
            writer_mounts = {m["mountPath"]: m["name"] for m in training[0]["volumeMounts"]}
            assert out in writer_mounts and writer_mounts[out] == trial_volume, (name, out)
            # An ordinary container: a native sidecar is stopped (SIGTERM) when training ends.
            assert c in pod["containers"], name


def help_flags(vigil_exe, command):
    proc = subprocess.run([vigil_exe, command, "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", proc.stdout + proc.stderr))


def test_every_vigil_flag_is_in_the_commands_help(vigil_exe):
    used = {}
    for kind in (EVALUATOR, TRAINING):
        for name, _, c in containers(kind):
            args = vigil_arguments(c)
            own = args[:args.index("--")] if "--" in args else args  # after "--": the training's command
            used.setdefault(own[0], []).append((name, [a for a in own if a.startswith("--")]))
    assert set(used) == {"evaluate", "run"}, used
    for command, uses in used.items():
        known = help_flags(vigil_exe, command)
        assert len(known) > 3, (command, known)  # the help was read
        for name, flags in uses:
            for flag in flags:
                assert flag.split("=")[0] in known, "{}: `vigil {} {}` is not in `vigil {} --help`".format(
                    name, command, flag, command)


def local_command(vigil_exe, pod, container, tmp_path):
    """The container's vigil command line with each volume's mount point moved to a folder under
    tmp_path (a ConfigMap's keys written there as the kubelet would), and its environment."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    moved = {}
    for m in container["volumeMounts"]:
        folder = tmp_path / m["name"]
        folder.mkdir(exist_ok=True)
        source = volumes[m["name"]]
        if "configMap" in source:
            for key, value in config_map(source["configMap"]["name"])["data"].items():
                (folder / key).write_text(value)
        moved[m["mountPath"]] = str(folder)

    def move(arg):
        for mount, folder in moved.items():
            if arg == mount or arg.startswith(mount + "/"):
                return folder + arg[len(mount):]
        assert not arg.startswith("/opt/vigil/"), "{} is under no volume of {}".format(arg, container["name"])
        return arg
    # Never the machine's AWS credentials or a real endpoint: the S3 trial is checked, not read.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
               AWS_CONFIG_FILE=str(tmp_path / "no-config"), AWS_ENDPOINT_URL_S3="http://127.0.0.1:9")
    for e in container.get("env", []):
        env[e["name"]] = move(e["value"])
    return [vigil_exe] + [move(a) for a in vigil_arguments(container)], env


def test_each_evaluators_own_command_passes_check(vigil_exe, tmp_path):
    for i, (name, pod, c) in enumerate(containers(EVALUATOR)):
        here = tmp_path / str(i)
        here.mkdir()
        command, env = local_command(vigil_exe, pod, c, here)
        proc = subprocess.run(command + ["--check"], capture_output=True, text=True, timeout=120, env=env)
        assert proc.returncode == 0, "{}: {}\n{}".format(name, shlex.join(command), proc.stdout + proc.stderr)


def test_the_sidecar_evaluator_ends_at_the_end_of_training_marker(vigil_exe, tmp_path):
    """The sidecar's evaluator follows the empty trial folder and ends by itself, exit status 0, when
    the training's capture publishes its last files and the end-of-training marker; each rule of the
    ConfigMap's job has then judged the whole trial (none left InProgress or Stopped)."""
    sidecars = [(name, pod, c) for name, pod, c in containers(EVALUATOR)
                if option_value(c["args"], "--trial") == TRIAL_DIR]
    assert len(sidecars) == 1, sidecars
    name, pod, c = sidecars[0]
    command, env = local_command(vigil_exe, pod, c, tmp_path)
    trial = option_value(command, "--trial")
    assert os.listdir(trial) == []
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        publish_trial(trial_dir("vanishing_gradient"), trial)
        out, _ = proc.communicate(timeout=300)  # a guard against a hang: no marker, no end
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    with open(option_value(command, "--status-file")) as f:
        statuses = {s["RuleConfigurationName"]: s for s in json.load(f)["DebugRuleEvaluationStatuses"]}
    job = json.loads(config_map("vigil-job")["data"]["job.json"])
    assert set(statuses) == {r["RuleConfigurationName"] for r in job["DebugRuleConfigurations"]}, statuses
    for s in statuses.values():
        assert s["RuleEvaluationStatus"] in ("IssuesFound", "NoIssuesFound"), (s, out[-2000:])
    # The fixture's gradients vanish (its reference rule fires at threshold 1e-7, the ConfigMap's).
    assert statuses["VanishingGradient"]["RuleEvaluationStatus"] == "IssuesFound", statuses
