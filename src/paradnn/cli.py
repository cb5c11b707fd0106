"""`paradnn`: a thin command line over `paradnn.api`; every command calls one library function."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console

from paradnn import __version__, api, tables
from paradnn.errors import ParadnnError
from paradnn.store import DEFAULT_DB

app = typer.Typer(
    name="paradnn",
    help=(
        "Benchmark deep-learning training on this machine the way the ParaDnn paper did: "
        "generated FC, CNN, RNN and Transformer models and the studies' real models, timed "
        "training steps, counted FLOPs, energy where it can be read, and a SQLite result "
        "store.\n\nStart with `paradnn run` (the quick preset), then `paradnn report` (HTML) "
        "or `paradnn results`."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
# Piped output (CI logs, `| less`) gets a wide table instead of rich's 80-column default.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)  # an error stays one line

DbOpt = Annotated[str, typer.Option("--db", help="Result database (SQLite file).")]
DeviceOpt = Annotated[
    str, typer.Option("--device", help="auto (first GPU, else CPU), cpu, cuda or cuda:N.")
]
ThreadsOpt = Annotated[
    int | None,
    typer.Option(
        "--threads", help="CPU threads for torch (default: every core this process may use)."
    ),
]
OptimizerOpt = Annotated[
    str, typer.Option("--optimizer", help="rmsprop (ParaDnn's default), sgd or momentum.")
]


class Table_(StrEnum):
    runs = "runs"
    ceilings = "ceilings"
    ops = "ops"
    op_profile = "op_profile"


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


def _version(value: bool) -> None:
    if value:
        out.print(f"paradnn {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    pass


def _timing(min_time: float | None, max_time: float | None, base: Any = None) -> Any:
    import dataclasses

    from paradnn.measure.timer import TimingPolicy

    policy = base or TimingPolicy()
    changes = {
        k: v for k, v in (("min_time_s", min_time), ("max_time_s", max_time)) if v is not None
    }
    if "min_time_s" in changes and "max_time_s" not in changes:
        changes["max_time_s"] = max(policy.max_time_s, changes["min_time_s"])
    return dataclasses.replace(policy, **changes) if changes else policy


ProfileOpt = typer.Option(
    "--profile",
    help="Also profile one extra step per run: per-op time, FLOPs and bytes "
    "(`paradnn results --table op_profile`).",
)
MinTimeOpt = Annotated[
    float | None,
    typer.Option("--min-time", help="Seconds of timed steps before stopping is allowed."),
]
MaxTimeOpt = Annotated[
    float | None, typer.Option("--max-time", help="Cap on the timed phase per config, in seconds.")
]
EnergyOpt = Annotated[
    bool,
    typer.Option(
        "--energy",
        help="Also measure energy over the timed window (NVML on GPUs, RAPL for CPU packages; "
        "the window grows to what the counter needs for ≤1% error). See docs/energy.md.",
    ),
]
EnergyPeriodOpt = Annotated[
    float, typer.Option("--energy-period", help="Power sampling period in seconds (≥ 0.05).")
]
EnergyIdleOpt = Annotated[
    float,
    typer.Option("--energy-idle", help="Seconds of idle power measured before the runs (0: none)."),
]


EmulatedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-emulated",
        help="Run a low precision this device has no native arithmetic for (e.g. bf16 on an "
        "AVX2 CPU); stored and shown as emulated. Without it such runs are `unsupported`.",
    ),
]


def _say(msg: str) -> None:
    """One line of progress on stderr (long commands are never silent for more than seconds)."""
    err.print(f"[dim]{msg}[/]", highlight=False)


def _warn_noisy(rows: list[dict[str, Any]]) -> None:
    from paradnn.measure.quality import warning_line

    for r in rows:
        label = f"{r['family']} {tables.compact_config(r['config'])} {r['precision']}"
        line = warning_line(label, r.get("quality"), r.get("quality_reasons"))
        if line:
            err.print(f"[yellow]warning[/]: {line}", highlight=False)


DRY_RUN_ROWS = 200  # a dry run lists at most this many runs; its totals cover every run
DRY_RUN_SAMPLE = 500


class ProgressMode(StrEnum):
    bar = "bar"
    jsonl = "jsonl"
    quiet = "quiet"


@app.command()
def run(
    preset: Annotated[
        str,
        typer.Option(
            "--preset",
            help="A shipped preset (quick, cpu, paper-fc, paper-cnn, paper-rnn, paper) or a "
            "sweep file (.toml). See docs/sweeps.md.",
        ),
    ] = "quick",
    precision: Annotated[
        list[str] | None,
        typer.Option(
            "--precision",
            "-p",
            help="Override the sweep's precisions (repeatable): fp32, tf32, bf16, fp16.",
        ),
    ] = None,
    db: DbOpt = DEFAULT_DB,
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    optimizer: Annotated[
        str | None, typer.Option("--optimizer", help="Override the sweep's optimizers.")
    ] = None,
    workers: Annotated[
        int,
        typer.Option("--workers", help="Parallel worker processes (CPU only; cores are split)."),
    ] = 1,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds one config may take before it is killed.")
    ] = 900.0,
    recycle_every: Annotated[
        int, typer.Option("--recycle-every", help="Start a fresh worker after this many runs.")
    ] = 50,
    predict: Annotated[
        bool,
        typer.Option(
            "--predict/--no-predict",
            help="Skip configs the memory model says cannot fit (stored as predicted_oom).",
        ),
    ] = True,
    retry_failed: Annotated[
        bool,
        typer.Option("--retry-failed", help="Re-run oom, timeout, crashed, predicted_oom runs."),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the configs and estimates; run nothing.")
    ] = False,
    min_time: MinTimeOpt = None,
    max_time: MaxTimeOpt = None,
    progress_mode: Annotated[
        ProgressMode,
        typer.Option("--progress", help="bar (default), jsonl (one JSON event per line), quiet."),
    ] = ProgressMode.bar,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Same as --progress quiet.")] = False,
    profile: Annotated[bool, ProfileOpt] = False,
    energy: EnergyOpt = False,
    energy_period: EnergyPeriodOpt = 0.05,
    energy_idle: EnergyIdleOpt = 2.0,
    allow_emulated: EmulatedOpt = False,
) -> None:
    """Run a sweep in isolated worker processes, storing each result as it lands.

    Run the same command again to resume: finished configs are skipped.
    """
    from paradnn import presets
    from paradnn.runner.supervisor import SweepSettings

    sweep = presets.get(preset)
    timing = _timing(min_time, max_time, sweep.timing)
    settings = SweepSettings(
        workers=workers,
        timeout_s=timeout,
        recycle_every=recycle_every,
        predict=predict,
        retry_failed=retry_failed,
    )  # checked before a dry run too: every option has its bound (docs/limits.md)
    if dry_run:
        from paradnn.config import RunOptions

        RunOptions(
            device=device,
            threads=threads,
            energy_period_s=energy_period,
            energy_idle_s=energy_idle,
        )
        kw: dict[str, Any] = dict(
            precisions=precision, optimizer=optimizer, device=device, timing=timing, db=db
        )
        total = api.dry_run_count(preset, precisions=precision, optimizer=optimizer, device=device)
        if total <= DRY_RUN_ROWS:
            rows = api.dry_run(preset, **kw)
            out.print(tables.dry_run_table(rows, title=f"{sweep.name}: {total} runs (dry run)"))
            return
        # A large sweep: list the first runs, estimate the whole from an even sample.
        rows = api.dry_run(preset, limit=DRY_RUN_ROWS, **kw)
        title = f"{sweep.name}: {total:,} runs (dry run; the first {DRY_RUN_ROWS} listed)"
        table = tables.dry_run_table(rows, title=title)
        sample = api.dry_run(preset, sample=DRY_RUN_SAMPLE, **kw)
        est = sum(r["est_time_s"] for r in sample) * total / len(sample)
        misfits = sum(1 for r in sample if r["fits"] is False) / len(sample)
        floor = "≥ " if any(r["est_time_is_floor"] for r in sample) else ""
        table.caption = (
            f"estimated total {floor}{tables.duration(est)} for all {total:,} runs, from an even "
            f"sample of {len(sample)} ({misfits:.0%} of them predicted not to fit)"
        )
        out.print(table)
        return
    mode = ProgressMode.quiet if quiet else progress_mode
    reporter = _JsonlReporter() if mode is ProgressMode.jsonl else _BarReporter(mode)
    try:
        with reporter:
            records = api.run(
                preset,
                precisions=precision,
                optimizer=optimizer,
                device=device,
                threads=threads,
                timing=timing,
                db=db,
                settings=settings,
                profile=profile,
                energy=energy,
                energy_period_s=energy_period,
                energy_idle_s=energy_idle,
                allow_emulated=allow_emulated,
                on_event=reporter,
            )
    except KeyboardInterrupt:
        err.print(
            f"[yellow]interrupted[/]: every finished run is stored in {db}; run the same "
            "command again to resume (finished configs are skipped)."
        )
        raise typer.Exit(130) from None
    if mode is ProgressMode.jsonl:
        return
    rows = [r.as_dict() for r in records]
    skipped = reporter.skipped
    title = f"paradnn {sweep.name}: {len(rows)} runs" + (
        f", {skipped} already done" if skipped else ""
    )
    out.print(tables.rich_table(rows, title=title))
    if energy:
        for line in tables.energy_notes(rows):
            out.print(line)
    _warn_noisy(rows)
    out.print(f"Stored in [bold]{db}[/]. See them again with `paradnn results --db {db}`.")
    if rows and all(r["utilization_measured"] is None for r in rows):
        out.print(
            f"[dim]util: run `paradnn calibrate --db {db}` once to measure this device's "
            "ceilings; later runs report utilization against them.[/]"
        )


class _BarReporter:
    """Progress on stderr: counts by status, what is running, ETA from predicted costs."""

    def __init__(self, mode: ProgressMode):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.skipped = 0
        self.quiet = mode is ProgressMode.quiet
        self.phase = ""
        self.last_line = 0.0
        self.bar = Progress(
            TextColumn("[bold]run"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
            TextColumn("{task.fields[status]}"),
            console=err,
            disable=mode is ProgressMode.quiet or not err.is_terminal,
            transient=True,
        )
        self.task = self.bar.add_task("run", total=None, status="", eta="")

    def __enter__(self) -> _BarReporter:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(*exc)

    def __call__(self, e: Any) -> None:
        if e.kind == "start":
            self.skipped = e.skipped
            if not self.quiet:
                for note in e.notes:
                    _say(note)
                _say(f"{e.total} runs to do" + (f", {e.skipped} already done" if e.skipped else ""))
        if not self.quiet and not err.is_terminal:  # a log, not a live bar: one line per news
            self._line(e)
            return
        if e.kind == "progress" and e.progress is not None:
            self.phase = progress_words(e.progress)
        elif e.kind != "progress":
            self.phase = ""
        counts = " ".join(f"{k}:{v}" for k, v in sorted(e.counts.items()))
        now = "; ".join(
            f"{s.family} {s.precision} " + tables.compact_config(dict(s.config)) for s in e.running
        )
        eta = "" if e.eta_s is None else f"ETA {tables.duration(e.eta_s)}"
        phase = f"  [dim]{self.phase}[/]" if self.phase else ""
        self.bar.update(
            self.task, total=e.total, completed=e.done, status=f"{counts}  {now}{phase}", eta=eta
        )

    def _line(self, e: Any) -> None:
        import time

        if e.kind == "result" and e.record is not None:
            r = e.record
            took = f" {r.step_time_s * 1e3:.3g} ms/step" if r.step_time_s else ""
            flag = " (noisy)" if r.quality == "noisy" else ""
            _say(
                f"[{e.done}/{e.total}] {r.family} {r.precision} "
                f"{tables.compact_config(r.config)}: {r.status}{took}{flag}"
            )
        elif e.kind == "progress" and e.progress and time.monotonic() - self.last_line >= 4.0:
            self.last_line = time.monotonic()  # a heartbeat, not a flood
            now = "; ".join(f"{s.family} {s.precision}" for s in e.running)
            _say(f"[{e.done}/{e.total}] {now}: {progress_words(e.progress)}")


def progress_words(p: dict[str, Any]) -> str:
    """A worker's progress report in a few words: phase, samples, running CI, elapsed."""
    phase = p.get("phase", "")
    bits = [phase]
    if phase == "warm-up" and p.get("steps"):
        bits.append(f"{p['steps']} steps, {p['step_s'] * 1e3:.3g} ms/step")
    if phase == "timed" and p.get("samples"):
        ci = p.get("ci_rel")
        bits.append(f"{p['samples']} samples, median {p['median_s'] * 1e3:.3g} ms")
        if ci is not None and ci != float("inf"):
            bits.append(f"CI ±{ci:.1%}")
    if p.get("elapsed_s") is not None:
        bits.append(f"{p['elapsed_s']:.0f} s")
    return ", ".join(b for b in bits if b)


