"""What a set of measured runs can tell the step-time model (issue 42): each run's regime, which
parameters the runs identify, and a fit that moves only those.

A step on a GPU is about the longer of two timelines, the host's and the device's, so a run on
the host's floor says nothing about the device's efficiencies, and a fit that lets it speak
pushes the host model's error into them (a quick sweep on an H100, all host-bound, once fitted
a bf16 GEMM efficiency of 0.13). Here:

* **regime** — at the current parameters, the run's elasticity to the host's costs (``d log
  step ÷ d log host_scale``) and to the device's (every device term scaled together): the share
  of the two that is the device's is ≥ 75 % for a **device-bound** run, ≤ 25 % for a
  **host-bound** one, else **mixed**;
* **stages** — host parameters are fitted on host-bound runs, then device parameters on
  device-bound runs (mixed runs inform neither, except the device side where no host parameter
  is fitted at all: a CPU's serial timeline, whose host profile is taken as measured); the runs
  are classified again with the result, and the stages repeat from the priors until no run
  changes regime (at most `MAX_ROUNDS`);
* **identified** — within a stage a parameter is free only where some run's elasticity to it
  reaches `MATTERS`; after the fit its standard error (log space: the residual scatter, at
  least `NOISE_FLOOR`, over what of its Jacobian column the other free parameters cannot
  explain) must be within `MAX_SE`, else it goes back to its prior and the stage is fitted
  again. Each parameter is reported with its value, prior, status, 95 % interval, the runs it
  was fitted on, and whether it sits at a bound.

The fit is `scipy.optimize.least_squares` on ``log(predicted) − log(measured)`` with a soft-L1
loss, as before. Torch-free and store-free: the caller passes a predictor (`sim.fit` evaluates
plans; benchmarks/sim_validation.py whole steps).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from paradnn.sim.stepparams import StepParams

HOST_PARAMS = ("host_scale",)  # scale the host profile's costs (the host timeline)
DEVICE_PARAMS = (
    "kernel_overhead_s",
    "efficiency",
    "k_half",
    "bw_efficiency",
    "conv_efficiency",
    "cache_gain",
)
PER_PRECISION = ("efficiency", "conv_efficiency")
# Natural-unit bounds of each fitted value (k_half is fitted as k_half + 1).
BOUNDS: Mapping[str, tuple[float, float]] = {
    "kernel_overhead_s": (1e-8, 1e-1),
    "k_half": (1.0, 1e5 + 1.0),
    "bw_efficiency": (1e-3, 1.0),
    "host_scale": (1e-2, 1e2),
    "cache_gain": (1.0, 16.0),  # cache ÷ DRAM bandwidth: L2/L3 reach a few times DRAM, not more
    "efficiency": (1e-3, 1.0),
    "conv_efficiency": (1e-2, 1.0),
}
# How far each parameter's prior may be off, as one standard deviation in log space (a weak,
# log-normal prior: the fit maximises the posterior, so a direction the runs cannot see stays
# near the prior instead of wandering to a corner that fits as well): the efficiencies and the
# bandwidth share within ×1.5 of the defaults' published orders, the per-kernel and reduction
# constants and the host's scale within ×4 (hosts differ that much), the rest ×2.
PRIOR_WIDTH: Mapping[str, float] = {
    "kernel_overhead_s": math.log(4.0),
    "k_half": math.log(4.0),
    "bw_efficiency": math.log(1.5),
    "host_scale": math.log(4.0),
    "cache_gain": math.log(2.0),
    "efficiency": math.log(1.5),
    "conv_efficiency": math.log(2.0),
}
RESIDUAL_SCALE = 0.05  # a run's log error counted in units of this in the fit's objective
ROBUST_AT = 2.0  # … and linearly (soft-L1) beyond this many units: 10 % off
REGIMES = ("host-bound", "device-bound", "mixed")
DEVICE_SHARE = 0.75  # device elasticity ÷ (device + host) at or above: device-bound
HOST_SHARE = 0.25  # at or below: host-bound
MATTERS = 0.05  # a run where a 10 % change of the parameter moves the step ≥ 0.5 %
NOISE_FLOOR = 0.02  # a step time's relative scatter assumed at least this, even on a perfect fit
MAX_SE = math.log(1.5)  # identified: pinned within ×1.5 (one standard error)
Z95 = 1.959964
MAX_ROUNDS = 4
STEP = math.log(1.05)  # finite-difference step in log space

# predicted seconds of the samples ``idx`` under ``params``
Predictor = Callable[[StepParams, Sequence[int]], np.ndarray]


@dataclass(frozen=True)
class Param:
    """One fitted number: a `StepParams` field, or one precision of a per-precision table."""

    name: str
    sub: str | None = None

    @property
    def key(self) -> str:
        return self.name if self.sub is None else f"{self.name}.{self.sub}"

    @property
    def group(self) -> str:
        return "host" if self.name in HOST_PARAMS else "device"

    def value(self, sp: StepParams) -> float:
        """The fitted coordinate's natural value (k_half + 1 for k_half)."""
        if self.name == "efficiency":
            return sp.eff(self.sub or "default")
        if self.name == "conv_efficiency":
            return sp.conv_eff(self.sub or "default")
        v = float(getattr(sp, self.name))
        return v + 1.0 if self.name == "k_half" else v

    def bounds(self) -> tuple[float, float]:
        return BOUNDS[self.name]

    def width(self) -> float:
        return PRIOR_WIDTH[self.name]


