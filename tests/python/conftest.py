"""pytest configuration for Vigil's Python tests.

Run with Debian's interpreter against a build tree:

    VIGIL_BUILD_DIR=build PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python

VIGIL_BUILD_DIR (default <repo>/build) gives bin/vigil, bin/write_example_trial, the built-in plugins
(lib/vigil/plugins) and the vigil package (python/, added to sys.path when PYTHONPATH lacks it).
VIGIL_SHARED_DIR (default <repo>/../shared) holds the fixtures.

Two more interpreters, made by scripts/python-envs.sh (scripts/test.sh runs it):
  * TORCH2_PYTHON (<repo>/.venv-torch2, or $VIGIL_TORCH2_PYTHON): torch 2.13, no pandas or xgboost;
    tests run scripts there with Vigil's package on PYTHONPATH (`torch2_python` fixture);
  * SMDEBUG_PYTHON (<repo>/.venv-smdebug, or $VIGIL_SMDEBUG_PYTHON): the real smdebug 1.0.34 over
    Debian's torch 1.13, the reference reader and hook of the interop tests (`smdebug_python`).
"""
import glob
import json
import os
import sys
import tempfile

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("VIGIL_BUILD_DIR") or os.path.join(REPO, "build"))
SHARED = os.path.abspath(os.environ.get("VIGIL_SHARED_DIR") or os.path.join(REPO, "..", "shared"))
FIXTURES = os.path.join(SHARED, "fixtures", "smdebug-real")
PYTHON_DIR = os.path.join(BUILD, "python")

TORCH2_PYTHON = os.environ.get("VIGIL_TORCH2_PYTHON") or os.path.join(REPO, ".venv-torch2", "bin", "python")
SMDEBUG_PYTHON = os.environ.get("VIGIL_SMDEBUG_PYTHON") or os.path.join(REPO, ".venv-smdebug", "bin", "python")

if os.path.isdir(os.path.join(PYTHON_DIR, "vigil")) and PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)
sys.path.insert(0, os.path.dirname(__file__))

# S3 reads are cached on disk (docs/object-storage.md): the tests' cache is their own, made afresh
# for each run, never the user's ~/.cache.
os.environ["VIGIL_CACHE_DIR"] = tempfile.mkdtemp(prefix="vigil-test-cache-")


# Runs a script written for smdebug with `import smdebug...` resolving to Vigil's package (vigil.compat),
# its own folder on sys.path as `python script.py` would have it.
_COMPAT_RUN = ("import os, runpy, sys; sys.argv = sys.argv[1:]; "
               "sys.path[:0] = [{python!r}, os.path.dirname(os.path.abspath(sys.argv[0]))]; "
               "import vigil.compat; vigil.compat.install(); runpy.run_path(sys.argv[0], run_name='__main__')")


def compat_command(script, *args):
    """The command line that runs `script` (a training script for smdebug's hook) on Vigil's hook."""
    return [sys.executable, "-c", _COMPAT_RUN.format(python=PYTHON_DIR), script, *args]


def reference_blas_env(env):
    """`env` with Debian's reference BLAS and LAPACK (packages libblas3, liblapack3) first on
    LD_LIBRARY_PATH. The smdebug-real fixtures were computed with them; OpenBLAS, the default
    libblas.so.3 wherever it is installed, rounds matrix products differently, so a run that must
    give the fixtures' values bit for bit loads the reference libraries."""
    dirs = []
    for lib, folder, package in (("libblas.so.3", "blas", "libblas3"), ("liblapack.so.3", "lapack", "liblapack3")):
        found = sorted(glob.glob(os.path.join("/usr/lib", "*", folder, lib)))
        if not found:
            pytest.fail("Debian's reference {} is missing (package {}): the fixtures' values were computed "
                        "with it".format(lib, package))
        dirs.append(os.path.dirname(found[0]))
    return dict(env, LD_LIBRARY_PATH=os.pathsep.join(dirs + [p for p in [env.get("LD_LIBRARY_PATH")] if p]))


def fixture_names():
    names = []
    for f in sorted(glob.glob(os.path.join(FIXTURES, "*.expected.json"))):
        name = os.path.basename(f)[: -len(".expected.json")]
        if os.path.isdir(os.path.join(FIXTURES, name)):
            names.append(name)
    return names


_expected_cache = {}


def expected(name):
    if name not in _expected_cache:
        with open(os.path.join(FIXTURES, name + ".expected.json")) as f:
            _expected_cache[name] = json.load(f)
    return _expected_cache[name]


def trial_dir(name):
    return os.path.join(FIXTURES, name)


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


def _interpreter(path, what):
    if not os.access(path, os.X_OK):
        pytest.fail("{} missing: {} (scripts/python-envs.sh makes it)".format(what, path))
    return path


@pytest.fixture(scope="session")
def torch2_python():
    """The torch 2.13 interpreter (scripts/python-envs.sh); a missing one fails the test."""
    return _interpreter(TORCH2_PYTHON, "the torch 2 environment")


@pytest.fixture(scope="session")
def smdebug_python():
    """The real smdebug 1.0.34's interpreter (scripts/python-envs.sh); a missing one fails the test."""
    return _interpreter(SMDEBUG_PYTHON, "the smdebug reference environment")


@pytest.fixture(scope="session")
def vigil_exe():
    exe = os.path.join(BUILD, "bin", "vigil")
    if not os.path.exists(exe):
        pytest.fail("vigil executable not built: " + exe)
    return exe


@pytest.fixture(scope="session")
def plugin_dir():
    d = os.path.join(BUILD, "lib", "vigil", "plugins")
    if not os.path.isdir(d):
        pytest.fail("built-in plugin folder missing: " + d)
    return d


@pytest.fixture(scope="session")
def example_trial(tmp_path_factory):
    """The example trial written by build/bin/write_example_trial."""
    import subprocess

    exe = os.path.join(BUILD, "bin", "write_example_trial")
    if not os.path.exists(exe):
        pytest.fail("write_example_trial not built: " + exe)
    out = str(tmp_path_factory.mktemp("example") / "trial")
    subprocess.run([exe, out], check=True, capture_output=True)
    return out
