"""The capture side: what runs inside the user's training process. The hooks (``hook`` holds what
every framework hook shares, ``pytorch`` and ``xgboost`` the framework hooks that ``vigil.pytorch``
and ``vigil.xgboost`` publish), their JSON configuration from SageMaker (``hook_config``), the
framework profiler (``framework_profiler``) and the upload of ``s3://`` outputs (``upload``). The
C++ writer thread, the capture policy and the uploader they feed are in ``_vigil`` (host/writer/).

Nothing here may harm training: see ``hook.never_raises``.
"""
