"""Vigil: an open reimplementation of Amazon SageMaker Debugger (smdebug) -- Python API.

    import vigil
    trial = vigil.create_trial("/path/to/trial")
    for name in trial.tensor_names(collection="gradients"):
        print(name, trial.tensor(name).reduction_value(0, "mean", abs=True))

Modules: ``vigil.trials`` (create_trial, Trial, LocalTrial, Tensor), ``vigil.modes`` (ModeKeys),
``vigil.exceptions`` (smdebug's exceptions), ``vigil.collection`` (Collection, CollectionManager),
``vigil.reduction_config`` / ``vigil.save_config`` (ReductionConfig, SaveConfig, SaveConfigMode),
``vigil.locations`` (smdebug's name helpers), ``vigil.rules`` (Rule, RequiredTensors, invoke_rule,
load), ``vigil.writer`` (TrialWriter), ``vigil.compat`` (smdebug import names). See docs/python.md.
"""
from . import _vigil
from . import modes, exceptions, collection, reduction_config, save_config, locations, trials, rules, writer, compat
from .modes import ModeKeys
from .trials import create_trial, StepState

__version__ = _vigil.__version__

__all__ = ["create_trial", "ModeKeys", "StepState", "modes", "exceptions", "trials", "rules", "writer", "compat"]
