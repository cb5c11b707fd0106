"""Data-parallel scaling: speedup, efficiency, Karp–Flatt and an Amdahl fit (docs/scaling.md).

Torch-free, usable on its own:

    >>> karp_flatt(1.6, 2)          # e = (1/S − 1/N) / (1 − 1/N)
    0.25
    >>> amdahl_fit([2, 4], [1.6, 2.5]).serial_fraction   # doctest: +SKIP

Over stored runs (`efficiency_table`), a run of N > 1 ranks is matched to the N = 1 run of the
same family, config, precision, optimizer, mode, platform and threads per rank (so each rank
had the device the single process had); neither is stored with the other, so efficiency is
computed here, when both are stored. Speedup is throughput (examples/s over every rank) over
the single process's, which is `T(1)/T(N)` for strong scaling (the batch split over N ranks)
and `N·T(1)/T(N)` for weak scaling (each rank a full batch); efficiency = speedup / N.
Its interval comes from the two step times' 95% CIs (the extreme ratios: conservative).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from paradnn import formatting as U
from paradnn import rounding
from paradnn.analysis.frames import Data, choose
from paradnn.records import Status

KF_RULE = "e = (1/S − 1/N) / (1 − 1/N), S = speedup over the N = 1 run (Karp & Flatt 1990)"
MATCH = ("family", "config_key", "precision", "optimizer", "mode", "platform")


def karp_flatt(speedup: float, n: int) -> float:
    """The experimentally determined serial fraction e = (1/S − 1/N)/(1 − 1/N); nan for N ≤ 1
    or a speedup that is not positive."""
    if n <= 1 or not speedup or speedup <= 0 or not math.isfinite(speedup):
        return math.nan
    return (1 / speedup - 1 / n) / (1 - 1 / n)


def amdahl_speedup(n: float | np.ndarray, serial: float) -> float | np.ndarray:
    """Amdahl's law: S(N) = 1 / (f + (1 − f)/N) for a serial fraction f."""
    return 1.0 / (serial + (1.0 - serial) / np.asarray(n, dtype=float))


@dataclass(frozen=True)
class AmdahlFit:
    serial_fraction: float | None  # f in [0, 1]
    ci_low: float | None
    ci_high: float | None
    points: int  # speedups with N > 1 that entered the fit
    method: str  # how f and its interval were found
    reason: str | None = None  # why there is no fit (or no interval)

    def predict(self, n: float) -> float | None:
        if self.serial_fraction is None:
            return None
        return float(amdahl_speedup(n, self.serial_fraction))


def amdahl_fit(
    procs: Sequence[float],
    speedups: Sequence[float],
    low: Sequence[float] | None = None,
    high: Sequence[float] | None = None,
    level: float = 0.95,
) -> AmdahlFit:
    """Least-squares fit of Amdahl's serial fraction over the speedups at N > 1.

    Two or more N: scipy's curve_fit (f bounded to [0, 1]) and a t interval from its covariance
    (df = points − 1). One N: f is that point's Karp–Flatt value, and its interval maps the
    speedup's interval (`low`, `high`) through Karp–Flatt (monotone), when given."""
    from scipy import optimize, stats

    pts = [
        (float(n), float(s), None if low is None else low[i], None if high is None else high[i])
        for i, (n, s) in enumerate(zip(procs, speedups, strict=True))
        if n > 1 and s is not None and math.isfinite(s) and s > 0
    ]
    if not pts:
        return AmdahlFit(None, None, None, 0, "none", "no speedup at N > 1 to fit")
    if len({n for n, *_ in pts}) == 1:
        n = pts[0][0]
        f = min(1.0, max(0.0, float(np.mean([karp_flatt(s, int(n)) for _, s, _, _ in pts]))))
        lo_s = [p[2] for p in pts if p[2] is not None]
        hi_s = [p[3] for p in pts if p[3] is not None]
        if not lo_s or not hi_s:
            return AmdahlFit(f, None, None, len(pts), "karp-flatt at one N", "no speedup interval")
        lo = min(1.0, max(0.0, karp_flatt(max(hi_s), int(n))))
        hi = min(1.0, max(0.0, karp_flatt(min(lo_s), int(n))))
        return AmdahlFit(f, lo, hi, len(pts), "karp-flatt at one N, its speedup CI mapped")
    ns = np.array([p[0] for p in pts])
    ss = np.array([p[1] for p in pts])
    (f,), cov = optimize.curve_fit(amdahl_speedup, ns, ss, p0=[0.1], bounds=([0.0], [1.0]))
    dof = len(pts) - 1
    se = float(np.sqrt(cov[0, 0])) if np.isfinite(cov[0, 0]) else math.nan
    if not math.isfinite(se):
        return AmdahlFit(float(f), None, None, len(pts), "curve_fit", "no covariance")
    t = float(stats.t.ppf(0.5 + level / 2, dof))
    lo, hi = max(0.0, f - t * se), min(1.0, f + t * se)
    return AmdahlFit(float(f), lo, hi, len(pts), f"curve_fit, t interval (df = {dof})")


