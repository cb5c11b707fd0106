"""The run record: one row per attempted configuration, failures included. Torch-free.

A record is immutable and built from typed parts, each written by one module:

| part | what | written by |
|---|---|---|
| `Identity` | run key, family, config, precision, optimizer, device, env | runner/start.py |
| `Outcome` | status, error, attempt, times, worker | runner/core.py, units.py (a dead worker) |
| `Counts` | params and FLOPs per step, analytic and counted | runner/start.py, a backend |
| `StepTimes` | median, CI, IQR, every sample, examples/s, FLOP/s | runner/core.py |
| `Memory` | measured peak | a backend (runner/execute.py, …) |
| `Prediction` | predicted peak and its lower bound | runner/supervisor.py (memory model) |
| `Utilization` | against the datasheet and the measured ceiling | utilization.py |
| `Energy` | J, W, J/sample, method, scope, idle | measure/energy/meter.py |
| `Quality` | good/noisy, reasons, load around the window | measure/quality.py |
| `Parallel` | N ranks, no_sync compute, all-reduce time and bandwidth | runner/distributed.py |
| `Compiled` | compile time cold/warm, graphs, breaks, recompiles | measure/compile.py |
| `Infeed` | data source, batch wait, infeed share, loader-only rate, host CPU | measure/infeed.py |
| `Xla` | JAX backend: lowering and compile time, XLA's FLOPs and bytes | runner/jax_execute.py |

The supervisor prepares the record (identity, counts, prediction) and the worker adds what it
measured: one writer per part. Every part carries `nulls` (field -> why it is null); the record
reads flat (`rec.step_time_s`) and flattens to one SQLite row (`as_dict`). A change is a new
record (`replace`, `with_part`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from paradnn.axes import AXES


class Status(StrEnum):
    """What became of a run (equal to its string, as stored)."""

    OK = "ok"
    OOM = "oom"
    PREDICTED_OOM = "predicted_oom"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    NAN = "nan"
    INVALID = "invalid"
    UNSUPPORTED = "unsupported"


STATUSES = tuple(s.value for s in Status)
QUALITIES = ("good", "noisy")
# What a comparison may group runs by (`compare --by`): the platform, every study axis with a
# column (paradnn.axes), the software, the thread count, the attempt, the database, and
# `engine` (torch-eager, torch-compile, …, jax: any torch mode against jax).
COMPARE_BY = (
    "platform",
    *(a.column for a in AXES if a.column is not None),
    "torch_version",
    "cuda_version",
    "hostname",
    "db",
    "threads",
    "device",
    "attempt",
    "engine",
)
# The rates a comparison may compare (`compare --metric`), and whether higher is better.
METRICS = {
    "examples_per_s": True,
    "achieved_flops": True,
    "step_time_s": False,
    "utilization_measured": True,
    "utilization_datasheet": True,
}


def run_key(family: str, config: dict[str, Any], options: dict[str, Any], fingerprint: str) -> str:
    """Identity of a measurement: resolved config + run options + environment fingerprint."""
    blob = json.dumps(
        {"family": family, "config": config, "options": options, "env": fingerprint},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _nulls() -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class Identity:
    run_key: str
    family: str
    config: dict[str, Any]
    precision: str
    optimizer: str
    device: str
    mode: str = "eager"
    backend: str = "torch"  # torch or jax (docs/jax.md)
    # mixed (fp32 master weights under autocast) or pure (16-bit weights and optimizer state);
    # the optimizer implementation that ran is in `flags` (docs/optimizers.md)
    precision_policy: str = "mixed"
    cudnn_benchmark: bool = True  # cuDNN's autotuner (CUDA runs; docs/modes.md)
    sweep: str | None = None
    device_name: str | None = None
    threads: int | None = None
    fingerprint: str | None = None
    env: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)
    emulated: bool = False  # a low precision run without native support (--allow-emulated)
    paradnn_version: str | None = None
    nulls: Mapping[str, str] = field(default_factory=_nulls)


@dataclass(frozen=True)
class Outcome:
    status: str
    error: str | None = None
    attempt: int | None = None  # assigned by the store: 1 + earlier rows of this run key
    started_at: str | None = None
    finished_at: str | None = None
    worker_pid: int | None = None
    worker_index: int | None = None  # how many runs this worker process did before this one
    nulls: Mapping[str, str] = field(default_factory=_nulls)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status = {self.status!r}: must be one of {', '.join(STATUSES)}")


@dataclass(frozen=True)
class Counts:
    params: int | None = None
    params_analytic: int | None = None
    flops_per_step: int | None = None  # counted (FlopCounterMode + corrections)
    flops_analytic: int | None = None
    flops_count_device: str | None = None
    examples_per_step: int | None = None
    nulls: Mapping[str, str] = field(default_factory=_nulls)


@dataclass(frozen=True)
class StepTimes:
    step_time_s: float | None = None  # median
    step_time_mean_s: float | None = None
    step_time_min_s: float | None = None
    step_time_iqr_s: float | None = None
    step_time_ci_low_s: float | None = None
    step_time_ci_high_s: float | None = None
    ci_rel: float | None = None
    n_samples: int | None = None
    steps_per_sample: int | None = None
    converged: bool | None = None
    stop_reason: str | None = None
    first_step_s: float | None = None
    warmup_steps: int | None = None
    warmup_s: float | None = None
    host_step_s: float | None = None
    samples: list[float] | None = None
    examples_per_s: float | None = None
    achieved_flops: float | None = None
    final_loss: float | None = None
    nulls: Mapping[str, str] = field(default_factory=_nulls)


@dataclass(frozen=True)
class Memory:
    peak_mem_bytes: int | None = None
    nulls: Mapping[str, str] = field(default_factory=_nulls)


@dataclass(frozen=True)
class Prediction:
    predicted_mem_bytes: int | None = None
    predicted_mem_lower_bytes: int | None = None
    nulls: Mapping[str, str] = field(default_factory=_nulls)


@dataclass(frozen=True)
class Utilization:
    utilization_datasheet: float | None = None
    utilization_measured: float | None = None  # stored as is, above 1 too (never clipped)
    # the run went faster than its measured ceiling (utilization_measured > 1): the ceiling is
    # beaten, the run is no headline (utilization.beaten); null exactly when
    # utilization_measured is (its reason in nulls)
    ceiling_beaten: bool | None = None
    nulls: Mapping[str, str] = field(default_factory=_nulls)


@dataclass(frozen=True)
class Energy:
    """Energy of the run's device over the timed window (--energy; docs/energy.md)."""

    energy_j: float | None = None
    energy_window_s: float | None = None
    avg_power_w: float | None = None  # energy_j / energy_window_s
    energy_per_step_j: float | None = None
    energy_per_sample_j: float | None = None
    samples_per_j: float | None = None
    energy_method: str | None = None  # nvml_energy_counter, nvml_power_instant, …, rapl_powercap
    energy_scope: str | None = None  # gpu, cpu_package
    energy_period_s: float | None = None  # power sampling period
    idle_power_w: float | None = None  # idle baseline before the sweep; reported, not subtracted
    energy: dict[str, Any] | None = None  # per device/domain detail, totals, sampling, idle
    nulls: Mapping[str, str] = field(default_factory=_nulls)


