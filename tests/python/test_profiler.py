"""The profiler from Python: vigil.pytorch.Hook capturing system metrics and framework events under a
profiler config (format spec §8), read back with vigil.profiler's smdebug-named readers."""
import glob
import json
import logging
import os
import pstats
import re
import subprocess
import time

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data import dataloader as torch_dataloader

import vigil.pytorch as smd
from vigil import _vigil, compat
from vigil.capture import framework_profiler as _profiling
from vigil.profiler import (LocalAlgorithmMetricsReader, LocalSystemMetricsReader, PandasFrame, ProfilerTrial,
                            TimeUnits, TraceEvent, TraceEventParser, python_stats_folders)
from vigil.trials import create_trial
from real_readers import real_readers_agree  # noqa: F401 (a fixture)

# Every trial a test captures is read by the real smdebug 1.0.34 too, with Vigil's answers.
pytestmark = pytest.mark.usefixtures("real_readers_agree")
from torch_features import global_optimizer_step_hooks, tensor_hooks_run_for_autograd_grad


def write_config(path, root, interval=100, disable=False, dataloader=None, python=None, extra=None):
    params = {"ProfilerEnabled": True, "ProfilingIntervalInMilliseconds": interval, "LocalPath": str(root)}
    if dataloader is not None:
        params["DataloaderProfilingConfig"] = dataloader
    if python is not None:
        params["PythonProfilingConfig"] = python
    params.update(extra or {})
    tmp = str(path) + ".new"
    with open(tmp, "w") as f:
        json.dump({"ProfilingParameters": params, "DisableProfiler": disable}, f)
    os.replace(tmp, str(path))  # a new file, as SageMaker's update writes one


@pytest.fixture
def profiled(tmp_path, monkeypatch):
    """(config path, profiler root); $SMPROFILER_CONFIG_PATH points at the config."""
    cfg, root = tmp_path / "profilerconfig.json", tmp_path / "profiler"
    monkeypatch.setenv("SMPROFILER_CONFIG_PATH", str(cfg))
    return cfg, root


def train(tmp_path, steps=6, eval_steps=0, before_step=None, batch=8):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    crit = torch.nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    hook = smd.Hook(out_dir=str(tmp_path / "trial"))
    hook.register_module(model)
    hook.register_loss(crit)
    data = DataLoader(TensorDataset(torch.randn(steps * batch, 8), torch.randn(steps * batch, 1)),
                      batch_size=batch, num_workers=0)
    hook.set_mode(smd.modes.TRAIN)
    t0 = time.time()
    for i, (x, y) in enumerate(data):
        if before_step is not None:
            before_step(i, hook)
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
        time.sleep(0.01)  # a few monitor samples over the run
    hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        for _ in range(eval_steps):
            model(torch.randn(batch, 8))
    time.sleep(0.25)
    hook.close()
    return hook, t0, time.time()


def all_framework_events(root):
    return LocalAlgorithmMetricsReader(str(root)).get_events(0, time.time() * 1e6 + 1e9)


def steps_of(events, phase="Step:ModeKeys.TRAIN"):
    return [int(e.event_args["step_num"]) for e in events if e.event_phase == phase]


# ---- bindings ------------------------------------------------------------------------------------------

def test_the_config_binding_gives_every_parsed_field_and_refuses_a_bad_one():
    c = _vigil.parse_profiler_config(json.dumps({
        "ProfilingParameters": {"ProfilingIntervalInMilliseconds": 200, "LocalPath": "/x/Prof",
                                "RotateMaxFileSizeInBytes": 1000, "RotateFileCloseIntervalInSeconds": 5,
                                "DataloaderProfilingConfig": '{"StartStep": 3, "NumSteps": 2, "MetricsRegex": "get"}',
                                "PythonProfilingConfig": '{"StartStep": 1, "ProfilerName": "cprofile", '
                                                         '"cProfileTimer": "cpu_time"}'}}))
    assert (c.file_found, c.interval_ms, c.local_path) == (True, 200, "/x/Prof")
    assert (c.rotate_max_file_size_bytes, c.rotate_file_close_interval_s) == (1000, 5)
    assert c.framework_profiling_enabled and c.system_monitor_enabled
    assert (c.dataloader.enabled, c.dataloader.start_step, c.dataloader.num_steps, c.dataloader.metrics_regex) == (
        True, 3, 2, "get")
    assert (c.python.start_step, c.python.num_steps, c.python.cprofile_timer) == (1, 1, "cpu_time")
    assert not c.detailed.enabled and not c.python.is_time_range
    w = _vigil.ProfilingWindow(c.dataloader)
    assert [s for s in range(8) if w.is_active(s, time.time())] == [3, 4]
    with pytest.raises(Exception, match="ProfilingIntervalInMilliseconds"):
        _vigil.parse_profiler_config('{"ProfilingParameters": {"ProfilingIntervalInMilliseconds": 300}}')
    off = _vigil.parse_profiler_config('{"ProfilingParameters": {"LocalPath": "/p"}, "DisableProfiler": true}')
    assert not off.framework_profiling_enabled and not off.system_monitor_enabled


