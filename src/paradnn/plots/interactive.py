"""Interactive twins of the report's figures: Plotly figures as plain JSON-able dicts (the page
embeds plotly.js once and draws them). Hovering a point names its configuration, a legend
entry toggles its series, and figures of one kind (`group`) share a selector in the page: one
box per slice instead of a figure each. Torch-free and plotly-free: this module writes the
figure description only; the matplotlib PNG of the same data is kept for papers.

Every string that came from a user or a machine is HTML-escaped here, since plotly.js reads
a subset of HTML in its labels.
"""

from __future__ import annotations

import json
import math
from html import escape, unescape
from typing import Any

import numpy as np
import pandas as pd

from paradnn import formatting as U
from paradnn.analysis.frames import METRICS

FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12}
COLORS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]
HOVER = "%{text}<extra></extra>"  # <extra></extra>: no second box naming the trace
# The longest line of a figure's title: about 300 px at the title's 13 px font, so a title
# fits the 390 px of a phone held upright (the page's narrow-screen padding and the figure's
# box leave a figure about 370 px; tests/test_report_browser.py draws it at 390 px). Longer
# ones break between words (<br>), and the top margin grows with the lines.
TITLE_CHARS = 44
# An axis title is centred on the plot area, narrower than the figure (a heat map's colour bar
# takes more): 32 characters. The x title of a figure whose legend sits under it keeps one line
# up to TITLE_CHARS: a second line would run into the legend.
AXIS_CHARS = 32
TITLE_LINE_PX = 18


def words(column: str) -> str:
    """An axis or legend title in words: utilization_measured -> 'FLOP/s utilization (of
    measured ceiling)', any other snake_case name with its underscores as spaces."""
    return METRICS.get(column, column.replace("_", " "))


def config_text(key: Any) -> str:
    """'batch=512 nodes=1024 layers=4' from a config key (JSON or dict), batch first."""
    if isinstance(key, str):
        try:
            key = json.loads(key)
        except ValueError:
            return escape(key)
    if not isinstance(key, dict):
        return ""
    order = (["batch"] if "batch" in key else []) + [k for k in key if k != "batch"]
    return escape(" ".join(f"{k}={key[k]}" for k in order))


