"""Achieved FLOP/s against arithmetic intensity (seed 000 Figure 3(a)/(c))."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn import plots as P
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
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


SECTION = Section(
    "rooflines",
    "Rooflines (seed 000 Figure 3(a)/(c))",
    fill,
    intro=(
        "Achieved FLOP/s against arithmetic intensity. Model intensity is counted from "
        "the shape list (GEMM/conv operand traffic without reuse), so it is an upper "
        "bound; crosses are measured per-op profiles. Datasheet roof dashed, measured "
        "roof solid."
    ),
    step="rooflines",
)
