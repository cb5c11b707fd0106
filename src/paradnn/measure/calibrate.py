"""Measured ceilings of a device: dense matmul throughput per precision and memory bandwidth.

Rows go to the store's `ceilings` table (schema v3). A *measured* ceiling is what this device and
this software stack reach on the friendliest possible kernel; dividing a run's achieved FLOP/s by
it gives a utilization that is not flattered or penalised by a datasheet peak.

* `matmul`: square GEMMs C = A·B at several sizes n, operands in the precision's dtype (fp32 and
  tf32 in float32, bf16 in bfloat16, fp16 in float16; no autocast), with the TF32 flags set by
  `precision.tf32_flags`. FLOPs = 2·n³ per GEMM; the row's value is the best size's
  2·n³ / median seconds, and `detail` holds every size's median, CI and sample count.
* `copy`: dst.copy_(src) over float32 arrays well above the last-level cache;
  bytes = 2·N·itemsize (one read, one write; write-allocate traffic is not counted, as STREAM).
* `triad`: a = b + s·c via torch.add(b, c, alpha=s, out=a); bytes = 3·N·itemsize.

By default every precision the device runs natively is measured; one asked for by name that
is not native gets no row (the reason is kept in every returned row's detail["skipped"]) unless
`allow_emulated`, which measures it and labels the row's detail["emulated"].

Bounded: each precision's matmuls share a time budget (`budget_s`, default 60 s on a CPU). The
sizes grow only while the next one, extrapolated as n³ from the last, fits in what is left, so an
emulated bf16 on an AVX2 CPU (1–2 GFLOP/s) stops at a small size instead of timing 4096² for
minutes; detail["size_reached"] and detail["stopped"] say where and why. `progress` hears the
precision, the size and the FLOP/s so far, at least every few seconds.
Timing is paradnn's adaptive timer (`timer.measure` with `device.clock_for`).
"""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from typing import Any

import torch

from paradnn.config import PRECISIONS, RunOptions, check_budget, precision_flags
from paradnn.errors import ConfigError
from paradnn.measure import precision as prec
from paradnn.measure.device import clock_for, synchronize
from paradnn.measure.timer import Timing, TimingPolicy, measure, told_after
from paradnn.precisions import can_emulate
from paradnn.records import now

__all__ = [
    "DEFAULT_SIZES",
    "DEFAULT_STREAM_BYTES",
    "DTYPES",
    "MIN_CEILING_SIZE",
    "best_size",
    "calibrate",
    "copy_bytes",
    "device_name",
    "matmul_flops",
    "too_small",
    "triad_bytes",
]

