"""Timing N ranks in lock step, and an isolated all-reduce (docs/scaling.md).

Every rank runs the same control flow: each decision (warm-up done, enough samples) is taken
on values every rank agrees on (an all-reduce or all-gather of the local times), so no rank
waits in a collective another rank has left. Each timed block starts after a barrier; every
rank times it and the slowest rank's time is the sample (a data-parallel step is as slow as
its slowest rank). Bandwidths follow nccl-tests (doc/PERFORMANCE.md): algbw = S / t and, for
an all-reduce, busbw = algbw · 2(n−1)/n.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from paradnn.config import TimingPolicy
from paradnn.measure.stats import Summary, summarize

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


@dataclass
class Lockstep:
    """The agreed timing of one step function across the ranks."""

    first_step_s: float
    warmup_steps: int
    warmup_s: float
    steps_per_sample: int
    samples: list[float]  # per step, the slowest rank of each block
    per_rank: list[list[float]]  # per rank, its own per-step time of each block
    summary: Summary
    converged: bool
    stop_reason: str
    wall_s: float
    steps: int
    extras: dict[str, Any] = field(default_factory=dict)


class Agree:
    """The collectives the lock step needs, over the default process group."""

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


def lockstep(
    step: Callable[[], Any],
    agree: Agree,
    policy: TimingPolicy,
    *,
    k: int | None = None,
    samples_cap: int | None = None,
    window: Any = None,
) -> Lockstep:
    """timer.measure's phases (first step, warm-up until stable, blocks of k steps until the
    median's CI meets the target or a cap), every decision taken on agreed values.
    `k` and `samples_cap` fix the block size and count (the no_sync timing reuses the step's)."""
    now = time.perf_counter
    agree.barrier()
    t0 = now()
    step()
    agree.sync()
    first = agree.max(now() - t0)
    warm: list[float] = []
    w0 = now()
    warm_max = policy.warmup_max_steps if k is None else policy.warmup_min_steps
    while True:
        t = now()
        step()
        agree.sync()
        dt, spent = (max(v) for v in zip(*agree.gather([now() - t, now() - w0]), strict=True))
        warm.append(dt)
        n = len(warm)
        if k is not None and n >= policy.warmup_min_steps:
            break
        if n >= max(policy.warmup_min_steps, 10) and spent >= policy.warmup_min_time_s:
            recent, before = statistics.median(warm[-5:]), statistics.median(warm[-10:-5])
            if recent > 0 and abs(recent - before) / recent <= policy.warmup_tolerance:
                break
        if n >= warm_max or spent >= policy.warmup_max_time_s:
            break
    warmup_s = now() - w0
    est = max(statistics.median(warm[-5:]), 1e-9)
    if k is None:
        k = max(1, math.ceil(policy.min_block_s / est - 1e-6))
    cap = max(policy.max_time_s, policy.min_samples * k * est)
    samples: list[float] = []
    per_rank: list[list[float]] = [[] for _ in range(agree.world)]
    stop, converged = "max_time", False
    if window is not None:
        window.begin()
    m0 = now()
    steps = 0
    while True:
        agree.barrier()
        a = now()
        for _ in range(k):
            step()
        agree.sync()
        local = (now() - a) / k
        steps += k
        got = agree.gather([local, now() - m0])
        for r, (d, _) in enumerate(got):
            per_rank[r].append(d)
        samples.append(max(d for d, _ in got))
        spent = max(s for _, s in got)
        n = len(samples)
        if samples_cap is not None:
            if n >= samples_cap:
                stop = "fixed_count"
                break
            continue
        ready = n >= policy.min_samples and spent >= policy.min_time_s
        if ready and summarize(samples, policy.confidence).ci_rel <= policy.target_ci_rel:
            converged, stop = True, "ci_target"
            break
        if n >= policy.max_samples:
            stop = "max_samples"
            break
        if spent >= cap and n >= policy.min_samples:
            break
    wall = now() - m0
    if window is not None:
        window.end()
    return Lockstep(
        first_step_s=first,
        warmup_steps=len(warm),
        warmup_s=warmup_s,
        steps_per_sample=k,
        samples=samples,
        per_rank=per_rank,
        summary=summarize(samples, policy.confidence),
        converged=converged,
        stop_reason=stop,
        wall_s=wall,
        steps=steps,
    )


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
