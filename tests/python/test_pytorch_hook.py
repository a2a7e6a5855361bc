"""vigil.pytorch.Hook: constructor arguments, collections and their defaults, modes, save
configurations, the JSON configuration, include_workers with two real torch.distributed processes,
the queue budget, and the promise that the hook never harms training (injected faults: training
finishes, the hook is disabled, one message). The generator scripts of the real fixtures, run
unchanged on vigil.compat, are checked in test_conformance.py ("captured")."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import PYTHON_DIR

import torch

import vigil
import vigil.pytorch as smd
from vigil.capture.hook_config import HookConfigError
from real_readers import real_readers_agree  # noqa: F401 (a fixture)

# Every trial a test captures is read by the real smdebug 1.0.34 too, with Vigil's answers.
pytestmark = pytest.mark.usefixtures("real_readers_agree")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.relu = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def train(hook, steps=4, mode=smd.modes.TRAIN, seed=0, model=None):
    torch.manual_seed(seed)
    model = model or Net()
    crit = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if hook is not None:
        hook.register_module(model)
        hook.register_loss(crit)
        hook.set_mode(mode)
    x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = crit(model(x), y)
        if mode == smd.modes.TRAIN:
            loss.backward()
            opt.step()
        losses.append(float(loss))
    if hook is not None:
        hook.close()
    return model, losses


def test_defaults_save_only_the_losses_every_500_steps(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"))
    train(hook, steps=3)
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.tensor_names() == ["CrossEntropyLoss_output_0"] and tr.steps() == [0]
    assert set(tr.collections()) == {"default", "all", "weights", "biases", "gradients", "losses"}
    assert tr.collection("weights").include_regex == ["^(?!gradient).*weight"]
    assert tr.collection("losses").save_histogram is False
    assert os.path.exists(tmp_path / "t" / "training_job_end.ts")


def test_collections_save_config_and_values(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=2),
                    include_collections=["weights", "biases", "gradients", "losses"])
    seen = {}
    model = Net()
    orig = model.fc1.weight.register_hook(lambda g: seen.setdefault(len(seen), g.clone()))
    train(hook, steps=5, model=model)
    orig.remove()
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 2, 4] and tr.steps(mode=smd.modes.TRAIN) == [0, 2, 4]
    assert set(tr.tensor_names(collection="gradients")) == {
        "gradient/Net_fc1.weight", "gradient/Net_fc1.bias", "gradient/Net_fc2.weight", "gradient/Net_fc2.bias"}
    np.testing.assert_array_equal(tr.tensor("gradient/Net_fc1.weight").value(2), seen[2].numpy())
    assert tr.tensor("Net_fc1.weight").value(0).dtype == np.float32


def test_eval_mode_saves_no_gradients_and_per_mode_save_configs(tmp_path):
    cfg = smd.SaveConfig(mode_save_configs={smd.modes.TRAIN: smd.SaveConfigMode(save_interval=1),
                                            smd.modes.EVAL: smd.SaveConfigMode(save_steps=[1])})
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=cfg, include_collections=["gradients", "losses"])
    model = Net()
    crit = torch.nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(crit)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    hook.set_mode(smd.modes.TRAIN)
    for _ in range(2):
        crit(model(x), y).backward()
    hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        for _ in range(3):
            crit(model(x), y)
    hook.close()
    tr = vigil.create_trial(str(tmp_path / "t"))
    # save_steps adds to the interval (500), so EVAL step 0 is saved too (smdebug-format §6.1)
    assert tr.steps(mode=smd.modes.TRAIN) == [0, 1] and tr.steps(mode=smd.modes.EVAL) == [0, 1]
    assert tr.tensor("gradient/Net_fc1.weight").steps(mode=smd.modes.EVAL) == []
    assert tr.tensor("CrossEntropyLoss_output_0").steps(mode=smd.modes.EVAL) == [0, 1]


def test_reductions_shapes_save_all_include_regex_and_outputs(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1), save_all=True,
                    include_regex=["relu_output"],
                    reduction_config=smd.ReductionConfig(reductions=["mean"], abs_norms=["l2"], save_shape=True))
    train(hook, steps=2)
    tr = vigil.create_trial(str(tmp_path / "t"))
    names = tr.tensor_names()
    assert {"fc1_output_0", "relu_output_0", "fc2_output_0", "Net_input_0", "Net_fc1.weight"} <= set(names)
    assert "relu_output_0" in tr.tensor_names(collection="default")
    t = tr.tensor("fc1_output_0")
    assert sorted(t.reduction_values(1)) == [("l2", True), ("mean", False)]
    with pytest.raises(vigil.exceptions.TensorUnavailableForStep):
        t.value(1)  # an explicit ReductionConfig saves no raw tensor
    assert t.shape(1) == (16, 8)


def test_save_scalar_save_tensor_dry_run_and_a_second_loss_call(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["custom", "losses"])
    hook.get_collection("custom").include("^my_")
    model, crit = Net(), torch.nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(crit)
    hook.set_mode(smd.modes.TRAIN)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    for step in range(3):
        out = model(x)
        loss = crit(out, y) + 0 * crit(out, y)  # the loss module runs twice: _output_0 and _output_1
        hook.save_tensor("my_probs", torch.softmax(out, 1), "custom")
        hook.save_tensor("my_bf16", out.to(torch.bfloat16), "custom")  # kept as bfloat16 (read as float32)
        loss.backward()
        hook.save_scalar("lr", 0.5)
    hook.close()
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.tensor("scalar/lr").value(2).tolist() == [0.5]
    assert tr.tensor("my_probs").steps() == [0, 1, 2] and tr.tensor("my_bf16").steps() == [0, 1, 2]
    bf16 = tr.tensor("my_bf16").value(2)
    assert bf16.dtype == np.float32 and np.array_equal(bf16, out.detach().to(torch.bfloat16).float().numpy())
    assert tr.tensor("CrossEntropyLoss_output_1").steps() == [0, 1, 2]

    dry = smd.Hook(out_dir=str(tmp_path / "dry"), dry_run=True)
    train(dry, steps=2)
    assert not os.path.exists(tmp_path / "dry" / "index")


def test_module_and_gradient_hooks_are_attached_only_while_they_can_write(tmp_path):
    """The forward hooks of the modules and the gradient hooks of the parameters cost a call into
    Python each: they are attached on the steps that save, and the gradient hooks also while a
    save_tensor value waits for its flush point (test_hook_vs_smdebug.py checks where values land)."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=3),
                    include_collections=["weights", "gradients", "losses"])
    model, crit = Net(), torch.nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(crit)
    hook.set_mode(smd.modes.TRAIN)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    n_modules, n_params = len(list(model.modules())), len(list(model.parameters()))

    def attached():
        return (sum(len(m._forward_hooks) for m in model.modules()),
                sum(len(p._backward_hooks or {}) for p in model.parameters()))

    seen = []
    for step in range(5):  # steps 0 and 3 save
        out = model(x)
        seen.append(attached())
        if step == 1:  # before the loss: dropped by this step's backward pass
            hook.save_tensor("pending_1", torch.ones(2), "default")
            seen.append(attached())
        crit(out, y).backward()
        if step == 2:  # after backward: written at step 3's first module hook
            hook.save_tensor("pending_2", torch.ones(2), "default")
            seen.append(attached())
    hook.close()
    assert seen == [(n_modules, n_params), (0, 0), (0, n_params), (0, 0), (0, n_params), (n_modules, n_params),
                    (0, 0)]
    assert attached() == (0, 0)  # close() removes them
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 3] and not tr.has_tensor("pending_1") and tr.tensor("pending_2").steps() == [3]


