"""The misuses smdebug's hook rejects, walked on the real smdebug 1.0.34 (its own venv) and on Vigil
(under vigil.compat): each raises the same exception class into the caller, or none on both. Valid
smdebug usage never disables Vigil's hook ("vigil hook disabled" is for Vigil's own faults only).

The hook of each misuse has a configuration of its own (include_collections), as smdebug's error
agent re-raises only then; with smdebug's default configuration it swallows its own errors and
disables itself, which Vigil's hook never does for usage smdebug accepts.
"""
import json
import os
import subprocess
import sys
import tempfile

import pytest

from conftest import PYTHON_DIR
from real_readers import find_trials, real_readers_agree  # noqa: F401 (a fixture)

# The hooks of the walk write their trials under the test's tmp_path (TMPDIR), where the real
# smdebug 1.0.34 reads each of them too, with Vigil's answers.
pytestmark = pytest.mark.usefixtures("real_readers_agree")

MISUSES = {
    "register_module with no module": "hook.register_module(object())",
    "register_loss with no module": "hook.register_loss(object())",
    "set_mode with a string": "hook.set_mode('train')",
    "set_mode with an int": "hook.set_mode(1)",
    "save_scalar of a non-scalar": "hook.save_scalar('s', torch.ones(3))",
    "an unknown reduction": "smd.ReductionConfig(reductions=['median2'])",
    "an unknown norm": "smd.ReductionConfig(norms=['l3'])",
    "an unknown abs reduction": "smd.ReductionConfig(abs_reductions=['mode'])",
    "a save config for an unknown mode": "smd.SaveConfig(mode_save_configs={'TRAINING': smd.SaveConfigMode()})",
    "a collection never created, without create": "hook.get_collection('never', create=False)",
    "a collection with no configuration": (
        "hook.get_collection('empty'); m = torch.nn.Linear(2, 2); hook.register_module(m); m(torch.ones(1, 2))"),
    # accepted by smdebug: must be by Vigil too, without disabling its hook
    "include_workers other than one or all": "smd.Hook(out_dir=fresh(), include_workers='ONE')",
    "a collection made and configured later": (
        "c = hook.get_collection('late'); c.include('fc'); m = torch.nn.Linear(2, 2); hook.register_module(m); "
        "m(torch.ones(1, 2))"),
    "save_tensor of a list": "hook.save_tensor('t', [1.0, 2.0])",
}

WALK = r"""
import json, logging, os, sys, tempfile
import torch
import smdebug.pytorch as smd
logging.basicConfig(level=logging.WARNING)
torch.manual_seed(0)
misuses = json.loads(sys.argv[1])
def fresh():
    return os.path.join(tempfile.mkdtemp(), "t")
out = {}
for name, code in misuses.items():
    hook = smd.Hook(out_dir=fresh(), include_collections=["weights", "losses"])
    try:
        exec(code, {"hook": hook, "smd": smd, "torch": torch, "fresh": fresh})
        out[name] = "accepted"
    except Exception as e:
        out[name] = type(e).__name__
print("WALK " + json.dumps(out))
"""


def walk(python, extra_env, prefix=()):
    env = dict(os.environ, SMPROFILER_CONFIG_PATH=os.path.join(tempfile.mkdtemp(), "absent.json"), **extra_env)
    done = subprocess.run([python, *prefix, "-c", WALK, json.dumps(MISUSES)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    line = [l for l in done.stdout.splitlines() if l.startswith("WALK ")]
    assert line, done.stdout + done.stderr
    return json.loads(line[-1][5:]), done.stderr


def test_each_misuse_raises_what_smdebug_raises(smdebug_python, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    (tmp_path / "smdebug").mkdir()
    (tmp_path / "vigil").mkdir()
    smdebug_answers, _ = walk(smdebug_python, dict({"PYTHONPATH": ""} if "PYTHONPATH" in os.environ else {},
                                                   TMPDIR=str(tmp_path / "smdebug")))
    # Vigil under smdebug's names: `import smdebug` resolves to vigil.compat.
    shim = os.path.join(tempfile.mkdtemp(), "sitecustomize.py")
    with open(shim, "w") as f:
        f.write("import vigil.compat\nvigil.compat.install()\n")
    del env
    vigil_answers, log = walk(sys.executable, {"PYTHONPATH": os.pathsep.join([os.path.dirname(shim), PYTHON_DIR]),
                                               "TMPDIR": str(tmp_path / "vigil")})
    assert set(smdebug_answers) == set(MISUSES)
    assert vigil_answers == smdebug_answers
    assert smdebug_answers["set_mode with a string"] == "SMDebugValueError"  # the walk reaches the checks
    assert smdebug_answers["include_workers other than one or all"] == "accepted"
    assert "vigil hook disabled" not in log, log
    assert find_trials(tmp_path / "vigil"), "the walk's trials are no longer under tmp_path: none is read by smdebug"