def _runs(data: Data | pd.DataFrame) -> pd.DataFrame:
    runs = data.runs if isinstance(data, Data) else data
    if not len(runs):
        return runs
    runs = choose(runs)
    runs = runs[runs["status"] == Status.OK].copy()
    if "procs" not in runs:
        runs["procs"] = 1
    runs["procs"] = pd.to_numeric(runs["procs"], errors="coerce").fillna(1).astype(int)
    for col in ("strategy", "scaling", "rank_threads", "examples_per_step"):
        if col not in runs:
            runs[col] = None
    # each rank's device: its threads (a run of N ranks records threads per rank)
    runs["rank_device"] = runs["threads"].astype("Int64").astype(str)
    return runs


def efficiency_table(data: Data | pd.DataFrame) -> pd.DataFrame:
    """One row per stored run of N ≥ 1 ranks that has an N = 1 baseline: speedup (with its
    interval), efficiency, Karp–Flatt e, and the run's measured parallel columns."""
    runs = _runs(data)
    cols = [
        "family", "config_key", "precision", "platform", "strategy", "scaling", "procs",
        "threads", "step_time_s", "examples_per_s", "speedup", "speedup_low", "speedup_high",
        "efficiency", "karp_flatt", "compute_nosync_s", "allreduce_s", "allreduce_busbw",
        "overlap_frac", "rank_flops", "base_flops", "utilization", "batch",
        "base_step_time_s", "examples_ratio", "allreduce_bytes", "allreduce_ladder",
        "compute_inflation", "comm_exposed_frac",
    ]  # fmt: skip
    if not len(runs) or not (runs["procs"] > 1).any():
        return pd.DataFrame(columns=cols)
    key = [*MATCH, "rank_device"]
    base = runs[runs["procs"] == 1].drop_duplicates(key, keep="last").set_index(key)
    out = []
    for _, r in runs[runs["procs"] > 1].iterrows():
        k = tuple(r[c] for c in key)
        if k not in base.index:
            continue
        b = base.loc[k]
        g = (r["examples_per_step"] or 0) / (b["examples_per_step"] or 1)
        s = g * b["step_time_s"] / r["step_time_s"]
        lo = hi = None
        if _all(b["step_time_ci_low_s"], b["step_time_ci_high_s"], r["step_time_ci_low_s"]):
            lo = g * b["step_time_ci_low_s"] / r["step_time_ci_high_s"]
            hi = g * b["step_time_ci_high_s"] / r["step_time_ci_low_s"]
        n = int(r["procs"])
        util = r.get("achieved_flops")
        base_util = b.get("achieved_flops")
        out.append(
            {
                **{c: r[c] for c in ("family", "config_key", "precision", "platform")},
                "strategy": r["strategy"],
                "scaling": r["scaling"],
                "procs": n,
                "threads": r["threads"],
                "step_time_s": r["step_time_s"],
                "examples_per_s": r["examples_per_s"],
                "speedup": s,
                "speedup_low": lo,
                "speedup_high": hi,
                "efficiency": s / n,
                "karp_flatt": karp_flatt(s, n),
                "compute_nosync_s": r.get("compute_nosync_s"),
                "allreduce_s": r.get("allreduce_s"),
                "allreduce_busbw": r.get("allreduce_busbw"),
                "overlap_frac": r.get("overlap_frac"),
                # Fig. 4's axes: achieved FLOP/s of one rank at N against the single process's
                "rank_flops": util / n if _all(util) else None,
                "base_flops": base_util if _all(base_util) else None,
                "utilization": (util / n / base_util) if _all(util, base_util) else None,
                "batch": _batch(r.get("config")),
                "base_step_time_s": b["step_time_s"],
                "examples_ratio": g,  # global examples per step at N over those at N = 1
                "allreduce_bytes": r.get("allreduce_bytes"),
                "allreduce_ladder": _detail(r).get("allreduce_ladder"),
                # where the loss is: a rank's step without sync against the single process's
                # step for the same per-rank work (> 1: the ranks' compute itself got slower,
                # e.g. cores shared with other work), and the step's share past that compute
                "compute_inflation": _ratio(r.get("compute_nosync_s"), b["step_time_s"] * g / n),
                "comm_exposed_frac": _ratio(
                    (r["step_time_s"] - r["compute_nosync_s"])
                    if _all(r.get("compute_nosync_s"))
                    else None,
                    r["step_time_s"],
                ),
            }
        )
    return pd.DataFrame(out, columns=cols)