def expand(
    names: Sequence[str], precisions: Sequence[str], conv_precisions: Sequence[str] = ()
) -> list[Param]:
    """The `Param` list of field names: ``efficiency`` per precision of the runs,
    ``conv_efficiency`` per precision of the runs with convolutions."""
    out: list[Param] = []
    for n in names:
        if n not in BOUNDS:
            raise ValueError(f"{n} is not a fitted step parameter")
        if n == "efficiency":
            out += [Param(n, p) for p in sorted(precisions)]
        elif n == "conv_efficiency":
            out += [Param(n, p) for p in sorted(conv_precisions)]
        else:
            out.append(Param(n))
    return out


def apply(sp: StepParams, params: Sequence[Param], values: Sequence[float]) -> StepParams:
    """``sp`` with each param at its natural value."""
    new: dict[str, Any] = {}
    for p, v in zip(params, values, strict=True):
        if p.name in PER_PRECISION:
            table = dict(new.get(p.name, getattr(sp, p.name)))
            table[p.sub or "default"] = float(v)
            new[p.name] = table
        else:
            new[p.name] = float(v) - 1.0 if p.name == "k_half" else float(v)
    return replace(sp, **new)


def device_scaled(sp: StepParams, factor: float) -> StepParams:
    """``sp`` with every device term × ``factor``: compute (efficiencies ÷ factor), memory
    (bandwidth efficiency ÷ factor) and the per-kernel overhead (× factor)."""
    return replace(
        sp,
        efficiency={k: v / factor for k, v in sp.efficiency.items()},
        bw_efficiency=sp.bw_efficiency / factor,
        kernel_overhead_s=sp.kernel_overhead_s * factor,
    )


def _log_pred(predict: Predictor, sp: StepParams, idx: Sequence[int]) -> np.ndarray:
    return np.log(np.maximum(np.asarray(predict(sp, idx), dtype=float), 1e-300))


def elasticities(
    predict: Predictor, sp: StepParams, params: Sequence[Param], idx: Sequence[int]
) -> np.ndarray:
    """``d log step ÷ d log θ`` per run (rows) and parameter (columns), by a forward difference
    of `STEP` in log space (the model is piecewise smooth: max of terms)."""
    if not params or not idx:
        return np.zeros((len(idx), len(params)))
    at = _log_pred(predict, sp, idx)
    cols = []
    for p in params:
        moved = apply(sp, [p], [p.value(sp) * math.exp(STEP)])
        cols.append((_log_pred(predict, moved, idx) - at) / STEP)
    return np.column_stack(cols)


def regimes(predict: Predictor, sp: StepParams, idx: Sequence[int]) -> list[str]:
    """Each run's regime at ``sp`` (module docstring)."""
    if not idx:
        return []
    at = _log_pred(predict, sp, idx)
    f = math.exp(STEP)
    host = (_log_pred(predict, replace(sp, host_scale=sp.host_scale * f), idx) - at) / STEP
    dev = (_log_pred(predict, device_scaled(sp, f), idx) - at) / STEP
    out = []
    for h, d in zip(np.maximum(host, 0.0), np.maximum(dev, 0.0), strict=True):
        share = d / (h + d) if h + d > 1e-12 else 0.5
        out.append(
            "device-bound"
            if share >= DEVICE_SHARE
            else "host-bound"
            if share <= HOST_SHARE
            else "mixed"
        )
    return out


