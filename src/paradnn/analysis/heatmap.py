"""A metric over two hyperparameters with the others fixed (the paper's Figure 2(a)-(c)).

Cells that did not run `ok` carry their status instead of a number (the paper's white OOM
squares), so a reader sees where a platform runs out of memory, not a hole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from paradnn.analysis.frames import (
    Data,
    check_metric,
    choose,
    default_metric,
    largest_group,
    select,
    slice_columns,
)
from paradnn.errors import ConfigError
from paradnn.records import Status


@dataclass
class HeatMap:
    family: str
    x: str
    y: str
    metric: str
    values: pd.DataFrame  # index: y values, columns: x values; NaN where no ok run
    status: pd.DataFrame  # same shape: 'ok', a failure status, or None (not run)
    fixed: dict[str, Any] = field(default_factory=dict)  # the other hyperparameters' values
    # False where the paper fixes the hyperparameter at another value (marked * in figures)
    paper_fixed: dict[str, bool] = field(default_factory=dict)
    where: dict[str, Any] = field(default_factory=dict)  # platform, precision, ...

    @property
    def cells(self) -> int:
        return int(self.status.notna().sum().sum())

    def failed(self) -> dict[tuple[Any, Any], str]:
        """(x, y) -> status of the cells that ran and did not succeed."""
        out = {}
        for yv in self.status.index:
            for xv in self.status.columns:
                s = self.status.at[yv, xv]
                if s is not None and not pd.isna(s) and s != Status.OK:
                    out[(xv, yv)] = s
        return out


def paper_fixed(family: str) -> dict[str, Any]:
    """The paper's fixed values for a family (seed 000 §4.1), when the family is known."""
    from paradnn import families

    try:
        return dict(families.get(family).paper_fixed)
    except (ConfigError, ImportError, AttributeError):
        return {}


# Seed 000 Fig. 7 (examples/s over batch × nodes, one map per platform) fixes FC at 64 layers,
# where Fig. 2 fixes 32 (the family's `paper_fixed`).
FIGURE7_FIXED: dict[str, dict[str, Any]] = {"fc": {"layers": 64}}


def closest(values: Any, target: float) -> Any:
    """The value nearest `target` (absolute difference; a tie goes to the larger value), or
    None when there is none."""
    vals = sorted({_clean(v) for v in pd.Series(values).dropna()})
    if not vals:
        return None
    return min(vals, key=lambda v: (abs(float(v) - target), -float(v)))


