"""Vigil in the torch 2.13 environment (`torch2_python`; torch, xgboost or pandas blocked where a test needs them absent): the hook never kills
the training it watches.

* The package imports without its optional frameworks, and smdebug's framework-hook modules behave
  as plain modules: pickle and inspect look names up on every module in ``sys.modules``, and
  inductor's cache keys are pickled that way (torch.compile died of smdebug.xgboost's lazy lookup).
* torch.compile under the hook, with inductor's FX-graph and AOT-autograd caches on; a compiled model
  (inductor, reduce-overhead, fullgraph) trains as without the hook, its weights, gradients and losses
  saved, with no compilation after the first saving and non-saving steps.
* FSDP2 (``fully_shard``) in two gloo processes: the hook steps aside (DTensor parameters), and every
  rank ends with exit status 0 and no Vigil thread left when its interpreter finalizes.

The scripts run in their own interpreter (torch 2.13) with the installed package alone on PYTHONPATH; the trials
are read here.
"""
import json
import os
import socket
import subprocess
import textwrap

import pytest

import vigil
from conftest import PYTHON_DIR
from real_readers import real_readers_agree  # noqa: F401 (a fixture)

# Every trial a test captures is read by the real smdebug 1.0.34 too, with Vigil's answers.
pytestmark = pytest.mark.usefixtures("real_readers_agree")

TIMEOUT_S = 300


def _env(**extra):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": PYTHON_DIR, "OMP_NUM_THREADS": "1",
           "HOME": os.environ.get("HOME", "/")}
    env.update(extra)
    return env


def _run(python, code, *args, cwd, **env):
    return subprocess.run([python, "-c", code, *map(str, args)], cwd=str(cwd), env=_env(**env),
                          capture_output=True, text=True, timeout=TIMEOUT_S)


# ---- importing without the optional frameworks -------------------------------------------------------

# Blocks the named top-level packages, so that the check holds even once the environment has them.
IMPORT_PRELUDE = """
    import importlib.abc, inspect, pickle, sys, types

    BLOCKED = set(sys.argv[1].split(","))

    class Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError("No module named {!r}".format(name), name=name)
            return None

    sys.meta_path.insert(0, Blocked())

    # A function without __module__: pickle finds its module by looking its name up on every module
    # in sys.modules (pickle.whichmodule), which only AttributeError may answer; inductor's cache-key
    # pickler does the same, and inspect.getmodule reads attributes of them all.
    def orphan():
        pass
    orphan.__module__ = None

    def plain_module_behaviour():
        assert pickle.loads(pickle.dumps(orphan)) is orphan
        assert inspect.getmodule(orphan) is None
        ours = [n for n in sys.modules if n.partition(".")[0] in ("smdebug", "vigil")]
        assert len(ours) > 30, ours
        for name in ours:
            module = sys.modules[name]
            try:
                getattr(module, "vigil_test_no_such_name")
            except AttributeError:
                pass
            else:
                raise AssertionError(name + " has vigil_test_no_such_name")
        plain = types.ModuleType("plain")
        for name in [n for n in sys.modules if n == "smdebug" or n.startswith("smdebug.")]:
            for m in (sys.modules[name], plain):  # modules do not pickle: the same refusal as a plain one
                try:
                    pickle.dumps(m)
                except TypeError as e:
                    refusal = str(e).replace("'plain'", "'x'")
                else:
                    raise AssertionError(name + " pickled")
            assert refusal == "cannot pickle 'module' object", (name, refusal)

    def import_fails(name, missing):
        try:
            __import__(name)
        except ModuleNotFoundError as e:
            assert e.name == missing, (name, e.name)
        else:
            raise AssertionError(name + " imported")
        assert name not in sys.modules  # nothing half-made is left behind
        parent, _, leaf = name.rpartition(".")
        assert not hasattr(sys.modules[parent], leaf)
"""


