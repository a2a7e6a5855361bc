"""The real smdebug 1.0.34's hook as the reference of the differential hook tests, run on the same torch
as Vigil's side of the comparison (this test process's interpreter).

Values are compared bit for bit, so both hooks must see the same training arithmetic. The reference
environment (`smdebug_python`) has Debian's torch 1.13; when the tests themselves run on another torch
(2.13), its matrix products round differently (another BLAS), and every saved activation and
gradient would differ in its last bits whatever the hooks do. Then smdebug's package, the
dependencies it imports that this interpreter lacks, and its numpy (1.x) and pandas are linked into a folder put
on PYTHONPATH, and smdebug's hook runs on this interpreter's torch. smdebug 1.0.34 imports and trains there
(it does not check the torch version on this path). Reading trials stays on `smdebug_python`.
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

# Asked of the reference interpreter: where each top-level package smdebug imports lives, outside the
# standard library.
_LOCATE = r"""
import json, os, sys
import smdebug.pytorch, smdebug.trials, smdebug.profiler
import smdebug.core.tfevent.event_file_reader
found = {}
for name in sorted({n.partition(".")[0] for n in list(sys.modules)}):
    m = sys.modules.get(name)
    paths = list(getattr(m, "__path__", None) or []) if getattr(m, "__file__", None) is None else [m.__file__]
    paths = [p for p in paths if p and ("/site-packages/" in p or "/dist-packages/" in p)]
    if paths:
        file = getattr(m, "__file__", None)  # six has a __path__ but is one file
        found[name] = {"paths": paths, "namespace": file is None,
                       "package": file is not None and os.path.basename(file).startswith("__init__.")}
print(json.dumps({"torch": __import__("torch").__version__, "python": list(sys.version_info[:2]),
                  "modules": found}))
"""

_FIND = r"""
import importlib.util, json, sys
print(json.dumps([n for n in sys.argv[1:] if importlib.util.find_spec(n) is not None]))
"""

_CHECK = "import smdebug, smdebug.pytorch, torch; print(torch.__version__, smdebug.__version__)"

_cache = {}

# smdebug's generated *_pb2 modules predate protobuf 4, whose compiled descriptors refuse them
# ("Descriptors cannot be created directly"); this interpreter's protobuf may be newer (TensorBoard's).
# protobuf's pure-Python implementation still takes them.
_OLD_PROTOS = {"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
# Taken from the reference environment even where this interpreter has its own: smdebug 1.0.34 calls
# ndarray.tostring(), which numpy 2 removed (torch 2.13 runs on numpy 1 as well as 2); pandas goes with
# the numpy it was built for.
_FROM_REFERENCE = {"numpy", "pandas"}  # pandas: built for its own numpy


def _clean_env():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def _query(python, code, *args):
    r = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, timeout=180, env=_clean_env())
    if r.returncode != 0:
        pytest.fail("{} failed:\n{}".format(python, r.stderr[-3000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


def _overlay(modules):
    """A folder linking each package of `modules` ({name: {"paths", "namespace", "package"}}); a namespace
    package split over several folders (google) becomes a folder of links to all their entries."""
    root = tempfile.mkdtemp(prefix="vigil-smdebug-on-this-torch-")
    for name, m in modules.items():
        if m["namespace"]:
            folder = os.path.join(root, name)
            os.makedirs(folder, exist_ok=True)
            for path in m["paths"]:
                for entry in sorted(os.listdir(path)):
                    link = os.path.join(folder, entry)
                    if not os.path.lexists(link):
                        os.symlink(os.path.join(path, entry), link)
        else:
            path = m["paths"][0]
            target = os.path.dirname(path) if m["package"] else path
            os.symlink(target, os.path.join(root, os.path.basename(target)))
    return root


def reference_runner(smdebug_python):
    """(interpreter, env) that run a training script on the real smdebug's hook with the torch this
    process runs: `smdebug_python` itself when its torch is this one, else this interpreter with
    smdebug's package linked in (see the module's docstring). `env` is os.environ without this
    process's PYTHONPATH (Vigil's package must not shadow smdebug's)."""
    import torch

    key = (smdebug_python, sys.executable)
    if key not in _cache:
        ref = _query(smdebug_python, _LOCATE)
        if ref["torch"] == torch.__version__:
            _cache[key] = (smdebug_python, None)
        else:
            if tuple(ref["python"]) != sys.version_info[:2]:
                pytest.fail("smdebug's environment runs Python {}, this one {}: its compiled dependencies "
                            "cannot be shared".format(ref["python"], sys.version_info[:2]))
            have = set(_query(sys.executable, _FIND, *sorted(ref["modules"])))
            missing = {n: m for n, m in ref["modules"].items() if n not in have or n in _FROM_REFERENCE}
            overlay = _overlay(missing)
            atexit.register(shutil.rmtree, overlay, True)  # links only: their targets stay
            # the reference must really train on this torch, else the comparison proves nothing
            env = dict(_clean_env(), PYTHONPATH=overlay, **_OLD_PROTOS)
            r = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True, timeout=180, env=env)
            if r.returncode != 0 or r.stdout.split()[-2:] != [torch.__version__, "1.0.34"]:
                pytest.fail("smdebug does not import on this interpreter's torch:\n" + r.stdout + r.stderr[-3000:])
            _cache[key] = (sys.executable, overlay)
    python, path = _cache[key]
    env = _clean_env()
    if path is not None:
        env.update(PYTHONPATH=path, **_OLD_PROTOS)
    return python, env
