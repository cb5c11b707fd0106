"""Data-parallel runs end to end on CPU with 2 gloo ranks (docs/scaling.md): `paradnn scale`
stores N = 1 and N = 2 with every measured field, a killed rank or a killed worker leaves a
row and no process behind, and torchrun's rendezvous runs the same rank entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paradnn import api, host
from paradnn.store import open_store

from conftest import TINY_POLICY, run_cli

pytestmark = pytest.mark.slow
FC = {"layers": 1, "nodes": 32, "batch": 8}
TWO_CORES = pytest.mark.skipif(len(host.usable_cpus()) < 2, reason="needs 2 usable CPU cores")
QUICK = ["--min-time", "0", "--max-time", "0.2"]


def _ours(marker: str) -> list[str]:
    """Processes (other than pytest itself) whose command line names `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmd:
            found.append(f"{pid}: {cmd[:200]}")
    return found


def _no_orphans(marker: str) -> None:
    deadline = time.monotonic() + 5  # PR_SET_PDEATHSIG is asynchronous: a moment to land
    while _ours(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ours(marker) == []


@TWO_CORES
def test_scale_stores_n1_and_n2_with_the_parallel_fields(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the ranks' job files: ours to find
    db = tmp_path / "s.db"
    code, out, err = run_cli(
        capsys, "scale", "fc", "layers=1", "nodes=32", "batch=8", "--procs", "1,2",
        "--device", "cpu", "--db", str(db), *QUICK,
    )  # fmt: skip
    assert code == 0, err
    assert "N = 2 (ddp, weak): speedup" in out and "Karp–Flatt e =" in out
    assert "simulator check" in out
    with open_store(str(db), readonly=True) as store:
        rows = {r["procs"]: r for r in store.runs()}
    assert set(rows) == {1, 2} and {r["status"] for r in rows.values()} == {"ok"}
    two = rows[2]
    assert (two["strategy"], two["scaling"], two["dist_backend"]) == ("ddp", "weak", "gloo")
    assert (two["global_batch"], two["rank_batch"], two["rank_threads"], two["threads"]) == (
        16, 8, 1, 1,
    )  # fmt: skip
    assert rows[1]["threads"] == 1  # the baseline had the device of one rank
    for col in ("step_time_s", "compute_nosync_s", "allreduce_s", "allreduce_algbw"):
        assert two[col] > 0, col
    assert two["allreduce_busbw"] == pytest.approx(two["allreduce_algbw"])  # n = 2: 2(n−1)/n = 1
    assert two["allreduce_bytes"] == 4 * (2000 * 32 + 32 + 32 * 1000 + 1000)  # fp32 gradients
    assert 0.0 <= two["overlap_frac"] <= 1.0
    assert two["examples_per_s"] == pytest.approx(16 / two["step_time_s"])
    assert two["parallel"]["rank_cpus"] == [[c] for c in host.usable_cpus()[:2]]
    assert len(two["parallel"]["per_rank_step_s"]) == 2
    assert rows[1]["run_key"] != two["run_key"]
    _no_orphans(str(tmp_path))


@TWO_CORES
def test_a_killed_rank_ends_the_run_crashed_with_its_error_and_no_process_left(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("PARADNN_FAULT_RANK", "1=SIGKILL")
    t0 = time.monotonic()
    rec = api.bench(
        "fc", FC, device="cpu", threads=1, procs=2, timing=TINY_POLICY, timeout_s=120,
        db=str(tmp_path / "k.db"),
    )  # fmt: skip
    assert rec.status == "crashed" and rec.failed_rank == 1
    assert rec.error.startswith("rank 1 died with signal SIGKILL"), rec.error
    assert time.monotonic() - t0 < 60  # ended by the watchdog, not by the 120 s timeout
    with open_store(str(tmp_path / "k.db"), readonly=True) as store:
        (row,) = store.runs()
    assert row["status"] == "crashed" and row["failed_rank"] == 1 and row["procs"] == 2
    _no_orphans(str(tmp_path))


@TWO_CORES
def test_a_hung_rank_is_killed_with_its_worker_at_the_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("PARADNN_FAULT_RANK", "1=hang")  # rank 0 then waits in a collective
    rec = api.bench(
        "fc", FC, device="cpu", threads=1, procs=2, timing=TINY_POLICY, timeout_s=12,
        db=str(tmp_path / "h.db"),
    )  # fmt: skip
    assert rec.status == "timeout" and rec.procs == 2
    _no_orphans(str(tmp_path))  # the supervisor killed the worker: its ranks died with it


@TWO_CORES
def test_torchrun_rendezvous_runs_the_rank_entry_point_on_one_machine(tmp_path):
    db = tmp_path / "t.db"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
        "--nproc-per-node=2", "-m", "paradnn.runner.rank", "fc", "layers=1", "nodes=32",
        "batch=8", "--db", str(db), "--threads", "1", *QUICK, "--json",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    row = json.loads(done.stdout.strip().splitlines()[-1])
    assert (row["status"], row["procs"], row["dist_backend"]) == ("ok", 2, "gloo")
    assert row["allreduce_s"] > 0 and row["parallel"]["launcher"] == "torchrun"
    with open_store(str(db), readonly=True) as store:
        assert [r["procs"] for r in store.runs()] == [2]


def test_the_torchrun_entry_takes_its_axes_as_declared(capsys):
    """`python -m paradnn.runner.rank` reads --precision, --optimizer, --strategy, --scaling as
    paradnn/axes.py declares them (words and defaults): a word the axis lacks is refused,
    exit 2, before torch loads."""
    from paradnn.axes import BY_FIELD
    from paradnn.runner import rank

    with pytest.raises(SystemExit) as done:
        rank.launched(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0
    for field in rank.TORCHRUN_AXES:
        axis = BY_FIELD[field]
        assert f"{axis.flag} {{{','.join(axis.allowed())}}}" in shown
    with pytest.raises(SystemExit) as done:
        rank.launched(["fc", "--strategy", "zero3"])
    assert done.value.code == 2 and "invalid choice: 'zero3'" in capsys.readouterr().err
