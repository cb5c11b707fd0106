"""A worker process: measures the units of work the supervisor sends, one at a time.

Started with the `spawn` method (never fork after CUDA initialisation). It imports torch only
after pinning its threads and CPUs, reports its environment and memory capacity in a hello,
then answers each unit (runner/units.py) with its outcome: a run's record, a kernel's row. It
dies with its parent (PR_SET_PDEATHSIG), so a `kill -9` of the supervisor never leaves a
worker measuring into the void.

It does nothing twice: the objects its imports made are frozen out of Python's cyclic garbage
collector (`gc.freeze`: torch, its dynamo and sympy are ~300,000 objects), so each run's
clean-up collection scans only what runs left behind (0.3 s a run otherwise) and no collection
of the whole heap lands inside a timed block; and it ends with `os._exit` once its pipe closes,
skipping the interpreter's teardown of torch (~1 s that nobody waits on for a result).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import signal
import sys
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any


@dataclass(frozen=True)
class WorkerSettings:
    device: str
    threads: int | None
    cpus: tuple[int, ...] | None = None  # CPU affinity; None keeps the parent's
    # host.ThreadsChoice.as_dict(): the supervisor's choice from the machine's load, whose
    # `threads` is this worker's default and which each record's env keeps (threads_choice)
    threads_choice: dict[str, Any] | None = None


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:  # pragma: no cover - not glibc Linux
        pass


def host_memory_bytes() -> int:
    from paradnn import host

    return host.memory_bytes()


def host_free_bytes() -> int | None:
    from paradnn import host

    return host.available_memory_bytes()


def main(conn: Connection, settings: WorkerSettings) -> None:
    _serve(conn, settings)
    # every outcome is sent: leave without the interpreter's teardown (modules, torch's
    # allocators and thread pools: ~1 s that the supervisor would wait for in `_stop`); an
    # exception above still ends the usual way, with its traceback
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _serve(conn: Connection, settings: WorkerSettings) -> None:
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the supervisor's to handle
    if settings.cpus:
        os.sched_setaffinity(0, settings.cpus)
    if settings.threads:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(settings.threads)

    import torch

    from paradnn.errors import ParadnnError
    from paradnn.measure.environment import note_threads_choice, prepare

    note_threads_choice(settings.threads_choice)
    try:
        device, env = prepare(settings.device, settings.threads)
    except ParadnnError as e:  # e.g. --device cuda on a machine without one
        conn.send({"type": "error", "message": str(e)})
        return
    if device.type == "cuda":
        capacity, kind = torch.cuda.get_device_properties(device).total_memory, "device"
        free: int | None = None  # unreadable (an old driver, a fake device): the run's check
        with contextlib.suppress(Exception):  # decides without it, as documented
            free = int(torch.cuda.mem_get_info(device)[0])
    else:
        capacity, kind = host_memory_bytes(), "host"
        free = host_free_bytes()
    conn.send(
        {
            "type": "hello",
            "pid": os.getpid(),
            "env": env,
            "capacity_bytes": capacity,
            "capacity_kind": kind,
            "free_bytes": free,  # what a run can take now: the memory check's (memory.check)
        }
    )
    gc.freeze()  # the imports' objects (their garbage too: a few kB, kept for good)
    index = 0
    while True:
        try:
            unit: Any = conn.recv()  # a unit of work (runner/units.py), or None: stop
        except (EOFError, OSError):
            return
        if unit is None:
            return

        def progress(info: dict[str, Any], unit_id: int = unit.id) -> None:
            # the supervisor may be gone: then the unit's outcome decides, not its progress
            with contextlib.suppress(OSError, ValueError):
                conn.send({"type": "progress", "id": unit_id, **info})

        _warm(unit, progress)
        outcome = ANSWERS[unit.answer](unit, settings, progress, index)
        index += 1
        conn.send({"type": "result", "id": unit.id, "outcome": outcome})
        # the unit's garbage collected (cheap: only what was made since the last freeze), what
        # it imported or cached for good frozen with the rest
        gc.collect()
        gc.freeze()


# What a torch run imports on its first use (the optimizer's step pulls in torch._dynamo, ~1 s
# and ~200,000 objects): imported before the first such run and frozen with the rest, so that
# run's clean-up collection does not scan them (the run would import them anyway).
TORCH_RUN_IMPORTS = ("torch._dynamo", "torch.utils.flop_counter", "paradnn.runner.execute")
_warmed: set[str] = set()


def _warm(unit: Any, progress: Any) -> None:
    if unit.answer != "run" or "torch" in _warmed:
        return
    from paradnn.runner.core import backend_name

    if backend_name(unit.options) != "torch":
        return
    import importlib

    progress({"phase": "importing torch's optimizer and compiler modules"})
    for name in TORCH_RUN_IMPORTS:
        importlib.import_module(name)
    _warmed.add("torch")
    gc.freeze()


def _run(unit: Any, settings: WorkerSettings, progress: Any, index: int) -> Any:
    """A training run (runner/units.RunUnit): the supervisor's prepared record, measured here
    (runner/core.py)."""
    from paradnn.runner.core import measure_run

    rec = measure_run(unit.record, unit.options, progress)
    return rec.replace(worker_pid=os.getpid(), worker_index=index)


def _kernel(unit: Any, settings: WorkerSettings, progress: Any, index: int) -> Any:
    """One ceiling or op (runner/tasks.py); an exception is the unit's failure, never the
    worker's."""
    from paradnn.measure.faults import classify, one_line
    from paradnn.records import Status
    from paradnn.runner.tasks import run_kernel

    try:
        row = run_kernel(
            unit.kind,
            unit.params,
            unit.label,
            settings.device,
            settings.threads,
            progress=lambda words: progress({"phase": words}),
        )
    except Exception as e:  # every failure becomes data
        return {"status": classify(e), "error": one_line(e)}
    if row is None:
        return {"status": Status.CRASHED, "error": "no size could be measured (every one failed)"}
    return row


# What a worker does with each kind of unit (runner/units.py: a unit's `answer` names it).
ANSWERS = {"run": _run, "kernel": _kernel}
