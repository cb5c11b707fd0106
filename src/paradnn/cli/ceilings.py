"""What the device itself reaches: `calibrate` (matmul and bandwidth ceilings) and `ops` (the
accelerator study's op micro-benchmarks)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from paradnn import api
from paradnn.cli import tables
from paradnn.cli.common import (
    DbOpt,
    DeviceOpt,
    EmulatedOpt,
    ThreadsOpt,
    flag_option,
    number_option,
    out,
    parsed,
    precisions_option,
    unique,
)
from paradnn.cli.options import Group, param, takes
from paradnn.cli.progress import say
from paradnn.config import MAX_TIMING_S, MIN_BUDGET_S
from paradnn.errors import ConfigError
from paradnn.store import DEFAULT_DB

ForceOpt = flag_option(
    "--force",
    "Measure every unit again (default: a re-run skips units already measured ok or unsupported "
    "in this environment, and resumes after a crash).",
)
IfMissingOpt = flag_option(
    "--if-missing",
    "Measure only what the database lacks: nothing if it has ceilings of this device and "
    "environment over the current math paths.",
)
BudgetOpt = number_option(
    "--budget",
    MIN_BUDGET_S,
    MAX_TIMING_S,
    "Compute seconds per precision, shared by its paths (default 60): sizes grow while the rate "
    "rises and the next one fits in what is left.",
)
HostOnlyOpt = flag_option(
    "--host-only",
    "Measure only the host profile (about a minute): what the host spends per forward op, "
    "autograd node, optimizer tensor and, on a GPU, kernel launch.",
)
NoHostOpt = flag_option("--no-host", "Measure only the ceilings, not the host profile.")
MatmulPrecisionsOpt = precisions_option("Matmul precisions (default: all the device runs)")
OpPrecisionsOpt = precisions_option("Precisions (default fp32)")
NamesOpt = parsed(
    list[str] | None,
    "--name",
    None,
    "Only these ops, e.g. matmul-4096, conv2d-II (repeatable).",
    callback=unique("--name"),
)
ThreadSweepOpt = flag_option("--thread-sweep", "CPU: repeat at 1, 2, 4 … all cores.")


# Where a kernel command measures and stores, and what it measures again: calibrate's and ops'.
ON = (param("db", DbOpt, DEFAULT_DB), param("device", DeviceOpt, "auto"))
WHERE = Group((*ON, param("threads", ThreadsOpt)), dict)
AGAIN = Group((param("allow_emulated", EmulatedOpt, False), param("force", ForceOpt, False)), dict)


@takes(where=WHERE, again=AGAIN)
def calibrate(
    precision: MatmulPrecisionsOpt = None,
    *,
    where: dict[str, Any],
    if_missing: IfMissingOpt = False,
    budget: BudgetOpt = None,
    again: dict[str, Any],
    host_only: HostOnlyOpt = False,
    no_host: NoHostOpt = False,
) -> None:
    """Measure this device's ceilings and this host's dispatch costs, once per machine.

    The ceilings: the best FLOP/s per precision over the math paths the
    workloads use (matmul, linear with a bias, LSTM) and the memory bandwidth (copy, triad);
    the dispatch costs: the host profile `simulate step` uses. Later runs report
    utilization against the ceilings; runs that beat a ceiling are named, with the advice to
    measure it again."""
    if host_only and no_host:
        raise ConfigError("--host-only", True, "cannot be given with --no-host: give one of them")
    if host_only and (precision or budget is not None or again["allow_emulated"]):
        raise ConfigError(
            "--host-only",
            True,
            "measures no matmuls: leave out --precision, --budget and --allow-emulated",
        )
    if not host_only:
        _ceilings(where, precision, if_missing, budget, again)
    if no_host:
        return
    host = api.calibrate_host(**where, if_missing=if_missing, force=again["force"], progress=say)
    if not host:
        out.print("Host profile: already in the database for this environment (--force: again).")
        return
    kept = if_missing and host[0].get("id") is not None
    title = "host profile" + (" (already in the database)" if kept else "")
    out.print(tables.side_table("host_profile", host, title=title, width=out.width))
    for r in host:
        if r.get("quality") == "noisy":
            reasons = "; ".join(r.get("quality_reasons") or [])
            out.print(f"[yellow]noisy host profile[/]: {escape(reasons)}")
    out.print(f"Stored in [bold]{escape(where['db'])}[/].")


def _ceilings(
    where: dict[str, Any],
    precision: list[str] | None,
    if_missing: bool,
    budget: float | None,
    again: dict[str, Any],
) -> None:
    rows = api.calibrate(
        **where, precisions=precision, if_missing=if_missing, budget_s=budget, **again, progress=say
    )
    db = where["db"]
    if not rows:
        out.print("Nothing to measure: every unit is already in the database (--force: again).")
    else:
        kept = if_missing and rows[0].get("id") is not None
        title = "measured ceilings" + (" (already in the database)" if kept else "")
        out.print(tables.side_table("ceilings", rows, title=title, width=out.width))
        out.print(f"Stored in [bold]{escape(db)}[/].")
    names = {r["device_name"] for r in rows} or {None}
    for name in sorted(names, key=str):
        say_beaten(db, name)


def say_beaten(db: str, device_name: str | None = None) -> None:
    """Each device and precision whose stored runs beat its best ceiling, with the advice to
    measure it again (utilization.beaten_words)."""
    from paradnn.utilization import beaten_words

    for b in api.beaten_ceilings(db, device_name):
        out.print(f"[yellow]{escape(beaten_words(b))}[/]")


@takes(where=WHERE, again=AGAIN)
def ops(
    precision: OpPrecisionsOpt = None,
    name: NamesOpt = None,
    thread_sweep: ThreadSweepOpt = False,
    *,
    where: dict[str, Any],
    again: dict[str, Any],
) -> None:
    """The accelerator study's op micro-benchmarks (its Table 4): matmul 2048/4096/8192 and
    conv2d I/II/III, forward and forward+backward."""
    chosen = {"precisions": precision or ("fp32",), "names": name, "thread_sweep": thread_sweep}
    rows = api.ops(**where, **chosen, **again, progress=say)
    if not rows:
        out.print("Nothing to measure: every op is already in the database (--force: again).")
        return
    out.print(tables.side_table("ops", rows, title=f"ops: {len(rows)} rows", width=out.width))
    out.print(f"Stored in [bold]{escape(where['db'])}[/].")