def test_the_trace_writer_binding_round_trips_through_the_reader(tmp_path):
    w = _vigil.TraceEventWriter(str(tmp_path), "7-algo-1", start_time_us=1_700_000_000_000_000)
    w.write("Step:ModeKeys.TRAIN", "Step:ModeKeys.TRAIN", 1_700_000_000_000_100, 50, {"step_num": "3", "pid": 11})
    w.write_many([("Forward", "Net", 1_700_000_000_000_110, 20, {"nested": {"a": [1, 2.5, None, True]}})])
    w.close()
    assert len(w.published) == 1 and w.published[0].endswith("_7-algo-1_pythontimeline.json")
    with open(os.path.join(str(tmp_path), w.published[0])) as f:
        assert isinstance(json.load(f), list)
    events = _vigil.read_trace_file(os.path.join(str(tmp_path), w.published[0]))
    assert [(e["phase"], e["name"], e["start_us"], e["end_us"], e["duration"]) for e in events] == [
        ("Step:ModeKeys.TRAIN", "Step:ModeKeys.TRAIN", 1_700_000_000_000_100, 1_700_000_000_000_150, 50),
        ("Forward", "Net", 1_700_000_000_000_110, 1_700_000_000_000_130, 20)]
    assert events[0]["pid"] == 11 and events[0]["args"] == {"step_num": "3", "pid": 11}
    assert events[1]["args"] == {"nested": {"a": [1, 2.5, None, True]}}
    assert {e["node_id"] for e in events} == {"algo-1-7"}  # the reader's rewrite of "<x>-algo-<n>" (§8.3)


# ---- capture -----------------------------------------------------------------------------------------------

