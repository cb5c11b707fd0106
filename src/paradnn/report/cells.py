"""How the report shows a table: human headers, numbers with units and percentages (the CLI's
formatting, from `paradnn.units`), and one column per hyperparameter instead of a config's JSON.

The CSV files beside the report keep the numbers as numbers and the machine names of the
columns (plus the same hyperparameter columns); only the HTML is formatted. A column is known
by its name (`COLUMNS`), else by its suffix (`_s` seconds, `_bytes`, `_flops`, `_w`, `_j`,
`_frac`, `utilization`), else shown as a plain number; a table may override per column
(`Writer.table(..., units=...)`, report/writer.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd

from paradnn import units as U

Fmt = Callable[[Any], str]


def seconds(x: Any) -> str:
    """A duration in the unit that reads best: 850 µs, 1.81 ms, 2.4 s."""
    if U.missing(x):
        return U.MISSING
    v = float(x)
    if abs(v) < 1e-3 and v != 0:
        return f"{v * 1e6:.3g} µs"
    if abs(v) < 1:
        return f"{v * 1e3:.3g} ms"
    return f"{v:.3g} s"


def _si(unit: str) -> Fmt:
    return lambda x: U.si(x, unit)


def _text(x: Any) -> str:
    """Text as is; a whole number with thousands separators up to a million (a batch of 16384
    reads 16,384), a larger or fractional one as `units.number` (322 k, 0.125)."""
    if U.missing(x):
        return U.MISSING
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int) or (hasattr(x, "dtype") and getattr(x.dtype, "kind", "") in "iu"):
        return f"{int(x):,}" if abs(int(x)) < 1_000_000 else U.si(int(x))
    if isinstance(x, float):
        return U.number(x)
    return str(x)


# Formatters a table may name in `units=`.
KINDS: dict[str, Fmt] = {
    "pct": U.pct,
    "times": U.times,
    "count": U.count,
    "si": _si(""),
    "params": _si(""),
    "flops": _si("FLOP"),
    "flop/s": _si("FLOP/s"),
    "seconds": seconds,
    "bytes": U.nbytes,
    "number": U.number,
    "signed": U.signed,
    "text": _text,
}

# name -> (header, formatter)
COLUMNS: dict[str, tuple[str, Fmt]] = {
    "family": ("family", _text),
    "platform": ("platform", _text),
    "precision": ("precision", _text),
    "config_key": ("config", _text),
    "params": ("parameters", _si("")),
    "params_analytic": ("parameters (analytic)", _si("")),
    "flops_per_step": ("FLOP/step", _si("FLOP")),
    "flops": ("FLOP", _si("FLOP")),
    "bytes_per_step": ("bytes/step", U.nbytes),
    "bytes": ("bytes", U.nbytes),
    "intensity": ("FLOP/byte", U.number),
    "examples_per_s": ("examples/s", _si("")),
    "median_examples_per_s": ("median examples/s", _si("")),
    "achieved_flops": ("achieved FLOP/s", _si("FLOP/s")),
    "max_achieved_flops": ("max achieved FLOP/s", _si("FLOP/s")),
    "utilization_measured": ("utilization (measured ceiling)", U.pct),
    "utilization_datasheet": ("utilization (datasheet)", U.pct),
    "max_util_measured": ("max utilization (measured ceiling)", U.pct),
    "max_util_datasheet": ("max utilization (datasheet)", U.pct),
    "p90_util_measured": ("90th pct. utilization (measured ceiling)", U.pct),
    "p90_util_datasheet": ("90th pct. utilization (datasheet)", U.pct),
    "step_time_s": ("step time", seconds),
    "runs": ("runs", U.count),
    "n": ("configs", U.count),
    "configs": ("configs", U.count),
    "faster": ("faster", U.count),
    "slower": ("slower", U.count),
    "no_change": ("no detectable change", U.count),
    "no_interval": ("no interval", U.count),
    "faster_share": ("share with speedup > 1", U.pct),
    "geomean": ("geometric mean", U.times),
    "geomean_ci_low": ("95% CI low", U.times),
    "geomean_ci_high": ("95% CI high", U.times),
    "geomean_call": ("geometric mean: call", _text),
    "speedup": ("speedup", U.times),
    "speedup_low": ("speedup CI low", U.times),
    "speedup_high": ("speedup CI high", U.times),
    "ci_low": ("95% CI low", U.times),
    "ci_high": ("95% CI high", U.times),
    "value_a": ("A", _si("")),
    "value_b": ("B", _si("")),
    "mdape": ("median abs. % error", U.pct),
    "mdape_calibrated": ("median abs. % error (calibrated)", U.pct),
    "ape": ("abs. % error", U.pct),
    "ape_calibrated": ("abs. % error (calibrated)", U.pct),
    "efficiency": ("parallel efficiency", U.pct),
    "karp_flatt": ("Karp–Flatt serial fraction", U.pct),
    "ratio": ("ratio to smallest batch", U.times),
    "memory_ratio": ("memory eager ÷ compiled", U.times),
    "r2": ("R²", lambda x: U.MISSING if U.missing(x) else f"{float(x):.2f}"),
    "weight": ("weight", U.signed),
    "p_value": ("p", lambda x: U.MISSING if U.missing(x) else f"{float(x):.2g}"),
    "threads": ("threads", U.count),
    "procs": ("processes", U.count),
    "calls": ("calls", U.count),
    "device_time_s": ("device time/step", seconds),
    "share": ("share of profiled time", U.pct),
    "roof": ("ridge from", _text),
    "ridge": ("ridge (FLOP/byte)", U.number),
    "memory_bound": ("memory-bound (below the ridge)", U.pct),
    "compute_bound": ("compute-bound (at or above the ridge)", U.pct),
    "no_flops": ("bytes, no FLOPs counted", U.pct),
    "unclassified": ("unclassified (no bytes or FLOPs counted)", U.pct),
    "untimed_ops": ("ops without a time", U.count),
    "seed_memory_bound": ("seed 000 §4.2 memory-bound (TPU v2, published)", U.pct),
    "p90": ("90th percentile", U.times),
    "allreduce_busbw": ("all-reduce bus bandwidth", _si("B/s")),
    "allreduce_algbw": ("all-reduce alg. bandwidth", _si("B/s")),
    "avg_power_w": ("average power", _si("W")),
    "idle_power_w": ("idle power", _si("W")),
    "energy_j": ("energy", _si("J")),
    "energy_per_sample_j": ("energy/sample", _si("J")),
    "value": ("value", U.number),
    "break_even_steps": ("break-even steps", U.number),
}


def _by_suffix(name: str) -> tuple[str, Fmt] | None:
    header = name.replace("_", " ")
    if "util" in name or name.endswith(("_frac", "_share", "_rel")):
        return header.removesuffix(" frac").removesuffix(" rel"), U.pct
    if name.endswith("_flops"):
        return header.removesuffix(" flops") + " FLOP/s", _si("FLOP/s")
    if name.endswith("_bytes"):
        return header.removesuffix(" bytes") + " (bytes)", U.nbytes
    if name.endswith("_s") and not name.endswith("_per_s"):
        return header.removesuffix(" s"), seconds
    if name.endswith("_w"):
        return header.removesuffix(" w"), _si("W")
    if name.endswith("_j"):
        return header.removesuffix(" j"), _si("J")
    return None


def column(name: str, override: str | Fmt | None = None) -> tuple[str, Fmt]:
    """(header, formatter) of a column."""
    header, fmt = COLUMNS.get(name) or _by_suffix(name) or (name.replace("_", " "), _text)
    if override is not None:
        fmt = KINDS[override] if isinstance(override, str) else override
    return header, fmt


def expand_config(df: pd.DataFrame, keep: bool = False) -> pd.DataFrame:
    """`config_key` or `config` (JSON) -> one column per hyperparameter where it stood, in the
    order the configs name them; rows of families without a key show —. `keep` keeps the
    `config_key` column too (the CSVs: a key to join on)."""
    col = next((c for c in ("config_key", "config") if c in df.columns), None)
    if col is None or not len(df):
        return df
    cfgs = [_config(c) for c in df[col]]
    taken = set(df.columns) - {col}
    keys = list(dict.fromkeys(k for c in cfgs for k in c))
    if not keys:
        return df
    names = {k: (f"cfg_{k}" if k in taken else k) for k in keys}
    hp = pd.DataFrame([{names[k]: c.get(k) for k in keys} for c in cfgs], index=df.index)
    at = list(df.columns).index(col)
    left, right = df.iloc[:, : at + 1 if keep else at], df.iloc[:, at + 1 :]
    return pd.concat([left, hp.astype(object), right], axis=1)


def _config(c: Any) -> dict:
    if isinstance(c, dict):
        return c
    if isinstance(c, str) and c.startswith("{"):
        try:
            return json.loads(c)
        except ValueError:
            return {}
    return {}


def formatted(df: pd.DataFrame, units: dict[str, str | Fmt] | None = None) -> pd.DataFrame:
    """The table as strings under human headers (duplicated headers get a suffix)."""
    units = units or {}
    out, seen = {}, {}
    for c in df.columns:
        header, fmt = column(str(c), units.get(str(c)))
        k = seen.get(header, 0)
        seen[header] = k + 1
        out[header if not k else f"{header} ({k + 1})"] = df[c].map(
            lambda v, fmt=fmt: U.MISSING if _blank(v) else fmt(v)
        )
    return pd.DataFrame(out, index=df.index)


def _blank(v: Any) -> bool:
    if isinstance(v, (list, dict, tuple)):
        return False
    return U.missing(v)


def html_table(
    df: pd.DataFrame, index: bool = False, units: dict[str, str | Fmt] | None = None
) -> str:
    """pandas escapes every cell, header and index label (escape=True is its default)."""
    shown = formatted(expand_config(df), units)
    return shown.to_html(index=index, escape=True, border=0, classes="tbl", na_rep=U.MISSING)
