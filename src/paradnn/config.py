"""Run options: everything besides the model config that changes what a measurement means."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from paradnn.errors import ConfigError
from paradnn.optimizers import IMPLEMENTATIONS, OPTIMIZERS
from paradnn.precisions import POLICIES, PRECISIONS, effective_policy, precision_flags
from paradnn.validate import (
    SEED_MAX,
    int_at_least,
    number_at_least,
    number_in,
    one_of,
    plain_text,
)

__all__ = [
    "AXES",
    "BACKENDS",
    "DATA_SOURCES",
    "EXECUTORS",
    "IMPLEMENTATIONS",
    "KEYED_WHEN_SET",
    "LOADER_SETTINGS",
    "MODES",
    "OPTIMIZERS",
    "POLICIES",
    "PRECISIONS",
    "QUICK_POLICY",
    "SCALINGS",
    "STRATEGIES",
    "ExecutorSettings",
    "RunOptions",
    "SweepSettings",
    "TimingPolicy",
    "check_device",
    "for_precision",
    "precision_flags",
    "relevant_axes",
]

# Execution modes (docs/modes.md): eager, or torch.compile's forward+loss under one of its modes.
# `reduce-overhead` captures CUDA graphs: `unsupported` (with the reason) on a CPU.
MODES = ("eager", "compile", "max-autotune", "reduce-overhead")
# Study axes: sweep-file key -> RunOptions field. A sweep runs every value of each axis it sets
# (`modes = ["eager", "compile"]`), the CLI and the API take the same values, and RunOptions
# validates them (one place says what is allowed). A study adds its field to RunOptions and one
# entry here; nothing else in the pipeline changes.
AXES: dict[str, str] = {
    "modes": "mode",
    "procs": "procs",  # data-parallel runs (docs/scaling.md): procs = [1, 2, 4]
    "strategies": "strategy",
    "scalings": "scaling",
    # Host data infeed (docs/infeed.md): where each step's batch comes from, and the loader's
    # settings (these matter, and enter the run key, only for data_source = pipeline).
    "data_sources": "data_source",
    "loader_workers": "loader_workers",
    "pin_memory": "pin_memory",
    "prefetch_factors": "prefetch_factor",
    "persistent_workers": "persistent_workers",
    "backends": "backend",  # docs/jax.md: backends = ["torch", "jax"]
    # issue 35 (docs/optimizers.md): torch.optim's implementation, and the precision policy
    # (pure: 16-bit weights and optimizer state; for fp32 and tf32 the same run as mixed)
    "optimizer_impls": "optimizer_impl",
    "precision_policies": "precision_policy",
}
# Fields that enter the run key only when they differ from their default, so the keys of runs
# that do not use a study never change (`mode` predates this and is always in the key).
KEYED_WHEN_SET: tuple[str, ...] = (
    *("procs", "strategy", "scaling", "backend"),
    *("data_source", "loader_workers", "pin_memory", "prefetch_factor", "persistent_workers"),
)
# Data sources (docs/infeed.md): `device` synthetic tensors made once on the device (ParaDnn's
# synthetic input, the default); `host` pinned host tensors copied to the device every step
# (non_blocking); `pipeline` JPEG images and token files written by paradnn to a local cache,
# decoded and augmented by a torch DataLoader every step.
DATA_SOURCES = ("device", "host", "pipeline")
# The DataLoader settings (RunOptions fields): they change what is measured only for
# data_source = pipeline. One tuple for the sweep, the run key and the record's nulls.
LOADER_SETTINGS = ("loader_workers", "pin_memory", "prefetch_factor", "persistent_workers")
MAX_LOADER_WORKERS = 256  # DataLoader processes of one run (docs/limits.md)
MAX_PREFETCH = 64  # batches each loader worker keeps ready
# The framework that builds and runs the step (docs/jax.md): PyTorch, or JAX/XLA (the optional
# extra paradnn[jax]; one jitted step with donated buffers, XLA's cost analysis beside it).
BACKENDS = ("torch", "jax")
# Data-parallel runs (docs/scaling.md): N processes, how the model is replicated, and whether
# the batch is per rank (weak scaling) or split across the ranks (strong scaling).
STRATEGIES = ("ddp", "fsdp")
SCALINGS = ("weak", "strong")
MAX_PROCS = 4096  # ranks of one run on one machine (docs/limits.md); torchrun spans machines
MAX_THREADS = 4096  # more than the cores of any host torch runs on (docs/limits.md)
MAX_ENERGY_IDLE_S = 600.0  # ten minutes of idle baseline is already far past what it needs
MAX_TIMING_S = 86_400.0  # a day: any time budget of TimingPolicy (docs/limits.md)
MAX_TIMING_COUNT = 1_000_000  # samples, warm-up steps, steps per chunk
MAX_WORKERS = 1024  # a sweep's worker processes: more than any host's cores
MAX_TIMEOUT_S = 7 * 86_400.0  # a week per config
MAX_RECYCLE_EVERY = 1_000_000  # runs per worker before a fresh one
MAX_CONFIGS_PER_JOB = 10_000  # configs one Slurm array element runs in turn
MAX_REMEASURE = 10  # re-measures of one noisy run: beyond this the machine is not going quiet
REMEASURE_BACKOFF_S = 10.0  # the first re-measure's wait; each next one waits twice as long


def relevant_axes(combo: dict[str, object]) -> dict[str, object]:
    """A combination of study-axis values without those that change nothing measured: the
    loader's settings unless the data source is a pipeline (docs/infeed.md). A sweep runs each
    remaining combination once."""
    if combo.get("data_source", "device") == "pipeline":
        return dict(combo)
    return {k: v for k, v in combo.items() if k not in LOADER_SETTINGS}


def for_precision(combo: dict[str, object], precision: str) -> dict[str, object]:
    """A combination of study-axis values as a run of `precision` has them: fp32 and tf32
    have one precision policy (mixed), so a sweep runs their pure twin once."""
    if "precision_policy" not in combo:
        return combo
    policy = effective_policy(precision, str(combo["precision_policy"]))
    return {**combo, "precision_policy": policy}


def _finite(value: object) -> bool:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return ok and math.isfinite(value)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TimingPolicy:
    min_samples: int = 10
    max_samples: int = 1000
    target_ci_rel: float = 0.02
    confidence: float = 0.95
    min_time_s: float = 1.0
    max_time_s: float = 10.0
    warmup_min_steps: int = 5
    warmup_min_time_s: float = 0.3
    warmup_max_steps: int = 200
    warmup_max_time_s: float = 30.0
    warmup_tolerance: float = 0.05
    min_block_s: float = 0.001
    max_chunk: int = 50
    # Energy: the timed window lasts at least this long, so counter resolution gives ≤1% error
    # (set from the energy sources when --energy is on; it also lifts the time and sample caps).
    min_window_s: float = 0.0

    def __post_init__(self) -> None:
        # Upper bounds (docs/limits.md): a day of timing per config, a million samples or
        # steps; past them a run never ends in practice, and floats stay finite.
        count, day = MAX_TIMING_COUNT, MAX_TIMING_S
        int_at_least("timing.min_samples", self.min_samples, 2, count)
        int_at_least("timing.max_samples", self.max_samples, self.min_samples, count)
        number_at_least("timing.target_ci_rel", self.target_ci_rel, 0.0, strict=True, high=1.0)
        if not _finite(self.confidence) or not 0.5 <= self.confidence < 1.0:
            raise ConfigError("timing.confidence", self.confidence, "must be in [0.5, 1)")
        number_at_least("timing.min_time_s", self.min_time_s, 0.0, high=day)
        number_at_least("timing.max_time_s", self.max_time_s, self.min_time_s, high=day)
        int_at_least("timing.warmup_min_steps", self.warmup_min_steps, 1, count)
        int_at_least("timing.warmup_max_steps", self.warmup_max_steps, self.warmup_min_steps, count)
        number_at_least("timing.warmup_min_time_s", self.warmup_min_time_s, 0.0, high=day)
        number_at_least("timing.warmup_max_time_s", self.warmup_max_time_s, 0.0, high=day)
        number_at_least(
            "timing.warmup_tolerance", self.warmup_tolerance, 0.0, strict=True, high=1.0
        )
        number_at_least("timing.min_block_s", self.min_block_s, 0.0, high=3600.0)
        int_at_least("timing.max_chunk", self.max_chunk, 1, count)
        number_at_least("timing.min_window_s", self.min_window_s, 0.0, high=day)


# A first look: the same rules on smaller budgets and a ±5% target (publication sweeps keep ±2%);
# its runs are judged against the target they asked for (kept in each record's `load`).
QUICK_POLICY = TimingPolicy(
    min_time_s=0.3,
    max_time_s=3.0,
    warmup_min_time_s=0.2,
    warmup_max_time_s=5.0,
    target_ci_rel=0.05,
)


MIN_BUDGET_S = 1.0  # `calibrate --budget`: a second of matmuls at least


def check_budget(budget_s: float | None) -> None:
    """`calibrate --budget`: seconds of matmuls per precision, at least 1, at most a day."""
    if budget_s is not None:
        number_in("budget", budget_s, MIN_BUDGET_S, MAX_TIMING_S)


def check_device(spec: str) -> None:
    """Syntax only (torch-free): whether the device exists is the worker's to find out."""
    if not isinstance(spec, str) or not re.fullmatch(r"auto|cpu|cuda(:[0-9]{1,4})?", spec):
        raise ConfigError("device", spec, "must be auto, cpu, cuda or cuda:N")


