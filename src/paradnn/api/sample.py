"""A seeded random sample of the ParaDnn paper's Table 2 space, sized to a time budget.

Each GPU loan adds one such sample to `benchmarks/data/gpu/` (benchmarks/gpu_check.py), so the
step-time model is validated on more of the space every time; `table2_sample` is the library
function behind it, usable anywhere: its plan goes to `api.run` like a preset's.

The space is each family's Table 2 axes (`Family.paper_space`: FC; CNN with both block types;
RNN with all three cells) crossed with the precisions the device runs natively among fp32,
tf32 and bf16. Draws pick a family (`WEIGHTS`: CNNs half as often), then each axis' value and
the precision uniformly, from `random.Random(seed)`; a draw is skipped when it repeats an
earlier one, when the memory model's best estimate does not fit the device (a run that runs
out of memory costs a worker), or when the step-time model prices its step above `max_step_s`
(the sample then leans to the smaller half of the space: its JSON and the docs say so). Runs
are kept in the order drawn until the estimated time would pass the budget, so a sample cut
short is still a random sample.

A run's estimated seconds: its overhead outside the measured phases and the extra seconds of
its family's first step (autotuning), both from `SampleCosts` (measured on the previous loan),
plus its first step, warm-up and timed phase at the predicted step time under the timing
policy's minimums. Torch-free.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from paradnn.api.returns import SweepPlan
from paradnn.config import TimingPolicy
from paradnn.errors import ConfigError

FAMILIES = ("fc", "cnn", "rnn")
PRECISIONS = ("fp32", "tf32", "bf16")
OPTIMIZER = "rmsprop"
# The quick policy's ±5 % target on shorter budgets (≥ 0.1 s of warm-up and ≥ 10 steps, ≥ 0.2 s
# timed: 20-200 samples of a 1-10 ms GPU step), with low caps so that one noisy run cannot take
# a tenth of the budget.
SAMPLE_TIMING = TimingPolicy(
    min_time_s=0.2,
    max_time_s=1.0,
    warmup_min_time_s=0.1,
    warmup_max_time_s=1.5,
    target_ci_rel=0.05,
)
# How often each family is drawn: a CNN run costs ~5× an FC or RNN run on a GPU (its first step
# carries cuDNN's autotuning, 0.2-9 s on the first H100 run), so CNNs are drawn half as often
# and the budget holds more runs; within a family every Table 2 point is equally likely.
WEIGHTS = {"fc": 2.0, "cnn": 1.0, "rnn": 2.0}
MAX_DRAWS = 5_000  # draws before giving up on filling the budget (a GPU's needs ~200)
MEMORY_SHARE = 0.9  # the best memory estimate must fit this share of the device


@dataclass(frozen=True)
class SampleCosts:
    """What a run costs beyond its predicted steps. Defaults: the first H100 run's sweep
    (benchmarks/results/gpu/nvidia-h100-80gb-hbm3/work/runs.sqlite): 0.2 s a run in its
    worker outside the measured phases (before issue 43's harness changes), first steps of
    0.004-0.25 s for FC and LSTM, 0.16-9.4 s for CNNs (cuDNN's autotuning). `stretch`: the
    warm-up and timed seconds a run takes over the least its policy allows (a run stops when
    its interval is tight enough, not at the least: 1.47× on the 2026-11-27 H100 sample).
    Every figure is a mean, since the budget is a sum of runs (a median of the CNNs' first
    steps, 4.5 s there against a mean of 5.9 s, undercounts it)."""

    overhead_s: float = 0.2
    first_step_s: Mapping[str, float] = field(
        default_factory=lambda: {"fc": 0.1, "cnn": 2.5, "rnn": 0.1}
    )
    stretch: float = 1.0

    def first(self, family: str) -> float:
        return float(self.first_step_s.get(family, max(self.first_step_s.values(), default=0.0)))


@dataclass(frozen=True)
class Sample:
    """A drawn sample: `plan` for `api.run`, and how it was drawn (`as_dict()`)."""

    plan: SweepPlan
    seed: int
    budget_s: float
    estimated_s: float
    platform: str
    device_type: str
    capacity_bytes: int | None
    precisions: tuple[str, ...]
    max_step_s: float
    costs: SampleCosts
    weights: Mapping[str, float]
    draws: int
    skipped: dict[str, int]
    estimates_s: tuple[float, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "sweep": self.plan.name,
            "seed": self.seed,
            "runs": len(self.plan.specs),
            "budget_s": self.budget_s,
            "estimated_s": round(self.estimated_s, 1),
            "platform": self.platform,
            "device_type": self.device_type,
            "capacity_bytes": self.capacity_bytes,
            "precisions": list(self.precisions),
            "max_step_s": self.max_step_s,
            "overhead_s": self.costs.overhead_s,
            "first_step_s": dict(self.costs.first_step_s),
            "stretch": self.costs.stretch,
            "weights": dict(self.weights),
            "draws": self.draws,
            "skipped": dict(self.skipped),
            "by_family": _count(s.family for s in self.plan.specs),
            "by_precision": _count(s.precision for s in self.plan.specs),
            "timing": {k: getattr(self.plan.sweep.timing, k) for k in _TIMING_KEYS},
        }


_TIMING_KEYS = (
    "min_time_s",
    "max_time_s",
    "warmup_min_time_s",
    "warmup_max_time_s",
    "target_ci_rel",
)


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return out


def run_seconds(step_s: float, family: str, costs: SampleCosts, timing: TimingPolicy) -> float:
    """A run's estimated wall seconds at a predicted step time: its overhead, first step and
    the policy's least warm-up and timed seconds (`TimingPolicy.least_seconds`) × `stretch`."""
    least = timing.least_seconds(step_s)
    return costs.overhead_s + costs.first(family) + step_s + costs.stretch * least


def table2_sample(
    seed: int,
    *,
    budget_s: float,
    platform: str,
    device: str = "auto",
    precisions: Sequence[str] = PRECISIONS,
    families: Sequence[str] = FAMILIES,
    weights: Mapping[str, float] | None = None,
    max_step_s: float = 0.05,
    costs: SampleCosts | None = None,
    timing: TimingPolicy | None = None,
    capacity_bytes: int | None = None,
    native: Sequence[str] | None = None,
) -> Sample:
    """Draw a sample of Table 2 whose runs' estimated seconds add up to at most `budget_s`
    (module docstring). `platform` (a platform id or chip file, `paradnn platforms`) prices the
    steps with the step-time model; `device` says whose memory decides what fits and which
    precisions are native (NVML for a GPU; `capacity_bytes` and `native` override both, e.g.
    to plan for a machine other than this one). `timing`: the runs' policy (SAMPLE_TIMING).
    The sweep is named `table2-sample-<seed>`: every stored run carries it."""
    from paradnn import families as fams
    from paradnn import memory
    from paradnn.api.devices import device_capacity, native_precisions
    from paradnn.config import RunSpec, with_fields
    from paradnn.sim import chip as sim_chip
    from paradnn.sim.steptime import predict_step
    from paradnn.sweep import Sweep
    from paradnn.validate import int_at_least, number_in

    int_at_least("seed", seed, 0, 2**63 - 1)
    number_in("budget_s", budget_s, 0.0, 86_400.0, strict=True)
    number_in("max_step_s", max_step_s, 0.0, 3600.0, strict=True)
    for f in families:
        if f not in FAMILIES:
            raise ConfigError("families", f, "must be among " + ", ".join(FAMILIES))
    for p in precisions:
        if p not in PRECISIONS:
            raise ConfigError("precisions", p, "must be among " + ", ".join(PRECISIONS))
    if not families or not precisions:
        raise ConfigError("families/precisions", "empty", "need at least one of each")
    chip = sim_chip.load(platform)
    costs = costs or SampleCosts()
    timing = timing or SAMPLE_TIMING
    capacity, device_type = device_capacity(device)
    if capacity_bytes is not None:
        capacity = capacity_bytes
    runnable = list(native) if native is not None else native_precisions(device_type, device)
    precs = tuple(p for p in precisions if p in runnable and chip.platform.peak(p) is not None)
    if not precs:
        raise ConfigError(
            "precisions", list(precisions), f"none is native on {device} and priced by {platform}"
        )
    w = dict(WEIGHTS if weights is None else weights)
    for f in families:
        number_in(f"weights.{f}", w.get(f, 0.0), 0.0, 1e6, strict=True)
    drawn_from, odds = list(families), [w[f] for f in families]
    rng = random.Random(seed)
    base = with_fields(None, "sample", {"optimizer": OPTIMIZER, "timing": timing})  # but precision
    skipped = {"repeat": 0, "memory": 0, "slow": 0, "invalid": 0}
    seen: set[tuple[str, str, tuple[tuple[str, Any], ...]]] = set()
    picked: list[tuple[RunSpec, float]] = []
    total = 0.0
    draws = 0
    while draws < MAX_DRAWS:
        draws += 1
        (name,) = rng.choices(drawn_from, odds)
        fam = fams.get(name)
        values = {axis: rng.choice(list(vals)) for axis, vals in fam.paper_space.items()}
        precision = rng.choice(precs)
        try:
            cfg = fam.config(values)
        except ConfigError:
            skipped["invalid"] += 1
            continue
        key = (name, precision, tuple(sorted(cfg.__dict__.items())))
        if key in seen:
            skipped["repeat"] += 1
            continue
        seen.add(key)
        run = RunSpec(name, dict(cfg.__dict__), dataclasses.replace(base, precision=precision))
        est = memory.estimate(run, device_type)
        if capacity is not None and est.total > MEMORY_SHARE * capacity:
            skipped["memory"] += 1
            continue
        step = predict_step(name, cfg, chip, precision, optimizer=OPTIMIZER).predicted_step_s
        if step > max_step_s:
            skipped["slow"] += 1
            continue
        cost = run_seconds(step, name, costs, timing)
        if total + cost > budget_s:
            break
        total += cost
        picked.append((run, cost))
    specs = tuple(s for s, _ in picked)
    sweep = Sweep(
        name=f"table2-sample-{seed}",
        description=(
            f"a random sample of Table 2 (seed {seed}) sized to {budget_s:g} s on {platform}"
        ),
        source="<table2_sample>",
        configs=tuple(
            (fam, dict(items))
            for fam, items in dict.fromkeys((s.family, tuple(s.config.items())) for s in specs)
        ),
        precisions=precs,
        timing=timing,
    )
    return Sample(
        plan=SweepPlan(sweep, specs, base),
        seed=seed,
        budget_s=budget_s,
        estimated_s=total,
        platform=chip.id,
        device_type=device_type,
        capacity_bytes=capacity,
        precisions=precs,
        max_step_s=max_step_s,
        costs=costs,
        weights={f: w[f] for f in families},
        draws=draws,
        skipped=skipped,
        estimates_s=tuple(c for _, c in picked),
    )
