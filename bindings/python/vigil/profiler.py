"""``vigil.profiler``: reading a profiler output folder or ``s3://`` prefix with smdebug's names
(``smdebug.profiler.*``), on the C++ readers (format spec §8): system metrics and framework trace
events by time range, ``TraceEvent`` objects, a trace file parser, ``ProfilerTrial`` and pandas
DataFrames (``PandasFrame``).

    from vigil.profiler import LocalSystemMetricsReader, LocalAlgorithmMetricsReader, PandasFrame
    events = LocalAlgorithmMetricsReader("/opt/ml/output/profiler").get_events(t0_us, t1_us)
    steps = PandasFrame("s3://bucket/job/profiler-output").get_all_framework_metrics()

Times are µs since the epoch unless a ``unit`` says otherwise. docs/profiler.md lists the columns.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import time
from enum import Enum
from typing import Any, List, Optional, Union

from . import _vigil
from .exceptions import NoMoreProfilerData, SMDebugNotImplementedError
from .locations import is_s3


class TimeUnits(Enum):
    """smdebug's TimeUnits (smdebug.profiler.profiler_constants)."""
    SECONDS = 1
    MILLISECONDS = 2
    MICROSECONDS = 3
    NANOSECONDS = 4


_UNITS = {TimeUnits.SECONDS: _vigil.TimeUnit.SECONDS, TimeUnits.MILLISECONDS: _vigil.TimeUnit.MILLISECONDS,
          TimeUnits.MICROSECONDS: _vigil.TimeUnit.MICROSECONDS, TimeUnits.NANOSECONDS: _vigil.TimeUnit.NANOSECONDS}
# Vigil's readers do not tell trace files apart: every event gets this file_type (smdebug keeps "" for
# Horovod timelines, which the rules read as such).
PYTHON_TIMELINE_FILE_TYPE = "pythontimeline"


def _unit(unit):
    return _UNITS[TimeUnits(unit)]


def _to_us(value, unit):
    return _vigil.to_microseconds(float(value), _unit(unit))


# ---- events ---------------------------------------------------------------------------------------------

class ThreadInfo:
    def __init__(self, tid, thread_name):
        self.tid = tid
        self.thread_name = thread_name


class ProcessInfo:
    """A phase ("process" in Chrome's terms) and the threads seen in it."""

    def __init__(self, id, name):
        self.id = id
        self.name = name
        self._threads = {}

    def add_thread(self, threadid, thread_name):
        self._threads.setdefault(threadid, ThreadInfo(threadid, thread_name))

    def get_thread_info(self, threadid):
        return self._threads.get(threadid)


class TraceEvent:
    """One framework event (smdebug's TraceEvent): start_time, end_time and duration in µs, event_name,
    event_phase (the training phase), event_args, node_id, pid, tid, phase ("X") and file_type."""

    def __init__(self, ts, name, dur, phase_pid, phase_tid, event_args, node_id, phase, file_type, event_phase="",
                 pid=0, tid=0, process_info=None):
        self.start_time = ts
        self.end_time = ts + dur
        self.duration = dur
        self.event_name = name
        self.phase_pid = phase_pid
        self.phase_tid = phase_tid
        self.event_args = event_args
        self.node_id = node_id
        self.phase = phase
        self.file_type = file_type
        self.event_phase = event_phase
        self.pid = pid
        self.tid = tid
        self.process_info = process_info

    @classmethod
    def _from_host(cls, d, file_type=PYTHON_TIMELINE_FILE_TYPE):
        return cls(d["start_us"], d["name"], d["duration"], d["phase_pid"], d["tid"], d["args"], d["node_id"], "X",
                   file_type, event_phase=d["phase"], pid=d["pid"], tid=d["tid"])

    def to_json(self):
        return {"name": self.event_name, "ph": self.phase, "ts": self.start_time, "dur": self.duration,
                "pid": self.pid, "tid": self.tid, "args": self.event_args, "event_phase": self.event_phase,
                "node_id": self.node_id}

    def __repr__(self):
        return "<TraceEvent {} {} {}+{}us node={}>".format(self.event_phase, self.event_name, self.start_time,
                                                           self.duration, self.node_id)