@dataclass(frozen=True)
class RunOptions:
    precision: str = "fp32"
    optimizer: str = "rmsprop"
    # torch.optim's implementation (paradnn.optimizers.IMPLEMENTATIONS; auto: torch's choice) and
    # the precision policy (mixed: fp32 master weights under autocast; pure: 16-bit weights and
    # optimizer state). Each enters the run key only when not its default (issue 35).
    optimizer_impl: str = "auto"
    precision_policy: str = "mixed"
    device: str = "auto"
    threads: int | None = None  # None: the free cores (host.choose_threads)
    mode: str = "eager"
    procs: int = 1  # data-parallel processes (ranks); 1 = the ordinary single-process run
    strategy: str = "ddp"  # ddp (DistributedDataParallel) or fsdp (FSDP2 fully_shard)
    scaling: str = "weak"  # weak: `batch` per rank; strong: `batch` split across the ranks
    data_source: str = "device"  # device, host or pipeline (docs/infeed.md)
    loader_workers: int = 2  # pipeline: DataLoader num_workers (0: load in the run's process)
    pin_memory: bool = True  # pipeline: page-locked batches (a CUDA device only; else ignored)
    prefetch_factor: int = 2  # pipeline: batches each worker keeps ready
    persistent_workers: bool = True  # pipeline: keep the workers across epochs
    backend: str = "torch"  # torch or jax (docs/jax.md); in the key only when not torch
    seed: int = 0
    profile: bool = False  # also record a per-op profile of extra steps (not in the key)
    energy: bool = False  # measure energy over the timed window (docs/energy.md)
    energy_period_s: float = 0.05  # power sampling period; NVML polled faster returns junk
    energy_idle_s: float = 2.0  # idle baseline before a sweep (0: none); reported, not subtracted
    allow_emulated: bool = False  # run a low precision the device lacks, labelled emulated
    timing: TimingPolicy = field(default_factory=TimingPolicy)

    def __post_init__(self) -> None:
        one_of("precision", self.precision, PRECISIONS)
        one_of("optimizer", self.optimizer, OPTIMIZERS)
        one_of("optimizer_impl", self.optimizer_impl, IMPLEMENTATIONS)
        one_of("precision_policy", self.precision_policy, POLICIES)
        one_of("mode", self.mode, MODES)
        int_at_least("procs", self.procs, 1, MAX_PROCS)
        one_of("strategy", self.strategy, STRATEGIES)
        one_of("scaling", self.scaling, SCALINGS)
        one_of("data_source", self.data_source, DATA_SOURCES)
        int_at_least("loader_workers", self.loader_workers, 0, MAX_LOADER_WORKERS)
        int_at_least("prefetch_factor", self.prefetch_factor, 1, MAX_PREFETCH)
        if self.procs > 1 and self.data_source != "device":
            raise ConfigError(
                "data_source",
                self.data_source,
                f"must be device with procs = {self.procs} (data-parallel ranks train on "
                "device data; docs/infeed.md)",
            )
        one_of("backend", self.backend, BACKENDS)
        if self.backend != "torch" and self.data_source != "device":
            raise ConfigError(
                "data_source",
                self.data_source,
                f"must be device with backend = {self.backend} (the infeed study runs on "
                "PyTorch's DataLoader; docs/infeed.md)",
            )
        check_device(self.device)
        if self.threads is not None:
            int_at_least("threads", self.threads, 1, MAX_THREADS)
        int_at_least("seed", self.seed, 0, SEED_MAX)
        for name in ("energy", "allow_emulated", "profile", "pin_memory", "persistent_workers"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, getattr(self, name), "must be true or false")
        ok = isinstance(self.energy_period_s, (int, float)) and not isinstance(
            self.energy_period_s, bool
        )
        if not ok or not 0.05 <= self.energy_period_s <= 10:
            raise ConfigError(
                "energy_period",
                self.energy_period_s,
                "must be seconds in [0.05, 10] (NVML polled faster than 50 ms returns zeros)",
            )
        number_in("energy_idle", self.energy_idle_s, 0.0, MAX_ENERGY_IDLE_S)
        if not isinstance(self.timing, TimingPolicy):
            raise ConfigError("timing", self.timing, "must be a TimingPolicy")

    def key_fields(self) -> dict[str, object]:
        """What enters the run key (timing budgets do not: they change precision, not meaning).

        An energy run is its own measurement (a longer window, a sampler thread beside the
        steps), so `energy` enters the key, only when on: keys of other runs are unchanged."""
        key: dict[str, object] = {
            "precision": self.precision,
            "optimizer": self.optimizer,
            "mode": self.mode,
        }
        if self.energy:
            key["energy"] = True
        if self.optimizer_impl != "auto":
            key["optimizer_impl"] = self.optimizer_impl
        if effective_policy(self.precision, self.precision_policy) != "mixed":
            key["precision_policy"] = self.precision_policy
        defaults = RunOptions.__dataclass_fields__
        for name in KEYED_WHEN_SET:
            value = getattr(self, name)
            if value != defaults[name].default:
                key[name] = value
        if self.procs == 1:  # one process: no replication, no split; the ordinary run
            key.pop("strategy", None)
            key.pop("scaling", None)
        if self.data_source != "pipeline":  # no loader: its settings change nothing measured
            for name in LOADER_SETTINGS:
                key.pop(name, None)
        return key

    def axis_values(self) -> dict[str, object]:
        """The value of every study axis (AXES), as a sweep or a row names them."""
        return {name: getattr(self, name) for name in AXES.values()}


