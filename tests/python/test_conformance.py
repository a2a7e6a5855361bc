"""Conformance of the Python API with smdebug 1.0.34's read API, replayed from every fixture's
expected.json (the same replay as tests/trial/conformance_test.cpp, through Python): numpy values
(sha256 and summaries), shapes, steps, names, collections, reductions, and exceptions (class name and
str()).

Each fixture runs four times: over the host directly (vigil.create_trial -> _vigil.TrialCore), over
the plugin ABI's host table (_vigil.ApiTrialCore, what Python rules see inside `vigil evaluate`),
"captured": on the trial that the fixture's own generator script (generators/, written for smdebug's
PyTorch hook) writes when it runs unchanged on vigil.compat with Vigil's hook (same torch, same
seeds, one thread, Debian's reference BLAS as when the fixtures were made), and "s3": the fixture
uploaded to the loopback S3 server (tests/support/s3_test_server.py, one for the session, through its
SigV4-checking proxy) and read back with vigil.create_trial("s3://trials/<fixture>"), which must
answer exactly as "direct" does. Captured values are bit for bit the fixture's; saved reductions,
which Vigil's hook computes in C++ where smdebug's used torch, are compared with the
computed-reduction tolerance; the captured index files are the fixture's (test_captured_index_order).

Where Vigil deliberately differs from smdebug (docs/compatibility.md) the right answer is asserted,
built independently from the fixture's raw records (raw_records.py):
  * DT_INT8 is read as int8 (smdebug: uint8) -- same bytes / sha256, signed values;
  * DT_INT16 is decoded (smdebug: KeyError);
  * tensor_names() for a mode or mode step never seen is [] (smdebug: KeyError);
  * computed l1/l2 are element-wise for every rank (smdebug: matrix norms or "Improper number of
    dimensions to norm.");
  * float16 std/variance that overflow numpy's float16 intermediates are exact, then rounded.
Over the ABI, reductions come back as float64 (no dtype), collections carry names and tensors only,
and saved reductions are known only where no raw value was saved (documented in docs/python.md).
"""
import contextlib
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import raw_records
from conftest import FIXTURES, compat_command, expected, fixture_names, reference_blas_env, torch1_interpreter, trial_dir
from real_readers import check_trials
from summaries import as_float, close, compare_summary, reduction_tolerance, reference_reduction, summarize

import vigil
from vigil import _vigil
from vigil.modes import ModeKeys
from vigil.trials import HostTrial, Trial

MODES = ["GLOBAL", "TRAIN", "EVAL", "PREDICT"]
KINDS = ["direct", "api", "captured", "s3"]
GENERATORS = os.path.join(FIXTURES, "generators")

_trials = {}
_captured_root = None
_s3 = None  # the session's S3TestServer, started by the first "s3" trial
_s3_uploaded = set()
S3_BUCKET = "trials"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))


@pytest.fixture(scope="session", autouse=True)
def _stop_s3_server():
    """Stops the S3 server at the end of the session, when a test started it."""
    global _s3
    yield
    if _s3 is not None:
        server, _s3 = _s3, None
        for key in [k for k in _trials if k[1] == "s3"]:
            del _trials[key]
        server.__exit__(None, None, None)


@contextlib.contextmanager
def s3_environment(server):
    """The server's AWS_* variables for the block only (the S3 configuration is read when a store is
    opened), so that they reach no other test."""
    env = server.environment(through_proxy=True)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def s3_location(fixture):
    """s3://trials/<fixture>, uploaded once per session (the server is started by the first call)."""
    global _s3
    if _s3 is None:
        from s3_test_server import S3TestServer
        server = S3TestServer(buckets=[S3_BUCKET])
        server.__enter__()  # raises when the server cannot start: the test fails, it is not skipped
        _s3 = server
    location = "s3://{}/{}".format(S3_BUCKET, fixture)
    if fixture not in _s3_uploaded:
        with s3_environment(_s3):
            uploader = _vigil.TrialUploader(trial_dir(fixture), location, 0.05)
            report = uploader.finish(120)
        assert report["error"] is None and not report["files_left"], "upload of %s: %r" % (fixture, report)
        n_files = sum(len(files) for _, _, files in os.walk(trial_dir(fixture)))
        assert report["files_uploaded"] == n_files, "uploaded %d of %d files of %s" % (
            report["files_uploaded"], n_files, fixture)
        _s3_uploaded.add(fixture)
    return location


