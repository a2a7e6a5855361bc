"""vigil.xgboost.Hook on real XGBoost training (binary:logistic, multi:softprob, multi:softmax,
reg:squarederror): the trials read back with vigil.create_trial hold smdebug's names, steps and
collections, with the values xgboost itself gives (evals_log, get_score, trees_to_dataframe,
predict on the booster sliced to the round); `vigil evaluate` runs the XGBoost-family rules and
CreateXgboostReport on those trials and gives the verdicts numpy oracles compute from the saved
values; ClassImbalance and Confusion with the calibrated profile's parameters stay quiet on good
binary:logistic and multi:softprob models and fire on bad ones; two real collective workers; the
JSON configuration; and the never-harm promise.

xgboost is required: without it this module fails to import (the tests fail, none is skipped)."""
import json
import math
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import xgboost as xgb

import vigil
import vigil.xgboost as smd
from conftest import PYTHON_DIR
from real_readers import check_trials, real_readers_agree  # noqa: F401 (a fixture)

# Every trial a test captures is read by the real smdebug 1.0.34 too, with Vigil's answers.
pytestmark = pytest.mark.usefixtures("real_readers_agree")

IMAGE = "759209512951.dkr.ecr.us-west-2.amazonaws.com/sagemaker-debugger-rule-evaluator:latest"
SPEC_REGEXES = {  # smdebug-format §6.2
    "hyperparameters": "^hyperparameters/.*$", "metrics": "^[a-zA-z]+-[a-zA-z0-9]+$",
    "losses": "^[a-zA-z]+-.+(?<!(auc|map))$", "predictions": "^predictions$", "labels": "^labels$",
    "feature_importance": "^feature_importance/.*", "average_shap": "^average_shap/.*[^/bias]$",
    "full_shap": "^full_shap/.*[^/bias]$", "trees": "^trees/.*"}
EVERYTHING = ["hyperparameters", "metrics", "losses", "predictions", "labels", "feature_importance",
              "average_shap", "full_shap", "trees"]


def dataset(objective, n, features=4, seed=0, weights=None, informative=2, noise=0.0):
    """(DMatrix train, DMatrix validation): 3/4 and 1/4 of n rows. Classes come from the sign of a
    linear score (binary), or its quantiles (`weights`: class shares, multi-class)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, features))
    score = X[:, :informative] @ np.linspace(1.0, 0.5, informative) + noise * rng.normal(size=n)
    if objective.startswith("reg"):
        y = score
    else:
        shares = weights or ([0.5, 0.5] if objective.startswith("binary") else [1 / 3] * 3)
        y = np.searchsorted(np.quantile(score, np.cumsum(shares)[:-1]), score, side="right").astype(float)
    cut = 3 * n // 4
    return xgb.DMatrix(X[:cut], label=y[:cut]), xgb.DMatrix(X[cut:], label=y[cut:])


def train(out, params, data, rounds, **hook_kwargs):
    """Trains with the hook; (booster, evals_log)."""
    dtrain, dvalid = data
    hook_kwargs.setdefault("train_data", dtrain)
    hook_kwargs.setdefault("validation_data", dvalid)
    hook = smd.Hook(out_dir=str(out), hyperparameters=params, **hook_kwargs)
    log = {}
    bst = xgb.train(params, dtrain, num_boost_round=rounds, evals=[(dtrain, "train"), (dvalid, "validation")],
                    callbacks=[hook], evals_result=log, verbose_eval=False)
    return bst, log


def value(trial, name, step):
    return np.asarray(trial.tensor(name).value(step))


BINARY = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3, "eval_metric": ["logloss", "auc"]}
SOFTPROB = {"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "eval_metric": "mlogloss"}
SOFTMAX = {"objective": "multi:softmax", "num_class": 3, "max_depth": 3, "eval_metric": "merror"}
REGRESSION = {"objective": "reg:squarederror", "max_depth": 3}


@pytest.fixture(scope="module")
def binary_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("binary") / "trial"
    data = dataset("binary", 400)
    bst, log = train(out, BINARY, data, 8, save_config=smd.SaveConfig(save_interval=3),
                     include_collections=EVERYTHING)
    return vigil.create_trial(str(out)), bst, log, data


@pytest.fixture(scope="module")
def softprob_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("softprob") / "trial"
    data = dataset("multi", 300)
    bst, log = train(out, SOFTPROB, data, 4, save_config=smd.SaveConfig(save_interval=1),
                     include_collections=EVERYTHING)
    return vigil.create_trial(str(out)), bst, log, data


# ---- what is saved -----------------------------------------------------------------------------------

def test_defaults_save_the_metrics_every_10_rounds_in_global_mode(tmp_path):
    dtrain, dvalid = dataset("reg", 200)
    hook = smd.Hook(out_dir=str(tmp_path / "t"))
    log = {}
    xgb.train(REGRESSION, dtrain, num_boost_round=12, evals=[(dtrain, "train"), (dvalid, "validation")],
              callbacks=[hook], evals_result=log, verbose_eval=False)
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 10] and tr.modes() == []  # GLOBAL steps, as smdebug's XGBoost hook
    assert tr.tensor_names() == ["train-rmse", "validation-rmse"]
    for step in (0, 10):
        assert float(value(tr, "validation-rmse", step)[0]) == log["validation"]["rmse"][step]
    assert set(tr.collections()) == {"default", "all", *SPEC_REGEXES}
    for name, regex in SPEC_REGEXES.items():
        if name != "losses":
            assert tr.collection(name).include_regex == [regex], name
    assert tr.tensor_names(collection="losses") == ["train-rmse", "validation-rmse"]
    assert tr.workers() == ["worker_0"] and tr.num_workers == 1
    assert os.path.exists(tmp_path / "t" / "training_job_end.ts")


def test_the_real_smdebug_reads_the_module_runs_as_vigil_does(binary_run, softprob_run, smdebug_python):
    """The two module-scoped runs live outside any test's tmp_path: checked here."""
    check_trials([binary_run[0].path, softprob_run[0].path], smdebug_python)


