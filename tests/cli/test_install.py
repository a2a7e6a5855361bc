"""`cmake --install` puts the vigil package into the interpreter's site-packages layout under the
install prefix, and the installed `vigil evaluate` finds it for Python rule files."""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, expected, trial_dir
from rule_files import write_rule_file


def install(prefix, component):
    proc = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix), "--component", component],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    p = tmp_path_factory.mktemp("prefix")
    install(p, "vigil_python")
    return p


def site_dir(prefix):
    found = glob.glob(os.path.join(str(prefix), "**", "vigil", "__init__.py"), recursive=True)
    assert len(found) == 1, found
    return os.path.dirname(os.path.dirname(found[0]))


def clean_env(**extra):
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    env.update(extra)
    return env


def test_installed_package_imports(prefix):
    site = site_dir(prefix)
    assert site.startswith(str(prefix))
    import sysconfig

    names = sysconfig.get_scheme_names()
    scheme = "deb_system" if "deb_system" in names else "posix_prefix"
    expect = sysconfig.get_path("platlib", scheme, vars={"base": str(prefix), "platbase": str(prefix)})
    assert os.path.normpath(site) == os.path.normpath(expect)
    assert glob.glob(os.path.join(site, "vigil", "_vigil*.so"))
    code = ("import vigil, sys; t = vigil.create_trial(%r); print(vigil.__file__); print(t.steps()[-1]); "
            "import vigil.compat; vigil.compat.install(); from smdebug.rules.rule import Rule; print('ok')"
            % trial_dir("vanishing_gradient"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                          env=clean_env(PYTHONPATH=site))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split()
    assert lines[0].startswith(site) and lines[1] == "38" and lines[2] == "ok"


def test_installed_evaluator_runs_python_rules(prefix, tmp_path):
    install(prefix, "vigil_runtime")
    vigil_exe = os.path.join(str(prefix), "bin", "vigil")
    assert os.path.exists(os.path.join(str(prefix), "lib", "vigil", "plugins", "libvigil_python_rules.so"))
    path = write_rule_file("vanishing_gradient", tmp_path)
    status = tmp_path / "status.json"
    proc = subprocess.run([vigil_exe, "evaluate", "--trial", trial_dir("vanishing_gradient"), "--rule",
                           "VanishingGradientLike", "--param", "source_s3_uri=" + path, "--param", "threshold=1e-7",
                           "--status-file", str(status)], capture_output=True, text=True, cwd="/",
                          env=clean_env())
    assert proc.returncode == 0, proc.stderr
    s = json.loads(status.read_text())["DebugRuleEvaluationStatuses"][0]
    res = expected("vanishing_gradient")["rules"]["results"]["VanishingGradientLike"]
    assert [t["step"] for t in s["Triggers"]] == res["triggered_steps"], (s, proc.stderr)