@dataclass(frozen=True)
class Report:
    """What the data said about one parameter."""

    key: str
    group: str  # host | device
    value: float  # natural units (k_half itself, not + 1)
    prior: float
    status: str  # identified | not identified | fixed
    reason: str  # the why, in words
    interval: tuple[float, float] | None = None  # 95 %, natural units
    runs: int = 0  # fitted runs where it matters
    at_bound: str | None = None  # lower | upper

    def line(self) -> str:
        """One line for the CLI and the chip file's comments."""
        v = f"{self.key} = {self.value:.4g}"
        if self.status == "identified":
            lo, hi = self.interval or (self.value, self.value)
            runs = f"{self.runs} run" + ("" if self.runs == 1 else "s")
            s = f"{v}: identified from {runs}, 95 % interval [{lo:.4g}, {hi:.4g}]"
            if self.at_bound:
                s += f"; at its {self.at_bound} bound"
            return s
        return f"{v} (prior {self.prior:.4g}): {self.status}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "parameter": self.key,
            "group": self.group,
            "value": self.value,
            "prior": self.prior,
            "status": self.status,
            "reason": self.reason,
            "low": None if self.interval is None else self.interval[0],
            "high": None if self.interval is None else self.interval[1],
            "runs": self.runs,
            "at_bound": self.at_bound,
        }


@dataclass(frozen=True)
class Staged:
    params: StepParams
    reports: dict[str, Report]
    regimes: list[str]  # per training run, at the fitted parameters
    rounds: int
    cost: float
    status: str
    used: dict[str, list[int]] = field(default_factory=dict)  # host/device → fitted runs


def _natural(p: Param, v: float) -> float:
    return v - 1.0 if p.name == "k_half" else v


def _stage(
    predict: Predictor,
    meas: np.ndarray,
    idx: list[int],
    free: list[Param],
    sp: StepParams,
    prior: StepParams,
) -> tuple[StepParams, dict[str, Report], float, str]:
    """Fit ``free`` on the runs ``idx`` (starting from ``prior``'s values), dropping the ones
    the runs do not pin down; every param of ``free`` gets a report."""
    from scipy.optimize import least_squares

    reports: dict[str, Report] = {}
    sp = apply(sp, free, [p.value(prior) for p in free])
    if not free:
        return sp, reports, 0.0, "nothing to fit"
    if not idx:
        for p in free:
            reports[p.key] = _kept(p, prior, "no run in its regime")
        return sp, reports, 0.0, "nothing to fit"
    J0 = elasticities(predict, sp, free, idx)
    counts = (np.abs(J0) >= MATTERS).sum(axis=0)
    live = [p for p, c in zip(free, counts, strict=True) if c > 0]
    for p, c in zip(free, counts, strict=True):
        if c == 0:
            reports[p.key] = _kept(p, prior, "no run where it matters")
    y = np.log(meas[idx])
    cost, status = 0.0, "nothing to fit"
    while live:
        lo = np.log([p.bounds()[0] for p in live])
        hi = np.log([p.bounds()[1] for p in live])
        x0 = np.clip(np.log([max(p.value(prior), 1e-300) for p in live]), lo + 1e-9, hi - 1e-9)
        width = np.array([p.width() for p in live])

        def data(x: np.ndarray, live: list[Param] = live, start: StepParams = sp) -> np.ndarray:
            return _log_pred(predict, apply(start, live, np.exp(x)), idx) - y

        def residuals(x: np.ndarray, x0: np.ndarray = x0, width: np.ndarray = width) -> Any:
            return np.concatenate([data(x) / RESIDUAL_SCALE, (x - x0) / width])

        res = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=ROBUST_AT)
        fitted = apply(sp, live, np.exp(res.x))
        J = elasticities(predict, fitted, live, idx)
        r = data(res.x)
        n, k = len(idx), len(live)
        scatter = max(NOISE_FLOOR, float(np.sqrt(np.sum(r**2) / max(n - k, 1))))
        info = J.T @ J / scatter**2  # what the runs say, beside the prior's 1 ÷ width²
        cov = np.linalg.pinv(info + np.diag(1.0 / width**2))
        se = np.sqrt(np.maximum(np.diag(cov), 0.0))
        # identified: the runs pin it within ×1.5 and say more than its prior does (they at
        # least halve its variance); else back to the prior, and the rest fitted again
        short = np.maximum(se / MAX_SE, se / (width / math.sqrt(2.0)))
        worst = int(np.argmax(short))
        if short[worst] > 1.0:
            p = live.pop(worst)
            data_only = _data_se(info, worst)
            if data_only > math.log(1e3):
                why = f"the {n} runs cannot tell it from the other parameters"
            else:
                why = f"the {n} runs pin it only within ×{math.exp(data_only):.3g}"
            reports[p.key] = _kept(p, prior, why)
            sp = apply(sp, [p], [p.value(prior)])
            continue
        sp, cost, status = fitted, float(res.cost), str(res.message)
        used = (np.abs(J) >= MATTERS).sum(axis=0)
        for i, p in enumerate(live):
            v = p.value(fitted)
            bound = None
            if res.x[i] <= lo[i] + 1e-6:
                bound = "lower"
            elif res.x[i] >= hi[i] - 1e-6:
                bound = "upper"
            band = (
                _natural(p, v * math.exp(-Z95 * se[i])),
                _natural(p, min(v * math.exp(Z95 * se[i]), p.bounds()[1])),
            )
            reports[p.key] = Report(
                key=p.key,
                group=p.group,
                value=_natural(p, v),
                prior=_natural(p, p.value(prior)),
                status="identified",
                reason=f"fitted on {n} runs",
                interval=band,
                runs=int(used[i]),
                at_bound=bound,
            )
        break
    return sp, reports, cost, status


