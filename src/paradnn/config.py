"""Run options (everything besides the model config that changes what a measurement means),
the run description that carries them (`RunSpec`), and how a sweep runs and where."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from paradnn import backends
from paradnn.axes import (
    AXES,
    DATA_SOURCES,
    LOADER_SETTINGS,
    MAX_LOADER_WORKERS,
    MAX_PREFETCH,
    MAX_PROCS,
    MODES,
    SCALINGS,
    STRATEGIES,
    STUDY,
    in_effect,
    listing,
)
from paradnn.errors import ConfigError
from paradnn.optimizers import IMPLEMENTATIONS, OPTIMIZERS
from paradnn.precisions import NATIVE, POLICIES, PRECISIONS, precision_flags
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
    "DATA_SOURCES",
    "ENGINES",
    "EXECUTORS",
    "IMPLEMENTATIONS",
    "LOADER_SETTINGS",
    "MAX_LOADER_WORKERS",
    "MAX_PREFETCH",
    "MAX_PROCS",
    "MODES",
    "OPTIMIZERS",
    "POLICIES",
    "PRECISIONS",
    "QUICK_POLICY",
    "SCALINGS",
    "STRATEGIES",
    "ExecutorSettings",
    "RunOptions",
    "RunSpec",
    "SweepSettings",
    "TimingPolicy",
    "check_device",
    "check_threads",
    "precision_flags",
    "with_fields",
]

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


def _finite(value: object) -> bool:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return ok and math.isfinite(value)  # type: ignore[arg-type]


# The warm-up judges convergence by the medians of its last two windows of this many steps.
WARMUP_WINDOW = 5


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

    @property
    def warmup_least_steps(self) -> int:
        """Steps before the warm-up may call itself converged: it compares the medians of its
        last two windows of WARMUP_WINDOW steps, so it needs both."""
        return max(self.warmup_min_steps, 2 * WARMUP_WINDOW)

    def least_seconds(self, step_s: float) -> float:
        """The fewest seconds measure/timer.py spends warming up and timing a run whose step
        takes `step_s`: the one rule behind the dry run's and the GPU sample's estimates. A
        steady step converges after warmup_least_steps and warmup_min_time_s, unless a cap
        (warmup_max_steps, warmup_max_time_s) stops the warm-up first."""
        warm = min(
            max(self.warmup_min_time_s, self.warmup_least_steps * step_s),
            self.warmup_max_steps * step_s,
            self.warmup_max_time_s,
        )
        timed = max(self.min_time_s, self.min_samples * max(step_s, self.min_block_s))
        return warm + timed


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


DEVICES = ("auto", "cpu", "cuda", "cuda:N")  # the forms a device takes (N: a GPU's index)


def check_device(device: str) -> None:
    """Syntax only (torch-free): whether the device exists is the worker's to find out."""
    if not isinstance(device, str) or not re.fullmatch(r"auto|cpu|cuda(:[0-9]{1,4})?", device):
        raise ConfigError("device", device, "must be " + listing(DEVICES))


def check_threads(threads: int | None) -> None:
    """CPU threads for torch: None (paradnn chooses from the free cores) or 1 to MAX_THREADS."""
    if threads is not None:
        int_at_least("threads", threads, 1, MAX_THREADS)


