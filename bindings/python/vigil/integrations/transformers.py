"""Vigil for Hugging Face Transformers' ``Trainer``: a ``TrainerCallback``.

    from vigil.integrations.transformers import VigilCallback
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[VigilCallback(out_dir="/tmp/trial")])

or, with this module imported, ``TrainingArguments(report_to="vigil")`` (the trial goes to
``$VIGIL_OUT_DIR``, else ``<output_dir>/vigil``). It saves the model's weights and gradients, its loss
(the ``loss`` of the model's output: ``loss_output_0``, collection losses) in training and evaluation,
and what the Trainer logs (learning rate, gradient norm, eval metrics) as scalars; a step is an
optimizer step (the Trainer's global step), an evaluation step a forward pass, and the mode follows
the Trainer's phases (model.train()/model.eval()). Any fault inside it is logged once and capture
steps aside; training goes on. docs/capture.md.
"""
import logging
import os

from transformers import TrainerCallback

from ..capture.attach import AutoHook
from . import hook_arguments, scalar_items

logger = logging.getLogger("vigil.hook")

OUT_DIR_ENV = "VIGIL_OUT_DIR"


class VigilCallback(TrainerCallback):
    """Captures a Trainer's run into an smdebug trial at ``out_dir``; ``include_collections`` defaults
    to weights, gradients and losses; the other keyword arguments are vigil.pytorch.Hook's
    (save_config, reduction_config, include_regex, save_all, ...)."""

    def __init__(self, out_dir=None, include_collections=None, **hook_kwargs):
        self.out_dir = out_dir
        self._include_collections = include_collections
        self._hook_kwargs = hook_kwargs
        self.hook = None
        self._failed = False

    def _fail(self, e):
        if not self._failed:
            self._failed = True
            logger.error("vigil callback disabled, training goes on without it: %s: %s", type(e).__name__, e)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if self._failed or self.hook is not None:
            return
        try:
            out_dir = self.out_dir or os.environ.get(OUT_DIR_ENV) or os.path.join(args.output_dir, "vigil")
            self.hook = AutoHook(**hook_arguments(out_dir, self._include_collections, self._hook_kwargs))
            if model is not None:
                self.hook.register_module(model)
        except Exception as e:  # noqa: BLE001 - never into the training loop
            self._fail(e)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self._failed or self.hook is None:
            return
        try:
            for name, value in scalar_items(logs):
                self.hook.save_scalar(name, value)
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    def on_train_end(self, args, state, control, **kwargs):
        if self.hook is None:
            return
        try:
            self.hook.close()
        except Exception as e:  # noqa: BLE001
            self._fail(e)


def _register_report_to():
    """Makes ``report_to="vigil"`` name this callback, where Transformers keeps its table of
    integrations (transformers.integrations.integration_utils.INTEGRATION_TO_CALLBACK)."""
    try:
        from transformers.integrations import integration_utils
    except ImportError:
        return
    table = getattr(integration_utils, "INTEGRATION_TO_CALLBACK", None)
    if isinstance(table, dict):
        table.setdefault("vigil", VigilCallback)


_register_report_to()

__all__ = ["VigilCallback"]
