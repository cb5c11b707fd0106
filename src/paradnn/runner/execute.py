"""The torch backend of the measuring core (runner/core.py): one run in this process.

Every outcome is a record (the core's prologue and epilogue): a bad config is `invalid`, a
precision the device lacks is `unsupported`, an allocation failure is `oom`, a non-finite loss
is `nan` (still timed), any other exception is `crashed` with its message and where. Hangs and
segfaults are the sweep supervisor's business (runner/supervisor.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from typing import Any

import torch

from paradnn import families
from paradnn.config import RunOptions, RunSpec
from paradnn.measure import flops
from paradnn.measure import precision as prec
from paradnn.measure.device import clock_for, synchronize
from paradnn.measure.environment import default_threads, prepare, run_environment
from paradnn.measure.faults import classify, one_line
from paradnn.measure.quality import LoadProbe, nvml_other_processes, quality_part
from paradnn.measure.step import TrainStep
from paradnn.measure.timer import Windows, measure
from paradnn.records import Energy, Memory, RunRecord, Status
from paradnn.runner.core import Run, execute, step_times, where

__all__ = [  # prepare & co. live in measure/ (calibrate and ops use them too); kept importable here
    "BACKEND",
    "classify",
    "default_threads",
    "execute",
    "one_line",
    "prepare",
    "quality_part",
    "run_environment",
    "step_times",
]

CPU_PEAK_NULL = "host memory of one run is not separable inside a shared process"


class TorchBackend:
    """PyTorch in this process, eager or compiled (docs/modes.md), with the infeed
    (docs/infeed.md), energy and profile the options ask for."""

    def __init__(self) -> None:
        self.step: TrainStep | None = None
        self.meter: Any = None
        self.compiled: Any = None  # a compiled mode's CompileRun (measure/compile.py)
        self.feed: Any = None  # where each step's batch comes from (measure/infeed.py)

    def start(self, run: Run) -> None:
        return None

    def unsupported(self, run: Run) -> str | None:
        options, device = run.options, run.device
        reason = prec.unsupported_reason(options.precision, device)
        if reason and not run.rec.emulated:
            return reason
        if options.optimizer_impl != "auto":  # e.g. fused RMSprop, which torch.optim lacks
            from paradnn.measure.step import unsupported_implementation

            reason = unsupported_implementation(options.optimizer, options.optimizer_impl, device)
            if reason:
                return reason
        if options.mode != "eager":  # decided before any work: e.g. CUDA graphs without CUDA
            from paradnn.measure.compile import unsupported_reason

            reason = unsupported_reason(options.mode, device)
            if reason:
                return reason
        if options.data_source != "device":  # docs/infeed.md
            from paradnn.measure import infeed

            if not families.get(run.rec.family).analytic:  # docs/own-model.md
                return "a model of your own runs on device data only (--data device)"

            return infeed.unsupported_reason(options, run.rec.config)
        return None

    def measure(self, run: Run) -> None:
        """Counted FLOPs, step times, quality, memory, energy into `run.rec`."""
        options, device = run.options, run.device
        say = run.say
        family = families.get(run.rec.family)
        cfg = family.config(run.rec.config)
        # Denormal operands slow CPU math by up to ~80× for stretches of a training run, so a
        # step time would depend on which steps got timed. TensorFlow (ParaDnn's framework)
        # flushes them by default; so do we during a run (the environment records it), and
        # restore after (cleanup).
        torch.set_flush_denormal(True)
        torch.manual_seed(options.seed)
        if device.type == "cuda":
            on_cuda(options, device)
        with prec.tf32_flags(options.precision):
            say({"phase": "build"})
            with torch.device(device):
                built = family.build(cfg, device, options.precision)
            params = sum(p.numel() for p in built.module.parameters() if p.requires_grad)
            run.rec = run.rec.replace(params=params)
            if run.rec.examples_per_step is None and built.examples:  # a model of your own
                c = run.rec.counts
                nulls = {k: v for k, v in c.nulls.items() if k != "examples_per_step"}
                counts = dataclasses.replace(c, examples_per_step=built.examples, nulls=nulls)
                run.rec = run.rec.with_part(counts)
            step = self.step = TrainStep(
                built,
                options.optimizer,
                options.precision,
                device,
                implementation=options.optimizer_impl,
                policy=options.precision_policy,
            )
            # what torch was told to run (docs/optimizers.md), beside the precision's flags
            run.rec = run.rec.replace(
                flags={**run.rec.flags, "optimizer_impl": step.implementation}
            )
            del built
            self.meter, failed = _open_meter(options, device)
            if failed is not None:
                run.rec = run.rec.with_part(failed)
            policy = options.timing
            if self.meter is not None and self.meter.min_window_s > policy.min_window_s:
                policy = dataclasses.replace(policy, min_window_s=self.meter.min_window_s)
            from paradnn.measure.infeed import open_feed, run_cpu_seconds

            if options.data_source == "pipeline":
                say({"phase": "writing the pipeline's files"})
            feed = self.feed = open_feed(
                step, options, device, run.rec.config, run.rec.examples_per_step
            )
            # a pipeline's loader workers are the run's own CPU, not another process's load
            probe = _load_probe(device, run_cpu_seconds if feed.workers else None)
            windows = Windows(probe, self.meter, feed)  # the probe outermost: it sees the others
            timed, no_recompiles = step, contextlib.nullcontext()
            if options.mode != "eager":
                self.compiled = _compile(step, run.rec, options, device)
                say({"phase": f"compiling ({options.mode})"})
                self.compiled.first(lambda: synchronize(device))
                timed, no_recompiles = self.compiled.step, self.compiled.no_recompiles()
            with no_recompiles:
                timing = measure(
                    feed.wrap(timed),
                    clock_for(device),
                    policy,
                    window=windows,
                    progress=run.progress,
                )
                synchronize(device)
                if options.data_source != "device":
                    say({"phase": "infeed alone, model alone"})
                run.rec = run.rec.with_part(feed.part(timed, lambda: synchronize(device)))
                feed.close()
            if self.meter is not None:
                energy = _energy(self.meter, timing.steps, run.rec, options.energy_period_s)
                run.rec = run.rec.with_part(energy)
            count = _counted(step, run.rec, options, device, say)
            if options.profile:
                from paradnn.measure.profile import profile_step

                run.rec = run.rec.replace(op_profile=profile_step(step, device))
        rec = run.rec.replace(flops_per_step=count.total, flops_count_device=count.device)
        if self.compiled is not None:
            say({"phase": "warm compile, graphs"})
            rec = rec.with_part(self.compiled.part(timing.summary.median))
        timed_as = timing.as_dict()
        rec = rec.with_part(step_times(timed_as, rec.counts, timed.final_loss()))
        rec = rec.with_part(quality_part(timed_as, probe.result, policy.target_ci_rel))
        if device.type == "cuda":
            rec = rec.with_part(Memory(int(torch.cuda.max_memory_allocated(device))))
        else:
            rec = rec.with_part(Memory(None, nulls={"peak_mem_bytes": CPU_PEAK_NULL}))
        run.rec = rec

    def failure(self, run: Run, exc: BaseException, status: str, error: str) -> RunRecord:
        rec = run.rec
        if status == Status.CRASHED:
            error += " | " + where(exc)
        if self.compiled is not None:  # a compiled run's failure is data too (docs/modes.md)
            from paradnn.measure.compile import recompile_error

            error = recompile_error(exc) or error
            rec = rec.with_part(self.compiled.part(None, failure=error))
        return rec.replace(status=status, error=error)

    def cleanup(self, run: Run) -> None:
        if self.feed is not None:
            self.feed.close()
        if self.meter is not None:
            self.meter.close()
        torch.set_flush_denormal(False)
        self.step = self.compiled = self.feed = None
        gc.collect()
        if run.device.type == "cuda":
            torch.cuda.empty_cache()


BACKEND = TorchBackend


def on_cuda(options: RunOptions, device: torch.device) -> None:
    """What a CUDA run sets before it builds its model: cuDNN's autotuner as the run asks
    (docs/modes.md) and the peak-memory counter from zero."""
    torch.backends.cudnn.benchmark = options.cudnn_benchmark
    torch.cuda.reset_peak_memory_stats(device)


def _compile(step: TrainStep, rec: RunRecord, options: RunOptions, device: torch.device) -> Any:
    """The compiled copy of `step` (compiled lazily: by its first step). Its warm compile
    runs this run again in a second process, described whole: on this device, with the
    thread count this run used (the supervisor's choice from the load when none was given:
    the child's own default could differ, and the thread count is in inductor's cache key)."""
    from paradnn.measure.compile import CompileRun

    here = dataclasses.replace(options, device=str(device), threads=rec.threads or options.threads)
    return CompileRun(step, RunSpec(rec.family, rec.config, here), device)


# The counted FLOPs of each configuration this process has counted: a re-measure of the same run
# (or the same config again) takes its count from here instead of counting one more step. The
# key holds everything the count can depend on (the corrections make it device-independent,
# but a device type, precision, policy or mode is kept apart all the same).
_COUNTS: dict[tuple[Any, ...], flops.FlopCount] = {}


def _counted(
    step: TrainStep, rec: RunRecord, options: RunOptions, device: torch.device, say: Any
) -> flops.FlopCount:
    """This run's counted FLOPs per step: one more step, untimed, under the counter, once per
    configuration in this process."""
    import json

    key = (
        rec.family,
        json.dumps(rec.config, sort_keys=True, default=str),
        options.precision,
        options.precision_policy,
        options.mode,
        device.type,
    )
    if key not in _COUNTS:
        say({"phase": "counting FLOPs"})
        _COUNTS[key] = flops.count_step(step, device)
    return _COUNTS[key]


def _open_meter(options: RunOptions, device: torch.device) -> tuple[Any, Energy | None]:
    """The energy meter for this run (None without --energy: its nulls are already set), or
    the energy part saying why it failed to open (read_failed) — never the run's failure."""
    if not options.energy:
        return None, None
    from paradnn.measure.energy import energy_part, open_meter

    try:
        meter = open_meter(
            str(device), period_s=options.energy_period_s, sync=lambda: synchronize(device)
        )
        return meter, None
    except Exception as e:
        part = energy_part(None, options.energy_period_s, reason="read_failed", detail=one_line(e))
        return None, part


def _energy(meter: Any, steps: int, rec: RunRecord, period_s: float) -> Energy:
    """The window's energy; an error here nulls the energy, never the run."""
    from paradnn.measure.energy import energy_part

    try:
        res = meter.result(steps, rec.examples_per_step)
    except Exception as e:
        return energy_part(None, period_s, reason="read_failed", detail=one_line(e))
    return energy_part(res, period_s)


def _load_probe(device: torch.device, own_cpu: Any = None) -> LoadProbe:
    gpu = nvml_other_processes(device.index or 0) if device.type == "cuda" else None
    if own_cpu is None:
        return LoadProbe(gpu_others=gpu)
    return LoadProbe(gpu_others=gpu, own_cpu=lambda: own_cpu() or 0.0)
