"""This host's dispatch costs, measured: the figures of a `sim.hostprofile.HostProfile` (issues 35
and 42, docs/simulate.md "The host profile") as a row of the store's `host_profile` table.

Every figure is timed with tiny tensors **on the device the profile is for** (the CPU, or a
CUDA GPU, whose figures then hold their kernels' launches), where the work per op is negligible
beside the Python, dispatcher, autograd and launch bookkeeping around it, with paradnn's own
timer (`timer.measure`; on a GPU a host clock with the device synchronised at each block's
edges). Most figures are the *slope* of a least-squares line through the medians at two or more
sizes, so a fixed cost (the call, the final `.sum()`, the optimizer's `step()` wrapper) lands in
the intercept and not in the per-unit figure:

* forward_op_s: a chain of n Linear(8, 8) + ReLU layers in grad mode, per torch call (counted
  with a TorchFunctionMode: 2 a layer);
* autograd_node_s: backward through the same chain (``retain_graph``: only the backward is
  timed), per node of the graph (counted by walking it: 5 a layer);
* optimizer_tensor_s: ``torch.optim.Adam`` steps over n parameter tensors of 8 elements, per
  tensor, for the per-parameter loop, foreach and fused (where this build has it for the
  device; else left out with the reason); optimizer_step_s: one ``step()`` over a parameter
  without a gradient, timed directly;
* cast_s: the training step below under autocast (bf16, or fp16 on a GPU without bf16): its
  per-layer slope less the fp32 step's, over the casts autocast made per layer (counted: its
  ``_to_copy`` calls, each with a backward node);
* rnn_call_s: n LSTM(8, 8) modules chained, forward and backward, per module (one fused call:
  cuDNN on a GPU, oneDNN on a CPU);
* step_s: the harness's own training step (`measure.step.TrainStep`: zero_grad, forward, the
  loss, backward, RMSprop's step in the device's default implementation) of an FC with n
  hidden layers of 8 nodes; its intercept less the head Linear's share (one call, four nodes,
  two optimizer tensors at the figures above) is what a step costs once, whatever its layers;
* scaler_s (CUDA): the same step at n = 1 in mixed fp16, with its GradScaler and without it;
* sync_s (CUDA; 0 on a CPU, where the host runs the kernels itself and never waits) and
  kernel_launch_s (CUDA): tiny in-place kernels in a loop on the GPU, per kernel, minus the
  same op's per-call cost on the CPU (what the launch adds to the dispatch).

The sizes of every ladder are distinct by construction (`SIZES`, checked), and a unit counted
per size must grow with it: a ladder whose units do not (a counter that saw nothing on this
device), or that fails to run, leaves its figure NULL with the reason in ``nulls`` — never a
crash of the whole profile. Each slope keeps a conservative interval in ``detail``: the range of
least-squares slopes with every median anywhere inside its own 95% CI. The machine's load over
the whole measurement (`quality.LoadProbe`) and the intervals rate the profile: ``noisy`` with
its reasons when other processes took more than `quality.OTHERS_CPU_LIMIT` of its CPUs or a
figure's interval is wider than ±`SLOPE_CI_LIMIT` of it, as a noisy run is rated.
"""

from __future__ import annotations

