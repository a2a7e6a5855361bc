"""What every Vigil training hook shares (vigil.pytorch, vigil.xgboost): smdebug's object model and
API (collections, save and reduction configurations, modes, scalars, custom tensors, the collections
file) over the capture core (``_vigil.CapturePolicy``, host/writer/capture_policy.h: step numbering,
which collections are due, which hold a tensor, what to write of it), which is given the
collections once, and a C++ writer with its own thread (``_vigil.QueuedWriter``); and the rule that a
hook never harms training: every method catches everything, logs the first fault once and disables
the hook.

Framework hooks subclass ``BaseHook`` and give its abstract methods: ``_make_numpy_array``,
``_get_worker_name``, ``_get_num_workers`` and ``_get_default_collections``.
"""
import atexit
from abc import ABC, abstractmethod
import json
import logging
import os
import time

import numpy as np

from .. import _vigil
from . import upload as _upload
from .guard import misuse, never_raises
from .environment import capture_disabled, is_sagemaker_job
from .hook_config import create_hook_from_json_config, tensorboard_dir_from_sagemaker
from ..collection import CollectionKeys, CollectionManager
from ..exceptions import InvalidCollectionConfiguration, SMDebugTypeError, SMDebugValueError
from ..modes import ALLOWED_MODES, ModeKeys, as_mode_key
from ..reduction_config import ReductionConfig
from ..save_config import SaveConfig

logger = logging.getLogger("vigil.hook")

DEFAULT_WORKER_NAME = "worker_0"
DEFAULT_SAGEMAKER_OUTDIR = _vigil.sagemaker.DEBUG_OUTPUT_DIR
DEFAULT_MAX_QUEUE_MB = 256
QUEUE_ENV = "VIGIL_HOOK_MAX_QUEUE_MB"


class _ScalarCache:
    __slots__ = ("name", "value", "mode", "timestamp")

    def __init__(self, name, value, mode, timestamp):
        self.name, self.value, self.mode, self.timestamp = name, value, mode, timestamp


