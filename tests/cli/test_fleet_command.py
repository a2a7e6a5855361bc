"""`vigil fleet` as a user runs it: forwarded by the C++ command to `python -m vigil.fleet`, listed by
`vigil --help`, its own --help, bad usage refused with exit status 2 before any trial runs, and a run
over a few trials (one missing) on a 2-process LocalCluster that writes the table as Parquet and CSV,
the summary page and the counts, and exits 0. About 15 s (two LocalCluster starts)."""
import os
import subprocess

import numpy as np
import pandas as pd

from vigil.modes import ModeKeys
from vigil.writer import TrialWriter


def write_trial(out, vanishing):
    w = TrialWriter(str(out), save_interval=1)
    for step in range(5):
        w.begin_step(ModeKeys.TRAIN)
        w.save_tensor("g", np.full(16, 1e-9 if vanishing else 0.5, dtype=np.float32), collections=["gradients"])
        w.end_step()
    w.close()
    return str(out)


def fleet(vigil_exe, *args, cwd=None):
    return subprocess.run([vigil_exe, "fleet", *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def test_help(vigil_exe):
    assert "fleet TRIAL..." in subprocess.run([vigil_exe, "--help"], capture_output=True, text=True).stdout
    proc = fleet(vigil_exe, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "usage: vigil fleet" in proc.stdout and "--scheduler" in proc.stdout and "--rule" in proc.stdout


def test_bad_usage_is_refused_before_anything_runs(vigil_exe, tmp_path):
    trial = write_trial(tmp_path / "t", False)
    out = tmp_path / "out"
    for args, message in ((["--rule", "VanishingGradient", "--output", "x.txt", trial], ".parquet or .csv"),
                          ([trial], "--job FILE"),
                          (["--rule", "NoSuchRule", "--output-dir", str(out), trial], "NoSuchRule"),
                          (["--param", "a=b", trial], "must follow a --rule"),
                          (["--rule", "VanishingGradient", str(tmp_path / "none*")], "matches no trial")):
        proc = fleet(vigil_exe, *args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.returncode, proc.stderr)
    assert not (out / "trials").exists()


def test_a_run_writes_the_table_the_page_and_exits_0_with_a_missing_trial(vigil_exe, tmp_path):
    trials = [write_trial(tmp_path / "runs" / "r{}".format(i) / "debug-output", i == 1) for i in range(3)]
    missing = str(tmp_path / "runs" / "gone" / "debug-output")
    out = tmp_path / "out"
    tables = {}
    for suffix in ("parquet", "csv"):
        proc = fleet(vigil_exe, "--rule", "VanishingGradient", "--name", "vg", "--param", "threshold=0.001",
                     "--workers", "2", "--output-dir", str(out), "--output", str(tmp_path / ("results." + suffix)),
                     str(tmp_path / "runs" / "*" / "debug-output"), missing)
        assert proc.returncode == 0, proc.stderr
        tables[suffix] = (pd.read_parquet if suffix == "parquet" else pd.read_csv)(tmp_path / ("results." + suffix))
    table = tables["parquet"]
    assert list(table["trial"]) == trials + [missing]
    assert list(table["status"]) == ["NoIssuesFound", "IssuesFound", "NoIssuesFound", "Error"]
    assert list(table["rule_configuration_name"][:3]) == ["vg"] * 3 and list(table["rule"][:3]) == ["VanishingGradient"] * 3
    assert list(table["last_step"][:3]) == [4, 4, 4]
    assert table["error"].iloc[3].startswith("missing") and table["error"][:3].isna().all()
    assert list(tables["csv"]["status"]) == list(table["status"])
    assert "failed: {}: missing".format(missing) in proc.stdout
    page = (out / "index.html").read_text()
    assert "4 trials, 1 failed" in page and page.count('>statuses</a>') == 3
    for d in table["output_dir"][:3]:
        assert os.path.exists(os.path.join(d, "statuses.json"))
