"""_vigil.TensorBoardWriter checked independently of Vigil's decoders: every record is read by a
TFRecord reader written here (CRC32C and its mask from the format spec §2.2) and parsed with classes
that protoc generates, at test time, from tensorboard_protos/tb_event.proto (TensorBoard's public
field numbers). Histograms are compared with numpy's np.histogram over TensorFlow's default edges,
trimmed as smdebug (tensorboardX) trims them. Needs protoc and google.protobuf (Debian
protobuf-compiler, python3-protobuf): without them these tests fail."""
import importlib
import os
import socket
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

from vigil import _vigil
from vigil.exceptions import SMDebugNotImplementedError, SMDebugRuntimeError, SMDebugValueError

PROTO_DIR = os.path.join(os.path.dirname(__file__), "tensorboard_protos")
TRAIN, EVAL = 1, 2
DBL_MAX = np.finfo(np.float64).max


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """The generated module tb_event_pb2."""
    out = str(tmp_path_factory.mktemp("tb_pb2"))
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        pytest.fail("google.protobuf is missing: apt-get install python3-protobuf")
    try:
        subprocess.run(["protoc", "--proto_path=" + PROTO_DIR, "--python_out=" + out, "tb_event.proto"],
                       check=True, capture_output=True)
    except FileNotFoundError:
        pytest.fail("protoc is missing: apt-get install protobuf-compiler")
    sys.path.insert(0, out)
    try:
        return importlib.import_module("tb_event_pb2")
    finally:
        sys.path.remove(out)


# ---- CRC32C (Castagnoli, reflected 0x82F63B78) and the TFRecord mask ----

def _crc_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283


def records(path):
    """The payloads of a TFRecord file whose footers are real masked payload CRCs."""
    with open(path, "rb") as f:
        data = f.read()
    out, i = [], 0
    while i < len(data):
        assert len(data) - i >= 16, "truncated record at %d" % i
        (length,) = struct.unpack_from("<Q", data, i)
        (length_crc,) = struct.unpack_from("<I", data, i + 8)
        assert length_crc == masked(crc32c(data[i:i + 8])), "length CRC at %d" % i
        payload = data[i + 12:i + 12 + length]
        assert len(payload) == length
        (footer,) = struct.unpack_from("<I", data, i + 12 + length)
        assert footer == masked(crc32c(payload)), "payload CRC at %d" % i
        out.append(payload)
        i += 16 + length
    return out


def events(pb, path):
    out = []
    for payload in records(path):
        ev = pb.Event()
        ev.ParseFromString(payload)
        # Python's protobuf writes the same bytes: ascending fields, no proto3 defaults, packed doubles.
        assert ev.SerializeToString() == payload
        out.append(ev)
    return out


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


def test_first_event_is_the_file_version(pb, tmp_path):
    before = time.time()
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 0)
    w.close()
    (ev,) = events(pb, w.path)
    assert ev.WhichOneof("what") == "file_version" and ev.file_version == "brain.Event:2"
    assert ev.step == 0
    assert before - 1 <= ev.wall_time <= time.time() + 1


def test_scalars(pb, tmp_path):
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 3)
    w.add_scalar("loss", 0.1, 3, 1000.5)
    w.add_scalar("scalar/zero", 0.0, 4, 1001.0)
    w.add_scalar("bad tag:0", -2.5, 5, 1002.0)
    w.close()
    evs = events(pb, w.path)
    assert len(evs) == 4
    got = [(e.wall_time, e.step, e.summary.value[0].tag, e.summary.value[0].WhichOneof("value"),
            e.summary.value[0].simple_value) for e in evs[1:]]
    assert got == [(1000.5, 3, "loss", "simple_value", float(np.float32(0.1))),
                   (1001.0, 4, "scalar/zero", "simple_value", 0.0),
                   (1002.0, 5, "bad_tag_0", "simple_value", -2.5)]
    assert all(len(e.summary.value) == 1 for e in evs[1:])


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


