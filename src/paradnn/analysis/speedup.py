"""Speedups between two groups of runs matched by configuration (the paper's Figures 6-10, 12),
with a confidence interval for each and a call: faster, slower or no detectable change.

A group is the runs whose `by` column has one value: a platform, a precision, an execution mode,
a torch version, a database, a host, a thread count, or an attempt of the same run key. Runs
pair up when everything else that defines the workload is equal (family, config and the other
identity columns), so "bf16 vs fp32" never compares different devices and "H100 vs CPU" never
compares different precisions.

Uncertainty comes from the raw samples every run stores (seconds per step). For one config the
speedup is proportional to median(step times of A) / median(step times of B) whatever the metric
(a throughput is a per-config constant over the step time), so its interval is a percentile
bootstrap of that ratio of medians, the two sides resampled independently (RESAMPLES replicates,
fixed seed: the same data gives the same interval). The geometric mean's interval is a two-level
bootstrap: each replicate draws the configs with replacement and, for each drawn config, one of
its own bootstrap replicates, so it covers both the spread between configs and the noise within
each. A config without enough samples falls back to the runs' stored CIs of the median
(ratio of the interval ends: conservative), else it has no interval.

Noisy runs (analysis.frames.add_quality) are left out by default and counted.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from paradnn import rounding
from paradnn.analysis.frames import Data, by_count, choose, noisy_ok, reason_counts
from paradnn.axes import AXES
from paradnn.errors import ConfigError
from paradnn.records import COMPARE_BY, METRICS, Status

# What a group may be defined by (records.COMPARE_BY), and what must otherwise be equal for
# two runs to pair.
BY = COMPARE_BY
ENGINE = ("mode", "backend")  # the columns `engine` names
PARALLEL = ("procs", "strategy", "scaling")  # comparing by procs pairs across all three
IDENTITY = ("family", "config_key", "platform", "precision", "mode", "optimizer")
HIGHER_IS_BETTER = METRICS
FASTER, SLOWER, NO_CHANGE, NO_INTERVAL = "faster", "slower", "no detectable change", "no interval"
RESAMPLES = 1000  # bootstrap replicates: the 2.5% and 97.5% quantiles to about ±0.5 percentile
MIN_SAMPLES = 5  # fewer raw samples on a side: no bootstrap (the stored CI, if any)
LEVEL = 0.95
SEED = 0
_CHUNK = 4_000_000  # resampled values held at once


@dataclass
class Comparison:
    by: str
    a: str
    b: str
    metric: str
    pairs: pd.DataFrame  # one row per matched config: identity, values, speedup, CI and call
    summary: pd.DataFrame  # per family and 'all': n, calls, geomean with CI, median, p90, range
    unmatched: dict[str, int]  # runs ok in one group whose config the other never ran ok
    failed: pd.DataFrame  # configs ok in one group and failed in the other (with the status)
    key: list[str] = field(default_factory=list)  # the identity columns pairs are matched on
    noisy_left_out: dict[str, int] = field(default_factory=dict)  # per group; 0 when kept
    noisy_reasons: dict[str, int] = field(default_factory=dict)  # reason -> noisy runs
    include_noisy: bool = False

    def as_dict(self) -> dict:
        """The object `compare --format json` prints (without its gate's rows): plain values,
        each table as a list of rows (NaN as null)."""
        from paradnn.formatting import plain

        return {
            "by": self.by,
            "a": self.a,
            "b": self.b,
            "metric": self.metric,
            "key": list(self.key),
            "compared": len(self.pairs),  # configs matched in both groups: what a gate rests on
            "unmatched": plain(self.unmatched),
            "noisy_left_out": plain(self.noisy_left_out),
            "noisy_reasons": plain(self.noisy_reasons),
            "include_noisy": self.include_noisy,
            "summary": plain(self.summary),
            "pairs": plain(self.pairs),
            "failed": plain(self.failed),
        }

    def overall(self) -> dict:
        row = self.summary[self.summary["family"] == "all"]
        return row.iloc[0].to_dict() if len(row) else {}

    def shown_identity(self) -> tuple[list[str], dict[str, str]]:
        """Identity columns that differ between pairs, and the value of those that do not."""
        cols = [c for c in self.key if c not in ("family", "config_key", "run_key")]
        varying, same = [], {}
        for c in cols:
            if c not in self.pairs:
                continue
            vals = self.pairs[c].astype(str).unique()
            if len(vals) > 1:
                varying.append(c)
            elif len(vals) == 1:
                same[c] = str(vals[0])
        return varying, same


def values(data: Data, by: str) -> list[str]:
    """The distinct values of a grouping column among ok runs, most common first (ties by
    name)."""
    _check_by(by)
    ok = data.ok
    if not len(ok):
        return []
    if by == "attempt":
        nums = sorted({int(v) for v in ok["attempt"].dropna()})
        return ["first", "latest", *(str(n) for n in nums)]
    if by not in ok:
        return []
    return [str(v) for v in by_count(ok[by].dropna().astype(str).value_counts()).index]


def compare(
    data: Data,
    by: str,
    a: str,
    b: str,
    metric: str = "examples_per_s",
    family: str | None = None,
    include_noisy: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Comparison:
    """Speedup of group `b` over group `a` for every configuration both ran successfully,
    each with a bootstrap confidence interval and a call (faster, slower, no detectable change).

    `by="attempt"` compares attempts of the same run key: `a` and `b` are attempt numbers,
    'first' or 'latest' (then only keys with several attempts pair)."""
    _check_by(by)
    if metric not in HIGHER_IS_BETTER:
        raise ConfigError("metric", metric, "one of " + ", ".join(HIGHER_IS_BETTER))
    runs = data.runs if by == "attempt" else choose(data.runs)
    if family is not None:
        if family not in set(runs["family"]):
            raise ConfigError("family", family, "a family with runs in the database")
        runs = runs[runs["family"] == family]
    have = values(data, by)
    for name, v in (("a", a), ("b", b)):
        if str(v) not in have:
            raise ConfigError(name, v, f"a {by} with ok runs: " + (", ".join(have) or "none"))
    if str(a) == str(b):
        raise ConfigError("b", b, f"a {by} other than a ({a})")
    if by == "attempt":
        ga, gb = _attempt(runs, str(a)), _attempt(runs, str(b))
    else:
        label = runs[by].astype(str)
        ga, gb = runs[label == str(a)], runs[label == str(b)]
    return _compared(by, a, b, ga, gb, runs, metric, include_noisy, resamples, seed)


def _compared(
    by: str,
    a: str,
    b: str,
    ga: pd.DataFrame,
    gb: pd.DataFrame,
    runs: pd.DataFrame,
    metric: str,
    include_noisy: bool,
    resamples: int,
    seed: int,
    key: list[str] | None = None,
) -> Comparison:
    """The comparison of two groups of runs, however they were drawn (a column's values, two
    attempts, a baseline and the newest runs)."""
    na, nb = noisy_ok(ga), noisy_ok(gb)
    reasons = reason_counts(pd.concat([ga, gb]))
    left_out = {str(a): 0, str(b): 0}
    if not include_noisy:
        left_out = {str(a): int(na.sum()), str(b): int(nb.sum())}
        ga, gb = ga[~na], gb[~nb]
    key = key if key is not None else _key(by, ga, gb)
    sa, sb = _per_config(ga, key, metric), _per_config(gb, key, metric)
    pairs = sa.merge(sb, on=key, suffixes=("_a", "_b"))
    if by == "attempt":  # 'first' and 'latest' of a key with one attempt are the same run
        pairs = pairs[pairs["attempt_a"] != pairs["attempt_b"]].reset_index(drop=True)
    better = HIGHER_IS_BETTER[metric]
    pairs["speedup"] = (
        pairs["value_b"] / pairs["value_a"] if better else pairs["value_a"] / pairs["value_b"]
    )
    log_reps = _intervals(pairs, resamples, seed)
    drop = ["params_b", "samples_a", "samples_b"]
    drop += [f"{c}_{s}" for c in ("t", "t_low", "t_high") for s in "ab"]
    if by != "attempt":
        drop += ["attempt_a", "attempt_b"]
    pairs = pairs.drop(columns=drop).rename(columns={"params_a": "params"})
    summary = _summary(pairs, log_reps, seed)
    pairs = _with_hyperparameters(pairs, runs, key)
    failed = _failed(ga, gb, key, a, b)
    unmatched = {str(a): _only_in(sa, sb, key), str(b): _only_in(sb, sa, key)}
    return Comparison(
        by,
        str(a),
        str(b),
        metric,
        pairs,
        summary,
        unmatched,
        failed,
        key=key,
        noisy_left_out=left_out,
        noisy_reasons=reasons,
        include_noisy=include_noisy,
    )


NEWEST = "newest"  # group b of a baseline comparison


def against_baseline(
    data: Data,
    members: pd.DataFrame,
    name: str,
    metric: str = "examples_per_s",
    family: str | None = None,
    include_noisy: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Comparison:
    """The newest runs against the baseline `name` (docs/baselines.md): group a is the
    baseline's runs (`members`: their `db` and row `id`), group b per configuration the newest
    run outside it that started after the baseline's run of that configuration (each run key
    by its chosen attempt, paradnn.attempts). Configurations pair as for `compare` (family,
    config and every identity column but the database); `by` is "baseline"."""
    if metric not in HIGHER_IS_BETTER:
        raise ConfigError("metric", metric, "one of " + ", ".join(HIGHER_IS_BETTER))
    runs = data.runs
    if family is not None:
        if not len(runs) or family not in set(runs["family"]):
            raise ConfigError("family", family, "a family with runs in the database")
        runs = runs[runs["family"] == family]
    if not len(runs):
        raise ConfigError("baseline", name, "has no runs to compare in these databases")
    ids = set(zip(members["db"].astype(str), members["id"].astype(int), strict=True))
    inside = pd.Series(
        [(str(d), int(i)) in ids for d, i in zip(runs["db"], runs["id"], strict=True)],
        index=runs.index,
        dtype=bool,
    )
    ga, rest = runs[inside], choose(runs[~inside])
    key = _key("baseline", ga, rest)
    gb = _newest(ga, rest, key)
    return _compared("baseline", name, NEWEST, ga, gb, runs, metric, include_noisy,
                     resamples, seed, key)  # fmt: skip


def _newest(base: pd.DataFrame, rest: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """Per configuration (`key`), the newest run of `rest` that started after the baseline's
    run of it (a run older than its baseline is no news about it)."""
    if not len(rest):
        return rest
    order = rest.assign(_t=_started(rest), _db=rest["db_index"], _id=rest["id"])
    order = order.sort_values(["_t", "_db", "_id"], kind="stable")
    newest = order.groupby(key, dropna=False, sort=False).tail(1)
    if len(base):
        since = base.assign(_since=_started(base))
        since = since.groupby(key, dropna=False, as_index=False)["_since"].max()
        newest = newest.merge(since, on=key, how="left")
        newest = newest[newest["_since"].isna() | (newest["_t"] > newest["_since"])]
        newest = newest.drop(columns=["_since"])
    return newest.drop(columns=["_t", "_db", "_id"])


def _started(runs: pd.DataFrame) -> pd.Series:
    """When each run started (ISO 8601 text, which sorts in time); none: the oldest."""
    if "started_at" not in runs:
        return pd.Series("", index=runs.index, dtype=object)
    return runs["started_at"].fillna("").astype(str)


def counts(c: Comparison) -> dict[str, int | dict[str, int]]:
    """What a gate rests on: configs compared (matched in both groups), configs left out as
    noisy and configs ok in one group only, per group, and configs ok in one group and failed
    in the other. A gate that compared fewer configs than it was asked for must not pass."""
    return {
        "compared": len(c.pairs),
        "noisy_left_out": dict(c.noisy_left_out),
        "unmatched": dict(c.unmatched),
        "failed_in_one": len(c.failed),
    }


def counts_line(c: Comparison) -> str:
    """'compared 0 configs; left out as noisy: eager 2, compile 2; ok in one group only: …'."""
    n = counts(c)
    per = lambda d: ", ".join(f"{k} {v}" for k, v in d.items())  # noqa: E731
    kept = " (--include-noisy: kept)" if c.include_noisy else ""
    return (
        f"compared {n['compared']} config{'' if n['compared'] == 1 else 's'}; "
        f"left out as noisy: {per(n['noisy_left_out'])}{kept}; "
        f"ok in one group only: {per(n['unmatched'])}; "
        f"ok in one group and failed in the other: {n['failed_in_one']}"
    )


def slower_than(c: Comparison, pct: float, on: str = "config") -> pd.DataFrame:
    """Configs (on="config") or the overall geometric mean (on="geomean") slower than
    1 - pct/100 beyond their interval: the upper end of the CI below the threshold (by more
    than rounding, paradnn.rounding). A config
    without an interval is judged on its point estimate (the `basis` column says which)."""
    limit = 1 - check_pct(pct) / 100
    if on not in ("config", "geomean"):
        raise ConfigError("fail-on", on, "config or geomean")
    if on == "geomean":
        t = c.summary[c.summary["family"] == "all"].copy()
        hi, point = t["geomean_ci_high"], t["geomean"]
    else:
        t = c.pairs.copy()
        hi, point = t["ci_high"], t["speedup"]
    hi = pd.to_numeric(hi, errors="coerce")
    t["basis"] = np.where(hi.notna(), "interval", "point estimate (no interval)")
    bound = hi.where(hi.notna(), pd.to_numeric(point, errors="coerce"))
    t["threshold"] = limit
    # below by more than rounding: a geomean of 0.9999999999999998 is 1 (--fail-if-slower 0)
    return t[bound.map(lambda b: bool(rounding.below(float(b), limit)))]


def check_pct(pct: float) -> float:
    """A slowdown threshold in percent: a number from 0 to 100."""
    try:
        pct = float(pct)
    except (TypeError, ValueError):
        pct = float("nan")
    if not (0 <= pct <= 100):  # also rejects NaN
        raise ConfigError("fail-if-slower", pct, "a percentage from 0 to 100")
    return pct


def _attempt(runs: pd.DataFrame, v: str) -> pd.DataFrame:
    """Rows of the given attempt of each run key (per database): a number, 'first', 'latest'."""
    if not len(runs):
        return runs
    keys = [runs["db_index"], runs["run_key"]]
    att = pd.to_numeric(runs["attempt"], errors="coerce")
    if v in ("first", "latest"):
        many = runs.groupby(keys)["attempt"].transform("nunique") > 1
        want = att.groupby(keys).transform("min" if v == "first" else "max")
        return runs[many & (att == want)]
    return runs[att == int(v)]


def _key(by: str, ga: pd.DataFrame, gb: pd.DataFrame) -> list[str]:
    """Identity columns two runs must share to pair. Thread counts join them when the groups
    ran a common count (a CPU against itself); a CPU box against a GPU box pairs without."""
    key = [c for c in IDENTITY if c != by]
    if by == "device":  # the platform is the device's name: comparing devices compares them
        key.remove("platform")
    if by == "attempt":
        key += ["db", "run_key"]
    if by == "engine":  # the engine names the mode (and the backend)
        key.remove("mode")
    for axis in AXES:  # a run pairs with runs of its own kind along every other study axis
        col = axis.column
        if col is None or col in key or col == by or (by == "engine" and col in ENGINE):
            continue
        if by == "procs" and col in PARALLEL:  # N=2 ddp weak against N=4 fsdp strong
            continue
        if col not in ga or col not in gb:
            continue
        # an axis null where it measures nothing (a strategy on one process) joins the key
        # only where both groups have it
        if axis.when is None or (ga[col].notna().any() and gb[col].notna().any()):
            key.append(col)
    if by != "threads" and "threads" in ga and "threads" in gb:
        ta = set(ga.loc[ga["status"] == Status.OK, "threads"].dropna())
        tb = set(gb.loc[gb["status"] == Status.OK, "threads"].dropna())
        if ta & tb:
            key.append("threads")
    return key


pair_key = _key  # for analysis/breakdown.py: per-op speedups pair runs the same way


def version_key(v: str) -> tuple:
    """'2.10.0+cu128' after '2.9.1': numbers compare as numbers."""
    import re

    return tuple((0, int(t)) if t.isdigit() else (1, t) for t in re.findall(r"\d+|[a-z]+", v))


def _only_in(x: pd.DataFrame, y: pd.DataFrame, key: list[str]) -> int:
    m = x[key].merge(y[key], on=key, how="left", indicator=True)
    return int((m["_merge"] == "left_only").sum())


def _check_by(by: str) -> None:
    if by not in BY:
        raise ConfigError("by", by, "one of " + ", ".join(BY))


def _per_config(group: pd.DataFrame, key: list[str], metric: str) -> pd.DataFrame:
    """One row per config: the median metric over its runs, their pooled raw samples, the
    widest stored CI of the median step time, whether any run was emulated."""
    cols = [*key, "value", "params", "runs", "samples", "n", "t_low", "t_high", "t"]
    cols += ["emulated", "attempt"]
    ok = group[group["status"] == Status.OK].copy()
    ok["value"] = pd.to_numeric(ok[metric], errors="coerce")
    ok = ok[ok["value"] > 0]
    if not len(ok):
        return pd.DataFrame(columns=cols)
    for c, default in (
        ("samples", None),
        ("step_time_s", np.nan),
        ("step_time_ci_low_s", np.nan),
        ("step_time_ci_high_s", np.nan),
        ("emulated", False),
    ):
        if c not in ok:
            ok[c] = default
    for c in ("step_time_s", "step_time_ci_low_s", "step_time_ci_high_s"):
        ok[c] = pd.to_numeric(ok[c], errors="coerce")
    ok["_g"] = ok.groupby(key, dropna=False, sort=True).ngroup()
    out = ok.groupby(key, dropna=False, as_index=False, sort=True).agg(
        value=("value", "median"),
        params=("params", "first"),
        runs=("value", "size"),
        t=("step_time_s", "median"),
        t_low=("step_time_ci_low_s", "min"),
        t_high=("step_time_ci_high_s", "max"),
        emulated=("emulated", "any"),
        attempt=("attempt", "max"),
    )
    ok = ok.sort_values("_g", kind="stable")
    if ok["_g"].is_unique:  # one run per config (the usual case): no pooling
        out["samples"] = list(ok["samples"].map(_clean))
    else:
        pooled = ok.groupby("_g")["samples"].agg(lambda s: [v for v in s])
        out["samples"] = [np.concatenate([_clean(v) for v in vs]) for vs in pooled]
    out["n"] = out["samples"].map(len)
    return out[cols]


def _clean(v) -> np.ndarray:
    """Raw samples (seconds per step) as floats: positive and finite only."""
    if not isinstance(v, (list, tuple, np.ndarray)):
        return np.empty(0)
    try:
        arr = np.asarray(v, dtype=float)
    except (TypeError, ValueError):  # a null inside the list
        arr = pd.to_numeric(pd.Series(list(v), dtype=object), errors="coerce").to_numpy(float)
    return arr[np.isfinite(arr) & (arr > 0)]


def _boot_medians(samples: list[np.ndarray], resamples: int, rng) -> np.ndarray:
    """(configs × resamples) medians of bootstrap resamples; NaN rows for too few samples.

    Configs with the same sample count are resampled together, in chunks. A resample of a
    sorted sample is ordered like its drawn indices, so the median is read at the middle order
    statistics of the indices (small integers: fast to partition)."""
    out = np.full((len(samples), resamples), np.nan)
    by_n: dict[int, list[int]] = defaultdict(list)
    for i, x in enumerate(samples):
        if len(x) >= MIN_SAMPLES:
            by_n[len(x)].append(i)
    for n, rows in sorted(by_n.items()):
        x = np.sort(np.stack([samples[i] for i in rows]), axis=1)
        kind = np.int8 if n < 2**7 else np.int16 if n < 2**15 else np.int32
        step = max(1, _CHUNK // (resamples * n))
        for s0 in range(0, len(rows), step):
            xc = x[s0 : s0 + step]
            draw = rng.integers(0, n, size=(len(xc), resamples, n), dtype=kind)
            draw = np.partition(draw, sorted({(n - 1) // 2, n // 2}), axis=2)
            lo = np.take_along_axis(xc, draw[..., (n - 1) // 2].astype(np.intp), axis=1)
            hi = np.take_along_axis(xc, draw[..., n // 2].astype(np.intp), axis=1)
            out[rows[s0 : s0 + step]] = (lo + hi) / 2
    return out


def _medians(samples: list[np.ndarray]) -> np.ndarray:
    return np.array([np.median(x) if len(x) else np.nan for x in samples])


def _intervals(pairs: pd.DataFrame, resamples: int, seed: int) -> np.ndarray:
    """Adds ci_low, ci_high, ci_method and call to `pairs`; returns the log-speedup replicates
    (configs × resamples; a config without replicates repeats its point estimate)."""
    m = len(pairs)
    q = [(1 - LEVEL) / 2, (1 + LEVEL) / 2]
    logs = np.tile(np.log(pairs["speedup"].to_numpy(float))[:, None], (1, max(resamples, 1)))
    lo, hi = np.full(m, np.nan), np.full(m, np.nan)
    method = np.full(m, None, dtype=object)
    if m:
        rng = np.random.default_rng(seed)
        xa, xb = list(pairs["samples_a"]), list(pairs["samples_b"])
        ma, mb = _boot_medians(xa, resamples, rng), _boot_medians(xb, resamples, rng)
        obs = _medians(xa) / _medians(xb)
        rel = (ma / mb) / obs[:, None]  # replicate ratio over the observed ratio of medians
        boot = np.isfinite(rel).all(axis=1)
        sp = pairs["speedup"].to_numpy(float)
        if boot.any():
            qs = np.quantile(rel[boot], q, axis=1)
            lo[boot], hi[boot] = sp[boot] * qs[0], sp[boot] * qs[1]
            logs[boot] = np.log(sp[boot])[:, None] + np.log(rel[boot])
            method[boot] = "bootstrap"
        # Fallback: the stored CIs of the two medians, ratio of their ends (as a step-time
        # ratio A/B, scaled to the speedup like the bootstrap).
        ta, tb = pairs["t_a"].to_numpy(float), pairs["t_b"].to_numpy(float)
        la, ha = pairs["t_low_a"].to_numpy(float), pairs["t_high_a"].to_numpy(float)
        lb, hb = pairs["t_low_b"].to_numpy(float), pairs["t_high_b"].to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = ta / tb
            f_lo, f_hi = (la / hb) / r, (ha / lb) / r
        stored = ~boot & np.isfinite(f_lo) & np.isfinite(f_hi) & (f_lo > 0)
        lo[stored], hi[stored] = sp[stored] * f_lo[stored], sp[stored] * f_hi[stored]
        method[stored] = "stored CIs"
    pairs["ci_low"], pairs["ci_high"], pairs["ci_method"] = lo, hi, method
    pairs["call"] = [call(a, b) for a, b in zip(lo, hi, strict=True)]
    return logs


def call(lo: float, hi: float) -> str:
    """A speedup's call from its interval; an end within rounding of 1 is on 1 (no change)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return NO_INTERVAL
    return FASTER if rounding.above(lo, 1.0) else SLOWER if rounding.below(hi, 1.0) else NO_CHANGE


