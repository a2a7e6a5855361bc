"""smdebug 1.0.34's public API, checked mechanically against vigil.compat.

../shared/spec/smdebug-api-surface.txt lists every module, class (with its base classes and
constructor signature), method, property, function and constant of smdebug's read, rule, collection,
save/reduction-config, PyTorch-hook and profiler-reader API. After vigil.compat.install(), each must
import under the same module path with the same kind, base classes and signature (parameter names,
kinds and defaults; annotations are not compared) -- except vigil.compat.OMITTED and
vigil.compat.SIGNATURE_DIFFERENCES, whose entries must each still be missing or different, and be
listed in docs/compatibility.md.
"""
import ast
import fnmatch
import importlib
import inspect
import os
import re

import pytest

from conftest import REPO, SHARED

from vigil import compat

SURFACE = os.path.join(SHARED, "spec", "smdebug-api-surface.txt")
ANY_SIGNATURE = {"(/, *args, **kwargs)", "(*args, **kwds)", "(*args, **kwargs)"}


# ---- parsing the surface file ------------------------------------------------------------------------

def _split_top(text, sep=","):
    """Splits at `sep` outside brackets, quotes and <...> reprs."""
    parts, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _norm_default(text):
    text = text.strip()
    m = re.fullmatch(r"<class '([\w.]+)'>", text)
    if m:
        return "<class {}>".format(m.group(1).rsplit(".", 1)[-1])
    return text


def parse_params(sig):
    """'(a, b=1, *, c=None) -> x' -> [(name, kind, default)], kind in pos/var/kw/varkw; None for any."""
    sig = sig.strip()
    body = sig[: sig.rindex(")") + 1] if "->" in sig else sig
    if body in ANY_SIGNATURE:
        return None
    assert body.startswith("(") and body.endswith(")"), sig
    out, kw_only = [], False
    for tok in _split_top(body[1:-1]):
        if tok == "/":
            continue
        if tok == "*":
            kw_only = True
            continue
        if tok.startswith("**"):
            out.append((tok[2:].split(":")[0].strip(), "varkw", None))
            continue
        if tok.startswith("*"):
            out.append((tok[1:].split(":")[0].strip(), "var", None))
            kw_only = True
            continue
        name_part, _, default = tok.partition("=") if " = " not in tok else tok.partition(" = ")
        name = name_part.split(":")[0].strip()
        out.append((name, "kw" if kw_only else "pos", _norm_default(default) if default else None))
    if out and out[0][0] in ("self", "cls"):
        out = out[1:]
    return out


def vigil_params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    out = []
    for p in sig.parameters.values():
        kind = {p.VAR_POSITIONAL: "var", p.VAR_KEYWORD: "varkw", p.KEYWORD_ONLY: "kw"}.get(p.kind, "pos")
        default = None if p.default is p.empty else _norm_default(repr(p.default))
        out.append((p.name, kind, default))
    if out and out[0][0] in ("self", "cls"):
        out = out[1:]
    return out


def parse_surface():
    """[(path, kind, detail)]: kind is module/class/method/property/function/constant."""
    entries, module, cls = [], None, None
    with open(SURFACE) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("# "):
                continue
            if line.startswith("## "):
                module, cls = line[3:].strip(), None
                entries.append((module, "module", None))
                continue
            if line.startswith("    "):
                body = line.strip()
                m = re.fullmatch(r"(\w+): property", body)
                if m:
                    entries.append(("{}.{}.{}".format(module, cls, m.group(1)), "property", None))
                    continue
                m = re.fullmatch(r"(\w+)(\(.*)", body)
                assert m, line
                entries.append(("{}.{}.{}".format(module, cls, m.group(1)), "method", m.group(2)))
                continue
            m = re.fullmatch(r"class (\w+)\((.*?)\) (\(.*\))", line)
            if m:
                cls = m.group(1)
                entries.append(("{}.{}".format(module, cls), "class", (_split_top(m.group(2)), m.group(3))))
                continue
            m = re.fullmatch(r"def (\w+)(\(.*)", line)
            if m:
                entries.append(("{}.{}".format(module, m.group(1)), "function", m.group(2)))
                continue
            m = re.fullmatch(r"(\w+) = (.*)", line)
            assert m, "unparsed surface line: " + line
            entries.append(("{}.{}".format(module, m.group(1)), "constant", m.group(2)))
    return entries


ENTRIES = parse_surface()


