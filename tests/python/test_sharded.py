"""Sharded parameters under the PyTorch hook (issue 32, item 3), on 2 gloo
processes: FSDP2 (`fully_shard`), FSDP1 (`FullyShardedDataParallel`, flat runs) and a tensor-parallel model (DTensor parameters: Shard(0), Shard(1),
Replicate) train with the hook on, and each worker saves its own shard of every weight and gradient;
a DTensor no longer turns the hook off (it did: `.numpy()` refuses tensor subclasses). Each worker
describes its shards (shards/<worker>.json), and Vigil's trial answers for the whole tensor where no
worker is named: its value put together, its reductions the whole's (docs/capture.md)."""
import json
import os
import socket
import subprocess
import textwrap

import numpy as np
import pytest

import vigil
from vigil.exceptions import TensorUnavailableForStep
from conftest import PYTHON_DIR
from real_readers import real_readers_agree  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("real_readers_agree")

TIMEOUT_S = 300

TP_SCRIPT = """
    import json, sys
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    import vigil.pytorch as smd

    out = sys.argv[1]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    mesh = init_device_mesh("cpu", (2,))
    # 0.weight, 0.bias: Shard(0); 2.weight: Shard(1); 2.bias: Replicate().
    model = parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "biases", "gradients", "losses"], include_workers="all")
    hook.register_module(model)
    loss_fn = torch.nn.MSELoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = []
    for step in range(2):
        torch.manual_seed(100 + step)  # the same batch on both ranks
        x, y = torch.randn(3, 4), torch.randn(3, 2)
        weights = {n: p.to_local().tolist() for n, p in model.named_parameters()}
        placements = {n: str(p.placements[0]) for n, p in model.named_parameters()}
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        grads = {n: p.grad.to_local().tolist() for n, p in model.named_parameters()}
        seen.append({"weights": weights, "grads": grads, "placements": placements})
        opt.step()
    hook.close()
    print("seen " + json.dumps(seen), flush=True)
    # torch 2.13's own exit race (test_torch2.py): a gloo worker that frees the last collective after
    # the interpreter began to finalize aborts the process; waiting on one more lets it finish first.
    dist.barrier()
    dist.destroy_process_group()
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tensor_parallel_parameters_are_saved_as_each_workers_shard(torch2_python, tmp_path):
    out = tmp_path / "trial"
    seen = _two_ranks(torch2_python, TP_SCRIPT, tmp_path, out)
    assert seen[0][0]["placements"] == {"0.weight": "S(0)", "0.bias": "S(0)", "2.weight": "S(1)", "2.bias": "R"}

    trial = vigil.create_trial(str(out))
    assert trial.workers() == ["worker_0", "worker_1"] and trial.steps() == [0, 1]
    for rank in (0, 1):
        worker = "worker_%d" % rank
        for step in (0, 1):
            for name, want in seen[rank][step]["weights"].items():
                got = trial.tensor("Sequential_" + name).value(step, worker=worker)
                assert np.array_equal(got, np.array(want, dtype=np.float32)), (worker, step, name)
            for name, want in seen[rank][step]["grads"].items():
                got = trial.tensor("gradient/Sequential_" + name).value(step, worker=worker)
                assert np.allclose(got, np.array(want, dtype=np.float32), rtol=1e-6, atol=1e-7), (worker, step, name)
    # The shards differ between the workers where the parameter is sharded, and not where replicated.
    assert trial.tensor("Sequential_0.weight").value(0, worker="worker_0").shape == (4, 4)
    assert trial.tensor("Sequential_2.weight").value(0, worker="worker_1").shape == (2, 4)
    assert not np.array_equal(trial.tensor("Sequential_0.weight").value(0, worker="worker_0"),
                              trial.tensor("Sequential_0.weight").value(0, worker="worker_1"))
    assert np.array_equal(trial.tensor("Sequential_2.bias").value(0, worker="worker_0"),
                          trial.tensor("Sequential_2.bias").value(0, worker="worker_1"))
    # Without a worker: the whole parameter, Shard(0) and Shard(1) put together, Replicate taken once.
    for step in (0, 1):
        whole = {n: np.concatenate([np.array(seen[r][step]["weights"][n], dtype=np.float32) for r in (0, 1)],
                                   axis=1 if n == "2.weight" else 0) for n in ("0.weight", "0.bias", "2.weight")}
        whole["2.bias"] = np.array(seen[0][step]["weights"]["2.bias"], dtype=np.float32)
        for n, want in whole.items():
            assert np.array_equal(trial.tensor("Sequential_" + n).value(step), want), (step, n)
            assert trial.tensor("Sequential_" + n).reduction_value(step, "l1") == \
                pytest.approx(float(np.abs(want.astype(np.float64)).sum()), rel=1e-6), (step, n)


SHARDED_SCRIPT = """
    import json, sys
    import torch
    import torch.distributed as dist
    import vigil.pytorch as smd

    out, wrapping = sys.argv[1], sys.argv[2]
    saves = sys.argv[3] if len(sys.argv) > 3 else "values"
    fsdp1 = wrapping.startswith("fsdp1")
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    # FSDP1's Linear(8, 3) has 27 elements: its unit pads them to 28, 14 a rank.
    outputs = 3 if fsdp1 else 2
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, outputs))
    # "reductions": each worker saves its shard's reductions only, no values.
    reductions = smd.ReductionConfig(reductions=["min", "max", "mean", "variance", "sum"], abs_reductions=["mean"],
                                     norms=["l1", "l2"]) if saves == "reductions" else None
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1), reduction_config=reductions,
                    include_collections=["weights", "biases", "gradients", "losses"], include_workers="all")
    if fsdp1:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        # device_id=cpu: FSDP1 runs on the CPU with gloo (without it torch 2.13 asks for an
        # accelerator). With use_orig_params each Linear is a unit of its own; without, the root
        # holds one flat parameter.
        orig = wrapping == "fsdp1_orig"
        model = FSDP(model, device_id=torch.device("cpu"), use_orig_params=orig,
                     auto_wrap_policy=ModuleWrapPolicy({torch.nn.Linear}) if orig else None)
        hook.register_module(model)
    else:
        from torch.distributed.fsdp import fully_shard
        if wrapping == "fsdp2_hook_first":  # smdebug's scripts register the model first
            hook.register_module(model)
            fully_shard(model)
        else:
            fully_shard(model)
            hook.register_module(model)
    loss_fn = torch.nn.MSELoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = []
    for step in range(2):
        torch.manual_seed(100 * (rank + 1) + step)  # each rank its own half of the batch
        x, y = torch.randn(3, 4), torch.randn(3, outputs)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        seen.append({"x": x.tolist(), "y": y.tolist()})
        if not fsdp1:  # FSDP2's shards, as DTensors
            seen[-1].update({"weights": {n: p.to_local().tolist() for n, p in model.named_parameters()},
                             "grads": {n: p.grad.to_local().tolist() for n, p in model.named_parameters()}})
        opt.step()
    hook.close()
    print("seen " + json.dumps(seen), flush=True)
    # torch 2.13's own exit race (test_torch2.py): a gloo worker that frees the last collective after
    # the interpreter began to finalize aborts the process; waiting on one more lets it finish first.
    dist.barrier()
    dist.destroy_process_group()
