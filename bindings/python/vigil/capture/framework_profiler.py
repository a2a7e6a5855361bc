"""The profiler side of the training hooks (smdebug's SageMaker profiler, format spec §8): when the
profiler config ($SMPROFILER_CONFIG_PATH) enables it, the C++ system monitor thread, framework trace
events (steps, forward and backward passes, data-loader fetches) through the C++ trace writer, and
cProfile stats for PythonProfilingConfig's window, and optimizer steps where torch has global optimizer
step hooks (2.0 and later). docs/profiler.md says what is recorded when.

Profiling must never harm training: every entry point is guarded; an internal fault is logged once
and the profiler steps aside (monitor stopped, files published, observers removed) while training,
and the hook's tensor capture, go on.
"""
import cProfile
import functools
import os
import re
import sys
import threading
import time
import weakref

from .. import _vigil
from .environment import is_sagemaker_job
from .guard import never_raises
from ..modes import ModeKeys

PYTHON_STATS_FILE = "python_stats"
OPTIMIZER_PHASE = "Optimizer"  # neither "Step" nor "cpu"/"gpu": the rules count it as a general phase
_MODE_NAMES = {1: "train", 2: "eval", 3: "predict", 4: "global"}
# How often a step boundary looks at the config file while nothing is on (no framework or Python
# profiling): smdebug reads it at every step, but there one stat and the native call around it cost
# 30-40 us of a step in the caches the model's kernels left cold, 0.7 % of a 5 ms step. Once per
# 50 ms, an update still takes effect at the next step of any step that long, and within 50 ms
# otherwise; it comes from another process (SageMaker's agent, a ConfigMap), never in step with the
# loop. While profiling is on, every step looks, as smdebug's. docs/profiler.md.
CONFIG_CHECK_INTERVAL_S = 0.05
_monotonic = time.monotonic  # the idle boundaries' clock (a test sets its own)
_TIMERS = {  # cProfileTimer -> the clock cProfile reads (None: cProfile's own default)
    "total_time": time.perf_counter,
    "cpu_time": time.process_time,
    "off_cpu_time": lambda: time.perf_counter() - time.process_time(),
    "default": None,
}


def _now_us():
    return time.time_ns() // 1000


class _Span:
    """An event being timed (smdebug's _TraceEventData): phase, name, start/end in µs, args."""
    __slots__ = ("training_phase", "op_name", "start_us", "end_us", "args")

    def __init__(self, training_phase, op_name, start_us, end_us, args):
        self.training_phase, self.op_name, self.start_us, self.end_us, self.args = (
            training_phase, op_name, start_us, end_us, args)

    # smdebug's attribute names, in seconds (Hook.log_trace_event takes these too)
    @property
    def start_time(self):
        return self.start_us / 1e6

    @property
    def end_time(self):
        return self.end_us / 1e6

    def as_record(self):
        return (self.training_phase, self.op_name, self.start_us, max(self.end_us - self.start_us, 0), self.args)