def figure7_fixed(runs: pd.DataFrame, family: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(fixed, paper) for a family's Fig. 7 map over `runs`: each value Fig. 7 fixes where a run
    has it, else the closest value the runs have; `paper` is what Fig. 7 fixes (for the
    not-the-paper's-value mark). A family Fig. 7 does not show: ({}, {})."""
    paper = FIGURE7_FIXED.get(family, {})
    fixed = {}
    for k, v in paper.items():
        if k in runs:
            found = closest(runs[k], v)
            if found is not None:
                fixed[k] = found
    return fixed, dict(paper)


def heatmap(
    data: Data,
    family: str,
    x: str = "batch",
    y: str | None = None,
    metric: str | None = None,
    fixed: Mapping[str, Any] | None = None,
    where: Mapping[str, Any] | None = None,
    paper: Mapping[str, Any] | None = None,
) -> HeatMap:
    """A metric over x and y with the other hyperparameters fixed: `fixed` where given, else
    the paper's value where the data has it, else the most common one. `paper` replaces the
    family's paper values for this figure (Fig. 7 fixes FC at 64 layers, Fig. 2 at 32)."""
    runs = choose(data.runs[data.runs["family"] == family])
    hps = data.hyperparameters.get(family, [])
    if not len(runs):
        raise ConfigError("family", family, "a family with runs in the database")
    y = y or _second_axis(family, hps, x)
    for axis, name in (("x", x), ("y", y)):
        if name not in hps:
            raise ConfigError(axis, name, f"a {family} hyperparameter: " + ", ".join(hps))
    if x == y:
        raise ConfigError("y", y, f"a hyperparameter other than x ({x})")
    metric = check_metric(metric) if metric else default_metric(runs)
    if where is None:
        ok = runs[runs["status"] == Status.OK]
        pool = ok if len(ok) else runs
        where = largest_group(pool, slice_columns(pool))
    runs = select(runs, dict(where))
    others = [h for h in hps if h not in (x, y)]
    chosen, is_paper = _fixed_values(runs, family, others, fixed, paper)
    cell_runs = select(runs, chosen).copy()
    for axis in (x, y):  # a family mixed with others has float columns: 256.0 -> 256
        cell_runs[axis] = cell_runs[axis].map(_clean)
    xs = sorted(cell_runs[x].dropna().unique().tolist())
    ys = sorted(cell_runs[y].dropna().unique().tolist())
    values = pd.DataFrame(float("nan"), index=pd.Index(ys, name=y), columns=pd.Index(xs, name=x))
    status = pd.DataFrame(None, index=values.index, columns=values.columns, dtype=object)
    for (xv, yv), cell in cell_runs.groupby([x, y]):
        good = cell[cell["status"] == Status.OK]
        if len(good):
            status.at[yv, xv] = Status.OK
            vals = pd.to_numeric(good[metric], errors="coerce").dropna()
            if len(vals):
                values.at[yv, xv] = float(vals.median())
        else:  # the most severe failure wins: memory first, as in the paper's figures
            status.at[yv, xv] = _worst(cell["status"].tolist())
    return HeatMap(family, x, y, metric, values, status, chosen, is_paper, dict(where))


def _clean(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    return int(v) if isinstance(v, float) and v.is_integer() else v


_SEVERITY = (
    *(Status.PREDICTED_OOM, Status.OOM, Status.TIMEOUT, Status.CRASHED, Status.NAN),
    *(Status.INVALID, Status.UNSUPPORTED),
)


def _worst(statuses: list[str]) -> str:
    return min(statuses, key=lambda s: _SEVERITY.index(s) if s in _SEVERITY else len(_SEVERITY))


def _second_axis(family: str, hps: list[str], x: str) -> str:
    """The paper's choice of second axis: nodes (FC), filters (CNN), embed (RNN), else the first
    numeric hyperparameter that is not fixed by the paper."""
    for cand in ("nodes", "filters", "embed", "d_model"):
        if cand in hps and cand != x:
            return cand
    skip = set(paper_fixed(family)) | {x}
    return next((h for h in hps if h not in skip), hps[0] if hps[0] != x else hps[-1])


def _fixed_values(
    runs: pd.DataFrame,
    family: str,
    others: list[str],
    fixed: Mapping[str, Any] | None,
    figure: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, bool]]:
    """Each other hyperparameter's value: the user's, else the paper's when the data has it,
    else the value most runs share (said so in `paper_fixed`). `figure` overrides the
    family's paper values (a figure that fixes another value)."""
    paper = paper_fixed(family) | dict(figure or {})
    fixed = dict(fixed or {})
    for k in fixed:
        if k not in others:
            raise ConfigError("fixed", k, "one of " + ", ".join(others))
    chosen, is_paper = {}, {}
    pool = runs
    for k in others:
        present = pool[k].dropna()
        if k in fixed:
            value = type(present.iloc[0])(fixed[k]) if len(present) else fixed[k]
        elif k in paper and (present == paper[k]).any():
            value = paper[k]
        elif len(present):
            value = present.value_counts().index[0]
        else:
            continue
        value = _clean(value)
        # True unless the paper fixes this hyperparameter at another value
        chosen[k], is_paper[k] = value, k not in paper or value == paper[k]
        pool = pool[pool[k] == value]
    return chosen, is_paper