def test_a_training_run_writes_system_metrics_and_framework_events(tmp_path, profiled):
    cfg, root = profiled
    write_config(cfg, root, dataloader='{"StartStep": 0, "NumSteps": 1000}')
    hook, t0, t1 = train(tmp_path, steps=6, eval_steps=2)
    node = _vigil.this_process_node_id(None)
    pid = os.getpid()

    traces = glob.glob(str(root / "framework" / "pevents" / "*" / ("*_" + node + "_pythontimeline.json")))
    assert traces, os.listdir(str(root))
    for t in traces:
        with open(t) as f:
            records = json.load(f)  # Chrome / Perfetto open a JSON array of records
        assert isinstance(records, list) and records[0]["ph"] == "M"
        assert all({"name", "ph", "pid"} <= set(r) for r in records)
    assert not glob.glob(str(root / "framework" / "*.tmp"))  # published at close

    events = all_framework_events(root)
    assert all(isinstance(e, TraceEvent) for e in events)
    for e in events:
        assert isinstance(e.start_time, int) and isinstance(e.end_time, int) and e.end_time >= e.start_time
        assert e.duration == e.end_time - e.start_time
        assert t0 * 1e6 - 1e6 <= e.start_time <= t1 * 1e6
        assert e.node_id == node and e.pid == pid and e.phase == "X" and e.file_type
    assert steps_of(events) == list(range(6))
    assert steps_of(events, "Step:ModeKeys.EVAL") == [0, 1]
    step_events = [e for e in events if e.event_phase == "Step:ModeKeys.TRAIN"]
    assert all(e.event_name == "Step:ModeKeys.TRAIN" for e in step_events)
    starts = [e.start_time for e in step_events]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    for s in range(6):
        in_step = [e for e in events if e.event_args.get("step_num") == str(s) and e.event_phase in (
            "Forward", "Forward-SubModuleInternal", "Backward-SubModuleInternal", "Backward(post-forward)")]
        phases = {e.event_phase for e in in_step}
        assert phases == {"Forward", "Forward-SubModuleInternal", "Backward-SubModuleInternal",
                          "Backward(post-forward)"}, (s, phases)
        assert {e.event_name for e in in_step if e.event_phase == "Forward-SubModuleInternal"} == {"0", "1", "2"}
        assert {e.event_name for e in in_step if e.event_phase == "Backward-SubModuleInternal"} == {"0", "2"}
        step = step_events[s]
        forward = [e for e in in_step if e.event_phase == "Forward"][0]
        backward = [e for e in in_step if e.event_phase == "Backward(post-forward)"][0]
        assert step.start_time <= forward.start_time <= forward.end_time <= backward.start_time
        assert backward.end_time <= step.end_time
        assert forward.event_name == "Sequential"

    fetches = [e for e in events if e.event_phase == "DataLoaderIter"]
    assert len(fetches) == 7  # six batches and the fetch that ends the epoch
    assert all(e.event_name == "_SingleProcessDataLoaderIter::GetNext" and e.event_args["pid"] == pid
               for e in fetches)
    assert [int(e.event_args["step_num"]) for e in fetches] == list(range(7))
    inits = [e for e in events if e.event_phase == "DataLoaderIterInitialize"]
    assert len(inits) == 1 and inits[0].event_name == "_SingleProcessDataLoaderIter.__init__"
    assert inits[0].event_args["pin_memory"] is False and inits[0].event_args["num_workers"] == 0

    system = LocalSystemMetricsReader(str(root)).get_events(t0 - 1, t1 + 1, unit=TimeUnits.SECONDS)
    assert system, os.listdir(str(root / "system"))
    for e in system:
        assert isinstance(e.type, str) and isinstance(e.name, str) and isinstance(e.dimension, str)
        assert isinstance(e.value, float) and isinstance(e.timestamp, float) and isinstance(e.node_id, str)
        # per host, not per process: the host part of the framework node id "<pid>-<host>"
        assert t0 - 1 <= e.timestamp <= t1 + 1 and e.node_id == node.split("-", 1)[1]
    assert {"CPUUtilization", "MemoryUsedPercent"} <= {e.dimension for e in system}
    cpu = [e for e in system if e.dimension == "CPUUtilization"]
    assert all(0.0 <= e.value <= 100.0 and re.fullmatch(r"cpu\d+", e.name) for e in cpu)
    # the data-loader patch is gone with the hook
    assert not getattr(torch_dataloader.DataLoader.__iter__, "__vigil_wrapped__", False)
    assert not getattr(torch_dataloader._BaseDataLoaderIter.__next__, "__vigil_wrapped__", False)
    # the debugger trial was written as without a profiler
    assert create_trial(str(tmp_path / "trial")).steps() != []


def registered_optimizer_hooks():
    tables = global_optimizer_step_hooks()
    return None if tables is None else tuple(len(t) for t in tables)


def test_each_optimizer_step_is_one_framework_event_where_torch_has_global_step_hooks(tmp_path, profiled):
    """torch >= 2.0: one `Optimizer` event `SGD.step` per optimizer.step(), in the step whose backward
    pass it follows, between that backward pass and the next step; the hooks are torch's global ones,
    registered while framework profiling is on and removed at close. Torch without them (1.13): no
    optimizer event, and no optimizer is touched."""
    cfg, root = profiled
    write_config(cfg, root)
    before = registered_optimizer_hooks()
    during = []
    sgd_step, optimizer_attributes = torch.optim.SGD.step, dict(vars(torch.optim.Optimizer))
    hook, t0, t1 = train(tmp_path, steps=6, before_step=lambda i, hook: during.append(registered_optimizer_hooks()))
    assert torch.optim.SGD.step is sgd_step and dict(vars(torch.optim.Optimizer)) == optimizer_attributes
    events = all_framework_events(root)
    optimizer = [e for e in events if e.event_phase == "Optimizer"]
    if before is None:
        assert optimizer == [] and during == [None] * 6
        return
    assert during == [(before[0] + 1, before[1] + 1)] * 6
    assert registered_optimizer_hooks() == before and hook._profiler._optimizer_handles == []
    assert len(optimizer) == 6
    assert all(e.event_name == "SGD.step" and e.event_args["pid"] == os.getpid() for e in optimizer)
    assert [int(e.event_args["step_num"]) for e in optimizer] == list(range(6))
    step_starts = sorted(e.start_time for e in events if e.event_phase == "Step:ModeKeys.TRAIN") + [t1 * 1e6]
    for s, e in enumerate(optimizer):
        backward = [b for b in events if b.event_phase == "Backward(post-forward)"
                    and b.event_args["step_num"] == str(s)]
        assert len(backward) == 1
        assert t0 * 1e6 <= backward[0].end_time <= e.start_time <= e.end_time <= step_starts[s + 1], s
        assert e.duration == e.end_time - e.start_time