class FrameworkProfiler:
    """One hook's profiler. The hook calls step_start / forward_end / forward_pass_end / backward_seen
    from PyTorch's hooks and close() at the end; the data loaders report through observe_dataloaders."""

    def __init__(self, logger, framework="pytorch", rank=None, runs_system_monitor=True, config_path=None):
        self.logger = logger
        self.framework = framework
        self.rank = rank
        self.runs_system_monitor = runs_system_monitor
        self.stopped = False
        self.pid = os.getpid()
        self.config = None
        self.on_framework_change = None  # the hook's callback(enabled): attach or detach its observers
        self._watcher = _vigil.ProfilerConfigWatcher(config_path or _vigil.profiler_config_path_from_environment())
        self._next_idle_check = 0.0  # _monotonic() from which an idle step boundary looks at the file again
        self._refused = set()
        self._logged = set()
        self._monitor = None
        self._monitor_key = None
        self._writer = None
        self._writer_key = None
        self._node_id = None
        self._pending = []  # (phase, name, start_us, duration_us, args) written at the next step boundary
        self._framework_on = False
        self._dl_window = self._py_window = None
        self._dl_regex = None
        self._step = -1
        self._mode = 4
        self._mode_step = -1
        self._args = {}
        self._step_event = None
        self._forward_parent = None
        self._forward_children = []
        self._backward_parent = None
        self._backward_children = []
        self._cprofile = None  # (profile, start mode, step, phase, time_us)
        self._python_off = False
        self._observing_dataloaders = False
        self._lock = threading.Lock()  # data-loader fetches may come from another thread
        self._profiled_roots = set()  # the LocalPaths this profiler wrote into: marked ended at close
        self._monitored_roots = set()  # those where it ran the system monitor
        self._marked_end = False
        self._optimizer_handles = []  # torch's global optimizer step hooks, while framework profiling is on
        self._optimizer_starts = {}  # id(optimizer) -> start µs of the step running now
        self._optimizer_hooks_eager = False  # wrapped by torch.compiler.disable (_eager)
        self._hook_depth = threading.local()  # .n > 0 while torch runs one of them on this thread
        self._deferred_handles = []  # removed at the next safe point (release_deferred_hooks)
        self.refresh_config(initial=True)

    # ---- config ----------------------------------------------------------------------------------------
    @never_raises
    def refresh_config(self, initial=False):
        """Re-reads the config when the file changed (a stat otherwise); a refused file is logged once
        and the last good config stays."""
        try:
            changed = self._watcher.refresh()
        except Exception as e:  # noqa: BLE001 - a bad config file is the user's, not a fault
            text = str(e)
            if text not in self._refused:
                self._refused.add(text)
                self.logger.warning("profiler config %s refused, keeping the last good one: %s",
                                    self._watcher.path, text)
            changed = False
        if changed or initial:
            self._apply(self._watcher.current)

    def _apply(self, config):
        self.config = config
        if config.system_monitor_enabled or config.framework_profiling_enabled:
            self._profiled_roots.add(config.local_path)
        for problem in config.problems:
            self._log_once("profiler config: " + problem)
        self._apply_monitor(config)
        framework_on = config.framework_profiling_enabled
        key = (config.local_path, config.rotate_max_file_size_bytes, config.rotate_file_close_interval_s)
        if self._writer is not None and (not framework_on or key != self._writer_key):
            self._flush()
            self._close_writer()
        self._writer_key = key
        self._dl_window = _vigil.ProfilingWindow(config.dataloader) if config.dataloader.enabled else None
        self._dl_regex = re.compile(config.dataloader.metrics_regex, re.IGNORECASE) if self._dl_window else None
        self._py_window = None
        if config.python.enabled and framework_on:
            if config.python.profiler_name == "pyinstrument":
                self._log_once("PythonProfilingConfig asks for pyinstrument, which Vigil does not provide: "
                               "no Python profiling")
            else:
                self._py_window = _vigil.ProfilingWindow(config.python)
        if not framework_on or self._py_window is None:
            self._stop_cprofile("stepstart")
        if framework_on != self._framework_on:
            self._framework_on = framework_on
            if not framework_on:
                self._reset_spans()
            if self.on_framework_change is not None:
                self.on_framework_change(framework_on)
            self._observe_optimizers(framework_on)
        observe = framework_on and self._dl_window is not None
        if observe != self._observing_dataloaders:
            (_observers.add if observe else _observers.remove)(self)
            self._observing_dataloaders = observe

    def _apply_monitor(self, config):
        wanted = self.runs_system_monitor and config.system_monitor_enabled
        key = (config.local_path, config.interval_ms, config.rotate_max_file_size_bytes,
               config.rotate_file_close_interval_s)
        if self._monitor is not None and (not wanted or key != self._monitor_key):
            self._stop_monitor()
        if wanted and self._monitor is None:
            self._monitor = _vigil.SystemMonitor(config)
            self._monitor_key = key
            if not self._monitor.start():
                self._drain_monitor_log()
                self._monitor = None
            else:
                self._monitored_roots.add(config.local_path)

    def _stop_monitor(self):
        monitor, self._monitor = self._monitor, None
        if monitor is not None:
            monitor.stop()
            self._drain_monitor_log(monitor)

    def _drain_monitor_log(self, monitor=None):
        monitor = monitor or self._monitor
        if monitor is not None:
            for message in monitor.take_messages():
                self._log_once("system monitor: " + message)

    def _log_once(self, message):
        if message not in self._logged:
            self._logged.add(message)
            self.logger.warning("%s", message)

    @property
    def framework_on(self):
        return self._framework_on and not self.stopped

    @property
    def monitor(self):
        return self._monitor

    # ---- writing -------------------------------------------------------------------------------------------
    def _writer_now(self):
        if self._writer is None:
            if self._node_id is None:
                self._node_id = _vigil.this_process_node_id(self.rank)
            c = self.config
            self._writer = _vigil.TraceEventWriter(c.local_path, self._node_id,
                                                   rotate_max_file_size=c.rotate_max_file_size_bytes,
                                                   rotate_close_interval_s=int(c.rotate_file_close_interval_s))
        return self._writer

    def _flush(self):
        if not self._pending and self._writer is None:
            return  # nothing on (the default): no lock taken at every step boundary
        with self._lock:
            pending, self._pending = self._pending, []
        if pending and self._framework_on:
            self._writer_now().write_many(pending)
        elif self._writer is not None:
            self._writer.rotate_if_due(_now_us())

    def _close_writer(self):
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    @property
    def node_id(self):
        if self._node_id is None:
            self._node_id = _vigil.this_process_node_id(self.rank)
        return self._node_id

    # ---- steps, forward and backward (smdebug's PyTorch timeline) --------------------------------------
    @never_raises(default=False)
    def idle_step_start(self):
        """A step boundary while nothing but the config watch (and the system monitor) is on: no
        framework or Python profiling, no event pending, no trace file open, no hook to release. The
        monitor's messages are logged and the config looked at (at most every CONFIG_CHECK_INTERVAL_S),
        and nothing else (the step's numbers are not needed). False when something is on, or the
        config just turned something on: step_start then does the whole boundary. The hook's steps
        cost this alone when profiling is off (the default), at every step."""
        if (self._framework_on or self._py_window is not None or self._cprofile is not None or self._pending
                or self._writer is not None or self._deferred_handles):
            return False
        if self._monitor is not None:
            self._drain_monitor_log()
            if self._monitor.stepped_aside:
                self._monitor = None  # it stopped on its own (and logged why): nothing more to do
        now = _monotonic()
        if now < self._next_idle_check:
            return True
        self._next_idle_check = now + CONFIG_CHECK_INTERVAL_S
        self.refresh_config()
        return not self._framework_on and self._py_window is None

    @never_raises
    def step_start(self, mode, mode_step, global_step, module_name):
        """A step begins (the model's forward pre-hook): the last step's events are written, the config
        is checked, and the new step's Step and Forward spans open."""
        now = _now_us()
        if self._framework_on:
            self.log_outstanding_timeline_metrics()
        self._flush()
        self._drain_monitor_log()
        if self._monitor is not None and self._monitor.stepped_aside:
            self._monitor = None  # it stopped on its own (and logged why): nothing more to do
        self.refresh_config()
        self._optimizer_hooks_for_compile()
        self._step, self._mode, self._mode_step = global_step, int(mode), mode_step
        if self._py_window is not None:
            self._python_step_start(now)
        if not self._framework_on:
            return
        self._args = {"step_num": str(mode_step), "pid": self.pid}
        phase = "Step:ModeKeys." + ModeKeys(mode).name  # not str(): an IntEnum prints its value on 3.11
        self._step_event = _Span(phase, phase, now, now, self._args)
        self._forward_parent = _Span("Forward", module_name, now, now, self._args)

    def forward_end(self, module_name):
        """A module's forward pass ended: a Forward-SubModuleInternal span from the previous one's end."""
        if not self._framework_on or self.stopped:
            return
        try:
            now = _now_us()
            parent = self._forward_parent
            start = now
            if parent is not None:
                parent.end_us = now
                start = parent.start_us
            if self._step_event is not None:
                self._step_event.end_us = now
            if self._forward_children:
                start = self._forward_children[-1].end_us
            self._forward_children.append(_Span("Forward-SubModuleInternal", module_name, start, now, self._args))
        except Exception as e:  # noqa: BLE001
            self.step_aside("forward_end failed: {}: {}".format(type(e).__name__, e))

    def backward_seen(self, module_name):
        """A module's parameter gradients arrived: a Backward-SubModuleInternal span; the first one of a
        step closes the forward spans and opens Backward(post-forward)."""
        if not self._framework_on or self.stopped:
            return
        try:
            now = _now_us()
            start = now
            if self._forward_parent is not None:
                start = self._forward_parent.end_us
                self.log_outstanding_forward_stats_and_reset(log_step_event=False)
                if self._backward_parent is None:
                    self._backward_parent = _Span("Backward(post-forward)", module_name, start, now, self._args)
            if self._backward_parent is not None:
                self._backward_parent.end_us = now
            if self._step_event is not None:
                self._step_event.end_us = now
            if self._backward_children:
                start = self._backward_children[-1].end_us
            self._backward_children.append(_Span("Backward-SubModuleInternal", module_name, start, now, self._args))
        except Exception as e:  # noqa: BLE001
            self.step_aside("backward_seen failed: {}: {}".format(type(e).__name__, e))

    @never_raises
    def forward_pass_end(self):
        """The model's forward pass ended: the Python profile of this step is split here (smdebug's
        forwardpassend phase)."""
        if self._cprofile is not None:
            now = _now_us()
            self._stop_cprofile("forwardpassend", now)
            self._start_cprofile("forwardpassend", now)

    def log_trace_event(self, span):
        with self._lock:
            self._pending.append(span.as_record())

    def log_outstanding_forward_stats_and_reset(self, log_step_event=True):
        # smdebug skips the last child: it is the model itself, whose span the Forward one already is.
        for child in self._forward_children[:-1]:
            self.log_trace_event(child)
        if self._forward_parent is not None:
            self.log_trace_event(self._forward_parent)
        if log_step_event and self._step_event is not None:
            self.log_trace_event(self._step_event)
            self._step_event = None
        self.reset_forward_module_profile_stats()

    def log_outstanding_backward_stats_and_reset(self):
        for child in self._backward_children:
            self.log_trace_event(child)
        if self._backward_parent is not None:
            self.log_trace_event(self._backward_parent)
        self.reset_backward_module_profile_stats()

    def log_outstanding_timeline_metrics(self):
        self.log_outstanding_forward_stats_and_reset()
        self.log_outstanding_backward_stats_and_reset()

    def reset_forward_module_profile_stats(self):
        self._forward_parent = None
        self._forward_children = []

    def reset_backward_module_profile_stats(self):
        self._backward_parent = None
        self._backward_children = []

    def _reset_spans(self):
        self._step_event = None
        self.reset_forward_module_profile_stats()
        self.reset_backward_module_profile_stats()

    # ---- optimizer steps (torch >= 2.0) ----------------------------------------------------------------------
    def _observe_optimizers(self, on):
        """Registers (or removes) torch's global optimizer step hooks, which see every optimizer's
        step() in the process. Torch without them (1.13) records no optimizer events: optimizers are
        the user's objects and are never patched."""
        handles, self._optimizer_handles = self._optimizer_handles, []
        self._optimizer_starts = {}
        if self._in_optimizer_hook():
            # torch is iterating its hook table: removing (or adding) an entry now would raise out of
            # optimizer.step(). Only a fault inside one of these hooks gets here, and it turns them off.
            self._deferred_handles.extend(handles)
            return
        self.release_deferred_hooks()
        for h in handles:
            h.remove()
        if not on or self.framework != "pytorch":
            return
        register = _global_optimizer_step_hooks()
        if register is None:
            return
        register_pre, register_post = register
        ref = weakref.ref(self)  # torch's hook table must not keep a dropped profiler alive
        # Only once torch.compile's machinery is loaded: loading it here would cost a second or more.
        eager = _eager if "torch._dynamo" in sys.modules else (lambda fn: fn)

        def observer(method):
            def hook(optimizer, args, kwargs):
                profiler = ref()
                if profiler is not None:
                    depth = profiler._hook_depth
                    depth.n = getattr(depth, "n", 0) + 1
                    try:
                        getattr(profiler, method)(optimizer)
                    except Exception as e:  # noqa: BLE001 - torch would raise it out of optimizer.step()
                        _step_aside_quietly(profiler, "{} failed: {}: {}".format(method, type(e).__name__, e))
                    finally:
                        depth.n -= 1
                return None  # anything else would replace the step's arguments
            return eager(hook)

        self._optimizer_handles = [register_pre(observer("optimizer_step_start")),
                                   register_post(observer("optimizer_step_end"))]
        self._optimizer_hooks_eager = eager is _eager

    def _in_optimizer_hook(self):
        return getattr(self._hook_depth, "n", 0) > 0

    def _optimizer_hooks_for_compile(self):
        """At a step boundary: hooks registered before torch.compile was loaded are registered again,
        kept out of dynamo's tracing (a compiled step() would trace into them and warn)."""
        if self._optimizer_handles and not self._optimizer_hooks_eager and "torch._dynamo" in sys.modules:
            self._observe_optimizers(True)

    def release_deferred_hooks(self):
        """Removes the optimizer hooks a fault inside them turned off (they do nothing meanwhile). Called
        at the step boundary and at close, also after the profiler stepped aside; never raises."""
        if not self._deferred_handles or self._in_optimizer_hook():
            return
        handles, self._deferred_handles = self._deferred_handles, []
        for h in handles:
            try:
                h.remove()
            except Exception:  # noqa: BLE001
                pass

    def optimizer_step_start(self, optimizer):
        if not self._framework_on or self.stopped:
            return
        try:
            self._optimizer_starts[id(optimizer)] = _now_us()
        except Exception as e:  # noqa: BLE001 - never into optimizer.step()
            self.step_aside("optimizer_step_start failed: {}: {}".format(type(e).__name__, e))

    def optimizer_step_end(self, optimizer):
        """An optimizer's step() returned: one Optimizer event, `<OptimizerClass>.step`, in the step the
        hook is in (a step that raised has no end, and no event)."""
        if not self._framework_on or self.stopped:
            return
        try:
            now = _now_us()
            start = self._optimizer_starts.pop(id(optimizer), None)
            if start is None:
                return  # framework profiling began during this step()
            args = {"pid": self.pid}
            if self._step >= 0:
                args["step_num"] = str(self._mode_step)
            self.log_trace_event(_Span(OPTIMIZER_PHASE, type(optimizer).__name__ + ".step", start, now, args))
        except Exception as e:  # noqa: BLE001 - never into optimizer.step()
            self.step_aside("optimizer_step_end failed: {}: {}".format(type(e).__name__, e))

    # ---- data loaders --------------------------------------------------------------------------------------
    def should_save_dataloader_metrics(self, metrics_name):
        """smdebug's rule: the fetches during step N serve step N + 1, so the window is asked about it."""
        if self.stopped or not self._framework_on or self._dl_window is None:
            return False
        if not self._dl_regex.match(metrics_name):
            return False
        return self._dl_window.is_active(self._step + 1, time.time())

    def dataloader_iter_created(self, loader, iterator, start_us, end_us):
        try:
            name = type(iterator).__name__ + ".__init__"
            if self._framework_on and self._dl_regex is not None and self._dl_regex.match(name):
                args = {"pin_memory": bool(getattr(loader, "pin_memory", False)),
                        "num_workers": int(getattr(loader, "num_workers", 0)), "pid": self.pid}
                self.log_trace_event(_Span("DataLoaderIterInitialize", name, start_us, end_us, args))
        except Exception as e:  # noqa: BLE001
            self.step_aside("dataloader_iter_created failed: {}: {}".format(type(e).__name__, e))

    def dataloader_next(self, iterator, start_us, end_us):
        try:
            name = type(iterator).__name__ + "::GetNext"
            if self.should_save_dataloader_metrics(name):
                args = {"pid": self.pid, "tid": threading.get_ident(), "step_num": str(self._mode_step + 1)}
                self.log_trace_event(_Span("DataLoaderIter", name, start_us, end_us, args))
        except Exception as e:  # noqa: BLE001
            self.step_aside("dataloader_next failed: {}: {}".format(type(e).__name__, e))

    # ---- Python profiling (cProfile) ----------------------------------------------------------------------
    def _python_step_start(self, now):
        self._stop_cprofile("stepstart", now)
        if self._py_window is not None and self._py_window.is_active(self._step, now / 1e6):
            self._start_cprofile("stepstart", now)

    def _start_cprofile(self, phase, now):
        if self._python_off:
            return
        timer = _TIMERS.get(self.config.python.cprofile_timer, time.perf_counter)
        profile = cProfile.Profile(timer) if timer is not None else cProfile.Profile()
        try:
            profile.enable()
        except ValueError as e:  # another profiler holds the interpreter's hook: not ours to fight
            self._python_off = True
            self._log_once("Python profiling off: " + str(e))
            return
        self._cprofile = (profile, self._mode, self._step, phase, now)

    def _stop_cprofile(self, phase, now=None):
        running, self._cprofile = self._cprofile, None
        if running is None:
            return
        profile, mode, step, start_phase, start = running
        profile.disable()
        now = _now_us() if now is None else now
        folder = os.path.join(
            self.config.local_path, "framework", self.framework, "cprofile", self.node_id,
            "{}-{}-{}-{}_{}-{}-{}-{}".format(_MODE_NAMES.get(mode, "global"), step, start_phase, float(start),
                                             _MODE_NAMES.get(self._mode, "global"), self._step, phase, float(now)))
        os.makedirs(folder, exist_ok=True)
        profile.dump_stats(os.path.join(folder, PYTHON_STATS_FILE))

    # ---- the end ---------------------------------------------------------------------------------------------
    def close(self):
        """Writes what is outstanding, publishes the trace file, stops the monitor and the observers,
        then marks the end of training in the profiler output (also after the profiler stepped aside:
        the training did end, and the rules following the output must end with it)."""
        self.release_deferred_hooks()
        if not self.stopped:
            try:
                if self._framework_on:
                    self.log_outstanding_timeline_metrics()
                self._stop_cprofile("end")
                self._flush()
            except Exception as e:  # noqa: BLE001
                self.step_aside("close failed: {}: {}".format(type(e).__name__, e))
            else:
                self._teardown()
                self.stopped = True
        self._mark_training_ended()

    def _mark_training_ended(self):
        """<LocalPath>/framework/training_job_end.ts from every profiler that wrote there, and
        system/training_job_end.ts from the one that ran the monitor (format spec §8.6). In a SageMaker
        job the platform writes them (vigil train's supervisor), as the debug trial's marker."""
        if self._marked_end:
            return
        self._marked_end = True
        if is_sagemaker_job():
            return
        for root in sorted(self._profiled_roots):
            for folder in ("framework", "system") if root in self._monitored_roots else ("framework",):
                try:
                    _vigil.mark_profiler_training_ended(root, folder)
                except Exception as e:  # noqa: BLE001 - the training has ended; only the rules wait on
                    self._log_once("cannot mark the end of training in {}: {}: {}".format(
                        root, type(e).__name__, e))

    def _stepped_aside(self):
        return self.stopped

    def _step_aside(self, message):
        self.step_aside(message)

    def step_aside(self, message):
        """The first internal fault: logged once; profiling stops, what was published stays."""
        if not self.stopped:
            self.stopped = True
            self.logger.error("vigil profiler stopped, training goes on without it: %s", message)
        self._teardown()

    def _teardown(self):
        for step in (self._remove_observers, self._stop_monitor, self._close_writer, self._drop_cprofile):
            try:
                step()
            except Exception:  # noqa: BLE001 - already stepping aside; the rest must still happen
                pass

    def _remove_observers(self):
        try:
            self._observe_optimizers(False)
        finally:  # the other observers go whatever happened to those
            if self._observing_dataloaders:
                self._observing_dataloaders = False
                _observers.remove(self)
            if self._framework_on:
                self._framework_on = False
                if self.on_framework_change is not None:
                    self.on_framework_change(False)

    def _drop_cprofile(self):
        running, self._cprofile = self._cprofile, None
        if running is not None:
            running[0].disable()


