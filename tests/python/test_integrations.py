"""The trainer integrations (vigil.integrations): a Hugging Face Trainer with VigilCallback, and a
Lightning Trainer with VigilCallback and VigilLogger, each training a tiny model for real on CPU (a
healthy one, and one whose gradients vanish); `vigil evaluate` on their trials gives the verdicts of
the pathology each induces, and the real smdebug 1.0.34 reads the trials as Vigil does
(real_readers_agree). A callback that cannot write leaves the training alone."""
import json
import logging
import subprocess

import pytest
import torch

import vigil
from vigil.modes import ModeKeys
import vigil.pytorch as smd
from real_readers import real_readers_agree  # noqa: F401 (a fixture)

RULES = ["--rule", "VanishingGradient", "--rule", "LossNotDecreasing", "--param", "prefer_train_mode=True"]
HEALTHY = {"VanishingGradient": "NoIssuesFound", "LossNotDecreasing": "NoIssuesFound"}


def evaluate(vigil_exe, trial, tmp_path):
    status = tmp_path / "status.json"
    proc = subprocess.run([vigil_exe, "evaluate", "--trial", str(trial), *RULES, "--status-file", str(status)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {s["RuleConfigurationName"]: s["RuleEvaluationStatus"]
            for s in json.loads(status.read_text())["DebugRuleEvaluationStatuses"]}


# ---- Hugging Face Transformers -----------------------------------------------------------------------------------


def _hf_run(out_dir, tmp_path, vanishing=False, with_eval=True, callback=None, report_to=()):
    import transformers  # the optional extra vigil[transformers], in .venv (scripts/python-envs.sh)
    from vigil.integrations.transformers import VigilCallback

    torch.manual_seed(0)
    # GPT-2, not BERT: BERT's attention key bias has a gradient of zero by construction (softmax ignores
    # a shift shared by all keys), which VanishingGradient rightly reports; GPT-2 keeps q, k and v in
    # one tensor.
    config = transformers.GPT2Config(vocab_size=32, n_embd=8, n_layer=1, n_head=2, n_positions=16, num_labels=2,
                                     pad_token_id=0)
    model = transformers.GPT2ForSequenceClassification(config)
    if vanishing:
        with torch.no_grad():  # nothing flows back through a zero head: the transformer's gradients vanish
            model.score.weight.zero_()
    ids = torch.randint(1, 32, (8, 6))
    labels = (ids[:, 0] % 2).tolist()
    data = [{"input_ids": ids[i], "attention_mask": torch.ones(6, dtype=torch.long), "labels": labels[i]}
            for i in range(8)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"), max_steps=24, per_device_train_batch_size=8, per_device_eval_batch_size=4,
        learning_rate=5e-3, logging_steps=1, eval_strategy="steps" if with_eval else "no", eval_steps=12,
        report_to=list(report_to), use_cpu=True, save_strategy="no", disable_tqdm=True, seed=0)
    if callback is None and not report_to:
        callback = VigilCallback(out_dir=str(out_dir), save_config=smd.SaveConfig(save_interval=1))
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data,
                                   eval_dataset=data if with_eval else None,
                                   callbacks=[callback] if callback is not None else None)
    trainer.train()
    return trainer


@pytest.mark.usefixtures("real_readers_agree")
def test_transformers_trainer_healthy(vigil_exe, tmp_path):
    out = tmp_path / "trial"
    _hf_run(out, tmp_path)
    trial = vigil.create_trial(str(out))
    assert trial.steps(mode=ModeKeys.TRAIN) == list(range(24))  # the Trainer's global steps
    assert len(trial.steps(mode=ModeKeys.EVAL)) == 4  # two evaluations of two batches
    names = set(trial.tensor_names())
    assert "GPT2ForSequenceClassification_score.weight" in names
    assert "gradient/GPT2ForSequenceClassification_score.weight" in names
    assert set(trial.tensor_names(collection="losses")) == {"loss_output_0"}
    assert trial.tensor("loss_output_0").value(0, mode=ModeKeys.EVAL).size == 1
    assert {"scalar/learning_rate", "scalar/eval_loss", "scalar/loss"} <= names
    assert evaluate(vigil_exe, out, tmp_path) == HEALTHY


@pytest.mark.usefixtures("real_readers_agree")
def test_transformers_trainer_vanishing_gradients(vigil_exe, tmp_path):
    out = tmp_path / "trial"
    _hf_run(out, tmp_path, vanishing=True, with_eval=False)
    assert evaluate(vigil_exe, out, tmp_path)["VanishingGradient"] == "IssuesFound"


@pytest.mark.usefixtures("real_readers_agree")
def test_transformers_report_to_vigil(tmp_path, monkeypatch):
    import vigil.integrations.transformers  # noqa: F401 - registers report_to="vigil"

    monkeypatch.setenv("VIGIL_OUT_DIR", str(tmp_path / "trial"))
    _hf_run(None, tmp_path, with_eval=False, report_to=["vigil"])
    trial = vigil.create_trial(str(tmp_path / "trial"))
    # the Hook's default save interval (500): step 0 (and the last step, which holds the last logged scalars)
    assert trial.steps()[0] == 0 and 1 not in trial.steps()
    assert "gradient/GPT2ForSequenceClassification_score.weight" in trial.tensor_names()


def test_transformers_callback_that_cannot_write_leaves_training_alone(tmp_path, caplog):
    from vigil.integrations.transformers import VigilCallback

    (tmp_path / "a-file").write_text("")
    callback = VigilCallback(out_dir=str(tmp_path / "a-file" / "trial"), save_config=smd.SaveConfig(save_interval=1))
    with caplog.at_level(logging.ERROR, logger="vigil.hook"):
        trainer = _hf_run(None, tmp_path, callback=callback, with_eval=False)
    assert trainer.state.global_step == 24
    assert len([r for r in caplog.records if "training goes on without" in r.getMessage()]) == 1


# ---- PyTorch Lightning ----------------------------------------------------------------------------------------------


def _lightning_run(out_dir, scale=1.0, callback=True, logger=True):
    import lightning.pytorch as pl  # the optional extra vigil[lightning], in .venv
    from vigil.integrations.lightning import VigilCallback, VigilLogger

    class Regression(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.net(x) * scale, y)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.net(x) * scale, y)
            self.log("val_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    torch.manual_seed(0)
    x = torch.randn(64, 4)
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))
    loader = torch.utils.data.DataLoader(data, batch_size=64)
    trainer = pl.Trainer(max_steps=24, accelerator="cpu", devices=1, val_check_interval=12, limit_val_batches=1,
                         check_val_every_n_epoch=None, log_every_n_steps=1, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         logger=VigilLogger(str(out_dir), save_config=smd.SaveConfig(save_interval=1)) if logger
                         else False,
                         callbacks=[VigilCallback(str(out_dir), save_config=smd.SaveConfig(save_interval=1))]
                         if callback else [])
    trainer.fit(Regression(), loader, loader)
    return trainer


