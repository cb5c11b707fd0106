"""Ceilings and op micro-benchmarks: what the device itself reaches (`calibrate`, `ops`).

Both run through the sweep supervisor (runner/kernels.py): every unit in an isolated worker, a
crash or hang stored as a row with its status, and a re-run resumes where the last one stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from paradnn.api.returns import Rows, rows
from paradnn.axes import PRECISION
from paradnn.config import check_budget, check_device, check_threads
from paradnn.errors import ConfigError
from paradnn.records import Status
from paradnn.store import DEFAULT_DB, open_store

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.runner.supervisor import Event

Say = Callable[[str], None]


def calibrate(
    device: str = "auto",
    precisions: Sequence[str] | None = None,
    *,
    threads: int | None = None,
    db: str = DEFAULT_DB,
    if_missing: bool = False,
    budget_s: float | None = None,
    allow_emulated: bool = False,
    force: bool = False,
    progress: Say | None = None,
    paths: Sequence[str] | None = None,
) -> Rows:
    """Measure this device's compute ceilings (the best rate per precision over the
    math-library paths the workloads use: `paths`, default the device type's, docs/ops.md)
    and its memory bandwidth, and store them; later runs on the device report utilization
    against them. Units already measured in this environment are skipped (`force` measures
    them again). With `if_missing`, a database that already holds ceilings of this
    environment (same fingerprint) over these paths is left as it is and those rows returned.
    Afterwards every stored run of the device is put against the best ceiling stored now
    (`utilization.restate`: a ceiling measured higher clears the † of runs that beat the old
    one); `progress` hears what changed."""
    from paradnn import utilization
    from paradnn.measure.mathpaths import check_paths
    from paradnn.runner import kernels

    if paths is not None:
        check_paths(paths)

    check_device(device)
    check_threads(threads)
    for p in precisions or ():
        PRECISION.check(p)
    check_budget(budget_s)
    with open_store(db, lazy=True) as store:
        measured = kernels.calibrate(
            store,
            device,
            precisions,
            threads=threads,
            budget_s=budget_s,
            allow_emulated=allow_emulated,
            force=force,
            if_missing=if_missing,
            on_event=_reporter(progress),
            paths=paths,
        )
        if store.exists():  # stored runs against the best ceiling now (utilization.restate)
            for r in utilization.restate(store):
                if progress is not None:
                    progress(r.words())
    return rows("ceilings", measured)


def beaten_ceilings(db: str = DEFAULT_DB, device_name: str | None = None) -> Rows:
    """Per device and precision, the ok runs faster than the best compute ceiling stored now
    (utilization.beaten_ceilings): each row says the ceiling, the path and shape that set it,
    how many runs beat it and the fastest; empty when no ceiling is beaten. `calibrate` and
    `results` print them with the advice to measure again (`paradnn calibrate --force`)."""
    from paradnn import utilization

    with open_store(db, readonly=True) as store:
        found = utilization.beaten_ceilings(store, device_name)
    return rows("beaten_ceilings", [b.as_dict() for b in found])


def calibrate_host(
    device: str = "auto",
    *,
    threads: int | None = None,
    db: str = DEFAULT_DB,
    if_missing: bool = False,
    force: bool = False,
    progress: Say | None = None,
) -> Rows:
    """Measure this host's dispatch costs (per forward op, autograd node, optimizer tensor,
    step() call; on a GPU the launch and sync) and store them as a `host_profile` row: the
    step-time model's host timeline uses the newest one of this host (docs/simulate.md, "The
    host profile"). A profile already measured in this environment is kept (`force`: again);
    with `if_missing` it comes back instead of a new one."""
    from paradnn.runner import kernels

    check_device(device)
    check_threads(threads)
    with open_store(db, lazy=True) as store:
        measured = kernels.host_profile(
            store,
            device,
            threads=threads,
            force=force,
            if_missing=if_missing,
            on_event=_reporter(progress),
        )
    return rows("host_profile", measured)


def ops(
    device: str = "auto",
    precisions: Sequence[str] = ("fp32",),
    *,
    names: Sequence[str] | None = None,
    threads: int | None = None,
    thread_sweep: bool = False,
    db: str = DEFAULT_DB,
    allow_emulated: bool = False,
    force: bool = False,
    progress: Say | None = None,
) -> Rows:
    """The accelerator study's op micro-benchmarks (Table 4), each in an isolated worker,
    stored with utilization against the datasheet peak and the measured ceiling."""
    from paradnn.ops.table4 import default_threads_list
    from paradnn.runner import kernels

    check_device(device)
    check_threads(threads)
    for p in precisions:
        PRECISION.check(p)
    if thread_sweep:
        if device not in ("auto", "cpu"):
            raise ConfigError("--thread-sweep", device, "sweeps CPU threads: use --device cpu")
        counts: Sequence[int | None] = default_threads_list()
        device = "cpu"
    else:
        counts = (threads,)
    with open_store(db, lazy=True) as store:
        measured = kernels.ops(
            store,
            device,
            precisions,
            names=names,
            threads=counts,
            allow_emulated=allow_emulated,
            force=force,
            on_event=_reporter(progress),
        )
    return rows("ops", measured)


def _reporter(progress: Say | None) -> Callable[[Event], None] | None:
    """Supervisor events as lines: each unit's news and its stored outcome."""
    if progress is None:
        return None

    last: dict[str, Any] = {"msg": None, "t": 0.0}

    def hear(e: Event) -> None:
        if e.kind == "start":
            for note in e.notes:
                progress(note)
            done = f"; {e.skipped} already measured in this environment" if e.skipped else ""
            progress(f"{e.total} units to measure, each in a worker{done}")
        elif e.kind == "progress" and e.progress and e.progress.get("phase"):
            msg, now = str(e.progress["phase"]), time.monotonic()
            if msg != last["msg"]:  # news
                progress(msg)
                last.update(msg=msg, t=now)
            elif now - last["t"] >= 5.0:  # a heartbeat of a long kernel: say it still runs
                label = getattr(e.running[0], "label", "") if e.running else ""
                progress(f"{label}: still running ({e.progress.get('elapsed_s', 0):.0f} s)")
                last["t"] = now
        elif e.kind == "result" and e.row is not None and e.row.get("status") != Status.OK:
            progress(f"[{e.done}/{e.total}] {e.row['status']}: {e.row.get('error')}")

    return hear