def test_parameters_left_without_hooks_keep_no_empty_hook_dict(tmp_path):
    """Removing a tensor's last hook leaves an empty hook dict, and autograd calls into Python for it
    at every backward pass (1.8 % of the bench model's step, on steps that save nothing): after a
    saving step the hook drops the dicts it emptied, and leaves a user's hook, and its dict, alone."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=3),
                    include_collections=["weights", "gradients", "losses"])
    model, _ = train(None, steps=0)
    users = []
    model.fc1.weight.register_hook(lambda g: users.append(g.clone()))
    hook.register_module(model)
    x = torch.randn(8, 4)
    dicts = []
    for step in range(4):  # steps 0 and 3 save
        model.zero_grad()
        model(x).sum().backward()
        dicts.append({name: None if p._backward_hooks is None else len(p._backward_hooks)
                      for name, p in model.named_parameters()})
    hook.close()
    params = [name for name, _ in model.named_parameters()]
    assert dicts[0] == {name: 2 if name == "fc1.weight" else 1 for name in params}  # saving: Vigil's too
    for step in (1, 2):  # the step's boundary removed Vigil's hooks: no empty dict is left
        assert dicts[step] == {name: 1 if name == "fc1.weight" else None for name in params}
    assert len(users) == 4 and torch.equal(users[-1], model.fc1.weight.grad)
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.tensor("gradient/Net_fc1.weight").steps() == [0, 3]
    assert np.array_equal(tr.tensor("gradient/Net_fc1.weight").value(3), users[3].numpy())


def test_modules_whose_values_no_due_collection_takes_are_unhooked_after_one_saving_step(tmp_path):
    """A module's forward hook costs a call into Python at every saving step: once a saving step has
    offered a module's inputs and outputs to the due collections and none took any, the module stays
    unhooked while the same collections are due (here all but fc2, whose output "outs" takes). A step
    where other collections are due ("relus", every 3rd step, takes relu's output) learns again with
    every module hooked. What is saved is what saving every module's values saves."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "outs", "relus"])
    hook.get_collection("outs").include("^fc2_output_0$")
    hook.get_collection("relus").include("^relu_output_0$")
    hook.get_collection("relus").save_config = smd.SaveConfig(save_interval=3)
    model, _ = train(None, steps=0)
    hook.register_module(model)
    x = torch.randn(8, 4)

    def hooked():
        return sorted(name for name, m in model.named_modules() if m._forward_hooks)

    seen = []
    for step in range(7):
        out = model(x)
        seen.append(hooked())
        out.sum().backward()
    hook.close()
    assert hooked() == []
    every = sorted(name for name, _ in model.named_modules())
    # due: 0 weights+outs+relus, 1 and 2 weights+outs, 3 the three, 4 and 5 two, 6 three
    assert seen == [every, every, ["fc2"], every, every, ["fc2"], every]
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.tensor("fc2_output_0").steps() == list(range(7))
    assert tr.tensor("relu_output_0").steps() == [0, 3, 6]
    assert not tr.has_tensor("fc1_output_0") and tr.tensor("Net_fc1.weight").steps() == list(range(7))
    assert np.array_equal(tr.tensor("fc2_output_0").value(6), out.detach().numpy())


def test_at_an_interval_refused_modules_stay_unhooked_and_the_loss_hook_comes_with_saving_steps(tmp_path):
    """save_interval=3: the plans (and so the modules refused) of one saving step are kept over the
    steps that save nothing for the next saving step, which hooks no module; the loss module's hook,
    which does nothing on a step that saves nothing, is attached on saving steps only."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=3),
                    include_collections=["weights", "gradients", "losses"])
    model, crit = Net(), torch.nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(crit)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    seen = []
    for step in range(7):  # steps 0, 3 and 6 save
        out = model(x)
        seen.append((sum(len(m._forward_hooks) for m in model.modules()), len(crit._forward_hooks)))
        crit(out, y).backward()
    hook.close()
    assert seen == [(len(list(model.modules())), 1), (0, 0), (0, 0), (0, 1), (0, 0), (0, 0), (0, 1)]
    assert len(crit._forward_hooks) == 0  # close() removes it
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 3, 6]
    assert tr.tensor("CrossEntropyLoss_output_0").steps() == [0, 3, 6]
    assert tr.tensor("gradient/Net_fc2.weight").steps() == [0, 3, 6]
    assert not any(n.endswith("_output_0") and not n.startswith("CrossEntropyLoss") for n in tr.tensor_names())


def test_a_boundary_after_a_step_that_saved_nothing_only_counts_the_step(tmp_path):
    """save_interval=3: the boundary after a step that saved nothing and left nothing waiting ends no
    step, attaches and removes no hook (the hook's whole cost on such steps); a scalar saved on such a
    step makes the next boundary a whole one, and it lands in the next saving step, as in smdebug."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=3),
                    include_collections=["weights", "gradients", "losses"])
    model, crit = Net(), torch.nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(crit)
    whole, synced = [], []
    close_writers, sync_step_hooks = hook._close_writers, hook._sync_step_hooks
    hook._close_writers = lambda **kw: (whole.append(hook.step + 1), close_writers(**kw))
    hook._sync_step_hooks = lambda: (synced.append(hook.step), sync_step_hooks())
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    for step in range(8):  # steps 0, 3 and 6 save
        if step == 5:  # during step 4, which saves nothing
            hook.save_scalar("lr", 0.5)
        crit(model(x), y).backward()
    hook.close()
    # the first boundary (nothing prepared), those after saving steps, and those while the scalar waits
    assert whole[:6] == [0, 1, 4, 5, 6, 7]
    assert synced == [0, 1, 3, 4, 5, 6, 7]  # all but the quiet boundary of step 2, which saves nothing
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 3, 6]
    assert tr.tensor("scalar/lr").steps() == [6]
    assert tr.tensor("gradient/Net_fc2.weight").steps() == [0, 3, 6]


