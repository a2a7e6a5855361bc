"""The XGBoost hook behind ``vigil.xgboost``: smdebug's XGBoost hook (``smdebug.xgboost``) as an xgboost ``TrainingCallback``.
Each boosting round is one step (step = the round, mode GLOBAL as smdebug's, unless ``set_mode`` says otherwise);
at the rounds a collection is due, the hook saves what smdebug's hook saves from the booster, the
evaluation log and the data sets it was given.

    import vigil.xgboost as smd
    hook = smd.Hook(out_dir="/tmp/run", save_config=smd.SaveConfig(save_interval=5),
                    include_collections=["metrics", "feature_importance", "labels", "predictions"],
                    hyperparameters=params, train_data=dtrain, validation_data=dvalid)
    xgb.train(params, dtrain, evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook])

Tensor names are smdebug's (smdebug-format §6.2): ``<data>-<metric>`` (``validation-logloss``),
``hyperparameters/<name>``, ``feature_importance/<type>/<feature>``, ``trees/<column>``,
``labels``, ``predictions``, ``average_shap/<feature>``, ``full_shap/<feature>``. See docs/capture.md.
"""
import json
import os

import numpy as np
import xgboost as xgb
from xgboost.callback import TrainingCallback

from . import hook as _hook
from .hook import CallbackHook, hook_singleton, never_raises
from ..collection import CollectionKeys
from ..collection import CollectionManager as _BaseCollectionManager
from ..modes import ModeKeys
from ..reduction_config import ReductionConfig
from ..save_config import SaveConfig, SaveConfigMode
from ..trials import create_trial

modes = ModeKeys
DEFAULT_INCLUDE_COLLECTIONS = [CollectionKeys.METRICS]
DEFAULT_SAVE_CONFIG_INTERVAL = 10  # smdebug's XGBoost default (500 for the other frameworks)
IMPORTANCE_TYPES = ("weight", "gain", "cover", "total_gain", "total_cover")
TREE_BOOSTERS = frozenset({"gbtree", "dart"})

# smdebug's XGBoost collections (smdebug-format §6.2), quirks kept: [a-zA-z] also matches [\]^_`,
# and [^/bias] leaves out every name ending in '/', 'b', 'i', 'a' or 's' (meant: the bias term).
# losses keeps smdebug's trailing look-behind: the host rewrites it for ECMAScript (common/search_regex.h).
XGBOOST_REGEXES = {
    CollectionKeys.HYPERPARAMETERS: "^hyperparameters/.*$",
    CollectionKeys.METRICS: "^[a-zA-z]+-[a-zA-z0-9]+$",
    CollectionKeys.LOSSES: "^[a-zA-z]+-.+(?<!(auc|map))$",
    CollectionKeys.PREDICTIONS: "^predictions$",
    CollectionKeys.LABELS: "^labels$",
    CollectionKeys.FEATURE_IMPORTANCE: "^feature_importance/.*",
    CollectionKeys.AVERAGE_SHAP: "^average_shap/.*[^/bias]$",
    CollectionKeys.FULL_SHAP: "^full_shap/.*[^/bias]$",
    CollectionKeys.TREES: "^trees/.*",
}
_BUILTIN = frozenset({CollectionKeys.DEFAULT, CollectionKeys.ALL, *XGBOOST_REGEXES})


class CollectionManager(_BaseCollectionManager):
    """smdebug XGBoost's built-in collections and their regexes."""

    def __init__(self, collections=None, create_default=True):
        super().__init__(collections)
        if create_default:
            for name in (CollectionKeys.DEFAULT, CollectionKeys.ALL):
                self.get(name)
            for name, regex in XGBOOST_REGEXES.items():
                self.get(name).include(regex)


def make_numpy_array(value):
    """smdebug's conversions: numpy arrays as they are, scalars (numbers, bools, strings) as
    1-element arrays, lists and tuples as arrays, dicts as the array of their values. TypeError for
    the rest (the value is then skipped with a warning)."""
    if isinstance(value, np.ndarray):
        return value
    if np.isscalar(value):
        return np.array([value])
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        try:
            return np.asarray(value)
        except ValueError as e:  # ragged
            raise TypeError(str(e)) from None
    raise TypeError("cannot save a value of type {}".format(type(value).__name__))


