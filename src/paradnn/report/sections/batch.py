"""The metric against batch size."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn import plots as P
from paradnn.analysis.frames import METRICS, default_metric
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    metric = default_metric(data.ok) if len(data.ok) else "examples_per_s"
    df = A.batch_effect(data, metric)
    if not len(df):
        s.empty = "Needs configs run at several batch sizes: `paradnn run --preset cpu`."
        return
    s.figures.append(
        w.figure(
            "batch-effect", P.batch_effect(df, metric), f"{METRICS.get(metric, metric)} vs batch"
        )
    )
    s.tables.append(w.table("batch-effect", df, "Batch-size effect"))


SECTION = Section(
    "batch",
    "Batch-size effect",
    fill,
    intro=(
        "The metric at each batch size relative to the "
        "smallest, median over configurations that ran at several batch sizes."
    ),
    step="batch effect",
)