def baselines(data: Data | pd.DataFrame) -> pd.DataFrame:
    """The N = 1 rows the table matched against (for the figure's N = 1 points)."""
    runs = _runs(data)
    return runs[runs["procs"] == 1] if len(runs) else runs


def fits(table: pd.DataFrame) -> pd.DataFrame:
    """An Amdahl fit per (family, config, precision, platform, strategy, scaling) over N."""
    cols = ["family", "config_key", "precision", "platform", "strategy", "scaling"]
    rows = []
    if not len(table):
        return pd.DataFrame(
            columns=[*cols, "procs", "serial_fraction", "ci_low", "ci_high", "method", "reason"]
        )
    for k, g in table.groupby(cols, dropna=False, sort=True):
        fit = amdahl_fit(
            g["procs"].tolist(),
            g["speedup"].tolist(),
            g["speedup_low"].tolist() if g["speedup_low"].notna().all() else None,
            g["speedup_high"].tolist() if g["speedup_high"].notna().all() else None,
        )
        rows.append(
            {
                **dict(zip(cols, k, strict=True)),
                "procs": ",".join(str(n) for n in sorted(g["procs"].unique())),
                "serial_fraction": fit.serial_fraction,
                "ci_low": fit.ci_low,
                "ci_high": fit.ci_high,
                "method": fit.method,
                "reason": fit.reason,
            }
        )
    return pd.DataFrame(rows)


# Seed 000 §4.3 (TPU v2, 1 against 8 cores, the largest batch of Fig. 4): the 90th percentile
# of the non-parallel fraction, as published (not measured here).
SEED_SERIAL_P90 = {"fc": 0.16, "cnn": 0.088}
SERIAL_COLUMNS = [
    "family", "runs", "median", "p90", "max", "largest_batch", "runs_at_largest_batch",
    "p90_at_largest_batch", "seed_p90",
]  # fmt: skip


def serial_percentiles(table: pd.DataFrame) -> pd.DataFrame:
    """Per family and over all: the Karp–Flatt serial fraction's median, 90th percentile
    (linear interpolation) and maximum over the runs of N > 1, and its 90th percentile over
    the runs at the family's largest batch size (seed 000 §4.3 reports that one: 16% for FC,
    8.8% for CNN), with the seed's published figure beside it."""
    if not len(table):
        return pd.DataFrame(columns=SERIAL_COLUMNS)
    t = table.assign(karp_flatt=pd.to_numeric(table["karp_flatt"], errors="coerce"))
    t = t[t["karp_flatt"].notna()]
    rows = []
    groups = [(str(f), g) for f, g in t.groupby("family", sort=True)]
    if len(groups) > 1:
        groups.append(("all", t))
    for fam, g in groups:
        e = g["karp_flatt"]
        batch = pd.to_numeric(g["batch"], errors="coerce")
        top = batch.max() if batch.notna().any() else None
        at_top = e[batch == top] if top is not None else e.iloc[0:0]
        rows.append(
            {
                "family": fam,
                "runs": len(e),
                "median": float(e.median()),
                "p90": float(e.quantile(0.9)),
                "max": float(e.max()),
                # 'all' mixes families' batch sizes: its largest batch says nothing
                "largest_batch": int(top) if top is not None and fam != "all" else None,
                "runs_at_largest_batch": len(at_top) if fam != "all" else None,
                "p90_at_largest_batch": float(at_top.quantile(0.9))
                if len(at_top) and fam != "all"
                else None,
                "seed_p90": SEED_SERIAL_P90.get(fam),
            }
        )
    return pd.DataFrame(rows, columns=SERIAL_COLUMNS)


def _all(*values: object) -> bool:
    return all(v is not None and not (isinstance(v, float) and math.isnan(v)) for v in values)


def _ratio(a: object, b: object) -> float | None:
    return float(a) / float(b) if _all(a, b) and float(b) > 0 else None  # type: ignore[arg-type]


def _detail(row: pd.Series) -> dict:
    detail = row.get("parallel")
    return detail if isinstance(detail, dict) else {}


def _batch(config: object) -> int | None:
    if isinstance(config, dict):
        return config.get("batch")
    return None


# -- seed 000, observation 3 -----------------------------------------------------------------
OBS3_CLAIM = (
    "Multi-chip overhead is non-negligible: utilization falls from one device to several "
    "(the paper adds: more for FC than for CNN, less at larger batch sizes; stated as evidence)"
)
OBS3_SOURCE = "seed 000 §4.3, Fig. 4, observation 3"
OBS3_RULE = (
    "holds when the median Karp–Flatt serial fraction over the runs of N > 1 is above 0.05 "
    "(more than 5% of a step does not parallelize) over its whole 95% bootstrap CI, does "
    "not hold when the CI's upper end is at or below 0.05, inconclusive when it straddles "
    "0.05; where FC and CNN both "
    "ran, FC's median e is stated beside CNN's; where a config ran at several batch sizes "
    "(all else equal), Spearman's ρ(batch, e) over those is stated (the paper: negative)"
)
SERIAL_THRESHOLD = 0.05