@pytest.mark.usefixtures("real_readers_agree")
def test_lightning_healthy(vigil_exe, tmp_path):
    out = tmp_path / "trial"
    _lightning_run(out)
    trial = vigil.create_trial(str(out))
    assert trial.steps(mode=ModeKeys.TRAIN) == list(range(24))
    assert trial.steps(mode=ModeKeys.EVAL)  # the sanity check's and the two validations' batches
    names = set(trial.tensor_names())
    assert {"Regression_net.0.weight", "gradient/Regression_net.0.weight", "loss_output_0", "scalar/train_loss",
            "scalar/val_loss"} <= names, names
    assert evaluate(vigil_exe, out, tmp_path) == HEALTHY


@pytest.mark.usefixtures("real_readers_agree")
def test_lightning_vanishing_gradients(vigil_exe, tmp_path):
    out = tmp_path / "trial"
    _lightning_run(out, scale=1e-9)
    assert evaluate(vigil_exe, out, tmp_path) == {"VanishingGradient": "IssuesFound",
                                                   "LossNotDecreasing": "IssuesFound"}


@pytest.mark.usefixtures("real_readers_agree")
def test_lightning_logger_alone(tmp_path):
    out = tmp_path / "trial"
    _lightning_run(out, callback=False)
    trial = vigil.create_trial(str(out))
    assert "scalar/train_loss" in trial.tensor_names()
    assert len(trial.steps()) >= 20


def test_lightning_callback_that_cannot_write_leaves_training_alone(tmp_path, caplog):
    (tmp_path / "a-file").write_text("")
    with caplog.at_level(logging.ERROR, logger="vigil.hook"):
        trainer = _lightning_run(tmp_path / "a-file" / "trial")
    assert trainer.global_step == 24
    assert len([r for r in caplog.records if "training goes on without" in r.getMessage()]) == 1
