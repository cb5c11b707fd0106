"""Fit a device's step-time parameters (`stepparams.FITTED`: per-kernel overhead, the
efficiency-curve constants E_prec and k_half, the achieved share of the memory bandwidth, the
host profile's scale and, where the chip has a cache term, the cache's bandwidth gain) from a
measured sweep, and check them on configs they were not fitted on.

The split is by config: a run's config hash (sha256 of family, precision and the sorted config)
puts it in the held-out part when its first 8 hex digits mod 100 fall below ``holdout`` percent.
So the split is the same on every machine and in every re-run, and a config never sits on both
sides. The fit is `scipy.optimize.least_squares` on ``log(predicted) − log(measured)`` (a
relative error, so a 10 ms and a 10 s run weigh the same) over the fitted part only, with a
soft-L1 loss so that a few noisy runs (a shared machine) do not pull the parameters. Tile, units,
fast convolution, the cache size and the host/input term are not fitted: they stay as the base
parameters say. The host profile (`hostprofile.HostProfile`: the one the caller passes, else the
defaults for the device's kind) is fitted through one factor, ``host_scale``.

Torch-free and store-free: the caller passes the runs frame and the ceilings rows.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from paradnn.attempts import choose
from paradnn.errors import ABSENT, ConfigError
from paradnn.records import Status
from paradnn.sim.chip import Chip
from paradnn.sim.hostprofile import HostProfile
from paradnn.sim.stepparams import FITTED, StepParams
from paradnn.sim.steptime import Plan, build_plan, evaluate, params_of

HOLDOUT_PERCENT = 30
CACHE_GAIN_MAX = 16.0  # cache ÷ DRAM bandwidth: L2/L3 reach a few times DRAM, not more
KIND = "prediction"


def config_hash(family: str, precision: str, config: Mapping[str, Any]) -> str:
    text = json.dumps([family, precision, dict(sorted(config.items()))], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def split_of(family: str, precision: str, config: Mapping[str, Any], holdout: int) -> str:
    """ "holdout" or "fit": the config hash's first 8 hex digits mod 100 < ``holdout``."""
    return (
        "holdout" if int(config_hash(family, precision, config)[:8], 16) % 100 < holdout else "fit"
    )


@dataclass(frozen=True)
class Sample:
    family: str
    config: dict[str, Any]
    precision: str
    optimizer: str
    device_name: str | None
    measured_s: float
    split: str
    plan: Plan


def _ok_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """Each config's chosen attempt (paradnn.attempts.choose, as compare and the report) where
    it finished ok with a step time."""
    frame = choose(frame)
    return frame[(frame["status"] == Status.OK) & frame["step_time_s"].notna()]


STATISTICS = {"median": "step_time_s", "min": "step_time_min_s"}


def samples(
    frame: pd.DataFrame,
    chip: Chip,
    *,
    holdout: int = HOLDOUT_PERCENT,
    base: StepParams | None = None,
    statistic: str = "median",
    host: HostProfile | None = None,
) -> list[Sample]:
    """One sample per ok run of ``frame`` the chip has a peak for (single-process runs only).
    ``statistic``: the measured step time to fit, the median sample (the stored step time) or
    the fastest sample (closer to an unloaded machine's step when the machine is shared).
    ``host``: the host profile the runs' host had (None: the defaults for the chip's kind)."""
    if statistic not in STATISTICS:
        raise ConfigError("--statistic", statistic, "must be one of " + ", ".join(STATISTICS))
    column = STATISTICS[statistic]
    sp = base or params_of(chip)
    out = []
    for r in _ok_runs(frame).to_dict("records"):
        if chip.platform.peak(r["precision"]) is None:
            continue
        if int(r.get("procs") or 1) > 1:
            continue
        cfg = json.loads(r["config"]) if isinstance(r["config"], str) else dict(r["config"])
        opt = r.get("optimizer") or "rmsprop"
        policy = r.get("policy") if isinstance(r.get("policy"), str) else "mixed"
        plan = build_plan(
            r["family"],
            _cfg(r["family"], cfg),
            chip,
            r["precision"],
            opt,
            sp,
            host=host,
            policy=policy,
        )
        out.append(
            Sample(
                family=r["family"],
                config=cfg,
                precision=r["precision"],
                optimizer=opt,
                device_name=r.get("device_name"),
                measured_s=float(r.get(column) or r["step_time_s"]),
                split=split_of(r["family"], r["precision"], cfg, holdout),
                plan=plan,
            )
        )
    return out


