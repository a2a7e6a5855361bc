"""smdebug's API as users' code calls it, through vigil.compat: every public method of Trial, Tensor,
Collection, Rule and RequiredTensors run at least once against a fixture (the list of methods comes
from smdebug's API surface file, so a method that is added there and missing here fails), and one
regression test per defect of the fidelity issue."""
import json
import logging
import os
import re
import shutil
import subprocess
import textwrap

import numpy as np
import pytest

from conftest import VIGIL_EXE, trial_dir
from real_readers import real_readers_agree  # noqa: F401 (a fixture)
from test_api_surface import ENTRIES, omitted

from vigil import compat


@pytest.fixture(autouse=True, scope="module")
def smdebug():
    compat.install()
    import smdebug
    yield smdebug
    compat.uninstall()


def surface_methods(cls_path):
    prefix = cls_path + "."
    return {p[len(prefix):] for p, kind, _ in ENTRIES
            if p.startswith(prefix) and kind in ("method", "property") and not omitted(p)}


# ---- every public method, once --------------------------------------------------------------------

def test_every_trial_and_tensor_method_runs_on_a_fixture(smdebug):
    from smdebug.trials import create_trial
    from smdebug.core.modes import ModeKeys

    tr = create_trial(trial_dir("mlp_healthy"))
    w = "MLP_fc1.weight"
    t = tr.tensor(w)
    trial_calls = {
        "collection": lambda: tr.collection("weights").name == "weights",
        "collections": lambda: "weights" in tr.collections(),
        "global_step": lambda: tr.global_step(ModeKeys.TRAIN, 0) == 0,
        "has_passed_step": lambda: tr.has_passed_step(0).name == "AVAILABLE",
        "has_tensor": lambda: tr.has_tensor(w) and not tr.has_tensor("nope"),
        "inputs": lambda: tr.inputs(0) == [],
        "labels": lambda: tr.labels(0) == [],
        "maybe_refresh": lambda: tr.maybe_refresh() is None and tr.maybe_refresh(w) is None,
        "mode": lambda: tr.mode(0) == ModeKeys.TRAIN,
        "mode_modestep": lambda: tr.mode_modestep(0) == (ModeKeys.TRAIN, 0),
        "mode_step": lambda: tr.mode_step(0) == 0,
        "modes": lambda: set(tr.modes()) == {ModeKeys.TRAIN, ModeKeys.EVAL},
        "predictions": lambda: tr.predictions(0) == [],
        "refresh_data": lambda: tr.refresh_data() is None,
        "refresh_tensor": lambda: tr.refresh_tensor(w) is None and tr.refresh_tensor(w, steps=[0]) is None,
        "steps": lambda: tr.steps()[:3] == [0, 1, 2] and tr.steps(mode=ModeKeys.TRAIN, show_incomplete_steps=True),
        "tensor": lambda: tr.tensor(w) is t,
        "tensor_names": lambda: w in tr.tensor_names() and tr.tensor_names(True, step=0, regex="fc1"),
        "wait_for_steps": lambda: tr.wait_for_steps([0, 1]) is None,
        "workers": lambda: tr.workers() == ["worker_0"],
    }
    tensor_calls = {
        "prev_steps": lambda: t.prev_steps(3) == [0, 1, 2, 3] and t.prev_steps(3, n=2) == [2, 3],
        "reduction_value": lambda: np.isclose(t.reduction_value(0, "mean", abs=True), np.abs(t.value(0)).mean()),
        "reduction_values": lambda: isinstance(t.reduction_values(0), dict),
        "shape": lambda: t.shape(0) == t.value(0).shape,
        "step": lambda: pytest.raises(smdebug.exceptions.SMDebugNotImplementedError, t.step, 0) is not None,
        "steps": lambda: t.steps() == tr.steps(),
        "value": lambda: t.value(0).dtype == np.float32,
        "values": lambda: sorted(t.values()) == t.steps(),
        "workers": lambda: t.workers(0) == ["worker_0"],
    }
    for name, table in (("smdebug.trials.trial.Trial", trial_calls), ("smdebug.trials.trial.Tensor", tensor_calls)):
        assert set(table) == surface_methods(name), name
        for method, call in table.items():
            assert call(), "{}.{}".format(name, method)