class _JsonlReporter:
    """One JSON object per event on stdout, for scripts."""

    skipped = 0

    def __enter__(self) -> _JsonlReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __call__(self, e: Any) -> None:
        import json

        if e.kind in ("run", "progress"):
            return
        event: dict[str, Any] = {
            "event": e.kind,
            "done": e.done,
            "total": e.total,
            "counts": e.counts,
            "eta_s": e.eta_s,
        }
        if e.kind == "start":
            event["skipped"] = e.skipped
        if e.record is not None:
            r = e.record
            event.update(
                run_key=r.run_key,
                family=r.family,
                config=r.config,
                precision=r.precision,
                status=r.status,
                error=r.error,
                step_time_s=r.step_time_s,
                examples_per_s=r.examples_per_s,
            )
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


@app.command()
def bench(
    family: Annotated[
        str, typer.Argument(help="Model family: fc, cnn or rnn (see `paradnn families`).")
    ],
    assignments: Annotated[
        list[str] | None,
        typer.Argument(
            help="Config values as key=value, e.g. layers=8 nodes=1024 batch=256.",
            show_default=False,
        ),
    ] = None,
    precision: Annotated[
        str, typer.Option("--precision", "-p", help="fp32, tf32, bf16 or fp16.")
    ] = "fp32",
    db: DbOpt = DEFAULT_DB,
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    optimizer: OptimizerOpt = "rmsprop",
    min_time: MinTimeOpt = None,
    max_time: MaxTimeOpt = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds the run may take before it is killed.")
    ] = 900.0,
    profile: Annotated[bool, ProfileOpt] = False,
    energy: EnergyOpt = False,
    energy_period: EnergyPeriodOpt = 0.05,
    energy_idle: EnergyIdleOpt = 2.0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole record as JSON.")
    ] = False,
    allow_emulated: EmulatedOpt = False,
) -> None:
    """Measure one configuration; unspecified fields take the family's defaults."""
    import time

    from paradnn.validate import parse_assignments

    values = parse_assignments(assignments or [], what=f"{family} config")
    last = [0.0]

    def heard(e: Any) -> None:  # the worker's phases, at most every 2 s
        if e.kind == "progress" and e.progress and time.monotonic() - last[0] >= 2.0:
            last[0] = time.monotonic()
            _say(f"bench {family}: {progress_words(e.progress)}")

    rec = api.bench(
        family,
        values,
        precision=precision,
        optimizer=optimizer,
        device=device,
        threads=threads,
        timing=_timing(min_time, max_time),
        timeout_s=timeout,
        profile=profile,
        energy=energy,
        energy_period_s=energy_period,
        energy_idle_s=energy_idle,
        allow_emulated=allow_emulated,
        db=db,
        on_event=heard,
    )
    row = rec.as_dict()
    if as_json:
        sys.stdout.write(tables.to_json([row]) + "\n")
        return
    out.print(tables.rich_table([row]))
    if rec.error:
        out.print(f"[bold]{rec.status}[/]: {rec.error}")
    elif rec.step_time_s is not None:
        ci = (
            f"95% CI {rec.step_time_ci_low_s * 1e3:.4g}–{rec.step_time_ci_high_s * 1e3:.4g} ms"
            if rec.step_time_ci_low_s is not None
            else "no CI: too few samples"
        )
        load = rec.others_cpu_frac
        out.print(
            f"median {rec.step_time_s * 1e3:.4g} ms/step over {rec.n_samples} samples "
            f"({ci}, "
            f"{'converged' if rec.converged else 'stopped at ' + str(rec.stop_reason)}); "
            f"first step {rec.first_step_s * 1e3:.4g} ms; {rec.threads} threads; "
            f"quality {rec.quality}"
            + (f" (other processes {load:.0%} of the CPUs)" if load is not None else "")
            + (" [yellow]emulated[/]" if rec.emulated else "")
        )
    _warn_noisy([row])
    if energy:
        for line in tables.energy_notes([row]):
            out.print(line)
    out.print(f"Stored in [bold]{db}[/].")


