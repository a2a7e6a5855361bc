"""vigil.writer.TrialWriter: trials written from numpy arrays read back with the same values, dtypes,
steps, modes, collections, reductions and shapes; live reading while the writer runs."""
import json
import os
import threading

import numpy as np
import pytest

import vigil
from vigil.exceptions import SMDebugRuntimeError, TensorUnavailableForStep
from vigil.modes import ModeKeys
from vigil.writer import TrialWriter

from real_readers import real_readers_agree  # noqa: F401 (a fixture)

# Every trial a test writes is read by the real smdebug 1.0.34 too, with Vigil's answers.
pytestmark = pytest.mark.usefixtures("real_readers_agree")


ARRAYS = {
    "f16": np.arange(6, dtype=np.float16).reshape(2, 3) / 3,
    "f32": np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4),
    "f64": np.array([1.5, np.nan, np.inf, -np.inf]),
    "i8": np.array([-128, -1, 0, 127], dtype=np.int8),
    "i16": np.array([[-300, 2], [3, 32767]], dtype=np.int16),
    "i32": np.array([1, -2, 3], dtype=np.int32),
    "i64": np.array(2 ** 40 + 5, dtype=np.int64),
    "u8": np.array([0, 255], dtype=np.uint8),
    "b": np.array([True, False, True]),
    "big_endian": np.array([1.25, 2.5], dtype=">f8"),
    "strided": np.arange(20, dtype=np.float32).reshape(4, 5)[:, ::2],
    "strings": np.array(["a", "héllo", ""]),
}


def test_round_trip_every_dtype(tmp_path):
    out = str(tmp_path / "trial")
    with TrialWriter(out, save_interval=1) as w:
        for step in range(3):
            w.begin_step(ModeKeys.TRAIN)
            for name, a in ARRAYS.items():
                w.save_tensor(name, a + step if a.dtype.kind in "fiu" else a)
            w.save_scalar("lr", 0.1 * step)
            w.end_step()
    assert os.path.exists(os.path.join(out, "training_job_end.ts"))
    t = vigil.create_trial(out)
    assert t.steps() == [0, 1, 2] and t.steps(mode=ModeKeys.TRAIN) == [0, 1, 2]
    assert t.loaded_all_steps and t.workers() == ["worker_0"]
    for step in range(3):
        for name, a in ARRAYS.items():
            expect = a + step if a.dtype.kind in "fiu" else a
            got = t.tensor(name).value(step)
            assert got.shape == expect.shape, name
            if a.dtype.kind == "U":
                assert got.tolist() == expect.tolist()
            else:
                assert got.dtype == expect.dtype.newbyteorder("="), name
                np.testing.assert_array_equal(got, expect, err_msg=name)
        assert float(t.tensor("scalar/lr").value(step)[0]) == pytest.approx(0.1 * step)


def test_collections_reductions_shapes(tmp_path):
    out = str(tmp_path / "trial")
    g = np.array([[3.0, -4.0]], dtype=np.float32)
    with TrialWriter(out, save_interval=1) as w:
        w.add_collection("gradients", include_regex=["^grad/"], reductions=["mean", "abs_mean", "l2_norm"],
                         save_raw_tensor=False, save_shape=True)
        w.add_collection("sparse", tensor_names=["every2"], save_interval=2)
        for step in range(4):
            w.begin_step()
            w.save_tensor("grad/w", g * (step + 1))
            w.save_tensor("every2", np.array([step], dtype=np.int64))
            w.save_tensor("other", np.ones(2), collections=["custom"])
            w.end_step()
    t = vigil.create_trial(out)
    colls = t.collections()
    assert colls["gradients"].include_regex == ["^grad/"]
    rc = colls["gradients"].reduction_config
    assert rc.save_raw_tensor is False and rc.save_shape is True
    assert rc.reductions == ["mean"] and rc.abs_reductions == ["mean"] and rc.norms == ["l2"]
    assert t.tensor_names(collection="gradients") == ["grad/w"]
    assert t.tensor_names(collection="custom") == ["other"]
    grad = t.tensor("grad/w")
    with pytest.raises(TensorUnavailableForStep) as info:
        grad.value(1)
    assert info.value.has_reductions
    assert grad.shape(1) == (1, 2)
    red = grad.reduction_values(1)
    assert sorted(red) == [("l2", False), ("mean", False), ("mean", True)]
    assert float(red[("mean", True)]) == pytest.approx(7.0)
    assert float(grad.reduction_value(1, "l2")) == pytest.approx(10.0)
    assert t.tensor("every2").steps() == [0, 2]