def test_every_collection_method_runs(smdebug):
    from smdebug.core.collection import Collection
    from smdebug.core.reduction_config import ReductionConfig
    from smdebug.core.save_config import SaveConfig, SaveConfigMode
    from smdebug.core.modes import ModeKeys

    c = Collection("mine", include_regex=["^a"], tensor_names=["x"])
    calls = {
        "add_tensor_name": lambda: c.add_tensor_name("y") is None and c.has_tensor_name("y"),
        "remove_tensor_name": lambda: c.remove_tensor_name("y") is None and not c.has_tensor_name("y"),
        "has_tensor_name": lambda: c.has_tensor_name("x"),
        "include": lambda: c.include(["^b", ["^c"]]) is None and c.include_regex == ["^a", "^b", "^c"],
        "tensor_names": lambda: c.tensor_names == {"x"},
        "reduction_config": lambda: setattr(c, "reduction_config", ReductionConfig(norms=["l2"])) is None
        and c.reduction_config.norms == ["l2"],
        "save_config": lambda: setattr(c, "save_config", SaveConfigMode(save_interval=5)) is None
        and c.save_config.get_save_config(ModeKeys.EVAL).save_interval == 5,
        "to_json_dict": lambda: c.to_json_dict()["reduction_config"] == {"save_raw_tensor": False,
                                                                          "reductions": "l2_norm", "save_shape": False},
        "to_json": lambda: json.loads(c.to_json())["name"] == "mine",
        "from_dict": lambda: Collection.from_dict(c.to_json_dict()) == c,
        "from_json": lambda: Collection.from_json(c.to_json()) == c,
    }
    assert set(calls) == surface_methods("smdebug.core.collection.Collection")
    for method, call in calls.items():
        assert call(), method
    with pytest.raises(TypeError):
        c.include(3)
    assert isinstance(c.save_config, SaveConfig)


def test_every_rule_and_required_tensors_method_runs(smdebug):
    from smdebug.rules import Rule, RequiredTensors, invoke_rule
    from smdebug.trials import create_trial

    base, other = create_trial(trial_dir("mlp_healthy")), create_trial(trial_dir("loss_not_decreasing"))
    seen = {}

    class Probe(Rule):
        def __init__(self, base_trial, other_trials=None):
            super().__init__(base_trial, action_str="", other_trials=other_trials)

        def set_required_tensors(self, step):
            self.req_tensors.add("MLP_fc1.weight", steps=[step])
            self.req_tensors.add("^MLP_fc1", steps=[step], should_match_regex=True)
            self.req_tensors.add("MLP_fc1.bias", steps=[step], trial=self.other_trials[0])

        def invoke_at_step(self, step):
            seen[step] = (sorted(self.req_tensors.get_names()), self.req_tensors.get_tensor_steps("MLP_fc1.weight"),
                          [t.name for t in self.req_tensors.get(trial=self.other_trials[0])])
            return step == 2

    rule = Probe(base, other_trials=[other])
    assert rule.invoke_at_step is not None
    invoke_rule(rule, start_step=0, end_step=4)
    assert seen[1] == (["MLP_fc1.bias", "MLP_fc1.weight"], [1, 1], ["MLP_fc1.bias"])
    with pytest.raises(smdebug.exceptions.RuleEvaluationConditionMet):
        rule.invoke(2)
    rule.set_required_tensors(3)
    assert rule.req_tensors.get_names(trial=other) == ["MLP_fc1.bias"]

    req = RequiredTensors(base, [other])
    calls = {
        "add": lambda: req.add("MLP_fc1.weight", [0, 1]) is None,
        "get_names": lambda: list(req.get_names()) == ["MLP_fc1.weight"],
        "get_tensor_steps": lambda: req.get_tensor_steps("MLP_fc1.weight") == [0, 1],
        "get": lambda: [t.name for t in req.get()] == ["MLP_fc1.weight"] and req.get(trial=other) == [],
        "fetch": lambda: req.fetch() is None,
        "clear": lambda: req.clear() is None and not req.get_names(),
    }
    assert set(calls) == surface_methods("smdebug.rules.RequiredTensors")
    for method, call in calls.items():
        assert call(), method
    with pytest.raises(smdebug.exceptions.TensorUnavailable):
        req.add("no such tensor", [0])
    assert {"invoke", "invoke_at_step", "set_required_tensors"} == surface_methods("smdebug.rules.Rule")