def clean(obj: Any) -> Any:
    """NaN and infinities as null, numpy scalars as Python ones: JSON that browsers parse."""
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def figure(data: list[dict], layout: dict, group: str = "", height: int = 440) -> dict:
    """One Plotly figure with the report's defaults: words on the axes, SI ticks (never
    scientific notation), the legend below the plot so it cannot cover a point."""
    base = {
        "font": FONT,
        "height": height,
        "margin": {"l": 70, "r": 30, "t": 50, "b": 60},
        "hovermode": "closest",
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0},
        "paper_bgcolor": "#fff",
        "plot_bgcolor": "#fff",
    }
    for ax in ("xaxis", "yaxis"):
        a = layout.setdefault(ax, {})
        a.setdefault("exponentformat", "SI")
        a.setdefault("automargin", True)
        a.setdefault("gridcolor", "#e8ecef")
        a.setdefault("zeroline", False)
        a.setdefault("linecolor", "#9aa5b1")
        a.setdefault("showline", True)
    legend = layout.get("showlegend", True) and sum(tr.get("showlegend", True) for tr in data) > 1
    for ax in ("xaxis", "yaxis"):
        _log_ticks(layout[ax], [v for tr in data for v in (tr.get(ax[0]) or [])])
        title = layout[ax].get("title")
        if isinstance(title, dict) and isinstance(title.get("text"), str):
            most = TITLE_CHARS if ax == "xaxis" and legend else AXIS_CHARS
            title["text"] = wrap(title["text"], most)
    if isinstance(layout.get("title"), str):
        text = wrap(layout["title"])
        lines = text.count("<br>") + 1 if text else 0
        layout["title"] = {
            "text": text,
            "font": {"size": 13},
            "x": 0,
            "xref": "container",
            "xanchor": "left",
            # plotly lifts a title of n lines by about (n - 1) half lines: pushed back down
            "pad": {"l": 8, "t": 8 + TITLE_LINE_PX // 2 * (lines - 1)},
            "y": 1,
            "yref": "container",
            "yanchor": "top",
        }
        base["margin"] = {**base["margin"], "t": max(50, 26 + TITLE_LINE_PX * lines)}
    for i, tr in enumerate(data):  # a hover box never says "trace 0"
        tr.setdefault("name", tr.get("type", "series") if len(data) == 1 else f"series {i + 1}")
    return clean({"data": data, "layout": {**base, **layout}, "group": group})


def wrap(text: str, width: int = TITLE_CHARS) -> str:
    """An escaped title broken between words into lines of at most `width` characters as
    read (entities count as one), joined by <br>; a word longer than a line is cut."""
    words = unescape(text.replace("<br>", " ")).split()
    lines: list[str] = []
    for word in words:
        while len(word) > width:
            lines.append(word[:width])
            word = word[width:]
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        elif word:
            lines.append(word)
    return "<br>".join(escape(line) for line in lines)


def _log_ticks(axis: dict, values: list) -> None:
    """Ticks of a log axis at 1-2-5 (or decade) values, at most 8, labelled as the report
    writes numbers: plotly's own labels a short log range with bare digits (8, 9, 1×) that run
    into each other."""
    if axis.get("type") != "log" or "tickvals" in axis or "dtick" in axis:
        return
    if axis.get("range"):
        lo, hi = (10**v for v in axis["range"])
    else:
        v = [float(x) for x in values if isinstance(x, (int, float)) and x == x and x > 0]
        if not v:
            return
        lo, hi = min(v), max(v)
    decades = math.log10(hi / lo) if hi > lo else 0
    ticks: list[float] = []
    for mults in ((1,), (1, 3), (1, 2, 5), (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)):
        if decades > 4 and len(mults) > 1:
            continue
        ticks = [
            m * 10**d
            for d in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in mults
            if lo * 0.999 <= m * 10**d <= hi * 1.001
        ]
        if len(ticks) >= 3:
            break
    if len(ticks) < 2:
        ticks = sorted({float(f"{lo:.2g}"), float(f"{hi:.2g}")})
    step = math.ceil(len(ticks) / 8)
    ticks = ticks[::step]
    suffix = axis.pop("ticksuffix", "")
    axis["tickvals"] = ticks
    axis["ticktext"] = [U.number(t).replace(" ", "") + suffix for t in ticks]


def _range(values: list[float], log: bool, pad: float = 2.0) -> list[float] | None:
    v = [x for x in values if x is not None and math.isfinite(x) and (x > 0 or not log)]
    if not v:
        return None
    lo, hi = min(v), max(v)
    if log:
        return [math.log10(lo / pad), math.log10(hi * pad)]
    span = (hi - lo) or abs(hi) or 1.0
    return [lo - 0.05 * span, hi + 0.05 * span]


def roofline(points: pd.DataFrame, roofs, title: str, ops: pd.DataFrame | None = None) -> dict:
    """Achieved FLOP/s against intensity under each roof; each roof's ridge point is a dotted
    line in its legend group (toggled with it), named with its value in the legend rather than
    written on the plot, so no label can overlap a point or leave the plot."""
    xs = [float(v) for v in points["intensity"]] + (
        [float(v) for v in ops["intensity"]] if ops is not None and len(ops) else []
    )
    ys = [float(v) for v in points["achieved_flops"]] + (
        [float(v) for v in ops["achieved_flops"]] if ops is not None and len(ops) else []
    )
    ridges = [r.ridge for r in roofs if r.ridge]
    span = [v for v in xs if v > 0] + [x * f for x in ridges for f in (0.25, 4)]
    lo, hi = max(min(span, default=0.1) / 2, 1e-3), max(max(span, default=100) * 2, 10)
    tops = [r.peak_flops for r in roofs if r.peak_flops]
    top = max(tops + ys, default=1e9)
    bottom = min([v for v in ys if v > 0] + [t / 1e3 for t in tops], default=top / 1e4) / 3
    grid = np.logspace(math.log10(lo), math.log10(hi), 60)
    styles = {"datasheet": ("#1d232a", "dash"), "measured": ("#1f77b4", "solid")}
    data: list[dict] = []
    for i, roof in enumerate(roofs):
        color, dash = styles.get(roof.kind, ("#7f7f7f", "dot"))
        what = ", ".join(
            s
            for s in (
                U.si(roof.peak_flops, "FLOP/s") if roof.peak_flops else "",
                U.si(roof.bandwidth, "B/s") if roof.bandwidth else "",
                f"ridge {U.number(roof.ridge)} FLOP/B" if roof.ridge else "",
            )
            if s
        )
        name = escape(f"{roof.kind} roof ({roof.source}): {what}")
        if roof.peak_flops and roof.bandwidth:
            y = np.minimum(roof.peak_flops, roof.bandwidth * grid)
        elif roof.peak_flops:
            y = np.full_like(grid, roof.peak_flops)
        else:
            y = roof.bandwidth * grid
        lg = f"roof{i}"
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": list(grid),
                "y": list(y),
                "name": name,
                "legendgroup": lg,
                "line": {"color": color, "dash": dash, "width": 2},
                "hoverinfo": "skip",
            }
        )
        if roof.ridge:
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": [roof.ridge, roof.ridge],
                    "y": [bottom, top * 3],
                    "legendgroup": lg,
                    "showlegend": False,
                    "line": {"color": color, "dash": "dot", "width": 1},
                    "text": [f"ridge {U.number(roof.ridge)} FLOP/B"] * 2,
                    "hovertemplate": HOVER,
                }
            )
    for i, (fam, g) in enumerate(points.groupby("family", sort=True)):
        text = [
            f"<b>{escape(str(fam))}</b> {config_text(r.get('config_key'))}<br>"
            f"{U.number(r['intensity'])} FLOP/B · {U.si(r['achieved_flops'], 'FLOP/s')}"
            for _, r in g.iterrows()
        ]
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": list(g["intensity"]),
                "y": list(g["achieved_flops"]),
                "name": escape(f"{fam} (model)"),
                "text": text,
                "hovertemplate": HOVER,
                "marker": {"size": 7, "opacity": 0.8, "color": COLORS[(i + 2) % len(COLORS)]},
            }
        )
    if ops is not None and len(ops):
        text = [
            f"<b>{escape(str(r.get('op', 'op')))}</b><br>{U.number(r['intensity'])} FLOP/B · "
            f"{U.si(r['achieved_flops'], 'FLOP/s')}"
            for _, r in ops.iterrows()
        ]
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": list(ops["intensity"]),
                "y": list(ops["achieved_flops"]),
                "name": "ops (profiled)",
                "text": text,
                "hovertemplate": HOVER,
                "marker": {"symbol": "x", "size": 6, "color": "#7f7f7f", "opacity": 0.6},
            }
        )
    layout = {
        "title": escape(title),
        "xaxis": {
            "type": "log",
            "title": {"text": "arithmetic intensity (FLOP/byte, analytic)"},
            "range": [math.log10(lo), math.log10(hi)],
        },
        "yaxis": {
            "type": "log",
            "title": {"text": "achieved FLOP/s"},
            "range": [math.log10(bottom), math.log10(top * 3)],
        },
    }
    return figure(data, layout, group="roofline", height=480)


