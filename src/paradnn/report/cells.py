"""How the report shows a table: human headers, numbers with units and percentages (the CLI's
formatting, from `paradnn.formatting`), and one column per hyperparameter instead of a
config's JSON.

The CSV files beside the report keep the numbers as numbers and the machine names of the
columns (plus the same hyperparameter columns); only the HTML is formatted. A column is known
by its name (`COLUMNS`), else by its suffix (`_s` seconds, `_bytes`, `_flops`, `_w`, `_j`,
`_frac`, `utilization`), else shown as a plain number; a table may override per column
(`Writer.table(..., units=...)`, report/writer.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import Decimal
from html import escape
from typing import Any

import pandas as pd

from paradnn import formatting as U
from paradnn.utilization import BEATEN_MARK, beaten

Fmt = Callable[[Any], str]


def seconds(x: Any) -> str:
    """A duration in the unit that reads best: 850 µs, 1.81 ms, 2.4 s."""
    if U.missing(x):
        return U.MISSING
    v = float(x)
    shown = U.shown(v)  # the unit is chosen on the value as shown: 0.000999…9 reads 1 ms
    if abs(shown) < 1e-3 and v != 0:
        return f"{v * 1e6:.3g} µs"
    if abs(shown) < 1:
        return f"{v * 1e3:.3g} ms"
    return f"{v:.3g} s"


def p_value(x: Any) -> str:
    """A p-value as people quote one: 0.032, 0.41, < 0.001 (never 5.9e-06)."""
    if U.missing(x):
        return U.MISSING
    v = float(x)
    return "< 0.001" if U.shown(v, 2) < 0.001 else f"{v:.2g}"


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


def util_measured(x: Any) -> str:
    """A utilization of the measured ceiling; above 100 % it carries the beaten-ceiling mark
    (utilization.BEATEN_MARK, explained where the report shows it)."""
    return U.pct(x) + (f" {BEATEN_MARK}" if beaten(x) else "")


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
    "utilization_measured": ("utilization (measured ceiling)", util_measured),
    "utilization_datasheet": ("utilization (datasheet)", U.pct),
    "max_util_measured": ("max utilization (measured ceiling)", util_measured),
    "max_util_datasheet": ("max utilization (datasheet)", U.pct),
    "p90_util_measured": ("90th pct. utilization (measured ceiling)", util_measured),
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
    "geomean_band_low": ("model error band low", U.times),
    "geomean_band_high": ("model error band high", U.times),
    "geomean_call": ("geometric mean: call", _text),
    "speedup": ("speedup", U.times),
    "speedup_low": ("speedup CI low", U.times),
    "speedup_high": ("speedup CI high", U.times),
    "ci_low": ("95% CI low", U.times),
    "ci_high": ("95% CI high", U.times),
    "value_a": ("A", _si("")),
    "value_b": ("B", _si("")),
    "mdape": ("median abs. % error", U.error),
    "mdape_calibrated": ("median abs. % error (calibrated)", U.error),
    "mape": ("mean abs. % error", U.error),
    "ape": ("abs. % error", U.error),
    "ape_calibrated": ("abs. % error (calibrated)", U.error),
    "efficiency": ("parallel efficiency", U.pct),
    "karp_flatt": ("Karp–Flatt serial fraction", U.pct),
    "ratio": ("ratio to smallest batch", U.times),
    "memory_ratio": ("memory eager ÷ compiled", U.times),
    "r2": ("R²", lambda x: U.MISSING if U.missing(x) else f"{float(x):z.2f}"),
    "weight": ("weight", U.signed),
    "p_value": ("p", lambda x: p_value(x)),
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
    out = {
        header: df[c].map(lambda v, fmt=fmt: U.MISSING if _blank(v) else fmt(v))
        for c, header, fmt in _headers(df, units)
    }
    return pd.DataFrame(out, index=df.index)


def _headers(df: pd.DataFrame, units: dict | None) -> list[tuple[str, str, Fmt]]:
    """(column, header, formatter) per column; a repeated header gets a suffix."""
    units = units or {}
    out, seen = [], {}
    for c in df.columns:
        header, fmt = column(str(c), units.get(str(c)))
        k = seen.get(header, 0)
        seen[header] = k + 1
        out.append((c, header if not k else f"{header} ({k + 1})", fmt))
    return out


# Run settings shown as counts that, equal in every row, are named above a table.
SETTING_COUNTS = ("threads", "procs", "loader_workers")


def _blank(v: Any) -> bool:
    if isinstance(v, (list, dict, tuple)):
        return False
    return U.missing(v)


# Cell texts that mark a verdict or a call, coloured by the template (class "v v-<slug>").
VERDICTS = ("holds", "does not hold", "inconclusive", "not enough data", "untestable",
            "faster", "slower", "no detectable change", "no interval")  # fmt: skip
LONG = 60  # characters: a longer cell is clamped to a few lines (a click opens it)
_SCI = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)[eE]([+-]\d{2,3})\b")


def plain(text: str) -> str:
    """Scientific notation in a formatted cell (5.9e-06, 1.8e+03) written out: 0.0000059,
    1,800 — the docs promise no scientific notation, whatever a formatter upstream did."""

    def one(m: re.Match) -> str:
        v = float(m.group(0))
        if abs(v) >= 1e3:  # a prefix may follow (1e+03 M): digits, not a second prefix
            return f"{v:,.0f}"
        return format(Decimal(m.group(0)).normalize(), "f")

    return _SCI.sub(one, text)


def html_table(
    df: pd.DataFrame,
    index: bool = False,
    units: dict[str, str | Fmt] | None = None,
    table_id: str | None = None,
) -> str:
    """The table as HTML, every cell, header and index label escaped. Only the columns that
    vary are shown: a column that is — in every row is left out, a setting with the same value
    in every row (of two or more) is named once above the table (the CSV keeps them all). Long
    texts are clamped to a few lines; verdicts and calls carry a class the template colours.
    Only settings are named once (identity and text columns, hyperparameters, thread and
    process counts): a measured number stays a column even when it is the same everywhere."""
    wide = expand_config(_one_config_column(df.reset_index() if index else df))
    shown = formatted(wide, units)
    settings = {h for c, h, f in _headers(wide, units) if f is _text or c in SETTING_COUNTS}
    shown = shown.map(plain)
    cols = [c for c in shown.columns if not (shown[c] == U.MISSING).all()] if len(shown) else []
    cols = cols or list(shown.columns)
    same = []
    if len(shown) >= 2 and len(cols) > 1:
        same = [c for c in cols[1:] if c in settings and shown[c].nunique() == 1]
        cols = [c for c in cols if c not in same]
    out = []
    if same:
        out.append(
            '<p class="same">In every row: '
            + " · ".join(f"{escape(str(c))} <b>{escape(shown[c].iloc[0])}</b>" for c in same)
            + "</p>"
        )
    ident = f' id="{escape(table_id)}"' if table_id else ""
    out.append(f'<table class="tbl"{ident}><thead><tr>')
    out += [f"<th>{escape(str(c))}</th>" for c in cols]
    out.append("</tr></thead><tbody>")
    for row in shown[cols].itertuples(index=False):
        out.append("<tr>" + "".join(_td(str(v)) for v in row) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _one_config_column(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of families with different hyperparameters (fc's nodes, cnn's filters) keep their
    configuration as one text column, 'batch=32 layers=2 nodes=64', instead of a column per
    hyperparameter that other families' rows leave at —. One family: a column each."""
    col = next((c for c in ("config_key", "config") if c in df.columns), None)
    if col is None or not len(df):
        return df
    if "family" not in df.columns or df["family"].nunique() < 2:
        return df
    cfgs = [_config(c) for c in df[col]]
    if len({tuple(sorted(c)) for c in cfgs if c}) < 2:
        return df
    text = [
        " ".join(
            f"{k}={c[k]}" for k in (["batch"] if "batch" in c else []) + sorted(set(c) - {"batch"})
        )
        for c in cfgs
    ]
    return df.assign(**{col: text}).rename(columns={col: "config_key"})


def _td(text: str) -> str:
    if text in VERDICTS:
        return f'<td class="v v-{text.replace(" ", "-")}">{escape(text)}</td>'
    if len(text) > LONG:
        return f'<td class="long"><div>{escape(text)}</div></td>'
    return f"<td>{escape(text)}</td>"
