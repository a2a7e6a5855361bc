"""GPU capture's staging (vigil/capture/device_staging.py) on the CPU: a stand-in for the side CUDA
stream (HeldStream) takes each copy's snapshot when it is started, as the training stream's
device-to-device copy does, and lands it in its host buffer only when the test runs the stream, so
the tests see what waits for what: the pool's bounds and reuse, a step dropped when the pool is
exhausted (training never waits for a buffer), steps reaching the writer whole and in order once
their copies are done, every buffer returned, and the hook itself staging every tensor it saves."""
import json
import logging
import threading
import time

import numpy as np
import pytest
import torch

import vigil
import vigil.pytorch as smd
from vigil import _vigil
from vigil.collection import CollectionManager
from vigil.capture import device_staging
from vigil.capture.device_staging import StagedWriter, StagingPool, host_view
from vigil.capture.pytorch import Hook, make_numpy_array

BUDGET = 64 << 20


class HeldStream:
    """The device side of staging for CPU tensors: copies run in order when the stream runs (at once
    unless held); events are threading.Events."""

    def __init__(self, held=False):
        self.held = held
        self.pending = []
        self.lock = threading.Lock()
        self.allocations = 0
        self.copies = 0

    @staticmethod
    def handles(tensor):
        return True

    def allocate(self, nbytes):
        self.allocations += 1
        return torch.empty(nbytes, dtype=torch.uint8)

    def start_copy(self, value, buffer):
        snapshot = value.detach().clone(memory_format=torch.contiguous_format)  # the training stream's copy
        event = threading.Event()
        with self.lock:
            self.pending.append((snapshot, buffer, event))
            self.copies += 1
        if not self.held:
            self.run()
        return event

    def run(self):
        self.held = False
        with self.lock:
            pending, self.pending = self.pending, []
        for snapshot, buffer, event in pending:
            host_view(buffer, snapshot).copy_(snapshot)
            event.set()

    @staticmethod
    def wait(event):
        if not event.wait(timeout=60):
            raise RuntimeError("a copy never finished")


def _until(predicate, timeout=30):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _collections(*names):
    manager = CollectionManager()
    for name in names:
        manager.get("default").add_tensor_name(name)
    return json.dumps(manager.to_json_dict())


def _staged(tmp_path, stream, pool_bytes=BUDGET):
    writer = _vigil.QueuedWriter(str(tmp_path), "worker_0", 1, BUDGET)
    return StagedWriter(writer, stream, BUDGET, pool_bytes, make_numpy_array)


def test_the_pool_stays_within_its_bound_reuses_buffers_and_says_when_it_is_full():
    allocated = []
    pool = StagingPool(1000, lambda n: allocated.append(n) or torch.empty(n, dtype=torch.uint8))
    a, b = pool.acquire(400), pool.acquire(500)
    assert a.numel() == 400 and b.numel() == 500 and pool.allocated_bytes == 900
    assert pool.acquire(200) is None  # 1100 > 1000: full, nothing allocated
    assert allocated == [400, 500] and pool.in_use == 2
    pool.release(b)
    assert pool.acquire(300) is b  # the smallest free buffer that holds it, reused
    pool.release(a)
    pool.release(b)
    assert pool.in_use == 0
    # A value larger than any free buffer: free buffers give up their room while the bound needs it
    c = pool.acquire(600)
    assert c.numel() == 600 and pool.allocated_bytes <= 1000 and allocated == [400, 500, 600]
    assert pool.acquire(2000) is None  # never more than the bound, whatever is free
    # Buffers of other sizes before the one that fits (tensors are told apart by identity, never
    # compared element by element)
    pool = StagingPool(10000, lambda n: torch.empty(n, dtype=torch.uint8))
    small, large = pool.acquire(4), pool.acquire(128)
    pool.release(small)
    pool.release(large)
    assert pool.acquire(100) is large and pool.acquire(4) is small and pool.in_use == 2


def test_staged_steps_reach_the_writer_whole_in_order_once_their_copies_are_done(tmp_path):
    stream = HeldStream(held=True)
    w = _staged(tmp_path / "t", stream)
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    bf = torch.linspace(-2, 2, 6, dtype=torch.bfloat16)
    for step in range(3):
        w.begin_step(step, int(smd.modes.TRAIN), step)
        w.write_device("t", t, False, [("mean", False)], True)
        w.write_device("bf", bf, False, [], True)
        w.write("scalar/s", np.array([float(step)]), False, [], True)
        w.end_step()
        t.add_(100)  # in place, after the copy started: the saved value is the one at the save
    # Training went on while every copy was held; nothing reached the writer yet
    assert stream.copies == 6 and w.pool.in_use == 9
    time.sleep(0.2)
    assert w.writer.stats()["written_steps"] == 0
    stream.run()
    w.publish_collections(_collections("t", "bf", "scalar/s"))
    assert w.close(True) is None
    assert w.pool.in_use == 0
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 1, 2]
    for step in range(3):
        expected = np.arange(12, dtype=np.float32).reshape(3, 4) + 100 * step
        np.testing.assert_array_equal(tr.tensor("t").value(step), expected)
        assert tr.tensor("t").reduction_value(step, "mean") == pytest.approx(expected.mean())
        np.testing.assert_array_equal(tr.tensor("bf").value(step), bf.float().numpy())
        assert float(tr.tensor("scalar/s").value(step)[0]) == step
    assert not tr.has_tensor("vigil/dropped_step")