def test_a_pending_save_tensor_value_hooks_every_module_again_as_a_flush_point(tmp_path):
    """In EVAL mode with no loss registered, the modules' forward hooks are a step's only flush points
    for save_tensor values (smdebug: the first module hook after save_tensor writes it). With every
    module unhooked (no due collection takes their values), a pending value hooks them all again, so
    that it lands in the step smdebug puts it in: the next one, at its first module."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "custom"])
    model, _ = train(None, steps=0)
    hook.register_module(model)
    hook.set_mode(smd.modes.EVAL)
    x = torch.randn(8, 4)
    hooked = []
    for step in range(4):
        out = model(x)
        hooked.append(sum(len(m._forward_hooks) for m in model.modules()))
        if step == 1:
            hook.save_tensor("my_probs", torch.softmax(out, 1), "custom")
            hooked.append(sum(len(m._forward_hooks) for m in model.modules()))
    hook.close()
    n = len(list(model.modules()))
    assert hooked[:3] == [n, 0, n]  # step 0 learns, step 1 unhooked, the pending value hooks them all
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.tensor("my_probs").steps(mode=smd.modes.EVAL) == [2]
    assert tr.tensor("Net_fc2.weight").steps(mode=smd.modes.EVAL) == [0, 1, 2, 3]


def test_a_model_registered_mid_run_is_hooked_from_then_on(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["gradients", "losses", "outs"])
    hook.get_collection("outs").include("_output_0$")
    first, crit = Net(), torch.nn.CrossEntropyLoss()
    hook.register_module(first)
    hook.register_loss(crit)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    crit(first(x), y).backward()  # step 0
    second = torch.nn.Sequential(torch.nn.Linear(4, 3))
    hook.register_module(second)
    crit(second(x), y).backward()  # step 1
    hook.close()
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.tensor("gradient/Sequential_0.weight").steps() == [1]
    assert tr.tensor("0_output_0").steps() == [1] and tr.tensor("fc2_output_0").steps() == [0]


def test_save_tensor_into_a_collection_made_late_is_written(tmp_path):
    """smdebug fails on a collection that did not exist when the first step began (its
    reduction_config is None); Vigil makes it and writes the value."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1))
    model, crit = Net(), torch.nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(crit)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    for step in range(2):
        out = model(x)
        hook.save_tensor("late_value", torch.full((2,), float(step)), "made_late")
        crit(out, y).backward()
    hook.close()
    assert not hook._disabled and "made_late" in hook.get_collections()
    tr = vigil.create_trial(str(tmp_path / "t"))
    t = tr.tensor("late_value")
    assert t.steps() == [0, 1] and [t.value(s).tolist() for s in (0, 1)] == [[0.0, 0.0], [1.0, 1.0]]