@dataclass(frozen=True)
class Quality:
    """A timed run is `good` or `noisy` (missed its CI target, ran under load, ...)."""

    quality: str | None = None
    quality_reasons: list[str] | None = None
    ci_half_rel: float | None = None  # half the CI's width over the median: the printed ±
    iqr_rel: float | None = None
    others_cpu_frac: float | None = None  # CPU time of other processes / (window × CPUs)
    load: dict[str, Any] | None = None
    nulls: Mapping[str, str] = field(default_factory=_nulls)

    def __post_init__(self) -> None:
        if self.quality is not None and self.quality not in QUALITIES:
            raise ValueError(f"quality = {self.quality!r}: must be one of {', '.join(QUALITIES)}")


SINGLE_PROCESS = "one process (procs = 1): no replicas, no collective to time"
PARALLEL_FIELDS = (
    "strategy",
    "scaling",
    "dist_backend",
    "global_batch",
    "rank_batch",
    "rank_threads",
    "compute_nosync_s",
    "allreduce_bytes",
    "allreduce_s",
    "allreduce_algbw",
    "allreduce_busbw",
    "overlap_frac",
    "failed_rank",
    "parallel",
)


def single_process_nulls() -> dict[str, str]:
    """Why a one-process run has no data-parallel figures (runner/start.py sets them)."""
    return {name: SINGLE_PROCESS for name in PARALLEL_FIELDS}


@dataclass(frozen=True)
class Parallel:
    """A data-parallel run of `procs` ranks (docs/scaling.md). Times are per step, of the
    slowest rank; bandwidths in bytes/s as nccl-tests defines them (algbw = S/t, busbw =
    algbw·2(n−1)/n). Efficiency, Karp–Flatt and Amdahl need the N = 1 row: analysis/scaling.py."""

    procs: int = 1
    strategy: str | None = None  # ddp or fsdp
    scaling: str | None = None  # weak (batch per rank) or strong (batch split across ranks)
    dist_backend: str | None = None  # gloo (CPU) or nccl (GPU)
    global_batch: int | None = None  # examples per step over all ranks
    rank_batch: int | None = None  # examples per step of one rank
    rank_threads: int | None = None  # torch threads of each rank (= its pinned cores on CPU)
    compute_nosync_s: float | None = None  # a step without gradient sync (DDP no_sync)
    allreduce_bytes: int | None = None  # the gradient bytes, one flat buffer
    allreduce_s: float | None = None  # an isolated all-reduce of that buffer
    allreduce_algbw: float | None = None  # bytes/s = allreduce_bytes / allreduce_s
    allreduce_busbw: float | None = None  # bytes/s = algbw × 2(n−1)/n
    overlap_frac: float | None = None  # (compute + all-reduce − step) / all-reduce, in [0, 1]
    failed_rank: int | None = None  # the rank whose error ended the run
    parallel: dict[str, Any] | None = None  # per rank: medians, cores; all-reduce size ladder
    nulls: Mapping[str, str] = field(default_factory=_nulls)


