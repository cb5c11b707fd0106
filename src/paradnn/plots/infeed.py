"""Figures of the data-infeed study (docs/infeed.md). Torch-free, headless."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure


def _label(v: object) -> str:
    """16.0 (a column with NaN elsewhere) reads 16."""
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def share_map(grid: pd.DataFrame, family: str, source: str, y: str, x: str) -> Figure:
    """The infeed share (wait + copy over the step) per (y, x) cell, 0-100 %, like Fig. 2's
    heat maps (seed 000 Fig. 5 plots infeed per real model instead); empty cells ran no
    `source` run."""
    vals = grid.to_numpy(dtype=float) * 100
    fig, ax = plt.subplots(
        figsize=(1.5 + 0.9 * max(2, vals.shape[1]), 1.4 + 0.6 * max(2, vals.shape[0]))
    )
    im = ax.imshow(
        np.ma.masked_invalid(vals), origin="lower", aspect="auto", cmap="Reds", vmin=0, vmax=100
    )
    for i in range(vals.shape[0]):
        for j in range(vals.shape[1]):
            if np.isfinite(vals[i, j]):
                ax.text(j, i, f"{vals[i, j]:.0f}%", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(grid.columns)), [_label(v) for v in grid.columns])
    ax.set_yticks(range(len(grid.index)), [_label(v) for v in grid.index])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{family}: infeed share of the step ({source})", fontsize=9)
    fig.colorbar(im, ax=ax, shrink=0.8, label="infeed %")
    return fig


def share_bars(runs: pd.DataFrame, source: str) -> Figure:
    """Infeed share of every `source` run, grouped by family (one bar per config)."""
    runs = runs.sort_values(["family", "config_key"])
    share = pd.to_numeric(runs["infeed_share"], errors="coerce").to_numpy() * 100
    bound = runs["input_bound"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    fig, ax = plt.subplots(figsize=(2.0 + 0.35 * max(4, len(runs)), 3.2))
    colors = np.where(bound, "firebrick", "steelblue")
    ax.bar(range(len(runs)), share, color=colors)
    ax.set_xticks(range(len(runs)), list(runs["family"]), rotation=60, fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("infeed % of the step")
    ax.set_title(f"{source}: infeed share per config (red: input-bound)", fontsize=9)
    return fig


def gains(table: pd.DataFrame, source: str, seed_range: tuple[float, float]) -> Figure:
    """Geometric-mean speedup of device data over `source` per family with its 95% CI, and
    the seed's 1.34-2.80× band (seed 000 §4.4)."""
    f = table[pd.to_numeric(table["gain_geomean"], errors="coerce").notna()]
    fig, ax = plt.subplots(figsize=(1.5 + 1.0 * max(2, len(f)), 3.2))
    g = f["gain_geomean"].astype(float).to_numpy()
    lo = pd.to_numeric(f["gain_ci_low"], errors="coerce").to_numpy()
    hi = pd.to_numeric(f["gain_ci_high"], errors="coerce").to_numpy()
    err = np.vstack([np.where(np.isfinite(lo), g - lo, 0), np.where(np.isfinite(hi), hi - g, 0)])
    colors = ["darkorange" if r else "steelblue" for r in f["real"]]
    ax.bar(range(len(f)), g, yerr=err, capsize=4, color=colors)
    ax.axhspan(*seed_range, color="grey", alpha=0.15, label="seed 000 §4.4 (TPU)")
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_xticks(range(len(f)), list(f["family"]), rotation=30, fontsize=8)
    ax.set_ylabel(f"device data over {source}")
    ax.set_title("gain from removing the infeed (orange: real model), 95% CI", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    return fig
