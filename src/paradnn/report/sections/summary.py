"""Run counts by family and status, and the medians and utilization of the ok runs."""

from __future__ import annotations

import pandas as pd

from paradnn.analysis.frames import (
    choose,
    noisy_ok,
)
from paradnn.records import Status
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer
from paradnn.utilization import BEATEN_LEGEND


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    """Run counts from every run (noisy ones too, as a column of their own); the
    per-group medians from the kept runs."""
    data, every = inp.kept, inp.every
    all_runs = choose(every.runs)
    runs = choose(data.runs)
    if not len(all_runs):
        s.empty = "No runs yet: `paradnn run` (default preset) or `paradnn run --preset paper`."
        return
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
    ok = runs[runs["status"] == Status.OK]
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
                + f"). {BEATEN_LEGEND}. Utilization is stored with each run, as measured (never "
                "clipped)."
            )
        s.tables.append(
            w.table(
                "summary",
                agg,
                "Successful runs per family, platform and precision (utilization: of the "
                "measured ceiling / datasheet peak; its maximum and 90th percentile over runs)",
            )
        )


def _p90(x: pd.Series) -> float:
    """The 90th percentile (linear interpolation) of the numbers in a column; NaN if none."""
    v = pd.to_numeric(x, errors="coerce").dropna()
    return float(v.quantile(0.9)) if len(v) else float("nan")


SECTION = Section(
    "summary",
    "Summary",
    fill,
    step="summary",
)
