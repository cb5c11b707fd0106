"""paradnn.rounding pinned value by value: the scale a tolerance is taken against, the
boundary of `equal` on both sides, what each helper does with NaN, infinities, None, text and
zeros. Every verdict, order and shown figure goes through these few lines (issue 41)."""

from __future__ import annotations

import math

import pytest

from paradnn import rounding as R


def test_scale_is_the_largest_finite_magnitude_else_zero():
    assert R.scale() == 0.0 and type(R.scale()) is float
    assert R.scale(None, math.nan, math.inf, -math.inf) == 0.0
    assert R.scale(-3, 2) == 3.0 and type(R.scale(-3, 2)) is float
    assert R.scale(1, 5, None, math.nan, -math.inf) == 5.0
    assert R.scale(0.5, -0.25) == 0.5
    assert R.scale("2.5", "x") == 2.5  # a number in text counts; text that is none does not


def test_equal_holds_up_to_exactly_the_relative_tolerance_of_the_scale():
    assert R.equal(1, 1) and R.equal(0.0, -0.0)
    assert R.equal(math.inf, math.inf)
    assert not R.equal(math.nan, math.nan)
    assert not R.equal(math.inf, 1.0) and not R.equal(1.0, math.inf)
    assert not R.equal(math.inf, -math.inf) and not R.equal(math.nan, 1.0)
    assert not R.equal(None, 1.0) and not R.equal(1.0, None)
    # on the boundary: |0 − 1e-9| = 1e-9 = RELATIVE × 1.0 exactly
    assert R.equal(0.0, 1e-9, 1.0) and R.equal(1e-9, 0.0, 1.0)
    assert not R.equal(0.0, 1.5e-9, 1.0) and not R.equal(0.0, 1e-9, 0.5)
    # without a scale, a number and zero differ (its own size is the scale)
    assert not R.equal(0.0, 1e-9) and not R.equal(1e-300, 0.0)
    # a difference of about 1e-10 relative is rounding, 1e-8 is not, either sign either order
    for x in (1.0, -3.5, 2e11, 7e-12):
        assert R.equal(x, x * (1 + 1e-10)) and R.equal(x * (1 + 1e-10), x)
        assert not R.equal(x, x * (1 + 1e-8)) and not R.equal(x * (1 - 1e-8), x)
    assert not R.equal(1e-10, -1e-10) and R.equal(1e-10, -1e-10, 1.0)
    # the scale is the largest of the two values and every `within`
    assert R.equal(1.0, 1.0 + 5e-9, 10.0) and not R.equal(1.0, 1.0 + 5e-9)
    assert R.equal(1.0, 1.0 + 5e-9, None, 10.0, math.nan)


def test_above_and_below_need_more_than_rounding():
    assert R.above(2.0, 1.0) and not R.above(1.0, 2.0) and not R.above(1.0, 1.0)
    assert R.below(1.0, 2.0) and not R.below(2.0, 1.0) and not R.below(1.0, 1.0)
    assert not R.above(1.0 + 1e-12, 1.0) and not R.below(1.0 - 1e-12, 1.0)
    assert R.above(1.0 + 1e-6, 1.0) and R.below(1.0 - 1e-6, 1.0)
    # `within` widens the tolerance: 1e-10 above 0 is rounding beside numbers of size 1
    assert R.above(1e-10, 0.0) and not R.above(1e-10, 0.0, 1.0)
    assert R.below(-1e-10, 0.0) and not R.below(-1e-10, 0.0, 1.0)
    assert R.above(math.inf, 1.0) and R.below(-math.inf, 1.0)


def test_snap_moves_only_a_value_within_rounding_of_its_target():
    got = R.snap(1.0 + 1e-12, 1)
    assert got == 1.0 and type(got) is float
    assert R.snap(1.5, 1.0) == 1.5 and R.snap(0.5, 1.0) == 0.5
    assert R.snap(1e-10, 0.0, 1.0) == 0.0 and R.snap(1e-10, 0.0) == 1e-10
    assert math.isnan(R.snap(math.nan, 1.0))
    assert R.snap(math.inf, 1.0) == math.inf and R.snap(-math.inf, 5.0) == -math.inf


def test_settle_zeroes_only_a_residue_of_the_given_scale():
    assert R.settle(5.551115123125783e-17, 1.0) == 0.0
    assert R.settle(-1e-9, 1.0) == 0.0  # on the boundary: |x| = RELATIVE × 1
    assert R.settle(1.5e-9, 1.0) == 1.5e-9 and R.settle(-1.5e-9, 1.0) == -1.5e-9
    assert R.settle(1e-3, 1.0) == 1e-3 and R.settle(5.0) == 5.0 and R.settle(-2.0) == -2.0
    assert R.settle(1e-17) == 1e-17  # alone, a number is never a residue of itself
    assert R.settle(1e-17, None, math.nan) == 1e-17  # no finite scale: no residue
    z = R.settle(-0.0)
    assert z == 0.0 and math.copysign(1, z) == 1.0
    assert math.copysign(1, R.settle(-1e-12, 1.0)) == 1.0
    got = R.settle(3)
    assert got == 3.0 and type(got) is float
    assert math.isnan(R.settle(math.nan, 1.0)) and R.settle(-math.inf, 1.0) == -math.inf


def test_a_sort_key_keeps_nine_significant_digits():
    assert R.key(1.23456789012) == 1.23456789
    assert R.key(-9876543210.5) == -9.87654321e9
    assert R.key(0.1234567894) == 0.123456789 and R.key(0.1234567896) == 0.12345679
    assert R.key(1.0) < R.key(1.00000001) and R.key(1.0) == R.key(1.000000001)
    assert R.key(0.0) == 0.0 and R.key(-0.0) == 0.0
    assert math.copysign(1, R.key(-0.0)) == 1.0
    assert R.key(5e-17, 1.0) == 0.0 and R.key(1e-17) == 1e-17
    assert R.key(3) == 3.0 and type(R.key(3)) is float


@pytest.mark.parametrize("x", [None, math.nan, "abc", object(), [1.0]])
def test_a_sort_key_of_nothing_is_nan(x):
    assert math.isnan(R.key(x))


def test_a_sort_key_keeps_infinities_and_reads_numbers_in_text():
    assert R.key(math.inf) == math.inf and R.key(-math.inf) == -math.inf
    assert R.key("inf") == math.inf and R.key("-inf") == -math.inf
    assert R.key("1.5") == 1.5


def test_finite_is_a_finite_number_or_text_of_one():
    for x in (0, 1, -2.5, 1e308, "3", True):
        assert R._finite(x), x
    for x in (None, math.nan, math.inf, -math.inf, "x", "nan", object(), [1]):
        assert not R._finite(x), x
