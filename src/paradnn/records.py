"""The run record: one row per attempted configuration, failures included. Torch-free."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

STATUSES = ("ok", "oom", "predicted_oom", "timeout", "crashed", "nan", "invalid", "unsupported")
QUALITIES = ("good", "noisy")


def run_key(family: str, config: dict[str, Any], options: dict[str, Any], fingerprint: str) -> str:
    """Identity of a measurement: resolved config + run options + environment fingerprint."""
    blob = json.dumps(
        {"family": family, "config": config, "options": options, "env": fingerprint},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


@dataclass
class RunRecord:
    run_key: str
    family: str
    config: dict[str, Any]
    precision: str
    optimizer: str
    device: str
    status: str
    mode: str = "eager"
    sweep: str | None = None
    device_name: str | None = None
    error: str | None = None
    params: int | None = None
    params_analytic: int | None = None
    flops_per_step: int | None = None  # counted (FlopCounterMode + corrections)
    flops_analytic: int | None = None
    flops_count_device: str | None = None
    examples_per_step: int | None = None
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
    utilization_datasheet: float | None = None
    utilization_measured: float | None = None
    peak_mem_bytes: int | None = None
    final_loss: float | None = None
    attempt: int | None = None  # assigned by the store: 1 + earlier rows of this run key
    predicted_mem_bytes: int | None = None
    predicted_mem_lower_bytes: int | None = None
    worker_pid: int | None = None
    worker_index: int | None = None  # how many runs this worker process did before this one
    op_profile: list[dict[str, Any]] | None = None  # rows for the op_profile table (--profile)
    # Energy of the run's device over the timed window (--energy; docs/energy.md).
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
    # Quality of the measurement (paradnn.measure.quality): a timed run is `good` or `noisy`
    # (missed its CI target, ran under load, ...) with the reasons; the load around the window.
    quality: str | None = None
    quality_reasons: list[str] | None = None
    ci_half_rel: float | None = None  # half the CI's width over the median: the printed ±
    iqr_rel: float | None = None
    others_cpu_frac: float | None = None  # CPU time of other processes / (window × CPUs)
    load: dict[str, Any] | None = None
    emulated: bool = False  # a low precision run without native support (--allow-emulated)
    threads: int | None = None
    fingerprint: str | None = None
    env: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)
    nulls: dict[str, str] = field(default_factory=dict)  # field -> why it is null
    started_at: str | None = None
    finished_at: str | None = None
    paradnn_version: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status = {self.status!r}: must be one of {', '.join(STATUSES)}")
        if self.quality is not None and self.quality not in QUALITIES:
            raise ValueError(f"quality = {self.quality!r}: must be one of {', '.join(QUALITIES)}")

    def null(self, name: str, reason: str) -> None:
        """Leave `name` null and say why (the store keeps the reason next to the row)."""
        setattr(self, name, None)
        self.nulls[name] = reason

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(RunRecord) if f.name != "op_profile")


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


def null_energy(rec: RunRecord, code: str) -> None:
    """Every energy column null with `code: hint` (codes: paradnn.measure.energy.REASONS)."""
    hint = {
        "not_requested": "the run was measured without --energy",
        "not_measured": "the run did not reach its timed window",
    }.get(code, "")
    for name in ENERGY_FIELDS:
        rec.null(name, f"{code}: {hint}" if hint else code)
