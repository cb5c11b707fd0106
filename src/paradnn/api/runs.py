"""Runs: measure one config (`bench`) or a sweep (`run`), plan one without torch
(`dry_run`, `dry_run_count`), and read the stored results back."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from paradnn import families, presets
from paradnn.api.devices import device_capacity, native_precisions
from paradnn.config import ExecutorSettings, RunOptions
from paradnn.errors import ConfigError
from paradnn.measure.timer import TimingPolicy
from paradnn.presets import RunSpec
from paradnn.records import RunRecord
from paradnn.runner.supervisor import SweepSettings
from paradnn.store import DEFAULT_DB, open_store

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.runner.supervisor import Event


def bench(
    family: str,
    config: Mapping[str, Any] | None = None,
    *,
    precision: str = "fp32",
    optimizer: str = "rmsprop",
    device: str = "auto",
    threads: int | None = None,
    timing: TimingPolicy | None = None,
    timeout_s: float = 900.0,
    profile: bool = False,
    energy: bool = False,
    energy_period_s: float = 0.05,
    energy_idle_s: float = 2.0,
    allow_emulated: bool = False,
    db: str = DEFAULT_DB,
    on_event: Callable[[Event], None] | None = None,
    **study: Any,
) -> RunRecord:
    """Measure one configuration in a worker process, as `run` does (same isolation, same
    environment, same run key), and store it; a config measured before gets a new attempt.
    `study`: a value for each study axis to set (paradnn.config.AXES fields, e.g.
    `mode="compile"`). Bad input raises before any work starts; `on_event` hears the phases."""
    from paradnn.runner.supervisor import Supervisor

    cfg = families.get(family).config(_mapping(family, config))
    options = RunOptions(
        precision=precision,
        optimizer=optimizer,
        device=device,
        threads=threads,
        timing=timing or TimingPolicy(),
        profile=profile,
        energy=energy,
        energy_period_s=energy_period_s,
        energy_idle_s=energy_idle_s,
        allow_emulated=allow_emulated,
    )
    _check_study(study)
    options = dataclasses.replace(options, **study)
    spec = RunSpec(family, dict(cfg.__dict__), precision, optimizer, study)
    settings = SweepSettings(timeout_s=timeout_s, predict=False, force=True)
    with open_store(db) as store:
        (rec,) = Supervisor(store, options, settings, on_event=on_event).run([spec])
    return rec


def run(
    preset: str = "quick",
    *,
    precisions: Sequence[str] | None = None,
    optimizer: str | None = None,
    device: str = "auto",
    threads: int | None = None,
    timing: TimingPolicy | None = None,
    db: str = DEFAULT_DB,
    settings: SweepSettings | None = None,
    profile: bool = False,
    energy: bool = False,
    energy_period_s: float = 0.05,
    energy_idle_s: float = 2.0,
    allow_emulated: bool = False,
    on_event: Callable[[Event], None] | None = None,
    axes: Mapping[str, Sequence[Any]] | None = None,
    executor: ExecutorSettings | None = None,
) -> list[RunRecord]:
    """Run a preset or sweep file in worker processes; each result is stored as it lands, and
    a second call with the same arguments resumes where the first stopped. `axes` replaces
    the sweep's study axes, keyed by RunOptions field (e.g. `{"mode": ["eager", "compile"]}`).
    `executor` (default: the sweep's `[executor]`, else local workers) sends the runs to a Ray
    cluster or Slurm instead (docs/cluster.md); this process still stores every result."""
    from paradnn.runner.supervisor import Supervisor

    sweep, specs = _plan(preset, precisions, optimizer, axes)
    options = RunOptions(
        device=device,
        threads=threads,
        timing=timing or sweep.timing,
        profile=profile,
        energy=energy,
        energy_period_s=energy_period_s,
        energy_idle_s=energy_idle_s,
        allow_emulated=allow_emulated,
    )
    settings = settings or SweepSettings()
    if not isinstance(settings, SweepSettings):
        raise ConfigError("settings", settings, "must be a SweepSettings")
    executor = executor or sweep.executor or ExecutorSettings()
    if not isinstance(executor, ExecutorSettings):
        raise ConfigError("executor", executor, "must be an ExecutorSettings")
    if executor.kind != "local":
        return _run_on_cluster(sweep.name, specs, options, settings, executor, db, on_event)
    with open_store(db) as store:
        sup = Supervisor(store, options, settings, sweep=sweep.name, on_event=on_event)
        return sup.run(specs)


def _run_on_cluster(
    name: str,
    specs: list[RunSpec],
    options: RunOptions,
    settings: SweepSettings,
    executor: ExecutorSettings,
    db: str,
    on_event: Callable[[Event], None] | None,
) -> list[RunRecord]:
    from paradnn.runner.cluster import ClusterSupervisor, open_engine

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
    ranks = max((s.options.get("procs", 1) for s in specs), default=1)
    if ranks > 1:  # a task asks for one worker's CPUs/GPU; N ranks need torchrun's own launch
        raise ConfigError(
            "procs",
            ranks,
            f"needs --executor local ({executor.kind} tasks run one rank; across machines "
            "use torchrun, docs/scaling.md)",
        )
    engine = open_engine(executor, options, settings.timeout_s)
    try:
        with open_store(db) as store:
            sup = ClusterSupervisor(store, options, settings, engine, sweep=name, on_event=on_event)
            return sup.run(specs)
    finally:
        engine.close()


def dry_run(
    preset: str = "quick",
    *,
    precisions: Sequence[str] | None = None,
    optimizer: str | None = None,
    device: str = "auto",
    timing: TimingPolicy | None = None,
    db: str = DEFAULT_DB,
    limit: int | None = None,
    sample: int | None = None,
    axes: Mapping[str, Sequence[Any]] | None = None,
) -> list[dict[str, Any]]:
    """What `run` would do, without torch: each config with its parameters, FLOPs per step,
    predicted memory (and whether it fits this machine's device) and a time estimate.

    The estimate is the timing policy's minimum (warm-up + timed phase) plus 30 steps at the
    median FLOP/s that earlier runs of the same family and precision reached in `db` on this
    kind of device; with no such history it is only that minimum, marked `≥`.

    `limit`: only the first `limit` runs; `sample`: an even sample of that many runs across the
    whole sweep (for the totals of a huge sweep, in seconds instead of minutes)."""
    from paradnn import memory

    sweep, specs = _plan(preset, precisions, optimizer, axes)
    options = RunOptions(device=device, timing=timing or sweep.timing)
    capacity, device_type = device_capacity(device)
    specs, _ = presets.resolve_native(specs, native_precisions(device_type, device))
    specs = _pick(specs, limit, sample)
    rates = _history_rates(db, device)
    floor = options.timing.warmup_min_time_s + options.timing.min_time_s
    rows = []
    for spec in specs:
        fam = families.get(spec.family)
        cfg = fam.config(dict(spec.config))
        est = memory.predict(
            spec.family, cfg, spec.precision, spec.optimizer, device_type=device_type
        )
        flops = fam.train_flops(cfg)
        rate = rates.get((spec.family, spec.precision))
        rows.append(
            {
                "family": spec.family,
                "config": dict(cfg.__dict__),
                "precision": spec.precision,
                "optimizer": spec.optimizer,
                **spec.options,
                "params": fam.params(cfg),
                "flops_per_step": flops,
                "predicted_mem_bytes": est.total,
                "predicted_mem_lower_bytes": est.lower_bound,
                "fits": None if capacity is None else memory.fits(est, capacity),
                "est_time_s": floor + (30 * flops / rate if rate else 0.0),
                "est_time_is_floor": rate is None,
            }
        )
    return rows


def _mapping(family: str, config: Any) -> dict[str, Any]:
    """A config given to the API as a mapping of field = value (None: the defaults)."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigError(f"{family} config", config, "must be a mapping of field = value")
    return dict(config)


def dry_run_count(
    preset: str = "quick",
    *,
    precisions: Sequence[str] | None = None,
    optimizer: str | None = None,
    device: str = "auto",
    axes: Mapping[str, Sequence[Any]] | None = None,
) -> int:
    """How many runs `run` would plan, counted without estimating any of them."""
    _, specs = _plan(preset, precisions, optimizer, axes)
    _, device_type = device_capacity(device)
    return len(presets.resolve_native(specs, native_precisions(device_type, device))[0])


def _pick(specs: list[RunSpec], limit: int | None, sample: int | None) -> list[RunSpec]:
    if limit is not None:
        specs = specs[:limit]
    if sample is not None and len(specs) > sample:
        step = len(specs) / sample
        specs = [specs[int(i * step)] for i in range(sample)]
    return specs


def _plan(
    preset: str,
    precisions: Sequence[str] | None,
    optimizer: str | None,
    axes: Mapping[str, Sequence[Any]] | None = None,
):
    """Load and validate everything a run needs, before any work starts."""
    sweep = presets.get(preset)
    return sweep, sweep.specs(precisions, [optimizer] if optimizer else None, axes)


def _check_study(study: Mapping[str, Any]) -> None:
    """`bench`'s study keywords: only the fields of paradnn.config.AXES."""
    from paradnn.config import AXES

    for name in study:
        if name not in AXES.values():
            allowed = ", ".join(AXES.values())
            raise ConfigError("bench option", name, f"unknown; study axes are {allowed}")


def _history_rates(db: str, device: str) -> dict[tuple[str, str], float]:
    """Median achieved FLOP/s per (family, precision) of earlier ok runs on this device type."""
    import statistics
    from pathlib import Path

    if not Path(db).exists():
        return {}
    kind = None if device == "auto" else device.split(":")[0]
    by: dict[tuple[str, str], list[float]] = {}
    with open_store(db, readonly=True) as store:
        for r in store.runs(status="ok"):
            if r["achieved_flops"] and (kind is None or r["device"].startswith(kind)):
                by.setdefault((r["family"], r["precision"]), []).append(r["achieved_flops"])
    return {k: statistics.median(v) for k, v in by.items()}


def results(db: str = DEFAULT_DB, **filters: Any) -> list[dict[str, Any]]:
    with open_store(db, readonly=True) as store:
        return store.runs(**filters)


def side_table(table: str, db: str = DEFAULT_DB, **where: Any) -> list[dict[str, Any]]:
    """Rows of `ceilings`, `ops` or `op_profile`."""
    with open_store(db, readonly=True) as store:
        return store.rows(table, {k: v for k, v in where.items() if v is not None})