def test_constructor_refusals_and_singleton(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAINING_JOB_NAME", raising=False)
    with pytest.raises(ValueError, match="out_dir is required"):
        smd.Hook()
    # smdebug takes any include_workers other than "all" as "one" (the misuse walk of
    # test_hook_misuse.py compares with the real smdebug)
    assert not smd.Hook(out_dir=str(tmp_path / "x"), include_workers="some").save_all_workers
    h = smd.Hook(out_dir=str(tmp_path / "s"))
    assert smd.get_hook() is h
    smd.del_hook()
    assert smd.get_hook() is None


# ---- JSON configuration ---------------------------------------------------------------------------

def test_json_configuration_every_key(tmp_path, monkeypatch):
    cfg = {
        "LocalPath": str(tmp_path / "t"),
        "HookParameters": {"save_all": "false", "include_regex": "fc1_output, relu", "include_workers": "one",
                           "save_interval": "2", "train.save_interval": "1", "eval.save_steps": "0,2",
                           "reductions": "mean,abs_l2_norm", "save_raw_tensor": "true", "export_tensorboard": False},
        "CollectionConfigurations": [
            {"CollectionName": "weights", "CollectionParameters": {"save_interval": "3", "save_histogram": "False"}},
            {"CollectionName": "losses"},
        ],
    }
    path = tmp_path / "debughookconfig.json"
    path.write_text(json.dumps(cfg))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(path))
    hook = smd.Hook.create_from_json_file()
    assert hook.out_dir == str(tmp_path / "t")
    assert set(hook.include_collections) == {"weights", "losses", "default"}
    assert hook.save_config.get_save_config(smd.modes.TRAIN).save_interval == 1
    assert hook.save_config.get_save_config(smd.modes.EVAL).save_steps == [0, 2]
    assert hook.save_config.get_save_config(smd.modes.GLOBAL).save_interval == 2
    assert hook.reduction_config.reductions == ["mean"] and hook.reduction_config.abs_norms == ["l2"]
    w = hook.get_collection("weights")
    assert w.save_histogram is False and w.save_config.get_save_config(smd.modes.TRAIN).save_interval == 3
    train(hook, steps=4)
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.tensor("Net_fc1.weight").steps() == [0, 3]
    assert "fc1_output_0" in tr.tensor_names()