def _data_se(info: np.ndarray, j: int) -> float:
    """The standard error the runs alone give parameter ``j`` with the others free: one over
    the square root of what of its information the others cannot explain (the Schur
    complement); infinite where they explain all of it."""
    others = [i for i in range(len(info)) if i != j]
    own = float(info[j, j])
    if others:
        a = info[np.ix_(others, others)]
        b = info[others, j]
        ridge = 1e-12 * max(float(np.max(np.diag(a))), 1e-300)
        own -= float(b @ np.linalg.solve(a + ridge * np.eye(len(others)), b))
    return math.inf if own <= 1e-12 * max(float(info[j, j]), 1e-300) else 1.0 / math.sqrt(own)


def _kept(p: Param, prior: StepParams, why: str) -> Report:
    v = _natural(p, p.value(prior))
    return Report(p.key, p.group, v, v, "not identified", why + "; kept at its prior")


def fit_staged(
    predict: Predictor,
    measured: Sequence[float],
    base: StepParams,
    allowed: Sequence[Param],
    *,
    mixed_informs_device: bool | None = None,
) -> Staged:
    """The staged fit of the module docstring over every sample (``measured`` in seconds),
    moving only ``allowed`` from ``base``. ``mixed_informs_device``: whether mixed runs join the
    device stage (None: when no host parameter is allowed)."""
    meas = np.asarray(measured, dtype=float)
    every = list(range(len(meas)))
    host = [p for p in allowed if p.group == "host"]
    dev = [p for p in allowed if p.group == "device"]
    if mixed_informs_device is None:
        mixed_informs_device = not host
    sp = base
    reg = regimes(predict, sp, every)
    reports: dict[str, Report] = {}
    cost, status = 0.0, "nothing to fit"
    used: dict[str, list[int]] = {}
    rounds = 0
    while rounds < MAX_ROUNDS:
        rounds += 1
        h_idx = [i for i in every if reg[i] == "host-bound"]
        sp, rh, ch, sh = _stage(predict, meas, h_idx, host, sp, base)
        mid = regimes(predict, sp, every)
        want = ("device-bound", "mixed") if mixed_informs_device else ("device-bound",)
        d_idx = [i for i in every if mid[i] in want]
        sp, rd, cd, sd = _stage(predict, meas, d_idx, dev, sp, base)
        reports = {**rh, **rd}
        cost = ch + cd
        status = "; ".join(f"{g}: {s}" for g, s in (("host", sh), ("device", sd)) if s)
        used = {"host": h_idx, "device": d_idx}
        new = regimes(predict, sp, every)
        if new == reg:
            break
        reg = new
    return Staged(sp, reports, reg, rounds, cost, status, used)


def fixed_reports(base: StepParams, params: Sequence[Param], why: str) -> dict[str, Report]:
    """Reports for parameters this fit does not move at all (``fixed``, with why)."""
    out = {}
    for p in params:
        v = _natural(p, p.value(base))
        out[p.key] = Report(p.key, p.group, v, v, "fixed", why)
    return out
