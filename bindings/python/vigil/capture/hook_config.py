"""SageMaker's DebugHookConfig as the hook's JSON file (smdebug-format §7.2, sagemaker-api §2.1-2.5):
``LocalPath``, ``HookParameters`` and ``CollectionConfigurations``, with smdebug's quirks (string
booleans, comma lists, ``train.``/``eval.``/``predict.``/``global.`` prefixes), and
TensorBoardOutputConfig's file. A bad file is refused whole, before training starts, with a
``ValueError`` naming the field; nothing is half-configured.
"""
import json
import os

from .. import _vigil
from ..modes import ModeKeys
from ..reduction_config import ReductionConfig
from ..save_config import SaveConfig, SaveConfigMode
from .environment import capture_disabled, sagemaker_config_path

_sagemaker = _vigil.sagemaker

_TOP_KEYS = {"LocalPath", "S3OutputPath", "S3Path", "HookParameters", "CollectionConfigurations"}
_SAVE_KEYS = ("save_interval", "save_steps", "start_step", "end_step")
_MODE_PREFIXES = {"train.": ModeKeys.TRAIN, "eval.": ModeKeys.EVAL, "predict.": ModeKeys.PREDICT,
                  "global.": ModeKeys.GLOBAL}
_HOOK_KEYS = {"save_all", "include_regex", "include_workers", "reductions", "save_raw_tensor", "save_shape",
              "export_tensorboard", "tensorboard_dir", "dry_run"}
_COLLECTION_KEYS = {"include_regex", "reductions", "save_raw_tensor", "save_shape", "save_histogram"}


class HookConfigError(ValueError):
    """A DebugHookConfig file Vigil refuses; the message names the file and the field."""


def _bool(value, where):
    """SageMaker's one boolean rule (vigil/sdk/text.hpp's parse_bool, through _vigil.sagemaker)."""
    if isinstance(value, bool):
        return value
    parsed = _sagemaker.parse_bool(value) if isinstance(value, str) else None
    if parsed is not None:
        return parsed
    raise HookConfigError("{}: expected true or false, got {!r}".format(where, value))


def _list(value, where):
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise HookConfigError("{}: expected a list of strings".format(where))
        return [v.strip() for v in value if v.strip()]
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    raise HookConfigError("{}: expected a comma-separated string, got {!r}".format(where, value))


def _int(value, where):
    if isinstance(value, bool):
        raise HookConfigError("{}: expected an integer, got {!r}".format(where, value))
    try:
        return int(value)
    except (TypeError, ValueError):
        raise HookConfigError("{}: expected an integer, got {!r}".format(where, value)) from None


def _save_settings(params, where, defaults=None):
    """{ModeKeys: {save key: value}} from unprefixed keys (every mode) and per-mode prefixed keys."""
    per_mode = {m: dict(defaults.get(m, {})) if defaults else {} for m in ModeKeys}
    plain, prefixed = {}, []
    for key, value in params.items():
        prefix = next((p for p in _MODE_PREFIXES if key.startswith(p)), None)
        base = key[len(prefix):] if prefix else key
        if base not in _SAVE_KEYS:
            continue
        field = "{}.{}".format(where, key)
        parsed = [_int(s, field) for s in _list(value, field)] if base == "save_steps" else _int(value, field)
        if base == "save_interval" and parsed <= 0:
            raise HookConfigError("{}: must be a positive integer".format(field))
        if prefix:
            prefixed.append((_MODE_PREFIXES[prefix], base, parsed))
        else:
            plain[base] = parsed
    for m in ModeKeys:
        per_mode[m].update(plain)
    for mode, base, parsed in prefixed:
        per_mode[mode][base] = parsed
    return per_mode


def _save_config(per_mode):
    if not any(per_mode.values()):
        return None
    return SaveConfig(mode_save_configs={m: SaveConfigMode(**v) for m, v in per_mode.items() if v} or None)


def _reduction_config(params, where):
    if "reductions" not in params:
        return None  # smdebug: save_raw_tensor/save_shape alone are ignored (smdebug-format §7.2)
    try:
        return ReductionConfig.from_dict({
            "reductions": ",".join(_list(params["reductions"], where + ".reductions")),
            "save_raw_tensor": _bool(params.get("save_raw_tensor", False), where + ".save_raw_tensor"),
            "save_shape": _bool(params.get("save_shape", False), where + ".save_shape")})
    except ValueError as e:
        raise HookConfigError("{}.reductions: {}".format(where, e)) from None


def _check_keys(params, allowed, where):
    for key in params:
        base = next((key[len(p):] for p in _MODE_PREFIXES if key.startswith(p)), key)
        if key not in allowed and base not in _SAVE_KEYS:
            raise HookConfigError("{}: unknown key {!r}".format(where, key))


