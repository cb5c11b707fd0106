"""Linear-regression sensitivity of a metric to each hyperparameter (the paper's Figure 2(d)-(f)).

As in ParaDnn, the weights are only a measure of importance, not a predictor: every
hyperparameter is normalized to one scale (z-scores) so the weights compare. Two choices the
paper left implicit, made explicit here: axes that grow geometrically (batch 64..16384) enter as
log2, because the paper's own ranges are geometric and a linear fit would be driven by the last
doubling; and each weight carries its 95% confidence interval from ordinary least squares
(statsmodels), so "batch matters more than layers" can be checked rather than eyeballed.

The table lists the weights largest |w| first, equal ones (within rounding, paradnn.rounding:
the weights of z-scored inputs are read at the scale 1) by name, so a residue of 5.6e-17 on
one CPU and 0.0 on another give one order; a metric whose spread is a residue of rounding is
constant (no weight), not noise blown up to unit variance.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from paradnn import rounding
from paradnn.analysis.frames import (
    Data,
    check_metric,
    choose,
    default_metric,
    largest_group,
    numeric_hyperparameters,
    select,
    slice_columns,
)
from paradnn.errors import ConfigError
from paradnn.records import Status

MIN_ROWS = 8  # below this a weight and its interval mean little
WEIGHT_SCALE = 1.0  # the metric and every axis are z-scored: weights are read at this scale


@dataclass
class Sensitivity:
    family: str
    metric: str
    table: pd.DataFrame  # hyperparameter, weight, ci_low, ci_high, p_value, transform
    n: int
    r2: float | None
    where: dict
    excluded: dict[str, str]  # hyperparameter -> why it is not in the fit
    reason: str | None = None  # why there is no fit at all

    def weight(self, hp: str) -> float | None:
        row = self.table[self.table["hyperparameter"] == hp]
        return float(row["weight"].iloc[0]) if len(row) else None


def geometric(values: Sequence[float]) -> bool:
    """An axis that spans at least 8x with positive values: the paper's ×2 ranges."""
    v = [float(x) for x in values]
    return len(v) > 0 and min(v) > 0 and max(v) / min(v) >= 8


def sensitivity(
    data: Data,
    family: str,
    metric: str | None = None,
    hyperparameters: Sequence[str] | None = None,
    where: dict | None = None,
    log_axes: bool = True,
    frame: pd.DataFrame | None = None,
) -> Sensitivity:
    """Standardized OLS weights of `metric` on the family's numeric hyperparameters.

    `frame` replaces the ok runs (e.g. a speedup table, whose metric column is `speedup`)."""
    if frame is None:
        runs = choose(data.runs[data.runs["family"] == family])
        runs = runs[runs["status"] == Status.OK]
        metric = check_metric(metric) if metric else default_metric(runs)
        if where is None:
            where = largest_group(runs, slice_columns(runs))
        runs = select(runs, where)
    else:
        runs, where = frame, where or {}
        if metric not in runs:
            raise ConfigError("metric", metric, "a column of the frame")
    candidates = list(hyperparameters or numeric_hyperparameters(data, family))
    known = data.hyperparameters.get(family, []) if frame is None else list(runs.columns)
    for h in candidates:
        if h not in known:
            allowed = f"one of {', '.join(known)}" if known else f"none: no {family} runs"
            raise ConfigError("hyperparameter", h, allowed)
    y = pd.to_numeric(runs[metric], errors="coerce") if len(runs) else pd.Series(dtype=float)
    keep = y.notna()
    runs, y = runs[keep], y[keep].astype(float)
    excluded, used, transforms = {}, [], {}
    cols = {}
    for h in candidates:
        x = pd.to_numeric(runs[h], errors="coerce") if len(runs) else pd.Series(dtype=float)
        if x.isna().any():
            excluded[h] = "not numeric in every run"
            continue
        if x.nunique() < 2:
            v = x.iloc[0] if len(x) else "no runs"
            v = int(v) if isinstance(v, float) and v.is_integer() else v
            excluded[h] = f"constant ({v}) in this slice"
            continue
        transform = "log2" if log_axes and geometric(x.unique()) else "linear"
        x = np.log2(x.astype(float)) if transform == "log2" else x.astype(float)
        cols[h], transforms[h] = (x - x.mean()) / x.std(ddof=0), transform
        used.append(h)
    empty = pd.DataFrame(
        columns=["hyperparameter", "weight", "ci_low", "ci_high", "p_value", "transform"]
    )
    n = len(runs)
    if not used or n < max(MIN_ROWS, len(used) + 2):
        why = f"{n} ok runs with a value of {metric}" + (
            "" if used else " and no hyperparameter that varies"
        )
        return Sensitivity(family, metric, empty, n, None, dict(where), excluded, why)
    import statsmodels.api as sm

    X = sm.add_constant(pd.DataFrame(cols, index=runs.index), has_constant="add")
    sd = float(y.std(ddof=0)) if n else 0.0
    if rounding.equal(sd, 0.0, float(y.abs().max()) if n else 0.0):
        sd = 0.0  # a constant metric whose mean left a residue: constant, not noise at std 1
    ys = (y - y.mean()) / sd if sd else y * 0.0  # standardized: weights compare across metrics
    with warnings.catch_warnings():  # a constant metric gives nan R² and p-values: kept as None
        warnings.simplefilter("ignore")
        fit = sm.OLS(ys.to_numpy(), X.to_numpy()).fit()
        ci, pvalues, r2 = fit.conf_int(0.05), fit.pvalues, _finite(fit.rsquared)
        r2 = None if r2 is None else rounding.settle(r2, 1.0)  # -2e-16 is an R² of 0
    rows = []
    for i, h in enumerate(used, start=1):
        rows.append(
            {
                "hyperparameter": h,
                # a residue of rounding next to 0 is 0 on every CPU (the CSV, the figure)
                "weight": rounding.settle(float(fit.params[i]), WEIGHT_SCALE),
                "ci_low": float(ci[i][0]),
                "ci_high": float(ci[i][1]),
                "p_value": _finite(pvalues[i]),
                "transform": transforms[h],
            }
        )
    table = ordered(pd.DataFrame(rows))
    return Sensitivity(family, metric, table, n, r2, dict(where), excluded)


def ordered(table: pd.DataFrame) -> pd.DataFrame:
    """Largest |weight| first; weights equal within rounding by hyperparameter name."""
    k = table["weight"].map(lambda w: -rounding.key(abs(w), WEIGHT_SCALE))
    return (
        table.assign(_k=k)
        .sort_values(["_k", "hyperparameter"], kind="stable", na_position="last")
        .drop(columns="_k")
        .reset_index(drop=True)
    )


def _finite(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None