class _DataLoaderObservers:
    """The profilers that want data-loader timings, and the one wrapping of torch's DataLoader that
    serves them all: DataLoader.__iter__ (public: creates each epoch's iterator) and
    _BaseDataLoaderIter.__next__ (every iterator class inherits it). Installed while any profiler
    observes, restored when the last one stops, and only if still ours (a later wrapper stays)."""

    def __init__(self):
        self.profilers = []
        self._saved = None

    def add(self, profiler):
        if profiler not in self.profilers:
            self.profilers.append(profiler)
        if self._saved is None:
            self._install()

    def remove(self, profiler):
        if profiler in self.profilers:
            self.profilers.remove(profiler)
        if not self.profilers and self._saved is not None:
            self._uninstall()

    def _install(self):
        from torch.utils.data import dataloader as dl
        loader_iter, base_next = dl.DataLoader.__iter__, dl._BaseDataLoaderIter.__next__
        observers = self

        @functools.wraps(loader_iter)
        def __iter__(loader):
            start = _now_us()
            iterator = loader_iter(loader)
            end = _now_us()
            for p in list(observers.profilers):
                p.dataloader_iter_created(loader, iterator, start, end)
            return iterator

        @functools.wraps(base_next)
        def __next__(iterator):
            start = _now_us()
            try:
                return base_next(iterator)  # its exceptions (StopIteration included) are the loader's
            finally:
                end = _now_us()
                for p in list(observers.profilers):
                    p.dataloader_next(iterator, start, end)

        __iter__.__vigil_wrapped__ = __next__.__vigil_wrapped__ = True
        dl.DataLoader.__iter__, dl._BaseDataLoaderIter.__next__ = __iter__, __next__
        # Worker processes: the multiprocessing iterator looks _worker_loop up when it starts them, so
        # a module-level wrapper (picklable by name, for spawn too) reaches every worker started now.
        from torch.utils.data._utils import worker as torch_worker
        worker_loop = torch_worker._worker_loop
        global _original_worker_loop
        _original_worker_loop = worker_loop
        torch_worker._worker_loop = _worker_loop_with_events
        self._saved = (dl, loader_iter, base_next, __iter__, __next__, torch_worker, worker_loop)

    def _uninstall(self):
        dl, loader_iter, base_next, ours_iter, ours_next, torch_worker, worker_loop = self._saved
        self._saved = None
        if dl.DataLoader.__iter__ is ours_iter:
            dl.DataLoader.__iter__ = loader_iter
        if dl._BaseDataLoaderIter.__next__ is ours_next:
            dl._BaseDataLoaderIter.__next__ = base_next
        if torch_worker._worker_loop is _worker_loop_with_events:
            torch_worker._worker_loop = worker_loop

    def worker_settings(self):
        """(LocalPath, rotation size, rotation interval) of the first profiler that records data-loader
        events now, for the worker processes started from here; None when none does."""
        for p in list(self.profilers):
            if p.framework_on and p.should_save_dataloader_metrics("DataLoaderWorker"):
                c = p.config
                return c.local_path, c.rotate_max_file_size_bytes, int(c.rotate_file_close_interval_s)
        return None

    @property
    def installed(self):
        return self._saved is not None