def speedup_scatter(cmp, color_by: str | None = None) -> dict:
    """The speedup of each matched config against its parameter count, one series per family
    (toggled in the legend), the config and its interval on hover."""
    p = cmp.pairs
    data = []
    shade = _shade(p, color_by)
    for i, (fam, g) in enumerate(p.groupby("family", sort=True)):
        text = []
        for _, r in g.iterrows():
            ci = ""
            if "ci_low" in r and not U.missing(r["ci_low"]):
                ci = f" [{U.times(r['ci_low'])}, {U.times(r['ci_high'])}]"
            call = (
                f" · {escape(str(r['call']))}" if "call" in r and isinstance(r["call"], str) else ""
            )
            text.append(
                f"<b>{escape(str(fam))}</b> {config_text(r.get('config_key'))}<br>"
                f"{U.times(r['speedup'])}{ci}{call} · {U.si(r['params'])} parameters"
            )
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": list(g["params"]),
                "y": list(g["speedup"]),
                "name": escape(str(fam)),
                "text": text,
                "hovertemplate": HOVER,
                "marker": _colour_by(g, color_by, shade, i)
                | {"size": 8, "opacity": 0.85, "symbol": SYMBOLS[i % len(SYMBOLS)]},
            }
        )
    sp = pd.to_numeric(p["speedup"], errors="coerce") if len(p) else pd.Series([1.0])
    log = bool(len(p)) and sp.max() / max(sp.min(), 1e-12) > 10
    layout = {
        "title": escape(f"{cmp.by}: {cmp.b} over {cmp.a} ({words(cmp.metric)})"),
        "xaxis": {"type": "log", "title": {"text": "trainable parameters"}},
        "yaxis": {
            "type": "log" if log else "linear",
            "ticksuffix": "×",
            "title": {"text": escape(f"speedup of {cmp.b} over {cmp.a}")},
        },
        "shapes": [
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": 1,
                "y1": 1,
                "line": {"color": "#9aa5b1", "width": 1},
            }
        ],
    }
    return figure(data, layout, group="speedup-scatter")