def test_the_collections_are_smdebugs_regexes():
    # losses keeps its look-behind: the host rewrites it for its ECMAScript regexes
    # (tests/trial/search_regex_test.cpp checks that the rewrite selects the same names).
    for name, regex in SPEC_REGEXES.items():
        assert vigil.capture.xgboost.XGBOOST_REGEXES[name] == regex, name


def test_binary_run_saves_every_collection_with_xgboosts_values(binary_run):
    tr, bst, log, (dtrain, dvalid) = binary_run
    assert tr.steps() == [0, 3, 6]
    names = set(tr.tensor_names())
    assert {"train-logloss", "train-auc", "validation-logloss", "validation-auc", "labels", "predictions",
            "hyperparameters/objective", "hyperparameters/max_depth", "hyperparameters/eval_metric"} <= names
    assert set(tr.tensor_names(collection="metrics")) == {"train-logloss", "train-auc", "validation-logloss",
                                                          "validation-auc"}
    assert set(tr.tensor_names(collection="losses")) == {"train-logloss", "validation-logloss"}
    assert "full_shap/bias" not in names and "average_shap/bias" not in names  # smdebug's [^/bias]
    assert str(value(tr, "hyperparameters/objective", 0)[0]) == "binary:logistic"
    assert int(value(tr, "hyperparameters/max_depth", 0)[0]) == 3
    assert [str(v) for v in value(tr, "hyperparameters/eval_metric", 0)] == ["logloss", "auc"]
    frame = bst.trees_to_dataframe()
    contribs_names = ["f0", "f1", "f2", "f3"]
    for step in tr.steps():
        upto = bst[: step + 1]  # the model as it was after round `step`
        for data_name in ("train", "validation"):
            for metric in ("logloss", "auc"):
                assert float(value(tr, "%s-%s" % (data_name, metric), step)[0]) == log[data_name][metric][step]
        np.testing.assert_array_equal(value(tr, "labels", step), dvalid.get_label())
        predictions = value(tr, "predictions", step)
        assert predictions.shape == (dvalid.num_row(),) and ((predictions > 0) & (predictions < 1)).all()
        np.testing.assert_allclose(predictions, upto.predict(dvalid), rtol=1e-6)
        for kind in vigil.capture.xgboost.IMPORTANCE_TYPES:
            scores = upto.get_score(importance_type=kind)
            total = sum(scores.values())
            saved = {n.split("/")[-1]: float(value(tr, n, step)[0])
                     for n in tr.tensor_names(step=step, regex=["^feature_importance/%s/" % kind])}
            assert saved.keys() == scores.keys(), kind
            for feature, score in scores.items():
                assert saved[feature] == pytest.approx(score / total, rel=1e-12), (kind, feature)
        rows = frame[frame["Tree"] == step]  # one tree per round
        assert set(tr.tensor_names(step=step, collection="trees")) == {"trees/" + c for c in frame.columns}
        for column in frame.columns:
            expected = rows[column].to_numpy()
            saved = value(tr, "trees/" + column, step)
            if expected.dtype == object:
                assert [str(v) for v in saved] == [str(v) for v in expected], column
            else:
                np.testing.assert_array_equal(saved, expected, err_msg=column)
        contribs = upto.predict(dtrain, pred_contribs=True)
        for i, feature in enumerate(contribs_names):
            np.testing.assert_allclose(value(tr, "full_shap/" + feature, step), contribs[:, i], rtol=1e-6)
            assert float(value(tr, "average_shap/" + feature, step)[0]) == pytest.approx(contribs[:, i].mean(),
                                                                                        rel=1e-5, abs=1e-7)