def _cfg(family: str, cfg: Mapping[str, Any]) -> Any:
    from paradnn import families

    return families.get(family).config(dict(cfg))


# x = log of: kernel_overhead_s, k_half + 1, bw_efficiency, host_scale, cache_gain,
# conv_efficiency, then E per precision.
_LO = [math.log(1e-8), 0.0, math.log(1e-3), math.log(1e-2), 0.0, math.log(1e-2)]
_HI = [math.log(1e-1), math.log(1e5), 0.0, math.log(1e2), math.log(CACHE_GAIN_MAX), 0.0]
_N = len(_LO)
_X_NAMES = (
    "kernel_overhead_s",
    "k_half",
    "bw_efficiency",
    "host_scale",
    "cache_gain",
    "conv_efficiency",
)


SPARE_ROWS = 2  # an extra parameter is freed only while fitted rows exceed free ones by this


def default_free(chip: Chip, base: StepParams, data: list[Sample]) -> tuple[str, ...]:
    """What a sweep can pin down: the four GEMM/overhead parameters (and E per precision)
    always; then, while the fitted rows outnumber the free parameters by `SPARE_ROWS` (a fit
    keeps residual freedom; a small sweep is not fitted exactly): the host profile's scale where
    host and device are two timelines (a GPU: on a CPU the host's per-op cost and the
    per-kernel overhead are one serial cost, and the profile is taken as measured), the
    convolutions' efficiency where the sweep has convolutions, and the cache gain where the
    chip has a cache term and the sweep has working sets on both sides of the cache (else gain
    and bandwidth are one number)."""
    free = ["kernel_overhead_s", "efficiency", "k_half", "bw_efficiency"]
    count = 3 + len({s.precision for s in data})
    extra = []
    if chip.platform.kind == "gpu":
        extra.append("host_scale")
    if any(s.plan.conv is not None and s.plan.conv.any() for s in data):
        extra.append("conv_efficiency")
    if base.cache_bytes:
        sets = [float(np.max(s.plan.bytes / np.maximum(s.plan.kernels, 1.0))) for s in data]
        if sets and min(sets) < base.cache_bytes < max(sets):
            extra.append("cache_gain")
    for name in extra:
        if len(data) < count + 1 + SPARE_ROWS:
            break
        free.append(name)
        count += 1
    return tuple(free)


def _params(x: np.ndarray, precisions: list[str], base: StepParams) -> StepParams:
    eff = dict(base.efficiency)
    eff.update({p: float(math.exp(v)) for p, v in zip(precisions, x[_N:], strict=True)})
    return replace(
        base,
        kernel_overhead_s=float(math.exp(x[0])),
        k_half=float(math.exp(x[1]) - 1.0),
        bw_efficiency=float(math.exp(x[2])),
        host_scale=float(math.exp(x[3])),
        cache_gain=float(math.exp(x[4])) if base.cache_bytes else base.cache_gain,
        conv_efficiency=float(math.exp(x[5])),
        efficiency=eff,
    )


@dataclass(frozen=True)
class FitResult:
    params: StepParams
    precisions: tuple[str, ...]
    fitted_runs: int
    holdout_runs: int
    holdout_percent: int
    cost: float
    status: str
    rows: pd.DataFrame  # every sample: measured, predicted, ape, split


