"""`pip install <checkout>` into a new virtual environment gives a working Vigil with nothing else set:
the package, the `vigil` command on the environment's PATH with its built-in plugins, Python rules run
by the installed evaluator in that environment, and the CMake package a rule author builds against
(`python -m vigil --cmakedir`, examples/cpp_rule with find_package(Vigil 1)). Also what the wheel
holds and says of itself.

The install builds with pip's build isolation (scikit-build-core and pybind11 from PyPI), as a user's
does, in a build folder of its own beside build/ so that ccache (scripts/ccache-env.sh) serves the
compiles build/ already made.
"""
import email.parser
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile

import pytest

from conftest import REPO, SHARED
from rule_files import write_rule_file

EXPLODING = os.path.join(SHARED, "fixtures", "pathologies", "exploding_nan_input_s2")
HEALTHY = os.path.join(SHARED, "fixtures", "pathologies", "healthy_mlp_s1")


def _clean_env(venv, **extra):
    """Only the new environment and the system on PATH: nothing of the test's own environment."""
    env = {"PATH": os.pathsep.join([os.path.join(venv, "bin"), "/usr/bin", "/bin"]),
           "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def _run(cmd, env, cwd="/", timeout=900):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    assert r.returncode == 0, "{} failed ({}):\n{}\n{}".format(cmd, r.returncode, r.stdout[-4000:], r.stderr[-4000:])
    return r


def _build_env(venv):
    env = _clean_env(venv, CC="cc", CXX="c++")
    if shutil.which("ccache") and os.environ.get("VIGIL_CCACHE", "1") != "0":
        env.update(CMAKE_C_COMPILER_LAUNCHER="ccache", CMAKE_CXX_COMPILER_LAUNCHER="ccache", CCACHE_BASEDIR=REPO,
                   CCACHE_NOHASHDIR="true", CCACHE_DIR=os.environ.get("CCACHE_DIR", os.path.expanduser("~/.cache/ccache")))
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A new venv of the test interpreter's base Python, with `pip install <checkout>` done."""
    path = str(tmp_path_factory.mktemp("pip-install") / "venv")
    base = getattr(sys, "_base_executable", None) or sys.executable
    _run([base, "-m", "venv", path], env=_clean_env(path))
    _run([os.path.join(path, "bin", "python"), "-m", "pip", "install", "--no-input", "-q",
          "--config-settings=build-dir=" + os.path.join(REPO, "build-pip-install-test"), REPO], env=_build_env(path))
    return path


def test_the_package_imports_from_the_new_environment(venv):
    r = _run([os.path.join(venv, "bin", "python"), "-c",
              "import vigil, vigil.compat, vigil.rules; print(vigil.__file__); print(vigil.__version__)"],
             env=_clean_env(venv))
    where, version = r.stdout.split()
    assert where.startswith(os.path.join(venv, "lib")), where
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    abi = open(os.path.join(REPO, "abi", "include", "vigil", "version.h")).read()
    parts = [re.search(r"#define VIGIL_ABI_%s (\d+)" % p, abi).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    assert version == ".".join(parts)


def test_vigil_on_path_evaluates_with_its_builtin_plugins(venv, tmp_path):
    env = _clean_env(venv)
    assert shutil.which("vigil", path=env["PATH"]) == os.path.join(venv, "bin", "vigil")
    statuses = {}
    for name, trial in (("exploding", EXPLODING), ("healthy", HEALTHY)):
        status = tmp_path / (name + ".json")
        _run(["vigil", "evaluate", "--trial", trial, "--rule", "ExplodingTensor", "--no-follow",
              "--status-file", str(status)], env=env)
        statuses[name] = json.loads(status.read_text())["DebugRuleEvaluationStatuses"][0]["RuleEvaluationStatus"]
    assert statuses == {"exploding": "IssuesFound", "healthy": "NoIssuesFound"}


def test_vigil_run_forwards_to_the_environments_python(venv):
    """`vigil run` is Python (vigil/run.py): the installed command runs it with the Python beside it."""
    r = _run(["vigil", "run", "--help"], env=_clean_env(venv))
    assert r.stdout.startswith("usage: vigil run") and "--rule" in r.stdout, r.stdout


def test_python_rules_run_in_the_new_environment(venv, tmp_path):
    """The installed evaluator's Python rule plugin starts the environment it was installed into:
    the rule sees that environment's prefix and the package installed there."""
    rule = tmp_path / "where_rule.py"
    rule.write_text(
        "import sys, vigil\n"
        "from smdebug.rules.rule import Rule\n"
        "class WhereAmI(Rule):\n"
        "    def __init__(self, base_trial):\n"
        "        super().__init__(base_trial, action_str='')\n"
        "        open(%r, 'w').write(sys.prefix + '\\n' + vigil.__file__)\n"
        "    def invoke_at_step(self, step):\n"
        "        return False\n" % str(tmp_path / "where.txt"))
    status = tmp_path / "status.json"
    _run(["vigil", "evaluate", "--trial", HEALTHY, "--rule", "WhereAmI", "--param", "source_s3_uri=" + str(rule),
          "--no-follow", "--status-file", str(status)], env=_clean_env(venv))
    prefix, package = (tmp_path / "where.txt").read_text().splitlines()
    assert os.path.realpath(prefix) == os.path.realpath(venv)
    assert package.startswith(os.path.join(venv, "lib"))
    s = json.loads(status.read_text())["DebugRuleEvaluationStatuses"][0]
    assert s["RuleEvaluationStatus"] == "NoIssuesFound", s


def test_a_reference_python_rule_gives_the_fixtures_answer(venv, tmp_path):
    from conftest import expected, trial_dir
    path = write_rule_file("vanishing_gradient", tmp_path)
    status = tmp_path / "status.json"
    _run(["vigil", "evaluate", "--trial", trial_dir("vanishing_gradient"), "--rule", "VanishingGradientLike",
          "--param", "source_s3_uri=" + path, "--param", "threshold=1e-7", "--status-file", str(status)],
         env=_clean_env(venv))
    s = json.loads(status.read_text())["DebugRuleEvaluationStatuses"][0]
    res = expected("vanishing_gradient")["rules"]["results"]["VanishingGradientLike"]
    assert [t["step"] for t in s["Triggers"]] == res["triggered_steps"]


def test_a_cpp_rule_builds_against_the_installed_cmake_package(venv, tmp_path):
    env = _clean_env(venv)
    cmakedir = _run(["python", "-m", "vigil", "--cmakedir"], env=env).stdout.strip()
    assert os.path.isfile(os.path.join(cmakedir, "VigilConfig.cmake")) and cmakedir.startswith(venv)
    build = str(tmp_path / "cpp_rule")
    _run(["cmake", "-S", os.path.join(REPO, "examples", "cpp_rule"), "-B", build, "-G", "Ninja",
          "-DCMAKE_PREFIX_PATH=" + cmakedir], env=env)
    _run(["cmake", "--build", build], env=env)
    plugin = os.path.join(build, "libexample_cpp_rule.so")
    assert os.path.isfile(plugin)
    listed = json.loads(_run(["vigil", "rules", "--plugins", build, "--json"], env=env).stdout)
    names = {r["name"] for r in listed["rules"]}
    assert "GradientMeanAbsBelow" in names and "ExplodingTensor" in names, sorted(names)
    # Run it, on a trial, from the command line and from Python.
    status = tmp_path / "status.json"
    _run(["vigil", "evaluate", "--plugins", build, "--trial", HEALTHY, "--rule", "GradientMeanAbsBelow",
          "--no-follow", "--status-file", str(status)], env=env)
    assert json.loads(status.read_text())["DebugRuleEvaluationStatuses"][0]["RuleEvaluationStatus"] in (
        "NoIssuesFound", "IssuesFound")


def test_other_python_m_vigil_answers(venv):
    env = _clean_env(venv)
    py = os.path.join(venv, "bin", "python")
    plugins = _run([py, "-m", "vigil", "--plugindir"], env=env).stdout.strip()
    assert plugins == os.path.join(venv, "lib", "vigil", "plugins")
    include = _run([py, "-m", "vigil", "--includedir"], env=env).stdout.strip()
    assert os.path.isfile(os.path.join(include, "vigil", "plugin.h"))
    # A command is the vigil program's.
    r = _run([py, "-m", "vigil", "rules", "--json"], env=env)
    assert any(rule["name"] == "VanishingGradient" for rule in json.loads(r.stdout)["rules"])
    r = _run([py, "-m", "vigil", "--help"], env=env)
    assert "--cmakedir" in r.stdout
    # vigil.rules finds the built-in plugins with nothing set.
    r = _run([py, "-c", "import vigil.rules; print(len(vigil.rules.list_plugin_rules()))"], env=env)
    assert int(r.stdout) >= 30


def test_installed_plugins_keep_the_trust_checks(venv, tmp_path):
    """A built-in plugin another user could write is refused, installed by pip or not."""
    plugins = os.path.join(venv, "lib", "vigil", "plugins")
    target = os.path.join(plugins, "libvigil_rules_data.so")
    mode = os.stat(target).st_mode
    assert not mode & (stat.S_IWGRP | stat.S_IWOTH)
    os.chmod(target, mode | stat.S_IWOTH)
    try:
        listed = json.loads(_run(["vigil", "rules", "--json"], env=_clean_env(venv)).stdout)
    finally:
        os.chmod(target, mode)
    refused = json.dumps(listed.get("refused_plugins", []))
    assert "libvigil_rules_data.so" in refused, refused


def test_the_wheel_holds_the_prefix_and_its_metadata():
    """The wheel scripts/python-envs.sh built (`pip wheel`), which the test environments installed."""
    wheels = glob.glob(os.path.join(REPO, "build-wheels", "vigil-*.whl"))
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(wheels[0]) as z:
        names = z.namelist()
        version = re.match(r"vigil-([^-]+)-", os.path.basename(wheels[0])).group(1)
        data = "vigil-%s.data/data/" % version
        assert data + "bin/vigil" in names
        exe_mode = z.getinfo(data + "bin/vigil").external_attr >> 16
        assert exe_mode & stat.S_IXUSR
        plugins = [n for n in names if n.startswith(data + "lib/vigil/plugins/") and n.endswith(".so")]
        assert len(plugins) >= 6, plugins  # one per rule family, the profiler rules and Python rules
        for part in ("include/vigil/plugin.h", "include/vigil/sdk.hpp", "lib/cmake/Vigil/VigilConfig.cmake",
                     "lib/cmake/Vigil/VigilTargets.cmake", "share/pkgconfig/vigil-abi.pc"):
            assert data + part in names, part
        assert "vigil/__init__.py" in names and "vigil/__main__.py" in names
        # vigil run's start-up hook, vigil fleet and the trainer integrations
        assert {"vigil/_autostart/sitecustomize.py", "vigil/run.py", "vigil/fleet.py", "vigil/integrations/transformers.py",
                "vigil/integrations/lightning.py"} <= set(names)
        assert [n for n in names if re.fullmatch(r"vigil/_vigil\..*\.so", n)]
        assert not [n for n in names if "test" in n.lower() and n.endswith(".so")], "test binaries in the wheel"
        meta = email.parser.Parser().parsestr(z.read("vigil-%s.dist-info/METADATA" % version).decode())
    assert meta["Name"] == "vigil" and meta["Version"] == version
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["Requires-Python"].startswith(">=3.")
    requires = meta.get_all("Requires-Dist")
    assert any(r.startswith("numpy>=") for r in requires), requires
    assert any(r.startswith("torch>=") and 'extra == "pytorch"' in r for r in requires), requires
    assert any(r.startswith("xgboost>=") and 'extra == "xgboost"' in r for r in requires), requires
    assert any(r.startswith("transformers>=") and 'extra == "transformers"' in r for r in requires), requires
    assert any(r.startswith("lightning>=") and 'extra == "lightning"' in r for r in requires), requires
    assert any(r.startswith("dask[distributed]>=") and 'extra == "fleet"' in r for r in requires), requires
    assert "Vigil" in meta.get_payload()  # the README as the long description
