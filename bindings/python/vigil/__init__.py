"""Vigil: an open reimplementation of Amazon SageMaker Debugger (smdebug) -- Python API.

    import vigil
    trial = vigil.create_trial("/path/to/trial")
    for name in trial.tensor_names(collection="gradients"):
        print(name, trial.tensor(name).reduction_value(0, "mean", abs=True))

Reading trials and running rules: ``vigil.trials`` (create_trial, Trial, LocalTrial, Tensor),
``vigil.rules`` (Rule, RequiredTensors, invoke_rule, load), ``vigil.profiler`` (profiler output
readers, ProfilerTrial, PandasFrame). What a trial is made of: ``vigil.modes`` (ModeKeys),
``vigil.exceptions`` (smdebug's exceptions), ``vigil.collection`` (Collection, CollectionManager),
``vigil.reduction_config`` / ``vigil.save_config`` (ReductionConfig, SaveConfig, SaveConfigMode),
``vigil.locations`` (smdebug's name helpers), ``vigil.config_constants`` (smdebug's configuration
constants). Writing: ``vigil.writer`` (TrialWriter). Capture: ``vigil.pytorch`` and
``vigil.xgboost`` (the hooks; imported on demand, as they import torch and xgboost), made in
``vigil.capture``. ``vigil.compat`` (smdebug's import names), ``vigil.installation`` (where the
command, plugins, headers and CMake package are; ``python -m vigil``). See docs/python.md.
"""
from . import _vigil
from . import (capture, collection, compat, config_constants, exceptions, installation, locations, modes, profiler,
               reduction_config, rules, save_config, trials, writer)
from .modes import ModeKeys
from .trials import StepState, create_trial

__version__: str = _vigil.__version__

# vigil.pytorch and vigil.xgboost are left out: `from vigil import *` must not import torch or xgboost.
__all__ = ["create_trial", "ModeKeys", "StepState", "capture", "collection", "compat", "config_constants",
           "exceptions", "installation", "locations", "modes", "profiler", "reduction_config", "rules",
           "save_config", "trials", "writer"]