import itertools
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
# small enough that the whole profile takes tens of seconds on a busy 2-core machine (two ends
# of a line: a middle size adds little to a least-squares slope's precision). Each is strictly
# increasing (distinct sizes by construction; `check_sizes`).
SIZES: dict[str, tuple[int, ...]] = {
    "forward": (4, 16),  # layers of Linear(8, 8) + ReLU
    "autograd": (4, 16),  # the same chain, backward
    "optimizer": (4, 16),  # parameter tensors
    "cast": (2, 8),  # the chain forward and backward, with and without autocast
    "rnn": (1, 4),  # LSTM(8, 8) modules, forward and backward
    "step": (1, 4),  # hidden layers of a tiny FC, the harness's whole training step
    "launch": (32, 128),  # tiny kernels a step (CUDA)
}
WIDTH = 8  # features of the Linear layers, elements of a parameter tensor
BATCH = 4
SEQ = 2  # time steps of the LSTM ladder's input
# Short adaptive timings: each size is a point on a line, not a headline result.
HOST_POLICY = TimingPolicy(
    min_time_s=0.15,
    max_time_s=0.8,
    warmup_min_time_s=0.05,
    warmup_max_time_s=0.5,
    target_ci_rel=0.02,
)
ROUNDS = 2  # each ladder is timed this many times over, in turn; each size keeps its fastest
SLOPE_CI_LIMIT = 0.25  # a figure whose interval reaches past ±25 % of it rates the profile noisy
IMPLS = {"loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
# The head Linear of the step ladder's FC (no ReLU after it): its share of the step's intercept.
HEAD_CALLS, HEAD_NODES, HEAD_TENSORS = 1, 4, 2
STEP_OPTIMIZER = "rmsprop"  # the harness's default (ParaDnn's)
# Dispatch costs are one thread's work: a tiny op enters no parallel region worth its
# synchronisation, and on a busy machine a pool's threads waiting for a descheduled peer turned
# a 0.7 ms step into 37 ms (2-core VM, load 8). The run's own thread count stays recorded.
INTRA_OP_THREADS = 1


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

    @property
    def low_s(self) -> float:
        return self.median_s if self.ci_low_s is None else self.ci_low_s

    @property
    def high_s(self) -> float:
        return self.median_s if self.ci_high_s is None else self.ci_high_s


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
        return half_rel(self.per_unit_s, self.ci_low_s, self.ci_high_s)


def half_rel(value: float, low: float, high: float) -> float:
    """Half an interval's width relative to its value (inf for a value ≤ 0)."""
    return math.inf if value <= 0 else (high - low) / 2 / value


@dataclass(frozen=True)
class Ladder:
    """One ladder's points and its slope, or why it has none (too few distinct unit counts, or
    the ladder failed to run on this device)."""

    name: str
    points: list[Point]
    slope: Slope | None
    why: str | None = None


def check_sizes(sizes: dict[str, tuple[int, ...]]) -> None:
    """Every ladder's sizes strictly increasing positive integers, at least two: distinct by
    construction (a ladder with one size, or a repeated one, has no slope)."""
    for name, got in sizes.items():
        ok = len(got) >= 2 and all(isinstance(n, int) and n > 0 for n in got)
        if not ok or any(b <= a for a, b in itertools.pairwise(got)):
            raise ValueError(
                f"host profile sizes[{name!r}] = {list(got)}: two or more increasing sizes ≥ 1"
            )


def fit_slope(points: Sequence[Point]) -> Slope:
    """The least-squares line through the points' medians. Its interval: the lowest and highest
    slope (intercept) with each median moved anywhere inside its own CI — each coefficient of
    the estimator is a fixed weight per point, so the extremes take each point's low or high
    end by the sign of its weight. A point without a CI counts at its median. Needs two or more
    distinct unit counts (ValueError otherwise: the caller makes the figure NULL)."""
    xs = [float(p.units) for p in points]
    if len(set(xs)) < 2 or not all(math.isfinite(x) for x in xs):
        raise ValueError(f"a slope needs two or more distinct sizes, got units {xs}")
    n = len(xs)
    mean = sum(xs) / n
    sxx = sum((x - mean) ** 2 for x in xs)
    w_slope = [(x - mean) / sxx for x in xs]
    w_icept = [1 / n - mean * w for w in w_slope]

    def combine(weights: list[float]) -> tuple[float, float, float]:
        mid = lo = hi = 0.0
        for w, p in zip(weights, points, strict=True):
            mid += w * p.median_s
            lo += w * (p.low_s if w > 0 else p.high_s)
            hi += w * (p.high_s if w > 0 else p.low_s)
        return mid, lo, hi

    s, s_lo, s_hi = combine(w_slope)
    c, c_lo, c_hi = combine(w_icept)
    return Slope(s, s_lo, s_hi, c, c_lo, c_hi)


def _point(size: int, units: float, timing: Any) -> Point:
    s = timing.summary
    return Point(size, float(units), float(s.median), s.ci_low, s.ci_high, int(s.n))


def _why(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


def _ladder(
    name: str,
    sizes: Sequence[int],
    make: Callable[[int], tuple[Callable[[], Any], float]],
    measure_fn: MeasureFn,
    clock: Any,
    policy: TimingPolicy,
    say: Say,
    rounds: int = 1,
) -> Ladder:
    """Time `make(size)`'s step at each size (make returns the step and its unit count),
    `rounds` times in turn; each size keeps its fastest round: another process only ever adds
    time to a dispatch, so one preempted round does not bend the line. A ladder that fails to
    build or run, or whose unit counts are not distinct, has no slope and says why."""
    try:
        steps = [(n, *make(n)) for n in sizes]
        best: dict[int, Point] = {}
        for _ in range(rounds):
            for n, step, units in steps:
                p = _point(n, units, measure_fn(step, clock, policy))
                if n not in best or p.median_s < best[n].median_s:
                    best[n] = p
    except Exception as e:  # a term this device cannot run is a NULL with its reason
        say(f"host profile: {name}: failed ({_why(e)})")
        return Ladder(name, [], None, f"the {name} ladder failed: {_why(e)}")
    points = [best[n] for n in sizes]
    say(
        f"host profile: {name}: "
        + ", ".join(f"n={p.size} {p.median_s * 1e6:.0f} µs" for p in points)
    )
    try:
        return Ladder(name, points, fit_slope(points))
    except ValueError as e:
        return Ladder(name, points, None, f"the {name} ladder has no slope: {e}")


def _entry(ladder: Ladder, unit: str) -> dict[str, Any]:
    s = ladder.slope
    d: dict[str, Any] = {"unit": unit, "points": [asdict(p) for p in ladder.points]}
    if s is None:
        return {**d, "per_unit_s": None, "why": ladder.why}
    return {
        "per_unit_s": s.per_unit_s,
        "ci_low_s": s.ci_low_s,
        "ci_high_s": s.ci_high_s,
        "intercept_s": s.intercept_s,
        "intercept_ci_s": [s.intercept_low_s, s.intercept_high_s],
        **d,
    }


def _chain(n: int, device: Any = "cpu"):
    import torch
    from torch import nn

    layers: list[Any] = []
    for _ in range(n):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    return nn.Sequential(*layers).to(device), torch.randn(BATCH, WIDTH, device=device)


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
    """Nodes of the autograd graph under `root` (a grad_fn), AccumulateGrad included.

    Each node seen is held until the walk ends: torch hands out a node's Python object only
    while something holds it, so an id kept without its object can be reused by the next
    node's and that node skipped (on the 2026-11-27 H100 host every chain counted 5 nodes at
    4 and at 16 layers, and the autograd figure was lost)."""
    seen: dict[int, Any] = {}
    todo = [root]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        todo.extend(nxt for nxt, _ in node.next_functions)
    return len(seen)


def count_casts(fn: Callable[[], Any]) -> int:
    """The dtype copies (``aten._to_copy``) `fn` dispatches: under autocast, its casts."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    copy = torch.ops.aten._to_copy.default

    class Count(TorchDispatchMode):
        casts = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is copy:
                Count.casts += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return Count.casts


def _forward(device: Any) -> Callable[[int], tuple[Callable[[], Any], float]]:
    def make(n: int) -> tuple[Callable[[], Any], float]:
        model, x = _chain(n, device)

        def step() -> None:
            model(x)

        return step, float(count_calls(step))

    return make


def _backward(device: Any) -> Callable[[int], tuple[Callable[[], Any], float]]:
    def make(n: int) -> tuple[Callable[[], Any], float]:
        model, x = _chain(n, device)
        out = model(x).sum()

        def step() -> None:
            out.backward(retain_graph=True)

        return step, float(count_nodes(out.grad_fn))

    return make


def _rnn(device: Any) -> Callable[[int], tuple[Callable[[], Any], float]]:
    import torch

    def make(n: int) -> tuple[Callable[[], Any], float]:
        mods = [torch.nn.LSTM(WIDTH, WIDTH).to(device) for _ in range(n)]
        x = torch.randn(SEQ, BATCH, WIDTH, device=device)

        def step() -> None:
            h = x
            for m in mods:
                h = m(h)[0]
            h.sum().backward()

        return step, float(n)  # one fused call a module, by construction

    return make


def _adam(n: int, impl: str, device: Any = "cpu", grads: bool = True):
    import torch

    params = [torch.nn.Parameter(torch.zeros(WIDTH, device=device)) for _ in range(n)]
    if grads:
        for p in params:
            p.grad = torch.full_like(p, 1e-3)
    return torch.optim.Adam(params, lr=1e-3, **IMPLS[impl])


def fused_reason(device: Any = "cpu") -> str | None:
    """Why fused Adam cannot run on `device` in this build (None: it can)."""
    try:
        opt = _adam(1, "fused", device)
        opt.step()
    except (RuntimeError, ValueError, TypeError) as e:
        return f"fused Adam unavailable on {device}: {str(e).splitlines()[0][:160]}"
    return None


def _train_step(n: int, device: Any, precision: str = "fp32") -> Any:
    """The harness's training step of an FC with `n` hidden layers of `WIDTH` nodes."""
    import torch

    from paradnn import families
    from paradnn.measure.step import TrainStep

    fam = families.get("fc")
    cfg = fam.config({"layers": n, "nodes": WIDTH, "input": WIDTH, "output": WIDTH, "batch": BATCH})
    built = fam.build(cfg, device, precision)
    return TrainStep(built, STEP_OPTIMIZER, precision, torch.device(device))


def _steps(
    device: Any, precision: str, seen: dict[str, Any]
) -> Callable[[int], tuple[Callable[[], Any], float]]:
    """The harness's training step at `precision`, units hidden layers; ``seen`` keeps the
    optimizer implementation it ran and the casts autocast made per size (counted)."""

    def make(n: int) -> tuple[Callable[[], Any], float]:
        step = _train_step(n, device, precision)
        seen["implementation"] = step.implementation

        def forward() -> None:
            with step.autocast():
                step.forward_loss(step.x, step.y)

        seen.setdefault("casts", {})[n] = count_casts(forward)
        return step, float(n)

    return make


def _clock(device: Any) -> Any:
    """A host clock; on a CUDA device it synchronises at each block's edges, so the queued
    kernels count (launches are asynchronous: the host's time per tiny op is its dispatch and
    launch, as long as the queue never fills)."""
    import torch

    from paradnn.measure.timer import HostClock

    dev = torch.device(device)
    if dev.type != "cuda":
        return HostClock()

    class SyncedHostClock(HostClock):
        def sync(self) -> None:
            torch.cuda.synchronize(dev)

    return SyncedHostClock()


@dataclass(frozen=True)
class Figure:
    """A measured figure with its interval, or NULL (``value`` None) with the reason."""

    value: float | None
    low: float | None = None
    high: float | None = None
    why: str | None = None

    @property
    def half_rel(self) -> float:
        if self.value is None or self.low is None or self.high is None:
            return 0.0
        return half_rel(self.value, self.low, self.high)


def _slope_figure(ladder: Ladder, reasons: list[str], name: str) -> Figure:
    """A ladder's slope; where noise made it ≤ 0, the largest size's seconds per unit instead
    (an upper bound: it carries its share of the fixed cost), said among the reasons; NULL with
    the reason where the ladder has no slope."""
    s = ladder.slope
    if s is None:
        return Figure(None, why=ladder.why)
    if s.per_unit_s > 0:
        return Figure(s.per_unit_s, s.ci_low_s, s.ci_high_s)
    big = max(ladder.points, key=lambda p: p.units)
    reasons.append(
        f"{name}: slope {s.per_unit_s * 1e6:.2f} µs ≤ 0; the mean per unit at n={big.size} "
        "(an upper bound) is used"
    )
    return Figure(big.median_s / big.units)


def _positive(s: Slope, points: list[Point], reasons: list[str], name: str) -> float:
    """The slope, or its labelled upper bound (`_slope_figure`)."""
    got = _slope_figure(Ladder(name, points, s), reasons, name).value
    assert got is not None
    return got


def _cast_figure(plain: Ladder, cast: Ladder, casts: dict[int, int]) -> tuple[Figure, float]:
    """(seconds per autocast cast, casts per layer): the training step's per-layer slope under
    autocast less without it, over the casts autocast made per layer (counted)."""
    sizes = sorted(casts)
    if plain.slope is None or cast.slope is None:
        return Figure(None, why=cast.why or plain.why), 0.0
    per_layer = (casts[sizes[-1]] - casts[sizes[0]]) / (sizes[-1] - sizes[0]) if sizes else 0.0
    if per_layer <= 0:
        return Figure(None, why=f"autocast made no casts per layer here (counted {casts})"), 0.0
    a, b = cast.slope, plain.slope
    extra = a.per_unit_s - b.per_unit_s
    if extra <= 0:
        why = (
            f"autocast added {extra * 1e6:.2f} µs a layer (≤ 0): its casts are below the noise "
            "of the two ladders"
        )
        return Figure(None, why=why), per_layer
    low = (a.ci_low_s - b.ci_high_s) / per_layer
    high = (a.ci_high_s - b.ci_low_s) / per_layer
    return Figure(extra / per_layer, low, high), per_layer


def _step_figure(ladder: Ladder, head_s: float | None) -> Figure:
    """The step ladder's intercept less the head Linear's share: a step's fixed host cost."""
    s = ladder.slope
    if s is None:
        return Figure(None, why=ladder.why)
    if head_s is None:
        return Figure(None, why="the head's share needs the forward, node and optimizer figures")
    got = s.intercept_s - head_s
    if got <= 0:
        why = (
            f"the step's intercept {s.intercept_s * 1e6:.1f} µs is not above the head's share "
            f"{head_s * 1e6:.1f} µs (too noisy)"
        )
        return Figure(None, why=why)
    return Figure(got, s.intercept_low_s - head_s, s.intercept_high_s - head_s)


def _difference(a: Point, b: Point, what: str) -> Figure:
    """a − b with its interval (each end of one against the other end of the other)."""
    got = a.median_s - b.median_s
    if got <= 0:
        return Figure(None, why=f"{what}: {got * 1e6:.1f} µs ≤ 0 (below the noise)")
    return Figure(got, a.low_s - b.high_s, a.high_s - b.low_s)


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
    """Measure this host's dispatch costs on `device` ("cpu", or a CUDA device, whose launch,
    sync and GradScaler costs are measured too); the figures (HostProfile's fields, optimizer
    per implementation; NULL where not measured, the reason in ``nulls``) with `detail` (every
    ladder, interval and count) and the quality verdict. With `INTRA_OP_THREADS` CPU threads
    (restored after). `measure_fn`, `probe` (a `quality.LoadProbe`) and `sizes` are injectable
    for tests."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(INTRA_OP_THREADS)
    try:
        got = _measure_profile(device, policy, measure_fn, sizes, probe, progress, rounds)
    finally:
        torch.set_num_threads(saved)
    got["detail"]["intra_op_threads"] = INTRA_OP_THREADS
    return got


def _measure_profile(
    device: str,
    policy: TimingPolicy | None,
    measure_fn: MeasureFn | None,
    sizes: dict[str, tuple[int, ...]] | None,
    probe: Any,
    progress: Say | None,
    rounds: int | None,
) -> dict[str, Any]:
    import torch

    from paradnn.measure import quality
    from paradnn.measure.timer import measure

    sizes = {**SIZES, **(sizes or {})}
    check_sizes(sizes)
    policy = policy or HOST_POLICY
    rounds = rounds or ROUNDS
    measure_fn = measure_fn or measure
    say = progress or (lambda msg: None)
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    clock = _clock(dev)
    probe = probe if probe is not None else quality.LoadProbe()
    detail: dict[str, Any] = {"policy": asdict(policy), "width": WIDTH, "batch": BATCH}
    detail.update(rounds=rounds, device=str(dev), launches_included=cuda)
    nulls: dict[str, str] = {}
    reasons: list[str] = []
    figs: dict[str, Figure] = {}
    t0 = time.monotonic()
    probe.begin()

    def ladder(name: str, make: Any, key: str) -> Ladder:
        return _ladder(name, sizes[key], make, measure_fn, clock, policy, say, rounds)

    with torch.enable_grad():
        fwd = ladder("forward", _forward(dev), "forward")
        detail["forward_op"] = _entry(fwd, "torch call (TorchFunctionMode count)")
        figs["forward_op_s"] = _slope_figure(fwd, reasons, "forward_op_s")
        bwd = ladder("autograd", _backward(dev), "autograd")
        detail["autograd_node"] = _entry(bwd, "autograd node (graph walked)")
        figs["autograd_node_s"] = _slope_figure(bwd, reasons, "autograd_node_s")
    impls: list[str] = []
    fused_why = fused_reason(dev)
    for impl in IMPLS:
        key = f"optimizer_tensor_s.{impl}"
        if impl == "fused" and fused_why:
            nulls["optimizer_fused_s"] = fused_why
            continue

        def make(n: int, impl: str = impl) -> tuple[Callable[[], Any], float]:
            return _adam(n, impl, dev).step, float(n)

        lad = ladder(f"Adam {impl}", make, "optimizer")
        detail[f"optimizer_{impl}"] = _entry(lad, "parameter tensor")
        figs[key] = _slope_figure(lad, reasons, key)
        impls.append(impl)
    empty = _adam(1, "foreach", dev, grads=False)
    step_pt = _point(0, 0, measure_fn(empty.step, clock, policy))
    detail["optimizer_step"] = {**asdict(step_pt), "what": "Adam(foreach).step(), no gradient"}
    with torch.enable_grad():
        rnn = ladder("LSTM call", _rnn(dev), "rnn")
    detail["rnn_call"] = _entry(rnn, "LSTM(8, 8) module call, forward and backward")
    figs["rnn_call_s"] = _slope_figure(rnn, reasons, "rnn_call_s")
    fp32: dict[str, Any] = {}
    steps = ladder("training step", _steps(dev, "fp32", fp32), "step")
    impl = fp32.get("implementation")
    head = _head_share(figs, impl)
    detail["step"] = {
        **_entry(steps, f"hidden FC layer, {STEP_OPTIMIZER} step"),
        "implementation": impl,
        "head_share_s": head,
    }
    figs["step_s"] = _step_figure(steps, head)
    low = _autocast_precision(dev)
    seen: dict[str, Any] = {}
    cast = ladder(f"training step, autocast {low}", _steps(dev, low, seen), "step")
    figs["cast_s"], per_layer = _cast_figure(steps, cast, seen.get("casts", {}))
    detail["cast"] = {
        **_entry(cast, f"hidden FC layer, {STEP_OPTIMIZER} step under autocast ({low})"),
        "precision": low,
        "casts": {str(k): v for k, v in seen.get("casts", {}).items()},
        "casts_per_layer": per_layer,
        "per_cast_s": figs["cast_s"].value,
    }
    if cuda:
        figs["scaler_s"] = _scaler(dev, measure_fn, clock, policy, say, detail)
        sync_s, launch = _cuda_costs(dev, sizes["launch"], measure_fn, policy, say, detail, rounds)
        figs["kernel_launch_s"] = launch
    else:
        sync_s = 0.0
        detail["sync"] = "0 on a CPU: the host runs the kernels itself, nothing to wait for"
        nulls["kernel_launch_s"] = "a CPU launches no kernels (one timeline)"
        nulls["scaler_s"] = (
            "measured on a GPU only: a CPU step is one timeline, and the step model runs no "
            "GradScaler wait there"
        )
    probe.end()
    load = dict(probe.result)
    for name, f in figs.items():
        column = name if not name.startswith("optimizer_tensor_s.") else None
        if f.value is None and f.why:
            nulls[column or f"optimizer_{name.rsplit('.', 1)[1]}_s"] = f.why
        elif f.half_rel > SLOPE_CI_LIMIT:
            shown = "∞" if math.isinf(f.half_rel) else f"{f.half_rel:.0%}"
            reasons.append(f"{name}: interval ±{shown} > ±{SLOPE_CI_LIMIT:.0%}")
    reasons += _load_reasons(load)
    detail["intervals"] = {
        k: [f.low, f.high] for k, f in figs.items() if f.value is not None and f.low is not None
    }
    detail["seconds"] = round(time.monotonic() - t0, 2)
    detail["load"] = load

    def value(name: str) -> float | None:
        f = figs.get(name)
        return None if f is None else f.value

    per = {i: value(f"optimizer_tensor_s.{i}") for i in impls}
    return {
        "forward_op_s": value("forward_op_s"),
        "autograd_node_s": value("autograd_node_s"),
        "optimizer_tensor_s": {i: v for i, v in per.items() if v is not None},
        "optimizer_step_s": step_pt.median_s,
        "sync_s": sync_s,
        "kernel_launch_s": value("kernel_launch_s"),
        "step_s": value("step_s"),
        "cast_s": value("cast_s"),
        "rnn_call_s": value("rnn_call_s"),
        "scaler_s": value("scaler_s"),
        "launches_included": cuda,
        "quality": "noisy" if reasons else "good",
        "quality_reasons": reasons,
        "detail": detail,
        "nulls": nulls,
    }


def _autocast_precision(dev: Any) -> str:
    """The 16-bit precision autocast runs the cast ladder in: bf16, or fp16 on a GPU without."""
    import torch

    return "bf16" if dev.type != "cuda" or torch.cuda.is_bf16_supported() else "fp16"


def _head_share(figs: dict[str, Figure], impl: str | None) -> float | None:
    """The head Linear's host seconds at the measured figures (the step ladder's FC has one)."""
    f, n = figs["forward_op_s"].value, figs["autograd_node_s"].value
    o = figs.get(f"optimizer_tensor_s.{impl}") if impl else None
    if f is None or n is None or o is None or o.value is None:
        return None
    return HEAD_CALLS * f + HEAD_NODES * n + HEAD_TENSORS * o.value


def _scaler(
    dev: Any,
    measure_fn: MeasureFn,
    clock: Any,
    policy: TimingPolicy,
    say: Say,
    detail: dict[str, Any],
) -> Figure:
    """`scaler_s`: the mixed fp16 training step (n = 1) with its GradScaler less without it."""
    import torch

    try:
        with torch.enable_grad():
            scaled = _train_step(1, dev, "fp16")
            plain = _train_step(1, dev, "fp16")
            plain.scaler = None
            a = _point(1, 1, measure_fn(scaled, clock, policy))
            b = _point(1, 1, measure_fn(plain, clock, policy))
    except Exception as e:  # no fp16 autocast or GradScaler here: NULL, with the reason
        detail["scaler"] = {"why": _why(e)}
        return Figure(None, why=f"the GradScaler step failed: {_why(e)}")
    say(f"host profile: GradScaler: {a.median_s * 1e6:.0f} µs vs {b.median_s * 1e6:.0f} µs")
    fig = _difference(a, b, "the fp16 step with its GradScaler less without")
    detail["scaler"] = {"with": asdict(a), "without": asdict(b), "scaler_s": fig.value}
    return fig


def _load_reasons(load: dict[str, Any]) -> list[str]:
    from paradnn.measure import quality

    reasons = []
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
    device: Any,
    sizes: Sequence[int],
    measure_fn: MeasureFn,
    policy: TimingPolicy,
    say: Say,
    detail: dict[str, Any],
    rounds: int = 1,
) -> tuple[float, Figure]:
    """(sync_s, kernel_launch_s) on a CUDA device: host time, the device only synchronised at
    the timer's edges (a host clock: launches are asynchronous, so the host's time per tiny
    kernel is the launch, as long as the queue never fills)."""
    import torch

    dev = torch.device(device)
    clock = _clock(dev)
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
        gpu = _ladder("launch", sizes, ops_on(dev), measure_fn, clock, policy, say, rounds)
        cpu = _ladder("cpu op", sizes, ops_on("cpu"), measure_fn, clock, policy, say, rounds)
    detail["kernel_launch"] = {
        "cuda_op": _entry(gpu, "x.add_(1) on the GPU"),
        "cpu_op": _entry(cpu, "x.add_(1) on the CPU"),
    }
    if gpu.slope is None or cpu.slope is None:
        return sync.median_s, Figure(None, why=gpu.why or cpu.why)
    g, c = gpu.slope, cpu.slope
    launch = g.per_unit_s - c.per_unit_s
    if launch <= 0 < g.per_unit_s:  # the dispatch hides the launch: the GPU op's whole cost
        detail["kernel_launch"]["note"] = "GPU op ≤ CPU op: the GPU op's per-call cost is used"
        return sync.median_s, Figure(g.per_unit_s, g.ci_low_s, g.ci_high_s)
    if launch <= 0:
        return sync.median_s, Figure(None, why="the GPU op's slope was not positive (too noisy)")
    return sync.median_s, Figure(launch, g.ci_low_s - c.ci_high_s, g.ci_high_s - c.ci_low_s)


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

    from paradnn.measure.calibrate import device_name
    from paradnn.measure.environment import prepare

    saved = torch.get_num_threads()
    try:
        dev, env = prepare(device, threads)
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
        "step_s": p["step_s"],
        "cast_s": p["cast_s"],
        "rnn_call_s": p["rnn_call_s"],
        "scaler_s": p["scaler_s"],
        "launches_included": p["launches_included"],
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