EXECUTORS = ("local", "ray", "slurm")
MAX_ARRAY_SIZE = 1_000_000  # Slurm's own ceiling for MaxArraySize is 4,000,001; real ones ~1001


@dataclass(frozen=True)
class ExecutorSettings:
    """Where a sweep's runs execute (docs/cluster.md). `local` is paradnn's own worker pool;
    `ray` and `slurm` send each config to a cluster, where paradnn's isolated worker runs it,
    and return the records to this process, the store's only writer."""

    kind: str = "local"
    address: str | None = None  # ray: a cluster address (None: RAY_ADDRESS, else a local one)
    cpus_per_task: int | None = None  # CPUs each run asks for (its thread count); None: a node
    folder: str = "paradnn-slurm"  # slurm: submitit's shared folder (logs, pickled results)
    partition: str | None = None  # slurm: the partition to submit to
    configs_per_job: int = 4  # slurm: configs run one after another by one array element
    max_array_size: int = 1000  # slurm: arrays are split below the cluster's MaxArraySize
    cluster: str | None = None  # slurm: submitit's cluster ("local" runs the path without Slurm)

    def __post_init__(self) -> None:
        one_of("executor", self.kind, EXECUTORS)
        if self.address is not None and not plain_text(self.address, 500):
            raise ConfigError("address", self.address, "must be a Ray address like HOST:PORT")
        if self.cpus_per_task is not None:
            int_at_least("cpus_per_task", self.cpus_per_task, 1, MAX_THREADS)
        if not plain_text(self.folder, 4096):
            raise ConfigError("slurm_folder", self.folder, "must be a directory path")
        if self.partition is not None and not plain_text(self.partition, 200):
            raise ConfigError("partition", self.partition, "must be a Slurm partition name")
        int_at_least("configs_per_job", self.configs_per_job, 1, MAX_CONFIGS_PER_JOB)
        int_at_least("max_array_size", self.max_array_size, 1, MAX_ARRAY_SIZE)
        if self.cluster is not None:
            one_of("cluster", self.cluster, ("slurm", "local", "debug"))