@app.command()
def results(
    db: DbOpt = DEFAULT_DB,
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="table, csv or json.")
    ] = Format.table,
    family: Annotated[str | None, typer.Option("--family", help="Only this family.")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only this status (ok, oom, …).")
    ] = None,
    sweep: Annotated[
        str | None, typer.Option("--sweep", help="Only runs of this preset/sweep.")
    ] = None,
    quality: Annotated[
        str | None,
        typer.Option("--quality", help="Only runs of this quality: good or noisy."),
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most this many rows.")] = None,
    table: Annotated[
        Table_, typer.Option("--table", help="runs, ceilings (calibrate), ops, op_profile.")
    ] = "runs",
    run_id: Annotated[
        int | None, typer.Option("--run", help="With --table op_profile: one run's profile.")
    ] = None,
) -> None:
    """Show stored results: training runs (default), ceilings, op benchmarks or op profiles."""
    from paradnn.records import QUALITIES, STATUSES
    from paradnn.validate import int_at_least, one_of

    if status is not None:
        one_of("--status", status, STATUSES)
    if quality is not None:
        one_of("--quality", quality, QUALITIES)
    if limit is not None:
        int_at_least("--limit", limit, 1, 1_000_000_000)
    if run_id is not None:
        int_at_least("--run", run_id, 1, 2**63 - 1)
    if table != "runs":
        rows = api.side_table(table, db, run_id=run_id)
        rows = rows[:limit] if limit else rows
        if fmt is Format.table:
            out.print(tables.side_table(table, rows, title=f"{db}: {len(rows)} {table} rows"))
            return
    else:
        rows = api.results(
            db, family=family, status=status, sweep=sweep, quality=quality, limit=limit
        )
    if fmt is Format.csv:
        sys.stdout.write(tables.to_csv(rows))
    elif fmt is Format.json:
        sys.stdout.write(tables.to_json(rows) + "\n")
    else:
        out.print(tables.rich_table(rows, title=f"{db}: {len(rows)} runs"))


