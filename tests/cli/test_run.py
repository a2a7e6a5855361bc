"""`vigil run`: unmodified PyTorch scripts (no import of vigil or smdebug) captured through the
start-up hook and torch's global hooks, with the rules' statuses printed live; the trials are read by
the real smdebug 1.0.34 alike (real_readers_agree); torchrun's two ranks as two workers; the script's
exit status; VIGIL_DISABLE; the user's own sitecustomize; and a capture that cannot write leaves the
training alone."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import vigil
from vigil.modes import ModeKeys
from real_readers import real_readers_agree  # noqa: F401 (a fixture)

# A regression a linear model learns (healthy), or the same model whose output is scaled by 1e-9:
# its gradients vanish and its loss stays where it started.
TRAIN = textwrap.dedent("""
    import sys
    import torch

    torch.manual_seed(0)
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(4, 16)
            self.fc2 = torch.nn.Linear(16, 1)

        def forward(self, x):
            return self.fc2(torch.tanh(self.fc1(x))) * scale

    model = Net()
    crit = torch.nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(64, 4)
    y = x.sum(dim=1, keepdim=True)
    for step in range(30):
        model.train()
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        if step % 10 == 9 and "eval" in sys.argv[3:]:
            model.eval()
            with torch.no_grad():
                crit(model(x), y)
    print("trained, last loss", loss.item())
    sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
""")

RULES = ["--rule", "VanishingGradient", "--rule", "LossNotDecreasing"]


def vigil_run(vigil_exe, args, tmp_path, env=None, timeout=300):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    return subprocess.run([vigil_exe, "run", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=str(tmp_path), env=env)


def statuses(path):
    return {s["RuleConfigurationName"]: s["RuleEvaluationStatus"]
            for s in json.loads(path.read_text())["DebugRuleEvaluationStatuses"]}


@pytest.mark.usefixtures("real_readers_agree")
@pytest.mark.parametrize("scale,expected", [
    ("1.0", {"VanishingGradient": "NoIssuesFound", "LossNotDecreasing": "NoIssuesFound"}),
    ("1e-9", {"VanishingGradient": "IssuesFound", "LossNotDecreasing": "IssuesFound"}),
])
def test_unmodified_script_with_live_rules(vigil_exe, tmp_path, scale, expected):
    out, status = tmp_path / "trial", tmp_path / "status.json"
    proc = vigil_run(vigil_exe, ["--out", str(out), "--save-interval", "1", *RULES, "--status-file", str(status),
                                 "--", sys.executable, "train.py", scale], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "trained, last loss" in proc.stdout
    assert statuses(status) == expected, proc.stderr
    # the evaluator's status lines, printed as it ran
    for rule, verdict in expected.items():
        assert any(line.startswith("[vigil evaluate] ") and rule in line and verdict in line
                   for line in proc.stderr.splitlines()), proc.stderr
    trial = vigil.create_trial(str(out))
    names = set(trial.tensor_names())
    assert {"Net_fc1.weight", "gradient/Net_fc1.weight", "MSELoss_output_0"} <= names, names
    assert set(trial.tensor_names(collection="losses")) == {"MSELoss_output_0"}
    assert trial.steps() == list(range(30))


@pytest.mark.usefixtures("real_readers_agree")
def test_steps_are_optimizer_steps_and_modes_follow_train_and_eval(vigil_exe, tmp_path):
    out = tmp_path / "trial"
    proc = vigil_run(vigil_exe, ["--out", str(out), "--save-interval", "1", "--", sys.executable, "train.py", "1.0",
                                 "0", "eval"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    trial = vigil.create_trial(str(out))
    # 30 optimizer steps are 30 training steps; each forward pass in eval mode is an EVAL step
    assert trial.steps(mode=ModeKeys.TRAIN) == list(range(30))
    assert trial.steps(mode=ModeKeys.EVAL) == [0, 1, 2]
    assert len(trial.steps()) == 33
    assert trial.tensor("MSELoss_output_0").value(0, mode=ModeKeys.EVAL).size == 1


GRADIENT_ACCUMULATION = textwrap.dedent("""
    import torch

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(5):
        for micro_batch in range(4):  # four forward/backward passes, one optimizer step
            model(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
""")


def test_gradient_accumulation_is_one_step_per_optimizer_step(vigil_exe, tmp_path):
    (tmp_path / "accumulate.py").write_text(GRADIENT_ACCUMULATION)
    out = tmp_path / "trial"
    proc = vigil_run(vigil_exe, ["--out", str(out), "--save-interval", "1", "--", sys.executable, "accumulate.py"],
                     tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert vigil.create_trial(str(out)).steps() == list(range(5))


def test_exit_status_is_the_scripts(vigil_exe, tmp_path):
    proc = vigil_run(vigil_exe, ["--out", str(tmp_path / "trial"), "--", sys.executable, "train.py", "1.0", "3"],
                     tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert os.path.exists(tmp_path / "trial" / "training_job_end.ts")


def test_disabled(vigil_exe, tmp_path):
    env = dict(os.environ, VIGIL_DISABLE="1")
    proc = vigil_run(vigil_exe, ["--out", str(tmp_path / "trial"), "--", sys.executable, "train.py"], tmp_path,
                     env=env)
    assert proc.returncode == 0, proc.stderr
    assert not os.path.exists(tmp_path / "trial")


def test_out_dir_that_cannot_be_written_leaves_training_alone(vigil_exe, tmp_path):
    (tmp_path / "a-file").write_text("")
    proc = vigil_run(vigil_exe, ["--out", str(tmp_path / "a-file" / "trial"), "--save-interval", "1", "--",
                                 sys.executable, "train.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "trained, last loss" in proc.stdout
    faults = [line for line in proc.stderr.splitlines() if "training goes on without" in line]
    assert len(faults) == 1, proc.stderr


USES_SITECUSTOMIZE = textwrap.dedent("""
    import builtins
    import torch

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(3):
        model(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()
    print("user's sitecustomize ran:", getattr(builtins, "USER_SITECUSTOMIZE", False))
""")


def test_users_sitecustomize_still_runs(vigil_exe, tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import builtins\nbuiltins.USER_SITECUSTOMIZE = True\n")
    (tmp_path / "uses.py").write_text(USES_SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=str(own))
    proc = vigil_run(vigil_exe, ["--out", str(tmp_path / "trial"), "--save-interval", "1", "--", sys.executable,
                                 "uses.py"], tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "user's sitecustomize ran: True" in proc.stdout  # in the training process itself
    assert vigil.create_trial(str(tmp_path / "trial")).steps() == [0, 1, 2]  # and capture was on


def test_bad_configuration_is_refused_before_the_script_runs(vigil_exe, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"LocalPath": str(tmp_path / "trial"), "HookParameters": {"save_interval": "0"}}))
    proc = vigil_run(vigil_exe, ["--config", str(bad), "--", sys.executable, "train.py"], tmp_path)
    assert proc.returncode == 2
    assert "save_interval" in proc.stderr and "trained" not in proc.stdout
    assert subprocess.run([vigil_exe, "run", "--", sys.executable, "-c", "pass"], capture_output=True).returncode == 2


def test_help(vigil_exe):
    assert "run [OPTIONS] -- COMMAND" in subprocess.run([vigil_exe, "--help"], capture_output=True,
                                                        text=True).stdout
    proc = subprocess.run([vigil_exe, "run", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "usage: vigil run" in proc.stdout and "--rule" in proc.stdout


DDP = textwrap.dedent("""
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                                                          torch.nn.Linear(8, 1)))
    crit = torch.nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(32, 4) + dist.get_rank()
    y = x.sum(dim=1, keepdim=True)
    for step in range(12):
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
    dist.destroy_process_group()
