"""The fixtures' reference rules (written against smdebug's Rule API) run UNMODIFIED through
vigil.compat's smdebug names and vigil.rules.invoke_rule, over the host directly and over the plugin
ABI's host table, and trigger at exactly the steps smdebug recorded. Also smdebug's invoke_rule
semantics in isolation (skips, NoMoreData, raise_eval_cond, end_of_rule)."""
import math

import pytest

from conftest import expected, fixture_names, trial_dir
from rule_files import load_rule_module

import vigil
from vigil import _vigil
from vigil.exceptions import (NoMoreData, RuleEvaluationConditionMet, StepUnavailable, TensorUnavailable,
                              TensorUnavailableForStep)
from vigil.rules import Rule, invoke_rule
from vigil.trials import HostTrial, Trial

KINDS = ["direct", "api"]


def open_trial(fixture, kind):
    if kind == "direct":
        return vigil.create_trial(trial_dir(fixture))
    return HostTrial(fixture, _vigil.open_api_trial(trial_dir(fixture), copy_values=True))


def cases():
    out = []
    for f in fixture_names():
        for name in expected(f)["rules"]["results"]:
            for kind in KINDS:
                out.append((f, name, kind))
    return out


def make_rule(module, fixture, name, kind):
    cls = getattr(module, name)
    params = expected(fixture)["rules"]["results"][name]["params"]
    return cls(open_trial(fixture, kind), **params)


def close_details(expected_details, got_details):
    """Hits in the same order with the same names; float fields within 1e-6 relative."""
    if sorted(expected_details) != sorted(str(k) for k in got_details):
        return False
    for step, hits in expected_details.items():
        got = got_details[int(step)]
        if len(got) != len(hits):
            return False
        for e, g in zip(hits, got):
            if set(e) != set(g):
                return False
            for k, v in e.items():
                if isinstance(v, float):
                    if not math.isclose(v, g[k], rel_tol=1e-6, abs_tol=1e-30):
                        return False
                elif v != g[k]:
                    return False
    return True


@pytest.mark.parametrize("fixture,name,kind", cases(), ids=["%s-%s-%s" % c for c in cases()])
def test_reference_rule(fixture, name, kind):
    res = expected(fixture)["rules"]["results"][name]
    module = load_rule_module(fixture)

    # invoke_rule(rule, start_step=0, end_step=E, raise_eval_cond=False)
    rule = make_rule(module, fixture, name, kind)
    assert isinstance(rule, Rule) and rule.rule_name == name
    invoke_rule(rule, start_step=res["start_step"], end_step=res["end_step"], raise_eval_cond=False)
    assert rule.invoked_steps == res["invoked_steps"]
    assert sorted(rule.triggered) == res["triggered_steps"]
    assert close_details(res.get("details", {}), rule.triggered), (res.get("details"), rule.triggered)
    if "evaluations" in res:
        assert len(rule.evaluations) == len(res["evaluations"])
        for e, g in zip(res["evaluations"], rule.evaluations):
            assert (e["step"], e["train_mode_step"], e["met"]) == (g["step"], g["train_mode_step"], g["met"])
            assert math.isclose(e["cur_mean"], g["cur_mean"], rel_tol=1e-9)
            assert math.isclose(e["prev_mean"], g["prev_mean"], rel_tol=1e-9)
    if "read_errors" in res:
        # smdebug could not decode DT_INT16 (KeyError); Vigil decodes it, so there are no read errors.
        assert all(r["exception"] == "KeyError" for r in res["read_errors"])
        assert rule.read_errors == []

    # end_step=None: runs until NoMoreData, the normal end of an unbounded run.
    variant = res.get("end_step_none")
    if variant:
        rule = make_rule(module, fixture, name, kind)
        with pytest.raises(Exception) as info:
            invoke_rule(rule, start_step=res["start_step"], end_step=None, raise_eval_cond=False)
        assert type(info.value).__name__ == variant["exception"]["type"]
        assert str(info.value) == variant["exception"]["message"]
        assert isinstance(info.value, NoMoreData)
        assert rule.invoked_steps == variant["invoked_steps"]
        assert sorted(rule.triggered) == variant["triggered_steps"]

    # raise_eval_cond=True: the first trigger propagates.
    variant = res.get("raise_eval_cond_true")
    if variant:
        rule = make_rule(module, fixture, name, kind)
        if "exception" in variant:
            with pytest.raises(RuleEvaluationConditionMet) as info:
                invoke_rule(rule, start_step=res["start_step"], end_step=res["end_step"], raise_eval_cond=True)
            assert type(info.value).__name__ == variant["exception"]["type"]
            assert str(info.value) == variant["exception"]["message"]
            assert info.value.step == variant["step"]
            assert info.value.rule_name == name
        else:
            assert invoke_rule(rule, start_step=res["start_step"], end_step=res["end_step"],
                               raise_eval_cond=True) is None


