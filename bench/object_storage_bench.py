#!/usr/bin/python3
"""Object storage benchmark: one trial read from a local folder and from S3, side by side.

Writes a trial of --steps steps (a loss, a weight, its gradient and a ReLU output per step; float32)
with vigil.writer, uploads it with _vigil.TrialUploader to the loopback S3 server of
tests/support/s3_test_server.py (s3rver behind the request-counting, SigV4-checking proxy; with
--no-proxy straight to s3rver, then without request counts), and reports for the folder and for
s3://bench/trial:

  open + steps()   time and requests of create_trial() and its first steps(), cold (its own empty
                   cache), then again with the cache warm (the index objects come from disk), and
                   the most requests in flight at once (index objects are read side by side)
  first status     `vigil evaluate --rule AllZero`: time to its first status line, and to its end
  full scan        every value of every step: values/s and MB/s (tensor bytes), requests and the
                   most in flight at once (the next steps' event files are opened ahead)
  idle refresh     requests of a refresh with nothing new, on a copy without the end marker (its
                   collections and index objects only: refresh lists, it reads no event file)

Run from a build tree: VIGIL_BUILD_DIR (default build) gives bin/vigil and python/. S3 figures
are loopback figures: they count requests and per-request overheads, not a network; with
--latency-ms the proxy adds a round trip to each request, as a network would.

    PYTHONPATH=build/python /usr/bin/python3 bench/object_storage_bench.py --steps 1000
"""
import argparse
import os
import shutil
import json
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.abspath(os.environ.get("VIGIL_BUILD_DIR") or os.path.join(REPO, "build"))
sys.path[:0] = [os.path.join(BUILD, "python"), os.path.join(REPO, "tests", "support")]

import numpy as np  # noqa: E402

import vigil  # noqa: E402
from s3_test_server import S3TestServer  # noqa: E402
from vigil import _vigil  # noqa: E402
from vigil.exceptions import TensorUnavailableForStep  # noqa: E402
from vigil.modes import ModeKeys  # noqa: E402
from vigil.writer import TrialWriter  # noqa: E402

import rows as bench_rows  # noqa: E402 (bench/rows.py)

MARKER = "training_job_end.ts"


def write_trial(out, steps, size):
    rng = np.random.default_rng(0)
    w = TrialWriter(out, save_interval=1)
    weight = rng.standard_normal(size).astype(np.float32)
    for step in range(steps):
        w.begin_step(ModeKeys.TRAIN)
        grad = (rng.standard_normal(size) * 1e-2).astype(np.float32)
        weight -= 0.1 * grad
        w.save_tensor("loss", np.array([1.0 / (1 + step)], dtype=np.float32), collections=["losses"])
        w.save_tensor("fc1.weight", weight, collections=["weights"])
        w.save_tensor("gradient/fc1.weight", grad, collections=["gradients"])
        w.save_tensor("relu_output", np.maximum(weight, 0), collections=["relu_output"])
        w.end_step()
    w.close()


def upload(local, location):
    t0 = time.perf_counter()
    report = _vigil.TrialUploader(local, location, 0.05).finish(3600)
    if report["error"] or report["files_left"]:
        sys.exit("upload of %s failed: %s" % (local, report["error"]))
    return time.perf_counter() - t0, report


class Counter:
    """Requests the proxy saw during a block (None without the proxy)."""

    def __init__(self, server, counting):
        self.server, self.counting = server, counting

    def __enter__(self):
        if self.counting:
            self.server.clear_requests()
        return self

    def __exit__(self, *exc):
        log = self.server.requests() if self.counting else None
        self.requests = len(log) if self.counting else None
        # the most requests the proxy was answering at once (issue 29: bounded parallel reads)
        self.most_in_flight = max((r["in_flight"] or 0 for r in log), default=0) if self.counting else None


def open_and_list(location):
    t0 = time.perf_counter()
    trial = vigil.create_trial(location)
    steps = trial.steps()
    return time.perf_counter() - t0, trial, steps


def full_scan(trial, steps):
    names = trial.tensor_names()
    values = nbytes = 0
    t0 = time.perf_counter()
    for step in steps:
        for name in names:
            tensor = trial.tensor(name)
            try:
                workers = tensor.workers(step)
            except TensorUnavailableForStep:
                continue
            for worker in workers:
                v = tensor.value(step, worker=worker)
                nbytes += v.nbytes
                values += 1
    return time.perf_counter() - t0, values, nbytes


