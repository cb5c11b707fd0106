"""One run in its own worker process, with a deadline: what a cluster task executes.

A Ray task or a Slurm array element calls `run_one` for each of its configs. It starts a fresh
paradnn worker (the same `spawn`ed process the local supervisor uses), sends it the unit, and
waits for the result, the worker's death or the deadline, judged exactly as the local
supervisor judges them (`timeout`, `crashed`, `oom` from SIGKILL). So a hang or a crashed CUDA
context is contained by killing one process, never by relying on the engine's cancellation,
and a cluster run's row means what a local one means. Torch-free: the worker imports torch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any

from paradnn.records import Status
from paradnn.runner.supervisor import _death, _Pool, _stop, _Worker
from paradnn.runner.units import Unit
from paradnn.runner.worker import WorkerSettings


def probe(settings: WorkerSettings) -> dict[str, Any]:
    """The hello of a worker started with `settings` on this machine (environment, capacity)."""
    w = _Pool(settings).start()
    try:
        return w.hello
    finally:
        _stop(w, kill=False)


def run_one(
    unit: Unit,
    settings: WorkerSettings,
    timeout_s: float,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> Any:
    """Measure one unit in a fresh worker; its outcome, or the unit's failure when the worker
    dies, runs past `timeout_s` or cannot start (with the status and the reason)."""
    try:
        w = _Pool(settings).start()
    except Exception as e:  # a worker that cannot start here: this unit's failure, as data
        return unit.failed(Status.CRASHED, f"worker failed to start: {e}")
    try:
        return _wait(w, unit, timeout_s, on_progress)
    finally:
        _stop(w, kill=w.unit is not None)


def _wait(
    w: _Worker,
    unit: Unit,
    timeout_s: float,
    on_progress: Callable[[dict[str, Any]], None] | None,
) -> Any:
    w.conn.send(unit)
    w.unit, w.started = unit, time.monotonic()
    deadline = w.started + timeout_s
    while True:
        ready = wait([w.conn, w.process.sentinel], max(0.0, deadline - time.monotonic()))
        if w.conn in ready:
            try:
                msg = w.conn.recv()
            except (EOFError, OSError):
                msg = None
            if msg is not None and msg.get("type") == "progress":
                if on_progress is not None:
                    on_progress(msg)
                continue
            if msg is not None:
                w.unit = None
                return msg["outcome"].replace(worker_index=0)
        if w.process.sentinel in ready or w.conn in ready:
            w.process.join(timeout=5)
            status, error = _death(w.process.exitcode)
            w.unit = None
            return unit.failed(status, error, pid=w.process.pid)
        if time.monotonic() >= deadline:
            error = f"no result within {timeout_s:g} s; the worker was killed"
            return unit.failed(Status.TIMEOUT, error, pid=w.process.pid)