""")


@pytest.mark.usefixtures("real_readers_agree")
def test_torchrun_two_ranks_are_two_workers(vigil_exe, tmp_path):
    (tmp_path / "ddp.py").write_text(DDP)
    out, status = tmp_path / "trial", tmp_path / "status.json"
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    proc = subprocess.run([vigil_exe, "run", "--out", str(out), "--save-interval", "2", "--rule", "VanishingGradient",
                           "--status-file", str(status), "--", torchrun, "--standalone", "--nproc-per-node", "2",
                           "ddp.py"], capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    trial = vigil.create_trial(str(out))
    assert sorted(trial.workers()) == ["worker_0", "worker_1"]
    assert trial.steps() == list(range(0, 12, 2))
    loss = trial.tensor("MSELoss_output_0")
    assert loss.value(10, worker="worker_0") != loss.value(10, worker="worker_1")  # each rank's own data
    assert statuses(status) == {"VanishingGradient": "NoIssuesFound"}


def test_sigterm_reaches_the_command(vigil_exe, tmp_path):
    (tmp_path / "wait.py").write_text("import signal, sys, time\n"
                                      "signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))\n"
                                      "print('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([vigil_exe, "run", "--out", str(tmp_path / "trial"), "--", sys.executable, "wait.py"],
                            stdout=subprocess.PIPE, text=True, cwd=str(tmp_path))
    assert proc.stdout.readline() == "ready\n"
    proc.terminate()
    assert proc.wait(timeout=30) == 7
