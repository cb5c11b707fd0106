"""Op micro-benchmarks and CPU thread scaling (seed 002 Table 4, Figures 5-8)."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn import plots as P
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    df = A.ops_table(data)
    if not len(df):
        s.empty = (
            "`paradnn ops` (matmul and conv2d at the study's shapes) and `paradnn ops "
            "--thread-sweep` (CPU thread scaling)."
        )
        return
    s.figures.append(w.figure("ops", P.ops_bars(df), "Achieved FLOP/s per op"))
    s.tables.append(w.table("ops", df, "Op micro-benchmarks"))
    ts = A.thread_scaling(data)
    if len(ts):
        s.figures.append(w.figure("thread-scaling", P.thread_scaling(ts), "Thread scaling"))
        s.tables.append(w.table("thread-scaling", ts, "Speedup and parallel efficiency"))
    else:
        s.notes.append("No thread sweep: `paradnn ops --thread-sweep`.")


SECTION = Section(
    "ops",
    "Op micro-benchmarks and CPU thread scaling (seed 002 Table 4, Figures 5-8)",
    fill,
    step="ops",
)
