"""``vigil run``'s start-up hook: this folder is put first on PYTHONPATH for the training command, so
that every Python process it starts (torchrun's workers too, through the environment) runs this at
start-up, before the script. It does nothing until torch is imported; then torch's global module and
optimizer hooks attach the capture (vigil/capture/attach.py) with the DebugHookConfig file named by
VIGIL_RUN_CONFIG. The user's own sitecustomize, if any, still runs (after this one).

Nothing here may harm the run: any fault is logged once on stderr and the process goes on without
capture. VIGIL_DISABLE=1 turns it off.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG_VARIABLE = "VIGIL_RUN_CONFIG"


def _say(what, e):
    sys.stderr.write("vigil run: {}, training goes on without capture: {}: {}\n".format(what, type(e).__name__, e))


def _attach():
    try:
        from vigil.capture.attach import attach_globally
        attach_globally(os.environ[CONFIG_VARIABLE])
    except Exception as e:  # noqa: BLE001 - never into the training script
        _say("cannot attach to torch", e)


class _TorchImportWatcher(importlib.abc.MetaPathFinder):
    """Finds torch as the other finders do, and attaches once torch's module has run."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        try:
            spec = importlib.util.find_spec("torch")
            loader = getattr(spec, "loader", None)
            if loader is None or not hasattr(loader, "exec_module"):
                return spec
            run_module = loader.exec_module

            def exec_module(module):
                run_module(module)
                _attach()
            loader.exec_module = exec_module
            return spec
        except Exception as e:  # noqa: BLE001
            _say("cannot watch torch's import", e)
            return None


def _chain_user_sitecustomize():
    """The sitecustomize this folder hides (the next one on sys.path), run as Python would have."""
    paths = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", paths)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _disabled():
    return os.environ.get("VIGIL_DISABLE", "").strip().lower() in ("1", "true")


try:
    if CONFIG_VARIABLE in os.environ and not _disabled():
        if "torch" in sys.modules:
            _attach()
        else:
            sys.meta_path.insert(0, _TorchImportWatcher())
except Exception as _e:  # noqa: BLE001
    _say("start-up hook failed", _e)

_chain_user_sitecustomize()
