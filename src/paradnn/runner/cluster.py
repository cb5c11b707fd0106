"""Sweeps on a cluster engine (Ray, Slurm through submitit): the same plan, the same store.

`ClusterSupervisor` is the local `Supervisor` with another way to execute: it plans exactly as
the local one does (run keys from a worker's environment, resume by key, the memory
prediction), hands each config to an `Engine`, and stores what comes back. Only this process
writes the store; a task returns its record. A cluster task runs `isolated.run_one`, which
starts paradnn's own worker process for one config with the run's deadline, so a result means
on a cluster what it means locally, and a sweep can be started with one executor and finished
with another (same machine kind, same run keys).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from paradnn.axes import listing
from paradnn.config import ENGINES, ExecutorSettings, RunOptions, RunSpec, SweepSettings
from paradnn.errors import ConfigError
from paradnn.presets import resolve_native
from paradnn.records import RunRecord
from paradnn.runner.engine import Engine
from paradnn.runner.supervisor import Event, Supervisor, memory_for
from paradnn.runner.units import RunUnit
from paradnn.store import Store


def open_engine(executor: ExecutorSettings, options: RunOptions, timeout_s: float) -> Engine:
    """The engine for `executor`, from the registry (config.ENGINES); a missing extra is one
    ConfigError, before any work."""
    import importlib

    where = ENGINES.get(executor.kind)
    if where is None:
        raise ConfigError("executor", executor.kind, "a cluster executor: " + listing(ENGINES))
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)(executor, options, timeout_s)


class ClusterSupervisor(Supervisor):
    def __init__(
        self,
        store: Store,
        options: RunOptions,
        settings: SweepSettings,
        engine: Engine,
        *,
        sweep: str | None = None,
        on_event: Any = None,
    ):
        if engine.threads is not None and options.threads != engine.threads:
            # the run's recorded thread count is what the task asked the engine for
            options = dataclasses.replace(options, threads=engine.threads)
        super().__init__(store, options, settings, sweep=sweep, on_event=on_event)
        self.engine = engine
        self.inflight: dict[int, RunUnit] = {}
        self.nodes: Counter[str] = Counter()

    def _emit(self, kind: str, slots: Any, skipped: int = 0, progress: Any = None) -> None:
        running = list(self.inflight.values())
        self.on_event(
            Event(
                kind,
                self.done,
                self.total,
                dict(self.counts),
                self._last.record if kind == "result" and self._last else None,
                running,  # type: ignore[arg-type]
                skipped,
                self._eta(max(1, min(len(running), self.engine.slots()))),
                notes=list(self.notes) if kind == "start" else [],
                progress=progress,
                nodes=dict(self.nodes),
            )
        )

    def run(self, specs: Sequence[RunSpec]) -> list[RunRecord]:
        threads = self.options.threads  # each run's is what its task asked the engine for
        specs = [dataclasses.replace(s, options=_with_threads(s.options, threads)) for s in specs]
        hello = self.engine.probe()
        specs, self.notes = resolve_native(list(specs), hello["env"]["native_precisions"])
        self.notes.append(f"executor {self.engine.name}: {self.engine.slots()} configs at a time")
        if self.settings.remeasure:  # docs/runner.md#re-measuring-noisy-runs
            self.notes.append(
                f"--remeasure {self.settings.remeasure}: noisy runs are not re-measured on a "
                "cluster (local workers only); `paradnn bench` one again to measure it anew"
            )
        # tasks on one node share its memory
        capacity = memory_for(hello, int(hello.get("tasks_per_node", 1)))
        units, skipped = self.plan(specs, hello["env"], capacity)
        self.total, self.cost_left = len(units), sum(u.cost for u in units)
        results: list[RunRecord] = []
        self._emit("start", None, skipped)
        todo: list[RunUnit] = []
        for unit in units:
            settled = unit.settled()
            if settled is not None:
                self._finish(settled, unit, None, results, [])  # never reaches a cluster
            else:
                todo.append(unit)
        by_id = {u.id: u for u in todo}
        started: dict[int, float] = {}
        try:
            for news in self.engine.run(todo):
                if news.kind == "beat":
                    self._emit("progress", None, progress={"phase": "running on the cluster"})
                elif news.kind == "started":
                    self.inflight[news.id], started[news.id] = by_id[news.id], time.monotonic()
                    self._emit("run", None)
                else:
                    unit = by_id[news.id]
                    self.inflight.pop(news.id, None)
                    took = time.monotonic() - started.pop(news.id, time.monotonic())
                    rec = news.record
                    self.nodes[(rec.env or {}).get("hostname") or "unknown"] += 1
                    self._finish(rec, unit, took, results, [])
        except KeyboardInterrupt:
            self.engine.close()
            raise
        self.engine.close()
        self._emit("end", None)
        return results


def _with_threads(options: RunOptions, threads: int | None) -> RunOptions:
    return options if options.threads == threads else dataclasses.replace(options, threads=threads)