def fit(
    chip: Chip,
    data: list[Sample],
    *,
    base: StepParams | None = None,
    source: str = "fitted",
    holdout: int = HOLDOUT_PERCENT,
    free: tuple[str, ...] | None = None,
) -> FitResult:
    """Least squares on the log step time of the ``fit`` samples; every sample predicted with
    the result (the held-out ones were not seen). ``free``: the parameters fitted (names of
    `stepparams.FITTED`; None: `default_free` for the chip); the others stay at ``base``."""
    from scipy.optimize import least_squares

    sp = base or params_of(chip)
    train = [s for s in data if s.split == "fit"]
    if len(train) < 5:
        raise ConfigError(
            "--db",
            ABSENT,
            f"has {len(train)} runs to fit; a fit needs at least 5 ok single-process runs "
            "outside the held-out part: measure a "
            "larger sweep (`paradnn run --preset quick`)",
        )
    precisions = sorted({s.precision for s in train})
    x0 = [
        math.log(max(sp.kernel_overhead_s, 1e-8)),
        math.log(sp.k_half + 1.0),
        math.log(sp.bw_efficiency),
        math.log(sp.host_scale) if sp.host_scale > 0 else 0.0,
        math.log(max(sp.cache_gain, 1.0)),
        math.log(sp.conv_efficiency),
    ]
    x0 += [math.log(sp.eff(p)) for p in precisions]
    lo = _LO + [math.log(1e-3)] * len(precisions)
    hi = _HI + [0.0] * len(precisions)
    x0 = [min(max(v, a + 1e-9), b - 1e-9) for v, a, b in zip(x0, lo, hi, strict=True)]
    free = default_free(chip, sp, train) if free is None else free
    for name in free:
        if name not in FITTED:
            raise ConfigError("free", name, "must be one of " + ", ".join(FITTED))
    for i, name in enumerate(_X_NAMES):  # a fixed parameter: its bounds pinned around x0
        if name not in free:
            lo[i], hi[i] = x0[i] - 1e-12, x0[i] + 1e-12
    if "efficiency" not in free:
        for i in range(_N, len(x0)):
            lo[i], hi[i] = x0[i] - 1e-12, x0[i] + 1e-12
    bw = chip.mem_bandwidth
    meas = np.log([s.measured_s for s in train])

    def residuals(x: np.ndarray) -> np.ndarray:
        p = _params(x, precisions, sp)
        pred = np.array([evaluate(s.plan, p, bw).total_s for s in train])
        return np.log(pred) - meas

    res = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1)
    fitted = _params(res.x, precisions, sp)
    fitted = replace(fitted, source=f"{source}; {len(train)} runs fitted, split by config hash")
    rows = []
    for s in data:
        pred = evaluate(s.plan, fitted, bw).total_s
        rows.append(
            {
                "family": s.family,
                "config": json.dumps(s.config, sort_keys=True),
                "precision": s.precision,
                "device_name": s.device_name,
                "split": s.split,
                "measured_s": s.measured_s,
                "predicted_s": pred,
                "ape": abs(pred - s.measured_s) / s.measured_s,
                "kind": KIND,
            }
        )
    return FitResult(
        params=fitted,
        precisions=tuple(precisions),
        fitted_runs=len(train),
        holdout_runs=len(data) - len(train),
        holdout_percent=holdout,
        cost=float(res.cost),
        status=str(res.message),
        rows=pd.DataFrame(rows),
    )


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per family and split: runs and MdAPE (median absolute percentage error)."""
    out = []
    for (fam, split), g in rows.groupby(["family", "split"], sort=True):
        out.append(
            {
                "family": fam,
                "split": split,
                "runs": len(g),
                "mdape": float(g["ape"].median()),
                "mape": float(g["ape"].mean()),
                "kind": KIND,
            }
        )
    return pd.DataFrame(out)


def device_chip(
    frame: pd.DataFrame, ceilings: list[dict[str, Any]], device: str | None, platform: str | None
) -> tuple[Chip, str, pd.DataFrame]:
    """(chip, device name, that device's runs): ``platform`` if given, else the device's
    measured ceilings, else its datasheet entry. ``device`` picks one of several devices."""
    from paradnn.sim import chip as chips
    from paradnn.sim.fidelity import device_chips

    if frame.empty:
        raise ConfigError("--db", ABSENT, "holds no runs: run `paradnn run` first")
    names = sorted(set(frame["device_name"].dropna()))
    if device is None:
        if len(names) != 1:
            raise ConfigError(
                "--device", ABSENT, "required: the database holds " + ", ".join(names)
            )
        device = names[0]
    if device not in names:
        raise ConfigError("--device", device, "must be one of " + ", ".join(names))
    mine = frame[frame["device_name"] == device]
    if platform:
        return chips.load(platform), device, mine
    found = device_chips(mine, ceilings).get(device)
    if found is None:
        raise ConfigError(
            "--db",
            device,
            "no chip describes this device: run `paradnn calibrate` on it, or pass --platform",
        )
    return found, device, mine


def chip_toml(chip: Chip, result: Any, device: str, header: list[str] | None = None) -> str:
    """A chip file (docs/platforms.md keys + the fitted [id.step] table) a user can keep.
    ``result``: a `FitResult` (or any result with ``params``); ``header``: its comment lines in
    place of the sweep's (`sim.opfit` says which ops were fitted)."""
    plat = chip.platform
    pid = "fitted-" + "".join(c if c.isalnum() else "-" for c in device.lower()).strip("-")
    pid = pid[:60] or "fitted"
    p = result.params
    peaks = ", ".join(f"{k} = {v:.6g}" for k, v in plat.peak_dense.items())
    eff = ", ".join(f"{k} = {v:.4g}" for k, v in p.efficiency.items())
    if header is None:
        header = [
            f"Fitted by `paradnn simulate fit` from measured runs of {device}.",
            f"{result.fitted_runs} runs fitted, {result.holdout_runs} held out "
            f"(config hash mod 100 < {result.holdout_percent}); peaks and bandwidth: "
            f"{chip.origin}.",
        ]
    lines = [
        *(f"# {h}" for h in header),
        f"[{pid}]",
        f"name = {json.dumps(device + ' (fitted step-time model)')}",
        f"vendor = {json.dumps(plat.vendor)}",
        f"kind = {json.dumps(plat.kind)}",
        f"peak_dense = {{ {peaks} }}",
        f"mem_bandwidth = {plat.mem_bandwidth:.6g}",
    ]
    if plat.memory_bytes is not None:
        lines.append(f"memory_bytes = {plat.memory_bytes:.6g}")
    lines += [
        f"notes = {json.dumps('peaks and bandwidth from ' + chip.origin)}",
        "",
        f"[{pid}.step]",
        f"kernel_overhead_s = {p.kernel_overhead_s:.6g}",
        f"efficiency = {{ {eff} }}",
        f"k_half = {p.k_half:.6g}",
        f"bw_efficiency = {p.bw_efficiency:.6g}",
    ]
    if p.tile:
        tiles = ", ".join(f"{k} = [{v[0]}, {v[1]}]" for k, v in p.tile.items())
        lines.append(f"tile = {{ {tiles} }}")
    if p.units:
        lines.append(f"units = {p.units}")
    lines += [
        f"fast_conv = {p.fast_conv:.6g}",
        f"host_s_per_step = {p.host_s_per_step:.6g}",
        f"host_s_per_example = {p.host_s_per_example:.6g}",
        f"sync_latency_s = {p.sync_latency_s:.6g}",
        f"tc_align = {p.tc_align}",
        f"tc_fallback = {p.tc_fallback:.6g}",
        f"host_scale = {p.host_scale:.6g}",
        f"conv_efficiency = {p.conv_efficiency:.6g}",
        *([f"cache_bytes = {p.cache_bytes:.6g}"] if p.cache_bytes else []),
        f"cache_gain = {p.cache_gain:.6g}",
        f"source = {json.dumps(p.source)}",
        "",
    ]
    return "\n".join(lines)


def heldout_data(data: Any) -> pd.DataFrame:
    """For the report: per device that ceilings or the platform database describe, fit the
    step-time parameters on its runs outside the held-out part and return the error per family
    on both parts (columns device_name, family, split, runs, mdape, mape, kind). ``data`` is
    `paradnn.analysis.frames.Data` (``runs`` and ``ceilings`` frames). Devices with fewer than 5
    runs to fit are left out."""
    from paradnn.sim.fidelity import device_chips

    runs = data.runs
    cols = ["device_name", "family", "split", "runs", "mdape", "mape", "kind"]
    if runs is None or not len(runs):
        return pd.DataFrame(columns=cols)
    ceilings = data.ceilings
    rows = ceilings.to_dict("records") if ceilings is not None and len(ceilings) else []
    out = []
    for name, chip in device_chips(runs, rows).items():
        mine = runs[runs["device_name"] == name]
        try:
            got = samples(mine, chip)
            if sum(s.split == "fit" for s in got) < 5 or not any(s.split == "holdout" for s in got):
                continue
            res = fit(chip, got)  # only the per-family errors leave: no source to name
        except ConfigError:
            continue
        s = summary(res.rows)
        s.insert(0, "device_name", name)
        out.append(s)
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)
