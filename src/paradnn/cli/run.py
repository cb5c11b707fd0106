"""Measuring: `run` (a preset or sweep file, or its dry run) and `bench` (one configuration)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from paradnn import api, families, presets
from paradnn.cli import tables
from paradnn.cli.common import (
    AssignmentsArg,
    DbOpt,
    ForceRunOpt,
    enum_choice,
    err,
    flag_option,
    number,
    out,
    words_option,
)
from paradnn.cli.options import (
    EXECUTOR,
    MEASURE,
    REMEASURE_BENCH,
    SWEEP,
    Measure,
    study,
    takes,
)
from paradnn.cli.progress import (
    MAX_WAIT_S,
    ProgressMode,
    exit_if_nothing_measured,
    quiet_check,
    reporter,
    say,
    warn_noisy,
)
from paradnn.config import ExecutorSettings, SweepSettings
from paradnn.measure.timer import progress_words
from paradnn.store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.api.returns import SweepPlan
    from paradnn.records import RunRecord
    from paradnn.runner.supervisor import Event

DRY_RUN_ROWS = 200  # a dry run lists at most this many runs; its totals cover every run
DRY_RUN_SAMPLE = 500
PresetOpt = Annotated[
    str,
    typer.Option(
        "--preset",
        help="A shipped preset (listed above) or a sweep file (.toml). See docs/sweeps.md.",
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="List the runs and estimates; run nothing.")
]
PROGRESS = enum_choice("--progress", ProgressMode)
PROGRESS_NOTES = {"bar": "default", "jsonl": "one JSON event per line"}
ProgressOpt = words_option(
    ProgressMode, "--progress", PROGRESS, "How runs are shown: {values}.", notes=PROGRESS_NOTES
)
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Same as --progress quiet.")]
WaitOpt = Annotated[
    bool,
    typer.Option(
        "--wait-for-idle",
        help="Before the sweep, wait (at most --max-wait) until other processes leave the "
        "CPUs quiet; without it a busy machine is only reported.",
    ),
]
MaxWaitOpt = Annotated[
    float,
    typer.Option(
        "--max-wait",
        parser=number("--max-wait", 0.0, MAX_WAIT_S),
        help="Seconds --wait-for-idle waits at most.",
    ),
]


@takes(axes=study(many=True), measure=MEASURE, settings=SWEEP, executor=EXECUTOR)
def run(
    preset: PresetOpt = "quick",
    db: DbOpt = DEFAULT_DB,
    dry_run: DryRunOpt = False,
    progress_mode: ProgressOpt = ProgressMode.bar,
    quiet: QuietOpt = False,
    wait_for_idle: WaitOpt = False,
    max_wait: MaxWaitOpt = 600.0,
    *,
    axes: dict[str, list[Any]],
    measure: Measure,
    settings: SweepSettings,
    executor: dict[str, Any],
) -> None:
    """Run a sweep in isolated worker processes, storing each result as it lands.

    Run the same command again to resume: finished runs are skipped (whichever executor
    ran them). A run whose predicted memory cannot fit in what the device has free is
    stored predicted_oom (--force runs it); -p naming a precision the device lacks is refused
    before any work. The study axes replace the sweep's. Exit 1 when no run measured anything.
    """
    sweep = presets.get(preset)
    where = dataclasses.replace(sweep.executor or ExecutorSettings(), **executor)
    # planned once, here: one line, exit 2, before any work; the dry run and api.run take it
    planned = api.plan(sweep, axes=axes, **measure.fields(sweep.timing))
    # asked for by name: a precision the device lacks is refused (a sweep file's own are
    # stored `unsupported`, so a shared sweep runs anywhere)
    api.check_precisions(planned, axes.get("precision"), "--precision")
    if dry_run:
        return _show_dry_run(planned, db=db, recycle_every=settings.recycle_every)
    mode = ProgressMode.quiet if quiet else progress_mode
    load = quiet_check(wait_for_idle, max_wait) if where.kind == "local" else None
    report = reporter(mode)
    try:
        with report:
            records = api.run(
                planned, db=db, settings=settings, on_event=report, executor=where, load=load
            )
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (runner/signals.py): 130, 143
        how = f"terminated ({e.args[0]})" if e.args else "interrupted"
        err.print(
            f"[yellow]{how}[/]: every finished run is stored in {escape(db)}; run the same "
            "command again to resume (finished runs are skipped)."
        )
        raise typer.Exit(getattr(e, "exit_code", 130)) from None
    if mode is not ProgressMode.jsonl:
        rows = [r.as_dict() for r in records]
        _show_runs(rows, sweep.name, report.skipped, db, planned.options.energy)
        if where.kind != "local":
            _show_nodes(records)
    exit_if_nothing_measured(r.status for r in records)


# The presets are listed in the command's description (full width): an option's help column is
# too narrow for `accelerator-study` on an 80-column terminal.
run.__doc__ = (run.__doc__ or "").rstrip() + (
    f"\n\n    Shipped presets: {', '.join(presets.names())} (docs/sweeps.md).\n"
)


def _show_nodes(records: list[RunRecord]) -> None:
    from collections import Counter

    nodes = Counter((r.env or {}).get("hostname") or "unknown" for r in records)
    out.print("results per node: " + ", ".join(f"{h} {n}" for h, n in sorted(nodes.items())))


def _show_dry_run(planned: SweepPlan, *, db: str, recycle_every: int = 50) -> None:
    """Every run of a small sweep; the first runs of a large one, its totals from a sample.
    Totals include the workers' start-ups (api.dry_run_total)."""
    name, kw = planned.name, {"db": db}
    total = api.dry_run_count(planned)
    if total <= DRY_RUN_ROWS:
        rows = api.dry_run(planned, **kw)
        est = api.dry_run_total(rows, total, recycle_every)
        title = f"{name}: {total} runs (dry run)"
        dicts = [r.as_dict() for r in rows]
        out.print(tables.dry_run_table(dicts, title=title, total_s=est, width=out.width))
        return
    rows = api.dry_run(planned, limit=DRY_RUN_ROWS, **kw)
    title = f"{name}: {total:,} runs (dry run; the first {DRY_RUN_ROWS} listed)"
    sample = api.dry_run(planned, sample=DRY_RUN_SAMPLE, **kw)
    est = api.dry_run_total(sample, total, recycle_every)
    misfits = sum(1 for r in sample if r.fits is False) / len(sample)
    floor = "≥ " if any(r.est_time_is_floor for r in sample) else ""
    caption = (
        f"estimated total {floor}{tables.duration(est)} for all {total:,} runs, from an even "
        f"sample of {len(sample)} ({misfits:.0%} of them predicted not to fit), worker start-ups "
        "included"
    )
    dicts = [r.as_dict() for r in rows]
    out.print(tables.dry_run_table(dicts, title=title, width=out.width, caption=caption))