@dataclass(frozen=True)
class Compiled:
    """What compiling the step cost and produced (a compiled mode; docs/modes.md). Null in
    eager runs, where nothing is compiled."""

    compile_cold_s: float | None = None  # first compiled step − one steady step, fresh cache
    compile_warm_s: float | None = None  # the same in a second process with the cache kept
    graph_count: int | None = None  # dynamo graphs of forward+loss (torch._dynamo.explain)
    graph_breaks: int | None = None
    graph_break_reasons: list[str] | None = None
    recompiles: int | None = None  # timed under fail_on_recompile: 0, or the run failed on one
    cudagraphs: bool | None = None  # whether CUDA graphs engaged (reduce-overhead on CUDA)
    compile_detail: dict[str, Any] | None = None  # torch mode, caches, counters, how measured
    nulls: Mapping[str, str] = field(default_factory=_nulls)


DEVICE_DATA = "device data: the batch is made once on the device, there is no loader"
HOST_DATA = "host data: pinned host tensors copied each step, there is no loader"


@dataclass(frozen=True)
class Infeed:
    """Where each step's batch comes from and what feeding it cost (docs/infeed.md). Times are
    per step over the timed window; shares are fractions of that window's wall time."""

    data_source: str = "device"  # device, host or pipeline
    loader_workers: int | None = None  # pipeline: DataLoader num_workers (effective)
    pin_memory: bool | None = None  # pipeline: page-locked batches (effective: CUDA only)
    prefetch_factor: int | None = None  # pipeline: None with 0 workers (torch refuses one)
    persistent_workers: bool | None = None  # pipeline: False with 0 workers
    data_wait_s: float | None = None  # s per step blocked in next() for the batch
    data_copy_s: float | None = None  # s per step on the host copying it to the device buffers
    infeed_share: float | None = None  # (wait + copy) / the window's wall time, in [0, 1]
    loader_examples_per_s: float | None = None  # the infeed drained alone, without the model
    model_only_examples_per_s: float | None = None  # the model on resident device data
    input_bound: bool | None = None  # loader alone slower than the model on device data
    host_cpu_cores: float | None = None  # CPU s of the run and its loader workers / window s
    host_cpu_share: float | None = None  # host_cpu_cores / cores this run may use
    infeed: dict[str, Any] | None = None  # dataset, cache, formats, how each figure was taken
    nulls: Mapping[str, str] = field(default_factory=_nulls)


XLA_MISMATCH = 0.10  # |XLA FLOPs / analytic − 1| above this flags the row (docs/jax.md)


@dataclass(frozen=True)
class Xla:
    """What XLA made of a JAX run's step (docs/jax.md): the jitted step lowered and compiled
    ahead of time (both timed apart from the first step), and XLA's own cost analysis next to
    the analytic counts. XLA's FLOPs include what the analytic count leaves out (optimizer,
    element-wise ops, norms), and its API is documented as not reliably programmable: the
    ratio is stored, and a row is flagged when it is off by more than 10 %. Null in torch rows."""

    xla_lower_s: float | None = None  # jit(step).trace(...).lower()
    xla_compile_s: float | None = None  # lowered.compile()
    xla_flops: float | None = None  # compiled.cost_analysis()["flops"], one step
    xla_bytes: float | None = None  # compiled.cost_analysis()["bytes accessed"]
    xla_flops_ratio: float | None = None  # xla_flops / flops_analytic
    xla_flops_mismatch: bool | None = None  # |ratio − 1| > XLA_MISMATCH
    xla_detail: dict[str, Any] | None = None  # versions, platform, memory analysis, settings
    nulls: Mapping[str, str] = field(default_factory=_nulls)


PARTS: dict[str, type] = {
    "identity": Identity,
    "outcome": Outcome,
    "counts": Counts,
    "times": StepTimes,
    "memory": Memory,
    "prediction": Prediction,
    "utilization": Utilization,
    "energy_part": Energy,
    "quality_part": Quality,
    "parallel_part": Parallel,
    "compiled_part": Compiled,
    "infeed_part": Infeed,
    "xla_part": Xla,
}
FIELD_PART: dict[str, str] = {
    f.name: part
    for part, cls in PARTS.items()
    for f in dataclasses.fields(cls)
    if f.name != "nulls"
}