@pytest.mark.parametrize("doc,field", [
    ({"HookParameters": {"save_intervl": "2"}}, "unknown key 'save_intervl'"),
    ({"HookParameters": {"save_all": "yes"}}, "HookParameters.save_all"),
    ({"HookParameters": {"save_interval": "0"}}, "HookParameters.save_interval"),
    ({"HookParameters": {"reductions": "median"}}, "HookParameters.reductions"),
    ({"CollectionConfigurations": [{"CollectionParameters": {}}]}, "CollectionConfigurations[0].CollectionName"),
    ({"CollectionConfigurations": [{"CollectionName": "w", "CollectionParameters": {"train.start_step": "x"}}]},
     "CollectionConfigurations[0].CollectionParameters.train.start_step"),
    ({"Extra": 1}, "unknown key 'Extra'"),
])
def test_a_bad_json_configuration_is_refused_naming_the_field(tmp_path, doc, field):
    doc = dict(doc, LocalPath=str(tmp_path / "t"))
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(HookConfigError) as info:
        smd.Hook.create_from_json_file(str(path))
    assert field in str(info.value) and str(path) in str(info.value)
    assert not os.path.exists(tmp_path / "t")  # nothing half-configured


def _boolean_spellings():
    """tests/sdk/boolean_spellings.txt: the table the C++ rule (vigil/sdk/text.hpp) is tested on."""
    with open(os.path.join(os.path.dirname(__file__), "..", "sdk", "boolean_spellings.txt")) as f:
        rows = [line.rstrip("\n").split("|", 1) for line in f if line.strip() and not line.startswith("#")]
    return [(text, {"true": True, "false": False, "none": None}[expected]) for expected, text in rows]


@pytest.mark.parametrize("text,expected", _boolean_spellings())
def test_json_configuration_booleans_follow_sagemakers_one_rule(tmp_path, text, expected):
    from vigil.capture.hook_config import parse_hook_config
    doc = {"LocalPath": str(tmp_path / "t"), "HookParameters": {"save_all": text}}
    if expected is None:
        with pytest.raises(HookConfigError, match="save_all"):
            parse_hook_config(doc)
    else:
        assert parse_hook_config(doc)[0]["save_all"] is expected


