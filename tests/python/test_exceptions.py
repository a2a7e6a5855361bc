"""vigil.exceptions: smdebug's classes, hierarchy, constructors, attributes and messages, and the one
table that maps host status codes to them and back."""
import pathlib
import re

import pytest

from conftest import trial_dir

import vigil
from vigil import _vigil, exceptions as ex
from vigil.modes import ModeKeys

SMDEBUG_CLASSES = [
    "SMDebugError", "SMDebugRuntimeError", "SMDebugTypeError", "SMDebugValueError", "SMDebugNotImplementedError",
    "TensorUnavailableForStep", "TensorUnavailable", "StepUnavailable", "StepNotYetAvailable", "NoMoreData",
    "IndexReaderException", "InvalidWorker", "ShapeUnavailableForStep", "MissingCollectionFiles",
    "RuleEvaluationConditionMet", "InsufficientInformationForRuleInvocation", "NoMoreProfilerData",
    "InvalidCollectionConfiguration", "SMDebugCustomerError",
]


def test_every_class_exists_with_smdebugs_hierarchy():
    for name in SMDEBUG_CLASSES:
        cls = getattr(ex, name)
        assert issubclass(cls, Exception) and cls.__name__ == name
    for name, builtin in [("SMDebugRuntimeError", RuntimeError), ("SMDebugTypeError", TypeError),
                          ("SMDebugValueError", ValueError), ("SMDebugNotImplementedError", NotImplementedError)]:
        assert issubclass(getattr(ex, name), ex.SMDebugError)
        assert issubclass(getattr(ex, name), builtin)
    for name in SMDEBUG_CLASSES[1:]:
        assert issubclass(getattr(ex, name), ex.SMDebugError), name  # smdebug 1.0.34: every class


def test_except_smdebug_error_catches_what_a_trial_raises():
    trial = vigil.create_trial(trial_dir("mlp_healthy"))
    with pytest.raises(ex.SMDebugError) as info:
        trial.tensor("no such tensor")
    assert type(info.value) is ex.TensorUnavailable
    with pytest.raises(ex.SMDebugError) as info:
        trial.wait_for_steps([10 ** 6])
    assert type(info.value) is ex.NoMoreData


def test_constructors_attributes_and_messages():
    e = ex.TensorUnavailableForStep("w", 3)
    assert (e.tname, e.step, e.mode, e.has_reductions) == ("w", 3, ModeKeys.GLOBAL, False)
    assert str(e) == "Value for tensor w is not available for step 3 with mode GLOBAL as it was not saved."
    e = ex.TensorUnavailableForStep("w", 3, ModeKeys.TRAIN, has_reductions=True)
    assert str(e).endswith("as it was not saved.This tensor has reductions saved for this step. "
                           "You might want to query for the reductions.")
    assert "mode TRAIN" in str(e)
    assert str(ex.TensorUnavailable("t")) == "Tensor t was not saved."
    assert str(ex.StepUnavailable(5, ModeKeys.EVAL)) == "Step 5 of mode EVAL is not available as it was not saved"
    assert str(ex.StepNotYetAvailable(5, ModeKeys.GLOBAL)) == "Step 5 of mode GLOBAL not yet available"
    e = ex.NoMoreData(7, ModeKeys.GLOBAL, 6)
    assert e.last_step == 6
    assert str(e) == "Looking for step 7 of mode GLOBAL and reached end of training. Max step available is 6"
    assert str(ex.InvalidWorker("w9")) == "Invalid Worker: w9" and ex.InvalidWorker("w9").worker == "w9"
    assert str(ex.ShapeUnavailableForStep("t", 1)) == \
        "Shape for tensor t is not available for step 1 with mode GLOBAL as it was not saved."
    e = ex.RuleEvaluationConditionMet("R", 4)
    assert (e.rule_name, e.step, e.end_of_rule) == ("R", 4, False)
    assert str(e) == "Evaluation of the rule R at step 4 resulted in the condition being met"
    assert ex.RuleEvaluationConditionMet("R", 4, end_of_rule=True).end_of_rule is True
    assert str(ex.MissingCollectionFiles()) == "Training job has ended. All the collection files could not be loaded"
    assert str(ex.IndexReaderException("bad index")) == "bad index"
    assert str(ex.InsufficientInformationForRuleInvocation("R", "why")) == "Insufficient information to invoke rule R: why"
    assert ex.NoMoreProfilerData(12).timestamp == 12
    assert ex.InvalidCollectionConfiguration("c").c_name == "c"
    assert str(ex.SMDebugValueError("v")) == "v"


