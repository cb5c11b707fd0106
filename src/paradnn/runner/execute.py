"""Measure one configuration in this process and return its record, whatever happens.

Every outcome is a record: a bad config is `invalid`, a precision the device lacks is
`unsupported`, an allocation failure is `oom`, a non-finite loss is `nan` (still timed), any other
exception is `crashed` with its message. Hangs and segfaults are the sweep supervisor's business
(runner/supervisor.py); its worker processes call this function.
"""

from __future__ import annotations

import dataclasses
import gc
import traceback
from typing import Any

import torch

from paradnn import families
from paradnn.config import RunOptions
from paradnn.measure import flops
from paradnn.measure import precision as prec
from paradnn.measure.device import clock_for, synchronize
from paradnn.measure.environment import default_threads, prepare, run_environment
from paradnn.measure.faults import classify, one_line
from paradnn.measure.quality import LoadProbe, judge, nvml_other_processes
from paradnn.measure.step import TrainStep
from paradnn.measure.timer import Progress, Timing, Windows, measure
from paradnn.records import RunRecord, now
from paradnn.runner.start import start_record

__all__ = [  # prepare & co. live in measure/ (calibrate and ops use them too); kept importable here
    "classify",
    "default_threads",
    "execute",
    "fill_quality",
    "fill_timing",
    "measure_into",
    "one_line",
    "prepare",
    "run_environment",
]

CPU_PEAK_NULL = "host memory of one run is not separable inside a shared process"


def execute(
    family_name: str,
    values: dict[str, Any],
    options: RunOptions,
    sweep: str | None = None,
    progress: Progress | None = None,
) -> RunRecord:
    device, env = prepare(options)
    rec = start_record(family_name, values, options, env, sweep=sweep)
    if rec.status == "invalid":
        rec.finished_at = now()
        return rec
    reason = prec.unsupported_reason(options.precision, device)
    if reason and not rec.emulated:
        rec.status, rec.error, rec.finished_at = "unsupported", reason, now()
        return rec
    measure_into(rec, family_name, options, device, progress)
    rec.finished_at = now()
    return rec


def measure_into(
    rec: RunRecord,
    family_name: str,
    options: RunOptions,
    device: torch.device,
    progress: Progress | None = None,
) -> None:
    say = progress or (lambda info: None)
    family = families.get(family_name)
    cfg = family.config(rec.config)
    step = None
    meter = None
    # Denormal operands slow CPU math by up to ~80× for stretches of a training run, so a step
    # time would depend on which steps got timed. TensorFlow (ParaDnn's framework) flushes them
    # by default; so do we during a run (the environment records it), and restore after.
    torch.set_flush_denormal(True)
    try:
        torch.manual_seed(options.seed)
        if device.type == "cuda":
            torch.backends.cudnn.benchmark = True
            torch.cuda.reset_peak_memory_stats(device)
        with prec.tf32_flags(options.precision):
            say({"phase": "build"})
            with torch.device(device):
                built = family.build(cfg, device, options.precision)
            rec.params = sum(p.numel() for p in built.module.parameters() if p.requires_grad)
            step = TrainStep(built, options.optimizer, options.precision, device)
            del built
            meter = _open_meter(options, device, rec)
            policy = options.timing
            if meter is not None and meter.min_window_s > policy.min_window_s:
                policy = dataclasses.replace(policy, min_window_s=meter.min_window_s)
            probe = _load_probe(device)
            windows = Windows(probe, meter)  # the probe outermost: it sees the meter's cost
            timing = measure(step, clock_for(device), policy, window=windows, progress=progress)
            synchronize(device)
            if meter is not None:
                _fill_energy(rec, meter, timing.steps, options.energy_period_s)
            say({"phase": "counting FLOPs"})
            count = flops.count_step(step, device)  # one more step, untimed, under the counter
            if options.profile:
                from paradnn.measure.profile import profile_step

                rec.op_profile = profile_step(step, device)
        rec.flops_per_step, rec.flops_count_device = count.total, count.device
        fill_timing(rec, timing)
        fill_quality(rec, timing, probe.result, policy.target_ci_rel)
        rec.final_loss = step.final_loss()
        if device.type == "cuda":
            rec.peak_mem_bytes = int(torch.cuda.max_memory_allocated(device))
        else:
            rec.null("peak_mem_bytes", CPU_PEAK_NULL)
        if rec.final_loss is None or not torch.isfinite(torch.tensor(rec.final_loss)):
            rec.status = "nan"
            rec.error = f"non-finite training loss ({rec.final_loss}); timings kept"
    except Exception as e:  # every failure becomes data
        rec.status = classify(e)
        rec.error = one_line(e)
        if rec.status == "crashed":
            rec.error += " | " + _where(e)
    finally:
        if meter is not None:
            meter.close()
        torch.set_flush_denormal(False)
        del step
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()


def _open_meter(options: RunOptions, device: torch.device, rec: RunRecord):
    """The energy meter for this run, or None without --energy (its nulls are already set).
    A meter that fails to open nulls the energy (read_failed) rather than failing the run."""
    if not options.energy:
        return None
    from paradnn.measure.energy import open_meter

    try:
        return open_meter(
            str(device), period_s=options.energy_period_s, sync=lambda: synchronize(device)
        )
    except Exception as e:
        from paradnn.measure.energy import fill_record

        fill_record(rec, None, options.energy_period_s, reason="read_failed", detail=one_line(e))
        return None


def _fill_energy(rec: RunRecord, meter: Any, steps: int, period_s: float) -> None:
    """The window's energy into the record; an error here nulls the energy, never the run."""
    from paradnn.measure.energy import fill_record

    try:
        res = meter.result(steps, rec.examples_per_step)
    except Exception as e:
        fill_record(rec, None, period_s, reason="read_failed", detail=one_line(e))
        return
    fill_record(rec, res, period_s)


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


def _load_probe(device: torch.device) -> LoadProbe:
    gpu = nvml_other_processes(device.index or 0) if device.type == "cuda" else None
    return LoadProbe(gpu_others=gpu)


def fill_quality(rec: RunRecord, t: Timing, load: dict[str, Any], target: float) -> None:
    s = t.summary
    v = judge(
        median=s.median,
        ci_low=s.ci_low,
        ci_high=s.ci_high,
        q1=s.q1,
        q3=s.q3,
        converged=t.converged,
        stop_reason=t.stop_reason,
        target_ci_rel=target,
        load=load,
    )
    rec.quality, rec.quality_reasons = v.quality, v.reasons
    rec.ci_half_rel, rec.iqr_rel = v.ci_half_rel, v.iqr_rel
    rec.load = {**load, "target_ci_rel": target}  # the target the verdict was judged against
    rec.others_cpu_frac = load.get("others_cpu_frac")
    if rec.others_cpu_frac is None:
        rec.nulls["others_cpu_frac"] = load.get("reason", "not measured")


def fill_timing(rec: RunRecord, t: Timing) -> None:
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
