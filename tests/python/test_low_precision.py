"""Low-precision training under the PyTorch hook (torch 2.13): bfloat16, float16 and float8 tensors
are saved with their own dtypes (TensorFlow's DT_BFLOAT16, DT_HALF, DT_FLOAT8_E4M3FN, DT_FLOAT8_E5M2,
checked with TensorBoard's own protos), read back as the values training had (float32 for the
formats numpy lacks, which holds them exactly), and reduced in float64 from those values."""
import glob
import math
import struct

import numpy as np
import pytest
import torch

import vigil
import vigil.pytorch as smd
from real_readers import real_readers_agree  # noqa: F401 (a fixture: the real smdebug reads the trials too)

# TensorFlow's types.proto.
DT_HALF, DT_BFLOAT16, DT_FLOAT8_E5M2, DT_FLOAT8_E4M3FN = 19, 14, 24, 25


def _event_dtypes(trial_dir):
    """tensor name -> the dtype field of its TensorProto, for every tensor of every event file, read
    with TensorBoard's own event proto."""
    from tensorboard.compat.proto import event_pb2
    found = {}
    for path in glob.glob(str(trial_dir / "events" / "*" / "*.tfevents")):
        data = open(path, "rb").read()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack_from("<Q", data, pos)
            event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            for value in event.summary.value:
                found[value.tag] = value.tensor.dtype
    return found


def _train(model, dtype, out, steps=3):
    """Trains `model` (its parameters in `dtype`) under the hook, saving weights, gradients and losses
    at every step; returns what training had at each step: weights (at the forward), gradients and
    losses."""
    torch.manual_seed(0)
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "biases", "gradients", "losses"])
    hook.register_module(model)
    loss_fn = torch.nn.MSELoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    seen = []
    for _ in range(steps):
        x, y = torch.randn(8, 6, dtype=dtype), torch.randn(8, 2, dtype=dtype)
        params = {n: p.detach().clone() for n, p in model.named_parameters()}
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
        seen.append((params, grads, loss.detach().clone()))
        opt.step()
    hook.close()
    return seen


def _mlp(dtype):
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2)).to(dtype)


@pytest.mark.parametrize("dtype,code", [(torch.bfloat16, DT_BFLOAT16), (torch.float16, DT_HALF)],
                         ids=["bfloat16", "float16"])
def test_a_low_precision_model_is_saved_whole_with_its_values_and_dtype(tmp_path, dtype, code, real_readers_agree):
    out = tmp_path / "trial"
    seen = _train(_mlp(dtype), dtype, out)
    trial = vigil.create_trial(str(out))
    assert trial.steps() == [0, 1, 2]
    names = {f"Sequential_{n}" for n in dict(_mlp(dtype).named_parameters())}
    expected = names | {f"gradient/{n}" for n in names} | {"MSELoss_output_0"}
    assert set(trial.tensor_names()) == expected, trial.tensor_names()
    dtypes = _event_dtypes(out)
    assert {dtypes[name] for name in expected} == {code}, dtypes
    for step, (params, grads, loss) in enumerate(seen):
        for n in params:
            for name, want in ((f"Sequential_{n}", params[n]), (f"gradient/Sequential_{n}", grads[n])):
                got = trial.tensor(name).value(step)
                # Exactly training's values (the float32 numpy holds them in, or float16 itself).
                assert np.array_equal(got.astype(np.float64), want.double().numpy()), (name, step)
                exact = want.double()
                assert trial.tensor(name).reduction_value(step, "max") == pytest.approx(exact.max().item(), rel=4e-3)
                assert trial.tensor(name).reduction_value(step, "l2") == pytest.approx(exact.norm().item(), rel=4e-3)
        got_loss = trial.tensor("MSELoss_output_0").value(step)
        assert float(got_loss.reshape(-1)[0]) == loss.double().item()


def test_bfloat16_reductions_are_exact_float64_rounded_to_bfloat16(tmp_path):
    out = tmp_path / "trial"
    values = torch.tensor([1.0, 2.0 ** -8, 3.0, -7.5, 1e-3], dtype=torch.bfloat16)
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["custom"])
    model = torch.nn.Linear(2, 1)
    hook.register_module(model)
    model(torch.ones(1, 2)).sum().backward()
    hook.save_tensor("custom/bf16", values, "custom")
    model(torch.ones(1, 2)).sum().backward()
    hook.close()
    trial = vigil.create_trial(str(out))
    step = trial.tensor("custom/bf16").steps()[0]
    exact = values.double()
    t = trial.tensor("custom/bf16")
    # numpy's rule (results in the input's dtype), applied to float64 arithmetic on the exact values.
    for op, want in (("sum", exact.sum()), ("mean", exact.mean()), ("l1", exact.abs().sum()),
                     ("max", exact.max()), ("min", exact.min())):
        assert t.reduction_value(step, op) == torch.tensor(want.item()).to(torch.bfloat16).item(), op


