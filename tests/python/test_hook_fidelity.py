"""The hook keeps smdebug's hook contract (issue 35): valid smdebug usage never disables Vigil's hook.

Each scenario is one training script written against smdebug's names. It runs twice: under the real
smdebug 1.0.34 (the reference, on the same torch as Vigil's run: smdebug_reference.py) and under this
test process's Python with ``vigil.compat.install()``; then the real smdebug reads both trials and
must get the same answer (names, steps per mode, values, collections), and Vigil's run must not log
"vigil hook disabled".
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import vigil
from conftest import PYTHON_DIR
from real_readers import real_readers_agree  # noqa: F401 (a fixture)
from smdebug_reference import reference_runner

# Every trial a test captures is read by the real smdebug 1.0.34 too, with Vigil's answers.
pytestmark = pytest.mark.usefixtures("real_readers_agree")

VIGIL_PATH = PYTHON_DIR  # the installed package alone, without this environment's numpy and torch

PRELUDE = textwrap.dedent("""
    import os, sys, time
    import torch
    import smdebug.pytorch as smd
    out = sys.argv[1]
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(4, 8)
            self.relu = torch.nn.ReLU()
            self.fc2 = torch.nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(self.relu(self.fc1(x)))

    model, crit = Net(), torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))

    def train(steps):
        for _ in range(steps):
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()

    def evaluate(steps):
        with torch.no_grad():
            for _ in range(steps):
                crit(model(x), y)
""")

# What the real smdebug reads from a trial: every tensor's value at each step of each mode (sha256
# for arrays), the wall time of each saved event, and the collections file.
READER = textwrap.dedent("""
    import glob, hashlib, json, os, sys
    from smdebug.trials import create_trial
    from smdebug.core.modes import ModeKeys
    from smdebug.core.tfevent.event_file_reader import EventFileReader

    t = create_trial(sys.argv[1])
    values = {}
    for name in t.tensor_names():
        tensor = t.tensor(name)
        for mode in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, ModeKeys.GLOBAL):
            for step in tensor.steps(mode=mode):
                v = tensor.value(step, mode=mode)
                shown = v.tolist() if v.size <= 4 else hashlib.sha256(v.tobytes()).hexdigest()
                values.setdefault(name, []).append([mode.name, step, shown])
    wall_times = {}
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "events", "*", "*.tfevents"))):
        for event in EventFileReader(path).read_events():
            for v in event.summary.value:
                wall_times["{}@{}".format(v.tag, event.step)] = event.wall_time
    collections = {n: dict(include_regex=c.include_regex, tensor_names=sorted(c.tensor_names),
                           save_histogram=c.save_histogram,
                           reduction_config=c.reduction_config.to_json_dict() if c.reduction_config else None)
                   for n, c in t.collections().items()}
    print(json.dumps(dict(names=sorted(t.tensor_names()), steps=t.steps(), values=values,
                          wall_times=wall_times, collections=collections,
                          ended=os.path.exists(os.path.join(sys.argv[1], "training_job_end.ts")))))
