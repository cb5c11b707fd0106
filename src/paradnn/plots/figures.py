"""Matplotlib figures of the analysis results (the seeds' figures). Torch-free, headless.

Each function takes what `paradnn.analysis` returns and gives back a Figure; callers save it.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # no display: reports are built on servers and in CI

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from paradnn import formatting as U
from paradnn import rounding
from paradnn.analysis.frames import METRICS, ordered
from paradnn.plots import interactive as I
from paradnn.records import Status

STATUS_LABEL = {
    Status.OOM: "OOM",
    Status.PREDICTED_OOM: "pOOM",
    Status.TIMEOUT: "T/O",
    Status.CRASHED: "crash",
    Status.NAN: "NaN",
    Status.INVALID: "inv",
    Status.UNSUPPORTED: "n/a",
}


def png(fig: Figure, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _twin(fig: Figure, build, *args) -> Figure:
    """Attach the figure's interactive twin (plots/interactive.py) for the HTML report; data a
    twin cannot draw leaves the PNG alone in the page."""
    try:
        fig.interactive = build(*args)
    except (KeyError, ValueError, TypeError, AttributeError, IndexError):
        fig.interactive = None
    return fig


def _fmt(v: float, metric: str) -> str:
    if metric.startswith("utilization"):
        return f"{100 * v:.0f}%" if v >= 0.1 else f"{100 * v:.1f}%"
    if metric == "speedup":
        return U.times(v)
    if metric == "step_time_s":
        return U.ms(v)
    return U.si(v, digits=3)


def heatmap(hm) -> Figure:
    """Metric per cell; cells that failed show their status on white, as the paper's OOMs."""
    vals = hm.values.to_numpy(dtype=float)
    fig, ax = plt.subplots(
        figsize=(1.0 + 0.75 * max(3, vals.shape[1]), 1.2 + 0.5 * max(3, vals.shape[0]))
    )
    finite = vals[np.isfinite(vals)]
    im = ax.imshow(
        np.ma.masked_invalid(vals),
        origin="lower",
        aspect="auto",
        cmap="viridis",
        vmin=finite.min() if finite.size else 0,
        vmax=finite.max() if finite.size else 1,
    )
    ax.set_facecolor("white")
    for i, yv in enumerate(hm.values.index):
        for j, xv in enumerate(hm.values.columns):
            status = hm.status.at[yv, xv]
            if np.isfinite(vals[i, j]):
                lum = (vals[i, j] - finite.min()) / ((finite.max() - finite.min()) or 1)
                ax.text(
                    j,
                    i,
                    _fmt(vals[i, j], hm.metric),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if lum > 0.6 else "white",
                )
            elif isinstance(status, str) and status != Status.OK:
                ax.text(
                    j,
                    i,
                    STATUS_LABEL.get(status, status),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="crimson",
                )
    ax.set_xticks(range(len(hm.values.columns)), [str(v) for v in hm.values.columns])
    ax.set_yticks(range(len(hm.values.index)), [str(v) for v in hm.values.index])
    ax.set_xlabel(I.words(hm.x))
    ax.set_ylabel(I.words(hm.y))
    fixed = ", ".join(
        f"{k}={v}" + ("" if hm.paper_fixed.get(k) else "*") for k, v in hm.fixed.items()
    )
    if not all(hm.paper_fixed.values()):
        fixed += " (*not the paper's)"
    ax.set_title(f"{hm.family}: {METRICS.get(hm.metric, hm.metric)}\n{fixed}", fontsize=9)
    cb = fig.colorbar(im, ax=ax, shrink=0.8)
    cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _fmt(v, hm.metric)))
    return _twin(fig, I.heatmap, hm, _fmt)


def sensitivity(s) -> Figure:
    """Regression weights with their 95% intervals, largest effect on top."""
    t = s.table.iloc[::-1]
    fig, ax = plt.subplots(figsize=(5, 0.6 + 0.45 * max(2, len(t))))
    y = np.arange(len(t))
    colors = ["tab:green" if w > 0 else "tab:red" for w in t["weight"]]
    ax.barh(y, t["weight"], color=colors, alpha=0.8)
    ax.errorbar(
        t["weight"],
        y,
        xerr=[t["weight"] - t["ci_low"], t["ci_high"] - t["weight"]],
        fmt="none",
        ecolor="black",
        capsize=3,
        lw=1,
    )
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(
        y,
        [
            f"{h} ({tr})" if tr == "log2" else h
            for h, tr in zip(t["hyperparameter"], t["transform"], strict=True)
        ],
    )
    ax.set_xlabel("standardized weight (95% CI)")
    r2 = f", R² = {s.r2:.2f}" if s.r2 is not None else ""
    ax.set_title(f"{s.family}: sensitivity of {I.words(s.metric)} (n = {s.n}{r2})", fontsize=9)
    return _twin(fig, I.sensitivity, s)


