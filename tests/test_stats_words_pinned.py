"""The median CI's ranks computed two ways, and a memory verdict's words, pinned whole.

`median_ci_ranks` caches its answers, so a test through it can be answered from the cache of an
earlier call: these call `_exact_ranks` and `_scipy_ranks` themselves, against the binomial
order statistics summed here with exact fractions (issue 46's seed-12 sample found both paths
reached by no test)."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from paradnn import families, memory
from paradnn.measure import stats

CONFIDENCES = (0.5, 0.8, 0.9, 0.95, 0.99, 0.999)


def reference(n: int, confidence: float) -> tuple[int, int] | None:
    """The largest j with P(B ≤ j) ≤ α/2, B ~ Binomial(n, 1/2), as exact fractions; the
    interval is the sorted sample's [j, n - 1 - j] (0-based)."""
    half = Fraction((1.0 - confidence) / 2)  # the float's exact value, as both paths use it
    total, j = 0, -1
    for i in range(n + 1):
        total += comb(n, i)
        if Fraction(total, 2**n) > half:
            break
        j = i
    return None if j < 0 else (j, n - 1 - j)


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_exact_ranks_are_the_binomial_order_statistics(confidence):
    for n in (*range(1, 70), 100, 257, 1000):
        assert stats._exact_ranks(n, confidence) == reference(n, confidence), n


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_scipy_ranks_agree_with_the_exact_sums(confidence):
    for n in (*range(1, 40), 64, 100, 513):
        assert stats._scipy_ranks(n, confidence) == reference(n, confidence), n


def test_too_few_samples_have_no_interval_and_the_first_ones_are_known():
    # α/2 = 0.025: P(B ≤ 0) = 2⁻ⁿ ≤ 0.025 from n = 6 on
    assert [stats._exact_ranks(n, 0.95) for n in range(1, 6)] == [None] * 5
    assert [stats._scipy_ranks(n, 0.95) for n in range(1, 6)] == [None] * 5
    assert stats._exact_ranks(6, 0.95) == (0, 5) == stats._scipy_ranks(6, 0.95)
    assert stats._exact_ranks(10, 0.95) == (1, 8)  # P(B ≤ 1) = 11/1024 ≤ 0.025 < 56/1024
    assert stats._exact_ranks(20, 0.95) == (5, 14)


def _check(copies=1, free=8 * 2**30, where="host memory", estimate=True):
    fam = families.get("fc")
    cfg = fam.config({"layers": 2, "nodes": 1024, "batch": 64})
    est = memory.predict("fc", cfg, "fp32", "sgd", device_type="cpu") if estimate else None
    return memory.MemoryCheck(est, free, where, copies)


def test_memory_check_words():
    one = _check()
    low, total = one.estimate.lower_bound, one.estimate.total
    g = 2**30
    assert one.words() == (
        f"needs at least {low / g:.2f} GiB (predicted {total / g:.2f} GiB) and 8.00 GiB of host "
        "memory is free"
    )
    four = _check(copies=4, free=None, where="GPU memory")
    assert four.words() == (
        f"needs at least {4 * low / g:.2f} GiB for 4 ranks (predicted {4 * total / g:.2f} GiB) "
        "and unknown of GPU memory is free"
    )
    assert _check(estimate=False, free=None).words() == (
        "needs an unknown amount of memory and unknown of host memory is free"
    )
    assert _check(estimate=False, free=3 * 2**29).words() == (
        "needs an unknown amount of memory and 1.50 GiB of host memory is free"
    )
