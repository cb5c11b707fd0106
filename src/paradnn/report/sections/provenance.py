"""Databases, environments and ceilings: where every number comes from (every run)."""

from __future__ import annotations

import pandas as pd

from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.every
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


SECTION = Section(
    "provenance",
    "Data and environment",
    fill,
    intro="Where every number in this report comes from.",
    step="provenance",
)
