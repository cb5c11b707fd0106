"""Trainable parameters per family (seed 000 Figure 1)."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn import plots as P
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    df = A.param_ranges(data)
    if not len(df):
        s.empty = "No families registered."
        return
    s.figures.append(w.figure("params", P.param_ranges(df), "Parameter counts per family"))
    s.tables.append(
        w.table(
            "param-ranges",
            df,
            "Parameter ranges",
            units={"min": "params", "median": "params", "max": "params"},
        )
    )


SECTION = Section(
    "params",
    "Model sizes (seed 000 Figure 1)",
    fill,
    intro=(
        "Trainable parameters per family: the paper space's range (counted from the "
        "analytic formulas) and the configurations in the database."
    ),
    step="parameter ranges",
)