class BaseHook(ABC):
    GRADIENT_PREFIX = "gradient/"
    SCALAR_PREFIX = "scalar/"
    INPUT_TENSOR_SUFFIX = "_input_"
    OUTPUT_TENSOR_SUFFIX = "_output_"

    def __init__(self, collection_manager, default_include_collections, init_step=-1, out_dir=None,
                 export_tensorboard=False, tensorboard_dir=None, dry_run=False, reduction_config=None,
                 save_config=None, include_regex=None, include_collections=None, save_all=False,
                 include_workers="one"):
        self._disabled = capture_disabled()
        self._faulted = False
        if out_dir is None:
            if not is_sagemaker_job():
                raise ValueError("out_dir is required outside a SageMaker training job (TRAINING_JOB_NAME unset)")
            out_dir = DEFAULT_SAGEMAKER_OUTDIR
        out_dir = str(out_dir)
        self.out_dir = out_dir if _upload.is_remote(out_dir) else os.path.expanduser(out_dir)
        self.tensorboard_dir = _tensorboard_dir(export_tensorboard, tensorboard_dir, self.out_dir)
        self.dry_run = bool(dry_run)
        self.save_all_workers = include_workers == "all"  # anything else is "one", as in smdebug
        self.chief_worker = DEFAULT_WORKER_NAME
        self.worker = None
        include_collections = list(_flat(include_collections)) if include_collections is not None \
            else list(default_include_collections)
        self.include_collections = list(dict.fromkeys(include_collections + list(default_include_collections)))
        self.save_all = bool(save_all)
        self.save_config = SaveConfig.parse(save_config)
        self.reduction_config = reduction_config if reduction_config is not None else ReductionConfig(
            save_raw_tensor=True)
        self.include_regex = include_regex
        self.collection_manager = collection_manager
        if include_regex is not None:
            collection_manager.get(CollectionKeys.DEFAULT).include(include_regex)
            if CollectionKeys.DEFAULT not in self.include_collections:
                self.include_collections.append(CollectionKeys.DEFAULT)
        if self.save_all:
            collection_manager.get(CollectionKeys.ALL).include(".*")
            if CollectionKeys.ALL not in self.include_collections:
                self.include_collections.append(CollectionKeys.ALL)
        self.init_step = init_step
        self.mode = ModeKeys.GLOBAL
        self.last_saved_step = None
        self.exported_collections = False
        self._policy = None  # the capture core, given the collections when the first step begins
        self._due = None  # its due collections at this step and mode, once asked (every module hook asks)
        # The core's plans by tensor name, for as long as the due collections stay the same (_plan)
        self._plans, self._plans_due = {}, None
        self.written_tensor_name_for_step = {}
        self.scalar_cache = []
        self.custom_tensors_to_save = {}
        self._unsaveable = set()  # names skipped for their dtype, warned about once
        self._shard_layouts = {}  # tensor name -> this worker's shard's layout (format/shard_layout.h)
        self._shard_layouts_changed = False
        self.logger = logger
        self._writer = None  # created at the first saved step
        self._step_open = False
        self._tb_writers = {}
        self._closed = False
        self._max_queue_bytes = _queue_budget()
        # s3:// locations are written in local staging folders and uploaded (vigil/capture/upload.py);
        # out_dir and tensorboard_dir keep naming the user's locations.
        self._uploads = []
        self._local_out_dir = self.out_dir
        self._local_tensorboard_dir = self.tensorboard_dir
        if not self._disabled:
            atexit.register(self._atexit_close)
            self._stage_remote_locations()

    # ---- remote locations ---------------------------------------------------------------------------
    def _stage_remote_locations(self):
        """A staging folder and an uploader for each s3:// location (a tensorboard_dir inside out_dir
        shares out_dir's). Any failure is the hook's fault: logged once, and capture steps aside."""
        if self.dry_run:
            return  # writes nothing
        try:
            self._local_out_dir = self._staged_path(self.out_dir)
            if self.tensorboard_dir is not None:
                self._local_tensorboard_dir = self._staged_path(self.tensorboard_dir)
        except Exception as e:  # noqa: BLE001 - training goes on without capture
            self._fault("cannot stage {} for upload: {}: {}".format(self.out_dir, type(e).__name__, e))

    def _staged_path(self, location):
        if not _upload.is_remote(location):
            return location
        for upload in self._uploads:
            local = upload.local_path(location)
            if local is not None:
                return local
        upload = _upload.StagedUpload(location, self.logger)
        self._uploads.append(upload)
        return upload.local_dir

    def _finish_uploads(self):
        """After the hook's last file (the end marker included): the uploads, each waited for up to
        $VIGIL_UPLOAD_TIMEOUT_SECONDS."""
        uploads, self._uploads = self._uploads, []
        for upload in uploads:
            upload.finish()

    # ---- what a framework hook gives --------------------------------------------------------------------
    @staticmethod
    @abstractmethod
    def _make_numpy_array(value):
        """A numpy array of a framework value (CPU, zero-copy where it can); TypeError for a dtype
        numpy cannot hold."""

    @abstractmethod
    def _get_worker_name(self):
        """This process's worker name, smdebug's (``worker_0`` without distribution)."""

    @abstractmethod
    def _get_num_workers(self):
        """How many workers the training job has."""

    @abstractmethod
    def _get_default_collections(self):
        """The framework's built-in collection names (configured without regexes of their own)."""

    # ---- faults ------------------------------------------------------------------------------------
    def _stepped_aside(self):
        return self._disabled

    def _step_aside(self, message):
        self._fault(message)

    def _fault(self, message):
        """The first internal fault: logged once; the hook writes nothing more (what is published stays)."""
        if not self._faulted:
            self._faulted = True
            self.logger.error("vigil hook disabled, training goes on without it: %s", message)
        self._disabled = True
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close(False)
            except Exception:  # noqa: BLE001
                pass

    def _check_writer(self):
        for upload in self._uploads:
            upload.log_faults()
        if self._writer is not None:
            err = self._writer.error()
            if err is not None:
                self._fault("writing the trial failed: " + err)

    # ---- steps and modes -----------------------------------------------------------------------------
    @never_raises
    def set_mode(self, mode):
        """A ModeKeys, Vigil's or smdebug's own (by name and value)."""
        key = as_mode_key(mode)
        if key is None:
            raise misuse(SMDebugValueError("Invalid mode {}. Valid modes are {}.".format(
                mode, ",".join(m.name for m in ALLOWED_MODES))))
        self.mode = key
        if self._policy is not None:
            self._policy.set_mode(int(key))
            self._due = None

    @property
    def prepared_collections(self):
        return self._policy is not None

    @property
    def step(self):
        """The global step (smdebug's hook.step); init_step before the first."""
        return self._policy.step if self._policy is not None else self.init_step

    @property
    def mode_steps(self):
        """{mode: its step} (smdebug's hook.mode_steps)."""
        if self._policy is None:
            return {m: self.init_step for m in ModeKeys}
        return {m: self._policy.mode_step(int(m)) for m in ModeKeys}

    def _increment_step(self):
        self._take_due(self._policy.begin_step())  # one native call: the step and what is due at it
        self.written_tensor_name_for_step = {}

    def _set_step(self, step):
        """A step the framework numbers itself (an XGBoost round): the global and the mode step."""
        self._policy.set_step(step, step)
        self._due = None
        self.written_tensor_name_for_step = {}

    # ---- collections -----------------------------------------------------------------------------------
    def get_collection(self, name, create=True):
        self._sync_tensor_names()
        return self.collection_manager.get(name, create=create)

    def get_collections(self):
        self._sync_tensor_names()
        return self.collection_manager.get_collections()

    def add_collection(self, collection):
        self.collection_manager.add(collection)

    def _prepare_collections(self):
        """Hands the collections to the capture core (smdebug's _prepare_collections): the core
        completes each (a save configuration mode or reduction configuration not set explicitly is
        the hook's; scalar collections are saved raw, without histograms), and the Collection
        objects take the completed configuration back, as smdebug's are changed in place."""
        defaults = self._get_default_collections()
        collections = self.collection_manager.get_collections()
        for name, c in collections.items():
            if name not in defaults and not c.include_regex and not c.tensor_names:
                raise misuse(InvalidCollectionConfiguration(name))  # smdebug raises it into the loop
        given = {"collections": {name: _as_given(c) for name, c in collections.items()}, "_meta": {"num_workers": 1}}
        hook_defaults = {"reduction_config": self.reduction_config.to_json_dict(),
                         "save_config": self.save_config.to_json_dict()}
        policy = _vigil.CapturePolicy(json.dumps(given), list(self.include_collections), json.dumps(hook_defaults),
                                      self.init_step)
        policy.set_mode(int(self.mode))
        completed = json.loads(policy.collections_json(1))["collections"]
        for name, c in collections.items():
            done = completed[name]
            c.save_histogram = done["save_histogram"]
            c.reduction_config = ReductionConfig.from_dict(done["reduction_config"])
            c.save_config = SaveConfig.from_dict(done["save_config"])
        self._policy = policy
        self._due = None
        self._plans, self._plans_due = {}, None

    @property
    def tensor_to_collections(self):
        """{tensor name: the included Collection objects holding it} (smdebug's hook attribute)."""
        self._sync_tensor_names()
        included = [c for name, c in self.collection_manager.get_collections().items()
                    if CollectionKeys.ALL in self.include_collections or name in self.include_collections]
        out = {}
        for c in included:
            for tensor_name in c.tensor_names:
                out.setdefault(tensor_name, set()).add(c)
        return out

    def _get_collections_to_save_for_step(self):
        """The names of the included collections due at this step (asked of the core once per step
        and mode: the step, the mode and the core's collections change only where ``_due`` is reset)."""
        due = self._due
        return due if due is not None else self._take_due(self._policy.due_collections())

    def _take_due(self, due):
        self._due = due
        # A step that saves nothing asks no plan: the last saving step's stay for the next one (at
        # save_interval=100 they were made again, 97 native calls, every 100 steps)
        if due and due != self._plans_due:
            self._plans, self._plans_due = {}, due
        return due

    def _plan(self, tensor_name):
        """The core's plan for a tensor of the hook's own at this step (None: nothing of it is saved),
        asked once per name while the due collections stay the same: a plan is the due collections
        that hold the name (the core records it in them the first time), and what they save of it.
        Only save_tensor's join() changes which collections hold a name; it empties the cache."""
        if not self._get_collections_to_save_for_step():
            return None  # the plans kept are the last saving step's
        plans = self._plans
        try:
            return plans[tensor_name]
        except KeyError:
            plan = plans[tensor_name] = self._policy.plan(tensor_name, True)
            return plan

    def _sync_tensor_names(self):
        """The Collection objects list the names the core recorded in them."""
        if self._policy is None:
            return
        recorded = json.loads(self._policy.collections_json(1))["collections"]
        for name, c in self.collection_manager.get_collections().items():
            for tensor_name in recorded.get(name, {}).get("tensor_names", []):
                c.add_tensor_name(tensor_name)

    def export_collections(self):
        if not self._is_writing_worker():
            return
        num_workers = self._get_num_workers() if self.save_all_workers else 1
        self.collection_manager.set_num_workers(num_workers)
        self._sync_tensor_names()
        if self._ensure_writer():
            self._writer.publish_collections(json.dumps(self.collection_manager.to_json_dict()))

    # ---- writing -------------------------------------------------------------------------------------------
    def _is_writing_worker(self):
        if self.worker is None:
            self.worker = self._get_worker_name()
        return self.save_all_workers or self.worker == self.chief_worker

    def _ensure_writer(self):
        if self.dry_run or self._disabled or not self._is_writing_worker():
            return False
        if self._writer is None:
            num_workers = self._get_num_workers() if self.save_all_workers else 1
            self._writer = _vigil.QueuedWriter(self._local_out_dir, self.worker, num_workers, self._max_queue_bytes)
        return True

    @never_raises
    def _open_writer_now(self):
        """Creates the trial while the hook is made, as smdebug checks its out_dir then: a worker that
        starts saving late must not find the trial ended by a faster worker (the end marker)."""
        self._ensure_writer()

    def _initialize_writers(self):
        """Opens the current step in the trial. Before the first step (step -1) there is none to open."""
        if self._step_open or self.step < 0 or not self._ensure_writer():
            return
        self._writer.begin_step(self.step, int(self.mode), self._policy.mode_step(int(self.mode)))
        self._step_open = True

    def _close_writers(self, scalars_wait_for_a_saved_step=False):
        """Ends the current step: the scalars saved so far, then publication (on the writer thread).
        With ``scalars_wait_for_a_saved_step`` (PyTorch's step boundary: smdebug flushes there only a
        writer that is open) scalars wait while no step is open, and land in the next step that saves."""
        if self.dry_run:
            self.scalar_cache = []
            return
        if self._step_open or not scalars_wait_for_a_saved_step:
            self._write_scalars()
        if self._step_open:
            self._writer.end_step()
            self._step_open = False
        self._publish_shard_layouts()
        self._close_tb_writers()
        self._check_writer()

    # ---- sharded tensors (format/shard_layout.h) -------------------------------------------------------------
    def _shard_layout(self, value):
        """The layout entry (format/shard_layout.h: global_shape, offsets or flat_offset, shape) of a
        value that is this worker's shard of a larger tensor, else None. Frameworks with sharded
        tensors say (PyTorch: DTensor)."""
        return None

    def _note_shard_layout(self, tensor_name, tensor_value, layout=None):
        # Described only when every worker saves: with include_workers="one" the other shards are
        # not in the trial, and each saved shard reads as a tensor of its own.
        if not self.save_all_workers:
            return
        if layout is None:
            layout = self._shard_layout(tensor_value)
        if layout is not None and self._shard_layouts.get(tensor_name) != layout:
            self._shard_layouts[tensor_name] = layout
            self._shard_layouts_changed = True

    def _publish_shard_layouts(self):
        """shards/<worker>.json, written whole (renamed into place) when the step described a sharded
        tensor anew: where this worker's shard of each sits in the whole tensor, for Vigil's readers to
        put the shards together (smdebug's read each worker's shard as a tensor)."""
        if not self._shard_layouts_changed or self.worker is None:
            return
        self._shard_layouts_changed = False
        folder = os.path.join(self._local_out_dir, "shards")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, self.worker + ".json")
        text = json.dumps({"version": 1, "worker": self.worker, "tensors": dict(sorted(self._shard_layouts.items()))})
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)

    def _write_scalars(self):
        if self.step < 0:
            # Saved before the first step: they wait for it (smdebug writes them at step 0); a hook
            # closed before any step has nowhere to put them.
            if self._closed and self.scalar_cache:
                self.logger.warning("%d scalar(s) saved before the first step are not written: the hook "
                                    "closed before any step", len(self.scalar_cache))
                self.scalar_cache = []
            return
        for s in self.scalar_cache:
            tb = self._tb_writer(s.mode)
            if tb is not None and s.value.size == 1:
                tb.add_scalar(s.name, float(_vigil.as_float32(s.value).reshape(-1)[0]), self.step, s.timestamp)
            self._initialize_writers()
            self._write_raw_tensor_simple(s.name, s.value, wall_time=s.timestamp)
        self.scalar_cache = []

    def _write_raw_tensor_simple(self, tensor_name, tensor_value, save_shape=False, reductions=(), save_raw=True,
                                 wall_time=None):
        array = tensor_value if isinstance(tensor_value, np.ndarray) else self._make_numpy_array(tensor_value)
        if array.size == 0 and not save_shape:
            return  # smdebug writes nothing for zero-size values
        if self.dry_run or not self._step_open:
            return
        self._writer.write(tensor_name, array, save_shape, list(reductions) if array.size else [],
                           save_raw and array.size > 0, wall_time=wall_time)

    def _save_for_tensor(self, tensor_name, tensor_value, check_before_write=True, layout=None):
        """`layout`: where the value sits in a larger tensor, when the hook knows it rather than the
        value (format/shard_layout.h)."""
        plan = self._plan(tensor_name) if check_before_write else self._policy.plan(tensor_name, False)
        if plan is not None:
            self._write_for_tensor(tensor_name, tensor_value, plan, layout)

    def _write_for_tensor(self, tensor_name, tensor_value, plan, layout=None):
        """What the core planned (smdebug-format §6.2), in smdebug's order: histogram, shape,
        reductions, raw value, scalar summary."""
        try:
            array = self._make_numpy_array(tensor_value)
        except TypeError as e:  # a dtype numpy cannot hold: this tensor is skipped, the hook goes on
            if tensor_name not in self._unsaveable:
                self._unsaveable.add(tensor_name)
                self.logger.warning("%s is not saved: %s", tensor_name, e)
            return
        _, save_raw, save_shape, reductions, histogram_collection, scalar_summary = plan
        if array.dtype.kind in "USO":
            reductions = []
        tb = self._tb_writer(self.mode)
        # TensorBoard gets values: bfloat16 and float8 (raw bits here) as float32, exactly.
        values = _vigil.as_float32(array) if tb is not None and array.size else array
        if tb is not None and array.size:
            if histogram_collection is not None and values.dtype != np.bool_ and values.dtype.kind in "iuf":
                tb.add_histogram("{}/{}".format(histogram_collection, tensor_name), np.ascontiguousarray(values),
                                 self.step, time.time())
        self._write_raw_tensor_simple(tensor_name, array, save_shape, reductions, save_raw)
        self._note_shard_layout(tensor_name, tensor_value, layout)
        if tb is not None and scalar_summary and array.size == 1 and values.dtype.kind in "iufb":
            tb.add_scalar(tensor_name, float(values.reshape(-1)[0]), self.step, time.time())

    # ---- TensorBoard ---------------------------------------------------------------------------------------
    def _tb_writer(self, mode):
        if not self.tensorboard_dir or self.dry_run:
            return None
        tb = self._tb_writers.get(mode)
        if tb is None:
            tb = self._tb_writers[mode] = _vigil.TensorBoardWriter(self._local_tensorboard_dir, int(mode),
                                                                   max(self.step, 0))
        return tb

    def _close_tb_writers(self):
        writers, self._tb_writers = self._tb_writers, {}
        for tb in writers.values():
            tb.close()

    # ---- smdebug's public saving API ------------------------------------------------------------------------
    @never_raises
    def save_scalar(self, name, value, sm_metric=False, timestamp=None):
        """Saves ``scalar/<name>``, written when the step ends; its wall time is ``timestamp``, else
        the time of this call (smdebug's)."""
        val = np.array(self._make_numpy_array(value), copy=True)  # kept until its step is written
        if val.size != 1:
            raise misuse(SMDebugTypeError("{} has non scalar value of type: {}".format(
                self.SCALAR_PREFIX + name, type(value))))
        self.scalar_cache.append(_ScalarCache(self.SCALAR_PREFIX + name, val, self.mode,
                                              float(timestamp) if timestamp else time.time()))

    @never_raises
    def save_tensor(self, tensor_name, tensor_value, collections_to_write=CollectionKeys.DEFAULT):
        """Saves a tensor of the user's into the named collections. It is pending until the hook's
        next flush point (each framework hook says where: ``_save_custom_tensors_post_step``), and
        written there if the step then open saves anything, else dropped."""
        try:
            self._make_numpy_array(tensor_value)
        except TypeError as e:
            self.logger.warning("save_tensor(%s): %s; not saved", tensor_name, e)
            return
        if isinstance(collections_to_write, str):
            collections_to_write = [collections_to_write]
        self.custom_tensors_to_save[tensor_name] = (tensor_value, list(collections_to_write))
        self._custom_tensor_pending()

    def _custom_tensor_pending(self):
        """Called when save_tensor leaves a value pending: a framework hook that observes its flush
        points only when needed makes sure they are observed now."""

    def _save_custom_tensors_post_step(self):
        """A flush point: each pending value joins its collections and is written into the open
        step; with no step open (the step saves nothing) it is dropped, as smdebug drops it."""
        if not self.custom_tensors_to_save:
            return  # every gradient and module hook of a saving step calls this
        pending, self.custom_tensors_to_save = self.custom_tensors_to_save, {}
        for name, (value, coll_names) in pending.items():
            for c in coll_names:
                self.collection_manager.get(c).add_tensor_name(name)
            if self._policy is not None:
                self._plans, self._plans_due = {}, None  # the name's collections change
            if self._policy is not None and self._policy.join(name, coll_names):
                self._write_raw_tensor_simple(name, self._make_numpy_array(value))

    # ---- the end ---------------------------------------------------------------------------------------------
    def close(self):
        """Ends the last step, publishes the collections and (outside SageMaker) the end marker, then
        finishes the uploads of s3:// locations (also when a fault disabled the hook: what was
        published still goes up)."""
        if self._closed or self._disabled:
            self._closed = True
            self._finish_uploads()
            return
        try:
            self._closed = True
            self._close_writers()
            if not self.exported_collections:
                self.export_collections()
                self.exported_collections = True
            if self._writer is None and self._is_writing_worker() and not self.dry_run:
                self._ensure_writer()  # a run that saved nothing still leaves a readable, ended trial
            if self._writer is not None:
                err = self._writer.close(not is_sagemaker_job())
                self._writer = None
                if err is not None:
                    self._fault("writing the trial failed: " + err)
        except Exception as e:  # noqa: BLE001
            self._fault("close failed: {}: {}".format(type(e).__name__, e))
        self._finish_uploads()

    def _cleanup(self):
        """How smdebug's examples end training: close() (the framework hook's)."""
        self.close()

    def _atexit_close(self):
        if not self._closed:
            self.close()

    # ---- JSON configuration --------------------------------------------------------------------------------
    @classmethod
    def create_from_json_file(cls, json_file_path=None):
        """A hook from SageMaker's DebugHookConfig JSON (vigil/capture/hook_config.py): ``json_file_path``, else
        ``$SMDEBUG_CONFIG_FILE_PATH``, else /opt/ml/input/config/debughookconfig.json; None when no
        file is configured (or capture is disabled)."""
        return create_hook_from_json_config(cls, json_file_path)

    def __repr__(self):
        return "<{} out_dir={!r} step={} mode={} include_collections={}>".format(
            type(self).__name__, self.out_dir, self.step, self.mode.name, self.include_collections)