def roofline(
    points: pd.DataFrame, roofs: Sequence, title: str, ops: pd.DataFrame | None = None
) -> Figure:
    """Achieved FLOP/s against arithmetic intensity under each known roof, drawn whole: the
    x-axis spans every roof's ridge point (marked and labelled), each roof is labelled with its
    peak and bandwidth, and each family's best point is labelled with its configuration."""
    fig, ax = plt.subplots(figsize=(6.8, 5.0))
    labels: list[tuple[str, float, float]] = []
    xs = [float(v) for v in points["intensity"]] + (
        [float(v) for v in ops["intensity"]] if ops is not None and len(ops) else []
    )
    ys = [float(v) for v in points["achieved_flops"]] + (
        [float(v) for v in ops["achieved_flops"]] if ops is not None and len(ops) else []
    )
    ridges = [r.ridge for r in roofs if r.ridge]
    span = [v for v in xs if v > 0] + [x * f for x in ridges for f in (0.25, 4)]
    lo = max(min(span, default=0.1) / 2, 1e-3)
    hi = max(max(span, default=100) * 2, 10)
    grid = np.logspace(math.log10(lo), math.log10(hi), 200)
    styles = {"datasheet": ("black", "--"), "measured": ("tab:blue", "-")}
    tops = []
    for roof in roofs:
        color, ls = styles.get(roof.kind, ("grey", ":"))
        what = ", ".join(
            s
            for s in (
                U.si(roof.peak_flops, "FLOP/s") if roof.peak_flops else "",
                U.si(roof.bandwidth, "B/s") if roof.bandwidth else "",
            )
            if s
        )
        label = f"{roof.kind} roof ({roof.source}): {what}"
        if roof.peak_flops and roof.bandwidth:
            ax.plot(
                grid, np.minimum(roof.peak_flops, roof.bandwidth * grid), color=color, ls=ls,
                label=label,
            )  # fmt: skip
            ax.axvline(roof.ridge, color=color, ls=":", lw=0.8)
            ax.text(  # at the foot of the ridge line, clear of the points
                roof.ridge * 1.08,
                0.03 + 0.07 * len(tops),
                f"ridge {U.number(roof.ridge)} FLOP/B",
                transform=ax.get_xaxis_transform(),
                fontsize=7,
                color=color,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
            )
            tops.append(roof.peak_flops)
        elif roof.peak_flops:
            ax.axhline(roof.peak_flops, color=color, ls=ls, label=label)
            tops.append(roof.peak_flops)
        elif roof.bandwidth:
            ax.plot(grid, roof.bandwidth * grid, color=color, ls=ls, label=label)
    for fam, g in points.groupby("family"):
        ax.scatter(g["intensity"], g["achieved_flops"], s=14, alpha=0.8, label=f"{fam} (model)")
        best = ordered(g, "achieved_flops", ["config_key"], ascending=False).iloc[0]
        labels.append((_point_label(fam, best), best["intensity"], best["achieved_flops"]))
    if ops is not None and len(ops):
        ax.scatter(
            ops["intensity"],
            ops["achieved_flops"],
            s=10,
            marker="x",
            color="grey",
            alpha=0.6,
            label="ops (profiled)",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    top = max(tops + ys, default=1e9)
    bottom = min([v for v in ys if v > 0] + [t / 1e3 for t in tops], default=top / 1e4)
    ax.set_ylim(bottom / 3, top * 3)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: U.number(v)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: U.si(v)))
    ax.set_xlabel("arithmetic intensity (FLOP/byte, analytic)")
    ax.set_ylabel("achieved FLOP/s")
    ax.set_title(title, fontsize=9)
    ax.legend(  # below the axes: clear of the points and the ridge label
        fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False
    )
    ax.grid(True, which="both", alpha=0.2)
    _label_points(ax, labels, lo, hi)
    return _twin(fig, I.roofline, points, roofs, title, ops)


