"""What the device itself reaches: `calibrate` (matmul and bandwidth ceilings) and `ops` (the
accelerator study's op micro-benchmarks)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from paradnn import api, tables
from paradnn.cli.common import (
    PRECISION,
    DbOpt,
    DeviceOpt,
    EmulatedOpt,
    ThreadsOpt,
    number,
    out,
    unique,
)
from paradnn.cli.progress import say
from paradnn.config import MAX_TIMING_S, MIN_BUDGET_S
from paradnn.store import DEFAULT_DB

ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Measure every unit again (default: a re-run skips units already measured ok or "
        "unsupported in this environment, and resumes after a crash).",
    ),
]


def calibrate(
    precision: Annotated[
        list[str] | None,
        typer.Option(
            "--precision",
            "-p",
            parser=PRECISION,
            callback=unique("--precision"),
            help="Matmul precisions (default: all the device runs).",
        ),
    ] = None,
    db: DbOpt = DEFAULT_DB,
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    if_missing: Annotated[
        bool,
        typer.Option(
            "--if-missing",
            help="Measure only if the database has no ceilings of this device and environment.",
        ),
    ] = False,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            parser=number("--budget", MIN_BUDGET_S, MAX_TIMING_S),
            help="Seconds of matmuls per precision (default 60): sizes grow while the next one "
            "fits in what is left.",
        ),
    ] = None,
    allow_emulated: EmulatedOpt = False,
    force: ForceOpt = False,
) -> None:
    """Measure this device's ceilings: large-matmul FLOP/s per precision and memory bandwidth
    (copy, triad). Later runs report utilization against them."""
    rows = api.calibrate(
        device,
        precision,
        threads=threads,
        db=db,
        if_missing=if_missing,
        budget_s=budget,
        allow_emulated=allow_emulated,
        force=force,
        progress=say,
    )
    if not rows:
        out.print("Nothing to measure: every unit is already in the database (--force: again).")
        return
    kept = if_missing and rows[0].get("id") is not None
    title = "measured ceilings" + (" (already in the database)" if kept else "")
    out.print(tables.side_table("ceilings", rows, title=title))
    out.print(f"Stored in [bold]{escape(db)}[/].")


def ops(
    precision: Annotated[
        list[str] | None,
        typer.Option(
            "--precision",
            "-p",
            parser=PRECISION,
            callback=unique("--precision"),
            help="Precisions (default fp32).",
        ),
    ] = None,
    name: Annotated[
        list[str] | None,
        typer.Option(
            "--name",
            callback=unique("--name"),
            help="Only these ops, e.g. matmul-4096, conv2d-II (repeatable).",
        ),
    ] = None,
    thread_sweep: Annotated[
        bool, typer.Option("--thread-sweep", help="CPU: repeat at 1, 2, 4 … all cores.")
    ] = False,
    db: DbOpt = DEFAULT_DB,
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    allow_emulated: EmulatedOpt = False,
    force: ForceOpt = False,
) -> None:
    """The accelerator study's op micro-benchmarks (its Table 4): matmul 2048/4096/8192 and
    conv2d I/II/III, forward and forward+backward."""
    rows = api.ops(
        device,
        precision or ("fp32",),
        names=name,
        threads=threads,
        thread_sweep=thread_sweep,
        db=db,
        allow_emulated=allow_emulated,
        force=force,
        progress=say,
    )
    if not rows:
        out.print("Nothing to measure: every op is already in the database (--force: again).")
        return
    out.print(tables.side_table("ops", rows, title=f"ops: {len(rows)} rows"))
    out.print(f"Stored in [bold]{escape(db)}[/].")