class ProfilerSystemEvent:
    """One system metrics sample: type, name, dimension, value, node_id, timestamp (seconds)."""
    __slots__ = ("type", "name", "dimension", "value", "node_id", "timestamp")

    def __init__(self, type, name, dimension, value, node_id, timestamp):
        self.type, self.name, self.dimension = type, name, dimension
        self.value, self.node_id, self.timestamp = value, node_id, timestamp

    @classmethod
    def _from_host(cls, d):
        return cls(d["Type"], d["Name"], d["Dimension"], d["Value"], d["NodeId"], d["Timestamp"])

    def __repr__(self):
        return "<ProfilerSystemEvent {} {} {}={} node={} t={}>".format(self.type, self.name, self.dimension,
                                                                       self.value, self.node_id, self.timestamp)


class TraceEventParser:
    """The events of trace files read into memory (smdebug's TraceEventParser), parsed by the host."""

    def __init__(self, type=""):
        self.type = type
        self._events = []
        self._sources = []  # per file read: what reads its events (as dicts) again
        self._processes = {}

    def _add(self, dicts):
        for d in dicts:
            event = TraceEvent._from_host(d, self.type or PYTHON_TIMELINE_FILE_TYPE)
            info = self._processes.get(event.phase_pid)
            if info is None:
                info = self._processes[event.phase_pid] = ProcessInfo(event.phase_pid, event.event_phase)
            info.add_thread(event.tid, str(event.tid))
            event.process_info = info
            self._events.append(event)

    def read_events_from_file(self, tracefile):
        path = str(tracefile)
        self._read(lambda: _vigil.read_trace_file(path))

    def _read(self, source):
        self._sources.append(source)
        self._add(source())

    def read_events_from_json_data(self, trace_json_data, node_id):
        self._add(_vigil.parse_trace_events(json.dumps(trace_json_data), str(node_id), "<json data>"))

    def read_trace_file(self):
        """Reads the files given so far again."""
        sources, self._sources = self._sources, []
        self.clear_events()
        for source in sources:
            self._read(source)

    def clear_events(self):
        self._events = []
        self._processes = {}

    def get_all_events(self):
        return list(self._events)

    def get_events_start_time_sorted(self):
        return sorted(self._events, key=lambda e: e.start_time)

    def get_events_end_time_sorted(self):
        return sorted(self._events, key=lambda e: e.end_time)

    def get_processes(self):
        return dict(self._processes)

    def get_process_info(self, process_id):
        return self._processes.get(process_id)

    def _overlapping(self, start_us, end_us, keep=lambda e: True):
        return [e for e in self._events if e.end_time >= start_us and e.start_time <= end_us and keep(e)]

    def get_events_within_time_range(self, start_time, end_time, unit=TimeUnits.MICROSECONDS):
        return self._overlapping(_to_us(start_time, unit), _to_us(end_time, unit))

    def get_events_within_range(self, start_time: datetime.datetime, end_time: datetime.datetime):
        return self._overlapping(int(start_time.timestamp() * 1e6), int(end_time.timestamp() * 1e6))

    def get_events_for_process(self, pid, start_time, end_time):
        return self._overlapping(start_time, end_time, lambda e: e.pid == pid)

    def get_events_for_thread(self, tid, start_time, end_time):
        return self._overlapping(start_time, end_time, lambda e: e.tid == tid)


class _SystemFileParser:
    """One system metrics file (what get_all_event_parsers gives for system metrics), read through its
    reader: ``path`` is relative to the profiler trial."""

    def __init__(self, host_reader, path):
        self._host = host_reader
        self.path = path

    def get_all_events(self):
        return [ProfilerSystemEvent._from_host(d) for d in self._host.read_file(self.path)]


# ---- readers ---------------------------------------------------------------------------------------------

