"""This host's dispatch costs, measured: the figures of a `sim.hostprofile.HostProfile` (issue 35,
docs/simulate.md "The host profile") as a row of the store's `host_profile` table.

Every figure is timed with tiny tensors on the CPU, where the work per op is negligible beside
the Python, dispatcher and autograd bookkeeping around it, with paradnn's own timer
(`timer.measure`). Each is the *slope* of a least-squares line through the medians at two or
more sizes, so a fixed cost (the call, the final `.sum()`, the optimizer's `step()` wrapper)
lands in the intercept and not in the per-unit figure:

* forward_op_s: a chain of n Linear(8, 8) + ReLU layers in grad mode (autograd records, as in
  training), per torch call (counted with a TorchFunctionMode: 2 a layer);
* autograd_node_s: backward through the same chain (``retain_graph``: only the backward is
  timed), per node of the graph (counted by walking it: AddmmBackward, TBackward, ReluBackward
  and two AccumulateGrad a layer);
* optimizer_tensor_s: ``torch.optim.Adam`` steps over n parameter tensors of 8 elements, per
  tensor, for the per-parameter loop (foreach=False), foreach (foreach=True) and fused
  (fused=True, where this build has it for the device; else left out with the reason);
* optimizer_step_s: one ``step()`` over a parameter without a gradient (the fixed cost of the
  call: hooks, grad mode, the group walk), timed directly;
* sync_s: ``torch.cuda.synchronize()`` with nothing queued (CUDA only; 0 on a CPU, where the
  host runs the kernels itself and never waits for a device);
* kernel_launch_s (CUDA only): tiny in-place kernels in a loop on the GPU, per kernel, host
  time, minus the same op's per-call cost on the CPU (what the launch adds to the dispatch).

Each slope keeps a conservative interval in ``detail``: the range of least-squares slopes with
every median anywhere inside its own 95% CI. The machine's load over the whole measurement
(`quality.LoadProbe`) and the intervals rate the profile: ``noisy`` with its reasons when
other processes took more than `quality.OTHERS_CPU_LIMIT` of its CPUs or a slope's interval
is wider than ±`SLOPE_CI_LIMIT` of it, as a noisy run is rated.
"""

from __future__ import annotations

import math
import platform as _platform
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from paradnn.config import TimingPolicy
from paradnn.records import now

Say = Callable[[str], None]
MeasureFn = Callable[..., Any]