@app.command("families")
def families_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the model families, their config fields (with defaults) and the paper's space."""
    from rich.table import Table

    info = api.family_info()
    if as_json:
        out.print_json(data=info)
        return
    for fam in (f for f in info if f["kind"] != "real"):
        t = Table(
            title=f"{fam['name']}: {fam['title']}  ({fam['paper_configs']:,} paper configs)",
            title_justify="left",
            header_style="bold",
        )
        t.add_column("field")
        t.add_column("default", justify="right")
        t.add_column("paper space (Table 2)")
        for name, default in fam["fields"].items():
            space = fam["paper_space"].get(name, [])
            t.add_row(name, str(default), ", ".join(map(str, space)))
        out.print(t)
    real = [f for f in info if f["kind"] == "real"]
    if real:
        t = Table(
            title="Real-world models (docs/models.md)", title_justify="left", header_style="bold"
        )
        for col in ("name", "model", "params", "train FLOP/step", "defaults"):
            t.add_column(col, justify="right" if col in ("params", "train FLOP/step") else "left")
        for f in real:
            t.add_row(
                f["name"],
                f["title"],
                f"{f['default_params']:,}",
                tables.si(f["default_train_flops"]),
                " ".join(f"{k}={v}" for k, v in f["fields"].items()),
            )
        out.print(t)


