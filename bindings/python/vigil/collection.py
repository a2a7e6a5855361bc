"""smdebug's ``Collection``, ``CollectionKeys`` and ``CollectionManager`` (``smdebug.core.collection``,
``smdebug.trials.local_trial``): a named group of tensors, by explicit names and by regexes matched
with ``re.search``, with its reduction and save configuration. The JSON form is the collection
file's (smdebug-format §1.4)."""
from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, Iterable, List, Optional, Set, Type, TypeVar, Union, cast

from . import _vigil
from .exceptions import SMDebugError, SMDebugValueError
from .locations import get_path_to_collections
from .reduction_config import ReductionConfig
from .save_config import SaveConfig


class CollectionKeys:
    """The names of smdebug's built-in collections."""
    DEFAULT = "default"
    ALL = "all"
    INPUTS = "inputs"
    OUTPUTS = "outputs"
    WEIGHTS = "weights"
    GRADIENTS = "gradients"
    BIASES = "biases"
    LOSSES = "losses"
    LAYERS = "layers"
    SM_METRICS = "sm_metrics"
    OPTIMIZER_VARIABLES = "optimizer_variables"
    TENSORFLOW_SUMMARIES = "tensorflow_summaries"
    METRICS = "metrics"
    # XGBoost
    HYPERPARAMETERS = "hyperparameters"
    PREDICTIONS = "predictions"
    LABELS = "labels"
    FEATURE_IMPORTANCE = "feature_importance"
    AVERAGE_SHAP = "average_shap"
    FULL_SHAP = "full_shap"
    TREES = "trees"


# Collections of scalars: always saved raw, never reduced, no histograms (smdebug-format §3.9): the
# host's list (writer/trial_writer.h, kScalarCollections).
SCALAR_COLLECTIONS = frozenset(_vigil.scalar_collections())
SUMMARIES_COLLECTIONS = {CollectionKeys.TENSORFLOW_SUMMARIES}
NON_REDUCTION_COLLECTIONS = SCALAR_COLLECTIONS | SUMMARIES_COLLECTIONS
NON_HISTOGRAM_COLLECTIONS = SCALAR_COLLECTIONS | SUMMARIES_COLLECTIONS


def match_inc(tname: str, include: Optional[Iterable[str]]) -> bool:
    """Whether ``tname`` matches one of the regexes ``include`` (``re.search``)."""
    return any(re.search(pattern, tname) for pattern in (include or []))


_C = TypeVar("_C", bound="Collection")


class Collection:
    """A collection. ``include_regex`` is a list of patterns, ``tensor_names`` a set of names."""

    def __init__(self, name: str, include_regex: Optional[Iterable[str]] = None,
                 tensor_names: Optional[Iterable[str]] = None, reduction_config: Optional[ReductionConfig] = None,
                 save_config: Any = None, save_histogram: bool = True) -> None:
        self.name = name
        self.include_regex: List[str] = list(include_regex) if include_regex else []
        self._tensor_names: Set[str] = set(tensor_names) if tensor_names else set()
        self.reduction_config = reduction_config
        self.save_config = save_config
        self.save_histogram = save_histogram

    # ---- members ----
    @property
    def tensor_names(self) -> Set[str]:
        return self._tensor_names

    @tensor_names.setter
    def tensor_names(self, names: Optional[Iterable[str]]) -> None:
        self._tensor_names = set(names) if names else set()

    def include(self, t: Union[str, List[Any], tuple]) -> None:
        """Adds a regex, or each regex of a (nested) list."""
        if isinstance(t, (list, tuple)):
            for item in t:
                self.include(item)
        elif isinstance(t, str):
            self.include_regex.append(t)
        else:
            raise TypeError("Can only include str or list of str, not {}".format(type(t).__name__))

    def add_tensor_name(self, tname: str) -> None:
        self._tensor_names.add(tname)

    def remove_tensor_name(self, tname: str) -> None:
        self._tensor_names.discard(tname)

    def has_tensor_name(self, tname: str) -> bool:
        return tname in self._tensor_names

    def matches(self, tname: str) -> bool:
        """Vigil: whether a tensor belongs to this collection (named, or matched by a regex)."""
        return tname in self._tensor_names or match_inc(tname, self.include_regex)

    # ---- configuration ----
    @property
    def reduction_config(self) -> Optional[ReductionConfig]:
        return self._reduction_config

    @reduction_config.setter
    def reduction_config(self, reduction_config: Optional[ReductionConfig]) -> None:
        if reduction_config is not None and not isinstance(reduction_config, ReductionConfig):
            raise SMDebugValueError("reduction_config={} must be a ReductionConfig or None".format(reduction_config))
        self._reduction_config = reduction_config

    @property
    def save_config(self) -> Optional[SaveConfig]:
        return self._save_config

    @save_config.setter
    def save_config(self, save_config: Any) -> None:
        """None (the hook's), a SaveConfig, a SaveConfigMode or a dict (see SaveConfig.parse)."""
        self._save_config = None if save_config is None else SaveConfig.parse(save_config)

    # ---- JSON ----
    def to_json_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "include_regex": self.include_regex,
            "tensor_names": sorted(self._tensor_names),
            "reduction_config": self.reduction_config.to_json_dict() if self.reduction_config else None,
            "save_config": self.save_config.to_json_dict() if self.save_config else None,
            "save_histogram": self.save_histogram,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_dict(cls: Type[_C], params: Dict[str, Any]) -> _C:
        if not isinstance(params, dict):
            raise SMDebugValueError("params={} must be a dict".format(params))
        return cls(name=cast(str, params.get("name")), include_regex=params.get("include_regex") or [],
                   tensor_names=params.get("tensor_names") or [],
                   reduction_config=ReductionConfig.from_dict(params.get("reduction_config")),
                   save_config=SaveConfig.from_dict(params.get("save_config")),
                   save_histogram=params.get("save_histogram", True))

    @classmethod
    def from_json(cls: Type[_C], json_str: str) -> _C:
        return cls.from_dict(json.loads(json_str))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Collection) and self.to_json_dict() == other.to_json_dict()

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return "<Collection {} include_regex={} tensor_names={}>".format(self.name, self.include_regex,
                                                                        sorted(self._tensor_names))


