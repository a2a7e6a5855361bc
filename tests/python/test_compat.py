"""vigil.compat: smdebug's import names resolve to Vigil after install()."""
import importlib
import subprocess
import sys
import textwrap


from conftest import PYTHON_DIR, trial_dir


def run_fresh(code):
    """Runs code in a fresh interpreter (sys.modules untouched by other tests)."""
    env_path = PYTHON_DIR + (":" + sys.path[0] if sys.path else "")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_smdebug_names_resolve_to_vigil():
    out = run_fresh('''
        import vigil.compat
        vigil.compat.install()
        import smdebug
        import smdebug.rules.rule
        from smdebug.rules.rule import Rule
        from smdebug.rules import invoke_rule, Rule as Rule2
        from smdebug.rules.rule_invoker import invoke_rule as invoke2
        from smdebug.trials import create_trial
        from smdebug.exceptions import TensorUnavailableForStep, NoMoreData, SMDebugValueError
        from smdebug.core.modes import ModeKeys
        from smdebug.analysis.utils import no_refresh
        import vigil
        assert Rule is vigil.rules.Rule is Rule2 is smdebug.rules.rule.Rule
        assert invoke_rule is invoke2 is vigil.rules.invoke_rule
        assert create_trial is vigil.create_trial and smdebug.create_trial is create_trial
        assert TensorUnavailableForStep is vigil.exceptions.TensorUnavailableForStep
        assert ModeKeys is vigil.ModeKeys is smdebug.ModeKeys is smdebug.core.modes.ModeKeys
        assert no_refresh is vigil.trials.no_refresh
        import sys
        assert "torch" not in sys.modules and "smdebug.pytorch" not in sys.modules
        import smdebug.pytorch as smd  # made now, as smdebug's, with torch
        assert smd.Hook is __import__("vigil.pytorch").pytorch.Hook and "torch" in sys.modules
        try:
            import smdebug.tensorflow
        except ModuleNotFoundError as e:
            print("not covered:", e.name)
        print("ok")
    ''')
    assert "ok" in out and "not covered: smdebug.tensorflow" in out


def test_install_is_idempotent_and_reversible():
    import vigil.compat

    vigil.compat.install()
    vigil.compat.install()
    assert vigil.compat.is_installed()
    smd = importlib.import_module("smdebug.exceptions")
    assert smd.StepUnavailable is vigil.exceptions.StepUnavailable
    vigil.compat.uninstall()
    assert "smdebug" not in sys.modules
    vigil.compat.install()


def test_unmodified_rule_runs_after_install(tmp_path):
    src = tmp_path / "my_rule.py"
    src.write_text(textwrap.dedent('''
        from smdebug.rules.rule import Rule
        from smdebug.core.modes import ModeKeys

        class LossAbove(Rule):
            def __init__(self, base_trial, threshold="1.0"):
                super().__init__(base_trial, action_str="")
                self.threshold = float(threshold)

            def invoke_at_step(self, step):
                loss = self.base_trial.tensor_names(collection="losses")[0]
                return float(self.base_trial.tensor(loss).value(step)) > self.threshold
    '''))
    out = run_fresh('''
        import vigil.compat
        vigil.compat.install()
        import importlib.util
        spec = importlib.util.spec_from_file_location("my_rule", %r)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        from smdebug.trials import create_trial
        from smdebug.rules import invoke_rule
        from smdebug.exceptions import RuleEvaluationConditionMet
        rule = m.LossAbove(create_trial(%r), threshold="1.4")
        try:
            invoke_rule(rule, end_step=30, raise_eval_cond=True)
        except RuleEvaluationConditionMet as e:
            print("met at", e.step)
    ''' % (str(src), trial_dir("mlp_healthy")))
    assert "met at 0" in out
