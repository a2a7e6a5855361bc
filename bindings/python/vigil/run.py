"""``vigil run``: runs an unmodified PyTorch training command with capture on, and with ``--rule`` or
``--job`` the rule evaluator beside it, its statuses printed as the run trains.

    vigil run --out /tmp/trial --rule VanishingGradient --rule LossNotDecreasing -- python train.py
    vigil run --config debughookconfig.json -- torchrun --nproc-per-node 2 train.py

The capture is vigil.pytorch.Hook, attached through the interpreter's start-up hook (the folder
vigil/_autostart, first on PYTHONPATH: every Python process of the command, torchrun's workers
included, inherits it) and torch's global hooks (vigil/capture/attach.py). The exit status is the
command's. The C++ ``vigil`` forwards ``vigil run`` here (``python -m vigil.run``). docs/capture.md.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading

from . import installation
from .capture.hook_config import HookConfigError, parse_hook_config

_AUTOSTART = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_autostart")
_END_MARKER = "training_job_end.ts"
DEFAULT_COLLECTIONS = ("weights", "gradients", "losses")

_DESCRIPTION = """Runs a PyTorch training command unchanged, with Vigil's capture on: no import of vigil
or smdebug in the script. The model is the first module called outside any other module's forward,
the losses are the outputs of torch.nn loss modules and the values named 'loss' (--loss-name) in the
model's output, a training step is an optimizer step, an evaluation step a forward pass, and the mode
follows model.train()/model.eval(). Every process of the command is captured (torchrun's ranks as
worker_<RANK>). With --rule or --job, `vigil evaluate` follows the trial as it grows and its
statuses are printed (on stderr) as the run trains. VIGIL_DISABLE=1 runs the command without capture."""

_EPILOG = """exit status: the command's (128+N when a signal N ended it), 2 for a bad command line or
configuration; a failing evaluator is reported on stderr and does not change it.

example: vigil run --out /tmp/trial --rule VanishingGradient --rule LossNotDecreasing -- python train.py"""


def _parser():
    p = argparse.ArgumentParser(prog="vigil run", description=_DESCRIPTION, epilog=_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", metavar="FILE",
                   help="SageMaker's DebugHookConfig JSON (LocalPath, HookParameters, CollectionConfigurations)")
    p.add_argument("--out", metavar="DIR", help="the trial's folder (the config's LocalPath otherwise)")
    p.add_argument("--collection", metavar="NAME", action="append", default=None,
                   help="a collection to save (repeatable; default without --config: weights, gradients, losses)")
    p.add_argument("--save-interval", metavar="N", type=int, help="save every N steps (HookParameters save_interval)")
    p.add_argument("--loss-name", metavar="NAME", action="append", default=None,
                   help="a value of the model's output saved as a loss (repeatable; default: loss)")
    rules = p.add_mutually_exclusive_group()
    rules.add_argument("--rule", metavar="NAME", action="append", default=None,
                       help="evaluate this rule live (repeatable; `vigil rules` lists them)")
    rules.add_argument("--job", metavar="FILE", help="evaluate the rules of this job file live (vigil evaluate --job)")
    p.add_argument("--status-file", metavar="FILE", help="the evaluator's DebugRuleEvaluationStatuses file")
    p.add_argument("--evaluate-timeout", metavar="SECS", type=float, default=300.0,
                   help="after the command ends, how long the evaluator may take to finish (default 300)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]: the training command")
    return p


def _config(args):
    """The DebugHookConfig document the capture reads: the --config file's, with --out and the flags."""
    doc = {}
    if args.config:
        try:
            with open(args.config) as f:
                doc = json.load(f)
        except OSError as e:
            raise HookConfigError("{}: {}".format(args.config, e.strerror)) from None
        except ValueError as e:
            raise HookConfigError("{}: not valid JSON: {}".format(args.config, e)) from None
        if not isinstance(doc, dict):
            raise HookConfigError("{}: the top level must be a JSON object".format(args.config))
    if args.out:
        doc["LocalPath"] = os.path.abspath(args.out)
    elif "LocalPath" not in doc:
        raise HookConfigError("give --out DIR, or a --config whose LocalPath names the trial's folder")
    params = doc.setdefault("HookParameters", {})
    # every rank saves (each is a worker of the trial), unless the configuration says otherwise
    params.setdefault("include_workers", "all")
    if args.save_interval is not None:
        params["save_interval"] = str(args.save_interval)
    collections = args.collection or ([] if args.config else list(DEFAULT_COLLECTIONS))
    configured = doc.setdefault("CollectionConfigurations", [])
    names = {c.get("CollectionName") for c in configured if isinstance(c, dict)}
    configured.extend({"CollectionName": name} for name in collections if name not in names)
    parse_hook_config(doc, args.config or "vigil run")  # refused here, before the command starts
    return doc


