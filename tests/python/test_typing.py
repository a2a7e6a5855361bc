"""The package's types: mypy (configured in pyproject.toml's [tool.mypy]) over the installed vigil
package, at mypy's default strictness everywhere and every function annotated in the public API's
modules that the configuration names, together with typed_usage.py, code written against
that API as a user writes it."""
import os
import subprocess
import sys

from conftest import REPO

import vigil


def test_mypy_passes_over_the_installed_package_and_code_using_it(tmp_path):
    package = os.path.dirname(os.path.abspath(vigil.__file__))
    assert os.path.exists(os.path.join(package, "py.typed")), "the installed package lacks its py.typed marker"
    usage = os.path.join(os.path.dirname(os.path.abspath(__file__)), "typed_usage.py")
    # From a scratch folder, so that mypy finds vigil where pip installed it (PEP 561), never the checkout.
    for target in (["-p", "vigil"], [usage]):  # mypy takes a package or files, not both
        proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", os.path.join(REPO, "pyproject.toml"),
                               "--cache-dir", str(tmp_path / "cache"), *target],
                              cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_rejects_code_that_misuses_the_api(tmp_path):
    misuse = tmp_path / "misuse.py"
    misuse.write_text("import vigil\nfrom vigil import installation\n"
                      "command: int = installation.executable()\n"
                      "vigil.create_trial('/tmp/run').tensor(3)\n")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", os.path.join(REPO, "pyproject.toml"),
                           "--cache-dir", str(tmp_path / "cache"), str(misuse)],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "misuse.py:3: error" in proc.stdout and "misuse.py:4: error" in proc.stdout, proc.stdout
