"""pytest configuration for Vigil's pytest suites: the Python package's tests (tests/python) and the
end-to-end scenarios of the `vigil` command (tests/cli). Both import what they share from here
(`from conftest import ...`) and the helper modules of tests/python (rule_files, real_readers, ...).

They run against Vigil INSTALLED into the interpreter that runs pytest (scripts/python-envs.sh does it
with pip), never against a build tree:

    .venv/bin/python -m pytest tests/python tests/cli    # torch 2.13: every suite
    .venv-torch1/bin/python -m pytest tests/python/...   # Debian's torch 1.13: the hook suites (scripts/test.sh)

The installed `vigil` command and built-in plugins are this installation's (vigil.installation).
VIGIL_BUILD_DIR (default <repo>/build) gives what only a build tree has: bin/write_example_trial, the
example plugins, `cmake --install` (tests/cli/test_install.py). VIGIL_SHARED_DIR (default
<repo>/../shared) holds the fixtures.

More interpreters (scripts/python-envs.sh):
  * TORCH2_PYTHON (<repo>/.venv/bin/python, or $VIGIL_TORCH2_PYTHON): torch 2.13 (`torch2_python`);
  * TORCH1_PYTHON (<repo>/.venv-torch1/bin/python, or $VIGIL_TORCH1_PYTHON): Debian's torch 1.13 with
    Vigil installed (`torch1_python`): where Vigil's capture of a script is compared value for value
    with smdebug's (which runs on torch 1.13 only), Vigil's run uses it too;
  * SMDEBUG_PYTHON (<repo>/.venv-smdebug, or $VIGIL_SMDEBUG_PYTHON): the real smdebug 1.0.34 over
    Debian's torch 1.13, the reference reader and hook of the interop tests (`smdebug_python`).
PYTHON_DIR is a folder whose only entry is the installed `vigil` package: on PYTHONPATH it gives another
interpreter of the same Python (smdebug's) Vigil's package without this environment's other packages.
"""
import glob
import json
import os
import sys
import tempfile

import pytest

import vigil
from vigil import installation

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.abspath(os.environ.get("VIGIL_BUILD_DIR") or os.path.join(REPO, "build"))
SHARED = os.path.abspath(os.environ.get("VIGIL_SHARED_DIR") or os.path.join(REPO, "..", "shared"))
FIXTURES = os.path.join(SHARED, "fixtures", "smdebug-real")

if installation.cmake_dir() is None or os.path.abspath(vigil.__file__).startswith(BUILD + os.sep):
    pytest.exit("the tests run against an installed vigil (scripts/python-envs.sh installs it into .venv); "
                "this interpreter imports it from {}".format(os.path.dirname(vigil.__file__)), returncode=4)
VIGIL_EXE = installation.executable()
PLUGIN_DIR = installation.plugin_dir()

PYTHON_DIR = tempfile.mkdtemp(prefix="vigil-package-")
os.symlink(os.path.dirname(os.path.abspath(vigil.__file__)), os.path.join(PYTHON_DIR, "vigil"))

TORCH2_PYTHON = os.environ.get("VIGIL_TORCH2_PYTHON") or os.path.join(REPO, ".venv", "bin", "python")
# smdebug's torch (Debian's 1.13) with Vigil installed: a script whose capture is compared value for
# value with smdebug's capture of the same script runs on the same torch as smdebug's run.
TORCH1_PYTHON = os.environ.get("VIGIL_TORCH1_PYTHON") or os.path.join(REPO, ".venv-torch1", "bin", "python")
SMDEBUG_PYTHON = os.environ.get("VIGIL_SMDEBUG_PYTHON") or os.path.join(REPO, ".venv-smdebug", "bin", "python")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))

# S3 reads are cached on disk (docs/object-storage.md): the tests' cache is their own, made afresh
# for each run, never the user's ~/.cache.
os.environ["VIGIL_CACHE_DIR"] = tempfile.mkdtemp(prefix="vigil-test-cache-")


# Runs a script written for smdebug with `import smdebug...` resolving to Vigil's package (vigil.compat),
# its own folder on sys.path as `python script.py` would have it.
_COMPAT_RUN = ("import os, runpy, sys; sys.argv = sys.argv[1:]; "
               "sys.path[:0] = [{python!r}, os.path.dirname(os.path.abspath(sys.argv[0]))]; "
               "import vigil.compat; vigil.compat.install(); runpy.run_path(sys.argv[0], run_name='__main__')")


def compat_command(script, *args, python=None):
    """The command line that runs `script` (a training script for smdebug's hook) on Vigil's hook, with
    `python` (default: this interpreter)."""
    return [python or sys.executable, "-c", _COMPAT_RUN.format(python=PYTHON_DIR), script, *args]


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


def torch1_interpreter():
    """TORCH1_PYTHON; a missing one fails the test."""
    return _interpreter(TORCH1_PYTHON, "the torch 1.13 environment")


def _interpreter(path, what):
    if not os.access(path, os.X_OK):
        pytest.fail("{} missing: {} (scripts/python-envs.sh makes it)".format(what, path))
    return path


@pytest.fixture(scope="session")
def torch2_python():
    """The torch 2.13 interpreter with Vigil installed (scripts/python-envs.sh); a missing one fails the test."""
    return _interpreter(TORCH2_PYTHON, "the torch 2 environment")


@pytest.fixture(scope="session")
def torch1_python():
    """Debian's torch 1.13 (smdebug's) with Vigil installed (scripts/python-envs.sh)."""
    return torch1_interpreter()


@pytest.fixture(scope="session")
def smdebug_python():
    """The real smdebug 1.0.34's interpreter (scripts/python-envs.sh); a missing one fails the test."""
    return _interpreter(SMDEBUG_PYTHON, "the smdebug reference environment")


@pytest.fixture(scope="session")
def vigil_exe():
    """The installed vigil command."""
    if VIGIL_EXE is None:
        pytest.fail("the vigil installation has no bin/vigil (prefix {})".format(installation.prefix()))
    return VIGIL_EXE


@pytest.fixture(scope="session")
def plugin_dir():
    """The installed built-in plugins' folder."""
    if PLUGIN_DIR is None:
        pytest.fail("the vigil installation has no lib/vigil/plugins (prefix {})".format(installation.prefix()))
    return PLUGIN_DIR


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
