"""Capture without script changes: ``vigil run`` (vigil/run.py) and the trainer integrations
(vigil/integrations/) drive ``vigil.pytorch.Hook``, the one capture core, from outside the script.

``AutoHook`` is the Hook with the step boundaries of a training run seen from outside it:
  * a training step is an optimizer step: the first forward pass of the model after an optimizer
    step (torch's global optimizer step post-hook) begins the next one, so that micro-batches of
    gradient accumulation belong to the step they are summed into; with no global optimizer hooks
    (torch < 2.0) every forward pass of the model is a step, as for the Hook;
  * an evaluation or prediction step is each forward pass of the model;
  * the mode follows ``model.train()`` / ``model.eval()``;
  * losses are the outputs of ``torch.nn.modules.loss._Loss`` modules, and the values named in
    ``loss_names`` (default ``loss``) in the model's output (a dict, a Hugging Face ModelOutput, an
    object with that attribute): ``loss_output_0`` in the collection losses;
  * a framework that knows its own steps (Lightning's batches) drives them: ``AutoHook(driven=True)``
    and ``begin_step(mode)``.

``attach_globally()`` is what ``vigil run`` installs in every Python process it starts (through the
start-up hook in vigil/_autostart): torch's global module and optimizer hooks, which find the model
(the first module called outside any other module's forward) and the loss modules as they are first
called, and create the hook from the DebugHookConfig JSON ``vigil run`` wrote. Any fault there is
logged once and capture steps aside, as for the hook itself.
"""
import logging
import os
import weakref

import torch

from .guard import never_raises
from .pytorch import Hook
from ..modes import ModeKeys

logger = logging.getLogger("vigil.hook")

LOSS_NAMES_ENV = "VIGIL_LOSS_NAMES"


def _optimizer_step_post_hook():
    """torch's global optimizer step post-hook registration (torch >= 2.0), or None."""
    try:
        from torch.optim import optimizer as torch_optimizer
    except ImportError:
        return None
    return getattr(torch_optimizer, "register_optimizer_step_post_hook", None)


def _named_value(outputs, name):
    """The value named `name` in a model's outputs: a mapping's key (a ModelOutput is one), else an
    attribute; None when there is none or it is not a one-element tensor."""
    value = None
    if isinstance(outputs, dict):
        value = outputs.get(name)
    elif not isinstance(outputs, (torch.Tensor, tuple, list)):
        value = getattr(outputs, name, None)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value
    return None


class AutoHook(Hook):
    """vigil.pytorch.Hook with steps at optimizer steps, the mode from the model's training flag and
    the losses found by name in the model's outputs (see the module's docstring)."""

    def __init__(self, *args, driven=False, loss_names=None, **kwargs):
        self._driven = bool(driven)
        self._step_due = True
        self._loss_names = list(loss_names) if loss_names is not None else _env_loss_names()
        self._step_hook = None
        super().__init__(*args, **kwargs)
        if not self._disabled and not self._driven:
            register = _optimizer_step_post_hook()
            if register is not None:
                self._step_hook = register(self._optimizer_stepped)

    def _optimizer_stepped(self, optimizer, args, kwargs):
        self._step_due = True

    def register_module(self, module):
        """Hooks a model as the Hook does, and reads the losses named in its outputs."""
        super().register_module(module)
        if not self._disabled:
            self._handles.append(module.register_forward_hook(self._model_output_hook))

    def _model_output_hook(self, module, inputs, outputs):
        self.record_named_losses(outputs)

    @never_raises
    def record_named_losses(self, outputs):
        """Saves the values named in ``loss_names`` found in `outputs` as losses of the open step."""
        for name in self._loss_names:
            value = _named_value(outputs, name)
            if value is not None:
                self.record_tensor_value(name, value)

    @never_raises
    def forward_pre_hook(self, module, inputs):
        if self._driven:
            return  # the framework begins the steps (begin_step)
        mode = ModeKeys.TRAIN if module.training else ModeKeys.EVAL
        if mode != self.mode:
            self.set_mode(mode)
        if mode == ModeKeys.TRAIN and self._step_hook is not None:
            if not self._step_due:
                return  # another micro-batch of the same optimizer step
            self._step_due = False
        super().forward_pre_hook(module, inputs)

    @never_raises
    def begin_step(self, mode):
        """A driven hook's step boundary: the next step, in `mode`, begins now (the registered model's
        weights are saved as at a forward pass)."""
        if mode != self.mode:
            self.set_mode(mode)
        model = getattr(self, "_model", None)
        # no model registered (a Lightning logger alone): a step of scalars only
        Hook.forward_pre_hook(self, model if model is not None else _NO_MODEL, ())

    def _get_worker_name(self):
        # torchrun's workers before (or without) init_process_group: their rank from the launcher
        if not (torch.distributed.is_available() and torch.distributed.is_initialized()) and "RANK" in os.environ:
            return "worker_{}".format(int(os.environ["RANK"]))
        return super()._get_worker_name()

    def _get_num_workers(self):
        if not (torch.distributed.is_available() and torch.distributed.is_initialized()) and "WORLD_SIZE" in os.environ:
            return int(os.environ["WORLD_SIZE"])
        return super()._get_num_workers()

    def close(self):
        if self._step_hook is not None:
            self._step_hook.remove()
            self._step_hook = None
        super().close()


