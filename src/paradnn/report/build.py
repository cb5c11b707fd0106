"""One self-contained HTML report from one or more result databases, plus its figures (PNG) and
tables (CSV) as files. Torch-free: a laptop builds the report of a GPU sweep.

Every section appears; one without data says which command would produce it. Every string that
came from a user or a machine (configs, device and host names, error text, paths) is escaped.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

import paradnn
from paradnn import analysis as A
from paradnn import paths
from paradnn import plots as P
from paradnn.analysis.frames import (
    METRICS,
    choice_note,
    choose,
    default_metric,
    largest_group,
    noisy_ok,
    reason_counts,
    select,
    slice_columns,
    where_text,
    without_noisy,
)
from paradnn.analysis.heatmap import figure7_fixed
from paradnn.errors import ConfigError
from paradnn.report import backends as _backends
from paradnn.report import cells
from paradnn.report import infeed as _infeed
from paradnn.report import modes as _modes
from paradnn.report.scaling import section as scaling_section


@dataclass
class Figure:
    name: str
    caption: str
    data: str = ""  # base64 PNG


@dataclass
class Section:
    id: str
    title: str
    intro: str = ""
    figures: list[Figure] = field(default_factory=list)
    tables: list[tuple[str, str]] = field(default_factory=list)  # (caption, escaped HTML)
    notes: list[str] = field(default_factory=list)
    empty: str | None = None  # what to run when there is no data
    lists: list[tuple[str, list[str]]] = field(default_factory=list)  # (heading, one line each)


@dataclass
class Report:
    html: Path
    figures: list[Path]
    tables: list[Path]
    sections: list[Section]


class _Writer:
    """Collects figures and tables, writing each to disk as it goes."""

    def __init__(self, out: Path):
        self.out = out
        (out / "figures").mkdir(parents=True, exist_ok=True)
        (out / "tables").mkdir(parents=True, exist_ok=True)
        self.figures: list[Path] = []
        self.tables: list[Path] = []

    def figure(self, name: str, fig, caption: str) -> Figure:
        data = P.png(fig)
        path = self.out / "figures" / f"{_slug(name)}.png"
        path.write_bytes(data)
        self.figures.append(path)
        return Figure(name, caption, base64.b64encode(data).decode("ascii"))

    def table(
        self,
        name: str,
        df: pd.DataFrame,
        caption: str,
        index: bool = False,
        max_rows: int = 60,
        units: dict | None = None,
    ) -> tuple[str, str]:
        """The CSV keeps numbers as numbers (plus one column per hyperparameter); the HTML
        shows units, percentages and human headers (report/cells.py; `units` overrides a
        column's formatter by name: 'pct', 'times', 'params', ...)."""
        path = self.out / "tables" / f"{_slug(name)}.csv"
        cells.expand_config(df, keep=True).to_csv(path, index=index)
        self.tables.append(path)
        shown = df.head(max_rows)
        html = cells.html_table(shown, index=index, units=units)
        more = (
            f" (first {max_rows} of {len(df)}; all in tables/{path.name})"
            if len(df) > max_rows
            else ""
        )
        return caption + more, html


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:120] or "x"


def build(
    dbs: Sequence[str | Path],
    out: str | Path = "report",
    progress: Callable[[str], None] | None = None,
    include_noisy: bool = False,
) -> Report:
    """Read the databases, analyse, and write out/report.html (+ figures/, tables/).

    Runs flagged noisy (analysis.frames.add_quality) are left out of every figure, table and
    comparison unless `include_noisy`; the summary says how many and why. The run counts, the
    failures and the provenance always see every run."""
    say = progress or (lambda _msg: None)
    if not dbs:
        raise ConfigError("--db", "(none)", "at least one result database")
    out = paths.output_folder("--out", out)  # before any work: a file in the way, read-only
    full = A.load(dbs)
    data, noisy = (full, None) if include_noisy else without_noisy(full)
    w = _Writer(out)
    sections: list[Section] = []
    for title, fn in _SECTIONS:
        say(title)
        if fn is _summary:
            sections.append(_summary(data, w, every=full))
        else:
            sections.append(fn(full if fn in _EVERY_RUN else data, w))
    notes = [n for n in (_noisy_note(full, noisy), choice_note(choose(full.runs))) if n]
    for note in reversed(notes):
        for sec in sections:
            if sec.id in ("summary", "speedups") and not sec.empty:
                sec.notes.insert(0, note + ".")
    if full.skipped:
        sections[0].notes.insert(0, _skipped_note(full.skipped))
    html = _render(data, sections)
    path = out / "report.html"
    path.write_text(html, encoding="utf-8")
    return Report(path, w.figures, w.tables, sections)


