"""Figures of `report --what-if`: predicted values drawn hatched and lighter than measured ones,
with their error band as whiskers, and "predicted" in every title and legend entry."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter

from paradnn import formatting as U
from paradnn.plots.figures import plt

MEASURED_STYLE = {"color": "#1f4e79", "edgecolor": "#1f4e79"}
PREDICTED_STYLE = {"color": "#9ecae1", "edgecolor": "#3182bd", "hatch": "///", "alpha": 0.7}


def bars(table: pd.DataFrame) -> Figure:
    """Geometric-mean examples/s per family: the measured platform solid, each predicted one
    hatched and lighter with its band (whiskers; none when not validated). One precision
    measured here (fp32 where there is one), so no bar pools two precisions."""
    precs = table["precision here"].astype(str)
    prec = "fp32" if (precs == "fp32").any() else precs.mode().iloc[0]
    table = table[precs == prec]
    fams = sorted(set(table["family"]))
    there = list(dict.fromkeys(table["platform there"]))
    here = str(table["platform here"].iloc[0])
    n = 1 + len(there)
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(fams) * n / 2, 3.8))
    width = 0.8 / n
    x = np.arange(len(fams))
    meas = table.groupby("family")["measured here (examples/s)"].first().reindex(fams)
    ax.bar(x - 0.4 + width / 2, meas, width, label=f"{here} (measured)", **MEASURED_STYLE)
    for i, b in enumerate(there, start=1):
        g = table[table["platform there"] == b].groupby("family").first().reindex(fams)
        y = g["predicted there (examples/s)"].astype(float)
        lo = (y - g["predicted band low"].astype(float)).clip(lower=0)
        hi = (g["predicted band high"].astype(float) - y).clip(lower=0)
        err = None if lo.isna().all() else np.vstack([lo.fillna(0), hi.fillna(0)])
        ax.bar(
            x - 0.4 + width * (i + 0.5),
            y,
            width,
            yerr=err,
            capsize=2,
            label=_predicted(b),
            **PREDICTED_STYLE,
        )
    ax.set_xticks(x, fams)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: U.si(v)))
    ax.set_ylabel("examples/s (geomean over configs)")
    ax.set_title(f"Measured here ({prec}) beside predicted there (hatched: predicted)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    return fig


def speedup_scatter(cmp) -> Figure:
    """Predicted speedup per config against its parameter count: hollow hatched markers and
    the pair's interval as whiskers (the band; none when not validated)."""
    p = cmp.pairs
    fig, ax = plt.subplots(figsize=(6, 4))
    y = p["speedup"].astype(float)
    lo = (y - p["ci_low"].astype(float)).clip(lower=0)
    hi = (p["ci_high"].astype(float) - y).clip(lower=0)
    if lo.notna().any():
        ax.errorbar(
            p["params"], y, yerr=np.vstack([lo.fillna(0), hi.fillna(0)]), fmt="none",
            ecolor="#9ecae1", lw=0.8, alpha=0.8,
        )  # fmt: skip
    ax.scatter(
        p["params"], y, s=22, facecolors="none", edgecolors="#3182bd", hatch="/////",
        linewidths=0.8, label=_predicted(f"{cmp.b} over {cmp.a}"),
    )  # fmt: skip
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_xscale("log")
    if len(p) and y.max() / max(y.min(), 1e-12) > 10:
        ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: U.si(v)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: U.times(v)))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("trainable parameters")
    ax.set_ylabel("predicted speedup")
    ax.set_title(f"predicted: {cmp.b} vs {cmp.a} (examples/s)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    return fig


def hatch(fig: Figure) -> Figure:
    """A light hatch over a figure's first axes: what it shows is predicted."""
    ax = fig.axes[0]
    ax.add_patch(
        Rectangle(
            (0, 0), 1, 1, transform=ax.transAxes, fill=False, hatch="//", alpha=0.25, lw=0,
            zorder=5,
        )
    )  # fmt: skip
    return fig


def _predicted(label: str) -> str:
    """A legend entry that says predicted once."""
    return label if "predicted" in label else f"{label} (predicted)"
