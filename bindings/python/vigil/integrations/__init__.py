"""Vigil in the trainers people use, the way W&B and TensorBoard plug in: each module imports its
framework only when imported itself (``pip install vigil[transformers]``, ``vigil[lightning]``).

  * ``vigil.integrations.transformers``: ``VigilCallback``, a Hugging Face ``TrainerCallback``
    (``report_to="vigil"`` once the module is imported);
  * ``vigil.integrations.lightning``: ``VigilCallback`` and ``VigilLogger`` for PyTorch Lightning.

Both drive ``vigil.pytorch.Hook`` (as ``vigil.capture.attach.AutoHook``): the one capture core.
docs/capture.md.
"""
import math
import numbers

DEFAULT_COLLECTIONS = ("weights", "gradients", "losses")


def hook_arguments(out_dir, include_collections, hook_kwargs):
    """The Hook's constructor arguments: the trainer integrations save weights, gradients and losses
    unless told otherwise."""
    kwargs = dict(hook_kwargs)
    kwargs["out_dir"] = out_dir
    kwargs["include_collections"] = list(include_collections) if include_collections is not None \
        else list(DEFAULT_COLLECTIONS)
    return kwargs


def scalar_items(metrics):
    """The finite numbers of a metrics dict (a tensor's one value too), as (name, float)."""
    for name, value in (metrics or {}).items():
        if hasattr(value, "numel") and hasattr(value, "item"):
            if value.numel() != 1:
                continue
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        value = float(value)
        if math.isfinite(value):
            yield str(name), value
