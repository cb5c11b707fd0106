"""One run in its own worker process, with a deadline: what a cluster task executes.

A Ray task or a Slurm array element calls `run_one` for each of its configs. It starts a fresh
paradnn worker (the same `spawn`ed process the local supervisor uses), sends it the job, and
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

from paradnn.records import RunRecord, Status
from paradnn.runner.supervisor import _death, _Pool, _stop, _Worker
from paradnn.runner.worker import WorkerSettings


def probe(settings: WorkerSettings) -> dict[str, Any]:
    """The hello of a worker started with `settings` on this machine (environment, capacity)."""
    w = _Pool(settings).start()
    try:
        return w.hello
    finally:
        _stop(w, kill=False)


def run_one(
    message: dict[str, Any],
    record: RunRecord,
    settings: WorkerSettings,
    timeout_s: float,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> RunRecord:
    """Measure one config in a fresh worker; `record` is the pre-filled row used when the worker
    dies or runs past `timeout_s` (it then carries the status and the reason)."""
    try:
        w = _Pool(settings).start()
    except Exception as e:  # a worker that cannot start here: this config's failure, as data
        return record.replace(status=Status.CRASHED, error=f"worker failed to start: {e}")
    try:
        return _wait(w, message, record, timeout_s, on_progress)
    finally:
        _stop(w, kill=w.job is not None)


def _wait(
    w: _Worker,
    message: dict[str, Any],
    record: RunRecord,
    timeout_s: float,
    on_progress: Callable[[dict[str, Any]], None] | None,
) -> RunRecord:
    w.conn.send(message)
    w.job, w.started = True, time.monotonic()  # type: ignore[assignment]
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
                w.job = None
                return msg["record"].replace(worker_index=0)
        if w.process.sentinel in ready or w.conn in ready:
            w.process.join(timeout=5)
            status, error = _death(w.process.exitcode)
            w.job = None
            return record.replace(status=status, error=error, worker_pid=w.process.pid)
        if time.monotonic() >= deadline:
            error = f"no result within {timeout_s:g} s; the worker was killed"
            return record.replace(status=Status.TIMEOUT, error=error, worker_pid=w.process.pid)
