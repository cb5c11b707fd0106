"""Runs: measure one config (`bench`) or a sweep (`run`), plan one once (`plan`) and estimate
it without torch (`dry_run`, `dry_run_count`), and read the stored results back."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from paradnn import families, presets
from paradnn.api.devices import device_capacity, native_precisions
from paradnn.api.returns import DryRunRow, Rows, StoreInfo, SweepPlan, rows
from paradnn.axes import AXES
from paradnn.config import ExecutorSettings, RunOptions, RunSpec, SweepSettings, with_fields
from paradnn.errors import ABSENT, ConfigError, Refused
from paradnn.records import RunRecord, Status
from paradnn.store import DEFAULT_DB, open_store
from paradnn.store.db import EmptyDatabase, check_writable

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.host import LoadSample
    from paradnn.runner.supervisor import Event
    from paradnn.sweep import Sweep


def bench(
    family: str | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    model: str | None = None,
    db: str = DEFAULT_DB,
    timeout_s: float = 900.0,
    on_event: Callable[[Event], None] | None = None,
    remeasure: int = 0,
    remeasure_backoff_s: float | None = None,
    load: LoadSample | None = None,
    force: bool = False,
    options: RunOptions | None = None,
    **fields: Any,
) -> RunRecord:
    """Measure one configuration in a worker process, as `run` does (same isolation, same
    environment, same run key), and store it; a config measured before gets a new attempt.
    The run is `options` (default: RunOptions()) with `fields` in place: any RunOptions field
    by name, a study axis (`precision="bf16"`, `mode="compile"`, `backend="jax"`) or where
    and how (`device="cpu"`, `threads=1`, `timing=...`, `energy=True`); an unknown name is
    refused. `remeasure`: measure a noisy result again (each a new attempt) up to this many
    times, when the load that made it noisy has dropped (runner/busy.py: else once more at the
    end, after `remeasure_backoff_s`, or kept); the last attempt is returned (the good one when
    one was good: re-measuring stops there). Bad input raises before any work starts;
    `on_event` hears the phases. `load` (host.sample_load) is the machine's load the thread
    count is chosen from; without it the load is sampled here (not for `threads=1`: one
    thread never exceeds the free cores).

    Refused before any work (no worker, no database): a precision the device does not run
    natively (ConfigError; `allow_emulated` runs an emulatable one, labelled), and a config
    whose memory cannot fit in what the device has free (errors.Refused, the check `run`
    stores `predicted_oom` by); `force` runs the second anyway.

    `model="package.module:factory"` measures a model of your own (docs/own-model.md) instead
    of a family's config: the family "user", its config the factory's path."""
    from paradnn.runner.supervisor import Supervisor

    family, config = own_model(family, config, model)
    cfg = families.get(family).config(_mapping(family, config))
    options = with_fields(options, "bench option", _given(fields))
    if not isinstance(force, bool):
        raise ConfigError("force", force, "must be true or false")
    backoff = {} if remeasure_backoff_s is None else {"remeasure_backoff_s": remeasure_backoff_s}
    settings = SweepSettings(
        timeout_s=timeout_s, predict=not force, force=True, remeasure=remeasure, **backoff
    )
    spec = RunSpec(family, dict(cfg.__dict__), options)
    check_can_run(spec, force=force)
    with open_store(db, lazy=True) as store:
        records = Supervisor(store, options, settings, on_event=on_event, load=load).run([spec])
    return records[-1]


def own_model(
    family: str | None, config: Mapping[str, Any] | None, model: str | None
) -> tuple[str, Mapping[str, Any] | None]:
    """(family, config) of a bench: a family's, or a model of your own's (`model`)."""
    if model is None:
        if family is None:
            raise ConfigError("family", ABSENT, "name a family, or a model of your own (model=)")
        return family, config
    if family not in (None, families.USER):
        raise ConfigError("model", model, f"measures a model of your own: not with family {family}")
    if config:
        raise ConfigError("model", model, "takes no config fields: the factory makes the model")
    return families.USER, {"model": model}


def _given(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword fields as given; `timing=None` is the default policy (as it always was)."""
    return {k: v for k, v in fields.items() if not (k == "timing" and v is None)}