def _label_points(ax, labels: list[tuple[str, float, float]], lo: float, hi: float) -> None:
    """Each family's best point labelled inside the axes: on the side of the point facing the
    plot's middle (never past an edge), stacked downwards so two labels cannot overlap."""
    mid = math.sqrt(lo * hi)
    for i, (text, x, y) in enumerate(sorted(labels, key=lambda t: (-rounding.key(t[2]), t[0]))):
        right = x <= mid
        ax.annotate(
            text,
            (x, y),
            xytext=(6 if right else -6, -10 - 11 * i),
            textcoords="offset points",
            ha="left" if right else "right",
            va="top",
            fontsize=6.5,
            annotation_clip=True,
            arrowprops={"arrowstyle": "-", "color": "#9aa5b1", "lw": 0.6},
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
        )


def _point_label(family: str, row) -> str:
    """'fc batch=512 nodes=1024': the family and its hyperparameters, batch first."""
    import json

    try:
        cfg = json.loads(row.get("config_key") or "{}")
    except (TypeError, ValueError):
        cfg = {}
    keys = (["batch"] if "batch" in cfg else []) + [k for k in cfg if k != "batch"][:2]
    return " ".join([family, *(f"{k}={cfg[k]}" for k in keys)])


def integer_colorbar(cb, values) -> None:
    """Ticks at the values themselves, labelled as plain integers (64, not 6×10¹)."""
    vals = sorted({float(v) for v in values if v == v})
    if not vals:
        return
    if len(vals) > 10:
        step = math.ceil(len(vals) / 8)
        vals = vals[::step]
    cb.set_ticks(vals)
    cb.set_ticklabels([str(int(v)) if v.is_integer() else U.number(v) for v in vals])
    cb.ax.minorticks_off()


def speedup_scatter(cmp, color_by: str | None = None) -> Figure:
    """Speedup per matched config against its parameter count (the paper's Figures 8-10)."""
    p = cmp.pairs
    fig, ax = plt.subplots(figsize=(6, 4))
    c = None
    if color_by and color_by in p and pd.to_numeric(p[color_by], errors="coerce").notna().all():
        c = pd.to_numeric(p[color_by])
    kw = {"norm": LogNorm()} if c is not None and (c > 0).all() and c.max() / c.min() >= 8 else {}
    sc = ax.scatter(p["params"], p["speedup"], c=c, s=16, cmap="plasma", **kw)
    if c is not None:
        integer_colorbar(fig.colorbar(sc, ax=ax, label=color_by), c)
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_xscale("log")
    if len(p) and p["speedup"].max() / max(p["speedup"].min(), 1e-12) > 10:
        ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: U.si(v)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: U.times(v)))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("trainable parameters")
    ax.set_ylabel(f"speedup of {cmp.b} over {cmp.a}")
    ax.set_title(
        f"{cmp.by}: {cmp.b} vs {cmp.a} ({METRICS.get(cmp.metric, cmp.metric)})", fontsize=9
    )
    return _twin(fig, I.speedup_scatter, cmp, color_by)


def param_ranges(df: pd.DataFrame) -> Figure:
    """Parameter counts per family: the paper space's range and what the database holds."""
    fig, ax = plt.subplots(figsize=(6, 0.8 + 0.4 * max(3, len(df))))
    for i, r in enumerate(df.itertuples()):
        color = "tab:orange" if r.kind == "real" else "tab:blue"
        if r.min == r.max:
            ax.scatter([r.min], [i], color=color, zorder=3)
        else:
            ax.plot(
                [r.min, r.max],
                [i, i],
                color=color,
                lw=6,
                alpha=0.4 if "space" in r.source else 0.9,
                solid_capstyle="butt",
            )
    ax.set_yticks(range(len(df)), [f"{r.family} ({r.source})" for r in df.itertuples()])
    ax.set_xscale("log")
    ax.set_xlabel("trainable parameters")
    ax.set_title("Model sizes (seed 000 Figure 1)", fontsize=9)
    ax.grid(True, axis="x", alpha=0.2)
    return fig


