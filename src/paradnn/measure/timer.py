"""Adaptive timing of a training step (reference/timing.md §3.2).

Phases: the first step timed on its own (it carries allocation, autotuning, compilation); warm-up
until the step time is stable; then samples, each a block of k back-to-back steps bounded by the
clock's marks with no synchronisation inside a block; stop once the 95% CI of the median is within
±2% (after a minimum count and time), or at a time cap. The clock is injected, so the whole policy
is unit-tested with a fake clock. N data-parallel ranks use the same timer in lock step through
an agreement (`Agreement`, measure/collectives.py): a barrier before each block, every decision
on values all ranks share, the slowest rank's time as the sample.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from paradnn.config import (
    MAX_TIMING_COUNT,
    MAX_TIMING_S,
    QUICK_POLICY,
    WARMUP_WINDOW,
    TimingPolicy,
)
from paradnn.measure.stats import Summary, summarize

__all__ = [
    "MAX_TIMING_COUNT",
    "MAX_TIMING_S",
    "QUICK_POLICY",
    "Agreement",
    "BlockClock",
    "HostClock",
    "Progress",
    "Timing",
    "TimingPolicy",
    "Windows",
    "measure",
]


class BlockClock(Protocol):
    """Where time comes from. `mark()` is cheap and never waits for the device; `elapsed` turns
    pairs of marks into seconds and may synchronise (once, for a whole chunk of blocks)."""

    def now(self) -> float: ...  # host monotonic seconds, for budgets
    def sync(self) -> None: ...  # wait until the device has finished queued work
    def mark(self) -> Any: ...
    def elapsed(self, pairs: list[tuple[Any, Any]]) -> list[float]: ...


class HostClock:
    """CPU devices: a monotonic clock; torch CPU ops run synchronously, so no sync is needed."""

    def now(self) -> float:
        return time.perf_counter()

    def sync(self) -> None:
        return None

    def mark(self) -> float:
        return time.perf_counter()

    def elapsed(self, pairs: list[tuple[float, float]]) -> list[float]:
        return [b - a for a, b in pairs]


@dataclass
class Timing:
    first_step_s: float
    warmup_steps: int
    warmup_s: float
    warmup_converged: bool
    steps_per_sample: int
    samples: list[float]  # seconds per step, one entry per timed block
    summary: Summary
    converged: bool  # the CI target was met before a cap
    stop_reason: str
    measure_wall_s: float  # host wall clock of the whole measurement phase
    host_step_s: float  # measure_wall_s / steps: the host's view, includes sync gaps
    extras: dict[str, Any] = field(default_factory=dict)
    steps: int = 0  # steps in the timed window (what an energy window divides by)
    per_rank: list[list[float]] = field(default_factory=list)  # in lock step: each rank's samples

    def as_dict(self) -> dict[str, Any]:
        """The figures a record keeps (runner/core.py `step_times`, the quality verdict), plain
        enough to cross a process boundary as JSON (a rank's result)."""
        s = self.summary
        return {
            "median": s.median,
            "mean": s.mean,
            "min": s.min,
            "q1": s.q1,
            "q3": s.q3,
            "ci_low": s.ci_low,
            "ci_high": s.ci_high,
            "ci_rel": s.ci_rel if s.ci_low is not None else None,
            "n": s.n,
            "steps_per_sample": self.steps_per_sample,
            "converged": self.converged,
            "stop_reason": self.stop_reason,
            "first_step_s": self.first_step_s,
            "warmup_steps": self.warmup_steps,
            "warmup_s": self.warmup_s,
            "host_step_s": self.host_step_s,
            "samples": list(self.samples),
        }


class _Speaker:
    """Rate-limited progress: `due()` says whether a new report may go out."""

    def __init__(self, progress: Progress | None, clock: BlockClock):
        self.progress, self.clock, self.last = progress, clock, -math.inf

    def due(self) -> bool:
        return self.progress is not None and self.clock.now() - self.last >= PROGRESS_EVERY_S

    def __call__(self, info: dict[str, Any], force: bool = False) -> None:
        if self.progress is not None and (force or self.due()):
            self.last = self.clock.now()
            self.progress(info)


class Window(Protocol):
    """Called at the edges of the timed phase, after a device sync (an energy meter)."""

    def begin(self) -> None: ...
    def end(self) -> None: ...


class Windows:
    """Several windows at the same edges (an energy meter and a load probe): begun in order,
    ended in reverse, so the outermost sees the others' own cost."""

    def __init__(self, *windows: Window | None):
        self.windows = [w for w in windows if w is not None]

    def begin(self) -> None:
        for w in self.windows:
            w.begin()

    def end(self) -> None:
        for w in reversed(self.windows):
            w.end()


Progress = Callable[[dict[str, Any]], None]
PROGRESS_EVERY_S = 1.0  # the timer speaks at most this often (and at every phase change)
QUIET_S = 2.0  # a kernel's phases are worth telling only once it has run this long


def progress_words(info: dict[str, Any]) -> str:
    """A progress report in a few words: phase, steps or samples, running median and CI, and
    the seconds a worker has spent on the job (when the supervisor added them)."""
    phase = info.get("phase", "")
    bits = [phase]
    if phase == "warm-up" and info.get("steps"):
        bits.append(f"{info['steps']} steps, {info['step_s'] * 1e3:.3g} ms/step")
    if phase == "timed" and info.get("samples"):
        bits.append(f"{info['samples']} samples, median {info['median_s'] * 1e3:.3g} ms")
        ci = info.get("ci_rel")
        if ci is not None and ci != math.inf:
            bits.append(f"CI ±{ci:.1%}")
    if info.get("elapsed_s") is not None:
        bits.append(f"{info['elapsed_s']:.0f} s")
    return ", ".join(b for b in bits if b)


def told_after(say: Callable[[str], None], label: str, quiet_s: float = QUIET_S) -> Progress:
    """A progress callback that tells `label: <words>` only once the kernel has run `quiet_s`
    (a 1 ms matmul's phases are noise; a 20 s one's are news)."""
    start = time.monotonic()

    def heard(info: dict[str, Any]) -> None:
        if time.monotonic() - start >= quiet_s:
            say(f"{label}: {progress_words(info)}")

    return heard


class Agreement(Protocol):
    """N ranks timing one step together (measure/collectives.py's `Agree`): each timed block
    starts after a barrier, and every decision (warm-up done, enough samples) is taken on
    values all ranks agree on, so no rank waits in a collective another rank has left."""

    world: int

    def barrier(self) -> None: ...
    def gather(self, values: list[float]) -> list[list[float]]: ...  # every rank's, in order


def _agreed(agree: Agreement | None, values: list[float]) -> list[float]:
    """Each value as the ranks agree on it (the largest, the slowest rank's); alone: itself."""
    if agree is None:
        return values
    return [max(column) for column in zip(*agree.gather(values), strict=True)]


def _first_step(
    step: Callable[[], Any], clock: BlockClock, agree: Agreement | None, say: _Speaker
) -> float:
    """P1: the cold step, synchronised on both sides (after a barrier, in lock step)."""
    say({"phase": "first step"}, force=True)
    if agree is None:
        clock.sync()
    else:
        agree.barrier()
    t0 = clock.now()
    step()
    clock.sync()
    (first,) = _agreed(agree, [clock.now() - t0])
    say({"phase": "warm-up", "steps": 0, "step_s": first}, force=True)
    return first


def _warm_up(
    step: Callable[[], Any],
    clock: BlockClock,
    policy: TimingPolicy,
    agree: Agreement | None,
    *,
    fixed: bool,
    say: _Speaker,
) -> tuple[list[float], float, bool]:
    """P2: one synchronised step at a time until two windows of 5 agree, or a cap; with a
    `fixed` block size, warmup_min_steps. (the step times, seconds spent, converged)."""
    warm: list[float] = []
    w0 = clock.now()
    while True:
        t = clock.now()
        step()
        clock.sync()
        dt = clock.now() - t
        dt, spent = _agreed(agree, [dt, clock.now() - w0])
        warm.append(dt)
        n = len(warm)
        say({"phase": "warm-up", "steps": n, "step_s": warm[-1]})
        if fixed and n >= policy.warmup_min_steps:
            return warm, clock.now() - w0, False
        if n >= policy.warmup_least_steps and spent >= policy.warmup_min_time_s:
            recent = statistics.median(warm[-WARMUP_WINDOW:])
            before = statistics.median(warm[-2 * WARMUP_WINDOW : -WARMUP_WINDOW])
            if recent > 0 and abs(recent - before) / recent <= policy.warmup_tolerance:
                return warm, clock.now() - w0, True
        if n >= policy.warmup_max_steps or spent >= policy.warmup_max_time_s:
            return warm, clock.now() - w0, False


def measure(
    step: Callable[[], Any],
    clock: BlockClock,
    policy: TimingPolicy,
    window: Window | None = None,
    progress: Progress | None = None,
    *,
    agree: Agreement | None = None,
    k: int | None = None,
    samples_cap: int | None = None,
) -> Timing:
    """Time `step` under `policy`. With `agree` (N ranks in lock step) each sample is the
    slowest rank's time of its block (`per_rank` keeps every rank's); `k` and `samples_cap`
    fix the block size and the sample count (a no_sync timing reusing a step's)."""
    say = _Speaker(progress, clock)
    first = _first_step(step, clock, agree, say)
    warm, warmup_s, converged_warmup = _warm_up(
        step, clock, policy, agree, fixed=k is not None, say=say
    )
    est = max(statistics.median(warm[-WARMUP_WINDOW:]), 1e-9)

    # P4: blocks of k steps, resolved a chunk at a time (one block at a time in lock step).
    if k is None:
        k = max(1, math.ceil(policy.min_block_s / est - 1e-6))  # tolerate float noise in est
    block_s = k * est
    # At least min_samples samples even when one step outlasts the cap (timing.md: T_max ≥ 10×est).
    cap = max(policy.max_time_s, policy.min_samples * block_s, policy.min_window_s)
    chunk = 1 if agree is not None else max(1, min(policy.max_chunk, int(0.1 * cap / block_s)))
    samples: list[float] = []
    per_rank: list[list[float]] = [[] for _ in range(agree.world)] if agree is not None else []
    say({"phase": "timed", "samples": 0, "steps_per_sample": k}, force=True)
    if window is not None:
        clock.sync()
        window.begin()
    stock = getattr(clock, "stock", None)  # a clock whose marks are made ahead (CUDA events):
    if stock is not None:  # enough for a whole chunk, so no mark creates one inside the window
        stock(2 * chunk)
    m0 = clock.now()
    steps = 0
    stop_reason = "max_time"
    converged = False
    while True:
        pairs = []
        for _ in range(chunk):
            if agree is not None:
                agree.barrier()
            a = clock.mark()
            for _ in range(k):
                step()
            pairs.append((a, clock.mark()))
        steps += chunk * k
        local = [d / k for d in clock.elapsed(pairs)]
        if agree is None:
            samples += local
            spent = clock.now() - m0
        else:
            got = agree.gather([local[0], clock.now() - m0])
            for r, (d, _) in enumerate(got):
                per_rank[r].append(d)
            samples.append(max(d for d, _ in got))
            spent = max(s for _, s in got)
        n = len(samples)
        if say.due():
            now_s = summarize(samples, policy.confidence)
            say({"phase": "timed", "samples": n, "median_s": now_s.median, "ci_rel": now_s.ci_rel})
        if samples_cap is not None:
            if n >= samples_cap:
                stop_reason = "fixed_count"
                break
            continue
        long_enough = spent >= policy.min_window_s
        ready = n >= policy.min_samples and spent >= policy.min_time_s and long_enough
        if ready and summarize(samples, policy.confidence).ci_rel <= policy.target_ci_rel:
            converged, stop_reason = True, "ci_target"
            break
        if n >= policy.max_samples and long_enough:
            stop_reason = "max_samples"
            break
        if spent >= cap and n >= policy.min_samples:
            break
    clock.sync()
    wall = clock.now() - m0
    if window is not None:
        window.end()
    return Timing(
        first_step_s=first,
        warmup_steps=len(warm),
        warmup_s=warmup_s,
        warmup_converged=converged_warmup,
        steps_per_sample=k,
        samples=samples,
        summary=summarize(samples, policy.confidence),
        converged=converged,
        stop_reason=stop_reason,
        measure_wall_s=wall,
        host_step_s=wall / steps,
        steps=steps,
        per_rank=per_rank,
    )
