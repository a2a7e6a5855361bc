"""vigil.compat: smdebug's import names resolve to Vigil after install()."""
import ast
import importlib
import os
import re
import subprocess
import sys
import textwrap


from conftest import PYTHON_DIR, SHARED, trial_dir


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


def _smdebug_config_constants():
    """smdebug's smdebug.core.config_constants as the API surface file records them: name -> value."""
    with open(os.path.join(SHARED, "spec", "smdebug-api-surface.txt")) as f:
        section = f.read().split("## smdebug.core.config_constants\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): ast.literal_eval(m.group(2)) for m in re.finditer(r"^(\w+) = (.*)$", section, re.M)}


def test_sagemaker_container_facts_are_the_hosts_table_and_smdebugs_values():
    """Python restates none of SageMaker's container facts: config_constants, the hook's configuration
    and locations take them from host/format/sagemaker_container.h (_vigil.sagemaker), and the table
    holds smdebug's values."""
    from vigil import _vigil, config_constants, locations
    from vigil.capture import hook, hook_config  # noqa: F401 - they import the table at load time
    sm = _vigil.sagemaker
    table = {
        "CONFIG_FILE_PATH_ENV_STR": sm.DEBUG_HOOK_CONFIG_VARIABLE,
        "TENSORBOARD_CONFIG_FILE_PATH_ENV_STR": sm.TENSORBOARD_CONFIG_VARIABLE,
        "CHECKPOINT_CONFIG_FILE_PATH_ENV_VAR": sm.CHECKPOINT_CONFIG_VARIABLE,
        "DEFAULT_CONFIG_FILE_PATH": sm.default_config_path(sm.DEBUG_HOOK_CONFIG_FILE),
        "DEFAULT_SAGEMAKER_TENSORBOARD_PATH": sm.default_config_path(sm.TENSORBOARD_CONFIG_FILE),
        "DEFAULT_CHECKPOINT_CONFIG_FILE": sm.default_config_path(sm.CHECKPOINT_CONFIG_FILE),
        "DEFAULT_RESOURCE_CONFIG_FILE": sm.default_config_path(sm.RESOURCE_CONFIG_FILE),
        "DEFAULT_SAGEMAKER_OUTDIR": sm.DEBUG_OUTPUT_DIR,
        "INCOMPLETE_STEP_WAIT_WINDOW_KEY": sm.INCOMPLETE_STEP_WAIT_WINDOW_VARIABLE,
        "TRAINING_END_DELAY_REFRESH_KEY": sm.TRAINING_END_DELAY_REFRESH_VARIABLE,
    }
    smdebug = _smdebug_config_constants()
    for name, value in table.items():
        assert getattr(config_constants, name) == value == smdebug[name], name
    assert locations.TRAINING_END_FILE == sm.END_OF_TRAINING_MARKER == "training_job_end.ts"
    assert hook.DEFAULT_SAGEMAKER_OUTDIR == sm.DEBUG_OUTPUT_DIR
    assert sm.PROFILING_INTERVALS_MS == (100, 200, 500, 1000, 5000, 60000)
    assert sm.PROFILER_CONFIG_VARIABLE == "SMPROFILER_CONFIG_PATH"
    assert _vigil.profiler_config_path_from_environment() in (
        os.environ.get(sm.PROFILER_CONFIG_VARIABLE), sm.default_config_path(sm.PROFILER_CONFIG_FILE))


def test_capture_environment_is_a_leaf_module():
    """vigil.capture.environment imports nothing of the capture side; the hook, its JSON configuration
    and the framework profiler import it, and none of them imports a sibling inside a function."""
    def parsed(name):
        with open(importlib.import_module("vigil.capture." + name).__file__) as f:
            return ast.parse(f.read())
    leaf = [n for n in ast.walk(parsed("environment")) if isinstance(n, ast.ImportFrom) and n.level == 1]
    assert not leaf, [n.module for n in leaf]
    for name in ("hook", "hook_config", "framework_profiler"):
        nested = [n.module for fn in ast.walk(parsed(name)) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for n in ast.walk(fn) if isinstance(n, ast.ImportFrom) and n.level == 1]
        assert not nested, "{} imports {} inside a function".format(name, nested)