@app.command()
def calibrate(
    precision: Annotated[
        list[str] | None,
        typer.Option("--precision", "-p", help="Matmul precisions (default: all the device runs)."),
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
            help="Seconds of matmuls per precision (default 60): sizes grow while the next one "
            "fits in what is left.",
        ),
    ] = None,
    allow_emulated: EmulatedOpt = False,
) -> None:
    """Measure this device's ceilings: large-matmul FLOP/s per precision and memory bandwidth
    (copy, triad). Later runs report utilization against them."""
    _say(
        "calibrate: matmuls of growing size per precision (a time budget each), then copy and "
        "triad bandwidth"
    )
    rows = api.calibrate(
        device,
        precision,
        threads=threads,
        db=db,
        if_missing=if_missing,
        budget_s=budget,
        allow_emulated=allow_emulated,
        progress=_say,
    )
    title = "measured ceilings" + (
        " (already in the database)"
        if if_missing and rows and rows[0].get("id") is not None
        else ""
    )
    out.print(tables.side_table("ceilings", rows, title=title))
    out.print(f"Stored in [bold]{db}[/].")


@app.command()
def ops(
    precision: Annotated[
        list[str] | None, typer.Option("--precision", "-p", help="Precisions (default fp32).")
    ] = None,
    name: Annotated[
        list[str] | None,
        typer.Option("--name", help="Only these ops, e.g. matmul-4096, conv2d-II (repeatable)."),
    ] = None,
    thread_sweep: Annotated[
        bool, typer.Option("--thread-sweep", help="CPU: repeat at 1, 2, 4 … all cores.")
    ] = False,
    db: DbOpt = DEFAULT_DB,
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    allow_emulated: EmulatedOpt = False,
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
        progress=_say,
    )
    out.print(tables.side_table("ops", rows, title=f"ops: {len(rows)} rows"))
    out.print(f"Stored in [bold]{db}[/].")