def _skipped_note(skipped: list[dict]) -> str:
    """One line: the rows a database held that could not be read, each named (the first 10)."""
    named = "; ".join(
        f"{r['db']} {'run' if r['table'] == 'runs' else r['table']} {r['id']}: {r['column']} "
        f"{r['problem']}"
        for r in skipped[:10]
    )
    more = f"; and {len(skipped) - 10} more" if len(skipped) > 10 else ""
    return f"{len(skipped)} stored rows could not be read and are left out: {named}{more}."


def _noisy_note(full: A.Data, left_out: pd.DataFrame | None) -> str | None:
    """One line: how many noisy runs were left out (or kept) and the commonest reasons."""
    runs = choose(full.runs)
    n = int(noisy_ok(runs).sum())
    if not n:
        return None
    reasons = "; ".join(f"{r} ({k})" for r, k in list(reason_counts(runs).items())[:4])
    if left_out is None:
        return f"{n} runs flagged noisy are included (--include-noisy): {reasons}"
    return (
        f"{n} of {int((runs['status'] == 'ok').sum())} ok configs have no good attempt (their "
        f"latest is flagged noisy) and are left out of every figure, table and comparison "
        f"below: {reasons}. `paradnn report --include-noisy` keeps them"
    )


# --- sections ------------------------------------------------------------------------------


def _summary(data: A.Data, w: _Writer, every: A.Data | None = None) -> Section:
    """Run counts from every run (`every`: noisy ones too, as a column of their own); the
    per-group medians from `data`."""
    s = Section("summary", "Summary")
    all_runs = choose((every or data).runs)
    runs = choose(data.runs)
    if not len(all_runs):
        s.empty = "No runs yet: `paradnn run` (default preset) or `paradnn run --preset paper`."
        return s
    counts = pd.crosstab(all_runs["family"], all_runs["status"])
    noisy = noisy_ok(all_runs)
    if noisy.any():
        counts["of which noisy"] = all_runs[noisy].groupby("family").size()
        counts["of which noisy"] = counts["of which noisy"].fillna(0).astype(int)
    # crosstab names its column index "status": rendered, that name became an empty column
    counts.columns.name = None
    counts = counts.reset_index()
    s.tables.append(
        w.table(
            "status-by-family",
            counts,
            "Runs by family and status (the chosen attempt of each configuration: its best "
            "good attempt, else its latest; as in compare and the findings)",
        )
    )
    ok = runs[runs["status"] == "ok"]
    if len(ok):
        agg = (
            ok.groupby(["family", "platform", "precision"])
            .agg(
                runs=("uid", "count"),
                median_examples_per_s=("examples_per_s", "median"),
                max_achieved_flops=("achieved_flops", "max"),
                max_util_measured=("utilization_measured", "max"),
                p90_util_measured=("utilization_measured", _p90),
                max_util_datasheet=("utilization_datasheet", "max"),
                p90_util_datasheet=("utilization_datasheet", _p90),
            )
            .reset_index()
        )
        over = agg[agg["max_util_measured"].astype(float) > 1]
        if len(over):
            s.notes.append(
                "Utilization above 100% of the measured ceiling ("
                + ", ".join(f"{r.family} on {r.platform} {r.precision}" for r in over.itertuples())
                + "): runs achieved more than the stored matmul ceiling, so that calibration "
                "under-measured the device (too small a matrix, or a loaded machine). `paradnn "
                "calibrate --force` measures it again; utilization is stored with each run."
            )
        s.tables.append(
            w.table(
                "summary",
                agg,
                "Successful runs per family, platform and precision (utilization: of the "
                "measured ceiling / datasheet peak; its maximum and 90th percentile over runs)",
            )
        )
    return s


def _p90(x: pd.Series) -> float:
    """The 90th percentile (linear interpolation) of the numbers in a column; NaN if none."""
    v = pd.to_numeric(x, errors="coerce").dropna()
    return float(v.quantile(0.9)) if len(v) else float("nan")