# What Vigil's hook saves where smdebug's could not (docs/compatibility.md): the generators' bfloat16
# tensor, which smdebug's hook skipped (numpy has no bfloat16). Left out where the captured trial is
# compared with smdebug's answers, and checked on its own (test_captured_low_precision_tensor).
SMDEBUG_COULD_NOT_SAVE = {"dt_bfloat16"}


def _comparable(kind, names):
    """`names` as smdebug's hook would have saved them: without SMDEBUG_COULD_NOT_SAVE when captured."""
    if kind != "captured" or not isinstance(names, (list, set)):
        return names
    kept = [n for n in names if n not in SMDEBUG_COULD_NOT_SAVE]
    return set(kept) if isinstance(names, set) else kept


def captured_dir(fixture):
    """The trial gen_<fixture>.py writes on vigil.compat (written once per test session)."""
    global _captured_root
    if _captured_root is None:
        _captured_root = tempfile.mkdtemp(prefix="vigil-captured-")
    out = os.path.join(_captured_root, fixture)
    if not os.path.isdir(out):
        script = os.path.join(GENERATORS, "gen_{}.py".format(fixture))
        env = reference_blas_env(dict(os.environ, OMP_NUM_THREADS="1"))
        # The fixtures were computed on Debian's torch 1.13: the capture is compared bit for bit.
        r = subprocess.run(compat_command(script, out, python=torch1_interpreter()), cwd=GENERATORS, env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, "gen_{}.py on vigil.compat failed:\n{}{}".format(fixture, r.stdout, r.stderr)
        assert "vigil hook disabled" not in r.stderr, r.stderr
    return out


def get_trial(fixture, kind):
    """ONE trial object per fixture and kind, like the single create_trial() smdebug answered from."""
    key = (fixture, kind)
    if key not in _trials:
        if kind == "s3":
            location = s3_location(fixture)
            with s3_environment(_s3):
                trial = vigil.create_trial(location)
            assert type(trial).__name__ == "S3Trial" and trial._core.path == location, (type(trial), trial._core.path)
            _trials[key] = trial
        elif kind == "captured":
            _trials[key] = vigil.create_trial(captured_dir(fixture))
        elif kind == "direct":
            _trials[key] = vigil.create_trial(trial_dir(fixture))
        elif kind == "api":
            _trials[key] = HostTrial(fixture, _vigil.open_api_trial(trial_dir(fixture), copy_values=True))
        else:
            raise AssertionError("unknown kind " + kind)
    return _trials[key]


class Report:
    def __init__(self, fixture, kind, section):
        self.where = "[%s/%s %s]" % (fixture, kind, section)
        self.failures = []
        self.checks = 0

    def check(self, ok, where, what=""):
        self.checks += 1
        if not ok:
            self.failures.append("%s %s: %s" % (self.where, where, what))
        return ok

    def call(self, fn):
        try:
            return True, fn()
        except Exception as e:  # noqa: BLE001 - compared below
            return False, e

    def expect_exception(self, where, outcome, exc):
        ok, got = outcome
        if ok:
            return self.check(False, where, "expected %s: %r, got a result %r" % (exc["type"], exc["message"], got))
        good = self.check(type(got).__name__ == exc["type"], where + " exception type",
                          "expected %s, got %s: %s" % (exc["type"], type(got).__name__, got))
        good &= self.check(str(got) == exc["message"], where + " exception message",
                           "expected %r, got %r" % (exc["message"], str(got)))
        return good

    def done(self):
        assert self.checks > 0, self.where + " compared nothing"
        if self.failures:
            shown = "\n".join(self.failures[:60])
            more = len(self.failures) - 60
            pytest.fail("%d of %d checks failed:\n%s%s" % (len(self.failures), self.checks, shown,
                                                            "\n... and %d more" % more if more > 0 else ""))


def default_worker(exp):
    workers = exp["trial"]["workers"]
    return workers[0] if workers else "worker_0"


def fixture_global_step(exp, mode, step):
    if mode == "GLOBAL":
        return step
    for g in exp["trial"]["global_step_lookup"]:
        if g["mode"] == mode and g["mode_step"] == step and isinstance(g["global_step"], int):
            return g["global_step"]
    return None


def raw(fixture, tensor, step, worker):
    return raw_records.read_raw_tensor(trial_dir(fixture), tensor, step, worker)


def expected_value_summary(rep, where, fixture_summary, rec):
    """The fixture's summary, except for DT_INT8 records, which Vigil reads signed."""
    if rec is None or rec.data_type != raw_records.DT_INT8:
        return fixture_summary
    ref = summarize(rec.array())
    rep.check(ref["sha256"] == fixture_summary.get("sha256"), where + " (harness)",
              "raw int8 record does not match the fixture's sha256")
    if "values" in fixture_summary:
        unsigned = [v - 256 if v >= 128 else v for v in fixture_summary["values"]]
        rep.check(unsigned == ref["values"], where + " (harness)",
                  "fixture uint8 values do not reinterpret to the raw int8 values")
    return ref


params = [(f, k) for f in fixture_names() for k in KINDS]
ids = ["%s-%s" % p for p in params]


def test_fixtures_present():
    names = fixture_names()
    for required in ("loss_not_decreasing", "mixed_dtypes", "mlp_healthy", "vanishing_gradient"):
        assert required in names, "fixture %s missing" % required


@pytest.mark.parametrize("fixture,kind", params, ids=ids)
def test_trial_facts(fixture, kind):
    rep = Report(fixture, kind, "TrialFacts")
    exp = expected(fixture)
    t = exp["trial"]
    trial = get_trial(fixture, kind)
    rep.check(trial.training_ended == t["training_ended"], "trial.training_ended")
    rep.check(trial.workers() == t["workers"], "trial.workers()", "got %s" % trial.workers())
    rep.check(trial.num_workers == t["num_workers"], "trial.num_workers", "got %s" % trial.num_workers)
    for incl in (False, True):
        steps = t["steps_incl_incomplete" if incl else "steps"]
        for mn in MODES:
            if mn in steps:
                got = trial.steps(mode=ModeKeys[mn], show_incomplete_steps=incl)
                rep.check(got == steps[mn], "trial.steps(mode=%s, incl=%s)" % (mn, incl),
                          "expected %s, got %s" % (steps[mn], got))
    rep.check(trial.loaded_all_steps == t["loaded_all_steps"], "trial.loaded_all_steps")
    rep.check(trial.last_complete_step == t["last_complete_step"], "trial.last_complete_step",
              "got %s" % trial.last_complete_step)
    got_modes = sorted(m.name for m in trial.modes())
    rep.check(got_modes == sorted(t["modes"]), "trial.modes()", "got %s" % got_modes)
    rep.check(all(isinstance(m, ModeKeys) for m in trial.modes()), "trial.modes() are ModeKeys")
    for s in t["step_map"]:
        g = s["global_step"]
        mode, ms = trial.mode_modestep(g)
        if s["trial.mode"] is None:
            rep.check(mode is None and ms is None, "trial.mode_modestep(%d)" % g, "expected (None, None)")
        else:
            rep.check(isinstance(mode, ModeKeys) and mode.name == s["trial.mode"] and ms == s["trial.mode_step"],
                      "trial.mode_modestep(%d)" % g, "got (%s, %s)" % (mode, ms))
            rep.check(trial.mode(g) == mode and trial.mode_step(g) == ms, "trial.mode/mode_step(%d)" % g)
    for s in t["global_step_lookup"]:
        got = trial.global_step(ModeKeys[s["mode"]], s["mode_step"])
        rep.check(got == s["global_step"], "trial.global_step(%s, %s)" % (s["mode"], s["mode_step"]),
                  "expected %s, got %s" % (s["global_step"], got))
    rep.done()


@pytest.mark.parametrize("fixture,kind", params, ids=ids)
def test_tensor_names(fixture, kind):
    rep = Report(fixture, kind, "TensorNames")
    tn = expected(fixture)["trial"]["tensor_names"]
    trial = get_trial(fixture, kind)

    def run(kwargs, exp, where):
        outcome = rep.call(lambda: trial.tensor_names(**kwargs))
        if isinstance(exp, dict) and "exception" in exp:
            exc = exp["exception"]
            if exc["type"] == "KeyError":  # smdebug's KeyError for an unseen mode / mode step: Vigil gives []
                rep.check(outcome[0] and outcome[1] == [], where + " (smdebug: KeyError; Vigil: [])",
                          "got %r" % (outcome[1],))
            else:
                rep.expect_exception(where, outcome, exc)
            return
        got = _comparable(kind, outcome[1]) if outcome[0] else outcome[1]
        rep.check(outcome[0] and got == exp, where, "expected %s, got %r" % (exp, got))

    run({}, tn["all"], "trial.tensor_names()")
    for m, e in tn["by_mode"].items():
        run({"mode": ModeKeys[m]}, e, "tensor_names(mode=%s)" % m)
    for c, e in tn["by_collection"].items():
        run({"collection": c}, e, "tensor_names(collection=%r)" % c)
        if kind != "api":
            run({"collection": trial.collection(c)}, e, "tensor_names(collection=<Collection %s>)" % c)
    for s, e in tn["by_step"].items():
        run({"step": int(s)}, e, "tensor_names(step=%s)" % s)
    for m, by in tn["by_mode_step"].items():
        if isinstance(by, dict) and "exception" in by:
            run({"mode": ModeKeys[m], "step": 0}, by, "tensor_names(mode=%s, step=0)" % m)
            continue
        for s, e in by.items():
            run({"mode": ModeKeys[m], "step": int(s)}, e, "tensor_names(mode=%s, step=%s)" % (m, s))
    for r, e in tn["by_regex"].items():
        run({"regex": r}, e, "tensor_names(regex=%r)" % r)
        run({"regex": [[r]]}, e, "tensor_names(regex=[[%r]])" % r)
    run({"step": 1000000}, {"exception": {"type": "KeyError", "message": ""}}, "tensor_names(step=1000000)")
    outcome = rep.call(lambda: trial.tensor_names(regex="x", collection="losses"))
    rep.check(not outcome[0] and isinstance(outcome[1], ValueError) and type(outcome[1]).__name__ == "SMDebugValueError",
              "tensor_names(regex=, collection=) raises SMDebugValueError", repr(outcome[1]))
    rep.done()


@pytest.mark.parametrize("fixture,kind", params, ids=ids)
def test_collections(fixture, kind):
    rep = Report(fixture, kind, "Collections")
    ec = expected(fixture)["trial"]["collections"]
    trial = get_trial(fixture, kind)
    got = trial.collections()
    rep.check(sorted(got) == sorted(ec), "trial.collections() names", "expected %s, got %s" % (sorted(ec), sorted(got)))
    for name, e in ec.items():
        c = got.get(name)
        if c is None:
            continue
        rep.check(trial.collection(name) is c and c.name == e["name"], "trial.collection(%r)" % name)
        if kind == "api":
            continue  # over the ABI a collection carries its name and tensors only
        rep.check(c.include_regex == e["include_regex"], name + ".include_regex",
                  "expected %s, got %s" % (e["include_regex"], c.include_regex))
        rep.check(_comparable(kind, c.tensor_names) == set(e["tensor_names"]), name + ".tensor_names",
                  "expected %s, got %s" % (e["tensor_names"], c.tensor_names))
        rep.check(c.save_histogram == e["save_histogram"], name + ".save_histogram")
        rc = e["reduction_config"]
        if rc is None:
            rep.check(c.reduction_config is None, name + ".reduction_config", "expected None")
        elif rep.check(c.reduction_config is not None, name + ".reduction_config", "expected %s" % rc):
            r = c.reduction_config
            rep.check(r.save_raw_tensor == rc["save_raw_tensor"], name + ".reduction_config.save_raw_tensor")
            rep.check(r.save_shape == rc["save_shape"], name + ".reduction_config.save_shape")
            tokens = set(t for t in rc["reductions"].split(",") if t)
            got_tokens = set(r.reductions) | {"abs_" + x for x in r.abs_reductions} | \
                {x + "_norm" for x in r.norms} | {"abs_" + x + "_norm" for x in r.abs_norms}
            rep.check(tokens == got_tokens, name + ".reduction_config.reductions",
                      "expected %s, got %s" % (sorted(tokens), sorted(got_tokens)))
        sc = e["save_config"]
        if sc is None:
            rep.check(c.save_config is None, name + ".save_config", "expected None")
            continue
        if not rep.check(c.save_config is not None, name + ".save_config", "expected %s" % sc):
            continue
        for mn in ("TRAIN", "EVAL", "PREDICT", "GLOBAL"):
            em = sc.get(mn)
            if em is None:
                # A mode the file leaves null stays None, as smdebug 1.0.34's reader keeps it.
                rep.check(c.save_config.to_json_dict()[mn] is None, name + ".save_config." + mn, "expected None")
                continue
            gm = c.save_config.get_save_config(ModeKeys[mn])
            rep.check((gm.save_interval, gm.save_steps, gm.start_step, gm.end_step) ==
                      (em["save_interval"], em["save_steps"], em["start_step"], em["end_step"]),
                      name + ".save_config." + mn, "expected %s, got %s" % (em, gm))
    outcome = rep.call(lambda: trial.collection("no-such-collection"))
    rep.check(outcome[0] and outcome[1].name == "no-such-collection" and not outcome[1].tensor_names,
              "trial.collection(unknown) gives an empty collection (smdebug quirk)")
    rep.done()


@pytest.mark.parametrize("fixture,kind", params, ids=ids)
def test_tensor_entries(fixture, kind):
    rep = Report(fixture, kind, "TensorEntries")
    exp = expected(fixture)
    trial = get_trial(fixture, kind)
    for tname, tj in exp["tensors"].items():
        tw = "tensor=" + tname
        rep.check(trial.has_tensor(tname), tw + " has_tensor")
        outcome = rep.call(lambda: trial.tensor(tname))
        if not rep.check(outcome[0] and outcome[1].name == tname, tw + " trial.tensor()", repr(outcome[1])):
            continue
        tensor = outcome[1]
        for incl in (False, True):
            steps = tj["steps_incl_incomplete" if incl else "steps"]
            for mn in MODES:
                if mn in steps:
                    got = tensor.steps(mode=ModeKeys[mn], show_incomplete_steps=incl)
                    rep.check(got == steps[mn], tw + " steps(mode=%s, incl=%s)" % (mn, incl),
                              "expected %s, got %s" % (steps[mn], got))
        for e in tj["entries"]:
            step, worker, mode_name, mode_step = e["step"], e["worker"], e["mode"], e["mode_step"]
            w = "%s step=%d worker=%s" % (tw, step, worker)
            rec = raw(fixture, tname, step, worker)
            val = rep.call(lambda: tensor.value(step, worker=worker))
            if "value" in e:
                exp_summary = expected_value_summary(rep, w + " value", e["value"], rec)
                if rep.check(val[0], w + " value()", "expected a value, got %r" % (val[1],)):
                    arr = val[1]
                    rep.check(isinstance(arr, np.ndarray) and not arr.flags.writeable, w + " value() read-only ndarray")
                    problems = compare_summary(exp_summary, summarize(arr))
                    rep.check(not problems, w + " value()", "; ".join(problems))
                    v2 = rep.call(lambda: tensor.value(mode_step, mode=ModeKeys[mode_name], worker=worker))
                    rep.check(v2[0] and summarize(v2[1])["sha256"] == exp_summary["sha256"],
                              w + " value(mode_step=%d, mode=%s) sha256" % (mode_step, mode_name), repr(v2[1])[:200])
            elif "value_exception" in e:
                exc = e["value_exception"]
                if exc["type"] == "KeyError":
                    wk = w + " value() (smdebug: KeyError %s)" % exc["message"]
                    if rep.check(rec is not None and rec.array() is not None, wk + " (harness)", "cannot decode raw"):
                        if rep.check(val[0], wk, "expected Vigil to decode it, got %r" % (val[1],)):
                            problems = compare_summary(summarize(rec.array()), summarize(val[1]))
                            rep.check(not problems, wk, "; ".join(problems))
                else:
                    rep.expect_exception(w + " value()", val, exc)
            shp = rep.call(lambda: tensor.shape(step, worker=worker))
            if "shape" in e:
                rep.check(shp[0] and shp[1] == tuple(e["shape"]), w + " shape()",
                          "expected %s, got %r" % (e["shape"], shp[1]))
            elif "shape_exception" in e:
                exc = e["shape_exception"]
                if exc["type"] == "KeyError":
                    rep.check(shp[0] and rec is not None and shp[1] == tuple(rec.shape), w + " shape() (smdebug: KeyError)",
                              "got %r" % (shp[1],))
                else:
                    rep.expect_exception(w + " shape()", shp, exc)
            if val[0] and shp[0]:
                rep.check(val[1].shape == shp[1], w + " value().shape == shape()")
            # saved reductions
            esr = e.get("saved_reductions", [])
            srs = rep.call(lambda: tensor.reduction_values(step, worker=worker))
            if rep.check(srs[0], w + " reduction_values()", repr(srs[1])):
                got = srs[1]
                ek = sorted((r["name"], r["abs"]) for r in esr)
                rep.check(sorted(got) == ek, w + " reduction_values() keys", "expected %s, got %s" % (ek, sorted(got)))
                for r in esr:
                    key = (r["name"], r["abs"])
                    if key not in got:
                        continue
                    gv = np.asarray(got[key])
                    if kind != "api":
                        rep.check(gv.dtype.name == r["dtype"], w + " saved %s dtype" % (key,),
                                  "expected %s, got %s" % (r["dtype"], gv.dtype.name))
                        if "shape" in r:
                            rep.check(list(gv.shape) == r["shape"], w + " saved %s shape" % (key,))
                    tol = 0.0 if kind != "captured" else reduction_tolerance(r["name"], r["dtype"], r["value"], None)
                    rep.check(close(r["value"], float(gv.ravel()[0]), tol), w + " saved %s value" % (key,),
                              "expected %s, got %s" % (r["value"], gv))
                    rv = rep.call(lambda: tensor.reduction_value(step, r["name"], worker=worker, abs=r["abs"]))
                    rep.check(rv[0] and close(r["value"], float(rv[1]), tol), w + " reduction_value %s (saved)" % (key,),
                              "expected %s, got %r" % (r["value"], rv[1]))
                    if kind != "api" and rv[0]:
                        rep.check(np.asarray(rv[1]).dtype.name == r["dtype"], w + " reduction_value %s dtype" % (key,))
                        info = trial._core.reduction_value_info(tname, step, r["name"], r["abs"], 4, worker)
                        rep.check(info[1] is True, w + " reduction_value %s comes from the saved record" % (key,))
            tws = rep.call(lambda: tensor.workers(step))
            rep.check(tws[0] and worker in tws[1], w + " workers()", repr(tws[1]))
            mode, ms = trial.mode_modestep(step)
            rep.check(mode is not None and mode.name == mode_name and ms == mode_step, w + " mode_modestep")
    rep.done()


@pytest.mark.parametrize("fixture", fixture_names())
def test_the_real_smdebug_reads_the_captured_trial_as_vigil_does(fixture, smdebug_python):
    """The trial Vigil's hook captured (outside any test's tmp_path) read by smdebug 1.0.34 and by Vigil."""
    check_trials([captured_dir(fixture)], smdebug_python)


@pytest.mark.parametrize("fixture", fixture_names())
def test_captured_index_order(fixture):
    """The generator run on Vigil's hook writes the fixture's index files: the same steps, each with
    its mode and mode step, event file, and tensors and shapes in the same order (the order in which
    smdebug's hook wrote them)."""
    rep = Report(fixture, "captured", "IndexOrder")
    want, got = raw_records.index_files(trial_dir(fixture)), raw_records.index_files(captured_dir(fixture))
    rep.check(sorted(got) == sorted(want), "index files", "expected %s, got %s" % (sorted(want), sorted(got)))
    for path in sorted(set(want) & set(got)):
        (wm, wt, ws), (gm, gt, gs) = want[path], got[path]
        rep.check(gm == wm, path + " meta", "expected %s, got %s" % (wm, gm))
        rep.check(_comparable("captured", gt) == wt, path + " tensor order", "expected %s, got %s" % (wt, gt))
        rep.check(gs == ws, path + " shape order", "expected %s, got %s" % (ws, gs))
    rep.done()


@pytest.mark.parametrize("fixture,kind", params, ids=ids)
def test_computed_reductions(fixture, kind):
    rep = Report(fixture, kind, "ComputedReductions")
    exp = expected(fixture)
    trial = get_trial(fixture, kind)
    for tname, tj in exp["tensors"].items():
        if not tj["computed_reductions"]:
            continue
        tensor = trial.tensor(tname)
        raws = {}
        for cr in tj["computed_reductions"]:
            step, worker, op, abs_ = cr["step"], cr["worker"], cr["name"], cr["abs"]
            source = cr.get("source", "computed")
            w = "tensor=%s step=%d worker=%s reduction=%s%s" % (tname, step, worker, "abs_" if abs_ else "", op)
            if (step, worker) not in raws:
                raws[(step, worker)] = raw(fixture, tname, step, worker)
            rec = raws[(step, worker)]
            value = rec.array() if rec is not None else None
            rv = rep.call(lambda: tensor.reduction_value(step, op, worker=worker, abs=abs_))
            is_int8 = rec is not None and rec.data_type == raw_records.DT_INT8
            norm = op in ("l1", "l2")
            elementwise = norm and source == "computed" and rec is not None and (len(rec.shape) != 1 or "exception" in cr)
            if is_int8 or elementwise:
                ref = reference_reduction(value, op, abs_)
                expected_value, dtype = float(ref), np.asarray(ref).dtype.name
            elif "exception" in cr:
                rep.expect_exception(w, rv, cr["exception"])
                continue
            else:
                expected_value, dtype = as_float(cr["value"]), cr["dtype"]
                if not math.isfinite(expected_value) and value is not None:
                    ref = reference_reduction(value, op, abs_)  # float16 intermediate overflow in numpy
                    if math.isfinite(float(ref)):
                        expected_value, dtype = float(ref), np.asarray(ref).dtype.name
            tol = 0.0 if source == "saved" and kind != "captured" else reduction_tolerance(op, dtype, expected_value,
                                                                                            value)
            if kind == "api":
                tol = max(tol, 0.0)
            if not rep.check(rv[0], w, "expected %s %s, got %r" % (expected_value, dtype, rv[1])):
                continue
            got = rv[1]
            if kind != "api":
                rep.check(np.asarray(got).dtype.name == dtype, w + " dtype",
                          "expected %s, got %s" % (dtype, np.asarray(got).dtype.name))
                info = trial._core.reduction_value_info(tname, step, op, abs_, 4, worker)
                rep.check(info[1] == (source == "saved"), w + " saved", "expected source %s" % source)
            rep.check(close(expected_value, float(got), tol), w,
                      "expected %r, got %r (tolerance %g)" % (expected_value, float(got), tol))
    rep.done()


@pytest.mark.parametrize("fixture,kind", params, ids=ids)
def test_probes(fixture, kind):
    rep = Report(fixture, kind, "Probes")
    exp = expected(fixture)
    trial = get_trial(fixture, kind)
    for p in exp["probes"]:
        api = p["api"]
        w = "probe " + p["call"]
        exc = p.get("exception")
        res = p.get("result")
        mode_name = p.get("mode", "GLOBAL")
        mode = ModeKeys[mode_name]
        step = p.get("step", 0)
        worker = p.get("worker")
        call = p["call"]
        tname = p.get("tensor")
        if tname is None and "('" in call:
            tname = call.split("('", 1)[1].split("')", 1)[0]

        def probe_raw():
            g = fixture_global_step(exp, mode_name, step)
            return None if g is None else raw(fixture, tname, g, worker or default_worker(exp))

        def tensor():
            return trial.tensor(tname)

        if api == "tensor":
            outcome = rep.call(tensor)
            if exc:
                rep.expect_exception(w, outcome, exc)
            else:
                rep.check(outcome[0], w, repr(outcome[1]))
        elif api == "has_tensor":
            rep.check(trial.has_tensor(tname) == res, w)
        elif api == "value":
            outcome = rep.call(lambda: tensor().value(step, mode=mode, worker=worker))
            if exc is None:
                rec = probe_raw()
                es = expected_value_summary(rep, w, res, rec)
                if rep.check(outcome[0], w, repr(outcome[1])):
                    problems = compare_summary(es, summarize(outcome[1]))
                    rep.check(not problems, w, "; ".join(problems))
            elif exc["type"] == "KeyError":
                rec = probe_raw()
                if rep.check(outcome[0] and rec is not None, w + " (smdebug: KeyError)", repr(outcome[1])):
                    problems = compare_summary(summarize(rec.array()), summarize(outcome[1]))
                    rep.check(not problems, w + " (smdebug: KeyError)", "; ".join(problems))
            else:
                rep.expect_exception(w, outcome, exc)
        elif api == "reduction_value":
            op, abs_ = p["reduction"], p.get("abs", False)
            outcome = rep.call(lambda: tensor().reduction_value(step, op, mode=mode, worker=worker, abs=abs_))
            rec = probe_raw() if (exc and exc["type"] == "KeyError") or res is not None else None
            if (exc and exc["type"] == "KeyError") or (res is not None and rec is not None
                                                       and rec.data_type == raw_records.DT_INT8):
                ref = reference_reduction(rec.array(), op, abs_)
                tol = reduction_tolerance(op, np.asarray(ref).dtype.name, float(ref), rec.array())
                if rep.check(outcome[0], w + " (reference)", repr(outcome[1])):
                    rep.check(close(float(ref), float(outcome[1]), tol), w + " (reference)",
                              "expected %r, got %r" % (float(ref), outcome[1]))
                    if kind != "api":
                        rep.check(np.asarray(outcome[1]).dtype == np.asarray(ref).dtype, w + " dtype (reference)")
            elif res is not None:
                if rep.check(outcome[0], w, repr(outcome[1])):
                    got = np.asarray(outcome[1])
                    e = res["values"][0] if "values" in res else res.get("sum")
                    if kind == "api":
                        rep.check(close(e, float(got), 1e-6 * abs(as_float(e))), w, "expected %r, got %r" % (e, got))
                    elif kind == "captured":  # a saved reduction is Vigil's hook's (docs/compatibility.md)
                        tol = reduction_tolerance(op, res["dtype"], e, None)
                        rep.check(got.shape == () and got.dtype.name == res["dtype"] and close(e, float(got), tol), w,
                                  "expected %r %s, got %r (tolerance %g)" % (e, res["dtype"], got, tol))
                    else:
                        problems = compare_summary(res, summarize(got))
                        rep.check(not problems, w + " (as a 0-d array)", "; ".join(problems))
            else:
                rep.expect_exception(w, outcome, exc)
        elif api == "shape":
            outcome = rep.call(lambda: tensor().shape(step, mode=mode))
            if exc is None:
                rep.check(outcome[0] and outcome[1] == tuple(res), w, "expected %s, got %r" % (res, outcome[1]))
            elif exc["type"] == "KeyError":
                rec = probe_raw()
                rep.check(outcome[0] and rec is not None and outcome[1] == tuple(rec.shape), w + " (smdebug: KeyError)")
            else:
                rep.expect_exception(w, outcome, exc)
        elif api == "workers":
            outcome = rep.call(lambda: tensor().workers(step, mode=mode))
            if exc is None:
                rep.check(outcome[0] and outcome[1] == res, w, "expected %s, got %r" % (res, outcome[1]))
            else:
                rep.expect_exception(w, outcome, exc)
        elif api == "has_passed_step":
            outcome = rep.call(lambda: trial.has_passed_step(step, mode=mode))
            if exc is None:
                rep.check(outcome[0] and outcome[1].name == res, w, "expected %s, got %r" % (res, outcome[1]))
            else:
                rep.expect_exception(w, outcome, exc)
        elif api == "mode_modestep":
            m, s = trial.mode_modestep(step)
            if res[0] is None:
                rep.check(m is None and s is None, w, "got (%s, %s)" % (m, s))
            else:
                rep.check(m is not None and m.name == res[0] and s == res[1], w, "got (%s, %s)" % (m, s))
        elif api == "global_step":
            got = trial.global_step(mode, step)
            rep.check(got == res, w, "expected %s, got %s" % (res, got))
        else:
            pytest.fail("probe api %r not replayed" % api)
    rep.done()


def test_captured_low_precision_tensor():
    """The generator's bfloat16 tensor, which smdebug's hook skipped, is in Vigil's capture: saved as
    bfloat16 at every step, read back as the float32 that holds its values."""
    if "mixed_dtypes" not in fixture_names():
        pytest.fail("the mixed_dtypes fixture is missing")
    t = vigil.create_trial(captured_dir("mixed_dtypes"))
    tensor = t.tensor("dt_bfloat16")
    assert tensor.steps() == [0, 1, 2, 3]
    assert tensor.buffer(0).dtype == "bfloat16"
    value = tensor.value(0)
    assert value.dtype == np.float32 and value.shape == (4,)
    # bfloat16 values: float32s whose low 16 bits are zero.
    assert not (value.view(np.uint32) & 0xFFFF).any()
