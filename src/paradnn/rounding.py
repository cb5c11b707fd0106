"""Floats that differ only in their last bits are one result: one verdict, one order, one text.

The same statistic computed on two CPUs can differ in its last bits: OpenBLAS picks its kernels
per CPU (a least-squares weight that is 5.6e-17 with the SkylakeX kernels is 0.0 with the
Haswell ones), numpy picks SIMD loops per CPU, and thread counts change the order of sums. So
no verdict, wording, order or displayed figure may hinge on a float being exactly equal to
something. Here two numbers are *equal within rounding* when they differ by at most `RELATIVE`
times the scale of what they were computed from: the larger of their own magnitudes and any
scale the caller names (an interval's ends, the unit of z-scored weights). A residue of
rounding next to zero is zero.

`RELATIVE` = 1e-9 is about 4.5 million float64 epsilons: far above the rounding error of the
sums, bootstraps and least-squares solves paradnn does (a condition number up to ~10⁶ still
fits), far below any difference it shows (at most 4 significant digits) or decides on (a
measured interval is never that narrow). Pure Python, no imports from paradnn: every layer
(the formatter in `units`, the verdicts in `analysis`, the orders in `report` and `plots`)
uses the same tolerance.
"""

from __future__ import annotations

import math

RELATIVE = 1e-9
# Significant digits a sort key keeps: values equal within rounding share a key (and then
# sort by name), except when they straddle a boundary of the 9th digit (odds ~1e-7 per pair).
KEY_DIGITS = 9


def scale(*xs: float | None) -> float:
    """The largest finite magnitude among `xs` (0 when none is finite)."""
    return max((abs(float(x)) for x in xs if _finite(x)), default=0.0)


def equal(a: float, b: float, *within: float | None) -> bool:
    """Whether `a` and `b` differ by no more than rounding of numbers of their size (or of the
    size of `within`: e.g. the interval they were computed with)."""
    if a == b:
        return True
    if not (_finite(a) and _finite(b)):
        return False
    return abs(float(a) - float(b)) <= RELATIVE * scale(a, b, *within)


def above(a: float, t: float, *within: float | None) -> bool:
    """`a > t` by more than rounding."""
    return a > t and not equal(a, t, *within)


def below(a: float, t: float, *within: float | None) -> bool:
    """`a < t` by more than rounding."""
    return a < t and not equal(a, t, *within)


def snap(x: float, to: float, *within: float | None) -> float:
    """`to` when `x` equals it within rounding, else `x`."""
    return float(to) if _finite(x) and equal(x, to, *within) else x


def settle(x: float, *within: float | None) -> float:
    """A residue of rounding next to zero as 0.0 (and -0.0 as 0.0): `x` is within rounding of
    zero relative to the scale of `within` (the inputs it was computed from). Without a
    scale only zeros settle: a number alone is never a residue of itself."""
    if not _finite(x):
        return x
    x = float(x)
    return 0.0 if abs(x) <= RELATIVE * scale(*within) else x  # -0.0 too: abs(-0.0) <= 0


def key(x: float | None, *within: float | None) -> float:
    """A sort key on which values equal within rounding tie (and then sort by name): `x`
    settled against `within`, to KEY_DIGITS significant digits. NaN and None stay NaN."""
    if not _finite(x):
        try:
            return float(x) if math.isinf(float(x)) else math.nan  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return math.nan
    v = settle(float(x), *within)  # type: ignore[arg-type]
    return float(f"{v:.{KEY_DIGITS - 1}e}") if v else 0.0


def _finite(x: object) -> bool:
    try:
        return x is not None and math.isfinite(float(x))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
