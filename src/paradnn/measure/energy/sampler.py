"""One sampler thread for every source: a reading per period, monotonic timestamps, gaps kept.

The period is never below 50 ms (faster NVML polling returns zeros or NotSupported, reference
§3.3). Scheduling is drift-free: a late tick is counted and the schedule restarts from now
instead of bursting to catch up. RAPL counters are read on every tick too, so a window's wrap
correction always sees consecutive reads well inside the counter's range. Clock and wait are
injectable: tests drive a "60 s" run on a virtual clock in milliseconds.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from paradnn.measure.energy.base import Reading, Unavailable

MIN_PERIOD_S = 0.05
GAP_FACTOR = 1.5  # an interval longer than 1.5 periods between ticks is a gap
MAX_GAPS_KEPT = 20


class Sampler:
    def __init__(
        self,
        sources: Sequence[Any],
        period_s: float = MIN_PERIOD_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], Any] | None = None,
    ):
        if period_s < MIN_PERIOD_S:
            raise ValueError(f"period_s = {period_s}: must be ≥ {MIN_PERIOD_S}")
        self.sources, self.period_s, self.clock = list(sources), period_s, clock
        self._stop = threading.Event()
        self._wait = wait or self._stop.wait
        self.readings: dict[str, list[Reading]] = {s.id: [] for s in self.sources}
        self.errors: dict[str, Counter[str]] = {s.id: Counter() for s in self.sources}
        self.ticks: list[float] = []
        self.late = 0
        self._thread: threading.Thread | None = None

    def tick(self) -> None:
        """Read every source once (the thread calls this each period; tests may call it)."""
        self.ticks.append(self.clock())
        for s in self.sources:
            try:
                self.readings[s.id].append(s.read())
            except Unavailable as e:
                self.errors[s.id][e.reason] += 1

    def _loop(self) -> None:
        deadline = self.clock()
        while not self._stop.is_set():
            now = self.clock()
            if now - deadline > self.period_s / 2:  # woke late: count it, restart from now
                self.late += 1
                deadline = now
            self.tick()
            deadline += self.period_s
            self._wait(max(0.0, deadline - self.clock()))

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="paradnn-energy", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def health(self, t0: float | None = None, t1: float | None = None) -> dict[str, Any]:
        """Ticks, gaps and late ticks between t0 and t1 (the whole run when None)."""
        ticks = [t for t in self.ticks if (t0 is None or t >= t0) and (t1 is None or t <= t1)]
        edges = ([t0] if t0 is not None else []) + ticks + ([t1] if t1 is not None else [])
        intervals = [(a, b - a) for a, b in itertools.pairwise(edges)]
        gaps = [(a, d) for a, d in intervals if d > GAP_FACTOR * self.period_s]
        base = edges[0] if edges else 0.0
        return {
            "period_s": self.period_s,
            "n_samples": len(ticks),
            "max_gap_s": max((d for _, d in intervals), default=None),
            "late_count": self.late,
            "gaps": [
                {"at_s": round(a - base, 6), "duration_s": round(d, 6)}
                for a, d in gaps[:MAX_GAPS_KEPT]
            ],
            "gap_count": len(gaps),
            "errors": {k: dict(v) for k, v in self.errors.items() if v},
        }