def test_multiclass_run_saves_per_class_predictions_trees_and_shap(softprob_run):
    tr, bst, log, (dtrain, dvalid) = softprob_run
    assert tr.steps() == [0, 1, 2, 3]
    for step in tr.steps():
        predictions = value(tr, "predictions", step)
        assert predictions.shape == (dvalid.num_row(), 3)
        np.testing.assert_allclose(predictions, bst[: step + 1].predict(dvalid), rtol=1e-6)
        # The three trees grown in the round (one per class).
        assert sorted(set(value(tr, "trees/Tree", step).tolist())) == [3 * step, 3 * step + 1, 3 * step + 2]
        assert value(tr, "full_shap/f0", step).shape == (dtrain.num_row(), 3)
        assert float(value(tr, "validation-mlogloss", step)[0]) == log["validation"]["mlogloss"][step]


def test_collections_and_steps_from_the_json_configuration(tmp_path, monkeypatch):
    # CreateXgboostReport's collection configuration (builtin-rules §2.21) as SageMaker writes it.
    config = {"LocalPath": str(tmp_path / "t"), "CollectionConfigurations": [
        {"CollectionName": "metrics", "CollectionParameters": {"save_interval": "5"}},
        {"CollectionName": "feature_importance", "CollectionParameters": {"save_interval": "5"}},
        {"CollectionName": "hyperparameters", "CollectionParameters": {"save_steps": "0"}},
        {"CollectionName": "predictions", "CollectionParameters": {"save_interval": "5"}},
        {"CollectionName": "labels", "CollectionParameters": {"save_interval": "5"}}]}
    path = tmp_path / "debughookconfig.json"
    path.write_text(json.dumps(config))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(path))
    smd.del_hook()  # every Hook() becomes the singleton; start without one
    hook = smd.get_hook(create_if_not_exists=True)
    try:
        assert isinstance(hook, smd.Hook) and smd.get_hook() is hook
        dtrain, dvalid = dataset("binary", 200)
        hook.train_data, hook.validation_data, hook.hyperparameters = dtrain, dvalid, BINARY  # smdebug's way
        xgb.train(BINARY, dtrain, num_boost_round=12, callbacks=[hook], verbose_eval=False,
                  evals=[(dvalid, "validation")])
    finally:
        smd.del_hook()
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 5, 10]
    assert tr.tensor("hyperparameters/objective").steps() == [0]
    assert tr.tensor("validation-auc").steps() == [0, 5, 10] and tr.tensor("labels").steps() == [0, 5, 10]
    assert not tr.tensor_names(regex=["^trees/", "shap/"])
    # Without save keys the XGBoost default applies: every 10 rounds.
    path.write_text(json.dumps({"LocalPath": str(tmp_path / "u")}))
    hook = smd.Hook.create_from_json_file(str(path))
    xgb.train(BINARY, dtrain, num_boost_round=12, callbacks=[hook], evals=[(dvalid, "validation")],
              verbose_eval=False)
    assert vigil.create_trial(str(tmp_path / "u")).steps() == [0, 10]