class MetricsReaderBase:
    """Time-range queries over one kind of profiler file (smdebug's MetricsReaderBase)."""

    def __init__(self, use_in_memory_cache=False):
        self.use_in_memory_cache = use_in_memory_cache  # accepted; the host re-reads the selected files
        self._host = None

    def _events(self, start: float, end: float, unit: Any, event_type: Optional[str]) -> List[Any]:
        """The events in [start, end) in ``unit`` (a _vigil.TimeUnit): each kind of reader reads its own."""
        raise NotImplementedError

    def refresh_event_file_list(self):
        self._host.refresh()

    def _files(self):
        return self._host.files

    def get_timestamp_of_first_available_file(self) -> int:
        """The first file's timestamp (µs), 0 while there is none."""
        self.refresh_event_file_list()
        files = self._files()
        return files[0][0] if files else 0

    def get_timestamp_of_latest_available_file(self) -> int:
        """The latest file's timestamp (µs), 0 while there is none."""
        self.refresh_event_file_list()
        files = self._files()
        return files[-1][0] if files else 0

    def get_events(self, start_time: float, end_time: float, unit: Union[TimeUnits, str] = TimeUnits.MICROSECONDS,
                   event_type: Optional[str] = None, file_suffix_filter: Optional[str] = None) -> List[Any]:
        if file_suffix_filter is not None:
            raise SMDebugNotImplementedError("Vigil's profiler readers take no file_suffix_filter")
        return self._events(float(start_time), float(end_time), _unit(unit), event_type)

    def get_events_by_step(self, start_step: int, end_step: int, event_type: Optional[str] = None,
                           file_suffix_filter: Optional[str] = None) -> List[Any]:
        """Events whose args.step_num is in [start_step, end_step) (framework events only carry one)."""
        # trace files are named by their last event: from the epoch to the latest file covers them all
        end = self.get_timestamp_of_latest_available_file() + 180_000_000
        out = []
        for e in self.get_events(0, end, event_type=event_type, file_suffix_filter=file_suffix_filter):
            step = _step_of(e)
            if step is not None and start_step <= step < end_step:
                out.append(e)
        return out

    def get_all_event_parsers(self):
        self.refresh_event_file_list()
        return [self._parser(path) for _, path in self._files()]

    def parse_event_files(self, event_files):
        """The events of these files (paths relative to the profiler trial, as the reader lists them),
        read now."""
        out = []
        for p in self._parsers_of(event_files):
            out.extend(p.get_all_events())
        return out

    def _parsers_of(self, event_files):
        return [self._parser(f) for f in ([event_files] if isinstance(event_files, str) else event_files)]


def _step_of(event):
    args = getattr(event, "event_args", None)
    if isinstance(args, dict) and "step_num" in args:
        try:
            return int(args["step_num"])
        except (TypeError, ValueError):
            return None
    return None


class SystemMetricsReader(MetricsReaderBase):
    def __init__(self, use_in_memory_cache=False):
        super().__init__(use_in_memory_cache)

    def _events(self, start, end, unit, event_type):
        return [ProfilerSystemEvent._from_host(d) for d in self._host.events(start, end, unit, event_type)]

    def _parser(self, path):
        return _SystemFileParser(self._host, path)


class LocalSystemMetricsReader(SystemMetricsReader):
    """System metrics under <trace_root_folder>/system (smdebug's LocalSystemMetricsReader)."""

    def __init__(self, trace_root_folder: str, use_in_memory_cache: bool = False) -> None:
        super().__init__(use_in_memory_cache)
        self.trace_root_folder = str(trace_root_folder)
        self._host = _vigil.SystemMetricsReader(self.trace_root_folder)

    def parse_event_files(self, event_files):
        return super().parse_event_files(event_files)

    def refresh_event_file_list(self):
        super().refresh_event_file_list()