@app.command()
def platforms(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The platform database (datasheet figures with sources) and what this machine is."""
    from paradnn import platforms as plat

    rows = plat.platform_table_rows()
    local = plat.describe_local("cpu")
    if api.device_capacity("cuda")[0] is not None:  # NVML sees a GPU
        local = {"cpu": local, "cuda": plat.describe_local("cuda")}
    if as_json:
        out.print_json(data={"platforms": rows, "local": local})
        return
    out.print(tables.platforms_table(rows))
    out.print_json(data=local)


DbsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--db", help="Result database; repeat to merge several (machines).", show_default=False
    ),
]


@app.command()
def report(
    db: DbsOpt = None,
    out_dir: Annotated[str, typer.Option("--out", help="Directory for the report.")] = "report",
    include_noisy: Annotated[
        bool,
        typer.Option("--include-noisy", help="Keep runs flagged noisy in figures and speedups."),
    ] = False,
) -> None:
    """The HTML report: the papers' figures, findings with verdicts, speedups, provenance
    (also PNG figures and CSV tables next to it). Noisy runs are left out and counted."""
    with err.status("building report…") as status:
        rep = api.report(
            db or [DEFAULT_DB],
            out_dir,
            progress=lambda s: status.update(s + "…"),
            include_noisy=include_noisy,
        )
    empty = sum(1 for s in rep.sections if s.empty)
    out.print(
        f"Report: [bold]{rep.html}[/] ({len(rep.sections) - empty} sections with data, "
        f"{len(rep.figures)} figures, {len(rep.tables)} CSV tables in {rep.html.parent})"
    )


class FailOn(StrEnum):
    config = "config"
    geomean = "geomean"


@app.command()
def compare(
    by: Annotated[
        str,
        typer.Option(
            "--by",
            help="platform, precision, mode, optimizer, torch_version, cuda_version, threads, "
            "device, hostname, db (one database against another) or attempt (re-runs of the "
            "same run key: --a/--b are attempt numbers, first or latest).",
        ),
    ],
    a: Annotated[str, typer.Option("--a", help="The baseline group (e.g. fp32).")],
    b: Annotated[str, typer.Option("--b", help="The group whose speedup is reported (e.g. bf16).")],
    db: DbsOpt = None,
    metric: Annotated[
        str, typer.Option("--metric", help="examples_per_s, achieved_flops or step_time_s.")
    ] = "examples_per_s",
    family: Annotated[str | None, typer.Option("--family", help="Only this family.")] = None,
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="table, csv (per config) or json.")
    ] = Format.table,
    limit: Annotated[
        int, typer.Option("--limit", help="Configs shown in the table (slowest and fastest).")
    ] = 10,
    fail_if_slower: Annotated[
        float | None,
        typer.Option(
            "--fail-if-slower",
            metavar="PCT",
            help="Exit 1 when a config is slower than 1 - PCT/100 beyond its 95% CI "
            "(the whole interval below it); configs without an interval by their estimate.",
        ),
    ] = None,
    fail_on: Annotated[
        FailOn,
        typer.Option("--fail-on", help="What --fail-if-slower judges: each config or the geomean."),
    ] = FailOn.config,
    include_noisy: Annotated[
        bool, typer.Option("--include-noisy", help="Keep runs flagged noisy (left out by default).")
    ] = False,
) -> None:
    """Speedup of group B over group A for every configuration both ran (matched on family,
    config and every other identity column), each with a 95% bootstrap CI from the raw samples
    and a call: faster, slower or no detectable change. Exit 1 under --fail-if-slower when a
    config (or the geomean) is slower beyond its interval."""
    from paradnn.analysis import speedup

    if fail_if_slower is not None:
        speedup.check_pct(fail_if_slower)  # bad input fails before any work
    c = api.compare(
        db or [DEFAULT_DB], by, a, b, metric=metric, family=family, include_noisy=include_noisy
    )
    slower = None
    if fail_if_slower is not None:
        slower = speedup.slower_than(c, fail_if_slower, fail_on.value)
    if fmt is Format.csv:
        sys.stdout.write(c.pairs.to_csv(index=False))
    elif fmt is Format.json:
        sys.stdout.write(tables.comparison_json(c, slower) + "\n")
    else:
        out.print(tables.speedup_summary(c))
        if len(c.pairs):
            out.print(tables.speedup_pairs(c, limit))
        if len(c.failed):
            out.print(
                f"{len(c.failed)} configs ran ok in one group and failed in the other "
                "(see --format json)."
            )
        missing = {k: v for k, v in c.unmatched.items() if v}
        if missing:
            out.print(
                "Ran ok in one group only: " + ", ".join(f"{k}: {v}" for k, v in missing.items())
            )
    if slower is None:
        return
    limit_x = f"{1 - fail_if_slower / 100:.3g}×"
    head = f"--fail-if-slower {fail_if_slower:g} ({c.b} over {c.a})"
    if not len(slower):
        what = "the geomean is not" if fail_on is FailOn.geomean else "no config is"
        err.print(f"{head}: {what} slower than {limit_x} beyond its 95% CI.", markup=False)
        return
    n = len(slower)
    what = f"{n} config is" if n == 1 else f"{n} configs are"
    if fail_on is FailOn.geomean:
        what = "the geomean is"
    err.print(f"{head}: {what} slower than {limit_x} beyond the 95% CI:", markup=False)
    for line in tables.slower_lines(c, slower, fail_on.value):
        err.print("  " + line, markup=False, highlight=False)
    raise typer.Exit(1)


@app.command()
def simulate(
    family: Annotated[
        str | None,
        typer.Argument(help="Model family (`paradnn families`), unless --preset is given."),
    ] = None,
    assignments: Annotated[
        list[str] | None,
        typer.Argument(
            help="Config values as key=value, e.g. layers=8 batch=256.", show_default=False
        ),
    ] = None,
    platform: Annotated[
        str | None,
        typer.Option("--platform", help="Platform id (`paradnn platforms`) or a chip .toml file."),
    ] = None,
    preset: Annotated[
        str | None, typer.Option("--preset", help="Predict every run of a preset or sweep file.")
    ] = None,
    precision: Annotated[
        str | None,
        typer.Option("--precision", "-p", help="fp32, tf32, bf16 or fp16 (default bf16)."),
    ] = None,
    optimizer: Annotated[
        str | None, typer.Option("--optimizer", help="rmsprop (default), sgd or momentum.")
    ] = None,
    chips: Annotated[int, typer.Option("--chips", help="Data-parallel chips.")] = 1,
    topology: Annotated[
        str | None,
        typer.Option("--topology", help="e.g. torus2d:16x16, torus3d:4x4x4, ring:8, biring:8."),
    ] = None,
    overlap: Annotated[
        float, typer.Option("--overlap", help="Share of backward that hides the all-reduce.")
    ] = 0.0,
    concurrent: Annotated[
        bool, typer.Option("--concurrent", help="Torus: drive all dimensions at once.")
    ] = False,
    scaling: Annotated[
        int | None,
        typer.Option("--scaling", help="Scaling curve: 1, 2, 4 … up to this many chips."),
    ] = None,
    mxu_study: Annotated[
        bool, typer.Option("--mxu-study", help="Utilization of 1×256², 4×128², 16×64² on CNNs.")
    ] = False,
    precision_study: Annotated[
        bool, typer.Option("--precision-study", help="bf16/fp16/fp32 matmul error vs float64.")
    ] = False,
    batch: Annotated[int, typer.Option("--batch", help="Batch of the --mxu-study.")] = 8,
    dataflow: Annotated[
        str, typer.Option("--dataflow", help="Dataflow of the --mxu-study: ws, os or is.")
    ] = "ws",
    validate: Annotated[
        bool,
        typer.Option("--validate", help="Predict the runs measured in --db; error per family."),
    ] = False,
    db: DbOpt = DEFAULT_DB,
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="table, csv or json.")
    ] = Format.table,
    csv_path: Annotated[
        str | None, typer.Option("--csv", help="Also write the rows to this CSV file.")
    ] = None,
) -> None:
    """Predict ("what if") a workload's training step on any platform, real or hypothetical:
    step time, utilization, bottleneck, multi-chip all-reduce and scaling. Every figure is a
    prediction of an analytical model (docs/simulate.md), not a measurement."""
    from paradnn.errors import ConfigError
    from paradnn.validate import parse_assignments

    modes = [
        m
        for m, on in (
            ("--mxu-study", mxu_study),
            ("--precision-study", precision_study),
            ("--validate", validate),
            ("--scaling", scaling is not None),
        )
        if on
    ]
    if len(modes) > 1:
        raise ConfigError("mode", " ".join(modes), "choose one of them")
    values = parse_assignments(assignments or [], what=f"{family} config")
    summary: list[dict[str, Any]] | None = None
    if mxu_study:
        rows = api.simulate_mxu_study(batch, dataflow)
        title = f"MXU size study (prediction; compute-only, {dataflow.upper()}, 65,536 MACs each)"
    elif precision_study:
        rows = api.simulate_precision_study()
        title = "Matmul error vs float64, inputs rounded, fp32 accumulation (emulated)"
    elif validate:
        rows, summary = api.simulate_validate(db, platform)
        title = f"predicted vs measured: {len(rows)} runs from {db}"
    else:
        if platform is None:
            raise ConfigError("--platform", None, "required: a platform id or a chip .toml file")
        if scaling is not None:
            if family is None:
                raise ConfigError("--scaling", scaling, "needs a FAMILY (and key=value config)")
            rows = api.simulate_scaling(
                platform,
                family,
                values,
                precision=precision or "bf16",
                optimizer=optimizer or "rmsprop",
                max_chips=scaling,
                overlap=overlap,
                concurrent=concurrent,
            )
            title = f"predicted weak scaling of {family} on {platform}"
        else:
            rows = api.simulate(
                platform,
                family,
                values,
                preset=preset,
                precision=precision,
                optimizer=optimizer,
                chips=chips,
                topology=topology,
                overlap=overlap,
                concurrent=concurrent,
            )
            title = f"predicted on {platform}: {len(rows)} configs"
    if csv_path:
        from pathlib import Path

        Path(csv_path).write_text(tables.to_csv(rows))
    if fmt is Format.csv:
        sys.stdout.write(tables.to_csv(rows))
    elif fmt is Format.json:
        import json

        data: Any = {"rows": rows, "summary": summary} if summary is not None else rows
        sys.stdout.write(json.dumps(data, indent=1, default=str) + "\n")
    else:
        from paradnn.sim.render import sim_table

        out.print(sim_table(rows, title=title))
        if summary is not None:
            out.print(sim_table(summary, title="median absolute % error per family (prediction)"))
    if csv_path:
        out.print(f"Wrote [bold]{csv_path}[/].")


def main() -> None:
    """Entry point: bad input of any kind is one line on stderr and exit status 2."""
    try:  # recent typer vendors click; older releases use click itself
        from typer._click import exceptions as click
    except ImportError:  # pragma: no cover - depends on the installed typer
        from click import exceptions as click

    try:
        code = app(standalone_mode=False)
    except click.NoArgsIsHelpError:
        code = 0
    except click.UsageError as e:  # click's own checks: unknown option, not an integer, …
        hint = f" (see `{e.ctx.command_path} --help`)" if e.ctx else ""
        err.print(f"[bold red]error:[/] {e.format_message()}{hint}", highlight=False)
        code = 2
    except typer.Abort:  # Ctrl-C outside a run
        code = 130
    except ParadnnError as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        code = 2
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
