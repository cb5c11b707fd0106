"""Measuring: `run` (a preset or sweep file, or its dry run) and `bench` (one configuration)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from paradnn import api, families, presets, tables
from paradnn.cli.common import (
    PRECISION,
    TIMEOUT,
    AssignmentsArg,
    BackendOpt,
    BackendsOpt,
    DataOpt,
    DatasOpt,
    DbOpt,
    DeviceOpt,
    EmulatedOpt,
    EnergyIdleOpt,
    EnergyOpt,
    EnergyPeriodOpt,
    LoaderWorkersListOpt,
    LoaderWorkersOpt,
    MaxTimeOpt,
    MinTimeOpt,
    ModeOpt,
    ModesOpt,
    OptimizerImplOpt,
    OptimizerImplsOpt,
    OptimizerOpt,
    PersistentOpt,
    PinMemoryOpt,
    PoliciesOpt,
    PolicyOpt,
    PrefetchOpt,
    ProfileOpt,
    ThreadsOpt,
    choice,
    enum_choice,
    err,
    infeed_axes,
    integer,
    number,
    out,
    timing,
    unique,
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
from paradnn.cli.scale import ProcsListOpt, ProcsOpt, parse_procs
from paradnn.config import (
    EXECUTORS,
    MAX_ARRAY_SIZE,
    MAX_CONFIGS_PER_JOB,
    MAX_RECYCLE_EVERY,
    MAX_REMEASURE,
    MAX_THREADS,
    MAX_WORKERS,
    OPTIMIZERS,
    REMEASURE_BACKOFF_S,
    ExecutorSettings,
    SweepSettings,
    TimingPolicy,
)
from paradnn.measure.timer import progress_words
from paradnn.store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.api.returns import SweepPlan
    from paradnn.records import RunRecord
    from paradnn.runner.supervisor import Event

# Re-measures of a noisy run (docs/runner.md#re-measuring-noisy-runs): a sweep tries twice more
# (other configs run during the back-off, so the load has time to pass); `bench` once, so one
# command costs at most twice its run. PARADNN_REMEASURE sets both (0: off).
REMEASURE_RUN, REMEASURE_BENCH = 2, 1
RemeasureOpt = Annotated[
    int,
    typer.Option(
        "--remeasure",
        metavar="N",
        envvar="PARADNN_REMEASURE",
        parser=integer("--remeasure", 0, MAX_REMEASURE),
        help="Measure a run flagged noisy again, up to N times, each a new attempt (0: never); "
        "compare and the report use each config's best good attempt.",
    ),
]
RemeasureBackoffOpt = Annotated[
    float,
    typer.Option(
        "--remeasure-backoff",
        metavar="SECONDS",
        parser=number("--remeasure-backoff", 0.0, 3600.0),
        help="Wait before the first re-measure; each next one waits twice as long.",
    ),
]
DRY_RUN_ROWS = 200  # a dry run lists at most this many runs; its totals cover every run
DRY_RUN_SAMPLE = 500


def run(
    preset: Annotated[
        str,
        typer.Option(
            "--preset",
            help="A shipped preset (listed above) or a sweep file (.toml). See docs/sweeps.md.",
        ),
    ] = "quick",
    precision: Annotated[
        list[str] | None,
        typer.Option(
            "--precision",
            "-p",
            parser=PRECISION,
            callback=unique("--precision"),
            help="Override the sweep's precisions (repeatable): fp32, tf32, bf16, fp16.",
        ),
    ] = None,
    db: DbOpt = DEFAULT_DB,
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    optimizer: Annotated[
        str | None,
        typer.Option(
            "--optimizer",
            parser=choice("--optimizer", OPTIMIZERS),
            help="Override the sweep's optimizers.",
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            parser=integer("--workers", 1, MAX_WORKERS),
            help="Parallel worker processes (CPU only; cores are split).",
        ),
    ] = 1,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", parser=TIMEOUT, help="Seconds one config may take before it is killed."
        ),
    ] = 900.0,
    recycle_every: Annotated[
        int,
        typer.Option(
            "--recycle-every",
            parser=integer("--recycle-every", 1, MAX_RECYCLE_EVERY),
            help="Start a fresh worker after this many runs.",
        ),
    ] = 50,
    predict: Annotated[
        bool,
        typer.Option(
            "--predict/--force",
            " /--no-predict",
            help="Store configs whose predicted memory cannot fit in what the device has free "
            "as predicted_oom without running them (default); --force (or its old name "
            "--no-predict) runs them anyway.",
        ),
    ] = True,
    retry_failed: Annotated[
        bool,
        typer.Option("--retry-failed", help="Re-run oom, timeout, crashed, predicted_oom runs."),
    ] = False,
    remeasure_changed: Annotated[
        bool,
        typer.Option(
            "--remeasure-changed",
            help="Measure again (a new attempt) each stored config measured with other "
            "timing, energy or profile settings than this run's; without it they are kept "
            "and the start says which.",
        ),
    ] = False,
    remeasure: RemeasureOpt = REMEASURE_RUN,
    remeasure_backoff: RemeasureBackoffOpt = REMEASURE_BACKOFF_S,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the configs and estimates; run nothing.")
    ] = False,
    min_time: MinTimeOpt = None,
    max_time: MaxTimeOpt = None,
    progress_mode: Annotated[
        ProgressMode,
        typer.Option(
            "--progress",
            parser=enum_choice("--progress", ProgressMode),
            help="bar (default), jsonl (one JSON event per line), quiet.",
        ),
    ] = ProgressMode.bar,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Same as --progress quiet.")] = False,
    profile: Annotated[bool, ProfileOpt] = False,
    energy: EnergyOpt = False,
    energy_period: EnergyPeriodOpt = 0.05,
    energy_idle: EnergyIdleOpt = 2.0,
    allow_emulated: EmulatedOpt = False,
    mode: ModesOpt = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            parser=choice("--executor", EXECUTORS),
            help="Where runs execute: local (default: worker processes here), ray or slurm "
            "(docs/cluster.md). Default: the sweep's [executor], else local.",
        ),
    ] = None,
    address: Annotated[
        str | None, typer.Option("--address", help="ray: cluster address (default RAY_ADDRESS).")
    ] = None,
    cpus_per_task: Annotated[
        int | None,
        typer.Option(
            "--cpus-per-task",
            parser=integer("--cpus-per-task", 1, MAX_THREADS),
            help="ray/slurm: CPUs per run, its thread count (ray: a node).",
        ),
    ] = None,
    slurm_folder: Annotated[
        str | None, typer.Option("--slurm-folder", help="slurm: submitit's shared folder.")
    ] = None,
    slurm_partition: Annotated[
        str | None, typer.Option("--slurm-partition", help="slurm: partition to submit to.")
    ] = None,
    configs_per_job: Annotated[
        int | None,
        typer.Option(
            "--configs-per-job",
            parser=integer("--configs-per-job", 1, MAX_CONFIGS_PER_JOB),
            help="slurm: configs per array element (default 4).",
        ),
    ] = None,
    max_array_size: Annotated[
        int | None,
        typer.Option(
            "--max-array-size",
            parser=integer("--max-array-size", 1, MAX_ARRAY_SIZE),
            help="slurm: split arrays below this (default 1000).",
        ),
    ] = None,
    procs: ProcsListOpt = None,
    data: DatasOpt = None,
    loader_workers: LoaderWorkersListOpt = None,
    pin_memory: PinMemoryOpt = None,
    prefetch_factor: PrefetchOpt = None,
    persistent_workers: PersistentOpt = None,
    backend: BackendsOpt = None,
    optimizer_impl: OptimizerImplsOpt = None,
    precision_policy: PoliciesOpt = None,
    wait_for_idle: Annotated[
        bool,
        typer.Option(
            "--wait-for-idle",
            help="Before the sweep, wait (at most --max-wait) until other processes leave the "
            "CPUs quiet; without it a busy machine is only reported.",
        ),
    ] = False,
    max_wait: Annotated[
        float,
        typer.Option(
            "--max-wait",
            parser=number("--max-wait", 0.0, MAX_WAIT_S),
            help="Seconds --wait-for-idle waits at most.",
        ),
    ] = 600.0,
) -> None:
    """Run a sweep in isolated worker processes, storing each result as it lands.

    Run the same command again to resume: finished configs are skipped (whichever executor
    ran them). A config whose predicted memory cannot fit in what the device has free is
    stored predicted_oom (--force runs it); -p naming a precision the device lacks is refused
    before any work. Exit 1 when no run measured anything.
    """
    sweep = presets.get(preset)
    where = _executor(
        sweep.executor,
        kind=executor,
        address=address,
        cpus_per_task=cpus_per_task,
        folder=slurm_folder,
        partition=slurm_partition,
        configs_per_job=configs_per_job,
        max_array_size=max_array_size,
    )
    policy = timing(min_time, max_time, sweep.timing)
    settings = SweepSettings(
        workers=workers,
        timeout_s=timeout,
        recycle_every=recycle_every,
        predict=predict,
        retry_failed=retry_failed,
        remeasure_changed=remeasure_changed,
        remeasure=remeasure,
        remeasure_backoff_s=remeasure_backoff,
    )  # checked before a dry run too: every option has its bound (docs/limits.md)
    axes = {"mode": mode, "procs": parse_procs(procs), "backend": backend}
    axes |= {"optimizer_impl": optimizer_impl, "precision_policy": precision_policy}
    axes |= infeed_axes(data, loader_workers, pin_memory, prefetch_factor, persistent_workers)
    # planned once, here: one line, exit 2, before any work; the dry run and api.run take it
    planned = api.plan(sweep, precisions=precision, optimizer=optimizer, axes=axes)
    from paradnn.config import RunOptions
    from paradnn.errors import ConfigError

    RunOptions(  # checked before the dry run and the load check: one line, exit 2, no work
        device=device, threads=threads, energy_period_s=energy_period, energy_idle_s=energy_idle
    )
    for p in precision or ():  # asked for by name: one the device lacks is refused (a sweep
        # file's own precisions are stored `unsupported`, so a shared sweep runs anywhere)
        why = api.unsupported_precision(p, device, allow_emulated=allow_emulated)
        if why:
            raise ConfigError("--precision", p, why)
    if dry_run:
        return _show_dry_run(
            planned, device=device, timing=policy, db=db, recycle_every=recycle_every
        )
    mode = ProgressMode.quiet if quiet else progress_mode
    load = quiet_check(wait_for_idle, max_wait) if where.kind == "local" else None
    report = reporter(mode)
    try:
        with report:
            records = api.run(
                planned,
                device=device,
                threads=threads,
                timing=policy,
                db=db,
                settings=settings,
                profile=profile,
                energy=energy,
                energy_period_s=energy_period,
                energy_idle_s=energy_idle,
                allow_emulated=allow_emulated,
                on_event=report,
                executor=where,
                load=load,
            )
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (runner/signals.py): 130, 143
        how = f"terminated ({e.args[0]})" if e.args else "interrupted"
        err.print(
            f"[yellow]{how}[/]: every finished run is stored in {escape(db)}; run the same "
            "command again to resume (finished configs are skipped)."
        )
        raise typer.Exit(getattr(e, "exit_code", 130)) from None
    if mode is not ProgressMode.jsonl:
        _show_runs([r.as_dict() for r in records], sweep.name, report.skipped, db, energy)
        if where.kind != "local":
            _show_nodes(records)
    exit_if_nothing_measured(r.status for r in records)


# The presets are listed in the command's description (full width): an option's help column is
# too narrow for `accelerator-study` on an 80-column terminal.
run.__doc__ = (run.__doc__ or "").rstrip() + (
    f"\n\n    Shipped presets: {', '.join(presets.names())} (docs/sweeps.md).\n"
)


def _executor(base: ExecutorSettings | None, **given: Any) -> ExecutorSettings:
    """The sweep's [executor] with the options the user gave on top; checked before any work."""
    import dataclasses

    chosen = {k: v for k, v in given.items() if v is not None}
    return dataclasses.replace(base or ExecutorSettings(), **chosen)


