"""Vigil's PyTorch hook against the real smdebug 1.0.34's. The training scripts of hook_scenarios.py
run once on smdebug's hook and once on Vigil's (this test process's interpreter through
vigil.compat), with the same torch (smdebug_reference.py: Debian's 1.13 in smdebug's environment, or
this interpreter's with smdebug's package linked in), seeds and one thread, and both trials are read
with one reader and compared: the index files (steps, modes, mode steps, the order of the records),
every tensor's steps per mode and values bit for bit, and the collections.

Each scenario also checks, on both trials, smdebug's rule for `save_tensor` (pytorch/hook.py of
smdebug 1.0.34): a value waits for the hook's next flush point, which is
  * the forward hook of any module, the registered loss's included, on a step that saves something
    (after that module's inputs and outputs), and
  * the gradient hook of any parameter, on every step (after that gradient, if it is saved);
a flush writes into the step then open, or drops the value when the step saves nothing. The start of
a step, set_mode and close() are no flush points: what is pending at close() is lost.

The known differences (docs/compatibility.md, "Capture") are asserted as such.
"""
import os
import subprocess

import numpy as np
import pytest

import raw_records
from conftest import SHARED, compat_command
from real_readers import check_trials, find_trials
from smdebug_reference import reference_runner
from torch_features import tensor_hooks_run_for_autograd_grad

import vigil
from vigil.modes import ModeKeys

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hook_scenarios.py")
PATHOLOGY_FIXTURE = os.path.join(SHARED, "fixtures", "pathologies", "healthy_mlp_s1")
LOSS, FC1, FIRST_GRADIENT = "CrossEntropyLoss_output_0", "fc1_output_0", "gradient/Net_fc2.bias"

# Where the rule puts each custom tensor: {scenario: {name: [(global step, the record just before it
# in the step's index, its first element: 100 * the global step it was saved at + an index)]}};
# None: the value is the model's. An empty list: never written.
LANDINGS = {
    "before_module_forward": {"cA_pre_forward": [(s, FC1, 100.0 * s) for s in range(3)]},
    "before_loss_forward": {"cA_pre_loss": [(s, LOSS, None) for s in range(3)]},
    "before_backward": {"cA_pre_backward": [(s, FIRST_GRADIENT, 100.0 * s) for s in range(3)]},
    # saved after each of 6 steps, every 2nd saving: from the odd steps into the next step's first
    # module hook; from the even ones dropped by the next step's backward; the last lost at close()
    "step_boundary": {"cA_after_step": [(2, FC1, 100.0), (4, FC1, 300.0)]},
    "non_saving_steps": {"cA_every_step": [(0, LOSS, 0.0), (3, LOSS, 300.0), (6, LOSS, 600.0)]},
    # TRAIN 0-1, EVAL 2-6 (saving at EVAL mode steps 2 and 4: global 4 and 6), TRAIN 7-8
    "across_set_mode": {"cA_end_of_train": [(4, FC1, 100.0)],
                        "cA_eval": [(4, "cA_end_of_train", 301.0), (6, FC1, 501.0), (7, FC1, 601.0)]},
    "before_close": {"cA_before_close": []},
    "several_collections": {"cA_both": [(0, LOSS, 0.0), (1, LOSS, 100.0)],
                            "cB_second": [(0, "cA_both", 1.0), (1, "cA_both", 101.0)]},
    "scalars_on_non_saving_steps": {},
    "gradient_accumulation": {},
    "functional_gradients": {},
    "pathology_pattern": {"labels": [(s, LOSS, None) for s in range(2, 45, 3)],
                          "predictions": [(s, "labels", None) for s in range(2, 45, 3)]},
}
MODES = (ModeKeys.GLOBAL, ModeKeys.TRAIN, ModeKeys.EVAL)


