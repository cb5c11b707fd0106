"""Axis values written as the ParaDnn paper writes ranges: `4..128 x2`, `2000..8000 +2000`."""

from __future__ import annotations

import re

from paradnn.errors import ConfigError


def geometric(low: int, high: int, factor: int) -> tuple[int, ...]:
    """low, low·f, low·f², … up to and including high when reached."""
    out, v = [], low
    while v <= high:
        out.append(v)
        v *= factor
    return tuple(out)


def arithmetic(low: int, high: int, step: int) -> tuple[int, ...]:
    return tuple(range(low, high + 1, step))


_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*(?:([x*+])\s*(\d+))?\s*$", re.ASCII)


MAX_VALUES = (
    10_000  # an axis longer than this is a typo (`1..100000000`), refused before enumerating
)


def parse_range(text: str, *, field: str = "range") -> tuple[int, ...]:
    """`4..128 x2` → (4, 8, …, 128); `2000..8000 +2000` → (2000, …, 8000); `1..8` → step 1."""
    m = _RANGE.match(text)
    if not m:
        raise ConfigError(
            field, text, "must look like 'LOW..HIGH', 'LOW..HIGH xF' or 'LOW..HIGH +S'"
        )
    if any(len(g.lstrip("-")) > 18 for g in m.groups() if g):
        raise ConfigError(field, text, "bounds and steps must have at most 18 digits")
    low, high = int(m[1]), int(m[2])
    op, by = m[3], int(m[4]) if m[4] else 1
    if high < low:
        raise ConfigError(field, text, "HIGH must be ≥ LOW")
    if op in ("x", "*"):
        if low < 1 or by < 2:
            raise ConfigError(field, text, "a geometric range needs LOW ≥ 1 and a factor ≥ 2")
        return geometric(low, high, by)
    if by < 1:
        raise ConfigError(field, text, "the step must be ≥ 1")
    count = (high - low) // by + 1
    if count > MAX_VALUES:
        raise ConfigError(
            field, text, f"has {count:,} values; an axis may have at most {MAX_VALUES:,}"
        )
    return arithmetic(low, high, by)