SYMBOLS = ["circle", "square", "diamond", "triangle-up", "cross", "x"]


def _shade(p: pd.DataFrame, color_by: str | None) -> tuple[float, float] | None:
    """The log2 range of a positive numeric column to colour points by (the batch size), or
    None: then each family has a colour of its own."""
    if not color_by or color_by not in p or not len(p):
        return None
    c = pd.to_numeric(p[color_by], errors="coerce")
    if c.isna().any() or (c <= 0).any():
        return None
    return float(np.log2(c.min())), float(np.log2(c.max()))


def _colour_by(g: pd.DataFrame, color_by: str | None, shade, i: int) -> dict:
    """Points shaded by log2 of `color_by` on one scale for every family (its colour bar on
    the first), or the family's own colour."""
    if shade is None:
        return {"color": COLORS[i % len(COLORS)]}
    lo, hi = shade
    ticks = [float(v) for v in range(math.floor(lo), math.ceil(hi) + 1)]
    ticks = ticks[:: math.ceil(len(ticks) / 6)] if ticks else ticks
    return {
        "color": list(np.log2(pd.to_numeric(g[color_by]).astype(float))),
        "colorscale": "Viridis",
        "cmin": lo,
        "cmax": hi if hi > lo else lo + 1,
        "showscale": i == 0,
        "colorbar": {
            "title": {"text": escape(color_by), "side": "right"},
            "thickness": 12,
            "tickvals": ticks,
            "ticktext": [f"{2**t:,.0f}" for t in ticks],
        },
    }