def _show_runs(rows: list[dict[str, Any]], name: str, skipped: int, db: str, energy: bool) -> None:
    title = f"paradnn {name}: {len(rows)} runs" + (f", {skipped} already done" if skipped else "")
    out.print(tables.rich_table(rows, title=title, width=out.width))
    if energy:
        for line in tables.energy_notes(rows):
            out.print(line)
    warn_noisy(rows)
    db = escape(db)
    out.print(f"Stored in [bold]{db}[/]. See them again with `paradnn results --db {db}`.")
    if rows and all(r["utilization_measured"] is None for r in rows):
        out.print(
            f"[dim]util: run `paradnn calibrate --db {db}` once to measure this device's "
            "ceilings; later runs report utilization against them.[/]"
        )


RecordJsonOpt = flag_option("--json", "Print the whole record as JSON.")
BENCH_SETTINGS = SWEEP.only("timeout", "remeasure", "remeasure_backoff", remeasure=REMEASURE_BENCH)


@takes(axes=study(), measure=MEASURE, settings=BENCH_SETTINGS)
def bench(
    family: Annotated[
        str | None,
        typer.Argument(
            help=f"Model family: {', '.join(families.names())} (`paradnn families`); "
            "none with --model.",
            show_default=False,
        ),
    ] = None,
    assignments: AssignmentsArg = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="PKG.MODULE:FACTORY",
            help="A model of your own: a function returning (module, make_batch[, loss]) "
            "(docs/own-model.md).",
        ),
    ] = None,
    db: DbOpt = DEFAULT_DB,
    as_json: RecordJsonOpt = False,
    force: ForceRunOpt = False,
    *,
    axes: dict[str, Any],
    measure: Measure,
    settings: SweepSettings,
) -> None:
    """Measure one configuration; unspecified fields take the family's defaults.

    Refused before any work (one line, exit 2): a precision this device does not run natively
    (--allow-emulated runs an emulatable one), a config whose predicted memory cannot fit in
    what is free (--force runs it anyway). Exit 1 when the run measured nothing (its status is
    not ok)."""
    from paradnn.validate import parse_assignments

    values = parse_assignments(assignments or [], what=f"{family or model} config")
    rec = api.bench(
        family,
        values,
        model=model,
        db=db,
        timeout_s=settings.timeout_s,
        on_event=_heartbeat(f"bench {family or model}"),
        remeasure=settings.remeasure,
        remeasure_backoff_s=settings.remeasure_backoff_s,
        force=force,
        **axes,
        **measure.fields(),
    )
    if as_json:
        sys.stdout.write(tables.to_json([rec.as_dict()], **api.store_info(db).as_dict()) + "\n")
    else:
        _show_bench(rec, db, bool(measure.given.get("energy")))
    exit_if_nothing_measured([rec.status])


