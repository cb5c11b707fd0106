"""The unit of work: what the supervisor plans, sends to a worker and stores.

A unit is one training run (`RunUnit`, its record prepared here before any worker sees it) or
one kernel of `calibrate` or `ops` (`KernelUnit`, runner/tasks.py). The supervisor, the
isolated runner and the cluster engines hold units through this one interface: the outcome
known without a worker, the outcome stored when its worker dies or hangs, and how an outcome
is stored. None of them asks which kind it holds; a worker receives the unit itself and
answers it by its `answer` (runner/worker.py). Torch-free.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from paradnn import backends
from paradnn.records import RunRecord, Status, now

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.config import RunOptions, RunSpec
    from paradnn.store import Store


@dataclass(frozen=True)
class Stored:
    """An outcome as stored: its status, and the record (a run) or the row (a kernel)."""

    status: str
    record: RunRecord | None = None
    row: dict[str, Any] | None = None
    attempt: int | None = None  # a run's attempt number (the store gives it)

    @property
    def value(self) -> Any:
        """What the caller gets back for it: the record or the row."""
        return self.record if self.record is not None else self.row


@dataclass(frozen=True, kw_only=True)
class Unit:
    """One unit of work. `id` numbers it in its sweep; `cost` weighs it in the ETA; a noisy
    run measured again is the same unit with `remeasured` + 1 (runner/busy.py says when).
    `family`, `precision` and `config` are what progress shows."""

    answer: ClassVar[str]  # how a worker answers it (runner/worker.py's ANSWERS)
    id: int = 0
    cost: float = 1.0
    remeasured: int = 0

    @property
    def family(self) -> str:
        raise NotImplementedError

    @property
    def precision(self) -> str:
        raise NotImplementedError

    @property
    def config(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def fresh_worker(self) -> bool:
        """Whether it runs in a worker of its own, retired after it."""
        return False

    def settled(self) -> Any | None:
        """The outcome known without a worker (stored as it is), else None."""
        return None

    def sent(self) -> Unit:
        """The unit as it stands once sent to a worker."""
        return self

    def status(self, outcome: Any) -> str:
        """An outcome's status (it decides whether its worker is retired)."""
        raise NotImplementedError

    def failed(
        self, status: str, error: str, *, pid: int | None = None, index: int | None = None
    ) -> Any:
        """The outcome of this unit when its worker died, hung or never started."""
        raise NotImplementedError

    def store(self, outcome: Any, store: Store, idle: dict[str, Any] | None = None) -> Stored:
        """Store the outcome (its own transaction); `idle`: the sweep's idle power (--energy)."""
        raise NotImplementedError

    def noisy(self, stored: Stored) -> list[str] | None:
        """Why a stored ok outcome is noisy (then it may be measured again), else None."""
        return None


@dataclass(frozen=True, kw_only=True)
class RunUnit(Unit):
    """One training run: its description whole (`spec`) and its record, prepared from it
    (runner/start.py: identity, run key, analytic counts; the supervisor's memory prediction);
    the worker adds what it measured."""

    answer: ClassVar[str] = "run"
    record: RunRecord
    spec: RunSpec
    started_at: str | None = None  # when it was sent to a worker (a failure's row says so)

    @property
    def options(self) -> RunOptions:
        return self.spec.options

    @property
    def family(self) -> str:
        return self.record.family

    @property
    def precision(self) -> str:
        return self.record.precision

    @property
    def config(self) -> dict[str, Any]:
        return self.record.config

    @property
    def fresh_worker(self) -> bool:
        """A compiled mode's run gets a fresh worker, so no dynamo or inductor state passes
        between runs (docs/modes.md); so does a run of a backend that asks for one
        (paradnn.backends: JAX's peak memory is the process's high-water mark, and XLA's
        caches stay in the process, docs/jax.md)."""
        o = self.options
        return o.mode != "eager" or backends.get(backends.running(o.backend, o.procs)).fresh_worker

    def settled(self) -> RunRecord | None:
        return self.record if self.record.status != Status.OK else None

    def sent(self) -> RunUnit:
        return dataclasses.replace(self, started_at=now())

    def status(self, outcome: Any) -> str:
        return str(outcome.status)

    def failed(
        self, status: str, error: str, *, pid: int | None = None, index: int | None = None
    ) -> RunRecord:
        rec = self.record.replace(status=status, error=error)
        if self.started_at is not None:
            rec = rec.replace(started_at=self.started_at)
        if pid is not None:
            rec = rec.replace(worker_pid=pid)
        return rec if index is None else rec.replace(worker_index=index)

    def store(self, outcome: Any, store: Store, idle: dict[str, Any] | None = None) -> Stored:
        from paradnn import utilization

        rec: RunRecord = outcome
        if rec.finished_at is None:
            rec = rec.replace(finished_at=now())
        if self.options.energy:
            from paradnn.measure.energy import with_idle

            rec = rec.with_part(with_idle(rec.energy_part, idle))
        rec = utilization.of_record(rec, store)
        rec = store.insert_record(rec)  # the supervisor alone stores; the store numbers it
        return Stored(rec.status, record=rec, attempt=rec.attempt)

    def noisy(self, stored: Stored) -> list[str] | None:
        rec = stored.record
        if rec is None or rec.status != Status.OK or rec.quality != "noisy":
            return None
        return list(rec.quality_reasons or ["rated noisy"])


__all__ = ["RunUnit", "Stored", "Unit"]