_observers = _DataLoaderObservers()
_original_worker_loop = None


def _worker_loop_with_events(*args, **kwargs):
    """torch's _worker_loop in a data-loader worker, recording each batch it fetches as a
    DataLoaderWorker event (args.pid: the worker's) in a trace file of its own, which the Dataloader
    rule counts (builtin-rules §3.9). Forked workers inherit the parent's settings; a spawned worker
    has none and runs the loop unobserved. Any fault here leaves the loop as torch wrote it."""
    loop = _original_worker_loop
    if loop is None:  # a spawned worker: the parent's wrapping is not in this process
        from torch.utils.data._utils import worker as torch_worker
        loop = torch_worker._worker_loop if torch_worker._worker_loop is not _worker_loop_with_events else None
    settings, writer, restore = None, None, []
    try:
        settings = _observers.worker_settings()
        if settings is not None:
            local_path, rotate_size, rotate_interval = settings
            writer = _vigil.TraceEventWriter(local_path, _vigil.this_process_node_id(None),
                                             rotate_max_file_size=rotate_size, rotate_close_interval_s=rotate_interval)
            restore = _observe_fetches(writer)
    except Exception:  # noqa: BLE001 - the worker must run whatever happens to its profiling
        writer = None
    try:
        return loop(*args, **kwargs)
    finally:
        try:
            for cls, fetch in restore:
                cls.fetch = fetch
            if writer is not None:
                writer.close()
        except Exception:  # noqa: BLE001
            pass