def _heartbeat(label: str) -> Callable[[Event], None]:
    """An event listener that says the worker's phase, at most every 2 s."""
    import time

    last = [0.0]

    def heard(e: Event) -> None:
        if e.kind == "start":  # e.g. the threads chosen from the load, or a --threads warning
            for note in e.notes:
                say(note)
        if e.kind == "remeasure":
            for note in e.notes:
                say(f"{label}: {note}")
        if e.kind == "progress" and e.progress and time.monotonic() - last[0] >= 2.0:
            last[0] = time.monotonic()
            say(f"{label}: {progress_words(e.progress)}")

    return heard


def _show_bench(rec: RunRecord, db: str, energy: bool) -> None:
    row = rec.as_dict()
    out.print(tables.rich_table([row], width=out.width))
    if rec.error:
        out.print(f"[bold]{rec.status}[/]: {escape(str(rec.error))}")
    elif rec.step_time_s is not None:
        ci = tables.ci_text(tables.step_ci(row))
        ci = f"{ci} (95% CI)" if ci else " (no CI: too few samples)"
        load = rec.others_cpu_frac
        out.print(
            f"median {rec.step_time_s * 1e3:.4g} ms/step{ci} over {rec.n_samples} samples "
            f"({'converged' if rec.converged else 'stopped at ' + str(rec.stop_reason)}); "
            f"first step {rec.first_step_s * 1e3:.4g} ms; {rec.threads} threads; "
            f"quality {rec.quality}"
            + (f" (other processes {load:.0%} of the CPUs)" if load is not None else "")
            + (" [yellow]emulated[/]" if rec.emulated else "")
        )
    if rec.backend == "jax" and rec.xla_compile_s is not None:  # docs/jax.md
        ratio = rec.xla_flops_ratio
        out.print(
            f"XLA: lowered in {rec.xla_lower_s:.3g} s, compiled in {rec.xla_compile_s:.3g} s "
            "(apart from the first step); XLA FLOPs / analytic = "
            + (f"{ratio:.3g}" if ratio is not None else "unknown")
            + (" [yellow](differs by > 10 %)[/]" if rec.xla_flops_mismatch else "")
        )
    warn_noisy([row])
    if energy:
        for line in tables.energy_notes([row]):
            out.print(line)
    out.print(f"Stored in [bold]{escape(db)}[/].")