def test_an_exhausted_pool_drops_the_step_without_waiting_and_its_buffers_come_back(tmp_path):
    stream = HeldStream(held=True)
    w = _staged(tmp_path / "t", stream, pool_bytes=1000)
    big = torch.ones(200, dtype=torch.float32)  # 800 bytes: one fits in the pool, two do not
    w.begin_step(0, int(smd.modes.TRAIN), 0)
    w.write_device("v", big, False, [], True)
    w.end_step()
    w.begin_step(1, int(smd.modes.TRAIN), 1)  # step 0's buffer is still being copied into
    w.write_device("v", big * 2, False, [], True)
    w.write("scalar/s", np.array([1.0]), False, [], True)  # the rest of a dropped step is dropped too
    w.end_step()
    assert w.pool.allocated_bytes <= 1000 and stream.copies == 1
    stream.run()
    _until(lambda: w.pool.in_use == 0)
    w.begin_step(2, int(smd.modes.TRAIN), 2)
    w.write_device("v", big * 3, False, [], True)
    w.end_step()
    w.publish_collections(_collections("v"))
    assert w.close(True) is None
    assert stream.allocations == 1 and w.pool.in_use == 0  # step 2 reused step 0's buffer
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 1, 2]
    assert tr.tensor("vigil/dropped_step").steps() == [1]
    assert tr.tensor("v").steps() == [0, 2]
    np.testing.assert_array_equal(tr.tensor("v").value(2), np.full(200, 3.0, dtype=np.float32))
    assert not tr.has_tensor("scalar/s")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.relu = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def _train(out_dir, steps=5):
    torch.manual_seed(0)
    model, crit = Net(), torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook(out_dir=str(out_dir), save_config=smd.SaveConfig(save_interval=2),
                    include_collections=["weights", "biases", "gradients", "losses", "outputs"])
    hook.register_module(model)
    hook.register_loss(crit)
    hook.set_mode(smd.modes.TRAIN)
    x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    for step in range(steps):
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        hook.save_scalar("lr", 0.1 * step)
    hook.close()
    return hook


def test_the_hook_stages_every_tensor_it_saves_and_writes_what_the_direct_path_writes(tmp_path, monkeypatch):
    _train(tmp_path / "direct")
    streams = []
    monkeypatch.setattr(Hook, "_device_copies", staticmethod(lambda: streams.append(HeldStream()) or streams[-1]))
    hook = _train(tmp_path / "staged")
    assert len(streams) == 1 and streams[0].copies > 0 and hook._staging.pool.in_use == 0
    direct, staged = vigil.create_trial(str(tmp_path / "direct")), vigil.create_trial(str(tmp_path / "staged"))
    assert staged.steps() == direct.steps() == [0, 2, 4]
    assert staged.tensor_names() == direct.tensor_names()
    for name in direct.tensor_names():
        assert staged.tensor(name).steps() == direct.tensor(name).steps(), name
        for step in direct.tensor(name).steps():
            np.testing.assert_array_equal(staged.tensor(name).value(step), direct.tensor(name).value(step))


class FailingStream(HeldStream):
    @staticmethod
    def wait(event):
        raise RuntimeError("injected: the copy failed")


def test_a_fault_on_the_staging_thread_disables_the_hook_and_training_finishes(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(Hook, "_device_copies", staticmethod(FailingStream))
    with caplog.at_level(logging.ERROR, logger="vigil.hook"):
        hook = _train(tmp_path / "t", steps=8)
    assert hook._disabled
    faults = [r.getMessage() for r in caplog.records if "vigil hook disabled" in r.getMessage()]
    assert len(faults) == 1 and "injected: the copy failed" in faults[0]


def test_cuda_copies_are_chosen_only_where_the_process_uses_cuda():
    expected = torch.cuda.is_available() and torch.cuda.is_initialized()
    assert (Hook._device_copies() is not None) == expected
    assert isinstance(Hook._device_copies(), device_staging.CudaCopies) or not expected
