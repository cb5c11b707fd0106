"""Measured ceilings of a device: the best compute rate per precision over the math-library
paths the workloads use, and memory bandwidth.

Rows go to the store's `ceilings` table. A *measured* ceiling is the best rate this device and
this software stack reach on the paths a workload's FLOPs take; dividing a run's achieved FLOP/s
by it gives a utilization that is not flattered or penalised by a datasheet peak. A run above
it is a finding about the ceiling (`utilization.beaten`), never a headline.

* `matmul` (the compute ceiling; the kind keeps its historical name): per precision, every path
  of `paths` (measure/mathpaths.py: `matmul` torch.mm square, `linear` F.linear with a bias
  tall-skinny, `lstm` nn.LSTM forward + backward) over a ladder of sizes n, operands in the
  precision's dtype (fp32 and tf32 in float32, bf16 in bfloat16, fp16 in float16; no autocast),
  TF32 flags from `precision.tf32_flags`. The row's value is the best rate of any path and
  size; `detail.path`, `detail.shape` and `detail.shape_label` say which won, `detail.paths`
  holds every path's sizes (median, CI, samples, FLOPs, rate) and why it stopped, and
  `detail.sizes` the `matmul` path's square sizes (the simulator's rate-by-size curve).
* `copy`: dst.copy_(src) over float32 arrays well above the last-level cache;
  bytes = 2·N·itemsize (one read, one write; write-allocate traffic is not counted, as STREAM).
* `triad`: a = b + s·c via torch.add(b, c, alpha=s, out=a); bytes = 3·N·itemsize.

By default every precision the device runs natively is measured; one asked for by name that
is not native gets no row (the reason is kept in every returned row's detail["skipped"]) unless
`allow_emulated`, which measures it and labels the row's detail["emulated"].

Bounded: a precision's paths share a time budget (`budget_s`, default 60 s), each path taking
an equal share of what is left when it starts. Without `sizes`, a path's sizes double from the
device's first (mathpaths.LADDER) until the rate stops rising (a size of at least
MIN_CEILING_SIZE less than 3 % above the best before it), the tensors would not fit, or the next
size, extrapolated as n³ from the last, would not fit in the path's share of the budget: an
emulated bf16 on an AVX2 CPU (1–2 GFLOP/s) stops at a small size instead of timing 4096² for
minutes. `sizes` given are tried as given. detail["size_reached"] and detail["stopped"] say
where and why. `progress` hears the precision, path, size and FLOP/s so far, at least every few
seconds. Timing is paradnn's adaptive timer (`timer.measure` with `device.clock_for`).
"""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from typing import Any

import torch

