"""The profiler readers over an s3:// prefix: a small profiler folder uploaded to the S3 test server
(tests/support/s3_test_server.py, s3rver behind a signature-checking proxy) reads back as the local
folder does, through ProfilerTrial (create_trial(..., profiler=True)), the S3 readers of smdebug's
names and PandasFrame."""
import json
import os
import sys

import pytest

from conftest import REPO

from vigil import _vigil
from vigil.profiler import (LocalAlgorithmMetricsReader, LocalSystemMetricsReader, PandasFrame, ProfilerTrial,
                            S3AlgorithmMetricsReader, S3SystemMetricsReader, TraceEventParser)
from vigil.trials import create_trial

sys.path.insert(0, os.path.join(REPO, "tests", "support"))
from s3_test_server import S3TestServer  # noqa: E402

T0 = 1591160699  # the system file's name: its first sample's second
SYSTEM = "system/incremental/2020060305/{}.algo-1.json".format(T0)
TRACE = "framework/pevents/2020060305/1591160700000000_0-algo-1_pythontimeline.json"


def sample(type, name, value, t):
    return json.dumps({"Type": type, "Name": name, "Dimension": "Utilization", "Value": value, "NodeId": "algo-1",
                       "Timestamp": t}) + "\n"


def write_profiler_folder(root):
    for rel, text in [
        (SYSTEM, sample("cpu", "cpu0", 10.0, T0 + 0.5) + sample("gpu", "gpu0", 80.0, T0 + 1.0)),
        (TRACE, json.dumps([
            {"name": "process_name", "ph": "M", "pid": 0,
             "args": {"start_time_since_epoch_in_micros": T0 * 1000000, "name": "Step:ModeKeys.TRAIN"}},
            {"name": "step0", "ph": "X", "pid": 0, "ts": 100, "dur": 50, "args": {"step_num": 0}},
            {"name": "step1", "ph": "X", "pid": 0, "ts": 200, "dur": 50, "args": {"step_num": 1}}])),
    ]:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


@pytest.fixture(scope="module")
def s3_server():
    with S3TestServer(buckets=["trials"]) as server:
        yield server


@pytest.fixture
def uploaded(tmp_path, s3_server, monkeypatch):
    """(local folder, s3:// location) holding the same profiler files."""
    for key, value in s3_server.environment().items():
        monkeypatch.setenv(key, value)
    local = str(tmp_path / "profiler-output")
    write_profiler_folder(local)
    location = "s3://trials/{}/profiler-output".format(tmp_path.name)
    report = _vigil.TrialUploader(local, location, 0.05).finish(10)
    assert report["error"] is None and report["files_uploaded"] == 2
    return local, location


def values(events):
    return [(e.type, e.name, e.value, e.timestamp) for e in events]


def names(events):
    return [(e.event_name, e.start_time, e.end_time, e.node_id) for e in events]


def test_the_profiler_trial_reads_an_s3_prefix_as_the_local_folder(uploaded, s3_server):
    local, location = uploaded
    remote, here = create_trial(location, profiler=True), create_trial(local, profiler=True)
    assert isinstance(remote, ProfilerTrial) and remote.trial_dir == location
    assert isinstance(remote.system_metrics_reader, S3SystemMetricsReader)
    assert isinstance(remote.framework_metrics_reader, S3AlgorithmMetricsReader)
    assert remote.get_first_timestamp() == here.get_first_timestamp() == T0 * 1000000
    start, end = T0 * 1000000, (T0 + 2) * 1000000
    system = remote.get_system_metrics(start, end)
    assert values(system) == values(here.get_system_metrics(start, end))
    assert values(system) == [("cpu", "cpu0", 10.0, T0 + 0.5), ("gpu", "gpu0", 80.0, T0 + 1.0)]
    framework = remote.get_framework_metrics(start, end)
    assert names(framework) == names(here.get_framework_metrics(start, end))
    assert [e.event_name for e in framework] == ["step0", "step1"] and framework[0].node_id == "algo-1-0"
    assert not remote.job_finished()
    # the end marker, uploaded by itself
    marker_dir = os.path.join(local, "..", "marker")
    os.makedirs(os.path.join(marker_dir, "framework"))
    open(os.path.join(marker_dir, "framework", "training_job_end.ts"), "w").close()
    assert _vigil.TrialUploader(marker_dir, location, 0.05).finish(10)["error"] is None
    assert remote.job_finished()


def test_smdebugs_s3_readers_and_pandas_over_the_prefix(uploaded):
    local, location = uploaded
    system = S3SystemMetricsReader(location)
    assert (system.s3_trial_path, system.bucket_name, system.prefix) == (location, "trials",
                                                                         location[len("s3://trials/"):])
    start, end = T0 * 1000000, (T0 + 2) * 1000000
    assert values(system.get_events(start, end, event_type="gpu")) == [("gpu", "gpu0", 80.0, T0 + 1.0)]
    assert system.get_timestamp_of_first_available_file() == T0 * 1000000
    parsers = system.get_all_event_parsers()
    assert len(parsers) == 1 and parsers[0].path == SYSTEM and len(parsers[0].get_all_events()) == 2
    framework = S3AlgorithmMetricsReader(location)
    parsers = framework.get_all_event_parsers()
    assert len(parsers) == 1 and isinstance(parsers[0], TraceEventParser)
    assert [e.event_name for e in parsers[0].get_all_events()] == ["step0", "step1"]
    parsers[0].read_trace_file()  # read again, through the store
    assert len(parsers[0].get_all_events()) == 2
    assert [e.event_name for e in framework.parse_event_files(TRACE)] == ["step0", "step1"]
    assert [e.event_name for e in framework.get_events_by_step(1, 2)] == ["step1"]
    assert (LocalAlgorithmMetricsReader(local).get_current_time_range_for_event_query()
            == framework.get_current_time_range_for_event_query())
    assert values(LocalSystemMetricsReader(local).get_events(start, end)) == values(system.get_events(start, end))
    remote, here = PandasFrame(location), PandasFrame(local)
    assert remote.start_time == here.start_time
    assert remote.get_all_framework_metrics().equals(here.get_all_framework_metrics())
    assert remote.get_all_system_metrics().equals(here.get_all_system_metrics())
    with pytest.raises(ValueError, match="not an s3:// location"):
        S3SystemMetricsReader(local)


def test_errors_name_the_s3_object_and_never_the_credentials(uploaded):
    _, location = uploaded
    bad = location.replace("profiler-output", "damaged")
    local_bad = os.path.join(os.path.dirname(uploaded[0]), "damaged")
    os.makedirs(os.path.join(local_bad, os.path.dirname(TRACE)))
    with open(os.path.join(local_bad, TRACE), "w") as f:
        f.write("{not a trace")
    assert _vigil.TrialUploader(local_bad, bad, 0.05).finish(10)["error"] is None
    with pytest.raises(Exception) as failed:
        S3AlgorithmMetricsReader(bad).get_events(0, 2 * 10**15)
    message = str(failed.value)
    assert bad + "/" + TRACE in message and "S3RVER" not in message