""")

# Runs a script written for smdebug on Vigil: smdebug's names resolve to Vigil (vigil.compat).
ON_VIGIL = "import sys, runpy, vigil.compat; vigil.compat.install(); " \
           "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"


def _run(cmd, env=None, timeout=180):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, "{} failed:\n{}\n{}".format(cmd, r.stdout[-3000:], r.stderr[-3000:])
    return r


def _vigil_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = VIGIL_PATH
    return env


def run_on_vigil(script_path, out):
    r = _run([sys.executable, "-c", ON_VIGIL, script_path, out], env=_vigil_env())
    log = r.stdout + r.stderr
    assert "vigil hook disabled" not in log, log[-3000:]
    return log


def run_on_smdebug(smdebug_python, script_path, out):
    python, env = reference_runner(smdebug_python)
    return _run([python, script_path, out], env=env)


def read_with_smdebug(smdebug_python, trial, tmp_path):
    reader = tmp_path / "read_trial.py"
    reader.write_text(READER)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    r = _run([smdebug_python, str(reader), str(trial)], env=env)
    return json.loads(r.stdout.strip().splitlines()[-1])


def both(smdebug_python, tmp_path, body):
    """(what smdebug reads from smdebug's own run, from Vigil's run) of PRELUDE + body."""
    script = tmp_path / "train.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    run_on_smdebug(smdebug_python, str(script), str(tmp_path / "ref"))
    run_on_vigil(str(script), str(tmp_path / "vigil"))
    ref = read_with_smdebug(smdebug_python, tmp_path / "ref", tmp_path)
    got = read_with_smdebug(smdebug_python, tmp_path / "vigil", tmp_path)
    return ref, got


def same_answer(ref, got, wall_times=False):
    keys = ["names", "steps", "values", "collections", "ended"] + (["wall_times"] if wall_times else [])
    for k in keys:
        assert got[k] == ref[k], "{}: smdebug's hook gives {}\nVigil's gives {}".format(k, ref[k], got[k])


# ---- item 1: a collection configured only by modules ---------------------------------------------------

def test_a_collection_of_modules_only(smdebug_python, tmp_path):
    ref, got = both(smdebug_python, tmp_path, """
        hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=2),
                        include_collections=["relu_activations", "losses"])
        hook.get_collection("relu_activations").add_module_tensors(model.relu, inputs=True)
        hook.get_collection("fc2_reduced").add_module_tensors(model.fc2)
        hook.get_collection("fc2_reduced").reduction_config = smd.ReductionConfig(reductions=["max"])
        hook.register_module(model)
        hook.register_loss(crit)
        hook.set_mode(smd.modes.TRAIN)
        train(4)
        hook.close()
    """)
    same_answer(ref, got)
    assert got["values"]["relu_input_0"][0][:2] == ["TRAIN", 0]
    assert got["collections"]["relu_activations"]["include_regex"] == ["relu_input_", "relu_output_"]


# ---- item 2: save_scalar before a mode's first step ------------------------------------------------------

def test_scalars_saved_before_a_modes_first_step(smdebug_python, tmp_path):
    ref, got = both(smdebug_python, tmp_path, """
        hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=2))
        hook.register_module(model)
        hook.register_loss(crit)
        hook.save_scalar("count", 16)          # before any step: global 0 = TRAIN 0
        hook.set_mode(smd.modes.TRAIN)
        train(2)                               # TRAIN 1 saves nothing
        hook.save_scalar("summary", 0.25)      # after training, before EVAL's first step: EVAL 0
        hook.set_mode(smd.modes.EVAL)
        evaluate(3)
        hook.save_scalar("at_close", 1.5)      # written by close, at the last step
        hook.close()
    """)
    same_answer(ref, got)
    assert got["values"]["scalar/count"][0] == ["TRAIN", 0, [16]]
    assert got["values"]["scalar/summary"][0] == ["EVAL", 0, [0.25]]


# ---- item 6: smdebug's own ModeKeys, side by side with Vigil's hook -------------------------------------

MODES_SCRIPT = PRELUDE.replace("import smdebug.pytorch as smd", "import smdebug.pytorch as smd_real") + textwrap.dedent("""
    from smdebug.core.modes import ModeKeys        # the real smdebug's enum, whichever hook runs
    if sys.argv[2] == "vigil":
        import vigil.pytorch as smd
    else:
        smd = smd_real
    config = smd.SaveConfig(mode_save_configs={ModeKeys.TRAIN: smd.SaveConfigMode(save_interval=2),
                                               ModeKeys.EVAL: smd.SaveConfigMode(save_steps=[1])})
    hook = smd.Hook(out_dir=out, save_config=config)
    hook.register_module(model)
    hook.register_loss(crit)
    hook.set_mode(ModeKeys.TRAIN)
    train(3)
    hook.set_mode(ModeKeys.EVAL)
    evaluate(3)
    hook.close()
