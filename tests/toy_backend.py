"""A backend of a test's own: registered only through PARADNN_BACKENDS=toy=toy_backend (with
tests/ on the path), never in paradnn. Its step is a stand-in for another framework's (a
Python sum sized by the config's batch), timed by paradnn's own timer, so a `bench` runs end
to end through the one pipeline: planned, keyed, sent to a worker, measured, stored."""

from __future__ import annotations

from typing import Any

from paradnn.measure.device import HostClock
from paradnn.measure.quality import LoadProbe, quality_part
from paradnn.measure.timer import Windows, measure
from paradnn.records import Memory, RunRecord
from paradnn.runner.core import Run, step_times

NO_MEMORY = "the toy backend allocates nothing of its own to measure"


class _Step:
    """One step: a sum over range(n); its `loss` is finite."""

    def __init__(self, n: int) -> None:
        self.n, self.loss = n, None

    def __call__(self) -> None:
        self.loss = float(sum(range(self.n)) % 7 + 1)

    def final_loss(self) -> Any:
        return self.loss


class ToyBackend:
    def start(self, run: Run) -> None:
        run.rec = run.rec.replace(flags={**run.rec.flags, "backend": "toy"})

    def unsupported(self, run: Run) -> str | None:
        return None if run.options.mode == "eager" else "the toy backend runs eager only"

    def measure(self, run: Run) -> None:
        step = _Step(100 * int(run.rec.config.get("batch", 1)))
        probe = LoadProbe()
        timing = measure(step, HostClock(), run.options.timing, window=Windows(probe))
        timed = timing.as_dict()
        rec = run.rec.with_part(step_times(timed, run.rec.counts, step.final_loss()))
        rec = rec.with_part(quality_part(timed, probe.result, run.options.timing.target_ci_rel))
        run.rec = rec.with_part(Memory(None, nulls={"peak_mem_bytes": NO_MEMORY}))

    def failure(self, run: Run, exc: BaseException, status: str, error: str) -> RunRecord:
        return run.rec.replace(status=status, error=error)

    def cleanup(self, run: Run) -> None:
        return None


BACKEND = ToyBackend
