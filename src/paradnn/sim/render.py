"""Rich tables of simulator rows: SI units for seconds and rates, percentages for shares."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.table import Table

# Columns worth a person's attention, in order; rows without them show what they have.
PREFERRED = (
    "workload",
    "family",
    "config",
    "precision",
    "platform",
    "chips",
    "topology",
    "predicted_step_s",
    "step_upper_s",
    "compute_s",
    "memory_s",
    "allreduce_s",
    "exposed_comm_s",
    "utilization",
    "bottleneck",
    "mem_fits",
    "measured_s",
    "predicted_s",
    "ape",
    "calibrated_s",
    "ape_calibrated",
    "runs",
    "mdape",
    "mdape_calibrated",
    "speedup",
    "efficiency",
    "bisection_bytes_per_s",
    "reason",
)
SHARES = ("utilization", "ape", "ape_calibrated", "mdape", "mdape_calibrated", "efficiency")
# In CSV and JSON, not in the table (it would not fit a terminal).
HIDDEN = ("kind", "origin", "basis", "flops_per_chip", "step_lower_s", "examples_per_s")


def _cell(col: str, v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, dict):
        return " ".join(f"{k}={x}" for k, x in v.items() if k != "kind")
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if col in SHARES or ("×" in col and "/" not in col):
            return f"{100 * v:.1f}%"
        if col.endswith("_s") and not col.endswith("_per_s"):
            return f"{v * 1e3:.4g} ms"
        if col.endswith("bytes_per_s"):
            return f"{v / 1e9:.4g} GB/s"
        return f"{v:.4g}"
    if col == "config" and isinstance(v, str) and v.startswith("{"):
        return _cell(col, json.loads(v))
    return str(v)


def sim_table(rows: Sequence[dict[str, Any]], title: str | None = None) -> Table:
    t = Table(title=title, header_style="bold", title_justify="left")
    if not rows:
        return t
    keys = list(dict.fromkeys(k for r in rows for k in r))
    cols = [c for c in PREFERRED if c in keys]
    cols += [c for c in keys if c not in cols and c not in HIDDEN and not c.startswith("mem_")]
    cols = [c for c in cols if any(r.get(c) is not None for r in rows)] or cols
    for c in cols:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*(_cell(c, r.get(c)) for c in cols))
    origins = sorted({str(r["origin"]) for r in rows if r.get("origin")})
    if origins:
        t.caption = "predictions; chip figures from " + "; ".join(origins)
    return t