def _show_nodes(records: list[RunRecord]) -> None:
    from collections import Counter

    nodes = Counter((r.env or {}).get("hostname") or "unknown" for r in records)
    out.print("results per node: " + ", ".join(f"{h} {n}" for h, n in sorted(nodes.items())))


def _show_dry_run(
    planned: SweepPlan,
    *,
    device: str,
    timing: TimingPolicy | None,
    db: str,
    recycle_every: int = 50,
) -> None:
    """Every run of a small sweep; the first runs of a large one, its totals from a sample.
    Totals include the workers' start-ups (api.dry_run_total)."""
    name, kw = planned.name, {"device": device, "timing": timing, "db": db}
    total = api.dry_run_count(planned, device=device)
    if total <= DRY_RUN_ROWS:
        rows = api.dry_run(planned, **kw)
        est = api.dry_run_total(rows, total, recycle_every)
        title = f"{name}: {total} runs (dry run)"
        out.print(tables.dry_run_table([r.as_dict() for r in rows], title=title, total_s=est))
        return
    rows = api.dry_run(planned, limit=DRY_RUN_ROWS, **kw)
    title = f"{name}: {total:,} runs (dry run; the first {DRY_RUN_ROWS} listed)"
    table = tables.dry_run_table([r.as_dict() for r in rows], title=title)
    sample = api.dry_run(planned, sample=DRY_RUN_SAMPLE, **kw)
    est = api.dry_run_total(sample, total, recycle_every)
    misfits = sum(1 for r in sample if r.fits is False) / len(sample)
    floor = "≥ " if any(r.est_time_is_floor for r in sample) else ""
    table.caption = (
        f"estimated total {floor}{tables.duration(est)} for all {total:,} runs, from an even "
        f"sample of {len(sample)} ({misfits:.0%} of them predicted not to fit), worker start-ups "
        "included"
    )
    out.print(table)


