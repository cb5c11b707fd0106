"""Performance, power and energy per model and device (seed 002 Table 8 layout)."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    t = A.table8(data)
    if not len(t):
        s.empty = "`paradnn run`; add `--energy` for the power and energy rows."
        return
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


SECTION = Section(
    "table8",
    "Performance, power and energy per model and device (seed 002 Table 8 layout)",
    fill,
    step="table 8",
)
