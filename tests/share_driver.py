"""Helpers run in other processes by tests/test_shared_db.py: a sweep into a shared database
(`python share_driver.py DB GATE N`) and a bare first open of a database (`open_once`).

The sweep waits at its `start` event (workers up, every configuration planned) until N
sweeps have reached theirs, so the N sweeps begin measuring together, each having planned
the whole sweep: without claims each would measure all of it. Torch is left to the workers."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from paradnn.config import RunOptions, RunSpec, SweepSettings, TimingPolicy
from paradnn.runner.supervisor import Supervisor
from paradnn.store import open_store

POLICY = TimingPolicy(  # conftest's TINY_POLICY, without importing torch here
    min_samples=5,
    min_time_s=0.0,
    max_time_s=0.2,
    warmup_min_steps=2,
    warmup_min_time_s=0.0,
    warmup_max_steps=12,
    warmup_max_time_s=0.5,
    target_ci_rel=0.5,
)

OPTIONS = RunOptions(device="cpu", threads=1, timing=POLICY)
SPECS = [
    RunSpec("fc", {"layers": 1, "nodes": n, "input": 8, "output": 3, "batch": 2}, OPTIONS)
    for n in range(4, 16)
]


def sweep(db: str, gate: str, n: int) -> dict:
    planned: list[int] = []
    notes: list[str] = []

    def heard(e) -> None:
        if e.kind == "start":
            planned.append(e.total)
            Path(gate, f"ready-{os.getpid()}").touch()
            deadline = time.monotonic() + 300
            while len(list(Path(gate).glob("ready-*"))) < n and time.monotonic() < deadline:
                time.sleep(0.05)
        if e.kind == "note":
            notes.extend(e.notes)

    with open_store(db, lazy=True) as store:
        sup = Supervisor(store, OPTIONS, SweepSettings(), sweep="shared", on_event=heard)
        records = sup.run(SPECS)
    return {"pid": os.getpid(), "planned": planned[0], "stored": len(records), "notes": notes}


def open_once(path: str, go: object, out: object) -> None:
    """Open `path` for writing when `go` (a multiprocessing Event) is set; put "ok" or the
    error's line on `out` (a Queue)."""
    go.wait()
    try:
        with open_store(path) as store:
            store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()
        out.put("ok")
    except Exception as e:
        out.put(f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    print(json.dumps(sweep(sys.argv[1], sys.argv[2], int(sys.argv[3]))), flush=True)