def test_vigil_and_compat_import_without_torch_xgboost_or_pandas(torch2_python, tmp_path):
    r = _run(torch2_python, textwrap.dedent(IMPORT_PRELUDE) + textwrap.dedent("""
        import vigil, vigil.compat
        assert not BLOCKED & set(sys.modules), BLOCKED & set(sys.modules)
        vigil.compat.install()
        import smdebug, smdebug.rules.rule, smdebug.trials, smdebug.profiler.analysis.utils.profiler_data_to_pandas
        assert smdebug.create_trial is vigil.create_trial
        plain_module_behaviour()
        import_fails("smdebug.xgboost", "xgboost")
        import_fails("smdebug.pytorch", "torch")
        plain_module_behaviour()
        assert not BLOCKED & set(sys.modules)
        print("ok")
    """), "torch,xgboost,pandas", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_vigil_pytorch_and_smdebug_pytorch_import_without_xgboost_or_pandas(torch2_python, tmp_path):
    r = _run(torch2_python, textwrap.dedent(IMPORT_PRELUDE) + textwrap.dedent("""
        import vigil, vigil.compat, vigil.pytorch
        vigil.compat.install()
        assert "smdebug.pytorch" not in sys.modules  # made when a script imports it, as smdebug's
        import smdebug.pytorch as smd
        assert smd.Hook is vigil.pytorch.Hook and smd.SaveConfig is vigil.pytorch.SaveConfig
        assert set(vigil.pytorch.__all__) <= set(vars(smd))
        assert pickle.loads(pickle.dumps(smd.Hook)) is vigil.pytorch.Hook
        from smdebug import pytorch
        assert pytorch is smd
        plain_module_behaviour()
        import_fails("smdebug.xgboost", "xgboost")
        plain_module_behaviour()
        vigil.compat.uninstall()
        assert not [n for n in sys.modules if n.startswith("smdebug")]
        try:
            import smdebug.pytorch
        except ModuleNotFoundError as e:  # uninstalled: no finder is left either
            assert e.name == "smdebug", e.name
        else:
            raise AssertionError("smdebug.pytorch imported after uninstall()")
        assert not BLOCKED & set(sys.modules)
        print("ok")
    """), "xgboost,pandas", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


# ---- torch.compile ---------------------------------------------------------------------------------------

COMPILE_SCRIPT = """
    import sys
    import vigil.compat
    vigil.compat.install()
    import smdebug.pytorch as smd
    import torch
    from torch._dynamo.utils import counters

    def main(out):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                        include_collections=["weights", "gradients", "losses"])
        hook.register_module(model)
        loss_fn = torch.nn.MSELoss()
        hook.register_loss(loss_fn)
        compiled = torch.compile(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            opt.zero_grad()
            loss = loss_fn(compiled(torch.randn(16, 4)), torch.randn(16, 1))
            loss.backward()
            opt.step()
        # The cache keys were computed: their pickling walked every module, smdebug's included.
        print("caches", counters["inductor"]["fxgraph_cache_miss"], counters["aot_autograd"]["autograd_cache_miss"])
        print("trained")

    main(sys.argv[1])
"""


def test_torch_compile_under_the_hook_with_inductors_caches(torch2_python, tmp_path):
    out = tmp_path / "trial"
    # A fresh cache folder: every graph misses, so every key is computed (and pickled); the caches are
    # forced on whatever the defaults; one compile thread keeps it to this process.
    r = _run(torch2_python, textwrap.dedent(COMPILE_SCRIPT), out, cwd=tmp_path,
             TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"), TORCHINDUCTOR_FX_GRAPH_CACHE="1",
             TORCHINDUCTOR_AUTOGRAD_CACHE="1", TORCHINDUCTOR_COMPILE_THREADS="1")
    assert r.returncode == 0, r.stderr
    assert "trained" in r.stdout, r.stdout
    # Both caches computed keys (a miss each at least): the pickling that met smdebug's modules ran.
    caches = [line.split()[1:] for line in r.stdout.splitlines() if line.startswith("caches ")]
    assert caches and len(caches[0]) == 2 and all(int(n) >= 1 for n in caches[0]), r.stdout
    assert "vigil hook disabled" not in r.stderr, r.stderr
    trial = vigil.create_trial(str(out))
    assert trial.steps() == [0, 1, 2]
    assert "MSELoss_output_0" in trial.tensor_names(collection="losses")


# A compiled model trained twice in one process: under the hook (registered before torch.compile, as
# scripts do, or the torch.compile wrapper after it), then, dynamo's caches reset, without it; the
# same seeds and batches. What the loop saw (the losses as float.hex, the parameters when each step
# began, the gradients after backward) and dynamo's counters after each step go to a JSON file.
# counters["frames"]["total"] counts every frame dynamo is asked to compile, recompiles and frames it
# gives up on included (ConvertFrame.__call__; fullgraph=True bypasses it), counters["stats"]
# ["unique_graphs"] every FX graph made, recompiled ones included: a step that adds to neither
# compiled nothing.
COMPILED_TRAINING_SCRIPT = """
    import json, sys
    import torch
    from torch._dynamo.utils import counters
    import vigil.pytorch as smd

    out, result_path, mode, interval, steps, register = sys.argv[1:7]
    interval, steps = int(interval), int(steps)
    options = {"default": {}, "fullgraph": {"fullgraph": True}}.get(mode, {"mode": mode})

    def train(hooked):
        torch._dynamo.reset()
        counters.clear()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        loss_fn = torch.nn.MSELoss()
        hook = None
        if hooked:
            hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=interval),
                            include_collections=["weights", "biases", "gradients", "losses"])
            if register == "model":
                hook.register_module(model)
        compiled = torch.compile(model, **options)
        if hooked and register == "compiled":  # the torch.compile wrapper itself
            hook.register_module(compiled)
        if hooked:
            hook.register_loss(loss_fn)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = torch.Generator().manual_seed(1)
        record = {"losses": [], "weights": [], "gradients": [], "frames": [], "graphs": []}
        for step in range(steps):
            x, y = torch.randn(16, 4, generator=data), torch.randn(16, 1, generator=data)
            record["weights"].append({n: p.detach().tolist() for n, p in model.named_parameters()})
            opt.zero_grad()
            loss = loss_fn(compiled(x), y)
            loss.backward()
            record["gradients"].append({n: p.grad.tolist() for n, p in model.named_parameters()})
            opt.step()
            record["losses"].append(loss.item().hex())
            record["frames"].append(counters["frames"]["total"])
            record["graphs"].append(counters["stats"]["unique_graphs"])
        record["graph_breaks"] = [reason.splitlines()[0] + " " + reason for reason, n in
                                  counters["graph_break"].items() for _ in range(n)]
        record["cudagraph_skips"] = counters["inductor"]["cudagraph_skips"]
        if hook is not None:
            hook.close()
        return record

    result = {"hooked": train(True), "plain": train(False)}
    with open(result_path, "w") as f:
        json.dump(result, f)
    print("trained")
"""


def _train_compiled(torch2_python, tmp_path, mode, interval, steps, register):
    out, result = tmp_path / "trial", tmp_path / "result.json"
    # One compile thread keeps inductor in this process; a fresh cache folder, so nothing is reused
    # from another test's graphs.
    r = _run(torch2_python, textwrap.dedent(COMPILED_TRAINING_SCRIPT), out, result, mode, interval, steps, register,
             cwd=tmp_path, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"), TORCHINDUCTOR_COMPILE_THREADS="1")
    assert r.returncode == 0, r.stderr
    assert "trained" in r.stdout, r.stdout + r.stderr
    assert "vigil hook disabled" not in r.stderr, r.stderr
    return out, json.loads(result.read_text()), r.stderr


@pytest.mark.parametrize("mode,interval,register", [("default", 3, "model"), ("reduce-overhead", 2, "model"),
                                                     ("default", 2, "compiled"), ("fullgraph", 3, "compiled")])
def test_a_compiled_model_trains_as_without_the_hook_and_saves_every_requested_step(
        torch2_python, tmp_path, mode, interval, register):
    """inductor (and reduce-overhead, which on the CPU skips CUDA graphs and compiles as the default
    mode does; and fullgraph=True, where the torch.compile wrapper is registered) under the hook: the same losses bit for bit as the same compiled training without it;
    weights, gradients and losses saved at every requested step with the values the loop saw; no
    compilation after the first saving step and the first step that saves nothing; the model's graph
    whole (the one graph break is the step boundary, before the forward) and the modules' outputs,
    which compiled code does not give, said to be missing once."""
    import numpy as np
    steps = 7
    out, result, stderr = _train_compiled(torch2_python, tmp_path, mode, interval, steps, register)
    hooked, plain = result["hooked"], result["plain"]
    assert hooked["losses"] == plain["losses"]
    assert len(set(hooked["losses"])) == steps  # it trained: every loss differs

    trial = vigil.create_trial(str(out))
    saved = list(range(0, steps, interval))
    assert trial.steps() == saved
    names = {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert set(trial.tensor_names()) == ({"Sequential_" + n for n in names} | {"gradient/Sequential_" + n for n in names}
                                         | {"MSELoss_output_0"})
    for step in saved:
        for n in names:
            weight = trial.tensor("Sequential_" + n).value(step)
            assert np.array_equal(weight, np.array(hooked["weights"][step][n], dtype=np.float32)), (step, n)
            gradient = trial.tensor("gradient/Sequential_" + n).value(step)
            assert np.array_equal(gradient, np.array(hooked["gradients"][step][n], dtype=np.float32)), (step, n)
        loss = trial.tensor("MSELoss_output_0").value(step)
        assert float(np.asarray(loss).reshape(-1)[0]) == float.fromhex(hooked["losses"][step]), step

    # Steps 0 (saving) and 1 (not) each compile their variant, one graph each (the modules' forward
    # hooks are attached on saving steps only, and dynamo guards on them); later steps reuse them.
    # (fullgraph=True compiles outside the frame counter: only its graphs are counted.)
    assert hooked["graphs"][:2] == [1, 2], hooked["graphs"]
    assert hooked["frames"][2:] == [hooked["frames"][1]] * (steps - 2), hooked["frames"]
    assert hooked["graphs"][2:] == [hooked["graphs"][1]] * (steps - 2), hooked["graphs"]
    # The model stays one graph in each variant: the only graph break is the step boundary's
    # (forward_pre_hook, run as Python), before the forward, never one inside Sequential's loop; none
    # where the torch.compile wrapper was registered (its own hooks run eagerly).
    if register == "model":
        assert hooked["graph_breaks"] and all("forward_pre_hook" in b for b in hooked["graph_breaks"]), \
            hooked["graph_breaks"]
    else:
        assert hooked["graph_breaks"] == []
    assert hooked["graphs"][-1] == 2 * plain["graphs"][-1], (hooked["graphs"], plain["graphs"])
    assert plain["graph_breaks"] == [] and plain["frames"][-1] == plain["frames"][0]
    if mode == "reduce-overhead":
        assert hooked["cudagraph_skips"] >= 1 and plain["cudagraph_skips"] >= 1  # no CUDA graphs on the CPU
    assert stderr.count("its modules' inputs and outputs are not saved from compiled code") == 1, stderr


COMPILED_OPTIMIZER_SCRIPT = """
    import json, os, sys, warnings
    out, root = sys.argv[1], sys.argv[2]
    with open(os.environ["SMPROFILER_CONFIG_PATH"], "w") as f:
        json.dump({"ProfilingParameters": {"ProfilerEnabled": True, "LocalPath": root}}, f)
    import torch
    import vigil.pytorch as smd

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    hook = smd.Hook(out_dir=out)
    assert "torch._dynamo" not in sys.modules  # the profiler does not load it (a second or more)
    # register_module does (the step boundary's hook runs as Python under torch.compile); so does the
    # optimizer's constructor below, with or without Vigil
    hook.register_module(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    step = torch.compile(opt.step, backend="eager")  # dynamo traces step() and the hooks torch calls there
    before = [p.detach().clone() for p in model.parameters()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(16, 4)).pow(2).mean().backward()
            step()
    hook.close()
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    print("warnings", json.dumps([str(w.message).splitlines()[0] for w in caught]))
    print("trained")
"""


def test_a_compiled_optimizer_step_is_recorded_without_tracing_into_the_profiler(torch2_python, tmp_path):
    """torch.compile(optimizer.step) after the hook was made: at the next step boundary the profiler's
    global optimizer step hooks are registered again to run as plain Python (torch.compiler.disable),
    so dynamo neither warns about them nor loses the events: one Optimizer event per step."""
    from vigil.profiler import LocalAlgorithmMetricsReader
    root = tmp_path / "profiler"
    r = _run(torch2_python, textwrap.dedent(COMPILED_OPTIMIZER_SCRIPT), tmp_path / "trial", root, cwd=tmp_path,
             SMPROFILER_CONFIG_PATH=str(tmp_path / "profilerconfig.json"))
    assert r.returncode == 0, r.stderr
    assert "trained" in r.stdout, r.stdout + r.stderr
    assert "vigil hook disabled" not in r.stderr and "vigil profiler stopped" not in r.stderr, r.stderr
    caught = json.loads([line for line in r.stdout.splitlines() if line.startswith("warnings ")][0][len("warnings "):])
    assert not [w for w in caught if "does not know how to trace" in w], caught
    events = LocalAlgorithmMetricsReader(str(root)).get_events(0, 2 ** 62)
    optimizer = [e for e in events if e.event_phase == "Optimizer"]
    assert [(e.event_name, e.event_args["step_num"]) for e in optimizer] == [("Adam.step", str(s)) for s in range(3)]


# ---- FSDP2 over two gloo processes --------------------------------------------------------------------

FSDP_SCRIPT = """
    import atexit, glob, json, os, sys, time

    def vigil_threads():
        names = []
        for comm in glob.glob("/proc/self/task/*/comm"):
            try:
                with open(comm) as f:
                    names.append(f.read().strip())
            except OSError:
                pass  # a thread that just ended
        return sorted(n for n in names if n.startswith("vigil-"))

    # Registered first, so it runs last: what is left when the interpreter goes on to finalize.
    atexit.register(lambda: print("vigil threads at exit:", json.dumps(vigil_threads()), flush=True))

    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    import vigil.capture.upload
    import vigil.compat
    vigil.compat.install()
    import smdebug.pytorch as smd

    out, bucket, expected_threads, order = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    # The out_dir counts as remote: the trial is staged and uploaded by the uploader's thread.
    vigil.capture.upload.is_remote = lambda location: str(location).startswith(bucket)

    def main():
        dist.init_process_group("gloo")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                        include_collections=["weights", "gradients", "losses"], include_workers="all")
        deadline = time.time() + 30  # each thread names itself once it runs
        while vigil_threads() != expected_threads and time.time() < deadline:
            time.sleep(0.01)
        print("vigil threads at start:", json.dumps(vigil_threads()), flush=True)
        if order == "hook_first":
            # smdebug's scripts register the model first: the hook's pre-hook then runs after FSDP's
            # (prepended), on the unsharded parameters, whose storage FSDP frees by resizing it
            hook.register_module(model)
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(model)
        if order == "shard_first":
            hook.register_module(model)
        loss_fn = torch.nn.MSELoss()
        hook.register_loss(loss_fn)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            opt.zero_grad()
            loss_fn(model(torch.randn(16, 4)), torch.randn(16, 1)).backward()
            opt.step()
        # torch 2.13's own exit race, with or without Vigil: a gloo worker that frees FSDP's last
        # all-reduce after the interpreter began to finalize aborts the process ("terminate called
        # without an active exception"). Waiting on a collective lets the worker finish first.
        dist.barrier()
        dist.destroy_process_group()
        print("trained", flush=True)

    main()
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("order", ["shard_first", "hook_first"])
def test_fsdp2_on_two_gloo_processes_every_rank_ends_cleanly(torch2_python, tmp_path, order):
    bucket = tmp_path / "bucket"
    out = bucket / "job"
    config = tmp_path / "profilerconfig.json"
    config.write_text('{"ProfilingParameters": {"ProfilerEnabled": true, "ProfilingIntervalInMilliseconds": 100, '
                      '"LocalPath": "%s"}}' % (tmp_path / "profiler"))
    port = str(_free_port())
    # The writer and the uploader on each rank, the system monitor on the machine's local rank 0.
    expected = {0: ["vigil-monitor", "vigil-upload", "vigil-writer"], 1: ["vigil-upload", "vigil-writer"]}
    procs = []
    for rank in (0, 1):
        env = _env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                   SMPROFILER_CONFIG_PATH=str(config), VIGIL_STAGING_DIR=str(tmp_path / "staging"))
        procs.append(subprocess.Popen([torch2_python, "-c", textwrap.dedent(FSDP_SCRIPT), str(out), str(bucket),
                                       json.dumps(expected[rank]), order],
                                      cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    results = []
    try:
        for p in procs:
            results.append(p.communicate(timeout=TIMEOUT_S))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for rank, (p, (stdout, stderr)) in enumerate(zip(procs, results)):
        assert p.returncode == 0, "rank {}: {}\n{}".format(rank, p.returncode, stderr)
        assert "trained" in stdout, stdout
        assert "terminate called" not in stderr, stderr
        assert stderr.count("vigil hook disabled") <= 1, stderr  # a fault is logged once
        threads = {k: json.loads(v) for k, v in (line.split(": ", 1) for line in stdout.splitlines()
                                                 if line.startswith("vigil threads"))}
        assert threads["vigil threads at start"] == expected[rank], (rank, threads)
        assert threads["vigil threads at exit"] == [], (rank, threads)
