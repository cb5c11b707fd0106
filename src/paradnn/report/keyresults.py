"""The report's first screen: what was learned, computed from the tables the sections wrote
(`Writer.frames`) and the runs, each line linking to the table it rests on.

Three kinds of line, in this order: the seeds' observations that hold or do not hold here
(their claim in words first, the statistic after); the best and the worst utilization of an
ok run, with its configuration; and every speedup whose geometric mean's interval (a 95% CI
when measured, the model's error band when predicted) lies wholly on one side of 1.
Inconclusive findings are counted, not listed: their table says what would decide them.
Nothing here is computed anew, so it cannot disagree with the section it links to.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import pandas as pd

from paradnn import formatting as U
from paradnn import rounding
from paradnn.analysis import findings as F
from paradnn.analysis.frames import ordered
from paradnn.report.writer import Frame, Writer, slug
from paradnn.utilization import RECALIBRATE

MAX_SPEEDUPS = 8
CI_ENDS = ("geomean_ci_low", "geomean_ci_high")
DECIDED = (F.HOLDS, F.FAILS)
# Run settings named beside a configuration where the runs differ in them.
SETTINGS = ("mode", "threads", "procs", "torch_version", "backend", "data_source", "optimizer")


@dataclass(frozen=True)
class Line:
    kind: str  # 'verdict', 'utilization', 'speedup', 'count'
    words: str  # what was learned, in words
    stat: str  # the number behind it
    href: str  # the table or section it rests on
    tone: str = ""  # a verdict or call word the template colours (holds, faster, ...)


def lines(w: Writer, runs: pd.DataFrame) -> list[Line]:
    """The key results of a report, from its writer's tables and the ok runs it analysed."""
    return _verdicts(w.frames.get("findings-all")) + _utilization(runs) + _speedups(w.frames)


def _verdicts(fr: Frame | None) -> list[Line]:
    if fr is None or not len(fr.df):
        return []
    fs = fr.df
    out = [
        Line("verdict", str(r.claim), f"{r.evidence} ({r.source})", "#t-findings", str(r.verdict))
        for r in fs[fs["verdict"].isin(DECIDED)].itertuples()
    ]
    n = int((fs["verdict"] == F.INCONCLUSIVE).sum())
    if n:
        out.append(
            Line(
                "count",
                f"{n} observation{'s' if n != 1 else ''} inconclusive on this data",
                "the interval straddles the threshold; the table says what more data would "
                "decide each",
                "#t-findings",
                F.INCONCLUSIVE,
            )
        )
    return out


def _utilization(runs: pd.DataFrame) -> list[Line]:
    """The best and the worst ok run by utilization of the measured ceiling (else of the
    datasheet peak): family, configuration, platform, precision. A run above 100 % of its
    denominator beat it (utilization.py): no headline, said in a line of its own."""
    for col, of in (("utilization_measured", "measured ceiling"), ("utilization_datasheet",
                    "datasheet peak")):  # fmt: skip
        if col not in runs:
            continue
        u = pd.to_numeric(runs[col], errors="coerce")
        if col == "utilization_measured" and "ceiling_beaten" in runs:
            over = runs["ceiling_beaten"].map(lambda v: not U.missing(v) and bool(v))
        else:
            over = u > 1
        over = over & u.notna()
        ok = runs[u.notna() & (u > 0) & ~over]
        beaten = _beaten(runs[over], u[over], of)
        if len(ok) < 2:
            if beaten:
                return beaten
            continue
        u = u[ok.index]
        differ = [c for c in SETTINGS if c in ok and ok[c].astype(str).nunique() > 1]
        # equal within rounding: the first by name (never by a float's last bit or row order)
        names = ["family", "config_key", "platform", "precision", *differ, "run_key"]
        high, low = (ordered(ok.assign(_u=u), "_u", names, up).index[0] for up in (False, True))
        out = []
        for which, idx in (("Highest", high), ("Lowest", low)):
            r = ok.loc[idx]
            out.append(
                Line(
                    "utilization",
                    f"{which} utilization: {r['family']} {_config(r.get('config_key'))} on "
                    f"{r['platform']} {r['precision']}"
                    + "".join(f", {c.replace('_', ' ')} {r[c]}" for c in differ),
                    f"{U.pct(u[idx], 1 if U.shown(u[idx]) >= 0.01 else 2)} of the {of}, "
                    f"{U.si(r.get('achieved_flops'), 'FLOP/s')}; over {len(ok)} ok runs"
                    + (f" ({len(over[over])} above the {of} left out)" if over.any() else ""),
                    "#summary",
                )
            )
        return out + beaten
    return []