_NO_MODEL = torch.nn.Module()


def _wrapped(module):
    """The model a DistributedDataParallel or DataParallel wrapper runs, else None: the hook observes
    the model, whose class and parameter names are the script's own (as with register_module(model))."""
    inner = getattr(module, "module", None)
    if type(module).__name__ in ("DistributedDataParallel", "DataParallel") and isinstance(inner, torch.nn.Module):
        return inner
    return None


def _env_loss_names():
    text = os.environ.get(LOSS_NAMES_ENV, "loss")
    return [n.strip() for n in text.split(",") if n.strip()]


class _GlobalAttachment:
    """torch's global module hooks, finding the model and the loss modules for an AutoHook made from
    the JSON configuration at the first forward pass. Any fault: logged once, every hook removed."""

    def __init__(self, config_path):
        self._config_path = config_path
        self._hook = None
        self._depth = 0  # module forwards in progress
        self._wrappers = weakref.WeakSet()  # DDP wrappers whose model is hooked
        self._handles = []
        self._failed = False
        loss_cls = torch.nn.modules.loss._Loss
        self._loss_cls = loss_cls
        module_hooks = torch.nn.modules.module
        self._handles.append(module_hooks.register_module_forward_pre_hook(self._pre))
        self._handles.append(module_hooks.register_module_forward_hook(self._post))
        register = _optimizer_step_post_hook()
        if register is not None:
            # an exception inside a forward leaves the depth counted: each optimizer step resets it
            self._handles.append(register(self._reset_depth))

    def _reset_depth(self, optimizer, args, kwargs):
        self._depth = 0

    def _fail(self, e):
        if not self._failed:
            self._failed = True
            logger.error("vigil run: capture disabled, training goes on without it: %s: %s", type(e).__name__, e)
        self.detach()

    def detach(self):
        handles, self._handles = self._handles, []
        for h in handles:
            h.remove()

    def _pre(self, module, inputs):
        try:
            depth, self._depth = self._depth, self._depth + 1
            if depth or isinstance(module, self._loss_cls):
                return None
            hook = self._hook
            if hook is None:
                hook = self._hook = AutoHook.create_from_json_file(self._config_path)
                if hook is None:  # capture turned off
                    self.detach()
                    return None
            if hook._stepped_aside():
                self.detach()
                return None
            if module in self._wrappers:
                return None
            inner = _wrapped(module)
            if inner is not None:
                # the wrapper calls the model within this call: the model's own pre-hook begins the step
                self._wrappers.add(module)
                if inner not in hook.module_maps:
                    hook.register_module(inner)
            elif module not in hook.module_maps:
                # a new model: hooked, and this first call is its first step boundary (the hook's own
                # pre-hook runs from the next call on)
                hook.register_module(module)
                hook.forward_pre_hook(module, inputs)
        except Exception as e:  # noqa: BLE001 - never into the training loop
            self._fail(e)
        return None

    def _post(self, module, inputs, outputs):
        try:
            self._depth = max(0, self._depth - 1)
            hook = self._hook
            if hook is not None and isinstance(module, self._loss_cls):
                # the loss module's output, as the Hook saves a registered loss: <LossClass>_output_0.
                # Not registered: a loss module made anew at each call would grow the hook's maps.
                hook.record_tensor_value(type(module).__name__, outputs)
        except Exception as e:  # noqa: BLE001
            self._fail(e)
        return None


_attachment = None


def attach_globally(config_path):
    """Installs the global hooks once in this process (vigil run's start-up hook calls it when torch
    is imported); returns False when capture is off or the hooks could not be installed."""
    global _attachment
    if _attachment is not None:
        return True
    try:
        _attachment = _GlobalAttachment(config_path)
        return True
    except Exception as e:  # noqa: BLE001
        logger.error("vigil run: capture not attached, training goes on without it: %s: %s", type(e).__name__, e)
        return False


__all__ = ["AutoHook", "attach_globally"]
