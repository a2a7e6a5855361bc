"""The PyTorch hook behind ``vigil.pytorch``: smdebug's PyTorch hook (``smdebug.pytorch``), on public PyTorch extension
points only: a forward pre-hook on the registered model (a step begins), forward hooks on every
module and on the loss (inputs, outputs, losses), and tensor hooks on the parameters (gradients).

    import vigil.pytorch as smd
    hook = smd.Hook(out_dir="/tmp/run", save_config=smd.SaveConfig(save_interval=10),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    hook.register_loss(criterion)

Tensor names are smdebug's (smdebug-format §6.2): ``<ModelClass>_<param>`` for parameters,
``gradient/<ModelClass>_<param>``, ``<module path>_output_<i>`` / ``_input_<i>``, losses
``<LossClass>_output_0``, ``scalar/<name>`` for save_scalar. See docs/capture.md.
"""
import ctypes
import sys

import numpy as np
import torch
import torch.distributed as dist

from .. import _vigil
from . import device_staging as _staging
from . import framework_profiler as _profiling
from . import hook as _hook
from .hook import CallbackHook, hook_singleton, never_raises
from ..collection import Collection as _BaseCollection
from ..collection import CollectionKeys
from ..collection import CollectionManager as _BaseCollectionManager
from ..exceptions import SMDebugError
from ..modes import ModeKeys
from ..reduction_config import ReductionConfig
from ..save_config import SaveConfig, SaveConfigMode
from ..trials import create_trial

modes = ModeKeys
DEFAULT_INCLUDE_COLLECTIONS = [CollectionKeys.LOSSES]


class Collection(_BaseCollection):
    """smdebug.pytorch's Collection: also the modules whose inputs or outputs it saves."""

    def __init__(self, name, include_regex=None, tensor_names=None, reduction_config=None, save_config=None,
                 save_histogram=True):
        super().__init__(name, include_regex, tensor_names, reduction_config, save_config, save_histogram)
        self._modules = {}

    def add_module_tensors(self, module, inputs=False, outputs=True):
        self._modules[module] = (inputs, outputs)

    @property
    def modules(self):
        return self._modules


class CollectionManager(_BaseCollectionManager):
    """smdebug PyTorch's built-in collections and their regexes (smdebug-format §6.2)."""

    def __init__(self, collections=None, create_default=True):
        super().__init__(collections)
        if create_default:
            for name, regex in _vigil.pytorch_builtin_collections():
                c = self.get(name)
                if regex:
                    c.include(regex)

    def create_collection(self, name, cls=Collection):
        return super().create_collection(name, cls)


_BUILTIN = frozenset(name for name, _ in _vigil.pytorch_builtin_collections())


def _raw_bits(bits, element_type):
    """The dtype of the raw bits of a float numpy lacks, tagged with its element type's name: the
    writer stores them as that type (DT_BFLOAT16, DT_FLOAT8_E4M3FN, ...), bit for bit."""
    return np.dtype(bits, metadata={_vigil.ELEMENT_TYPE_METADATA_KEY: element_type})


# torch dtypes read in place (the rest go through Tensor.numpy()). bfloat16 and the float8 formats
# (torch >= 2.1) have no numpy dtype: they are read as their bits, tagged (_raw_bits).
_NUMPY_DTYPES = {torch.float64: np.dtype(np.float64), torch.float32: np.dtype(np.float32),
                 torch.float16: np.dtype(np.float16), torch.int64: np.dtype(np.int64),
                 torch.int32: np.dtype(np.int32), torch.int16: np.dtype(np.int16), torch.int8: np.dtype(np.int8),
                 torch.uint8: np.dtype(np.uint8), torch.bool: np.dtype(np.bool_),
                 torch.bfloat16: _raw_bits(np.uint16, "bfloat16")}
for _name in ("float8_e4m3fn", "float8_e5m2"):
    if hasattr(torch, _name):
        _NUMPY_DTYPES[getattr(torch, _name)] = _raw_bits(np.uint8, _name)


# The tensors the hook reads by address (Hook._save_for_tensor): exactly these types, not subclasses
# (DTensor, FSDP's flat parameters, other wrappers take the general path).
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)
_QueuedWriter = _vigil.QueuedWriter


