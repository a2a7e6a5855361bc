"""_vigil.TensorBoardWriter and the hook's TensorBoard output, read by TensorBoard's own reader (the
`tensorboard` package from PyPI, independent of Vigil's encoder): its record reader, which checks both
masked CRC32Cs of every record, its Event protos, and EventAccumulator, what TensorBoard's backend loads
(keeping every event here). Histograms are compared with numpy's np.histogram over TensorFlow's default
edges, trimmed as smdebug (tensorboardX) trims them. Needs the `tensorboard` package: without it these
tests fail."""
import os
import socket
import time

import numpy as np
import pytest

from real_readers import real_readers_agree  # noqa: F401 (a fixture)
from vigil import _vigil
from vigil.exceptions import SMDebugNotImplementedError, SMDebugRuntimeError, SMDebugValueError

TRAIN, EVAL = 1, 2
DBL_MAX = np.finfo(np.float64).max

try:
    from tensorboard.backend.event_processing import event_accumulator, event_file_loader
    from tensorboard.compat.proto import event_pb2
except ImportError:  # reported by each test that needs it, never skipped
    event_accumulator = event_file_loader = event_pb2 = None


def need_tensorboard():
    if event_accumulator is None:
        pytest.fail("the tensorboard package is missing (pip install tensorboard): TensorBoard's reader checks "
                    "these files")


# ---- TensorBoard's reader ----

def records(path):
    """The record payloads of a TensorBoard event file, as TensorBoard's loader reads them. The loader
    stops quietly at a record whose CRC or length is wrong (a file still being written), so the
    records must also account for every byte of the file: 8 length + 4 CRC + payload + 4 CRC each."""
    need_tensorboard()
    out = list(event_file_loader.RawEventFileLoader(str(path)).Load())
    assert sum(16 + len(r) for r in out) == os.path.getsize(path), \
        "TensorBoard's reader stopped at a damaged record of {} after {} records".format(path, len(out))
    return out


def events(path):
    """TensorBoard's Event protos of the file."""
    out = []
    for payload in records(path):
        ev = event_pb2.Event.FromString(payload)
        # protobuf writes the same bytes: Vigil writes ascending fields, no proto3 defaults, packed doubles.
        assert ev.SerializeToString() == payload
        out.append(ev)
    return out


def accumulate(path):
    """EventAccumulator over a file or a folder of event files, keeping every event."""
    need_tensorboard()
    return event_accumulator.EventAccumulator(str(path), size_guidance=event_accumulator.STORE_EVERYTHING_SIZE_GUIDANCE,
                                              purge_orphaned_data=True).Reload()


def scalars(acc, tag):
    return [(e.wall_time, e.step, e.value) for e in acc.Scalars(tag)]


def test_a_damaged_record_is_caught(tmp_path):
    """The reader above notices a payload whose CRC does not match (TensorBoard's loader would stop
    there without a word)."""
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 0)
    w.add_scalar("a", 1.0, 1, 1.0)
    w.add_scalar("b", 2.0, 2, 2.0)
    w.close()
    assert len(records(w.path)) == 3
    data = bytearray(open(w.path, "rb").read())
    data[-5] ^= 0x01  # the last payload's last byte
    with open(w.path, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(AssertionError, match="damaged record"):
        records(w.path)


# ---- the reference histogram ----

def tf_default_edges():
    positive = []
    v = 1e-12
    while v < 1e20:
        positive.append(v)
        v *= 1.1
    return np.array([-DBL_MAX] + [-x for x in reversed(positive)] + [0.0] + positive + [DBL_MAX])


def reference_histogram(values):
    """(limits, counts) of the finite values: np.histogram's buckets [e_i, e_i+1), trimmed to the
    non-empty range plus one empty bucket on the left, each bucket named by its right edge."""
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    edges = tf_default_edges()
    counts, _ = np.histogram(x, bins=edges)
    nonzero = np.flatnonzero(counts)
    first, last = nonzero[0], nonzero[-1]
    if first == 0:
        return [edges[0]] + list(edges[1:last + 2]), [0.0] + list(counts[:last + 1].astype(float))
    return list(edges[first:last + 2]), list(counts[first - 1:last + 1].astype(float))


def check_histogram(histo, values):
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    assert histo.num == len(x)
    assert histo.min == x.min() and histo.max == x.max()
    assert histo.sum == pytest.approx(x.sum(), rel=1e-12)
    assert histo.sum_squares == pytest.approx(x.dot(x), rel=1e-12)
    limits, counts = reference_histogram(x)
    assert list(histo.bucket_limit) == limits
    assert list(histo.bucket) == counts
    assert sum(histo.bucket) == histo.num


# ---- tests ----

def test_file_layout_and_publication(tmp_path):
    tb = str(tmp_path / "tb")
    w = _vigil.TensorBoardWriter(tb, EVAL, 12)
    name = "%012d_%d_%s.tfevents" % (12, os.getpid(), socket.gethostname())
    assert w.path == os.path.join(tb, "EVAL", name)
    assert os.path.exists(w.path + ".tmp") and not os.path.exists(w.path)
    w.close()
    assert os.listdir(os.path.join(tb, "EVAL")) == [name]


def test_first_event_is_the_file_version(tmp_path):
    before = time.time()
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 0)
    w.close()
    (ev,) = events(w.path)
    assert ev.WhichOneof("what") == "file_version" and ev.file_version == "brain.Event:2"
    assert ev.step == 0
    assert before - 1 <= ev.wall_time <= time.time() + 1
    acc = accumulate(w.path)
    assert acc.file_version == 2.0 and acc.FirstEventTimestamp() == ev.wall_time
    assert not any(acc.Tags()[kind] for kind in (event_accumulator.SCALARS, event_accumulator.HISTOGRAMS))


