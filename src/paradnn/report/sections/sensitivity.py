"""Regression weights of the metric on the hyperparameters (seed 000 Figure 2(d)-(f))."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn import plots as P
from paradnn.analysis.frames import (
    METRICS,
    where_text,
)
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
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


SECTION = Section(
    "sensitivity",
    "Hyperparameter sensitivity (seed 000 Figure 2(d)-(f))",
    fill,
    intro=(
        "Ordinary least squares of the metric on z-scored hyperparameters (log2 for "
        "geometric axes), with 95% confidence intervals: the weights rank importance, "
        "they do not predict."
    ),
    step="sensitivity",
)
