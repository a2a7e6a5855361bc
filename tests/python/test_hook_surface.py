"""smdebug 1.0.34's hook surface, generated from the real smdebug: every public name of its PyTorch
``Hook`` (with its base classes), ``CollectionManager``, ``Collection``, ``SaveConfig``,
``SaveConfigMode`` and ``ReductionConfig``, on the class and on an instance made with defaults, is
listed by the real smdebug (its own venv) and must exist on Vigil's counterpart, or be in the table
"smdebug's hook surface: what is left out" of docs/compatibility.md with a reason. A name listed
there that Vigil now has fails the test too, so the table cannot go stale.
"""
import json
import os
import re
import subprocess
import tempfile

import pytest

from conftest import REPO

import vigil.pytorch as vpt
from vigil.reduction_config import ReductionConfig
from vigil.save_config import SaveConfig, SaveConfigMode
from real_readers import real_readers_agree  # noqa: F401 (a fixture)

# Every trial a test captures is read by the real smdebug 1.0.34 too, with Vigil's answers.
pytestmark = pytest.mark.usefixtures("real_readers_agree")

# Prints {class: [public names]} for the classes and for instances made with defaults.
LISTER = r"""
import json, sys, tempfile
import smdebug.pytorch as smd
from smdebug.pytorch.collection import CollectionManager
from smdebug.core.save_config import SaveConfig, SaveConfigMode
from smdebug.core.reduction_config import ReductionConfig

def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}

hook = smd.Hook(out_dir=tempfile.mkdtemp() + "/trial")
objects = {
    "Hook": (smd.Hook, hook),
    "CollectionManager": (CollectionManager, CollectionManager()),
    "Collection": (smd.Collection, smd.Collection("c")),
    "SaveConfig": (SaveConfig, SaveConfig()),
    "SaveConfigMode": (SaveConfigMode, SaveConfigMode()),
    "ReductionConfig": (ReductionConfig, ReductionConfig()),
}
print("SURFACE " + json.dumps({k: sorted(public(c) | public(i)) for k, (c, i) in objects.items()}))
"""

DOC = os.path.join(REPO, "docs", "compatibility.md")
SECTION = "## smdebug's hook surface: what is left out"


@pytest.fixture(scope="module")
def smdebug_surface(smdebug_python):
    env = dict(os.environ, SMPROFILER_CONFIG_PATH=os.path.join(tempfile.mkdtemp(), "absent.json"))
    env.pop("PYTHONPATH", None)
    done = subprocess.run([smdebug_python, "-c", LISTER], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    line = [l for l in done.stdout.splitlines() if l.startswith("SURFACE ")]
    assert line, done.stdout
    return json.loads(line[-1][len("SURFACE "):])


def vigil_objects(tmp_path):
    hook = vpt.Hook(out_dir=str(tmp_path / "trial"))
    return hook, {
        "Hook": (vpt.Hook, hook),
        "CollectionManager": (vpt.CollectionManager, vpt.CollectionManager()),
        "Collection": (vpt.Collection, vpt.Collection("c")),
        "SaveConfig": (SaveConfig, SaveConfig()),
        "SaveConfigMode": (SaveConfigMode, SaveConfigMode()),
        "ReductionConfig": (ReductionConfig, ReductionConfig()),
    }


def documented_omissions():
    """{"Class.name": why} from the doc's table."""
    text = open(DOC).read()
    assert SECTION in text, "docs/compatibility.md lacks the section " + SECTION
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for m in re.finditer(r"^\| `(\w+)\.(\w+)` \| (.+?) \|$", body, re.M):
        rows["{}.{}".format(m.group(1), m.group(2))] = m.group(3).strip()
    return rows


def test_every_public_name_of_smdebugs_hook_classes_exists_or_is_documented(smdebug_surface, tmp_path):
    hook, objects = vigil_objects(tmp_path)
    try:
        assert set(smdebug_surface) == set(objects)
        missing = {"{}.{}".format(k, n) for k, names in smdebug_surface.items() for n in names
                   if not hasattr(objects[k][0], n) and not hasattr(objects[k][1], n)}
    finally:
        hook.close()
    documented = documented_omissions()
    assert sorted(missing - set(documented)) == [], "missing from Vigil and not documented"
    assert sorted(set(documented) - missing) == [], "documented as missing, but Vigil has them (or smdebug has not)"
    for name, why in documented.items():
        assert len(why) > 20, "{}: give the reason".format(name)
