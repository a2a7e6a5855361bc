"""Helpers for running the fixtures' reference rules (rules.python_source in each expected.json)."""
import os
import types

from conftest import expected


def rule_source(fixture):
    return expected(fixture)["rules"]["python_source"]


def write_rule_file(fixture, directory):
    path = os.path.join(str(directory), "%s_rules.py" % fixture)
    with open(path, "w") as f:
        f.write(rule_source(fixture))
    return path


def load_rule_module(fixture):
    """The reference rule file run unmodified as a module, after vigil.compat.install()."""
    import vigil.compat

    vigil.compat.install()
    module = types.ModuleType("reference_rules_" + fixture)
    module.__file__ = "<%s rules>" % fixture
    exec(compile(rule_source(fixture), module.__file__, "exec"), module.__dict__)
    return module