def evaluate(vigil_exe, location, env, tmp):
    status = os.path.join(tmp, "status-%d.json" % time.monotonic_ns())
    t0 = time.perf_counter()
    p = subprocess.Popen([vigil_exe, "evaluate", "--trial", location, "--rule", "AllZero", "--param",
                          "collection_names=weights,gradients", "--status-file", status, "--idle-timeout", "600"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first = None
    last_line = ""
    for line in p.stdout:
        if first is None and line.startswith("vigil: ["):
            first = time.perf_counter() - t0
        last_line = line.strip() or last_line
    p.wait()
    total = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("vigil evaluate %s failed (%d): %s" % (location, p.returncode, last_line))
    return first, total, last_line


def idle_refresh_requests(location, server, counting):
    trial = vigil.create_trial(location)
    trial.steps()
    with Counter(server, counting) as c:
        trial.refresh()
    return c.requests, trial.training_ended


def _cpu_s(pid):
    """CPU seconds (user + system) of process `pid` so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def minimal_client(server, bucket, keys, in_flight=32):
    """The limit of this setup: curl (C, one process, HTTP keep-alive) GETs `keys` from s3rver
    directly, `in_flight` at once, unsigned (s3rver takes anonymous requests) -- the least work a
    client can ask of the server for the same objects. Returns (seconds, s3rver CPU seconds)."""
    config = "".join('url = "%s/%s/%s"\noutput = "/dev/null"\n' % (server.endpoint, bucket, k) for k in keys)
    node = server._node.pid
    cpu0, t0 = _cpu_s(node), time.perf_counter()
    subprocess.run(["curl", "-sS", "--fail", "--parallel", "--parallel-immediate", "--parallel-max", str(in_flight),
                    "-K", "-"], input=config, text=True, check=True, capture_output=True)  # (its progress meter)
    return time.perf_counter() - t0, _cpu_s(node) - cpu0


def limits(server, local, prefix, values, runs=3):
    """The physical limit of each S3 row (median of `runs`): the same GETs as Vigil's open (the index
    files; the listing's page or two aside) and scan (the event files), by the minimal client."""
    keys = {kind: sorted(os.path.relpath(os.path.join(d, f), local).replace(os.sep, "/")
                         for d, _, files in os.walk(os.path.join(local, kind)) for f in files)
            for kind in ("index", "events")}
    out = {}
    for kind, names in keys.items():
        got = sorted(minimal_client(server, "bench", [prefix + "/" + k for k in names]) for _ in range(runs))
        seconds, server_cpu = got[len(got) // 2]
        out[kind] = dict(requests=len(names), seconds=seconds, per_s=len(names) / seconds,
                         server_cpu_ms=1000 * server_cpu / len(names))
    out["open_s"] = out["index"]["seconds"]
    out["vps"] = values / out["events"]["seconds"]
    return out


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--steps", type=int, default=1000, help="steps of the trial (default 1000)")
    ap.add_argument("--size", type=int, default=256, help="elements of each tensor but the loss (default 256)")
    ap.add_argument("--no-proxy", action="store_true", help="talk to s3rver directly (no request counts)")
    ap.add_argument("--latency-ms", type=float, default=0,
                    help="the proxy answers every request after this many ms once the trial is uploaded: a round "
                         "trip as to S3 from EC2 (tens of ms), which parallel requests overlap (default 0)")
    ap.add_argument("--smdebug-python", help="a Python with smdebug 1.0.34 (.venv-smdebug): its figures beside Vigil's")
    ap.add_argument("--rows", help="append issue 29's summary rows here (bench/rows.py)")
    ap.add_argument("--vigil", default=os.path.join(BUILD, "bin", "vigil"), help="the vigil executable")
    args = ap.parse_args()
    if not os.path.exists(args.vigil):
        sys.exit("vigil executable not found: %s (set VIGIL_BUILD_DIR)" % args.vigil)
    counting = not args.no_proxy

    tmp = tempfile.mkdtemp(prefix="vigil-osbench-")
    try:
        local = os.path.join(tmp, "trial")
        t0 = time.perf_counter()
        write_trial(local, args.steps, args.size)
        write_s = time.perf_counter() - t0
        n_files = sum(len(f) for _, _, f in os.walk(local))
        # the idle-refresh copy: collections and index, no marker
        live = os.path.join(tmp, "live")
        shutil.copytree(os.path.join(local, "collections"), os.path.join(live, "collections"))
        shutil.copytree(os.path.join(local, "index"), os.path.join(live, "index"))

        # A cache of this run's own: the first open is cold, the re-open shows what the cache saves.
        os.environ["VIGIL_CACHE_DIR"] = os.path.join(tmp, "cache")
        with S3TestServer(buckets=["bench"]) as server:
            env_vars = server.environment(through_proxy=counting)
            os.environ.update(env_vars)  # this process only talks to this server
            env = dict(os.environ)
            s3_trial, s3_live = "s3://bench/trial", "s3://bench/live"
            with Counter(server, counting) as up:
                upload_s, report = upload(local, s3_trial)
            upload(live, s3_live)
            if args.latency_ms:
                if not counting:
                    sys.exit("--latency-ms needs the proxy")
                server.set_faults([{"action": "delay", "seconds": args.latency_ms / 1000, "times": 10 ** 9}])
                print("every request answered after %.0f ms (a round trip)" % args.latency_ms)
            print("trial: %d steps, %d files, %.1f MB; written in %.2f s; uploaded in %.2f s (%s requests)"
                  % (args.steps, n_files, report["bytes_uploaded"] / 1e6, write_s, upload_s, fmt(up.requests, "d")))

            rows = {}
            kinds = [("local", local, live), ("s3", s3_trial, s3_live)]
            if counting:  # the proxy's own CPU per request would bound the times: take them straight from s3rver too
                kinds.append(("s3 direct", s3_trial, s3_live))
            for kind, location, live_location in kinds:
                counted = counting and kind == "s3"
                os.environ["VIGIL_CACHE_DIR"] = os.path.join(tmp, "cache-" + kind.replace(" ", "-"))
                os.environ["AWS_ENDPOINT_URL_S3"] = server.environment(through_proxy=kind == "s3" and counting)[
                    "AWS_ENDPOINT_URL_S3"]
                env = dict(os.environ)
                with Counter(server, counted) as c:
                    open_s, trial, steps = open_and_list(location)
                assert len(steps) == args.steps, (kind, len(steps))
                with Counter(server, counted) as scan_c:
                    scan_s, values, nbytes = full_scan(trial, steps)
                with Counter(server, counted) as reopen_c:
                    reopen_s, _, _ = open_and_list(location)
                first_s, eval_s, verdict = evaluate(args.vigil, location, env, tmp)
                idle, ended = idle_refresh_requests(live_location, server, counted)
                assert not ended
                rows[kind] = dict(open_s=open_s, open_req=c.requests, open_most=c.most_in_flight,
                                  scan_most=scan_c.most_in_flight, first_s=first_s, eval_s=eval_s, verdict=verdict,
                                  scan_s=scan_s, values=values, mb_s=nbytes / 1e6 / scan_s, vps=values / scan_s,
                                  scan_req=scan_c.requests, idle=idle, reopen_s=reopen_s, reopen_req=reopen_c.requests)
            limit = limits(server, local, "trial", rows["s3"]["values"])
            rows["limit"] = dict(open_s=limit["open_s"], open_req=limit["index"]["requests"], open_most=32,
                                 vps=limit["vps"], scan_req=limit["events"]["requests"], scan_most=32)
            print("limit (curl, %d in flight, straight to s3rver, unsigned; median of 3): index files %d GETs in "
                  "%.3f s (%.0f/s, s3rver %.2f ms CPU each), event files %d GETs in %.3f s (%.0f/s, s3rver %.2f ms "
                  "CPU each)" % (32, limit["index"]["requests"], limit["index"]["seconds"], limit["index"]["per_s"],
                                 limit["index"]["server_cpu_ms"], limit["events"]["requests"],
                                 limit["events"]["seconds"], limit["events"]["per_s"],
                                 limit["events"]["server_cpu_ms"]))
            timed = rows.get("s3 direct", rows["s3"])  # the times without the proxy when there are both
            os.environ["AWS_ENDPOINT_URL_S3"] = env_vars["AWS_ENDPOINT_URL_S3"]
            env = dict(os.environ)

            theirs = {}
            if args.smdebug_python:  # the real smdebug on the same S3 trial (boto3 reads AWS_ENDPOINT_URL_S3)
                side = [args.smdebug_python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "smdebug_side.py")]
                t0 = time.perf_counter()
                opened = subprocess.run(side + ["open-list", s3_trial], env=env, capture_output=True, text=True)
                if opened.returncode != 0:  # seen at 1,000 steps: "IndexReaderException: Empty/Corrupt Index File"
                    print("smdebug 1.0.34 could not open the S3 trial (no smdebug figure): "
                          + opened.stderr.strip().splitlines()[-1])
                else:
                    theirs["open_s"] = time.perf_counter() - t0
                    out = subprocess.run(side + ["scan", s3_trial], env=env, check=True, capture_output=True, text=True)
                    scan = json.loads(out.stdout.strip().splitlines()[-1])
                    theirs["vps"] = scan["values"] / scan["seconds"]
                    print("smdebug 1.0.34 on the same S3 trial: open + list %.2f s (whole process), full scan %.0f "
                          "values/s" % (theirs["open_s"], theirs["vps"]))

        bench_rows.add(args.rows, "open an S3 trial of %d steps (loopback, s)" % args.steps, round(timed["open_s"], 3),
                       "s", smdebug=None if "open_s" not in theirs else round(theirs["open_s"], 2),
                       target="<= 0.3 s", met=timed["open_s"] <= 0.3,
                       note="%s requests, at most %s in flight; limit %.3f s (curl straight to s3rver); smdebug's "
                            "time includes its process start" % (
                           fmt(rows["s3"]["open_req"], "d"), fmt(rows["s3"]["open_most"], "d"), limit["open_s"]))
        bench_rows.add(args.rows, "full scan of an S3 trial of %d steps (values/s)" % args.steps, round(timed["vps"]),
                       "values/s", smdebug=None if "vps" not in theirs else round(theirs["vps"]),
                       target=">= 20,000 values/s", met=timed["vps"] >= 20000,
                       note="%s requests, at most %s in flight; limit %.0f values/s (curl straight to s3rver)" % (
                           fmt(rows["s3"]["scan_req"], "d"), fmt(rows["s3"]["scan_most"], "d"), limit["vps"]))
        print()
        cols = [k for k in ("local", "s3", "s3 direct", "limit") if k in rows]
        heads = {"local": "local", "s3": "s3 (proxy)" if counting else "s3", "s3 direct": "s3 direct",
                 "limit": "limit (curl)"}
        print(("%-34s" + " %14s" * len(cols) + "   %s") % (("",) + tuple(heads[k] for k in cols) + ("s3 target",)))
        lines = [
            ("open + steps(): seconds", "open_s", ".3f"),
            ("open + steps(): requests", "open_req", "d"),
            ("open + steps(): most in flight", "open_most", "d"),
            ("re-open + steps() (cache warm): s", "reopen_s", ".3f"),
            ("re-open + steps(): requests", "reopen_req", "d"),
            ("evaluate: first status line, s", "first_s", ".3f"),
            ("evaluate: whole run, s", "eval_s", ".3f"),
            ("full scan: values/s", "vps", ",.0f"),
            ("full scan: MB/s", "mb_s", ".2f"),
            ("full scan: values", "values", "d"),
            ("full scan: requests", "scan_req", "d"),
            ("full scan: most in flight", "scan_most", "d"),
            ("refresh, nothing new: requests", "idle", "d"),
        ]
        targets = {"open_s": "<= 0.3 (1,000 steps)", "open_most": "<= 32", "vps": ">= 20,000",
                   "scan_most": "<= 16", "idle": "1"}
        for label, key, spec in lines:
            print(("%-34s" + " %14s" * len(cols) + "   %s") % (
                (label,) + tuple(fmt(rows[k].get(key), spec) for k in cols) + (targets.get(key, ""),)))
        for kind in cols[:-1]:
            print("verdict (%s): %s" % (kind, rows[kind]["verdict"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
