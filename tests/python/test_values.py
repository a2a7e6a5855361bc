"""Values as numpy arrays: zero-copy over the host's buffer, read-only, kept alive by a C++ owner;
DLPack export; the GIL released while the host reads."""
import gc
import sys
import threading

import numpy as np
import pytest

from conftest import trial_dir
from real_readers import real_readers_agree  # noqa: F401 (a fixture)

import vigil
from vigil import _vigil
from vigil.trials import HostTrial, Trial


@pytest.fixture(scope="module")
def trial():
    return vigil.create_trial(trial_dir("mixed_dtypes"))


def test_value_is_a_read_only_view_of_the_host_buffer(trial):
    arr = trial.tensor("dt_float32_3d").value(0)
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32 and arr.shape == (2, 3, 4)
    assert arr.flags.writeable is False
    assert arr.flags.owndata is False
    owner = arr.base
    assert isinstance(owner, _vigil.HostBuffer)
    # The array's data pointer is the host buffer's address: no copy was made.
    assert arr.__array_interface__["data"][0] == owner.address != 0
    assert owner.nbytes == arr.nbytes and owner.shape == arr.shape and owner.dtype == "float32"
    with pytest.raises(ValueError):
        arr[0, 0, 0] = 1.0
    with pytest.raises(ValueError):
        arr.flags.writeable = True  # numpy refuses: the base is not writeable memory it owns
    # The buffer behind Tensor.buffer() is the same kind of owner, at a stable address per read.
    buf = trial.tensor("dt_float32_3d").buffer(0)
    assert np.array_equal(np.asarray(buf), arr)


def test_owner_keeps_the_value_alive(trial):
    arr = trial.tensor("Linear_weight").value(1)
    expected = arr.copy()
    del trial._tensors["Linear_weight"]
    gc.collect()
    owner = arr.base
    assert sys.getrefcount(owner) >= 2
    # Reading many other values does not disturb the first one's memory.
    for s in range(4):
        for name in trial.tensor_names():
            if name != "dt_strings":
                trial.tensor(name).value(s)
    assert np.array_equal(arr, expected)


@pytest.mark.parametrize("name,dtype", [("dt_float16", np.float16), ("dt_float64", np.float64), ("dt_int8", np.int8),
                                        ("dt_int16", np.int16), ("dt_int32", np.int32), ("dt_int64", np.int64),
                                        ("dt_uint8", np.uint8), ("dt_bool", np.bool_), ("dt_scalar_bool", np.bool_),
                                        ("dt_scalar_float32", np.float32)])
def test_dtypes(trial, name, dtype):
    arr = trial.tensor(name).value(0)
    assert arr.dtype == dtype
    assert arr.flags.writeable is False
    assert isinstance(arr.base, _vigil.HostBuffer)


def test_strings_are_unicode_arrays(trial):
    arr = trial.tensor("dt_strings").value(0)
    assert arr.dtype.kind == "U" and arr.tolist() == ["step", "0", "\u00e9\u2713"]
    assert arr.flags.writeable is False
    with pytest.raises(ValueError):
        arr[0] = "x"


def test_dlpack(trial):
    arr = trial.tensor("dt_float64").value(2)
    owner = arr.base
    assert owner.__dlpack_device__() == (1, 0)
    again = np.from_dlpack(owner)
    assert again.__array_interface__["data"][0] == owner.address  # zero-copy through DLPack too
    assert np.array_equal(again, arr)
    assert again.flags.writeable is False  # numpy marks DLPack imports read-only
    cap = owner.__dlpack__()
    assert type(cap).__name__ == "PyCapsule"
    del cap  # an unconsumed capsule frees its tensor
    with pytest.raises(TypeError):
        trial.tensor("dt_strings").buffer(0).__dlpack__()


def test_reductions_are_numpy_scalars(trial):
    r = trial.tensor("dt_float16").reduction_value(0, "mean")
    assert isinstance(r, np.float16)
    r = trial.tensor("dt_int32").reduction_value(0, "sum")
    assert isinstance(r, np.int64) and int(r) == 1976
    r = trial.tensor("dt_int32").reduction_value(0, "max", abs=True)
    assert isinstance(r, np.int32) and int(r) == 1356


def test_api_trial_zero_copy_views_are_released():
    """Over the plugin ABI without copying, the array holds the host's view and releases it when it
    goes; with copy_values (the evaluator's mode) nothing is held after the call."""
    core = _vigil.open_api_trial(trial_dir("mixed_dtypes"), copy_values=False)
    t = HostTrial("api", core)
    arr = t.tensor("Linear_weight").value(0)
    assert arr.flags.writeable is False and isinstance(arr.base, _vigil.HostBuffer)
    assert core.outstanding_views() == 1
    del arr
    gc.collect()
    assert core.outstanding_views() == 0

    core = _vigil.open_api_trial(trial_dir("mixed_dtypes"), copy_values=True)
    t = HostTrial("api-copy", core)
    arr = t.tensor("Linear_weight").value(0)
    assert core.outstanding_views() == 0
    assert np.array_equal(arr, vigil.create_trial(trial_dir("mixed_dtypes")).tensor("Linear_weight").value(0))


@pytest.mark.usefixtures("real_readers_agree")  # smdebug 1.0.34 reads the trials alike
def test_gil_is_released_while_the_host_waits(tmp_path):
    """With a 30 s switch interval Python only changes threads when one releases the GIL: the main
    thread gets on with its work while another thread blocks in wait_for_steps, so the wait must
    have released it."""
    import time

    from vigil.writer import TrialWriter

    out = str(tmp_path / "live")
    w = TrialWriter(out, save_interval=1)
    w.begin_step()
    w.save_tensor("x", np.zeros(1))
    w.begin_step()  # publishes step 0
    t = vigil.create_trial(out)
    old = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        started = time.monotonic()
        th = threading.Thread(target=lambda: t.wait_for_steps([2]))
        th.start()
        time.sleep(0.2)  # the other thread is now waiting in the host
        sum(range(200000))  # Python work on this thread
        for s in (1, 2):
            w.save_tensor("x", np.full(1, s, dtype=np.float64))
            w.begin_step()
        w.close()
        th.join(20)
        elapsed = time.monotonic() - started
    finally:
        sys.setswitchinterval(old)
    assert not th.is_alive()
    assert elapsed < 10, elapsed
    assert t.steps() == [0, 1, 2]