# ---- the fidelity issue's defects, one regression test each ---------------------------------------

def test_local_trial_and_every_trial_class_take_smdebugs_constructor(smdebug):
    from smdebug.trials import LocalTrial, Trial
    tr = LocalTrial(name="t", dirname=trial_dir("mlp_healthy"), range_steps=None, parallel=True, check=False,
                    index_mode=True, cache=False)
    assert tr.name == "t" and tr.steps()[:2] == [0, 1] and isinstance(tr, Trial)
    assert LocalTrial("r", trial_dir("mlp_healthy"), range_steps=(2, 5)).steps() == [2, 3, 4]
    assert LocalTrial("n", trial_dir("mlp_healthy"), index_mode=False).steps() == []
    with pytest.raises(TypeError):
        Trial("abstract")  # smdebug's Trial is abstract too
    with pytest.raises(AssertionError):
        LocalTrial("bad", trial_dir("mlp_healthy"), range_steps=(5, 2))
    with pytest.raises(TypeError):
        smdebug.create_trial(trial_dir("mlp_healthy"), no_such_keyword=1)


def test_no_refresh_and_refresh_yield_what_they_were_given(smdebug):
    from smdebug.analysis.utils import no_refresh, refresh
    tr = smdebug.create_trial(trial_dir("mlp_healthy"))
    with no_refresh([tr]) as [held]:
        assert held is tr
    with refresh(tr) as same:
        assert same is tr


def test_tensor_names_follows_changes_made_to_a_collection(smdebug):
    tr = smdebug.create_trial(trial_dir("vanishing_gradient"))
    c = tr.collection("weights")
    before = tr.tensor_names(collection=c)
    c.include("bias")
    after = tr.tensor_names(collection="weights")
    oracle = sorted(n for n in tr.tensor_names() if re.search("^(?!gradient).*weight", n) or re.search("bias", n))
    assert len(before) == 11 and len(after) == 33 and after == oracle  # "bias" also matches gradient/…bias
    (loss,) = tr.tensor_names(collection="losses")
    c.add_tensor_name(loss)
    assert loss in tr.tensor_names(collection=c)
    c.remove_tensor_name(loss)
    assert loss not in tr.tensor_names(collection=c)


def test_collection_of_an_unknown_name_is_created_empty(smdebug):
    tr = smdebug.create_trial(trial_dir("mlp_healthy"))
    c = tr.collection("never_saved")
    assert c.name == "never_saved" and not c.tensor_names and not c.include_regex
    assert tr.collections()["never_saved"] is c
    assert tr.tensor_names(collection="never_saved") == []


@pytest.mark.usefixtures("real_readers_agree")  # smdebug 1.0.34 reads the trial alike
def test_a_mode_the_collection_file_leaves_null_has_no_save_config(smdebug, tmp_path):
    """smdebug's hook writes null for the modes of a SaveConfig(mode_save_configs=...) it was not given;
    smdebug's reader keeps them None (get_save_config raises), and so does Vigil's."""
    from smdebug.core.modes import ModeKeys
    from vigil.writer import TrialWriter
    out = tmp_path / "t"
    with TrialWriter(str(out), worker="worker_0", num_workers=1, save_interval=1) as w:
        w.begin_step(ModeKeys.TRAIN)
        w.save_tensor("x", np.zeros(2, dtype=np.float32))
        w.end_step()
    path = out / "collections" / "000000000" / "worker_0_collections.json"
    doc = json.loads(path.read_text())
    for c in doc["collections"].values():
        c["save_config"]["PREDICT"] = c["save_config"]["GLOBAL"] = None
    path.write_text(json.dumps(doc))
    sc = smdebug.create_trial(str(out)).collection("default").save_config
    assert sc.to_json_dict()["PREDICT"] is None and sc.to_json_dict()["GLOBAL"] is None
    assert sc.get_save_config(ModeKeys.TRAIN).save_interval == 1
    with pytest.raises(smdebug.exceptions.SMDebugValueError, match="is not ready"):
        sc.get_save_config(ModeKeys.GLOBAL)


def test_last_index_token_names_the_last_complete_steps_index_file(smdebug):
    tr = smdebug.create_trial(trial_dir("mlp_healthy"))
    assert tr.last_index_token == os.path.join(tr.path, "index", "000000000", "000000000029_worker_0.json")
    assert os.path.exists(tr.last_index_token)