def _provenance(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "provenance", "Data and environment", "Where every number in this report comes from."
    )
    src = pd.DataFrame(
        [
            {
                k: (
                    ", ".join(v)
                    if isinstance(v, list)
                    else (", ".join(f"{a}={b}" for a, b in v.items()) if isinstance(v, dict) else v)
                )
                for k, v in x.items()
            }
            for x in data.sources
        ]
    )
    s.tables.append(w.table("sources", src, "Databases merged into this report"))
    runs = data.runs
    if len(runs) and "fingerprint" in runs:
        cols = [
            c
            for c in (
                "hostname",
                "platform",
                "device",
                "threads",
                "python_version",
                "torch_version",
                "cuda_version",
                "cudnn_version",
                "driver_version",
                "cpu_model",
                "gpu_name",
                "fingerprint",
            )
            if c in runs
        ]
        env = runs[cols].drop_duplicates().reset_index(drop=True)
        s.tables.append(
            w.table("environments", env, "Distinct environments (one row per fingerprint)")
        )
    if len(data.ceilings):
        c = data.ceilings[["device_name", "kind", "precision", "value", "unit", "measured_at"]]
        s.tables.append(w.table("ceilings", c, "Measured ceilings (`paradnn calibrate`)"))
    else:
        s.notes.append(
            "No measured ceilings: `paradnn calibrate` measures this device's matmul "
            "FLOP/s and memory bandwidth (utilization and the measured roofline use "
            "them)."
        )
    return s


FINDING_HEADERS = {
    "interval": "95% interval vs threshold",
    "decide": "what would decide it",
    "quote": "the seed says",
}


def _findings(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "findings",
        "Findings: the seeds' observations, tested on this data",
        "Each verdict is computed from the data in this report by the stated rule: holds or "
        "does not hold only when the 95% interval of the number it is decided on lies wholly "
        "on one side of the rule's threshold, inconclusive when the interval straddles it "
        "(with what more data would decide it); observations about hardware or run kinds the "
        "data lacks are untestable, not guessed. Beside each citation, a phrase of the seed. "
        "The seeds: " + "; ".join(f"{k} is {v}" for k, v in A.findings.SEEDS.items()) + ".",
    )
    fs = A.findings.as_frame(A.evaluate(data, include_noisy=True))  # `data` is already filtered
    never = fs["id"].isin(A.findings.NEVER_TESTABLE)
    here = (fs["verdict"] == A.findings.UNTESTABLE) & ~never
    tested = fs[~never & ~here]
    s.tables.append(
        w.table(
            "findings",
            tested[
                ["verdict", "claim", "evidence", "interval", "decide", "source", "quote", "rule"]
            ].rename(columns=FINDING_HEADERS),
            "Verdicts",
        )
    )
    if here.any():
        s.lists.append(
            (
                "Untestable on this data: paradnn can produce what they need (another "
                "platform, torch version or run kind), this report's databases do not hold it",
                [f"{r.claim} — {r.source}: {r.evidence}." for r in fs[here].itertuples()],
            )
        )
    if never.any():
        s.lists.append(
            (
                "Untestable on any data paradnn can produce: they are about TPU "
                "hardware or 1,024-chip systems, which paradnn does not measure",
                [f"{r.claim} — {r.source}: {r.evidence}." for r in fs[never].itertuples()],
            )
        )
    w.table("findings-all", fs, "")  # every finding, one CSV
    return s


def _param_ranges(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "params",
        "Model sizes (seed 000 Figure 1)",
        "Trainable parameters per family: the paper space's range (counted from the "
        "analytic formulas) and the configurations in the database.",
    )
    df = A.param_ranges(data)
    if not len(df):
        s.empty = "No families registered."
        return s
    s.figures.append(w.figure("params", P.param_ranges(df), "Parameter counts per family"))
    s.tables.append(
        w.table(
            "param-ranges",
            df,
            "Parameter ranges",
            units={"min": "params", "median": "params", "max": "params"},
        )
    )
    return s


def _heatmaps(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "heatmaps",
        "Heat maps (seed 000 Figures 2(a)-(c) and 7)",
        "A metric over batch size and the family's width hyperparameter with the other "
        "hyperparameters fixed (the paper's values when the data has them, else the "
        "most common value, as stated under each map): utilization (Figure 2) and, per "
        "platform, examples/s (Figure 7, which fixes FC at 64 layers where Figure 2 fixes 32: "
        "64 where the data has it, else the closest layer count present, said under the map). "
        "Failed cells show their status.",
    )
    for fam in sorted(data.hyperparameters):
        hps = data.hyperparameters[fam]
        if "batch" not in hps or len(hps) < 2:
            continue
        try:
            hm = A.heatmap(data, fam)
        except ConfigError as e:
            s.notes.append(f"{fam}: {e}")
            continue
        if hm.cells < 2:
            s.notes.append(
                f"{fam}: {hm.cells} cell(s) at the fixed values "
                f"({_fixed_text(hm)}): too few for a map."
            )
            continue
        where = where_text(hm.where)
        cap = f"{fam} on {where}: {METRICS.get(hm.metric, hm.metric)}; fixed {_fixed_text(hm)}"
        s.figures.append(w.figure(f"heatmap-{fam}", P.heatmap(hm), cap))
    _throughput_maps(data, w, s)
    if not s.figures:
        s.empty = (
            "Needs a sweep over batch and width: `paradnn run --preset paper-fc` (or "
            "paper-cnn, paper-rnn; `--preset cpu` for a CPU-sized one)."
        )
    return s