@pytest.fixture(scope="module")
def roots(smdebug_python, tmp_path_factory):
    """{"smdebug": folder, "vigil": folder}, each holding one trial per scenario."""
    base = tmp_path_factory.mktemp("hook-vs-smdebug")
    env = dict(os.environ, OMP_NUM_THREADS="1", SMDEBUG_LOG_LEVEL="error")
    ref_python, ref_env = reference_runner(smdebug_python)
    ref_env.update(OMP_NUM_THREADS="1", SMDEBUG_LOG_LEVEL="error")
    out = {"smdebug": str(base / "smdebug"), "vigil": str(base / "vigil")}
    for hook, command, run_env in (("smdebug", [ref_python, SCRIPT, out["smdebug"]], ref_env),
                                   ("vigil", compat_command(SCRIPT, out["vigil"]), env)):
        r = subprocess.run(command, env=run_env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, "hook_scenarios.py on {} failed:\n{}{}".format(hook, r.stdout, r.stderr)
        assert "vigil hook disabled" not in r.stderr, r.stderr
    return out


def index_records(trial):
    """{global step: tensor names in the order of the step's index}."""
    return {int(os.path.basename(path)[:12]): names for path, (_, names, _) in raw_records.index_files(trial).items()}


def value_outcome(tensor, step):
    try:
        v = tensor.value(step)
    except Exception as e:  # noqa: BLE001 - compared
        return ("raises", type(e).__name__)
    return ("value", v.dtype.str, v.shape, np.ascontiguousarray(v).tobytes())


def compare_trials(smd_dir, vig_dir, kept=lambda name: True):
    """Every difference between the two trials, over the tensors `kept` selects."""
    diffs = []

    def index(trial):
        files = {}
        for path, (meta, tensors, shapes) in raw_records.index_files(trial).items():
            tensors, shapes = [t for t in tensors if kept(t)], [t for t in shapes if kept(t)]
            if tensors or shapes:
                files[path] = (meta, tensors, shapes)
        return files

    want, got = index(smd_dir), index(vig_dir)
    for path in sorted(set(want) | set(got)):
        if want.get(path) != got.get(path):
            diffs.append("index %s: smdebug %s, vigil %s" % (path, want.get(path), got.get(path)))
    ts, tv = vigil.create_trial(smd_dir), vigil.create_trial(vig_dir)
    names = sorted(n for n in ts.tensor_names() if kept(n))
    got_names = sorted(n for n in tv.tensor_names() if kept(n))
    if got_names != names:
        diffs.append("tensor_names: smdebug %s, vigil %s" % (names, got_names))
    for name in sorted(set(names) & set(got_names)):
        a, b = ts.tensor(name), tv.tensor(name)
        for mode in MODES:
            if a.steps(mode=mode) != b.steps(mode=mode):
                diffs.append("%s steps(%s): smdebug %s, vigil %s" % (name, mode.name, a.steps(mode=mode),
                                                                     b.steps(mode=mode)))
        for step in sorted(set(a.steps()) & set(b.steps())):
            if ts.mode_modestep(step) != tv.mode_modestep(step):
                diffs.append("step %d mode: smdebug %s, vigil %s" % (step, ts.mode_modestep(step),
                                                                      tv.mode_modestep(step)))
            va, vb = value_outcome(a, step), value_outcome(b, step)
            if va != vb:
                diffs.append("%s step %d: smdebug %s, vigil %s" % (name, step, str(va)[:200], str(vb)[:200]))
    cs, cv = ts.collections(), tv.collections()
    if sorted(cs) != sorted(cv):
        diffs.append("collections: smdebug %s, vigil %s" % (sorted(cs), sorted(cv)))
    for c in sorted(set(cs) & set(cv)):
        a, b = cs[c], cv[c]
        if a.include_regex != b.include_regex:
            diffs.append("collection %s include_regex: smdebug %s, vigil %s" % (c, a.include_regex, b.include_regex))
        na, nb = {n for n in a.tensor_names if kept(n)}, {n for n in b.tensor_names if kept(n)}
        if na != nb:
            diffs.append("collection %s tensor_names: smdebug %s, vigil %s" % (c, sorted(na), sorted(nb)))
    return diffs


def landing_problems(trial, landings):
    """Where the trial's custom tensors are, against smdebug's rule."""
    problems = []
    records = index_records(trial)
    t = vigil.create_trial(trial)
    for name, expected in landings.items():
        got = sorted(s for s, names in records.items() if name in names)
        if got != [s for s, _, _ in expected]:
            problems.append("%s written at steps %s, the rule says %s" % (name, got, [s for s, _, _ in expected]))
            continue
        for step, before, first in expected:
            names = records[step]
            i = names.index(name)
            if names.count(name) != 1 or i == 0 or names[i - 1] != before:
                problems.append("%s at step %d: after %s, the rule says once, right after %s" % (
                    name, step, names[i - 1] if i else None, before))
            if first is not None:
                v = t.tensor(name).value(step)
                if float(v.ravel()[0]) != first:
                    problems.append("%s at step %d holds %s: saved at another step than %s" % (name, step, v, first))
    return problems


@pytest.mark.parametrize("scenario", sorted(LANDINGS))
def test_custom_tensors_land_where_smdebugs_hook_puts_them(roots, scenario):
    landings = LANDINGS[scenario]
    for hook in ("smdebug", "vigil"):
        problems = landing_problems(os.path.join(roots[hook], scenario), landings)
        assert not problems, "%s's trial:\n%s" % (hook, "\n".join(problems))


@pytest.mark.parametrize("scenario", sorted(set(LANDINGS) - {"several_collections"}))
def test_the_trials_are_the_same(roots, scenario):
    diffs = compare_trials(os.path.join(roots["smdebug"], scenario), os.path.join(roots["vigil"], scenario))
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("hook", ["smdebug", "vigil"])
def test_the_real_smdebug_reads_every_trial_as_vigil_does(roots, hook, smdebug_python):
    """Beyond the one reader above: smdebug 1.0.34 and Vigil read each scenario's trial alike."""
    trials = find_trials(roots[hook])
    assert len(trials) == len(LANDINGS), trials
    check_trials(trials, smdebug_python)


def test_save_tensor_into_several_collections_joins_them_all(roots):
    """smdebug keeps only the last collection named (its loop overwrites the pending entry); Vigil
    puts the tensor in each. Everything else is the same."""
    smd_dir, vig_dir = (os.path.join(roots[h], "several_collections") for h in ("smdebug", "vigil"))
    assert not compare_trials(smd_dir, vig_dir, kept=lambda n: n != "cA_both")
    ts, tv = vigil.create_trial(smd_dir), vigil.create_trial(vig_dir)
    assert "cA_both" not in ts.collection("cA").tensor_names and "cA_both" in ts.collection("cB").tensor_names
    assert "cA_both" in tv.collection("cA").tensor_names and "cA_both" in tv.collection("cB").tensor_names
    assert [value_outcome(ts.tensor("cA_both"), s) for s in (0, 1)] == \
        [value_outcome(tv.tensor("cA_both"), s) for s in (0, 1)]


def test_save_scalar_on_a_step_that_saves_nothing(roots):
    """The scalars of a step that saves nothing are written at the end of the next step that does (so
    a step can hold two values of one scalar, and readers take the last), by both hooks."""
    smd_dir, vig_dir = (os.path.join(roots[h], "scalars_on_non_saving_steps") for h in ("smdebug", "vigil"))
    for trial_dir in (smd_dir, vig_dir):
        assert {s: n.count("scalar/tag") for s, n in index_records(trial_dir).items()} == {0: 1, 2: 2, 3: 1}
        t = vigil.create_trial(trial_dir)
        assert [float(t.tensor("scalar/tag").value(s)[0]) for s in t.tensor("scalar/tag").steps()] == [0.0, 2.0, 3.0]


def test_the_pathology_pattern_writes_the_corpus_layout(roots):
    """hook_scenarios.pathology_pattern follows the loop that wrote the pathology corpus: its trial,
    on either hook, has the index files of the corpus's healthy_mlp_s1 (steps, modes, mode steps,
    record order) and its collections (the values differ: the data are not the corpus's)."""
    want = raw_records.index_files(PATHOLOGY_FIXTURE)
    fixture = vigil.create_trial(PATHOLOGY_FIXTURE)
    for hook in ("smdebug", "vigil"):
        trial_dir = os.path.join(roots[hook], "pathology_pattern")
        got = raw_records.index_files(trial_dir)
        assert got == want, hook
        t = vigil.create_trial(trial_dir)
        assert sorted(t.collections()) == sorted(fixture.collections())
        for name, c in fixture.collections().items():
            assert (t.collection(name).include_regex, t.collection(name).tensor_names) == \
                (c.include_regex, c.tensor_names), (hook, name)


def test_a_steps_gradient_is_its_own_backward_pass(roots):
    """gradient_accumulation (two half batches per optimizer step): the gradient saved at the second
    half is that backward pass's gradient, as smdebug saves the tensor hook's argument, not the sum
    .grad holds by then (what Tensor.register_post_accumulate_grad_hook would give:
    docs/capture.md). The run is replayed here to know both."""
    import torch
    torch.manual_seed(0)
    fc1, fc2, _ = torch.nn.Linear(4, 6), torch.nn.Linear(6, 3), torch.nn.Linear(2, 2)  # hook_scenarios.Net's
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(16, 4, generator=g), torch.randint(0, 3, (16,), generator=g)
    opt = torch.optim.SGD(list(fc1.parameters()) + list(fc2.parameters()), lr=0.1)
    own, accumulated = [], []
    for i in range(6):
        if i % 2 == 0:
            opt.zero_grad()
        half = slice(0, 8) if i % 2 == 0 else slice(8, 16)
        loss = torch.nn.CrossEntropyLoss()(fc2(torch.relu(fc1(x[half]))), y[half])
        own.append(torch.autograd.grad(loss, [fc1.weight], retain_graph=True)[0].numpy())
        loss.backward()
        accumulated.append(fc1.weight.grad.numpy().copy())
        if i % 2 == 1:
            opt.step()
    for hook in ("smdebug", "vigil"):
        t = vigil.create_trial(os.path.join(roots[hook], "gradient_accumulation"))
        assert t.steps() == list(range(6)), hook
        for step in range(6):
            saved = t.tensor("gradient/Net_fc1.weight").value(step)
            assert np.allclose(saved, own[step], rtol=1e-4, atol=1e-6), (hook, step)
            if step % 2 == 1:
                assert not np.allclose(saved, accumulated[step], rtol=1e-2, atol=1e-4), (hook, step)


def test_gradients_taken_with_autograd_grad_are_saved_where_torch_runs_tensor_hooks(roots):
    """functional_gradients: both hooks save the gradients of torch.autograd.grad exactly when this
    torch runs the parameters' tensor hooks for it (torch 2: steps 0-2; 1.13: none)."""
    want = [0, 1, 2] if tensor_hooks_run_for_autograd_grad() else []
    for hook in ("smdebug", "vigil"):
        t = vigil.create_trial(os.path.join(roots[hook], "functional_gradients"))
        assert t.steps() == [0, 1, 2], hook
        names = [n for n in t.tensor_names() if n.startswith("gradient/")]
        got = sorted({s for n in names for s in t.tensor(n).steps()})
        assert got == want, (hook, names)
        if want:
            assert sorted(names) == ["gradient/Net_fc1.bias", "gradient/Net_fc1.weight", "gradient/Net_fc2.bias",
                                     "gradient/Net_fc2.weight"], hook