def test_an_index_with_an_empty_event_file_name_opens_and_fails_at_the_read(smdebug, tmp_path):
    trial = tmp_path / "dummy_steps"
    shutil.copytree(trial_dir("mlp_healthy"), trial)
    index = trial / "index" / "000000000" / "000000000003_worker_0.json"
    doc = json.loads(index.read_text())
    doc["meta"]["event_file_name"] = ""
    index.write_text(json.dumps(doc))
    tr = smdebug.create_trial(str(trial))
    assert tr.steps() == list(range(30)) and tr.has_passed_step(3).name == "AVAILABLE"
    assert "MLP_fc1.weight" in tr.tensor_names(step=3)
    assert tr.tensor("MLP_fc1.weight").value(2).size > 0  # the other steps read
    with pytest.raises(smdebug.exceptions.IndexReaderException) as info:
        tr.tensor("MLP_fc1.weight").value(3)
    assert "empty meta.event_file_name" in str(info.value)
    doc["meta"]["event_file_name"] = "../outside.tfevents"
    index.write_text(json.dumps(doc))
    with pytest.raises(smdebug.exceptions.IndexReaderException):
        smdebug.create_trial(str(trial))  # paths that leave the trial are still refused


def test_dummy_index_entries_of_length_one_open_and_fail_at_the_read(smdebug, tmp_path):
    """smdebug's tests/analysis/trials/test_has_passed_step_scenarios.py (two_modes) index entries of
    length 1: smdebug opens such trials (it reads lazily), and so does Vigil; the value fails."""
    trial = tmp_path / "dummy_lengths"
    shutil.copytree(trial_dir("mlp_healthy"), trial)
    index = trial / "index" / "000000000" / "000000000003_worker_0.json"
    doc = json.loads(index.read_text())
    for entry in doc["tensor_payload"]:
        entry["length"] = 1
    index.write_text(json.dumps(doc))
    tr = smdebug.create_trial(str(trial))
    assert tr.steps() == list(range(30)) and tr.has_passed_step(3).name == "AVAILABLE"
    assert tr.tensor("MLP_fc1.weight").steps() == list(range(30))
    assert tr.tensor("MLP_fc1.weight").value(4).size > 0  # the other steps read
    with pytest.raises(smdebug.exceptions.IndexReaderException) as info:
        tr.tensor("MLP_fc1.weight").value(3)
    assert "has length 1, shorter than any record (16 bytes)" in str(info.value)


PUBLISHED_STYLE_RULE = textwrap.dedent('''
    from smdebug import modes
    from smdebug.rules.rule import Rule


    class GradientAbsMeanAbove(Rule):
        """Written the way rules published for SageMaker Debugger are: no action_str, the private
        step map, self.logger and the top-level modes."""

        def __init__(self, base_trial, threshold="10.0"):
            super().__init__(base_trial)
            self.threshold = float(threshold)

        def invoke_at_step(self, step):
            mode, mode_step = self.base_trial._global_to_mode[step]
            if mode != modes.TRAIN:
                return False
            for name in self.base_trial.tensor_names(collection="gradients"):
                value = self.base_trial.tensor(name).reduction_value(step, "mean", abs=True)
                if value > self.threshold:
                    self.logger.info("%s: abs mean %s at TRAIN step %s", name, value, mode_step)
                    return True
            return False
''')


def _trial_with_an_overflowing_gradient(path):
    from vigil.modes import ModeKeys
    from vigil.writer import TrialWriter
    with TrialWriter(str(path), worker="worker_0", num_workers=1, save_interval=1) as w:
        w.add_collection("gradients", include_regex=["^gradient/"])
        for step in range(5):
            w.begin_step(ModeKeys.TRAIN)
            g = np.full((4, 6), 0.5, dtype=np.float32)
            if step == 3:
                g[1, 2] = np.inf  # the step where the loss exploded
            w.save_tensor("gradient/fc.weight", g)
            w.end_step()