def _throughput_maps(data: A.Data, w: _Writer, s: Section) -> None:
    """Examples/s over batch and width per platform (seed 000 Figure 7: the same grid on each
    platform, failed cells marked), at each platform's most common precision."""
    if not len(data.ok):
        return
    plats = A.speedup.values(data, "platform")[:3]
    for fam in sorted(data.hyperparameters):
        hps = data.hyperparameters[fam]
        if "batch" not in hps or len(hps) < 2:
            continue
        for plat in plats:
            ok = data.ok[(data.ok["family"] == fam) & (data.ok["platform"] == plat)]
            if not len(ok):
                continue
            where = largest_group(ok, slice_columns(ok))  # one precision, thread count, ...
            fixed, paper = figure7_fixed(select(ok, where), fam)
            try:
                hm = A.heatmap(
                    data, fam, metric="examples_per_s", where=where, fixed=fixed, paper=paper
                )
            except ConfigError:
                continue
            if hm.cells < 2:
                continue
            cap = f"{fam} on {where_text(where)}: examples/s; fixed {_fixed_text(hm)}"
            cap += _figure7_text(hm, paper)
            name = "-".join(["throughput", fam, *(str(v) for v in where.values())])
            s.figures.append(w.figure(name, P.heatmap(hm), cap))


def _figure7_text(hm, paper: dict) -> str:
    """Which of Fig. 7's fixed values the map used: the seed's, or the closest the data has."""
    parts = []
    for k, v in paper.items():
        if k not in hm.fixed:
            continue
        if hm.fixed[k] == v:
            parts.append(f"{k}={v} as in seed 000 Fig. 7")
        else:
            parts.append(
                f"{k}={hm.fixed[k]}: no run at seed 000 Fig. 7's {k}={v}, the closest present"
            )
    return f" ({'; '.join(parts)})" if parts else ""


def _fixed_text(hm) -> str:
    return ", ".join(
        f"{k}={v}" + ("" if hm.paper_fixed.get(k) else "*") for k, v in hm.fixed.items()
    ) + (" (* not the paper's value)" if not all(hm.paper_fixed.values()) else "")


def _sensitivity(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "sensitivity",
        "Hyperparameter sensitivity (seed 000 Figure 2(d)-(f))",
        "Ordinary least squares of the metric on z-scored hyperparameters (log2 for "
        "geometric axes), with 95% confidence intervals: the weights rank importance, "
        "they do not predict.",
    )
    for fam in sorted(data.hyperparameters):
        if not (data.ok["family"] == fam).any():
            continue
        sens = A.sensitivity(data, fam)
        if sens.reason:
            s.notes.append(f"{fam}: no fit ({sens.reason}).")
            continue
        s.figures.append(
            w.figure(
                f"sensitivity-{fam}",
                P.sensitivity(sens),
                f"{fam} on {where_text(sens.where)}: weights on "
                f"{METRICS.get(sens.metric, sens.metric)}",
            )
        )
        t = sens.table.assign(n=sens.n, r2=sens.r2)
        s.tables.append(
            w.table(
                f"sensitivity-{fam}",
                t,
                f"{fam} regression weights",
                units={"ci_low": "signed", "ci_high": "signed"},
            )
        )
        if sens.excluded:
            s.notes.append(
                f"{fam}: not in the fit: "
                + "; ".join(f"{k} ({v})" for k, v in sens.excluded.items())
            )
    if not s.figures:
        s.empty = (
            f"Needs at least {A.regression.MIN_ROWS} ok runs of a family with varying "
            "hyperparameters: `paradnn run --preset cpu` or a paper preset."
        )
    return s


