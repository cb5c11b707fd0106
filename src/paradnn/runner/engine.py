"""What a cluster engine is to the supervisor: units of work in (runner/units.py), news out
(`News`).

Shared by the Ray and Slurm engines and `ClusterSupervisor` (runner/cluster.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from paradnn.config import RunOptions
from paradnn.errors import ConfigError
from paradnn.records import RunRecord
from paradnn.runner.units import RunUnit
from paradnn.runner.worker import WorkerSettings


@dataclass(frozen=True)
class News:
    """What an engine reports while it runs: a config `started` or its `result`; `beat` (no
    id) when nothing happened for a while, so the user hears that the sweep is alive."""

    kind: str  # started | result | beat
    id: int = -1
    record: RunRecord | None = None


class Engine(Protocol):
    name: str
    threads: int | None  # each CPU task's thread count (its CPUs); None for GPU tasks

    def probe(self) -> dict[str, Any]: ...  # a worker's hello on a cluster node
    def slots(self) -> int: ...  # how many configs run at once
    def run(self, units: Sequence[RunUnit]) -> Iterator[News]: ...
    def close(self) -> None: ...


def missing_extra(kind: str, error: ImportError) -> ConfigError:
    return ConfigError(
        "executor",
        kind,
        f"needs the optional extra: pip install 'paradnn[{kind}]' ({error.name or error} is "
        "not installed)",
    )


def worker_settings(options: RunOptions, cpus: int | None, gpu: bool) -> WorkerSettings:
    """What the task's worker is started with: a GPU task sees its one GPU as cuda:0 (the
    engine sets CUDA_VISIBLE_DEVICES); a CPU task runs `cpus` threads, its recorded count."""
    return WorkerSettings("cuda" if gpu else "cpu", cpus or options.threads, None)
