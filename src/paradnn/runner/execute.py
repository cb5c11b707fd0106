"""Measure one configuration in this process and return its record, whatever happens.

Every outcome is a record: a bad config is `invalid`, a precision the device lacks is
`unsupported`, an allocation failure is `oom`, a non-finite loss is `nan` (still timed), any other
exception is `crashed` with its message. Process isolation (hangs, segfaults) is the sweep
supervisor's job; this function is what its workers call.
"""

from __future__ import annotations

import gc
import os
import traceback
from datetime import UTC, datetime
from functools import cache
from typing import Any

import torch

import paradnn
from paradnn import families
from paradnn.config import RunOptions
from paradnn.errors import ConfigError
from paradnn.measure import environment, flops
from paradnn.measure import precision as prec
from paradnn.measure.device import clock_for, resolve, synchronize
from paradnn.measure.timer import measure
from paradnn.records import RunRecord, run_key
from paradnn.runner.step import TrainStep

NO_PEAK = "no platform peak known yet: utilization needs the platform database"
UNSUPPORTED_PATTERNS = ("not implemented for", "could not create a primitive", "not supported")
OOM_PATTERNS = (
    "out of memory",
    "can't allocate memory",
    "cublas_status_alloc_failed",
    "failed to allocate",
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@cache
def _environment(device: str, threads: int) -> dict[str, Any]:
    return environment.collect(torch.device(device), threads)


def classify(exc: BaseException) -> str:
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return "oom"
    msg = str(exc).lower()
    if any(p in msg for p in OOM_PATTERNS):
        return "oom"
    if isinstance(exc, NotImplementedError) or any(p in msg for p in UNSUPPORTED_PATTERNS):
        return "unsupported"
    return "crashed"


def one_line(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:500]


def execute(
    family_name: str, values: dict[str, Any], options: RunOptions, sweep: str | None = None
) -> RunRecord:
    started = _now()
    device = resolve(options.device)
    threads = options.threads or default_threads()
    if device.type == "cpu":
        torch.set_num_threads(threads)
    env = _environment(str(device), threads)
    device_name = env["gpu_name"] or env["cpu_model"]

    def record(status: str, **kw: Any) -> RunRecord:
        return RunRecord(
            run_key=run_key(
                family_name, kw.pop("resolved", values), options.key_fields(), env["fingerprint"]
            ),
            family=family_name,
            config=kw.pop("config", dict(values)),
            precision=options.precision,
            optimizer=options.optimizer,
            mode=options.mode,
            device=str(device),
            device_name=device_name,
            status=status,
            sweep=sweep,
            threads=threads,
            fingerprint=env["fingerprint"],
            env=env,
            flags=prec.flags(options.precision),
            started_at=started,
            paradnn_version=paradnn.__version__,
            **kw,
        )

    try:
        family = families.get(family_name)
        cfg = family.config(values)
    except ConfigError as e:
        rec = record("invalid", error=str(e))
        rec.finished_at = _now()
        return rec

    resolved = dict(cfg.__dict__)
    rec = record(
        "ok",
        resolved=resolved,
        config=resolved,
        params_analytic=family.params(cfg),
        flops_analytic=family.train_flops(cfg),
        examples_per_step=family.examples_per_step(cfg),
    )
    for name in ("utilization_datasheet", "utilization_measured"):
        rec.null(name, NO_PEAK)

    reason = prec.unsupported_reason(options.precision, device)
    if reason:
        rec.status, rec.error = "unsupported", reason
        rec.finished_at = _now()
        return rec

    step = None
    try:
        count = flops.count_train_flops(family, cfg, "meta", options.precision)
        rec.flops_per_step, rec.flops_count_device = count.total, count.device
        torch.manual_seed(options.seed)
        if device.type == "cuda":
            torch.backends.cudnn.benchmark = True
            torch.cuda.reset_peak_memory_stats(device)
        with prec.tf32_flags(options.precision):
            with torch.device(device):
                built = family.build(cfg, device, options.precision)
            rec.params = sum(p.numel() for p in built.module.parameters() if p.requires_grad)
            step = TrainStep(built, options.optimizer, options.precision, device)
            del built
            timing = measure(step, clock_for(device), options.timing)
            synchronize(device)
        _fill_timing(rec, timing)
        rec.final_loss = step.final_loss()
        if device.type == "cuda":
            rec.peak_mem_bytes = int(torch.cuda.max_memory_allocated(device))
        else:
            rec.null(
                "peak_mem_bytes", "host memory of one run is not separable inside a shared process"
            )
        if rec.final_loss is None or not torch.isfinite(torch.tensor(rec.final_loss)):
            rec.status = "nan"
            rec.error = f"non-finite training loss ({rec.final_loss}); timings kept"
    except Exception as e:  # every failure becomes data
        rec.status = classify(e)
        rec.error = one_line(e)
        if rec.status == "crashed":
            rec.error += " | " + _where(e)
    finally:
        del step
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    rec.finished_at = _now()
    return rec


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


def _fill_timing(rec: RunRecord, t: Any) -> None:
    s = t.summary
    rec.step_time_s = s.median
    rec.step_time_mean_s, rec.step_time_min_s, rec.step_time_iqr_s = s.mean, s.min, s.iqr
    rec.step_time_ci_low_s, rec.step_time_ci_high_s = s.ci_low, s.ci_high
    rec.ci_rel = s.ci_rel if s.ci_low is not None else None
    rec.n_samples, rec.steps_per_sample = s.n, t.steps_per_sample
    rec.converged, rec.stop_reason = t.converged, t.stop_reason
    rec.first_step_s, rec.warmup_steps, rec.warmup_s = t.first_step_s, t.warmup_steps, t.warmup_s
    rec.host_step_s = t.host_step_s
    rec.samples = list(t.samples)
    if rec.examples_per_step:
        rec.examples_per_s = rec.examples_per_step / s.median
    if rec.flops_per_step is not None:
        rec.achieved_flops = rec.flops_per_step / s.median