def _rooflines(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "rooflines",
        "Rooflines (seed 000 Figure 3(a)/(c))",
        "Achieved FLOP/s against arithmetic intensity. Model intensity is counted from "
        "the shape list (GEMM/conv operand traffic without reuse), so it is an upper "
        "bound; crosses are measured per-op profiles. Datasheet roof dashed, measured "
        "roof solid.",
    )
    pts = A.model_points(data)
    ops = A.op_points(data)
    for (plat, prec), g in pts.groupby(["platform", "precision"]):
        rs = A.roofs(data, plat, prec)
        o = ops[(ops["platform"] == plat) & (ops["precision"] == prec)] if len(ops) else None
        s.figures.append(
            w.figure(
                f"roofline-{plat}-{prec}", P.roofline(g, rs, f"{plat} {prec}", o), f"{plat}, {prec}"
            )
        )
        if not rs:
            s.notes.append(
                f"{plat} {prec}: no roof (no datasheet entry matches and no "
                "`paradnn calibrate` ceilings)."
            )
    if len(pts):
        s.tables.append(w.table("roofline-points", pts, "Model points"))
    if len(ops):
        s.tables.append(w.table("roofline-ops", ops, "Profiled op points"))
    else:
        s.notes.append("No per-op profiles: `paradnn bench FAMILY ... --profile` records them.")
    if not s.figures:
        s.empty = "No ok runs with FLOP counts: `paradnn run`."
    return s


SPEEDUP_AXES = (
    ("platform", None),
    ("precision", "fp32"),
    ("torch_version", None),
    ("mode", "eager"),
    ("threads", None),
)


def _speedups(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "speedups",
        "Speedups (seed 000 Figures 6(a), 8-10 and 12)",
        "Groups matched by configuration: every other identity column (platform, "
        "precision, mode, optimizer, and the thread count where both groups ran it) is equal "
        "within a pair. Speedup = examples/s of the second group over the first, with a 95% "
        "bootstrap CI from the raw step-time samples; a config is called faster or slower "
        "only when its CI excludes 1.",
    )
    for by, base in SPEEDUP_AXES:
        vals = A.speedup.values(data, by)
        if len(vals) < 2:
            continue
        if base in vals:
            a = base
        elif by == "threads":  # the fewest threads is the baseline of a scaling curve
            a = min(vals, key=lambda v: int(v) if v.isdigit() else 1 << 30)
        elif by == "torch_version":
            a = min(vals, key=A.speedup.version_key)
        else:
            a = vals[0]
        for b in [v for v in vals if v != a][:4]:
            c = A.compare(data, by, a, b, include_noisy=True)  # `data` is already filtered
            if not len(c.pairs):
                s.notes.append(f"{by}: no configuration ran ok in both {a} and {b}.")
                continue
            name = f"speedup-{by}-{b}-over-{a}"
            color = "batch" if "batch" in c.pairs else None
            s.figures.append(
                w.figure(
                    name, P.speedup_scatter(c, color), f"{by}: {b} over {a}, coloured by {color}"
                )
            )
            s.tables.append(
                w.table(
                    name,
                    c.summary,
                    f"{by}: {b} over {a} — configs faster, slower, no detectable change; "
                    "geometric mean with its 95% CI; median and 90th percentile (seed 000 §6 "
                    "states 90th-percentile speedups per family); range",
                    units={"median": "times", "p90": "times", "min": "times", "max": "times"},
                )
            )
            _speedup_maps(c, data, w, s, name)
            if len(c.failed):
                s.tables.append(
                    w.table(
                        name + "-failed",
                        c.failed,
                        "Configurations that succeeded in one group only",
                    )
                )
    if not s.figures:
        s.empty = (
            "Needs two platforms, precisions, versions or modes over the same configs: "
            "e.g. `paradnn run --preset cpu` (fp32 and bf16), or merge databases from two "
            "machines: `paradnn report --db a.db --db b.db`. For a table in the terminal: "
            "`paradnn compare --by precision --a fp32 --b bf16`."
        )
    return s