def _s3_location(s3_trial_path):
    """(bucket, prefix) of an s3:// profiler trial, as smdebug's S3 readers keep them."""
    s3, bucket, prefix = is_s3(s3_trial_path)
    if not s3:
        raise ValueError("{!r} is not an s3:// location".format(s3_trial_path))
    return bucket, prefix


class S3SystemMetricsReader(SystemMetricsReader):
    """System metrics under <s3_trial_path>/system (smdebug's S3SystemMetricsReader): the same reader
    as LocalSystemMetricsReader, over an S3 prefix. Credentials, region and endpoint come from the
    environment as AWS tools find them."""

    def __init__(self, s3_trial_path: str, use_in_memory_cache: bool = False) -> None:
        super().__init__(use_in_memory_cache)
        self.s3_trial_path = str(s3_trial_path)
        self.bucket_name, self.prefix = _s3_location(self.s3_trial_path)
        self._host = _vigil.SystemMetricsReader(self.s3_trial_path)

    def parse_event_files(self, event_files):
        return super().parse_event_files(event_files)

    def refresh_event_file_list(self):
        super().refresh_event_file_list()


class AlgorithmMetricsReader(MetricsReaderBase):
    def __init__(self, use_in_memory_cache=False):
        super().__init__(use_in_memory_cache)

    def _events(self, start, end, unit, event_type):
        events = [TraceEvent._from_host(d) for d in self._host.events(start, end, unit)]
        if event_type is not None:
            events = [e for e in events if e.event_phase == event_type or e.event_name == event_type]
        return events

    def _parser(self, path):
        p = TraceEventParser()
        host = self._host
        p._read(lambda: host.read_file(path))
        return p

    def get_current_time_range_for_event_query(self):
        """(first, latest) file timestamps in µs."""
        return self.get_timestamp_of_first_available_file(), self.get_timestamp_of_latest_available_file()


class LocalAlgorithmMetricsReader(AlgorithmMetricsReader):
    """Framework trace events under <trace_root_folder>/framework (smdebug's LocalAlgorithmMetricsReader)."""

    def __init__(self, trace_root_folder: str, use_in_memory_cache: bool = False) -> None:
        super().__init__(use_in_memory_cache)
        self.trace_root_folder = str(trace_root_folder)
        self._host = _vigil.FrameworkMetricsReader(self.trace_root_folder)

    def parse_event_files(self, event_files):
        return super().parse_event_files(event_files)

    def refresh_event_file_list(self):
        super().refresh_event_file_list()


class S3AlgorithmMetricsReader(AlgorithmMetricsReader):
    """Framework trace events under <s3_trial_path>/framework (smdebug's S3AlgorithmMetricsReader): the
    same reader as LocalAlgorithmMetricsReader, over an S3 prefix."""

    def __init__(self, s3_trial_path: str, use_in_memory_cache: bool = False) -> None:
        super().__init__(use_in_memory_cache)
        self.s3_trial_path = str(s3_trial_path)
        self.bucket_name, self.prefix = _s3_location(self.s3_trial_path)
        self._host = _vigil.FrameworkMetricsReader(self.s3_trial_path)

    def parse_event_files(self, event_files):
        return super().parse_event_files(event_files)

    def refresh_event_file_list(self):
        super().refresh_event_file_list()


def _readers_for(path, use_in_memory_cache=False):
    """The (system, framework) readers of a profiler trial: over S3 for an s3:// path, as smdebug
    chooses them."""
    if is_s3(path)[0]:
        return S3SystemMetricsReader(path, use_in_memory_cache), S3AlgorithmMetricsReader(path, use_in_memory_cache)
    return LocalSystemMetricsReader(path, use_in_memory_cache), LocalAlgorithmMetricsReader(path, use_in_memory_cache)


