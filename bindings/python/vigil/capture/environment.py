"""What the process environment says to the capture side: whether capture is off, whether this is a
SageMaker training job, where SageMaker's config files are. A leaf module: the hook, its JSON
configuration and the framework profiler all ask it, and it asks none of them. The variable names and
paths are SageMaker's container facts (host/format/sagemaker_container.h, through ``_vigil.sagemaker``)."""
import os

from .. import _vigil

_sagemaker = _vigil.sagemaker


def capture_disabled():
    """``USE_SMDEBUG=false|0`` (SageMaker's switch) or ``VIGIL_DISABLE=1`` turn capture off."""
    use = os.environ.get(_sagemaker.USE_SMDEBUG_VARIABLE, "true").strip().lower()
    return use in ("false", "0") or os.environ.get("VIGIL_DISABLE", "").strip() in ("1", "true", "True")


def is_sagemaker_job():
    return _sagemaker.TRAINING_JOB_NAME_VARIABLE in os.environ


def sagemaker_config_path(variable, file_name):
    """The config file ``$variable`` names, else ``file_name`` in the container's input/config folder."""
    return os.environ.get(variable, _sagemaker.default_config_path(file_name))
