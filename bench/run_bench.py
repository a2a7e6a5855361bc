#!/usr/bin/python3
"""Vigil's benchmark: times every workload of issue 6 on the same files, in one run, and checks the
ratios against the targets. Run it through scripts/bench.sh (which builds first); not part of CI.

Each workload is its own process, run --runs times after one warm-up read of the trial (page cache
warm); the table gives the median wall time and the largest peak RSS (wait4's ru_maxrss). The same
figures go to --json.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import rows

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1024 * 1024
LIVE_TARGET_MS = 10  # issue 29: every step, the first included, judged within 10 ms of being published


def run(cmd, env=None):
    """(wall seconds, peak RSS bytes, stdout) of one process."""
    wall, _, rss, out = run_with_cpu(cmd, env)
    return wall, rss, out


def run_with_cpu(cmd, env=None):
    """(wall seconds, CPU seconds (user + system), peak RSS bytes, stdout) of one process: on a shared
    machine the CPU time is the figure to compare, the wall time mostly waiting for a core."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit("benchmark command failed (%d): %s\n%s" % (proc.returncode, " ".join(cmd), err.decode()[-3000:]))
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out.decode()


def last_json(text):
    lines = [l for l in text.splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_kb / MIB, 1),
            "kernel": platform.release(), "python": platform.python_version()}


# Per-step targets of issue 29 (whole process, divided by the steps).
MANY_STEPS_TARGETS = {"inspect": 10.0, "evaluate_builtin": 25.0}


def smdebug_seconds(args, command, trial):
    """The median whole-process time of bench/smdebug_side.py COMMAND on `trial` under the real
    smdebug (--smdebug-python), or None without it."""
    if not args.smdebug_python:
        return None
    walls = [run([args.smdebug_python, os.path.join(HERE, "smdebug_side.py"), command, trial])[0]
             for _ in range(1)]  # one run: smdebug takes seconds to minutes per run
    return statistics.median(walls)