def test_set_mode_and_what_is_missing_without_data(tmp_path, caplog):
    dtrain, dvalid = dataset("binary", 120)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["labels", "predictions", "full_shap", "hyperparameters"])
    hook.set_mode(smd.modes.EVAL)
    xgb.train(BINARY, dtrain, num_boost_round=3, callbacks=[hook], evals=[(dvalid, "validation")],
              verbose_eval=False)
    tr = vigil.create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=smd.modes.EVAL) == [0, 1, 2] and tr.steps(mode=smd.modes.TRAIN) == []
    assert tr.tensor_names() == ["validation-auc", "validation-logloss"]  # no data set, no hyperparameters
    messages = [r.getMessage() for r in caplog.records]
    for what in ("labels and predictions need", "SHAP values need train_data", "needs hyperparameters="):
        assert sum(what in m for m in messages) == 1, (what, messages)  # warned once, not every round


def test_labels_and_predictions_fall_back_to_the_training_data(tmp_path):
    dtrain, _ = dataset("binary", 120)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), train_data=dtrain, include_collections=["labels"])
    xgb.train(BINARY, dtrain, num_boost_round=2, callbacks=[hook], verbose_eval=False)
    np.testing.assert_array_equal(value(vigil.create_trial(str(tmp_path / "t")), "labels", 0), dtrain.get_label())


def test_data_from_a_file_and_bad_data(tmp_path):
    dtrain, _ = dataset("binary", 40)
    csv = tmp_path / "valid.csv"
    X = np.arange(12.0).reshape(4, 3)
    np.savetxt(csv, np.column_stack([[0, 1, 1, 0], X]), delimiter=",")
    hook = smd.Hook(out_dir=str(tmp_path / "t"), validation_data=(str(csv), "text/csv"))
    assert hook.validation_data.num_row() == 4 and list(hook.validation_data.get_label()) == [0, 1, 1, 0]
    hook.close()
    for bad in ((str(tmp_path / "absent.csv"), "csv"), (str(csv), "parquet"), "valid.csv", X):
        with pytest.raises(ValueError, match="DMatrix"):
            smd.Hook(out_dir=str(tmp_path / "t"), train_data=bad)


def test_compat_maps_smdebug_xgboost():
    code = '''
        import vigil.compat, vigil.xgboost
        vigil.compat.install()
        import smdebug.xgboost as smd
        from smdebug.xgboost import Hook, get_hook, SaveConfig
        assert Hook is vigil.xgboost.Hook and smd.get_hook is get_hook and smd.modes is vigil.ModeKeys
        assert SaveConfig is vigil.save_config.SaveConfig
        print("ok")
    '''
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


# ---- distributed ---------------------------------------------------------------------------------------

WORKER = """
import json, sys, numpy as np, xgboost as xgb, vigil.xgboost as smd
env, rank, out, include = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
with xgb.collective.CommunicatorContext(DMLC_TASK_ID=str(rank), **env):
    rng = np.random.default_rng(rank)
    X = rng.normal(size=(100, 3))
    d = xgb.DMatrix(X, label=(X[:, 0] > 0).astype(float))
    hook = smd.Hook(out_dir=out, include_workers=include, save_config=smd.SaveConfig(save_interval=1))
    xgb.train({"objective": "binary:logistic"}, d, num_boost_round=3, evals=[(d, "train")], callbacks=[hook],
              verbose_eval=False)
    print("rank", xgb.collective.get_rank(), hook.worker)
"""


@pytest.mark.parametrize("include_workers", ["one", "all"])
def test_two_collective_workers(tmp_path, include_workers):
    from xgboost.tracker import RabitTracker

    tracker = RabitTracker(host_ip="127.0.0.1", n_workers=2)
    if hasattr(tracker, "worker_args"):  # xgboost >= 2
        tracker.start()
        # keep the values' JSON types: xgboost >= 2 rejects a string dmlc_tracker_port ("expecting Integer")
        env = dict(tracker.worker_args())
        join = lambda: tracker.wait_for(120)  # noqa: E731
    else:  # xgboost 1.x (Debian's 1.7)
        tracker.start(2)
        env = {k: str(v) for k, v in tracker.worker_envs().items()}
        join = tracker.join
    out = str(tmp_path / "t")
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(env), str(rank), out, include_workers],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=PYTHON_DIR, OMP_NUM_THREADS="1")) for rank in (0, 1)]
    outputs = [p.communicate(timeout=120) for p in procs]
    ok = all(p.returncode == 0 for p in procs)
    if ok:
        join()
    elif hasattr(tracker, "wait_for"):  # stop the waiting tracker now: freeing it would block, and wait_for(120)
        try:                            # would only hide the workers' errors behind a tracker timeout
            tracker.wait_for(1)
        except Exception:
            pass
    assert ok, outputs
    assert sorted(line.split()[-1] for o, _ in outputs for line in o.splitlines() if line.startswith("rank")) == [
        "worker_0", "worker_1"]
    tr = vigil.create_trial(out)
    expected = ["worker_0", "worker_1"] if include_workers == "all" else ["worker_0"]
    assert tr.workers() == expected and tr.num_workers == len(expected)
    assert tr.steps() == [0, 1, 2] and tr.tensor("train-logloss").workers(2) == expected