from paradnn import host
from paradnn.config import PRECISIONS, check_budget, precision_flags
from paradnn.errors import ConfigError
from paradnn.measure import mathpaths
from paradnn.measure import precision as prec
from paradnn.measure.device import clock_for, synchronize
from paradnn.measure.mathpaths import MathPath
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
GiB = 1 << 30
DTYPES = {
    "fp32": torch.float32,
    "tf32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}
# The first and the last size of the growing ladder (mathpaths.LADDER), kept under this name
# for callers that read it; the smaller sizes give the simulator a measured matmul rate by size
# (small GEMMs run far below the ceiling, on a CPU as on a GPU).
DEFAULT_SIZES = {t: mathpaths.ladder(t)[0] for t in mathpaths.LADDER}
DEFAULT_STREAM_BYTES = {"cpu": 64 * MiB, "cuda": 256 * MiB}  # per array
# A ceiling is the rate of a large kernel: when the budget stops every path's ladder before one
# of these was measured, the best small size is no ceiling (a 128² matmul on a loaded CPU ran at
# 0.13 GFLOP/s and made runs "use" 44,000% of it). The row keeps what was measured, with no value.
MIN_CEILING_SIZE = {"cpu": 1024, "cuda": 4096}
DEFAULT_BUDGET_S = {"cpu": 60.0, "cuda": 60.0}  # compute seconds per precision, all paths
# A growing ladder stops at the first size of at least MIN_CEILING_SIZE that gains less than
# RISE over the best before it (PLATEAU_STEPS sizes in a row).
RISE = 0.03
PLATEAU_STEPS = 1
# What calibrate lets its tensors take: half the host's memory, 80 % of the GPU's free memory.
HOST_MEMORY_SHARE = 0.5
GPU_FREE_SHARE = 0.8
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


def size_caps(
    policy: TimingPolicy, share_s: float, left_s: float, small: bool = False
) -> TimingPolicy:
    """The timing policy of one size: its warm-up and its timed phase capped to fractions of
    the path's budget (an eighth of its share, a third of what is left; a sixteenth of the
    share each for a `small` size, one below the ceiling size on the way to it), never below
    the policy's minimums. On a loaded machine a step never looks stable and the CI target is
    never met, so every size would run to the caps: without these, the small sizes of a path
    would eat the share its ceiling-sized ones need."""
    warm, timed = (share_s / 16, share_s / 16) if small else (share_s / 8, left_s / 3)
    return dataclasses.replace(
        policy,
        warmup_max_time_s=max(policy.warmup_min_time_s, min(policy.warmup_max_time_s, warm)),
        max_time_s=max(policy.min_time_s, min(policy.max_time_s, timed, left_s / 3)),
    )


def too_small(detail: dict[str, Any], sizes: Sequence[int], min_n: int) -> str | None:
    """Why a compute row is no ceiling: the budget stopped the ladder (of every path: the
    largest size any reached counts) before any size of at least `min_n` that was asked for;
    None when a large size was measured or none was asked for."""
    reached = detail.get("size_reached") or 0
    if reached >= min_n or not detail.get("stopped") or not any(n >= min_n for n in sizes):
        return None
    return (
        f"the budget stopped at n={reached}, below the n={min_n} a ceiling needs "
        f"({detail['stopped']}); raise --budget"
    )


def memory_limit(device: torch.device) -> float | None:
    """Bytes calibrate lets one size's tensors take (None: unknown, no check)."""
    try:
        if device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(device)
            return GPU_FREE_SHARE * free
        return HOST_MEMORY_SHARE * host.memory_bytes()
    except Exception:  # a fake device or no sysconf: the budget still bounds the ladder
        return None


def _kernel(
    path: MathPath, shape: dict[str, int], device: torch.device, dtype: torch.dtype, gen: Any
) -> Callable[[], None]:
    """One timed step of `path` at `shape` (its tensors live in the step's defaults, so the
    caller frees them by dropping the step)."""
    kw: dict[str, Any] = {"device": device, "dtype": dtype, "generator": gen}
    if path.name == "matmul":
        n = shape["n"]
        a, b = torch.randn(n, n, **kw), torch.randn(n, n, **kw)
        c = torch.empty(n, n, device=device, dtype=dtype)

        def step(a=a, b=b, c=c) -> None:
            torch.mm(a, b, out=c)

        return step
    if path.name == "linear":
        x = torch.randn(shape["m"], shape["k"], **kw)
        w = torch.randn(shape["n"], shape["k"], **kw)
        bias = torch.randn(shape["n"], **kw)

        def linear(x=x, w=w, bias=bias) -> None:
            torch.nn.functional.linear(x, w, bias)

        return linear
    t, b_, h = shape["seq"], shape["batch"], shape["hidden"]
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(0)
        lstm = torch.nn.LSTM(h, h).to(device=device, dtype=dtype)
    x = torch.randn(t, b_, h, **kw).requires_grad_()
    g = torch.randn(t, b_, h, **kw)
    inputs = (x, *lstm.parameters())

    def lstm_step(x=x, lstm=lstm, g=g, inputs=inputs) -> None:
        out, _ = lstm(x)
        torch.autograd.grad(out, inputs, g)  # the input and weight gradients, not accumulated

    return lstm_step


def _path_ladder(
    device: torch.device,
    precision: str,
    path: MathPath,
    sizes: Sequence[int],
    grow: bool,
    policy: TimingPolicy,
    measure_fn: MeasureFn,
    budget_s: float,
    say: Say,
    min_n: int,
    label: str,
    rate_hint: float | None = None,
) -> dict[str, Any]:
    """Time one path over its sizes within `budget_s`; its detail (sizes, best, why it
    stopped). `rate_hint`: the best ceiling-sized FLOP/s of this precision so far, from which
    the first size is estimated (the later ones from the last size's time)."""
    from paradnn.measure.faults import classify, one_line

    dtype = DTYPES[precision]
    itemsize = torch.empty((), dtype=dtype).element_size()
    clock = clock_for(device)
    limit = memory_limit(device)
    per_size: dict[int, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    stopped: str | None = None
    plateau: str | None = None
    gen = torch.Generator(device=device).manual_seed(0)
    t0 = time.monotonic()
    last: tuple[int, float] | None = None
    best, flat = 0.0, 0
    for n in sizes:
        left = budget_s - (time.monotonic() - t0)
        shape = path.shape(n)
        prior = last or ((n, path.flops(shape) / rate_hint) if rate_hint else None)
        if prior is not None:
            est = size_estimate_s(n, prior[0], prior[1], policy)
            if est > left:
                stopped = (
                    f"n={n} would take ~{est:.0f} s and {max(left, 0):.0f} s of the "
                    f"{budget_s:.3g} s budget were left"
                    + ("" if last else " (estimated at the best rate of the paths before it)")
                )
                say(f"{label}: stopping before n={n} ({stopped})")
                break
        need = path.nbytes(shape, itemsize)
        if limit is not None and need > limit:
            stopped = (
                f"n={n} needs ~{need / GiB:.1f} GiB, more than the {limit / GiB:.1f} GiB "
                "calibrate allows itself"
            )
            say(f"{label}: stopping before n={n} ({stopped})")
            break
        small = n < min_n <= sizes[-1]
        size_policy = size_caps(policy, budget_s, left, small)
        step = None
        try:
            step = _kernel(path, shape, device, dtype, gen)
            heard = told_after(say, f"{label} n={n}")
            with torch.set_grad_enabled(path.grad):
                t = measure_fn(step, clock, size_policy, progress=heard)
            synchronize(device)
        except Exception as e:  # an oversized kernel is data, not a crash of the whole run
            errors[str(n)] = f"{classify(e)}: {one_line(e)}"
            stopped = f"n={n} failed ({errors[str(n)]})"
            break
        finally:
            del step
            _free(device)
        d = _summary(t)
        d["flops"] = path.flops(shape)
        d["flop_per_s"] = d["flops"] / d["median_s"] if d["median_s"] > 0 else None
        if path.name != "matmul":
            d["shape"] = shape
        per_size[n] = d
        last = (n, d["median_s"])
        rate = d["flop_per_s"] or 0.0
        flat = 0 if rate > best * (1 + RISE) else flat + 1
        best = max(best, rate)
        say(
            f"{label} n={n}: {rate / 1e9:.1f} GFLOP/s "
            f"(best {best / 1e9:.1f}; {time.monotonic() - t0:.0f} of {budget_s:.3g} s)"
        )
        if grow and flat >= PLATEAU_STEPS and n >= min_n:
            plateau = f"the rate stopped rising: n={n} gained less than {RISE:.0%} over the best"
            break
    out: dict[str, Any] = {
        "call": path.call,
        "library": path.library(device.type),
        "sizes": {str(n): d for n, d in per_size.items()},
        "size_reached": max(per_size, default=None),
        "budget_s": round(budget_s, 2) if budget_s != float("inf") else None,
        "seconds": round(time.monotonic() - t0, 2),
    }
    for key, value in (("stopped", stopped), ("plateau", plateau), ("errors", errors)):
        if value:
            out[key] = value
    if any(d.get("flop_per_s") for d in per_size.values()):
        n = best_size(per_size)
        out.update(
            best_size=n,
            flop_per_s=per_size[n]["flop_per_s"],
            shape=path.shape(n),
            shape_label=path.label(path.shape(n)),
        )
    return out


def _compute_row(
    device: torch.device,
    precision: str,
    paths: Sequence[str],
    sizes: Sequence[int],
    grow: bool,
    policy: TimingPolicy,
    measure_fn: MeasureFn,
    budget_s: float = float("inf"),
    say: Say | None = None,
) -> tuple[float | None, dict[str, Any]]:
    """Every path of one precision within its budget; (the best rate or None, the detail)."""
    say = say or (lambda msg: None)
    min_n = MIN_CEILING_SIZE.get(device.type, 0)
    t0 = time.monotonic()
    per_path: dict[str, dict[str, Any]] = {}
    with prec.tf32_flags(precision):
        for i, name in enumerate(paths):
            left = budget_s - (time.monotonic() - t0)
            share = left / (len(paths) - i) if budget_s != float("inf") else budget_s
            label = f"{precision} {name}"
            path = mathpaths.PATHS[name]
            mine = tuple(n for n in sizes if n >= path.first(device.type)) if grow else sizes
            # a first size is estimated from the paths before it only once one of them timed a
            # ceiling-sized n: a small size's rate (overheads, a loaded machine's scheduling)
            # would make every larger kernel look too slow to try
            hint = max(
                (
                    d.get("flop_per_s") or 0.0
                    for d in per_path.values()
                    if (d.get("best_size") or 0) >= min_n
                ),
                default=0.0,
            )
            per_path[name] = _path_ladder(
                device, precision, path, mine or sizes, grow, policy, measure_fn, share, say,
                min_n, label, hint or None,
            )  # fmt: skip
    dtype = DTYPES[precision]
    detail: dict[str, Any] = {
        "paths": per_path,
        "dtype": str(dtype).removeprefix("torch."),
        "flags": precision_flags(precision),
        "budget_s": budget_s if budget_s != float("inf") else None,
        "size_reached": max((d["size_reached"] or 0 for d in per_path.values()), default=0) or None,
        "seconds": round(time.monotonic() - t0, 2),
    }
    if "matmul" in per_path:  # the square sizes: the simulator's matmul rate by size
        detail["sizes"] = per_path["matmul"]["sizes"]
    single = len(per_path) == 1
    for key in ("stopped", "errors"):
        found = {name: d[key] for name, d in per_path.items() if d.get(key)}
        if not found:
            continue
        if key == "stopped":
            detail[key] = (
                next(iter(found.values()))
                if single
                else "; ".join(f"{name}: {why}" for name, why in found.items())
            )
        else:
            detail[key] = {
                (n if single else f"{name} n={n}"): e
                for name, errs in found.items()
                for n, e in errs.items()
            }
    rated = {name: d for name, d in per_path.items() if d.get("flop_per_s")}
    if not rated:
        return None, detail
    # the winner: the highest rate (the value is the same whichever of two equal rates wins; an
    # exact tie goes to the path named first)
    win = max(paths, key=lambda name: rated[name]["flop_per_s"] if name in rated else 0.0)
    w = rated[win]
    detail.update(
        path=win,
        call=w["call"],
        library=w["library"],
        shape=w["shape"],
        shape_label=w["shape_label"],
        best_size=w["best_size"],
    )
    return w["flop_per_s"], detail


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
    paths: Sequence[str] = ("matmul",),
) -> list[dict[str, Any]]:
    """Measure this device's ceilings and return rows for the `ceilings` table.

    precisions: default every precision the device runs natively; one named here that it does
    not is skipped (no row; reason in detail["skipped"]) unless `allow_emulated`.
    budget_s: compute seconds per precision, all paths (default DEFAULT_BUDGET_S).
    progress: called with one line of news at least every few seconds.
    paths: the math-library paths of the compute row (mathpaths.PATHS; `paradnn calibrate`
    times mathpaths.DEFAULT_PATHS, this function alone a plain matmul unless told).
    sizes: sizes n to try on every path, as given (default: the growing ladder of
    mathpaths.LADDER, until the rate stops rising); the best path and size win.
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
    paths = mathpaths.check_paths(paths)
    policy = policy or CALIBRATE_POLICY
    measure_fn = measure_fn or measure
    say = progress or (lambda msg: None)
    saved_threads = torch.get_num_threads()
    try:
        dev, env = prepare(device, threads)
        ladder, grow = mathpaths.ladder(dev.type, sizes)  # the matmul path's; see _compute_row
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
                value, detail = _compute_row(
                    dev, p, paths, ladder, grow, policy, measure_fn, budget, say
                )
                if emulate:
                    detail["emulated"] = reason
                short = too_small(detail, ladder, MIN_CEILING_SIZE.get(dev.type, 0))
                if value is not None and short:
                    detail["too_small"] = short
                    say(f"{p}: no ceiling ({short})")
                if value is None:
                    skipped[p] = "no size could be measured: " + "; ".join(
                        f"{n if ' n=' in n else 'n=' + n}: {e}"
                        for n, e in detail.get("errors", {}).items()
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
