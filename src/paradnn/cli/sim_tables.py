"""Rich tables of simulator rows: a person's headers with the unit in them (`step ms`: every
`*_s` field is shown in milliseconds, whatever its size; rates in GB/s), percentages for shares,
and headers that wrap between words, never inside one. CSV and JSON keep the fields' own names
and SI units (seconds)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from paradnn import formatting as U

# Columns worth a person's attention, in order; rows without them show what they have.
PREFERRED = (
    "workload",
    "family",
    "op",
    "config",
    "split",
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
    "mape",
    "speedup",
    "efficiency",
    "bisection_bytes_per_s",
    "reason",
)
SHARES = ("utilization", "efficiency")
# A model's error (a fraction), printed as the report prints it (`units.error`).
ERRORS = ("ape", "ape_calibrated", "mdape", "mdape_calibrated", "mape", "band")
# In CSV and JSON, not in the table (it would not fit a terminal).
HIDDEN = ("kind", "origin", "basis", "flops_per_chip", "step_lower_s", "examples_per_s", "model")
HIDDEN += ("band", "band_label", "host_profile")  # said once under the table (cli/simulate.py)
# The step-time model's rows: its terms go to `breakdown_table`, not to the wide table.
STEP_DETAIL = (
    "step_upper_s",
    "gemm_compute_s",
    "gemm_memory_s",
    "allreduce_link_s",
    "allreduce_hbm_s",
    "allreduce_latency_s",
    "cores_per_chip",
    "batch_per_core",
    "fast_conv_ops",
    "kernels",
    "params_source",
    "elementwise_s",
    "optimizer_s",
    "master_weights_s",
    "host_s",
    "host_dispatch_s",
    "device_s",
    "exposed_host_s",
    "timeline_bound",
    "host_waits",
    "host_profile",
    "policy",
    "optimizer_impl",
)
# (term, what it is) in the order a step spends them.
TERMS = (
    ("gemm_s", "GEMMs: Σ max(compute at shape/precision efficiency, memory at achieved BW)"),
    ("gemm_compute_s", "  of which compute (Σ over GEMMs)"),
    ("gemm_memory_s", "  of which memory traffic (Σ over GEMMs)"),
    ("overhead_s", "per-kernel device cost: kernels × the cost per kernel"),
    ("elementwise_s", "elementwise traffic (bias, activation, normalisation)"),
    ("optimizer_s", "optimizer traffic (weights, gradients, state)"),
    ("master_weights_s", "fp32 master weights under a low precision (casts)"),
    ("host_s", "host / input pipeline (parameters)"),
    ("device_s", "device timeline: Σ of the device terms above, kernel by kernel"),
    ("host_dispatch_s", "host timeline: ops, autograd nodes, optimizer, launches (host profile)"),
    ("exposed_host_s", "  of which the device waits for the host (all of it on a CPU)"),
    ("input_s", "measured infeed per step (step = max(step, infeed) when prefetched)"),
    ("comm_s", "all-reduce: max(links, HBM) + latency per tensor"),
    ("allreduce_link_s", "  links (α–β bandwidth term)"),
    ("allreduce_hbm_s", "  HBM traffic of the reduction"),
    ("allreduce_latency_s", "  latency and synchronisation"),
    ("predicted_step_s", "predicted step"),
)


# The table's name for a field; a field not named here gets its own name with `_` as spaces.
# Either way the header ends with the field's unit in brackets (`unit`): `predicted step (ms)`.
HEADERS = {
    "predicted_step_s": "predicted step",
    "step_upper_s": "upper bound",
    "exposed_comm_s": "exposed comm",
    "allreduce_s": "all-reduce",
    "measured_s": "measured",
    "predicted_s": "predicted",
    "calibrated_s": "calibrated",
    "utilization": "util",
    "bottleneck": "bound",
    "mem_fits": "fits",
    "ape": "error",
    "ape_calibrated": "error calibrated",
    "mdape": "median error",
    "mdape_calibrated": "median error calibrated",
    "precision": "prec",
}
# A field's unit from the end of its name, as the table shows it: (suffix, unit, factor).
UNITS = (("bytes_per_s", "GB/s", 1e-9), ("_per_s", "/s", 1.0), ("_s", "ms", 1e3))


def unit(col: str) -> tuple[str, float] | None:
    """The unit a field is shown in and the factor from its SI value (seconds → ms, B/s →
    GB/s); None for a field without one."""
    for suffix, name, factor in UNITS:
        if col.endswith(suffix):
            return (name, factor) if name != "/s" else None
    return None


def name(col: str) -> str:
    """The field's name without its unit: `gemm_compute_s` → `gemm compute`."""
    if col in HEADERS:
        return HEADERS[col]
    for suffix, _, _ in UNITS:
        if col.endswith(suffix) and unit(col) is not None:
            return col.removesuffix(suffix).rstrip("_").replace("_", " ")
    return col.replace("_", " ")


def header(col: str) -> str:
    """The column's header, with its unit: `compute_s` → `compute (ms)`."""
    u = unit(col)
    return name(col) + (f" ({u[0]})" if u else "")


def _cell(col: str, v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, dict):
        return " ".join(f"{k}={x}" for k, x in v.items() if k != "kind")
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if col in ERRORS:
            return U.band(v) if col == "band" else U.error(v)
        if col in SHARES or ("×" in col and "/" not in col):
            return f"{100 * v:.1f}%"
        u = unit(col)
        return f"{v * u[1]:.4g}" if u else f"{v:.4g}"  # in the header's unit
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