def _speedup_maps(c, data: A.Data, w: _Writer, s: Section, name: str) -> None:
    """Per family: the speedup over batch × width (geometric mean over the other
    hyperparameters) and the regression weights of the speedup on the hyperparameters, with
    95% CIs (seed 000 Figures 8-10: which hyperparameters make the second group faster)."""
    from paradnn.analysis.modes import heat
    from paradnn.plots.modes import speedup_map

    for fam in sorted(set(c.pairs["family"])):
        h = heat(c.pairs, fam)
        if h is not None:
            grid, y, x = h
            title = f"{fam}: {c.b} over {c.a} ({c.by}, examples/s)"
            s.figures.append(
                w.figure(
                    f"{name}-{fam}-map",
                    speedup_map(grid, fam, c.b, y, x, title=title),
                    f"{fam}: speedup of {c.b} over {c.a} per {y} × {x} (other hyperparameters "
                    "pooled by geometric mean)",
                )
            )
        pairs = c.pairs[c.pairs["family"] == fam]
        hps = [h for h in A.frames.numeric_hyperparameters(data, fam) if h in pairs]
        sens = A.sensitivity(data, fam, "speedup", hyperparameters=hps, frame=pairs)
        if sens.reason:
            s.notes.append(f"{c.by} {c.b} over {c.a}, {fam}: no regression ({sens.reason}).")
            continue
        s.figures.append(
            w.figure(
                f"{name}-{fam}-weights",
                P.sensitivity(sens),
                f"{fam}: regression weights of the speedup of {c.b} over {c.a} (95% CI)",
            )
        )


def _breakdown(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "breakdown",
        "Where the step time goes, per op type (seed 000 Figures 3(b)/(d) and 6(b)-(c))",
        "From the per-op profiles stored with runs (`--profile`): each op type's share of the "
        "run's profiled device time per step (the shares of a run add to 100%), and, where two "
        "groups of profiled runs share a configuration, each op's speedup (time in the first "
        "group over time in the second) against its counted arithmetic intensity.",
    )
    bd = A.breakdown.breakdown(data)
    if not len(bd):
        s.empty = (
            "No per-op profiles: `paradnn run --profile` (or `paradnn bench FAMILY ... "
            "--profile`) stores one per run."
        )
        return s
    shown = _representative(bd)
    sh = A.breakdown.shares(shown)
    s.figures.append(
        w.figure("op-breakdown", P.op_breakdown(sh), "Share of profiled time per op type")
    )
    if len(shown["run_uid"].unique()) < len(bd["run_uid"].unique()):
        s.notes.append(
            f"The figure shows {shown['run_uid'].nunique()} of {bd['run_uid'].nunique()} "
            "profiled runs (per family and platform: the smallest, median and largest batch "
            "of the most common configuration); tables/op-breakdown.csv has all."
        )
    wide = sh.reset_index().rename(columns={"run": "run"})
    s.tables.append(
        w.table(
            "op-breakdown-shares",
            wide,
            "Share of profiled time per op type (runs of the figure)",
            units={c: "pct" for c in sh.columns},
        )
    )
    w.table("op-breakdown", bd, "")  # every profiled run, long format
    _bound_shares(data, w, s)
    for by in ("platform", "precision", "torch_version", "threads", "mode"):
        vals = [v for v in A.speedup.values(data, by)]
        if len(vals) < 2:
            continue
        if by == "threads":
            vals = sorted(vals, key=lambda v: int(v) if v.isdigit() else 1 << 30)
        a, b = vals[0], vals[1]
        sp = A.breakdown.op_speedups(data, by, a, b)
        if not len(sp):
            continue
        s.figures.append(
            w.figure(
                f"op-speedups-{by}-{b}-over-{a}",
                P.op_speedups(sp, a, b, by),
                f"Per-op speedup of {b} over {a} ({by})",
            )
        )
        per_type = (
            sp.assign(log=np.log(sp["speedup"].astype(float)))
            .groupby("op_type")
            .agg(
                ops=("op", "size"),
                geomean=("log", "mean"),
                min=("speedup", "min"),
                max=("speedup", "max"),
            )
            .reset_index()
        )
        per_type["geomean"] = np.exp(per_type["geomean"])
        s.tables.append(
            w.table(
                f"op-speedups-{by}-{b}-over-{a}",
                per_type,
                f"Per-op speedup of {b} over {a} ({by}) by op type",
                units={"min": "times", "max": "times", "ops": "count"},
            )
        )
        w.table(f"op-speedups-{by}-{b}-over-{a}-ops", sp, "")
        break
    else:
        s.notes.append(
            "No per-op speedups: they need profiled runs of one configuration in two groups "
            "(two platforms, precisions, torch versions or thread counts)."
        )
    return s


BOUND_SHOWN = [
    "family", "platform", "precision", "config_key", "roof", "ridge", "memory_bound",
    "compute_bound", "no_flops", "unclassified", "untimed_ops", "seed_memory_bound", "reason",
]  # fmt: skip


