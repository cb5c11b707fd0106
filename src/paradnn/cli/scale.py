"""`paradnn scale`: one configuration at N = 1, 2, … data-parallel ranks (docs/scaling.md),
and the `--procs` option `run` and `bench` share."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from paradnn import api, families, tables
from paradnn.cli.common import (
    PRECISION,
    TIMEOUT,
    AssignmentsArg,
    DbOpt,
    DeviceOpt,
    EmulatedOpt,
    MaxTimeOpt,
    MinTimeOpt,
    OptimizerOpt,
    ThreadsOpt,
    choice,
    integer,
    out,
    timing,
)
from paradnn.cli.progress import exit_if_nothing_measured, say, warn_noisy
from paradnn.config import MAX_PROCS, SCALINGS, STRATEGIES
from paradnn.errors import ConfigError, OptionError
from paradnn.measure.timer import progress_words
from paradnn.records import Status
from paradnn.store import DEFAULT_DB
from paradnn.validate import parse_int

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.api.scaling import Scaled
    from paradnn.runner.supervisor import Event

ProcsListOpt = Annotated[
    str | None,
    typer.Option(
        "--procs",
        help="Data-parallel processes, comma-separated (e.g. 1,2): one run each "
        "(docs/scaling.md). Default: the sweep's (1).",
    ),
]
ProcsOpt = Annotated[
    int,
    typer.Option(
        "--procs",
        parser=integer("--procs", 1, MAX_PROCS),
        help="Data-parallel processes (ranks); docs/scaling.md.",
    ),
]
StrategyOpt = Annotated[
    str,
    typer.Option(
        "--strategy",
        parser=choice("--strategy", STRATEGIES),
        help="ddp (DistributedDataParallel) or fsdp (FSDP2).",
    ),
]
ScalingOpt = Annotated[
    str,
    typer.Option(
        "--scaling",
        parser=choice("--scaling", SCALINGS),
        help="weak (batch per rank) or strong (the batch split across the ranks).",
    ),
]


def parse_procs(text: str | None) -> list[int] | None:
    """`1,2,4` → [1, 2, 4]: each an integer in [1, MAX_PROCS], each once, at most
    MAX_PROCS_LIST of them; one line naming --procs and the value otherwise."""
    if text is None:
        return None
    from paradnn.api.scaling import MAX_PROCS_LIST, check_procs

    allowed = f"comma-separated integers in [1, {MAX_PROCS}], each once, e.g. 1,2,4"
    words = text.split(",")
    if len(words) > MAX_PROCS_LIST:
        raise OptionError("--procs", text, f"at most {MAX_PROCS_LIST} values")
    try:
        values = [parse_int("--procs", w, 1, MAX_PROCS) for w in words]
    except ConfigError as e:  # an integer out of range is named alone; other words, the list
        if isinstance(e.value, int):
            raise OptionError("--procs", e.value, e.allowed) from None
        raise OptionError("--procs", text, allowed) from None
    repeated = next((n for i, n in enumerate(values) if n in values[:i]), None)
    if repeated is not None:  # `1,1`: a typo, not two measurements
        raise OptionError("--procs", text, f"each value once ({repeated} is given twice)")
    try:
        return check_procs(values)
    except ConfigError as e:
        raise OptionError("--procs", text, e.allowed) from None


def scale(
    family: Annotated[str, typer.Argument(help=f"Model family: {', '.join(families.names())}.")],
    assignments: AssignmentsArg = None,
    procs: Annotated[
        str,
        typer.Option("--procs", help="Process counts, comma-separated (N = 1 first), each once."),
    ] = "1,2",
    strategy: StrategyOpt = "ddp",
    scaling: ScalingOpt = "weak",
    precision: Annotated[
        str, typer.Option("--precision", "-p", parser=PRECISION, help="fp32, tf32, bf16 or fp16.")
    ] = "fp32",
    db: DbOpt = DEFAULT_DB,
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    optimizer: OptimizerOpt = "rmsprop",
    min_time: MinTimeOpt = None,
    max_time: MaxTimeOpt = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", parser=TIMEOUT, help="Seconds each run may take before it is killed."
        ),
    ] = 900.0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the scaling table as JSON.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Run even when the ranks' predicted memory cannot fit in what the device has "
            "free (without it: refused, exit 2, before any work).",
        ),
    ] = False,
    allow_emulated: EmulatedOpt = False,
) -> None:
    """Measure one configuration at each N data-parallel processes; print speedup, efficiency,
    Karp–Flatt, the all-reduce's bandwidth and the simulator's error against them. Refused
    before any work like `bench` (a precision the device lacks, memory that cannot fit); exit
    1 when no run measured anything."""
    from paradnn.validate import parse_assignments

    values = parse_assignments(assignments or [], what=f"{family} config")
    ns = parse_procs(procs)
    last = [0.0]

    def heard(e: Event) -> None:
        import time

        if e.kind == "progress" and e.progress and time.monotonic() - last[0] >= 2.0:
            last[0] = time.monotonic()
            say(f"scale {family}: {progress_words(e.progress)}")

    res = api.scale(
        family,
        values,
        procs=ns or [1, 2],
        strategy=strategy,
        scaling=scaling,
        precision=precision,
        optimizer=optimizer,
        device=device,
        threads=threads,
        timing=timing(min_time, max_time),
        timeout_s=timeout,
        db=db,
        on_event=heard,
        force=force,
        allow_emulated=allow_emulated,
    )
    rows = [r.as_dict() for r in res.records]
    if as_json:
        shown = res.table.drop(columns=["allreduce_ladder"], errors="ignore")
        sys.stdout.write(shown.to_json(orient="records") + "\n")
        exit_if_nothing_measured(r["status"] for r in rows)
        return
    out.print(tables.rich_table(rows, title=f"paradnn scale {family}: {len(rows)} runs"))
    for r in rows:
        if r["status"] != Status.OK:
            out.print(f"N = {r['procs']}: [bold]{r['status']}[/]: {escape(str(r['error']))}")
    for line in lines(res):
        out.print(line)
    warn_noisy(rows)
    db = escape(db)
    out.print(f"Stored in [bold]{db}[/]. The report's scaling section: `paradnn report --db {db}`.")
    exit_if_nothing_measured(r["status"] for r in rows)


def _ms(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{1e3 * x:.3g} ms"


def _bw(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x / 1e9:.3g} GB/s"


def _x(v: Any) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}×"


def _share(v: Any) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.0%}"


def lines(res: Scaled) -> list[str]:
    """One line per N > 1: speedup, efficiency, e, the all-reduce and its bandwidths."""
    out_lines = []
    for _, r in res.table.iterrows():
        ci = (
            tables.ci_text((r.speedup_high - r.speedup_low) / 2 / r.speedup) + " (95% CI)"
            if r.speedup_low is not None and not math.isnan(r.speedup_low) and r.speedup
            else ""
        )
        out_lines.append(
            f"N = {r.procs} ({r.strategy}, {r.scaling}): speedup {r.speedup:.2f}×{ci}, "
            f"efficiency {r.efficiency:.0%}, Karp–Flatt e = {r.karp_flatt:.3f}; step "
            f"{_ms(r.step_time_s)}, no_sync compute {_ms(r.compute_nosync_s)}, all-reduce of "
            f"{(r.allreduce_bytes or 0) / 1e6:.3g} MB {_ms(r.allreduce_s)} (busbw "
            f"{_bw(r.allreduce_busbw)}), overlap {r.overlap_frac:.0%}; a rank's compute "
            f"{_x(r.compute_inflation)} the single process's step, "
            f"{_share(r.comm_exposed_frac)} of the step past it"
        )
    for _, f in res.fits.iterrows():
        if f.serial_fraction is not None and not math.isnan(f.serial_fraction):
            ci = (  # a fraction near 0: its CI's half-width as an absolute ±, not a percentage
                f" ±{(f.ci_high - f.ci_low) / 2:.3f} (95% CI)"
                if f.ci_low is not None and not math.isnan(f.ci_low)
                else ""
            )
            out_lines.append(f"Amdahl serial fraction f = {f.serial_fraction:.3f}{ci} ({f.method})")
    out_lines.append(res.check.summary())
    if not len(res.table):
        out_lines.append("No N > 1 run with an N = 1 run to compare (both must finish ok).")
    return out_lines
