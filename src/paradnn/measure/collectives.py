"""What N ranks time with: the agreement and clock the timer runs in lock step with, and an
isolated all-reduce (docs/scaling.md).

The timer (measure/timer.py `measure`, given `agree=Agree(device)`) runs the same control flow
on every rank: each decision (warm-up done, enough samples) is taken on values every rank
agrees on (an all-gather of the local times), so no rank waits in a collective another rank
has left. Each timed block starts after a barrier; every rank times it and the slowest rank's
time is the sample (a data-parallel step is as slow as its slowest rank). Bandwidths follow
nccl-tests (doc/PERFORMANCE.md): algbw = S / t and, for an all-reduce, busbw = algbw · 2(n−1)/n.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

import torch
import torch.distributed as dist

from paradnn.config import TimingPolicy
from paradnn.measure.stats import summarize

SMALL_BYTES = 4096  # the latency end of the all-reduce ladder
AR_BUDGET_S = 1.0  # at most this many seconds of timed all-reduces per buffer size


def busbw(algbw: float, n: int) -> float:
    """nccl-tests' bus bandwidth of an all-reduce: algbw · 2(n−1)/n (n = ranks)."""
    return algbw * 2 * (n - 1) / n


def overlap_fraction(compute_s: float, allreduce_s: float, step_s: float) -> tuple[float, float]:
    """(clipped, raw) share of the all-reduce hidden under compute:
    (compute + all-reduce − step) / all-reduce. 1 = fully hidden, 0 = fully exposed; the raw
    value leaves [0, 1] when the step is slower than both serial (contention) or faster than
    compute alone (noise)."""
    raw = (compute_s + allreduce_s - step_s) / allreduce_s if allreduce_s > 0 else math.nan
    return (min(1.0, max(0.0, raw)) if math.isfinite(raw) else math.nan), raw


class Agree:
    """The collectives the lock step needs, over the default process group (the timer's
    `Agreement`)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.world = dist.get_world_size()

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def barrier(self) -> None:
        self.sync()
        dist.barrier()

    def gather(self, values: list[float]) -> list[list[float]]:
        """Every rank's `values`, on every rank (rank order)."""
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        out = [torch.empty_like(t) for _ in range(self.world)]
        dist.all_gather(out, t)
        return [o.tolist() for o in out]

    def max(self, value: float) -> float:
        return max(v[0] for v in self.gather([value]))


class RankClock:
    """A rank's clock for the timer (measure/timer.py): the host's monotonic seconds, read after
    the device has finished its queued work, so a block ends when this rank's step has."""

    def __init__(self, agree: Agree):
        self.agree = agree

    def now(self) -> float:
        return time.perf_counter()

    def sync(self) -> None:
        self.agree.sync()

    def mark(self) -> float:
        self.agree.sync()
        return time.perf_counter()

    def elapsed(self, pairs: list[tuple[float, float]]) -> list[float]:
        return [b - a for a, b in pairs]


def allreduce_time(
    nbytes: int, dtype: torch.dtype, agree: Agree, policy: TimingPolicy
) -> dict[str, Any]:
    """An isolated all-reduce (sum) of one flat buffer of `nbytes`: a short warm-up, then
    blocks of r back-to-back all-reduces after a barrier, the slowest rank's time per
    all-reduce; median with its CI, algbw and busbw."""
    size = max(1, nbytes // torch.empty((), dtype=dtype).element_size())
    buf = torch.ones(size, dtype=dtype, device=agree.device)
    now = time.perf_counter
    warm = []
    for _ in range(3):
        agree.barrier()
        t = now()
        dist.all_reduce(buf)
        agree.sync()
        warm.append(now() - t)
    est = max(agree.max(statistics.median(warm)), 1e-9)
    reps = max(1, math.ceil(policy.min_block_s / est))
    budget = min(AR_BUDGET_S, max(policy.max_time_s, 0.05))  # a quick policy: a quick ladder
    count = max(policy.min_samples, min(200, int(budget / (reps * est))))
    samples = []
    for _ in range(count):
        agree.barrier()
        a = now()
        for _ in range(reps):
            dist.all_reduce(buf)
        agree.sync()
        samples.append(agree.max((now() - a) / reps))
    s = summarize(samples, policy.confidence)
    real = size * buf.element_size()
    alg = real / s.median if s.median > 0 else math.nan
    return {
        "bytes": real,
        "time_s": s.median,
        "ci_low_s": s.ci_low,
        "ci_high_s": s.ci_high,
        "n_samples": s.n,
        "reps_per_sample": reps,
        "algbw": alg,
        "busbw": busbw(alg, agree.world),
    }