def test_explicit_steps_workers_and_modes(tmp_path):
    out = str(tmp_path / "trial")
    writers = [TrialWriter(out, worker="worker_%d" % i, num_workers=2, save_interval=1) for i in range(2)]
    for i, w in enumerate(writers):
        for g, (mode, ms) in enumerate([(ModeKeys.TRAIN, 0), (ModeKeys.TRAIN, 1), (ModeKeys.EVAL, 0)]):
            w.begin_step_at(g, mode, ms)
            assert (w.global_step, w.mode, w.mode_step) == (g, mode, ms)
            w.save_tensor("x", np.full(2, i + 10 * g, dtype=np.float32))
            w.end_step()
    for w in writers:
        w.close()
    t = vigil.create_trial(out)
    assert t.num_workers == 2 and t.workers() == ["worker_0", "worker_1"]
    assert t.steps(mode=ModeKeys.EVAL) == [0] and t.global_step(ModeKeys.EVAL, 0) == 2
    assert t.tensor("x").workers(1) and sorted(t.tensor("x").workers(1)) == ["worker_0", "worker_1"]
    assert float(t.tensor("x").value(0, mode=ModeKeys.EVAL, worker="worker_1")[0]) == 21.0


def test_failed_run_has_no_end_marker(tmp_path):
    out = str(tmp_path / "trial")
    with pytest.raises(RuntimeError):
        with TrialWriter(out, save_interval=1) as w:
            w.begin_step()
            w.save_tensor("x", np.zeros(3))
            w.end_step()
            raise RuntimeError("training crashed")
    assert not os.path.exists(os.path.join(out, "training_job_end.ts"))
    assert os.path.isdir(os.path.join(out, "index"))
    with pytest.raises(SMDebugRuntimeError):  # writing into a finished trial is refused
        TrialWriter(str(tmp_path / "done"), save_interval=1).close()
        TrialWriter(str(tmp_path / "done"))


def test_reading_while_writing(tmp_path):
    """wait_for_steps blocks with the GIL released while another thread writes the steps."""
    out = str(tmp_path / "live")
    w = TrialWriter(out, save_interval=1)
    w.begin_step()
    w.save_tensor("x", np.zeros(1))
    w.begin_step()  # publishes step 0 and the collections file
    t = vigil.create_trial(out)
    seen = []

    def writer():
        for s in range(1, 5):
            w.save_tensor("x", np.full(1, s, dtype=np.float64))
            w.begin_step() if s < 4 else w.close()

    th = threading.Thread(target=writer)
    th.start()
    t.wait_for_steps([3])
    seen = [float(t.tensor("x").value(s)[0]) for s in range(4)]
    th.join()
    assert seen == [0.0, 1.0, 2.0, 3.0]
    t.wait_for_steps([4])
    assert t.steps() == [0, 1, 2, 3, 4]


def test_written_trial_matches_vigil_inspect(tmp_path, vigil_exe):
    import subprocess

    out = str(tmp_path / "trial")
    with TrialWriter(out, save_interval=1) as w:
        w.begin_step(ModeKeys.TRAIN)
        w.save_tensor("loss", np.float32(0.5))
        w.end_step()
    proc = subprocess.run([vigil_exe, "inspect", out, "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "loss" in json.dumps(json.loads(proc.stdout))