def test_capture_switched_off_by_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"LocalPath": str(tmp_path / "t")}))
    for var, value in (("USE_SMDEBUG", "false"), ("USE_SMDEBUG", "0"), ("VIGIL_DISABLE", "1")):
        monkeypatch.setenv(var, value)
        assert smd.Hook.create_from_json_file(str(path)) is None
        hook = smd.Hook(out_dir=str(tmp_path / "off"))
        train(hook, steps=2)
        assert not os.path.exists(tmp_path / "off")
        monkeypatch.delenv(var)
    with pytest.raises(HookConfigError, match="does not exist"):
        smd.Hook.create_from_json_file(str(tmp_path / "absent.json"))  # named explicitly: must exist


# ---- never harming training ---------------------------------------------------------------------

def _run_isolated(code, tmp_path, extra_env=None):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, OMP_NUM_THREADS="1", **(extra_env or {}))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=str(tmp_path), env=env,
                       capture_output=True, text=True, timeout=300)
    return r


TRAIN_SCRIPT = """
    import sys, torch
    import vigil.pytorch as smd
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
    crit = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    hook = smd.Hook(out_dir=sys.argv[1] if len(sys.argv) > 1 else OUT, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model); hook.register_loss(crit)
    x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
    for step in range(STEPS):
        BEFORE_STEP
        opt.zero_grad(); loss = crit(model(x), y); loss.backward(); opt.step()
    hook.close()
    print("TRAINING FINISHED", float(loss))
"""


def _script(out, steps=20, before_step="pass", prelude=""):
    return prelude + textwrap.dedent(TRAIN_SCRIPT).replace("OUT", repr(str(out))).replace("STEPS", str(steps)).replace(
        "BEFORE_STEP", before_step)


def _assert_survived(r):
    assert r.returncode == 0, r.stderr
    assert "TRAINING FINISHED" in r.stdout
    assert r.stderr.count("vigil hook disabled") == 1, r.stderr


def test_an_unwritable_out_dir_disables_the_hook_and_training_finishes(tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    _assert_survived(_run_isolated(_script(tmp_path / "a_file" / "trial"), tmp_path))


def test_a_full_disk_disables_the_hook_and_training_finishes(tmp_path):
    # RLIMIT_FSIZE below one step's event file: the first write fails with EFBIG, as on a full disk.
    prelude = "import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n" \
              "resource.setrlimit(resource.RLIMIT_FSIZE, (50000, 50000))\n"
    r = _run_isolated(_script(tmp_path / "t", steps=30, prelude=prelude), tmp_path)
    _assert_survived(r)
    assert "File too large" in r.stderr, r.stderr


def test_a_writer_that_dies_mid_run_disables_the_hook_and_training_finishes(tmp_path):
    # The trial folder is swapped for a file while training (a rename, atomic while the writer thread
    # creates files in it): the writer thread's next write fails.
    before = "if step == 5:\n        import os; os.rename(OUTDIR, OUTDIR + '.gone'); open(OUTDIR, 'w').close()"
    code = _script(tmp_path / "t", steps=15, before_step=before.replace("OUTDIR", repr(str(tmp_path / "t"))))
    _assert_survived(_run_isolated(code, tmp_path))


class Quantize(torch.nn.Module):
    def forward(self, x):
        return torch.quantize_per_tensor(x.detach(), 0.1, 0, torch.qint8)


class Dequantize(torch.nn.Module):
    def forward(self, x):
        return x.dequantize()


def test_an_unsupported_dtype_is_skipped_and_the_hook_goes_on(tmp_path, caplog):
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1), save_all=True)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), Quantize(), Dequantize(), torch.nn.Linear(4, 3))
    train(hook, steps=3, model=model)
    tr = vigil.create_trial(str(tmp_path / "t"))
    names = tr.tensor_names()
    assert "1_output_0" not in names  # qint8: its scale has no place in the event file
    assert {"2_output_0", "3_output_0", "Sequential_0.weight"} <= set(names) and tr.steps() == [0, 1, 2]
    assert sum("1_output_0 is not saved" in r.getMessage() for r in caplog.records) == 1


