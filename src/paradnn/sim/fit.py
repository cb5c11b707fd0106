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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from paradnn import families
from paradnn.attempts import choose
from paradnn.errors import ABSENT, ConfigError
from paradnn.records import Status
from paradnn.sim import identify
from paradnn.sim.chip import Chip
from paradnn.sim.hostprofile import HostProfile
from paradnn.sim.identify import REGIMES, Report
from paradnn.sim.stepparams import FITTED, StepParams
from paradnn.sim.steptime import Plan, build_plan, evaluate, params_of

HOLDOUT_PERCENT = 30
CACHE_GAIN_MAX = identify.BOUNDS["cache_gain"][1]
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
        if int(r.get("procs") or 1) > 1 or not families.analytic(r["family"]):
            continue  # a model of your own has no analytic description to fit
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
    return families.get(family).config(dict(cfg))


SPARE_ROWS = 2  # an extra parameter is freed only while fitted rows exceed free ones by this


def default_free(chip: Chip, base: StepParams, data: list[Sample]) -> tuple[str, ...]:
    """What a sweep may fit at most: the four GEMM/overhead parameters (and E per precision)
    always; then, while the fitted rows outnumber the free parameters by `SPARE_ROWS` (a fit
    keeps residual freedom; a small sweep is not fitted exactly): the host profile's scale where
    host and device are two timelines (a GPU: on a CPU the host's per-op cost and the
    per-kernel overhead are one serial cost, and the profile is taken as measured), the
    convolutions' efficiency where the sweep has convolutions, and the cache gain where the
    chip has a cache term and the sweep has working sets on both sides of the cache (else gain
    and bandwidth are one number). Of these, `fit` moves only what the runs identify
    (`sim.identify`)."""
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


def _why_fixed(name: str, chip: Chip, base: StepParams, data: list[Sample]) -> str:
    few = f"too few runs ({len(data)}) to free it beside the other parameters"
    if name == "host_scale":
        if chip.platform.kind != "gpu":
            return "one serial timeline on this device: the host profile is taken as measured"
        return few
    if name == "conv_efficiency":
        if not any(s.plan.conv is not None and s.plan.conv.any() for s in data):
            return "no convolution in the sweep"
        return few
    if name == "cache_gain":
        if not base.cache_bytes:
            return "this chip has no cache term"
        sets = [float(np.max(s.plan.bytes / np.maximum(s.plan.kernels, 1.0))) for s in data]
        if not (sets and min(sets) < base.cache_bytes < max(sets)):
            return "no working sets on both sides of the cache"
        return few
    return "not freed for this fit"


@dataclass(frozen=True)
class FitResult:
    params: StepParams
    precisions: tuple[str, ...]
    fitted_runs: int
    holdout_runs: int
    holdout_percent: int
    cost: float
    status: str
    rows: pd.DataFrame  # every sample: measured, predicted, ape, split, regime
    # per parameter: what the runs said about it (`sim.identify.Report`), and the rounds of
    # regime classification the staged fit took
    identified: dict[str, Report] = field(default_factory=dict)
    rounds: int = 0

    def regime_counts(self) -> dict[str, int]:
        """Fitted runs per regime."""
        fitted = self.rows[self.rows["split"] == "fit"] if len(self.rows) else self.rows
        return {r: int((fitted["regime"] == r).sum()) for r in REGIMES} if len(fitted) else {}