# Never left out: what a row is and what it predicts (every other column may be, the ones in
# DROP_ORDER first, then from the right).
ESSENTIAL = ("workload", "family", "op", "config", "predicted_step_s", "measured_s", "predicted_s")


def sim_table(
    rows: Sequence[dict[str, Any]], title: str | None = None, width: int | None = None
) -> Table:
    """The rows as a table no wider than `width` (a terminal's columns; None: no limit): a
    compact config (the hyperparameters each family's rows share named above), numbers never
    wrapped or cut, and every column left out named under the table (`cli.fit`)."""
    from paradnn.cli import fit, tables

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
            title = f"{title} on {chip}" if title else chip
    cells = {c: [_cell(c, r.get(c)) for r in rows] for c in cols}
    shared: dict[str, dict[str, Any]] = {}
    if "config" in cols and "family" in cols:
        cfgs = [_config(r.get("config")) for r in rows]
        if all(c is not None for c in cfgs):
            fams = [
                {"family": r.get("family"), "config": c} for r, c in zip(rows, cfgs, strict=True)
            ]
            shared = tables.family_shared_config(fams)
            cells["config"] = [  # `fc 2x64 b32`: the family joins its config
                tables.config_cell(f, shared.get(str(f["family"]), {}), True) for f in fams
            ]
            cols.remove("family")
    line = tables.shared_line({}, shared)
    title = "\n".join(x for x in (title, line) if x) or None
    notes = []
    reasons = {r.get("reason") for r in rows} - {None}
    if "reason" in cols and len(reasons) == 1 and len(rows) > 1:  # one reason: said once
        n = sum(1 for r in rows if r.get("reason") is not None)
        cols.remove("reason")
        why = escape(next(iter(reasons)))
        notes.append(f"no prediction for {n} of {len(rows)} rows (—): {why}")
    right = [c for c in reversed(cols) if c not in DROP_ORDER and c not in ESSENTIAL]
    order = {c: i for i, c in enumerate((*DROP_ORDER, *right))}
    columns = []
    for c in cols:
        numeric = all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
            for v in (r.get(c) for r in rows)
        )
        columns.append(
            fit.Column(
                header(c),
                tuple(cells[c]),
                "right" if numeric else "left",
                number=numeric or c in ERRORS or c in SHARES,
                drop=None if c in ESSENTIAL else order.get(c),
            )
        )
    origins = sorted({str(r["origin"]) for r in rows if r.get("origin")})
    if origins:
        notes.append("predictions; chip figures from " + "; ".join(origins))
    if shared and (legend := tables.config_legend(fams, shared)):
        notes.append(legend)
    return fit.table(columns, width, title=title, caption="\n".join(notes) or None)


def _config(v: Any) -> dict[str, Any] | None:
    """A row's config as a dict (the simulator's rows carry a dict or its JSON text)."""
    if isinstance(v, dict):
        return v
    if isinstance(v, str) and v.startswith("{"):
        try:
            got = json.loads(v)
        except ValueError:
            return None
        return got if isinstance(got, dict) else None
    return None


def breakdown_table(row: dict[str, Any]) -> Table:
    """One step-time prediction term by term: seconds and share of the step."""
    step = row.get("predicted_step_s") or 0.0
    t = Table(
        title=f"step-time breakdown: {row.get('family')} {_cell('config', row.get('config'))} "
        f"on {row.get('platform')} ({row.get('precision')}, {row.get('chips')} chip(s))",
        header_style="bold",
        title_justify="left",
    )
    for c, just in (("term", "left"), ("time (ms)", "right"), ("share of step", "right")):
        t.add_column(c, justify=just)
    t.add_column("what")
    for key, what in TERMS:
        v = row.get(key)
        if v is None:
            continue
        share = f"{100 * v / step:.1f}%" if step else "—"
        t.add_row(name(key), _cell(key, float(v)), share, what)
    extra = [
        f"{row.get('kernels', 0):.0f} kernels",
        f"{row.get('fast_conv_ops', 0)} GEMMs by Winograd",
        f"{row.get('cores_per_chip')} core(s) per chip, batch per core {row.get('batch_per_core')}",
        f"parameters: {row.get('params_source')}",
    ]
    if row.get("timeline_bound") is not None:
        hp = str(row.get("host_profile"))
        hp = hp if hp.startswith("host profile") else f"host profile {hp}"
        extra.insert(
            0,
            f"timelines: {row.get('timeline_bound')}-bound, {row.get('host_waits', 0)} host "
            f"wait(s), {hp}, optimizer "
            f"{row.get('optimizer_impl')}, precision policy {row.get('policy')}",
        )
    t.caption = "prediction; " + "; ".join(extra)
    return t


def breakdowns_table(rows: Sequence[dict[str, Any]]) -> Table:
    """One config's step-time prediction on several platforms, term by term: a time column per
    platform (ms), the terms no platform has left out."""
    first = rows[0]
    t = Table(
        title=f"step-time breakdown: {first.get('family')} {_cell('config', first.get('config'))}"
        f" ({first.get('chips')} chip(s))",
        header_style="bold",
        title_justify="left",
    )
    t.add_column("term")
    for r in rows:
        t.add_column(f"{r.get('platform')} {r.get('precision')} (ms)", justify="right")
    t.add_column("what")
    for key, what in TERMS:
        values = [r.get(key) for r in rows]
        if all(v is None for v in values):
            continue
        t.add_row(name(key), *(_cell(key, None if v is None else float(v)) for v in values), what)
    t.caption = "prediction; parameters: " + "; ".join(
        f"{r.get('platform')}: {r.get('params_source')}" for r in rows if r.get("params_source")
    )
    return t