def _bound_shares(data: A.Data, w: _Writer, s: Section) -> None:
    """Per profiled run: the share of its profiled time in memory-bound and compute-bound ops
    (against the ridge of its platform's roof), with seed 000 §4.2's published shares."""
    bs = A.breakdown.bound_shares(data)
    if not len(bs):
        return
    names = {"resnet50": "ResNet-50", "transformer_base": "Transformer"}
    seed = ", ".join(
        f"{names.get(fam, fam)} ({fam}) {share:.1%}".replace(".0%", "%")
        for fam, share in A.breakdown.SEED_MEMORY_BOUND.items()
    )
    s.notes.append(
        "Memory-bound share (seed 000 §4.2): each profiled op is memory-bound when its counted "
        "intensity (FLOPs / bytes) is below the ridge of its platform's roof at the run's "
        "precision, compute-bound at or above it; the ridge is the measured roof's (`paradnn "
        "calibrate`: best matmul FLOP/s over best copy bandwidth) where both were measured, "
        "else the datasheet's ('ridge from' says which). Ops that move bytes with no counted "
        "FLOPs (copies and layout, and elementwise ops torch's FLOP counter does not count) "
        "and ops with no bytes or FLOPs counted have shares of their own; the four add to "
        "100% of the run's profiled time. The seed's published figures, measured on TPU v2 "
        f"(not here; memory-bound ops of compute-bound models, data formatting excluded): "
        f"{seed}."
    )
    why = bs[bs["reason"].notna()].drop_duplicates(["platform", "precision", "reason"])
    for r in why.itertuples():
        s.notes.append(f"{r.platform} {r.precision}: {r.reason}.")
    s.tables.append(
        w.table(
            "op-bound-shares",
            bs[BOUND_SHOWN],
            "Share of profiled time in memory-bound and compute-bound ops per profiled run, "
            "beside seed 000 §4.2's published share (TPU v2) for the models it measured",
        )
    )