def test_optimizer_events_stop_with_framework_profiling_and_each_optimizer_is_named(tmp_path, profiled):
    """Two optimizers, one per layer: an event each per step, named by class; a config update that
    disables the profiler removes the hooks at the next step boundary."""
    cfg, root = profiled
    write_config(cfg, root)
    before = registered_optimizer_hooks()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opts = [torch.optim.SGD(model[0].parameters(), lr=0.01), torch.optim.Adam(model[2].parameters(), lr=0.01)]
    hook = smd.Hook(out_dir=str(tmp_path / "trial"))
    hook.register_module(model)
    seen = []
    for i in range(5):
        if i == 3:
            write_config(cfg, root, disable=True)
        model(torch.randn(4, 8)).sum().backward()
        seen.append(registered_optimizer_hooks())
        for opt in opts:
            opt.step()
            opt.zero_grad()
    hook.close()
    optimizer = [(e.event_name, int(e.event_args["step_num"])) for e in all_framework_events(root)
                 if e.event_phase == "Optimizer"]
    if before is None:
        assert optimizer == []
        return
    assert sorted(optimizer) == sorted((n, s) for s in range(3) for n in ("SGD.step", "Adam.step"))
    assert seen == [(before[0] + 1, before[1] + 1)] * 3 + [before] * 2
    assert registered_optimizer_hooks() == before


def test_a_fault_in_the_optimizer_observer_never_reaches_the_optimizer(tmp_path, profiled, caplog):
    """A fault inside the profiler's optimizer hook (torch >= 2.0) is logged once and the profiler steps
    aside; optimizer.step() still steps, and the hooks are gone by the next step boundary (removing
    them inside torch's loop over its hook table would raise out of step() while another hook
    follows Vigil's there: the user's, below)."""
    cfg, root = profiled
    write_config(cfg, root)
    before = registered_optimizer_hooks()
    after_fault, weights, users_calls, users_handles = [], [], [], []

    def before_step(i, hook):
        if i == 0 and before is not None:  # after the profiler's own
            from torch.optim import optimizer as torch_optimizer
            users_handles.append(torch_optimizer.register_optimizer_step_pre_hook(
                lambda opt, args, kwargs: users_calls.append("pre")))
            users_handles.append(torch_optimizer.register_optimizer_step_post_hook(
                lambda opt, args, kwargs: users_calls.append("post")))
        if i == 3:
            hook._profiler._optimizer_starts = None  # a stand-in for any internal fault
        if i == 5:  # step 4's start was the first step boundary after the fault
            after_fault.append(registered_optimizer_hooks())
        if i in (3, 4):
            weights.append(hook._model[0].weight.detach().clone())

    try:
        with caplog.at_level(logging.WARNING, logger="vigil.hook"):
            hook, _, _ = train(tmp_path, steps=6, before_step=before_step)
    finally:
        for h in users_handles:
            h.remove()
    assert hook.step == 5 and not hook._disabled  # every step ran, tensor capture went on
    assert not torch.equal(weights[0], weights[1])  # the step whose hook failed still stepped
    optimizer = [int(e.event_args["step_num"]) for e in all_framework_events(root) if e.event_phase == "Optimizer"]
    stopped = [r.getMessage() for r in caplog.records if "vigil profiler stopped" in r.getMessage()]
    if before is None:
        assert optimizer == [] and stopped == []  # nothing observes optimizers: nothing to fail
        return
    assert len(stopped) == 1 and "optimizer_step_start failed" in stopped[0], stopped
    assert hook._profiler.stopped
    assert optimizer == [0, 1, 2]  # published at the step boundaries before the fault
    assert users_calls == ["pre", "post"] * 6  # the user's hooks ran at every step, the faulty one too
    assert after_fault == [(before[0] + 1, before[1] + 1)]  # the user's, still there; Vigil's removed
    assert registered_optimizer_hooks() == before