def fit(
    chip: Chip,
    data: list[Sample],
    *,
    base: StepParams | None = None,
    source: str = "fitted",
    holdout: int = HOLDOUT_PERCENT,
    free: tuple[str, ...] | None = None,
) -> FitResult:
    """The staged fit of `sim.identify` on the log step time of the ``fit`` samples: host
    parameters from host-bound runs, device parameters from device-bound ones, each moved only
    where the runs identify it; every sample predicted with the result (the held-out ones were
    not seen) and classified by regime. ``free``: the parameters it may fit (names of
    `stepparams.FITTED`; None: `default_free` for the chip); the others stay at ``base``."""
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
    convs = sorted({s.precision for s in train if s.plan.conv is not None and s.plan.conv.any()})
    names = default_free(chip, sp, train) if free is None else free
    for name in names:
        if name not in FITTED:
            raise ConfigError("free", name, "must be one of " + ", ".join(FITTED))
    if not sp.cache_bytes:
        names = tuple(n for n in names if n != "cache_gain")
    allowed = identify.expand(names, precisions, convs)
    bw = chip.mem_bandwidth

    def predict(p: StepParams, idx: Sequence[int], samples: list[Sample] = train) -> np.ndarray:
        return np.array([evaluate(samples[i].plan, p, bw).total_s for i in idx])

    staged = identify.fit_staged(predict, [s.measured_s for s in train], sp, allowed)
    reports = dict(staged.reports)
    left = [n for n in FITTED if n not in names]
    fixed = identify.expand(
        [n for n in left if n not in ("cache_gain",) or sp.cache_bytes],
        precisions,
        convs,
    )
    for prm in fixed:
        why = _why_fixed(prm.name, chip, sp, train)
        reports.setdefault(prm.key, identify.fixed_reports(sp, [prm], why)[prm.key])
    fitted = replace(
        staged.params, source=f"{source}; {len(train)} runs fitted, split by config hash"
    )
    every = list(range(len(data)))

    def predict_all(p: StepParams, idx: Sequence[int]) -> np.ndarray:
        return predict(p, idx, data)

    regime = identify.regimes(predict_all, fitted, every)
    rows = []
    for s, reg in zip(data, regime, strict=True):
        pred = evaluate(s.plan, fitted, bw).total_s
        rows.append(
            {
                "family": s.family,
                "config": json.dumps(s.config, sort_keys=True),
                "precision": s.precision,
                "device_name": s.device_name,
                "split": s.split,
                "regime": reg,
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
        cost=staged.cost,
        status=staged.status,
        rows=pd.DataFrame(rows),
        identified=reports,
        rounds=staged.rounds,
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
        header += identified_lines(result)
    tiles = ""
    if p.tiles:
        tiles = ", ".join(
            f"{k} = [{', '.join(f'[{t[0]}, {t[1]}]' for t in v)}]" for k, v in p.tiles.items()
        )
    conv = ", ".join(f"{k} = {v:.4g}" for k, v in p.conv_efficiency.items())
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
        tile = ", ".join(f"{k} = [{v[0]}, {v[1]}]" for k, v in p.tile.items())
        lines.append(f"tile = {{ {tile} }}")
    if tiles:
        lines.append(f"tiles = {{ {tiles} }}")
    if p.units:
        lines.append(f"units = {p.units}")
    lines += [
        f"fast_conv = {p.fast_conv:.6g}",
        f"host_s_per_step = {p.host_s_per_step:.6g}",
        f"host_s_per_example = {p.host_s_per_example:.6g}",
        f"sync_latency_s = {p.sync_latency_s:.6g}",
        f"tc_align = {p.tc_align}",
        f"tc_fallback = {p.tc_fallback:.6g}",
        f"tc_rule = {json.dumps(p.tc_rule)}",
        f"align_exponent = {p.align_exponent:.6g}",
        f"narrow_kernel = {p.narrow_kernel:.6g}",
        f"host_scale = {p.host_scale:.6g}",
        f"conv_efficiency = {{ {conv} }}",
        f"conv_layout = {json.dumps(p.conv_layout)}",
        *([f"cache_bytes = {p.cache_bytes:.6g}"] if p.cache_bytes else []),
        f"cache_gain = {p.cache_gain:.6g}",
        f"source = {json.dumps(p.source)}",
        "",
    ]
    return "\n".join(lines)


def identified_lines(result: Any) -> list[str]:
    """The chip file's comment lines on what the runs identified: the fitted runs per regime,
    then one line per parameter (`identify.Report.line`)."""
    reports = getattr(result, "identified", None) or {}
    if not reports:
        return []
    counts = result.regime_counts() if hasattr(result, "regime_counts") else {}
    out = ["What the runs identified (sim/identify.py; 95 % intervals from the Jacobian):"]
    if counts:
        out.append("fitted runs by regime: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    out += [f"  {r.line()}" for _, r in sorted(reports.items())]
    return out


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