def test_status_table_is_the_hosts():
    table = _vigil.status_classes()
    for code, name in table.items():
        abi = _vigil.status_class_abi(code)
        if abi is not None:
            assert abi == name, (code, abi, name)  # the C ABI's table agrees with the host's
        cls = ex.class_of_status(code)
        assert cls.__name__ == name or (name == "MemoryError" and cls is MemoryError)
    assert ex.status_of(ex.StepUnavailable(1, 4)) == 102
    assert ex.status_of(ex.NoMoreData(1, 4, 0)) == 104
    assert ex.status_of(ex.RuleEvaluationConditionMet("R", 1)) == 107
    assert ex.status_of(ex.SMDebugValueError("x")) == 1
    assert ex.status_of(ZeroDivisionError("x")) == 8


_CLASSES = {"OK": 0, "SKIP": 1, "WAIT": 2, "STOP": 3, "SIGNAL": 4, "FAILURE": 5}


def _status_list():
    """The rows of status.h's VIGIL_STATUS_LIST, read from the header itself."""
    header = pathlib.Path(__file__).resolve().parents[2] / "abi" / "include" / "vigil" / "status.h"
    text = header.read_text()
    body = text[text.index("#define VIGIL_STATUS_LIST(X)"):text.index("#define VIGIL_STATUS_ENUMERATOR_")]
    body = re.sub(r"/\*.*?\*/", " ", body, flags=re.S).replace("\\\n", " ")
    rows = re.findall(r"X\(\s*(\w+),\s*(\w+),\s*(\d+),\s*(\w+),\s*(\w+),\s*(\w+)\s*\)", body)
    assert len(rows) >= 25
    return [(name, int(value), cls, exception, origin) for name, _cpp, value, cls, exception, origin in rows]


def test_status_table_follows_the_abi_list():
    rows = _status_list()
    assert _vigil.status_classes() == {value: exception for _, value, _, exception, _ in rows if value != 0}
    for name, value, cls, exception, origin in rows:
        assert _vigil.status_classify(value) == _CLASSES[cls], name
        assert _vigil.status_class_abi(value) == (exception if origin == "SMDEBUG" else None), name
        if value != 0:
            assert ex.class_of_status(value).__name__ == exception, name


@pytest.mark.parametrize("code", sorted(_vigil.status_classes()))
def test_host_errors_become_their_class_and_back(code):
    with pytest.raises(BaseException) as info:
        _vigil._raise_host_error(code, "the message", step=7, mode=2, tensor="t")
    e = info.value
    assert type(e).__name__ == _vigil.status_classes()[code] or type(e) is MemoryError
    if type(e) is not MemoryError:
        assert str(e) == "the message" and e.status == code
        assert ex.status_of(e) == code
        rec = ex.error_record(e)
        assert rec[0] == code and rec[-1] == "the message"
    if hasattr(e, "step") and code != 110:
        assert e.step == 7
    if hasattr(e, "mode") and code not in (104,) and isinstance(getattr(e, "mode"), ModeKeys):
        assert e.mode == ModeKeys.EVAL


def test_error_record_of_foreign_exceptions():
    try:
        1 / 0
    except ZeroDivisionError as e:
        rec = ex.error_record(e)
    assert rec[0] == 8 and rec[-1] == "ZeroDivisionError: division by zero"
    try:
        compile("class X(\n", "rule.py", "exec")
    except SyntaxError as e:
        rec = ex.error_record(e)
    assert rec[0] == 8 and rec[-1].startswith("SyntaxError: ")
    rec = ex.error_record(ex.TensorUnavailableForStep("w", 3, ModeKeys.TRAIN, has_reductions=True))
    assert rec[:6] == (100, 1, 1, 3, -1, "w")
    rec = ex.error_record(ex.RuleEvaluationConditionMet("R", 9, end_of_rule=True))
    assert rec[0] == 107 and rec[1] == 2 and rec[3] == 9 and rec[7] == "R"


def test_trial_errors_have_fields():
    trial = vigil.create_trial(trial_dir("vanishing_gradient"))
    t = trial.tensor("MSELoss_output_0")
    with pytest.raises(ex.StepUnavailable) as info:
        t.value(3)
    assert info.value.step == 3 and info.value.mode == ModeKeys.GLOBAL
    with pytest.raises(ex.InvalidWorker) as info:
        t.value(2, worker="worker_9")
    assert info.value.worker == "worker_9" and str(info.value) == "Invalid Worker: worker_9"
    with pytest.raises(ex.NoMoreData) as info:
        trial.wait_for_steps([100])
    assert info.value.last_step == 38
    with pytest.raises(ex.TensorUnavailable) as info:
        trial.tensor("nope")
    assert info.value.tname == "nope"
    with pytest.raises(ex.SMDebugValueError):
        t.reduction_value(0, "median")
    with pytest.raises(ex.SMDebugNotImplementedError):
        t.step(0)


def test_missing_collection_files(tmp_path):
    (tmp_path / "training_job_end.ts").write_text("")
    with pytest.raises(ex.MissingCollectionFiles) as info:
        vigil.create_trial(str(tmp_path))
    assert str(info.value) == "Training job has ended. All the collection files could not be loaded"
