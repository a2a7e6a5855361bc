"""``vigil.xgboost``: smdebug's XGBoost hook (``smdebug.xgboost``) as an xgboost ``TrainingCallback``,
the public face of ``vigil.capture.xgboost``, where it is made (the capture side lives in
``vigil.capture``).

    import vigil.xgboost as smd
    hook = smd.Hook(out_dir="/tmp/run", save_config=smd.SaveConfig(save_interval=5),
                    include_collections=["metrics", "feature_importance"])
    xgb.train(params, dtrain, evals=[(dvalid, "validation")], callbacks=[hook])

See docs/capture.md.
"""
from .capture.xgboost import *  # noqa: F401,F403 - the public names, as listed there
from .capture.xgboost import __all__  # noqa: F401
