"""The Ray engine: each config is a Ray task that runs paradnn's isolated worker for it.

Resources are asked for whole: a GPU task asks for one GPU (never a fraction), a CPU task for a
fixed number of CPUs, which becomes its thread count (Ray would otherwise set OMP_NUM_THREADS=1
and silently change a CPU result). The task's own process runs the config in a child worker
with the run's deadline (`isolated.run_one`), so a hang is contained by killing one process and
never depends on task cancellation. A task whose Ray worker or node dies is retried by Ray
(`max_retries`); `oom`, `nan` and `timeout` are results, returned like any other.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

from paradnn.config import ExecutorSettings, RunOptions
from paradnn.errors import ConfigError, ParadnnError
from paradnn.records import Status
from paradnn.runner.engine import News, missing_extra, worker_settings
from paradnn.runner.units import RunUnit
from paradnn.runner.worker import WorkerSettings

MAX_RETRIES = 3  # node or worker deaths a config survives before it is stored `crashed`
BEAT_S = 2.0


def _probe_task(settings: WorkerSettings) -> dict[str, Any]:
    from paradnn.runner.isolated import probe

    return probe(settings)


def _run_unit(unit: RunUnit, settings: WorkerSettings, timeout_s: float) -> Any:
    from paradnn.runner.isolated import run_one

    return run_one(unit, settings, timeout_s)


class RayEngine:
    name = "ray"

    def __init__(self, executor: ExecutorSettings, options: RunOptions, timeout_s: float):
        try:
            import ray
        except ImportError as e:
            raise missing_extra("ray", e) from None
        self.ray = ray
        address = executor.address or os.environ.get("RAY_ADDRESS") or None
        try:
            ray.init(
                address=address,
                ignore_reinit_error=True,
                include_dashboard=False,
                log_to_driver=False,
                logging_level="warning",
                # the driver's own source tree, so the cluster's workers run this paradnn
                runtime_env={"env_vars": _passed_env()},
            )
        except ConnectionError as e:
            raise ConfigError("address", address, f"no Ray cluster there: {e}") from None
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        device = options.device
        self.gpu = device.startswith("cuda") or (device == "auto" and gpus > 0)
        if self.gpu and gpus == 0:
            raise ConfigError("device", device, "the Ray cluster has no GPU")
        node_cpus = [
            int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n.get("Alive", False)
        ]
        smallest = min((c for c in node_cpus if c > 0), default=1)
        self.cpus = executor.cpus_per_task or options.threads or smallest
        if not self.gpu and self.cpus > max(node_cpus, default=0):
            raise ConfigError(
                "cpus_per_task",
                self.cpus,
                f"no node of the Ray cluster has that many CPUs (largest: {max(node_cpus)})",
            )
        self.threads = None if self.gpu else self.cpus
        self.settings = worker_settings(options, self.threads, self.gpu)
        if self.gpu:
            self._slots = gpus
            self.tasks_per_node = 1
        else:
            self._slots = sum(c // self.cpus for c in node_cpus) or 1
            self.tasks_per_node = max(1, smallest // self.cpus)
        self.timeout_s = timeout_s
        need = {"num_gpus": 1, "num_cpus": 1} if self.gpu else {"num_cpus": self.cpus}
        self._probe = ray.remote(**need)(_probe_task)
        self._run = ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False, **need)(_run_unit)
        self.pending: dict[Any, RunUnit] = {}

    def slots(self) -> int:
        return self._slots

    def probe(self) -> dict[str, Any]:
        try:
            hello = self.ray.get(self._probe.remote(self.settings), timeout=900)
        except self.ray.exceptions.RayError as e:
            raise ParadnnError(f"a Ray task could not start a paradnn worker: {e}") from None
        return {**hello, "tasks_per_node": self.tasks_per_node}

    def run(self, units: Sequence[RunUnit]) -> Iterator[News]:
        ray = self.ray
        queue = list(units)
        window = 2 * self._slots  # enough queued for every slot, few enough to cancel fast
        while queue or self.pending:
            while queue and len(self.pending) < window:
                unit = queue.pop(0)
                self.pending[self._run.remote(unit, self.settings, self.timeout_s)] = unit
                yield News("started", unit.id)
            ready, _ = ray.wait(list(self.pending), num_returns=1, timeout=BEAT_S)
            if not ready:
                yield News("beat")
                continue
            for ref in ready:
                unit = self.pending.pop(ref)
                yield News("result", unit.id, self._outcome(ref, unit))

    def _outcome(self, ref: Any, unit: RunUnit) -> Any:
        ray = self.ray
        try:
            return ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return unit.failed(Status.CRASHED, "the Ray task was cancelled")
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as e:
            why = f"the Ray worker or node died {MAX_RETRIES + 1} times: {type(e).__name__}"
            return unit.failed(Status.CRASHED, why)
        except ray.exceptions.RayError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return unit.failed(Status.CRASHED, f"Ray task failed: {first}")

    def close(self) -> None:
        for ref in list(self.pending):
            self.ray.cancel(ref, force=True)
        self.pending.clear()


def _passed_env() -> dict[str, str]:
    """Variables the task's worker must see as the driver does: the source path (an editable
    checkout), the ISA caps and CPU-flag override that change what is measured."""
    keep = ("PYTHONPATH", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith("PARADNN_")})
    return env


def wait_for_nodes(count: int, timeout_s: float = 60.0) -> None:
    """Block until `count` nodes are alive (a cluster that is still starting)."""
    import ray

    deadline = time.monotonic() + timeout_s
    while sum(1 for n in ray.nodes() if n.get("Alive")) < count:
        if time.monotonic() > deadline:
            raise ParadnnError(f"fewer than {count} Ray nodes came up in {timeout_s:g} s")
        time.sleep(0.2)