_M = TypeVar("_M", bound="CollectionManager")


class CollectionManager:
    """The collections of a trial or a hook by name, and the worker count of the collection file."""

    def __init__(self, collections: Optional[Dict[str, Collection]] = None, create_default: bool = False) -> None:
        self.collections: Dict[str, Collection] = dict(collections or {})
        self._meta: Dict[str, Any] = {"num_workers": 1}
        if create_default:
            self.get(CollectionKeys.DEFAULT)

    def create_collection(self, name: str, cls: Type[Collection] = Collection) -> Collection:
        self.collections[name] = cls(name)
        return self.collections[name]

    def get(self, name: str, create: bool = True) -> Collection:
        if name not in self.collections:
            if not create:
                raise SMDebugError("Collection {} has not been created".format(name))
            self.create_collection(name)
        return self.collections[name]

    def add(self, arg: Union[Collection, str, List[Any], tuple]) -> None:
        """Adds a Collection (replacing one of its name), a new empty collection by name (an existing
        one is kept), or each of a list of them."""
        if isinstance(arg, (list, tuple)):
            for c in arg:
                self.add(c)
        elif isinstance(arg, str):
            if arg not in self.collections:
                self.create_collection(arg)
        elif isinstance(arg, Collection):
            self.collections[arg.name] = arg
        else:
            raise TypeError("Can only add a Collection, a name or a list of them, not {}".format(type(arg).__name__))

    def get_collections(self) -> Dict[str, Collection]:
        return self.collections

    def get_num_workers(self) -> int:
        return int(self._meta["num_workers"])

    def set_num_workers(self, num_workers: int) -> None:
        self._meta["num_workers"] = int(num_workers)

    def update_meta(self, meta: Dict[str, Any]) -> None:
        if not isinstance(meta, dict):
            raise SMDebugValueError("meta={} must be a dict".format(meta))
        self._meta.update(meta)

    def to_json_dict(self) -> Dict[str, Any]:
        return {"collections": {name: c.to_json_dict() for name, c in self.collections.items()}, "_meta": self._meta}

    def export(self, out_dir: str, filename: str) -> None:
        """Writes the collection file ``<out_dir>/collections/000000000/<filename>``, where a trial's
        collection files are (a temporary file, then renamed)."""
        path = os.path.join(get_path_to_collections(out_dir), filename)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(json.dumps(self.to_json_dict()))
        os.replace(tmp, path)

    @classmethod
    def load_from_string(cls: Type[_M], s: str, collection_class: Type[Collection] = Collection) -> _M:
        params = json.loads(s)
        if not isinstance(params, dict) or not set(params) <= {"collections", "_meta"}:
            raise SMDebugValueError("a collection file has the keys collections and _meta only")
        cm = cls()
        for name, c in (params.get("collections") or {}).items():
            cm.collections[name] = collection_class.from_dict(c)
        if "_meta" in params:
            cm.update_meta(params["_meta"])
        return cm

    @classmethod
    def load(cls: Type[_M], filename: str, collection_class: Type[Collection] = Collection) -> _M:
        with open(filename) as f:
            return cls.load_from_string(f.read(), collection_class)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CollectionManager):
            return NotImplemented
        return self.collections == other.collections

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return "<CollectionManager {}>".format(sorted(self.collections))


__all__ = ["Collection", "CollectionKeys", "CollectionManager", "match_inc", "SCALAR_COLLECTIONS",
           "NON_REDUCTION_COLLECTIONS", "NON_HISTOGRAM_COLLECTIONS"]