def _show_runs(rows: list[dict[str, Any]], name: str, skipped: int, db: str, energy: bool) -> None:
    title = f"paradnn {name}: {len(rows)} runs" + (f", {skipped} already done" if skipped else "")
    out.print(tables.rich_table(rows, title=title))
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


def bench(
    family: Annotated[
        str,
        typer.Argument(
            help=f"Model family: {', '.join(families.names())} (`paradnn families`).",
            show_default=False,
        ),
    ],
    assignments: AssignmentsArg = None,
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
            "--timeout", parser=TIMEOUT, help="Seconds the run may take before it is killed."
        ),
    ] = 900.0,
    remeasure: RemeasureOpt = REMEASURE_BENCH,
    remeasure_backoff: RemeasureBackoffOpt = REMEASURE_BACKOFF_S,
    profile: Annotated[bool, ProfileOpt] = False,
    energy: EnergyOpt = False,
    energy_period: EnergyPeriodOpt = 0.05,
    energy_idle: EnergyIdleOpt = 2.0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole record as JSON.")
    ] = False,
    allow_emulated: EmulatedOpt = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Run the config even when its predicted memory cannot fit in what the device "
            "has free (without it: refused, exit 2, before any work).",
        ),
    ] = False,
    mode: ModeOpt = "eager",
    procs: ProcsOpt = 1,
    data: DataOpt = "device",
    loader_workers: LoaderWorkersOpt = 2,
    pin_memory: PinMemoryOpt = None,
    prefetch_factor: PrefetchOpt = None,
    persistent_workers: PersistentOpt = None,
    backend: BackendOpt = "torch",
    optimizer_impl: OptimizerImplOpt = "auto",
    precision_policy: PolicyOpt = "mixed",
) -> None:
    """Measure one configuration; unspecified fields take the family's defaults.

    Refused before any work (one line, exit 2): a precision this device does not run natively
    (--allow-emulated runs an emulatable one), a config whose predicted memory cannot fit in
    what is free (--force runs it anyway). Exit 1 when the run measured nothing (its status is
    not ok)."""
    from paradnn.validate import parse_assignments

    values = parse_assignments(assignments or [], what=f"{family} config")
    SweepSettings(remeasure=remeasure, remeasure_backoff_s=remeasure_backoff)  # exit 2 now
    rec = api.bench(
        family,
        values,
        precision=precision,
        optimizer=optimizer,
        device=device,
        threads=threads,
        timing=timing(min_time, max_time),
        timeout_s=timeout,
        profile=profile,
        energy=energy,
        energy_period_s=energy_period,
        energy_idle_s=energy_idle,
        allow_emulated=allow_emulated,
        db=db,
        on_event=_heartbeat(f"bench {family}"),
        remeasure=remeasure,
        remeasure_backoff_s=remeasure_backoff,
        force=force,
        mode=mode,
        **({"procs": procs} if procs != 1 else {}),
        **_infeed(data, loader_workers, pin_memory, prefetch_factor, persistent_workers),
        **({"backend": backend} if backend != "torch" else {}),
        **({"optimizer_impl": optimizer_impl} if optimizer_impl != "auto" else {}),
        **({"precision_policy": precision_policy} if precision_policy != "mixed" else {}),
    )
    if as_json:
        sys.stdout.write(tables.to_json([rec.as_dict()], **api.store_info(db).as_dict()) + "\n")
    else:
        _show_bench(rec, db, energy)
    exit_if_nothing_measured([rec.status])


def _infeed(data: str, workers: int, pin: Any, prefetch: Any, persistent: Any) -> dict[str, Any]:
    """bench's infeed keywords: only those that differ from RunOptions' defaults."""
    given = {
        "data_source": data if data != "device" else None,
        "loader_workers": workers if workers != 2 else None,
        "pin_memory": pin,
        "prefetch_factor": prefetch,
        "persistent_workers": persistent,
    }
    return {k: v for k, v in given.items() if v is not None}


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
    out.print(tables.rich_table([row]))
    if rec.error:
        out.print(f"[bold]{rec.status}[/]: {escape(str(rec.error))}")
    elif rec.step_time_s is not None:
        ci = tables.ci_text(tables.ci_half(row))
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
