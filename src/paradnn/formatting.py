"""Numbers as people read them: SI prefixes with units, percentages, bytes, durations, speedups.

One home for the formatting the CLI's tables (`paradnn.cli.tables`) and the HTML report
(`paradnn.report`) share, so `3.485e+10` reads `34.9 GFLOP/s` in both. Pure Python, imported by
every layer: no pandas, no torch. A missing value (None or NaN) is `—` everywhere.

No figure shown may hinge on a float's last bit (paradnn.rounding): a number that rounds to
zero at the digits shown has no sign (never `-0.00`), and `number`/`signed` given the `scale`
of the inputs a value was computed from show a residue of rounding next to zero (5.6e-17 where
the true value is 0) as 0, like the 0 another CPU computes.
"""

from __future__ import annotations

import math
from typing import Any

from paradnn import rounding

MISSING = "—"


def missing(x: Any) -> bool:
    """None, NaN or pandas' NA/NaT (anything that is not equal to itself, or has no value)."""
    if x is None:
        return True
    try:
        return bool(x != x)
    except (TypeError, ValueError):  # pandas.NA refuses bool()
        return True


def shown(x: float, digits: int = 3) -> float:
    """`x` rounded to the `digits` significant digits it is shown with: a prefix or unit is
    chosen on it, so 999.99999 and 1000.0 (one number, two last bits) both read 1 k."""
    return float(f"{float(x):.{digits}g}")


def si(x: float | None, unit: str = "", digits: int = 3) -> str:
    """34.9 GFLOP/s, 322 k, 0.5 — three significant digits and a prefix from k to T."""
    if missing(x):
        return MISSING
    x = float(x)
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(shown(x, digits)) >= scale:
            return f"{x / scale:.{digits}g} {prefix}{unit}".strip()
    return f"{x:.{digits}g} {unit}".strip()


def pct(x: float | None, digits: int = 1) -> str:
    """A fraction as a percentage: 0.0812 -> 8.1%."""
    return MISSING if missing(x) else f"{float(x) * 100:.{digits}f}%"


def nbytes(n: float | None) -> str:
    """Binary prefixes: 1.5 GiB, 390 MiB, 12 B."""
    if missing(n):
        return MISSING
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if shown(n / scale) >= 1:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def duration(seconds: float) -> str:
    """4.2s, 37s, 2m05s, 1h02m."""
    if seconds < 10:
        return f"{max(0.0, seconds):.1f}s"
    seconds = round(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def ms(seconds: float | None) -> str:
    """A time in seconds shown in milliseconds: 0.00181 -> 1.81 ms."""
    return MISSING if missing(seconds) else f"{float(seconds) * 1e3:.3g} ms"


def times(x: float | None) -> str:
    """A speedup or ratio: 1.23×."""
    return MISSING if missing(x) else f"{float(x):.3g}×"


def times_range(lo: float | None, hi: float | None) -> str:
    """A speedup interval: 1.1–1.4×."""
    if missing(lo) or missing(hi):
        return MISSING
    return f"{float(lo):.3g}–{float(hi):.3g}×"


def count(n: float | None) -> str:
    """A whole number with thousands separators: 322,644."""
    return MISSING if missing(n) else f"{round(float(n)):,}"


def number(x: float | None, digits: int = 3, scale: tuple[float | None, ...] = ()) -> str:
    """A plain quantity: integers as integers, others to `digits` significant digits, big ones
    with an SI prefix (never scientific notation). `scale`: the numbers `x` was computed from
    or is shown beside (an interval's ends): a residue of rounding next to zero reads 0."""
    if missing(x):
        return MISSING
    if isinstance(x, bool):
        return "yes" if x else "no"
    v = rounding.settle(float(x), *scale)
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if math.isfinite(v) and abs(shown(v, digits)) >= 1e3:
        return si(v, digits=digits)
    if v.is_integer():
        return f"{int(v)}"
    return f"{v:z.{digits}g}"


def signed(x: float | None, digits: int = 2, scale: tuple[float | None, ...] = ()) -> str:
    """A weight or correlation with its sign: +0.42, -1.3; one that rounds to zero at `digits`
    decimals reads +0.00 whatever its sign (`scale`: as `number`)."""
    return MISSING if missing(x) else f"{rounding.settle(float(x), *scale):+z.{digits}f}"


# --- a model's error ---------------------------------------------------------------------------
# One form for every printed model error (a validated band, a per-family median error, one
# run's error), in the CLI, the report and the plots' captions: the stored figure is a fraction
# (0.614 = 61.4 %), printed once as a percentage here, so no caller multiplies by 100 twice or
# forgets to.


def error(x: float | None) -> str:
    """A model's relative error, stored as a fraction: 0.614 -> 61.4%, 1.585 -> 158.5%."""
    return pct(x, 1)


def band(p90: float | None) -> str:
    """A validated error band (the p90 of |predicted − measured| ÷ measured): 0.813 -> ±81.3%."""
    return MISSING if missing(p90) else "±" + error(p90)


def band_range(lo: float | None, hi: float | None) -> str:
    """A ratio's interval taken from error bands (never a 95% CI): 'model error band 2.29–22.4×'."""
    return f"model error band {times_range(lo, hi)}"


def plain(value: Any) -> Any:
    """`value` as plain JSON-ready data, for the `as_dict()` of every result the library
    returns: a dataclass (or anything with `as_dict()`) as a dict of its fields, a table
    (pandas, duck-typed: no import here) as a list of row dicts, a path as text, a tuple or
    set as a list, NaN as None; nested values likewise."""
    import dataclasses
    from pathlib import PurePath

    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return None if value != value else value
    if hasattr(value, "as_dict") and not isinstance(value, type):
        return plain(value.as_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "to_dict") and hasattr(value, "columns"):  # a DataFrame
        return [plain(r) for r in value.to_dict("records")]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [plain(v) for v in items]
    if isinstance(value, PurePath):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # a numpy scalar
        return plain(value.item())
    return value
