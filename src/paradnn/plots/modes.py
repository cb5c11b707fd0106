"""Figures of the execution-mode study (docs/modes.md). Torch-free, headless."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from paradnn.plots import interactive as I


def speedup_map(
    grid: pd.DataFrame, family: str, mode: str, y: str, x: str, title: str | None = None
) -> Figure:
    """Speedup of `mode` over eager per (y, x) cell, on a colour scale centred at 1×
    (red: compiled slower, blue: faster); empty cells ran no matched pair."""
    vals = grid.to_numpy(dtype=float)
    fig, ax = plt.subplots(
        figsize=(1.5 + 0.9 * max(2, vals.shape[1]), 1.4 + 0.6 * max(2, vals.shape[0]))
    )
    finite = vals[np.isfinite(vals)]
    span = max(float(np.max(np.abs(np.log(finite)))) if finite.size else 0.1, 0.05)
    norm = LogNorm(vmin=float(np.exp(-span)), vmax=float(np.exp(span)))
    im = ax.imshow(
        np.ma.masked_invalid(vals), origin="lower", aspect="auto", cmap="RdBu", norm=norm
    )
    ax.set_facecolor("white")
    for i in range(vals.shape[0]):
        for j in range(vals.shape[1]):
            if np.isfinite(vals[i, j]):
                ax.text(j, i, f"{vals[i, j]:.2f}×", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(grid.columns)), [_label(v) for v in grid.columns])
    ax.set_yticks(range(len(grid.index)), [_label(v) for v in grid.index])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title or f"{family}: {mode} over eager (examples/s)", fontsize=9)
    cb = fig.colorbar(im, ax=ax, shrink=0.8, label="speedup")
    ticks = [float(np.exp(-span)), 1.0, float(np.exp(span))]
    cb.set_ticks(ticks, labels=[f"{t:.2g}×" for t in ticks])
    cb.ax.minorticks_off()
    title = title or f"{family}: {mode} over eager (examples/s)"
    try:
        fig.interactive = I.speedup_map(grid, family, title, y, x)
    except (KeyError, ValueError, TypeError):
        fig.interactive = None
    return fig


def _label(v: object) -> str:
    """16.0 (a column with NaN elsewhere) reads 16."""
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def speedups_by_family(families: pd.DataFrame, mode: str, ylabel: str | None = None) -> Figure:
    """Geometric-mean speedup per family with its 95% CI (the error bar); `ylabel` names the
    ratio (default: `<mode> over eager`; the backend section says `jax over torch-eager`)."""
    f = families[families["family"] != "all"]
    fig, ax = plt.subplots(figsize=(1.5 + 1.0 * max(2, len(f)), 3.2))
    g = f["geomean"].astype(float).to_numpy()
    lo = pd.to_numeric(f["geomean_ci_low"], errors="coerce").to_numpy()
    hi = pd.to_numeric(f["geomean_ci_high"], errors="coerce").to_numpy()
    err = np.vstack([np.where(np.isfinite(lo), g - lo, 0), np.where(np.isfinite(hi), hi - g, 0)])
    ax.bar(range(len(f)), g, yerr=err, capsize=4, color="steelblue")
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_xticks(range(len(f)), list(f["family"]))
    ax.set_ylabel(ylabel or f"{mode} over eager")
    ax.set_title("geometric-mean speedup per family, 95% CI", fontsize=9)
    return fig