class CallbackHook(BaseHook):
    """The base of hooks driven by framework callbacks (smdebug's name for it)."""


def hook_singleton(make):
    """smdebug's get_hook / set_hook / del_hook for one framework's hooks: the hook made last, or with
    ``create_if_not_exists`` one ``make(json_config_path)`` creates from the JSON configuration."""
    current = [None]

    def get_hook(json_config_path=None, create_if_not_exists=False):
        if current[0] is None and create_if_not_exists:
            current[0] = make(json_config_path)
        return current[0]

    def set_hook(custom_hook):
        current[0] = custom_hook

    def del_hook():
        current[0] = None

    return get_hook, set_hook, del_hook


def _as_given(collection):
    """A collection's JSON form as configured: the save configuration modes it did not set itself
    are null, so that the core gives them the hook's (smdebug's merge_default_save_config)."""
    d = collection.to_json_dict()
    sc = collection.save_config
    if sc is not None:
        for mode in ModeKeys:
            if mode not in sc._explicit:
                d["save_config"][mode.name] = None
    return d


def _flat(x):
    if isinstance(x, (list, tuple, set)):
        for i in x:
            yield from _flat(i)
    else:
        yield x


def _tensorboard_dir(export_tensorboard, tensorboard_dir, out_dir):
    """smdebug-format §1.7: tensorboard_dir if given, else <out_dir>/tensorboard with export_tensorboard.
    In a SageMaker job the TensorBoardOutputConfig file decides."""
    if is_sagemaker_job():
        return tensorboard_dir_from_sagemaker()
    if tensorboard_dir is not None:
        return str(tensorboard_dir)
    if export_tensorboard:
        return os.path.join(out_dir, "tensorboard")
    return None


def _queue_budget():
    text = os.environ.get(QUEUE_ENV)
    if text is None:
        return DEFAULT_MAX_QUEUE_MB << 20
    try:
        mb = float(text)
        if mb <= 0:
            raise ValueError
    except ValueError:
        raise ValueError("{} must be a positive number of MiB, not {!r}".format(QUEUE_ENV, text)) from None
    return int(mb * (1 << 20))


__all__ = ["BaseHook", "CallbackHook", "hook_singleton", "never_raises"]