def _representative(bd: pd.DataFrame, per: int = 3) -> pd.DataFrame:
    """At most `per` runs per (family, platform, precision) group, spread over batch sizes."""
    runs = bd.drop_duplicates("run_uid")
    if len(runs) <= 18:
        return bd
    keep = []
    for _, g in runs.groupby(["family", "platform", "precision"], sort=True):
        g = g.assign(_b=g["config_key"].map(lambda k: json.loads(k).get("batch", 0)))
        g = g.sort_values("_b")
        idx = sorted({0, len(g) // 2, len(g) - 1})[:per]
        keep += list(g["run_uid"].iloc[idx])
    return bd[bd["run_uid"].isin(keep)]


def _batch(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "batch",
        "Batch-size effect",
        "The metric at each batch size relative to the "
        "smallest, median over configurations that ran at several batch sizes.",
    )
    metric = default_metric(data.ok) if len(data.ok) else "examples_per_s"
    df = A.batch_effect(data, metric)
    if not len(df):
        s.empty = "Needs configs run at several batch sizes: `paradnn run --preset cpu`."
        return s
    s.figures.append(w.figure("batch-effect", P.batch_effect(df, metric), f"{metric} vs batch"))
    s.tables.append(w.table("batch-effect", df, "Batch-size effect"))
    return s


def _ops(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "ops",
        "Op micro-benchmarks and CPU thread scaling (seed 002 Table 4, Figures 5-8)",
    )
    df = A.ops_table(data)
    if not len(df):
        s.empty = (
            "`paradnn ops` (matmul and conv2d at the study's shapes) and `paradnn ops "
            "--thread-sweep` (CPU thread scaling)."
        )
        return s
    s.figures.append(w.figure("ops", P.ops_bars(df), "Achieved FLOP/s per op"))
    s.tables.append(w.table("ops", df, "Op micro-benchmarks"))
    ts = A.thread_scaling(data)
    if len(ts):
        s.figures.append(w.figure("thread-scaling", P.thread_scaling(ts), "Thread scaling"))
        s.tables.append(w.table("thread-scaling", ts, "Speedup and parallel efficiency"))
    else:
        s.notes.append("No thread sweep: `paradnn ops --thread-sweep`.")
    return s


def _table8(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "table8",
        "Performance, power and energy per model and device (seed 002 Table 8 layout)",
    )
    t = A.table8(data)
    if not len(t):
        s.empty = "`paradnn run`; add `--energy` for the power and energy rows."
        return s
    s.tables.append(w.table("table8", t.reset_index(), "Median per model and platform/precision"))
    reasons = A.summaries.energy_null_reasons(data)
    if reasons:
        s.notes.append(
            "Energy was requested but not measured for some runs: "
            + "; ".join(f"{n} × {why}" for why, n in reasons.items())
        )
    elif not any(c in data.runs and data.runs[c].notna().any() for c in A.summaries.ENERGY_ROWS):
        s.notes.append(
            "No energy measurements: `paradnn run --energy` (NVML on GPUs, RAPL on CPUs where "
            "readable); where a counter is missing the run stores why."
        )
    idle = data.runs.get("idle_power_w")
    if idle is not None and idle.notna().any():
        s.notes.append(
            "Idle power measured before the sweeps (reported, not subtracted): "
            + ", ".join(
                f"{p} {w:.1f} W"
                for p, w in data.runs.groupby("platform")["idle_power_w"].median().dropna().items()
            )
        )
    return s


def _prediction(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "prediction",
        "Predicted vs measured (what-if model)",
        "Step times predicted by `paradnn simulate` for configurations measured here. "
        "Predictions are labelled as such.",
    )
    try:
        from paradnn.sim import fidelity as sim_validate
        from paradnn.sim import fit as sim_fit
    except ImportError:
        s.empty = "The simulator is not installed in this version."
        return s
    fn = getattr(sim_validate, "predicted_vs_measured_data", None)
    if fn is None or not len(data.ok):
        s.empty = "Needs ok runs on a device the platform database or ceilings describe."
        return s
    try:
        df = fn(data)
    except ConfigError as e:
        s.empty = str(e)
        return s
    if df is None or not len(df):
        s.empty = (
            "No run matches a described platform: `paradnn calibrate` describes this "
            "device from measurements; `paradnn simulate validate` explains."
        )
        return s
    s.figures.append(
        w.figure(
            "predicted-vs-measured",
            P.predicted_vs_measured(df),
            "Predicted (what-if model) vs measured step time",
        )
    )
    summary = getattr(sim_validate, "summary", None)
    if summary is not None:
        s.tables.append(
            w.table(
                "prediction-error",
                summary(df),
                "Median absolute percentage error per family (calibrated: scaled by the other "
                "runs of the family, leave-one-out)",
            )
        )
    s.tables.append(w.table("predicted-vs-measured", df, "Per-config prediction error"))
    heldout = getattr(sim_fit, "heldout_data", None)
    if heldout is not None:
        held = heldout(data)
        if len(held):
            s.tables.append(
                w.table(
                    "step-time-heldout",
                    held,
                    "Step-time model (`paradnn simulate fit`): per-kernel overhead, efficiency "
                    "and achieved bandwidth fitted on the `fit` configs, error on the `holdout` "
                    "configs it never saw (split by config hash, 30 % held out); predictions",
                )
            )
    return s


def _failures(data: A.Data, w: _Writer) -> Section:
    s = Section(
        "failures",
        "Failed and skipped runs",
        "Every attempted configuration is stored; these did not finish `ok`.",
    )
    runs = choose(data.runs)
    bad = runs[runs["status"] != "ok"] if len(runs) else runs
    if not len(bad):
        s.empty = "None."
        return s
    cols = [
        c for c in ("family", "config_key", "platform", "precision", "status", "error") if c in bad
    ]
    t = bad[cols].copy()
    if "error" in t:
        t["error"] = t["error"].map(lambda e: (e or "")[:200])
    s.tables.append(w.table("failures", t, "Runs that did not finish ok"))
    return s


_SECTIONS: list[tuple[str, Callable[[A.Data, _Writer], Section]]] = [
    ("summary", _summary),
    ("findings", _findings),
    ("parameter ranges", _param_ranges),
    ("heat maps", _heatmaps),
    ("sensitivity", _sensitivity),
    ("rooflines", _rooflines),
    ("per-op breakdown", _breakdown),
    ("speedups", _speedups),
    ("scaling", scaling_section),
    ("modes", lambda data, w: Section(**_modes.section(data, w))),
    ("infeed", lambda data, w: Section(**_infeed.section(data, w))),
    ("backends", lambda data, w: Section(**_backends.section(data, w))),
    ("batch effect", _batch),
    ("ops", _ops),
    ("table 8", _table8),
    ("prediction", _prediction),
    ("failures", _failures),
    ("provenance", _provenance),
]
# Sections that list every run, noisy or not (the others analyse the kept runs).
_EVERY_RUN = (_failures, _provenance)


def _render(data: A.Data, sections: list[Section]) -> str:
    env = Environment(
        loader=PackageLoader("paradnn.report", "templates"),
        autoescape=select_autoescape(["html", "j2"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(
        sections=sections,
        sources=data.sources,
        version=paradnn.__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