""")


def test_smdebugs_own_mode_keys(smdebug_python, tmp_path):
    script = tmp_path / "modes.py"
    script.write_text(MODES_SCRIPT)
    python, env = reference_runner(smdebug_python)
    _run([python, str(script), str(tmp_path / "ref"), "smdebug"], env=env)
    # Vigil's package (built for the same Python) next to the real smdebug
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), VIGIL_PATH) if p)
    r = _run([python, str(script), str(tmp_path / "vigil"), "vigil"], env=env)
    assert "vigil hook disabled" not in r.stdout + r.stderr, r.stderr[-3000:]
    ref = read_with_smdebug(smdebug_python, tmp_path / "ref", tmp_path)
    got = read_with_smdebug(smdebug_python, tmp_path / "vigil", tmp_path)
    same_answer(ref, got)
    assert [v[:2] for v in got["values"]["CrossEntropyLoss_output_0"]] == [
        ["TRAIN", 0], ["TRAIN", 2], ["EVAL", 0], ["EVAL", 1], ["GLOBAL", 0], ["GLOBAL", 2], ["GLOBAL", 3],
        ["GLOBAL", 4]]  # EVAL: step 0 by the default interval (500), step 1 by save_steps


# ---- item 7: the out_dir removed before an unclosed hook's atexit close --------------------------------

def _files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_a_removed_out_dir_gets_its_end_marker_at_exit(smdebug_python, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(PRELUDE + textwrap.dedent("""
        import glob, shutil
        hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=2))
        hook.register_module(model)
        hook.register_loss(crit)
        hook.set_mode(smd.modes.TRAIN)
        train(2)                # the last step saves nothing: no step is open
        # Step 0 and the collections file published first (a hook with a writer thread publishes
        # them after train() returns), so that the removal below takes everything.
        deadline = time.time() + 60
        while not (glob.glob(os.path.join(out, "index", "*", "000000000000_*.json")) and
                   glob.glob(os.path.join(out, "collections", "*", "*.json"))) and time.time() < deadline:
            time.sleep(0.01)
        shutil.rmtree(out)      # and no close(): the hook closes at exit
    """))
    run_on_smdebug(smdebug_python, str(script), str(tmp_path / "ref"))
    log = run_on_vigil(str(script), str(tmp_path / "vigil"))
    assert "cannot write" not in log, log
    assert "training_job_end.ts" in _files(tmp_path / "ref")
    assert _files(tmp_path / "ref") == ["training_job_end.ts"]
    assert _files(tmp_path / "vigil") == ["training_job_end.ts"]


# ---- item 4: names scripts and smdebug's examples call ---------------------------------------------------

def test_cleanup_record_trace_events_and_collection_manager_names(smdebug_python, tmp_path):
    ref, got = both(smdebug_python, tmp_path, """
        import json
        from smdebug.core.collection_manager import CollectionManager
        hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1))
        hook.register_module(model)
        hook.register_loss(crit)
        hook.set_mode(smd.modes.TRAIN)
        train(2)
        hook.record_trace_events(timestamp=time.time(), training_phase="data", op_name="load", duration=0.01)
        hook._cleanup()                          # how smdebug's examples end training
        made = CollectionManager()
        made.add("mine")
        made.add("mine")                         # an existing one is kept
        made.get("mine").include("^fc")
        made.export(out + "_export", "worker_0_collections.json")
        again = CollectionManager.load(os.path.join(out + "_export", "collections", "000000000",
                                                    "worker_0_collections.json"))
        assert again == made and not (again != made), (again, made)
        again.add("other")
        assert again != made
    """)
    same_answer(ref, got)
    assert got["ended"]
    with open(tmp_path / "vigil_export" / "collections" / "000000000" / "worker_0_collections.json") as f:
        exported = json.load(f)
    with open(tmp_path / "ref_export" / "collections" / "000000000" / "worker_0_collections.json") as f:
        assert exported == json.load(f)


# ---- item 5: smdebug's module paths under vigil.compat --------------------------------------------------

HOOK_MODULES = ["smdebug.pytorch.hook", "smdebug.pytorch.collection", "smdebug.pytorch.singleton_utils",
                "smdebug.core.collection_manager", "smdebug.core.json_config"]


def test_smdebugs_hook_module_paths(smdebug_python):
    """Each public name these smdebug modules define (listed from the real smdebug, not by hand) imports
    under vigil.compat, but the JSON-config parsing helpers, which only smdebug's own hook calls."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    r = _run([smdebug_python, "-c", textwrap.dedent("""
        import importlib, json
        names = {}
        for m in MODULES:
            mod = importlib.import_module(m)
            names[m] = sorted(n for n, v in vars(mod).items()
                              if not n.startswith("_") and getattr(v, "__module__", None) == m)
        print(json.dumps(names))
    """).replace("MODULES", repr(HOOK_MODULES))], env=env)
    real = json.loads(r.stdout.strip().splitlines()[-1])
    from vigil import compat
    compat.install()
    try:
        import importlib
        assert importlib.import_module("smdebug.pytorch").__path__ is not None  # a package
        for module, names in real.items():
            mod = importlib.import_module(module)
            for name in names:
                if module == "smdebug.core.json_config" and name != "create_hook_from_json_config":
                    continue
                assert hasattr(mod, name), "{}.{}".format(module, name)
        from smdebug.pytorch.hook import Hook
        import vigil.pytorch
        assert Hook is vigil.pytorch.Hook
    finally:
        compat.uninstall()


# ---- item 3: save_scalar(timestamp=) is the event's wall time -------------------------------------------

def test_save_scalar_timestamp_is_the_wall_time(smdebug_python, tmp_path):
    ref, got = both(smdebug_python, tmp_path, """
        hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1))
        hook.register_module(model)
        hook.register_loss(crit)
        hook.set_mode(smd.modes.TRAIN)
        train(1)
        hook.save_scalar("given", 2.0, timestamp=1234567890.5)
        before = time.time()
        hook.save_scalar("now", 3.0)
        time.sleep(0.3)                          # written later: its wall time is the call's
        train(1)
        hook.close()
        with open(out + "_times", "w") as f:
            f.write(str(before))
    """)
    same_answer(ref, got)
    assert got["wall_times"]["scalar/given@0"] == ref["wall_times"]["scalar/given@0"] == 1234567890.5
    before = float((tmp_path / "vigil_times").read_text())
    assert before <= got["wall_times"]["scalar/now@0"] < before + 0.25
