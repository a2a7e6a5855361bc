"""Code written against Vigil's public API as a user writes it: never run, only checked by mypy
(test_typing.py), so that the package's annotations are used and must agree with each other."""
from typing import List, Optional

import numpy as np

import vigil
from vigil import installation
from vigil.modes import ModeKeys, to_mode
from vigil.reduction_config import ReductionConfig
from vigil.save_config import SaveConfig, SaveConfigMode
from vigil.trials import Trial
from vigil.writer import TrialWriter


def write(out_dir: str) -> None:
    with TrialWriter(out_dir, save_interval=1) as w:
        w.add_collection("gradients", include_regex=["^gradient/"], reductions=["mean", "abs_mean"])
        for step in range(3):
            w.begin_step(ModeKeys.TRAIN)
            w.save_tensor("gradient/fc.weight", np.ones((2, 2), dtype=np.float32))
            w.save_scalar("loss", 1.0 / (step + 1))
            w.end_step()
        current: int = w.global_step
        mode: ModeKeys = w.mode


def read(path: str) -> List[float]:
    trial: Trial = vigil.create_trial(path)
    means: List[float] = []
    for name in trial.tensor_names(collection="gradients", mode=ModeKeys.TRAIN):
        tensor = trial.tensor(name)
        for step in tensor.steps(mode="TRAIN"):
            value: np.ndarray = tensor.value(step, mode=ModeKeys.TRAIN)
            means.append(float(value.mean()))
            shape: tuple = tensor.shape(step, mode=ModeKeys.TRAIN)
    last: Optional[ModeKeys] = trial.mode(trial.last_complete_step)
    return means


def configure() -> SaveConfig:
    rc = ReductionConfig(reductions=["min", "max"], abs_norms=["l2"], save_shape=True)
    same: Optional[ReductionConfig] = ReductionConfig.from_json(rc.to_json())
    train = SaveConfigMode(save_interval=10, start_step=0, end_step=100)
    config = SaveConfig(mode_save_configs={ModeKeys.TRAIN: train}, save_interval=50)
    config.should_save_step(to_mode("EVAL"), 50)
    return SaveConfig.parse({"save_interval": 5})


def where() -> Optional[str]:
    command: Optional[str] = installation.executable()
    return installation.cmake_dir() or command