# ---- the rules on real runs ------------------------------------------------------------------------------

def evaluate(vigil_exe, trial, rules, tmp_path, tag):
    """{RuleConfigurationName: status} of one `vigil evaluate` job over the trial."""
    job = {"DebugRuleConfigurations": [
        {"RuleConfigurationName": name, "RuleEvaluatorImage": IMAGE, "RuleParameters": params}
        for name, params in rules]}
    (tmp_path / tag).mkdir()  # the status file, and CreateXgboostReport's report beside it
    job_path, status_path = tmp_path / tag / "job.json", tmp_path / tag / "status.json"
    job_path.write_text(json.dumps(job))
    proc = subprocess.run([vigil_exe, "evaluate", "--trial", trial, "--job", str(job_path), "--status-file",
                           str(status_path), "--quiet"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {s["RuleConfigurationName"]: s for s in json.loads(status_path.read_text())["DebugRuleEvaluationStatuses"]}


def expect_steps(status, steps):
    assert [t["step"] for t in status.get("Triggers", [])] == steps, status
    assert status["RuleEvaluationStatus"] == ("IssuesFound" if steps else "NoIssuesFound"), status


def tree_depth_oracle(tr, depth=4):
    return [s for s in tr.steps() if math.floor(math.log2(value(tr, "trees/Node", s).max() + 1)) > depth]


def importance_oracle(tr, threshold=0.8, nfeatures=3):
    fired = []
    for s in tr.steps():
        weights = sorted((float(value(tr, n, s)[0]) for n in tr.tensor_names(step=s, regex=[
            ".*feature_importance/weight"])), reverse=True)
        if weights and sum(weights[:nfeatures]) > threshold:
            fired.append(s)
    return fired


def class_imbalance_oracle(tr, argmax, samples=500, threshold_imbalance=10, threshold_misprediction=0.7):
    counts, wrong, fired = {}, {}, []
    for s in tr.steps():
        labels = value(tr, "labels", s)
        predicted = value(tr, "predictions", s)
        predicted = predicted.argmax(axis=-1) if argmax else predicted
        for y, p in zip(labels.tolist(), predicted.tolist()):
            counts[y] = counts.get(y, 0) + 1
            wrong[y] = wrong.get(y, 0) + (p != y)
        if sum(counts.values()) >= samples and (
                max(counts.values()) / min(counts.values()) > threshold_imbalance
                or any(wrong[c] / counts[c] > threshold_misprediction for c in counts)):
            fired.append(s)
    return fired


def confusion_oracle(tr, min_diag=0.9, max_off_diag=0.1):
    fired = []
    for s in tr.steps():
        y, p = value(tr, "labels", s).astype(int), value(tr, "predictions", s).astype(int)
        k = max(y.max(), p.max()) + 1
        matrix = np.zeros((k, k))
        np.add.at(matrix, (y, p), 1)
        columns = matrix.sum(axis=0)
        for i in np.flatnonzero(columns):
            off = np.delete(matrix[:, i], i)
            if matrix[i, i] / columns[i] < min_diag or (off / columns[i] > max_off_diag).any():
                fired.append(s)
                break
    return fired


XGBOOST_RULES = [("TreeDepth", {"rule_to_invoke": "TreeDepth"}),
                 ("FeatureImportanceOverweight", {"rule_to_invoke": "FeatureImportanceOverweight"}),
                 ("CreateXgboostReport", {"rule_to_invoke": "CreateXgboostReport"})]


def test_tree_depth_and_feature_importance_on_shallow_and_deep_runs(vigil_exe, tmp_path):
    every = dict(save_config=smd.SaveConfig(save_interval=1), include_collections=EVERYTHING)
    # Shallow trees over eight features that all matter; deep trees fitting a function of one feature.
    train(tmp_path / "shallow", REGRESSION, dataset("reg", 600, features=8, informative=8), 5, **every)
    deep = dict(REGRESSION, max_depth=10, min_child_weight=0, eta=0.1)
    train(tmp_path / "deep", deep, dataset("reg", 600, features=8, informative=1), 5, **every)
    verdicts = {}
    for run in ("shallow", "deep"):
        tr = vigil.create_trial(str(tmp_path / run))
        statuses = evaluate(vigil_exe, str(tmp_path / run), XGBOOST_RULES, tmp_path, "rules-" + run)
        verdicts[run] = (tree_depth_oracle(tr), importance_oracle(tr))
        expect_steps(statuses["TreeDepth"], verdicts[run][0])
        expect_steps(statuses["FeatureImportanceOverweight"], verdicts[run][1])
        expect_steps(statuses["CreateXgboostReport"], [])
        assert (tmp_path / ("rules-" + run) / "CreateXgboostReport.html").exists()
    assert verdicts["shallow"] == ([], []) and verdicts["deep"] == ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4])


