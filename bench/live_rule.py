"""The Python rule of `vigil_bench live --python-rule`: reads mean(|x|) of every tensor of the step
through the host, as a custom smdebug rule would, and fires at every step so that each step writes a
new trigger to the status file."""
from smdebug.rules.rule import Rule


class FireAtEveryStep(Rule):
    def __init__(self, base_trial):
        super().__init__(base_trial)

    def invoke_at_step(self, step):
        for name in self.base_trial.tensor_names(step=step):
            self.base_trial.tensor(name).reduction_value(step, "mean", abs=True)
        return True
