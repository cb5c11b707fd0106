"""Speedups between two groups of runs matched by configuration (the paper's Figures 6-10, 12).

A group is the runs whose `by` column has one value: a platform, a precision, an execution mode,
a torch version. Runs pair up when everything else that defines the workload is equal (family,
config, and the other identity columns), so "bf16 vs fp32" never compares different devices and
"H100 vs CPU" never compares different precisions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from paradnn.analysis.frames import Data, latest
from paradnn.errors import ConfigError

# What a group may be defined by, and what must otherwise be equal for two runs to pair.
BY = (
    "platform",
    "precision",
    "mode",
    "optimizer",
    "torch_version",
    "cuda_version",
    "hostname",
    "db",
    "threads",
    "device",
)
IDENTITY = ("family", "config_key", "platform", "precision", "mode", "optimizer")
HIGHER_IS_BETTER = {
    "examples_per_s": True,
    "achieved_flops": True,
    "step_time_s": False,
    "utilization_measured": True,
    "utilization_datasheet": True,
}


@dataclass
class Comparison:
    by: str
    a: str
    b: str
    metric: str
    pairs: pd.DataFrame  # one row per matched config: family, config, params, value_a/b, speedup
    summary: pd.DataFrame  # per family and 'all': n, faster share, geomean, median, min, max
    unmatched: dict[str, int]  # runs ok in one group whose config the other never ran ok
    failed: pd.DataFrame  # configs ok in one group and failed in the other (with the status)

    def overall(self) -> dict:
        row = self.summary[self.summary["family"] == "all"]
        return row.iloc[0].to_dict() if len(row) else {}


def values(data: Data, by: str) -> list[str]:
    """The distinct values of a grouping column among ok runs, most common first."""
    _check_by(by)
    ok = data.ok
    if not len(ok) or by not in ok:
        return []
    return [str(v) for v in ok[by].dropna().astype(str).value_counts().index]


def compare(
    data: Data,
    by: str,
    a: str,
    b: str,
    metric: str = "examples_per_s",
    family: str | None = None,
) -> Comparison:
    """Speedup of group `b` over group `a` for every configuration both ran successfully."""
    _check_by(by)
    if metric not in HIGHER_IS_BETTER:
        raise ConfigError("metric", metric, "one of " + ", ".join(HIGHER_IS_BETTER))
    runs = latest(data.runs)
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
    key = [c for c in IDENTITY if c != by]
    label = runs[by].astype(str)
    ga, gb = runs[label == str(a)], runs[label == str(b)]
    sa, sb = _per_config(ga, key, metric), _per_config(gb, key, metric)
    pairs = sa.merge(sb, on=key, suffixes=("_a", "_b"))
    better = HIGHER_IS_BETTER[metric]
    pairs["speedup"] = (
        pairs["value_b"] / pairs["value_a"] if better else pairs["value_a"] / pairs["value_b"]
    )
    pairs = pairs.drop(columns=["params_b"]).rename(columns={"params_a": "params"})
    pairs = _with_hyperparameters(pairs, runs, key)
    summary = _summary(pairs)
    failed = _failed(ga, gb, key, a, b)
    unmatched = {str(a): _only_in(sa, sb, key), str(b): _only_in(sb, sa, key)}
    return Comparison(by, str(a), str(b), metric, pairs, summary, unmatched, failed)


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
    ok = group[group["status"] == "ok"].copy()
    ok["value"] = pd.to_numeric(ok[metric], errors="coerce")
    ok = ok[ok["value"] > 0]
    if not len(ok):
        return pd.DataFrame(columns=[*key, "value", "params"])
    return ok.groupby(key, dropna=False, as_index=False).agg(
        value=("value", "median"), params=("params", "first")
    )


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


def _summary(pairs: pd.DataFrame) -> pd.DataFrame:
    cols = ["family", "n", "faster_share", "geomean", "median", "min", "max"]
    if not len(pairs):
        return pd.DataFrame(columns=cols)
    rows = []
    groups = [(f, g) for f, g in pairs.groupby("family")]
    for fam, g in [*groups, ("all", pairs)]:
        s = g["speedup"]
        rows.append(
            {
                "family": fam,
                "n": len(s),
                "faster_share": float((s > 1).mean()),
                "geomean": geomean(s),
                "median": float(s.median()),
                "min": float(s.min()),
                "max": float(s.max()),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def _failed(ga: pd.DataFrame, gb: pd.DataFrame, key: list[str], a: str, b: str) -> pd.DataFrame:
    """Configs that ran ok in one group and only failed in the other (e.g. OOM on the GPU)."""
    out = []
    for ok_g, bad_g, ok_name, bad_name in ((ga, gb, a, b), (gb, ga, b, a)):
        ok_keys = ok_g[ok_g["status"] == "ok"][key].drop_duplicates()
        bad = bad_g.groupby(key, dropna=False)["status"].agg(lambda s: ",".join(sorted(set(s))))
        bad = bad[~bad.str.contains("ok")].reset_index()
        m = ok_keys.merge(bad, on=key)
        if len(m):
            m["ok_in"], m["failed_in"] = ok_name, bad_name
            out.append(m)
    cols = [*key, "status", "ok_in", "failed_in"]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)