# Sizes of each quantity's ladder: far enough apart that the slope stands clear of the noise,
# small enough that the whole profile takes tens of seconds on a busy 2-core machine.
SIZES: dict[str, tuple[int, ...]] = {
    "forward": (4, 8, 16),  # layers of Linear(8, 8) + ReLU
    "autograd": (4, 8, 16),  # the same chain, backward
    "optimizer": (4, 8, 16),  # parameter tensors
    "launch": (32, 64, 128),  # tiny kernels a step (CUDA)
}
WIDTH = 8  # features of the Linear layers, elements of a parameter tensor
BATCH = 4
# Short adaptive timings: each size is a point on a line, not a headline result.
HOST_POLICY = TimingPolicy(
    min_time_s=0.15,
    max_time_s=0.8,
    warmup_min_time_s=0.05,
    warmup_max_time_s=0.5,
    target_ci_rel=0.02,
)
ROUNDS = 2  # each ladder is timed this many times over, in turn; each size keeps its fastest
SLOPE_CI_LIMIT = 0.25  # a slope whose interval reaches past ±25 % of it rates the profile noisy
IMPLS = {"loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}


@dataclass(frozen=True)
class Point:
    """One size of a ladder: `units` (ops, nodes, tensors) per step and the step's median and
    95% CI in seconds."""

    size: int
    units: float
    median_s: float
    ci_low_s: float | None
    ci_high_s: float | None
    samples: int


@dataclass(frozen=True)
class Slope:
    """Seconds per unit (slope) and the fixed seconds a step (intercept) of a least-squares line
    through the medians, each with its conservative interval."""

    per_unit_s: float
    ci_low_s: float
    ci_high_s: float
    intercept_s: float
    intercept_low_s: float
    intercept_high_s: float

    @property
    def ci_half_rel(self) -> float:
        """Half the interval's width relative to the slope (inf for a slope ≤ 0)."""
        if self.per_unit_s <= 0:
            return math.inf
        return (self.ci_high_s - self.ci_low_s) / 2 / self.per_unit_s


def fit_slope(points: Sequence[Point]) -> Slope:
    """The least-squares line through the points' medians. Its interval: the lowest and highest
    slope (intercept) with each median moved anywhere inside its own CI — each coefficient of
    the estimator is a fixed weight per point, so the extremes take each point's low or high
    end by the sign of its weight. A point without a CI counts at its median. Needs two or more
    distinct unit counts."""
    xs = [float(p.units) for p in points]
    if len(set(xs)) < 2:
        raise ValueError(f"a slope needs two or more distinct sizes, got units {xs}")
    n = len(xs)
    mean = sum(xs) / n
    sxx = sum((x - mean) ** 2 for x in xs)
    w_slope = [(x - mean) / sxx for x in xs]
    w_icept = [1 / n - mean * w for w in w_slope]

    def combine(weights: list[float]) -> tuple[float, float, float]:
        mid = lo = hi = 0.0
        for w, p in zip(weights, points, strict=True):
            low = p.median_s if p.ci_low_s is None else p.ci_low_s
            high = p.median_s if p.ci_high_s is None else p.ci_high_s
            mid += w * p.median_s
            lo += w * (low if w > 0 else high)
            hi += w * (high if w > 0 else low)
        return mid, lo, hi

    s, s_lo, s_hi = combine(w_slope)
    c, c_lo, c_hi = combine(w_icept)
    return Slope(s, s_lo, s_hi, c, c_lo, c_hi)


def _point(size: int, units: float, timing: Any) -> Point:
    s = timing.summary
    return Point(size, float(units), float(s.median), s.ci_low, s.ci_high, int(s.n))


def _ladder(
    name: str,
    sizes: Sequence[int],
    make: Callable[[int], tuple[Callable[[], Any], float]],
    measure_fn: MeasureFn,
    clock: Any,
    policy: TimingPolicy,
    say: Say,
    rounds: int = 1,
) -> tuple[Slope, list[Point]]:
    """Time `make(size)`'s step at each size (make returns the step and its unit count),
    `rounds` times in turn; each size keeps its fastest round: another process only ever adds
    time to a dispatch, so one preempted round does not bend the line."""
    steps = [(n, *make(n)) for n in sizes]
    best: dict[int, Point] = {}
    for _ in range(rounds):
        for n, step, units in steps:
            p = _point(n, units, measure_fn(step, clock, policy))
            if n not in best or p.median_s < best[n].median_s:
                best[n] = p
    points = [best[n] for n in sizes]
    say(
        f"host profile: {name}: "
        + ", ".join(f"n={p.size} {p.median_s * 1e6:.0f} µs" for p in points)
    )
    return fit_slope(points), points


def _entry(slope: Slope, points: list[Point], unit: str) -> dict[str, Any]:
    return {
        "per_unit_s": slope.per_unit_s,
        "ci_low_s": slope.ci_low_s,
        "ci_high_s": slope.ci_high_s,
        "intercept_s": slope.intercept_s,
        "intercept_ci_s": [slope.intercept_low_s, slope.intercept_high_s],
        "unit": unit,
        "points": [asdict(p) for p in points],
    }


def _chain(n: int):
    import torch
    from torch import nn

    layers: list[Any] = []
    for _ in range(n):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    return nn.Sequential(*layers), torch.randn(BATCH, WIDTH)


def count_calls(fn: Callable[[], Any]) -> int:
    """Top-level torch calls `fn` makes (what the dispatcher is entered for from Python)."""
    from torch.overrides import TorchFunctionMode

    class Count(TorchFunctionMode):
        calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            Count.calls += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return Count.calls


def count_nodes(root: Any) -> int:
    """Nodes of the autograd graph under `root` (a grad_fn), AccumulateGrad included."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        todo.extend(nxt for nxt, _ in node.next_functions)
    return len(seen)


def _forward(n: int) -> tuple[Callable[[], Any], float]:
    model, x = _chain(n)

    def step() -> None:
        model(x)

    return step, float(count_calls(step))


def _backward(n: int) -> tuple[Callable[[], Any], float]:
    model, x = _chain(n)
    out = model(x).sum()

    def step() -> None:
        out.backward(retain_graph=True)

    return step, float(count_nodes(out.grad_fn))


def _adam(n: int, impl: str, device: str = "cpu", grads: bool = True):
    import torch

    params = [torch.nn.Parameter(torch.zeros(WIDTH, device=device)) for _ in range(n)]
    if grads:
        for p in params:
            p.grad = torch.full_like(p, 1e-3)
    return torch.optim.Adam(params, lr=1e-3, **IMPLS[impl])


def fused_reason(device: str = "cpu") -> str | None:
    """Why fused Adam cannot run on `device` in this build (None: it can)."""
    try:
        opt = _adam(1, "fused", device)
        opt.step()
    except (RuntimeError, ValueError, TypeError) as e:
        return f"fused Adam unavailable on {device}: {str(e).splitlines()[0][:160]}"
    return None


def measure_profile(
    device: str = "cpu",
    *,
    policy: TimingPolicy | None = None,
    measure_fn: MeasureFn | None = None,
    sizes: dict[str, tuple[int, ...]] | None = None,
    probe: Any = None,
    progress: Say | None = None,
    rounds: int | None = None,
) -> dict[str, Any]:
    """Measure this host's dispatch costs; the figures (HostProfile's fields, optimizer per
    implementation) with `detail` (every ladder, interval and count) and the quality verdict.
    `device`: "cpu", or a CUDA device whose launch and sync costs are measured too.
    `measure_fn`, `probe` (a `quality.LoadProbe`) and `sizes` are injectable for tests."""
    import torch

    from paradnn.measure import quality
    from paradnn.measure.timer import HostClock, measure

    sizes = {**SIZES, **(sizes or {})}
    policy = policy or HOST_POLICY
    rounds = rounds or ROUNDS
    measure_fn = measure_fn or measure
    say = progress or (lambda msg: None)
    clock = HostClock()
    probe = probe if probe is not None else quality.LoadProbe()
    detail: dict[str, Any] = {"policy": asdict(policy), "width": WIDTH, "batch": BATCH}
    detail["rounds"] = rounds
    nulls: dict[str, str] = {}
    t0 = time.monotonic()
    probe.begin()
    with torch.enable_grad():
        fwd, pts = _ladder(
            "forward", sizes["forward"], _forward, measure_fn, clock, policy, say, rounds
        )
        detail["forward_op"] = _entry(fwd, pts, "torch call (TorchFunctionMode count)")
        slopes = {"forward_op_s": (fwd, pts)}
        bwd, pts = _ladder(
            "autograd", sizes["autograd"], _backward, measure_fn, clock, policy, say, rounds
        )
        detail["autograd_node"] = _entry(bwd, pts, "autograd node (graph walked)")
        slopes["autograd_node_s"] = (bwd, pts)
    impls: list[str] = []
    fused_why = fused_reason("cpu")
    for impl in IMPLS:
        if impl == "fused" and fused_why:
            nulls["optimizer_fused_s"] = fused_why
            continue

        def make(n: int, impl: str = impl) -> tuple[Callable[[], Any], float]:
            return _adam(n, impl).step, float(n)

        s, pts = _ladder(
            f"Adam {impl}", sizes["optimizer"], make, measure_fn, clock, policy, say, rounds
        )
        detail[f"optimizer_{impl}"] = _entry(s, pts, "parameter tensor")
        impls.append(impl)
        slopes[f"optimizer_tensor_s.{impl}"] = (s, pts)
    empty = _adam(1, "foreach", grads=False)
    t = measure_fn(empty.step, clock, policy)
    step_pt = _point(0, 0, t)
    detail["optimizer_step"] = {**asdict(step_pt), "what": "Adam(foreach).step(), no gradient"}
    sync_s, launch_s = 0.0, None
    if str(device).startswith("cuda") and torch.cuda.is_available():
        sync_s, launch_s = _cuda_costs(
            device, sizes["launch"], measure_fn, policy, say, detail, rounds
        )
        if launch_s is None:
            nulls["kernel_launch_s"] = "the GPU op's slope was not positive (too noisy)"
    else:
        detail["sync"] = "0 on a CPU: the host runs the kernels itself, nothing to wait for"
        nulls["kernel_launch_s"] = "a CPU launches no kernels (one timeline)"
    probe.end()
    load = dict(probe.result)
    reasons = _reasons(slopes, load)
    figures = {
        "forward_op_s": _positive(*slopes["forward_op_s"], reasons, "forward_op_s"),
        "autograd_node_s": _positive(*slopes["autograd_node_s"], reasons, "autograd_node_s"),
        "optimizer_tensor_s": {
            impl: _positive(*slopes[f"optimizer_tensor_s.{impl}"], reasons, impl) for impl in impls
        },
        "optimizer_step_s": step_pt.median_s,
        "sync_s": sync_s,
        "kernel_launch_s": launch_s,
    }
    detail["seconds"] = round(time.monotonic() - t0, 2)
    detail["load"] = load
    return {
        **figures,
        "quality": "noisy" if reasons else "good",
        "quality_reasons": reasons,
        "detail": detail,
        "nulls": nulls,
    }


def _positive(s: Slope, points: list[Point], reasons: list[str], name: str) -> float:
    """The slope; where noise made it ≤ 0, the largest size's seconds per unit instead (an
    upper bound: it carries its share of the fixed cost), said among the reasons."""
    if s.per_unit_s > 0:
        return s.per_unit_s
    big = max(points, key=lambda p: p.units)
    reasons.append(
        f"{name}: slope {s.per_unit_s * 1e6:.2f} µs ≤ 0; the mean per unit at n={big.size} "
        "(an upper bound) is used"
    )
    return big.median_s / big.units


def _reasons(slopes: dict[str, tuple[Slope, list[Point]]], load: dict[str, Any]) -> list[str]:
    from paradnn.measure import quality

    reasons = []
    for name, (s, _) in slopes.items():
        half = s.ci_half_rel
        if half > SLOPE_CI_LIMIT:
            shown = "∞" if math.isinf(half) else f"{half:.0%}"
            reasons.append(f"{name}: interval ±{shown} > ±{SLOPE_CI_LIMIT:.0%}")
    others = load.get("others_cpu_frac")
    if others is not None and others > quality.OTHERS_CPU_LIMIT:
        reasons.append(
            f"other processes used {others:.0%} of the CPUs (> {quality.OTHERS_CPU_LIMIT:.0%})"
        )
    steal = load.get("steal_frac")
    if steal is not None and steal > quality.STEAL_LIMIT:
        reasons.append(f"the hypervisor stole {steal:.0%} of the CPU time")
    return reasons


def _cuda_costs(
    device: str,
    sizes: Sequence[int],
    measure_fn: MeasureFn,
    policy: TimingPolicy,
    say: Say,
    detail: dict[str, Any],
    rounds: int = 1,
) -> tuple[float, float | None]:
    """(sync_s, kernel_launch_s) on a CUDA device: host time, the device only synchronised at
    the timer's edges (a host clock: launches are asynchronous, so the host's time per tiny
    kernel is the launch, as long as the queue never fills)."""
    import torch

    from paradnn.measure.timer import HostClock

    dev = torch.device(device)

    class SyncedHostClock(HostClock):
        def sync(self) -> None:
            torch.cuda.synchronize(dev)

    clock = SyncedHostClock()
    t = measure_fn(lambda: torch.cuda.synchronize(dev), clock, policy)
    sync = _point(0, 0, t)
    detail["sync"] = asdict(sync)

    def ops_on(where: Any) -> Callable[[int], tuple[Callable[[], Any], float]]:
        def make(n: int) -> tuple[Callable[[], Any], float]:
            x = torch.zeros(1, device=where)

            def step() -> None:
                for _ in range(n):
                    x.add_(1.0)

            return step, float(n)

        return make

    with torch.no_grad():
        gpu, gpts = _ladder("launch", sizes, ops_on(dev), measure_fn, clock, policy, say, rounds)
        cpu, cpts = _ladder("cpu op", sizes, ops_on("cpu"), measure_fn, clock, policy, say, rounds)
    detail["kernel_launch"] = {
        "cuda_op": _entry(gpu, gpts, "x.add_(1) on the GPU"),
        "cpu_op": _entry(cpu, cpts, "x.add_(1) on the CPU"),
    }
    launch = gpu.per_unit_s - cpu.per_unit_s
    if (
        launch <= 0 < gpu.per_unit_s
    ):  # the dispatch hides the launch: the GPU op's whole cost is an upper bound
        detail["kernel_launch"]["note"] = "GPU op ≤ CPU op: the GPU op's per-call cost is used"
        launch = gpu.per_unit_s
    return sync.median_s, (launch if launch > 0 else None)


def host_row(
    device: str = "cpu",
    threads: int | None = None,
    *,
    progress: Say | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Measure the profile in this process and return it as a `host_profile` row (the store's
    columns; `sim.hostprofile.from_row` reads it back as a HostProfile)."""
    import torch

    from paradnn.config import RunOptions
    from paradnn.measure.calibrate import device_name
    from paradnn.measure.environment import prepare

    saved = torch.get_num_threads()
    try:
        dev, env = prepare(RunOptions(device=device, threads=threads))
        p = measure_profile(str(dev), progress=progress, **kwargs)
    finally:
        torch.set_num_threads(saved)
    per = p["optimizer_tensor_s"]
    return {
        "device": str(dev),
        "device_type": dev.type,
        "device_name": device_name(env),
        "host": str(env.get("cpu_model") or _platform.processor() or "unknown"),
        "hostname": str(env.get("hostname") or socket.gethostname()),
        "fingerprint": env["fingerprint"],
        "forward_op_s": p["forward_op_s"],
        "autograd_node_s": p["autograd_node_s"],
        "optimizer_loop_s": per.get("loop"),
        "optimizer_foreach_s": per.get("foreach"),
        "optimizer_fused_s": per.get("fused"),
        "optimizer_step_s": p["optimizer_step_s"],
        "sync_s": p["sync_s"],
        "kernel_launch_s": p["kernel_launch_s"],
        "quality": p["quality"],
        "quality_reasons": p["quality_reasons"],
        "threads": env.get("threads"),
        "detail": p["detail"],
        "nulls": p["nulls"],
        "env": env,
        "measured_at": now(),
        "status": "ok",
        "error": None,
    }