def test_class_imbalance_on_balanced_and_imbalanced_classes(vigil_exe, tmp_path):
    every = dict(save_config=smd.SaveConfig(save_interval=1), include_collections=["labels", "predictions"])
    train(tmp_path / "balanced", SOFTPROB, dataset("multi", 1200), 4, **every)
    train(tmp_path / "imbalanced", SOFTPROB, dataset("multi", 1200, weights=[0.9, 0.06, 0.04]), 4, **every)
    train(tmp_path / "probabilities", BINARY, dataset("binary", 1200), 4, **every)
    rules = [("ClassImbalance", {"rule_to_invoke": "ClassImbalance"}),
             ("ClassImbalanceArgmax", {"rule_to_invoke": "ClassImbalance", "argmax": "True"})]
    fired = {}
    for run in ("balanced", "imbalanced", "probabilities"):
        tr = vigil.create_trial(str(tmp_path / run))
        statuses = evaluate(vigil_exe, str(tmp_path / run), rules, tmp_path, "rules-" + run)
        if run == "probabilities":
            # Probabilities never equal the 0/1 labels: every label counts as mispredicted.
            fired[run] = class_imbalance_oracle(tr, argmax=False)
            expect_steps(statuses["ClassImbalance"], fired[run])
        else:
            fired[run] = class_imbalance_oracle(tr, argmax=True)
            expect_steps(statuses["ClassImbalanceArgmax"], fired[run])
    # 300 validation labels per step: judged from step 1 on (samples=500).
    assert fired == {"balanced": [], "imbalanced": [1, 2, 3], "probabilities": [1, 2, 3]}


def test_confusion_on_class_predictions_and_on_probabilities(vigil_exe, tmp_path):
    every = dict(save_config=smd.SaveConfig(save_interval=1), include_collections=["labels", "predictions"])
    train(tmp_path / "clean", SOFTMAX, dataset("multi", 1200, informative=1), 6, **every)
    train(tmp_path / "noisy", SOFTMAX, dataset("multi", 1200, informative=2, noise=1.5), 6, **every)
    train(tmp_path / "probabilities", BINARY, dataset("binary", 400), 2, **every)
    rules = [("Confusion", {"rule_to_invoke": "Confusion"})]
    fired = {}
    for run in ("clean", "noisy"):
        statuses = evaluate(vigil_exe, str(tmp_path / run), rules, tmp_path, "rules-" + run)
        fired[run] = confusion_oracle(vigil.create_trial(str(tmp_path / run)))
        expect_steps(statuses["Confusion"], fired[run])
    assert fired == {"clean": [], "noisy": [0, 1, 2, 3, 4, 5]}
    # binary:logistic predictions are probabilities, not class indices: the rule refuses them.
    status = evaluate(vigil_exe, str(tmp_path / "probabilities"), rules, tmp_path, "rules-probabilities")["Confusion"]
    assert status["RuleEvaluationStatus"] == "Error" and "not a class index" in status["StatusDetails"], status


# ---- the calibrated profile of ClassImbalance and Confusion on real runs ------------------------------

