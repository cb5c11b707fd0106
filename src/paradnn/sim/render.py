"""Rich tables of simulator rows: a person's headers with the unit in them (`step ms`: every
`*_s` field is shown in milliseconds, whatever its size; rates in GB/s), percentages for shares,
and headers that wrap between words, never inside one. CSV and JSON keep the fields' own names
and SI units (seconds)."""

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


# The table's header for a field; a field not named here gets its own name with `_` as spaces,
# `*_bytes_per_s` in GB/s and `*_s` in ms (`header`).
HEADERS = {
    "predicted_step_s": "step ms",
    "step_upper_s": "upper ms",
    "exposed_comm_s": "exposed ms",
    "allreduce_s": "all-reduce ms",
    "measured_s": "measured ms",
    "predicted_s": "predicted ms",
    "calibrated_s": "calibrated ms",
    "utilization": "util",
    "bottleneck": "bound",
    "mem_fits": "fits",
    "ape": "error",
    "ape_calibrated": "error calibrated",
    "mdape": "median error",
    "mdape_calibrated": "median error calibrated",
    "bisection_bytes_per_s": "bisection GB/s",
    "precision": "prec",
}


def header(col: str) -> str:
    """The column's header, with its unit: `compute_s` → `compute ms`."""
    if col in HEADERS:
        return HEADERS[col]
    if col.endswith("bytes_per_s"):
        return col.removesuffix("bytes_per_s").rstrip("_").replace("_", " ") + " GB/s"
    if col.endswith("_s") and not col.endswith("_per_s"):
        return col.removesuffix("_s").replace("_", " ") + " ms"
    return col.replace("_", " ")


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
        if col.endswith("bytes_per_s"):
            return f"{v / 1e9:.4g}"
        if col.endswith("_s") and not col.endswith("_per_s"):
            return f"{v * 1e3:.4g}"  # milliseconds: the header says `ms`
        return f"{v:.4g}"
    if col == "config" and isinstance(v, str) and v.startswith("{"):
        return _cell(col, json.loads(v))
    return str(v)


# Left out first, in this order, when the table would not fit the terminal (`--format csv` and
# `json` keep every field): a narrower table, never a header or a number cut inside a word.
DROP_ORDER = (
    "step_upper_s",
    "exposed_comm_s",
    "topology",
    "calibrated_s",
    "ape_calibrated",
    "mdape_calibrated",
    "memory_s",
    "compute_s",
    "bisection_bytes_per_s",
    "chips",
    "allreduce_s",
)


def sim_table(
    rows: Sequence[dict[str, Any]], title: str | None = None, width: int | None = None
) -> Table:
    """The rows as a table no wider than `width` (a terminal's columns; None: no limit)."""
    t = Table(title=title, header_style="bold", title_justify="left")
    if not rows:
        return t
    keys = list(dict.fromkeys(k for r in rows for k in r))
    cols = [c for c in PREFERRED if c in keys]
    cols += [c for c in keys if c not in cols and c not in HIDDEN and not c.startswith("mem_")]
    cols = [c for c in cols if any(r.get(c) is not None for r in rows)] or cols
    platforms = {str(r.get("platform")) for r in rows}
    if len(platforms) == 1 and len(cols) > 1 and "platform" in cols:
        cols.remove("platform")  # one chip for every row: the title names it
        (chip,) = platforms
        if chip not in (title or ""):
            t.title = f"{title} on {chip}" if title else chip
    cells = {c: [_cell(c, r.get(c)) for r in rows] for c in cols}
    # a column is at least as wide as its longest word (header or cell): rich then wraps
    # between words only; columns are left out (DROP_ORDER) until the minimums fit `width`
    least = {
        c: max(len(w) for text in [header(c), *cells[c]] for w in text.split() or [""])
        for c in cols
    }
    left_out = []
    for c in DROP_ORDER:
        if width is None or sum(least[k] + 3 for k in cols) + 1 <= width:
            break
        if c in cols:
            cols.remove(c)
            left_out.append(header(c))
    for c in cols:
        numeric = all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
            for v in (r.get(c) for r in rows)
        )
        t.add_column(
            header(c),
            justify="right" if numeric else "left",
            min_width=least[c],
            overflow="fold",
        )
    for i in range(len(rows)):
        t.add_row(*(cells[c][i] for c in cols))
    notes = []
    origins = sorted({str(r["origin"]) for r in rows if r.get("origin")})
    if origins:
        notes.append("predictions; chip figures from " + "; ".join(origins))
    if left_out:
        notes.append(f"left out to fit {width} columns: {', '.join(left_out)} (--format csv)")
    if notes:
        t.caption = "\n".join(notes)
    return t