def test_scalars(tmp_path):
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 3)
    w.add_scalar("loss", 0.1, 3, 1000.5)
    w.add_scalar("scalar/zero", 0.0, 4, 1001.0)
    w.add_scalar("bad tag:0", -2.5, 5, 1002.0)
    w.close()
    evs = events(w.path)
    assert len(evs) == 4
    assert all(len(e.summary.value) == 1 and e.summary.value[0].WhichOneof("value") == "simple_value"
               for e in evs[1:])
    acc = accumulate(w.path)
    assert sorted(acc.Tags()[event_accumulator.SCALARS]) == ["bad_tag_0", "loss", "scalar/zero"]
    assert acc.Tags()[event_accumulator.HISTOGRAMS] == []
    assert scalars(acc, "loss") == [(1000.5, 3, float(np.float32(0.1)))]
    assert scalars(acc, "scalar/zero") == [(1001.0, 4, 0.0)]
    assert scalars(acc, "bad_tag_0") == [(1002.0, 5, -2.5)]


ARRAYS = {
    "f32": np.array([-2, -0.5, 0, 0.5, 1, 1, 3], dtype=np.float32),
    "f64_wide": np.array([-1e30, -3.7e-15, 2e-13, 7.25, 1e19, 4e21, DBL_MAX]),
    "f16": (np.arange(12, dtype=np.float16) - 5) / 4,
    "i32": np.array([[-7, 0], [3, 1000000]], dtype=np.int32),
    "u8": np.arange(0, 256, 5, dtype=np.uint8),
    "i64": np.array([-(2 ** 40), 17], dtype=np.int64),
    "big_endian": np.array([1.5, -2.25, 8.0], dtype=">f8"),
    "strided": np.linspace(-3, 3, 40).reshape(5, 8)[:, ::3],
    "zeros": np.zeros(9, dtype=np.float32),
    "random": np.random.default_rng(7).normal(0, 0.05, 5000).astype(np.float32),
}


# TensorBoard's distribution compressor (run by EventAccumulator) interpolates over the DBL_MAX edge.
@pytest.mark.filterwarnings("ignore:overflow encountered in scalar multiply:RuntimeWarning")
def test_histograms_match_numpy(tmp_path):
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 0)
    for i, a in enumerate(ARRAYS.values()):
        w.add_histogram("weights/" + list(ARRAYS)[i], a, i, 50.0 + i)
    w.close()
    evs = events(w.path)
    assert len(evs) == 1 + len(ARRAYS)
    assert all(len(e.summary.value) == 1 and e.summary.value[0].WhichOneof("value") == "histo" for e in evs[1:])
    acc = accumulate(w.path)
    assert sorted(acc.Tags()[event_accumulator.HISTOGRAMS]) == sorted("weights/" + name for name in ARRAYS)
    assert acc.Tags()[event_accumulator.SCALARS] == []
    for i, (name, a) in enumerate(ARRAYS.items()):
        (h,) = acc.Histograms("weights/" + name)
        assert (h.step, h.wall_time) == (i, 50.0 + i), name
        check_histogram(h.histogram_value, a)


def test_non_finite_elements_are_skipped(tmp_path):
    a = np.array([np.nan, 1.0, np.inf, 2.0, -np.inf, 4.0])
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 0)
    w.add_histogram("h", a, 1, 1.0)
    w.add_histogram("all_nan", np.full(4, np.nan, dtype=np.float32), 1, 1.0)
    w.add_histogram("empty", np.zeros(0), 1, 1.0)
    w.add_histogram("bools", np.array([True, False]), 1, 1.0)
    w.close()
    assert len(events(w.path)) == 2  # the file version and "h" only
    acc = accumulate(w.path)
    assert acc.Tags()[event_accumulator.HISTOGRAMS] == ["h"]
    (h,) = acc.Histograms("h")
    histo = h.histogram_value
    assert (histo.num, histo.min, histo.max, histo.sum, histo.sum_squares) == (3, 1, 4, 7, 21)
    check_histogram(histo, a)


