"""Summary statistics of step-time samples: the median with a distribution-free confidence
interval (binomial order statistics, as asv does), IQR and friends. Torch-free."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

# numpy and scipy.stats are imported where they are used: this module sits under the CLI's
# import graph (timer → config → api → cli), and scipy.stats alone costs ~0.7 s of start-up,
# which every worker would pay in its first timed phase. Up to EXACT_UP_TO samples (the default
# policy stops at 1,000) the ranks come from exact integer arithmetic instead, which scipy's
# binomial CDF agrees with there (tests/test_timer.py holds them equal).
EXACT_UP_TO = 5000


@lru_cache(maxsize=1024)
def median_ci_ranks(n: int, confidence: float = 0.95) -> tuple[int, int] | None:
    """0-based ranks (lo, hi) of the sorted sample that bound the median with at least
    `confidence` coverage, or None when n is too small for any such interval. Computed once
    per (n, confidence): the timer asks after every chunk of blocks."""
    if n <= EXACT_UP_TO:
        return _exact_ranks(n, confidence)
    return _scipy_ranks(n, confidence)


def _exact_ranks(n: int, confidence: float) -> tuple[int, int] | None:
    """The largest j with P(B ≤ j) ≤ α/2 for B ~ Binomial(n, 1/2), in integers: the sum of
    C(n, i) for i ≤ j against α/2 · 2ⁿ, with α/2 the exact value of the float (1 - confidence)/2
    that the scipy path compares with."""
    half = Fraction((1.0 - confidence) / 2)
    bound = half.numerator << n  # Σ C(n, i) ≤ α/2 · 2ⁿ  ⟺  Σ · den ≤ num · 2ⁿ
    j, term, total = -1, 1, 0
    for i in range(n + 1):
        total += term
        if total * half.denominator > bound:
            break
        j = i
        term = term * (n - i) // (i + 1)
    if j < 0:
        return None
    return j, n - 1 - j


def _scipy_ranks(n: int, confidence: float) -> tuple[int, int] | None:
    import numpy as np
    from scipy.stats import binom

    alpha = 1.0 - confidence
    cdf = binom.cdf(np.arange(n + 1), n, 0.5)
    # Largest j with P(B ≤ j) ≤ α/2; the interval is [x_(j+1), x_(n-j)] in 1-based ranks.
    below = np.nonzero(cdf <= alpha / 2)[0]
    if below.size == 0:
        return None
    j = int(below[-1])
    return j, n - 1 - j


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    min: float
    max: float
    q1: float
    q3: float
    ci_low: float | None
    ci_high: float | None

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def iqr_rel(self) -> float:
        return self.iqr / self.median if self.median > 0 else math.inf

    @property
    def ci_rel(self) -> float:
        """Half-width of the median's CI relative to the median (∞ when there is no CI yet)."""
        if self.ci_low is None or self.ci_high is None or self.median <= 0:
            return math.inf
        return max(self.median - self.ci_low, self.ci_high - self.median) / self.median


def summarize(samples: list[float] | np.ndarray, confidence: float = 0.95) -> Summary:
    import numpy as np

    x = np.sort(np.asarray(samples, dtype=float))
    if x.size == 0:
        raise ValueError("no samples to summarize")
    ranks = median_ci_ranks(x.size, confidence)
    lo, hi = (float(x[ranks[0]]), float(x[ranks[1]])) if ranks else (None, None)
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    return Summary(
        n=int(x.size),
        median=float(med),
        mean=float(x.mean()),
        min=float(x[0]),
        max=float(x[-1]),
        q1=float(q1),
        q3=float(q3),
        ci_low=lo,
        ci_high=hi,
    )
