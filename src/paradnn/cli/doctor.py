"""`paradnn doctor`: what this machine is, and a few seconds of checks that its numbers can be
trusted; what a bug report attaches (`--json`)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import typer

from paradnn import api
from paradnn.cli.common import (
    DeviceOpt,
    err,
    flag_option,
    number_option,
    out,
    parsed,
    path,
)

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.api.returns import DoctorReport

STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


BudgetOpt = number_option(
    "--budget",
    1.0,
    600.0,
    "Seconds for the whole command, its start-up included (1–600; default 5 on a CPU, 10 on a "
    "GPU); a check that would not fit in what is left is skipped.",
    show_default=False,
)
ChecksOpt = flag_option("--checks/--no-checks", "Run the sanity checks after the facts.")
CeilingsDbOpt = parsed(
    str | None,
    "--db",
    path("--db"),
    "The database whose stored ceilings the checks compare with (default: paradnn.db when it "
    "exists here).",
    show_default=False,
)
DoctorJsonOpt = flag_option("--json", "One JSON object (stable keys; null with a reason in nulls).")


def doctor(
    device: DeviceOpt = "auto",
    budget: BudgetOpt = None,
    checks: ChecksOpt = True,
    db: CeilingsDbOpt = None,
    as_json: DoctorJsonOpt = False,
) -> None:
    """Say what this machine is and check that it can measure, each check pass, warn, fail or
    skip with what to do.

    What it is: device, driver, CUDA/cuDNN/NCCL, torch and JAX, CPU and ISA,
    native precisions, clocks, power limit, persistence, MIG, ECC, free memory, whether power
    can be read. The checks: the timer against a
    synchronised wall clock, a matmul per native precision and the memory copy against the
    datasheet or derived peak and against the ceilings `calibrate` stored, a power reading,
    other processes. Exit status 1 when a check fails."""
    from paradnn import host

    startup = host.process_age_s() or 0.0  # Python and its imports: part of the budget
    say = None if as_json else (lambda msg: err.print(f"[dim]{msg}[/]", highlight=False))
    report = api.doctor(
        device, budget_s=budget, checks=checks, progress=say, db=db, startup_s=startup
    )
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=1, default=str) + "\n")
    else:
        _print(report)
    if report.failed:
        raise typer.Exit(1)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _value(v: Any, key: str, nulls: dict[str, str]) -> str:
    return _fmt(v) if v is not None else f"n/a ({nulls.get(key, 'unknown')})"


def _print(r: DoctorReport) -> None:
    from rich.table import Table

    nulls = r.nulls
    t = Table(title=f"paradnn doctor: {r.device} ({r.device_name})", show_header=False)
    t.add_column("fact", style="bold")
    t.add_column("value", overflow="fold")
    for k, v in r.software.items():
        t.add_row(k, _value(v, f"software.{k}", nulls))
    cpu = r.cpu
    t.add_row("cpu", f"{cpu['model']} ({cpu['usable_cpus']} usable of {cpu['logical_cpus']})")
    flags = " ".join(f for f, on in cpu["flags"].items() if on) or "none of interest"
    caps = " ".join(f"{k}={v}" for k, v in cpu["isa_caps"].items())
    t.add_row("isa", f"{cpu['isa']}; {flags}" + (f"; caps {caps}" if caps else ""))
    mem = cpu["memory_available_bytes"]
    t.add_row(
        "host memory",
        f"{cpu['memory_bytes'] / 1e9:.1f} GB" + (f", {mem / 1e9:.1f} GB available" if mem else ""),
    )
    t.add_row("native precisions", ", ".join(r.precisions["native"]))
    for p, why in r.precisions["not_native"].items():
        t.add_row(f"  {p}", f"not native: {why}")
    if not r.gpus:
        t.add_row("gpus", f"none ({nulls.get('gpus')})")
    for g in r.gpus:
        i, p = g["index"], f"gpus.{g['index']}"
        t.add_row(f"gpu {i}", f"{g['name']} (cc {g['capability']}), driver {g['driver']}")
        for key in ("memory_free_bytes", "memory_total_bytes"):
            v = g.get(key)
            t.add_row(f"  {key}", f"{v / 1e9:.1f} GB" if v is not None else _value(v, p, nulls))
        for key in (
            "sm_clock_mhz",
            "sm_clock_max_mhz",
            "mem_clock_mhz",
            "mem_clock_max_mhz",
            "power_limit_w",
            "power_draw_w",
            "temperature_c",
            "persistence_mode",
            "mig_mode",
            "ecc_mode",
        ):
            t.add_row(f"  {key}", _value(g.get(key), f"{p}.{key}", nulls))
        procs = g.get("other_processes")
        t.add_row(
            "  other processes",
            _value(len(procs) if procs is not None else None, f"{p}.other_processes", nulls),
        )
    for src, d in r.power.items():
        t.add_row(
            f"power via {src}",
            d.get("method") or ", ".join(d.get("zones") or []) or "readable"
            if d["readable"]
            else f"not readable ({d['reason']})",
        )
    sheet = r.datasheet
    t.add_row(
        "datasheet",
        f"{sheet['platform']} ({sheet['name']})" if sheet else f"none ({nulls.get('datasheet')})",
    )
    out.print(t)
    for c in r.checks:
        style = STYLE[c["status"]]
        out.print(
            f"[{style}]{c['status'].upper():4}[/] [bold]{c['name']}[/]: {c['message']}",
            highlight=False,
        )
        if c["advice"]:
            out.print(f"      → {c['advice']}", highlight=False)
    if r.summary:
        s = r.summary
        over = r.seconds - r.budget_s
        out.print(
            f"{s['pass']} passed, {s['warn']} warned, {s['fail']} failed, "
            f"{s['skip']} skipped in {r.seconds:.1f} s of the {r.budget_s:g} s budget "
            f"({r.startup_s:.1f} s of it starting Python and torch)"
            + (f"; over it by {over:.1f} s" if over > 0.05 * r.budget_s else ""),
            highlight=False,
        )