# ---- invoke_rule semantics --------------------------------------------------------------------------

class Scripted(Rule):
    """Raises / returns what `script[step]` says; records the steps it ran."""

    def __init__(self, base_trial, script):
        super().__init__(base_trial, action_str="")
        self.script = script
        self.ran = []

    def invoke_at_step(self, step):
        self.ran.append(step)
        what = self.script.get(step)
        if isinstance(what, BaseException):
            raise what
        return bool(what)


@pytest.fixture()
def vg_trial():
    return vigil.create_trial(trial_dir("vanishing_gradient"))  # even steps 0..38 only


def test_unsaved_steps_are_skipped_before_invoke_at_step(vg_trial):
    rule = Scripted(vg_trial, {})
    invoke_rule(rule, start_step=0, end_step=7)
    assert rule.ran == [0, 2, 4, 6]  # wait_for_steps raised StepUnavailable for odd steps


def test_skip_exceptions_are_swallowed(vg_trial):
    rule = Scripted(vg_trial, {0: TensorUnavailableForStep("x", 0), 2: StepUnavailable(2, 4), 4: TensorUnavailable("y")})
    invoke_rule(rule, start_step=0, end_step=7)
    assert rule.ran == [0, 2, 4, 6]


def test_condition_met_continues_unless_raise_or_end_of_rule(vg_trial):
    rule = Scripted(vg_trial, {2: True, 4: True})
    invoke_rule(rule, start_step=0, end_step=9)
    assert rule.ran == [0, 2, 4, 6, 8]
    rule = Scripted(vg_trial, {2: True})
    with pytest.raises(RuleEvaluationConditionMet) as info:
        invoke_rule(rule, start_step=0, end_step=9, raise_eval_cond=True)
    assert info.value.step == 2 and info.value.rule_name == "Scripted" and info.value.end_of_rule is False
    rule = Scripted(vg_trial, {4: RuleEvaluationConditionMet("Scripted", 4, end_of_rule=True)})
    invoke_rule(rule, start_step=0, end_step=39)
    assert rule.ran == [0, 2, 4]


def test_other_exceptions_propagate(vg_trial):
    rule = Scripted(vg_trial, {2: ZeroDivisionError("boom")})
    with pytest.raises(ZeroDivisionError):
        invoke_rule(rule, start_step=0, end_step=9)
    assert rule.ran == [0, 2]


def test_no_more_data_ends_an_unbounded_run(vg_trial):
    rule = Scripted(vg_trial, {})
    with pytest.raises(NoMoreData) as info:
        invoke_rule(rule, start_step=30)
    assert str(info.value) == "Looking for step 39 of mode GLOBAL and reached end of training. Max step available is 38"
    assert info.value.last_step == 38 and info.value.step == 39
    assert rule.ran == [30, 32, 34, 36, 38]


def test_required_tensors_are_fetched_and_checked(vg_trial):
    class Needs(Rule):
        def __init__(self, base_trial):
            super().__init__(base_trial, action_str="")
            self.seen = []

        def set_required_tensors(self, step):
            self.req_tensors.add("MSELoss_output_0", steps=[step])
            if step == 4:
                self.req_tensors.add("no/such/tensor", steps=[step])
            self.req_tensors.add("gradient/.*weight", steps=[step], should_match_regex=True)

        def invoke_at_step(self, step):
            self.seen.append((step, len(self.req_tensors.get_names())))
            return False

    rule = Needs(vg_trial)
    invoke_rule(rule, start_step=0, end_step=7)
    assert [s for s, _ in rule.seen] == [0, 2, 6]  # TensorUnavailable at 4 is swallowed
    assert all(n == 1 + len(vg_trial.tensor_names(regex="gradient/.*weight")) for _, n in rule.seen)