def make_numpy_array(value):
    """A numpy view of a CPU tensor (a copy only for other devices), numpy arrays as they are, and
    Python scalars as 1-element arrays. bfloat16 and float8 tensors come as their raw bits, their
    dtype tagged with the element type (``_vigil.as_float32`` gives their values).

    A tensor is read in place through its address, not with Tensor.numpy(): that marks the tensor's
    storage as never resizable again, and FSDP frees its unsharded parameters by resizing their
    storage to 0, which then fails and ends the training. The view is for immediate use (the writer
    copies what it is given); a value kept for later is copied."""
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if type(t) is not torch.Tensor and hasattr(t, "to_local"):
            # A DTensor (tensor parallelism, FSDP2's sharded parameters and gradients): this rank's
            # shard, a plain tensor. docs/capture.md, "Sharded parameters".
            t = t.to_local()
        dtype = _NUMPY_DTYPES.get(t.dtype)
        if dtype is None or type(t) is not torch.Tensor:
            try:
                return t.numpy()
            except RuntimeError as e:  # another tensor subclass: that tensor is skipped, not the hook
                raise TypeError(str(e)) from None
        copied = not t.is_contiguous()
        if copied:
            t = t.contiguous()  # a copy with a storage of its own
        nbytes = t.numel() * t.element_size()
        if nbytes == 0:
            return np.empty(tuple(t.shape), dtype=dtype)
        buffer = (ctypes.c_byte * nbytes).from_address(t.data_ptr())
        if copied:
            buffer.owner = t  # the view holds the copy (the caller holds only the original)
        return np.frombuffer(buffer, dtype=dtype).reshape(tuple(t.shape))
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bool, int, float, np.generic)):
        return np.array([value])
    raise TypeError("cannot save a value of type {}".format(type(value).__name__))


def _fsdp_class(name):
    """A class of torch.distributed.fsdp (FSDPModule: the class fully_shard mixes into a module;
    FullyShardedDataParallel: FSDP1), or None. Looked up only where the script imported
    torch.distributed.fsdp (it does to shard a model): importing it here would cost time, and on
    torch 1.13 under Python 3.11 it fails (a dataclass torch 1.13 declares wrongly)."""
    fsdp = sys.modules.get("torch.distributed.fsdp")
    return getattr(fsdp, name, None) if fsdp is not None else None


def _is_fsdp2(module):
    cls = _fsdp_class("FSDPModule")
    return cls is not None and isinstance(module, cls)


def _is_fsdp1(module):
    cls = _fsdp_class("FullyShardedDataParallel")
    return cls is not None and isinstance(module, cls)


def _unwrapped_name(path):
    """A module or parameter path under an FSDP1 model as under the model it wraps."""
    return ".".join(part for part in path.split(".") if part != "_fsdp_wrapped_module")


def _fsdp1_pieces(root):
    """This rank's pieces of every parameter an FSDP1 model holds (FullyShardedDataParallel flattens
    a module's parameters into one flat parameter and gives each rank a contiguous chunk of it):
    (name under the unwrapped model, parameter shape, start of the piece in the row-major flattened
    parameter, piece (empty where the rank holds none of it), piece of the gradient or None). Read from torch 2's flat parameter metadata
    (_fqns, _shapes, _shard_param_infos); a torch without it gives nothing."""
    fsdp = _fsdp_class("FullyShardedDataParallel")
    for path, sub in root.named_modules():
        if not isinstance(sub, fsdp):
            continue
        flat = getattr(getattr(sub, "_handle", None), "flat_param", None)
        infos = getattr(flat, "_shard_param_infos", None)
        if flat is None or infos is None:
            continue
        data, grad = flat.detach(), flat.grad
        for fqn, shape, info in zip(flat._fqns, flat._shapes, infos):
            # A parameter this rank holds none of gives an empty run: every worker saves every
            # tensor at every step, as smdebug's readers expect of workers (collections, steps).
            begin, end, start = (info.offset_in_shard, info.offset_in_shard + info.numel_in_shard,
                                 info.intra_param_start_idx) if info.in_shard else (0, 0, 0)
            name = ((path + ".") if path else "") + fqn
            yield (_unwrapped_name(name), tuple(shape), start, data[begin:end],
                   None if grad is None else grad[begin:end])


def _class_name(module):
    """The module's class name, as smdebug names a model's tensors. fully_shard replaces a module's
    class by a subclass named FSDP<Class>, FSDP1 wraps it: the model's own class names its tensors,
    as unsharded."""
    if _is_fsdp1(module):
        return _class_name(module.module)
    cls = type(module)
    if _is_fsdp2(module):
        fsdp = _fsdp_class("FSDPModule")
        cls = next((c for c in cls.__mro__[1:] if c is not fsdp and not issubclass(c, fsdp)), cls)
    return cls.__name__


def _optimizer_step_pre_hook():
    """torch's global optimizer step pre-hook registration (torch >= 2.0), or None."""
    try:
        from torch.optim import optimizer as torch_optimizer
    except ImportError:
        return None
    return getattr(torch_optimizer, "register_optimizer_step_pre_hook", None)


def _run_as_python(fn):
    """`fn`, a module hook, made opaque to torch.compile (torch.compiler.disable, torch >= 2.1): dynamo
    calls it as plain Python, with a graph break around the call, and the module's inputs and outputs
    as real tensors, instead of tracing into Vigil's code (which graph-breaks at every C++ call, compiles
    Vigil's functions frame by frame, and runs the profiler's clock calls through dynamo's warnings).
    It costs about half a microsecond a call in eager mode, and loads torch._dynamo, which
    torch.optim's optimizers load anyway."""
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    return disable(fn) if disable is not None else fn


def _cuda_initialized():
    """Whether this process has initialised CUDA (a model or tensor on a GPU); False on a torch
    without CUDA."""
    cuda = getattr(torch, "cuda", None)
    return bool(cuda is not None and cuda.is_initialized() and cuda.is_available())