def _as_dmatrix(data):
    """A DMatrix as it is, or smdebug's (file path, content type) form: a local CSV (label in the
    first column) or LIBSVM file."""
    if data is None or isinstance(data, xgb.DMatrix):
        return data
    formats = {"csv": "csv", "text/csv": "csv", "libsvm": "libsvm", "text/libsvm": "libsvm",
               "text/x-libsvm": "libsvm"}
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], str):
        path, kind = os.path.expanduser(data[0]), formats.get(str(data[1] or "libsvm").lower())
        if kind and os.path.isfile(path):
            try:
                return xgb.DMatrix(path + ("?format=csv&label_column=0" if kind == "csv" else "?format=libsvm"))
            except xgb.core.XGBoostError as e:
                raise ValueError("{} is not a {} file xgboost can read: {}".format(path, kind, e)) from None
    raise ValueError("data must be an xgboost.DMatrix or a tuple (path of a local file, 'csv' or 'libsvm'), "
                     "not {!r}".format(data))


def _collective():
    try:
        from xgboost import collective  # xgboost >= 1.7
    except ImportError:
        from xgboost import rabit as collective
    return collective


class Hook(CallbackHook, TrainingCallback):
    """smdebug.xgboost.Hook, same constructor; pass it as ``xgb.train(..., callbacks=[hook])``."""

    def __init__(self, out_dir=None, export_tensorboard=False, tensorboard_dir=None, dry_run=False,
                 reduction_config=None, save_config=None, include_regex=None, include_collections=None,
                 save_all=False, include_workers="one", hyperparameters=None, train_data=None,
                 validation_data=None):
        if save_config is None:
            save_config = SaveConfig(save_interval=DEFAULT_SAVE_CONFIG_INTERVAL)
        # Checked first: a constructor that fails must not leave a hook behind (its close at exit).
        train_data, validation_data = _as_dmatrix(train_data), _as_dmatrix(validation_data)
        super().__init__(CollectionManager(), DEFAULT_INCLUDE_COLLECTIONS, init_step=-1, out_dir=out_dir,
                         export_tensorboard=export_tensorboard, tensorboard_dir=tensorboard_dir, dry_run=dry_run,
                         reduction_config=None, save_config=save_config, include_regex=include_regex,
                         include_collections=include_collections, save_all=save_all,
                         include_workers=include_workers)
        if reduction_config is not None:
            self.logger.warning("reduction_config is not supported by the XGBoost hook and is ignored (as smdebug's)")
        self.hyperparameters = hyperparameters
        self.train_data = train_data
        self.validation_data = validation_data
        self._booster_name = None
        self._warned = set()
        set_hook(self)

    # smdebug documents setting these after construction (hook.train_data = dtrain).
    @property
    def train_data(self):
        return self._train_data

    @train_data.setter
    def train_data(self, data):
        self._train_data = _as_dmatrix(data)

    @property
    def validation_data(self):
        return self._validation_data

    @validation_data.setter
    def validation_data(self, data):
        self._validation_data = _as_dmatrix(data)

    # ---- what the base hook needs --------------------------------------------------------------------
    def _get_worker_name(self):
        c = _collective()
        return "worker_{}".format(c.get_rank()) if c.is_distributed() else _hook.DEFAULT_WORKER_NAME

    def _get_num_workers(self):
        c = _collective()
        return c.get_world_size() if c.is_distributed() else 1

    def _get_default_collections(self):
        return _BUILTIN

    @staticmethod
    def _make_numpy_array(value):
        return make_numpy_array(value)

    # ---- the callbacks xgboost calls -------------------------------------------------------------------
    # Not guarded themselves: xgboost needs the model back (and a bool) whatever the hook does.
    def after_iteration(self, model, epoch, evals_log):
        self._on_iteration(model, epoch, evals_log)
        return False  # the hook never stops training

    def after_training(self, model):
        self.close()  # the last step, the collections, the end marker: the hook serves one run
        return model

    @never_raises
    def _on_iteration(self, model, epoch, evals_log):
        if self._closed:
            self._warn_once("closed", "this hook ended with its first training run; make a new Hook for each run")
            return
        if not self.prepared_collections:
            self._prepare_collections()  # here, not earlier: collections may be configured after the hook
        self._set_step(int(epoch))
        if self.last_saved_step is not None and not self.exported_collections:
            self.export_collections()
            self.exported_collections = True
        due = set(self._get_collections_to_save_for_step())
        if due and self._is_writing_worker():  # the other ranks of include_workers="one" skip the work
            self._initialize_writers()
            self._write_due(model, evals_log or {}, due)
            self.last_saved_step = self.step
        self._save_custom_tensors_post_step()
        self._close_writers()

    # ---- what is saved -------------------------------------------------------------------------------------
    def _write_due(self, model, evals_log, due):
        K = CollectionKeys
        if K.HYPERPARAMETERS in due:
            self._write_hyperparameters()
        if K.METRICS in due or K.LOSSES in due:
            for data_name, metrics in evals_log.items():
                for metric_name, history in metrics.items():
                    if history:  # xgb.cv logs (mean, std) pairs
                        last = history[-1]
                        self._save_for_tensor("{}-{}".format(data_name, metric_name),
                                              last[0] if isinstance(last, tuple) else last)
        if not isinstance(model, xgb.Booster):
            self._warn_once("model", "only metrics are saved from %s (not an xgboost.Booster)", type(model).__name__)
            return
        if K.PREDICTIONS in due or K.LABELS in due:
            data = self.validation_data if self.validation_data is not None else self.train_data
            if data is None:
                self._warn_once("data", "labels and predictions need validation_data or train_data")
            else:
                if K.PREDICTIONS in due:
                    self._save_for_tensor("predictions", model.predict(data))
                if K.LABELS in due:
                    self._save_for_tensor("labels", data.get_label())
        if (K.FEATURE_IMPORTANCE in due or K.TREES in due) and self._is_tree_booster(model):
            if K.FEATURE_IMPORTANCE in due:
                self._write_feature_importance(model)
            if K.TREES in due:
                self._write_trees(model)
        if K.FULL_SHAP in due or K.AVERAGE_SHAP in due:
            if self.train_data is None:
                self._warn_once("shap", "SHAP values need train_data")
            else:
                self._write_shap(model, full=K.FULL_SHAP in due, average=K.AVERAGE_SHAP in due)

    def _write_hyperparameters(self):
        if not self.hyperparameters:
            self._warn_once("hyperparameters", "the hyperparameters collection needs hyperparameters=")
            return
        items = self.hyperparameters.items() if isinstance(self.hyperparameters, dict) else self.hyperparameters
        grouped = {}  # xgboost also takes a list of pairs, where a key may repeat (eval_metric)
        for name, value in items:
            grouped.setdefault(str(name), []).append(value)
        for name, values in grouped.items():
            self._save_for_tensor("hyperparameters/" + name, values[0] if len(values) == 1 else values)

    def _write_feature_importance(self, model):
        for kind in IMPORTANCE_TYPES:
            scores = model.get_score(importance_type=kind)
            total = float(sum(scores.values()))
            if not total:
                continue  # no split yet
            for feature, score in scores.items():
                self._save_for_tensor("feature_importance/{}/{}".format(kind, feature), score / total)

    def _write_trees(self, model):
        """The columns of trees_to_dataframe() for the trees grown in this round (num_class x
        num_parallel_tree of them; one for most objectives), string columns as str ("nan" for leaves)."""
        frame = model.trees_to_dataframe()
        if frame.empty:
            return
        trees = int(frame["Tree"].max()) + 1
        per_round = max(1, trees // max(1, model.num_boosted_rounds()))
        frame = frame[frame["Tree"] >= trees - per_round]
        for column in frame.columns:
            values = frame[column].to_numpy()
            self._save_for_tensor("trees/" + str(column), values.astype(str) if values.dtype == object else values)

    def _write_shap(self, model, full, average):
        contribs = model.predict(self.train_data, pred_contribs=True)  # [..., features + bias]
        width = contribs.shape[-1]
        names = list(model.feature_names or ["f{}".format(i) for i in range(width - 1)]) + ["bias"]
        if full:
            for i, name in enumerate(names):
                self._save_for_tensor("full_shap/" + name, contribs[..., i])
        if average:
            mean = contribs.reshape(-1, width).mean(axis=0)
            for i, name in enumerate(names):
                self._save_for_tensor("average_shap/" + name, mean[i])

    def _is_tree_booster(self, model):
        if self._booster_name is None:
            self._booster_name = json.loads(model.save_config())["learner"]["gradient_booster"]["name"]
        if self._booster_name in TREE_BOOSTERS:
            return True
        self._warn_once("booster", "feature importance and trees exist for tree boosters only, not %s",
                        self._booster_name)
        return False

    def _warn_once(self, key, message, *args):
        if key not in self._warned:
            self._warned.add(key)
            self.logger.warning(message, *args)


# smdebug's hook singleton (Hook() sets it).
get_hook, set_hook, del_hook = hook_singleton(lambda path: Hook.create_from_json_file(path))


__all__ = ["Hook", "CollectionKeys", "CollectionManager", "ReductionConfig", "SaveConfig", "SaveConfigMode",
           "modes", "create_trial", "get_hook", "set_hook", "del_hook"]
