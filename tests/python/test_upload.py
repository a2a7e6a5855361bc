"""Trials bound for a store: _vigil.TrialUploader, which copies a staged trial to any location
(a folder here; s3:// once the S3 store lands, tested end to end elsewhere), and the hooks, which
stage an s3:// out_dir locally and upload it. The hook tests treat a folder destination as remote
(vigil.capture.upload.is_remote), so the whole path runs without S3."""
import logging
import os
import time

import pytest
import torch

import vigil
import vigil.pytorch as smd
from vigil import _vigil
from vigil.capture import upload as _upload

from real_readers import real_readers_agree  # noqa: F401 (a fixture)

MARKER = "training_job_end.ts"


def files(root):
    out = set()
    for folder, _, names in os.walk(root):
        for n in names:
            out.add(os.path.relpath(os.path.join(folder, n), root))
    return out


def publish(root, rel, content):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(content)
    os.rename(path + ".tmp", path)


EVENT = "events/000000000000/000000000000_worker_0.tfevents"
INDEX = "index/000000000/000000000000_worker_0.json"


def test_the_uploader_copies_what_is_published_and_nothing_half_written(tmp_path):
    staging, dest = tmp_path / "staging", tmp_path / "dest"
    staging.mkdir()
    publish(str(staging), EVENT, "event")
    publish(str(staging), INDEX, "index")
    publish(str(staging), MARKER, "")
    (staging / "events" / "000000000001").mkdir()
    (staging / "events" / "000000000001" / "x.tfevents.tmp").write_text("being written")
    up = _vigil.TrialUploader(str(staging), str(dest), 0.05)
    assert up.location == str(dest)
    report = up.finish(10)
    assert report["files_left"] == [] and report["error"] is None
    assert report["files_uploaded"] == 3
    assert files(dest) == {EVENT, INDEX, MARKER}
    assert (dest / EVENT).read_text() == "event"
    assert up.counters()["files"] == 3 and up.counters()["failures"] == 0
    assert up.take_messages() == []
    assert up.finish(10) == report  # once finished, the same report


def test_a_destination_that_refuses_writes_is_logged_once_and_reported(tmp_path):
    staging, dest = tmp_path / "staging", tmp_path / "dest"
    staging.mkdir()
    dest.mkdir()
    (dest / "events").write_text("a file where the folder should be")
    publish(str(staging), EVENT, "event")
    publish(str(staging), "events/000000000001/000000000001_worker_0.tfevents", "event 1")
    publish(str(staging), INDEX, "index")
    publish(str(staging), MARKER, "")
    up = _vigil.TrialUploader(str(staging), str(dest), 0.01)
    deadline = time.time() + 10
    while up.counters()["scans"] < 4 and time.time() < deadline:
        time.sleep(0.01)
    report = up.finish(0.2)
    assert report["files_left"] == sorted([EVENT, "events/000000000001/000000000001_worker_0.tfevents", INDEX, MARKER])
    assert "events" in report["error"]
    messages = up.take_messages()
    assert len(messages) == 1, messages
    assert str(dest) in messages[0] and "write faults are not logged" in messages[0]
    assert not (dest / INDEX).exists() and not (dest / MARKER).exists()  # nothing ahead of its event file


def test_the_uploader_refuses_a_missing_staging_folder(tmp_path):
    with pytest.raises(Exception, match="missing"):
        _vigil.TrialUploader(str(tmp_path / "missing"), str(tmp_path / "dest"))


# ---- the hooks ----------------------------------------------------------------------------------------

@pytest.fixture
def remote(tmp_path, monkeypatch):
    """A folder destination the hooks treat as remote, and the folder staging folders are made in."""
    dest = tmp_path / "bucket" / "job"
    monkeypatch.setattr(_upload, "is_remote", lambda loc: str(loc).startswith(str(tmp_path / "bucket")))
    monkeypatch.setenv(_upload.STAGING_ENV, str(tmp_path / "staging"))
    return dest


def train(hook, steps=3):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    crit = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook.register_module(model)
    hook.register_loss(crit)
    x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    for _ in range(steps):
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
    hook.close()


@pytest.mark.usefixtures("real_readers_agree")  # smdebug 1.0.34 reads the trials alike
def test_a_remote_out_dir_is_staged_and_uploaded_when_the_hook_closes(tmp_path, remote):
    hook = smd.Hook(out_dir=str(remote), save_config=smd.SaveConfig(save_interval=1), export_tensorboard=True,
                    include_collections=["weights", "gradients", "losses"])
    assert hook.out_dir == str(remote)  # the user's location, not the staging folder
    assert hook.tensorboard_dir == os.path.join(str(remote), "tensorboard")
    train(hook, steps=3)
    [staging] = os.listdir(tmp_path / "staging")
    staging = tmp_path / "staging" / staging
    assert staging.name.startswith("vigil-upload-")
    staged = files(staging)
    assert MARKER in staged and any(f.startswith("tensorboard/") for f in staged)
    assert files(remote) == staged
    for rel in staged:
        assert (remote / rel).read_bytes() == (staging / rel).read_bytes(), rel
    # The marker went last.
    marker_time = os.stat(remote / MARKER).st_mtime_ns
    assert all(os.stat(remote / rel).st_mtime_ns <= marker_time for rel in staged)
    trial = vigil.create_trial(str(remote))
    assert trial.steps() == [0, 1, 2]
    assert trial.loaded_all_steps


@pytest.mark.usefixtures("real_readers_agree")  # smdebug 1.0.34 reads the trials alike
def test_a_remote_out_dir_that_cannot_be_opened_disables_capture_and_training_goes_on(tmp_path, remote, caplog):
    (tmp_path / "bucket").write_text("a file: nothing can be created under it")
    with caplog.at_level(logging.ERROR, logger="vigil.hook"):
        hook = smd.Hook(out_dir=str(remote), save_config=smd.SaveConfig(save_interval=1))
        train(hook, steps=2)
    disabled = [r for r in caplog.records if "vigil hook disabled" in r.getMessage()]
    assert len(disabled) == 1, caplog.text
    assert "cannot stage" in disabled[0].getMessage()
    assert not os.path.exists(remote)


@pytest.mark.usefixtures("real_readers_agree")  # smdebug 1.0.34 reads the trials alike
def test_a_hook_disabled_by_a_fault_still_uploads_what_it_published(tmp_path, remote, caplog):
    hook = smd.Hook(out_dir=str(remote), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["losses"])
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    crit = torch.nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(crit)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    for _ in range(3):
        crit(model(x), y).backward()
    hook._writer.end_step()  # the last step is published first; the fault comes after
    with caplog.at_level(logging.ERROR, logger="vigil.hook"):
        hook._fault("injected")
        hook.close()
    staging = tmp_path / "staging" / os.listdir(tmp_path / "staging")[0]
    staged = files(staging)
    assert any(f.startswith("index/") for f in staged) and MARKER not in staged
    assert files(remote) == staged