def check_can_run(spec: RunSpec, *, force: bool = False) -> None:
    """Refuse, before any work, a run that would measure nothing: its precision is not native
    on the device (ConfigError naming what it runs natively and how to ask for emulation) or,
    unless `force`, its predicted memory cannot fit in what the device has free now
    (errors.Refused; memory.check_run, the rule `run` stores `predicted_oom` by). Torch-free,
    in milliseconds. What cannot be read here (a GPU NVML cannot see) the worker decides."""
    from paradnn import memory
    from paradnn.api.devices import free_memory, unsupported_precision

    options = spec.options
    device = options.device
    fam = families.get(spec.family)
    fam.ready(fam.config(dict(spec.config)))  # a factory of your own that does not import
    why = unsupported_precision(options.precision, device, allow_emulated=options.allow_emulated)
    if why:
        raise ConfigError("precision", options.precision, why)
    if force:
        return
    _, device_type = device_capacity(device)
    free, where = free_memory(device)
    verdict = memory.check_run(spec, device_type, free, where)
    if verdict.fits is False:
        shape = " ".join(f"{k}={v}" for k, v in spec.config.items())
        raise Refused(
            f"{spec.family} {shape} at {options.precision} {verdict.words()}: refused before "
            "any work (the lower bound of docs/memory.md); --force runs it anyway"
        )


def plan(
    preset: str | Sweep = "quick",
    *,
    precisions: Sequence[str] | None = None,
    optimizer: str | None = None,
    axes: Mapping[str, Sequence[Any]] | None = None,
    **fields: Any,
) -> SweepPlan:
    """A preset or sweep file (or a loaded Sweep) expanded into its runs, each described whole
    (RunSpec): every config at every precision, optimizer and study-axis value (`precisions`,
    `optimizer` and `axes`, keyed by RunOptions field, replace the sweep's; `axes` may name
    `precision` and `optimizer` too), with `fields` (RunOptions fields besides the study axes:
    device, threads, timing, energy, ...) in every run. Everything is checked here, before any
    work: `run`, `dry_run` and `dry_run_count` take the plan and do not plan again."""
    from paradnn.sweep import Sweep

    sweep = preset if isinstance(preset, Sweep) else presets.get(preset)  # get: checks the name
    study = dict(axes or {})
    precisions = _one_way("precisions", precisions, study.pop("precision", None))
    optimizers = _one_way(
        "optimizer", [optimizer] if optimizer else None, study.pop("optimizer", None)
    )
    base = with_fields(None, "run option", {"timing": sweep.timing, **_setting(fields)})
    specs = sweep.specs(precisions, optimizers, study, base)
    _ready(specs)
    return SweepPlan(sweep, tuple(specs), base)


def _ready(specs: Sequence[RunSpec]) -> None:
    """Every config of a family known only once built (a model of your own) can be built
    here: its factory imports (one ConfigError line, before any work)."""
    seen: set[tuple[str, str]] = set()
    for spec in specs:
        fam = families.get(spec.family)
        key = (spec.family, repr(sorted(spec.config.items())))
        if not fam.analytic and key not in seen:
            seen.add(key)
            fam.ready(fam.config(dict(spec.config)))


def _one_way(name: str, given: Sequence[str] | None, in_axes: Sequence[str] | None) -> Any:
    if given and in_axes:
        raise ConfigError(name, list(given), "is given twice (also in axes); give it once")
    return given or in_axes


