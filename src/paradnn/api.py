"""The library behind the CLI: each command calls one function here."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from paradnn import families, presets
from paradnn.config import RunOptions
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
) -> RunRecord:
    """Measure one configuration in a worker process, as `run` does (same isolation, same
    environment, same run key), and store it; a config measured before gets a new attempt.
    Bad input raises before any work starts; `on_event` hears the phases while it runs."""
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
    spec = RunSpec(family, dict(cfg.__dict__), precision, optimizer)
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
) -> list[RunRecord]:
    """Run a preset or sweep file in worker processes; each result is stored as it lands, and
    a second call with the same arguments resumes where the first stopped."""
    from paradnn.runner.supervisor import Supervisor

    sweep, specs = _plan(preset, precisions, optimizer)
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
    with open_store(db) as store:
        sup = Supervisor(store, options, settings, sweep=sweep.name, on_event=on_event)
        return sup.run(specs)


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
) -> list[dict[str, Any]]:
    """What `run` would do, without torch: each config with its parameters, FLOPs per step,
    predicted memory (and whether it fits this machine's device) and a time estimate.

    The estimate is the timing policy's minimum (warm-up + timed phase) plus 30 steps at the
    median FLOP/s that earlier runs of the same family and precision reached in `db` on this
    kind of device; with no such history it is only that minimum, marked `≥`.

    `limit`: only the first `limit` runs; `sample`: an even sample of that many runs across the
    whole sweep (for the totals of a huge sweep, in seconds instead of minutes)."""
    from paradnn import memory

    sweep, specs = _plan(preset, precisions, optimizer)
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
) -> int:
    """How many runs `run` would plan, counted without estimating any of them."""
    _, specs = _plan(preset, precisions, optimizer)
    _, device_type = device_capacity(device)
    return len(presets.resolve_native(specs, native_precisions(device_type, device))[0])


def _pick(specs: list[RunSpec], limit: int | None, sample: int | None) -> list[RunSpec]:
    if limit is not None:
        specs = specs[:limit]
    if sample is not None and len(specs) > sample:
        step = len(specs) / sample
        specs = [specs[int(i * step)] for i in range(sample)]
    return specs


def _plan(preset: str, precisions: Sequence[str] | None, optimizer: str | None):
    """Load and validate everything a run needs, before any work starts."""
    sweep = presets.get(preset)
    return sweep, sweep.specs(precisions, [optimizer] if optimizer else None)


def native_precisions(device_type: str, device: str = "auto") -> list[str]:
    """The precisions the device runs natively, torch-free (NVML for a GPU's capability): what
    a dry run expands `native` to. A run asks its worker, which knows for certain."""
    from paradnn import precisions as precs

    capability = None
    if device_type == "cuda":
        try:
            import pynvml

            pynvml.nvmlInit()
            try:
                index = int(device.split(":")[1]) if ":" in device else 0
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                capability = tuple(pynvml.nvmlDeviceGetCudaComputeCapability(handle))
            finally:
                pynvml.nvmlShutdown()
        except Exception:
            capability = None
    return precs.native_set(device_type, cuda_capability=capability)


def device_capacity(device: str) -> tuple[int | None, str]:
    """(memory, device type) of the device a run would use, torch-free: NVML for GPUs, the
    host otherwise. The memory is None for a GPU that NVML cannot see."""
    from paradnn.runner.worker import host_memory_bytes

    if device == "cpu":
        return host_memory_bytes(), "cpu"
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            index = int(device.split(":")[1]) if ":" in device else 0
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            return int(pynvml.nvmlDeviceGetMemoryInfo(handle).total), "cuda"
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVIDIA driver: `auto` means the CPU, `cuda` is unknown
        return (host_memory_bytes(), "cpu") if device == "auto" else (None, "cuda")


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


def results(db: str = DEFAULT_DB, **filters: Any) -> list[dict[str, Any]]:
    with open_store(db, readonly=True) as store:
        return store.runs(**filters)


def side_table(table: str, db: str = DEFAULT_DB, **where: Any) -> list[dict[str, Any]]:
    """Rows of `ceilings`, `ops` or `op_profile`."""
    with open_store(db, readonly=True) as store:
        return store.rows(table, {k: v for k, v in where.items() if v is not None})


def report(
    dbs: Sequence[str],
    out: str = "report",
    progress: Callable[[str], None] | None = None,
    include_noisy: bool = False,
):
    """Write the HTML report (+ figures/ and tables/) of one or more databases into `out`.
    Noisy runs are left out of every figure and comparison unless `include_noisy`."""
    from paradnn import report as report_mod

    return report_mod.build(
        list(dbs) or [DEFAULT_DB], out, progress=progress, include_noisy=include_noisy
    )


def compare(
    dbs: Sequence[str],
    by: str,
    a: str,
    b: str,
    metric: str = "examples_per_s",
    family: str | None = None,
    include_noisy: bool = False,
):
    """Speedup of group b over group a (by platform, precision, version, db, attempt, …) per
    matched config, with a bootstrap CI and a call each; noisy runs left out unless asked."""
    from paradnn import analysis

    data = analysis.load(list(dbs) or [DEFAULT_DB])
    return analysis.compare(
        data, by, a, b, metric=metric, family=family, include_noisy=include_noisy
    )


def family_info() -> list[dict[str, Any]]:
    out = []
    for name in families.names():
        fam = families.get(name)
        default = fam.default_config()
        out.append(
            {
                "name": name,
                "title": fam.title,
                "kind": fam.kind,
                "fields": {f.name: getattr(default, f.name) for f in fam.fields()},
                "paper_space": {k: list(v) for k, v in fam.paper_space.items()},
                "paper_configs": _space_size(fam.paper_space),
                "default_params": fam.params(default),
                "default_train_flops": fam.train_flops(default),
            }
        )
    return out


def _space_size(space: Mapping[str, Sequence[Any]]) -> int:
    n = 1
    for values in space.values():
        n *= len(values)
    return n


# --- simulate: the what-if accelerator model (paradnn.sim, torch-free) ---------------------


def simulate(
    platform: str,
    family: str | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    preset: str | None = None,
    precision: str | None = None,
    optimizer: str | None = None,
    chips: int = 1,
    topology: str | None = None,
    overlap: float = 0.0,
    concurrent: bool = False,
) -> list[dict[str, Any]]:
    """Predicted step time, utilization and bottleneck of one config (``family`` + ``config``)
    or of every run of a preset, on ``platform`` (a database id or a TOML file). Rows are
    predictions (``kind = "prediction"``); a preset run at a precision the chip has no peak for
    gets a row with null predictions and the reason. Bad input raises before any work."""
    from paradnn.config import OPTIMIZERS, PRECISIONS
    from paradnn.sim import chip as sim_chip
    from paradnn.sim.interconnect import MAX_CHIPS, parse_topology
    from paradnn.sim.model import KIND, predict
    from paradnn.validate import int_at_least, number_in, one_of

    if (family is None) == (preset is None):
        raise ConfigError("workload", family or preset, "give either --preset or a FAMILY")
    if precision is not None:
        one_of("--precision", precision, PRECISIONS)
    if optimizer is not None:
        one_of("--optimizer", optimizer, OPTIMIZERS)
    int_at_least("--chips", chips, 1, MAX_CHIPS)
    number_in("--overlap", overlap, 0.0, 1.0)
    topo = parse_topology(topology) if topology else None
    if topo is not None and chips == 1:
        chips = topo.chips
    chip = sim_chip.load(platform)
    if chips > 1:
        chip.require_link()
    if preset is not None:
        specs = _plan(preset, [precision] if precision else None, optimizer)[1]
        # `native` on a what-if chip: the low precisions it has a dense peak for
        lows = [p for p in PRECISIONS if p != "fp32" and chip.platform.peak(p) is not None]
        specs, _ = presets.resolve_native(specs, ["fp32", *lows])
    else:
        cfg = families.get(family).config(_mapping(family, config))
        chip.peak(precision or "bf16")
        specs = [RunSpec(family, dict(cfg.__dict__), precision or "bf16", optimizer or "rmsprop")]
    rows = []
    for spec in specs:
        if chip.platform.peak(spec.precision) is None:
            rows.append(
                {
                    "kind": KIND,
                    "family": spec.family,
                    "config": dict(spec.config),
                    "platform": chip.id,
                    "precision": spec.precision,
                    "predicted_step_s": None,
                    "reason": f"{chip.id} has no dense {spec.precision} peak",
                }
            )
            continue
        p = predict(
            spec.family,
            spec.config,
            chip,
            spec.precision,
            optimizer=spec.optimizer,
            chips=chips,
            topology=topo,
            overlap=overlap,
            concurrent=concurrent,
        )
        rows.append(p.row())
    keys = list(dict.fromkeys(k for r in rows for k in r))  # skipped rows: same columns, null
    return [{k: r.get(k) for k in keys} for r in rows]


def simulate_scaling(
    platform: str,
    family: str,
    config: Mapping[str, Any] | None = None,
    *,
    precision: str = "bf16",
    optimizer: str = "rmsprop",
    max_chips: int = 1024,
    overlap: float = 0.0,
    concurrent: bool = False,
) -> list[dict[str, Any]]:
    """Predicted weak-scaling curve (1, 2, 4 … ``max_chips`` chips) of one config."""
    from paradnn.config import OPTIMIZERS, PRECISIONS
    from paradnn.sim import chip as sim_chip
    from paradnn.sim.interconnect import MAX_CHIPS
    from paradnn.sim.model import scaling
    from paradnn.validate import int_at_least, number_in, one_of

    one_of("--precision", precision, PRECISIONS)
    one_of("--optimizer", optimizer, OPTIMIZERS)
    int_at_least("--scaling", max_chips, 1, MAX_CHIPS)
    number_in("--overlap", overlap, 0.0, 1.0)
    config = families.get(family).config(_mapping(family, config))
    chip = sim_chip.load(platform)
    chip.require_link()
    return scaling(
        family,
        dict(config.__dict__),
        chip,
        precision,
        max_chips=max_chips,
        optimizer=optimizer,
        overlap=overlap,
        concurrent=concurrent,
    )


def simulate_mxu_study(batch: int = 8, dataflow: str = "ws") -> list[dict[str, Any]]:
    """The seed's MXU-size argument: utilization of 1×256², 4×128² and 16×64² on CNNs."""
    from paradnn.sim.studies import mxu_study

    return mxu_study(batch, dataflow)


def simulate_precision_study() -> list[dict[str, Any]]:
    """bf16 vs fp16 vs fp32 inputs to a matmul (fp32 accumulation), against float64."""
    from paradnn.sim.precision import precision_study

    return precision_study()


def simulate_validate(
    db: str = DEFAULT_DB, platform: str | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Predict every measured ok run in ``db`` on its device's chip: (per-run rows, per-family
    MdAPE rows)."""
    from paradnn.sim.validate import validate_db

    df, summary = validate_db(db, platform)
    clean = df.astype(object).where(df.notna(), None)
    return clean.to_dict("records"), summary.astype(object).where(summary.notna(), None).to_dict(
        "records"
    )