# torch.compiler.is_compiling (torch >= 2.3): True only while dynamo traces the code that asks.
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)


def _left_out_of_compiled_graphs(fn, on_eager_call=None):
    """`fn`, a forward hook of a module that may run inside a compiled region, as nothing there: dynamo
    traces the hook to a no-op (is_compiling() is constant-true while it traces), so the module's graph
    keeps no graph break for it (one inside a loop such as Sequential's would make dynamo give up on
    the whole frame, which then runs eagerly at every later step, saving or not). In eager code it
    runs `fn` (after `on_eager_call`), for about a third of a microsecond more a call."""
    def hook(module, inputs, outputs):
        if _is_compiling():
            return None
        if on_eager_call is not None:
            on_eager_call()
        return fn(module, inputs, outputs)
    return hook


def _drop_empty_hook_dicts(tensors):
    """A tensor whose last hook was removed keeps an empty hook dict, and autograd still calls into
    Python for it at every backward pass (~2 µs a parameter: 90 µs a step on the bench's model, on
    steps that save nothing, 1.8 % of its step); without the dict it calls nothing. Tensors with
    hooks of their own (the user's) are left as they are."""
    for t in tensors:
        try:
            hooks = t._backward_hooks
            if hooks is not None and not hooks:
                t._backward_hooks = None
        except Exception:  # noqa: BLE001 - a tensor type without the attribute keeps what it has
            pass


def _compiled_original(module):
    """The module a torch.compile(module) wrapper (OptimizedModule) compiles, else None: the hook
    observes the original, whose class and parameter names are the model's own."""
    inner = getattr(module, "_orig_mod", None)
    return inner if type(module).__name__ == "OptimizedModule" and isinstance(inner, torch.nn.Module) else None