def many_steps_one(args, steps_wanted, vigil, bench, plugins, env):
    """One many-steps trial: every workload's median and its figure per step."""
    trial = os.path.join(args.cache, "trial-%dsteps" % steps_wanted)
    meta_file = trial + ".json"
    if not os.path.exists(meta_file):
        shutil.rmtree(trial, ignore_errors=True)
        print("generating %s ..." % trial, flush=True)
        _, _, out = run([bench, "generate-steps", trial, "--steps", str(steps_wanted)])
        with open(meta_file, "w") as f:
            f.write(json.dumps(last_json(out)))
    with open(meta_file) as f:
        meta = json.load(f)
    steps = meta["steps"]
    workloads = [
        ("inspect", [vigil, "inspect", trial]),
        ("scan_cpp", [bench, "scan", trial]),
        ("evaluate_builtin", [vigil, "evaluate", "--trial", trial, "--rule", "VanishingGradient", "--no-follow",
                              "--quiet"]),
        # A rule that reads nothing: the evaluator's own walk over the steps, plus opening the trial.
        ("evaluate_idle", [vigil, "evaluate", "--trial", trial, "--plugins", plugins, "--rule", "Idle",
                           "--no-follow", "--quiet"]),
    ]
    print("\n== many steps: %s (%d steps of %d small tensors)" % (trial, steps, meta["tensors"] // steps), flush=True)
    out = {"trial": trial, "steps": steps, "generated": meta, "workloads": {}}
    run([bench, "raw-read", trial])  # warm the page cache
    for name, cmd in workloads:
        walls, rss = [], 0
        for _ in range(args.runs):
            wall, peak, _ = run(cmd, env=env)
            walls.append(wall)
            rss = max(rss, peak)
        med = statistics.median(walls)
        out["workloads"][name] = {"median_s": med, "min_s": min(walls), "max_s": max(walls),
                                  "per_step_us": med / steps * 1e6, "peak_rss_mib": rss / MIB}
        target = MANY_STEPS_TARGETS.get(name)
        print("  %-18s %8.3f s  %7.1f us per step%s  peak RSS %7.1f MiB" % (
            name, med, med / steps * 1e6,
            "" if target is None else "  (target <= %g: %s)" % (target, "met" if med / steps * 1e6 <= target
                                                                 else "MISSED"),
            rss / MIB), flush=True)
    med = {k: v["median_s"] for k, v in out["workloads"].items()}
    # evaluate_idle - inspect: the evaluator's walk without opening the trial, nor reads, nor a
    # rule's work (inspect opens the trial and lists it, as the evaluator does first).
    targets = [
        ("inspect per step (open + list), process start included (us)", med["inspect"] / steps * 1e6, "<=",
         MANY_STEPS_TARGETS["inspect"]),
        ("VanishingGradient per step, process start included (us)", med["evaluate_builtin"] / steps * 1e6, "<=",
         MANY_STEPS_TARGETS["evaluate_builtin"]),
        ("evaluator overhead per step: (evaluate Idle - inspect) / steps (us)",
         (med["evaluate_idle"] - med["inspect"]) / steps * 1e6, "<=", 20),
    ]
    out["targets"] = []
    for label, value, op, bound in targets:
        ok = value <= bound
        out["targets"].append({"target": label, "value": value, "bound": "%s %g" % (op, bound), "met": ok})
        print("  %-66s %6.2f  (target %s %g)  %s" % (label, value, op, bound, "met" if ok else "MISSED"))
    # smdebug beside: up to 10,000 steps (at 100,000 its open alone takes minutes).
    theirs = {}
    if steps <= 10000:
        theirs = {"inspect": smdebug_seconds(args, "open-list", trial),
                  "evaluate_builtin": smdebug_seconds(args, "vanishing", trial)}
        if theirs["inspect"] is not None:
            print("  smdebug 1.0.34: open + list %.3f s (%.1f us per step), VanishingGradient %.3f s (%.1f us per step)" % (
                theirs["inspect"], theirs["inspect"] / steps * 1e6, theirs["evaluate_builtin"],
                theirs["evaluate_builtin"] / steps * 1e6), flush=True)
    out["smdebug"] = theirs
    for name, what in (("inspect", "open + list"), ("evaluate_builtin", "evaluate VanishingGradient")):
        per = med[name] / steps * 1e6
        smd = theirs.get(name)
        rows.add(args.rows, "%s, %d steps of 11 small tensors (us per step)" % (what, steps), round(per, 1), "us",
                 smdebug=None if smd is None else round(smd / steps * 1e6, 1),
                 target="<= %g us" % MANY_STEPS_TARGETS[name], met=per <= MANY_STEPS_TARGETS[name])
    return out


def many_steps(args, vigil, bench, plugins, env):
    """The long job with small tensors, at each size of --many-steps: costs per step and per index
    file, not per byte, and whether they stay flat as the job grows."""
    sizes = [int(n) for n in args.many_steps.split(",") if int(n) > 0]
    out = {"sizes": {}}
    for n in sizes:
        out["sizes"][str(n)] = many_steps_one(args, n, vigil, bench, plugins, env)
    if len(sizes) > 1:
        # Flat: the cost per step at each size, and the marginal cost of a step between sizes (the
        # process's fixed start-up cancels out).
        print("\n== many steps: per step (us) at %s steps" % ", ".join(str(n) for n in sizes))
        flat = {}
        for name in ("inspect", "evaluate_builtin", "evaluate_idle", "scan_cpp"):
            per = [out["sizes"][str(n)]["workloads"][name]["per_step_us"] for n in sizes]
            marginal = []
            for a, b in zip(sizes, sizes[1:]):
                ta = out["sizes"][str(a)]["workloads"][name]["median_s"]
                tb = out["sizes"][str(b)]["workloads"][name]["median_s"]
                marginal.append((tb - ta) / (b - a) * 1e6)
            flat[name] = {"per_step_us": per, "marginal_us": marginal}
            target = MANY_STEPS_TARGETS.get(name)
            print("  %-18s per step %s   marginal %s%s" % (
                name, " / ".join("%.1f" % x for x in per), " / ".join("%.1f" % x for x in marginal),
                "" if target is None else "   (target <= %g)" % target))
        out["flat"] = flat
    return out


def many_workers(args, vigil, bench, plugins, env):
    """Issue 31: one trial with many workers, each writing every step (11 small tensors), at each
    worker count of --many-workers. Costs per step and per step per worker, and peak RSS: what grows
    worse than linearly in workers x steps shows as a rising cost per step per worker. The trials
    are deleted after (256 workers x 1,000 steps is about 512,000 files)."""
    counts = [int(n) for n in args.many_workers.split(",") if int(n) > 0]
    steps = args.many_workers_steps
    out = {"steps": steps, "workers": {}}
    for workers in counts:
        trial = os.path.join(args.cache, "trial-%dsteps-%dworkers" % (steps, workers))
        shutil.rmtree(trial, ignore_errors=True)
        print("generating %s ..." % trial, flush=True)
        _, _, gen = run([bench, "generate-steps", trial, "--steps", str(steps), "--workers", str(workers)])
        try:
            run([bench, "raw-read", trial])  # warm the page cache
            workloads = [
                ("inspect", [vigil, "inspect", trial]),
                ("evaluate_builtin", [vigil, "evaluate", "--trial", trial, "--rule", "VanishingGradient",
                                      "--no-follow", "--quiet"]),
                ("evaluate_idle", [vigil, "evaluate", "--trial", trial, "--plugins", plugins, "--rule", "Idle",
                                   "--no-follow", "--quiet"]),
            ]
            row = {"generated": last_json(gen), "workloads": {}}
            print("\n== many workers: %d workers x %d steps of 11 small tensors" % (workers, steps), flush=True)
            for name, cmd in workloads:
                walls, cpus, rss = [], [], 0
                for _ in range(args.runs):
                    wall, cpu, peak, _ = run_with_cpu(cmd, env=env)
                    walls.append(wall)
                    cpus.append(cpu)
                    rss = max(rss, peak)
                med, cpu = statistics.median(walls), statistics.median(cpus)
                row["workloads"][name] = {"median_s": med, "per_step_us": med / steps * 1e6,
                                          "per_step_worker_us": med / steps / workers * 1e6,
                                          "cpu_s": cpu, "cpu_per_step_worker_us": cpu / steps / workers * 1e6,
                                          "peak_rss_mib": rss / MIB}
                print("  %-18s %8.3f s wall %7.2f us per step per worker; CPU %8.3f s %7.2f us per step per worker;"
                      "  peak RSS %7.1f MiB" % (name, med, med / steps / workers * 1e6, cpu,
                                                cpu / steps / workers * 1e6, rss / MIB), flush=True)
            out["workers"][str(workers)] = row
        finally:
            shutil.rmtree(trial, ignore_errors=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build folder (bin/vigil, bin/vigil_bench, python/)")
    ap.add_argument("--cache", required=True, help="folder for the generated trials (kept between runs)")
    ap.add_argument("--size-mb", type=float, default=500, help="size of the trial's tensor data (default 500)")
    ap.add_argument("--runs", type=int, default=5, help="runs per workload; the median is reported (default 5)")
    ap.add_argument("--workers", default="1,2", help="trial variants by worker count (default 1,2; \"\" skips them)")
    ap.add_argument("--live-steps", type=int, default=100, help="steps of the live-latency runs (0 skips them)")
    ap.add_argument("--live-startup-ms", type=int, default=1000,
                    help="the live runs' pause between starting the evaluator and the first step: the training "
                         "script's own start (default 1000)")
    ap.add_argument("--many-steps", default="1000,10000,100000",
                    help="steps of the many-small-steps trials, comma-separated (11 small tensors per step; "
                         "default 1000,10000,100000; 0 or \"\" skips them)")
    ap.add_argument("--many-workers", default="",
                    help="issue 31: worker counts of the one-trial-many-workers runs, comma-separated (e.g. "
                         "8,64,256; default \"\" skips them)")
    ap.add_argument("--many-workers-steps", type=int, default=1000, help="steps of the many-workers trials (default 1000)")
    ap.add_argument("--smdebug-python", help="a Python with smdebug 1.0.34 (.venv-smdebug): its figures beside Vigil's")
    ap.add_argument("--rows", help="append issue 29's summary rows here (bench/rows.py)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    if args.smdebug_python and not (os.path.isfile(args.smdebug_python) and os.access(args.smdebug_python, os.X_OK)):
        ap.error("--smdebug-python {}: no such interpreter (scripts/python-envs.sh makes .venv-smdebug/bin/python)".format(
            args.smdebug_python))

    build = os.path.abspath(args.build)
    vigil = os.path.join(build, "bin", "vigil")
    bench = os.path.join(build, "bin", "vigil_bench")
    plugins = os.path.join(build, "lib", "vigil", "bench-plugins")
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    python = "/usr/bin/python3"
    results = {"machine": machine(), "size_mb": args.size_mb, "runs": args.runs, "variants": {}}

    for workers in [int(w) for w in args.workers.split(",") if w]:  # --workers "" skips them
        trial = os.path.join(args.cache, "trial-%gMB-%dw" % (args.size_mb, workers))
        meta_file = trial + ".json"
        if not os.path.exists(meta_file):
            shutil.rmtree(trial, ignore_errors=True)
            print("generating %s ..." % trial, flush=True)
            _, _, out = run([bench, "generate", trial, "--size-mb", str(args.size_mb), "--workers", str(workers)])
            with open(meta_file, "w") as f:
                f.write(json.dumps(last_json(out)))
        with open(meta_file) as f:
            meta = json.load(f)
        scratch = os.path.join(args.cache, "scratch")

        def evaluate(n):
            cmd = [vigil, "evaluate", "--trial", trial, "--plugins", plugins, "--no-follow", "--quiet"]
            for i in range(n):
                cmd += ["--rule", "FullScan", "--name", "FullScan%d" % i]
            return cmd

        def evaluate_builtin():  # a built-in rule (the installation's plugins), every step
            return [vigil, "evaluate", "--trial", trial, "--rule", "VanishingGradient", "--no-follow", "--quiet"]

        def write_trial():
            shutil.rmtree(scratch, ignore_errors=True)
            return [bench, "generate", scratch, "--size-mb", str(args.size_mb), "--workers", str(workers)]

        workloads = [
            ("raw_read", lambda: [bench, "raw-read", trial]),
            ("inspect", lambda: [vigil, "inspect", trial]),
            ("scan_cpp", lambda: [bench, "scan", trial]),
            ("evaluate_1_rule", lambda: evaluate(1)),
            ("evaluate_10_rules", lambda: evaluate(10)),
            ("evaluate_builtin", evaluate_builtin),
            ("scan_python", lambda: [python, os.path.join(HERE, "scan_trial.py"), trial]),
            ("raw_write", lambda: [bench, "raw-write", trial, scratch]),
            ("writer", write_trial),
        ]
        run([bench, "raw-read", trial])  # warm the page cache
        variant = {"trial": trial, "generated": meta, "workloads": {}}
        print("\n== %d worker(s): %s (%d steps, %.0f MB of tensors, largest tensor %.1f MiB)" % (
            workers, trial, meta["steps"], meta["tensor_bytes"] / 1e6, meta["largest_tensor_bytes"] / MIB), flush=True)
        for name, make_cmd in workloads:
            walls, inner, rss, reported = [], [], 0, {}
            for _ in range(args.runs):
                wall, peak, out = run(make_cmd(), env=env)
                walls.append(wall)
                rss = max(rss, peak)
                reported = last_json(out)
                if "seconds" in reported:
                    inner.append(reported["seconds"])
            variant["workloads"][name] = {"median_s": statistics.median(walls), "min_s": min(walls),
                                          "max_s": max(walls), "peak_rss_mib": rss / MIB, "reported": reported}
            if inner:  # the time the process measured itself, without start-up and untimed preparation
                variant["workloads"][name]["inner_median_s"] = statistics.median(inner)
            print("  %-18s %8.3f s  (min %.3f, max %.3f)  peak RSS %7.1f MiB" % (
                name, statistics.median(walls), min(walls), max(walls), rss / MIB), flush=True)
        shutil.rmtree(scratch, ignore_errors=True)

        w = variant["workloads"]
        raw_bytes = w["raw_read"]["reported"]["bytes"]
        med = {k: v["median_s"] for k, v in w.items()}
        largest = meta["largest_tensor_bytes"]
        targets = [
            ("full scan (C++) throughput / raw read", (raw_bytes / med["scan_cpp"]) / (raw_bytes / med["raw_read"]),
             ">=", 0.6),
            ("VanishingGradient over every step / raw read (time)", med["evaluate_builtin"] / med["raw_read"],
             "<=", 1.5),
            ("evaluate 10 rules / 1 rule (time)", med["evaluate_10_rules"] / med["evaluate_1_rule"], "<=", 1.2),
            ("inspect (open + list) / full scan (time)", med["inspect"] / med["scan_cpp"], "<=", 0.03),
            ("peak RSS of the full scan / (64 MiB + 4 x largest tensor)",
             w["scan_cpp"]["peak_rss_mib"] * MIB / (64 * MIB + 4 * largest), "<=", 1.0),
            # Both write the same bytes; timed inside the process, without generating or reading the data.
            ("writer throughput / plain sequential writes",
             w["raw_write"]["inner_median_s"] / w["writer"]["inner_median_s"], ">=", 0.5),
            ("Python full scan / C++ full scan (time)", med["scan_python"] / med["scan_cpp"], "<=", 1.5),
        ]
        variant["targets"] = []
        print("  raw read: %.0f MB/s; C++ full scan: %.0f MB/s; writer: %.0f MB/s; plain writes: %.0f MB/s" % (
            raw_bytes / med["raw_read"] / 1e6, raw_bytes / med["scan_cpp"] / 1e6,
            raw_bytes / w["writer"]["inner_median_s"] / 1e6, raw_bytes / w["raw_write"]["inner_median_s"] / 1e6))
        for label, value, op, bound in targets:
            ok = value >= bound if op == ">=" else value <= bound
            variant["targets"].append({"target": label, "value": value, "bound": "%s %g" % (op, bound), "met": ok})
            print("  %-60s %6.3f  (target %s %g)  %s" % (label, value, op, bound, "met" if ok else "MISSED"))
        if workers == 1:  # issue 29's row: the built-in rule over the big trial, smdebug beside
            theirs = smdebug_seconds(args, "vanishing", trial)
            variant["smdebug_vanishing_s"] = theirs
            ratio = med["evaluate_builtin"] / med["raw_read"]
            if theirs is not None:
                print("  smdebug 1.0.34: VanishingGradient %.3f s (Vigil %.1fx faster; target >= 25x)" % (
                    theirs, theirs / med["evaluate_builtin"]), flush=True)
            rows.add(args.rows, "VanishingGradient over a %.0f MB trial (whole process, s)" % (meta["tensor_bytes"] / 1e6),
                     round(med["evaluate_builtin"], 3), "s", smdebug=None if theirs is None else round(theirs, 3),
                     target=">= 25x smdebug, <= 1.2x raw read",
                     met=ratio <= 1.2 and (theirs is None or theirs / med["evaluate_builtin"] >= 25),
                     note="raw read of the event files %.3f s: %.2fx%s" % (
                         med["raw_read"], ratio, "" if theirs is None else "; %.1fx faster than smdebug" % (
                             theirs / med["evaluate_builtin"])))
        results["variants"]["%d_workers" % workers] = variant

    if any(int(n) > 0 for n in args.many_steps.split(",") if n.strip()):
        results["many_steps"] = many_steps(args, vigil, bench, plugins, env)

    if args.many_workers:
        results["many_workers"] = many_workers(args, vigil, bench, plugins, env)

    if args.live_steps > 0:
        results["live"] = {}
        for label, extra in [("plugin rule (FullScan)", []),
                             ("Python rule", ["--python-rule", os.path.join(HERE, "live_rule.py")])]:
            _, _, out = run([bench, "live", os.path.join(args.cache, "live"), "--vigil", vigil, "--plugins", plugins,
                             "--steps", str(args.live_steps), "--startup-ms", str(args.live_startup_ms)] + extra, env=env)
            live = last_json(out)
            live["met"] = live["latency_ms_max"] <= LIVE_TARGET_MS
            theirs = None
            if args.smdebug_python and not extra:  # smdebug's rule loop polls: one figure, for the plugin row
                folder = os.path.join(args.cache, "live-smdebug")
                shutil.rmtree(folder, ignore_errors=True)
                os.makedirs(folder)
                trial, publish = os.path.join(folder, "trial"), os.path.join(folder, "published.json")
                _, _, sout = run([args.smdebug_python, os.path.join(HERE, "smdebug_side.py"), "live", trial, "--steps",
                                  str(args.live_steps), "--publish", publish, "--", python,
                                  os.path.join(HERE, "live_writer.py"), trial, "--steps", str(args.live_steps),
                                  "--publish", publish], env=env)
                theirs = last_json(sout)
                live["smdebug"] = theirs
                print("  smdebug 1.0.34 (its own rule loop, same writer pattern): first %.0f ms, median %.0f ms, "
                      "max %.0f ms" % (theirs["latency_ms_first"], theirs["latency_ms_median"], theirs["latency_ms_max"]))
            rows.add(args.rows, "live, %s: step written -> verdict, worst step (first %.1f ms, median %.1f ms)" % (
                label, live["latency_ms_first"], live["latency_ms_median"]), round(live["latency_ms_max"], 1), "ms",
                smdebug=None if theirs is None else round(theirs["latency_ms_max"], 1),
                target="every step <= %d ms" % LIVE_TARGET_MS, met=live["met"],
                note="" if theirs is None else "smdebug: first %.0f ms, median %.0f ms (it sleeps 2 s between polls)" % (
                    theirs["latency_ms_first"], theirs["latency_ms_median"]))
            results["live"][live["workload"]] = live
            print("\n== live, %s: step published -> its trigger in the status file, %d steps, %d ms startup: "
                  "first %.1f ms, median %.1f ms, p90 %.1f ms, max %.1f ms (target: every step <= %d ms) %s" % (
                      label, live["steps"], live["startup_ms"], live["latency_ms_first"], live["latency_ms_median"],
                      live["latency_ms_p90"], live["latency_ms_max"], LIVE_TARGET_MS,
                      "met" if live["met"] else "MISSED"))

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print("\nwrote " + args.json)


if __name__ == "__main__":
    main()