@pytest.mark.usefixtures("real_readers_agree")  # smdebug 1.0.34 reads the trials alike
def test_published_style_rules_and_inf_gradients(smdebug, tmp_path):
    rule_file = tmp_path / "published_rule.py"
    rule_file.write_text(PUBLISHED_STYLE_RULE)
    trial = tmp_path / "trial"
    _trial_with_an_overflowing_gradient(trial)

    tr = smdebug.create_trial(str(trial))
    assert tr._global_to_mode[3] == (smdebug.modes.TRAIN, 3)
    assert tr._mode_to_global[smdebug.modes.TRAIN][4] == 4
    assert tr.tensor("gradient/fc.weight").reduction_value(3, "mean", abs=True) == np.inf  # was NaN

    import importlib.util
    spec = importlib.util.spec_from_file_location("published_rule", rule_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rule = module.GradientAbsMeanAbove(tr, threshold="1.0")
    assert isinstance(rule.logger, logging.Logger)
    fired = []
    for step in tr.steps():
        try:
            rule.invoke(step)
        except smdebug.exceptions.RuleEvaluationConditionMet as e:
            fired.append(e.step)
    assert fired == [3]

    # The same file inside the evaluator.
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"DebugRuleConfigurations": [{
        "RuleConfigurationName": "Published",
        "RuleParameters": {"source_s3_uri": str(rule_file), "rule_to_invoke": "GradientAbsMeanAbove",
                           "threshold": "1.0"}}]}))
    status = tmp_path / "status.json"
    subprocess.run([VIGIL_EXE, "evaluate", "--trial", str(trial), "--job", str(job),
                    "--status-file", str(status)], check=False, capture_output=True, timeout=120)
    doc = json.loads(status.read_text())
    (rule_status,) = doc["DebugRuleEvaluationStatuses"]
    assert rule_status["RuleEvaluationStatus"] == "IssuesFound", rule_status
    assert [t["step"] for t in rule_status.get("Triggers", [])] == [3], rule_status


REDUCTIONS = ["min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2"]


def _numpy_reduction(op, x, is_abs):
    x = np.abs(x) if is_abs else x
    with np.errstate(all="ignore"):
        if op == "l1":
            return np.sum(np.abs(x).astype(np.float64))
        if op == "l2":
            return np.sqrt(np.sum(np.square(x.astype(np.float64))))
        return {"min": np.amin, "max": np.amax, "mean": np.mean, "std": np.std, "variance": np.var,
                "sum": np.sum, "prod": np.prod}[op](x.astype(np.float64))


@pytest.mark.usefixtures("real_readers_agree")  # smdebug 1.0.34 reads the trials alike
def test_every_reduction_of_non_finite_values_matches_numpy(smdebug, tmp_path):
    """Every reduction (and its abs form) of float16/32/64 tensors of rank 0..3 holding +inf, -inf,
    both, or NaN with inf, computed by the host, against numpy over the same values."""
    from vigil.modes import ModeKeys
    from vigil.writer import TrialWriter
    rng = np.random.default_rng(7)
    cases = []
    for dtype in (np.float16, np.float32, np.float64):
        for shape in ((), (19,), (3, 7), (2, 3, 5)):
            for specials in ([np.inf], [-np.inf], [np.inf, -np.inf], [np.nan, np.inf]):
                x = rng.uniform(-2, 2, size=shape).astype(dtype)
                flat = x.reshape(-1)
                for k, s in enumerate(specials[: flat.size]):
                    flat[(k * 5 + 3) % flat.size] = s
                cases.append(("t{}".format(len(cases)), x))
    with TrialWriter(str(tmp_path / "t"), worker="worker_0", num_workers=1, save_interval=1) as w:
        w.begin_step(ModeKeys.TRAIN)
        for name, x in cases:
            w.save_tensor(name, x)
        w.end_step()
    tr = smdebug.create_trial(str(tmp_path / "t"))
    mismatches = []
    for name, x in cases:
        t = tr.tensor(name)
        for op in REDUCTIONS:
            for is_abs in (False, True):
                got = float(t.reduction_value(0, op, abs=is_abs))
                want = float(_numpy_reduction(op, x, is_abs))
                same = (np.isnan(got) and np.isnan(want)) or got == want or (
                    np.isfinite(want) and np.isclose(got, want, rtol=2e-3 if x.dtype == np.float16 else 1e-6))
                if not same:
                    mismatches.append("{} {} {}{}: {} != numpy {}".format(name, x.dtype, "abs_" if is_abs else "",
                                                                         op, got, want))
    assert not mismatches, "\n".join(mismatches[:40])
    assert len(cases) == 48
