"""Names and locations inside a trial, as smdebug's helpers spell them (``smdebug.core.locations``,
``smdebug.core.utils``, ``smdebug.trials.local_trial``): index keys per step, index/shape entries,
collection and reduction names, TF device names. Pure functions of names (smdebug-format §1)."""
import logging
import os
import re

from . import _vigil
from .modes import ModeKeys

MAX_INDEX_FILE_NUM_IN_INDEX_PREFIX = 1000
REDUCTIONS_PREFIX = "smdebug/reductions/"
TRAINING_END_FILE = _vigil.sagemaker.END_OF_TRAINING_MARKER
_INDEX_PREFIX = re.compile(r"(.+)/index/\d{9}/\d+_.+\.json$")
_COLLECTION_FILE = re.compile(r".*/collections/.+/(.+)_collections\.(json|ts)$")


class IndexFileLocationUtils:
    """Where a step's index file lives: ``<trial>/index/<step // 1000 as 9 digits>/<step:012d>_<worker>.json``."""

    @staticmethod
    def get_index_prefix_for_step(step_num):
        return format(int(step_num) // MAX_INDEX_FILE_NUM_IN_INDEX_PREFIX, "09")

    @staticmethod
    def next_index_prefix_for_step(step_num):
        return format(int(step_num) // MAX_INDEX_FILE_NUM_IN_INDEX_PREFIX + 1, "09")

    @staticmethod
    def get_index_key_for_step(trial_prefix, step_num, worker_name):
        return os.path.join(trial_prefix, "index", IndexFileLocationUtils.get_index_prefix_for_step(step_num),
                            "{:012d}_{}.json".format(int(step_num), worker_name))

    @staticmethod
    def get_step_from_idx_filename(index_file_name):
        return IndexFileLocationUtils.parse_step_from_index_file_name(index_file_name)

    @staticmethod
    def parse_step_from_index_file_name(index_file_name):
        return int(os.path.basename(index_file_name).split("_")[0])

    @staticmethod
    def get_index_path(path):
        return os.path.join(path, "index")

    @staticmethod
    def get_prefix_from_index_file(index_file):
        """The trial prefix of an index file's path (the part before ``/index/``)."""
        m = _INDEX_PREFIX.match(index_file)
        if m is None:
            raise ValueError("not the path of an index file: {}".format(index_file))
        return m.group(1)


class TensorLocation:
    """Where a tensor's record lies: an index file's ``tensor_payload`` entry."""

    def __init__(self, tname, mode, mode_step, event_file_name, start_idx, length, worker):
        self.tensorname = tname
        self.mode = mode
        self.mode_step = int(mode_step)
        self.event_file_name = event_file_name
        self.start_idx = start_idx
        self.length = length
        self.worker = worker

    def to_dict(self):
        return {"tensorname": self.tensorname, "start_idx": self.start_idx, "length": self.length}


class TensorShape:
    """A shape-only save: an index file's ``shape_payload`` entry."""

    def __init__(self, name, mode, mode_step, shape, original_name=None):
        self.name = name
        self.original_name = original_name if original_name is not None else name
        self.mode = mode
        self.mode_step = int(mode_step)
        self.shape = tuple(shape)

    def to_dict(self):
        return {"tensorname": self.name, "originalname": self.original_name, "shape": list(self.shape)}


def flatten(lis):
    """A nested list as one flat list."""
    out = []
    for item in lis:
        if isinstance(item, (list, tuple)):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out


def get_logger(name="smdebug"):
    """The logger smdebug's modules log to (``vigil`` by default here: ``get_logger()``)."""
    return logging.getLogger("vigil" if name == "smdebug" else name)


def serialize_tf_device(device):
    """``/job:worker/replica:0/task:1/device:GPU:0`` -> ``_job-worker_replica-0_task-1_device-GPU-0``."""
    return device.replace("/", "_").replace(":", "-")


def deserialize_tf_device(device_name):
    return device_name.replace("_", "/").replace("-", ":")


def get_worker_name_from_collection_file(filename):
    """The worker of ``.../collections/000000000/<worker>_collections.json`` (a TF device name when
    it starts with ``_``)."""
    m = _COLLECTION_FILE.match(filename)
    if m is None:
        raise ValueError("not the path of a collection file: {}".format(filename))
    worker = m.group(1)
    return deserialize_tf_device(worker) if worker.startswith("_") else worker


def get_path_to_collections(directory):
    return os.path.join(directory, "collections", "000000000")


def list_collection_files_in_directory(directory):
    """The collection files of a trial, sorted (smdebug's order is the file system's)."""
    folder = get_path_to_collections(directory)
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if re.match(r".*_?collections\.json$", f))


def has_training_ended(trial_prefix):
    """Whether the trial's end-of-training marker exists (local trials)."""
    return os.path.exists(os.path.join(str(trial_prefix), TRAINING_END_FILE))


def is_s3(path):
    """(True, bucket, key) for ``s3://bucket/key``, else (False, None, None)."""
    m = re.match(r"^s3://([^/]+)/?(.*)$", str(path))
    if m is None:
        return False, None, None
    return True, m.group(1), m.group(2)


def get_reduction_tensor_name(tensorname, reduction_name, abs):
    return "{}{}{}/{}".format(REDUCTIONS_PREFIX, "abs_" if abs else "", reduction_name, tensorname)


def reverse_reduction_tensor_name(reduction_tensor_name):
    """``smdebug/reductions/abs_l2/gradient/x`` -> ``("gradient/x", "l2", True)``."""
    if REDUCTIONS_PREFIX not in reduction_tensor_name:
        raise ValueError("not a reduction tensor name: {}".format(reduction_tensor_name))
    rest = reduction_tensor_name.split(REDUCTIONS_PREFIX, 1)[1]
    token, _, tname = rest.partition("/")
    is_abs = "abs_" in token
    return tname, token.split("abs_", 1)[1] if is_abs else token, is_abs


def str_to_mode_keys(mode_str):
    """"train" / "TRAIN" / "global" -> ModeKeys."""
    try:
        return ModeKeys[str(mode_str).strip().upper()]
    except KeyError:
        raise ValueError("Invalid mode: {!r}".format(mode_str)) from None


__all__ = ["IndexFileLocationUtils", "TensorLocation", "TensorShape", "flatten", "get_logger", "serialize_tf_device",
           "deserialize_tf_device", "get_worker_name_from_collection_file", "get_path_to_collections",
           "list_collection_files_in_directory", "has_training_ended", "is_s3", "get_reduction_tensor_name",
           "reverse_reduction_tensor_name", "str_to_mode_keys", "REDUCTIONS_PREFIX"]