class ProfilerTrial:
    """A profiler output folder or s3:// prefix (smdebug.trials.utils.ProfilerTrial): its readers, when
    its data begins and whether the job ended. ``output_dir`` is kept for rules that write reports."""

    def __init__(self, name: str, trial_dir: str, output_dir: str) -> None:
        self.name = name
        self.path = self.trial_dir = str(trial_dir)
        self.output_dir = output_dir
        self.poll_s = 10
        self._host = _vigil.ProfilerTrial(self.trial_dir)
        self.system_metrics_reader, self.framework_metrics_reader = _readers_for(self.trial_dir)

    def get_first_timestamp(self) -> Optional[int]:
        """The smaller of the first system and framework file timestamps (µs); None while neither exists
        (smdebug polls every 10 s: a caller that must wait loops on this)."""
        return self._host.first_timestamp_us()

    def get_latest_timestamp(self) -> int:
        return max(self.system_metrics_reader.get_timestamp_of_latest_available_file(),
                   self.framework_metrics_reader.get_timestamp_of_latest_available_file())

    def get_system_metrics(self, start_time: float, end_time: float) -> List[ProfilerSystemEvent]:
        return self.system_metrics_reader.get_events(start_time, end_time)

    def get_framework_metrics(self, start_time: float, end_time: float) -> List[TraceEvent]:
        return self.framework_metrics_reader.get_events(start_time, end_time)

    def job_finished(self) -> bool:
        return self._host.job_ended()

    def wait_for_data(self, end_time: int, start_time: int) -> None:
        """Waits (polling every `poll_s`, 10 s as smdebug) until files reach end_time (µs); raises
        NoMoreProfilerData when the job ended before they do."""
        while self.get_latest_timestamp() < end_time:
            if self.job_finished():
                raise NoMoreProfilerData(end_time)
            time.sleep(self.poll_s)


# ---- pandas -----------------------------------------------------------------------------------------------

SYSTEM_COLUMNS = ["timestamp", "timestamp_us", "value", "system_metric", "dimension", "nodeID", "type"]
FRAMEWORK_COLUMNS = ["start_time", "end_time", "start_time_us", "end_time_us", "tid", "pid", "framework_metric",
                     "step", "bytes", "process", "nodeID"]
DATALOADER_COLUMNS = ["start_time", "end_time", "start_time_us", "end_time_us", "duration_us", "pid", "tid",
                      "framework_metric", "process", "step", "node_id", "pin_memory", "num_workers"]
_DATALOADER_PHASES = ("DataLoaderIter", "DataLoaderIterInitialize", "DataLoaderWorker")


