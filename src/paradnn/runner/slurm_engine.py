"""The Slurm engine, through submitit: job arrays whose elements each run a few configs.

Each array element runs `configs_per_job` configs one after another, each in paradnn's own
isolated worker with the run's deadline (`isolated.run_one`), and returns their records through
submitit's shared folder; this process stores them as elements finish. Arrays are split below
the cluster's MaxArraySize (submitit does not split them). An element is `Checkpointable`: when
Slurm preempts or times it out, submitit requeues it with the configs it had not finished, and
the records it had are kept. `cluster="local"` runs the same path on this machine (tests).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from paradnn.config import ExecutorSettings, RunOptions
from paradnn.errors import ConfigError, ParadnnError
from paradnn.records import RunRecord, Status
from paradnn.runner.engine import News, missing_extra, worker_settings
from paradnn.runner.units import RunUnit
from paradnn.runner.worker import WorkerSettings

POLL_S = 1.0
START_MARGIN_S = 120.0  # per config, on top of its timeout: a worker's start and the hand-off


def _probe_job(settings: WorkerSettings) -> dict[str, Any]:
    from paradnn.runner.isolated import probe

    return probe(settings)


def _element_class() -> type:
    import submitit

    class Element(submitit.helpers.Checkpointable):
        """One array element: its configs in order; on requeue, the ones it had not done."""

        def __init__(self) -> None:
            self.done: list[tuple[int, RunRecord]] = []

        def __call__(
            self, units: Sequence[RunUnit], settings: WorkerSettings, timeout_s: float
        ) -> list[tuple[int, RunRecord]]:
            from paradnn.runner.isolated import run_one

            finished = {i for i, _ in self.done}
            for unit in units:
                if unit.id not in finished:
                    self.done.append((unit.id, run_one(unit, settings, timeout_s)))
            return self.done

    return Element


class SlurmEngine:
    name = "slurm"

    def __init__(self, executor: ExecutorSettings, options: RunOptions, timeout_s: float):
        try:
            import submitit
        except ImportError as e:
            raise missing_extra("slurm", e) from None
        self.submitit = submitit
        if options.device == "auto":
            raise ConfigError(
                "device", "auto", "with --executor slurm say cpu or cuda (the nodes decide)"
            )
        self.gpu = options.device.startswith("cuda")
        self.threads = None if self.gpu else (executor.cpus_per_task or options.threads)
        if not self.gpu and self.threads is None:
            raise ConfigError(
                "cpus_per_task",
                None,
                "with --executor slurm say how many CPUs each run gets (--cpus-per-task N)",
            )
        self.executor_settings = executor
        self.settings = worker_settings(options, self.threads, self.gpu)
        self.timeout_s = timeout_s
        self.folder = Path(executor.folder)
        self.pending: list[tuple[Any, list[RunUnit]]] = []

    def _executor(self, configs: int) -> Any:
        ex = self.submitit.AutoExecutor(folder=self.folder, cluster=self.executor_settings.cluster)
        minutes = math.ceil(configs * (self.timeout_s + START_MARGIN_S) / 60)
        params: dict[str, Any] = {
            "timeout_min": minutes,
            "name": "paradnn",
            "slurm_signal_delay_s": 120,  # time to checkpoint before the kill
        }
        if self.gpu:
            params.update(gpus_per_node=1, cpus_per_task=self.threads or 1)
        else:
            params.update(cpus_per_task=self.threads)
        if self.executor_settings.partition:
            params["slurm_partition"] = self.executor_settings.partition
        ex.update_parameters(**params)
        return ex

    def slots(self) -> int:
        """Array elements in flight (Slurm decides how many run at once)."""
        return max(1, len(self.pending))

    def probe(self) -> dict[str, Any]:
        job = self._executor(1).submit(_probe_job, self.settings)
        try:
            hello = job.result()
        except Exception as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ParadnnError(f"a Slurm job could not start a paradnn worker: {first}") from None
        return {**hello, "tasks_per_node": 1}

    def run(self, units: Sequence[RunUnit]) -> Iterator[News]:
        per = self.executor_settings.configs_per_job
        chunks = [list(units[i : i + per]) for i in range(0, len(units), per)]
        limit = self.executor_settings.max_array_size
        element = _element_class()
        for start in range(0, len(chunks), limit):
            part = chunks[start : start + limit]
            ex = self._executor(per)
            jobs = ex.map_array(
                element(), part, [self.settings] * len(part), [self.timeout_s] * len(part)
            )
            for job, chunk in zip(jobs, part, strict=True):
                self.pending.append((job, chunk))
                for unit in chunk:
                    yield News("started", unit.id)
        while self.pending:
            finished = [(j, c) for j, c in self.pending if j.done()]
            if not finished:
                time.sleep(POLL_S)
                yield News("beat")
                continue
            for job, chunk in finished:
                self.pending.remove((job, chunk))
                yield from self._outcomes(job, chunk)

    def _outcomes(self, job: Any, chunk: list[RunUnit]) -> Iterator[News]:
        error = f"Slurm job {job.job_id} returned no result for it"
        try:
            got = dict(job.result())
        except Exception as e:  # the element failed as a whole: each of its configs says why
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            got, error = {}, f"Slurm job {job.job_id} failed: {first}"
        for unit in chunk:
            rec = got.get(unit.id)
            if rec is None:
                rec = unit.failed(Status.CRASHED, error)
            yield News("result", unit.id, rec)

    def close(self) -> None:
        for job, _ in self.pending:
            with contextlib.suppress(Exception):  # already finished or gone: nothing to cancel
                job.cancel(check=False)
        self.pending.clear()