def faster_share(s: pd.Series) -> float:
    """The share of speedups above 1 by more than rounding (a speedup of 1 ± a last bit is 1)."""
    return float(np.mean([rounding.above(float(x), 1.0) for x in s])) if len(s) else math.nan


def _geomean_ci(logs: np.ndarray, seed: int) -> tuple[float, float]:
    """Two-level bootstrap: each replicate draws the configs with replacement and uses each
    drawn config's own replicate (its measurement noise); the geometric mean of that."""
    m, b = logs.shape
    if not m or not np.isfinite(logs).all():
        return (np.nan, np.nan)
    rng = np.random.default_rng(seed + 1)
    draw = rng.integers(0, m, size=(b, m))
    reps = np.exp(logs[draw, np.arange(b)[:, None]].mean(axis=1))
    lo, hi = np.quantile(reps, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(lo), float(hi)


def _with_hyperparameters(pairs: pd.DataFrame, runs: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    if not len(pairs):
        return pairs
    import json

    cfg = pairs["config_key"].map(json.loads)
    flat = pd.DataFrame(list(cfg), index=pairs.index)
    flat = flat.drop(columns=[c for c in flat.columns if c in pairs.columns])
    return pd.concat([pairs, flat], axis=1)


def geomean(x: pd.Series) -> float | None:
    x = pd.to_numeric(x, errors="coerce").dropna()
    x = x[x > 0]
    return float(math.exp(np.log(x).mean())) if len(x) else None


SUMMARY_COLUMNS = [
    "family",
    "n",
    "faster",
    "slower",
    "no_change",
    "no_interval",
    "faster_share",
    "geomean",
    "geomean_ci_low",
    "geomean_ci_high",
    "geomean_call",
    "median",
    "p90",
    "min",
    "max",
    "emulated",
]
P90 = 0.9  # seed 000 §6 states 90th-percentile speedups per family (Fig. 12); linear interpolation


def _summary(pairs: pd.DataFrame, logs: np.ndarray, seed: int) -> pd.DataFrame:
    if not len(pairs):
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    rows = []
    pos = np.arange(len(pairs))
    fam = pairs["family"].to_numpy()
    groups = [(f, pos[fam == f]) for f in sorted(set(fam))]
    emu = pairs["emulated_a"].astype(bool) | pairs["emulated_b"].astype(bool)
    for name, idx in [*groups, ("all", pos)]:
        s = pairs["speedup"].iloc[idx]
        calls = pairs["call"].iloc[idx]
        lo, hi = _geomean_ci(logs[idx], seed)
        rows.append(
            {
                "family": name,
                "n": len(s),
                "faster": int((calls == FASTER).sum()),
                "slower": int((calls == SLOWER).sum()),
                "no_change": int((calls == NO_CHANGE).sum()),
                "no_interval": int((calls == NO_INTERVAL).sum()),
                "faster_share": faster_share(s),
                "geomean": geomean(s),
                "geomean_ci_low": lo,
                "geomean_ci_high": hi,
                "geomean_call": call(lo, hi),
                "median": float(s.median()),
                "p90": float(s.quantile(P90)),
                "min": float(s.min()),
                "max": float(s.max()),
                "emulated": int(emu.iloc[idx].sum()),
            }
        )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def _failed(ga: pd.DataFrame, gb: pd.DataFrame, key: list[str], a: str, b: str) -> pd.DataFrame:
    """Configs that ran ok in one group and only failed in the other (e.g. OOM on the GPU)."""
    out = []
    for ok_g, bad_g, ok_name, bad_name in ((ga, gb, a, b), (gb, ga, b, a)):
        ok_keys = ok_g[ok_g["status"] == Status.OK][key].drop_duplicates()
        bad = bad_g.groupby(key, dropna=False)["status"].agg(lambda s: ",".join(sorted(set(s))))
        bad = bad[~bad.str.contains(Status.OK)].reset_index()
        m = ok_keys.merge(bad, on=key)
        if len(m):
            m["ok_in"], m["failed_in"] = ok_name, bad_name
            out.append(m)
    cols = [*key, "status", "ok_in", "failed_in"]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)
