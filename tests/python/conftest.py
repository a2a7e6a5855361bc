"""pytest configuration for Vigil's Python tests.

Run with Debian's interpreter against a build tree:

    VIGIL_BUILD_DIR=build PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python

VIGIL_BUILD_DIR (default <repo>/build) gives bin/vigil, bin/write_example_trial, the built-in plugins
(lib/vigil/plugins) and the vigil package (python/, added to sys.path when PYTHONPATH lacks it).
VIGIL_SHARED_DIR (default <repo>/../shared) holds the fixtures.
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

if os.path.isdir(os.path.join(PYTHON_DIR, "vigil")) and PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)
sys.path.insert(0, os.path.dirname(__file__))

# S3 reads are cached on disk (docs/object-storage.md): the tests' cache is their own, made afresh
# for each run, never the user's ~/.cache.
os.environ["VIGIL_CACHE_DIR"] = tempfile.mkdtemp(prefix="vigil-test-cache-")


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