def test_an_optimizer_step_that_raises_gets_no_event_and_its_error_is_the_callers(tmp_path, profiled):
    cfg, root = profiled
    write_config(cfg, root)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.LBFGS(model.parameters())
    hook = smd.Hook(out_dir=str(tmp_path / "trial"))
    hook.register_module(model)
    x = torch.randn(8, 4)

    def closure():
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss

    def failing():
        raise ValueError("the user's own error")

    opt.step(closure)
    with pytest.raises(ValueError, match="the user's own error"):
        opt.step(failing)
    opt.step(closure)
    hook.close()
    events = all_framework_events(root)
    optimizer = [e for e in events if e.event_phase == "Optimizer"]
    if global_optimizer_step_hooks() is None:
        assert optimizer == []
        return
    assert [e.event_name for e in optimizer] == ["LBFGS.step", "LBFGS.step"]
    # LBFGS calls the model inside step(): each closure call is a step of its own
    assert not hook._profiler._optimizer_starts
    assert all(e.end_time >= e.start_time for e in optimizer)


def test_a_profiler_that_fails_to_start_leaves_no_process_wide_observer(tmp_path, profiled, monkeypatch, caplog):
    """The profiler registers torch's global optimizer hooks and wraps the data loaders when it is
    made; if the hook then fails to attach its module observers, those go with it."""
    cfg, root = profiled
    write_config(cfg, root, dataloader='{"StartStep": 0, "NumSteps": 10}')
    before = registered_optimizer_hooks()

    def broken(self, enabled):
        raise RuntimeError("cannot attach")

    monkeypatch.setattr(smd.Hook, "_profile_modules", broken)
    with caplog.at_level(logging.WARNING, logger="vigil.hook"):
        hook = smd.Hook(out_dir=str(tmp_path / "trial"))
    assert hook._profiler is None
    assert [r.getMessage() for r in caplog.records if "vigil profiler not started" in r.getMessage()]
    assert registered_optimizer_hooks() == before and not _profiling._observers.installed
    hook.close()