def _observe_fetches(writer):
    """Wraps the dataset fetchers of this (worker) process: each fetch becomes one event."""
    from torch.utils.data._utils import fetch as torch_fetch
    pid = os.getpid()
    restore = []
    for cls in (torch_fetch._MapDatasetFetcher, torch_fetch._IterableDatasetFetcher):
        original = cls.fetch

        def fetch(self, index, _original=original, _name=cls.__name__):
            start = _now_us()
            try:
                return _original(self, index)
            finally:
                end = _now_us()
                try:
                    writer.write_many([("DataLoaderWorker", _name + ".fetch", start, end - start,
                                        {"pid": pid, "worker_pid": pid})])
                except Exception:  # noqa: BLE001 - a lost event, never a lost batch
                    pass

        cls.fetch = fetch
        restore.append((cls, original))
    return restore


def _step_aside_quietly(profiler, message):
    try:
        profiler.step_aside(message)
    except Exception:  # noqa: BLE001 - nothing more to do from inside optimizer.step()
        pass


def _eager(fn):
    """`fn` run as plain Python under torch.compile (torch.compiler.disable, torch >= 2.1): a compiled
    optimizer step would otherwise trace into it and warn that it cannot trace time.time_ns. Loads
    torch._dynamo."""
    import torch
    compiler = getattr(torch, "compiler", None)
    disable = getattr(compiler, "disable", None)
    return disable(fn) if disable is not None else fn


def _global_optimizer_step_hooks():
    """(register_optimizer_step_pre_hook, register_optimizer_step_post_hook) of torch >= 2.0, else None."""
    try:
        from torch.optim import optimizer as torch_optimizer
    except ImportError:
        return None
    pre = getattr(torch_optimizer, "register_optimizer_step_pre_hook", None)
    post = getattr(torch_optimizer, "register_optimizer_step_post_hook", None)
    return (pre, post) if pre is not None and post is not None else None


def monitor_host():
    """Whether this process runs the host's system monitor: one per machine (system metrics are per host),
    the local rank 0 where a launcher sets LOCAL_RANK."""
    return os.environ.get("LOCAL_RANK", "0").strip() in ("", "0")


__all__ = ["FrameworkProfiler", "monitor_host", "PYTHON_STATS_FILE"]