def _matches(path, table):
    return [p for p in table if fnmatch.fnmatchcase(path, p) or any(
        fnmatch.fnmatchcase(path[: i], p) for i in range(len(path)) if path[i] == ".")]


def omitted(path):
    return _matches(path, compat.OMITTED)


def resolve(path):
    """The object a surface path names under vigil.compat, or raises LookupError."""
    module_names = sorted({e[0] for e in ENTRIES if e[1] == "module"}, key=len, reverse=True)
    for mod in module_names:
        if path == mod or path.startswith(mod + "."):
            try:
                obj = importlib.import_module(mod)
            except ImportError as e:
                raise LookupError("module {} does not import: {}".format(mod, e))
            for part in path[len(mod) + 1:].split(".") if path != mod else []:
                if not hasattr(obj, part):
                    raise LookupError("{} has no {}".format(getattr(obj, "__name__", obj), part))
                obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
            return obj
    raise LookupError("no module for " + path)


@pytest.fixture(autouse=True, scope="module")
def _installed():
    compat.install()
    yield
    compat.uninstall()


def test_the_surface_file_parses_into_every_kind():
    kinds = {k for _, k, _ in ENTRIES}
    assert kinds == {"module", "class", "method", "property", "function", "constant"}
    assert len(ENTRIES) > 400


@pytest.mark.parametrize("path,kind,detail", [e for e in ENTRIES if not omitted(e[0])], ids=lambda x: str(x)[:80])
def test_every_public_name_is_provided_with_smdebugs_shape(path, kind, detail):
    try:
        obj = resolve(path)
    except LookupError as e:
        pytest.fail(str(e))
    differs = _matches(path, compat.SIGNATURE_DIFFERENCES)
    if kind == "module":
        assert inspect.ismodule(obj)
    elif kind == "class":
        assert inspect.isclass(obj), path + " is not a class"
        bases, sig = detail
        mro_names = {c.__name__ for c in obj.__mro__}
        for base in bases:
            assert base.rsplit(".", 1)[-1] in mro_names, "{}: base class {} missing (mro {})".format(
                path, base, [c.__name__ for c in obj.__mro__])
        expected = parse_params(sig)
        if expected is not None and not differs:
            assert vigil_params(obj) == expected, path
    elif kind == "method":
        assert callable(getattr(obj, "__func__", obj)), path + " is not callable"
        func = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
        expected = parse_params(detail)
        if expected is not None and not differs:
            assert vigil_params(func) == expected, path
    elif kind == "property":
        assert isinstance(obj, property), path + " is not a property"
    elif kind == "function":
        assert callable(obj) and not inspect.isclass(obj), path
        assert vigil_params(obj) == parse_params(detail), path
    elif kind == "constant":
        assert obj == ast.literal_eval(detail), path


def test_each_omission_is_still_missing_and_documented():
    with open(os.path.join(REPO, "docs", "compatibility.md")) as f:
        docs = f.read()
    for pattern, reason in {**compat.OMITTED, **compat.SIGNATURE_DIFFERENCES}.items():
        assert reason, pattern
        assert "`{}`".format(pattern) in docs, pattern + " is not listed in docs/compatibility.md"
        hits = [e for e in ENTRIES if _matches(e[0], {pattern: reason})]
        assert hits, pattern + " matches nothing in the surface file: remove it"
    for path, kind, detail in ENTRIES:
        if omitted(path) and kind != "module":
            with pytest.raises(LookupError):
                resolve(path)  # provided now: remove its entry from compat.OMITTED
    for path, kind, detail in ENTRIES:
        if _matches(path, compat.SIGNATURE_DIFFERENCES) and kind == "class":
            assert vigil_params(resolve(path)) != parse_params(detail[1]), path + " no longer differs"


def test_the_checker_catches_a_missing_name_and_a_changed_default():
    # The checks above can fail: a wrong default and a missing parameter are told apart.
    assert parse_params("(a, b=None, *, c=<ModeKeys.GLOBAL: 4>) -> list") == [
        ("a", "pos", None), ("b", "pos", "None"), ("c", "kw", "<ModeKeys.GLOBAL: 4>")]

    def f(a, b=1, *, c=None):
        pass

    assert vigil_params(f) != parse_params("(a, b=None, *, c=None)")
    assert vigil_params(f) != parse_params("(a, b=1, c=None)")
    with pytest.raises(LookupError):
        resolve("smdebug.trials.NoSuchTrial")
