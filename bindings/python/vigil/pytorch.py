"""``vigil.pytorch``: smdebug's PyTorch hook (``smdebug.pytorch``), the public face of
``vigil.capture.pytorch``, where it is made (the capture side lives in ``vigil.capture``).

    import vigil.pytorch as smd
    hook = smd.Hook(out_dir="/tmp/run", save_config=smd.SaveConfig(save_interval=10),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    hook.register_loss(criterion)

See docs/capture.md.
"""
from .capture.pytorch import *  # noqa: F401,F403 - the public names, as listed there
from .capture.pytorch import __all__  # noqa: F401