@dataclass(frozen=True)
class RunOptions:
    """Everything besides the model config that a run is measured with. The study axes (the
    fields paradnn.axes declares: precision, optimizer, mode, procs, ...) are what a sweep
    varies; the other fields say where and how (device, threads, timing, energy, ...)."""

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
    backend: str = "torch"  # paradnn.backends (docs/jax.md); in the key only when not torch
    cudnn_benchmark: bool = True  # cuDNN's autotuner on CUDA (docs/modes.md); key: when off
    seed: int = 0
    profile: bool = False  # also record a per-op profile of extra steps (not in the key)
    energy: bool = False  # measure energy over the timed window (docs/energy.md)
    energy_period_s: float = 0.05  # power sampling period; NVML polled faster returns junk
    energy_idle_s: float = 2.0  # idle baseline before a sweep (0: none); reported, not subtracted
    allow_emulated: bool = False  # run a low precision the device lacks, labelled emulated
    timing: TimingPolicy = field(default_factory=TimingPolicy)

    def __post_init__(self) -> None:
        for axis in AXES:  # each study axis as paradnn.axes declares it
            axis.check(getattr(self, axis.field))
        if self.procs > 1 and self.data_source != "device":
            raise ConfigError(
                "data_source",
                self.data_source,
                f"must be device with procs = {self.procs} (data-parallel ranks train on "
                "device data; docs/infeed.md)",
            )
        if self.data_source != "device" and not backends.get(self.backend).infeed:
            raise ConfigError(
                "data_source",
                self.data_source,
                f"must be device with backend = {self.backend} (the infeed study runs on "
                "PyTorch's DataLoader; docs/infeed.md)",
            )
        check_device(self.device)
        check_threads(self.threads)
        int_at_least("seed", self.seed, 0, SEED_MAX)
        for name in ("energy", "allow_emulated", "profile"):
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
        """What enters the run key: each study axis as paradnn.axes says (always, or only off
        its default, and only where it changes what is measured), in effect (fp32's `pure`
        policy is `mixed`). Timing budgets do not: they change precision, not meaning.

        An energy run is its own measurement (a longer window, a sampler thread beside the
        steps), so `energy` enters the key, only when on: keys of other runs are unchanged."""
        values = self.axis_values()
        key: dict[str, object] = {a.field: a.value_in(values) for a in AXES if a.in_key(values)}
        if self.energy:
            key["energy"] = True
        return key

    def axis_values(self) -> dict[str, object]:
        """The value of every study axis (paradnn.axes), by field."""
        return {a.field: getattr(self, a.field) for a in AXES}

    def study(self) -> dict[str, object]:
        """The study axes besides precision and optimizer, as a sweep or a row names them."""
        return {a.field: getattr(self, a.field) for a in STUDY}

    def in_effect(self) -> RunOptions:
        """These options as the run has them in effect (paradnn.axes.in_effect: a strategy on
        one process, a loader's settings without a pipeline at their defaults; fp32's pure
        policy mixed)."""
        return dataclasses.replace(self, **in_effect(self.axis_values()))

    def as_dict(self) -> dict[str, Any]:
        """Every field, the timing policy's too: plain JSON (`from_dict` reads it back)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunOptions:
        return cls(**{**data, "timing": TimingPolicy(**data.get("timing", {}))})


def with_fields(options: RunOptions | None, what: str, fields: Mapping[str, Any]) -> RunOptions:
    """`options` (None: the defaults) with `fields` (RunOptions fields by name) in place,
    checked: an unknown name is one ConfigError naming `what` (e.g. `bench option`) and the
    fields there are. The library's one way to make run options from keywords."""
    names = [f.name for f in dataclasses.fields(RunOptions)]
    for name in fields:
        if name not in names:
            raise ConfigError(what, name, "unknown; run options are " + ", ".join(names))
    if options is None:
        return RunOptions(**fields)
    return dataclasses.replace(options, **fields) if fields else options


@dataclass(frozen=True)
class RunSpec:
    """A run's description, whole: the family, its config (field -> value) and every run
    option. Planning makes it once (api.plan, the sweep's every combination); the supervisor,
    the worker, the memory prediction, the record and a compiled run's second process take it
    as it is. Its identity in an environment is the run key (runner/start.py).

    `native`: a placeholder for every low precision the device runs natively (a sweep's
    `precisions = ["native"]`), replaced once the device is known (presets.resolve_native);
    its options' precision is not used until then."""

    family: str
    config: Mapping[str, Any]
    options: RunOptions = field(default_factory=RunOptions)
    native: bool = False

    @property
    def precision(self) -> str:
        return NATIVE if self.native else self.options.precision

    @property
    def optimizer(self) -> str:
        return self.options.optimizer

    def as_dict(self) -> dict[str, Any]:
        """The description as plain JSON values (`from_dict` reads it back)."""
        return {
            "family": self.family,
            "config": dict(self.config),
            "options": self.options.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSpec:
        return cls(data["family"], data["config"], RunOptions.from_dict(data["options"]))

    def to_json(self) -> str:
        """One line of JSON a second process reads back (`from_json`)."""
        import json

        return json.dumps(self.as_dict())

    @classmethod
    def from_json(cls, text: str) -> RunSpec:
        import json

        return cls.from_dict(json.loads(text))


# Where a sweep's runs execute: paradnn's own worker pool here (`local`), or a cluster engine,
# named by its class (module:Class, imported only when chosen: runner/cluster.py opens it).
ENGINES = {
    "ray": "paradnn.runner.ray_engine:RayEngine",
    "slurm": "paradnn.runner.slurm_engine:SlurmEngine",
}
EXECUTORS = ("local", *ENGINES)
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
    # times, when the load that made it noisy has dropped; else at the end of the sweep, after
    # waiting at most remeasure_backoff_s once for the load to drop (runner/busy.py).
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
