"""Ceilings and op micro-benchmarks: what the device itself reaches (`calibrate`, `ops`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from paradnn.config import RunOptions
from paradnn.errors import ConfigError
from paradnn.store import DEFAULT_DB, open_store


def calibrate(
    device: str = "auto",
    precisions: Sequence[str] | None = None,
    *,
    threads: int | None = None,
    db: str = DEFAULT_DB,
    if_missing: bool = False,
    budget_s: float | None = None,
    allow_emulated: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Measure this device's matmul and memory-bandwidth ceilings and store them; later runs
    on the device report utilization against them. With `if_missing`, a database that already
    holds ceilings of this device in this environment (same fingerprint) is left as it is and
    those rows are returned."""
    from paradnn.measure.calibrate import calibrate as measure_ceilings

    RunOptions(device=device, threads=threads)
    for p in precisions or ():
        RunOptions(precision=p)
    if if_missing:
        from paradnn.measure.calibrate import device_name
        from paradnn.runner.execute import prepare

        _, env = prepare(RunOptions(device=device, threads=threads))
        with open_store(db) as store:
            have = store.rows(
                "ceilings", {"device_name": device_name(env), "fingerprint": env["fingerprint"]}
            )
        if have:
            return have
    rows = measure_ceilings(
        device,
        precisions,
        threads=threads,
        budget_s=budget_s,
        allow_emulated=allow_emulated,
        progress=progress,
    )
    with open_store(db) as store:
        store.insert_rows("ceilings", rows)
    return rows


def ops(
    device: str = "auto",
    precisions: Sequence[str] = ("fp32",),
    *,
    names: Sequence[str] | None = None,
    threads: int | None = None,
    thread_sweep: bool = False,
    db: str = DEFAULT_DB,
    allow_emulated: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """The accelerator study's op micro-benchmarks (Table 4), stored with utilization against
    the datasheet peak and the measured ceiling."""
    from paradnn import utilization
    from paradnn.ops import bench as op_bench

    RunOptions(device=device, threads=threads)
    for p in precisions:
        RunOptions(precision=p)
    if thread_sweep:
        if device not in ("auto", "cpu"):
            raise ConfigError("--thread-sweep", device, "sweeps CPU threads: use --device cpu")
        rows = op_bench.thread_sweep(
            names, precisions=precisions, allow_emulated=allow_emulated, progress=progress
        )
    else:
        rows = op_bench.run_ops(
            device,
            precisions,
            names=names,
            threads=threads,
            allow_emulated=allow_emulated,
            progress=progress,
        )
    with open_store(db) as store:
        for row in rows:
            utilization.fill(row, store)
        store.insert_rows("ops", rows)
    return rows