# The calibrated profile (docs/verdict-quality.md): its defaults come from the rules' descriptors.
CALIBRATED = {"ClassImbalance": {"vigil_profile": "calibrated"}, "Confusion": {"vigil_profile": "calibrated"}}
CALIBRATED_RULES = [(name, dict(params, rule_to_invoke=name)) for name, params in CALIBRATED.items()]
ROUNDS = 10  # more than Confusion's window of 8 evaluations
EVERY_ROUND = dict(save_config=smd.SaveConfig(save_interval=1), include_collections=["labels", "predictions"])


def classes(n, centres, shares, seed):
    """(DMatrix train, DMatrix validation), 3/4 and 1/4 of n rows: class c is a unit Gaussian cloud
    in 4 features around centres[c]; two classes with the same centre cannot be told apart."""
    rng = np.random.default_rng(seed)
    y = rng.choice(len(shares), size=n, p=shares).astype(float)
    X = np.asarray(centres, dtype=float)[y.astype(int)] + rng.normal(size=(n, 4))
    cut = 3 * n // 4
    return xgb.DMatrix(X[:cut], label=y[:cut]), xgb.DMatrix(X[cut:], label=y[cut:])


APART = [[0, 0, 0, 0], [4, 0, 0, 0], [0, 4, 0, 0]]  # three classes 4 standard deviations apart
MERGED = [[0, 0, 0, 0], [4, 0, 0, 0], [4, 0, 0, 0]]  # classes 1 and 2 from the same distribution


def pair_informedness_oracle(tr, window=8):
    """The lowest Youden's J over the pairs of classes of each full window of pooled evaluations."""
    lowest = []
    steps = tr.steps()
    for end in range(window - 1, len(steps)):
        y = np.concatenate([value(tr, "labels", s) for s in steps[end - window + 1:end + 1]]).astype(int)
        scores = np.concatenate([value(tr, "predictions", s) for s in steps[end - window + 1:end + 1]])
        p = scores.argmax(axis=-1) if scores.ndim == 2 else (scores > 0.5).astype(int)
        k = max(y.max(), p.max()) + 1
        js = []
        for i in range(k):
            for j in range(i + 1, k):
                ii, ij = np.sum((y == i) & (p == i)), np.sum((y == i) & (p == j))
                ji, jj = np.sum((y == j) & (p == i)), np.sum((y == j) & (p == j))
                if ii + ij and ji + jj:
                    js.append(ii / (ii + ij) - ji / (ji + jj))
        lowest.append(min(js))
    return lowest


def test_calibrated_class_imbalance_and_confusion_stay_quiet_on_good_models(vigil_exe, tmp_path):
    train(tmp_path / "binary", BINARY, dataset("binary", 1600), ROUNDS, **EVERY_ROUND)
    train(tmp_path / "softprob", SOFTPROB, classes(1600, APART, [1 / 3] * 3, seed=1), ROUNDS, **EVERY_ROUND)
    for run, shape in (("binary", (400,)), ("softprob", (400, 3))):
        tr = vigil.create_trial(str(tmp_path / run))
        assert tr.steps() == list(range(ROUNDS)) and value(tr, "predictions", 0).shape == shape
        assert min(pair_informedness_oracle(tr)) > 0.8, run  # the classes are told apart
        statuses = evaluate(vigil_exe, str(tmp_path / run), CALIBRATED_RULES, tmp_path, "calibrated-" + run)
        for rule in CALIBRATED:
            expect_steps(statuses[rule], [])
    # The test sees the case: SageMaker's reading compares binary:logistic's probabilities with the
    # 0/1 labels and reports every class 100 % mispredicted.
    faithful = evaluate(vigil_exe, str(tmp_path / "binary"), [("ClassImbalance", {"rule_to_invoke": "ClassImbalance"})],
                        tmp_path, "sagemaker-binary")["ClassImbalance"]
    assert faithful["RuleEvaluationStatus"] == "IssuesFound", faithful
    evidence = faithful["Triggers"][0]["evidence"][0]
    assert evidence["misprediction_rate_above_threshold"] == {"0": 1, "1": 1}, evidence


