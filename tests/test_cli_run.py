"""`paradnn run` end to end: dry run, JSON-lines progress, predicted OOM, Ctrl-C and resume."""

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TINY, export_rows, run_cli, write_sweep

HUGE_FC = {"layers": 128, "nodes": 8192, "input": 8000, "output": 1000, "batch": 16384}


def test_dry_run_lists_configs_with_estimates_and_runs_nothing(capsys, tmp_path):
    sweep = write_sweep(
        tmp_path / "d.toml", [("fc", TINY["fc"]), ("fc", HUGE_FC)], ("fp32", "bf16")
    )
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", "--preset", str(sweep), "--dry-run", "--device",
                             "cpu", "--db", str(db))  # fmt: skip
    assert code == 0, err
    assert "d: 4 runs (dry run)" in out
    assert out.count("│ yes ") == 2 and out.count("│ no ") == 2  # 34 GB of weights: never fits
    assert "estimated total ≥" in out
    assert not db.exists()


def test_dry_run_of_the_paper_preset_counts_every_config(capsys):
    from paradnn import api

    rows = api.dry_run("paper-rnn", device="cpu")
    assert len(rows) == 2160
    assert all(r.predicted_mem_lower_bytes <= r.predicted_mem_bytes for r in rows)


def test_jsonl_progress_and_predicted_oom(capsys, tmp_path):
    sweep = write_sweep(tmp_path / "j.toml", [("fc", TINY["fc"]), ("fc", HUGE_FC)])
    db = str(tmp_path / "r.db")
    code, out, err = run_cli(capsys, "run", "--preset", str(sweep), "--db", db, "--device", "cpu",
                             "--threads", "1", "--progress", "jsonl")  # fmt: skip
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0]["event"] == "start" and events[0]["total"] == 2
    assert events[-1]["event"] == "end" and events[-1]["counts"] == {"ok": 1, "predicted_oom": 1}
    results = [e for e in events if e["event"] == "result"]
    assert sorted(e["status"] for e in results) == ["ok", "predicted_oom"]
    huge = next(e for e in results if e["status"] == "predicted_oom")
    ok = next(e for e in results if e["status"] == "ok")
    assert ok["ci_rel"] > 0 and isinstance(ok["converged"], bool) and ok["quality"]
    assert huge["ci_rel"] is None and huge["converged"] is None
    assert "--force runs it anyway" in huge["error"] and "of host memory is free" in huge["error"]
    code, out, _ = run_cli(capsys, "results", "--db", db, "-f", "json", "--status", "predicted_oom")
    (row,) = export_rows(out)
    assert row["predicted_mem_lower_bytes"] > 30 * 2**30 and row["step_time_s"] is None
    # a second run resumes: nothing left to do (same threads, so the same run keys)
    code, out, _ = run_cli(capsys, "run", "--preset", str(sweep), "--db", db, "--device", "cpu",
                           "--threads", "1", "--progress", "jsonl")  # fmt: skip
    start = json.loads(out.splitlines()[0])
    assert start["total"] == 0 and start["skipped"] == 2
    # and its dry run says so: nothing to do, each run with its stored status, no time
    code, out, _ = run_cli(capsys, "run", "--preset", str(sweep), "--db", db, "--device", "cpu",
                           "--dry-run")  # fmt: skip
    assert code == 0 and "2 of 2 stored already (skipped on resume); nothing to do" in out
    assert "stored: ok" in out and "stored: predicted_oom" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--workers", "0"], "--workers = 0: must be an integer in [1, 1024]"),
        (["--timeout", "0"], "timeout = 0.0: must be a number in (0, 604800]"),
        (["--recycle-every", "0"], "--recycle-every = 0: must be an integer in [1, 1000000]"),
        (["--preset", "nope.toml"], "nope.toml: cannot read"),
        (["--optimizer", "lamb"], "optimizer"),
        (["--device", "gpu"], "device = 'gpu': must be auto, cpu, cuda or cuda:N"),
    ],
)
def test_bad_run_options_are_one_line(capsys, tmp_path, args, needle):
    code, _, err = run_cli(capsys, "run", *args, "--db", str(tmp_path / "r.db"))
    assert code == 2, err
    assert needle in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.db").exists()


def test_malformed_sweep_file_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[families.fc]\nlayers = "4..128 x1"\n')
    code, _, err = run_cli(capsys, "run", "--preset", str(bad), "--db", str(tmp_path / "r.db"))
    assert code == 2 and "bad.toml" in err and "families.fc.layers" in err
    assert len(err.strip().splitlines()) == 1