class Hook(CallbackHook):
    """smdebug.pytorch.Hook, same constructor and methods."""

    def __init__(self, out_dir=None, export_tensorboard=False, tensorboard_dir=None, dry_run=False,
                 reduction_config=None, save_config=None, include_regex=None, include_collections=None,
                 save_all=False, include_workers="one"):
        super().__init__(CollectionManager(), DEFAULT_INCLUDE_COLLECTIONS, init_step=-1, out_dir=out_dir,
                         export_tensorboard=export_tensorboard, tensorboard_dir=tensorboard_dir, dry_run=dry_run,
                         reduction_config=reduction_config, save_config=save_config, include_regex=include_regex,
                         include_collections=include_collections, save_all=save_all,
                         include_workers=include_workers)
        self.module_maps = {}
        self.has_registered_module = False
        self.has_registered_loss_module = False
        self._handles = []  # for as long as the hook lives
        self._step_modules, self._step_params = [], []  # hooked only when needed (_sync_step_hooks)
        # {index in _step_modules: forward hook handle}, {index in _step_params: gradient hook handle}
        self._forward_handles, self._gradient_handles = {}, {}
        # (module, hook) of each registered loss, hooked on saving steps only, as the modules are
        self._loss_hooks, self._loss_handles = [], {}  # {index in _loss_hooks: handle}
        # The ids of the modules whose inputs and outputs the due collections all refused on a saving
        # step, with the plans they were refused by (the hook's _plans dict): unhooked while those last
        self._refused_modules, self._refused_for = set(), None
        self._profiled_modules = []  # (module, name): observed while framework profiling is on
        # The module hooks, made once (each registration of the same object keeps dynamo's guards on
        # the modules' hooks the same from one saving step to the next)
        self._forward_pre_hook_fn = self._forward_hook_fn = self._loss_hook_fn = self._fhook_fn = None
        # Module forward hooks that ran on this step: none on a saving step means the model ran in
        # compiled code, which does not give them its modules (said once: _note_compiled_modules)
        self._module_hook_calls = 0
        self._hooked_step = False
        self._told_compiled = False
        self._profile_handles = []
        self._profile_params = []  # the parameters _profile_handles hook
        self._profiler = None
        self._sharded_model = None  # an FSDP2 or FSDP1 model, once seen (_watch_sharded)
        self._sharded_handle = None  # its optimizer step pre-hook
        self._sharded_saved_step = None
        self._staging = None  # the writer with device values staged, once CUDA is in use (_initialize_writers)
        self._open_writer_now()  # torch.distributed is initialised by now: the worker is known
        self._start_profiler()
        set_hook(self)

    # ---- the profiler (vigil/capture/framework_profiler.py, docs/profiler.md) --------------------------------------------
    def _start_profiler(self):
        if self._disabled:
            return
        try:
            rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else None
            self._profiler = _profiling.FrameworkProfiler(self.logger, "pytorch", rank=rank,
                                                          runs_system_monitor=_profiling.monitor_host())
            self._profiler.on_framework_change = self._profile_modules
            self._profile_modules(self._profiler.framework_on)
        except Exception as e:  # noqa: BLE001 - a profiler that cannot start leaves training alone
            self.logger.error("vigil profiler not started, training goes on without it: %s: %s",
                              type(e).__name__, e)
            profiler, self._profiler = self._profiler, None
            if profiler is not None:  # its process-wide observers (data loaders, optimizer hooks) go too
                try:
                    profiler.stopped = True
                    profiler._teardown()
                except Exception:  # noqa: BLE001
                    pass

    def _profile_modules(self, enabled):
        """Attaches (or removes) the profiling observers: a forward hook on every module, a gradient
        hook on one parameter of each module that has its own, and the model's forward end."""
        handles, self._profile_handles = self._profile_handles, []
        for h in handles:
            h.remove()
        _drop_empty_hook_dicts(self._profile_params)
        self._profile_params = []
        if not enabled:
            return
        for module, name in self._profiled_modules:
            self._profile_handles.append(module.register_forward_hook(
                _left_out_of_compiled_graphs(self._profile_forward(name))))
            own = [p for p in module.parameters(recurse=False) if p.requires_grad]
            if own:
                self._profile_handles.append(own[0].register_hook(self._profile_backward(name)))
                self._profile_params.append(own[0])
        if getattr(self, "_model", None) is not None:
            if self._fhook_fn is None:
                self._fhook_fn = _left_out_of_compiled_graphs(self.fhook)
            self._profile_handles.append(self._model.register_forward_hook(self._fhook_fn))

    def _profile_forward(self, name):
        profiler = self._profiler

        def forward(module, inputs, outputs):
            profiler.forward_end(name)  # never raises
        return forward

    def _profile_backward(self, name):
        profiler = self._profiler

        def backward(grad):
            profiler.backward_seen(name)  # never raises
            return None
        return backward

    # smdebug's profiling methods, on the profiler's spans
    def fhook(self, module, inputs, outputs):
        """The model's forward pass ended (the Python profile is split here)."""
        if self._profiler is not None:
            self._profiler.forward_pass_end()

    def bhook(self, module, grad_input, grad_output):
        """A module's backward pass ended (smdebug's module backward hook; Vigil's own observer is a
        gradient hook, which leaves the module's outputs alone)."""
        if self._profiler is not None:
            self._profiler.backward_seen(self.module_maps.get(module, type(module).__name__))

    def log_trace_event(self, event):
        """Writes a span (``training_phase``, ``op_name``, ``start_time`` / ``end_time`` in seconds, and
        ``args`` or smdebug's ``kwargs``) at the next step boundary."""
        if self._profiler is not None and self._profiler.framework_on:
            args = getattr(event, "args", None) or getattr(event, "kwargs", None) or {}
            self._profiler.log_trace_event(_profiling._Span(
                event.training_phase, event.op_name, int(event.start_time * 1e6), int(event.end_time * 1e6),
                dict(args)))

    def record_trace_events(self, timestamp, training_phase="", op_name="", phase="X", duration=1, **kwargs):
        """smdebug's timeline call: a span from ``timestamp`` lasting ``duration`` (seconds), written at
        the next step boundary while framework profiling is on; ``kwargs`` are its args."""
        if self._profiler is not None and self._profiler.framework_on:
            start_us = int(timestamp * 1e6)
            self._profiler.log_trace_event(_profiling._Span(training_phase, op_name, start_us,
                                                            start_us + int(duration * 1e6), dict(kwargs)))

    def log_outstanding_forward_stats_and_reset(self, log_step_event=True):
        if self._profiler is not None:
            self._profiler.log_outstanding_forward_stats_and_reset(log_step_event)

    def log_outstanding_backward_stats_and_reset(self):
        if self._profiler is not None:
            self._profiler.log_outstanding_backward_stats_and_reset()

    def log_outstanding_timeline_metrics(self):
        if self._profiler is not None:
            self._profiler.log_outstanding_timeline_metrics()

    def reset_forward_module_profile_stats(self):
        if self._profiler is not None:
            self._profiler.reset_forward_module_profile_stats()

    def reset_backward_module_profile_stats(self):
        if self._profiler is not None:
            self._profiler.reset_backward_module_profile_stats()

    def should_save_dataloader_metrics(self, metrics_name):
        """Whether data-loader metrics named so are recorded now (DataloaderProfilingConfig's window
        for the next step, and its MetricsRegex)."""
        return self._profiler is not None and self._profiler.should_save_dataloader_metrics(metrics_name)

    # ---- what the base hook needs --------------------------------------------------------------------
    def _get_worker_name(self):
        if dist.is_available() and dist.is_initialized():
            return "worker_{}".format(dist.get_rank())
        return _hook.DEFAULT_WORKER_NAME

    def _get_num_workers(self):
        if dist.is_available() and dist.is_initialized():
            return dist.get_world_size()
        return 1

    def _get_default_collections(self):
        return _BUILTIN

    @staticmethod
    def _make_numpy_array(value):
        return make_numpy_array(value)

    # ---- device values (vigil/capture/device_staging.py, docs/capture.md "GPU capture") ------------------------
    @staticmethod
    def _device_copies():
        """The device side of staging when this process uses CUDA, else None (CPU values are copied
        into the writer's queue directly)."""
        return _staging.CudaCopies() if _cuda_initialized() else None

    def _initialize_writers(self):
        # Between steps (none is open): from the first saving step on which CUDA is in use, the
        # writer's steps go through the staging of device values.
        if self._staging is None and not self._step_open and self.step >= 0 and self._ensure_writer():
            copies = self._device_copies()
            if copies is not None:
                self._staging = self._writer = _staging.StagedWriter(
                    self._writer, copies, self._max_queue_bytes, self._max_queue_bytes, make_numpy_array)
        super()._initialize_writers()

    def _write_for_tensor(self, tensor_name, tensor_value, plan, layout=None):
        staging = self._staging
        if (staging is None or self._writer is not staging or not isinstance(tensor_value, torch.Tensor)
                or not staging.copies.handles(tensor_value) or self._tb_writer(self.mode) is not None):
            return super()._write_for_tensor(tensor_name, tensor_value, plan, layout)
        # A device value (TensorBoard, which needs the values now, takes the direct path)
        value = tensor_value.detach()
        if type(value) is not torch.Tensor and hasattr(value, "to_local"):
            value = value.to_local()  # a DTensor: this rank's shard
        if value.dtype not in _NUMPY_DTYPES or type(value) is not torch.Tensor:
            return super()._write_for_tensor(tensor_name, tensor_value, plan, layout)
        _, save_raw, save_shape, reductions, _, _ = plan
        size = value.numel()
        if (size or save_shape) and self._step_open and not self.dry_run:
            staging.write_device(tensor_name, value, save_shape, list(reductions) if size else [], save_raw and size > 0)
        self._note_shard_layout(tensor_name, tensor_value, layout)

    def _prepare_collections(self):
        # The modules become regexes first: a collection configured only by add_module_tensors is
        # configured (smdebug's order), so the base check must see the regexes.
        for c in self.collection_manager.get_collections().values():
            for module, (inputs, outputs) in getattr(c, "modules", {}).items():
                name = self.module_maps.get(module, type(module).__name__)
                if inputs:
                    c.include(name + self.INPUT_TENSOR_SUFFIX)
                if outputs:
                    c.include(name + self.OUTPUT_TENSOR_SUFFIX)
        super()._prepare_collections()

    # ---- registration ----------------------------------------------------------------------------------
    def register_module(self, module):
        """Hooks a model: a step begins at each forward call of `module`; every submodule's outputs,
        and the parameters' gradients, are offered to the collections."""
        if not isinstance(module, torch.nn.Module):
            raise SMDebugError("Module type {} must be type torch.nn.Module".format(type(module).__name__))
        if self._disabled:
            return
        wrapper, module = module, _compiled_original(module) or module
        self._make_module_hooks()
        top = _class_name(module)
        fsdp1 = _is_fsdp1(module)
        for name, sub in module.named_modules():
            if fsdp1:
                # FSDP1's wrappers are left out (the module each wraps gives the same outputs), and
                # the others are named as in the unwrapped model.
                name = _unwrapped_name(name)
                if _is_fsdp1(sub) or not name:
                    continue
            self.module_maps[sub] = name
        self.module_maps[module] = top
        if wrapper is not module:
            # A torch.compile wrapper calls its own hooks eagerly, then the compiled model: the step
            # boundary there costs the graph no break (and fullgraph=True allows none)
            self._handles.append(wrapper.register_forward_pre_hook(
                lambda _, inputs: self.forward_pre_hook(module, inputs)))
        else:
            # In compiled code too, where the model is compiled: a graph break before its forward
            self._handles.append(module.register_forward_pre_hook(self._forward_pre_hook_fn))
        # Forward hooks on every module and gradient hooks on every parameter make PyTorch call into
        # Python at each of them, so they are attached only while they can do something
        # (_sync_step_hooks).
        self._step_modules.extend(module.modules())
        if not fsdp1:  # FSDP1's flat parameters: their shards are saved at the optimizer step (_save_sharded)
            self._step_params.extend((top + "_" + name, p) for name, p in module.named_parameters() if p.requires_grad)
        if self.prepared_collections:  # a model registered mid-run: its hooks too, from now on
            self._detach_step_hooks()
            self._sync_step_hooks()
        self._model = module
        self._profiled_modules.extend((sub, self.module_maps[sub]) for sub in module.modules() if sub in self.module_maps)
        if self._profiler is not None:
            self._profile_modules(self._profiler.framework_on)
        self.has_registered_module = True

    def _make_module_hooks(self):
        if self._forward_hook_fn is None:
            self._forward_pre_hook_fn = _run_as_python(self.forward_pre_hook)
            self._forward_hook_fn = _left_out_of_compiled_graphs(self.forward_hook, self._count_module_hook_call)
            self._loss_hook_fn = _run_as_python(self.forward_hook)

    def _count_module_hook_call(self):
        self._module_hook_calls += 1

    def _note_compiled_modules(self):
        """At a step boundary: the last step attached the modules' forward hooks (it saved) and the
        model ran, yet none of them was called: the model runs under torch.compile, whose graphs do
        not give Vigil its modules' inputs and outputs. Said once; weights, gradients and losses are
        saved as ever."""
        if self._hooked_step and self._module_hook_calls == 0 and not self._told_compiled:
            self._told_compiled = True
            self.logger.warning("vigil: the model runs compiled (torch.compile): its modules' inputs and outputs "
                                "are not saved from compiled code; weights, gradients and losses are "
                                "(docs/capture.md, torch.compile)")

    def _sync_step_hooks(self):
        """Attaches the modules' forward hooks and the parameters' gradient hooks exactly while they
        can change what is written, so that every value lands where smdebug's hook (whose hooks are
        always attached) puts it:
          * a module's forward hook saves and flushes the pending save_tensor values only on a step
            that saves something (smdebug's returns at once on the others);
          * a gradient hook saves the gradient on such a step, and on every step flushes the pending
            values (into the open step, or dropping them), which matters only while some are pending.
        Called when a step begins, when the mode changes (the current step's answer may change) and
        when save_tensor leaves a value pending."""
        saving = self.prepared_collections and bool(self._get_collections_to_save_for_step())
        handles = self._forward_handles
        if not saving:
            self._remove(handles)
            self._remove(self._loss_handles)
        else:
            for i, (loss_module, fn) in enumerate(self._loss_hooks):
                if i not in self._loss_handles:
                    self._loss_handles[i] = loss_module.register_forward_hook(fn)
            refused = self._current_refusals()
            for i, m in enumerate(self._step_modules):
                # Pending save_tensor values need every module as a flush point, as in smdebug
                wanted = id(m) not in refused or bool(self.custom_tensors_to_save)
                if wanted and i not in handles:
                    handles[i] = m.register_forward_hook(self._forward_hook_fn)
                elif not wanted and i in handles:
                    handles.pop(i).remove()
        if not (saving or self.custom_tensors_to_save):
            self._detach_gradient_hooks()
        elif not self._gradient_handles:
            self._gradient_handles = {i: p.register_hook(self.backward_hook(name))
                                      for i, (name, p) in enumerate(self._step_params)}

    def _current_refusals(self):
        """The ids of the modules refused under the plans now in force (_step_modules keeps them alive): a
        module's forward hook costs PyTorch's call into Python and the hook's own ~8 µs on every
        saving step, for nothing where no due collection takes any of its inputs or outputs (weights
        and gradients only, say). Learnt on a saving step with every module hooked, forgotten when the
        plans are (the due collections change, or save_tensor's join changes what they hold)."""
        if self._refused_for is not self._plans:
            self._refused_modules, self._refused_for = set(), self._plans
        return self._refused_modules

    @staticmethod
    def _remove(handles):
        for h in handles.values():
            h.remove()
        handles.clear()

    def _detach_gradient_hooks(self):
        if self._gradient_handles:
            self._remove(self._gradient_handles)
            _drop_empty_hook_dicts(p for _, p in self._step_params)

    def _detach_step_hooks(self):
        self._remove(self._forward_handles)
        self._remove(self._loss_handles)
        self._detach_gradient_hooks()

    def _custom_tensor_pending(self):
        if self.prepared_collections and (not self._gradient_handles or self._refused_modules):
            self._sync_step_hooks()

    @never_raises
    def set_mode(self, mode):
        super().set_mode(mode)
        if not self._disabled and self.prepared_collections:
            self._sync_step_hooks()

    register_hook = register_module  # smdebug's name for the zero-code-change patches

    def register_loss(self, loss_module):
        """Hooks a loss module (``criterion = nn.CrossEntropyLoss()``): its output is saved as
        ``<LossClass>_output_0`` (collection losses)."""
        if not isinstance(loss_module, torch.nn.Module):
            # smdebug's class for it (its assert); a module that is not a _Loss is taken, where
            # smdebug refuses it (docs/compatibility.md)
            raise AssertionError("loss_module={} must be a torch.nn.Module".format(loss_module))
        if self._disabled:
            return
        wrapper, loss_module = loss_module, _compiled_original(loss_module) or loss_module
        self._make_module_hooks()
        self.module_maps[loss_module] = type(loss_module).__name__
        if wrapper is not loss_module:  # outside the compiled loss, as for a compiled model
            self._loss_hooks.append((wrapper, lambda _, inputs, outputs: self.forward_hook(loss_module, inputs, outputs)))
        else:
            # In compiled code too (a graph break after the loss), where the loss is computed there
            self._loss_hooks.append((loss_module, self._loss_hook_fn))
        if self.prepared_collections:  # registered mid-run: hooked from this step on if it saves
            self._sync_step_hooks()
        self.has_registered_loss_module = True

    # ---- the hooks PyTorch calls ---------------------------------------------------------------------
    def _last_step_left_nothing(self):
        """At a step boundary: the step that ends saved nothing and left nothing to see to (no step
        open, no scalar or save_tensor value waiting, no module, loss or gradient hook attached, no
        TensorBoard writer, shard layout or upload). Such a boundary only counts the step, unless the
        new step saves: at save_interval=100 it is the hook's whole cost on 99 steps in 100. The writer's
        errors are then looked at by the next saving step's boundary, before it writes anything."""
        return (self._policy is not None and not self._step_open and not self.scalar_cache
                and not self.custom_tensors_to_save and not self._hooked_step and not self._forward_handles
                and not self._loss_handles and not self._gradient_handles and not self._tb_writers
                and not self._shard_layouts_changed and not self._uploads)

    @never_raises
    def forward_pre_hook(self, module, inputs):
        quiet = self._last_step_left_nothing()
        profiler = self._profiler
        if profiler is not None and not profiler.idle_step_start():  # the step boundary: never raises
            profiler.release_deferred_hooks()
            mode_step = self._policy.mode_step(int(self.mode)) if self._policy is not None else self.init_step
            profiler.step_start(self.mode, mode_step + 1, self.step + 1,
                                self.module_maps.get(module, type(module).__name__))
        if not quiet:
            self._close_writers(scalars_wait_for_a_saved_step=True)
            if not self.prepared_collections:
                self._prepare_collections()
            self._note_compiled_modules()
        self._increment_step()
        # No flush here (smdebug's pre-hook has none): values pending from the last step wait for
        # this step's first module or gradient hook.
        saving = bool(self._get_collections_to_save_for_step())
        if saving:
            self._initialize_writers()
            if _is_fsdp2(module) or _is_fsdp1(module):
                # The parameters are all-gathered copies, or flat chunks, now: the shards are saved at
                # the optimizer step.
                self._watch_sharded(module)
            else:
                prefix = _class_name(module) + "_"
                for name, param in module.named_parameters():
                    self._save_for_tensor(prefix + name, param)
        if saving or not quiet:  # a quiet step that saves nothing has no hook to attach or remove
            self._sync_step_hooks()
            self._hooked_step, self._module_hook_calls = bool(self._forward_handles), 0
        if self.last_saved_step is not None and not self.exported_collections:
            self.export_collections()
            self.exported_collections = True

    # ---- sharded tensors: where this rank's shard sits (hook.py, _note_shard_layout) ------------------------
    def _shard_layout(self, value):
        """A DTensor's layout (format/shard_layout.h): its global shape, this rank's offsets in it and
        its shard's shape. Shard(d) splits d as torch.chunk
        does (chunks of ceil(size / n)); Replicate leaves it whole. A Partial value (shards to be summed)
        and a mesh that shards one dimension twice are not described: their shards read as tensors of
        their own."""
        if type(value) is torch.Tensor or not hasattr(value, "to_local") or not hasattr(value, "placements"):
            return None
        mesh = value.device_mesh
        coordinate = mesh.get_coordinate()
        if coordinate is None:
            return None  # this rank holds none of it
        shape, offsets, split = tuple(value.shape), [0] * value.dim(), set()
        for mesh_dim, placement in enumerate(value.placements):
            if placement.is_partial():
                return None  # shards to be summed, not put together: each reads as its own tensor
            if placement.is_shard():
                dim = placement.dim % value.dim()
                if dim in split:
                    return None
                split.add(dim)
                chunk = -(-shape[dim] // mesh.size(mesh_dim))
                offsets[dim] = min(coordinate[mesh_dim] * chunk, shape[dim])
        return {"global_shape": list(shape), "offsets": list(offsets), "shape": list(value.to_local().shape)}

    # ---- FSDP2: parameters and gradients as each rank's shard -------------------------------------------
    def _watch_sharded(self, module):
        """An FSDP2 model (fully_shard) holds each parameter as a DTensor shard outside its forward and
        sets the shards' gradients itself after the backward pass (reduce-scattered: the gradient of
        the whole batch across ranks), so no tensor hook sees them. FSDP1 (FullyShardedDataParallel)
        does the same with a flat chunk of each module's parameters. Both are saved, as each rank's
        shard, when the step's optimizer step begins: the parameters have not moved yet."""
        self._sharded_model = module
        if self._sharded_handle is None:
            register = _optimizer_step_pre_hook()
            if register is None:
                return
            self._sharded_handle = register(self._sharded_optimizer_step)

    def _sharded_optimizer_step(self, optimizer, args, kwargs):
        self._save_sharded()
        return None

    @never_raises
    def _save_sharded(self):
        module = self._sharded_model
        if module is None or not self.prepared_collections or self._sharded_saved_step == self.step:
            return  # once per step, whatever the number of optimizers
        if not self._get_collections_to_save_for_step():
            return
        self._sharded_saved_step = self.step
        top = _class_name(module)
        if _is_fsdp1(module):
            for name, shape, start, piece, grad in _fsdp1_pieces(module):
                layout = {"global_shape": list(shape), "flat_offset": start, "shape": [piece.numel()]}
                self._save_for_tensor(top + "_" + name, piece, layout=layout)
                if grad is not None:
                    self._save_for_tensor(self.GRADIENT_PREFIX + top + "_" + name, grad, layout=layout)
            return
        for name, param in module.named_parameters():
            self._save_for_tensor(top + "_" + name, param.detach())
            if param.grad is not None:
                self._save_for_tensor(self.GRADIENT_PREFIX + top + "_" + name, param.grad)

    @never_raises
    def forward_hook(self, module, inputs, outputs):
        """Every module's, the loss module's too: on a step that saves, its inputs and outputs, then
        the pending save_tensor values (a flush point)."""
        if not self.prepared_collections or not self._get_collections_to_save_for_step():
            return
        name = self.module_maps.get(module)
        if name is None:
            return
        written = self.written_tensor_name_for_step
        keys = (name + self.INPUT_TENSOR_SUFFIX, name + self.OUTPUT_TENSOR_SUFFIX)
        first = [written.get(key, 0) for key in keys]
        self._write_inputs(name, inputs)
        self._write_outputs(name, outputs)
        if self._refused_for is self._plans:
            # Each offered name's plan is in _plans now (None: refused by every due collection)
            offered = [key + str(i) for key, b in zip(keys, first) for i in range(b, written.get(key, 0))]
            if offered and all(self._plans.get(n) is None for n in offered):
                self._refused_modules.add(id(module))
        self._save_custom_tensors_post_step()
        self.last_saved_step = self.step

    def backward_hook(self, tname):
        name = self.GRADIENT_PREFIX + tname

        def back(grad):
            self._on_gradient(name, grad)
            return None  # the gradient is left as it is
        return back

    @never_raises
    def _on_gradient(self, name, grad):
        """A parameter's gradient (`name`: gradient/<param>): saved on a step that saves, then the
        pending save_tensor values are flushed (on any step)."""
        if self._policy is None:
            return
        if grad is not None and self._get_collections_to_save_for_step():
            self._save_for_tensor(name, grad)
        self._save_custom_tensors_post_step()

    def _save_for_tensor(self, tensor_name, tensor_value, check_before_write=True, layout=None):
        """A plain CPU tensor in C order goes to the writer by its address (one native call: no numpy
        view, no detach); anything else (a device value, a tensor subclass, a dtype numpy lacks, a
        strided view, TensorBoard on) takes the general path (_write_for_tensor)."""
        plan = self._plan(tensor_name) if check_before_write else self._policy.plan(tensor_name, False)
        if plan is None:
            return
        writer, t = self._writer, tensor_value
        if (layout is None and type(writer) is _QueuedWriter and self._step_open and not self.tensorboard_dir
                and type(t) in _PLAIN_TENSORS and t.is_cpu):
            dtype = _NUMPY_DTYPES.get(t.dtype)
            if dtype is not None and t.is_contiguous():
                writer.write_address(tensor_name, t.data_ptr(), t.shape, dtype, plan[2], plan[3], plan[1])
                return
        self._write_for_tensor(tensor_name, tensor_value, plan, layout)

    @never_raises
    def record_tensor_value(self, tensor_name, tensor_value):
        """Saves a value computed outside any module, e.g. ``F.mse_loss(...)``, as an output."""
        if not isinstance(tensor_value, torch.Tensor):
            raise TypeError("tensor_value={} must be torch.Tensor".format(tensor_value))
        if self.prepared_collections and self._get_collections_to_save_for_step():
            self._write_outputs(tensor_name, tensor_value)

    def _write(self, module_name, var, suffix, idx):
        if isinstance(var, torch.Tensor):
            self._save_for_tensor(module_name + suffix + str(idx), var)
            return idx + 1
        if isinstance(var, (tuple, list)):
            for v in var:
                idx = self._write(module_name, v, suffix, idx)
        return idx

    def _write_inputs(self, name, inputs):
        key = name + self.INPUT_TENSOR_SUFFIX
        self.written_tensor_name_for_step[key] = self._write(
            name, inputs, self.INPUT_TENSOR_SUFFIX, self.written_tensor_name_for_step.get(key, 0))

    def _write_outputs(self, name, outputs):
        key = name + self.OUTPUT_TENSOR_SUFFIX
        self.written_tensor_name_for_step[key] = self._write(
            name, outputs, self.OUTPUT_TENSOR_SUFFIX, self.written_tensor_name_for_step.get(key, 0))

    @staticmethod
    def count_parameters(model):
        return sum(p.numel() for p in model.parameters() if p.requires_grad)

    def close(self):
        super().close()
        if self._profiler is not None:
            self._profiler.close()
            self._profile_modules(False)
        self._detach_step_hooks()
        for h in self._handles:
            h.remove()
        self._handles = []
        if self._sharded_handle is not None:
            self._sharded_handle.remove()
            self._sharded_handle = None


# smdebug's hook singleton (Hook() sets it).
get_hook, set_hook, del_hook = hook_singleton(lambda path: Hook.create_from_json_file(path))


__all__ = ["Hook", "Collection", "CollectionKeys", "CollectionManager", "ReductionConfig", "SaveConfig",
           "SaveConfigMode", "modes", "create_trial", "get_hook", "set_hook", "del_hook"]