@pytest.mark.parametrize("name,code", [("float8_e4m3fn", DT_FLOAT8_E4M3FN), ("float8_e5m2", DT_FLOAT8_E5M2)])
def test_every_float8_value_round_trips_exactly(tmp_path, name, code, real_readers_agree):
    """All 256 bit patterns of each float8 format, saved by the hook and read back: Vigil's decoding
    equals torch's own conversion to float32, NaNs included; reductions are float64 and unrounded.
    The real smdebug lists the tensors and raises KeyError for their values (compatibility.md)."""
    fp8 = getattr(torch, name)
    every = torch.arange(256, dtype=torch.int16).to(torch.uint8).view(fp8).reshape(16, 16)
    finite = every.float()[torch.isfinite(every.float())].to(fp8)
    out = tmp_path / "trial"
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1), include_collections=["custom"])
    model = torch.nn.Linear(2, 1)
    hook.register_module(model)
    model(torch.ones(1, 2)).sum().backward()
    hook.save_tensor("custom/every", every, "custom")
    hook.save_tensor("custom/finite", finite, "custom")
    model(torch.ones(1, 2)).sum().backward()
    hook.close()
    assert _event_dtypes(out)["custom/every"] == code
    trial = vigil.create_trial(str(out))
    step = trial.tensor("custom/every").steps()[0]
    got = trial.tensor("custom/every").value(step)
    want = every.float().numpy()
    assert got.dtype == np.float32 and got.shape == (16, 16)
    assert np.array_equal(got, want, equal_nan=True)
    exact = finite.double()
    t = trial.tensor("custom/finite")
    assert t.reduction_value(step, "sum") == exact.sum().item()
    assert t.reduction_value(step, "l2") == pytest.approx(exact.norm().item(), rel=1e-12)
    assert t.reduction_value(step, "max") == exact.max().item()
    assert math.isnan(trial.tensor("custom/every").reduction_value(step, "max"))


def test_a_float8_model_saves_its_float8_outputs(tmp_path):
    """A model whose layer computes in float8 (weights and activations cast to float8_e4m3fn, the matmul
    in float32, as CPU training emulates fp8): its float8 output is saved as float8 at every step."""
    class Fp8Linear(torch.nn.Linear):
        def forward(self, x):
            w8 = self.weight.to(torch.float8_e4m3fn)
            x8 = x.to(torch.float8_e4m3fn)
            y = torch.nn.functional.linear(x8.float(), w8.float(), self.bias)
            return y.to(torch.float8_e4m3fn).float() + 0 * y  # the float8 value, differentiable

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = Fp8Linear(4, 3)
            self.cast = Cast8()

        def forward(self, x):
            return self.cast(self.fc(x))

    class Cast8(torch.nn.Module):
        def forward(self, x):
            self.last = x.detach().to(torch.float8_e4m3fn)
            return x

    out = tmp_path / "trial"
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1), include_collections=["custom"])
    torch.manual_seed(2)
    net = Net()
    hook.register_module(net)
    kept = []
    for _ in range(3):
        loss = net(torch.randn(5, 4)).pow(2).mean()
        hook.save_tensor("fp8_activation", net.cast.last, "custom")
        kept.append(net.cast.last.float().numpy())
        loss.backward()
    hook.close()
    trial = vigil.create_trial(str(out))
    assert _event_dtypes(out)["fp8_activation"] == DT_FLOAT8_E4M3FN
    steps = trial.tensor("fp8_activation").steps()
    assert steps == [0, 1, 2]
    for step in steps:
        assert np.array_equal(trial.tensor("fp8_activation").value(step), kept[step])


def test_tensorboard_gets_low_precision_values_as_float_histograms(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    out, tb = tmp_path / "trial", tmp_path / "tb"
    hook = smd.Hook(out_dir=str(out), export_tensorboard=True, tensorboard_dir=str(tb),
                    save_config=smd.SaveConfig(save_interval=1), include_collections=["weights"])
    model = torch.nn.Linear(3, 2).to(torch.bfloat16)
    hook.get_collection("weights").save_histogram = True
    hook.register_module(model)
    for _ in range(2):
        model(torch.randn(4, 3, dtype=torch.bfloat16)).float().sum().backward()
    hook.close()
    files = glob.glob(str(tb / "**" / "*tfevents*"), recursive=True)
    assert files
    acc = EventAccumulator(files[0], size_guidance={"histograms": 0})
    acc.Reload()
    tags = acc.Tags()["histograms"]
    assert any("Linear_weight" in t for t in tags), tags
    hist = acc.Histograms([t for t in tags if "Linear_weight" in t][0])[0].histogram_value
    w = model.weight.detach().float()
    # The float values, not their bits (bits would put min/max in the thousands).
    assert hist.num == w.numel()
    assert -1.0 <= hist.min <= hist.max <= 1.0