"""


def _two_ranks(python, script, tmp_path, *args):
    port = str(_free_port())
    procs = []
    for rank in (0, 1):
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": PYTHON_DIR, "OMP_NUM_THREADS": "1",
               "HOME": os.environ.get("HOME", "/"), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
               "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank)}
        procs.append(subprocess.Popen([python, "-c", textwrap.dedent(script), *map(str, args)], cwd=str(tmp_path),
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    try:
        for p in procs:
            results.append(p.communicate(timeout=TIMEOUT_S))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    seen = {}
    for rank, (p, (stdout, stderr)) in enumerate(zip(procs, results)):
        assert p.returncode == 0, "rank {}: {}\n{}".format(rank, p.returncode, stderr)
        assert "vigil hook disabled" not in stderr, stderr
        seen[rank] = json.loads([line for line in stdout.splitlines() if line.startswith("seen ")][0][5:])
    return seen


def _train_unsharded(seen, outputs, out_dir):
    """The same model unsharded, trained under the hook on both ranks' halves of each step's batch at
    once: yields (step, model) after each backward pass, before the optimizer step."""
    import torch
    import vigil.pytorch as smd
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, outputs))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook(out_dir=str(out_dir), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "biases", "gradients"])
    hook.register_module(model)
    for step in (0, 1):
        x = torch.tensor(seen[0][step]["x"] + seen[1][step]["x"])
        y = torch.tensor(seen[0][step]["y"] + seen[1][step]["y"])
        opt.zero_grad()
        torch.nn.MSELoss()(model(x), y).backward()
        yield step, model
        opt.step()
    model(torch.zeros(1, 4))  # the last step ends where the next begins
    hook.close()


def _check_whole_tensors(trial, step, model):
    """Without a worker, Vigil answers for the whole tensor: put together from the shards, and its
    reductions those of the whole (the unsharded run's, within float32 rounding)."""
    for n, p in model.named_parameters():
        for name, want in (("Sequential_" + n, p.detach()), ("gradient/Sequential_" + n, p.grad)):
            t = trial.tensor(name)
            whole = t.value(step)
            assert whole.shape == tuple(want.shape), (step, name)
            assert np.allclose(whole, want.numpy(), rtol=1e-5, atol=1e-6), (step, name)
            exact = want.double()
            for op, value in (("max", exact.max()), ("min", exact.min()), ("l2", exact.norm()),
                              ("mean", exact.mean()), ("std", exact.std(unbiased=False)),
                              ("variance", exact.var(unbiased=False))):
                assert t.reduction_value(step, op) == pytest.approx(value.item(), rel=1e-5, abs=1e-7), \
                    (step, name, op)


def _check_same_verdicts(trial, unsharded):
    """Built-in rules judge the whole tensors: VanishingGradient, its threshold just above and just
    below the smallest mean |gradient| at step 0, and ExplodingTensor give the sharded run the
    unsharded run's verdicts. Returns the smallest mean |gradient|."""
    from vigil.rules import invoke_rule, load
    gradients = unsharded.tensor_names(collection="gradients")
    smallest = min(float(unsharded.tensor(n).reduction_value(0, "mean", abs=True)) for n in gradients)
    for threshold, fires_at_0 in ((smallest * 1.0001, True), (smallest * 0.9999, False)):
        verdicts = {}
        for which, t in (("sharded", trial), ("unsharded", unsharded)):
            rule = load(None, "VanishingGradient", t, threshold=threshold)
            invoke_rule(rule, end_step=2)
            verdicts[which] = rule.triggered_steps
        assert verdicts["sharded"] == verdicts["unsharded"], (threshold, verdicts)
        assert (0 in verdicts["unsharded"]) == fires_at_0, (threshold, verdicts)
    verdicts = {}
    for which, t in (("sharded", trial), ("unsharded", unsharded)):
        rule = load(None, "ExplodingTensor", t, collection_names="weights,gradients")
        invoke_rule(rule, end_step=2)
        verdicts[which] = rule.triggered_steps
    assert verdicts["sharded"] == verdicts["unsharded"] == [], verdicts  # no NaN or Inf here
    return smallest


@pytest.mark.parametrize("order", ["shard_first", "hook_first"])
def test_fsdp2_saves_each_ranks_shard_of_the_weights_and_of_the_reduced_gradients(torch2_python, tmp_path, order):
    """Under fully_shard the hook saves each rank's shard of every parameter and of its gradient as
    FSDP leaves them at the optimizer step (reduce-scattered: the whole batch's gradient), under the
    unsharded model's names, rather than all-gathered copies of the parameters and no gradients."""
    out = tmp_path / "trial"
    seen = _two_ranks(torch2_python, SHARDED_SCRIPT, tmp_path, out, "fsdp2_" + order)
    trial = vigil.create_trial(str(out))
    assert trial.workers() == ["worker_0", "worker_1"] and trial.steps() == [0, 1]
    params = ["0.weight", "0.bias", "2.weight", "2.bias"]
    expected = {"Sequential_" + n for n in params} | {"gradient/Sequential_" + n for n in params} | {"MSELoss_output_0"}
    assert set(trial.tensor_names()) == expected, trial.tensor_names()

    for step, model in _train_unsharded(seen, 2, tmp_path / "unsharded"):
        for rank in (0, 1):
            worker = "worker_%d" % rank
            for n in params:
                got = trial.tensor("Sequential_" + n).value(step, worker=worker)
                assert np.array_equal(got, np.array(seen[rank][step]["weights"][n], dtype=np.float32)), (worker, step, n)
                got = trial.tensor("gradient/Sequential_" + n).value(step, worker=worker)
                assert np.allclose(got, np.array(seen[rank][step]["grads"][n], dtype=np.float32), rtol=1e-6, atol=1e-7)
        for n, p in model.named_parameters():
            # FSDP2 shards dimension 0: the workers' shards, in rank order, are the whole tensor.
            for name, want in (("Sequential_" + n, p.detach()), ("gradient/Sequential_" + n, p.grad)):
                shards = [trial.tensor(name).value(step, worker="worker_%d" % r) for r in (0, 1)]
                assert np.allclose(np.concatenate(shards), want.numpy(), rtol=1e-5, atol=1e-6), (step, name)
        _check_whole_tensors(trial, step, model)

    # Judging one worker's shards would have fired VanishingGradient below the whole's threshold too.
    unsharded = vigil.create_trial(str(tmp_path / "unsharded"))
    smallest = _check_same_verdicts(trial, unsharded)
    gradients = unsharded.tensor_names(collection="gradients")
    smallest_shard = min(float(trial.tensor(n).reduction_value(0, "mean", abs=True, worker="worker_0")) for n in gradients)
    assert smallest_shard < smallest * 0.9999, (smallest_shard, smallest)
    layouts = sorted(os.listdir(out / "shards"))
    assert layouts == ["worker_0.json", "worker_1.json"], layouts
    layout = json.loads((out / "shards" / "worker_1.json").read_text())
    assert layout["tensors"]["Sequential_0.weight"] == {"global_shape": [8, 4], "offsets": [4, 0], "shape": [4, 4]}
    assert layout["tensors"]["gradient/Sequential_2.bias"] == {"global_shape": [2], "offsets": [1], "shape": [1]}


def test_fsdp2_reductions_of_shards_that_saved_only_reductions_are_the_whole_tensors(torch2_python, tmp_path):
    """With a reduction configuration each FSDP2 worker saves its shard's reductions and no values;
    Vigil's trial merges them (Chan's formula for the variance) into the whole parameter's and
    gradient's reductions, equal to those of the whole tensor within float32 rounding, and a built-in
    rule reading them judges the whole gradient."""
    out = tmp_path / "trial"
    seen = _two_ranks(torch2_python, SHARDED_SCRIPT, tmp_path, out, "fsdp2_shard_first", "reductions")
    trial = vigil.create_trial(str(out))
    assert trial.workers() == ["worker_0", "worker_1"] and trial.steps() == [0, 1]
    for step in (0, 1):
        for n in ("0.weight", "0.bias", "2.weight", "2.bias"):
            for name, kind in (("Sequential_" + n, "weights"), ("gradient/Sequential_" + n, "grads")):
                t = trial.tensor(name)
                with pytest.raises(TensorUnavailableForStep):
                    t.value(step)  # no worker saved a value
                whole = np.concatenate([np.array(seen[r][step][kind][n], dtype=np.float64).reshape(-1) for r in (0, 1)])
                expected = {"min": whole.min(), "max": whole.max(), "mean": whole.mean(), "variance": whole.var(),
                            "std": whole.std(), "sum": whole.sum(), "l1": np.abs(whole).sum(),
                            "l2": np.sqrt((whole ** 2).sum())}
                for op, want in expected.items():
                    assert t.reduction_value(step, op) == pytest.approx(want, rel=1e-5, abs=1e-7), (step, name, op)
                assert t.reduction_value(step, "mean", abs=True) == pytest.approx(np.abs(whole).mean(), rel=1e-5)
                # A worker's own saved reduction is its shard's, not the whole's.
                shard0 = np.array(seen[0][step][kind][n], dtype=np.float64)
                assert t.reduction_value(step, "max", worker="worker_0") == pytest.approx(shard0.max(), rel=1e-6)
                # prod was not saved: there is nothing to merge it from.
                with pytest.raises(TensorUnavailableForStep):
                    t.reduction_value(step, "prod")

    # VanishingGradient reads the merged mean |gradient|: with its threshold just above the smallest
    # whole-gradient mean |g| at step 0 it fires at step 0, just below it does not.
    from vigil.rules import invoke_rule, load
    names = trial.tensor_names(collection="gradients")
    means = {n: np.abs(np.concatenate([np.array(seen[r][0]["grads"][n[len("gradient/Sequential_"):]],
                                                dtype=np.float64).reshape(-1) for r in (0, 1)])).mean() for n in names}
    smallest = min(means.values())
    for threshold, fires in ((smallest * 1.0001, True), (smallest * 0.9999, False)):
        rule = load(None, "VanishingGradient", trial, threshold=threshold)
        invoke_rule(rule, end_step=2)
        assert (0 in rule.triggered_steps) == fires, (threshold, rule.triggered_steps)


@pytest.mark.parametrize("params", ["orig", "flat"])
def test_fsdp1_saves_each_ranks_flat_run_and_the_trial_answers_for_the_whole_tensor(torch2_python, tmp_path, params):
    """FSDP1 (FullyShardedDataParallel, on the CPU with gloo) gives each rank a contiguous run of each
    flat parameter: the hook saves each rank's run of every parameter and of its reduce-scattered
    gradient at the optimizer step, under the unwrapped model's names, and describes it as a flat
    run (flat_offset). The whole tensors, their reductions and VanishingGradient's verdicts equal
    those of the same model trained unsharded on the whole batch."""
    out = tmp_path / "trial"
    seen = _two_ranks(torch2_python, SHARDED_SCRIPT, tmp_path, out, "fsdp1_" + params)
    trial = vigil.create_trial(str(out))
    assert trial.workers() == ["worker_0", "worker_1"] and trial.steps() == [0, 1]
    names = ["0.weight", "0.bias", "2.weight", "2.bias"]
    expected = {"Sequential_" + n for n in names} | {"gradient/Sequential_" + n for n in names} | {"MSELoss_output_0"}
    assert set(trial.tensor_names()) == expected, trial.tensor_names()
    # 2.weight (3 x 8) lies across both ranks' runs: 14 elements on worker_0 (0-13), 10 on worker_1.
    layout = json.loads((out / "shards" / "worker_1.json").read_text())
    if params == "orig":
        assert layout["tensors"]["Sequential_2.weight"] == {"global_shape": [3, 8], "flat_offset": 14, "shape": [10]}
    assert trial.tensor("Sequential_2.weight").value(0, worker="worker_1").ndim == 1

    for step, model in _train_unsharded(seen, 3, tmp_path / "unsharded"):
        _check_whole_tensors(trial, step, model)
    _check_same_verdicts(trial, vigil.create_trial(str(tmp_path / "unsharded")))