def _vigil_executable():
    exe = os.environ.get("VIGIL_EXECUTABLE") or installation.executable()
    if not exe:
        raise HookConfigError("no vigil command found beside this package (set VIGIL_EXECUTABLE)")
    return exe


# the evaluator's progress lines ("vigil: TRIAL: step N"): its statuses and messages are relayed, not these
_PROGRESS = re.compile(r"^vigil: .*: step -?\d+$")


def _relay(stream, prefix):
    for line in iter(stream.readline, ""):
        if not _PROGRESS.match(line.rstrip("\n")):
            sys.stderr.write(prefix + line)
            sys.stderr.flush()
    stream.close()


def _start_evaluator(args, out_dir):
    cmd = [_vigil_executable(), "evaluate", "--trial", out_dir]
    if args.job:
        cmd += ["--job", os.path.abspath(args.job)]
    for rule in args.rule or ():
        cmd += ["--rule", rule]
    if args.status_file:
        cmd += ["--status-file", os.path.abspath(args.status_file)]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    relays = [threading.Thread(target=_relay, args=(stream, "[vigil evaluate] "), daemon=True)
              for stream in (proc.stdout, proc.stderr)]
    for relay in relays:
        relay.start()
    return proc, relays


def _finish_evaluator(proc, relays, out_dir, timeout):
    """The evaluator ends by itself at the trial's end marker; without one (the command was killed)
    it is stopped."""
    ended = os.path.exists(os.path.join(out_dir, _END_MARKER))
    try:
        rc = proc.wait(timeout=timeout if ended else 5)
    except subprocess.TimeoutExpired:
        sys.stderr.write("vigil run: {}; stopping the evaluator\n".format(
            "the evaluator did not finish within {:g} s".format(timeout) if ended
            else "the trial has no end-of-training marker (the command did not close the capture)"))
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
    for relay in relays:
        relay.join(timeout=5)
    if rc != 0:
        sys.stderr.write("vigil run: the evaluator exited with status {}\n".format(rc))


def main(argv=None):
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        _parser().error("give the training command after --, e.g. vigil run --out DIR -- python train.py")
    if args.rule is None and args.job is None and args.status_file:
        _parser().error("--status-file needs --rule or --job")
    disabled = os.environ.get("VIGIL_DISABLE", "").strip().lower() in ("1", "true")
    env = dict(os.environ)
    evaluator = None
    config_dir = None
    out_dir = None
    if not disabled:
        try:
            doc = _config(args)
            if args.rule or args.job:
                _vigil_executable()
        except HookConfigError as e:
            sys.stderr.write("vigil run: {}\n".format(e))
            return 2
        out_dir = doc["LocalPath"]
        if os.path.exists(os.path.join(out_dir, _END_MARKER)):
            sys.stderr.write("vigil run: {} already holds an ended trial; give a new --out\n".format(out_dir))
            return 2
        config_dir = tempfile.mkdtemp(prefix="vigil-run-")
        config_path = os.path.join(config_dir, "debughookconfig.json")
        with open(config_path, "w") as f:
            json.dump(doc, f)
        env["VIGIL_RUN_CONFIG"] = config_path
        if args.loss_name:
            env["VIGIL_LOSS_NAMES"] = ",".join(args.loss_name)
        env["PYTHONPATH"] = os.pathsep.join([_AUTOSTART] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        if args.rule or args.job:
            os.makedirs(out_dir, exist_ok=True)
            evaluator = _start_evaluator(args, out_dir)
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as e:
        sys.stderr.write("vigil run: cannot run {}: {}\n".format(command[0], e.strerror))
        if evaluator is not None:
            evaluator[0].kill()
            evaluator[0].wait()
        return 127
    # Ctrl-C reaches the command (same process group) and ends it; a SIGTERM to vigil run is passed on
    # to it; vigil run waits for it either way.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signal.SIGTERM))
    try:
        rc = child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
    if evaluator is not None:
        _finish_evaluator(*evaluator, out_dir, args.evaluate_timeout)
    if config_dir is not None:
        for name in os.listdir(config_dir):
            os.unlink(os.path.join(config_dir, name))
        os.rmdir(config_dir)
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(main())
