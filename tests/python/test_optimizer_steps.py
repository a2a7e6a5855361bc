"""Steps under gradient accumulation on torch 2, with the framework profiler's global optimizer step
hooks registered (issue 32, item 4): scripts that use smdebug's API keep smdebug's numbering, a step
per forward call of the registered module, however many micro-batches an optimizer step takes; the
profiler's optimizer events come from torch 2's optimizer step hooks, one per optimizer.step(). The
same scenario is compared with the real smdebug (on torch 1.13) by test_hook_vs_smdebug.py."""
import json

import numpy as np
import torch
from torch.optim import optimizer as torch_optimizer

import vigil
import vigil.pytorch as smd
from vigil.profiler import LocalAlgorithmMetricsReader

MICRO_BATCHES = 4  # per optimizer step
OPTIMIZER_STEPS = 3


def test_gradient_accumulation_numbers_a_step_per_forward_and_profiles_each_optimizer_step(tmp_path, monkeypatch):
    root = tmp_path / "profiler"
    config = tmp_path / "profilerconfig.json"
    config.write_text(json.dumps({"ProfilingParameters": {"ProfilerEnabled": True, "LocalPath": str(root)}}))
    monkeypatch.setenv("SMPROFILER_CONFIG_PATH", str(config))
    assert hasattr(torch_optimizer, "register_optimizer_step_post_hook")  # torch 2's global hooks

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 1))
    hook = smd.Hook(out_dir=str(tmp_path / "trial"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["gradients", "losses"])
    hook.register_module(model)
    loss_fn = torch.nn.MSELoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(MICRO_BATCHES * OPTIMIZER_STEPS, 8, 4), torch.randn(MICRO_BATCHES * OPTIMIZER_STEPS, 8, 1)
    own_grads, losses = [], []
    for i in range(MICRO_BATCHES * OPTIMIZER_STEPS):
        if i % MICRO_BATCHES == 0:
            opt.zero_grad()
        raw = loss_fn(model(x[i]), y[i])  # the loss module's output, which the hook saves
        loss = raw / MICRO_BATCHES
        own_grads.append(torch.autograd.grad(loss, [model[0].weight], retain_graph=True)[0].numpy().copy())
        losses.append(raw.detach().numpy().copy())
        loss.backward()
        if i % MICRO_BATCHES == MICRO_BATCHES - 1:
            opt.step()
    hook.close()

    trial = vigil.create_trial(str(tmp_path / "trial"))
    forwards = MICRO_BATCHES * OPTIMIZER_STEPS
    assert trial.steps() == list(range(forwards))  # a step per forward, not per optimizer step
    for step in range(forwards):
        # Each step's own backward pass, not the running sum .grad holds within an optimizer step.
        assert np.allclose(trial.tensor("gradient/Sequential_0.weight").value(step), own_grads[step],
                           rtol=1e-5, atol=1e-7), step
        assert trial.tensor("MSELoss_output_0").value(step).reshape(-1)[0] == losses[step], step

    events = LocalAlgorithmMetricsReader(str(root)).get_events(0, 2 ** 62)
    optimizer = [e for e in events if e.event_phase == "Optimizer"]
    # One event per optimizer.step(), named by the optimizer's class, at the step that called it.
    assert [e.event_name for e in optimizer] == ["SGD.step"] * OPTIMIZER_STEPS
    assert [int(e.event_args["step_num"]) for e in optimizer] == \
        [k * MICRO_BATCHES + MICRO_BATCHES - 1 for k in range(OPTIMIZER_STEPS)]