def heatmap(hm, fmt) -> dict:
    """The metric per cell, failed cells named by their status; hover gives both axes' values.
    `fmt(value, metric)` writes a cell as the PNG does."""
    vals = hm.values.to_numpy(dtype=float)
    xs = [str(v) for v in hm.values.columns]
    ys = [str(v) for v in hm.values.index]
    text = []
    for i, yv in enumerate(hm.values.index):
        row = []
        for j, xv in enumerate(hm.values.columns):
            status = hm.status.at[yv, xv]
            if math.isfinite(vals[i, j]):
                row.append(fmt(vals[i, j], hm.metric))
            elif isinstance(status, str) and status != "ok":
                row.append(escape(status))
            else:
                row.append("not run")
        text.append(row)
    fixed = ", ".join(f"{k}={v}" for k, v in hm.fixed.items())
    # the names escaped, plotly's own markup not: an escaped <extra> was shown as text
    hover = escape(f"{hm.x}=") + "%{x}, " + escape(f"{hm.y}=") + "%{y}: %{text}<extra></extra>"
    where = ", ".join(str(v) for v in hm.where.values())
    data = [
        {
            "type": "heatmap",
            "z": [[None if not math.isfinite(v) else v for v in r] for r in vals],
            "x": xs,
            "y": ys,
            "text": text,
            "texttemplate": "%{text}",
            "textfont": {"size": 10},
            "hovertemplate": hover,
            "name": escape(words(hm.metric)),
            "colorscale": "Viridis",
            "xgap": 1,
            "ygap": 1,
            "colorbar": {
                "exponentformat": "SI",
                "thickness": 12,
                **({"tickformat": ".2~%"} if hm.metric.startswith("util") else {}),
            },
        }
    ]
    layout = {
        "title": escape(f"{hm.family} on {where}: {words(hm.metric)}") if where else "",
        "xaxis": {"type": "category", "title": {"text": escape(hm.x)}, "showgrid": False},
        "yaxis": {"type": "category", "title": {"text": escape(hm.y)}, "showgrid": False},
        "annotations": [],
    }
    if fixed:
        layout["xaxis"]["title"]["text"] += escape(f" (fixed: {fixed})")
    height = max(320, min(640, 140 + 34 * len(ys)))
    return figure(data, layout, group=f"heatmap-{hm.family}-{hm.metric}", height=height)


def batch_effect(df: pd.DataFrame, metric: str) -> dict:
    data = []
    for i, ((fam, plat, prec), g) in enumerate(df.groupby(["family", "platform", "precision"])):
        g = g.sort_values("batch", kind="stable")  # one row per batch size: no ties
        name = escape(f"{fam} {prec} ({plat})")
        text = [
            f"<b>{name}</b> batch={int(r['batch'])}<br>{U.times(r['ratio'])} of the smallest "
            f"batch · {int(r['configs']) if 'configs' in r else ''} configs"
            for _, r in g.iterrows()
        ]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": list(g["batch"]),
                "y": list(g["ratio"]),
                "name": name,
                "text": text,
                "hovertemplate": HOVER,
                "line": {"color": COLORS[i % len(COLORS)]},
            }
        )
    layout = {
        "title": escape(f"Batch-size effect on {words(metric)} (median over configs)"),
        "xaxis": {"type": "log", "title": {"text": "batch size"}, "dtick": math.log10(2)},
        "yaxis": {
            "title": {"text": "relative to the smallest batch"},
            "ticksuffix": "×",
        },
    }
    return figure(data, layout, group="batch")


def model_title(df: pd.DataFrame) -> str:
    """'Step-time model vs measurement (predicted)': the model the rows name (`model`)."""
    models = sorted(set(df["model"].dropna().astype(str))) if "model" in df else []
    names = {"step": "Step-time model", "roofline": "Roofline model"}
    what = " / ".join(names.get(m, f"{m} model") for m in models) or "What-if model"
    return f"{what} vs measurement (predicted)"


def predicted_vs_measured(df: pd.DataFrame) -> dict:
    """Predicted against measured step time per config (predictions, labelled so), log-log,
    with the line of perfect prediction."""
    data = []
    for i, (fam, g) in enumerate(df.groupby("family", sort=True)):
        text = [
            f"<b>{escape(str(fam))}</b> {config_text(r.get('config'))}<br>measured "
            f"{U.ms(r['measured_s'])}, predicted {U.ms(r['predicted_s'])}"
            + (f" ({U.error(r['ape'])} off)" if "ape" in r and not U.missing(r["ape"]) else "")
            for _, r in g.iterrows()
        ]
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": list(g["measured_s"] * 1e3),
                "y": list(g["predicted_s"] * 1e3),
                "name": escape(str(fam)),
                "text": text,
                "hovertemplate": HOVER,
                "marker": {"size": 7, "color": COLORS[i % len(COLORS)]},
            }
        )
    both = [float(v) * 1e3 for c in ("measured_s", "predicted_s") for v in df[c] if v == v]
    r = _range(both, True)
    if r:
        ends = [10 ** r[0], 10 ** r[1]]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": ends,
                "y": ends,
                "name": "prediction = measurement",
                "line": {"color": "#9aa5b1", "dash": "dash", "width": 1},
                "hoverinfo": "skip",
            }
        )
    layout = {
        "title": model_title(df),
        "xaxis": {"type": "log", "title": {"text": "measured step time (ms)"}},
        "yaxis": {"type": "log", "title": {"text": "predicted step time (ms), a prediction"}},
    }
    return figure(data, layout, group="prediction")