def test_calibrated_confusion_fires_on_indistinguishable_classes(vigil_exe, tmp_path):
    train(tmp_path / "merged", SOFTPROB, classes(1600, MERGED, [1 / 3] * 3, seed=2), ROUNDS, **EVERY_ROUND)
    dtrain, dvalid = dataset("binary", 1600)
    rng = np.random.default_rng(3)  # labels shuffled: the features say nothing about them
    shuffled = (xgb.DMatrix(dtrain.get_data(), label=rng.permutation(dtrain.get_label())),
                xgb.DMatrix(dvalid.get_data(), label=rng.permutation(dvalid.get_label())))
    train(tmp_path / "shuffled", BINARY, shuffled, ROUNDS, **EVERY_ROUND)
    for run in ("merged", "shuffled"):
        tr = vigil.create_trial(str(tmp_path / run))
        assert min(pair_informedness_oracle(tr)) < 0.15, run
        status = evaluate(vigil_exe, str(tmp_path / run), CALIBRATED_RULES[1:], tmp_path, "calibrated-" + run)
        # Judged from the 8th evaluation on (the window), and confused at every one.
        expect_steps(status["Confusion"], list(range(7, ROUNDS)))
        pairs = status["Confusion"]["Triggers"][0]["evidence"][0]["pairs_confused"]
        assert [p["classes"] for p in pairs] == ([[1, 2]] if run == "merged" else [[0, 1]]), pairs


def test_calibrated_class_imbalance_fires_on_a_mispredicted_minority(vigil_exe, tmp_path):
    # A minority of 6 % (imbalance ratio under 10) drawn like class 1: the model calls it class 1.
    train(tmp_path / "minority", SOFTPROB, classes(2000, MERGED, [0.47, 0.47, 0.06], seed=4), ROUNDS, **EVERY_ROUND)
    status = evaluate(vigil_exe, str(tmp_path / "minority"), CALIBRATED_RULES[:1], tmp_path, "calibrated-minority")
    status = status["ClassImbalance"]
    assert status["RuleEvaluationStatus"] == "IssuesFound", status
    evidence = status["Triggers"][-1]["evidence"][0]
    assert evidence["imbalance_exceeded"] is False and evidence["classes_checked_for_misprediction"] == 1, evidence
    assert list(evidence["misprediction_rate_above_threshold"]) == ["2"], evidence


def test_the_xgboost_report_of_a_real_binary_run(vigil_exe, binary_run, tmp_path):
    tr = binary_run[0]
    statuses = evaluate(vigil_exe, tr.path, [XGBOOST_RULES[2]], tmp_path, "report")
    expect_steps(statuses["CreateXgboostReport"], [])
    html = (tmp_path / "report" / "CreateXgboostReport.html").read_text()
    assert "binary classification (objective binary:logistic)" in html
    assert "<tr><td>max_depth</td><td>3</td></tr>" in html
    for metric in ("train-logloss", "validation-auc"):
        assert "<td>%s</td>" % metric in html
    assert "area under the curve (AUC)" in html and "Not available: no tensor feature_importance" not in html


# ---- never harming training ---------------------------------------------------------------------------

TRAIN_SCRIPT = """
import numpy as np, sys, xgboost as xgb
import vigil.xgboost as smd
X = np.random.default_rng(0).normal(size=(200, 4))
d = xgb.DMatrix(X, label=(X[:, 0] > 0).astype(float))
hook = smd.Hook(out_dir=OUT, save_config=smd.SaveConfig(save_interval=1), include_collections=EVERYTHING,
                train_data=d, validation_data=d, hyperparameters={"objective": "binary:logistic"})
bst = xgb.train({"objective": "binary:logistic"}, d, num_boost_round=6, evals=[(d, "train")], callbacks=[hook],
                verbose_eval=False)
print("TRAINING FINISHED", bst.num_boosted_rounds())
"""


def _run_isolated(out, tmp_path, extra_env=None):
    code = TRAIN_SCRIPT.replace("OUT", repr(str(out))).replace("EVERYTHING", repr(EVERYTHING))
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, OMP_NUM_THREADS="1", **(extra_env or {}))
    return subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=300)


def test_an_unwritable_out_dir_disables_the_hook_and_training_finishes(tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    r = _run_isolated(tmp_path / "a_file" / "trial", tmp_path)
    assert r.returncode == 0 and "TRAINING FINISHED 6" in r.stdout, r.stderr
    assert r.stderr.count("vigil hook disabled") == 1, r.stderr


def test_capture_switched_off_by_the_environment(tmp_path):
    r = _run_isolated(tmp_path / "off", tmp_path, {"USE_SMDEBUG": "false"})
    assert r.returncode == 0 and "TRAINING FINISHED 6" in r.stdout, r.stderr
    assert not os.path.exists(tmp_path / "off")