def test_flush_reaches_the_tmp_file(tmp_path):
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 0)
    w.add_scalar("a", 1.0, 1, 1.0)
    w.flush()
    assert len(records(w.path + ".tmp")) == 2
    w.close()
    assert len(records(w.path)) == 2
    assert scalars(accumulate(w.path), "a") == [(1.0, 1, 1.0)]


def test_errors(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(SMDebugRuntimeError) as e:
        _vigil.TensorBoardWriter(str(tmp_path / "file" / "tb"), TRAIN, 0)
    assert "file" in str(e.value)
    with pytest.raises(SMDebugValueError):
        _vigil.TensorBoardWriter(str(tmp_path / "tb"), 9, 0)
    w = _vigil.TensorBoardWriter(str(tmp_path / "tb"), TRAIN, 0)
    with pytest.raises(SMDebugNotImplementedError):
        w.add_histogram("s", np.array(["a", "b"]), 1, 1.0)
    with pytest.raises(SMDebugNotImplementedError):
        w.add_histogram("c", np.array([1 + 2j]), 1, 1.0)
    w.close()
    w.close()
    with pytest.raises(SMDebugRuntimeError):
        w.add_scalar("a", 1.0, 1, 1.0)


# ---- the hook's TensorBoard output ------------------------------------------------------------------

@pytest.mark.usefixtures("real_readers_agree")  # smdebug 1.0.34 reads the trials alike
def test_the_pytorch_hook_exports_scalars_and_histograms(tmp_path):
    """vigil.pytorch.Hook with export_tensorboard: per mode and step, the losses and save_scalar values
    as scalars, the saved tensors of collections with save_histogram as histograms (smdebug-format §1.7),
    one file per step, as TensorBoard loads the folder."""
    import torch
    import vigil.pytorch as smd

    torch.manual_seed(0)
    model, crit = torch.nn.Linear(3, 2), torch.nn.MSELoss()
    hook = smd.Hook(out_dir=str(tmp_path / "t"), export_tensorboard=True, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "losses"])
    hook.register_module(model)
    hook.register_loss(crit)
    hook.set_mode(smd.modes.TRAIN)
    losses, weights = [], []
    for step in range(3):
        weights.append(model.weight.detach().numpy().copy())
        loss = crit(model(torch.randn(4, 3)), torch.randn(4, 2))
        loss.backward()
        hook.save_scalar("lr", 0.1 * step)
        losses.append(loss.item())
    hook.close()
    folder = tmp_path / "t" / "tensorboard" / "TRAIN"
    files = sorted(os.listdir(folder))
    assert len(files) == 3 and all(f.endswith(".tfevents") and not f.endswith(".tmp") for f in files)
    for f in files:
        assert events(folder / f)[0].file_version == "brain.Event:2"
    acc = accumulate(folder)
    assert sorted(acc.Tags()[event_accumulator.SCALARS]) == ["MSELoss_output_0", "scalar/lr"]
    assert sorted(acc.Tags()[event_accumulator.HISTOGRAMS]) == ["weights/Linear_weight"]  # losses get none
    loss_events = acc.Scalars("MSELoss_output_0")
    assert [e.step for e in loss_events] == [0, 1, 2]
    np.testing.assert_allclose([e.value for e in loss_events], losses, rtol=1e-6)
    assert [e.step for e in acc.Scalars("scalar/lr")] == [0, 1, 2]
    assert [e.value for e in acc.Scalars("scalar/lr")] == pytest.approx([0.0, 0.1, 0.2])
    histograms = acc.Histograms("weights/Linear_weight")
    assert [h.step for h in histograms] == [0, 1, 2]
    for h, w in zip(histograms, weights):
        assert h.histogram_value.num == 6
        check_histogram(h.histogram_value, w)

    # tensorboard_dir: there instead of <out_dir>/tensorboard, and without export_tensorboard.
    hook = smd.Hook(out_dir=str(tmp_path / "u"), tensorboard_dir=str(tmp_path / "tb"),
                    save_config=smd.SaveConfig(save_interval=1))
    model = torch.nn.Linear(3, 2)
    hook.register_module(model)
    hook.register_loss(crit)
    hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        loss = crit(model(torch.randn(4, 3)), torch.randn(4, 2))
    hook.close()
    assert len(os.listdir(tmp_path / "tb" / "EVAL")) == 1 and not (tmp_path / "u" / "tensorboard").exists()
    acc = accumulate(tmp_path / "tb" / "EVAL")
    assert acc.Tags()[event_accumulator.SCALARS] == ["MSELoss_output_0"]
    (ev,) = acc.Scalars("MSELoss_output_0")
    assert ev.step == 0 and ev.value == pytest.approx(loss.item(), rel=1e-6)