def test_ctrl_c_stops_cleanly_and_the_rerun_finishes(tmp_path):
    runs = [("fc", {**TINY["fc"], "nodes": n}) for n in range(4, 14)]
    sweep = write_sweep(tmp_path / "c.toml", runs)
    db = tmp_path / "r.db"
    cmd = [sys.executable, "-m", "paradnn", "run", "--preset", str(sweep), "--db", str(db),
           "--device", "cpu", "--threads", "1", "--recycle-every", "2", "--quiet"]  # fmt: skip
    # A shell's background job (`make test &`, some CI runners) ignores SIGINT, and Python keeps
    # an inherited SIG_IGN: give the child the default, as a terminal would.
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _rows(db) < 1:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err
    stored = _rows(db)
    assert 1 <= stored < len(runs)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{stored} already done" in done.stdout
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*), COUNT(DISTINCT run_key) FROM runs").fetchone() == (
        len(runs), len(runs)
    )  # fmt: skip


def _rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        return sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is still being created
        return 0


def test_dry_run_of_a_large_sweep_lists_the_first_runs_and_estimates_all(capsys, tmp_path):
    code, out, err = run_cli(capsys, "run", "--preset", "paper", "--dry-run", "--device", "cpu",
                             "--db", str(tmp_path / "none.db"))  # fmt: skip
    assert code == 0, err
    assert "paper: 14,040 runs (dry run; the first 200 listed)" in out
    assert "for all 14,040 runs, from an even sample of 500" in out


def test_dry_run_picks_first_and_sampled_runs():
    from paradnn import api

    assert api.dry_run_count("paper-rnn", device="cpu") == 2160
    first = api.dry_run("paper-rnn", device="cpu", limit=3)
    every = api.dry_run("paper-rnn", device="cpu", sample=4)
    assert len(first) == 3 and len(every) == 4
    assert every[0].config == first[0].config
    assert every[-1].config != first[-1].config  # the sample spans the sweep


def test_dry_run_is_honest_for_the_zoo(tmp_path, monkeypatch):
    """resnet50 at batch 1024 cannot fit 23 GiB: the lower bound counts the activations its
    BatchNorms save, not the weights only; and an estimate counts a run's overhead, its steps'
    floor (FLOPs over the device's peak) and the worker's start (issue 22)."""
    from paradnn import api
    from paradnn.api import runs

    monkeypatch.setattr(runs, "device_capacity", lambda device: (23 * 2**30, "cpu"))
    monkeypatch.setattr(runs, "_peak_rate", lambda history, device, precision: 1e11)
    sweep = write_sweep(
        tmp_path / "z.toml",
        [("resnet50", {"batch": 1024}), ("squeezenet1_1", {"batch": 64}), ("fc", TINY["fc"])],
    )
    rows = api.dry_run(str(sweep), device="cpu", db=str(tmp_path / "none.db"))
    by = {r.family: r for r in rows}
    resnet = by["resnet50"]
    assert resnet.fits is False and resnet.predicted_mem_lower_bytes > 30 * 2**30
    assert by["squeezenet1_1"].fits is True
    # 24.9 TFLOP per step at a peak of 100 GFLOP/s: the first, warm-up and timed steps, each
    # ≥ 249 s (not the ≥ 1.3 s of the timing policy's minimum alone)
    assert resnet.est_time_s >= 3 * resnet.flops_per_step / 1e11
    tiny = by["fc"]
    assert tiny.est_time_s >= runs.RUN_OVERHEAD_S and tiny.est_time_is_floor
    total = api.dry_run_total(rows, len(rows), recycle_every=50)
    assert total == pytest.approx(sum(r.est_time_s for r in rows) + runs.WORKER_START_S)
    assert api.dry_run_total(rows, 120, recycle_every=50) == pytest.approx(
        sum(r.est_time_s for r in rows) * 40 + 3 * runs.WORKER_START_S
    )


def test_dry_run_table_says_unlikely_when_only_the_estimate_exceeds():
    from rich.console import Console

    from paradnn.cli import tables

    row = {"family": "fc", "config": {"batch": 2}, "precision": "fp32", "optimizer": "sgd",
           "params": 10, "flops_per_step": 100, "predicted_mem_bytes": 2**30,
           "predicted_mem_lower_bytes": 2**20, "fits": True, "fits_estimate": False,
           "stored": None, "est_time_s": 3.0, "est_time_is_floor": False}  # fmt: skip
    console = Console(width=200, record=True)
    console.print(tables.dry_run_table([row, {**row, "fits": False}], title="t"))
    text = console.export_text()
    assert "unlikely" in text and "│ no " in text and "estimated total 6.0s" in text