def sensitivity(s) -> dict:
    """Regression weights with their 95% intervals, largest effect on top."""
    t = s.table.iloc[::-1]
    names = [
        escape(f"{h} ({tr})" if tr == "log2" else str(h))
        for h, tr in zip(t["hyperparameter"], t["transform"], strict=True)
    ]
    text = [
        f"<b>{n}</b>: {U.signed(w)} [{U.signed(lo)}, {U.signed(hi)}]"
        for n, w, lo, hi in zip(names, t["weight"], t["ci_low"], t["ci_high"], strict=True)
    ]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "x": list(t["weight"]),
            "y": names,
            "text": text,
            "textposition": "none",
            "hovertemplate": HOVER,
            "showlegend": False,
            "marker": {"color": ["#2ca02c" if w > 0 else "#d62728" for w in t["weight"]]},
            "error_x": {
                "type": "data",
                "symmetric": False,
                "array": list(t["ci_high"] - t["weight"]),
                "arrayminus": list(t["weight"] - t["ci_low"]),
                "color": "#1d232a",
            },
        }
    ]
    r2 = f", R² = {s.r2:.2f}" if s.r2 is not None else ""
    layout = {
        "title": escape(f"{s.family}: weights on {words(s.metric)} (n = {s.n}{r2})"),
        "xaxis": {
            "title": {"text": "standardized weight (95% CI)"},
            "zeroline": True,
            "zerolinecolor": "#9aa5b1",
        },
        "yaxis": {"type": "category"},
    }
    return figure(data, layout, group=f"sensitivity-{s.metric}", height=max(260, 90 + 40 * len(t)))


def speedup_map(grid: pd.DataFrame, family: str, title: str, y: str, x: str) -> dict:
    """A speedup per (y, x) cell on a diverging scale centred at 1× (log), every map of a
    family in one selector (one per compared pair)."""
    vals = grid.to_numpy(dtype=float)
    finite = vals[np.isfinite(vals)]
    span = max(float(np.max(np.abs(np.log(finite)))) if finite.size else 0.1, 0.05)
    z = [[math.log(v) if math.isfinite(v) and v > 0 else None for v in row] for row in vals]
    text = [[U.times(v) if math.isfinite(v) else "no pair" for v in row] for row in vals]
    ticks = [-span, 0.0, span]
    data = [
        {
            "type": "heatmap",
            "z": z,
            "x": [_label(v) for v in grid.columns],
            "y": [_label(v) for v in grid.index],
            "text": text,
            "texttemplate": "%{text}",
            "textfont": {"size": 10},
            "zmin": -span,
            "zmax": span,
            "colorscale": "RdBu",
            "xgap": 1,
            "ygap": 1,
            "hovertemplate": escape(f"{x}=%{{x}}, {y}=%{{y}}: %{{text}}") + "<extra></extra>",
            "colorbar": {
                "title": {"text": "speedup", "side": "right"},
                "thickness": 12,
                "tickvals": ticks,
                "ticktext": [U.times(math.exp(t)) for t in ticks],
            },
        }
    ]
    layout = {
        "title": escape(title),
        "xaxis": {"type": "category", "title": {"text": escape(x)}, "showgrid": False},
        "yaxis": {"type": "category", "title": {"text": escape(y)}, "showgrid": False},
    }
    height = max(300, min(600, 140 + 34 * len(grid.index)))
    return figure(data, layout, group=f"speedup-map-{family}", height=height)


def _label(v: object) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