def _beaten(over: pd.DataFrame, u: pd.Series, of: str) -> list[Line]:
    """One line for the runs above 100 % of their denominator: kept out of the headline, the
    highest named, and what to do (utilization.BEATEN_LEGEND)."""
    if not len(over):
        return []
    idx = u.idxmax()
    r = over.loc[idx]
    n = len(over)
    what = (
        f"re-measure it: `{RECALIBRATE}`"
        if of == "measured ceiling"
        else "check the run's FLOP count and the platform entry"
    )
    return [
        Line(
            "count",
            f"{n} ok run{'s' if n != 1 else ''} above 100% of the {of}: "
            f"{'it is' if of == 'measured ceiling' else 'the peak is'} beaten, so "
            f"{'they are' if n != 1 else 'it is'} no utilization headline",
            f"highest {U.pct(u[idx], 1)} ({r['family']} on {r['platform']} {r['precision']}, "
            f"{U.si(r.get('achieved_flops'), 'FLOP/s')}); {what}",
            "#summary",
            "beaten",
        )
    ]


def _speedups(frames: dict[str, Frame]) -> list[Line]:
    """Each comparison's overall geometric mean (per family where it has no 'all' row) whose
    interval excludes 1, largest effect first. A measured comparison's interval is its 95% CI;
    a predicted one (`report --what-if`: columns geomean_band_low/high and `pair`) names both
    platforms as its table does ('tpu-v2 (predicted) over PlatA') and its interval is the
    model's error band, so called."""
    found = []
    for name, fr in frames.items():
        df = fr.df
        band = {"geomean_band_low", "geomean_band_high", "pair"} <= set(df)
        ends = ("geomean_band_low", "geomean_band_high") if band else CI_ENDS
        if not {"geomean", *ends, "geomean_call"} <= set(df):
            continue
        # a table without a family column is one overall comparison (no 'all' row to pick)
        overall = "family" in df and (df["family"] == "all").any()
        rows = df[df["family"] == "all"] if overall else df
        what = str(df["pair"].iloc[0]) if band and len(df) else _what(name, fr.caption)
        for r in rows.to_dict("records"):
            if r["geomean_call"] not in ("faster", "slower") or U.missing(r["geomean"]):
                continue
            fam = "" if r.get("family", "all") == "all" else f" ({r['family']})"
            n = r.get("n")
            configs = f", {U.count(n)} matched configs" if n is not None and n == n else ""
            lo, hi = r[ends[0]], r[ends[1]]
            interval = (
                f" ({U.band_range(lo, hi)}; {r.get('basis') or 'predicted'})"
                if band
                else f", 95% CI {U.times_range(lo, hi)}"
            )
            found.append(
                (
                    abs(math.log(float(r["geomean"]))),
                    Line(
                        "speedup",
                        f"{what}{fam}: {r['geomean_call']}",
                        f"{U.times(r['geomean'])} geometric mean{interval}{configs}",
                        f"#t-{slug(name)}",
                        str(r["geomean_call"]),
                    ),
                )
            )
    found.sort(key=lambda t: (-rounding.key(t[0]), t[1].words, t[1].stat))  # ties by name
    seen, out = set(), []
    for _, line in found:  # the modes section's table repeats the speedups section's
        if line.stat not in seen:
            seen.add(line.stat)
            out.append(line)
    return out[:MAX_SPEEDUPS]


def _what(name: str, caption: str) -> str:
    """'bf16 over fp32 (precision)' from a speedup table's name, else its caption's head."""
    m = re.fullmatch(r"speedup-(\w+)-(.+)-over-(.+)", name)
    if m:
        return f"{m.group(2)} over {m.group(3)} ({m.group(1).replace('_', ' ')})"
    return re.split(r" — | per family|:", caption)[0]


def _config(key) -> str:
    try:
        cfg = json.loads(key) if isinstance(key, str) else dict(key or {})
    except (TypeError, ValueError):
        return ""
    order = (["batch"] if "batch" in cfg else []) + [k for k in cfg if k != "batch"]
    return " ".join(f"{k}={cfg[k]}" for k in order)