def parse_hook_config(doc, source="debughookconfig.json"):
    """The hook's constructor arguments (a dict) from a parsed DebugHookConfig; collections are
    returned as (name, {include_regex, reduction_config, save_config, save_histogram})."""
    if not isinstance(doc, dict):
        raise HookConfigError("{}: the top level must be a JSON object".format(source))
    for key in doc:
        if key not in _TOP_KEYS:
            raise HookConfigError("{}: unknown key {!r}".format(source, key))
    out_dir = doc.get("LocalPath", _sagemaker.DEBUG_OUTPUT_DIR)
    if not isinstance(out_dir, str) or not out_dir:
        raise HookConfigError("{}: LocalPath must be a non-empty string".format(source))
    hook_params = doc.get("HookParameters") or {}
    if not isinstance(hook_params, dict):
        raise HookConfigError("{}: HookParameters must be an object".format(source))
    _check_keys(hook_params, _HOOK_KEYS, source + ": HookParameters")
    where = source + ": HookParameters"
    hook_save = _save_settings(hook_params, where)
    kwargs = {"out_dir": out_dir}
    if "save_all" in hook_params:
        kwargs["save_all"] = _bool(hook_params["save_all"], where + ".save_all")
    if "include_regex" in hook_params:
        kwargs["include_regex"] = _list(hook_params["include_regex"], where + ".include_regex")
    if "include_workers" in hook_params:
        if hook_params["include_workers"] not in ("one", "all"):
            raise HookConfigError("{}.include_workers: expected 'one' or 'all', got {!r}".format(
                where, hook_params["include_workers"]))
        kwargs["include_workers"] = hook_params["include_workers"]
    if "export_tensorboard" in hook_params:
        kwargs["export_tensorboard"] = _bool(hook_params["export_tensorboard"], where + ".export_tensorboard")
    if "tensorboard_dir" in hook_params:
        kwargs["tensorboard_dir"] = str(hook_params["tensorboard_dir"])
    rc = _reduction_config(hook_params, where)
    if rc is not None:
        kwargs["reduction_config"] = rc
    sc = _save_config(hook_save)
    if sc is not None:
        kwargs["save_config"] = sc

    collections = []
    configs = doc.get("CollectionConfigurations") or []
    if not isinstance(configs, list):
        raise HookConfigError("{}: CollectionConfigurations must be a list".format(source))
    for i, entry in enumerate(configs):
        cwhere = "{}: CollectionConfigurations[{}]".format(source, i)
        if not isinstance(entry, dict):
            raise HookConfigError(cwhere + " must be an object")
        for key in entry:
            if key not in ("CollectionName", "CollectionParameters"):
                raise HookConfigError("{}: unknown key {!r}".format(cwhere, key))
        name = entry.get("CollectionName")
        if not isinstance(name, str) or not name:
            raise HookConfigError(cwhere + ".CollectionName is required (a non-empty string)")
        params = entry.get("CollectionParameters") or {}
        if not isinstance(params, dict):
            raise HookConfigError(cwhere + ".CollectionParameters must be an object")
        pwhere = cwhere + ".CollectionParameters"
        _check_keys(params, _COLLECTION_KEYS, pwhere)
        spec = {}
        if "include_regex" in params:
            spec["include_regex"] = _list(params["include_regex"], pwhere + ".include_regex")
        crc = _reduction_config(params, pwhere)
        if crc is not None:
            spec["reduction_config"] = crc
        if "save_histogram" in params:
            spec["save_histogram"] = _bool(params["save_histogram"], pwhere + ".save_histogram")
        if any(k.split(".")[-1] in _SAVE_KEYS for k in params):
            spec["save_config"] = _save_config(_save_settings(params, pwhere, defaults=hook_save))
        collections.append((name, spec))
    kwargs["include_collections"] = [name for name, _ in collections]
    return kwargs, collections


def _config_path(json_config_path):
    if json_config_path is not None:
        if not os.path.exists(json_config_path):
            raise HookConfigError("hook configuration {} does not exist".format(json_config_path))
        return json_config_path
    path = sagemaker_config_path(_sagemaker.DEBUG_HOOK_CONFIG_VARIABLE, _sagemaker.DEBUG_HOOK_CONFIG_FILE)
    return path if os.path.exists(path) else None


def create_hook_from_json_config(hook_class, json_config_path=None):
    """A hook_class made from the configuration file, or None when there is none (or capture is off)."""
    if capture_disabled():
        return None
    path = _config_path(json_config_path)
    if path is None:
        return None
    try:
        with open(path) as f:
            doc = json.load(f)
    except ValueError as e:
        raise HookConfigError("{}: not valid JSON: {}".format(path, e)) from None
    kwargs, collections = parse_hook_config(doc, path)
    if not kwargs["include_collections"]:
        del kwargs["include_collections"]
    hook = hook_class(**kwargs)
    for name, spec in collections:
        c = hook.get_collection(name)
        if "include_regex" in spec:
            c.include(spec["include_regex"])
        if "reduction_config" in spec:
            c.reduction_config = spec["reduction_config"]
        if "save_histogram" in spec:
            c.save_histogram = spec["save_histogram"]
        if spec.get("save_config") is not None:
            c.save_config = spec["save_config"]
    return hook


def tensorboard_dir_from_sagemaker():
    """In a SageMaker job, TensorBoard output goes to the LocalPath of TensorBoardOutputConfig's file;
    none when that file does not exist."""
    path = sagemaker_config_path(_sagemaker.TENSORBOARD_CONFIG_VARIABLE, _sagemaker.TENSORBOARD_CONFIG_FILE)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("LocalPath"), str):
        raise HookConfigError("{}: LocalPath (a string) is required".format(path))
    return doc["LocalPath"]


__all__ = ["parse_hook_config", "create_hook_from_json_config", "tensorboard_dir_from_sagemaker", "HookConfigError"]
