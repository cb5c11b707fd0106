"""Per-op profile of one training step: time from torch.profiler, FLOPs and bytes from OpCount.

1. Warm-up steps (lazy init, allocator, cuDNN autotuning stay out of the profile).
2. PROFILED_STEPS steps under torch.profiler (`record_shapes=True`; CPU activity, plus CUDA on
   a GPU), after one profiler warm-up step (the first profiled step carries the profiler's own
   start-up: an op of it can take 10× the whole step); times are per step (sum ÷ steps). Kineto's
   `USDT: … profiler_start` lines are silenced (KINETO_LOG_LEVEL, unless the caller set it).
   Time is given to the ops OpCount sees (the level FlopCounterMode counts at): an event whose
   name is such an op and that has no such op above it gets its *inclusive* time: CPU time on
   CPU, the summed durations of the kernels launched in its subtree on CUDA (the profiler links
   each kernel to its launching op by correlation / External id; `FunctionEvent.kernels`).
   Composite wrappers above (aten::linear, aten::conv2d) keep their own overhead, reported as
   `unattributed_s`; helpers below (aten::copy_ inside aten::addmm) are part of their op.
3. One step under OpCount (measure/opcount.py): FLOPs, bytes per (op, input shapes, dtype).
4. Join on (op, input shapes) (reference/flops.md §4.3 strategy C, the aggregate join); a
   group the profiler recorded with other shapes falls back to the op name alone (`join` =
   "name"), sharing that op's unmatched time by calls. Several dtypes of one (op, shapes) share
   its time by calls too.

The CUDA path follows the profiler's documented API but has not been run on a GPU here.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from paradnn import families
from paradnn.measure import precision as prec
from paradnn.measure.device import synchronize
from paradnn.measure.opcount import OpCount, OpStat

WARMUP_STEPS = 2
PROFILED_STEPS = 5  # per-op times are the mean over these (one step is too noisy to read)
QUIET_KINETO = "6"  # above kineto's levels: no INFO/STAGE/USDT lines on stderr
COLUMNS = (
    "op",
    "shapes",
    "dtype",
    "calls",
    "device_time_s",
    "flops",
    "bytes",
    "achieved_flops",
    "intensity",
)


@dataclass
class StepProfile:
    rows: list[dict[str, Any]]  # op_profile rows (no run_id)
    join: list[str]  # per row: "shapes", "name" (fallback) or "none" (no time found)
    unattributed_s: float  # profiled time of no counted op (composite wrappers' own overhead)
    total_flops: int
    total_bytes: int
    device: str
    extra: dict[str, Any] = field(default_factory=dict)


def _shapes(shapes: Any) -> tuple:
    return tuple(tuple(s) if isinstance(s, (list, tuple)) else () for s in shapes or ())


def _is_shape(s: Any) -> bool:
    return isinstance(s, (list, tuple)) and all(isinstance(d, int) for d in s)


def _key_shapes(shapes: Any) -> tuple:
    """Profiler shapes as OpCount writes them: a non-shape entry (a tensor list) becomes ()."""
    return tuple(tuple(s) if _is_shape(s) else () for s in shapes or ())


def attribute_times(
    events: Any, counted: set[str], on_device: bool
) -> tuple[dict[tuple[str, tuple], list[float]], float]:
    """Per (op, shapes): [calls, seconds] of the top-most events named as a counted op; and the
    time of everything else (CPU self time of other ops, or kernels launched outside them)."""
    groups: dict[tuple[str, tuple], list[float]] = defaultdict(lambda: [0, 0.0])
    attributed = 0.0
    total = 0.0
    for e in events:
        if on_device:
            total += sum(k.duration for k in e.kernels)
        elif e.name.startswith("aten::"):
            total += e.self_cpu_time_total
        if e.name not in counted:
            continue
        parent, nested = e.cpu_parent, False
        while parent is not None:
            if parent.name in counted:
                nested = True
                break
            parent = parent.cpu_parent
        if nested:
            continue
        us = e.device_time_total if on_device else e.cpu_time_total
        g = groups[(e.name, _key_shapes(e.input_shapes))]
        g[0] += 1
        g[1] += us * 1e-6
        attributed += us * 1e-6
    return dict(groups), max(0.0, total * 1e-6 - attributed)


def join(
    stats: list[OpStat], times: dict[tuple[str, tuple], list[float]]
) -> tuple[list[float | None], list[str]]:
    """Seconds per OpStat: by (op, shapes), else by op name; shared by calls."""
    by_key: dict[tuple[str, tuple], list[OpStat]] = defaultdict(list)
    for s in stats:
        by_key[(s.op, s.shapes)].append(s)
    leftover: dict[str, float] = defaultdict(float)
    for (op, shapes), (_, secs) in times.items():
        if (op, shapes) not in by_key:
            leftover[op] += secs
    unmatched: dict[str, list[OpStat]] = defaultdict(list)
    for s in stats:
        if (s.op, s.shapes) not in times:
            unmatched[s.op].append(s)
    out: list[float | None] = []
    how: list[str] = []
    for s in stats:
        if (s.op, s.shapes) in times:
            peers = by_key[(s.op, s.shapes)]
            out.append(times[(s.op, s.shapes)][1] * s.calls / sum(p.calls for p in peers))
            how.append("shapes")
        elif leftover.get(s.op, 0.0) > 0.0:
            peers = unmatched[s.op]
            out.append(leftover[s.op] * s.calls / sum(p.calls for p in peers))
            how.append("name")
        else:
            out.append(None)
            how.append("none")
    return out, how


def to_row(s: OpStat, seconds: float | None) -> dict[str, Any]:
    return {
        "op": s.op,
        "shapes": [list(x) for x in s.shapes],
        "dtype": s.dtype,
        "calls": s.calls,
        "device_time_s": seconds,
        "flops": s.flops,
        "bytes": s.bytes,
        "achieved_flops": s.flops / seconds if seconds else None,
        "intensity": s.flops / s.bytes if s.bytes else None,
    }


def profile_step_full(
    step: Callable[[], Any],
    device: str | torch.device,
    warmup: int = WARMUP_STEPS,
    steps: int = PROFILED_STEPS,
) -> StepProfile:
    """Profile `steps` calls of `step` (normally a TrainStep), per step; see the module
    docstring."""
    device = torch.device(device)
    on_device = device.type == "cuda"
    os.environ.setdefault("KINETO_LOG_LEVEL", QUIET_KINETO)  # read when the profiler starts
    for _ in range(warmup):
        step()
    synchronize(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_device else [])
    plan = schedule(wait=0, warmup=1, active=steps, repeat=1)
    with profile(activities=activities, record_shapes=True, schedule=plan) as prof:
        for _ in range(1 + steps):
            step()
            synchronize(device)
            prof.step()
    with OpCount() as oc:
        step()
    synchronize(device)
    stats = oc.stats
    totals, unattributed = attribute_times(prof.events(), {s.op for s in stats}, on_device)
    times = {k: [calls / steps, secs / steps] for k, (calls, secs) in totals.items()}
    unattributed /= steps
    seconds, how = join(stats, times)
    # Metadata ops the profiled step never ran (detaches autograd adds under a Python mode):
    # no time, no FLOPs, no bytes: dropped.
    keep = [i for i, s in enumerate(stats) if how[i] != "none" or s.flops or s.bytes]
    order = sorted(keep, key=lambda i: -(seconds[i] or 0.0))
    rows = [to_row(stats[i], seconds[i]) for i in order]
    return StepProfile(
        rows=rows,
        join=[how[i] for i in order],
        unattributed_s=unattributed,
        total_flops=oc.total_flops,
        total_bytes=oc.total_bytes,
        device=str(device),
        extra={"profiled_steps": steps},
    )


def profile_step(step: Callable[[], Any], device: str | torch.device) -> list[dict[str, Any]]:
    """Rows for the `op_profile` table (add `run_id`), slowest op first."""
    return profile_step_full(step, device).rows


def profile_config(
    family: str,
    values: dict[str, Any],
    *,
    device: str = "cpu",
    precision: str = "fp32",
    optimizer: str = "rmsprop",
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Build `family` with `values` as runner/execute.py does and profile its training steps."""
    from paradnn.measure.step import TrainStep

    dev = torch.device(device)
    fam = families.get(family)
    cfg = fam.config(values)
    torch.manual_seed(seed)
    torch.set_flush_denormal(True)
    try:
        with prec.tf32_flags(precision):
            with torch.device(dev):
                built = fam.build(cfg, dev, precision)
            step = TrainStep(built, optimizer, precision, dev)
            return profile_step(step, dev)
    finally:
        torch.set_flush_denormal(False)