def _human(us):
    """smdebug's human-readable time: UTC, "%Y-%m-%dT%H:%M:%S:%f"."""
    return datetime.datetime.fromtimestamp(us / 1e6, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S:%f")


class PandasFrame:
    """A profiler folder as pandas DataFrames (smdebug's PandasFrame, with its column names). The
    ``*_us`` columns of the framework and system frames are relative to the first file's timestamp
    (``start_time``), as smdebug makes them; the human-readable ones are absolute (UTC)."""

    def __init__(self, path: str, use_in_memory_cache: bool = False, scan_interval: int = 5000000000) -> None:
        self.path = str(path)
        self.scan_interval = self.interval = scan_interval
        self.system_metrics_reader, self.framework_metrics_reader = _readers_for(self.path, use_in_memory_cache)
        self.system_metrics: List[Any] = []
        self.framework_metrics: List[Any] = []
        firsts = [t for t in (self.system_metrics_reader.get_timestamp_of_first_available_file(),
                              self.framework_metrics_reader.get_timestamp_of_first_available_file()) if t]
        self.start_time = min(firsts) if firsts else 0

    def _full_range(self):
        self.framework_metrics_reader.refresh_event_file_list()
        self.system_metrics_reader.refresh_event_file_list()
        # from the epoch: a trace file is named by its last event, so its first timestamp is no start;
        # trace files are named by their last event and system files by their first sample: widen the
        # end by the selection buffer so the last system file's samples are in range.
        end = max(self.system_metrics_reader.get_timestamp_of_latest_available_file(),
                  self.framework_metrics_reader.get_timestamp_of_latest_available_file()) + 180_000_000
        return 0, end

    def get_all_system_metrics(self, selected_system_metrics=[]):
        start, end = self._full_range()
        return self.get_profiler_data_by_time(start, end, selected_system_metrics=selected_system_metrics,
                                              get_framework_metrics=False)[0]

    def get_all_framework_metrics(self, selected_framework_metrics=[]):
        start, end = self._full_range()
        return self.get_profiler_data_by_time(start, end, selected_framework_metrics=selected_framework_metrics,
                                              get_system_metrics=False)[1]

    def get_profiler_data_by_time(self, start_time_us, end_time_us, cache_metrics=False, selected_framework_metrics=[],
                                  selected_system_metrics=[], get_framework_metrics=True, get_system_metrics=True):
        """(system DataFrame, framework DataFrame) for [start_time_us, end_time_us]."""
        import pandas as pd
        system = []
        if get_system_metrics:
            for e in self.system_metrics_reader.get_events(start_time_us, end_time_us):
                if selected_system_metrics and e.name not in selected_system_metrics:
                    continue
                us = int(e.timestamp * 1e6)
                system.append([_human(us), us, e.value, e.name, e.dimension, e.node_id, e.type])
            if cache_metrics:
                self.system_metrics.extend(system)
                system = self.system_metrics
        framework = []
        if get_framework_metrics:
            for e in self.framework_metrics_reader.get_events(start_time_us, end_time_us):
                if selected_framework_metrics and e.event_name not in selected_framework_metrics and \
                        e.event_phase not in selected_framework_metrics:
                    continue
                args = e.event_args if isinstance(e.event_args, dict) else {}
                step = _step_of(e)
                name = args.get("layer_name", args.get("name", e.event_name))
                framework.append([_human(e.start_time), _human(e.end_time), e.start_time, e.end_time, e.tid, e.pid,
                                  name, -1 if step is None else step, args.get("bytes_fetched", -1), e.event_phase,
                                  e.node_id])
            if cache_metrics:
                self.framework_metrics.extend(framework)
                framework = self.framework_metrics
        sdf = pd.DataFrame(system, columns=SYSTEM_COLUMNS)
        sdf["timestamp_us"] = sdf["timestamp_us"] - self.start_time
        fdf = pd.DataFrame(framework, columns=FRAMEWORK_COLUMNS)
        fdf["start_time_us"] = fdf["start_time_us"] - self.start_time
        fdf["end_time_us"] = fdf["end_time_us"] - self.start_time
        return sdf[~sdf.duplicated()].reset_index(drop=True), fdf[~fdf.duplicated()].reset_index(drop=True)

    def get_profiler_data_by_step(self, start_step, end_step, cache_metrics=False):
        """The data from the start of step start_step's Step event to the end of end_step's (inclusive,
        by the step events' args.step_num)."""
        start, end = self._full_range()
        steps = [e for e in self.framework_metrics_reader.get_events(start, end)
                 if "Step:ModeKeys" in e.event_name and _step_of(e) is not None
                 and start_step <= _step_of(e) <= end_step]
        if not steps:
            return self.get_profiler_data_by_time(0, 0, cache_metrics)  # empty frames with the columns
        return self.get_profiler_data_by_time(min(e.start_time for e in steps), max(e.end_time for e in steps),
                                              cache_metrics)

    def get_all_dataloader_metrics(self, selected_framework_metrics=[]):
        """The data-loader events (phases DataLoaderIter, DataLoaderIterInitialize, DataLoaderWorker),
        absolute times; selected_framework_metrics are regexes over the event names (smdebug's use)."""
        import pandas as pd
        start, end = self._full_range()
        patterns = [re.compile(p) for p in selected_framework_metrics]
        rows = []
        for e in self.framework_metrics_reader.get_events(start, end):
            if e.event_phase not in _DATALOADER_PHASES:
                continue
            if patterns and not any(p.match(e.event_name) or p.match(e.event_phase) for p in patterns):
                continue
            args = e.event_args if isinstance(e.event_args, dict) else {}
            step = _step_of(e)
            rows.append([_human(e.start_time), _human(e.end_time), e.start_time, e.end_time, e.duration, e.pid, e.tid,
                         e.event_name, e.event_phase, -1 if step is None else step, e.node_id,
                         args.get("pin_memory"), args.get("num_workers")])
        return pd.DataFrame(rows, columns=DATALOADER_COLUMNS)

    def convert_datetime_to_timestamp(self, timestamp):
        """A "%Y-%m-%dT%H:%M:%S:%f" UTC time (or a datetime) as µs since the epoch."""
        if isinstance(timestamp, str):
            timestamp = datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S:%f").replace(
                tzinfo=datetime.timezone.utc)
        elif timestamp.tzinfo is None:
            timestamp = timestamp.replace(tzinfo=datetime.timezone.utc)
        return int(timestamp.timestamp() * 1e6)

    def get_framework_metrics_by_timesteps(self, timestep_list=[], selected_framework_metrics=[]):
        """For each time in the list, the framework events spanning it: ({phase: share of the largest},
        {event name: µs}, {step phase: µs}) as smdebug returns them."""
        times = sorted(self.convert_datetime_to_timestamp(t) for t in timestep_list)
        results, detailed = {}, {}
        if times:
            for e in self._selected_events(times[0], times[-1], selected_framework_metrics):
                for t in times:
                    if e.start_time < t < e.end_time:
                        results[e.event_phase] = results.get(e.event_phase, 0) + e.duration
                        if "Step" not in e.event_name:
                            detailed[e.event_name] = detailed.get(e.event_name, 0) + e.duration
        phases = {k: v for k, v in results.items() if "Step" in k}
        metrics = {k: v for k, v in results.items() if "Step" not in k}
        return _normalised(metrics), detailed, phases

    def get_framework_metrics_by_begin_and_end_timesteps(self, begin_timestep_list, end_timestep_list,
                                                         selected_framework_metrics=[]):
        """Framework time (not Step events) overlapping each [begin, end]: ({phase: share}, {name: share})."""
        begins = [self.convert_datetime_to_timestamp(t) for t in begin_timestep_list]
        ends = [self.convert_datetime_to_timestamp(t) for t in end_timestep_list]
        metrics, detailed = {}, {}
        if begins:
            for e in self._selected_events(min(begins), max(ends), selected_framework_metrics):
                for b, t in zip(begins, ends):
                    if e.end_time >= b and e.start_time <= t and "Step" not in e.event_name:
                        metrics[e.event_phase] = metrics.get(e.event_phase, 0) + e.duration
                        detailed[e.event_name] = detailed.get(e.event_name, 0) + e.duration
        return _normalised(metrics), _normalised(detailed)

    def _selected_events(self, start, end, selected):
        return [e for e in self.framework_metrics_reader.get_events(start, end)
                if not selected or e.event_name in selected or e.event_phase in selected]


def _normalised(d):
    top = max(d.values()) if d else 0
    return {k: v / float(top) for k, v in d.items()} if top else d


def python_stats_folders(root, framework="pytorch", profiler="cprofile"):
    """The Python profiling windows written under a profiler root (format spec §8.2, §8.5): a list of
    (node_id, folder name, path of python_stats), sorted."""
    base = os.path.join(str(root), "framework", framework, profiler)
    out = []
    if os.path.isdir(base):
        for node in sorted(os.listdir(base)):
            for window in sorted(os.listdir(os.path.join(base, node))):
                out.append((node, window, os.path.join(base, node, window, "python_stats")))
    return out


__all__ = ["TimeUnits", "TraceEvent", "TraceEventParser", "ProcessInfo", "ThreadInfo", "ProfilerSystemEvent",
           "MetricsReaderBase", "SystemMetricsReader", "LocalSystemMetricsReader", "S3SystemMetricsReader",
           "AlgorithmMetricsReader", "LocalAlgorithmMetricsReader", "S3AlgorithmMetricsReader", "ProfilerTrial",
           "PandasFrame", "python_stats_folders"]