MiB = 1 << 20
DTYPES = {
    "fp32": torch.float32,
    "tf32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}
# The best size sets the ceiling; the smaller ones give the simulator a measured matmul rate by
# size (small GEMMs run far below the ceiling, on a CPU as on a GPU).
DEFAULT_SIZES = {"cpu": (128, 256, 512, 1024, 2048, 4096), "cuda": (1024, 2048, 4096, 8192, 16384)}
DEFAULT_STREAM_BYTES = {"cpu": 64 * MiB, "cuda": 256 * MiB}  # per array
# A ceiling is the rate of a large matmul: when the budget stops the size ladder before one of
# these was measured, the best small size is no ceiling (a 128² matmul on a loaded CPU ran at
# 0.13 GFLOP/s and made runs "use" 44,000% of it). The row keeps what was measured, with no value.
MIN_CEILING_SIZE = {"cpu": 1024, "cuda": 4096}
DEFAULT_BUDGET_S = {"cpu": 60.0, "cuda": 60.0}  # matmul seconds per precision
# Per size: a short adaptive timing (a size is a point on a curve, not a headline result).
CALIBRATE_POLICY = TimingPolicy(
    min_time_s=0.3, max_time_s=4.0, warmup_min_time_s=0.1, warmup_max_time_s=4.0
)
TRIAD_SCALAR = 3.0
KINDS = ("matmul", "copy", "triad")

MeasureFn = Callable[..., Timing]
Say = Callable[[str], None]


def matmul_flops(n: int) -> int:
    """FLOPs of one n×n by n×n GEMM: n² outputs, each n multiplies and n adds."""
    return 2 * n**3


def copy_bytes(n: int, itemsize: int) -> int:
    """Bytes moved by dst.copy_(src) over n elements: one read and one write per element."""
    return 2 * n * itemsize


def triad_bytes(n: int, itemsize: int) -> int:
    """Bytes moved by a = b + s·c over n elements: two reads and one write per element."""
    return 3 * n * itemsize


def device_name(env: dict[str, Any]) -> str:
    return str(env.get("gpu_name") or env.get("cpu_model") or env.get("device"))


def best_size(per_size: dict[int, dict[str, Any]]) -> int:
    """The size with the highest FLOP/s among those measured (ties: the smaller size)."""
    ok = {n: d for n, d in per_size.items() if d.get("flop_per_s")}
    if not ok:
        raise ValueError("no size was measured")
    return max(sorted(ok), key=lambda n: ok[n]["flop_per_s"])


def _summary(t: Timing) -> dict[str, Any]:
    s = t.summary
    return {
        "median_s": s.median,
        "ci_low_s": s.ci_low,
        "ci_high_s": s.ci_high,
        "n_samples": s.n,
        "steps_per_sample": t.steps_per_sample,
        "converged": t.converged,
        "stop_reason": t.stop_reason,
    }


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def size_estimate_s(n: int, last_n: int, last_step_s: float, policy: TimingPolicy) -> float:
    """Seconds timing size n will take, from the last size's step time scaled as n³: a first
    step, at least 10 warm-up steps and min_samples samples, or the policy's minimum times."""
    step = last_step_s * (n / last_n) ** 3
    warm = max(10 * step, policy.warmup_min_time_s)
    timed = max(policy.min_samples * step, policy.min_time_s)
    return step + warm + timed


def too_small(detail: dict[str, Any], sizes: Sequence[int], min_n: int) -> str | None:
    """Why a matmul row is no ceiling: the budget stopped the ladder before any size of at least
    `min_n` that was asked for; None when a large size was measured or none was asked for."""
    reached = detail.get("size_reached") or 0
    if reached >= min_n or not detail.get("stopped") or not any(n >= min_n for n in sizes):
        return None
    return (
        f"the budget stopped at n={reached}, below the n={min_n} a ceiling needs "
        f"({detail['stopped']}); raise --budget"
    )


def _matmul_row(
    device: torch.device,
    precision: str,
    sizes: Sequence[int],
    policy: TimingPolicy,
    measure_fn: MeasureFn,
    budget_s: float = float("inf"),
    say: Say | None = None,
) -> tuple[float | None, dict[str, Any]]:
    from paradnn.measure.faults import classify, one_line

    say = say or (lambda msg: None)
    dtype = DTYPES[precision]
    clock = clock_for(device)
    per_size: dict[int, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    stopped: str | None = None
    gen = torch.Generator(device=device).manual_seed(0)
    t0 = time.monotonic()
    last: tuple[int, float] | None = None
    with prec.tf32_flags(precision):
        for n in sorted(sizes):
            left = budget_s - (time.monotonic() - t0)
            if last is not None:
                est = size_estimate_s(n, last[0], last[1], policy)
                if est > left:
                    stopped = (
                        f"n={n} would take ~{est:.0f} s and {max(left, 0):.0f} s of the "
                        f"{budget_s:g} s budget were left"
                    )
                    say(f"{precision} matmul: stopping before n={n} ({stopped})")
                    break
            size_policy = dataclasses.replace(
                policy, max_time_s=max(policy.min_time_s, min(policy.max_time_s, left / 2))
            )
            a = b = c = None
            try:
                a = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
                b = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
                c = torch.empty(n, n, device=device, dtype=dtype)

                def step(a=a, b=b, c=c) -> None:
                    torch.mm(a, b, out=c)

                heard = told_after(say, f"{precision} matmul n={n}")
                with torch.no_grad():
                    t = measure_fn(step, clock, size_policy, progress=heard)
                synchronize(device)
                d = _summary(t)
                d["flops"] = matmul_flops(n)
                d["flop_per_s"] = matmul_flops(n) / d["median_s"] if d["median_s"] > 0 else None
                per_size[n] = d
                last = (n, d["median_s"])
                best = max(x["flop_per_s"] or 0 for x in per_size.values())
                say(
                    f"{precision} matmul n={n}: {(d['flop_per_s'] or 0) / 1e9:.1f} GFLOP/s "
                    f"(best {best / 1e9:.1f}; {time.monotonic() - t0:.0f} of {budget_s:g} s)"
                )
            except Exception as e:  # an oversized GEMM is data, not a crash of the whole run
                errors[str(n)] = f"{classify(e)}: {one_line(e)}"
            finally:
                del a, b, c
                _free(device)
    detail: dict[str, Any] = {
        "sizes": {str(n): d for n, d in per_size.items()},
        "dtype": str(dtype).removeprefix("torch."),
        "flags": precision_flags(precision),
        "budget_s": budget_s if budget_s != float("inf") else None,
        "size_reached": max(per_size, default=None),
        "seconds": round(time.monotonic() - t0, 2),
    }
    if stopped:
        detail["stopped"] = stopped
    if errors:
        detail["errors"] = errors
    if not any(d.get("flop_per_s") for d in per_size.values()):
        return None, detail
    n = best_size(per_size)
    detail["best_size"] = n
    return per_size[n]["flop_per_s"], detail


def _stream_row(
    device: torch.device,
    kind: str,
    nbytes: int,
    policy: TimingPolicy,
    measure_fn: MeasureFn,
    say: Say,
) -> tuple[float, dict[str, Any]]:
    dtype = torch.float32
    itemsize = torch.empty((), dtype=dtype).element_size()
    n = max(1, nbytes // itemsize)
    clock = clock_for(device)
    arrays: list[torch.Tensor] = []
    try:
        if kind == "copy":
            src = torch.ones(n, device=device, dtype=dtype)
            dst = torch.zeros(n, device=device, dtype=dtype)
            arrays = [src, dst]
            moved = copy_bytes(n, itemsize)

            def step() -> None:
                dst.copy_(src)

        else:
            a = torch.zeros(n, device=device, dtype=dtype)
            b = torch.ones(n, device=device, dtype=dtype)
            c = torch.full((n,), 2.0, device=device, dtype=dtype)
            arrays = [a, b, c]
            moved = triad_bytes(n, itemsize)

            def step() -> None:
                torch.add(b, c, alpha=TRIAD_SCALAR, out=a)

        with torch.no_grad():
            t = measure_fn(step, clock, policy, progress=told_after(say, kind))
        synchronize(device)
    finally:
        del arrays
        _free(device)
    d = _summary(t)
    value = moved / d["median_s"]
    d.update(
        elements=n,
        dtype=str(dtype).removeprefix("torch."),
        bytes_per_array=n * itemsize,
        bytes_moved=moved,
        arrays=2 if kind == "copy" else 3,
    )
    return value, d


def calibrate(
    device: str = "auto",
    precisions: Iterable[str] | None = None,
    *,
    sizes: Sequence[int] | None = None,
    policy: TimingPolicy | None = None,
    threads: int | None = None,
    stream_bytes: int | None = None,
    kinds: Iterable[str] = KINDS,
    measure_fn: MeasureFn | None = None,
    budget_s: float | None = None,
    allow_emulated: bool = False,
    progress: Say | None = None,
) -> list[dict[str, Any]]:
    """Measure this device's ceilings and return rows for the `ceilings` table.

    precisions: default every precision the device runs natively; one named here that it does
    not is skipped (no row; reason in detail["skipped"]) unless `allow_emulated`.
    budget_s: seconds of matmuls per precision (default DEFAULT_BUDGET_S for the device type).
    progress: called with one line of news at least every few seconds.
    sizes: matmul sizes n to try (default DEFAULT_SIZES for the device type); the best wins.
    stream_bytes: bytes per array of the copy/triad kernels (default DEFAULT_STREAM_BYTES).
    kinds: which ceilings to measure (matmul, copy, triad).
    measure_fn: the timing function (default `timer.measure`); tests inject a fake one.
    The CPU thread count is set for the measurement (default: every core) and restored after.
    """
    from paradnn.measure.environment import prepare

    kinds = tuple(kinds)
    for k in kinds:
        if k not in KINDS:
            raise ConfigError("kind", k, f"must be one of {', '.join(KINDS)}")
    asked = None if precisions is None else tuple(precisions)
    for p in asked or ():
        if p not in PRECISIONS:
            raise ConfigError("precision", p, f"must be one of {', '.join(PRECISIONS)}")
    check_budget(budget_s)
    policy = policy or CALIBRATE_POLICY
    measure_fn = measure_fn or measure
    say = progress or (lambda msg: None)
    saved_threads = torch.get_num_threads()
    try:
        dev, env = prepare(RunOptions(device=device, threads=threads))
        sizes = tuple(sizes or DEFAULT_SIZES[dev.type])
        nbytes = int(stream_bytes or DEFAULT_STREAM_BYTES[dev.type])
        budget = float(budget_s or DEFAULT_BUDGET_S[dev.type])
        native = env.get("native_precisions") or ["fp32"]
        precisions = asked if asked is not None else tuple(native)
        skipped: dict[str, str] = {}
        results: list[tuple[str, str | None, float, str, dict[str, Any]]] = []
        if "matmul" in kinds:
            for p in precisions:
                reason = prec.unsupported_reason(p, dev)
                emulate = bool(reason) and allow_emulated and can_emulate(p, dev.type)
                if reason and not emulate:
                    skipped[p] = reason
                    say(f"{p}: skipped ({reason})")
                    continue
                value, detail = _matmul_row(dev, p, sizes, policy, measure_fn, budget, say)
                if emulate:
                    detail["emulated"] = reason
                short = too_small(detail, sizes, MIN_CEILING_SIZE.get(dev.type, 0))
                if value is not None and short:
                    detail["too_small"] = short
                    say(f"{p} matmul: no ceiling ({short})")
                if value is None:
                    skipped[p] = "no matmul size could be measured: " + "; ".join(
                        f"n={n}: {e}" for n, e in detail.get("errors", {}).items()
                    )
                    continue
                results.append(("matmul", p, value, "FLOP/s", detail))
        for kind in ("copy", "triad"):
            if kind in kinds:
                value, detail = _stream_row(dev, kind, nbytes, policy, measure_fn, say)
                say(f"{kind}: {value / 1e9:.1f} GB/s")
                results.append((kind, None, value, "B/s", detail))
        common = {
            "device": str(dev),
            "device_name": device_name(env),
            "fingerprint": env["fingerprint"],
        }
        rows = []
        for kind, p, value, unit, detail in results:
            detail.update(threads=env.get("threads"), policy=asdict(policy), skipped=dict(skipped))
            rows.append(
                {
                    **common,
                    "kind": kind,
                    "precision": p,
                    "value": float(value),
                    "unit": unit,
                    "detail": detail,
                    "env": env,
                    "measured_at": now(),
                }
            )
        return rows
    finally:
        torch.set_num_threads(saved_threads)
