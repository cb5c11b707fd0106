"""The measuring core: one run's record, whatever happens, on any backend.

A worker hands it the record the supervisor prepared (identity, run key, analytic counts,
prediction) and the run's options; the core adds what is measured and nothing else. One
prologue: the device and environment (`prepare`), the start time, `invalid` and `unsupported`
decided before any work. One epilogue: a failure classified (`classify`: oom, crashed, …) with
whatever was measured before it, a non-finite loss stored `nan` (timings kept), the finish
time, the backend's resources released. Between them a backend measures: build the model,
time its step (measure/timer.py), count, read memory.

Backends are registered by module path in paradnn/backends.py and imported when a run asks
for one, like families (families/__init__.py): torch (runner/execute.py), jax
(runner/jax_execute.py, docs/jax.md), ranks (runner/distributed.py: N data-parallel processes,
docs/scaling.md). A module defines `BACKEND`, a class whose instance holds one run's
resources; a new backend is one more module and one line in that registry (or
PARADNN_BACKENDS=name=module).
"""

from __future__ import annotations

import importlib
import math
import traceback
from dataclasses import dataclass
from typing import Any, Protocol

from paradnn import backends
from paradnn.config import RunOptions, RunSpec
from paradnn.records import Counts, RunRecord, Status, StepTimes, now

Progress = Any  # measure.timer.Progress: a callable taking a dict (torch-free here)


@dataclass
class Run:
    """One run while it is measured: the record so far (each step of a backend replaces it,
    so a failure keeps what came before), its options, device, environment and progress."""

    rec: RunRecord
    options: RunOptions
    device: Any
    env: dict[str, Any]
    progress: Progress = None  # the caller's (None: nobody listens; the timer then stays quiet)

    def say(self, info: dict[str, Any]) -> None:
        if self.progress is not None:
            self.progress(info)


class Backend(Protocol):
    """What a backend does for one run; the core calls these in order."""

    def start(self, run: Run) -> None: ...  # identity-level facts of the backend (flags)
    def unsupported(self, run: Run) -> str | None: ...  # decided before any work
    def measure(self, run: Run) -> None: ...  # build, step, time, count, memory → run.rec
    def failure(self, run: Run, exc: BaseException, status: str, error: str) -> RunRecord: ...
    def cleanup(self, run: Run) -> None: ...  # release what measure held, even after a failure


def backend_name(options: RunOptions) -> str:
    """torch with procs > 1 is N ranks; any other backend is itself (paradnn.backends)."""
    return backends.running(options.backend, options.procs)


def get(name: str) -> Backend:
    """A fresh instance of the backend `name` (it holds one run's resources)."""
    return importlib.import_module(backends.get(name).module).BACKEND()


def measure_run(record: RunRecord, options: RunOptions, progress: Progress = None) -> RunRecord:
    """The prepared `record` with what this process measured of it (every failure is data)."""
    from paradnn.measure.environment import prepare
    from paradnn.measure.faults import classify, one_line

    backend = get(backend_name(options))
    # threads, device, and this process's environment
    device, env = prepare(options.device, options.threads)
    run = Run(_here(record, options, env).replace(started_at=now()), options, device, env, progress)
    backend.start(run)
    if run.rec.status == Status.INVALID:
        return run.rec.replace(finished_at=now())
    reason = backend.unsupported(run)
    if reason:
        return run.rec.replace(status=Status.UNSUPPORTED, error=reason, finished_at=now())
    try:
        backend.measure(run)
    except Exception as e:  # every failure becomes data
        run.rec = backend.failure(run, e, classify(e), one_line(e))
    finally:
        backend.cleanup(run)
    return finish(run.rec)


def _here(record: RunRecord, options: RunOptions, env: dict[str, Any]) -> RunRecord:
    """The prepared record in this process's environment. The same fingerprint (the rule): the
    description of where it ran is this process's own (e.g. how its threads were chosen). A
    different one (a cluster node unlike the one probed): the run is keyed where it runs, as
    the supervisor would have keyed it there; the prediction stays the supervisor's."""
    if env.get("fingerprint") == record.fingerprint:
        return record.replace(env=env)
    from paradnn.runner.start import start_record

    here = start_record(RunSpec(record.family, record.config, options), env, sweep=record.sweep)
    return here.with_part(record.prediction)


def finish(rec: RunRecord) -> RunRecord:
    """The epilogue of a measured run: a non-finite loss is `nan` (its timings kept); the
    finish time."""
    loss = rec.final_loss
    if rec.status == Status.OK and (loss is None or not math.isfinite(loss)):
        rec = rec.replace(
            status=Status.NAN, error=f"non-finite training loss ({loss}); timings kept"
        )
    return rec.replace(finished_at=now())


def step_times(timing: dict[str, Any], counts: Counts, final_loss: float | None) -> StepTimes:
    """A timing (`Timing.as_dict()`: one process's, or the slowest rank's) as a record part,
    with examples/s and achieved FLOP/s from the counts."""
    median = timing["median"]
    return StepTimes(
        step_time_s=median,
        step_time_mean_s=timing["mean"],
        step_time_min_s=timing["min"],
        step_time_iqr_s=timing["q3"] - timing["q1"],
        step_time_ci_low_s=timing["ci_low"],
        step_time_ci_high_s=timing["ci_high"],
        ci_rel=timing["ci_rel"],
        n_samples=timing["n"],
        steps_per_sample=timing["steps_per_sample"],
        converged=timing["converged"],
        stop_reason=timing["stop_reason"],
        first_step_s=timing["first_step_s"],
        warmup_steps=timing["warmup_steps"],
        warmup_s=timing["warmup_s"],
        host_step_s=timing["host_step_s"],
        samples=list(timing["samples"]),
        examples_per_s=counts.examples_per_step / median if counts.examples_per_step else None,
        achieved_flops=(
            counts.flops_per_step / median if counts.flops_per_step is not None else None
        ),
        final_loss=final_loss,
    )


def execute(spec: RunSpec, sweep: str | None = None, progress: Progress = None) -> RunRecord:
    """Prepare and measure the run `spec` describes in this process (tests, benchmarks): the
    record as the supervisor would prepare it, then `measure_run`."""
    from paradnn.measure.environment import prepare
    from paradnn.runner.start import start_record

    _, env = prepare(spec.options.device, spec.options.threads)
    return measure_run(start_record(spec, env, sweep=sweep), spec.options, progress)


def where(exc: BaseException) -> str:
    """file:line of the innermost frame of a failure."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


__all__ = [
    "Backend",
    "Run",
    "backend_name",
    "execute",
    "finish",
    "get",
    "measure_run",
    "step_times",
]