def batch_effect(df: pd.DataFrame, metric: str) -> Figure:
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for (fam, plat, prec), g in df.groupby(["family", "platform", "precision"]):
        ax.plot(g["batch"], g["ratio"], marker="o", label=f"{fam} {prec} ({plat})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel(f"{I.words(metric)} relative to smallest batch")
    ax.axhline(1, color="grey", lw=0.8)
    ax.legend(fontsize=7)
    ax.set_title("Batch-size effect (median over configs)", fontsize=9)
    return _twin(fig, I.batch_effect, df, metric)


def thread_scaling(df: pd.DataFrame) -> Figure:
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for (name, prec, ps), g in df.groupby(["name", "precision", "pass"]):
        ax.plot(g["threads"], g["speedup"], marker="o", label=f"{name} {prec} {ps}")
    t = sorted(df["threads"].unique())
    base = df["base_threads"].min() if len(df) else 1
    ax.plot(t, [x / base for x in t], color="grey", ls="--", label="linear")
    ax.set_xlabel("threads")
    ax.set_ylabel("speedup")
    ax.legend(fontsize=6, ncol=2)
    ax.set_title("CPU thread scaling", fontsize=9)
    return fig


def ops_bars(df: pd.DataFrame) -> Figure:
    """Achieved FLOP/s per op shape and precision (seed 002's Figure 7, the accelerator study)."""
    ok = df[df["status"] == Status.OK]
    pivot = ok.pivot_table(
        index="name", columns=["precision", "pass"], values="achieved_flops", aggfunc="median"
    )
    fig, ax = plt.subplots(figsize=(7, 3.8))
    (pivot / 1e9).plot.bar(ax=ax)
    ax.set_ylabel("GFLOP/s")
    ax.set_xlabel("")
    ax.set_title("Op micro-benchmarks", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def predicted_vs_measured(df: pd.DataFrame) -> Figure:
    """Simulator predictions against measured step times (labelled as predictions, with the
    model's name from the rows' `model` column: sim/fidelity.py)."""
    fig, ax = plt.subplots(figsize=(5, 4.5))
    for fam, g in df.groupby("family"):
        ax.scatter(g["measured_s"], g["predicted_s"], s=14, label=fam)
    lo = min(df["measured_s"].min(), df["predicted_s"].min()) / 2
    hi = max(df["measured_s"].max(), df["predicted_s"].max()) * 2
    ax.plot([lo, hi], [lo, hi], color="grey", ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured step time (s)")
    ax.set_ylabel("predicted step time (s) — prediction")
    ax.legend(fontsize=7)
    ax.set_title(I.model_title(df), fontsize=9)
    return _twin(fig, I.predicted_vs_measured, df)


def op_breakdown(shares: pd.DataFrame, title: str = "") -> Figure:
    """Share of each run's profiled time by op type, one stacked bar per run (seed 000
    Fig. 3(b)/(d) as shares); shares of at least 8% are written on the bar."""
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.32 * max(3, len(shares))))
    left = np.zeros(len(shares))
    cmap = plt.get_cmap("tab20")
    y = np.arange(len(shares))
    for i, col in enumerate(shares.columns):
        v = shares[col].to_numpy(dtype=float)
        ax.barh(y, v, left=left, color=cmap(i % 20), label=col, height=0.75)
        for j in np.nonzero(v >= 0.08)[0]:
            ax.text(left[j] + v[j] / 2, j, U.pct(v[j], 0), ha="center", va="center", fontsize=6)
        left += v
    ax.set_yticks(y, list(shares.index), fontsize=6.5)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: U.pct(v, 0)))
    ax.set_xlabel("share of profiled time per step")
    ax.legend(fontsize=6.5, ncol=min(5, len(shares.columns)), loc="lower center",
              bbox_to_anchor=(0.5, 1.0), frameon=False)  # fmt: skip
    if title:
        fig.suptitle(title, fontsize=9, y=1.02)
    return fig


def op_speedups(df: pd.DataFrame, a: str, b: str, by: str) -> Figure:
    """Per-op speedup of `b` over `a` against the op's arithmetic intensity, coloured by op
    type (seed 000 Fig. 6(b)-(c)); the geometric mean per op type is in the legend."""
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    cmap = plt.get_cmap("tab10")
    known = df[df["intensity"].notna()]
    for i, (kind, g) in enumerate(known.groupby("op_type", sort=True)):
        gm = float(np.exp(np.log(g["speedup"].astype(float)).mean()))
        ax.scatter(g["intensity"], g["speedup"], s=14, alpha=0.75, color=cmap(i % 10),
                   label=f"{kind} ({len(g)} ops, geomean {U.times(gm)})")  # fmt: skip
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: U.number(v)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: U.times(v)))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("arithmetic intensity (FLOP/byte, counted)")
    ax.set_ylabel(f"speedup of {b} over {a} (op time)")
    ax.set_title(f"Per-op speedup, {by}: {b} over {a}", fontsize=9)
    ax.legend(fontsize=6.5)
    ax.grid(True, which="both", alpha=0.2)
    return fig