def _batch_rho(table: pd.DataFrame) -> float | None:
    """Spearman's ρ between batch and e, pooled over groups that differ in batch alone
    (same family, other config fields, N, strategy, scaling), each with ≥ 3 batch sizes."""
    from scipy.stats import spearmanr

    t = table.dropna(subset=["batch", "karp_flatt"]).copy()
    if not len(t):
        return None
    t["rest"] = t["config_key"].map(_without_batch)
    keys = ["family", "rest", "procs", "strategy", "scaling", "precision", "platform"]
    ranked = []
    for _, g in t.groupby(keys, dropna=False):
        if g["batch"].nunique() >= 3:
            ranked.append(g[["batch", "karp_flatt"]].rank())
    if not ranked:
        return None
    both = pd.concat(ranked)
    return float(spearmanr(both["batch"], both["karp_flatt"]).statistic)


def _without_batch(key: object) -> str:
    import json

    try:
        cfg = json.loads(key) if isinstance(key, str) else dict(key)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(key)
    cfg.pop("batch", None)
    return json.dumps(cfg, sort_keys=True)


@dataclass(frozen=True)
class Obs3:
    """Observation 3's verdict with the number it was decided on (findings.CHECKS shows it)."""

    verdict: str
    evidence: str
    rule: str
    median: float | None = None  # median Karp–Flatt e over the runs of N > 1
    ci_low: float | None = None  # its 95% bootstrap CI
    ci_high: float | None = None
    n: int = 0  # runs of N > 1


def observation3(data: Data | pd.DataFrame) -> tuple[str, str, str]:
    """(verdict, evidence, rule) for seed 000's observation 3."""
    r = observation3_result(data)
    return r.verdict, r.evidence, r.rule


def observation3_result(data: Data | pd.DataFrame) -> Obs3:
    """Seed 000's observation 3: three-way on the median Karp–Flatt e's bootstrap CI."""
    table = efficiency_table(data)
    e = table["karp_flatt"].dropna() if len(table) else pd.Series(dtype=float)
    if not len(e):
        runs = _runs(data)
        if len(runs) and (runs["procs"] > 1).any():
            return Obs3("not enough data", "runs of N > 1 have no N = 1 run to match", OBS3_RULE)
        return Obs3("untestable", "no data-parallel runs (paradnn scale … --procs 1,2)", OBS3_RULE)
    med = float(e.median())
    rng = np.random.default_rng(0)
    boots = [float(np.median(rng.choice(e.to_numpy(), len(e)))) for _ in range(1000)]
    lo, hi = (float(x) for x in np.percentile(boots, [2.5, 97.5]))
    ev = [
        f"median e = {med:.3f} [{lo:.3f}, {hi:.3f}] over {len(e)} runs of N > 1 "
        f"(median efficiency {table['efficiency'].median():.0%})"
    ]
    infl, comm = table["compute_inflation"].dropna(), table["comm_exposed_frac"].dropna()
    if len(infl) and len(comm):  # what the overhead is made of: slower ranks or communication
        ev.append(
            f"median compute inflation {infl.median():.2f}× (a rank's no_sync step over the "
            f"single process's), step past compute {comm.median():.0%}"
        )
    by_fam = table.groupby("family")["karp_flatt"].median()
    if {"fc", "cnn"} <= set(by_fam.index):
        ev.append(f"FC median e {by_fam['fc']:.3f} vs CNN {by_fam['cnn']:.3f}")
    rho = _batch_rho(table)
    if rho is not None:
        ev.append(f"ρ(batch, e) = {U.signed(rho)} over configs run at several batch sizes")
    t = SERIAL_THRESHOLD  # an end within rounding of it is on it (as findings.judge)
    if rounding.above(lo, t, lo, hi, 1.0):
        verdict = "holds"
    elif hi <= t or rounding.equal(hi, t, lo, hi, 1.0):
        verdict = "does not hold"
    else:
        verdict = "inconclusive"
        ev.append("the CI straddles the 5% threshold")
    return Obs3(verdict, "; ".join(ev), OBS3_RULE, med, lo, hi, len(e))


__all__ = [
    "AmdahlFit",
    "Obs3",
    "amdahl_fit",
    "amdahl_speedup",
    "baselines",
    "efficiency_table",
    "fits",
    "karp_flatt",
    "observation3",
    "observation3_result",
    "serial_percentiles",
]