def test_the_queue_budget_drops_whole_steps_and_says_so(tmp_path):
    # A budget smaller than one step's weights: every step is dropped, and each is still published
    # with vigil/dropped_step so that readers and rules see it.
    r = _run_isolated(_script(tmp_path / "t", steps=6), tmp_path, {"VIGIL_HOOK_MAX_QUEUE_MB": "0.01"})
    assert r.returncode == 0 and "TRAINING FINISHED" in r.stdout, r.stderr
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.steps() == list(range(6))
    assert tr.tensor("vigil/dropped_step").steps() == list(range(6))
    assert float(tr.tensor("vigil/dropped_step").value(3)[0]) == 1.0
    # A generous budget drops nothing.
    r = _run_isolated(_script(tmp_path / "u", steps=6), tmp_path, {"VIGIL_HOOK_MAX_QUEUE_MB": "64"})
    assert r.returncode == 0, r.stderr
    assert not vigil.create_trial(str(tmp_path / "u")).has_tensor("vigil/dropped_step")


def test_importing_vigil_starts_no_thread_and_writes_no_file(tmp_path):
    r = _run_isolated("""
        import os, threading
        before = set(os.listdir("."))
        import vigil, vigil.pytorch, vigil.compat
        vigil.compat.install()
        import smdebug.pytorch
        assert threading.active_count() == 1, threading.enumerate()
        assert set(os.listdir(".")) == before
        print("OK")
    """, tmp_path)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr


# ---- two workers under torch.distributed ---------------------------------------------------------

DDP_SCRIPT = """
    import os, sys, torch, torch.distributed as dist
    import vigil.pytorch as smd
    rank = int(sys.argv[1])
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(rank)
    model = torch.nn.Linear(4, 2)
    crit = torch.nn.MSELoss()
    hook = smd.Hook(out_dir=sys.argv[2], save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "losses"], include_workers=sys.argv[3])
    hook.register_module(model); hook.register_loss(crit)
    # Both hooks exist before either trains, as under DDP (whose all-reduce keeps workers in step):
    # without it a worker starved of CPU could create its hook after the other ended the trial.
    dist.barrier()
    for _ in range(3):
        crit(model(torch.randn(8, 4)), torch.randn(8, 2)).backward()
    hook.close()
    dist.destroy_process_group()
"""


@pytest.mark.parametrize("include_workers", ["one", "all"])
def test_include_workers_with_two_torch_distributed_processes(tmp_path, include_workers):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = str(tmp_path / "t")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(DDP_SCRIPT), str(rank), out, include_workers],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert "vigil hook disabled" not in err, err  # e.g. a slower worker finding the trial ended
    tr = vigil.create_trial(out)
    files = sorted(os.listdir(os.path.join(out, "collections", "000000000")))
    if include_workers == "one":
        assert files == ["worker_0_collections.json"] and tr.num_workers == 1 and tr.workers() == ["worker_0"]
    else:
        assert files == ["worker_0_collections.json", "worker_1_collections.json"]
        assert tr.num_workers == 2 and tr.workers() == ["worker_0", "worker_1"]
        assert sorted(tr.tensor("Linear_weight").workers(1)) == ["worker_0", "worker_1"]
    assert tr.steps() == [0, 1, 2]


