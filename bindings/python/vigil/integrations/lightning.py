"""Vigil for PyTorch Lightning: a ``Callback`` that captures the model, and a ``Logger`` for what
``self.log`` logs.

    from vigil.integrations.lightning import VigilCallback, VigilLogger
    trainer = Trainer(callbacks=[VigilCallback("/tmp/trial")], logger=VigilLogger("/tmp/trial"))

The callback saves the LightningModule's weights and gradients and the loss its training_step (and
validation_step) returns (``loss_output_0``, collection losses); a step is a training batch (TRAIN)
or a validation/test batch (EVAL) or a prediction batch (PREDICT), as Lightning's loops say. The
logger saves the logged metrics as scalars (``scalar/<name>``) into the same trial (the callback's
hook with the same folder; alone, it opens a step at each of Lightning's logging steps). Either
imports ``lightning`` (else ``pytorch_lightning``). Any fault inside them is logged once and capture
steps aside; training goes on. docs/capture.md.
"""
import logging
import os

try:
    import lightning.pytorch as pl
    from lightning.pytorch.loggers import Logger as _Logger
    from lightning.pytorch.loggers.logger import rank_zero_experiment
except ImportError:  # the older package name
    import pytorch_lightning as pl
    from pytorch_lightning.loggers import Logger as _Logger
    from pytorch_lightning.loggers.logger import rank_zero_experiment

from ..capture.attach import AutoHook
from ..modes import ModeKeys
from . import hook_arguments, scalar_items

logger = logging.getLogger("vigil.hook")

_hooks: "dict[str, AutoHook]" = {}  # trial folder -> the AutoHook the callback and the logger of that folder share


def _shared_hook(out_dir, include_collections, hook_kwargs):
    key = os.path.abspath(str(out_dir))
    hook = _hooks.get(key)
    if hook is None or hook._closed:
        hook = _hooks[key] = AutoHook(driven=True, **hook_arguments(out_dir, include_collections, hook_kwargs))
        hook._vigil_step_owner = None
    return hook


class _Guarded:
    _failed = False

    def _fail(self, e):
        if not self._failed:
            self._failed = True
            logger.error("vigil %s disabled, training goes on without it: %s: %s", type(self).__name__,
                         type(e).__name__, e)


class VigilCallback(_Guarded, pl.Callback):
    """Captures the LightningModule into an smdebug trial at ``out_dir``; ``include_collections``
    defaults to weights, gradients and losses; other keyword arguments are vigil.pytorch.Hook's."""

    def __init__(self, out_dir, include_collections=None, **hook_kwargs):
        super().__init__()
        self.out_dir = str(out_dir)
        self._include_collections = include_collections
        self._hook_kwargs = hook_kwargs
        self.hook = None

    def _guard(self, fn, *args):
        if self._failed:
            return
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - never into the training loop
            self._fail(e)

    def setup(self, trainer, pl_module, stage):
        self._guard(self._setup, pl_module)

    def _setup(self, pl_module):
        if self.hook is None or self.hook._closed:
            self.hook = _shared_hook(self.out_dir, self._include_collections, self._hook_kwargs)
            self.hook._vigil_step_owner = self
            self.hook.register_module(pl_module)

    def _begin(self, mode):
        if self.hook is not None:
            self.hook.begin_step(mode)

    def _losses(self, outputs):
        if self.hook is None or outputs is None:
            return
        self.hook.record_named_losses(outputs if isinstance(outputs, dict) else {"loss": outputs})

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._guard(self._begin, ModeKeys.TRAIN)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._guard(self._losses, outputs)

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._guard(self._begin, ModeKeys.EVAL)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self._guard(self._losses, outputs)

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._guard(self._begin, ModeKeys.EVAL)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self._guard(self._losses, outputs)

    def on_predict_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._guard(self._begin, ModeKeys.PREDICT)

    def teardown(self, trainer, pl_module, stage):
        if self.hook is not None:
            hook, self.hook = self.hook, None
            self._guard(hook.close)


class VigilLogger(_Guarded, _Logger):
    """A Lightning logger writing the logged metrics as scalars of the trial at ``out_dir``."""

    def __init__(self, out_dir, include_collections=None, **hook_kwargs):
        super().__init__()
        self.out_dir = str(out_dir)
        self._include_collections = include_collections
        self._hook_kwargs = hook_kwargs
        self._last_step = None

    @property
    def name(self):
        return "vigil"

    @property
    def version(self):
        return 0

    @property
    def save_dir(self):
        return self.out_dir

    @property
    @rank_zero_experiment
    def experiment(self):
        """The trial's hook (vigil.pytorch.Hook), None before the first metrics. Lightning reads this
        before the callbacks' setup: made here, the hook would take the logger's configuration
        instead of the callback's."""
        return _hooks.get(os.path.abspath(self.out_dir))

    def log_hyperparams(self, params, *args, **kwargs):
        pass  # a trial has no place for them

    def log_metrics(self, metrics, step=None):
        if self._failed:
            return
        try:
            hook = _shared_hook(self.out_dir, self._include_collections, self._hook_kwargs)
            if hook._vigil_step_owner is None and step is not None and step != self._last_step:
                hook.begin_step(ModeKeys.TRAIN)  # alone: Lightning's logging steps are the steps
            self._last_step = step
            for name, value in scalar_items(metrics):
                hook.save_scalar(name.replace("/", "_"), value)
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    def finalize(self, status):
        hook = _hooks.get(os.path.abspath(self.out_dir))
        if hook is not None and hook._vigil_step_owner is None:
            try:
                hook.close()
            except Exception as e:  # noqa: BLE001
                self._fail(e)


__all__ = ["VigilCallback", "VigilLogger"]