@dataclass(frozen=True)
class RunRecord:
    identity: Identity
    outcome: Outcome
    counts: Counts = field(default_factory=Counts)
    times: StepTimes = field(default_factory=StepTimes)
    memory: Memory = field(default_factory=Memory)
    prediction: Prediction = field(default_factory=Prediction)
    utilization: Utilization = field(default_factory=Utilization)
    energy_part: Energy = field(default_factory=Energy)
    quality_part: Quality = field(default_factory=Quality)
    parallel_part: Parallel = field(default_factory=Parallel)
    compiled_part: Compiled = field(default_factory=Compiled)
    infeed_part: Infeed = field(default_factory=Infeed)
    xla_part: Xla = field(default_factory=Xla)
    op_profile: list[dict[str, Any]] | None = None  # rows for the op_profile table (--profile)

    def __getattr__(self, name: str) -> Any:
        """Flat reads: `rec.step_time_s` is `rec.times.step_time_s`."""
        part = FIELD_PART.get(name)
        if part is None:
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, part), name)

    @property
    def nulls(self) -> dict[str, str]:
        """Field -> why it is null, over every part."""
        out: dict[str, str] = {}
        for part in PARTS:
            out.update(getattr(self, part).nulls)
        return out

    @classmethod
    def flat(cls, *, nulls: Mapping[str, str] | None = None, **values: Any) -> RunRecord:
        """A record from flat columns (a stored row, a test's fixture)."""
        op_profile = values.pop("op_profile", None)
        unknown = sorted(set(values) - set(FIELD_PART))
        if unknown:
            raise TypeError(f"unknown record field(s): {', '.join(unknown)}")
        by: dict[str, dict[str, Any]] = {p: {} for p in PARTS}
        for name, value in values.items():
            by[FIELD_PART[name]][name] = value
        for name, why in (nulls or {}).items():
            by[FIELD_PART.get(name, "identity")].setdefault("nulls", {})[name] = why
        parts = {p: PARTS[p](**kw) for p, kw in by.items()}
        return cls(**parts, op_profile=op_profile)

    def replace(self, **values: Any) -> RunRecord:
        """A new record with flat fields changed (each lands in its part)."""
        by: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            if name == "op_profile":
                by.setdefault("", {})[name] = value
                continue
            part = FIELD_PART.get(name)
            if part is None:
                raise TypeError(f"unknown record field: {name}")
            by.setdefault(part, {})[name] = value
        top: dict[str, Any] = dict(by.pop("", {}))
        for part, kw in by.items():
            top[part] = dataclasses.replace(getattr(self, part), **kw)
        return dataclasses.replace(self, **top)

    def with_part(self, part: Any) -> RunRecord:
        """A new record with one part swapped for `part` (matched by its type)."""
        for name, cls in PARTS.items():
            if isinstance(part, cls):
                return dataclasses.replace(self, **{name: part})
        raise TypeError(f"not a record part: {type(part).__name__}")

    def as_dict(self) -> dict[str, Any]:
        """One flat row: every field of every part, `nulls` merged, `op_profile` kept."""
        out: dict[str, Any] = {}
        for part in PARTS:
            obj = getattr(self, part)
            for f in dataclasses.fields(obj):
                if f.name != "nulls":
                    out[f.name] = _copy(getattr(obj, f.name))
        out["nulls"] = self.nulls
        out["op_profile"] = _copy(self.op_profile)
        return out


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


RECORD_FIELDS = (*FIELD_PART, "nulls")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


ENERGY_FIELDS = (
    "energy_j",
    "energy_window_s",
    "avg_power_w",
    "energy_per_step_j",
    "energy_per_sample_j",
    "samples_per_j",
    "energy_method",
    "energy_scope",
    "energy_period_s",
    "idle_power_w",
)


def null_energy(code: str) -> Energy:
    """Every energy column null with `code: hint` (codes: paradnn.measure.energy.REASONS)."""
    hint = {
        "not_requested": "the run was measured without --energy",
        "not_measured": "the run did not reach its timed window",
    }.get(code, "")
    return Energy(nulls={name: f"{code}: {hint}" if hint else code for name in ENERGY_FIELDS})


def hyperparameter_columns(config: Mapping[str, Any] | str | None, taken: Any = ()) -> dict:
    """One column per hyperparameter of a run's config (`batch`, `nodes`, ...), for the flat
    views of a run (Store.frame, CSV exports, the report's tables). A key that would shadow a
    column the row already has (`threads`, `mode`, ...) gets a `cfg_` prefix."""
    if isinstance(config, str):
        config = json.loads(config)
    return {(f"cfg_{k}" if k in taken else k): v for k, v in (config or {}).items()}