def test_a_training_process_that_dies_leaves_a_readable_trial(tmp_path):
    import signal
    import time
    out = tmp_path / "t"
    code = _script(out, steps=100000, before_step="import time; time.sleep(0.01)")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, OMP_NUM_THREADS="1")
    p = subprocess.Popen([sys.executable, "-c", code], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    index = out / "index" / "000000000"
    deadline = time.time() + 120
    while time.time() < deadline and (not index.is_dir() or len(os.listdir(index)) < 5):
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    tr = vigil.create_trial(str(out))
    steps = tr.steps(show_incomplete_steps=True)
    assert len(steps) >= 5 and steps == list(range(len(steps)))  # no gaps, every published step whole
    for s in steps:
        assert tr.tensor("gradient/Sequential_0.weight").value(s).shape == (256, 64)
    assert not tr.loaded_all_steps  # no end marker: the run did not finish


class _OddOutputs(torch.nn.Module):
    """Outputs of each kind the hook writes: a strided view, a value of no elements, a bfloat16 one."""

    def forward(self, x):
        return x.t(), x[:0], x.to(torch.bfloat16)


def test_plain_cpu_tensors_are_written_by_address_and_read_back_exactly(tmp_path, monkeypatch):
    """A plain CPU tensor in C order goes to the writer by its address (no numpy view of it is made);
    a strided one takes the general path, through a copy in C order that lives until it is queued.
    Both read back as the tensors were, with their reductions and shapes, and a value of no elements
    leaves its shape only."""
    from vigil.capture import pytorch as hook_module
    viewed = []
    real_view = hook_module.make_numpy_array
    monkeypatch.setattr(hook_module, "make_numpy_array", lambda value: viewed.append(value) or real_view(value))
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "biases", "gradients", "outs", "low"])
    outs = hook.get_collection("outs")
    outs.include("^0_output_|^1_output_[01]")
    hook.get_collection("low").include("^1_output_2")  # raw only: smdebug reads no bfloat16 reduction
    outs.reduction_config = smd.ReductionConfig(reductions=["max"], save_raw_tensor=True, save_shape=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), _OddOutputs())
    hook.register_module(model)
    x = torch.randn(5, 4)
    strided, empty, bf16 = model(x)
    (strided.sum() + bf16.float().sum()).backward()
    hook.close()
    assert len(viewed) == 1 and viewed[0] is strided  # the strided view only
    tr = vigil.create_trial(str(tmp_path / "t"))
    linear = model[0]
    assert np.array_equal(tr.tensor("Sequential_0.weight").value(0), linear.weight.detach().numpy())
    assert np.array_equal(tr.tensor("gradient/Sequential_0.weight").value(0), linear.weight.grad.numpy())
    assert np.array_equal(tr.tensor("gradient/Sequential_0.bias").value(0), linear.bias.grad.numpy())
    out = linear(x).detach()
    t = tr.tensor("0_output_0")
    assert np.array_equal(t.value(0), out.numpy()) and t.shape(0) == (5, 3)
    assert t.reduction_value(0, "max") == pytest.approx(float(out.max()))
    assert np.array_equal(tr.tensor("1_output_0").value(0), out.t().numpy())
    assert np.array_equal(tr.tensor("1_output_2").value(0), out.to(torch.bfloat16).float().numpy())
    assert tr.tensor("1_output_1").shape(0) == (0, 3)
    with pytest.raises(vigil.exceptions.TensorUnavailableForStep):
        tr.tensor("1_output_1").value(0)


def test_a_name_save_tensor_puts_in_a_collection_is_saved_from_then_on(tmp_path):
    """The hook asks the core's plan for a name once while the due collections stay the same;
    save_tensor joining the name to a collection changes its plan from then on."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "losses"])
    model, crit = Net(), torch.nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(crit)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    for step in range(3):
        out = model(x)
        if step == 1:
            hook.save_tensor("fc2_output_0", out, "weights")
        crit(out, y).backward()
    hook.close()
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.tensor("fc2_output_0").steps() == [1, 2]


def test_write_address_refuses_shapes_and_dtypes_it_cannot_bound(tmp_path):
    """The writer's by-address call sizes the value from its shape and dtype: a negative dimension, a
    size past the address space and a dtype that is not a number are refused before any byte is read."""
    from vigil import _vigil
    writer = _vigil.QueuedWriter(str(tmp_path / "t"), "worker_0", 1, 1 << 20)
    writer.begin_step(0, 1, 0)
    f32 = np.dtype(np.float32)
    for shape, dtype, message in (([-1], f32, "negative dimension"), ([1 << 62, 1 << 62], f32, "address space"),
                                  ([1 << 62], np.dtype(np.float64), "address space"),
                                  ([1], np.dtype("U3"), "cannot save numpy dtype"),
                                  ([1], np.dtype(object), "cannot save numpy dtype")):
        with pytest.raises(Exception, match=message):
            writer.write_address("x", 8, shape, dtype, False, [], True)
    value = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    writer.write_address("ok", value.data_ptr(), list(value.shape), f32, False, [], True)
    writer.end_step()
    collections = vigil.collection.CollectionManager()
    collections.get("default").add_tensor_name("ok")
    writer.publish_collections(json.dumps(collections.to_json_dict()))
    assert writer.close(True) is None
    assert np.array_equal(vigil.create_trial(str(tmp_path / "t")).tensor("ok").value(0), value.numpy())