@dataclass(frozen=True)
class SweepSettings:
    """How a sweep runs: worker processes, the time each run may take, when workers are
    replaced, and what is measured again (`paradnn run` / `bench` options)."""

    workers: int = 1
    timeout_s: float = 900.0
    recycle_every: int = 50
    predict: bool = True
    retry_failed: bool = False
    force: bool = False  # measure even what is finished (a new attempt): `paradnn bench`
    # A run that finishes ok but noisy is measured again, as a new attempt, up to this many
    # times, the k-th after remeasure_backoff_s × 2^(k-1) seconds (other runs go on meanwhile).
    # The CLI turns it on (run: 2, bench: 1; docs/runner.md#re-measuring-noisy-runs).
    remeasure: int = 0
    remeasure_backoff_s: float = REMEASURE_BACKOFF_S
    # a stored config measured with other settings (timing, energy, profile: not in its run
    # key) is measured again with these, as a new attempt (runner/resume.py)
    remeasure_changed: bool = False

    def __post_init__(self) -> None:
        # Upper bounds (docs/limits.md): more workers than any host has cores, a week per
        # config, a million runs per worker.
        int_at_least("workers", self.workers, 1, MAX_WORKERS)
        number_at_least("timeout", self.timeout_s, 0.0, strict=True, high=MAX_TIMEOUT_S)
        int_at_least("recycle_every", self.recycle_every, 1, MAX_RECYCLE_EVERY)
        int_at_least("remeasure", self.remeasure, 0, MAX_REMEASURE)
        number_at_least("remeasure_backoff", self.remeasure_backoff_s, 0.0, high=3600.0)
        for flag in ("predict", "retry_failed", "force", "remeasure_changed"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(flag, getattr(self, flag), "must be true or false")
