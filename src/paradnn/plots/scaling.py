"""Figures of data-parallel scaling (seed 000 Fig. 4's analogue; docs/scaling.md). Torch-free.

Each function takes analysis.scaling's efficiency table and returns a Figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure


def speedup_vs_procs(table: pd.DataFrame) -> Figure:
    """Speedup (with its interval) and per-rank utilization against N, one line per family,
    beside the ideal (speedup = N, utilization = 1)."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.6))
    top = max(2, int(table["procs"].max()) if len(table) else 2)
    ns = np.arange(1, top + 1)
    a1.plot(ns, ns, color="grey", lw=0.8, ls="--", label="ideal")
    a2.axhline(1.0, color="grey", lw=0.8, ls="--")
    for fam, g in table.groupby("family", sort=True):
        med = g.groupby("procs")[["speedup", "speedup_low", "speedup_high", "efficiency"]].median()
        x = np.r_[1, med.index.to_numpy()]
        y = np.r_[1.0, med["speedup"].to_numpy()]
        (line,) = a1.plot(x, y, marker="o", label=f"{fam} (median of {len(g)} runs)")
        lo, hi = med["speedup_low"].to_numpy(dtype=float), med["speedup_high"].to_numpy(dtype=float)
        ok = np.isfinite(lo) & np.isfinite(hi)
        if ok.any():
            xs, ys = med.index.to_numpy()[ok], med["speedup"].to_numpy()[ok]
            a1.errorbar(xs, ys, yerr=[ys - lo[ok], hi[ok] - ys], fmt="none", color=line.get_color())
        util = g.groupby("procs")["utilization"].median()
        a2.plot(np.r_[1, util.index.to_numpy()], np.r_[1.0, util.to_numpy(dtype=float)],
                marker="o", color=line.get_color(), label=fam)  # fmt: skip
    a1.set_xlabel("processes N")
    a1.set_ylabel("speedup over N = 1 (examples/s)")
    a1.legend(fontsize=7)
    a2.set_xlabel("processes N")
    a2.set_ylabel("per-rank FLOP/s ÷ single process's")
    a2.set_ylim(bottom=0)
    a1.set_title("Speedup against N", fontsize=9)
    a2.set_title("Utilization against N (paper Fig. 4)", fontsize=9)
    fig.tight_layout()
    return fig


def serial_fractions(table: pd.DataFrame) -> Figure:
    """The distribution of the Karp–Flatt serial fraction per family (the paper's
    'non-parallel fraction', up to 60% for FC and 40% for CNN on 8 TPU cores)."""
    fig, ax = plt.subplots(figsize=(6, 3.4))
    fams = sorted(table["family"].unique()) if len(table) else []
    data = [table.loc[table["family"] == f, "karp_flatt"].dropna().to_numpy() for f in fams]
    if fams:
        ax.boxplot(data, showfliers=True)
        ax.set_xticks(range(1, len(fams) + 1), fams)
        for i, d in enumerate(data, start=1):
            ax.scatter(np.full(len(d), i), d, s=10, alpha=0.6, zorder=3)
    ax.axhline(0.05, color="grey", lw=0.8, ls=":", label="5% (observation 3's threshold)")
    ax.set_ylabel("Karp–Flatt serial fraction e")
    ax.set_title("Non-parallel fraction per family", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def utilization_1_vs_n(table: pd.DataFrame) -> Figure:
    """Per-rank achieved FLOP/s at N against the single process's, x = y the no-overhead
    line: seed 000 Fig. 4's axes with measured FLOP/s (a CPU rank has no datasheet peak)."""
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    t = table.dropna(subset=["rank_flops", "base_flops"])
    for (fam, n), g in t.groupby(["family", "procs"], sort=True):
        ax.scatter(g["base_flops"], g["rank_flops"], s=16, label=f"{fam}, N = {n}")
    if len(t):
        hi = float(max(t["base_flops"].max(), t["rank_flops"].max())) * 1.1
        ax.plot([0, hi], [0, hi], color="grey", ls="--", lw=0.8)
        ax.set_xlim(0, hi)
        ax.set_ylim(0, hi)
    ax.set_xlabel("FLOP/s, N = 1")
    ax.set_ylabel("FLOP/s per rank, N ranks")
    ax.legend(fontsize=7)
    ax.set_title("One process against N (x = y: no overhead)", fontsize=9)
    return fig