def _setting(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Run-option fields that hold for every run of a sweep: a study axis is planned per run
    (`axes=`), so it is refused here with a line saying where it goes."""
    from paradnn.axes import BY_FIELD

    for name in fields:
        if name in BY_FIELD:
            raise ConfigError(
                "run option", name, f"is a study axis: give it as axes={{{name!r}: [...]}}"
            )
    return _given(fields)


def _planned(
    preset: str | SweepPlan,
    precisions: Sequence[str] | None,
    optimizer: str | None,
    axes: Mapping[str, Sequence[Any]] | None,
    fields: Mapping[str, Any],
) -> SweepPlan:
    """`preset` planned, or the plan given (whose precisions, optimizer and axes are set) with
    `fields` (device, threads, ...: not study axes) in every run."""
    if not isinstance(preset, SweepPlan):
        return plan(preset, precisions=precisions, optimizer=optimizer, axes=axes, **fields)
    given = {"precisions": precisions, "optimizer": optimizer, "axes": axes}
    for name, value in given.items():
        if value:
            raise ConfigError(name, value, "is set by api.plan: give it there, not with a plan")
    return preset.with_options(_setting(fields))


def run(
    preset: str | SweepPlan = "quick",
    *,
    precisions: Sequence[str] | None = None,
    optimizer: str | None = None,
    axes: Mapping[str, Sequence[Any]] | None = None,
    db: str = DEFAULT_DB,
    settings: SweepSettings | None = None,
    executor: ExecutorSettings | None = None,
    on_event: Callable[[Event], None] | None = None,
    load: LoadSample | None = None,
    **fields: Any,
) -> list[RunRecord]:
    """Run a preset or sweep file (or its `plan`) in worker processes; each result is stored as
    it lands, and a second call with the same arguments resumes where the first stopped.
    `precisions`, `optimizer`, `axes` and `fields` (RunOptions fields: device, threads, timing,
    energy, ...) plan it as `plan` does; with a plan, `fields` apply to each of its runs.
    `executor` (default: the sweep's `[executor]`, else local workers) sends the runs to a Ray
    cluster or Slurm instead (docs/cluster.md); this process still stores every result.
    `load`: as for `bench` (`paradnn run` measures it for a second before the sweep).
    A precision named in `precisions` that the device does not run natively raises
    ConfigError before any work (`unsupported_precision`); the sweep's own precisions are
    stored `unsupported` where the device lacks them."""
    from paradnn.runner.supervisor import Supervisor

    planned = _planned(preset, precisions, optimizer, axes, fields)
    check_precisions(planned, precisions or (axes or {}).get("precision"))
    settings = settings or SweepSettings()
    if not isinstance(settings, SweepSettings):
        raise ConfigError("settings", settings, "must be a SweepSettings")
    executor = executor or planned.sweep.executor or ExecutorSettings()
    if not isinstance(executor, ExecutorSettings):
        raise ConfigError("executor", executor, "must be an ExecutorSettings")
    if executor.kind != "local":
        return _run_on_cluster(planned, settings, executor, db, on_event)
    with open_store(db, lazy=True) as store:
        sup = Supervisor(
            store, planned.options, settings, sweep=planned.name, on_event=on_event, load=load
        )
        return sup.run(planned.specs)


def check_precisions(
    planned: SweepPlan, precisions: Sequence[str] | None, name: str = "precision"
) -> None:
    """Precisions asked for by name that the plan's device does not run natively: one
    ConfigError naming `name` (the CLI's `--precision`) before any work (a sweep file's own
    are stored `unsupported`, so a shared sweep runs anywhere)."""
    from paradnn.api.devices import unsupported_precision

    o = planned.options
    for p in precisions or ():
        why = unsupported_precision(p, o.device, allow_emulated=o.allow_emulated)
        if why:
            raise ConfigError(name, p, why)


def _run_on_cluster(
    planned: SweepPlan,
    settings: SweepSettings,
    executor: ExecutorSettings,
    db: str,
    on_event: Callable[[Event], None] | None,
) -> list[RunRecord]:
    from paradnn.runner.cluster import ClusterSupervisor, open_engine

    options = planned.options
    if settings.workers != 1:
        raise ConfigError(
            "workers", settings.workers, f"local workers only; {executor.kind} decides how many"
        )
    if options.energy:
        raise ConfigError(
            "energy",
            True,
            f"needs --executor local (it measures this machine, not {executor.kind}'s)",
        )
    ranks = max((s.options.procs for s in planned.specs), default=1)
    if ranks > 1:  # a task asks for one worker's CPUs/GPU; N ranks need torchrun's own launch
        raise ConfigError(
            "procs",
            ranks,
            f"needs --executor local ({executor.kind} tasks run one rank; across machines "
            "use torchrun, docs/scaling.md)",
        )
    check_writable(db)  # before the cluster is reached: every result is stored here
    engine = open_engine(executor, options, settings.timeout_s)
    try:
        with open_store(db, lazy=True) as store:
            sup = ClusterSupervisor(
                store, options, settings, engine, sweep=planned.name, on_event=on_event
            )
            return sup.run(planned.specs)
    finally:
        engine.close()


# What a run costs besides its steps (docs/runner.md#dry-run), used until `db` holds runs on
# this device to measure them from. Measured on the 2-core AMD EPYC VM (torch 2.13.0+cpu) after
# issue 43's lighter harness, 2026-11-27, quiet (load 0.2-2): a run's seconds in its worker
# outside its first step, warm-up and timed steps, median 0.034 s over the 74 runs of `make
# demo` (FC, CNN, RNN) and 0.026 s over 12 tiny FC runs (benchmarks/results/harness_wall.json);
# a `bench` spent 2.9 s outside its measured phases (a process, a worker, torch and the
# optimizer's compiler imports). Before that harness: 1.2 s and 3.7-7.0 s at a load of ~7.
WORKER_START_S = 3.0
RUN_OVERHEAD_S = 0.05


def dry_run(
    preset: str | SweepPlan = "quick",
    *,
    precisions: Sequence[str] | None = None,
    optimizer: str | None = None,
    axes: Mapping[str, Sequence[Any]] | None = None,
    db: str = DEFAULT_DB,
    limit: int | None = None,
    sample: int | None = None,
    **fields: Any,
) -> list[DryRunRow]:
    """What `run` would do, without torch: each config with its parameters, FLOPs per step,
    predicted memory (whether it can fit in what this machine's device has free now: `fits`,
    memory.check's verdict on the lower bound, the one `run` stores `predicted_oom` by; and
    whether the best estimate does: `fits_estimate`), whether `db` holds
    it already (`stored`: the newest attempt's status; a resumed run skips it) and a time
    estimate.

    The estimate (`est_time_s`, 0 for a stored run) is the run's overhead in its worker (build,
    FLOP count, memory, quality: the median of earlier runs in `db` on this kind of device, else
    RUN_OVERHEAD_S) plus its first step and the timer's least warm-up and timed phase
    (`TimingPolicy.least_seconds`), with the step time from the median FLOP/s that
    earlier runs of the same family and precision reached; with no such rate the step time is
    its floor, FLOPs over the device's peak (the measured matmul ceiling, else the derived or
    datasheet peak; 0 when none is known), and the row says `est_time_is_floor`. A worker's
    start (WORKER_START_S) is the sweep's, once per --recycle-every runs: `dry_run_total`.

    `limit`: only the first `limit` runs; `sample`: an even sample of that many runs across the
    whole sweep (for the totals of a huge sweep, in seconds instead of minutes). The device
    and timing are the plan's (`fields` as for `run`: device="cpu", timing=...)."""
    from paradnn import memory
    from paradnn.api.devices import free_memory

    planned = _planned(preset, precisions, optimizer, axes, fields)
    specs = list(planned.specs)
    device, policy = planned.options.device, planned.options.timing
    _, device_type = device_capacity(device)
    free, where = free_memory(device)  # what `run`'s memory check holds each config against
    specs, _ = presets.resolve_native(specs, native_precisions(device_type, device))
    specs = _pick(specs, limit, sample)
    history = _history(db, device_type)
    overhead = history.overhead_s if history.overhead_s is not None else RUN_OVERHEAD_S

    found = []
    for spec in specs:
        fam = families.get(spec.family)
        cfg = fam.config(dict(spec.config))
        verdict = memory.check_run(spec, device_type, free, where)
        est = verdict.estimate
        flops = fam.train_flops(cfg) if fam.analytic else None  # own model: known once built
        rate = history.rates.get((spec.family, spec.precision))
        peak = None if rate else _peak_rate(history, device, spec.precision)
        step = 0.0 if flops is None else (flops / rate if rate else (flops / peak if peak else 0.0))
        stored = _stored_status(history, spec.family, dict(cfg.__dict__), spec.options)
        found.append(
            DryRunRow(
                family=spec.family,
                config=dict(cfg.__dict__),
                precision=spec.precision,
                optimizer=spec.optimizer,
                options=spec.options.study(),
                params=fam.params(cfg) if fam.analytic else None,
                flops_per_step=flops,
                predicted_mem_bytes=None if est is None else est.total,
                predicted_mem_lower_bytes=None if est is None else est.lower_bound,
                fits=verdict.fits,
                fits_estimate=None if free is None or est is None else est.total <= free,
                stored=stored,
                est_time_s=0.0 if stored else overhead + step + policy.least_seconds(step),
                est_time_is_floor=rate is None and not stored,
            )
        )
    return found


def dry_run_total(rows: Sequence[DryRunRow], runs: int, recycle_every: int = 50) -> float:
    """Seconds the whole sweep of `runs` runs would take, from `rows` (all of them, or an even
    sample): their estimates scaled to `runs`, plus a worker start per `recycle_every` runs
    still to do (WORKER_START_S each)."""
    import math

    if not rows:
        return 0.0
    todo = runs * sum(1 for r in rows if not r.stored) / len(rows)
    starts = math.ceil(todo / recycle_every) if todo else 0
    return sum(r.est_time_s for r in rows) * runs / len(rows) + starts * WORKER_START_S


def _mapping(family: str, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """A config given to the API as a mapping of field = value (None: the defaults)."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigError(f"{family} config", config, "must be a mapping of field = value")
    return dict(config)


def dry_run_count(
    preset: str | SweepPlan = "quick",
    *,
    precisions: Sequence[str] | None = None,
    optimizer: str | None = None,
    axes: Mapping[str, Sequence[Any]] | None = None,
    **fields: Any,
) -> int:
    """How many runs `run` would plan, counted without estimating any of them."""
    planned = _planned(preset, precisions, optimizer, axes, fields)
    device = planned.options.device
    _, device_type = device_capacity(device)
    return len(
        presets.resolve_native(list(planned.specs), native_precisions(device_type, device))[0]
    )


def _pick(specs: list[RunSpec], limit: int | None, sample: int | None) -> list[RunSpec]:
    if limit is not None:
        specs = specs[:limit]
    if sample is not None and len(specs) > sample:
        step = len(specs) / sample
        specs = [specs[int(i * step)] for i in range(sample)]
    return specs


@dataclass
class _History:
    """What earlier runs in a database on this kind of device say (`_history`)."""

    rates: dict[tuple[str, str], float] = field(default_factory=dict)  # (family, precision)
    overhead_s: float | None = None  # a run's median seconds in its worker outside its steps
    latest: dict[str, str] = field(default_factory=dict)  # run key -> newest attempt's status
    fingerprint: str | None = None  # this host's newest environment
    ceilings: dict[str, float] = field(default_factory=dict)  # precision -> best matmul FLOP/s
    peaks: dict[str, float | None] = field(default_factory=dict)  # derived/datasheet, on first use


def _history(db: str, device_type: str | None) -> _History:
    """What earlier ok runs in `db` on this kind of device say: the median achieved FLOP/s per
    (family, precision), the median seconds a run spent in its worker outside its timed phases,
    the latest status per run key, and the newest environment fingerprint of this host."""
    import platform
    import statistics
    from datetime import datetime
    from pathlib import Path

    found = _History()
    if not Path(db).exists():
        check_writable(db)  # where `run` would make it: a file in the way is refused now
        return found
    try:
        store = open_store(db, readonly=True)
    except EmptyDatabase:  # `run` adopts an empty file: nothing in it to plan from
        return found
    by: dict[tuple[str, str], list[float]] = {}
    overheads: list[float] = []
    with store:
        rows = store.runs()
        found.latest = store.latest_status()
        for c in store.rows("ceilings", {"kind": "matmul"}):
            if c.get("status", Status.OK) == Status.OK and str(c["device"]).startswith(
                device_type or ""
            ):
                p = c["precision"]
                found.ceilings[p] = max(found.ceilings.get(p, 0.0), c["value"])
    for r in rows:
        if device_type is not None and not str(r["device"] or "").startswith(device_type):
            continue
        if (r.get("env") or {}).get("hostname") == platform.node() and r.get("fingerprint"):
            found.fingerprint = r["fingerprint"]  # rows come oldest first: the newest wins
        if r["status"] != Status.OK:
            continue
        if r["achieved_flops"]:
            by.setdefault((r["family"], r["precision"]), []).append(r["achieved_flops"])
        try:
            wall = (
                datetime.fromisoformat(r["finished_at"]) - datetime.fromisoformat(r["started_at"])
            ).total_seconds()
            steps = (r["n_samples"] or 0) * (r["steps_per_sample"] or 0) * r["step_time_s"]
            overheads.append(wall - (r["first_step_s"] or 0) - (r["warmup_s"] or 0) - steps)
        except (TypeError, ValueError):
            continue
    found.rates = {k: statistics.median(v) for k, v in by.items()}
    if overheads:
        found.overhead_s = max(0.0, statistics.median(overheads))
    return found


def _peak_rate(history: _History, device: str, precision: str) -> float | None:
    """The fastest a step can go at `precision` on this device, FLOP/s: the measured matmul
    ceiling in the db, else the derived CPU peak or the GPU's datasheet peak; None if unknown.
    A step's time is at least its FLOPs over this (a floor, never an estimate)."""
    if precision in history.ceilings:
        return history.ceilings[precision]
    peaks = history.peaks
    if not peaks:
        from paradnn.platforms import local

        try:
            found = local.detect("cpu" if device == "auto" else device)
        except Exception:  # a floor we cannot derive is only a missing floor
            found = {}
        if found.get("device_type") == "cpu":
            derived = found.get("cpu_peak_derived", {})
            peaks.update({p: (d or {}).get("value") for p, d in derived.items()})
        else:
            peaks.update(found.get("datasheet_peak") or {})
        peaks.setdefault("_", None)
    return peaks.get(precision)


def _stored_status(
    history: _History, family: str, config: dict[str, Any], options: RunOptions
) -> str | None:
    """The newest stored attempt's status of this run in this host's newest environment (what
    a resumed `run` skips), or None. A changed environment (another torch) makes new keys."""
    from paradnn.records import run_key

    if history.fingerprint is None:
        return None
    key = run_key(family, config, options.key_fields(), history.fingerprint)
    return history.latest.get(key)


# `results`' filters on a run's identity beyond what the store selects on: field -> the value a
# row stored before the field existed has (a null `mode` is an eager run): each study axis with
# a column of its own in every run (paradnn.axes), the thread count and the attempt.
IDENTITY_FILTERS: dict[str, Any] = {
    **{a.field: a.default for a in AXES if a.column is not None and a.when is None},
    "threads": None,
    "attempt": 1,
}


# `results`' keyword filters: what the store selects on (Store.runs), and the row limit.
RESULTS_FILTERS = ("family", "status", "sweep", "run_key", "quality", "limit")


def unknown_filter(
    function: str, name: str, value: Any, allowed: Sequence[str], hint: str = ""
) -> ConfigError:
    """The one error for a filter keyword a function does not take (a misspelling, most
    often): it names the keyword, its value, the closest filter and every one allowed, instead
    of Python's TypeError."""
    import difflib

    close = difflib.get_close_matches(name, list(allowed), n=1)
    guess = f"did you mean {close[0]}? " if close else ""
    return ConfigError(
        name,
        value,
        f"not a filter of api.{function}: {guess}the filters are {', '.join(allowed)}{hint}",
    )


def results(
    db: str = DEFAULT_DB,
    chosen: bool = False,
    where: Mapping[str, Any] | None = None,
    **filters: Any,
) -> Rows:
    """Stored runs (every attempt), each with `attempt_choice`: how paradnn.attempts.choose
    picked it as its config's attempt (the one compare, report and findings use), or None for
    an attempt they pass over. `chosen`: only those. The choice is made over every row of the
    database, before the filters. `where`: {field: value} of IDENTITY_FILTERS fields a row must
    have (precision, mode, backend, data_source, procs, ..., threads, attempt)."""
    from paradnn.attempts import chosen_ids

    for k, v in filters.items():
        if k not in RESULTS_FILTERS:
            hint = f"; a run's {k} goes in where={{{k!r}: ...}}" if k in IDENTITY_FILTERS else ""
            raise unknown_filter("results", k, v, (*RESULTS_FILTERS, "chosen", "where"), hint)
    where = {k: v for k, v in (where or {}).items() if v is not None}
    for k in where:
        if k not in IDENTITY_FILTERS:
            raise ConfigError("where", k, "must be one of " + ", ".join(IDENTITY_FILTERS))
    limit = filters.pop("limit", None)
    late = chosen or bool(where)  # filtered here: the store's LIMIT would cut before it
    with open_store(db, readonly=True) as store:
        picked = chosen_ids(store.runs())
        stored = store.runs(**filters, limit=None if late else limit)
    found = [{**r, "attempt_choice": picked.get(r["id"])} for r in stored]
    if chosen:
        found = [r for r in found if r["attempt_choice"] is not None]
    if where:
        found = [r for r in found if all(_has(r, k, v) for k, v in where.items())]
    return rows("runs", found[:limit] if late else found)


def _has(row: Mapping[str, Any], name: str, value: Any) -> bool:
    v = row.get(name)
    return (IDENTITY_FILTERS[name] if v is None else v) == value


def store_info(db: str = DEFAULT_DB) -> StoreInfo:
    """The database an export reads: its path and schema version (None if it does not exist)."""
    from pathlib import Path

    from paradnn.store.db import schema_version

    if not Path(db).exists():
        return StoreInfo(db, None)
    with open_store(db, readonly=True) as store:
        return StoreInfo(db, schema_version(store.conn))


def side_table(table: str, db: str = DEFAULT_DB, **where: Any) -> Rows:
    """Rows of `ceilings`, `ops`, `op_profile` or `host_profile`; `where`: column=value
    filters (a column the table lacks is refused by name)."""
    from paradnn.store.db import SIDE_TABLES

    if table not in SIDE_TABLES:
        raise ConfigError("table", table, "one of " + ", ".join(SIDE_TABLES))
    with open_store(db, readonly=True) as store:
        columns = store.columns(table)
        for k, v in where.items():  # a None filter filters nothing
            if v is not None and columns and k not in columns:
                raise unknown_filter("side_table", k, v, columns, f" (the columns of {table})")
        return rows(table, store.rows(table, {k: v for k, v in where.items() if v is not None}))