def test_histograms_match_numpy(pb, tmp_path):
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 0)
    for i, a in enumerate(ARRAYS.values()):
        w.add_histogram("weights/" + list(ARRAYS)[i], a, i, 50.0 + i)
    w.close()
    evs = events(pb, w.path)
    assert len(evs) == 1 + len(ARRAYS)
    for i, (name, a) in enumerate(ARRAYS.items()):
        ev = evs[1 + i]
        assert (ev.step, ev.wall_time) == (i, 50.0 + i)
        (v,) = ev.summary.value
        assert v.tag == "weights/" + name and v.WhichOneof("value") == "histo", name
        check_histogram(v.histo, a)


def test_non_finite_elements_are_skipped(pb, tmp_path):
    a = np.array([np.nan, 1.0, np.inf, 2.0, -np.inf, 4.0])
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 0)
    w.add_histogram("h", a, 1, 1.0)
    w.add_histogram("all_nan", np.full(4, np.nan, dtype=np.float32), 1, 1.0)
    w.add_histogram("empty", np.zeros(0), 1, 1.0)
    w.add_histogram("bools", np.array([True, False]), 1, 1.0)
    w.close()
    evs = events(pb, w.path)
    assert len(evs) == 2  # the file version and "h" only
    histo = evs[1].summary.value[0].histo
    assert (histo.num, histo.min, histo.max, histo.sum, histo.sum_squares) == (3, 1, 4, 7, 21)
    check_histogram(histo, a)


def test_flush_reaches_the_tmp_file(pb, tmp_path):
    w = _vigil.TensorBoardWriter(str(tmp_path), TRAIN, 0)
    w.add_scalar("a", 1.0, 1, 1.0)
    w.flush()
    assert len(records(w.path + ".tmp")) == 2
    w.close()
    assert len(records(w.path)) == 2


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

def test_the_pytorch_hook_exports_scalars_and_histograms(pb, tmp_path):
    """vigil.pytorch.Hook with export_tensorboard: per mode and step, the losses and save_scalar values
    as scalars, the saved tensors of collections with save_histogram as histograms (smdebug-format §1.7)."""
    import torch
    import vigil.pytorch as smd

    torch.manual_seed(0)
    model, crit = torch.nn.Linear(3, 2), torch.nn.MSELoss()
    hook = smd.Hook(out_dir=str(tmp_path / "t"), export_tensorboard=True, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "losses"])
    hook.register_module(model)
    hook.register_loss(crit)
    hook.set_mode(smd.modes.TRAIN)
    losses = []
    for step in range(3):
        loss = crit(model(torch.randn(4, 3)), torch.randn(4, 2))
        loss.backward()
        hook.save_scalar("lr", 0.1 * step)
        losses.append(loss.item())
    hook.close()
    folder = tmp_path / "t" / "tensorboard" / "TRAIN"
    files = sorted(os.listdir(folder))
    assert len(files) == 3 and all(f.endswith(".tfevents") and not f.endswith(".tmp") for f in files)
    scalars, histograms = {}, {}
    for f in files:
        for ev in events(pb, folder / f)[1:]:
            for v in ev.summary.value:
                if v.HasField("histo"):
                    histograms.setdefault(v.tag, []).append((ev.step, v.histo))
                else:
                    scalars.setdefault(v.tag, []).append((ev.step, v.simple_value))
    assert [s for s, _ in scalars["MSELoss_output_0"]] == [0, 1, 2]
    np.testing.assert_allclose([v for _, v in scalars["MSELoss_output_0"]], losses, rtol=1e-6)
    assert [v for _, v in scalars["scalar/lr"]] == pytest.approx([0.0, 0.1, 0.2])
    (step, h), = histograms["weights/Linear_weight"][:1]
    assert step == 0 and h.num == 6
    assert "losses/MSELoss_output_0" not in histograms  # losses never get histograms

    # tensorboard_dir: there instead of <out_dir>/tensorboard, and without export_tensorboard.
    hook = smd.Hook(out_dir=str(tmp_path / "u"), tensorboard_dir=str(tmp_path / "tb"),
                    save_config=smd.SaveConfig(save_interval=1))
    model = torch.nn.Linear(3, 2)
    hook.register_module(model)
    hook.register_loss(crit)
    hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        crit(model(torch.randn(4, 3)), torch.randn(4, 2))
    hook.close()
    assert len(os.listdir(tmp_path / "tb" / "EVAL")) == 1 and not (tmp_path / "u" / "tensorboard").exists()