def test_backward_events_follow_the_parameters_tensor_hooks(tmp_path, profiled):
    """A module's backward pass is observed by a tensor hook on one of its parameters
    (Tensor.register_hook), not a post-accumulate-grad hook: a loop that takes its gradients with
    torch.autograd.grad (so .grad is never accumulated) has its backward events wherever torch runs
    tensor hooks for it (torch 2), and none where it does not (1.13). docs/capture.md says why."""
    cfg, root = profiled
    write_config(cfg, root)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    hook = smd.Hook(out_dir=str(tmp_path / "trial"))
    hook.register_module(model)
    params = list(model.parameters())
    for _ in range(3):
        grads = torch.autograd.grad(model(torch.randn(4, 8)).pow(2).mean(), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(0.01 * g)
    hook.close()
    assert all(p.grad is None for p in params)
    backward = [(e.event_name, int(e.event_args["step_num"])) for e in all_framework_events(root)
                if e.event_phase == "Backward-SubModuleInternal"]
    if tensor_hooks_run_for_autograd_grad():
        assert sorted(backward) == [(n, s) for n in ("0", "2") for s in range(3)]
    else:
        assert backward == []


def test_pandas_frame_and_the_profiler_trial_read_the_run(tmp_path, profiled):
    cfg, root = profiled
    write_config(cfg, root, dataloader='{"StartStep": 0, "NumSteps": 1000}')
    train(tmp_path, steps=5)
    pf = PandasFrame(str(root))
    fw = pf.get_all_framework_metrics()
    assert list(fw.columns) == ["start_time", "end_time", "start_time_us", "end_time_us", "tid", "pid",
                                "framework_metric", "step", "bytes", "process", "nodeID"]
    steps = fw[fw["process"] == "Step:ModeKeys.TRAIN"]
    assert sorted(steps["step"]) == [0, 1, 2, 3, 4]
    # relative to the first file's timestamp, as smdebug: a trace file is named by its last event, so
    # in a run shorter than the monitor's first file the events may start before it (negative)
    assert (fw["end_time_us"] >= fw["start_time_us"]).all()
    assert pf.start_time > 1.6e15 and ((fw["start_time_us"] + pf.start_time) > 1.6e15).all()
    sysdf = pf.get_all_system_metrics()
    assert list(sysdf.columns) == ["timestamp", "timestamp_us", "value", "system_metric", "dimension", "nodeID",
                                   "type"] and len(sysdf) > 0
    dl = pf.get_all_dataloader_metrics()
    assert set(dl["process"]) == {"DataLoaderIter", "DataLoaderIterInitialize"}
    init = dl[dl["process"] == "DataLoaderIterInitialize"]
    assert list(init["num_workers"]) == [0] and list(init["pin_memory"]) == [False]
    only_next = pf.get_all_dataloader_metrics(selected_framework_metrics=[".*DataLoaderIter::GetNext"])
    assert len(only_next) == 6 and (only_next["duration_us"] >= 0).all()
    _, by_step = pf.get_profiler_data_by_step(1, 2)
    assert set(by_step[by_step["process"] == "Step:ModeKeys.TRAIN"]["step"]) == {1, 2}
    step1 = steps[steps["step"] == 1].iloc[0]
    _, by_time = pf.get_profiler_data_by_time(step1["start_time_us"] + pf.start_time,
                                              step1["end_time_us"] + pf.start_time)
    assert 1 in set(by_time["step"]) and 3 not in set(by_time["step"])

    trial = create_trial(str(root), profiler=True)
    assert isinstance(trial, ProfilerTrial) and trial.job_finished()  # the hook closed: the run has ended
    first = trial.get_first_timestamp()
    assert first is not None and first == pf.start_time
    assert trial.get_latest_timestamp() >= first
    # From the epoch: a trace file is named by its last event, so when the first file is a trace file
    # (the system monitor's first one came later), the events before its name precede `first`.
    assert steps_of(trial.get_framework_metrics(0, time.time() * 1e6)) == [0, 1, 2, 3, 4]
    assert trial.get_system_metrics(first - 10**6, time.time() * 1e6)
    reader = LocalAlgorithmMetricsReader(str(root))
    assert steps_of(reader.get_events_by_step(1, 3)) == [1, 2]
    parsers = reader.get_all_event_parsers()
    assert parsers and all(isinstance(p, TraceEventParser) for p in parsers)
    assert sum(len(p.get_all_events()) for p in parsers) == len(all_framework_events(root))


def test_a_config_update_during_training_takes_effect(tmp_path, profiled, caplog):
    cfg, root = profiled
    write_config(cfg, root, interval=100)
    seen = {}

    def before(i, hook):
        if i == 2:
            seen["monitor"] = hook._profiler.monitor
            write_config(cfg, root, interval=200)  # the monitor restarts with the new interval
        if i == 3:
            seen["monitor_after"] = hook._profiler.monitor
            write_config(cfg, root, interval=300)  # refused: not an allowed interval
        if i == 5:
            seen["interval"] = hook._profiler.config.interval_ms
            write_config(cfg, root, interval=200, disable=True)

    with caplog.at_level(logging.WARNING, logger="vigil.hook"):
        hook, _, _ = train(tmp_path, steps=8, before_step=before)
    assert seen["monitor"] is not None and seen["monitor_after"] is not None
    assert seen["monitor_after"] is not seen["monitor"]
    assert seen["interval"] == 200  # the refused file left the last good config in force
    refused = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 1 and "ProfilingIntervalInMilliseconds" in refused[0].getMessage()
    # steps 0..4 were recorded; the update before step 5 switched framework events and the monitor off
    assert steps_of(all_framework_events(root)) == [0, 1, 2, 3, 4]
    assert hook._profiler.monitor is None


def test_python_profiling_writes_loadable_pstats_for_its_window(tmp_path, profiled):
    cfg, root = profiled
    write_config(cfg, root, python='{"StartStep": 2, "NumSteps": 2, "ProfilerName": "cprofile"}')
    train(tmp_path, steps=6)
    node = _vigil.this_process_node_id(None)
    folders = python_stats_folders(str(root))
    assert folders and {n for n, _, _ in folders} == {node}
    pattern = re.compile(r"train-(\d+)-(stepstart|forwardpassend)-([\d.]+)_train-(\d+)-(forwardpassend|stepstart)"
                         r"-([\d.]+)")
    starts = set()
    for _, name, stats_file in folders:
        m = pattern.fullmatch(name)
        assert m, name
        assert float(m.group(3)) <= float(m.group(6))
        starts.add(int(m.group(1)))
        stats = pstats.Stats(stats_file)
        assert stats.total_calls > 0
    assert starts == {2, 3}
    assert len(folders) == 4  # each step split at its forward pass end


def test_pyinstrument_is_logged_once_and_profiles_nothing(tmp_path, profiled, caplog):
    cfg, root = profiled
    write_config(cfg, root, python='{"StartStep": 0, "NumSteps": 3, "ProfilerName": "pyinstrument"}')
    with caplog.at_level(logging.WARNING, logger="vigil.hook"):
        train(tmp_path, steps=4)
    assert len([r for r in caplog.records if "pyinstrument" in r.getMessage()]) == 1
    assert python_stats_folders(str(root), profiler="pyinstrument") == []
    assert python_stats_folders(str(root)) == []
    assert steps_of(all_framework_events(root)) == [0, 1, 2, 3]


def test_the_dataloader_window_and_metrics_regex_are_honoured(tmp_path, profiled):
    cfg, root = profiled
    write_config(cfg, root, dataloader='{"StartStep": 2, "NumSteps": 2}')
    train(tmp_path, steps=6)
    fetches = [e for e in all_framework_events(root) if e.event_phase == "DataLoaderIter"]
    assert sorted(int(e.event_args["step_num"]) for e in fetches) == [2, 3]

    root2 = tmp_path / "profiler2"
    write_config(cfg, root2, dataloader='{"StartStep": 0, "NumSteps": 100, "MetricsRegex": "nothing-matches"}')
    train(tmp_path / "second", steps=4)
    events = all_framework_events(root2)
    assert steps_of(events) == [0, 1, 2, 3]
    assert not [e for e in events if e.event_phase.startswith("DataLoader")]


def test_a_config_written_while_training_runs_turns_profiling_on_at_the_next_step(tmp_path, profiled, monkeypatch):
    """No file at first: a step boundary then only looks for the config, at most every
    CONFIG_CHECK_INTERVAL_S; the boundary that finds it starts that step's framework events."""
    cfg, root = profiled
    seen, now = [], [1000.0]
    monkeypatch.setattr(_profiling, "_monotonic", lambda: now[0])

    def before(i, hook):
        seen.append(hook._profiler.framework_on)
        if i == 1:
            write_config(cfg, root)  # within the interval of step 0's look: not seen yet
        if i == 2:
            now[0] += _profiling.CONFIG_CHECK_INTERVAL_S

    train(tmp_path, steps=6, before_step=before)
    assert seen == [False, False, False, True, True, True]
    assert steps_of(all_framework_events(root)) == [2, 3, 4, 5]


def test_no_config_file_means_no_profiling_and_no_patch(tmp_path, monkeypatch):
    monkeypatch.setenv("SMPROFILER_CONFIG_PATH", str(tmp_path / "absent.json"))
    seen = []
    train(tmp_path, steps=3, before_step=lambda i, hook: seen.append(
        (hook._profiler.framework_on, hook._profiler.monitor, _profiling._observers.installed)))
    assert seen == [(False, None, False)] * 3
    assert not os.path.exists(str(tmp_path / "profiler"))


# ---- the end of training -----------------------------------------------------------------------------------

def test_a_finished_run_ends_the_profiler_rules_that_follow_it(tmp_path, profiled, vigil_exe):
    """The hook's close marks the profiler output ended (framework/ from the hook, system/ from the
    process that ran the monitor), so `vigil evaluate` following it finishes by itself, without
    --no-follow (it once waited until killed)."""
    cfg, root = profiled
    write_config(cfg, root, dataloader='{"StartStep": 0, "NumSteps": 100}')
    train(tmp_path, steps=6)
    assert (root / "framework" / "training_job_end.ts").is_file()
    assert (root / "system" / "training_job_end.ts").is_file()
    assert not (root / "training_job_end.ts").exists()  # the debugger's place, not the profiler's
    status = tmp_path / "status.json"
    started = time.monotonic()
    done = subprocess.run([vigil_exe, "evaluate", "--quiet", "--profiler-trial", str(root), "--rule", "Dataloader",
                           "--rule", "ProfilerReport", "--status-file", str(status)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60
    statuses = json.loads(status.read_text())["ProfilerRuleEvaluationStatuses"]
    assert {s["RuleConfigurationName"] for s in statuses} == {"Dataloader", "ProfilerReport"}
    for s in statuses:
        assert s["RuleEvaluationStatus"] in ("NoIssuesFound", "IssuesFound"), s
    assert (tmp_path / "ProfilerReport" / "profiler-output" / "profiler-report.html").is_file()


def test_in_a_sagemaker_job_the_platform_marks_the_end_not_the_hook(tmp_path, profiled, monkeypatch):
    """As for the debug trial's marker (format spec §1.5): with TRAINING_JOB_NAME set the hook leaves
    it to the platform (vigil train's supervisor writes both)."""
    cfg, root = profiled
    write_config(cfg, root)
    monkeypatch.setenv("TRAINING_JOB_NAME", "job-a")
    monkeypatch.setenv("SM_CURRENT_HOST", "algo-1")
    train(tmp_path, steps=3)
    assert list(root.rglob("training_job_end.ts")) == []


# ---- faults never reach training ---------------------------------------------------------------------------

def test_an_unwritable_local_path_stops_profiling_and_training_goes_on(tmp_path, profiled, caplog):
    cfg, _ = profiled
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    write_config(cfg, blocker / "profiler", dataloader='{"StartStep": 0, "NumSteps": 100}')
    with caplog.at_level(logging.WARNING, logger="vigil.hook"):
        hook, _, _ = train(tmp_path, steps=5)
    assert hook._profiler.stopped
    stopped = [r for r in caplog.records if "vigil profiler stopped" in r.getMessage()]
    assert len(stopped) == 1
    assert not _profiling._observers.installed
    assert len(create_trial(str(tmp_path / "trial")).steps()) > 0  # tensor capture went on


def test_a_fault_inside_the_profiler_mid_run_is_logged_once(tmp_path, profiled, caplog):
    cfg, root = profiled
    write_config(cfg, root, dataloader='{"StartStep": 0, "NumSteps": 100}')

    def before(i, hook):
        if i == 3:  # the profiler's writer breaks (a stand-in for any internal fault)
            hook._profiler._writer = object()

    with caplog.at_level(logging.WARNING, logger="vigil.hook"):
        hook, _, _ = train(tmp_path, steps=6, before_step=before)
    assert hook._profiler.stopped and not _profiling._observers.installed
    assert len([r for r in caplog.records if "vigil profiler stopped" in r.getMessage()]) == 1
    assert hook._profiler.monitor is None
    assert not hook._profile_handles


# ---- smdebug's names ---------------------------------------------------------------------------------------

def test_smdebug_profiler_imports_resolve_to_vigil(tmp_path):
    compat.install()
    try:
        from smdebug.profiler.algorithm_metrics_reader import LocalAlgorithmMetricsReader as A
        from smdebug.profiler.analysis.utils.profiler_data_to_pandas import PandasFrame as P
        from smdebug.profiler.profiler_constants import TimeUnits as U
        from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader as S
        from smdebug.profiler.trace_event_file_parser import TraceEventParser as T
        from smdebug.trials.utils import ProfilerTrial as PT
        assert (A, P, U, S, T, PT) == (LocalAlgorithmMetricsReader, PandasFrame, TimeUnits, LocalSystemMetricsReader,
                                       TraceEventParser, ProfilerTrial)
        parser = T()
        parser.read_events_from_json_data([
            {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 1000}},
            {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Forward"}},
            {"name": "op", "ph": "X", "pid": 1, "ts": 5, "dur": 7, "args": {"step_num": "2"}}], "node-1")
        [e] = parser.get_all_events()
        assert (e.start_time, e.end_time, e.duration, e.event_name, e.event_phase, e.node_id, e.event_args) == (
            1005, 1012, 7, "op", "Forward", "node-1", {"step_num": "2"})
        assert parser.get_events_within_time_range(1, 1.01, unit=U.MILLISECONDS) == [e]
        assert parser.get_events_within_time_range(1013, 2000) == []
        assert parser.get_process_info(1).name == "Forward"
    finally:
        compat.uninstall()
