"""Sweeps sharing one database (issue 46): each configuration is measured once, by whichever
sweep claims it first (store/claims.py), and a sweep that stops leaves its claims to the others.

The supervisor asks `take(unit)` before it hands a unit out (or stores one that needs no
worker). A unit another live sweep holds waits in `waiting`; the supervisor asks again about
the waiting ones (`due`) while it works and after its own queue is empty, so a sweep ends when
every configuration it planned is stored, by itself or by another sweep, and takes over what a
stopped sweep had claimed. What it met is said in `notes` (an Event of kind `note`). Torch-free.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from paradnn.store import claims

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.runner.units import Unit
    from paradnn.store import Store

POLL_S = 1.0  # how often the waiting units are asked about again


def words(family: str, precision: str, config: Mapping[str, Any] | None) -> str:
    """A run as notes name it: family, precision, config."""
    values = ", ".join(f"{k}={v}" for k, v in (config or {}).items())
    return f"{family} {precision} {values}".strip()


def label(unit: Unit) -> str:
    return words(unit.family, unit.precision, unit.config)


@dataclass
class Sharing:
    """The claims of one sweep on its database."""

    store: Store
    sweep: str | None
    known: dict[str, int]  # run key -> the newest attempt this sweep knows is stored
    owner: claims.Owner = field(default_factory=claims.Owner.here)
    waiting: list[Unit] = field(default_factory=list)  # held by another live sweep
    by_others: int = 0  # planned here, stored by another sweep meanwhile
    met: dict[str, claims.Owner] = field(default_factory=dict)  # other sweeps, by token
    notes: list[str] = field(default_factory=list)  # what to say next (the caller empties it)
    _keeper: claims.Keeper | None = None
    _polled: float = 0.0

    @classmethod
    def of(cls, store: Store, sweep: str | None) -> Sharing:
        return cls(store, sweep, store.latest_attempts())

    def take(self, unit: Unit) -> bool:
        """Claim `unit`'s run key: True when this sweep is to measure it now; False when another
        sweep holds it (the unit waits) or has stored it since this one planned (dropped)."""
        key = _key(unit)
        if key is None:
            return True
        with self.store.writing(f"the claim on {label(unit)}"):
            got = claims.claim(
                self.store.conn, self.owner, key, self.known.get(key, 0), sweep=self.sweep
            )
        if got.kind == claims.STORED:
            self.by_others += 1
            return False
        if got.kind == claims.HELD:
            self._met(got.holder)
            self.waiting.append(unit)
            return False
        if got.taken_from is not None:
            self.notes.append(
                f"taking over {label(unit)}: {got.taken_from.words()} claimed it and stopped "
                "before storing it"
            )
        if self._keeper is None and self.store.path != ":memory:":
            self._keeper = claims.Keeper(self.store.path, self.owner)
        return True

    def stored(self, unit: Unit, attempt: int | None) -> None:
        """`unit`'s outcome is stored (as `attempt`): its claim is dropped."""
        key = _key(unit)
        if key is None:
            return
        if attempt is not None:
            self.known[key] = max(self.known.get(key, 0), attempt)
        with self.store.writing(f"the end of the claim on {label(unit)}"):
            claims.release(self.store.conn, self.owner, key)

    def due(self, now: float | None = None) -> list[Unit]:
        """The waiting units this sweep may measure now (their owner stopped), at most every
        POLL_S; the ones another sweep stored are dropped (counted in `by_others`)."""
        now = time.monotonic() if now is None else now
        if not self.waiting or now - self._polled < POLL_S:
            return []
        self._polled = now
        waiting, self.waiting = self.waiting, []
        return [u for u in waiting if self.take(u)]

    def _met(self, other: claims.Owner | None) -> None:
        if other is None or other.token in self.met:
            return
        self.met[other.token] = other
        self.notes.append(
            f"another sweep ({other.words()}) is measuring configurations of this database: "
            "the ones it has claimed are left to it (this sweep waits for them at its end, "
            "and measures them if it stops)"
        )

    def summary(self) -> list[str]:
        """What the other sweeps did for this one, said once at its end."""
        if not self.by_others:
            return []
        who = ", ".join(o.words() for o in self.met.values()) or "another sweep"
        n = self.by_others
        return [
            f"{n} configuration{'s' if n != 1 else ''} of this sweep {'were' if n != 1 else 'was'}"
            f" measured by another sweep on this database ({who}): stored once, not here"
        ]

    def close(self) -> None:
        """Stop renewing and drop every claim still held (a sweep that ends or is
        interrupted); a killed sweep's claims lapse by themselves."""
        if self._keeper is not None:
            self._keeper.close()
            self._keeper = None
        if self.store.exists():  # the sweep's own error (a full disk) is the one to tell
            with contextlib.suppress(Exception):
                claims.release(self.store.conn, self.owner)


def _key(unit: Unit) -> str | None:
    record = getattr(unit, "record", None)
    return getattr(record, "run_key", None)


__all__ = ["Sharing", "label"]
